"""Nested tuning (`evaluation.tuning`): parameters chosen per training fold by an inner CV
that never sees the outer test rows; the config, the stored choices and the report."""

from __future__ import annotations

import json
import shutil
import textwrap

import numpy as np
import pandas as pd
import pytest

from conftest import needs_shared, shared_file
from workbench.data.dataset import Attribute, Dataset
from workbench.errors import ConfigError, WorkbenchError
from workbench.evaluation import metrics
from workbench.evaluation.outofcore.passes import out_of_core_model
from workbench.evaluation.pipeline import make_learner, run_fold
from workbench.evaluation.splits import row_folds
from workbench.evaluation.tuning import Tuned
from workbench.experiment.config import parse_config
from workbench.learners.base import Learner
from workbench.store import load_fold_metrics, load_tuned

SEEN: list[tuple[float, frozenset]] = []


class Recorder(Learner):
    """Predicts a blend of the training class frequencies (weight `w`) and the uniform
    distribution; records the `id` column of every training set it is fitted on."""

    preprocessing = "none"

    def __init__(self, w: float = 1.0):
        self.w = w

    def fit(self, data):
        self._remember_header(data)
        SEEN.append((self.w, frozenset(data.X[:, 0].astype(int).tolist())))
        freq = np.bincount(data.y, minlength=data.n_classes) / max(data.n_instances, 1)
        self.p_ = self.w * freq + (1 - self.w) / data.n_classes
        return self

    def predict_proba(self, data):
        return np.tile(self.p_, (data.n_instances, 1))


def ids_data(n: int = 60, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.8).astype(np.int64)  # imbalanced: the prior beats uniform
    X = np.arange(n, dtype=np.float64)[:, None]
    return Dataset("ids", (Attribute("id"),), Attribute("c", ("a", "b")), X, y)


def test_inner_cv_never_sees_the_outer_test_rows():
    data = ids_data()
    test = np.arange(0, 60, 3)
    train = np.setdiff1d(np.arange(60), test)
    params = {"w": [0.0, 0.5, 1.0], "tune": {"folds": 4}}
    run_fold(data, Recorder, params, train, test, seed=5)  # (the untimed warm-up's fits)
    SEEN.clear()
    res = run_fold(data, Recorder, params, train, test, seed=5)
    outer = frozenset(train.tolist())
    tuned_fits = list(SEEN)
    assert all(ids <= outer for _, ids in tuned_fits)
    # per candidate: the four inner training parts (disjoint held-out parts covering the
    # fold, each class within one row of a quarter), then the chosen one on all of it
    inner = [ids for w, ids in tuned_fits[:12]]
    y = dict(zip(range(60), data.y.tolist()))
    for c in range(3):
        parts = inner[4 * c: 4 * c + 4]
        held = [outer - p for p in parts]
        assert sum(map(len, held)) == 40 and frozenset().union(*held) == outer
        for cls in (0, 1):
            sizes = [sum(y[i] == cls for i in h) for h in held]
            assert max(sizes) - min(sizes) <= 1
    assert tuned_fits[12] == (1.0, outer) and len(tuned_fits) == 13
    assert res.fit_report["tuned"] == {"w": 1.0}


def test_the_choice_is_the_best_inner_score_and_ties_go_first():
    data = ids_data()
    model = make_learner(Recorder, {"w": [0.0, 0.5, 1.0], "tune": {"folds": 3, "seed": 9}})
    model.fit(data)
    # the scores by hand: the stratified inner folds (each class's rows dealt in blocks of
    # three by `row_folds`), pooled RMSE per candidate
    fold_of = np.empty(60, dtype=np.int64)
    for cls in (0, 1):
        rows = np.flatnonzero(data.y == cls)
        fold_of[rows] = row_folds(0, rows.size, 3, 9, cls)
    for w in (0.0, 0.5, 1.0):
        proba = np.empty((60, 2))
        for f in range(3):
            tr = fold_of != f
            freq = np.bincount(data.y[tr], minlength=2) / tr.sum()
            proba[fold_of == f] = w * freq + (1 - w) / 2
        assert model.scores_[json.dumps({"w": w})] == pytest.approx(
            metrics.rmse(proba, data.y), abs=1e-15)
    assert model.chosen_ == {"w": 1.0}
    # accuracy cannot tell the blends apart (same predicted class): the first one wins
    tie = make_learner(Recorder, {"w": [0.5, 1.0], "tune": {"folds": 3, "metric":
                                                            "zero_one_loss"}}).fit(data)
    assert len(set(tie.scores_.values())) == 1 and tie.chosen_ == {"w": 0.5}
    # kappa is higher-is-better: read in its direction (all equal: the first again)
    assert make_learner(Recorder, {"w": [0.5, 1.0], "tune": {"metric": "kappa"}}
                        ).fit(data).chosen_ == {"w": 0.5}


def nominal_data(n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.integers(0, 4, (n, 5)).astype(np.float64)
    X[:, 0] = (y + (rng.random(n) < 0.3)) % 4
    atts = tuple(Attribute(f"a{i}", ("p", "q", "r", "s")) for i in range(5))
    return Dataset("nom", atts, Attribute("c", ("x", "y", "z")), X, y)


def test_the_same_seed_gives_the_same_choices_and_probabilities():
    data = nominal_data(80, 3)
    a = make_learner("KDB", {"k": [0, 1], "tune": {"folds": 3}}, 4).fit(data)
    b = make_learner("KDB", {"k": [0, 1], "tune": {"folds": 3}}, 4).fit(data)
    assert a.chosen_ == b.chosen_ and a.scores_ == b.scores_
    np.testing.assert_array_equal(a.predict_proba(data), b.predict_proba(data))
    assert isinstance(a, Tuned) and a.fit_report()["tuned"] == a.chosen_


def config_text(learners: str, datasets: str = "[iris]") -> str:
    return f"name: t\ndatasets: {datasets}\nlearners:\n" + textwrap.indent(
        textwrap.dedent(learners).strip() + "\n", "  ")


def test_a_tuned_spec_is_one_learner_not_a_sweep():
    cfg = parse_config(config_text("""
        KDB-tuned: {learner: KDB, k: [1, 2, 3], tune: {folds: 3, metric: rmse}}
        """))
    (lc,) = cfg.learners
    assert (lc.display, lc.learner) == ("KDB-tuned", "KDB")
    assert dict(lc.params) == {"k": [1, 2, 3], "tune": {"folds": 3, "metric": "rmse"}}
    model = lc.create()
    assert isinstance(model, Tuned) and model.candidates == [{"k": 1}, {"k": 2}, {"k": 3}]


@pytest.mark.parametrize("spec, message", [
    ("{learner: KDB, k: [1, 2], tune: {folds: 1}}", r"learners\.T\.tune\.folds: expected an "
                                                    r"integer ≥ 2, got 1"),
    ("{learner: KDB, k: [1, 2], tune: {metric: auc}}", r"learners\.T\.tune\.metric: "
                                                       r"expected one of zero_one_loss, rmse"),
    ("{learner: KDB, k: [1, 2], tune: {fold: 3}}", r"learners\.T\.tune\.fold: unknown "
                                                   r"option"),
    ("{learner: KDB, k: 2, tune: {}}", r"learners\.T\.tune: no parameter"),
    ("{learner: KDB, k: [1, 2], preprocessing: [mdl, 'ef:5'], tune: {}}",
     r"learners\.T\.preprocessing: not tunable"),
    ("{learner: KDB, k: [1, -2], tune: {}}", r"learners\.T\.k: candidate \{\"k\": -2\}"),
    ("{learner: KDB, q: [1, 2], tune: {}}", r"learners\.T\.q: learner 'KDB' has no "
                                            r"parameter 'q'"),
])
def test_tune_errors_name_the_field(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(config_text(f"T: {spec}"))


def test_out_of_core_refuses_a_learner_trained_in_memory_only():
    with pytest.raises(WorkbenchError, match=r"candidate \{\"n_trees\": 2\} cannot train in "
                                             "passes: it trains in memory only"):
        out_of_core_model("RF10", {"n_trees": [2, 3], "tune": {}}, None)


@pytest.mark.parametrize("learner, params, subtraction", [
    ("A1DE", {"m": [0.05, 1.0, 20.0]}, True),  # one pass, inner folds by subtraction
    ("KDB", {"k": [0, 1, 2]}, False),          # the KDB family's passes, side by side
])
def test_out_of_core_tuning_equals_in_memory(learner, params, subtraction, tmp_path):
    """labor, EF5/MDL cut points per outer training fold, 5-fold CV, chunks of 7 rows: the
    same choice in every fold, the same inner scores (1e-12) and probabilities (1e-12)."""
    from workbench.data.arff import load_arff
    from workbench.evaluation.cv import evaluate
    from workbench.evaluation.outofcore import evaluate_kfold
    from workbench.evaluation.protocols import KFold
    from conftest import EMBEDDED

    spec = {**params, "tune": {"folds": 3, "metric": "rmse"}}
    data = load_arff(EMBEDDED / "labor.arff.gz")
    mem = evaluate(data, learner, spec, KFold(rounds=1, folds=5, seed=3, assignment="rows"))
    got = {}

    def keep(r, folds, idx, proba, y):
        for f in np.unique(folds):
            got.setdefault(int(f), []).append((idx[folds == f], proba[folds == f]))

    res = evaluate_kfold(EMBEDDED / "labor.arff.gz", learner, spec, folds=5, seed=3,
                         chunk_rows=7, keep=keep)
    model = out_of_core_model(learner, spec, 1)
    assert model._subtract is subtraction and model.n_passes() == (2 if subtraction else 3)
    for fr in mem.fold_results:
        idx = np.concatenate([i for i, _ in got[fr.fold]])
        proba = np.vstack([p for _, p in got[fr.fold]])
        np.testing.assert_array_equal(idx, fr.test_index)
        np.testing.assert_allclose(proba, fr.proba, rtol=0, atol=1e-12)
        ours = res.folds[fr.fold].fit_report
        assert ours["tuned"] == fr.fit_report["tuned"]
        assert ours["inner"] == pytest.approx(fr.fit_report["inner"], rel=1e-12)
        assert len(set(ours["inner"].values())) == 3  # (the candidates really differ)


@needs_shared
def test_tuned_kdb_next_to_nb_and_a1de_on_labor_vehicle_credit_a(tmp_path):
    """The issue's acceptance config (one round of 2-fold CV here): one summary row per
    data set for the tuned learner, its folds' choices in fold_metrics.csv's `tuned`
    column (also read back from the CSV alone), the report's comparison with the fixed
    candidates and the oracle."""
    from workbench.experiment.config import load_config
    from workbench.experiment.runner import run_experiment
    from workbench.report.render import render_report

    data = tmp_path / "data"
    data.mkdir()
    for slug in ("labor", "vehicle", "credit-a"):
        shutil.copy(shared_file(slug), data)
    path = tmp_path / "t.yaml"
    path.write_text(textwrap.dedent("""
        name: tuned
        datasets: [labor, vehicle, credit-a]
        data_dirs: [data]
        protocol: {rounds: 1, folds: 2, seed: 1}
        learners:
          NB: NB
          A1DE: A1DE
          KDB-tuned: {learner: KDB, k: [1, 2, 3], tune: {folds: 3, metric: rmse}}
          KDB: {learner: KDB, k: [1, 2, 3]}
        output: run
        """))
    result = run_experiment(load_config(path), stream=open("/dev/null", "w"))
    run = tmp_path / "run"
    assert not result.failures
    summary = pd.read_csv(run / "summary.csv")
    assert sorted(summary[summary.learner == "KDB-tuned"].dataset) == \
        ["credit-a", "labor", "vehicle"]
    assert "tuned" not in summary.columns
    folds = pd.read_csv(run / "fold_metrics.csv")
    tuned = folds[folds.learner == "KDB-tuned"]["tuned"]
    assert len(tuned) == 6 and all(json.loads(t)["k"] in (1, 2, 3) for t in tuned)
    assert folds[folds.learner != "KDB-tuned"]["tuned"].isna().all()
    chosen = load_tuned(run)
    assert sorted(chosen.tuned) == sorted(tuned) and len(chosen) == 6
    out = render_report(run, tmp_path / "report", figures=False)
    text = (out / "report.md").read_text()
    assert "## Nested tuning" in text and "| data set | tuned | oracle |" in text
    table = pd.read_csv(out / "tables" / "tuning_KDB-tuned_rmse.csv")
    fixed = summary.pivot_table(index="dataset", columns="learner", values="rmse")
    for r in table.itertuples():
        best = min(fixed.at[r.dataset, f"KDB[k={k}]"] for k in (1, 2, 3))
        assert r.oracle == pytest.approx(best, abs=1e-12)
        assert r.tuned == pytest.approx(fixed.at[r.dataset, "KDB-tuned"], abs=1e-12)
    # resumed like any pair: nothing to run again
    again = run_experiment(load_config(path), stream=open("/dev/null", "w"))
    assert again.folds_run == 0 and again.pairs_already_complete == 18
    # committed without its predictions: the choices and fold values from the CSVs
    shutil.rmtree(run / "predictions")
    back = load_tuned(run)
    assert sorted(map(tuple, back.values.tolist())) == sorted(map(tuple,
                                                                  chosen.values.tolist()))
    assert "tuned" not in set(load_fold_metrics(run).metric)


def test_on_a_stream_the_choice_is_the_best_prequential_score_so_far():
    """Prequential: each candidate predicts each window before learning it; the tuned
    learner predicts with the best candidate on the earlier windows (the first before any
    score) — its probabilities are that candidate's, window by window."""
    from workbench.evaluation.outofcore.prequential import prequential_fold

    data = nominal_data(300, 8)
    spec = {"m": [0.01, 1.0, 50.0], "tune": {"metric": "log_loss"}}
    fold = prequential_fold(data, "A1DE", spec, 50, seed=1)
    own = {m: prequential_fold(data, "A1DE", {"m": m}, 50, seed=1) for m in spec["m"]}
    scores = {m: [] for m in spec["m"]}
    for w, lo in enumerate(range(50, 300, 50)):
        rows = (fold.test_index >= lo) & (fold.test_index < lo + 50)
        past = {m: float(np.mean(np.concatenate(v))) if v else None
                for m, v in scores.items()}
        best = 0.01 if past[0.01] is None else min(spec["m"], key=lambda m: (past[m],
                                                                            spec["m"].index(m)))
        np.testing.assert_allclose(fold.proba[rows], own[best].proba[rows], rtol=0, atol=1e-13)
        for m in spec["m"]:
            p = own[m].proba[rows][np.arange(rows.sum()), data.y[fold.test_index[rows]]]
            scores[m].append(-np.log(np.clip(p, metrics.LOG_LOSS_EPSILON,
                                             1 - metrics.LOG_LOSS_EPSILON)))
    assert fold.fit_report["tuned"]["m"] in spec["m"]
    with pytest.raises(WorkbenchError, match=r"cannot be tuned on a stream: it does not "
                                             r"learn chunk by chunk"):
        out_of_core_model("KDB", {"k": [1, 2], "tune": {}}, None, one_pass=True)


def test_the_report_finds_tuned_learners_and_their_fixed_candidates():
    from workbench.report.sections.tuning import tuned_learners

    assert tuned_learners({"learners": ["NB", "A1DE"]}) == {}  # the list shorthand
    got = tuned_learners({"learners": {
        "T": {"learner": "KDB", "k": [1, 2], "m": 0.5, "tune": {"metric": "log_loss"}},
        "K1": {"learner": "KDB", "k": 1, "m": 0.5},
        "K2": {"learner": "KDB", "k": 2},  # another m: not a candidate
        "A": {"learner": "A1DE", "k": 2, "m": 0.5}}})
    assert got == {"T": {"learner": "KDB", "fixed": {"m": 0.5}, "grid": {"k": [1, 2]},
                         "metric": "log_loss", "fixed_runs": {'{"k": 1}': "K1"}}}
