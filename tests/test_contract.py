"""The learner contract (`workbench.testing.check_learner`) over every name `workbench
learners` lists, and a broken plugin learner failing it with a readable message."""

from __future__ import annotations

import re

import numpy as np
import pytest

from workbench.learners import registry
from workbench.learners.base import Learner
from workbench.testing import ContractError, check_learner

WIDE = ("labor", "house-votes-84")
"""Joins of five attributes need at least five: these have 16."""

DATASETS = {re.compile(r"^(A5JE|ALR5|WANJE5|LR5)\b"): WIDE}
ORDER_DEPENDENT = re.compile(
    r"(-SGD|-ADAGRAD|-MSE)$|^(RF10|RF100|RandomTree|SKRF10|sklearn|weka|vw|VWLF|VWSF"
    r"|VWLF-raw|VWSF-raw)$")
"""Documented exceptions to row-order invariance: stochastic optimisers visit rows in order,
the non-convex mse objective, bagging by row position, wrapped scikit-learn and Weka
schemes, Vowpal Wabbit's SGD."""


def _bridge_missing(name: str) -> str:
    """Why a learner that needs software outside Python cannot run here ('' when it can)."""
    from workbench.errors import LearnerError

    try:
        if name == "weka":
            from workbench.learners.weka import jvm
            jvm()
        elif name in ("vw", "VWLF", "VWSF"):
            from workbench.learners.vw import _workspace
            _workspace("--quiet")
    except LearnerError as exc:
        return str(exc)
    return ""


def _datasets(name: str) -> tuple[str, ...]:
    for pattern, sets in DATASETS.items():
        if pattern.search(name):
            return sets
    return ("contact-lenses", "labor", "iris")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", registry.names())
def test_every_registered_learner_keeps_the_contract(name):
    if why := _bridge_missing(name):
        pytest.skip(why)
    ran = check_learner(name, datasets=_datasets(name), max_rows=200)
    assert {"distributions", "deterministic", "pickle", "scikit-learn"} <= set(ran)
    assert ("row order" in ran) != bool(ORDER_DEPENDENT.search(name)), ran


def test_the_contract_covers_every_listed_name():
    assert len(registry.names()) >= 116


class _Broken(Learner):
    """Uniform distributions, but one row is left unnormalised."""

    preprocessing = "mdl"

    def fit(self, data):
        self._remember_header(data)
        return self

    def predict_proba(self, data):
        self._check_fitted(data)
        p = np.full((data.n_instances, data.n_classes), 1.0 / data.n_classes)
        p[-1] *= 2.0
        return p


class _OrderBound(_Broken):
    """Normalised, but says it is order-free while keeping the last training row's class."""

    def fit(self, data):
        super().fit(data)
        self.last = int(data.y[-1])
        return self

    def predict_proba(self, data):
        self._check_fitted(data)
        p = np.full((data.n_instances, data.n_classes), 0.1 / max(1, data.n_classes - 1))
        p[:, self.last] = 0.9
        return p / p.sum(axis=1, keepdims=True)


def test_a_broken_plugin_learner_fails_with_a_readable_message():
    with pytest.raises(ContractError) as info:
        check_learner(_Broken)
    msg = str(info.value)
    assert msg.startswith("learner '_Broken' on contact-lenses (24 rows): distributions: ")
    assert "sums to 2, not 1 (row 23)" in msg
    with pytest.raises(ContractError, match=r"_OrderBound' on contact-lenses .*row order: "
                                            r"the same rows in another order"):
        check_learner(_OrderBound)
