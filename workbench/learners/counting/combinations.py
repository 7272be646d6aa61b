"""Attribute combinations in colex order: the block order of every count table (a sorted
combination's rank is ``Σ C(a_t, t + 1)``)."""

from __future__ import annotations

from functools import lru_cache
from math import comb

import numpy as np

from workbench.jit import numba


@numba.njit(cache=True, nogil=True)
def next_colex(idx, l, na):
    """Advance idx[0:l] to the next l-subset of range(na) in colex order; False when
    exhausted. Colex order is the block order of every count table (see `AnDECounts`)."""
    i = 0
    while i < l:
        lim = idx[i + 1] if i + 1 < l else na
        if idx[i] + 1 < lim:
            idx[i] += 1
            for t in range(i):
                idx[t] = t
            return True
        i += 1
    return False


@numba.njit(cache=True, nogil=True, inline="always")
def first_ints(n):
    """``np.arange(n)`` as int64, written out: numba compiles its ``np.arange`` per argument
    type with max, int and empty overloads of its own (tenths of a second each at first
    use)."""
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = i
    return out


@numba.njit(cache=True, nogil=True)
def _colex_combinations(d, l):
    """All l-subsets of range(d) as rows of an (C(d,l), l) array, in colex order."""
    n = 1
    for i in range(l):
        n = n * (d - i) // (i + 1)
    out = np.empty((n, max(l, 1)), dtype=np.int64)
    if l == 0 or n == 0:
        return out[:n, :l]
    c = first_ints(l)
    for r in range(n):
        for t in range(l):
            out[r, t] = c[t]
        next_colex(c, l, d)
    return out


def colex_combinations(d: int, l: int) -> np.ndarray:
    """All l-subsets of range(d), colex order: row r has rank r (`rank = Σ C(a_t, t+1)`)."""
    return _colex_combinations(int(d), int(l)).reshape(-1, l)


@lru_cache(maxsize=64)
def binomial_table(d: int, lmax: int) -> np.ndarray:
    """binom[a, t] = C(a, t) for a ≤ d, t ≤ lmax (int64, read-only: one table per shape
    for the process, not (d + 1)·(lmax + 1) `comb` calls per model), for colex ranks."""
    out = np.zeros((d + 1, lmax + 1), dtype=np.int64)
    for a in range(d + 1):
        for t in range(lmax + 1):
            out[a, t] = comb(a, t)
    out.setflags(write=False)
    return out
