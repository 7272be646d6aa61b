"""Evaluation protocols (`evaluation.protocols`): fold specs (sizes, disjointness, a fixed
test set per round, determinism by seed) and runs of each protocol through the runner."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.evaluation.metrics import is_measurement
from workbench.errors import ConfigError, WorkbenchError
from workbench.data.catalog import load_dataset
from workbench.evaluation.cv import evaluate
from workbench.evaluation.protocols import (
    PROTOCOLS,
    GivenSplits,
    Holdout,
    KFold,
    LearningCurve,
    RandomSampling,
)
from workbench.evaluation.splits import fold_indices, make_splits
from workbench import store
from workbench.experiment.config import parse_config
from workbench.experiment.runner import run_experiment

N = 200


def _check_common(proto, n=N):
    plan = proto.plan(n, np.arange(n) % 3)
    assert list(plan) == proto.keys()
    assert len(plan) == proto.n_folds_total
    for spec in plan.values():
        assert np.intersect1d(spec.train, spec.test).size == 0
        assert np.all(np.diff(spec.train) > 0) and np.all(np.diff(spec.test) > 0)
        assert spec.train.min() >= 0 and max(spec.train.max(), spec.test.max()) < n
    # every round tests the same rows, each once
    tested = [np.sort(np.concatenate([plan[(r, f)].test for f in range(proto.folds)]))
              for r in range(proto.rounds)]
    for t in tested:
        np.testing.assert_array_equal(t, tested[0])
        assert np.unique(t).size == t.size
    # deterministic by seed
    again = proto.plan(n, np.arange(n) % 3)
    for key in plan:
        np.testing.assert_array_equal(plan[key].train, again[key].train)
        np.testing.assert_array_equal(plan[key].test, again[key].test)
    return plan


def test_kfold_is_make_splits():
    proto = KFold(rounds=3, folds=4, seed=5)
    plan = _check_common(proto)
    splits = make_splits(N, 3, 4, 5)
    for (r, f), spec in plan.items():
        train, test = fold_indices(splits, r, f)
        np.testing.assert_array_equal(spec.train, train)
        np.testing.assert_array_equal(spec.test, test)
    assert proto.to_dict() == {"rounds": 3, "folds": 4, "seed": 5, "stratify": False}
    assert proto.fold_sizes(N, 0) == (150, 50)


def test_given_splits_are_the_matrix():
    splits = make_splits(N, 2, 3, 9)
    proto = GivenSplits(splits, seed=4)
    plan = _check_common(proto)
    assert (proto.rounds, proto.folds) == (2, 3)
    for (r, f), spec in plan.items():
        np.testing.assert_array_equal(spec.test, np.flatnonzero(splits[r] == f))
    assert proto.to_dict()["splits_sha256"] != GivenSplits(make_splits(N, 2, 3, 8)).to_dict()[
        "splits_sha256"]
    with pytest.raises(WorkbenchError, match="splits cover 200 instances, data has 199"):
        proto.plan(N - 1)


def test_holdout_sizes():
    plan = _check_common(Holdout(fraction=0.1, seed=2))
    spec = plan[(0, 0)]
    assert spec.test.size == 20 and spec.train.size == 180
    other = Holdout(fraction=0.1, seed=3).plan(N)[(0, 0)]
    assert not np.array_equal(spec.test, other.test)
    with pytest.raises(WorkbenchError, match="fraction"):
        Holdout(fraction=1.5)


def test_random_sampling_fixed_test_set_fresh_training_sets():
    proto = RandomSampling(n_train=50, n_test=40, repetitions=5, seed=7)
    plan = _check_common(proto)
    assert all(s.train.size == 50 and s.test.size == 40 for s in plan.values())
    trains = [tuple(plan[(r, 0)].train) for r in range(5)]
    assert len(set(trains)) == 5  # drawn afresh each repetition
    # a repetition's draw depends only on (seed, repetition): more repetitions keep the first
    more = RandomSampling(n_train=50, n_test=40, repetitions=7, seed=7).plan(N)
    np.testing.assert_array_equal(more[(2, 0)].train, plan[(2, 0)].train)
    with pytest.raises(WorkbenchError, match="exceeds"):
        RandomSampling(n_train=150, n_test=60).plan(N)


def test_learning_curve_nested_training_sets():
    proto = LearningCurve(sizes=(10, 40, 120), n_test=50, seed=1)
    plan = _check_common(proto)
    sizes = [plan[(r, 0)].train.size for r in range(3)]
    assert sizes == [10, 40, 120]
    assert set(plan[(0, 0)].train) <= set(plan[(1, 0)].train) <= set(plan[(2, 0)].train)
    with pytest.raises(WorkbenchError, match="increasing"):
        LearningCurve(sizes=(40, 10))


CONFIG = """
name: p
datasets: [iris, labor]
protocol: PROTOCOL
learners: [NB, A1DE]
output: OUT
"""


@pytest.mark.parametrize("protocol, rounds, bias", [
    ("{type: holdout, fraction: 0.2, seed: 3}", 1, False),
    ("{type: sampled, n_train: 20, n_test: 15, repetitions: 4}", 4, True),
    ("{type: learning_curve, sizes: [10, 20, 30], n_test: 15}", 3, False),
])
def test_runs_of_each_protocol(tmp_path, protocol, rounds, bias):
    out = tmp_path / "run"
    cfg = parse_config(CONFIG.replace("PROTOCOL", protocol).replace("OUT", str(out)))
    assert cfg.protocol.rounds == rounds and cfg.protocol.plan.kind in PROTOCOLS
    run_experiment(cfg, jobs=1, stream=open("/dev/null", "w"))
    df = store.load_summary(out)
    assert len(df) == 4 and set(df["rounds"]) == {rounds}
    assert ("bias" in df.columns and df["bias"].notna().all()) == bias
    row = store.read_summary(out, "iris", "NB")
    assert len(row["per_fold"]["zero_one_loss"]) == rounds
    assert row["n_instances"] == 150
    # hash: the protocol type and its options enter it
    other = parse_config(CONFIG.replace("PROTOCOL", "{rounds: 1, folds: 2}")
                         .replace("OUT", str(out)))
    assert other.config_hash() != cfg.config_hash()


def test_protocol_config_errors():
    for text, message in (
        ("{type: bootstrap}", "protocol.type: unknown protocol"),
        ("{type: holdout, rounds: 3}", "protocol.rounds: unknown key for a holdout"),
        ("{type: sampled, n_train: 0}", "protocol.n_train"),
        ("{type: learning_curve, sizes: 5}", "protocol.sizes"),
    ):
        with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
            parse_config(CONFIG.replace("PROTOCOL", text).replace("OUT", "/tmp/x"))


def test_kfold_config_hash_is_unchanged():
    # the k-fold protocol's config form is the one every existing run was hashed with
    cfg = parse_config(CONFIG.replace("PROTOCOL", "{rounds: 2, folds: 2, seed: 1}")
                       .replace("OUT", "/tmp/x"))
    assert cfg.to_dict()["protocol"] == {"rounds": 2, "folds": 2, "seed": 1, "stratify": False}


@pytest.mark.parametrize("protocol", [
    "{rounds: 2, folds: 3, seed: 4}",
    "{type: holdout, fraction: 0.2, seed: 3}",
    "{type: sampled, n_train: 20, n_test: 15, repetitions: 4}",
    "{type: learning_curve, sizes: [10, 20, 30], n_test: 15}",
])
def test_cv_driver_and_runner_agree(tmp_path, protocol):
    """One driver: `evaluate` (what ``cv`` runs) and the runner's stored folds give the same
    fold rows, the same probabilities and the same summary, for every protocol."""
    out = tmp_path / "run"
    cfg = parse_config(CONFIG.replace("PROTOCOL", protocol).replace("OUT", str(out))
                       .replace("[iris, labor]", "[labor]"))
    run_experiment(cfg, jobs=1, stream=open("/dev/null", "w"))
    stored = store.read_summary(out, "labor", "A1DE")
    held = {(int(r.round), int(r.fold)): r for r in
            evaluate(load_dataset("labor"), "A1DE", {}, cfg.protocol.plan).fold_results}
    res = evaluate(load_dataset("labor"), "A1DE", {}, cfg.protocol.plan, n_jobs=2)
    pred = store.load_predictions(out, "labor", "A1DE")
    assert len(held) == cfg.protocol.plan.n_folds_total == len(res.fold_results)
    for (r, f), grp in pred.groupby(["round", "fold"]):
        mine = held[(r, f)]
        np.testing.assert_array_equal(grp["index"].to_numpy(), mine.test_index)
        p = grp[[c for c in grp.columns if c.startswith("p_")]].to_numpy()
        np.testing.assert_array_equal(p, mine.proba)
    for key, value in res.summary.items():
        if key == "confusion":  # counts: exactly equal
            assert stored[key] == value
        elif key == "calibration":  # the bins' sums
            np.testing.assert_allclose(stored[key], value, rtol=1e-12)
        elif not is_measurement(key):
            assert stored[key] == pytest.approx(value, rel=1e-12, nan_ok=True), key


def test_learning_curve_report_table_and_figure(tmp_path):
    """The report of a learning-curve run tabulates and draws error against training size."""
    import pandas as pd

    from workbench.report.render import render_report
    out = tmp_path / "run"
    cfg = parse_config(CONFIG.replace("PROTOCOL", "{type: learning_curve, sizes: [10, 20, 30], "
                                      "n_test: 15, seed: 2}").replace("OUT", str(out)))
    run_experiment(cfg, jobs=1, stream=open("/dev/null", "w"))
    rep = render_report(out)
    curves = pd.read_csv(rep / "tables" / "learning_curves.csv")
    nb = curves[(curves["dataset"] == "iris") & (curves["learner"] == "NB")
                & (curves["metric"] == "zero_one_loss")]
    assert list(nb["n_train"]) == [10, 20, 30]
    stored = store.read_summary(out, "iris", "NB")["per_fold"]["zero_one_loss"]
    assert list(nb["value"]) == pytest.approx(stored, abs=1e-9)  # the CSV rounds to 10 digits
    assert (rep / "figures" / "learning_curve_zero_one_loss.png").is_file()
    assert "## Learning curves" in (rep / "report.md").read_text()


class _Busy:
    """A uniform classifier whose classification burns ~4 ms of CPU and counts its calls."""

    preprocessing = "none"
    calls = 0

    def fit(self, data):
        self.k = data.n_classes
        return self

    def predict_proba(self, data):
        type(self).calls += 1
        t = __import__("time").process_time()
        while __import__("time").process_time() - t < 0.004:
            pass
        return np.full((data.n_instances, self.k), 1.0 / self.k)


def test_holdout_timing_loop_records_the_mean_of_one_pass():
    from workbench.evaluation.pipeline import run_fold
    data = load_dataset("iris")
    spec = Holdout(fraction=0.2, seed=1, min_test_seconds=0.1).plan(data.n_instances)[(0, 0)]
    _Busy.calls = 0
    res = run_fold(data, _Busy, None, spec.train, spec.test, min_test_seconds=0.1)
    assert _Busy.calls >= 20  # looped until 0.1 s of classification CPU
    assert 0.003 <= res.test_cpu_seconds <= 0.02  # one pass, not the loop's total
    _Busy.calls = 0
    once = run_fold(data, _Busy, None, spec.train, spec.test)
    assert _Busy.calls == 1 and once.test_cpu_seconds >= 0.003
    # absent, the key leaves the protocol (and so every stored holdout run's hash) unchanged
    assert "min_test_seconds" not in Holdout(fraction=0.2).to_dict()
    assert Holdout(fraction=0.2, min_test_seconds=1).to_dict()["min_test_seconds"] == 1.0
    with pytest.raises(WorkbenchError, match="protocol.min_test_seconds"):
        Holdout(min_test_seconds=-1)
    with pytest.raises(ConfigError, match="min_test_seconds"):
        parse_config(CONFIG.replace("PROTOCOL", "{type: holdout, min_test_seconds: x}")
                     .replace("OUT", "/tmp/x"))
