"""RF10 (SPEC §2): a random forest of 10 unpruned trees on the *undiscretised* data.

scikit-learn's `RandomForestClassifier` (bagging, unlimited depth, `max_features` =
int(log2(a) + 1) with a = number of non-class attributes, as Weka's RandomForest -I 10).
Nominal attributes enter as their ordinal codes; missing values stay NaN (scikit-learn ≥ 1.4
trees route them natively). Seeded, so runs are repeatable.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.base import Learner
from workbench.learners.registry import register


def weka_max_features(n_attributes: int) -> int:
    """int(log2(a) + 1), at least 1 and at most a."""
    if n_attributes <= 0:
        return 1
    return max(1, min(n_attributes, int(math.log2(n_attributes) + 1)))


class RandomForest(Learner):
    """Random forest on raw data: seeded bagging of unpruned trees (scikit-learn)."""

    preprocessing = "none"

    def __init__(self, n_estimators: int = 10, max_features: int | str = "log2+1",
                 seed: int = 1) -> None:
        if (isinstance(n_estimators, bool) or not isinstance(n_estimators, int)
                or n_estimators < 1):
            raise LearnerError(
                "RandomForest: parameter 'n_estimators' must be an integer ≥ 1, "
                f"got {n_estimators!r}")
        if not (max_features == "log2+1" or (isinstance(max_features, int)
                                             and not isinstance(max_features, bool)
                                             and max_features >= 1)):
            raise LearnerError(
                "RandomForest: parameter 'max_features' must be 'log2+1' or an integer ≥ 1, "
                f"got {max_features!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise LearnerError(f"RandomForest: parameter 'seed' must be an integer, got {seed!r}")
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.seed = seed
        self.model_ = None
        self.classes_: np.ndarray | None = None
        self.prior_: np.ndarray | None = None

    def fit(self, data: Dataset) -> "RandomForest":
        """Fit on rows with a known class (nominal codes and numeric values, NaN missing)."""
        from sklearn.ensemble import RandomForestClassifier

        self._remember_header(data)
        d = data.without_missing_class()
        K = data.n_classes
        counts = np.bincount(d.y, minlength=K)[:K].astype(np.float64)
        self.prior_ = counts / counts.sum() if counts.sum() > 0 else np.full(K, 1.0 / K)
        self.model_ = None
        if d.n_instances == 0 or d.n_attributes == 0 or np.count_nonzero(counts) < 2:
            return self  # nothing to split on: predict the class frequencies
        a = d.n_attributes
        mf = weka_max_features(a) if self.max_features == "log2+1" else min(self.max_features, a)
        self.model_ = RandomForestClassifier(
            n_estimators=self.n_estimators,
            max_features=mf,
            max_depth=None,
            min_samples_leaf=1,
            bootstrap=True,
            random_state=self.seed,
            n_jobs=1,
        )
        self.model_.fit(d.X, d.y)
        self.classes_ = self.model_.classes_.astype(np.int64)
        return self

    def predict_proba(self, data: Dataset) -> np.ndarray:
        """(n, K) distributions over all declared classes (unseen classes get 0)."""
        self._check_fitted(data)
        K = data.n_classes
        n = data.n_instances
        if self.model_ is None:
            assert self.prior_ is not None
            return np.tile(self.prior_, (n, 1))
        out = np.zeros((n, K), dtype=np.float64)
        if n == 0:
            return out
        proba = self.model_.predict_proba(data.X)
        out[:, self.classes_] = proba
        s = out.sum(axis=1, keepdims=True)
        return out / np.where(s > 0, s, 1.0)


register("RF10", RandomForest, n_estimators=10, description="random forest, 10 trees (raw data)")
