"""Nested tuning: a learner whose parameters are chosen inside each training set.

A learner spec with lists of values and a ``tune`` key, e.g. ``{learner: KDB, k: [1, 2,
3], tune: {folds: 3, metric: rmse}}``, is one learner (`Tuned`). Fitted on a training set
(an outer training fold) it

1. deals that set's rows into ``folds`` stratified inner folds (`splits.make_splits`, one
   round, seeded with ``tune.seed`` or else the outer fold's seed);
2. for every candidate (the product of the lists, in the order given) fits the learner —
   its preprocessing fitted on the inner training rows only — on each inner training part
   and predicts the held-out part;
3. scores each candidate by ``metric`` on its inner predictions pooled over the inner
   folds (a registered metric computed from predictions, in its direction), keeps the
   best — ties to the earlier candidate —, and refits it, preprocessing included, on the
   whole training set.

So no row outside the training set is ever seen while choosing (JMLR 2016's "best k"
oracle picks k after seeing the test folds; this is the honest version). A training set
with fewer rows than two inner folds need keeps the first candidate. `fit_report` says
what was chosen (``tuned``) and every candidate's inner score (``inner``); the runner
stores the choice per fold (``fold_metrics.csv``'s ``tuned`` column).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.evaluation import metrics
from workbench.evaluation.splits import make_splits

TUNE_KEY = "tune"
DEFAULT_FOLDS = 5
DEFAULT_METRIC = "rmse"
TUNE_OPTIONS = ("folds", "metric", "seed")


@dataclass(frozen=True)
class TuneSpec:
    """A ``tune:`` mapping: inner folds, the metric that chooses, an optional seed."""

    folds: int = DEFAULT_FOLDS
    metric: str = DEFAULT_METRIC
    seed: int | None = None


def tune_spec(value: Any) -> TuneSpec:
    """The ``tune`` value checked: a mapping of `TUNE_OPTIONS` (empty: the defaults);
    one `LearnerError` naming the option otherwise."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise LearnerError(f"tune: expected a mapping {{folds, metric, seed}}, got {value!r}")
    unknown = sorted(set(map(str, value)) - set(TUNE_OPTIONS))
    if unknown:
        raise LearnerError(f"tune: unknown option(s) {', '.join(unknown)} (options: "
                           f"{', '.join(TUNE_OPTIONS)})")
    folds = value.get("folds", DEFAULT_FOLDS)
    if not isinstance(folds, int) or isinstance(folds, bool) or folds < 2:
        raise LearnerError(f"tune: folds must be an integer ≥ 2, got {folds!r}")
    metric = value.get("metric", DEFAULT_METRIC)
    m = metrics.METRICS.get(metric) if isinstance(metric, str) else None
    if m is None or m.compute is None:
        usable = [k for k, v in metrics.METRICS.items() if v.compute is not None]
        raise LearnerError(f"tune: metric must be one computed from predictions "
                           f"({', '.join(usable)}), got {metric!r}")
    seed = value.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise LearnerError(f"tune: seed must be an integer, got {seed!r}")
    return TuneSpec(int(folds), str(metric), None if seed is None else int(seed))


def split_tuned(params: Mapping[str, Any], takes_list: Callable[[str, list], bool]
                ) -> tuple[dict[str, Any], dict[str, list], TuneSpec] | None:
    """(fixed parameters, grid, tune spec) of a learner's parameters with a ``tune`` key
    (None without one): every list value of a parameter that does not itself take a list
    (`takes_list`) is a grid axis."""
    if TUNE_KEY not in params:
        return None
    spec = tune_spec(params[TUNE_KEY])
    fixed, grid = {}, {}
    for key, value in params.items():
        if key == TUNE_KEY:
            continue
        if isinstance(value, list) and not takes_list(key, value):
            if not value:
                raise LearnerError(f"{key}: an empty list of values to tune")
            grid[key] = list(value)
        else:
            fixed[key] = value
    if not grid:
        raise LearnerError("tune: no parameter is given a list of values to choose from")
    return fixed, grid, spec


def candidates(grid: Mapping[str, list]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, the first parameter varying slowest."""
    return [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]


def label(candidate: Mapping[str, Any]) -> str:
    """A candidate as compact JSON (the ``tuned`` column's text)."""
    return json.dumps(dict(candidate), sort_keys=True, separators=(", ", ": "))


class Tuned:
    """A learner whose grid parameters are chosen per training set by an inner CV (module
    docstring). `make(params, seed)` builds the underlying learner with `fixed` and one
    candidate's parameters."""

    preprocessing = "none"  # each candidate's own, fitted inside (inner folds included)

    def __init__(self, make: Callable[[dict[str, Any], int | None], Any],
                 fixed: Mapping[str, Any], grid: Mapping[str, list], spec: TuneSpec,
                 seed: int | None = None) -> None:
        self.make, self.fixed, self.grid, self.spec = make, dict(fixed), dict(grid), spec
        self.seed = seed
        self.candidates = candidates(self.grid)
        self.chosen_: dict[str, Any] | None = None
        self.scores_: dict[str, float] = {}

    def _fit_one(self, candidate: Mapping[str, Any], train: Dataset) -> tuple[Any, Any]:
        """The learner with `candidate`, its preprocessing fitted on `train`, fitted."""
        from workbench.discretize import fit_discretizer  # (as run_fold: only when used)

        model = self.make({**self.fixed, **candidate}, self.seed)
        method = str(getattr(model, "preprocessing", "none") or "none")
        disc = None if method == "none" else fit_discretizer(method, train)
        model.fit(train if disc is None else disc.transform(train))
        return model, disc

    def inner_folds(self, data: Dataset) -> np.ndarray | None:
        """The training set's inner fold of every row (stratified, seeded; None when it
        has fewer rows than two folds need)."""
        n = data.n_instances
        folds = min(self.spec.folds, n)
        if folds < 2:
            return None
        seed = self.spec.seed if self.spec.seed is not None else (self.seed or 0)
        return make_splits(n, 1, folds, seed, stratify=True, labels=data.y)[0]

    def fit(self, data: Dataset) -> "Tuned":
        """Choose the candidate by the inner CV on `data` only, then refit it on all of it."""
        if not isinstance(data, Dataset):
            raise LearnerError(f"Tuned: fit expects a Dataset, got {type(data).__name__}")
        data = data.training_rows()
        fold_of = self.inner_folds(data)
        self.scores_ = {}
        best = 0
        if fold_of is not None and len(self.candidates) > 1:
            metric = metrics.METRICS[self.spec.metric]
            for i, cand in enumerate(self.candidates):
                proba = np.empty((data.n_instances, data.n_classes))
                for f in range(int(fold_of.max()) + 1):
                    test = np.flatnonzero(fold_of == f)
                    model, disc = self._fit_one(cand, data.take(np.flatnonzero(fold_of != f)))
                    part = data.take(test)
                    proba[test] = model.predict_proba(part if disc is None
                                                      else disc.transform(part))
                score = float(metric.compute(proba, data.y))
                self.scores_[label(cand)] = score
                old = self.scores_[label(self.candidates[best])]
                if i and (score < old if metric.lower_is_better else score > old):
                    best = i
        self.chosen_ = self.candidates[best]
        self.model_, self.disc_ = self._fit_one(self.chosen_, data)
        return self

    def predict_proba(self, data: Dataset) -> np.ndarray:
        """The chosen learner's distributions (its preprocessing applied first)."""
        if self.chosen_ is None:
            raise LearnerError("Tuned: predict before fit")
        return self.model_.predict_proba(data if self.disc_ is None
                                         else self.disc_.transform(data))

    def fit_report(self) -> dict | None:
        """The chosen parameters (``tuned``), every candidate's inner score (``inner``),
        and the chosen learner's own report."""
        if self.chosen_ is None:
            return None
        own = self.model_.fit_report() if hasattr(self.model_, "fit_report") else None
        return {**(own or {}), "tuned": dict(self.chosen_), "inner": dict(self.scores_)}

    def model_bytes(self) -> int | None:
        """The chosen learner's model size."""
        f = getattr(getattr(self, "model_", None), "model_bytes", None)
        return f() if f is not None else None

    def iterations(self) -> int | None:
        """The chosen learner's iterations, if it counts them."""
        f = getattr(getattr(self, "model_", None), "iterations", None)
        return f() if f is not None else None

    def measures(self) -> dict[str, float] | None:
        """The chosen learner's named measures."""
        f = getattr(getattr(self, "model_", None), "measures", None)
        return f() if f is not None else None

    def preflight(self) -> None:
        """Every candidate can be built here (its package, engine and parameters)."""
        for cand in self.candidates:
            model = self.make({**self.fixed, **cand}, self.seed)
            if hasattr(model, "preflight"):
                model.preflight()
