"""Per-class precision and recall: the confusion matrix a summary keeps (in memory and
streamed alike), the values against scikit-learn, and the report's table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workbench import store
from workbench.evaluation.metrics import confusion_matrix, per_class_precision_recall
from workbench.experiment.config import parse_config
from workbench.experiment.runner import run_experiment
from workbench.report import render_report


def test_per_class_precision_recall_equals_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(4)
    y = rng.integers(0, 4, 300)
    proba = rng.dirichlet(np.ones(4), 300)
    proba[:, 3] = 0.0  # class 3 never predicted: precision undefined (NaN)
    precision, recall = per_class_precision_recall(confusion_matrix(proba, y))
    pred = proba.argmax(axis=1)
    p_ref, r_ref, _, _ = metrics.precision_recall_fscore_support(
        y, pred, labels=range(4), zero_division=np.nan)
    np.testing.assert_allclose(precision, p_ref, rtol=1e-15, equal_nan=True)
    np.testing.assert_allclose(recall, r_ref, rtol=1e-15)
    assert np.isnan(precision[3]) and recall[3] == 0.0


def test_a_run_keeps_each_pairs_confusion_and_the_report_tables_it(tmp_path):
    out = tmp_path / "run"
    cfg = parse_config(f"name: c\ndatasets: [iris, labor]\nprotocol: {{rounds: 2, folds: 3}}\n"
                       f"learners: [NB, A1DE]\noutput: {out}\n")
    run_experiment(cfg, jobs=1, stream=open("/dev/null", "w"))
    confusions = store.load_pair_arrays(out, "confusion")
    assert set(confusions) == {(d, l) for d in ("iris", "labor") for l in ("NB", "A1DE")}
    iris = confusions[("iris", "NB")]
    assert iris.shape == (3, 3) and iris.sum() == 2 * 150  # every round's tested rows
    assert "confusion" not in store.load_summary(out).columns
    # the same matrix from the stored predictions
    pred = store.load_predictions(out, "iris", "NB")
    proba = pred[[c for c in pred if c.startswith("p_")]].to_numpy()
    np.testing.assert_array_equal(iris, confusion_matrix(proba, pred["y"].to_numpy()))
    # 0-1 loss is what the confusion matrix says
    row = store.read_summary(out, "iris", "NB")
    assert row["zero_one_loss"] == pytest.approx(1 - np.trace(iris) / iris.sum(), abs=1e-12)
    report = render_report(out, figures=False)
    table = pd.read_csv(report / "tables" / "per_class.csv")
    got = table[(table.dataset == "iris") & (table.learner == "NB")]
    precision, recall = per_class_precision_recall(iris)
    np.testing.assert_allclose(got.precision, precision)
    np.testing.assert_allclose(got.recall, recall)
    assert list(got.support) == list(iris.sum(axis=1))
    md = (report / "report.md").read_text()
    assert "precision and recall per class" in md and "## Appendix: calibration" in md
    pooled = pd.read_csv(report / "tables" / "brier_decomposition_pooled.csv")
    assert set(pooled.learner) == {"NB", "A1DE"} and (pooled.uncertainty >= 0).all()
    per_pair = pd.read_csv(report / "tables" / "brier_decomposition.csv")
    assert len(per_pair) == 4
    figures = render_report(out, tmp_path / "with-figures")
    assert (figures / "figures" / "reliability_all.png").is_file()


def test_brier_decomposition_is_exact_and_bins_are_additive():
    from workbench.evaluation.metrics import brier_decomposition, calibration_bins, ece
    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, 500)
    proba = rng.dirichlet(np.ones(3) * 0.7, 500)
    conf = proba.max(axis=1)
    right = (proba.argmax(axis=1) == y).astype(float)
    bins = calibration_bins(proba, y)
    np.testing.assert_allclose(bins, calibration_bins(proba[:200], y[:200])
                               + calibration_bins(proba[200:], y[200:]))
    parts = brier_decomposition(bins)
    assert parts["brier_top"] == pytest.approx(np.mean((conf - right) ** 2), rel=1e-12)
    assert parts["brier_top"] == pytest.approx(parts["reliability"] - parts["resolution"]
                                               + parts["uncertainty"] + parts["within_bin"],
                                               abs=1e-12)
    assert parts["uncertainty"] == pytest.approx(right.mean() * (1 - right.mean()))
    # reliability by hand from the bins: Σ n_b (c̄_b − ō_b)² / n
    edges = np.minimum(np.searchsorted(np.linspace(0.1, 1.0, 10), conf), 9)
    rel = sum((edges == b).sum() * (conf[edges == b].mean() - right[edges == b].mean()) ** 2
              for b in np.unique(edges)) / 500
    assert parts["reliability"] == pytest.approx(rel, rel=1e-12)
    assert ece(proba, y) == pytest.approx(sum(
        (edges == b).sum() * abs(conf[edges == b].mean() - right[edges == b].mean())
        for b in np.unique(edges)) / 500, rel=1e-12)
