"""Random forests on the *undiscretised* data.

`RandomForest` is Weka's ``RandomForest`` reproduced bit for bit (SPEC §2 "RF10"): bagging
with `java.util.Random`, `randomtree` trees, class distributions averaged over the trees.
``weka_version="3.5.7"`` (the paper's Weka) switches to that version's K, bagging sampler
and split rules (RF-V). `RF10` = 10 trees, seed 1; `RandomTree` is one tree (a test aid).

`SKRandomForest` (`SKRF10`) is scikit-learn's CART forest for users who want it: it is
*not* what the papers ran.
"""

from __future__ import annotations

import math

from workbench.jit import numba
import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.base import Learner, Param, choice, integer, number
from workbench.learners.jrandom import JavaRandom, next_double
from workbench.learners.randomtree import Tree, attribute_kinds, build_tree, default_k
from workbench.learners.registry import register

WEKA_VERSIONS = ("3.6.14", "3.5.7")


def weka_max_features(n_attributes: int) -> int:
    """int(log2(a) + 1), at least 1 and at most a (Weka 3.6.14's K; `default_k`)."""
    return max(1, default_k(n_attributes, 0)) if n_attributes > 0 else 1


@numba.njit(cache=True, nogil=True)
def weka_bag(state, n, out):
    """Weka ≥ 3.6.9 bagging (RF-2 F2.1): n draws, U = n·u, row ⌊U⌋, in draw order."""
    q = n * (1.0 / n)
    for j in range(n):
        U = n * next_double(state)
        i = int(math.floor(U))
        if U >= i + q:
            i = 0
        out[j] = i
    return out


@numba.njit(cache=True, nogil=True)
def weka_bag_357(state, n, out):
    """Weka ≤ 3.6.8 bagging (RF-V 2): uniform spacings, the bag in instance order."""
    cum = np.empty(n)
    s = 0.0
    for k in range(n):
        s += next_double(state)
        cum[k] = s
    d = cum[n - 1] / n
    for k in range(n):
        cum[k] = cum[k] / d
    cum[n - 1] = float(n)
    k = 0
    j = 0
    for inst in range(n):
        c = inst + 1.0
        while k < n and cum[k] <= c:
            out[j] = inst
            j += 1
            k += 1
    return out[:j]


class RandomForest(Learner):
    """Weka's RandomForest, bit for bit: bagged random trees, distributions averaged."""

    preprocessing = "none"
    order_free = False  # bootstrap samples are drawn by row position, as Weka's

    parameters = (
        integer("n_trees", 10, 1),
        integer("k_features", 0, 0),
        number("min_num", 1.0, 0.0),
        integer("seed", 1),
        integer("max_depth", 0, 0),
        choice("weka_version", "3.6.14", WEKA_VERSIONS),
    )

    def _reset(self) -> None:
        super()._reset()
        self.trees_: list[Tree] = []

    @property
    def _old(self) -> bool:
        return self.weka_version == "3.5.7"

    def _fit(self, d: Dataset) -> None:
        """Grow the trees on the rows with a known class (file order)."""
        n = d.n_instances
        K = default_k(d.n_attributes, self.k_features, self._old)
        R = JavaRandom(self.seed)
        self.trees_ = []
        for _ in range(self.n_trees):
            bag = np.empty(n, dtype=np.int64)
            bag = (weka_bag_357 if self._old else weka_bag)(R.state, n, bag)
            tree_seed = R.next_int()
            self.trees_.append(build_tree(d, bag, tree_seed, K, self.min_num,
                                          self.max_depth, self._old))

    def predict_proba(self, data: Dataset) -> np.ndarray:
        """Per-class sums of the trees' distributions (tree order), divided by their total."""
        self._check_fitted(data)
        if not self.trees_:
            raise LearnerError("RandomForest: predict called before fit")
        return _average(tree_predictions(self.trees_, data))

    def model_bytes(self) -> int | None:
        """Bytes of the fitted trees' node arrays."""
        return sum(t.nbytes() for t in self.trees_) if self.trees_ else None


def tree_predictions(trees: list[Tree], data: Dataset) -> list[np.ndarray]:
    is_nom, _ = attribute_kinds(data)
    X = np.ascontiguousarray(data.X, dtype=np.float64)
    return [t.predict(X, is_nom, data.n_classes) for t in trees]


@numba.njit(cache=True, nogil=True)
def _normalise_rows(total):
    out = np.empty_like(total)
    for r in range(total.shape[0]):
        s = 0.0
        for j in range(total.shape[1]):
            s += total[r, j]
        for j in range(total.shape[1]):
            out[r, j] = total[r, j] if abs(s) < 1e-6 else total[r, j] / s
    return out


def _average(preds: list[np.ndarray]) -> np.ndarray:
    total = np.zeros_like(preds[0])
    for p in preds:
        total += p  # element by element, tree 0 first
    return _normalise_rows(total)


class RandomTree(RandomForest):
    """One Weka RandomTree on the training set itself (no bagging), seed 1 (RF-7)."""

    parameters = tuple(p for p in RandomForest.parameters if p.name != "n_trees")
    n_trees = 1

    def _fit(self, d: Dataset) -> None:
        K = default_k(d.n_attributes, self.k_features, self._old)
        rows = np.arange(d.n_instances, dtype=np.int64)
        self.trees_ = [build_tree(d, rows, self.seed, K, self.min_num, self.max_depth,
                                  self._old)]

    def predict_proba(self, data: Dataset) -> np.ndarray:
        """The tree's own distribution (not renormalised, as Weka's RandomTree)."""
        self._check_fitted(data)
        return tree_predictions(self.trees_, data)[0]


class SKRandomForest(Learner):
    """scikit-learn's CART random forest on raw data (not Weka's; seeded)."""

    preprocessing = "none"
    order_free = False  # bootstrap samples are drawn by row position

    parameters = (
        integer("n_estimators", 10, 1),
        Param("max_features", "log2+1", "'log2+1' or an integer ≥ 1",
              lambda v: v == "log2+1" or (isinstance(v, int) and not isinstance(v, bool)
                                          and v >= 1)),
        integer("seed", 1),
    )

    def _reset(self) -> None:
        super()._reset()
        self.model_ = None
        self.classes_: np.ndarray | None = None
        self.prior_: np.ndarray | None = None

    def _fit(self, d: Dataset) -> None:
        """Fit on rows with a known class (nominal codes and numeric values, NaN missing)."""
        from sklearn.ensemble import RandomForestClassifier

        K = d.n_classes
        counts = np.bincount(d.y, minlength=K)[:K].astype(np.float64)
        self.prior_ = counts / counts.sum()
        if d.n_attributes == 0 or np.count_nonzero(counts) < 2:
            return  # nothing to split on: predict the class frequencies
        a = d.n_attributes
        mf = weka_max_features(a) if self.max_features == "log2+1" else min(self.max_features, a)
        self.model_ = RandomForestClassifier(
            n_estimators=self.n_estimators, max_features=mf, max_depth=None,
            min_samples_leaf=1, bootstrap=True, random_state=self.seed, n_jobs=1)
        self.model_.fit(d.X, d.y)
        self.classes_ = self.model_.classes_.astype(np.int64)

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
        out[:, self.classes_] = self.model_.predict_proba(data.X)
        s = out.sum(axis=1, keepdims=True)
        return out / np.where(s > 0, s, 1.0)


register("RF10", RandomForest, n_trees=10, seed=1,
         description="Weka's RandomForest -I 10 -S 1 (3.6.14 rules; raw data)")
register("RF100", RandomForest, n_trees=100, seed=1,
         description="Weka's RandomForest -I 100 -S 1 (JMLR 2016's forest; raw data)")
register("RandomTree", RandomTree, description="Weka's RandomTree -K 0 -M 1 -S 1 (test aid)")
register("SKRF10", SKRandomForest, n_estimators=10,
         description="scikit-learn random forest, 10 trees (raw data; not Weka's)")
