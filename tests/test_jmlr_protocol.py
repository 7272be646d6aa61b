"""The JMLR 2016 protocol pieces: EF5 fitted on a training sample, per-fold values in the
store, W/D/L decided per data set by a Wilcoxon test over folds, scatter metrics."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from workbench.data.dataset import Attribute, Dataset
from workbench.errors import ConfigError
from workbench.evaluation.cv import cross_validate, fold_metric_names
from workbench.evaluation.pipeline import fold_seed, run_fold
from workbench import store
from workbench.experiment.config import parse_config
from workbench.experiment.runner import run_experiment
from workbench.stats.wdl import fold_wdl_table, wilcoxon_fold_outcome


# ----- discretize_sample --------------------------------------------------------------------
def numeric_data(n: int, seed: int = 0) -> Dataset:
    """Two numeric attributes and a binary class (skewed values: cuts depend on the rows)."""
    rng = np.random.default_rng(seed)
    x = rng.exponential(size=(n, 2))
    y = (x[:, 0] + rng.normal(scale=0.5, size=n) > 1).astype(np.int64)
    return Dataset(name="num", attributes=(Attribute("a"), Attribute("b")),
                   class_attribute=Attribute("class", ("n", "p")), X=x, y=y)


class EF5Majority:
    """A tiny learner that asks for EF5 input and predicts the training class frequencies."""

    preprocessing = "ef:5"

    def fit(self, data: Dataset) -> "EF5Majority":
        self.p = np.bincount(data.y, minlength=2) / data.y.size
        return self

    def predict_proba(self, data: Dataset) -> np.ndarray:
        return np.tile(self.p, (data.n_instances, 1))


def _cuts(n_train: int, sample: int | None, seed: int = 3) -> dict[str, list[float]]:
    data = numeric_data(n_train + 10)
    train, test = np.arange(n_train), np.arange(n_train, n_train + 10)
    return run_fold(data, EF5Majority, {}, train, test, seed=seed,
                    discretize_sample=sample).cuts


def test_discretize_sample_changes_cuts_only_above_the_sample_size():
    assert _cuts(300, 500) == _cuts(300, None)  # fold smaller than the sample: all rows
    assert _cuts(300, 300) == _cuts(300, None)
    sampled = _cuts(300, 100)
    assert sampled != _cuts(300, None)
    assert sampled == _cuts(300, 100)  # deterministic for the same fold seed
    assert sampled != _cuts(300, 100, seed=4)  # another fold's seed draws another sample


def test_cross_validate_and_runner_seed_the_sample_per_fold():
    data = numeric_data(400)
    a = cross_validate(data, EF5Majority, rounds=1, folds=2, seed=5, discretize_sample=50)
    b = cross_validate(data, EF5Majority, rounds=1, folds=2, seed=5, discretize_sample=50)
    full = cross_validate(data, EF5Majority, rounds=1, folds=2, seed=5)
    assert [r.cuts for r in a.fold_results] == [r.cuts for r in b.fold_results]
    assert [r.cuts for r in a.fold_results] != [r.cuts for r in full.fold_results]
    r0 = a.fold_results[0]
    train = np.flatnonzero(a.splits[0] != 0)
    again = run_fold(a.data, EF5Majority, {}, train, r0.test_index,
                     seed=fold_seed(5, 0, 0), discretize_sample=50)
    assert again.cuts == r0.cuts


CONFIG = """
name: jm
datasets: [iris]
protocol: {rounds: 1, folds: 3, seed: 1}
learners: [NB]
"""


def test_config_discretize_sample_enters_the_hash_and_is_validated():
    base = parse_config(CONFIG)
    assert base.protocol.discretize_sample is None
    assert "discretize_sample" not in base.to_dict()["protocol"]  # old hashes unchanged
    sampled = parse_config(CONFIG.replace("seed: 1}", "seed: 1, discretize_sample: 100000}"))
    assert sampled.protocol.discretize_sample == 100000
    assert sampled.to_dict()["protocol"]["discretize_sample"] == 100000
    assert sampled.config_hash() != base.config_hash()
    other = parse_config(CONFIG.replace("seed: 1}", "seed: 1, discretize_sample: 50}"))
    assert other.config_hash() not in (base.config_hash(), sampled.config_hash())
    explicit_none = parse_config(CONFIG.replace("seed: 1}", "seed: 1, discretize_sample: null}"))
    assert explicit_none.config_hash() == base.config_hash()
    for bad in ("0", "-5", "2.5", "lots", "true"):
        with pytest.raises(ConfigError, match="protocol.discretize_sample"):
            parse_config(CONFIG.replace("seed: 1}", f"seed: 1, discretize_sample: {bad}}}"))


def test_jmlr_config_uses_the_paper_protocol():
    from workbench.experiment.config import load_config

    cfg = load_config(Path(__file__).resolve().parents[1] / "configs" / "jmlr16-skdb.yaml")
    assert cfg.protocol.discretize_sample == 100000
    assert (cfg.protocol.rounds, cfg.protocol.folds) == (1, 10)
    assert cfg.report["wdl"] == "wilcoxon-folds"
    assert "rmse_true_class" in cfg.report["scatter"]["metrics"]


# ----- per-fold values in the store --------------------------------------------------------
RUN_CONFIG = """
name: jm
datasets: [iris, labor]
protocol: {rounds: 2, folds: 3, seed: 1}
learners: [NB, KDB1]
output: OUT
"""


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("jm") / "run"
    cfg = parse_config(RUN_CONFIG.replace("OUT", str(out)))
    run_experiment(cfg, jobs=1, stream=open("/dev/null", "w"))
    return out


def test_per_fold_values_are_stored_and_read_back(tiny_run: Path):
    summ = json.loads(store.summary_path(tiny_run, "iris", "NB").read_text())
    per = summ["per_fold"]
    # every fold metric the learners report (NB reports its model size, peak memory and the
    # memory its compact layout saves; no iterations and no selected attributes)
    reported = [m for m in fold_metric_names()
                if m not in ("iterations", "train_objective", "selected_parents",
                             "selected_children", "selected_attributes", "selected_k")]
    assert list(per) == reported
    assert summ["model_bytes"] == np.mean(per["model_bytes"]) > 0
    assert all(len(v) == 6 for v in per.values())
    # per-fold std agrees with the stored list (same (round, fold) values)
    assert np.isclose(np.std(per["zero_one_loss"], ddof=1), summ["zero_one_loss_std"])
    assert np.isclose(sum(per["train_cpu_seconds"]), summ["train_cpu_seconds"])
    fm = store.load_fold_metrics(tiny_run)
    assert list(fm.columns) == store.FOLD_METRICS_COLUMNS
    # NB (an AnDE) also reports its layout's memory_saved, KDB1 does not
    assert len(fm) == 2 * 6 * len(reported) + 2 * 6 * (len(reported) - 1)
    one = fm[(fm.dataset == "iris") & (fm.learner == "NB") & (fm.metric == "zero_one_loss")]
    assert list(zip(one["round"], one["fold"])) == [(r, f) for r in range(2) for f in range(3)]
    assert one["value"].tolist() == pytest.approx(per["zero_one_loss"], rel=1e-9)
    wide = pd.read_csv(tiny_run / "fold_metrics.csv")  # committed form: one column per metric
    assert list(wide.columns) == ["dataset", "learner", "round", "fold", *reported]
    assert len(wide) == 2 * 2 * 6
    # the summary frame stays flat
    assert "per_fold" not in store.load_summary(tiny_run).columns
    assert "per_fold" not in (tiny_run / "summary.csv").read_text()


def test_fold_metrics_csv_is_the_fallback_without_predictions(tiny_run: Path, tmp_path: Path):
    import shutil

    committed = tmp_path / "committed"
    committed.mkdir()
    for name in ("config.yaml", "config_hash", "metadata.json", "summary.csv",
                 "fold_metrics.csv"):
        shutil.copy(tiny_run / name, committed / name)
    a, b = store.load_fold_metrics(tiny_run), store.load_fold_metrics(committed)
    pd.testing.assert_frame_equal(a, b)  # exact round trip through the CSV
    empty = tmp_path / "empty"
    empty.mkdir()
    assert store.load_fold_metrics(empty).empty


def test_old_summaries_without_per_fold_are_completed_on_resume(tiny_run: Path, tmp_path):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(tiny_run, old)
    p = store.summary_path(old, "labor", "KDB1")
    row = json.loads(p.read_text())
    del row["per_fold"]
    p.write_text(json.dumps(row))
    assert set(store.load_fold_metrics(old)["learner"][
        store.load_fold_metrics(old)["dataset"] == "labor"]) == {"NB"}
    cfg = parse_config(RUN_CONFIG.replace("OUT", str(old)))
    res = run_experiment(cfg, jobs=1, stream=open("/dev/null", "w"))
    assert res.folds_run == 0 and res.pairs_completed == 1
    pd.testing.assert_frame_equal(store.load_fold_metrics(old), store.load_fold_metrics(tiny_run))


# ----- Wilcoxon-over-folds W/D/L -----------------------------------------------------------
def fold_frame(values: dict[tuple[str, str], list[float]], metric: str = "rmse") -> pd.DataFrame:
    """Long-format fold metrics from {(dataset, learner): [values of folds 0..k-1]}."""
    rows = [(ds, ln, 0, f, metric, v) for (ds, ln), vs in values.items()
            for f, v in enumerate(vs)]
    return pd.DataFrame(rows, columns=store.FOLD_METRICS_COLUMNS)


def test_wilcoxon_fold_outcome_on_hand_made_folds():
    base = np.linspace(0.2, 0.3, 10)
    margin = np.linspace(0.01, 0.02, 10)
    assert wilcoxon_fold_outcome(base - margin, base) == 1  # always lower: win
    assert wilcoxon_fold_outcome(base + margin, base) == -1  # always higher: loss
    mixed = base + np.where(np.arange(10) % 2, 1, -1) * margin
    assert wilcoxon_fold_outcome(mixed, base) == 0  # half lower, half higher: draw
    assert wilcoxon_fold_outcome(base, base) == 0  # identical: draw
    assert wilcoxon_fold_outcome(base[:5] - margin[:5], base[:5]) == 0  # 5 folds: p >= 1/16
    assert wilcoxon_fold_outcome([np.nan], [0.1]) is None
    # 9 lower, 1 higher with rank 8: exact two-sided p = 50/1024 -> win at 0.05, not 0.01
    one_up = base - margin * np.where(np.arange(10) == 7, -1, 1)
    assert wilcoxon_fold_outcome(one_up, base, alpha=0.05) == 1
    assert wilcoxon_fold_outcome(one_up, base, alpha=0.01) == 0


def test_fold_wdl_table_counts_per_data_set_outcomes():
    base = np.linspace(0.2, 0.3, 10)
    m = np.linspace(0.01, 0.02, 10)
    alt = np.where(np.arange(10) % 2, 1, -1)
    fm = fold_frame({
        ("d1", "A"): list(base - m), ("d1", "B"): list(base),  # A wins
        ("d2", "A"): list(base - m), ("d2", "B"): list(base),  # A wins
        ("d3", "A"): list(base + alt * m), ("d3", "B"): list(base),  # draw
        ("d4", "A"): list(base + m), ("d4", "B"): list(base),  # A loses
        ("d5", "A"): list(base - m),  # B has no folds here: left out
    })
    t = fold_wdl_table(fm, "rmse", ["B", "A"])
    assert t[["row", "col", "wins", "draws", "losses", "n"]].values.tolist() == [
        ["A", "B", 2, 1, 1, 4]]
    assert t["p_value"].iloc[0] == pytest.approx(1.0)  # sign test on 2 wins vs 1 loss
    both = fold_wdl_table(fm, "rmse", ["B", "A"], pairs="all")
    assert both.loc[both.row == "B", ["wins", "draws", "losses"]].values.tolist() == [[1, 1, 2]]
    only = fold_wdl_table(fm, "rmse", ["B", "A"], datasets=["d1", "d4"])
    assert only[["wins", "draws", "losses"]].values.tolist() == [[1, 0, 1]]
    # a plain W/D/L on the fold means would count d3 (mean differs slightly) as a win/loss
    assert fold_wdl_table(fm, "zero_one_loss", ["B", "A"])["n"].tolist() == [0]


# ----- the report ------------------------------------------------------------------------------
def _write_report_run(run_dir: Path, report: dict, with_folds: bool) -> Path:
    """A committed-style run dir (summary.csv, config.yaml, maybe fold_metrics.csv): 6 data
    sets, learners A (always lower by a margin on every fold), B, and C (mixed vs B)."""
    rng = np.random.default_rng(0)
    rows, folds = [], []
    for i in range(6):
        base = rng.uniform(0.1, 0.4) + np.linspace(0, 0.05, 10)
        vals = {"B": base, "A": base - 0.01 - 0.001 * np.arange(10),
                "C": base + np.where(np.arange(10) % 2, 1, -1) * (0.002 + 0.001 * np.arange(10))}
        for name, v in vals.items():
            rec = {"dataset": f"d{i}", "learner": name, "n_instances": 20_000 + i,
                   "rounds": 1, "folds": 10}
            for m in ("zero_one_loss", "rmse", "rmse_true_class"):
                rec[m] = float(np.mean(v))
                folds += [(f"d{i}", name, 0, f, m, float(x)) for f, x in enumerate(v)]
            rec["bias"], rec["variance"] = 0.7 * rec["zero_one_loss"], 0.3 * rec["zero_one_loss"]
            rows.append(rec)
    run_dir.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(run_dir / "summary.csv", index=False)
    if with_folds:
        long = pd.DataFrame(folds, columns=store.FOLD_METRICS_COLUMNS)
        wide = long.set_index(["dataset", "learner", "round", "fold", "metric"])["value"]
        wide.unstack("metric").reset_index().to_csv(run_dir / "fold_metrics.csv", index=False)
    cfg = {"name": "jm", "learners": {n: {"learner": n} for n in ("B", "A", "C")},
           "baseline": "B", "report": report}
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return run_dir


def _cell(out: Path, metric: str, row: str, col: str) -> tuple[int, int, int]:
    t = pd.read_csv(out / "tables" / "wdl.csv")
    r = t[(t.metric == metric) & (t.collection == "all") & (t.row == row) & (t.col == col)]
    return tuple(int(x) for x in r[["wins", "draws", "losses"]].iloc[0])


def test_report_with_wilcoxon_folds(tmp_path: Path):
    from workbench.report.render import render_report

    run = _write_report_run(tmp_path / "run", {"wdl": "wilcoxon-folds", "scatter": {
        "pairs": [["A", "B"]], "metrics": ["rmse_true_class"], "log": True}}, True)
    out = render_report(run, figures=True)
    md = (out / "report.md").read_text()
    assert "Wilcoxon signed-rank test over folds" in md and "wilcoxon-folds" in md
    assert _cell(out, "rmse", "A", "B") == (6, 0, 0)
    assert _cell(out, "rmse", "C", "B") == (0, 6, 0)  # mixed folds: draws
    assert (out / "figures" / "scatter_pairs_rmse_true_class.png").is_file()
    assert not (out / "figures" / "scatter_pairs_rmse.png").exists()
    assert "figures/scatter_pairs_rmse_true_class.png" in md
    default = render_report(run, tmp_path / "sign", config={
        **yaml.safe_load((run / "config.yaml").read_text()), "report": {}}, figures=False)
    assert "Wilcoxon signed-rank test over folds" not in (default / "report.md").read_text()
    assert _cell(default, "rmse", "C", "B") == (0, 0, 6)  # sign W/D/L: C's mean is higher
    # one round of 10-fold CV tests every instance once: no bias/variance to report
    tidy = pd.read_csv(out / "tables" / "wdl.csv")
    assert not {"bias", "variance"} & set(tidy["metric"])


def test_report_without_per_fold_values_says_so(tmp_path: Path):
    from workbench.report.render import render_report

    run = _write_report_run(tmp_path / "old", {"wdl": "wilcoxon-folds"}, False)
    out = render_report(run, figures=False)
    md = (out / "report.md").read_text()
    assert "no per-fold values" in md and "fall back to the sign-test W/D/L" in md
    assert _cell(out, "rmse", "C", "B") == (0, 0, 6)
    plain = _write_report_run(tmp_path / "plain", {}, False)  # default: renders as before
    assert "per-fold" not in (render_report(plain, figures=False) / "report.md").read_text()


def test_report_options_for_wdl_and_scatter(tmp_path: Path):
    from workbench.report.options import options_from_config

    present = ["A", "B"]
    opts = options_from_config({"report": {"scatter": [["A", "B"]]}}, tmp_path, present)
    assert opts.scatter == [("A", "B")] and opts.scatter_metrics == ["zero_one_loss", "rmse"]
    assert opts.wdl == "sign" and opts.scatter_log is False
    for bad, match in (({"wdl": "ttest"}, "report.wdl"),
                       ({"scatter": {"pairs": [["A", "B"]], "metrics": ["f_measure"]}}, "f_measure"),
                       ({"scatter": {"pairs": [["A", "X"]]}}, "scatter.pairs"),
                       ({"scatter": {"pairs": [["A", "B"]], "log": "yes"}}, "log"),
                       ({"scatter": {"pair": [["A", "B"]]}}, "unknown key")):
        with pytest.raises(ConfigError, match=match):
            options_from_config({"report": bad}, tmp_path, present)


def test_cv_cli_discretize_sample(capsys):
    from workbench.__main__ import main

    args = ["cv", "--learner", "KDB1", "--data", "iris", "--rounds", "1", "--folds", "3"]
    assert main(args + ["--discretize-sample", "40"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["discretize_sample"] == 40
    assert main(args + ["--discretize-sample", "40"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["rmse"] == first["rmse"]  # the sample is drawn with the fold's seed
    assert main(args + ["--discretize-sample", "0"]) == 2
    assert "--discretize-sample" in capsys.readouterr().err
