"""The immutable `Dataset` every stage passes on: attribute metadata + one value matrix.

Layout (chosen so that every stage can slice rows cheaply and learners get integer codes
without copying per call):

* ``X`` — float64 array (n, d) of the *non-class* attributes. A nominal attribute holds its
  value code (0 .. |values|-1) as a float; a numeric attribute holds its value. Missing is
  NaN for both.
* ``y`` — int64 array (n,) of class codes; ``-1`` marks a missing class.
* ``attributes`` — one `Attribute` per column of ``X``; ``values is None`` means numeric.
* ``class_attribute`` — the (nominal) class attribute.

Stages never mutate a Dataset: they return new ones (`take`, `replace`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace as _dc_replace
from functools import cached_property
from typing import Sequence

import numpy as np

from workbench.errors import WorkbenchError

MISSING_CODE = -1
"""Integer code of a missing nominal value / class in code matrices."""
_SMALL = 1 << 12
"""Value matrices below this many values are coded by numpy, without loading a compiled
kernel (a first fit on iris-sized data); from it on the compiled copies, 3–5× faster
(nursery's 51,840 values: `column_codes` 0.22 → 0.08 ms, `codes` 0.08 → 0.04 ms)."""


@dataclass(frozen=True)
class Attribute:
    """One attribute: its name and, if nominal, its declared values in header order."""

    name: str
    values: tuple[str, ...] | None = None  # None = numeric
    # `?` occurs for this attribute somewhere in the data set it came from (the whole file,
    # not only the rows at hand): learners that treat missing as a value (SPEC §5.1) declare
    # `?` as one more value iff this is set. Not part of the header's identity.
    has_missing: bool = field(default=False, compare=False)

    @property
    def is_nominal(self) -> bool:
        return self.values is not None

    @property
    def cardinality(self) -> int:
        """Number of declared values (0 for a numeric attribute)."""
        return 0 if self.values is None else len(self.values)


@dataclass(frozen=True, eq=False)
class Dataset:
    """Attribute metadata + value matrix + class codes (see module docstring)."""

    name: str
    attributes: tuple[Attribute, ...]
    class_attribute: Attribute
    X: np.ndarray
    y: np.ndarray
    source: str = ""  # file the data came from, for error messages
    meta: dict = field(default_factory=dict)  # free-form provenance (e.g. discretisation)

    def __post_init__(self) -> None:
        X = np.asarray(self.X, dtype=np.float64)
        y = np.asarray(self.y, dtype=np.int64)
        if X.ndim != 2 or X.shape[1] != len(self.attributes):
            raise ValueError(f"X has shape {X.shape}, expected (n, {len(self.attributes)})")
        if y.shape != (X.shape[0],):
            raise ValueError(f"y has shape {y.shape}, expected ({X.shape[0]},)")
        if not self.class_attribute.is_nominal:
            raise WorkbenchError(
                f"{self.source or self.name}: class attribute '{self.class_attribute.name}' "
                "is not nominal"
            )
        X.setflags(write=False)
        y.setflags(write=False)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "attributes", tuple(self.attributes))

    # ----- shape -------------------------------------------------------------------------
    @property
    def n_instances(self) -> int:
        return int(self.X.shape[0])

    def __len__(self) -> int:
        return self.n_instances

    @property
    def n_attributes(self) -> int:
        """Number of non-class attributes."""
        return len(self.attributes)

    @property
    def class_values(self) -> tuple[str, ...]:
        assert self.class_attribute.values is not None
        return self.class_attribute.values

    @property
    def n_classes(self) -> int:
        """Number of *declared* class values (SPEC: K is the declared count)."""
        return len(self.class_values)

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    @cached_property
    def is_all_nominal(self) -> bool:
        """(Asked by every stage a chunk passes; the attributes never change.)"""
        return all(a.is_nominal for a in self.attributes)

    @property
    def numeric_indices(self) -> list[int]:
        return [i for i, a in enumerate(self.attributes) if not a.is_nominal]

    @cached_property
    def cardinalities(self) -> np.ndarray:
        """Declared value counts per attribute (0 for numeric), read-only: asked several
        times by every fit (musk1's 166 attributes: a tenth of naive Bayes' fit)."""
        cards = np.array([a.cardinality for a in self.attributes], dtype=np.int64)
        cards.setflags(write=False)
        return cards

    # ----- views -------------------------------------------------------------------------
    def codes(self) -> np.ndarray:
        """Nominal value codes as int32 (n, d), missing = -1. Requires all-nominal data."""
        self._require_nominal()
        if self.X.size < _SMALL:  # small: numpy, without loading a compiled kernel
            return np.where(np.isnan(self.X), MISSING_CODE, self.X).astype(np.int32)
        from workbench.data.gather import nominal_codes  # numba: not on the import path

        return nominal_codes(self.X, MISSING_CODE)

    def column_codes(self, dtype: type = np.int32) -> np.ndarray:
        """`codes` attribute-major, (d, n) C-ordered as `dtype` (a signed integer type): the
        layout the counting kernels stream, without an (n, d) copy and a transpose. A value
        `dtype` cannot hold becomes −2 (never a valid code) instead of wrapping around.

        Made once per type and kept (a Dataset never changes): every learner fitted on or
        classifying the same rows — a fold's, a tuning split's — reads the 8-byte values
        once; each call returns a copy of its own (the callers write to it), a read of a
        byte per value (adult's halves: 0.19 ms -> 0.02 ms per call, and 2.7 MB of values
        not read again). What is kept costs a byte per value (int8), an eighth of `X`."""
        self._require_nominal()
        key = np.dtype(dtype)
        kept = self.__dict__.setdefault("_kept_codes", {})
        if key not in kept:
            kept[key] = self._make_column_codes(key)
        return kept[key].copy()

    def _make_column_codes(self, dtype: np.dtype) -> np.ndarray:
        out = np.empty((self.n_attributes, self.n_instances), dtype=dtype)
        top = int(np.iinfo(dtype).max)
        if self.X.size < _SMALL:  # small: numpy, without loading a compiled kernel
            codes = self.codes()
            out[:] = np.where((codes < MISSING_CODE) | (codes > top), MISSING_CODE - 1, codes).T
            return out
        from workbench.data.gather import column_codes, row_runs  # numba: not on import

        column_codes(*row_runs(self.X), self.n_instances, MISSING_CODE, top, out)
        return out

    def __getstate__(self) -> dict:
        """Pickled without what it keeps of itself (codes, its rows of known class, its
        empty header): a worker makes its own."""
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_kept_codes", "_known_classes", "empty")}

    def _require_nominal(self) -> None:
        if not self.is_all_nominal:
            names = ", ".join(self.attributes[i].name for i in self.numeric_indices[:5])
            raise WorkbenchError(
                f"{self.source or self.name}: numeric attribute(s) {names} present; "
                "this stage needs all-nominal data (discretise first)"
            )

    def has_class(self) -> np.ndarray:
        """Boolean mask of rows whose class is known."""
        return self.y >= 0

    # ----- derivation --------------------------------------------------------------------
    def take(self, rows: Sequence[int] | np.ndarray) -> "Dataset":
        """A new Dataset with the given rows (indices or boolean mask), same header."""
        rows = np.asarray(rows)
        return _dc_replace(self, X=self.X[rows], y=self.y[rows])

    @cached_property
    def _known_classes(self) -> "Dataset | None":
        """Its rows of known class, None when that is every row (not a reference to itself:
        the cycle would keep it until a garbage collection, a stream's chunks piling up)."""
        mask = self.has_class()
        return None if bool(mask.all()) else self.take(mask)

    def without_missing_class(self) -> "Dataset":
        """Rows whose class is known (SPEC: missing-class rows are ignored everywhere);
        found once per Dataset (every learner fitted on it asks)."""
        rows = self._known_classes
        return self if rows is None else rows

    @cached_property
    def empty(self) -> "Dataset":
        """This header with no rows — what a fitted learner keeps to check test data
        against — made once per Dataset (every learner fitted on it asks)."""
        return self.take(np.zeros(0, dtype=np.int64))

    def training_rows(self) -> "Dataset":
        """The rows a learner is trained on (known class); none at all is an error, since a
        model of no data would only output its smoothing prior."""
        rows = self.without_missing_class()
        if rows.n_instances == 0:
            raise WorkbenchError(
                f"{self.source or self.name}: no training rows with a known class "
                f"({self.n_instances} row(s), every class value missing)")
        return rows

    def replace(self, **changes) -> "Dataset":
        """A copy with some fields replaced (e.g. attributes + X after discretisation)."""
        return _dc_replace(self, **changes)

    def with_missing(self, flags: Sequence[bool]) -> "Dataset":
        """This data set with `Attribute.has_missing` set from `flags` (one per attribute),
        e.g. from a pass over a whole file read in chunks."""
        return self.replace(attributes=tuple(_dc_replace(a, has_missing=bool(f))
                                             for a, f in zip(self.attributes, flags)))

    def with_missing_flags_of(self, *others: "Dataset") -> "Dataset":
        """This data set with `Attribute.has_missing` set wherever it is set here or in one
        of `others` (same header): the halves of one split declare `?` alike."""
        flags = [a.has_missing or any(o.attributes[i].has_missing for o in others)
                 for i, a in enumerate(self.attributes)]
        if flags == [a.has_missing for a in self.attributes]:
            return self
        return self.replace(attributes=tuple(_dc_replace(a, has_missing=f)
                                             for a, f in zip(self.attributes, flags)))

    def same_header(self, other: "Dataset") -> bool:
        """True if both have identical attributes (names, kinds, declared values) and class."""
        return (
            self.attributes == other.attributes
            and self.class_attribute == other.class_attribute
        )

    def header_difference(self, other: "Dataset") -> str | None:
        """A one-line description of the first header difference, or None if identical."""
        if (self.attributes == other.attributes  # (one comparison in C when alike)
                and self.class_attribute == other.class_attribute):
            return None
        if len(self.attributes) != len(other.attributes):
            return f"{len(self.attributes)} vs {len(other.attributes)} attributes"
        for i, (a, b) in enumerate(zip(self.attributes, other.attributes)):
            if a != b:
                return f"attribute {i + 1} differs: {_describe(a)} vs {_describe(b)}"
        if self.class_attribute != other.class_attribute:
            return (
                f"class attribute differs: {_describe(self.class_attribute)} vs "
                f"{_describe(other.class_attribute)}"
            )
        return None

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, n={self.n_instances}, d={self.n_attributes}, "
            f"K={self.n_classes})"
        )


def _describe(a: Attribute) -> str:
    if a.values is None:
        return f"'{a.name}' numeric"
    shown = ",".join(a.values[:6]) + (",..." if len(a.values) > 6 else "")
    return f"'{a.name}' {{{shown}}}"
