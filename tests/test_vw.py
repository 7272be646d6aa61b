"""`learner: vw` (VWLF / VWSF, JMLR 2016's comparator): the examples VW is given, the
probabilities it gives back, and runs in a config (where `vowpalwabbit` is installed)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import run_config
from workbench.data.dataset import Attribute, Dataset
from workbench.errors import LearnerError
from workbench.learners import registry
from workbench.learners.vw import VowpalWabbit

vowpalwabbit = pytest.importorskip("vowpalwabbit")


def toy() -> Dataset:
    atts = (Attribute("colour", ("red", "green", "blue")), Attribute("size"))
    X = np.array([[0, 1.5], [2, np.nan], [np.nan, 0.25], [1, 3.0]])
    return Dataset("toy", atts, Attribute("c", ("a", "b", "c")), X, np.array([0, 2, 1, 0]))


def test_each_row_is_one_example_one_feature_per_value_missing_its_own():
    data = toy()
    vw = registry.create("vw")
    assert vw._lines(data, data.y) == [
        "1 |a 0=0 1:1.5", "3 |a 0=2 1=?", "2 |a 0=? 1:0.25", "1 |a 0=1 1:3.0"]
    assert vw._lines(data, None)[1] == " |a 0=2 1=?"
    # missing: none — a missing value is no feature
    none = registry.create("vw", missing="none")
    assert none._lines(data, data.y)[1:3] == ["3 |a 0=2", "2 |a 1:0.25"]
    # VWLF / VWSF discretise with EF5 first, as the paper's notes say; -raw variants not
    assert registry.create("VWLF").preprocessing == "ef:5"
    assert registry.create("VWSF-raw").preprocessing == "none"
    args = registry.create("VWSF", seed=4)._args(3)
    assert "--oaa 3 --scores --loss_function squared" in args and args.endswith("-q aa")
    assert "--random_seed 4" in args


def test_probabilities_are_vws_own_for_the_logistic_loss():
    """σ(score) normalised = what VW's --probabilities prints, fed the same rows in the same
    order (the learner's seeded shuffle, `passes` times)."""
    rng = np.random.default_rng(0)
    atts = tuple(Attribute(f"a{j}", ("x", "y", "z")) for j in range(4))
    X = rng.integers(0, 3, (300, 4)).astype(float)
    y = ((X[:, 0] + X[:, 1]) % 3).astype(np.int64)
    data = Dataset("syn", atts, Attribute("c", ("0", "1", "2")), X, y)
    model = registry.create("VWLF", seed=7).fit(data)
    ours = model.predict_proba(data)

    ref = vowpalwabbit.Workspace(model._args(3).replace("--scores", "--probabilities"))
    lines = model._lines(data, y)
    order = np.random.default_rng(7).permutation(300)
    for _ in range(3):
        for i in order:
            ref.learn(lines[i])
    theirs = np.array([ref.predict(line) for line in model._lines(data, None)])
    np.testing.assert_allclose(ours, theirs, atol=2e-6)
    assert (ours.argmax(axis=1) == y).mean() > 0.9  # the interaction is learnt (-q aa)
    # without the quadratic features it is not: a linear model cannot learn (a0 + a1) mod 3
    flat = registry.create("VWLF", seed=7, quadratic=False).fit(data).predict_proba(data)
    assert (flat.argmax(axis=1) == y).mean() < 0.8


def test_a_config_runs_vwlf_and_vwsf_in_worker_processes(tmp_path):
    from workbench import store

    body = """
        name: v
        datasets: [labor, iris]
        protocol: {rounds: 2, folds: 2}
        learners: [VWLF, VWSF]
        output: OUT
        """
    one, out = run_config(tmp_path, body.replace("OUT", "one"), jobs=2)
    assert not one.failures and one.folds_run == 2 * 2 * 4
    first = store.load_summary(out)
    assert first["zero_one_loss"].between(0, 0.5).all()
    # deterministic whatever the number of workers
    again, out = run_config(tmp_path, body.replace("OUT", "again"), jobs=1)
    assert not again.failures
    np.testing.assert_array_equal(first["log_loss"], store.load_summary(out)["log_loss"])


def test_without_vowpalwabbit_one_clear_error(monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name == "vowpalwabbit":
            raise ImportError("no")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(LearnerError, match=r"pip install 'snb-workbench\[vw\]'"):
        registry.create("VWLF").fit(toy())
