"""How count tables lay out their cells and how kernels read them.

A block counts ``#(x_a1, …, x_al, y)`` for one ordered tuple of attributes; its cells are
laid out densely as ``((x_a1·|X_a2| + x_a2)·… + x_al)·K + y`` (class innermost, so the K
counts of a value combination are adjacent), or, when the dense size is much larger than
the number of rows, sparsely as sorted ``(virtual key, count)`` pairs. Numba kernels read a
block through `lookup_k` over `BlockStore.arrays()`; codes are stored in `code_dtype`.
"""

from __future__ import annotations

import numpy as np

from workbench.jit import numba

KIND_DENSE = 0
KIND_SPARSE = 1
KIND_EMPTY = 2

SPARSE_MIN_CELLS = 1 << 16
"""Blocks with at most this many cells are always dense."""
SPARSE_ROW_FACTOR = 16
"""A block larger than SPARSE_MIN_CELLS is sparse if its cells exceed this × rows."""


@numba.njit(cache=True, nogil=True)
def block_layout(arr, lens, cards, K, empty, sparse_min, dense_top, vtop, n_sparse, packed,
                 size, kind, off, vbase, sslot):
    """Where new blocks go, in one compiled pass (for `BlockStore.add_blocks`, whose dozens
    of small numpy calls cost a small data set's fit a tenth): block i = the attributes
    ≥ 0 of arr[i] (−1 padding after them), lens[i] = how many → packed[i] = its attributes
    then their cardinalities, size[i] = its cells (0 when empty[i]), kind[i] (empty, dense,
    or sparse above sparse_min cells), off[i] / vbase[i] = where its dense cells / sparse
    keys start after dense_top / vtop, sslot[i] = its sparse slot from n_sparse (else −1).
    Returns the dense cells, sparse cells and sparse blocks added."""
    nb, width = arr.shape
    dtot = 0
    stot = 0
    ns = 0
    for i in range(nb):
        lens[i] = 0
        for t in range(width):
            lens[i] += arr[i, t] >= 0
        cells = 1
        for t in range(width):
            a = arr[i, t]
            c = (cards[a] if cards.shape[0] else 0) if a >= 0 else 1
            if t < lens[i]:
                packed[i, t] = a
                packed[i, lens[i] + t] = c
            cells *= max(c, 0)
        sz = 0 if empty[i] else (cells * K if lens[i] else K)
        size[i] = sz
        kind[i] = KIND_EMPTY if sz == 0 else (KIND_SPARSE if sz > sparse_min else KIND_DENSE)
        off[i] = dense_top + dtot
        vbase[i] = vtop + stot
        sslot[i] = -1
        if kind[i] == KIND_DENSE:
            dtot += sz
        elif kind[i] == KIND_SPARSE:
            stot += sz
            sslot[i] = n_sparse + ns
            ns += 1
    return dtot, stot, ns


@numba.njit(cache=True, nogil=True)
def code_range(codes_t):
    """(lowest, highest) code of each attribute of a (d, n) code matrix, in one pass."""
    d, n = codes_t.shape
    lo = np.zeros(d, dtype=np.int64)
    hi = np.zeros(d, dtype=np.int64)
    for j in range(d):
        x = codes_t[j]  # a row: indexed from 0, so the loop is vectorised
        a = 0
        b = 0
        if n:
            a = x[0]
            b = a
        for r in range(n):
            v = x[r]
            a = min(a, v)
            b = max(b, v)
        lo[j] = a
        hi[j] = b
    return lo, hi


def code_dtype(cardinalities: np.ndarray) -> type:
    """The narrowest signed integer type holding every code (and −1): less for the counting
    kernels to stream per block."""
    top = int(np.max(cardinalities)) if len(cardinalities) else 0
    return np.int8 if top <= 127 else np.int16 if top <= 32767 else np.int32


@numba.njit(cache=True, nogil=True, inline="always")
def first_at_least(keys, key):
    """The first i with keys[i] ≥ key in sorted keys (``np.searchsorted``'s left side),
    written out: numba builds its ``np.searchsorted`` from generic comparators (complex
    numbers' too), a second of compiling at first use."""
    lo = 0
    hi = keys.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def lookup_sparse(kind, vbase, skeys, svals, b, loc0, K, out):
    """`lookup_k` for a sparse or empty block (kept out of line: inlining the search into
    every caller's hot loop makes the dense reads several times slower)."""
    for yy in range(K):
        out[yy] = 0
    if kind[b] != KIND_SPARSE:
        return
    key = vbase[b] + loc0
    i = first_at_least(skeys, key)
    n = skeys.shape[0]
    while i < n and skeys[i] < key + K:
        out[skeys[i] - key] = svals[i]
        i += 1


@numba.njit(cache=True, nogil=True, inline="always")
def lookup_k(kind, off, vbase, dense, skeys, svals, b, loc0, K, out):
    """out[y] = count of cell loc0 + y of block b (loc0 = value-combination index · K)."""
    if kind[b] == KIND_DENSE:
        base = off[b] + loc0
        for yy in range(K):
            out[yy] = dense[base + yy]
    else:
        lookup_sparse(kind, vbase, skeys, svals, b, loc0, K, out)
