"""A scikit-learn classifier as a workbench learner (a comparator in a config).

    learners:
      LogReg: {learner: sklearn, estimator: sklearn.linear_model.LogisticRegression,
               params: {C: 1.0, max_iter: 1000}}

`estimator` must be a classifier of scikit-learn's public estimator registry
(`sklearn.utils.all_estimators(type_filter="classifier")`), by its public path or its class
name — never an arbitrary import path, so a config cannot run code of its choosing. The
data reach it as a numeric matrix: ``encode="onehot"`` (default) gives each nominal
attribute one indicator column per declared value (a missing value: all 0) and each
numeric attribute its value (missing: the training mean); ``encode="codes"`` gives nominal
codes as numbers and keeps missing values as NaN (for estimators that accept NaN). A
``random_state`` the estimator takes and `params` leaves unset is the fold's seed.
"""

from __future__ import annotations

import importlib
import math
from functools import lru_cache
from typing import Any

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.base import Learner, Param, choice, integer
from workbench.learners.registry import register

_PLAIN = (str, int, float, bool, type(None))


@lru_cache(maxsize=1)
def public_classifiers() -> dict[str, type]:
    """scikit-learn's registered classifiers by public path and by class name."""
    from sklearn.utils import all_estimators

    out: dict[str, type] = {}
    for name, cls in all_estimators(type_filter="classifier"):
        module = ".".join(p for p in cls.__module__.split(".") if not p.startswith("_"))
        try:
            if getattr(importlib.import_module(module), name, None) is cls:
                out[f"{module}.{name}"] = cls
        except ImportError:
            pass
        out.setdefault(name, cls)
    return out


def _is_public_classifier(value: Any) -> bool:
    return isinstance(value, str) and value in public_classifiers()


def _plain_mapping(value: Any) -> bool:
    def plain(v: Any) -> bool:
        if isinstance(v, float):
            return math.isfinite(v)
        if isinstance(v, (list, tuple)):
            return all(plain(x) for x in v)
        return isinstance(v, _PLAIN)
    return value is None or (isinstance(value, dict) and all(
        isinstance(k, str) and plain(v) for k, v in value.items()))


class SklearnClassifier(Learner):
    """A scikit-learn classifier on the encoded data (see the module docstring)."""

    preprocessing = "none"
    order_free = False  # whatever the wrapped estimator does (solvers, bagging) is not ours
    parameters = (
        Param("estimator", "sklearn.linear_model.LogisticRegression",
              "a classifier of sklearn.utils.all_estimators(type_filter='classifier'), by "
              "public path (e.g. 'sklearn.linear_model.LogisticRegression') or class name",
              _is_public_classifier),
        Param("params", None, "null or a mapping of parameter names to plain values",
              _plain_mapping, lambda v: dict(v or {})),
        choice("encode", "onehot", ("onehot", "codes")),
        integer("seed", None, 0, optional=True),
    )

    def _reset(self) -> None:
        super()._reset()
        self.model_ = None
        self.classes_: np.ndarray | None = None
        self.means_: np.ndarray | None = None

    def _design(self, data: Dataset) -> np.ndarray:
        """The numeric matrix the estimator sees (see `encode`)."""
        X = data.X
        if self.encode == "codes":
            return X
        cols = []
        for i, a in enumerate(data.attributes):
            col = X[:, i]
            if a.is_nominal:
                cols.append((col[:, None] == np.arange(a.cardinality)[None, :]).astype(float))
            else:
                cols.append(np.where(np.isnan(col), self.means_[i], col)[:, None])
        return np.hstack(cols) if cols else np.zeros((data.n_instances, 0))

    def preflight(self) -> None:
        """The estimator's parameters as scikit-learn's own validation judges them."""
        cls = public_classifiers()[self.estimator]
        unknown = sorted(set(self.params) - set(cls().get_params()))
        if unknown:
            raise LearnerError(f"learner 'sklearn': {self.estimator} has no parameter(s) "
                               f"{', '.join(unknown)}")
        est = cls(**dict(self.params))
        check = getattr(est, "_validate_params", None)  # (scikit-learn >= 1.2)
        if check is not None:
            try:
                check()
            except (TypeError, ValueError) as exc:
                raise LearnerError(f"learner 'sklearn' ({self.estimator}): "
                                   f"{str(exc).splitlines()[0]}") from None

    def _fit(self, rows: Dataset) -> None:
        cls = public_classifiers()[self.estimator]
        kw = dict(self.params)
        accepted = cls().get_params()
        if self.seed is not None and "random_state" in accepted and "random_state" not in kw:
            kw["random_state"] = self.seed
        unknown = sorted(set(kw) - set(accepted))
        if unknown:
            raise LearnerError(f"learner 'sklearn': {self.estimator} has no parameter(s) "
                               f"{', '.join(unknown)}")
        with np.errstate(all="ignore"):
            means = np.nanmean(np.where(np.isfinite(rows.X), rows.X, np.nan), axis=0) \
                if rows.n_instances else np.zeros(rows.n_attributes)
        self.means_ = np.nan_to_num(means, nan=0.0)
        self.classes_ = np.unique(rows.y)
        if self.classes_.size < 2:
            return  # one class seen: it gets probability 1
        try:
            self.model_ = cls(**kw).fit(self._design(rows), rows.y)
        except (TypeError, ValueError) as exc:
            raise LearnerError(f"learner 'sklearn' ({self.estimator}): {exc}") from None

    def predict_proba(self, data: Dataset) -> np.ndarray:
        """(n, K) over the declared classes; classes absent from training get 0."""
        self._check_fitted(data)
        out = np.zeros((data.n_instances, data.n_classes))
        if self.model_ is None:
            out[:, self.classes_] = 1.0
            return out
        if data.n_instances:
            out[:, self.model_.classes_.astype(np.int64)] = \
                self.model_.predict_proba(self._design(data))
        return out


register("sklearn", SklearnClassifier,
         description="a scikit-learn classifier (estimator: its public path) on one-hot "
                     "encoded data")
