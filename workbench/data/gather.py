"""Compiled conversions for the data layer: dictionary codes of many columns into one
row-major value matrix (the loaders), and a value matrix into int codes (`Dataset.codes`)
— numba, imported only when used, so start-up stays light."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from workbench.jit import numba
import numpy as np

_ROWS = 256  # rows per block: a block's rows are written whole, reading each column's codes
PARALLEL_ROWS = 1 << 18  # from this many rows, row parts are gathered on threads
"""Below it a thread's start costs more than its share; the writes are disjoint, so the
matrix is the same on any number of threads."""


def map_columns(fn, cols: list, rows: int) -> list:
    """`fn` of each column of a table of `rows` rows, on two threads from `PARALLEL_ROWS`
    rows (Arrow's compute functions and the compiled kernels release the GIL); results in
    column order."""
    if rows < PARALLEL_ROWS or len(cols) < 2:
        return [fn(c) for c in cols]
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(fn, cols))


@numba.njit(cache=True, nogil=True)
def gather_rows(out: np.ndarray, dest: np.ndarray, luts: np.ndarray,
                idx: np.ndarray, r0: int, r1: int) -> None:
    """out[r, dest[j]] = luts[j, idx[j, r]] for every column j and row r0 <= r < r1, row
    by row within blocks of rows (each output row written in one go; faster here than
    column by column)."""
    m = idx.shape[0]
    for b0 in range(r0, r1, _ROWS):
        b1 = min(r1, b0 + _ROWS)
        for r in range(b0, b1):
            for j in range(m):
                out[r, dest[j]] = luts[j, idx[j, r]]


@numba.njit(cache=True, nogil=True)
def used_codes(idx: np.ndarray, size: int) -> np.ndarray:
    """Which of the codes 0 … size − 1 occur in `idx` (one pass); empty when a code is
    outside that range (the caller reports it)."""
    used = np.zeros(size, dtype=np.bool_)
    for r in range(idx.shape[0]):
        v = idx[r]
        if v < 0 or v >= size:
            return np.zeros(0, dtype=np.bool_)
        used[v] = True
    return used


@numba.njit(cache=True, nogil=True)
def nominal_codes(X: np.ndarray, missing: int) -> np.ndarray:
    """int32 codes of a float value matrix (any strides) in one pass; NaN → `missing`."""
    n, d = X.shape
    out = np.empty((n, d), dtype=np.int32)
    for r in range(n):
        for j in range(d):
            v = X[r, j]
            out[r, j] = missing if np.isnan(v) else np.int32(v)
    return out


_CODE_TILE = 1 << 14  # values of X per tile of `column_codes`


@numba.njit(cache=True, nogil=True)
def column_codes(flat: np.ndarray, s: int, n: int, missing: int, top: int,
                 out: np.ndarray) -> None:
    """out[j, r] = code of row r's value j, flat[r · s + j] (NaN → `missing`; a value
    outside [0, top], which `out`'s type might not hold, → missing − 1, for the caller's
    range check to report): the (d, n) attribute-major layout the counting kernels read,
    from the rows of a value matrix s values apart (`row_runs`: a loaded file's X is a
    view of its rows with the class beside them). A tile of rows is converted as one flat
    run in memory order (a loop the compiler vectorises; the values between rows too) into
    a buffer of `out`'s type, then each of its columns copied out: the transposition moves
    1-byte codes, not 8-byte values (adult's 24,421 × 14 values 0.30 -> 0.21 ms; before
    that, converting row by row into d output streams, 0.39). The range test is two
    comparisons and the NaN test a self-comparison, combined without branches (`np.isnan`
    and a chained comparison: 0.25 ms here, connect-4's 1.08; this form 0.16 and 0.71)."""
    d = out.shape[0]
    B = max(8, _CODE_TILE // max(s, 1))
    buf = np.empty(B * s, dtype=out.dtype)
    for r0 in range(0, n, B):
        nb = min(n, r0 + B) - r0
        src = flat[r0 * s: r0 * s + (nb - 1) * s + d]
        for i in range(src.shape[0]):
            v = src[i]
            c = v if (v >= 0.0) & (v <= top) else missing - 1  # (NaN fails both tests)
            buf[i] = c if v == v else missing
        for j in range(d):
            dst = out[j, r0:r0 + nb]
            for r in range(nb):
                dst[r] = buf[r * s + j]


def row_runs(X: np.ndarray) -> tuple[np.ndarray, int]:
    """(flat, s): X's values as one read-only run in memory order, row r's at flat[r · s:
    r · s + d] — a view when X's rows are each contiguous and at most about as far apart
    again as long (C order, or a C matrix's first columns, as a loaded file's X is: no
    copy of its 8-byte values before they are coded: letter's 1 M rows 0.031 -> 0.019 s,
    connect-4's 0.085 -> 0.052, and 128 / 336 MB not allocated), else
    a C-ordered copy (s = d; rows far apart would convert the values between them too)."""
    n, d = X.shape
    item = X.itemsize
    if n > 0 and X.strides[1] == item and X.strides[0] % item == 0 and \
            d * item <= X.strides[0] <= (2 * d + 8) * item:  # (more between rows: a copy)
        s = X.strides[0] // item
        flat = np.lib.stride_tricks.as_strided(X, shape=((n - 1) * s + d,),
                                               strides=(item,), writeable=False)
        return flat, s
    flat = np.ascontiguousarray(X).reshape(-1)
    flat.setflags(write=False)  # (one compiled signature: read-only, as the views)
    return flat, d


def fill_columns(out: np.ndarray, dest: list[int], luts: list[list[float]],
                 idxs: list[np.ndarray]) -> None:
    """`gather_rows` for per-column lookups of different lengths and code arrays: column j
    writes luts[j][idxs[j][r]] into out[r, dest[j]]. The codes are staged in the narrowest
    integer type their lookups need; large tables are gathered by two threads."""
    if not idxs:
        return
    width = max(len(t) for t in luts)
    lut = np.array([list(t) + [np.nan] * (width - len(t)) for t in luts], dtype=np.float64)
    stage = np.empty((len(idxs), out.shape[0]),
                     dtype=np.int8 if width <= 128 else np.int16 if width <= 1 << 15 else np.int32)
    cols = np.array(dest, dtype=np.int64)

    def part(r0: int, r1: int) -> None:
        for j, idx in enumerate(idxs):
            stage[j, r0:r1] = idx[r0:r1]
        gather_rows(out, cols, lut, stage, r0, r1)

    n = out.shape[0]
    if n < PARALLEL_ROWS:
        part(0, n)
        return
    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(part, n // 2, n)
        part(0, n // 2)
        other.result()


@numba.njit(cache=True, nogil=True)
def group_rows(X: np.ndarray, y: np.ndarray, key: np.ndarray, k: int, X_out: np.ndarray,
               y_out: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Rows of X and y grouped by `key` (0 … k − 1), in row order within a group — a
    stable counting sort that reads each row once and writes it once where numpy's argsort
    and fancy take wrote an index and gathered rows at random: X_out[p], y_out[p] =
    X[order[p]], y[order[p]]. Returns the k + 1 bounds of the groups."""
    n, d = X.shape
    bounds = np.zeros(k + 1, dtype=np.int64)
    for r in range(n):
        bounds[key[r] + 1] += 1
    for f in range(k):
        bounds[f + 1] += bounds[f]
    at = bounds[:k].copy()
    for r in range(n):
        f = key[r]
        p = at[f]
        at[f] = p + 1
        for j in range(d):
            X_out[p, j] = X[r, j]
        y_out[p] = y[r]
        order[p] = r
    return bounds


@numba.njit(cache=True, nogil=True)
def pack_rows(X: np.ndarray, y: np.ndarray, nominal: np.ndarray, numeric: np.ndarray,
              codes: np.ndarray, numbers: np.ndarray, classes: np.ndarray, top: int) -> None:
    """A value matrix in `replay`'s compact form: codes[r, i] = X[r, nominal[i]] as an
    unsigned integer (NaN → `top`, the type's largest value), numbers[r, i] =
    X[r, numeric[i]], classes[r] = y[r] (−1 → `top`)."""
    for r in range(X.shape[0]):
        for i in range(nominal.shape[0]):
            v = X[r, nominal[i]]
            codes[r, i] = top if np.isnan(v) else v
        for i in range(numeric.shape[0]):
            numbers[r, i] = X[r, numeric[i]]
        classes[r] = top if y[r] < 0 else y[r]


@numba.njit(cache=True, nogil=True)
def unpack_rows(codes: np.ndarray, numbers: np.ndarray, classes: np.ndarray,
                nominal: np.ndarray, numeric: np.ndarray, X: np.ndarray,
                y: np.ndarray, top: int) -> None:
    """`pack_rows` undone, bit for bit: X[r, nominal[i]] = codes[r, i] (`top` → NaN),
    X[r, numeric[i]] = numbers[r, i], y[r] = classes[r] (`top` → −1). All-nominal rows
    in column order are converted without the column indirection (vectorised: 2.3× as
    fast)."""
    d = nominal.shape[0]
    straight = numeric.shape[0] == 0 and X.shape[1] == d
    for i in range(d):
        straight = straight and nominal[i] == i
    if straight:
        for r in range(X.shape[0]):
            for i in range(d):
                c = codes[r, i]
                X[r, i] = np.nan if c == top else np.float64(c)
            c = classes[r]
            y[r] = -1 if c == top else np.int64(c)
        return
    for r in range(X.shape[0]):
        for i in range(nominal.shape[0]):
            c = codes[r, i]
            X[r, nominal[i]] = np.nan if c == top else np.float64(c)
        for i in range(numeric.shape[0]):
            X[r, numeric[i]] = numbers[r, i]
        c = classes[r]
        y[r] = -1 if c == top else np.int64(c)
