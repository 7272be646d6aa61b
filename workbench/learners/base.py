"""The learner template: declared parameters, `fit(Dataset) -> self`,
`predict_proba(Dataset) -> (n, K)` and `predict`.

A learner declares its constructor parameters once, as `Param`s in the class attribute
``parameters`` (default, accepted values, the rule in words): the base constructor takes
them (positionally or by name), validates each once with one message format, and gives
`get_params` / `set_params` (scikit-learn's names). `_reset()` forgets what `fit` learned.
The registry reads the same declarations, so a parameter is described in one place.
(Classes that write their own ``__init__``, like plugins, keep working: the registry
falls back to the constructor's signature.)

Every learner also declares the input it wants in the class attribute `preprocessing`:
``"mdl"`` (Fayyad–Irani, fitted on the training data), ``"ef:B"`` (equal frequency with B
bins) or ``"none"`` (raw data, e.g. the random forest). The evaluation pipeline applies it;
a learner itself only ever sees already-preprocessed data.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError


@dataclass(frozen=True)
class Param:
    """One declared parameter: its default, the values it accepts and that rule in words."""

    name: str
    default: Any
    rule: str  # completes "must be …", e.g. "an integer ≥ 0"
    accept: Callable[[Any], bool]
    convert: Callable[[Any], Any] = lambda v: v  # noqa: E731 - stored per instance

    def check(self, owner: str, value: Any) -> Any:
        """The value to store, or a `LearnerError` naming `owner` and the parameter."""
        if not self.accept(value):
            raise LearnerError(
                f"{owner}: parameter '{self.name}' must be {self.rule}, got {value!r}")
        return self.convert(value)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) \
        and math.isfinite(float(v))


def integer(name: str, default: int | None, low: int | None = None,
            high: int | None = None, optional: bool = False) -> Param:
    """An integer in [low, high] (either bound optional); `optional` also accepts None."""
    rule = "an integer" + (f" {low}..{high}" if low is not None and high is not None else
                           f" ≥ {low}" if low is not None else "")
    ok = (lambda v: _is_int(v) and (low is None or v >= low) and (high is None or v <= high))
    if optional:
        return Param(name, default, "null or " + rule, lambda v: v is None or ok(v),
                     lambda v: None if v is None else int(v))
    return Param(name, default, rule, ok, int)


def number(name: str, default: float, low: float = -math.inf,
           strict: bool = False) -> Param:
    """A finite number ≥ low (> low when `strict`), stored as float."""
    rule = "float" + ("" if low == -math.inf else f" {'>' if strict else '≥'} {low:g}") + \
        " (finite)"
    return Param(name, default, rule,
                 lambda v: is_number(v) and (v > low if strict else v >= low), float)


def boolean(name: str, default: bool) -> Param:
    """true or false (not 0 or 1: a YAML typo should not pass for a switch)."""
    return Param(name, default, "true or false", lambda v: isinstance(v, (bool, np.bool_)),
                 bool)


def choice(name: str, default: Any, values: tuple) -> Param:
    """One of `values` (None allowed when listed)."""
    shown = ", ".join("null" if v is None else repr(v) for v in values)
    return Param(name, default, f"one of {shown}", lambda v: v in values)


def normalise_log(logscore: np.ndarray) -> np.ndarray:
    """Rows of log-scores to distributions: exp(s − max) / Σ (no underflow, no overflow).
    From 4,096 cells compiled (`rowops.normalise_rows`: numpy's two reductions over rows of
    a few classes cost ten times the rest), the same bits either way."""
    if np.size(logscore) >= 1 << 12 and np.ndim(logscore) == 2 and np.shape(logscore)[1]:
        from workbench.rowops import normalise_rows  # numba: not on the import path

        return normalise_rows(logscore)
    s = logscore - logscore.max(axis=1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    return p


class Learner:
    """Base class: declared parameters, header bookkeeping, fitted-state checks and
    `predict` from `predict_proba`."""

    preprocessing: ClassVar[str] = "mdl"
    parameters: ClassVar[tuple[Param, ...]] = ()
    order_free: ClassVar[bool] = True
    """The fitted model does not depend on the order of the training rows (the contract
    suite, `workbench.testing`, checks it). A learner whose order-dependence depends on
    its parameters defines a property instead (AnJE: its SGD forms are not)."""
    output_version: ClassVar[int] = 1
    """Raise it with any change that alters this learner's predictions for the same data
    and parameters: a run reusing stored results (``baselines:``) recomputes the pairs
    stored under another version instead of taking them."""

    _header: Dataset | None = None

    def __init__(self, *args: Any, **params: Any) -> None:
        owner = type(self).__name__
        declared = {p.name: p for p in self.parameters}
        if len(args) > len(self.parameters):
            raise LearnerError(f"{owner}: takes at most {len(self.parameters)} positional "
                               f"parameter(s), got {len(args)}")
        for p, value in zip(self.parameters, args):
            if p.name in params:
                raise LearnerError(f"{owner}: parameter '{p.name}' given twice")
            params[p.name] = value
        for key in params:
            if key not in declared:
                raise LearnerError(f"{owner}: unknown parameter '{key}' (parameters: "
                                   f"{', '.join(declared) or 'none'})")
        for p in self.parameters:
            setattr(self, p.name, p.check(owner, params.get(p.name, p.default)))
        self._reset()

    def _reset(self) -> None:
        """Forget what `fit` learned (a new or re-parameterised learner is unfitted)."""
        self._header = None

    def get_params(self) -> dict:
        """Constructor parameters as set on this instance (for metadata and repr)."""
        if self.parameters:
            return {p.name: getattr(self, p.name) for p in self.parameters}
        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters
                if p != "self" and hasattr(self, p)}

    def set_params(self, **params: Any) -> "Learner":
        """Change declared parameters (validated as in the constructor); unfits the learner."""
        merged = {**self.get_params(), **params}
        type(self).__init__(self, **merged)
        return self

    # ----- the template: learners implement the hooks ----------------------------------
    def fit(self, data: Dataset) -> "Learner":
        """Forget the last fit, remember the header, learn from the labelled rows
        (`Dataset.training_rows`: none is an error) through the `_fit` hook."""
        if not isinstance(data, Dataset):
            raise LearnerError(
                f"{type(self).__name__}: fit expects a Dataset, got {type(data).__name__}")
        self._reset()
        self._remember_header(data)
        self._fit(data.training_rows())
        return self

    def predict_proba(self, data: Dataset) -> np.ndarray:
        """Class distributions (n, K): the `_joint_log_likelihood` hook, normalised once."""
        self._check_fitted(data)
        return normalise_log(self._joint_log_likelihood(data))

    def _fit(self, rows: Dataset) -> None:  # pragma: no cover - interface
        """Learn from the rows with a known class (the header is remembered already)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither fit nor _fit")

    def _joint_log_likelihood(self, data: Dataset) -> np.ndarray:  # pragma: no cover
        """log P(y, x) per row and class, up to a constant per row."""
        raise NotImplementedError(
            f"{type(self).__name__} implements neither predict_proba nor _joint_log_likelihood")

    # ----- optional reports (metrics `model_bytes`, `iterations`) ------------------------
    def model_bytes(self) -> int | None:
        """Bytes of the fitted model's tables; None when the learner does not say."""
        return None

    def iterations(self) -> int | None:
        """Iterations of the optimiser of the last `fit` (learners that optimise)."""
        return None

    def fit_report(self) -> dict | None:
        """What the last `fit` chose that a report may tabulate (JSON-able, e.g. the
        attributes a selective learner kept); None when there is nothing to say."""
        return None

    def measures(self) -> dict[str, float] | None:
        """Named scalar measures of the last `fit` (as Weka's AdditionalMeasureProducer),
        e.g. ``{"tree_depth": 7}``: each reaches the run's summary, ``fold_metrics.csv``
        and, once declared with `workbench.evaluation.metrics.register_metric`, the tables
        under its own title and direction. None (the default) reports nothing."""
        return None

    def preflight(self) -> None:
        """Raise `LearnerError` when the learner cannot run on this machine (a missing
        optional package, Java or jar, an option its engine refuses): checked when a run's
        config is read, before any directory is made or fold computed. Nothing by
        default."""

    # ----- shared helpers ------------------------------------------------------------------
    def predict(self, data: Dataset) -> np.ndarray:
        """Class codes: the first maximum of each distribution."""
        return np.argmax(self.predict_proba(data), axis=1)

    def _remember_header(self, data: Dataset) -> None:
        """Keep an empty copy of the training header to check test data against."""
        self._header = data.empty

    def _check_fitted(self, data: Dataset) -> None:
        """Refuse to predict before fit, or on data whose header differs from training."""
        if self._header is None:
            raise LearnerError(f"{type(self).__name__}: predict called before fit")
        self._check_header(data)

    def _check_header(self, data: Dataset) -> None:
        """Refuse data whose header differs from the training header."""
        if not isinstance(data, Dataset):
            raise LearnerError(f"{type(self).__name__}: expected a Dataset, got "
                               f"{type(data).__name__}")
        diff = self._header.header_difference(data)
        if diff is not None:
            raise LearnerError(
                f"{type(self).__name__}: test data header differs from training: {diff}"
            )

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class CountingLearner(Learner):
    """A learner whose model is additive counts: `fit` is one `partial_fit` on fresh counts,
    and any split of the training data into chunks gives the same model (streams, data
    larger than memory). Subclasses implement `_add_counts` (and `_joint_log_likelihood`)."""

    def _fit(self, rows: Dataset) -> None:
        self._add_counts(rows)

    def chunk_refusal(self) -> str | None:
        """Why these parameters cannot train chunk by chunk (None: they can)."""
        return None

    def partial_fit(self, data: Dataset) -> "CountingLearner":
        """Add a chunk of training data (the first chunk fixes the header)."""
        why = self.chunk_refusal()
        if why:
            raise LearnerError(f"{type(self).__name__}: {why}")
        if not isinstance(data, Dataset):
            raise LearnerError(f"{type(self).__name__}: partial_fit expects a Dataset, "
                               f"got {type(data).__name__}")
        if self._header is None:
            self._remember_header(data)
        else:
            self._check_fitted(data)
        self._add_counts(data.training_rows())
        return self

    def _add_counts(self, rows: Dataset) -> None:  # pragma: no cover - interface
        """Add labelled rows to the counts (creating them on the first call)."""
        raise NotImplementedError(f"{type(self).__name__} implements no _add_counts")


class MultiPassLearner(Learner):
    """A learner trained in a fixed number of passes over its training rows (KDB and TAN:
    two, SKDB: three), each pass reading the rows in chunks in the same order, so that data
    larger than memory can train it (`evaluation.outofcore`):

        model.begin(header)
        p = 0
        while model.training:
            for chunk in chunks:           # the same rows, in the same order, every pass
                model.learn(p, chunk)
            model.end_pass(p)
            p += 1

    A search may end early (`training` turns False before `n_passes()` passes). Between
    passes the state is plain arrays: a model pickled after `end_pass(p)` resumes at pass
    p + 1. Memory is independent of the number of rows. `fit` in memory gives the
    same model (subclasses keep their own fast in-memory `fit`)."""

    _pass: int | None = None  # the pass being read; None before `begin` and once done

    def _reset(self) -> None:
        super()._reset()
        self._pass = None

    def n_passes(self) -> int:  # pragma: no cover - interface
        """How many passes over the training rows training takes (at most, for a search
        whose `_end_pass` may end it early)."""
        raise NotImplementedError

    def pass_refusal(self) -> str | None:
        """Why these parameters cannot train in passes (None: they can)."""
        return None

    def begin(self, header: Dataset) -> "MultiPassLearner":
        """Start training on data with this header (forgets any earlier fit)."""
        if not isinstance(header, Dataset):
            raise LearnerError(f"{type(self).__name__}: begin expects a Dataset, "
                               f"got {type(header).__name__}")
        why = self.pass_refusal()
        if why:
            raise LearnerError(f"{type(self).__name__}: {why}")
        self._reset()
        self._remember_header(header)
        self._begin(header)
        self._pass = 0
        return self

    def learn(self, pass_no: int, data: Dataset) -> "MultiPassLearner":
        """Read a chunk of training data in pass `pass_no` (rows without a class are
        skipped)."""
        self._expect_pass(f"learn(pass {pass_no})", pass_no)
        self._check_header(data)
        self._learn(pass_no, data.without_missing_class())
        return self

    def end_pass(self, pass_no: int) -> "MultiPassLearner":
        """Finish pass `pass_no`; after the last pass the model predicts."""
        self._expect_pass(f"end_pass({pass_no})", pass_no)
        more = self._end_pass(pass_no)
        if more is None:
            more = pass_no + 1 < self.n_passes()
        self._pass = pass_no + 1 if more else None
        return self

    def _expect_pass(self, call: str, pass_no: int) -> None:
        if self._pass is None or pass_no != self._pass:
            raise LearnerError(f"{type(self).__name__}: {call} while "
                               + ("not training" if self._pass is None
                                  else f"in pass {self._pass}"))

    @property
    def training(self) -> bool:
        """Whether `begin` was called and another pass is needed."""
        return self._pass is not None

    def _check_fitted(self, data: Dataset) -> None:
        if self._pass is not None:
            raise LearnerError(f"{type(self).__name__}: predict called during training "
                               f"(pass {self._pass + 1} of {self.n_passes()} not finished)")
        super()._check_fitted(data)

    def additive_pass(self, pass_no: int) -> bool:
        """Whether pass `pass_no` only adds up counts over the rows read (the order does
        not matter), so that models whose `pass_key` is equal can share it: one model per
        row subset counts, any union or difference is `merge_pass` (k-fold CV by count
        subtraction, `evaluation.outofcore.subtraction`). Default: no."""
        return False

    def pass_key(self, pass_no: int) -> Any:
        """What an additive pass's counts depend on (e.g. the structure chosen so far):
        two models with equal keys count a row the same way."""
        return None

    def merge_pass(self, pass_no: int, other: "MultiPassLearner", sign: int = 1
                   ) -> "MultiPassLearner":
        """Add (`sign` −1: subtract) the counts `other` read in additive pass `pass_no`
        (equal `pass_key`s) to this model's, before `end_pass`."""
        raise LearnerError(f"{type(self).__name__}: pass {pass_no + 1} is not additive")

    def _begin(self, header: Dataset) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def _learn(self, pass_no: int, rows: Dataset) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def _end_pass(self, pass_no: int) -> bool | None:  # pragma: no cover - interface
        """Finish a pass; return False to end training early (a search that stops), True
        for another pass, None for "as `n_passes()` says"."""
        raise NotImplementedError


def trains_in_passes(model: Any) -> bool:
    """The model trains through `MultiPassLearner`'s begin / learn / end_pass: in several
    passes, or in one that is not a count of its chunks (VW's spool). A one-pass counting
    learner counts chunk by chunk (`CountingLearner.partial_fit`) instead, which streams and
    distributed counting need."""
    return isinstance(model, MultiPassLearner) and (
        model.n_passes() > 1 or not isinstance(model, CountingLearner))


def declared_parameters(factory: Any) -> dict[str, Param] | None:
    """The declared parameters of a `Learner` class that uses the base constructor, None
    for factories described by their signature (a plugin's own ``__init__``)."""
    if inspect.isclass(factory) and issubclass(factory, Learner) and \
            factory.__init__ is Learner.__init__:
        return {p.name: p for p in factory.parameters}
    return None
