"""What a fold will cost before it runs, and the run's ETA as folds finish.

The prior is a per-fold time model in seconds, fitted (`benchmarks/fit_cost.py`) on the
per-pair CPU times of the README's main command (the 14 embedded data sets × 11 learners,
20 × 2-fold CV; least squares on the log of predicted / measured, since the schedule and
the ETA use ratios), in the terms that drive each learner's work::

    AnDE of order n   a·(n_train·C(d, n+1) + n_test·C(d, n)·d·K)   (+ SR halves A2DE's a)
    random forest     a·trees·n_train·log2(n_train)·(log2(d) + 1)
    others (KDB, …)   AnDE's model at order min(k, 2)
    every learner     + b·(n_train + n_test)·d·log2(n)  (discretisation)  + c  (per fold)
                      + the runner's own time per fold (`FOLD_OVERHEAD`)

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

COEFFICIENTS = {
    "nb": (2.0e-8, 0.0, 1.7e-3),
    "ande": (8.4e-10, 3.7e-9, 3.0e-3),
    "forest": (1.6e-8, 3.6e-8, 1.0e-3),
}
"""(a, b, c) per kind (see the module docstring; `benchmarks/fit_cost.py` fits them to a
finished run)."""
FOLD_OVERHEAD = 0.03
"""The runner's own seconds per fold beyond the learner's CPU (the split, the worker's
messages, storing the predictions): in the main command, 2 jobs × 383 s wall less its
folds' 580 s of CPU, over 6,160 folds. Without it the many small folds were priced at a
tenth of their time and the ETA came out at half the run."""
_SR_FACTOR = 0.5  # subsumption resolution skips deleted parents: A2DE-S* ~ half of A2DE
MIN_OBSERVED = 2  # folds of a learner before its own measured rate replaces the prior


@dataclass(frozen=True)
class Dims:
    """What the cost of a data set depends on: rows, attributes, classes."""

    n: int
    d: int
    k: int


def fold_terms(params: Mapping[str, Any], dims: Dims, n_train: int,
               n_test: int) -> tuple[str, float, float, float]:
    """The model's terms of one fold of a learner with effective `params` (the learner's
    constructor parameters: ``n``, ``k``, ``n_trees``, ``subsumption`` are read): (kind,
    work, discretisation term, times) — the fold costs times · (a·work + b·disc + c) with
    the kind's coefficients. A nested-tuned learner (``tune``) runs its largest
    candidate's fold once per inner fold and candidate, plus the refit."""
    if TUNE_KEY in params:
        folds = tune_spec(params[TUNE_KEY]).folds
        grid = {k: v for k, v in params.items() if isinstance(v, list) and k != TUNE_KEY}
        biggest = {k: max(v, key=lambda x: x if isinstance(x, (int, float)) else 0)
                   for k, v in grid.items() if v}
        kind, work, disc, _ = fold_terms(
            {k: v for k, v in params.items() if k != TUNE_KEY} | biggest, dims, n_train,
            n_test)
        return kind, work, disc, float(math.prod(len(v) for v in grid.values()) * folds + 1)
    d, K = max(dims.d, 1), max(dims.k, 1)
    n_all = max(n_train + n_test, 2)
    disc = n_all * d * math.log2(n_all)
    if "n_trees" in params or "n_estimators" in params:
        trees = params.get("n_trees", params.get("n_estimators")) or 10
        return ("forest", trees * n_train * math.log2(max(n_train, 2)) * (math.log2(d) + 1),
                disc, 1.0)
    order = params.get("n")
    if not isinstance(order, int):
        k = params.get("k")
        order = min(k, 2) if isinstance(k, int) else 1
    work = n_train * math.comb(d, min(order + 1, d)) + \
        n_test * math.comb(d, min(order, d)) * d * K
    if order >= 2 and params.get("subsumption") is not None:
        work *= _SR_FACTOR
    return ("nb" if order == 0 else "ande"), work, disc, 1.0


def fold_cost(params: Mapping[str, Any], dims: Dims, n_train: int, n_test: int) -> float:
    """Prior wall seconds of one fold (`fold_terms` with the kind's `COEFFICIENTS`, plus
    the runner's `FOLD_OVERHEAD`)."""
    kind, work, disc, times = fold_terms(params, dims, n_train, n_test)
    a, b, c = COEFFICIENTS[kind]
    return times * (a * work + b * disc + c) + FOLD_OVERHEAD


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
