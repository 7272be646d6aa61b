"""An attribute's count tables along its parent list (sorted keys, compact configuration
ids) and the leave-one-out step of SKDB (SPEC §4; see the package doc). Classification
reads them through `scoring`."""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.jit import numba
import numpy as np

from workbench.learners.ande.estimates import m_estimate

DENSE_CELLS = 1 << 21
"""Key spaces up to this size, and at most `DENSE_RATIO` times the keys they hold, are
handled by direct indexing (a dense array over the whole space) instead of sorting
(`np.unique`) and binary search (`np.searchsorted`); larger or sparser ones, e.g. KDB5 over
many-valued attributes, stay sorted. The tables are the same either way."""
DENSE_RATIO = 8


def _dense_ok(size: int, n: int) -> bool:
    """Index a key space of `size` directly for `n` keys?"""
    return size <= DENSE_CELLS and size <= DENSE_RATIO * n + 4096


@numba.njit(cache=True, nogil=True)
def _sorted_rank(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys, ascending, and each key's index among them
    (`np.unique(keys, return_inverse=True)`), by a stable sort: for key spaces too large
    to mark (`_ranks`)."""
    n = keys.shape[0]
    inv = np.empty(n, dtype=np.int64)
    order = np.argsort(keys, kind="mergesort")
    uq = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        k = keys[order[i]]
        if m == 0 or uq[m - 1] != k:
            uq[m] = k
            m += 1
        inv[order[i]] = m - 1
    return uq[:m].copy(), inv


@numba.njit(cache=True, nogil=True)
def _ranks(seen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The marked values of a dense space, ascending, and every value's rank among them
    (O(space), no sort)."""
    m = 0
    for v in range(seen.shape[0]):
        m += seen[v]
    uq = np.empty(m + 1, dtype=np.int64)  # (+ 1: every value written, kept when marked)
    rank = np.empty(seen.shape[0], dtype=np.int32)  # (a dense space: ≤ DENSE_CELLS)
    k = 0
    for v in range(seen.shape[0]):
        rank[v] = k
        uq[k] = v
        k += seen[v]
    return uq[:m], rank


_NO_RANKS = np.zeros(0, dtype=np.int32)
_NO_IDS = np.zeros(0, dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def _level(local, n_prev, xp, cp, x, card, y, w, K, offset, dense_cells, dense_ratio):
    """One depth of an attribute's tables: each row's configuration id (the rank of
    (previous id, parent value) among those seen, when `xp` has rows; else the previous
    ids), then #(π, y) and #(π, x, y) in row order (weighted by w when it has rows, else
    1 each), and the counted ones as sorted keys: configuration keys (offset + g) · K + y,
    cell keys ((offset + g) · |X_i| + x) · K + y. A key space is ranked by marking when it
    has at most `dense_cells` keys and `dense_ratio` times the rows (+ 4,096), else by
    sorting (`_dense_ok`); marking, the rows take three passes: keys made and marked, ids
    and #(π, y) with the cell keys made and marked, cells and #(π, x, y).

    Returns (pair keys, ids, configurations, cfg keys, cfg counts, cells (distinct
    (g, x)), cell of each row, #(π, y) as (configurations, K), #(π, x, y) as (cells, K)).
    """
    n = local.shape[0]
    weighted = w.shape[0] > 0
    keys = np.empty(n, dtype=np.int64)
    if xp.shape[0] > 0:
        size = n_prev * cp
        if size <= dense_cells and size <= dense_ratio * n + 4096:
            seen = np.zeros(size, dtype=np.uint8)  # (keys marked as they are made)
            for r in range(n):
                k = local[r] * cp + xp[r]
                keys[r] = k
                seen[np.uint64(k)] = 1  # (unsigned: no negative-index code)
            pairs, rank = _ranks(seen)
            ids = keys  # (each row's key replaced by its rank in the next pass)
            n_cfg = pairs.shape[0]
        else:
            for r in range(n):
                keys[r] = local[r] * cp + xp[r]
            pairs, ids = _sorted_rank(keys)
            rank = _NO_RANKS
            n_cfg = pairs.shape[0]
    else:
        pairs, ids, n_cfg, rank = np.empty(0, dtype=np.int64), local, n_prev, _NO_RANKS
    size = n_cfg * card
    cdense = size <= dense_cells and size <= dense_ratio * n + 4096
    cfg = np.zeros((n_cfg, K))
    ckeys = np.empty(n, dtype=np.int64)
    cseen = np.zeros(size if cdense else 0, dtype=np.uint8)
    for r in range(n):  # ids, #(π, y) and the cell keys (marked) in one pass
        g = ids[r] if rank.shape[0] == 0 else rank[np.uint64(keys[r])]
        ids[r] = g
        cfg[g, y[r]] += w[r] if weighted else 1.0
        ck = g * card + x[r]
        ckeys[r] = ck
        if cdense:
            cseen[np.uint64(ck)] = 1
    if cdense:
        ucell, crank = _ranks(cseen)
        cinv = ckeys
        for r in range(n):
            cinv[r] = crank[np.uint64(ckeys[r])]
    else:
        ucell, cinv = _sorted_rank(ckeys)
    cell = np.zeros((ucell.shape[0], K))
    for r in range(n):
        cell[cinv[r], y[r]] += w[r] if weighted else 1.0
    m = 0
    for g in range(n_cfg):
        for c in range(K):
            m += cfg[g, c] != 0.0
    cfg_keys, cfg_counts = _nonzero_keys(cfg, m, offset * K, K, _NO_IDS)
    m = 0
    for i in range(ucell.shape[0]):
        for c in range(K):
            m += cell[i, c] != 0.0
    cell_keys, cell_counts = _nonzero_keys(cell, m, offset * card * K, K, ucell)
    return pairs, ids, n_cfg, cfg_keys, cfg_counts, ucell, cinv, cfg, cell, cell_keys, cell_counts


@numba.njit(cache=True, nogil=True, inline="always")
def _nonzero_keys(rows, m, base, K, ids):
    """The m nonzero entries of the count rows (i, c) as sorted keys base + (ids[i], or i
    when ids is empty)·K + c and their counts. Where at least 1/16 of the entries are nonzero every one
    is written and kept when nonzero (no branch to mispredict on their pattern: letter
    KDB5 tables −5 %); sparser ones skip the zeros by a branch."""
    keys = np.empty(m + 1, dtype=np.int64)
    counts = np.empty(m + 1)
    e = 0
    for i in range(rows.shape[0]):
        k0 = base + (ids[i] if ids.shape[0] else i) * K
        if 16 * m >= rows.shape[0] * K:
            for c in range(K):
                keys[e] = k0 + c
                counts[e] = rows[i, c]
                e += rows[i, c] != 0.0
        else:
            for c in range(K):
                if rows[i, c] != 0.0:
                    keys[e] = k0 + c
                    counts[e] = rows[i, c]
                    e += 1
    return keys[:m], counts[:m]


_NO_ROWS = np.zeros(0, dtype=np.int64)
_NO_WEIGHTS = np.zeros(0)


def _dense_index(keys: np.ndarray, size: int) -> np.ndarray | None:
    """pos[k] = the index of k in the sorted `keys`, −1 if absent, over [0, size); None if
    the space is too large (the lookups then search the keys)."""
    if not _dense_ok(size, keys.size):
        return None
    pos = np.full(size, -1, dtype=np.int64)
    pos[keys] = np.arange(keys.size, dtype=np.int64)
    return pos


@dataclass
class AttributeTable:
    """Counts of one child attribute for every prefix of its parent list (see module doc)."""

    child: int
    parents: list[int]
    card: int  # |X_i| (declared + 1 if `?` was added)
    pair_keys: list[np.ndarray]  # depth j ≥ 1: sorted keys local_id(j−1) * |X_pj| + x_pj
    offsets: np.ndarray  # global config id of depth j = offsets[j] + local id
    cfg_keys: np.ndarray  # sorted gid * K + y
    cfg_counts: np.ndarray
    cell_keys: np.ndarray  # sorted (gid * card + x) * K + y
    cell_counts: np.ndarray
    # direct-index versions of the pair-key lookups (`_dense_index`; None where too large)
    pair_pos: list = field(default_factory=list)

    def index(self, cards: np.ndarray, known: list | None = None) -> None:
        """Build the direct-index lookups of the parent prefixes (once, after counting);
        `known`: those of the first depths, made while counting (`_mixed_tables`)."""
        self.pair_pos = list(known or [])
        prev = len(self.pair_keys[len(self.pair_pos) - 1]) if self.pair_pos else 1
        for j in range(len(self.pair_pos), len(self.parents)):
            p = self.parents[j]
            self.pair_pos.append(_dense_index(self.pair_keys[j], prev * int(cards[p])))
            prev = len(self.pair_keys[j])


MIXED_CELLS = 1 << 20
"""The depths of an attribute's tables whose full parent-value space — every depth j up
to the last counted this way, Π of its first j parents' cardinalities × |X_i| × K cells —
holds at most this many cells, and at most `MIXED_RATIO` cells per row (+ 4,096), are
counted directly on that space (`_mixed_counts`: one increment per row at the deepest of
them, the shallower ones summed from it); the deeper depths rank their keys depth by
depth from there (`_level`). The tables are the same either way. (2 cells per row:
a sparser space costs more to allocate and scan than ranking its depths; 16 -> 4: fit CPU
adult KDB5 12.7 -> 9.6 ms, SKDB 27.0 -> 23.7, optdigits KDB5 30.6 -> 27.6; 4 -> 2, once
the keys were written without branches: tables letter KDB2 1.49 -> 1.29 ms, adult KDB5
4.62 -> 4.47, adult SKDB 8.05 -> 7.88, the rest within 1 %.)"""
MIXED_RATIO = 2


@numba.njit(cache=True, nogil=True)
def _mixed_counts(X, y, w, child, parents, cards, K):
    """Dense counts #(π_j, x, y) of every depth j over the full parent-value space (mixed
    radix, the first parent most significant, class innermost): depth j's cells at
    at[j] : at[j + 1], configuration k's at at[j] + k·|X_i|·K. One increment per row at
    the deepest depth (weighted by w when it has rows); each shallower depth is the sum
    of the next one over its last parent's values (integer counts: exact). Also returns
    each row's mixed-radix index at the deepest depth (int32: the callers keep the space
    within `MIXED_CELLS`, so every index and cell fits; int32 arithmetic vectorises where
    int64 multiplies do not, adult KDB2's keys 0.35 -> 0.17 ms). Unweighted, the
    increments go to int32 counts, alternate rows to two copies summed after: a float
    increment waits for the last one to the same cell, which few cells make often (fit:
    the counts adult KDB2 1.18 -> 0.60 ms, connect-4 KDB5 5.8 -> 3.2, letter KDB2 0.66 ->
    0.48)."""
    L = parents.shape[0]
    card = cards[child]
    P = np.ones(L + 1, dtype=np.int64)
    for j in range(1, L + 1):
        P[j] = P[j - 1] * cards[parents[j - 1]]
    at = np.zeros(L + 2, dtype=np.int64)
    for j in range(L + 1):
        at[j + 1] = at[j] + P[j] * card * K
    cells = np.zeros(at[L + 1])
    weighted = w.shape[0] > 0
    deep = at[L]
    n = X.shape[0]
    key = np.zeros(n, dtype=np.int32)  # (int32: vector multiplies, half the bytes)
    for j in range(L):  # (parent by parent over the rows: columns read in order)
        p = parents[j]
        cp = np.int32(cards[p])
        for r in range(n):
            key[r] = key[r] * cp + X[r, p]
    if weighted or n >= 1 << 31:
        for r in range(n):  # (unsigned: no negative-index code per increment)
            cells[np.uint64(deep + (key[r] * card + X[r, child]) * K + y[r])] += \
                w[r] if weighted else 1.0
    else:  # the rows' cells first (a loop the compiler vectorises), then int32
        cell = np.empty(n, dtype=np.int32)  # increments into two histograms, even and
        c32, K32 = np.int32(card), np.int32(K)  # odd rows (no wait on the same cell's last)
        for r in range(n):
            cell[r] = (key[r] * c32 + X[r, child]) * K32 + np.int32(y[r])
        size = P[L] * card * K
        H = np.zeros((2, size), dtype=np.int32)
        for r in range(0, n - 1, 2):
            H[0, np.uint64(cell[r])] += 1
            H[1, np.uint64(cell[r + 1])] += 1
        if n % 2:
            H[0, np.uint64(cell[n - 1])] += 1
        for i in range(size):
            cells[deep + i] = H[0, i] + H[1, i]
    block = card * K
    for j in range(L - 1, -1, -1):
        cp = cards[parents[j]]
        for k in range(P[j + 1]):
            src = at[j + 1] + k * block
            dst = at[j] + (k // cp) * block
            for i in range(block):
                cells[dst + i] += cells[src + i]
    return cells, at, P, key


@numba.njit(cache=True, nogil=True)
def _rank_seen(cells, at, P, L, card, K):
    """Ranks of the seen configurations and (configuration, value)s of `_mixed_tables`'
    counts, depth by depth: per (depth, k, x) its cell rank (−1: unseen), per (depth, k)
    its configuration rank, per (depth, k, y) #(π, y), per depth the seen configurations
    and cells, and the counted configuration and cell keys in all. Each (k, x)'s total
    and each (k, y)'s sum in loops of their own, without chains through memory (the
    ranking of letter KDB2's tables 0.14 -> 0.10 ms, adult's 0.125 -> 0.115); each sum
    adds its terms in the order of x, as one at a time would."""
    block = card * K
    nx = at[L + 1] // K
    tot = np.zeros(nx)  # per (depth, k, x): Σ_y, classes added in order
    for c in range(K):
        for i in range(nx):
            tot[i] += cells[i * K + c]
    n_cell_keys = 0
    for i in range(at[L + 1]):
        n_cell_keys += cells[i] != 0.0
    crank = np.empty(nx, dtype=np.int64)  # per (depth, k, x): cell rank
    grank = np.empty(at[L + 1] // block, dtype=np.int64)  # per (depth, k): config rank
    csum = np.zeros(at[L + 1] // card)  # per (depth, k, y): #(π, y) (seen configurations)
    n_cfg = np.zeros(L + 1, dtype=np.int64)
    n_cell = np.zeros(L + 1, dtype=np.int64)
    n_cfg_keys = 0
    for j in range(L + 1):
        g0 = at[j] // block
        ncell, ncfg = 0, 0
        for k in range(P[j]):
            r0 = (g0 + k) * card
            seen = False
            for x in range(card):  # (selects, no branch on the cells' pattern)
                nz = tot[r0 + x] != 0.0
                crank[r0 + x] = ncell if nz else -1
                ncell += nz
                seen |= nz
            grank[g0 + k] = ncfg if seen else -1
            ncfg += seen
        n_cfg[j], n_cell[j] = ncfg, ncell
    for x in range(card):  # (configurations innermost: no chain of additions)
        for g in range(at[L + 1] // block):
            for c in range(K):
                csum[g * K + c] += cells[(g * card + x) * K + c]
    for g in range(at[L + 1] // block):
        if grank[g] >= 0:
            for c in range(K):
                n_cfg_keys += csum[g * K + c] != 0.0
    return crank, grank, csum, n_cfg, n_cell, n_cfg_keys, n_cell_keys


@numba.njit(cache=True, nogil=True)
def _loo_cells(cells, at, L, card, K, X, child, parents, cards, n_cell, crank, cell_ids,
               depth):
    """`_mixed_tables`' leave-one-out part: each row's cell at every depth into cell_ids
    and its back-off depth into depth (the deepest whose (configuration, value) is
    counted at least twice, so that it stays seen without the row); returns each row's
    mixed-radix index at the deepest depth."""
    n = X.shape[0]
    # per depth: where its (k, x) entries start in crank, the rank of its first cell
    # among all depths', its last parent and that parent's cardinality
    base = np.empty(L + 1, dtype=np.int64)
    first = np.empty(L + 1, dtype=np.int64)
    pj = np.zeros(L + 1, dtype=np.int64)
    cpj = np.ones(L + 1, dtype=np.int64)
    twice = np.zeros(at[L + 1] // K, dtype=np.bool_)  # a (k, x) counted ≥ 2 times
    cb = 0
    for j in range(L + 1):
        base[j] = at[j] // K
        first[j] = cb
        cb += n_cell[j]
        if j > 0:
            pj[j] = parents[j - 1]
            cpj[j] = cards[parents[j - 1]]
    for i in range(at[L + 1] // K):
        tot = 0.0
        for c in range(K):
            tot += cells[i * K + c]
        twice[i] = tot >= 2.0
    key = np.zeros(n, dtype=np.int32)  # (as `_mixed_counts`': within `MIXED_CELLS`)
    ok = np.ones(n, dtype=np.bool_)
    for r in range(n):
        cell_ids[0, r] = first[0] + crank[np.uint64(base[0] + X[r, child])]
    for j in range(1, L + 1):  # (depth by depth over the rows: columns read in order)
        p, cp, b0, f0 = pj[j], cpj[j], base[j], first[j]
        for r in range(n):
            key[r] = key[r] * cp + X[r, p]
            i = np.uint64(b0 + key[r] * card + X[r, child])  # (unsigned: no wrap code)
            cell_ids[j, r] = f0 + crank[i]
            ok[r] = ok[r] and twice[i]
            depth[r] = j if ok[r] else depth[r]  # (a select: no branch per row)
    return key


@numba.njit(cache=True, nogil=True)
def _loo_mats(cells, at, P, L, card, K, grank, crank, csum, n_cfg, n_cell, offsets, loo):
    """`_mixed_tables`' count rows for leave-one-out (empty without `loo`): per seen
    configuration (global id) its #(π, y) row, per counted (configuration, value) its
    configuration and its cells' row. (A pass of its own: tested inside the keys' loop,
    `loo` cost that loop a third of its time where the compiler cannot drop it — a
    table built on its own, `build_table`: adult KDB2's native-country 133 -> 95 µs.)"""
    block = card * K
    n_cells = 0
    for j in range(L + 1):
        n_cells += n_cell[j]
    cfg_mats = np.zeros((offsets[L] + n_cfg[L] if loo else 0, K))
    cell_mats = np.empty((n_cells if loo else 0, K))
    cell_cfg = np.empty(n_cells if loo else 0, dtype=np.int64)
    cb = 0
    for j in range(L + 1 if loo else 0):
        g0 = at[j] // block
        for k in range(P[j]):
            g = grank[g0 + k]
            if g < 0:
                continue
            for c in range(K):
                cfg_mats[offsets[j] + g, c] = csum[(g0 + k) * K + c]
            for x in range(card):
                i = at[j] + (k * card + x) * K
                r = crank[g0 * card + k * card + x]
                if r >= 0:
                    cell_cfg[cb + r] = offsets[j] + g
                    for c in range(K):
                        cell_mats[cb + r, c] = cells[i + c]
        cb += n_cell[j]
    return cfg_mats, cell_cfg, cell_mats


@numba.njit(cache=True, nogil=True)
def _mixed_tables(cells, at, P, key, X, y, child, parents, cards, K, loo):
    """The tables of `build_table` from `_mixed_counts`: a configuration seen in training
    (any count) gets the rank of its mixed-radix index among the seen ones of its depth —
    the order of the keys (previous id, parent value) the depth-by-depth ranking sorts —
    and the counted cells become the same sorted keys. With `loo`, also each row's cell
    at every depth, the cells' configurations, their count rows, the configurations'
    count rows and the rows' back-off depth (see `build_table`); and, when `key` (each
    row's mixed-radix index at the deepest depth) has rows, each row's configuration id
    there (for the depths ranked after these)."""
    L = parents.shape[0]
    card = cards[child]
    block = card * K
    n = X.shape[0]
    need_ids = key.shape[0] > 0
    crank, grank, csum, n_cfg, n_cell, n_cfg_keys, n_cell_keys = _rank_seen(
        cells, at, P, L, card, K)
    offsets = np.zeros(L + 1, dtype=np.int64)
    for j in range(1, L + 1):
        offsets[j] = offsets[j - 1] + n_cfg[j - 1]
    pair_keys = np.empty(offsets[L] + n_cfg[L] - 1, dtype=np.int64)
    pos_at = np.zeros(L + 1, dtype=np.int64)  # depth j's direct index: pos[pos_at[j - 1]:
    for j in range(1, L + 1):                 # pos_at[j]] (`_dense_index`)
        pos_at[j] = pos_at[j - 1] + n_cfg[j - 1] * cards[parents[j - 1]]
    pos = np.full(pos_at[L], -1, dtype=np.int64)
    cfg_keys = np.empty(n_cfg_keys + 1, dtype=np.int64)  # (+ 1: written, not kept)
    cfg_counts = np.empty(n_cfg_keys + 1)
    cell_keys = np.empty(n_cell_keys + 1, dtype=np.int64)
    cells_seen = 0  # (the cells of the seen (configuration, value)s)
    for j in range(L + 1):
        cells_seen += n_cell[j] * K
    dense = 16 * n_cell_keys >= cells_seen  # (1/16 of them counted: keys without branch)
    cell_counts = np.empty(n_cell_keys + 1)
    a = 0
    b = 0
    e = 0
    for j in range(L + 1):
        g0 = at[j] // block
        cp = cards[parents[j - 1]] if j > 0 else 1
        gp = at[j - 1] // (card * K) if j > 0 else 0
        for k in range(P[j]):
            g = grank[g0 + k]
            if g < 0:
                continue
            if j > 0:
                pk = grank[gp + k // cp] * cp + k % cp
                pair_keys[e] = pk
                pos[pos_at[j - 1] + pk] = g
                e += 1
            s0 = (g0 + k) * K
            for c in range(K):  # (every class written, kept when counted: no branch)
                tot = csum[s0 + c]
                cfg_keys[a] = (offsets[j] + g) * K + c
                cfg_counts[a] = tot
                a += tot != 0.0
            for x in range(card):
                i = at[j] + (k * card + x) * K
                k0 = ((offsets[j] + g) * card + x) * K
                if dense:  # (every cell written, kept when counted: no branch)
                    for c in range(K):
                        v = cells[i + c]
                        cell_keys[b] = k0 + c
                        cell_counts[b] = v
                        b += v != 0.0
                else:
                    for c in range(K):
                        if cells[i + c] != 0.0:
                            cell_keys[b] = k0 + c
                            cell_counts[b] = cells[i + c]
                            b += 1
    cfg_mats, cell_cfg, cell_mats = _loo_mats(cells, at, P, L, card, K, grank, crank, csum,
                                              n_cfg, n_cell, offsets, loo)
    cell_ids = np.empty((L + 1 if loo else 0, n), dtype=np.int32)
    depth = np.zeros(n if loo else 0, dtype=np.int64)
    if loo:
        key = _loo_cells(cells, at, L, card, K, X, child, parents, cards, n_cell, crank,
                         cell_ids, depth)
    ids = np.empty(n if need_ids else 0, dtype=np.int64)
    gL = at[L] // block
    for r in range(ids.shape[0]):
        ids[r] = grank[np.uint64(gL + key[r])]
    return (pair_keys, n_cfg, offsets, cfg_keys[:n_cfg_keys], cfg_counts[:n_cfg_keys],
            cell_keys[:n_cell_keys], cell_counts[:n_cell_keys], cell_ids, cell_cfg,
            cell_mats, cfg_mats, depth, ids, pos, pos_at)


@numba.njit(cache=True, nogil=True)
def _mixed(X, y, w, child, parents, cards, K, loo, need_ids):
    """`_mixed_counts` then `_mixed_tables` in one compiled call (each row's configuration
    id at the deepest depth when `need_ids`): one dispatch and no boxed intermediate
    arrays per attribute."""
    cells, at, P, key = _mixed_counts(X, y, w, child, parents, cards, K)
    return _mixed_tables(cells, at, P, key if need_ids else key[:0], X, y, child, parents,
                         cards, K, loo)


@numba.njit(cache=True, nogil=True)
def _mixed_many(X, y, children, par, par_at, cards, K):
    """`_mixed` (unweighted, no LOO, no ids) of many attributes (parents par[par_at[a] :
    par_at[a + 1]]) in one compiled call: one dispatch, no boxed arrays per attribute. (One
    pass over the rows counting every attribute's deepest depth at once cost 4x the
    column-wise passes of `_mixed_counts` here: adult KDB2 2.4 against 0.63 ms.) Returns,
    end to end over the attributes: pair keys, configurations per depth, depth offsets,
    direct-index bounds per depth (each attribute's L + 1 from par_at[a] + a), direct
    indexes, configuration keys and counts, cell keys and counts (counts as int64), and
    where each attribute's pair keys, direct indexes, configuration keys and cell keys
    begin (A + 1 each)."""
    A = children.shape[0]
    depths = par_at[A] + A
    n_cfg, offs, pos_at = (np.empty(depths, dtype=np.int64), np.empty(depths, dtype=np.int64),
                           np.empty(depths, dtype=np.int64))
    bounds = np.zeros((4, A + 1), dtype=np.int64)  # pair keys, direct indexes, cfg, cells
    parts = []
    for a in range(A):
        child, parents = children[a], par[par_at[a]:par_at[a + 1]]
        L = parents.shape[0]
        (pk, nc, of, ck, cc, kk, kc, _, _, _, _, _, _, pos, pa) = _mixed(
            X, y, _NO_WEIGHTS, child, parents, cards, K, False, False)
        d0 = par_at[a] + a
        n_cfg[d0:d0 + L + 1] = nc
        offs[d0:d0 + L + 1] = of
        pos_at[d0:d0 + L + 1] = pa
        bounds[0, a + 1] = bounds[0, a] + pk.shape[0]
        bounds[1, a + 1] = bounds[1, a] + pos.shape[0]
        bounds[2, a + 1] = bounds[2, a] + ck.shape[0]
        bounds[3, a + 1] = bounds[3, a] + kk.shape[0]
        parts.append((pk, pos, ck, cc, kk, kc))
    pairs, pos = np.empty(bounds[0, A], dtype=np.int64), np.empty(bounds[1, A], dtype=np.int64)
    cfg_keys, cfg_counts = (np.empty(bounds[2, A], dtype=np.int64),
                            np.empty(bounds[2, A], dtype=np.int64))
    cell_keys, cell_counts = (np.empty(bounds[3, A], dtype=np.int64),
                              np.empty(bounds[3, A], dtype=np.int64))
    for a in range(A):
        pk, ps, ck, cc, kk, kc = parts[a]
        pairs[bounds[0, a]:bounds[0, a + 1]] = pk
        pos[bounds[1, a]:bounds[1, a + 1]] = ps
        for i in range(ck.shape[0]):
            cfg_keys[bounds[2, a] + i] = ck[i]
            cfg_counts[bounds[2, a] + i] = np.int64(cc[i])
        for i in range(kk.shape[0]):
            cell_keys[bounds[3, a] + i] = kk[i]
            cell_counts[bounds[3, a] + i] = np.int64(kc[i])
    return (pairs, n_cfg, offs, pos_at, pos, cfg_keys, cfg_counts, cell_keys, cell_counts,
            bounds)


def _mixed_head(n: int, cards: np.ndarray | list[int], child: int, parents: list[int],
                K: int) -> int:
    """The deepest depth whose tables are counted on the full parent-value space, with
    the depths above it (`MIXED_CELLS`: the spaces of depths 0..j together grow with j);
    −1: none (no rows)."""
    card = int(cards[child])
    limit, head, configs, cells = min(MIXED_CELLS, MIXED_RATIO * n + 4096), -1, 1, 0
    for j in range(len(parents) + 1 if n > 0 else 0):
        cells += configs * card * K
        if cells > limit:
            break
        head = j
        configs *= int(cards[parents[j]]) if j < len(parents) else 1
    return head


def build_tables(X: np.ndarray, y: np.ndarray, attributes: list[int],
                 parents: list[list[int]], cards: np.ndarray, K: int
                 ) -> dict[int, "AttributeTable"]:
    """`build_table` of every attribute of `attributes` (in that order) with its
    `parents[a]`: those counted whole on their parent-value space (`_mixed_head`) in one
    compiled call (`_mixed_many`), the others one by one. The same tables."""
    n = X.shape[0]
    y = np.asarray(y, dtype=np.int64)
    card = [int(c) for c in cards]  # (Python ints for `_mixed_head`'s products)
    many = [a for a in attributes if n < 1 << 31 and
            _mixed_head(n, card, a, parents[a], K) == len(parents[a])]
    tables = {}
    if many:
        par_at = starts([len(parents[a]) for a in many])
        cards64 = np.asarray(cards, dtype=np.int64)
        (pairs, n_cfg, offs, pos_at, pos, cfg_keys, cfg_counts, cell_keys, cell_counts,
         bounds) = _mixed_many(X, y, np.array(many, dtype=np.int64),
                               np.array([p for a in many for p in parents[a]], dtype=np.int64),
                               par_at, cards64, K)
        nc, pa, (kb, pb, gb, cb) = n_cfg.tolist(), pos_at.tolist(), bounds.tolist()
        for i, a in enumerate(many):
            L, d0 = len(parents[a]), int(par_at[i]) + i
            pair_keys, known, at = [], [], kb[i]
            for j in range(1, L + 1):
                pair_keys.append(pairs[at:at + nc[d0 + j]])
                at += nc[d0 + j]
                lo, hi = pb[i] + pa[d0 + j - 1], pb[i] + pa[d0 + j]
                known.append(pos[lo:hi] if _dense_ok(hi - lo, nc[d0 + j]) else None)
            tables[a] = _finish(AttributeTable(
                child=a, parents=list(parents[a]), card=int(cards[a]), pair_keys=pair_keys,
                offsets=offs[d0:d0 + L + 1], cfg_keys=cfg_keys[gb[i]:gb[i + 1]],
                cfg_counts=cfg_counts[gb[i]:gb[i + 1]], cell_keys=cell_keys[cb[i]:cb[i + 1]],
                cell_counts=cell_counts[cb[i]:cb[i + 1]]), cards, known)
    return {a: tables[a] if a in tables else build_table(X, y, a, parents[a], cards, K)
            for a in attributes}


@numba.njit(cache=True, nogil=True)
def _deeper(cell, cinv, j, ok, depth):
    """SKDB's back-off depth, one depth on: a row whose cells at depths 1..j all count it
    and another (Σ over classes ≥ 2) may use depth j."""
    for r in range(cinv.shape[0]):  # (selects: no branch per row)
        tot = 0.0
        for c in range(cell.shape[1]):
            tot += cell[cinv[r], c]
        o = ok[r] and tot >= 2.0
        ok[r] = o
        depth[r] = j if o else depth[r]


def build_table(
    X: np.ndarray,
    y: np.ndarray,
    child: int,
    parents: list[int],
    cards: np.ndarray,
    K: int,
    loo: bool = False,
    weights: np.ndarray | None = None,
):
    """Count tables of `child` (+ the per-row arrays of the LOO pass if `loo`).

    With `weights`, row r stands for weights[r] identical rows (the distinct rows of a
    `TupleCounts`, as out-of-core training gives them): the same tables as the full rows.

    With `loo`, also returns ``(cell_ids, cell_cfg, cell_counts, cfg_counts, depth)``:
    cell_ids (m+1, n, int32) = each training row's row in cell_counts (#(π_j, x_i, y), shape
    (cells of all depths, K)) at every depth j; cell_cfg (cells,) = the row of each cell's
    parent configuration in cfg_counts (#(π_j, y), shape (configs of all depths, K)); depth
    (n,) = the deepest prefix whose count of the row's child value with those parents (all
    classes) is ≥ 2 (≥ 1 after removing the row).
    """
    n = X.shape[0]
    card = int(cards[child])
    y = np.asarray(y, dtype=np.int64)
    w = _NO_WEIGHTS if weights is None else np.asarray(weights, dtype=np.float64)
    L = len(parents)
    head = _mixed_head(n, cards, child, parents, K)  # (depths 0..head: on the full space)
    pair_keys: list[np.ndarray] = []
    offsets: list = []
    cfg_k, cfg_c, cell_k, cell_c = [], [], [], []
    cell_ids, cell_cfg, cell_mats, cfg_mats = [], [], [], []
    ok_prev = np.ones(n if loo else 0, dtype=bool)
    depth = np.zeros(n if loo else 0, dtype=np.int64)
    if head >= 0:
        cards = np.asarray(cards, dtype=np.int64)
        par = np.asarray(parents[:head], dtype=np.int64)
        Xi = np.asarray(X)  # (integer codes of any width: the kernels widen each)
        (pairs, n_cfgs, offs, ck, cc, kk, kc, ids, cfg_of, cmat, fmat, depth,
         local, pos, pos_at) = _mixed(Xi, y, w, child, par, cards, K, loo, head < L)
        ends = np.cumsum(n_cfgs[1:]).tolist()  # (depth j's pair keys: views of `pairs`)
        pair_keys = [pairs[a:b] for a, b in zip([0] + ends[:-1], ends)]
        cuts = pos_at.tolist()  # (the direct indexes `_dense_index` would make: views)
        ok = [_dense_ok(b - a, len(k)) for a, b, k in zip(cuts[:-1], cuts[1:], pair_keys)]
        known = [(pos[a:b] if all(ok) else pos[a:b].copy()) if o else None
                 for a, b, o in zip(cuts[:-1], cuts[1:], ok)]
        offsets = list(offs)
        cfg_k, cfg_c, cell_k, cell_c = [ck], [cc], [kk], [kc]
        if loo:
            cell_ids, cell_cfg, cell_mats, cfg_mats = list(ids), [cfg_of], [cmat], [fmat]
            ok_prev = depth == head
        n_cfg = int(n_cfgs[-1])
        offset = int(offs[-1]) + n_cfg
        cell_base = len(cmat) if loo else 0
    else:
        local = np.zeros(n, dtype=np.int64)
        n_cfg, offset, cell_base, known = 1, 0, 0, None
    x = np.ascontiguousarray(X[:, child], dtype=np.int64) if head < L else _NO_ROWS
    for j in range(head + 1, L + 1):  # the deeper depths ranked depth by depth
        xp, cp = _NO_ROWS, 1
        if j > 0:
            p = parents[j - 1]
            xp, cp = np.ascontiguousarray(X[:, p], dtype=np.int64), int(cards[p])
        pairs, local, n_cfg, ck, cc, ucell, cinv, cfg, cell, kk, kc = _level(
            local, n_cfg, xp, cp, x, card, y, w, K, offset, DENSE_CELLS, DENSE_RATIO)
        if j > 0:
            pair_keys.append(pairs)
        offsets.append(offset)
        cfg_k.append(ck)
        cfg_c.append(cc)
        cell_k.append(kk)
        cell_c.append(kc)
        if loo:
            cell_ids.append(cinv + cell_base)
            cell_cfg.append(ucell // card + offset)
            cell_mats.append(cell)
            cfg_mats.append(cfg)
            cell_base += len(ucell)
            if j > 0:
                _deeper(cell, cinv, j, ok_prev, depth)
        offset += n_cfg
    table = AttributeTable(
        child=child,
        parents=list(parents),
        card=card,
        pair_keys=list(pair_keys),
        offsets=np.asarray(offsets, dtype=np.int64),
        cfg_keys=joined(cfg_k),
        cfg_counts=joined(cfg_c),
        cell_keys=joined(cell_k),
        cell_counts=joined(cell_c),
    )
    if not loo:
        return _finish(table, cards, known)
    return _finish(table, cards, known, (np.stack(cell_ids).astype(np.int32, copy=False),
                                  np.concatenate(cell_cfg),
                                  np.concatenate(cell_mats), np.concatenate(cfg_mats), depth))


def joined(parts: list[np.ndarray], dtype: type = np.int64) -> np.ndarray:
    """Keys or counts end to end as `dtype` (one part: no copy when of that type; none:
    empty)."""
    if not parts:
        return np.zeros(0, dtype)
    return (parts[0] if len(parts) == 1 else np.concatenate(parts)).astype(dtype, copy=False)


def starts(sizes) -> np.ndarray:
    """Where each of consecutive parts of `sizes` begins, and their total (int64)."""
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    if len(sizes):
        np.cumsum(sizes, out=out[1:])
    return out


def _finish(table: AttributeTable, cards: np.ndarray, known: list | None,
            loo: tuple | None = None):
    """Index the table (`known`: the first depths' direct indexes, made while counting);
    with the LOO pass's arrays (cell ids, cells' configurations, cell and configuration
    count rows, depths), return them with it (`build_table`)."""
    table.index(cards, known)
    if loo is None:
        return table
    cell_ids, cell_cfg, cell_mats, cfg_mats, depth = loo
    return (table, cell_ids, cell_cfg.astype(np.int64, copy=False),
            cell_mats.astype(np.float64, copy=False), cfg_mats.astype(np.float64, copy=False),
            depth)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def loo_factors(card, cell_cfg, cell_counts, cfg_counts, m):
    """The LOO pass's factors of every cell c and class y: F = (#cell + m/|X_i|) /
    (#cfg + m), with all rows, and own = (#cell − 1 + m/|X_i|) / (#cfg − 1 + m), the
    factor of a held-out row of class y in that cell (its own count taken out; a class
    not in the cell gives an unused value)."""
    share = m / card
    F = np.empty(cell_counts.shape)
    own = np.empty(cell_counts.shape)
    for c in range(cell_counts.shape[0]):
        g = cell_cfg[c]
        for y in range(cell_counts.shape[1]):
            n = cell_counts[c, y]
            t = cfg_counts[g, y]
            own[c, y] = m_estimate(n - 1.0, share, t - 1.0, m)
            F[c, y] = m_estimate(n, share, t, m)
    return F, own


@numba.njit(cache=True, nogil=True)
def loo_step(S, y, depth, cell_ids, F, own, zero_one, out):
    """Extend every candidate k's LOO class distributions by one attribute, add the losses.

    S (n, k_max+1, K) holds normalised distributions; for row r and candidate k the factor
    is P_loo(x_i | π at depth min(k, depth[r]), y) of the row's cell c there: F[c, y] for
    the other classes and own[c, y] for the row's class (`loo_factors`). The loss of each
    k (Σ (1 − P(y*|x))² or the number of errors) is added to out[k], row by row in order,
    so that chunks of rows in file order sum exactly as all rows at once do. A row's
    candidates lie side by side in S: one pass over the rows. With two or three classes
    each cell's factor rows are laid out first, one per class of the held-out row
    (G[c, y*] = F[c] with own[c, y*] at y*): a candidate reads K factors in a row, without
    a choice per class (connect-4: 33 → 21 ms). Two and three classes get their own
    compiled loops (`_loo_rows` with a literal K).
    """
    K = S.shape[2]
    if K == 2:
        _loo_rows(S, y, depth, cell_ids, F, own, zero_one, out, 2)
    elif K == 3:
        _loo_rows(S, y, depth, cell_ids, F, own, zero_one, out, 3)
    else:
        _loo_rows(S, y, depth, cell_ids, F, own, zero_one, out, K)


@numba.njit(cache=True, nogil=True, inline="always")
def _loo_rows(S, y, depth, cell_ids, F, own, zero_one, out, K):
    """`loo_step` for K classes."""
    n, n_k = S.shape[0], S.shape[1]
    acc = out.copy()
    G = np.empty(F.shape[0] * K * K if K == 2 or K == 3 else 0)
    for c in range(F.shape[0] if K == 2 or K == 3 else 0):
        for ys in range(K):
            for cls in range(K):
                G[(c * K + ys) * K + cls] = own[c, ys] if cls == ys else F[c, cls]
    tk = np.empty(n_k)
    for r in range(n):
        ys = y[r]
        d = depth[r]
        # every candidate's products (its cell's factors, the held-out class's own; read in
        # place: a copy of the row's factors per depth cost a sixth of the pass), then
        # their sums three at a time: each in class order, the three chains of additions
        # interleaved, not one waiting on the last
        if K != 2 and K != 3:
            for k in range(n_k):
                c = cell_ids[k if k < d else d, r]
                held = S[r, k, ys] * own[c, ys]
                for cls in range(K):
                    S[r, k, cls] *= F[c, cls]
                S[r, k, ys] = held
            for k in range(0, n_k, 3):
                k1, k2 = min(k + 1, n_k - 1), min(k + 2, n_k - 1)  # (the last again: same)
                t0 = t1 = t2 = 0.0
                for cls in range(K):
                    t0 += S[r, k, cls]
                    t1 += S[r, k1, cls]
                    t2 += S[r, k2, cls]
                tk[k], tk[k1], tk[k2] = t0, t1, t2
            for k in range(n_k):
                t = 1.0 / tk[k]
                for cls in range(K):
                    S[r, k, cls] *= t
        for k in range(n_k):
            j = k if k < d else d
            if K == 2:  # (two and three classes spelled out: a loop over K costs 2x here)
                b = (cell_ids[j, r] * 2 + ys) * 2
                v0 = S[r, k, 0] * G[b]
                v1 = S[r, k, 1] * G[b + 1]
                t = 1.0 / ((0.0 + v0) + v1)
                S[r, k, 0] = v0 * t
                S[r, k, 1] = v1 * t
            elif K == 3:
                b = (cell_ids[j, r] * 3 + ys) * 3
                v0 = S[r, k, 0] * G[b]
                v1 = S[r, k, 1] * G[b + 1]
                v2 = S[r, k, 2] * G[b + 2]
                t = 1.0 / (((0.0 + v0) + v1) + v2)
                S[r, k, 0] = v0 * t
                S[r, k, 1] = v1 * t
                S[r, k, 2] = v2 * t
            if zero_one:
                best = 0
                for cls in range(K):
                    if S[r, k, cls] > S[r, k, best]:
                        best = cls
                if best != ys:
                    acc[k] += 1.0
            else:
                e = 1.0 - S[r, k, ys]
                acc[k] += e * e
    for k in range(n_k):
        out[k] = acc[k]
