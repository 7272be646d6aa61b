"""Discretisation of numeric attributes (SPEC §1): MDL (Fayyad & Irani) and equal frequency.

Method strings (`check_method`): ``"mdl"``, ``"ef:B"`` (equal frequency, B ≥ 2 bins),
``"none"`` (identity). `fit_discretizer` learns cut points on training data only (rows with
a missing class are ignored); `Discretizer.transform` applies them to any data set with the
same header. A value v goes to bin ``#{cuts c : c < v}`` (v equal to a cut goes to the lower
bin); missing stays missing; nominal attributes pass through untouched. Bins are labelled as
Weka labels them: ``'(-inf-5.55]'``, ``'(5.55-6.15]'``, ``'(6.15-inf)'`` and ``'All'``
when an attribute has no cut (it stays, with a single value).

The pure functions `mdl_cuts` and `equal_frequency_cuts` work on one attribute's values.

Streams: ``"ida:B:S"`` and ``"idaw:B:S"`` are `IncrementalDiscretizer`s (B bins, samples of
S values per attribute): incremental quantile discretisation that follows a stream (IDA,
IDAW; below). Fitted on a training set they take its rows in order.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Sequence

import numpy as np

from workbench.data.dataset import Attribute, Dataset
from workbench.data.sources import reservoir_slots
from workbench.errors import WorkbenchError

__all__ = [
    "IncrementalDiscretizer",
    "check_method",
    "parse_method",
    "mdl_cuts",
    "equal_frequency_cuts",
    "bin_labels",
    "Discretizer",
    "fit_discretizer",
]

_RE_EF = re.compile(r"^ef:([0-9]+)$")
_RE_IDA = re.compile(r"^(idaw?):([0-9]+):([0-9]+)$")
_LN2 = math.log(2.0)
_TIE_BITS = 1e-12  # entropy differences below this (bits) are rounding, i.e. ties


# ----- method strings --------------------------------------------------------------------
def parse_method(spec: str, where: str = "discretisation method"):
    """``"mdl"`` → ("mdl", None); ``"ef:5"`` → ("ef", 5); ``"none"`` → ("none", None);
    ``"ida:5:1000"`` → ("ida", (5, 1000)); ``"idaw:5:500"`` → ("idaw", (5, 500))."""
    if isinstance(spec, str):
        if spec in ("mdl", "none"):
            return spec, None
        m = _RE_EF.match(spec)
        if m and int(m.group(1)) >= 2:
            return "ef", int(m.group(1))
        m = _RE_IDA.match(spec)
        if m and int(m.group(2)) >= 2 and int(m.group(3)) >= 1:
            return m.group(1), (int(m.group(2)), int(m.group(3)))
    raise WorkbenchError(
        f"{where}: unknown discretisation method {spec!r} "
        "(expected 'mdl', 'ef:B' with B >= 2 bins, e.g. 'ef:5', 'ida:B:S' or 'idaw:B:S' "
        "(incremental, B bins, S values per attribute), or 'none')"
    )


def is_incremental(spec: str) -> bool:
    """An IDA / IDAW method string (cut points that follow a stream)."""
    return parse_method(spec)[0] in ("ida", "idaw")


def check_method(spec: str, where: str) -> None:
    """Raise `WorkbenchError` naming `where` unless `spec` is a valid method string."""
    parse_method(spec, where)


# ----- MDL (Fayyad & Irani 1993, as Weka's supervised Discretize default) ----------------
def _xlogx_table(n: int) -> np.ndarray:
    """t[i] = i·ln(i) for i = 0..n (t[0] = 0): entropies are built from integer counts."""
    i = np.arange(n + 1, dtype=np.float64)
    out = np.zeros(n + 1, dtype=np.float64)
    out[1:] = i[1:] * np.log(i[1:])
    return out


def _entropy(counts: np.ndarray, xlogx: np.ndarray) -> float:
    """Class entropy (bits) of one count vector: (n ln n − Σ c ln c) / (n ln 2)."""
    n = int(counts.sum())
    if n == 0:
        return 0.0
    acc = 0.0
    for c in counts.tolist():
        acc -= xlogx[c]
    acc += xlogx[n]
    return acc / (n * _LN2)


def mdl_cuts(values: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray,
             n_classes: int | None = None) -> list[float]:
    """Fayyad–Irani MDL cut points (ascending) of one numeric attribute.

    Rows whose value is NaN or whose label is negative (missing class) are ignored.
    Candidate cuts lie between adjacent distinct sorted values (at their midpoint); in each
    subset the cut with the smallest weighted class entropy is chosen (first minimum in
    sorted order) and accepted iff ``gain > (log2(N−1) + log2(3^k − 2) − (k·E − k1·E1 −
    k2·E2)) / N`` (k's = classes present); accepted cuts are refined recursively on both
    sides. Entropies are computed from integer counts (n·ln n tables) with one fixed
    formula; candidates whose entropies differ by less than 1e-12 bits (floating-point
    rounding of mathematically equal values) are tied, and the first of them wins.
    """
    v = np.asarray(values, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    if v.shape != y.shape:
        raise ValueError(f"values {v.shape} and labels {y.shape} differ in shape")
    keep = ~np.isnan(v) & (y >= 0)
    v, y = v[keep], y[keep]
    n = v.size
    if n < 2:
        return []
    k_total = int(y.max()) + 1
    if n_classes is not None:
        k_total = max(k_total, int(n_classes))
    order = np.argsort(v, kind="stable")
    v, y = v[order], y[order]
    # cum[i] = class counts of the first i sorted rows
    cum = np.zeros((n + 1, k_total), dtype=np.int64)
    np.add.at(cum[1:], (np.arange(n), y), 1)
    np.cumsum(cum, axis=0, out=cum)
    xlogx = _xlogx_table(n)
    # split position s (rows left of the cut) is a candidate iff v[s-1] < v[s]
    is_boundary = np.zeros(n + 1, dtype=bool)
    is_boundary[1:n] = v[:-1] < v[1:]
    boundaries = np.flatnonzero(is_boundary)
    if boundaries.size == 0:
        return []

    cuts: list[float] = []
    stack = [(0, n)]
    while stack:
        lo, hi = stack.pop()
        a = np.searchsorted(boundaries, lo + 1)
        b = np.searchsorted(boundaries, hi)  # candidates s with lo < s < hi
        if a >= b:
            continue
        s = boundaries[a:b]
        split = _best_mdl_split(lo, hi, s, cum, xlogx)
        if split is None:
            continue
        cuts.append((v[split - 1] + v[split]) / 2.0)
        stack.append((lo, split))
        stack.append((split, hi))
    cuts.sort()
    return [float(c) for c in cuts]


def _best_mdl_split(lo: int, hi: int, s: np.ndarray, cum: np.ndarray,
                    xlogx: np.ndarray) -> int | None:
    """The accepted split position in rows [lo, hi) among candidates `s`, or None."""
    n_s = hi - lo
    total = cum[hi] - cum[lo]
    left = cum[s] - cum[lo]  # (m, K)
    right = total - left
    n_left = s - lo
    n_right = hi - s
    # weighted conditional entropy, accumulated in one fixed order (see mdl_cuts)
    acc = np.zeros(s.size, dtype=np.float64)
    for c in range(left.shape[1]):
        acc += xlogx[left[:, c]]
    acc -= xlogx[n_left]
    for c in range(right.shape[1]):
        acc += xlogx[right[:, c]]
    acc -= xlogx[n_right]
    cond = -acc / (n_s * _LN2)
    # first minimum in sorted order; entropies equal up to rounding count as equal, so a
    # mathematical tie (e.g. mirrored count tables, summed in another order) goes to the
    # first candidate rather than to whichever rounded lower
    best = int(np.flatnonzero(cond <= cond.min() + _TIE_BITS)[0])
    prior = _entropy(total, xlogx)
    if not cond[best] < prior:
        return None
    gain = prior - float(cond[best])
    lc, rc = left[best], right[best]
    k = int(np.count_nonzero(total))
    k1 = int(np.count_nonzero(lc))
    k2 = int(np.count_nonzero(rc))
    e1 = _entropy(lc, xlogx)
    e2 = _entropy(rc, xlogx)
    delta = math.log2(3**k - 2) - (k * prior - k1 * e1 - k2 * e2)
    threshold = (math.log2(n_s - 1) + delta) / n_s
    if gain > threshold:
        return int(s[best])
    return None


# ----- equal frequency -------------------------------------------------------------------
def equal_frequency_cuts(values: Sequence[float] | np.ndarray, bins: int) -> list[float]:
    """Equal-frequency cut points (ascending) of one attribute, at most ``bins − 1``.

    The rule (in the spirit of Weka's unsupervised ``Discretize -F -B bins``): sort the n
    non-missing values; a *boundary* is a position j (j rows to its left, 0 < j < n) with
    v[j−1] < v[j], and its cut is the midpoint (v[j−1] + v[j]) / 2. Starting with the whole
    range, repeat while fewer than ``bins − 1`` cuts are placed:

    1. the target size is t = (rows not yet binned) / (bins still to fill);
    2. take the first boundary j whose bin would hold c = j − start ≥ t rows, and the
       boundary p just before it (if it lies after the start of the current bin);
    3. cut at p if it is strictly closer to the target (t − (p − start) < c − t), else at
       j (ties go to j); the new bin starts there and the target is recomputed;
    4. if no boundary reaches the target, cut at the last boundary of the remaining rows
       (if any) and stop.

    So an attribute with fewer distinct values gets fewer cuts, never a cut inside a run of
    equal values, and one distinct value gets none.
    """
    if bins < 1:
        raise ValueError("bins must be >= 1")
    v = np.asarray(values, dtype=np.float64)
    v = np.sort(v[~np.isnan(v)])
    n = v.size
    if n < 2 or bins < 2:
        return []
    boundaries = np.flatnonzero(v[:-1] < v[1:]) + 1  # j in 1..n-1
    positions: list[int] = []
    start = 0
    while len(positions) < bins - 1:
        target = (n - start) / (bins - len(positions))
        idx = int(np.searchsorted(boundaries, start + target, side="left"))
        prev = int(boundaries[idx - 1]) if idx > 0 and boundaries[idx - 1] > start else None
        if idx >= boundaries.size:
            if prev is not None:
                positions.append(prev)
            break
        j = int(boundaries[idx])
        if prev is not None and (target - (prev - start)) < ((j - start) - target):
            chosen = prev
        else:
            chosen = j
        positions.append(chosen)
        start = chosen
    return [float((v[j - 1] + v[j]) / 2.0) for j in positions]


# ----- labels ----------------------------------------------------------------------------
def _format_cut(c: float, decimals: int | None) -> str:
    if decimals is None:
        return repr(float(c))
    text = f"{c:.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def bin_labels(cuts: Sequence[float]) -> tuple[str, ...]:
    """Weka-style interval labels for the bins defined by ascending `cuts`.

    ``()`` → ``('All',)``; ``(5.55, 6.15)`` → ``('(-inf-5.55]', '(5.55-6.15]',
    '(6.15-inf)')``. Cut values are printed with up to 6 decimals as Weka does; if that
    would make two labels equal, full precision is used instead.
    """
    if len(cuts) == 0:
        return ("All",)
    for decimals in (6, None):
        t = [_format_cut(c, decimals) for c in cuts]
        labels = [f"(-inf-{t[0]}]"]
        labels += [f"({t[i - 1]}-{t[i]}]" for i in range(1, len(t))]
        labels.append(f"({t[-1]}-inf)")
        if len(set(labels)) == len(labels):
            return tuple(labels)
    return tuple(labels)  # pragma: no cover - repr of distinct floats is distinct


# ----- the fitted discretiser ------------------------------------------------------------
@dataclass(frozen=True)
class Discretizer:
    """Cut points learned on a training set + the header they apply to.

    ``cuts`` maps each numeric attribute's name to its ascending cut points (empty for
    method "none", where `transform` is the identity).
    """

    method: str
    attributes: tuple[Attribute, ...]
    class_attribute: Attribute
    cuts: dict[str, list[float]] = field(default_factory=dict)
    source: str = ""

    @cached_property
    def output_attributes(self) -> tuple[Attribute, ...]:
        """The header after transformation (numeric attributes → nominal bins): one tuple
        for every data set transformed, so a learner's header check on them is an identity
        test (comparing musk1's 166 attributes field by field was an eighth of a naive
        Bayes classification)."""
        if self.method == "none":
            return self.attributes
        return tuple(
            Attribute(a.name, bin_labels(self.cuts[a.name]), a.has_missing)
            if a.values is None else a
            for a in self.attributes
        )

    def _check_header(self, data: Dataset) -> None:
        fitted = Dataset(
            name="fitted", attributes=self.attributes, class_attribute=self.class_attribute,
            X=np.empty((0, len(self.attributes))), y=np.empty(0, dtype=np.int64),
        )
        diff = fitted.header_difference(data)
        if diff is not None:
            raise WorkbenchError(
                f"{data.source or data.name}: header differs from the training data the "
                f"discretiser was fitted on ({self.source or 'training data'}): {diff}"
            )

    def transform(self, data: Dataset) -> Dataset:
        """Numeric attributes → bin codes (nominal); missing stays missing; header checked."""
        self._check_header(data)
        if self.method == "none":
            return data
        X = np.array(data.X, dtype=np.float64, copy=True)
        for j, a in enumerate(self.attributes):
            if a.values is not None:
                continue
            col = X[:, j]
            missing = np.isnan(col)
            cuts = np.asarray(self.cuts[a.name], dtype=np.float64)
            codes = np.searchsorted(cuts, col, side="left").astype(np.float64)
            codes[missing] = np.nan
            X[:, j] = codes
        meta = dict(data.meta)
        meta["discretization"] = self.method
        return data.replace(attributes=self.output_attributes, X=X, meta=meta)

    def cuts_json(self) -> dict[str, list[float]]:
        """``{attribute: [cuts...]}`` for every numeric attribute, in header order."""
        return {a.name: list(self.cuts.get(a.name, [])) for a in self.attributes
                if a.values is None}


def fit_discretizer(method: str, train: Dataset, *, sample: int | None = None,
                    seed: int = 0) -> Discretizer:
    """Learn cut points for every numeric attribute of `train` (SPEC §1).

    `method` is "mdl", "ef:B" or "none". Rows with a missing class are ignored. With
    `sample`, the cut points are fitted on a random subset of at most `sample` of those rows
    (drawn without replacement with `seed`; the JMLR 2016 protocol uses ≤ 100,000).
    """
    kind, bins = parse_method(method, "fit_discretizer: method")
    if kind in ("ida", "idaw"):
        return IncrementalDiscretizer(train, bins[0], bins[1], kind == "idaw", seed).update(
            train.without_missing_class())
    data = train.without_missing_class()
    if sample is not None:
        if int(sample) < 1:
            raise WorkbenchError(f"fit_discretizer: sample must be >= 1, got {sample!r}")
        if data.n_instances > sample:
            rng = np.random.default_rng(seed)
            rows = np.sort(rng.choice(data.n_instances, size=int(sample), replace=False))
            data = data.take(rows)
    cuts: dict[str, list[float]] = {}
    if kind != "none":
        for j in train.numeric_indices:
            name = train.attributes[j].name
            if kind == "mdl":
                cuts[name] = mdl_cuts(data.X[:, j], data.y, train.n_classes)
            else:
                assert bins is not None
                cuts[name] = equal_frequency_cuts(data.X[:, j], bins)
    return Discretizer(
        method=method,
        attributes=train.attributes,
        class_attribute=train.class_attribute,
        cuts=cuts,
        source=train.source or train.name,
    )


# ----- incremental discretisation for streams (IDA, IDAW) ------------------------------
class IncrementalDiscretizer:
    """Incremental discretisation for streams: IDA and IDAW (Webb 2014; Webb & Carman's AOARD
    2015 report, §6). Cut points sit at fixed quantiles of a per-attribute sample that follows
    the stream, so a bin keeps its meaning — the k-th quantile bin — while its cut points
    drift, and a learner's count tables keep their shape.

    - **IDA** (``window=False``): each numeric attribute keeps a uniform random sample of at
      most `size` of the non-missing values seen so far (reservoir sampling, algorithm R,
      numpy's generator seeded with `seed`).
    - **IDAW** (``window=True``): the sample is the window of the attribute's last `size`
      non-missing values.
    - The cut points of an attribute are the equal-frequency cuts of its current sample
      (`discretize.equal_frequency_cuts`, `bins` bins); a value v goes to bin #{cuts c < v}.
      Every numeric attribute becomes nominal with the `bins` values ``q1`` … ``qB`` whatever
      the cut points (few distinct values: fewer cuts, the top bins stay empty).
    - Test-then-train: `transform(chunk)` bins a chunk with the current cut points, `update`
      then adds its values to the samples and recomputes the cuts; with chunks of one row this
      is the row-by-row algorithm, with larger chunks the cut points move once per chunk.
    """

    def __init__(self, header: Dataset, bins: int = 5, size: int = 1000,
                 window: bool = False, seed: int = 0) -> None:
        if bins < 2 or size < 1:
            raise WorkbenchError(f"incremental discretisation: bins must be >= 2 and the "
                                 f"sample size >= 1, got bins={bins}, size={size}")
        self.bins, self.size, self.window = int(bins), int(size), bool(window)
        self.header = header
        self.numeric = list(header.numeric_indices)
        self.rng = np.random.default_rng(seed)
        self.sample = {j: np.empty(0) for j in self.numeric}
        self.seen = {j: 0 for j in self.numeric}
        self.cuts: dict[str, list[float]] = {header.attributes[j].name: []
                                             for j in self.numeric}
        labels = tuple(f"q{k + 1}" for k in range(self.bins))
        self.attributes = tuple(Attribute(a.name, labels, a.has_missing) if a.values is None
                                else a for a in header.attributes)

    def transform(self, chunk: Dataset) -> Dataset:
        """The chunk with every numeric attribute binned by the current cut points."""
        X = np.array(chunk.X, dtype=np.float64, copy=True)
        for j in self.numeric:
            col = X[:, j]
            missing = np.isnan(col)
            codes = np.searchsorted(np.asarray(self.cuts[chunk.attributes[j].name]), col,
                                    side="left").astype(np.float64)
            codes[missing] = np.nan
            X[:, j] = codes
        return chunk.replace(attributes=self.attributes, X=X,
                             meta={**chunk.meta, "discretization": self.method})

    @property
    def method(self) -> str:
        return f"{'idaw' if self.window else 'ida'}:{self.bins}:{self.size}"

    def update(self, chunk: Dataset) -> "IncrementalDiscretizer":
        """Add the chunk's values (in row order) to the samples; recompute the cuts."""
        for j in self.numeric:
            values = chunk.X[:, j]
            values = values[~np.isnan(values)]
            if values.size == 0:
                continue
            self.sample[j] = self._window(j, values) if self.window else \
                self._reservoir(j, values)
            self.cuts[chunk.attributes[j].name] = equal_frequency_cuts(self.sample[j],
                                                                       self.bins)
        return self

    def _window(self, j: int, values: np.ndarray) -> np.ndarray:
        self.seen[j] += values.size
        return np.concatenate([self.sample[j], values])[-self.size:]

    def _reservoir(self, j: int, values: np.ndarray) -> np.ndarray:
        fill, rows, slots = reservoir_slots(self.rng, self.seen[j], self.sample[j].size,
                                            self.size, values.size)
        s = np.concatenate([self.sample[j], values[:fill]])
        s[slots] = values[rows]  # in order: a slot hit twice keeps the later value
        self.seen[j] += values.size
        return s
