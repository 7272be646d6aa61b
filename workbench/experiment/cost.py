"""What a fold will cost before it runs, and the run's ETA as folds finish.

The prior is a per-fold wall-time model in seconds, fitted on the per-pair times of the
committed PAKDD 2013 reproduction (68 data sets × 10 learners, 2-fold CV), in the terms
that drive each learner's work::

    AnDE of order n   a·(n_train·C(d, n+1) + n_test·C(d, n)·d·K)   (+ SR halves A2DE's a)
    random forest     a·trees·n_train·log2(n_train)·(log2(d) + 1)
    others (KDB, …)   AnDE's model at order min(k, 2)
    every learner     + b·(n_train + n_test)·d·log2(n)  (discretisation)  + c  (per fold)

The runner schedules by it (data sets by total cost, within one the costliest learners
first) and refines it as the run goes: each learner's estimate is rescaled by its measured
fold times relative to the others', and the ETA is the remaining estimated work at the
rate (estimated work per elapsed second) the run has achieved so far.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from workbench.evaluation.tuning import TUNE_KEY, tune_spec

# (a, b, c) per kind; fitted by least squares on relative error (see module docstring)
_COEF = {
    "nb": (2.6e-8, 0.0, 1.2e-3),
    "ande": (3.6e-9, 1.2e-8, 1.5e-3),
    "forest": (3.0e-8, 0.0, 2.0e-2),
}
_SR_FACTOR = 0.5  # subsumption resolution skips deleted parents: A2DE-S* ~ half of A2DE
MIN_OBSERVED = 2  # folds of a learner before its own measured rate replaces the prior


@dataclass(frozen=True)
class Dims:
    """What the cost of a data set depends on: rows, attributes, classes."""

    n: int
    d: int
    k: int


def fold_cost(params: Mapping[str, Any], dims: Dims, n_train: int, n_test: int) -> float:
    """Prior wall seconds of one fold of a learner with effective `params` (the learner's
    constructor parameters: ``n``, ``k``, ``n_trees``, ``subsumption`` are read). A
    nested-tuned learner (``tune``) costs its largest candidate's fold once per inner fold
    and candidate, plus the refit."""
    if TUNE_KEY in params:
        folds = tune_spec(params[TUNE_KEY]).folds
        grid = {k: v for k, v in params.items() if isinstance(v, list) and k != TUNE_KEY}
        biggest = {k: max(v, key=lambda x: x if isinstance(x, (int, float)) else 0)
                   for k, v in grid.items() if v}
        one = fold_cost({k: v for k, v in params.items() if k != TUNE_KEY} | biggest, dims,
                        n_train, n_test)
        return one * (math.prod(len(v) for v in grid.values()) * folds + 1)
    d, K = max(dims.d, 1), max(dims.k, 1)
    n_all = max(n_train + n_test, 2)
    if "n_trees" in params or "n_estimators" in params:
        a, b, c = _COEF["forest"]
        trees = params.get("n_trees", params.get("n_estimators")) or 10
        work = trees * n_train * math.log2(max(n_train, 2)) * (math.log2(d) + 1)
    else:
        order = params.get("n")
        if not isinstance(order, int):
            k = params.get("k")
            order = min(k, 2) if isinstance(k, int) else 1
        a, b, c = _COEF["nb" if order == 0 else "ande"]
        if order >= 2 and params.get("subsumption") is not None:
            a *= _SR_FACTOR
        work = n_train * math.comb(d, min(order + 1, d)) + \
            n_test * math.comb(d, min(order, d)) * d * K
    return a * work + b * n_all * d * math.log2(n_all) + c


class CostModel:
    """Per-task estimates refined by what the run measures; gives the ETA."""

    def __init__(self) -> None:
        self._est: dict[Any, tuple[str, float]] = {}  # task → (learner, prior seconds)
        self._done_prior: dict[str, float] = {}  # learner → prior seconds of finished tasks
        self._meas: dict[str, float] = {}  # learner → measured fold seconds
        self._prior: dict[str, float] = {}  # learner → prior seconds of its finished folds
        self._count: dict[str, int] = {}
        self._left: dict[str, float] = {}  # learner → prior seconds of unfinished tasks

    def add(self, task: Any, learner: str, seconds: float) -> None:
        """Register a task not yet run with its prior estimate."""
        self._est[task] = (learner, seconds)
        self._left[learner] = self._left.get(learner, 0.0) + seconds

    def _factor(self, learner: str) -> float:
        """The learner's measured/prior ratio relative to all learners' (1 until known)."""
        if self._count.get(learner, 0) < MIN_OBSERVED:
            return 1.0
        total_meas, total_prior = sum(self._meas.values()), sum(self._prior.values())
        if total_meas <= 0 or total_prior <= 0 or self._prior[learner] <= 0:
            return 1.0
        own = self._meas[learner] / self._prior[learner]
        return max(own / (total_meas / total_prior), 1e-3)

    def observe(self, task: Any, measured_seconds: float | None) -> None:
        """A task finished; `measured_seconds` is its fold's train + test wall time."""
        learner, prior = self._est.pop(task)
        self._left[learner] -= prior
        if measured_seconds is not None and measured_seconds >= 0:
            self._meas[learner] = self._meas.get(learner, 0.0) + measured_seconds
            self._prior[learner] = self._prior.get(learner, 0.0) + prior
            self._count[learner] = self._count.get(learner, 0) + 1
        self._done_prior[learner] = self._done_prior.get(learner, 0.0) + prior

    def remaining(self) -> float:
        """Refined estimate of the unfinished work (prior seconds, rescaled per learner)."""
        return sum(max(left, 0.0) * self._factor(l) for l, left in self._left.items())

    def eta(self, elapsed: float, compiling: float = 0.0) -> float | None:
        """Seconds left: the remaining work at the rate achieved so far (None before any
        task finished). `compiling`, the part of `elapsed` spent compiling kernels, is left
        out of the rate: first use is paid once, not per task."""
        done = sum(p * self._factor(l) for l, p in self._done_prior.items())
        working = elapsed - max(compiling, 0.0)
        if done <= 0 or elapsed <= 0:
            return None
        return self.remaining() * max(working, 1e-3) / done
