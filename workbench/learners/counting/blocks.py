"""`BlockStore`: generic, additive joint-frequency tables over attribute blocks.

A *block* is one ordered tuple of attributes ``(a_1, …, a_l)`` (optionally with a
*condition attribute* c that must be **missing** in the row); it counts
``#(x_a1, …, x_al, y)`` over rows where every a_i is present (and c is missing, if given),
laid out as `workbench.learners.counting.layout` says. Blocks are *compact*: one block per
attribute combination, never slots for impossible same-attribute combinations. A block
whose dense size Π|X_i|·K is much larger than the number of rows (an ID-like attribute
such as splice's 3,190-valued instance name) is stored *sparsely*, so tables never blow up.
Counting is one pass over the rows per call; `add` is additive (chunks give identical
counts to one call).
"""

from __future__ import annotations

from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
import threading
from typing import Callable, Sequence

import numpy as np

from workbench.errors import LearnerError
from workbench.learners.counting.kernels import bitmap_kernel, count_kernel, totals_kernel
from workbench.learners.counting.layout import (KIND_DENSE, KIND_EMPTY, KIND_SPARSE,
                                                SPARSE_MIN_CELLS, SPARSE_ROW_FACTOR,
                                                block_layout, code_dtype)

_KEYBUF_CELLS = 1 << 23  # max key buffer entries per counting chunk (64 MB of int64)
_CHUNK_BYTES = 1 << 18  # codes counted per kernel call (an L2's worth)

BITMAP_MAX_CELLS = 1024
"""Dense blocks of at most this many cells (Π|X_i|·K) with two classes — 2/K times as many
with K (`bitmap_cells`) —, of 1–3 attributes (1–2 with a missing-child condition), are
counted from per-chunk bit sets of the rows holding each value and class: a cell's count
is the popcount of their AND, 64 rows per word (several words per instruction where the
CPU has vector popcount), instead of one increment per row. The bit sets are per value and
class, so with many classes they cost more to build and to AND than the row loop's
increments (letter's 26 classes: its 120 pair tables 1.3 -> 0.62 ms by the row loop;
optdigits A2DE fit -12 %; two classes unchanged)."""


BITMAP_CAP = 384
"""... and at most this many with any K: a block's bit sets cost an AND and a popcount of
every 64 rows per cell, its row loop one increment per row, so a block of many cells
(adult's 42-valued attribute paired with a 9-valued one, 756 cells) counts faster by the
row loop (fit: adult KDB2 5.53 -> 5.29 ms, A2DE 20.1 -> 18.8, splice A2DE 234 -> 231;
nursery, connect-4, letter, magic, mushroom, optdigits within 1 %)."""


def bitmap_cells(K: int) -> int:
    """The largest dense block counted from bit sets with K classes (`BITMAP_MAX_CELLS`,
    `BITMAP_CAP`)."""
    return min(BITMAP_MAX_CELLS * 2 // max(int(K), 2), BITMAP_CAP)


PARALLEL_MIN_ROWS = 1 << 16
"""`BlockStore.add` with n_jobs > 1 gives each thread at least this many rows."""
PARALLEL_DENSE_BYTES = 1 << 28
"""... and counts single-threaded when the threads' extra copies of the dense cells would
take more than this."""
_BITMAP_BYTES = 1 << 22  # bit sets of one bitmap chunk at most (4 MB measured best here)
_BITMAP_ROWS = 1 << 15  # rows per bitmap chunk at most (a multiple of 64)


def _set_words(rows: int) -> int:
    """Words per bit set for `rows` rows: whole cache lines, and not a multiple of 4 KB —
    sets 4 KB apart alias in the L1 cache and in the store buffer's address check, so an
    AND writing one set while reading two waits on false dependencies (adult's pairs:
    0.53 -> 0.46 ms against 512-word sets)."""
    words = -(-rows // 512) * 8
    return words + 8 if words % 512 == 0 else words


class KeptLayouts:
    """The last `size` layouts made by key (least recently used out first), shared by the
    fits of one process — its threads included (`n_jobs`, Dask) — so that the next fold
    or fit of the same shape lays its blocks out once."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple, make: Callable[[], object]) -> object:
        """The layout kept under `key`, else `make()`'s, kept."""
        with self._lock:
            out = self._kept.get(key)
            if out is None:
                self._kept[key] = out = make()
                if len(self._kept) > self.size:
                    self._kept.popitem(last=False)
            self._kept.move_to_end(key)
        return out


_LAYOUTS = KeptLayouts(8)


def laid_out(cards: np.ndarray, K: int, blocks: np.ndarray, rows_hint: int | None
             ) -> "BlockStore":
    """A store of `blocks` (a 2-D array, rows padded with −1) with no rows counted, its
    layout and counting plan shared with the last stores of the same cardinalities,
    classes, blocks and sparse threshold (`KeptLayouts`): adult's 78 pair blocks cost KDB
    60 µs to lay out and plan, a tenth of counting them."""
    blocks = np.ascontiguousarray(blocks, dtype=np.int64)
    cards = np.ascontiguousarray(cards, dtype=np.int64)
    key = (cards.tobytes(), int(K), blocks.shape, blocks.tobytes(),
           BlockStore.sparse_threshold(rows_hint))
    return _LAYOUTS.get(key, lambda: BlockStore.template(cards, K, blocks, rows_hint)
                        ).empty_copy(rows_hint)


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
        self._plan: tuple | None = None  # `_bitmap_plan`'s, until blocks are added
        if len(blocks):
            self.add_blocks(blocks, conditions)

    @staticmethod
    def sparse_threshold(rows_hint: int | None) -> int:
        """Cells above which a block is stored sparsely, for `rows_hint` rows to count."""
        return max(SPARSE_MIN_CELLS, SPARSE_ROW_FACTOR * (rows_hint or 0))

    @staticmethod
    def template(cards: np.ndarray, K: int, blocks: np.ndarray | Sequence[Sequence[int]],
                 rows_hint: int | None) -> "BlockStore":
        """A store of `blocks` laid out and planned, holding no cells (a zero-strided view:
        nothing can count into it) — for `empty_copy` to give stores of this layout."""
        store = BlockStore(np.array(cards, dtype=np.int64), K, rows_hint=rows_hint)
        store.add_blocks(blocks)
        store._plan = store._bitmap_plan()  # (shared with the copies, as the layout)
        store.dense = np.broadcast_to(np.int32(0), store.dense.shape)
        return store

    def empty_copy(self, rows_hint: int | None) -> "BlockStore":
        """A store of the same blocks with no rows counted (`rows_hint` for blocks added
        later). The layout arrays are shared: nothing writes them in place (`add_blocks`
        replaces them), so stores of one layout — k-fold CV's folds, a repeated fit — lay
        it out once (`AnDECounts`' templates)."""
        out = object.__new__(BlockStore)
        out.__dict__.update(self.__dict__)
        out.rows_hint = rows_hint
        out.n_rows = 0
        out.dense = np.zeros(self.dense.shape[0], dtype=self.dense.dtype)
        out.skeys = np.zeros(0, dtype=np.int64)
        out.svals = np.zeros(0, dtype=np.int64)
        return out

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
        """Append blocks (zero counts); returns their ids. ``empty`` marks never-used ones.
        `blocks`: attribute tuples, or a 2-D array whose rows are blocks padded with −1."""
        if isinstance(blocks, np.ndarray) and blocks.ndim == 2:  # −1 pads shorter blocks
            arr = np.ascontiguousarray(blocks, dtype=np.int64)
        else:
            blist = [tuple(int(a) for a in b) for b in blocks]
            width = max((len(b) for b in blist), default=0)
            arr = np.full((len(blist), width), -1, dtype=np.int64)
            for i, b in enumerate(blist):
                arr[i, : len(b)] = b
        nb = arr.shape[0]
        lens = np.empty(nb, dtype=np.int64)  # (`block_layout` counts each block's attributes)
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
        size, kind, off, vbase, sslot = (np.empty(nb, dtype=np.int64) for _ in range(5))
        empty = (np.zeros(nb, dtype=np.bool_) if empty is None
                 else np.ascontiguousarray(empty, dtype=np.bool_))
        sparse_min = self.sparse_threshold(self.rows_hint)
        dsum, ssum, ns = block_layout(arr, lens, self.cards, self.K, empty, sparse_min,
                                      self.dense.shape[0], self._vtop, self._n_sparse, packed,
                                      size, kind, off, vbase, sslot)
        self._n_sparse += ns
        self._vtop += ssum
        self._plan = None
        first = self.n_blocks
        self.battrs = np.concatenate([self.battrs, packed]) if self.n_blocks else packed
        self.blen = np.concatenate([self.blen, lens])
        self.bcond = np.concatenate([self.bcond, cond])
        self.bsize = np.concatenate([self.bsize, size])
        self.kind = np.concatenate([self.kind, kind])
        self.off = np.concatenate([self.off, off])
        self.vbase = np.concatenate([self.vbase, vbase])
        self.sslot = np.concatenate([self.sslot, sslot])
        self.dense = np.concatenate([self.dense, np.zeros(dsum, dtype=self.dense.dtype)])
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
        if self._plan is None:
            self._plan = self._bitmap_plan()
        plan = self._plan
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
            need = self._row_loop_attributes(kind)
            vy = np.empty((codes_t.shape[0], step), dtype=np.int64)  # (`count_kernel`)
            for r0 in range(lo, hi, step):
                nr = min(step, hi - r0)
                count_kernel(codes_t, y, self.K, self.battrs, self.blen, self.bcond, kind,
                              self.off, self.vbase, self.sslot, dense, keybuf, vy, need, r0,
                              nr)
                if ns:
                    kb = keybuf[:, :nr].ravel()
                    new_keys.append(kb[kb >= 0])
        if ids.size:
            d, V = codes_t.shape[0], int(voff[-1])
            nbits = V * (self.K + 1) + d + self.K + 2
            rows = min(_BITMAP_ROWS, max(1, _BITMAP_BYTES // (8 * nbits)) * 64)
            bits = np.empty((nbits, _set_words(min(rows, n))), dtype=np.uint64)
            nset = np.empty(V * (self.K + 1), dtype=np.int64)
            for r0 in range(lo, hi, rows):
                bitmap_kernel(codes_t, y, self.K, ids, self.battrs, self.blen, self.bcond,
                               self.off, self.cards, voff, needmiss, dense, bits, nset,
                               r0, min(rows, hi - r0))
        return np.concatenate(new_keys)

    def _row_loop_attributes(self, kind: np.ndarray) -> np.ndarray:
        """need[a] for `count_kernel`: 2 where a ends an unconditioned dense block of 1–4
        attributes counted by the row loop (`kind`), 1 where it leads one, else 0."""
        need = np.zeros(self.cards.shape[0], dtype=np.int64)
        b = np.flatnonzero((kind == KIND_DENSE) & (self.bcond < 0) & (self.blen >= 1)
                           & (self.blen <= 4))
        for t in range(min(3, self._maxlen)):
            lead = b[self.blen[b] > t + 1]
            need[self.battrs[lead, t]] = np.maximum(need[self.battrs[lead, t]], 1)
        need[self.battrs[b, self.blen[b] - 1]] = 2
        return need

    def _bitmap_plan(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(kind for the row-loop kernel, ids of the blocks counted from bit sets, voff,
        needmiss): small dense blocks (`bitmap_cells`) go to `bitmap_kernel`, marked
        empty for the row loop — and, where `BITMAP_CAP` binds (few classes), the larger
        unconditioned pairs of attributes that have value sets anyway, which it counts
        by a pass over the rows off an attribute's most frequent value where that costs
        less than the ANDs (`kernels._skip_routes`: adult's native-country pairs, a
        tenth of the rows); voff[a] is attribute a's first value set (−1: none), voff[d]
        = V; needmiss[a]: a is some such block's missing-child condition."""
        ok = ((self.kind == KIND_DENSE) & (self.bsize <= bitmap_cells(self.K))
              & (self.blen >= 1)
              & (self.blen + (self.bcond >= 0) <= 3))
        ids = np.flatnonzero(ok).astype(np.int64)
        d = int(self.cards.shape[0])
        used = np.zeros(d, dtype=bool)
        for t in range(min(3, self._maxlen)):
            a = self.battrs[ids[self.blen[ids] > t], t] if ids.size else ids
            used[a] = True
        if bitmap_cells(self.K) == BITMAP_CAP and self.bsize.max(initial=0) > BITMAP_CAP \
                and self._maxlen >= 2:  # (`kernels.SKIP_ROW_WORDS`)
            big = np.flatnonzero((self.kind == KIND_DENSE) & ~ok & (self.blen == 2)
                                 & (self.bcond < 0))  # (column 1: the second attribute)
            ok[big[used[self.battrs[big, 0]] & used[self.battrs[big, 1]]]] = True
            ids = np.flatnonzero(ok).astype(np.int64)
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
        vals = np.bincount(inv, weights=allv, minlength=u.size).astype(np.int64)
        kept = vals != 0  # (a subtraction can empty a cell: no key stands for a zero)
        self.skeys, self.svals = u[kept], vals[kept]

    def merge(self, other: "BlockStore", sign: int = 1) -> None:
        """Add another store with the same block list (e.g. counted in a worker); with
        ``sign=-1`` subtract it (rows it counted that this store counted too: k-fold CV's
        training tables are the total minus each fold's)."""
        if other.n_blocks != self.n_blocks or not np.array_equal(other.bsize, self.bsize):
            raise LearnerError("cannot merge count stores with different block layouts")
        if not (np.array_equal(other.kind, self.kind)):
            raise LearnerError("cannot merge count stores with different dense/sparse layouts")
        if self.n_rows + other.n_rows > np.iinfo(np.int32).max:
            self.dense = self.dense.astype(np.int64)
        if sign < 0:
            self.dense -= other.dense.astype(self.dense.dtype)
        else:
            self.dense += other.dense.astype(self.dense.dtype)
        if other.skeys.size:
            self._merge_sparse(other.skeys, other.svals if sign > 0 else -other.svals)
        self.n_rows += other.n_rows if sign > 0 else -other.n_rows

    # ----- reading ---------------------------------------------------------------------
    def arrays(self) -> tuple:
        """(kind, off, vbase, dense, skeys, svals) for `lookup_k` in numba kernels."""
        return self.kind, self.off, self.vbase, self.dense, self.skeys, self.svals

    def block_attributes(self, b: int) -> tuple[int, ...]:
        l = int(self.blen[b])
        return tuple(int(a) for a in self.battrs[b, :l])

    def attribute_sets(self, ids: np.ndarray) -> list[tuple[int, ...]]:
        """`block_attributes` of each block in ``ids`` (in one conversion of the rows)."""
        ids = np.asarray(ids, dtype=np.int64)
        return [tuple(row[:l]) for row, l in zip(self.battrs[ids].tolist(),
                                                 self.blen[ids].tolist())]

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
        return self.class_totals(ids).sum(axis=1)

    def class_totals(self, ids: np.ndarray | None = None) -> np.ndarray:
        """(n_blocks, K) int64: each block's cells summed by class (all blocks, or those
        in ``ids`` — others 0), e.g. #(y, x_a present) from attribute a's block."""
        ids = (np.arange(self.n_blocks, dtype=np.int64) if ids is None
               else np.asarray(ids, dtype=np.int64))
        tot = np.zeros((self.n_blocks, self.K), dtype=np.int64)
        totals_kernel(ids, self.kind, self.off, self.vbase, self.bsize, self.dense,
                      self.skeys, self.svals, tot)
        return tot

    @property
    def nbytes(self) -> int:
        """Bytes held by the count cells (dense cells + sparse keys and values)."""
        return int(self.dense.nbytes + self.skeys.nbytes + self.svals.nbytes)

    def compact_cells(self) -> int:
        """Σ over non-empty blocks of Π|X_i|·K (the compact bound, in cells)."""
        return int(self.bsize.sum())
