"""Compiled conversions for the data layer: dictionary codes of many columns into one
row-major value matrix (the loaders), and a value matrix into int codes (`Dataset.codes`)
— numba, imported only when used, so start-up stays light."""

from __future__ import annotations

import numba
import numpy as np

_ROWS = 2048  # rows per block: a block of the output stays in cache while each column fills it


@numba.njit(cache=True, nogil=True)
def gather_rows(out: np.ndarray, dest: np.ndarray, luts: np.ndarray,
                idx: np.ndarray) -> None:
    """out[r, dest[j]] = luts[j, idx[j, r]] for every column j, block by block of rows."""
    n = idx.shape[1]
    for r0 in range(0, n, _ROWS):
        r1 = min(n, r0 + _ROWS)
        for j in range(idx.shape[0]):
            c = dest[j]
            for r in range(r0, r1):
                out[r, c] = luts[j, idx[j, r]]


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


@numba.njit(cache=True, nogil=True)
def column_codes(X: np.ndarray, missing: int, top: int, out: np.ndarray) -> None:
    """out[j, r] = code of X[r, j] (NaN → `missing`; a value outside [0, top], which `out`'s
    type might not hold, → missing − 1, for the caller's range check to report): the (d, n)
    attribute-major layout the counting kernels read, from the row-major value matrix: read
    in order, each row's codes go to d output streams (faster here than column by column)."""
    n, d = X.shape
    for r in range(n):
        row = X[r]
        for j in range(d):
            v = row[j]
            out[j, r] = missing if np.isnan(v) else v if 0 <= v <= top else missing - 1


def fill_columns(out: np.ndarray, dest: list[int], luts: list[list[float]],
                 idxs: list[np.ndarray]) -> None:
    """`gather_rows` for per-column lookups of different lengths and code arrays: column j
    writes luts[j][idxs[j][r]] into out[r, dest[j]]."""
    if not idxs:
        return
    width = max(len(t) for t in luts)
    lut = np.array([list(t) + [np.nan] * (width - len(t)) for t in luts], dtype=np.float64)
    gather_rows(out, np.array(dest, dtype=np.int64), lut,
                np.stack(idxs).astype(np.int32, copy=False))
