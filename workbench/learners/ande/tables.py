"""How the AnDE kernels see the fitted model: the count tables and the estimation inputs.

`Tables` bundles `AnDECounts` (block store arrays, level layout, missing-child blocks) and
`Inputs` the per-model choices — m, the frequency limit F, per-parent-set weights, and
which attributes may act as parents and as children — so a kernel takes two arguments
instead of twenty, and weighting or attribute selection are inputs, not kernel forks.
The helpers below are inlined into every kernel: each table read is written once.
"""

from __future__ import annotations

from collections import namedtuple

from workbench.jit import ZERO, numba
import numpy as np

from workbench.learners.counting.ande import AnDECounts
from workbench.learners.counting.layout import KIND_DENSE, lookup_sparse

Tables = namedtuple("Tables", ["kind", "off", "vbase", "dense", "skeys", "svals", "lbase",
                               "binom", "miss_base", "cards", "K"])
Tables.__doc__ = """The count tables of `AnDECounts` as numba-readable arrays.

block id of a sorted l-combination s = lbase[l] + rank(s); missing-child block of parent set
s and child c = miss_base[l, c] + rank(s) (−1: c never missing)."""

Inputs = namedtuple("Inputs", ["m", "F", "ptot", "wts", "parent_ok", "child_ok", "N",
                               "class_counts", "nb_den"])
Inputs.__doc__ = """What a model adds to the counts: m-estimate weight m, frequency limit F,
ptot[b] = rows with block b's attributes all present (N − miss(s)), wts[b] = weight of parent
set b (1.0 unweighted; a used set of weight 0 is dropped unless all are 0, then all count
equally), per attribute whether it may be in a parent set / act as a child, and naive
Bayes' inputs: N, #y and nb_den[c, y] = #y − #(y, x_c ?)."""

Work = namedtuple("Work", ["cnt", "inv", "used", "prod", "lacc"])
Work.__doc__ = """Per (parent set, instance, class) scoring state: #(y, x_s), 1/(#(y, x_s) + m),
whether the set is used, the running product of child factors and its log overflow."""


def tables_of(counts: AnDECounts) -> Tables:
    """The numba view of fitted counts."""
    return Tables(*counts.store.arrays(), counts.levels.base, counts.binom, counts.miss_base,
                  counts.cards, int(counts.K))


def new_work(n_sets: int, batch: int, K: int) -> Work:
    """Scoring workspace for `n_sets` parent sets × `batch` instances."""
    shape = (max(n_sets, 1), batch, K)
    return Work(np.empty(shape, dtype=np.int64), np.empty(shape), np.empty(shape[:2], np.bool_),
                np.empty(shape), np.empty(shape))


@numba.njit(cache=True, nogil=True, inline="always")
def largest(a):
    """The largest element of a non-empty 1-D array (a loop: numba's ``ndarray.max`` brings
    a generic comparator and ``np.take``, over a second of compiling at first use)."""
    top = a[0]
    for i in range(1, a.shape[0]):
        if a[i] > top:
            top = a[i]
    return top


@numba.njit(cache=True, nogil=True, inline="always")
def insert_sorted(idx, lev, c, out):
    """out[0:lev + 1] = sorted(idx[0:lev] ∪ {c}) for sorted idx without c (a parent set and
    a child: the attributes of their block); returns c's position in out."""
    u = 0
    pos = -1
    for t in range(lev):
        if pos < 0 and c < idx[t]:
            out[u] = c
            pos = u
            u += 1
        out[u] = idx[t]
        u += 1
    if pos < 0:
        out[lev] = c
        pos = lev
    return pos


@numba.njit(cache=True, nogil=True, inline="always")
def cell(tb, attrs, l, X, r):
    """Index of row r's value combination on attributes attrs[0:l] within their block."""
    loc = ZERO
    for t in range(l):
        a = attrs[t]
        loc = loc * tb.cards[a] + X[r, a]
    return loc


@numba.njit(cache=True, nogil=True)
def _read_sparse(tb, b, loc0, out):
    lookup_sparse(tb.kind, tb.vbase, tb.skeys, tb.svals, b, loc0, tb.K, out)


@numba.njit(cache=True, nogil=True, inline="always")
def read(tb, b, loc, out):
    """out[y] = #(value combination `loc` of block b, y).

    Speed rules for every kernel (numba's reference counts are atomic instructions, which
    stall the pipeline; each costs more than a row's multiply-add):
    - pass the namedtuples (`tb`, `ws`) whole: an array taken out of a tuple and handed to
      a call is reference-counted (a helper in a hot loop ~10× slower on adult's NB);
    - an inlined helper that takes arrays and has a loop or a branch pays two reference
      counts per array at every call (this one too, when its sparse branch is compiled
      in), and a regular call pays them at entry: in a loop over rows or children, write
      the reads out (as `parentmajor._fill_set` does) or call once per batch of rows;
    - take a tuple's arrays out once, before the loops (``dense = tb.dense``);
    - no array allocated, sliced or viewed (``out[r]``) per row."""
    K = tb.K
    if tb.kind[b] == KIND_DENSE:
        o = tb.off[b] + loc * K
        for y in range(K):
            out[y] = tb.dense[o + y]
    else:
        _read_sparse(tb, b, loc * K, out)


@numba.njit(cache=True, nogil=True, inline="always")
def read_row(tb, b, attrs, l, X, r, out):
    """Row r's counts in block b (attributes attrs[0:l]); a value unseen in training reads
    zeros. (No "unseen" shortcut: a branch around an inlined helper defeats numba's
    reference-count pruning and costs ~10×.)"""
    read(tb, b, cell(tb, attrs, l, X, r), out)


@numba.njit(cache=True, nogil=True)
def read_call(tb, b, loc, out):
    """`read` as a real call, for call sites inside conditional code (where an inlined
    helper taking `tb` would pay its reference counts)."""
    read(tb, b, loc, out)
