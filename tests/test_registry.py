"""The built-in AnDE / RF10 registrations and parameter validation through the registry."""

from __future__ import annotations

import pytest

from workbench.errors import LearnerError, WorkbenchError
from workbench.learners import registry
from workbench.learners.ande import AnDE
from workbench.learners.forest import RandomForest

EXPECTED = {
    "NB": dict(n=0, subsumption=None, weighting=None),
    "A1DE": dict(n=1, subsumption=None, weighting=None),
    "A1DE-S": dict(n=1, subsumption=100, weighting=None),
    "A1DE-W": dict(n=1, subsumption=None, weighting="mi"),
    "A1DE-SW": dict(n=1, subsumption=100, weighting="mi"),
    "A2DE": dict(n=2, subsumption=None, weighting=None),
    "A2DE-S": dict(n=2, subsumption=100, weighting=None),
    "A2DE-W": dict(n=2, subsumption=None, weighting="mi"),
    "A2DE-SW": dict(n=2, subsumption=100, weighting="mi"),
    "A3DE": dict(n=3, subsumption=None, weighting=None),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ande_variants(name):
    spec = registry.get(name)
    assert spec.factory is AnDE and spec.source == "builtin"
    params = spec.parameters()
    for k, v in EXPECTED[name].items():
        assert params[k] == v
    assert params["m"] == 1.0 and params["frequency_limit"] == 1
    learner = registry.create(name)
    assert learner.preprocessing == "mdl"
    for k, v in EXPECTED[name].items():
        assert getattr(learner, k) == v


def test_overrides_and_validation():
    learner = registry.create("A2DE-SW", m=0.5, frequency_limit=2, preprocessing="ef:5")
    assert (learner.m, learner.frequency_limit, learner.preprocessing) == (0.5, 2, "ef:5")
    assert learner.n == 2 and learner.subsumption == 100
    assert registry.create("A1DE", subsumption=None).subsumption is None
    assert registry.create("A1DE", m=2).m == 2.0
    with pytest.raises(LearnerError, match="unknown parameter"):
        registry.create("NB", depth=3)
    with pytest.raises(LearnerError, match="'subsumption' must be"):
        registry.create("A1DE", subsumption="many")
    with pytest.raises(LearnerError, match="'frequency_limit' must be"):
        registry.create("A1DE", frequency_limit=1.5)
    with pytest.raises(LearnerError, match="'n' must be"):
        registry.create("A1DE", n=True)
    with pytest.raises(WorkbenchError, match="preprocessing"):
        registry.create("A1DE", preprocessing="bins")
    with pytest.raises(LearnerError, match="unknown learner"):
        registry.get("RF1000")


def test_rf10():
    spec = registry.get("RF10")
    assert spec.factory is RandomForest
    assert spec.parameters() == {"n_trees": 10, "k_features": 0, "min_num": 1.0, "seed": 1,
                                 "max_depth": 0, "weka_version": "3.6.14"}
    assert registry.create("RF10", seed=7).seed == 7


def test_plugin_can_register_a_variant():
    registry.register("A1DE-m0.1-test", AnDE, n=1, m=0.1, source="test")
    try:
        assert registry.create("A1DE-m0.1-test").m == 0.1
        with pytest.raises(LearnerError, match="registered twice"):
            registry.register("A1DE-m0.1-test", AnDE, n=1)
    finally:
        registry.unregister("A1DE-m0.1-test")


def test_declared_parameters_get_set_and_validate_once():
    from workbench.learners.kdb import SKDB

    a = AnDE(2, m=0.5)  # positional in declaration order
    assert a.get_params() == {"n": 2, "m": 0.5, "frequency_limit": 1, "subsumption": None,
                              "weighting": None, "mi_estimate": "reference", "missing": "skip",
                              "selection": None, "elimination": "child",
                              "initial_candidate_sse": 1.0, "n_jobs": 1, "layout": "compact"}
    assert repr(a).startswith("AnDE(n=2, m=0.5,")
    train = registry.create("NB")
    from workbench.data.catalog import load_dataset

    iris = load_dataset("iris")
    from workbench.discretize import fit_discretizer

    d = fit_discretizer("mdl", iris).transform(iris)
    train.fit(d)
    assert train.set_params(m=2.0) is train and train.m == 2.0
    with pytest.raises(LearnerError, match="before fit"):  # re-parameterised = unfitted
        train.predict_proba(d)
    with pytest.raises(LearnerError, match="parameter 'm' must be float > 0"):
        train.set_params(m=-1)
    with pytest.raises(LearnerError, match="unknown parameter 'depth'"):
        SKDB(depth=3)
    with pytest.raises(LearnerError, match="'select' must be one of 'both', 'k', 'attributes'"):
        SKDB(select="all")
    # the registry reads the same declarations
    assert registry.get("SKDB").parameters() == {"k_max": 5, "select": "both", "loss": "rmse",
                                                "m": 1.0}
    with pytest.raises(LearnerError, match="learner 'SKDB': parameter 'k_max' must be"):
        registry.create("SKDB", k_max=-1)


def test_a_learner_written_with_hooks_only():
    """The template: parameters declared, `_fit` and `_joint_log_likelihood` written; the
    base validates, remembers the header, drops missing-class rows and normalises once."""
    import numpy as np

    from workbench.data.dataset import Attribute, Dataset
    from workbench.learners.base import Learner, number

    class Prior(Learner):
        parameters = (number("alpha", 1.0, 0.0),)

        def _fit(self, rows):
            self.counts_ = np.bincount(rows.y, minlength=rows.n_classes) + self.alpha

        def _joint_log_likelihood(self, data):
            return np.tile(np.log(self.counts_), (data.n_instances, 1))

    atts = (Attribute("a", ("p", "q")),)
    cls = Attribute("c", ("x", "y", "z"))
    data = Dataset("d", atts, cls, np.zeros((5, 1)), np.array([0, 0, 1, -1, 0]))
    p = Prior(alpha=0.5).fit(data).predict_proba(data)
    np.testing.assert_allclose(p[0], np.array([3.5, 1.5, 0.5]) / 5.5, rtol=1e-15)
    with pytest.raises(LearnerError, match="fit expects a Dataset"):
        Prior().fit([[1, 2]])
    with pytest.raises(WorkbenchError, match="no training rows with a known class"):
        Prior().fit(data.replace(y=np.full(5, -1)))
    with pytest.raises(LearnerError, match="'alpha' must be float ≥ 0"):
        Prior(alpha=-1)
