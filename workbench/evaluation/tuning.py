"""Nested tuning: a learner whose parameters are chosen inside each training set.

A learner spec with lists of values and a ``tune`` key, e.g. ``{learner: KDB, k: [1, 2,
3], tune: {folds: 3, metric: rmse}}``, is one learner. Fitted on a training set (an outer
training fold, its preprocessing already fitted on that fold, as Weka's FilteredClassifier
around CVParameterSelection) it

1. deals the set's rows into ``folds`` inner folds, stratified and streamable
   (`inner_folds`: each class's rows, in the order read, in blocks of ``folds``, every
   block a seeded permutation of the folds — seed ``tune.seed``, else the outer fold's);
2. for every candidate (the product of the lists, in the order given) trains the learner
   on each inner fold's complement and predicts the held-out rows;
3. scores each candidate by ``metric`` over its inner predictions pooled (0-1 loss, RMSE,
   true-class RMSE and log loss from their sums; kappa, F1 and MCC from the confusion
   matrix: what a stream of predictions can give), in the metric's direction, keeps the
   best — ties to the earlier candidate — and uses it trained on the whole set.

No row outside the training set is ever seen while choosing (JMLR 2016's "best k" oracle
picks k after seeing the test folds; this is the honest version). A training set with fewer
rows than inner folds keeps the first candidate. In memory (`Tuned`) any learner is tuned;
out of core (`TunedPasses`) a count-based one, in its own passes plus one that scores the
inner folds: the one-pass AnDE family by count subtraction (each inner fold counted once,
the complement = the whole − the fold), multi-pass learners (the KDB family) trained side
by side. Both choose alike and give the same model. `fit_report` says what was chosen
(``tuned``) and every candidate's inner score (``inner``); the runner stores the choice per
fold (``fold_metrics.csv``'s ``tuned`` column).
"""

from __future__ import annotations

import copy
import itertools
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import FieldError, LearnerError
from workbench.evaluation import metrics
from workbench.evaluation.splits import row_folds
from workbench.learners import registry
from workbench.learners.base import CountingLearner, MultiPassLearner, trains_in_passes

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
    a `FieldError` naming the option otherwise (``tune.folds``, …)."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        raise FieldError(TUNE_KEY, f"expected a mapping {{folds, metric, seed}}, got {value!r}")
    unknown = sorted(set(map(str, value)) - set(TUNE_OPTIONS))
    if unknown:
        raise FieldError(f"{TUNE_KEY}.{unknown[0]}", f"unknown option (options: "
                         f"{', '.join(TUNE_OPTIONS)})")
    folds = value.get("folds", DEFAULT_FOLDS)
    if not isinstance(folds, int) or isinstance(folds, bool) or folds < 2:
        raise FieldError(f"{TUNE_KEY}.folds", f"expected an integer ≥ 2, got {folds!r}")
    metric = value.get("metric", DEFAULT_METRIC)
    if metric not in tune_metrics():
        raise FieldError(f"{TUNE_KEY}.metric", f"expected one of {', '.join(tune_metrics())} "
                         f"(from sums or the confusion matrix), got {metric!r}")
    seed = value.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise FieldError(f"{TUNE_KEY}.seed", f"expected an integer, got {seed!r}")
    return TuneSpec(int(folds), str(metric), None if seed is None else int(seed))


def tune_metrics() -> tuple[str, ...]:
    """The metrics a tuned learner can choose by: those of `metrics.LossSums` and those
    computed from the confusion matrix (a stream of predictions gives both)."""
    pooled = tuple(metrics.pooled_metrics([metrics.LossSums(1, 0, 0.0, 0.0, 0.0)], 2))
    return pooled + tuple(k for k, m in metrics.METRICS.items()
                          if m.from_confusion is not None and k not in pooled)


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
            if key == registry.PREPROCESSING_KEY:
                raise FieldError(key, "not tunable (it is fitted once on the outer training "
                                 "fold; compare preprocessings as learners)")
            if not value:
                raise FieldError(key, "an empty list of values to tune")
            grid[key] = list(value)
        else:
            fixed[key] = value
    if not grid:
        raise FieldError(TUNE_KEY, "no parameter is given a list of values to choose from")
    return fixed, grid, spec


def candidates(grid: Mapping[str, list]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, the first parameter varying slowest."""
    return [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]


def label(candidate: Mapping[str, Any]) -> str:
    """A candidate as compact JSON (the ``tuned`` column's text)."""
    return json.dumps(dict(candidate), sort_keys=True, separators=(", ", ": "))


def inner_folds(y: np.ndarray, seen: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """The inner fold of each row of a chunk with classes `y`, given how many rows of each
    class came before it (`seen`, updated in place): class c's i-th row goes to
    `splits.row_folds`' fold of position i in the stream of seed and class c — blocks of
    `folds` consecutive rows of a class take every fold once (stratified: a class's rows
    per fold differ by at most one), the same however the rows are chunked."""
    out = np.empty(y.size, dtype=np.int64)
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        out[rows] = row_folds(int(seen[c]), rows.size, folds, seed, int(c))
        seen[c] += rows.size
    return out


class Scores:
    """Each candidate's inner predictions as sums (`metrics.LossSums`, confusion matrix),
    added chunk by chunk; `best` reads the tuning metric in its direction."""

    def __init__(self, n_candidates: int, n_classes: int, metric: str) -> None:
        self.sums: list[list[metrics.LossSums]] = [[] for _ in range(n_candidates)]
        self.confusion = np.zeros((n_candidates, n_classes, n_classes), dtype=np.int64)
        self.metric, self.K = metric, n_classes

    def add(self, c: int, proba: np.ndarray, y: np.ndarray) -> None:
        """Candidate c's predictions `proba` of rows of classes `y`."""
        if y.size:
            self.sums[c].append(metrics.loss_sums(proba, y))
            self.confusion[c] += metrics.confusion_matrix(proba, y)

    def values(self) -> list[float]:
        """Each candidate's value of the metric (NaN without predictions)."""
        m = metrics.METRICS[self.metric]
        out = []
        for c, sums in enumerate(self.sums):
            if not sums:
                out.append(float("nan"))
            elif m.from_confusion is not None:
                out.append(float(m.from_confusion(self.confusion[c])))
            else:
                out.append(float(metrics.pooled_metrics(sums, self.K)[self.metric]))
        return out

    def best(self) -> int:
        """The best candidate (ties and NaN → the earlier one; the first if none scored)."""
        lower = metrics.lower_is_better(self.metric)
        best, value = 0, float("nan")
        for c, v in enumerate(self.values()):
            if v == v and (value != value or (v < value if lower else v > value)):
                best, value = c, v
        return best


class _Tuning:
    """What both forms share: the candidates, the inner folds' seed, the report."""

    def _setup(self, make: Callable[[dict[str, Any], int | None], Any],
               fixed: Mapping[str, Any], grid: Mapping[str, list], spec: TuneSpec,
               seed: int | None) -> None:
        self.make, self.fixed, self.grid, self.spec = make, dict(fixed), dict(grid), spec
        self.seed = seed
        self.candidates = candidates(self.grid)
        self.chosen_: dict[str, Any] | None = None
        self.scores_: dict[str, float] = {}
        self.model_: Any = None
        self._probes = [self._new(c) for c in self.candidates]  # (unfitted: for checks)
        pre = {str(getattr(p, "preprocessing", "none") or "none") for p in self._probes}
        if len(pre) > 1:
            raise FieldError(TUNE_KEY, f"the candidates differ in preprocessing "
                             f"({', '.join(sorted(pre))}); one is fitted for them all")
        self.preprocessing = pre.pop()

    def _new(self, candidate: Mapping[str, Any]) -> Any:
        return self.make({**self.fixed, **candidate}, self.seed)

    @property
    def inner_seed(self) -> int:
        return self.spec.seed if self.spec.seed is not None else int(self.seed or 0)

    def _choose(self, scores: Scores | None) -> int:
        """Record the inner scores; the chosen candidate's index."""
        best = 0
        self.scores_ = {}
        if scores is not None:
            self.scores_ = {label(c): v for c, v in zip(self.candidates, scores.values())}
            best = scores.best()
        self.chosen_ = self.candidates[best]
        return best

    def predict_proba(self, data: Dataset) -> np.ndarray:
        """The chosen learner's distributions."""
        if self.model_ is None:
            raise LearnerError(f"{type(self).__name__}: predict before fit")
        return self.model_.predict_proba(data)

    def fit_report(self) -> dict | None:
        """The chosen parameters (``tuned``), every candidate's inner score (``inner``),
        and the chosen learner's own report."""
        if self.chosen_ is None or self.model_ is None:
            return None
        own = self.model_.fit_report() if hasattr(self.model_, "fit_report") else None
        return {**(own or {}), "tuned": dict(self.chosen_), "inner": dict(self.scores_)}

    def model_bytes(self) -> int | None:
        """The chosen learner's model size."""
        f = getattr(self.model_, "model_bytes", None)
        return f() if f is not None else None

    def iterations(self) -> int | None:
        """The chosen learner's iterations, if it counts them."""
        f = getattr(self.model_, "iterations", None)
        return f() if f is not None else None

    def measures(self) -> dict[str, float] | None:
        """The chosen learner's named measures."""
        f = getattr(self.model_, "measures", None)
        return f() if f is not None else None

    def preflight(self) -> None:
        """Every candidate can be built here (its package, engine and parameters)."""
        for model in self._probes:
            if hasattr(model, "preflight"):
                model.preflight()


class Tuned(_Tuning):
    """Nested tuning in memory (module docstring); `make(params, seed)` builds the
    underlying learner with `fixed` and one candidate's parameters."""

    def __init__(self, make: Callable[[dict[str, Any], int | None], Any],
                 fixed: Mapping[str, Any], grid: Mapping[str, list], spec: TuneSpec,
                 seed: int | None = None) -> None:
        self._setup(make, fixed, grid, spec, seed)

    def passes(self) -> "TunedPasses":
        """The same tuning trained in passes over chunks (out of core)."""
        return TunedPasses(self.make, self.fixed, self.grid, self.spec, self.seed)

    def stream(self) -> "TunedStream":
        """The tuning of a stream (the prequential protocol): `TunedStream`."""
        return TunedStream(self.make, self.fixed, self.grid, self.spec, self.seed)

    def fit(self, data: Dataset) -> "Tuned":
        """Choose the candidate by the inner CV on `data` only; keep it trained on all."""
        if not isinstance(data, Dataset):
            raise LearnerError(f"Tuned: fit expects a Dataset, got {type(data).__name__}")
        data = data.training_rows()
        scores = None
        if data.n_instances >= self.spec.folds and len(self.candidates) > 1:
            fold_of = inner_folds(data.y, np.zeros(data.n_classes, dtype=np.int64),
                                  self.spec.folds, self.inner_seed)
            scores = Scores(len(self.candidates), data.n_classes, self.spec.metric)
            for i, cand in enumerate(self.candidates):
                for f in range(self.spec.folds):
                    held = fold_of == f
                    part = data.take(np.flatnonzero(held))
                    model = self._new(cand).fit(data.take(np.flatnonzero(~held)))
                    scores.add(i, model.predict_proba(part), part.y)
        self.model_ = self._new(self.candidates[self._choose(scores)]).fit(data)
        return self


class TunedPasses(_Tuning, MultiPassLearner):
    """Nested tuning of a count-based learner in passes over chunks (module docstring):
    the candidates' own passes — every candidate's model of the whole set and of each inner
    fold's complement side by side, or, for a one-pass learner that adds and subtracts its
    counts (`start` / `merge`), each inner fold counted once — then one pass scoring each
    row with its inner fold's models."""

    def __init__(self, make: Callable[[dict[str, Any], int | None], Any],
                 fixed: Mapping[str, Any], grid: Mapping[str, list], spec: TuneSpec,
                 seed: int | None = None) -> None:
        self._setup(make, fixed, grid, spec, seed)
        self._header = None
        self._base = max(p.n_passes() if trains_in_passes(p) else 1 for p in self._probes)
        self._subtract = all(hasattr(p, "start") and hasattr(p, "merge") and
                             not trains_in_passes(p) for p in self._probes)

    def n_passes(self) -> int:
        return self._base + 1

    def pass_refusal(self) -> str | None:
        """Why these candidates cannot be tuned in passes (None: they can)."""
        for c, m in zip(self.candidates, self._probes):
            why = (m.pass_refusal() if trains_in_passes(m) else
                   m.chunk_refusal() if isinstance(m, CountingLearner) else
                   "it trains in memory only")
            if why:
                return f"candidate {label(c)} cannot train in passes: {why}"
        return None

    def _begin(self, header: Dataset) -> None:
        k = self.spec.folds
        self._whole = [self._new(c) for c in self.candidates]
        self._inner = [[self._new(c) for _ in range(k)] for c in self.candidates]
        for m in [*self._whole, *(m for ms in self._inner for m in ms)]:
            if self._subtract:
                m.start(header, 0)
            elif trains_in_passes(m):
                m.begin(header)
        self._rows = 0
        self._seen = np.zeros(header.n_classes, dtype=np.int64)
        self._scores = Scores(len(self.candidates), header.n_classes, self.spec.metric)

    def _learn(self, pass_no: int, rows: Dataset) -> None:
        fold = inner_folds(rows.y, self._seen, self.spec.folds, self.inner_seed)
        if pass_no == 0:
            self._rows += rows.n_instances
        parts = [rows.take(np.flatnonzero(fold == f)) for f in range(self.spec.folds)]
        if pass_no == self._base:  # scoring: each inner fold by its complement's models
            for i, models in enumerate(self._inner):
                for f, part in enumerate(parts):
                    if part.n_instances:
                        self._scores.add(i, models[f].predict_proba(part), part.y)
            return
        rest = [rows.take(np.flatnonzero(fold != f)) for f in range(self.spec.folds)]
        for i, whole in enumerate(self._whole):
            _feed(whole, pass_no, rows)
            for f, model in enumerate(self._inner[i]):
                _feed(model, pass_no, parts[f] if self._subtract else rest[f])

    def _end_pass(self, pass_no: int) -> bool | None:
        self._seen[:] = 0
        if pass_no < self._base:
            for m in [*self._whole, *(m for ms in self._inner for m in ms)]:
                if trains_in_passes(m) and m.training:
                    m.end_pass(pass_no)
            if pass_no == self._base - 1 and self._subtract:  # complement = whole − fold
                self._inner = [[copy.deepcopy(w).merge(m, sign=-1) for m in ms]
                               for w, ms in zip(self._whole, self._inner)]
            if pass_no == self._base - 1 and (self._rows < self.spec.folds or
                                              len(self.candidates) == 1):
                self._finish(None)
                return False
            return True
        self._finish(self._scores)
        return False

    def _finish(self, scores: Scores | None) -> None:
        self.model_ = self._whole[self._choose(scores)]
        self._whole = self._inner = self._scores = None

    def predict_proba(self, data: Dataset) -> np.ndarray:
        self._check_fitted(data)
        return super().predict_proba(data)


class TunedStream(_Tuning, CountingLearner):
    """Nested tuning on a stream, where no training set is held to cross-validate: every
    candidate learns every chunk, after first predicting it (its prequential score, the
    tuning metric over every chunk so far); the tuned learner predicts with the candidate
    whose score is best so far (ties → the earlier; the first before any score) — chosen
    from earlier rows only, as the inner CV chooses from the training fold only. The
    candidates must learn chunk by chunk (``partial_fit``)."""

    def __init__(self, make: Callable[[dict[str, Any], int | None], Any],
                 fixed: Mapping[str, Any], grid: Mapping[str, list], spec: TuneSpec,
                 seed: int | None = None) -> None:
        self._setup(make, fixed, grid, spec, seed)
        self._header = None
        self._models: list[Any] | None = None
        self._scores: Scores | None = None

    def chunk_refusal(self) -> str | None:
        """Why a candidate cannot learn chunk by chunk (None: every one can)."""
        for c, m in zip(self.candidates, self._probes):
            why = m.chunk_refusal() if isinstance(m, CountingLearner) and not \
                trains_in_passes(m) else "it does not learn chunk by chunk"
            if why:
                return f"candidate {label(c)} cannot be tuned on a stream: {why}"
        return None

    def _add_counts(self, rows: Dataset) -> None:
        if self._models is None:
            self._models = [self._new(c) for c in self.candidates]
            self._scores = Scores(len(self.candidates), rows.n_classes, self.spec.metric)
        elif rows.n_instances and len(self.candidates) > 1:
            for i, m in enumerate(self._models):
                self._scores.add(i, m.predict_proba(rows), rows.y)
        for m in self._models:
            if rows.n_instances:
                m.partial_fit(rows)
        scored = len(self.candidates) > 1 and any(self._scores.sums)
        self.model_ = self._models[self._choose(self._scores if scored else None)]

    def predict_proba(self, data: Dataset) -> np.ndarray:
        self._check_fitted(data)
        return super().predict_proba(data)




def _feed(model: Any, pass_no: int, rows: Dataset) -> None:
    """Rows for pass `pass_no` of a model trained in passes, or counted (`partial_fit`)."""
    if trains_in_passes(model):
        if model.training:
            model.learn(pass_no, rows)
    elif rows.n_instances:
        model.partial_fit(rows)
