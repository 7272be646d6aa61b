"""The metric registry decides: AUC, Brier and kappa against scikit-learn, a plugin's
higher-is-better metric read the right way round by the W/D/L tables, ranks and figures,
learners' named measures reaching the summary, and a metric added before a resume."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm

from workbench.evaluation import metrics
from workbench.evaluation.metrics import Metric, auc_weighted, brier_score, cohen_kappa
from workbench.stats.ranks import average_ranks
from workbench.stats.wdl import wdl_table, win_draw_loss


def _random_case(seed: int, n: int, k: int, ties: bool = False):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    if ties:  # few distinct values: many tied scores
        p = np.round(p, 1) + 1e-9
        p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, k, size=n)
    return p, y


@pytest.mark.parametrize("seed,n,k,ties", [(0, 50, 2, False), (1, 200, 3, False),
                                           (2, 120, 5, True), (3, 31, 4, True)])
def test_auc_brier_kappa_f1_mcc_match_scikit_learn(seed, n, k, ties):
    p, y = _random_case(seed, n, k, ties)
    if k == 2:
        expected_auc = skm.roc_auc_score(y, p[:, 1])
    else:
        expected_auc = skm.roc_auc_score(y, p, multi_class="ovr", average="weighted",
                                         labels=list(range(k)))
    assert auc_weighted(p, y) == pytest.approx(expected_auc, abs=1e-12)
    assert brier_score(p, y) == pytest.approx(
        skm.brier_score_loss(y, p, labels=list(range(k)), scale_by_half=False), abs=1e-12)
    assert cohen_kappa(p, y) == pytest.approx(
        skm.cohen_kappa_score(y, p.argmax(axis=1)), abs=1e-12)
    from workbench.evaluation.metrics import f1_macro, mcc

    assert f1_macro(p, y) == pytest.approx(
        skm.f1_score(y, p.argmax(axis=1), average="macro"), abs=1e-12)
    assert mcc(p, y) == pytest.approx(skm.matthews_corrcoef(y, p.argmax(axis=1)), abs=1e-12)


def test_ece_by_hand_and_against_a_plain_loop():
    """Top-label ECE over the bins (0, 0.1], …, (0.9, 1]: by hand on four rows (an edge
    value 0.3 falls in (0.2, 0.3]), and equal to a plain per-bin loop on random data."""
    from workbench.evaluation.metrics import ece

    p = np.array([[0.3, 0.3, 0.4], [0.05, 0.25, 0.7], [0.75, 0.2, 0.05],
                  [0.3, 0.3, 0.4]])
    y = np.array([2, 1, 0, 0])
    # bins: 0.4 ×2 -> (0.3, 0.4]: acc 1/2, conf 0.4; 0.7 -> (0.6, 0.7]: acc 0, conf 0.7;
    # 0.75 -> (0.7, 0.8]: acc 1, conf 0.75
    want = (2 * abs(0.5 - 0.4) + abs(0.0 - 0.7) + abs(1.0 - 0.75)) / 4
    assert ece(p, y) == pytest.approx(want, abs=1e-15)
    assert ece(np.array([[0.7, 0.3]]), np.array([0])) == pytest.approx(0.3)
    for seed in range(4):
        q, t = _random_case(seed, 300, 3, seed % 2 == 1)
        conf, hit = q.max(axis=1), (q.argmax(axis=1) == t)
        total = 0.0
        for lo in np.arange(10) / 10:
            inside = (conf > lo + 1e-12) & (conf <= lo + 0.1 + 1e-12)
            if inside.any():
                total += inside.sum() * abs(hit[inside].mean() - conf[inside].mean())
        assert ece(q, t) == pytest.approx(total / t.size, abs=1e-12)


def test_auc_by_hand_and_edge_cases():
    # 2 classes, scores of class 1: positives 0.8, 0.4; negatives 0.4, 0.1 -> pairs:
    # (0.8>0.4) 1, (0.8>0.1) 1, (0.4=0.4) 1/2, (0.4>0.1) 1 -> 3.5 / 4
    p1 = np.array([0.8, 0.4, 0.4, 0.1])
    p = np.column_stack([1 - p1, p1])
    y = np.array([1, 1, 0, 0])
    assert auc_weighted(p, y) == pytest.approx(0.875)
    # a declared class with no instance weighs 0; one class only: no curve
    p3 = np.column_stack([1 - p1, p1, np.zeros(4)])
    assert auc_weighted(p3, y) == pytest.approx(0.875)
    assert np.isnan(auc_weighted(p, np.zeros(4, dtype=int)))
    # kappa: perfect = 1, chance-level constant prediction = 0, Weka's p_e = 1 case = 1
    assert cohen_kappa(np.eye(2)[y], y) == 1.0
    assert cohen_kappa(np.tile([1.0, 0.0], (4, 1)), y) == 0.0
    assert cohen_kappa(np.tile([1.0, 0.0], (4, 1)), np.zeros(4, dtype=int)) == 1.0
    # Brier: Σ_y (p − onehot)² averaged: (0.04+0.04 + 0.36+0.36 + 0.16+0.16 + 0.01+0.01)/4
    assert brier_score(p, y) == pytest.approx((0.08 + 0.72 + 0.32 + 0.02) / 4)


def test_stats_read_the_direction():
    a, b = np.array([0.9, 0.8, 0.7]), np.array([0.5, 0.6, 0.7])
    assert win_draw_loss(a, b, lower_is_better=True).wins == 0  # lower is better: A loses twice
    rec = win_draw_loss(a, b, lower_is_better=False)
    assert (rec.wins, rec.draws, rec.losses) == (2, 1, 0)
    wide = pd.DataFrame({"A": a, "B": b}, index=["d1", "d2", "d3"])
    # ranks per data set (A, B): (1, 2), (1, 2), (1.5, 1.5)
    assert average_ranks(wide, lower_is_better=False).to_dict() == pytest.approx(
        {"A": 3.5 / 3, "B": 5.5 / 3})
    assert average_ranks(wide, lower_is_better=True).to_dict() == pytest.approx(
        {"A": 5.5 / 3, "B": 3.5 / 3})
    summ = pd.DataFrame({"dataset": ["d1", "d2", "d1", "d2"], "learner": ["A", "A", "B", "B"],
                         "m": [0.9, 0.8, 0.5, 0.6]})
    t = wdl_table(summ, "m", ["A", "B"], lower_is_better=False)
    assert (t.iloc[0].row, t.iloc[0].wins, t.iloc[0].losses) == ("B", 0, 2)


def test_metric_declaration_is_checked():
    with pytest.raises(ValueError, match="only a 'pooled' metric"):
        Metric("x", "X", "mean", compute=auc_weighted)
    with pytest.raises(TypeError, match="expects a Metric"):
        metrics.register_metric("auc")


# ----- through the runner and the report ------------------------------------------------------
METRIC_PLUGIN = textwrap.dedent(
    """
    import numpy as np
    from workbench.evaluation.metrics import Metric, auc_weighted, register_metric
    from workbench.learners.registry import register

    register_metric(Metric("plugin_auc", "AUC (plugin)", "pooled", per_fold=True,
                           lower_is_better=False, cd=True, compute=auc_weighted))
    """
)

def _config(tmp_path: Path, plugins: list[Path]) -> Path:
    cfg = tmp_path / "m.yaml"
    cfg.write_text(textwrap.dedent(f"""
        name: metric-direction
        datasets: [iris, labor, contact-lenses, house-votes-84]
        plugins: [{', '.join(str(p) for p in plugins)}]
        protocol: {{rounds: 2, folds: 2, seed: 1}}
        learners:
          Good: RunStandIn
          Flat: {{learner: RunStandIn, scale: 0.0}}
        report: {{baseline: Good}}
        """).lstrip())
    return cfg


def _run(cfg: Path, out: Path, capsys) -> str:
    from workbench.__main__ import main

    assert main(["run", str(cfg), "--output", str(out)]) == 0
    return capsys.readouterr().err


@pytest.fixture()
def clean_registry():
    saved = dict(metrics.METRICS)
    yield
    metrics.METRICS.clear()
    metrics.METRICS.update(saved)


def test_higher_is_better_plugin_metric_decides_the_right_way(tmp_path, capsys,
                                                               plugin_file, clean_registry):
    metric = tmp_path / "auc_metric.py"
    metric.write_text(METRIC_PLUGIN)
    out = tmp_path / "run"
    _run(_config(tmp_path, [plugin_file, metric]), out, capsys)
    summary = pd.read_csv(out / "summary.csv")
    by = summary.set_index(["dataset", "learner"])
    assert (by.xs("Good", level="learner")["plugin_auc"]
            > by.xs("Flat", level="learner")["plugin_auc"]).all()
    assert (by.xs("Flat", level="learner")["plugin_auc"] == 0.5).all()  # uniform: all ties
    # the named measure reached the summary and the per-fold file
    assert (summary["centroid_spread"] > 0).all()
    assert "centroid_spread" in pd.read_csv(out / "fold_metrics.csv").columns
    tables = out / "report" / "tables"
    wdl = pd.read_csv(tables / "wdl.csv")
    for m in ("plugin_auc", "auc", "kappa", "f1_macro", "mcc", "zero_one_loss"):
        cell = wdl[(wdl.metric == m) & (wdl.collection == "all")].iloc[0]
        assert (cell.row, cell.col) == ("Flat", "Good")
        assert (cell.wins, cell.losses) == (0, 4), m  # Flat is worse on every data set
    ranks = pd.read_csv(tables / "ranks.csv")
    r = ranks[(ranks.metric == "plugin_auc") & (ranks.collection == "all")]
    assert r.set_index("learner")["average_rank"].to_dict() == {"Good": 1.0, "Flat": 2.0}
    report = (out / "report" / "report.md").read_text()
    assert ("Cohen's kappa, F1 (macro over classes), Matthews correlation coefficient, AUC "
            "(plugin): there a win, rank 1 and 'better' go to the higher") in report
    assert (out / "report" / "figures" / "cd_plugin_auc.png").is_file()
    assert "win = row has the higher AUC (plugin)" in (tables / "wdl_plugin_auc.md").read_text()
    assert "win = row has the lower 0-1 loss" in (tables / "wdl_zero_one_loss.md").read_text()


def _run_process(cfg: Path, out: Path) -> str:
    """A fresh process (as a user resuming later would: plugins are imported anew)."""
    proc = subprocess.run([sys.executable, "-m", "workbench", "run", str(cfg), "--output",
                           str(out), "--no-report"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_resumed_run_computes_a_metric_registered_since(tmp_path, plugin_file):
    metric = tmp_path / "auc_metric.py"
    metric.write_text("# no metric yet\n")
    out = tmp_path / "run"
    cfg = _config(tmp_path, [plugin_file, metric])
    _run_process(cfg, out)
    assert "plugin_auc" not in pd.read_csv(out / "summary.csv").columns
    metric.write_text(METRIC_PLUGIN)
    err = _run_process(cfg, out)
    assert "metric plugin_auc: computed from the stored predictions of 8 complete pair(s)" \
        in err
    assert pd.read_csv(out / "summary.csv")["plugin_auc"].notna().all()
    # a summary-only copy (no predictions) cannot: one line says which pairs and why
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("summary.csv", "fold_metrics.csv", "config.yaml", "config_hash"):
        (bare / name).write_bytes((out / name).read_bytes())
    frame = pd.read_csv(bare / "summary.csv").drop(columns=["plugin_auc"])
    frame.to_csv(bare / "summary.csv", index=False)
    err = _run_process(cfg, bare)
    assert "metric plugin_auc: not computed for 8 pair(s) (" in err
    assert "predictions are not stored" in err


def test_midranks_are_scipys_rankdata_with_ties():
    """The ranks of the AUC and the rank tests (numpy, so that scipy.stats is not
    imported) = rankdata 'average'."""
    from scipy.stats import rankdata

    from workbench.ranking import midranks

    rng = np.random.default_rng(4)
    for n in (1, 2, 3, 17, 500):
        x = rng.integers(0, 5, n) / 4.0
        np.testing.assert_array_equal(midranks(x), rankdata(x, method="average"))
    np.testing.assert_array_equal(midranks(np.array([0.3, 0.1, 0.3, 0.2])),
                                  [3.5, 1.0, 3.5, 2.0])
