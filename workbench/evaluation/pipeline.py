"""One cross-validation fold: preprocess (fitted on the training fold) → fit → predict.

Timing (both process CPU seconds, `time.process_time`, and wall seconds,
`time.perf_counter`):

* **training** = fitting the learner's preprocessing on the training rows + transforming the
  training rows + `learner.fit`. Discretisation is learned from the training data, so it is
  part of learning.
* **classification** = transforming the test rows with the fitted discretiser +
  `learner.predict_proba`.

Constructing the learner object and slicing rows out of the data set are not timed, and
neither is a one-off *warm-up* per process and learner (fit + predict on a few training
rows). Compiling a numba kernel specialisation or loading it from the cache is a
first-use cost, never part of a fold's figures: what the warm-up does not reach is
measured by `workbench.jit.compile_clock` (CPU and wall seconds in numba's compiler lock)
and subtracted from the training or classification time it fell in; the fold records it
as ``compile_seconds`` (CPU, warm-up included) and ``compiled_kernels``. CPU time is the
whole process's, so it is meaningful when each fold runs in its own process (joblib's
default process backend) or sequentially, not under a threading backend.

Rows of the training fold whose class is missing are dropped (SPEC: ignored for training);
the test fold must not contain any (callers evaluate `data.without_missing_class()`).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError, WorkbenchError
from workbench.evaluation.tuning import Tuned, split_tuned
from workbench.jit import compile_clock
from workbench.learners import registry
from workbench.learners.base import declared_parameters

LearnerLike = str | Callable[..., Any]
SEED_PARAMETERS = ("seed", "random_state")


@dataclass(frozen=True, eq=False)
class FoldResult:
    """What one fold produced; small, picklable, and storable with `to_record`.

    `test_index` are row indices (into the evaluated data set) of the test instances and
    `proba[j]` is the distribution predicted for row `test_index[j]` (K = declared classes).
    """

    round: int
    fold: int
    test_index: np.ndarray  # int64 (n_test,)
    proba: np.ndarray  # float64 (n_test, K)
    train_cpu_seconds: float
    test_cpu_seconds: float
    train_wall_seconds: float
    test_wall_seconds: float
    n_train: int
    preprocessing: str = "none"
    cuts: dict[str, list[float]] | None = field(default=None)
    model_bytes: float | None = None  # `Learner.model_bytes()` after fit (None: not reported)
    iterations: float | None = None  # `Learner.iterations()` after fit
    fit_report: dict | None = None  # `Learner.fit_report()` after fit (e.g. selection)
    peak_rss_bytes: float | None = None  # the process's peak resident memory during the fold
    compile_seconds: float = 0.0  # CPU spent compiling / loading kernels (kept out of times)
    compiled_kernels: int = 0  # kernel specialisations compiled for this fold
    measures: dict[str, float] | None = None  # `Learner.measures()` after fit, by name
    sums: tuple | None = None  # the fold's `LossSums` when its predictions are not kept

    @property
    def n_test(self) -> int:
        return int(self.test_index.shape[0])

    def value(self, name: str) -> float | None:
        """The fold's value of measure `name`: the learner's named measure, else the
        field or derived property of that name, None when neither says."""
        if self.measures and name in self.measures:
            return self.measures[name]
        if name in _MEASURE_FIELDS:
            value = getattr(self, name)
            return None if value is None else float(value)
        return None

    @property
    def selected_parents(self) -> int | None:
        """How many parent attributes the learner kept (`fit_report`), None if it says not."""
        return _count(self.fit_report, "parents")

    @property
    def selected_children(self) -> int | None:
        """How many child attributes the learner kept (`fit_report`), None if it says not."""
        return _count(self.fit_report, "children")

    @property
    def selected_attributes(self) -> int | None:
        """How many attributes a selective KDB kept (`fit_report`), None if it says not."""
        return _count(self.fit_report, "attributes")

    @property
    def selected_k(self) -> int | None:
        """The k a selective KDB chose (`fit_report`), None if it says not."""
        value = None if not self.fit_report else self.fit_report.get("k")
        return None if value is None else int(value)

    @property
    def memory_saved(self) -> float | None:
        """1 − compact / naive cells of the learner's count layout (`fit_report`), if given."""
        cells = None if not self.fit_report else self.fit_report.get("layout_cells")
        return None if not cells else 1.0 - float(cells[0]) / float(cells[1])

    @property
    def train_objective(self) -> float | None:
        """The training objective where the optimiser stopped (`fit_report`), if reported."""
        value = None if not self.fit_report else self.fit_report.get("train_objective")
        return None if value is None else float(value)

    def to_record(self) -> dict[str, Any]:
        """Plain dict (ints, floats, str, two numpy arrays; `cuts` as a JSON string)."""
        return {
            "round": int(self.round),
            "fold": int(self.fold),
            "test_index": np.asarray(self.test_index, dtype=np.int64),
            "proba": np.asarray(self.proba, dtype=np.float64),
            "train_cpu_seconds": float(self.train_cpu_seconds),
            "test_cpu_seconds": float(self.test_cpu_seconds),
            "train_wall_seconds": float(self.train_wall_seconds),
            "test_wall_seconds": float(self.test_wall_seconds),
            "n_train": int(self.n_train),
            "preprocessing": str(self.preprocessing),
            "cuts": None if self.cuts is None else json.dumps(self.cuts),
            "model_bytes": _optional_number(self.model_bytes),
            "iterations": _optional_number(self.iterations),
            "fit_report": None if self.fit_report is None else json.dumps(self.fit_report),
            "peak_rss_bytes": _optional_number(self.peak_rss_bytes),
            "compile_seconds": float(self.compile_seconds),
            "compiled_kernels": int(self.compiled_kernels),
            "measures": None if not self.measures else json.dumps(self.measures),
        } | ({"sums": json.dumps([float(v) for v in self.sums])}
             if self.sums is not None else {})

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> "FoldResult":
        """Inverse of `to_record` (also accepts `cuts` already decoded, or absent)."""
        cuts, report, measures = (_json_field(rec.get(k))
                                  for k in ("cuts", "fit_report", "measures"))
        return cls(
            round=int(rec["round"]),
            fold=int(rec["fold"]),
            test_index=np.asarray(rec["test_index"], dtype=np.int64),
            proba=np.asarray(rec["proba"], dtype=np.float64),
            train_cpu_seconds=float(rec["train_cpu_seconds"]),
            test_cpu_seconds=float(rec["test_cpu_seconds"]),
            train_wall_seconds=float(rec["train_wall_seconds"]),
            test_wall_seconds=float(rec["test_wall_seconds"]),
            n_train=int(rec["n_train"]),
            preprocessing=str(rec.get("preprocessing", "none")),
            cuts=cuts,
            model_bytes=_optional_number(rec.get("model_bytes")),
            iterations=_optional_number(rec.get("iterations")),
            fit_report=report,
            peak_rss_bytes=_optional_number(rec.get("peak_rss_bytes")),
            compile_seconds=float(_optional_number(rec.get("compile_seconds")) or 0.0),
            compiled_kernels=int(_optional_number(rec.get("compiled_kernels")) or 0),
            measures=measures or None,
            sums=None if not rec.get("sums") else tuple(_json_field(rec["sums"])),
        )


_MEASURE_FIELDS = ("model_bytes", "iterations", "peak_rss_bytes", "selected_parents",
                   "selected_children", "selected_attributes", "selected_k", "memory_saved",
                   "train_objective")
"""`FoldResult` fields and properties that are the built-in ``mean`` metrics."""


def named_measures(model: Any, name: str) -> dict[str, float] | None:
    """The learner's named measures after fit (`Learner.measures`, as Weka's
    AdditionalMeasureProducer), checked: names are text, values finite numbers or None
    (dropped). A wrong shape fails the fold with one line naming the learner."""
    produce = getattr(model, "measures", None)
    if produce is None:
        return None
    got = produce()
    if got is None:
        return None
    if not isinstance(got, Mapping):
        raise LearnerError(f"learner {name}: measures() must return a mapping of names to "
                           f"numbers, got {type(got).__name__}")
    out: dict[str, float] = {}
    for key, value in got.items():
        if value is None:
            continue
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(
                value, (int, float, np.integer, np.floating)) or not np.isfinite(value):
            raise LearnerError(f"learner {name}: measures() gave {key!r}: {value!r}; "
                               "expected a name and a finite number")
        out[key] = float(value)
    return out or None


def reset_peak_rss() -> None:
    """Start the process's peak-RSS count afresh (Linux: ``/proc/self/clear_refs``), so
    `peak_rss` after a fold measures that fold, not the worker's earlier ones."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def peak_rss() -> int | None:
    """Peak resident memory of this process since `reset_peak_rss` (bytes; None where
    ``/proc/self/status`` is not available)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


SUM_TOLERANCE = 1e-6
"""How far a predicted distribution's sum may be from 1 (rounding, not a bug)."""

NEGATIVE_TOLERANCE = 1e-12
"""How far below 0 a probability may be from rounding: Weka's trees move fractional
weights between branches by subtraction, so RF10 (bit for bit as Weka) can give
−3.3e-18 where 0 is meant (labor); every metric takes such a value as 0."""


def probability_problem(proba: np.ndarray) -> str:
    """What is wrong with predicted distributions (rows), or '' when each row is finite,
    non-negative (within `NEGATIVE_TOLERANCE`) and sums to 1 within `SUM_TOLERANCE`: a
    learner returning anything else would make every error measure silently wrong."""
    if proba.size == 0:
        return ""
    finite = np.isfinite(proba)
    if not finite.all():
        row = int(np.flatnonzero(~finite.all(axis=1))[0])
        return f"returned a non-finite probability (row {row}: {proba[row].tolist()})"
    if (proba < -NEGATIVE_TOLERANCE).any():
        row = int(np.flatnonzero((proba < -NEGATIVE_TOLERANCE).any(axis=1))[0])
        return f"returned a negative probability (row {row}: {proba[row].tolist()})"
    if proba.ndim == 2 and proba.size >= 1 << 12 and proba.shape[1]:
        from workbench.rowops import row_sums  # numba: not on the import path

        off = np.abs(row_sums(np.ascontiguousarray(proba, dtype=np.float64)) - 1.0)
    else:
        off = np.abs(proba.sum(axis=1) - 1.0)
    if (off > SUM_TOLERANCE).any():
        row = int(np.argmax(off))
        return (f"returned a distribution that sums to {proba[row].sum():.9g}, not 1 "
                f"(row {row})")
    return ""


def checked_proba(proba: Any, n: int, n_classes: int, name: str) -> np.ndarray:
    """`proba` as float64 (n, n_classes), or a `LearnerError` naming learner `name` when
    its shape or its distributions (`probability_problem`) are wrong."""
    proba = np.asarray(proba, dtype=np.float64)
    if proba.shape != (n, n_classes):
        raise LearnerError(f"learner '{name}': predict_proba returned shape {proba.shape}, "
                           f"expected ({n}, {n_classes})")
    problem = probability_problem(proba)
    if problem:
        raise LearnerError(f"learner '{name}': predict_proba {problem}")
    return proba


def _count(report: dict | None, key: str) -> int | None:
    return None if not report or key not in report else len(report[key])


def _json_field(value: Any) -> Any:
    """A stored JSON text field (a 0-d array, '' or absent for none) decoded."""
    if isinstance(value, np.ndarray):
        value = value.item()
    if isinstance(value, str):
        return json.loads(value) if value else None
    return value


def _optional_number(value: Any) -> float | None:
    """A stored optional number: None, '' (how the store keeps None) and NaN mean absent."""
    if value is None or (isinstance(value, str) and not value):
        return None
    value = float(value)
    return None if value != value else value


def _learner_parameters(learner: LearnerLike) -> set[str]:
    if isinstance(learner, str):
        return set(registry.get(learner).parameters())
    declared = declared_parameters(learner)
    if declared is not None:
        return set(declared)
    target = learner.__init__ if inspect.isclass(learner) else learner
    try:
        return {p for p in inspect.signature(target).parameters if p != "self"}
    except (TypeError, ValueError):
        return set()


def takes_list(learner: LearnerLike, key: str, value: list) -> bool:
    """Parameter `key` of a registered learner takes the list `value` as its value (it is
    not a grid axis of nested tuning); a factory's never does."""
    if not isinstance(learner, str) or key == registry.PREPROCESSING_KEY:
        return False
    try:
        registry.create(learner, **{key: value})
    except WorkbenchError:
        return False
    return True


def make_learner(learner: LearnerLike, params: Mapping[str, Any] | None = None,
                 seed: int | None = None) -> Any:
    """A fresh, unfitted learner from a registered name or a factory, with `params`.

    ``preprocessing`` in `params` overrides the learner's declared input. If `seed` is given
    and the learner takes a ``seed`` / ``random_state`` parameter that neither `params` nor
    the registered variant sets, that parameter is set to `seed` (so randomised learners
    are reproducible per fold). A variant that fixes its seed keeps it in every fold, as
    Weka does (RF10 = ``RandomForest -S 1`` builds every fold's forest with seed 1).
    With a ``tune`` key, lists of values are a grid and the learner is `Tuned`: its
    parameters are chosen per training set by an inner CV (`evaluation.tuning`).
    """
    kw = dict(params or {})
    tuned = split_tuned(kw, functools.partial(takes_list, learner))
    if tuned is not None:
        return Tuned(functools.partial(make_learner, learner), *tuned, seed=seed)
    if seed is not None:
        accepted = _learner_parameters(learner)
        fixed = set(kw)
        if isinstance(learner, str):
            fixed |= set(registry.get(learner).defaults)
        for name in SEED_PARAMETERS:
            if name in accepted and name not in fixed:
                kw[name] = int(seed)
                break
    if isinstance(learner, str):
        return registry.create(learner, **kw)
    if not callable(learner):
        raise LearnerError(f"learner must be a registered name or a factory, got {learner!r}")
    pre = kw.pop("preprocessing", None)
    obj = learner(**kw)
    if pre is not None:
        obj.preprocessing = pre
    return obj


def fold_seed(seed: int, round_: int, fold: int) -> int:
    """A per-fold learner seed derived from (seed, round, fold) only (order-independent)."""
    return int(np.random.SeedSequence([int(seed), int(round_), int(fold)]).generate_state(1)[0])


def _discretize_module():
    return importlib.import_module("workbench.discretize")


# ----- the fold ---------------------------------------------------------------------------
def _sample_options(discretize_sample: int | None, seed: int | None) -> dict[str, int]:
    """`fit_discretizer` keyword options: fit on <= `discretize_sample` training rows drawn
    with the fold's seed (none when no sample size is set)."""
    if discretize_sample is None:
        return {}
    return {"sample": int(discretize_sample), "seed": 0 if seed is None else int(seed)}


_WARMED: set[str] = set()
WARM_UP_ROWS = 32
ROWOPS_KEY = "(row operations)"


def warm_up(key: str, learner: LearnerLike, params: Mapping[str, Any] | None,
            seed: int | None, train: Dataset, discretize_sample: int | None = None) -> None:
    """Once per process and learner: fit and predict on a few rows, untimed, results unused.

    Failures are ignored here (the timed fit reports them properly).
    """
    if key in _WARMED:
        return
    if ROWOPS_KEY not in _WARMED and train.n_instances * train.n_classes >= 1 << 12:
        # the row operations an evaluation uses past 4,096 cells, where a fold of this
        # size reaches them (elsewhere, as in a learning curve's small first training
        # set, the compile clock leaves their first use out of the fold's times)
        from workbench.rowops import warm_up  # numba: not on the import path

        warm_up()
        _WARMED.add(ROWOPS_KEY)
    _WARMED.add(key)
    small = train.take(np.arange(min(WARM_UP_ROWS, train.n_instances)))
    try:
        model = make_learner(learner, params, seed)
        method = str(getattr(model, "preprocessing", "none") or "none")
        if method != "none":
            small = _discretize_module().fit_discretizer(
                method, small, **_sample_options(discretize_sample, seed)).transform(small)
        model.fit(small)
        model.predict_proba(small)
    except Exception:  # noqa: BLE001 - a warm-up must never decide anything
        pass


def run_fold(
    data: Dataset,
    learner: LearnerLike,
    params: Mapping[str, Any] | None,
    train_idx: np.ndarray | Sequence[int],
    test_idx: np.ndarray | Sequence[int],
    *,
    round: int = 0,
    fold: int = 0,
    seed: int | None = None,
    keep_cuts: bool = True,
    discretize_sample: int | None = None,
    min_test_seconds: float = 0.0,
) -> FoldResult:
    """Fit preprocessing + learner on `data[train_idx]`, predict `data[test_idx]`.

    `learner` is a registered name (created with `registry.create(name, **params)`) or a
    factory called as ``factory(**params)``. The learner's ``preprocessing`` ("mdl",
    "ef:B", "none") is fitted with `workbench.discretize.fit_discretizer` on the training
    rows only and then applied to both folds. `seed`, if given, seeds randomised learners
    (see `make_learner`). `discretize_sample` (None = every training row) fits the
    discretiser on a random sample of at most that many training rows, drawn with `seed`
    (the JMLR 2016 protocol: EF5 on <= 100,000 rows); a fold with fewer rows is unaffected.
    Returns a `FoldResult` with the test distributions and times; `cuts` (the
    discretiser's cut points) is kept unless ``keep_cuts=False``. With `min_test_seconds`,
    classification (of the transformed test rows) is repeated until that much CPU time has
    passed and its times are the mean of one pass.
    """
    train_idx = np.asarray(train_idx, dtype=np.int64)
    test_idx = np.asarray(test_idx, dtype=np.int64)
    if (data.y[test_idx] < 0).any():
        raise ValueError("run_fold: the test fold contains rows with a missing class; "
                         "evaluate data.without_missing_class()")
    train = data.take(train_idx).training_rows()
    test = data.take(test_idx)
    model = make_learner(learner, params, seed)
    method = str(getattr(model, "preprocessing", "none") or "none")
    name = learner if isinstance(learner, str) else getattr(learner, "__name__", repr(learner))
    clock = compile_clock()
    jit0 = clock.read()
    warm_up(f"{name}|{sorted((params or {}).items())!r}", learner, params, seed, train,
            discretize_sample)

    reset_peak_rss()
    jit1 = clock.read()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    disc = None
    if method != "none":
        disc = _discretize_module().fit_discretizer(
            method, train, **_sample_options(discretize_sample, seed))
        train = disc.transform(train)
    model.fit(train)
    cpu1, wall1 = time.process_time(), time.perf_counter()
    jit2 = clock.read()
    if disc is not None:
        test = disc.transform(test)
    proba = model.predict_proba(test)
    cpu2, wall2 = time.process_time(), time.perf_counter()
    passes = 1
    while min_test_seconds > 0 and time.process_time() - cpu1 < min_test_seconds:
        model.predict_proba(test)  # compiled by the first pass: only classification here
        passes += 1
    if passes > 1:
        cpu2, wall2 = time.process_time(), time.perf_counter()
    jit3 = clock.read()
    in_fit, in_test = jit2 - jit1, jit3 - jit2
    peak = peak_rss()
    size = model.model_bytes() if hasattr(model, "model_bytes") else None
    iters = model.iterations() if hasattr(model, "iterations") else None
    report = model.fit_report() if hasattr(model, "fit_report") else None
    measures = named_measures(model, name)

    proba = checked_proba(proba, test_idx.size, data.n_classes, name)
    cuts = None
    if keep_cuts and disc is not None:
        cuts = {str(k): [float(c) for c in v] for k, v in getattr(disc, "cuts", {}).items()}
    return FoldResult(
        round=int(round),
        fold=int(fold),
        test_index=test_idx,
        proba=proba,
        train_cpu_seconds=max(cpu1 - cpu0 - in_fit.cpu_seconds, 0.0),
        test_cpu_seconds=max(cpu2 - cpu1 - in_test.cpu_seconds, 0.0) / passes,
        train_wall_seconds=max(wall1 - wall0 - in_fit.wall_seconds, 0.0),
        test_wall_seconds=max(wall2 - wall1 - in_test.wall_seconds, 0.0) / passes,
        n_train=int(train.n_instances),
        preprocessing=method,
        cuts=cuts,
        model_bytes=_optional_number(size),
        iterations=_optional_number(iters),
        fit_report=report,
        peak_rss_bytes=_optional_number(peak),
        compile_seconds=(jit3 - jit0).cpu_seconds,
        compiled_kernels=(jit3 - jit0).compiled,
        measures=measures,
    )
