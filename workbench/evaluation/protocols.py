"""Evaluation protocols: which rows train and which rows test, fold by fold.

A `Protocol` plans `FoldSpec`s — (round, fold, train rows, test rows) — for a data set of n
rows (the rows with a known class, in file order), deterministically from its seed. The
runner, the store and the summary only rely on this contract:

* the keys (round, fold) are known without the data (`keys`), so resuming knows what is
  missing;
* every round tests the **same set of rows**, each exactly once, so predictions can be
  pooled and, when the rounds are repetitions (`repeats`), decomposed into Kohavi–Wolpert
  bias and variance over the rounds;
* `to_dict` is what enters the config hash (k-fold's is the historical one, so existing
  runs keep their hash).

Implementations: `KFold` (r × k-fold CV), `GivenSplits` (CV on given folds), `Holdout` (one train/test split),
`RandomSampling` (a fixed random test set, training sets drawn afresh each repetition:
PAKDD 2014's bias/variance protocol, 1,000 / 1,000 × 10) and `LearningCurve` (a fixed test
set, nested training samples of growing size). A prequential stream fits the same seam:
its rounds are the chunks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, ClassVar

import numpy as np

from workbench.errors import FieldError, WorkbenchError
from workbench.evaluation.splits import (
    check_splits,
    fold_indices,
    make_splits,
    read_fold_table,
    round_rng,
)


@dataclass(frozen=True, eq=False)
class FoldSpec:
    """One evaluation: train on `train`, test on `test` (row indices, ascending)."""

    round: int
    fold: int
    train: np.ndarray
    test: np.ndarray


MAX_ROUNDS = 10_000
"""The most rounds a protocol takes (a run stores a fold per round and fold; the papers
use at most 100)."""


def _int(where: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise FieldError(where, f"expected an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise FieldError(where, f"{value:,} is more than the {maximum:,} a run takes")
    return int(value)


class Protocol:
    """Base of the protocols (frozen dataclasses; hashable, picklable)."""

    kind: ClassVar[str]
    repeats: ClassVar[bool] = True  # rounds are repetitions: bias/variance are meaningful
    tests_all_rows: ClassVar[bool] = False  # each round tests every row (else a fixed set)

    seed: int

    @property
    def rounds(self) -> int:
        raise NotImplementedError

    @property
    def folds(self) -> int:
        """Folds per round."""
        return 1

    @property
    def n_folds_total(self) -> int:
        return self.rounds * self.folds

    def keys(self) -> list[tuple[int, int]]:
        """Every (round, fold), in order."""
        return [(r, f) for r in range(self.rounds) for f in range(self.folds)]

    def plan(self, n: int, labels: np.ndarray | None = None) -> dict[tuple[int, int], FoldSpec]:
        """The fold specs for n rows (`labels`: class codes, for stratification)."""
        raise NotImplementedError

    def fold_sizes(self, n: int, round_: int) -> tuple[int, int]:
        """(training rows, test rows) of a fold of `round_`, without the data (estimates)."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The protocol as config data (what enters the config hash)."""
        raise NotImplementedError

    def for_dataset(self, name: str) -> "Protocol":
        """The protocol as laid on data set `name` (itself, but for a fold file's)."""
        return self


@dataclass(frozen=True)
class KFold(Protocol):
    """r rounds of k-fold cross-validation (`splits.make_splits`; ``assignment="rows"``:
    folds a seeded function of the row index, `splits.row_folds`, as out of core)."""

    rounds: int = 10  # (fields shadow the base class's properties)
    folds: int = 2
    seed: int = 1
    stratify: bool = False
    assignment: str = "shuffle"
    kind: ClassVar[str] = "kfold"
    tests_all_rows: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _int("protocol.rounds", self.rounds, 1, MAX_ROUNDS)
        _int("protocol.folds", self.folds, 2)
        _int("protocol.seed", self.seed, 0)
        if self.assignment not in ("shuffle", "rows"):
            raise FieldError("protocol.assignment", "expected 'shuffle' or 'rows', got "
                             f"{self.assignment!r}")
        if self.assignment == "rows" and self.stratify:
            raise FieldError("protocol.assignment", "'rows' (folds a function of the row "
                             "index) cannot stratify")

    def plan(self, n, labels=None):
        splits = make_splits(n, self.rounds, self.folds, self.seed, stratify=self.stratify,
                             labels=labels, assignment=self.assignment)
        return {(r, f): FoldSpec(r, f, *fold_indices(splits, r, f)) for r, f in self.keys()}

    def fold_sizes(self, n, round_):
        n_test = max(n // self.folds, 1)
        return n - n_test, n_test

    def to_dict(self):
        return {"rounds": self.rounds, "folds": self.folds, "seed": self.seed,
                "stratify": self.stratify} | (
                    {"assignment": self.assignment} if self.assignment != "shuffle" else {})


@dataclass(frozen=True, eq=False)
class GivenSplits(Protocol):
    """Cross-validation on a given (rounds, n) matrix of fold ids (``cv --folds-in``, the
    authors' own folds); `seed` only seeds the learners. Hashed by identity."""

    splits: np.ndarray
    seed: int = 1
    source: str = "splits"  # where the folds came from, for error messages
    kind: ClassVar[str] = "splits"
    tests_all_rows: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "splits", check_splits(self.splits, where=self.source))
        _int("protocol.seed", self.seed, 0)

    @property
    def rounds(self) -> int:
        return int(self.splits.shape[0])

    @property
    def folds(self) -> int:
        return int(self.splits.max()) + 1

    def plan(self, n, labels=None):
        check_splits(self.splits, n=n, where=self.source)
        return {(r, f): FoldSpec(r, f, *fold_indices(self.splits, r, f))
                for r, f in self.keys()}

    def fold_sizes(self, n, round_):
        n_test = max(n // self.folds, 1)
        return n - n_test, n_test

    def to_dict(self):
        digest = hashlib.sha256(np.ascontiguousarray(self.splits, np.int64).tobytes())
        return {"type": self.kind, "rounds": self.rounds, "folds": self.folds,
                "splits_sha256": digest.hexdigest(), "seed": self.seed}


@dataclass(frozen=True, eq=False)
class SplitsFile(Protocol):
    """Cross-validation on the folds of a file — (round, index, fold) rows, CSV or
    Parquet, e.g. exported from an OpenML task or a Weka Experimenter run
    (`splits.read_fold_table`); with a ``dataset`` column, each data set's own. Every data
    set of a run has the same rounds × folds. `seed` only seeds the learners. Hashed by the
    file's content, not its path."""

    path: str
    seed: int = 1
    kind: ClassVar[str] = "splits_file"
    tests_all_rows: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _int("protocol.seed", self.seed, 0)
        try:
            data = open(self.path, "rb").read()
        except OSError as exc:
            raise FieldError("protocol.splits", f"{self.path}: cannot read "
                             f"({exc.strerror})") from None
        tables = read_fold_table(self.path)
        shapes = {(m.shape[0], int(m.max()) + 1) for m in tables.values()}
        if len(shapes) > 1:
            raise FieldError("protocol.splits", f"{self.path}: its data sets have different "
                             f"rounds × folds ({', '.join(f'{r}×{f}' for r, f in shapes)})")
        object.__setattr__(self, "tables", tables)
        object.__setattr__(self, "digest", hashlib.sha256(data).hexdigest())

    @property
    def rounds(self) -> int:
        return next(iter(self.tables.values())).shape[0]

    @property
    def folds(self) -> int:
        return int(next(iter(self.tables.values())).max()) + 1

    def for_dataset(self, name: str) -> GivenSplits:
        if "" in self.tables:
            return GivenSplits(self.tables[""], self.seed, self.path)
        if name not in self.tables:
            raise WorkbenchError(f"{self.path} has no folds for data set '{name}' (it has "
                                 f"{', '.join(sorted(self.tables))})")
        return GivenSplits(self.tables[name], self.seed, f"{self.path} (data set {name})")

    def plan(self, n, labels=None):
        if "" not in self.tables:
            raise WorkbenchError(f"{self.path}: a fold file of several data sets is laid on "
                                 "one through for_dataset")
        return self.for_dataset("").plan(n, labels)

    fold_sizes = GivenSplits.fold_sizes  # (from rounds × folds alone)

    def to_dict(self):
        return {"type": "splits", "splits": self.path, "splits_sha256": self.digest,
                "seed": self.seed}


def _test_set(n: int, n_test: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(test rows, the other rows in a seeded random order), the test set drawn once."""
    perm = round_rng(seed, 0).permutation(n)
    return np.sort(perm[:n_test]), perm[n_test:]


@dataclass(frozen=True)
class Holdout(Protocol):
    """One split: a seeded random `fraction` of the rows tests, the rest trains.

    `min_test_seconds` > 0 makes the fold a timing study's benchmark loop: classifying the
    test split is repeated until it has taken at least that many CPU seconds, and the
    recorded classification time is the mean of one pass (a split classified in 1 ms is
    otherwise at the timer's resolution; Salem et al. looped for ≥ 10 s)."""

    fraction: float = 0.1
    seed: int = 1
    min_test_seconds: float = 0.0
    kind: ClassVar[str] = "holdout"
    repeats: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if isinstance(self.fraction, bool) or not isinstance(self.fraction, (int, float)) \
                or not 0 < self.fraction < 1:
            raise FieldError("protocol.fraction",
                             f"expected a number in (0, 1), got {self.fraction!r}")
        _int("protocol.seed", self.seed, 0)
        if isinstance(self.min_test_seconds, bool) or not isinstance(
                self.min_test_seconds, (int, float)) or not 0 <= self.min_test_seconds <= 3600:
            raise FieldError("protocol.min_test_seconds", "expected a number of seconds in "
                             f"[0, 3600], got {self.min_test_seconds!r}")

    @property
    def rounds(self) -> int:
        return 1

    def _n_test(self, n: int) -> int:
        return min(max(int(round(n * self.fraction)), 1), n - 1)

    def plan(self, n, labels=None):
        if n < 2:
            raise WorkbenchError(f"holdout: needs at least 2 rows, got {n}")
        test, rest = _test_set(n, self._n_test(n), self.seed)
        return {(0, 0): FoldSpec(0, 0, np.sort(rest), test)}

    def fold_sizes(self, n, round_):
        return n - self._n_test(n), self._n_test(n)

    def to_dict(self):
        return {"type": self.kind, "fraction": float(self.fraction), "seed": self.seed} | (
            {"min_test_seconds": float(self.min_test_seconds)} if self.min_test_seconds
            else {})


@dataclass(frozen=True)
class RandomSampling(Protocol):
    """A fixed random test set of `n_test` rows; each of `repetitions` rounds trains on
    `n_train` rows drawn afresh (without replacement) from the others."""

    n_train: int = 1000
    n_test: int = 1000
    repetitions: int = 10
    seed: int = 1
    kind: ClassVar[str] = "sampled"

    def __post_init__(self) -> None:
        _int("protocol.n_train", self.n_train, 1)
        _int("protocol.n_test", self.n_test, 1)
        _int("protocol.repetitions", self.repetitions, 1, MAX_ROUNDS)
        _int("protocol.seed", self.seed, 0)

    @property
    def rounds(self) -> int:
        return self.repetitions

    def plan(self, n, labels=None):
        if self.n_train + self.n_test > n:
            raise WorkbenchError(
                f"sampled protocol: n_train {self.n_train} + n_test {self.n_test} exceeds the "
                f"{n} rows of the data set")
        test, rest = _test_set(n, self.n_test, self.seed)
        out = {}
        for r in range(self.repetitions):
            pick = round_rng(self.seed, r + 1).choice(rest.size, self.n_train, replace=False)
            out[(r, 0)] = FoldSpec(r, 0, np.sort(rest[pick]), test)
        return out

    def fold_sizes(self, n, round_):
        return self.n_train, self.n_test

    def to_dict(self):
        return {"type": self.kind, "n_train": self.n_train, "n_test": self.n_test,
                "repetitions": self.repetitions, "seed": self.seed}


@dataclass(frozen=True)
class LearningCurve(Protocol):
    """A fixed random test set of `n_test` rows; round i trains on the first `sizes[i]`
    rows of one seeded ordering of the others (nested samples)."""

    sizes: tuple[int, ...] = (100, 1000, 10000)
    n_test: int = 1000
    seed: int = 1
    kind: ClassVar[str] = "learning_curve"
    repeats: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not self.sizes or list(self.sizes) != sorted(set(self.sizes)):
            raise FieldError("protocol.sizes", "expected increasing training sizes, got "
                             f"{list(self.sizes)!r}")
        for s in self.sizes:
            _int("protocol.sizes", s, 1)
        _int("protocol.n_test", self.n_test, 1)
        _int("protocol.seed", self.seed, 0)

    @property
    def rounds(self) -> int:
        return len(self.sizes)

    def plan(self, n, labels=None):
        if self.sizes[-1] + self.n_test > n:
            raise WorkbenchError(
                f"learning curve: the largest training size {self.sizes[-1]} + n_test "
                f"{self.n_test} exceeds the {n} rows of the data set")
        test, rest = _test_set(n, self.n_test, self.seed)
        return {(r, 0): FoldSpec(r, 0, np.sort(rest[:size]), test)
                for r, size in enumerate(self.sizes)}

    def fold_sizes(self, n, round_):
        return self.sizes[round_], self.n_test

    def to_dict(self):
        return {"type": self.kind, "sizes": list(self.sizes), "n_test": self.n_test,
                "seed": self.seed}


@dataclass(frozen=True)
class Prequential(Protocol):
    """A stream: the rows in file order, tested then trained in windows of `window` rows
    (`evaluation.outofcore.prequential_loop`: each window is predicted by the model of all
    rows before it, then learned; count-based learners only). One fold, whose test rows are
    every row after the first window."""

    window: int = 1000
    seed: int = 1
    kind: ClassVar[str] = "prequential"
    repeats: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _int("protocol.window", self.window, 1)
        _int("protocol.seed", self.seed, 0)

    @property
    def rounds(self) -> int:
        return 1

    def plan(self, n, labels=None):
        if n <= self.window:
            raise WorkbenchError(f"prequential: the window of {self.window} rows leaves no "
                                 f"row to test among the {n} rows of the data set")
        return {(0, 0): FoldSpec(0, 0, np.arange(n), np.arange(self.window, n))}

    def fold_sizes(self, n, round_):
        return n, max(n - self.window, 0)

    def to_dict(self):
        return {"type": self.kind, "window": self.window, "seed": self.seed}


PROTOCOLS: dict[str, type[Protocol]] = {
    p.kind: p for p in (KFold, Holdout, RandomSampling, LearningCurve, Prequential)}
"""The protocols a config's ``type`` names; a plugin adds its own by `register_protocol`."""


def protocol_keys(kind: str) -> tuple[str, ...]:
    """The config keys of protocol `kind`: its dataclass's fields (declared once)."""
    return protocol_keys_of(PROTOCOLS[kind])


def register_protocol(cls: type[Protocol]) -> type[Protocol]:
    """Make a protocol class usable as ``protocol: {type: KIND, ...}`` (a plugin's; usable
    as a decorator). It must be a frozen dataclass subclassing `Protocol`, with a new
    ``kind``, a seed, and `rounds`, `plan`, `fold_sizes` and `to_dict` as the built-in
    ones (`folds` defaults to 1)."""
    if not (isinstance(cls, type) and issubclass(cls, Protocol) and is_dataclass(cls)):
        raise WorkbenchError(f"register_protocol: {cls!r} is not a dataclass subclassing "
                             "workbench.evaluation.protocols.Protocol")
    kind = getattr(cls, "kind", None)
    if not isinstance(kind, str) or not kind:
        raise WorkbenchError(f"register_protocol: {cls.__name__} has no 'kind' name")
    if kind in PROTOCOLS and PROTOCOLS[kind] is not cls:
        raise WorkbenchError(f"register_protocol: protocol type '{kind}' already exists "
                             f"({PROTOCOLS[kind].__module__}.{PROTOCOLS[kind].__name__})")
    if "seed" not in protocol_keys_of(cls):
        raise WorkbenchError(f"register_protocol: {cls.__name__} needs a 'seed' field")
    PROTOCOLS[kind] = cls
    return cls


def protocol_keys_of(cls: type) -> tuple[str, ...]:
    """A protocol dataclass's config keys."""
    return tuple(f.name for f in fields(cls) if f.init)
