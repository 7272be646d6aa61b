"""The shared counting layer for count-based learners (AnDE family, KDB, plugins).

Two levels of API:

* `BlockStore` — generic, additive joint-frequency tables. A *block* is one ordered tuple of
  attributes ``(a_1, …, a_l)`` (optionally with a *condition attribute* c that must be
  **missing** in the row); it counts ``#(x_a1, …, x_al, y)`` over rows where every a_i is
  present (and c is missing, if given). Its cells are laid out densely as
  ``((x_a1·|X_a2| + x_a2)·… + x_al)·K + y`` (class innermost, so the K counts of a value
  combination are adjacent, as in Salem et al.). Blocks are *compact*: one block per
  attribute combination, never slots for impossible same-attribute combinations. A block
  whose dense size Π|X_i|·K is much larger than the number of rows (an ID-like attribute
  such as splice's 3,190-valued instance name) is stored *sparsely* as sorted
  ``(virtual key, count)`` pairs, so tables never blow up. Counting is one pass over the
  rows per call; `add` is additive (chunks give identical counts to one call).
* `AnDECounts` — what the AnDE family needs: class counts, all attribute combinations of
  sizes 1..L (colex order, so a sorted combination's block id is ``level_base[l] +
  rank(comb)``), and, for attributes that have missing values, the "child missing" blocks
  ``#(y, x_s, x_c missing)`` of SPEC §2's denominators. Class-free counts #(x_i) and
  #(x_i, x_j) (subsumption resolution) are the class sums of the level-1 and level-2 blocks.

Numba kernels read the store through `BlockStore.arrays()` (see `lookup_k`).
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from math import comb
from typing import Iterable, Sequence

from workbench.jit import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError

KIND_DENSE = 0
KIND_SPARSE = 1
KIND_EMPTY = 2

SPARSE_MIN_CELLS = 1 << 16
"""Blocks with at most this many cells are always dense."""
SPARSE_ROW_FACTOR = 16
"""A block larger than SPARSE_MIN_CELLS is sparse if its cells exceed this × rows."""

_KEYBUF_CELLS = 1 << 23  # max key buffer entries per counting chunk (64 MB of int64)
_CHUNK_BYTES = 1 << 18  # codes counted per kernel call (an L2's worth)

BITMAP_MAX_CELLS = 1024
"""Dense blocks of at most this many cells (Π|X_i|·K), of 1–3 attributes (1–2 with a
missing-child condition), are counted from per-chunk bit sets of the rows holding each value
and class: a cell's count is the popcount of their AND, 64 rows per word (several words per
instruction where the CPU has vector popcount), instead of one increment per row."""
PARALLEL_MIN_ROWS = 1 << 16
"""`BlockStore.add` with n_jobs > 1 gives each thread at least this many rows."""
PARALLEL_DENSE_BYTES = 1 << 28
"""... and counts single-threaded when the threads' extra copies of the dense cells would
take more than this."""
_BITMAP_BYTES = 1 << 22  # bit sets of one bitmap chunk at most (4 MB measured best here)
_BITMAP_ROWS = 1 << 15  # rows per bitmap chunk at most (a multiple of 64)


# ----- numba kernels ---------------------------------------------------------------------
@numba.njit(cache=True, nogil=True, error_model="numpy")
def _count_kernel(codes_t, y, K, battrs, blen, bcond, kind, off, vbase, sslot,
                  dense, keybuf, row0, nrows):
    """Count rows [row0, row0+nrows) into dense blocks; write sparse keys to keybuf.

    The common dense blocks — unconditioned of 1–4 attributes, missing-child of 1–2 — have
    loops with the attribute indices and cardinalities in locals (hoisted out of the row
    loop)."""
    nb = battrs.shape[0]
    for b in range(nb):
        k = kind[b]
        if k == KIND_EMPTY:
            continue
        l = blen[b]
        c = bcond[b]
        slot = sslot[b]
        if k == KIND_DENSE and c < 0 and 1 <= l <= 4:
            o = off[b]
            a0 = battrs[b, 0]
            if l == 1:
                for r in range(row0, row0 + nrows):
                    v0 = codes_t[a0, r]
                    if v0 >= 0:
                        dense[o + v0 * K + y[r]] += 1
            elif l == 2:
                a1 = battrs[b, 1]
                c1 = battrs[b, 3]
                for r in range(row0, row0 + nrows):
                    v0 = codes_t[a0, r]
                    v1 = codes_t[a1, r]
                    if v0 >= 0 and v1 >= 0:
                        dense[o + (v0 * c1 + v1) * K + y[r]] += 1
            elif l == 3:
                a1 = battrs[b, 1]
                a2 = battrs[b, 2]
                c1 = battrs[b, 4]
                c2 = battrs[b, 5]
                for r in range(row0, row0 + nrows):
                    v0 = codes_t[a0, r]
                    v1 = codes_t[a1, r]
                    v2 = codes_t[a2, r]
                    if v0 >= 0 and v1 >= 0 and v2 >= 0:
                        dense[o + ((v0 * c1 + v1) * c2 + v2) * K + y[r]] += 1
            else:
                a1 = battrs[b, 1]
                a2 = battrs[b, 2]
                a3 = battrs[b, 3]
                c1 = battrs[b, 5]
                c2 = battrs[b, 6]
                c3 = battrs[b, 7]
                for r in range(row0, row0 + nrows):
                    v0 = codes_t[a0, r]
                    v1 = codes_t[a1, r]
                    v2 = codes_t[a2, r]
                    v3 = codes_t[a3, r]
                    if v0 >= 0 and v1 >= 0 and v2 >= 0 and v3 >= 0:
                        dense[o + (((v0 * c1 + v1) * c2 + v2) * c3 + v3) * K + y[r]] += 1
            continue
        if k == KIND_DENSE and c >= 0 and 1 <= l <= 2:  # missing-child blocks of A1DE, A2DE
            o = off[b]
            a0 = battrs[b, 0]
            if l == 1:
                for r in range(row0, row0 + nrows):
                    v0 = codes_t[a0, r]
                    if codes_t[c, r] < 0 and v0 >= 0:
                        dense[o + v0 * K + y[r]] += 1
            else:
                a1 = battrs[b, 1]
                c1 = battrs[b, 3]
                for r in range(row0, row0 + nrows):
                    v0 = codes_t[a0, r]
                    v1 = codes_t[a1, r]
                    if codes_t[c, r] < 0 and v0 >= 0 and v1 >= 0:
                        dense[o + (v0 * c1 + v1) * K + y[r]] += 1
            continue
        for rr in range(nrows):
            r = row0 + rr
            if k == KIND_SPARSE:
                keybuf[slot, rr] = -1
            if c >= 0 and codes_t[c, r] >= 0:
                continue
            loc = 0
            ok = True
            for t in range(l):
                a = battrs[b, t]
                v = codes_t[a, r]
                if v < 0:
                    ok = False
                    break
                loc = loc * battrs[b, l + t] + v  # cardinality stored after attrs
            if not ok:
                continue
            loc = loc * K + y[r]
            if k == KIND_DENSE:
                dense[off[b] + loc] += 1
            else:
                keybuf[slot, rr] = vbase[b] + loc


@intrinsic
def _popcount(typingctx, x):
    """Set bits of a 64-bit integer (LLVM's ctpop: one instruction, vectorised in loops)."""
    if not isinstance(x, types.Integer) or x.bitwidth != 64:
        return None

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.ctpop", [args[0].type])
        return builder.call(fn, [args[0]])

    return types.uint64(x), codegen


@numba.njit(cache=True, nogil=True, inline="always")
def _and_count(bits, i, j, nw):
    """Rows in both bit sets i and j (their AND's popcount)."""
    s = np.uint64(0)
    p = bits[i, :nw]  # slices: indexed from 0, so the loop is vectorised
    q = bits[j, :nw]
    for w in range(nw):
        s += _popcount(p[w] & q[w])
    return np.int64(s)


@numba.njit(cache=True, nogil=True, inline="always")
def _add_cells(bits, src, m, j0, c, nw, nset, full, dense, cell, stride, tg):
    """dense[cell + v·stride] += rows in both set src (m rows) and value set j0 + v, for
    v < c. Value sets go two to a pass over src; when ``full`` (every row of the
    chunk has a value: the sets partition it), the last value gets m minus the others."""
    nt = 0
    for v in range(c - 1 if full else c):
        if nset[j0 + v]:
            tg[nt] = v
            nt += 1
    p = bits[src, :nw]
    for g in range(0, nt, 2):
        r0 = bits[j0 + tg[g], :nw]
        s0 = np.uint64(0)
        s1 = np.uint64(0)
        if g + 1 < nt:
            r1 = bits[j0 + tg[g + 1], :nw]
            for w in range(nw):
                x = p[w]
                s0 += _popcount(x & r0[w])
                s1 += _popcount(x & r1[w])
            dense[cell + tg[g + 1] * stride] += np.int64(s1)
            m -= np.int64(s1)
        else:
            for w in range(nw):
                s0 += _popcount(p[w] & r0[w])
        dense[cell + tg[g] * stride] += np.int64(s0)
        m -= np.int64(s0)
    if full:
        dense[cell + (c - 1) * stride] += m


@numba.njit(cache=True, nogil=True, inline="always")
def _and_into(bits, dst, i, j, nw):
    """Bit set dst = i AND j; returns its popcount."""
    s = np.uint64(0)
    p = bits[i, :nw]
    q = bits[j, :nw]
    o = bits[dst, :nw]
    for w in range(nw):
        x = p[w] & q[w]
        o[w] = x
        s += _popcount(x)
    return np.int64(s)


_COMPARE_MAX = 8
"""Attributes of at most this many values build their bit sets by comparing 64 codes with
each value (vectorised), larger ones by setting one bit per row."""


@numba.njit(cache=True, nogil=True, inline="always")
def _equal_bits(x, lo, nrows, v, bits, row):
    """Bit set `row` = the rows r < nrows with x[lo + r] == v (v of x's type)."""
    nfull = nrows >> 6
    for w in range(nfull):
        m = np.uint64(0)
        seg = x[lo + w * 64: lo + w * 64 + 64]  # a slice: indexed from 0, so vectorised
        for r in range(64):
            m |= np.uint64(seg[r] == v) << np.uint64(r)
        bits[row, w] = m
    if nrows & 63:
        m = np.uint64(0)
        seg = x[lo + nfull * 64: lo + nrows]
        for r in range(seg.shape[0]):
            m |= np.uint64(seg[r] == v) << np.uint64(r)
        bits[row, nfull] = m


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _bitmap_kernel(codes_t, y, K, ids, battrs, blen, bcond, off, cards, voff, needmiss,
                   dense, bits, nset, row0, nrows):
    """Count rows [row0, row0+nrows) (at most 64·bits.shape[1]) into the dense blocks `ids`
    (see `BITMAP_MAX_CELLS`) from bit sets of the chunk's rows.

    Bit set rows: [0, V·K) value i = voff[a] + v and class k at i·K + k; [V·K, V·K + V)
    value i; then one per attribute (its value missing, built where ``needmiss``); then one
    per class; the last two are scratch. Attributes with voff[a] < 0 get no value sets.
    ``nset`` receives each set's popcount (empty sets are skipped)."""
    d = codes_t.shape[0]
    V = voff[d]
    VK = V * K
    miss0 = VK + V
    cls0 = miss0 + d
    t0 = cls0 + K
    t1 = t0 + 1
    nw = (nrows + 63) >> 6
    one = np.uint64(1)
    ycode = np.empty(1, dtype=y.dtype)
    for k in range(K):
        ycode[0] = k
        _equal_bits(y, row0, nrows, ycode[0], bits, cls0 + k)
    code = np.empty(1, dtype=codes_t.dtype)
    for a in range(d):
        base = voff[a]
        ca = cards[a] if base >= 0 else 0
        x = codes_t[a]
        if ca <= _COMPARE_MAX:
            for v in range(ca):
                code[0] = v
                _equal_bits(x, row0, nrows, code[0], bits, VK + base + v)
            if needmiss[a]:
                code[0] = -1
                _equal_bits(x, row0, nrows, code[0], bits, miss0 + a)
            continue
        for i in range(VK + base, VK + base + ca):
            for w in range(nw):
                bits[i, w] = 0
        for w in range(nw):
            bits[miss0 + a, w] = 0
        for r in range(nrows):
            v = x[row0 + r]
            bit = one << np.uint64(r & 63)
            if v < 0:
                bits[miss0 + a, r >> 6] |= bit
            else:
                bits[VK + base + v, r >> 6] |= bit
    for i in range(V):
        s = _and_count(bits, VK + i, VK + i, nw)
        nset[VK + i] = s
        for k in range(K):
            nset[i * K + k] = _and_into(bits, i * K + k, VK + i, cls0 + k, nw) if s else 0
    full = np.zeros(d, dtype=np.bool_)  # a's value sets cover every row of the chunk
    for a in range(d):
        if voff[a] >= 0:
            full[a] = nset[VK + voff[a]: VK + voff[a] + cards[a]].sum() == nrows
    tg = np.empty(max(V, 1), dtype=np.int64)
    for q in range(ids.shape[0]):
        b = ids[q]
        l = blen[b]
        c = bcond[b]
        o = off[b]
        a0 = battrs[b, 0]
        c0 = battrs[b, l]
        for v0 in range(c0):
            for k in range(K):
                src = (voff[a0] + v0) * K + k
                m = nset[src]
                if m and c >= 0:  # rows whose attribute c is missing
                    m = _and_into(bits, t0, src, miss0 + c, nw)
                    src = t0
                if m == 0:
                    continue
                if l == 1:
                    dense[o + v0 * K + k] += m
                    continue
                a1 = battrs[b, 1]
                c1 = battrs[b, l + 1]
                if l == 2:
                    _add_cells(bits, src, m, VK + voff[a1], c1, nw, nset, full[a1], dense,
                               o + v0 * c1 * K + k, K, tg)
                    continue
                a2 = battrs[b, 2]
                c2 = battrs[b, 5]
                for v1 in range(c1):
                    j1 = VK + voff[a1] + v1
                    if nset[j1] == 0:
                        continue
                    m1 = _and_into(bits, t1, src, j1, nw)
                    if m1:
                        _add_cells(bits, t1, m1, VK + voff[a2], c2, nw, nset, full[a2],
                                   dense, o + (v0 * c1 + v1) * c2 * K + k, K, tg)


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


@numba.njit(cache=True, nogil=True)
def _totals_kernel(ids, kind, off, vbase, bsize, dense, skeys, svals, out):
    for q in range(ids.shape[0]):
        b = ids[q]
        t = 0
        if kind[b] == KIND_DENSE:
            for i in range(off[b], off[b] + bsize[b]):
                t += dense[i]
        elif kind[b] == KIND_SPARSE:
            i = np.searchsorted(skeys, vbase[b])
            hi = vbase[b] + bsize[b]
            while i < skeys.shape[0] and skeys[i] < hi:
                t += svals[i]
                i += 1
        out[b] = t


@numba.njit(cache=True, nogil=True)
def lookup_sparse(kind, vbase, skeys, svals, b, loc0, K, out):
    """`lookup_k` for a sparse or empty block (kept out of line: inlining the search into
    every caller's hot loop makes the dense reads several times slower)."""
    for yy in range(K):
        out[yy] = 0
    if kind[b] != KIND_SPARSE:
        return
    key = vbase[b] + loc0
    i = np.searchsorted(skeys, key)
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


@numba.njit(cache=True, nogil=True)
def _colex_combinations(d, l):
    """All l-subsets of range(d) as rows of an (C(d,l), l) array, in colex order."""
    n = 1
    for i in range(l):
        n = n * (d - i) // (i + 1)
    out = np.empty((n, max(l, 1)), dtype=np.int64)
    if l == 0 or n == 0:
        return out[:n, :l]
    c = np.arange(l)
    for r in range(n):
        for t in range(l):
            out[r, t] = c[t]
        next_colex(c, l, d)
    return out


def colex_combinations(d: int, l: int) -> np.ndarray:
    """All l-subsets of range(d), colex order: row r has rank r (`rank = Σ C(a_t, t+1)`)."""
    return _colex_combinations(int(d), int(l)).reshape(-1, l)


def binomial_table(d: int, lmax: int) -> np.ndarray:
    """binom[a, t] = C(a, t) for a ≤ d, t ≤ lmax (int64), for colex ranks."""
    out = np.zeros((d + 1, lmax + 1), dtype=np.int64)
    for a in range(d + 1):
        for t in range(lmax + 1):
            out[a, t] = comb(a, t)
    return out


# ----- generic block store ---------------------------------------------------------------
class BlockStore:
    """Additive joint-frequency tables for a list of attribute blocks (see module docstring).

    ``blocks`` are attribute tuples (any order; the layout follows it), ``conditions`` the
    attribute that must be *missing* for a row to count in that block (−1: none). Dense
    cells are int32 (int64 once more than 2^31−1 rows have been counted).
    """

    def __init__(
        self,
        cardinalities: Sequence[int],
        n_classes: int,
        blocks: Sequence[Sequence[int]] | np.ndarray = (),
        conditions: Sequence[int] | None = None,
        rows_hint: int | None = None,
    ) -> None:
        self.cards = np.asarray(cardinalities, dtype=np.int64)
        self.K = int(n_classes)
        self.rows_hint = rows_hint
        self.n_rows = 0
        self._maxlen = 0
        self.battrs = np.zeros((0, 0), dtype=np.int64)
        self.blen = np.zeros(0, dtype=np.int64)
        self.bcond = np.zeros(0, dtype=np.int64)
        self.bsize = np.zeros(0, dtype=np.int64)  # dense cells Π|X|·K (0 for empty)
        self.kind = np.zeros(0, dtype=np.int64)
        self.off = np.zeros(0, dtype=np.int64)
        self.vbase = np.zeros(0, dtype=np.int64)
        self.sslot = np.zeros(0, dtype=np.int64)
        self.dense = np.zeros(0, dtype=np.int32)
        self.skeys = np.zeros(0, dtype=np.int64)
        self.svals = np.zeros(0, dtype=np.int64)
        self._n_sparse = 0
        self._vtop = 0
        if len(blocks):
            self.add_blocks(blocks, conditions)

    # ----- layout ----------------------------------------------------------------------
    @property
    def n_blocks(self) -> int:
        return int(self.blen.shape[0])

    def add_blocks(
        self,
        blocks: Sequence[Sequence[int]] | np.ndarray,
        conditions: Sequence[int] | None = None,
        empty: Sequence[bool] | np.ndarray | None = None,
    ) -> np.ndarray:
        """Append blocks (zero counts); returns their ids. ``empty`` marks never-used ones."""
        if isinstance(blocks, np.ndarray) and blocks.ndim == 2:
            arr = blocks.astype(np.int64)
            lens = np.full(arr.shape[0], arr.shape[1], dtype=np.int64)
        else:
            blist = [tuple(int(a) for a in b) for b in blocks]
            width = max((len(b) for b in blist), default=0)
            arr = np.full((len(blist), width), -1, dtype=np.int64)
            for i, b in enumerate(blist):
                arr[i, : len(b)] = b
            lens = np.array([len(b) for b in blist], dtype=np.int64)
        nb = arr.shape[0]
        width = arr.shape[1]
        cond = (np.full(nb, -1, dtype=np.int64) if conditions is None
                else np.asarray(conditions, dtype=np.int64))
        # attrs followed by their cardinalities (the counting kernel reads both)
        newlen = max(self._maxlen, width)
        if newlen > self._maxlen and self.n_blocks:
            # rows are packed as attrs[0:l] + cards[0:l] (+ −1 padding): just widen
            grown = np.full((self.battrs.shape[0], 2 * newlen), -1, dtype=np.int64)
            grown[:, : self.battrs.shape[1]] = self.battrs
            self.battrs = grown
        elif newlen > self._maxlen:
            self.battrs = np.zeros((0, 2 * newlen), dtype=np.int64)
        self._maxlen = newlen
        packed = np.full((nb, 2 * newlen), -1, dtype=np.int64)
        safe = np.where(arr >= 0, arr, 0)
        cardmat = np.where(arr >= 0, self.cards[safe] if self.cards.size else 0, 1)
        for l in np.unique(lens):
            rows = lens == l
            packed[rows, :l] = arr[rows, :l]
            packed[rows, l: 2 * l] = cardmat[rows, :l]
        size = np.prod(np.maximum(cardmat, 0), axis=1, dtype=np.int64) * self.K
        size = np.where(lens == 0, self.K, size)
        if empty is not None:
            size = np.where(np.asarray(empty, dtype=bool), 0, size)
        kind = np.full(nb, KIND_DENSE, dtype=np.int64)
        kind[size == 0] = KIND_EMPTY
        rows_hint = self.rows_hint if self.rows_hint is not None else 0
        sparse_min = max(SPARSE_MIN_CELLS, SPARSE_ROW_FACTOR * rows_hint)
        kind[size > sparse_min] = KIND_SPARSE
        off = np.zeros(nb, dtype=np.int64)
        vbase = np.zeros(nb, dtype=np.int64)
        sslot = np.full(nb, -1, dtype=np.int64)
        dmask = kind == KIND_DENSE
        dsz = np.where(dmask, size, 0)
        off[:] = self.dense.shape[0] + np.concatenate(([0], np.cumsum(dsz)[:-1])) if nb else 0
        smask = kind == KIND_SPARSE
        ssz = np.where(smask, size, 0)
        vbase[:] = self._vtop + (np.concatenate(([0], np.cumsum(ssz)[:-1])) if nb else 0)
        ns = int(smask.sum())
        sslot[smask] = self._n_sparse + np.arange(ns)
        self._n_sparse += ns
        self._vtop += int(ssz.sum())
        first = self.n_blocks
        self.battrs = np.concatenate([self.battrs, packed]) if self.n_blocks else packed
        self.blen = np.concatenate([self.blen, lens])
        self.bcond = np.concatenate([self.bcond, cond])
        self.bsize = np.concatenate([self.bsize, size])
        self.kind = np.concatenate([self.kind, kind])
        self.off = np.concatenate([self.off, off])
        self.vbase = np.concatenate([self.vbase, vbase])
        self.sslot = np.concatenate([self.sslot, sslot])
        self.dense = np.concatenate([self.dense, np.zeros(int(dsz.sum()), dtype=self.dense.dtype)])
        return np.arange(first, first + nb, dtype=np.int64)

    # ----- counting --------------------------------------------------------------------
    def add(self, codes: np.ndarray, y: np.ndarray, columns: bool = False,
            n_jobs: int = 1) -> None:
        """Count rows: ``codes`` int (n, d) with −1 = missing — or (d, n) with ``columns``,
        the layout the kernels read — and ``y`` class codes in 0..K−1. With ``n_jobs`` > 1
        and enough rows, that many threads count consecutive parts of the rows, each into
        its own copy of the dense cells (when they are small, `PARALLEL_DENSE_BYTES`), and
        the parts are added: integer counts, so the same tables for any ``n_jobs``."""
        codes = np.asarray(codes)
        y = np.ascontiguousarray(y, dtype=np.int64)
        n = int(codes.shape[1] if columns else codes.shape[0])
        if n == 0:
            return
        if y.min() < 0 or y.max() >= self.K:
            raise LearnerError("class codes must lie in 0..K-1 (drop missing-class rows first)")
        if self.n_rows + n > np.iinfo(np.int32).max and self.dense.dtype != np.int64:
            self.dense = self.dense.astype(np.int64)
        narrow = code_dtype(self.cards)
        codes_t = np.ascontiguousarray(codes if columns else codes.T,
                                       dtype=narrow)  # less to stream per block
        plan = self._bitmap_plan()
        parts = max(1, min(int(n_jobs), n // PARALLEL_MIN_ROWS))
        if self.dense.nbytes * (parts - 1) > PARALLEL_DENSE_BYTES:
            parts = 1
        cuts = [n * i // parts for i in range(parts + 1)]
        denses = [self.dense] + [np.zeros_like(self.dense) for _ in range(parts - 1)]
        if parts == 1:
            keys = [self._count_rows(codes_t, y, 0, n, self.dense, plan)]
        else:
            with ThreadPoolExecutor(parts) as pool:
                keys = list(pool.map(
                    lambda i: self._count_rows(codes_t, y, cuts[i], cuts[i + 1], denses[i],
                                               plan), range(parts)))
        for extra in denses[1:]:
            self.dense += extra
        keys = np.concatenate(keys)
        if keys.size:
            u, c = np.unique(keys, return_counts=True)
            self._merge_sparse(u, c.astype(np.int64))
        self.n_rows += n

    def _count_rows(self, codes_t: np.ndarray, y: np.ndarray, lo: int, hi: int,
                    dense: np.ndarray, plan: tuple) -> np.ndarray:
        """Count rows [lo, hi) into `dense` (blocks of `self`'s layout): the row-loop kernel
        for large and sparse blocks, the bit-set kernel for small ones; returns the sparse
        blocks' virtual keys, one per (row, block) counted."""
        kind, ids, voff, needmiss = plan
        ns = self._n_sparse
        n = hi - lo
        # rows per kernel call: their codes stay in cache while every block reads them
        step = max(1024, _CHUNK_BYTES // max(1, codes_t.shape[0] * codes_t.itemsize))
        step = min(n, step if ns == 0 else min(step, max(1, _KEYBUF_CELLS // ns)))
        keybuf = np.empty((max(ns, 1) if ns else 0, step), dtype=np.int64)
        new_keys = [np.zeros(0, dtype=np.int64)]
        if ids.size < self.n_blocks:
            for r0 in range(lo, hi, step):
                nr = min(step, hi - r0)
                _count_kernel(codes_t, y, self.K, self.battrs, self.blen, self.bcond, kind,
                              self.off, self.vbase, self.sslot, dense, keybuf, r0, nr)
                if ns:
                    kb = keybuf[:, :nr].ravel()
                    new_keys.append(kb[kb >= 0])
        if ids.size:
            d, V = codes_t.shape[0], int(voff[-1])
            nbits = V * (self.K + 1) + d + self.K + 2
            rows = min(_BITMAP_ROWS, max(1, _BITMAP_BYTES // (8 * nbits)) * 64)
            bits = np.empty((nbits, rows // 64), dtype=np.uint64)
            nset = np.empty(V * (self.K + 1), dtype=np.int64)
            for r0 in range(lo, hi, rows):
                _bitmap_kernel(codes_t, y, self.K, ids, self.battrs, self.blen, self.bcond,
                               self.off, self.cards, voff, needmiss, dense, bits, nset,
                               r0, min(rows, hi - r0))
        return np.concatenate(new_keys)

    def _bitmap_plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(kind for the row-loop kernel, ids of the blocks counted from bit sets, voff,
        needmiss): small dense blocks (`BITMAP_MAX_CELLS`) go to `_bitmap_kernel`, marked
        empty for the row loop; voff[a] is attribute a's first value set (−1: none),
        voff[d] = V; needmiss[a]: a is some such block's missing-child condition."""
        ok = ((self.kind == KIND_DENSE) & (self.bsize <= BITMAP_MAX_CELLS) & (self.blen >= 1)
              & (self.blen + (self.bcond >= 0) <= 3))
        ids = np.flatnonzero(ok).astype(np.int64)
        d = int(self.cards.shape[0])
        used = np.zeros(d, dtype=bool)
        for t in range(min(3, self._maxlen)):
            a = self.battrs[ids[self.blen[ids] > t], t] if ids.size else ids
            used[a] = True
        voff = np.full(d + 1, -1, dtype=np.int64)
        top = np.concatenate(([0], np.cumsum(np.where(used, self.cards, 0))))
        voff[:d] = np.where(used, top[:d], -1)
        voff[d] = top[d]
        needmiss = np.zeros(d, dtype=bool)
        needmiss[self.bcond[ids][self.bcond[ids] >= 0]] = True
        kind = self.kind
        if ids.size:
            kind = kind.copy()
            kind[ids] = KIND_EMPTY
        return kind, ids, voff, needmiss

    def _merge_sparse(self, keys: np.ndarray, vals: np.ndarray) -> None:
        if self.skeys.size == 0:
            self.skeys, self.svals = keys, vals
            return
        allk = np.concatenate([self.skeys, keys])
        allv = np.concatenate([self.svals, vals])
        u, inv = np.unique(allk, return_inverse=True)
        self.skeys = u
        self.svals = np.bincount(inv, weights=allv, minlength=u.size).astype(np.int64)

    def merge(self, other: "BlockStore") -> None:
        """Add another store with the same block list (e.g. counted in a worker)."""
        if other.n_blocks != self.n_blocks or not np.array_equal(other.bsize, self.bsize):
            raise LearnerError("cannot merge count stores with different block layouts")
        if not (np.array_equal(other.kind, self.kind)):
            raise LearnerError("cannot merge count stores with different dense/sparse layouts")
        if self.n_rows + other.n_rows > np.iinfo(np.int32).max:
            self.dense = self.dense.astype(np.int64)
        self.dense += other.dense.astype(self.dense.dtype)
        if other.skeys.size:
            self._merge_sparse(other.skeys, other.svals)
        self.n_rows += other.n_rows

    # ----- reading ---------------------------------------------------------------------
    def arrays(self) -> tuple:
        """(kind, off, vbase, dense, skeys, svals) for `lookup_k` in numba kernels."""
        return self.kind, self.off, self.vbase, self.dense, self.skeys, self.svals

    def block_attributes(self, b: int) -> tuple[int, ...]:
        l = int(self.blen[b])
        return tuple(int(a) for a in self.battrs[b, :l])

    def block(self, b: int) -> np.ndarray:
        """Block b as a dense int64 array of shape (|X_a1|, …, |X_al|, K)."""
        l = int(self.blen[b])
        shape = tuple(int(c) for c in self.battrs[b, l: 2 * l]) + (self.K,)
        k = int(self.kind[b])
        if k == KIND_DENSE:
            o = int(self.off[b])
            return self.dense[o: o + int(self.bsize[b])].astype(np.int64).reshape(shape)
        out = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
        if k == KIND_SPARSE:
            lo, hi = self._sparse_range(b)
            out[self.skeys[lo:hi] - self.vbase[b]] = self.svals[lo:hi]
        return out.reshape(shape)

    def _sparse_range(self, b: int) -> tuple[int, int]:
        v = int(self.vbase[b])
        lo = int(np.searchsorted(self.skeys, v))
        hi = int(np.searchsorted(self.skeys, v + int(self.bsize[b])))
        return lo, hi

    def block_totals(self, ids: np.ndarray | None = None) -> np.ndarray:
        """Sum of each block's cells (int64; all blocks, or those in ``ids`` — others 0),
        e.g. N − miss(s) for a parent block."""
        ids = (np.arange(self.n_blocks, dtype=np.int64) if ids is None
               else np.asarray(ids, dtype=np.int64))
        tot = np.zeros(self.n_blocks, dtype=np.int64)
        _totals_kernel(ids, self.kind, self.off, self.vbase, self.bsize, self.dense,
                       self.skeys, self.svals, tot)
        return tot

    @property
    def nbytes(self) -> int:
        """Bytes held by the count cells (dense cells + sparse keys and values)."""
        return int(self.dense.nbytes + self.skeys.nbytes + self.svals.nbytes)

    def compact_cells(self) -> int:
        """Σ over non-empty blocks of Π|X_i|·K (the compact bound, in cells)."""
        return int(self.bsize.sum())


# ----- sizes: what a layout costs, and what the machine allows ---------------------------------
MEMORY_FRACTION = 0.5
"""Default memory budget of one model: this share of the machine's physical memory."""
MEMORY_BUDGET_ENV = "WORKBENCH_MEMORY_BUDGET"
"""Environment variable overriding the budget: bytes, with an optional K/M/G/T suffix."""
ENUMERATE_BLOCKS = 2_000_000
"""Levels with at most this many attribute combinations are sized block by block (dense or
sparse as `BlockStore` would store them); larger ones by the all-dense bound."""
BLOCK_META_BYTES = 16
"""Bytes of `BlockStore` bookkeeping per block and per int64 field (with transient copies)."""


def memory_budget() -> int:
    """Bytes one model may allocate: ``$WORKBENCH_MEMORY_BUDGET`` if set, else
    `MEMORY_FRACTION` of physical memory."""
    text = os.environ.get(MEMORY_BUDGET_ENV, "").strip()
    if text:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?", text, flags=re.IGNORECASE)
        if not m:
            raise LearnerError(f"{MEMORY_BUDGET_ENV}={text!r}: expected bytes with an optional "
                               "K, M, G or T suffix (e.g. 8G)")
        scale = 1024 ** " KMGT".index(m.group(2).upper() or " ")
        return int(float(m.group(1)) * scale)
    try:
        return int(MEMORY_FRACTION * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # no POSIX sysconf: no limit we can read
        return 1 << 62


def elementary_symmetric(values: Sequence[int], top: int) -> list[int]:
    """[e_0, …, e_top] of the values (exact integers): e_l = Σ over l-subsets of Π values,
    the number of cells of all l-attribute combinations over `values` cardinalities."""
    e = [1] + [0] * top
    for v in values:
        for l in range(top, 0, -1):
            e[l] += e[l - 1] * int(v)
    return e


def layout_cells(cardinalities: Sequence[int], n_classes: int, n: int) -> tuple[int, int]:
    """(compact, naive) cells of AnDE-of-order-n frequency tables (Salem et al., Section 3).

    Compact: one table per attribute combination of size 1..n+1, K · Σ_l e_l(|X_i|).
    Naive: the (n+1)-dimensional matrix over all V = Σ|X_i| attribute values with the
    lower-order frequencies on its diagonals, K · C(V + n, n + 1) — it also holds the
    impossible combinations of two values of one attribute. The paper's AODE example
    (|X| = 2, 3): 2-combinations 10 naive → 6 compact."""
    cards = [int(c) for c in cardinalities]
    e = elementary_symmetric(cards, n + 1)
    return n_classes * sum(e[1:]), n_classes * comb(sum(cards) + n, n + 1)


def estimate_block_bytes(cardinalities: Sequence[int], n_classes: int, levels: Sequence[int],
                         rows: int, conditioned: int = 0) -> int:
    """Bytes a `BlockStore` of every attribute combination of each size in `levels` would
    allocate for `rows` training rows (cells and bookkeeping), `conditioned` times more for
    the "child missing" copies of the parent levels; computed before allocating anything."""
    cards = np.asarray(cardinalities, dtype=np.int64)
    d = int(cards.shape[0])
    sparse_min = max(SPARSE_MIN_CELLS, SPARSE_ROW_FACTOR * int(rows))
    e = elementary_symmetric(cards.tolist(), max(levels, default=0))
    total = 0
    for l in levels:
        blocks = comb(d, l)
        meta = blocks * BLOCK_META_BYTES * (3 * l + 8)
        if 0 < blocks <= ENUMERATE_BLOCKS:
            size = np.prod(cards[colex_combinations(d, l)], axis=1) * n_classes
            cells = int(np.where(size > sparse_min, 0, size).sum()) * 4
            cells += int(np.minimum(size[size > sparse_min], rows).sum()) * 16
        else:
            cells = e[l] * n_classes * 4
        total += (1 + conditioned) * (meta + cells) if l < max(levels) else meta + cells
    return int(total)


# ----- the AnDE-family count tables --------------------------------------------------------
@dataclass
class _Levels:
    base: np.ndarray  # level_base[l] = id of the first block of level l (l = 0 unused)
    ncomb: np.ndarray  # C(d, l)


class AnDECounts:
    """Class counts + all attribute combinations of size 1..max_level, with missing slots.

    * ``class_counts[y]`` = #y over class-known rows, ``n`` = their number (N);
    * level l (1 ≤ l ≤ max_level): block ``level_base[l] + rank(s)`` counts #(x_s, y) for the
      sorted l-combination s (colex rank, see `rank`);
    * for every attribute c that has had a missing value and every parent level l ≤
      ``parent_levels``: block ``miss_base[l, c] + rank(s)`` counts #(y, x_s, x_c missing)
      (empty when c ∈ s). These give SPEC §2's denominators #(y, x_s) − #(y, x_s, x_c missing).

    `partial_fit` is additive: chunked training gives identical counts to one call.
    """

    def __init__(
        self,
        cardinalities: Sequence[int],
        n_classes: int,
        max_level: int,
        parent_levels: int | None = None,
        rows_hint: int | None = None,
    ) -> None:
        self.cards = np.asarray(cardinalities, dtype=np.int64)
        self.d = int(self.cards.shape[0])
        self.K = int(n_classes)
        if self.K < 1:
            raise LearnerError("the class attribute declares no values")
        self.requested_levels = (int(max_level), parent_levels)
        self.max_level = min(int(max_level), self.d)
        self.parent_levels = (self.max_level - 1 if parent_levels is None
                              else min(int(parent_levels), self.max_level))
        self.class_counts = np.zeros(self.K, dtype=np.int64)
        self.binom = binomial_table(self.d, self.max_level + 1)
        self.store = BlockStore(self.cards, self.K, rows_hint=rows_hint)
        base = np.zeros(self.max_level + 2, dtype=np.int64)
        ncomb = np.zeros(self.max_level + 2, dtype=np.int64)
        for l in range(1, self.max_level + 1):
            combos = colex_combinations(self.d, l)
            ids = self.store.add_blocks(combos)
            base[l] = ids[0] if ids.size else self.store.n_blocks
            ncomb[l] = combos.shape[0]
        base[self.max_level + 1] = self.store.n_blocks
        self.levels = _Levels(base, ncomb)
        self.miss_base = np.full((self.max_level + 1, max(self.d, 1)), -1, dtype=np.int64)
        self.has_missing = np.zeros(self.d, dtype=bool)

    # ----- construction ----------------------------------------------------------------
    @classmethod
    def from_dataset(cls, data: Dataset, max_level: int,
                     parent_levels: int | None = None) -> "AnDECounts":
        """Count an all-nominal Dataset (missing-class rows ignored) in one pass."""
        data = data.without_missing_class()
        out = cls(data.cardinalities, data.n_classes, max_level, parent_levels,
                  rows_hint=data.n_instances)
        out.partial_fit(data.codes(), data.y)
        return out

    def partial_fit(self, codes: np.ndarray, y: np.ndarray, columns: bool = False,
                    n_jobs: int = 1, ranges: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> "AnDECounts":
        """Add rows (int codes (n, d), −1 missing; rows with class −1 are ignored). With
        ``columns``, codes are (d, n) in `code_dtype` (`Dataset.column_codes`), the layout
        the kernels read, so no copy is made; `n_jobs` threads count (`BlockStore.add`).
        `ranges`: each attribute's (lowest, highest) code over these rows, when the caller
        has them (`code_range`), so they are not scanned again."""
        codes = np.asarray(codes)
        y = np.asarray(y, dtype=np.int64)
        keep = y >= 0
        if not keep.all():
            codes, y = (codes[:, keep], y[keep]) if columns else (codes[keep], y[keep])
        if y.shape[0] == 0:
            return self
        d = codes.shape[0 if columns else 1]
        if d != self.d:
            raise LearnerError(f"expected {self.d} attributes, got {d}")
        if ranges is not None and keep.all():
            lo, hi = ranges
        elif columns:
            lo, hi = code_range(np.ascontiguousarray(codes))
        else:
            lo, hi = codes.min(axis=0), codes.max(axis=0)
        bad = (hi >= self.cards) | (lo < -1)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise LearnerError(f"attribute {j + 1}: value code outside its declared values")
        for c in np.flatnonzero((lo < 0) & ~self.has_missing):
            self._add_missing_blocks(int(c))
        self.class_counts += np.bincount(y, minlength=self.K)[: self.K]
        self.store.add(codes, y, columns, n_jobs)
        return self

    def _add_missing_blocks(self, c: int) -> None:
        self.has_missing[c] = True
        for l in range(1, self.parent_levels + 1):
            combos = colex_combinations(self.d, l)
            empty = (combos == c).any(axis=1)
            ids = self.store.add_blocks(combos, np.full(combos.shape[0], c), empty=empty)
            self.miss_base[l, c] = ids[0] if ids.size else -1

    def merge(self, other: "AnDECounts") -> "AnDECounts":
        """Add the counts of `other`, which has the same layout (counted elsewhere)."""
        if not (np.array_equal(self.cards, other.cards) and self.K == other.K
                and self.max_level == other.max_level
                and np.array_equal(self.miss_base, other.miss_base)):
            raise LearnerError("cannot merge AnDE counts with different layouts")
        self.class_counts += other.class_counts
        self.store.merge(other.store)
        self.has_missing |= other.has_missing
        return self

    def with_constants(self, cardinalities: Sequence[int], old_to_new: Sequence[int],
                       rows_hint: int | None = None) -> "AnDECounts":
        """These counts over a larger attribute set: old attribute i becomes attribute
        ``old_to_new[i]`` (increasing) and every other attribute is single-valued and was
        present in every row counted so far, so a block containing it holds the counts of the
        block without it (the empty block: the class counts). Used when an attribute left
        out of the counts as constant has its first missing value (`AnDE`)."""
        old_to_new = np.asarray(old_to_new, dtype=np.int64)
        cards = np.asarray(cardinalities, dtype=np.int64)
        new_to_old = np.full(cards.shape[0], -1, dtype=np.int64)
        new_to_old[old_to_new] = np.arange(self.d)
        if (np.diff(old_to_new) <= 0).any() or (cards[new_to_old < 0] != 1).any():
            raise LearnerError("with_constants: the added attributes must be single-valued "
                               "and the old ones keep their order")
        out = AnDECounts(cards, self.K, self.requested_levels[0], self.requested_levels[1],
                         rows_hint=rows_hint)
        for c in np.flatnonzero(self.has_missing):
            out._add_missing_blocks(int(old_to_new[c]))
        out.class_counts = self.class_counts.copy()
        st = out.store
        if self.store.dense.dtype != st.dense.dtype:
            st.dense = st.dense.astype(self.store.dense.dtype)
        keys, vals = [], []
        for b in range(st.n_blocks):
            if st.kind[b] == KIND_EMPTY:
                continue
            old = [int(new_to_old[a]) for a in st.block_attributes(b) if new_to_old[a] >= 0]
            c = int(st.bcond[b])
            if c < 0:
                src = (self.store.block(self.block_id(old)) if old else self.class_counts)
            elif old:
                src = self.child_missing(old, int(new_to_old[c]))
            else:  # #(y, x_c missing) = #y − Σ_v #(x_c = v, y)
                src = self.class_counts - self.store.block(self.block_id([new_to_old[c]])).sum(0)
            flat = np.asarray(src, dtype=np.int64).ravel()
            if st.kind[b] == KIND_DENSE:
                st.dense[st.off[b]: st.off[b] + flat.size] = flat
            else:
                nz = np.flatnonzero(flat)
                keys.append(st.vbase[b] + nz)
                vals.append(flat[nz])
        if keys:
            st._merge_sparse(np.concatenate(keys), np.concatenate(vals))
        st.n_rows = self.store.n_rows
        return out

    # ----- reading ---------------------------------------------------------------------
    @property
    def n(self) -> int:
        """N: class-known training rows counted."""
        return int(self.class_counts.sum())

    def rank(self, attrs: Iterable[int]) -> int:
        """Colex rank of a sorted attribute combination."""
        return int(sum(self.binom[a, t + 1] for t, a in enumerate(sorted(attrs))))

    def block_id(self, attrs: Iterable[int]) -> int:
        s = sorted(int(a) for a in attrs)
        return int(self.levels.base[len(s)]) + self.rank(s)

    def _attributes(self, attrs: Iterable[int], what: str) -> list[int]:
        """`attrs` sorted, each an attribute index given once (else one clear error)."""
        s = sorted(int(a) for a in attrs)
        for a in s:
            if not 0 <= a < self.d:
                raise LearnerError(f"AnDECounts.{what}: attribute {a} is out of range "
                                   f"(0 … {self.d - 1})")
        if len(set(s)) != len(s):
            raise LearnerError(f"AnDECounts.{what}: an attribute is given twice in {s}")
        return s

    def joint(self, attrs: Sequence[int]) -> np.ndarray:
        """#(x_attrs, y) as a dense array (|X_a1|, …, K) for sorted or unsorted attrs
        (1 to `max_level` distinct attributes; no attribute: the class counts)."""
        s = self._attributes(attrs, "joint")
        if not s:
            return self.class_counts.astype(np.int64)
        if len(s) > self.max_level:
            raise LearnerError(f"AnDECounts.joint: {len(s)} attributes, but combinations of at "
                               f"most {self.max_level} are counted")
        arr = self.store.block(self.block_id(s))
        order = [s.index(int(a)) for a in attrs]
        return np.transpose(arr, order + [len(s)])

    def child_missing(self, parents: Sequence[int], child: int) -> np.ndarray:
        """#(x_parents, x_child missing, y) as a dense array (|X_p1|, …, K), parents in
        increasing order: the stored block where there is one, else #(x_parents, y) −
        Σ_v #(x_parents, x_child = v, y) from the joint counts (no parent: from the class
        counts). A child among the parents, an index out of range, or a level that is
        counted neither way is an error."""
        s = self._attributes(parents, "child_missing")
        (c,) = self._attributes([child], "child_missing")
        if c in s:
            raise LearnerError(f"AnDECounts.child_missing: the child {c} is one of the "
                               f"parents {s}")
        if not self.has_missing[c]:
            return np.zeros(tuple(int(self.cards[a]) for a in s) + (self.K,), dtype=np.int64)
        if len(s) <= self.parent_levels and s and self.miss_base[len(s), c] >= 0:
            return self.store.block(int(self.miss_base[len(s), c]) + self.rank(s))
        if len(s) + 1 > self.max_level:
            raise LearnerError(f"AnDECounts.child_missing: {len(s)} parent(s) and a child "
                               f"need combinations of {len(s) + 1} attributes; at most "
                               f"{self.max_level} are counted")
        return self.joint(s) - self.joint([*s, c]).sum(axis=len(s))

    def value_counts(self, i: int) -> np.ndarray:
        """Class-free #(x_i) for every value of attribute i."""
        return self.joint([i]).sum(axis=-1)

    def pair_counts(self, i: int, j: int) -> np.ndarray:
        """Class-free #(x_i, x_j) as a (|X_i|, |X_j|) array (needs max_level ≥ 2)."""
        return self.joint([i, j]).sum(axis=-1)

    @property
    def nbytes(self) -> int:
        return self.store.nbytes + self.class_counts.nbytes

    def compact_bound_cells(self) -> int:
        """Σ over attribute combinations of size 0..max_level of Π|X_i|·K."""
        total = self.K
        for l in range(1, self.max_level + 1):
            b0, b1 = int(self.levels.base[l]), int(self.levels.base[l]) + int(self.levels.ncomb[l])
            total += int(self.store.bsize[b0:b1].sum())
        return total
