"""An attribute's count tables along its parent list (sparse, compact configuration ids),
the leave-one-out step of SKDB and the test-time lookups (SPEC §4; see the package doc)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from workbench.jit import numba
import numpy as np

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
def _ranked(local: np.ndarray, mult: int, x: np.ndarray, size: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys local·mult + x (all in [0, size)), ascending, and each row's
    index among them: one marking pass, one pass over the space, one mapping pass."""
    n = local.shape[0]
    seen = np.zeros(size, dtype=np.uint8)  # (small: the marks stay in cache)
    for r in range(n):
        seen[local[r] * mult + x[r]] = 1
    m = 0
    for v in range(size):
        m += seen[v]
    uq = np.empty(m, dtype=np.int64)
    rank = np.empty(size, dtype=np.int32)  # (size ≤ DENSE_CELLS)
    m = 0
    for v in range(size):
        rank[v] = m
        if seen[v]:
            uq[m] = v
            m += 1
    inv = np.empty(n, dtype=np.int64)
    for r in range(n):
        inv[r] = rank[local[r] * mult + x[r]]
    return uq, inv


def _unique_inverse(local: np.ndarray, mult: int, x: np.ndarray, size: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(local * mult + x, return_inverse=True)` for keys in [0, size): by
    marking a dense array when the space is small (O(n + size), no sort, `_ranked`), else
    by sorting."""
    if local.size == 0 or not _dense_ok(size, local.size):
        uq, inv = np.unique(local * mult + x, return_inverse=True)
        return uq, inv.reshape(-1).astype(np.int64)
    return _ranked(local, mult, np.asarray(x, dtype=np.int64), size)


def _dense_index(keys: np.ndarray, size: int) -> np.ndarray | None:
    """pos[k] = the index of k in the sorted `keys`, −1 if absent, over [0, size); None if
    the space is too large (the lookups then search the keys)."""
    if not _dense_ok(size, keys.size):
        return None
    pos = np.full(size, -1, dtype=np.int64)
    pos[keys] = np.arange(keys.size, dtype=np.int64)
    return pos


@dataclass
class _AttributeTable:
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
    # direct-index versions of the key lookups (`_dense_index`; None where too large)
    pair_pos: list = field(default_factory=list)
    cfg_pos: np.ndarray | None = None
    cell_pos: np.ndarray | None = None
    flat: "_Lookups | None" = None  # the lookups as flat arrays (`_flat`), when first read

    def index(self, cards: np.ndarray, K: int) -> None:
        """Build the direct-index lookups (once, at the end of training)."""
        self.pair_pos = []
        prev = 1
        for j, p in enumerate(self.parents):
            self.pair_pos.append(_dense_index(self.pair_keys[j], prev * int(cards[p])))
            prev = len(self.pair_keys[j])
        n_cfg = int(self.offsets[-1]) + prev if len(self.offsets) else 1
        self.cfg_pos = _dense_index(self.cfg_keys, n_cfg * K)
        self.cell_pos = _dense_index(self.cell_keys, n_cfg * self.card * K)


def _build_table(
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
    cell_ids (m+1, n) = each training row's row in cell_counts (#(π_j, x_i, y), shape
    (cells of all depths, K)) at every depth j; cell_cfg (cells,) = the row of each cell's
    parent configuration in cfg_counts (#(π_j, y), shape (configs of all depths, K)); depth
    (n,) = the deepest prefix whose count of the row's child value with those parents (all
    classes) is ≥ 2 (≥ 1 after removing the row).
    """
    n = X.shape[0]
    card = int(cards[child])
    x = X[:, child]
    local = np.zeros(n, dtype=np.int64)
    n_cfg = 1
    offset = 0
    pair_keys: list[np.ndarray] = []
    offsets = []
    cfg_k, cfg_c, cell_k, cell_c = [], [], [], []
    cell_ids, cell_cfg, cell_mats, cfg_mats = [], [], [], []
    cell_base = 0
    ok_prev = np.ones(n, dtype=bool)
    depth = np.zeros(n, dtype=np.int64)
    for j in range(len(parents) + 1):
        if j > 0:
            p = parents[j - 1]
            uq, local = _unique_inverse(local, int(cards[p]), X[:, p], n_cfg * int(cards[p]))
            pair_keys.append(uq)
            n_cfg = len(uq)
        offsets.append(offset)
        ccount = np.bincount(local * K + y, weights=weights, minlength=n_cfg * K)
        nz = np.flatnonzero(ccount)
        cfg_k.append(nz + offset * K)
        cfg_c.append(ccount[nz])
        ucell, cinv = _unique_inverse(local, card, x, n_cfg * card)
        cellcount = np.bincount(cinv * K + y, weights=weights, minlength=len(ucell) * K)
        nz = np.flatnonzero(cellcount)
        cell_k.append((ucell[nz // K] + offset * card) * K + nz % K)
        cell_c.append(cellcount[nz])
        if loo:
            cell_ids.append(cinv + cell_base)
            cell_cfg.append(ucell // card + offset)
            cell_mats.append(cellcount.reshape(-1, K))
            cfg_mats.append(ccount.reshape(-1, K))
            cell_base += len(ucell)
            if j > 0:
                tot = np.bincount(cinv, weights=weights, minlength=len(ucell))[cinv]
                ok_prev = ok_prev & (tot >= 2)
                depth[ok_prev] = j
        offset += n_cfg
    table = _AttributeTable(
        child=child,
        parents=list(parents),
        card=card,
        pair_keys=pair_keys,
        offsets=np.asarray(offsets, dtype=np.int64),
        cfg_keys=np.concatenate(cfg_k).astype(np.int64),
        cfg_counts=np.concatenate(cfg_c).astype(np.int64),
        cell_keys=np.concatenate(cell_k).astype(np.int64),
        cell_counts=np.concatenate(cell_c).astype(np.int64),
    )
    table.index(cards, K)
    if loo:
        return (
            table,
            np.stack(cell_ids),
            np.concatenate(cell_cfg).astype(np.int64),
            np.concatenate(cell_mats).astype(np.float64),
            np.concatenate(cfg_mats).astype(np.float64),
            depth,
        )
    return table


def _loo_factors(card: int, cell_cfg: np.ndarray, cell_counts: np.ndarray,
                 cfg_counts: np.ndarray) -> np.ndarray:
    """F[c, y] = (#cell + 1/|X_i|) / (#cfg + 1): the full-data factor of every cell of the
    LOO pass (`_loo_step` takes the row's own count out for its class)."""
    return (cell_counts + 1.0 / card) / (cfg_counts[cell_cfg] + 1.0)


@numba.njit(cache=True, nogil=True)
def _loo_step(S, y, card, depth, cell_ids, cell_cfg, F, cell_counts, cfg_counts, zero_one, out):
    """Extend every candidate k's LOO class distributions by one attribute, add the losses.

    S (k_max+1, n, K) holds normalised distributions; for row r and candidate k the factor
    is P_loo(x_i | π at depth min(k, depth[r]), y): F[c, y] = (#cell + 1/|X_i|)/(#cfg + 1)
    for the other classes and, for the row's own class, the same with the row removed. The
    loss of each k (Σ (1 − P(y*|x))² or the number of errors) is added to out[k], row by row
    in order, so that chunks of rows in file order sum exactly as all rows at once do.
    """
    n_k, n, K = S.shape
    inv_card = 1.0 / card
    for k in range(n_k):
        acc = out[k]
        for r in range(n):
            ys = y[r]
            j = depth[r]
            if k < j:
                j = k
            c = cell_ids[j, r]
            own = (cell_counts[c, ys] - 1.0 + inv_card) / (cfg_counts[cell_cfg[c], ys] - 1.0 + 1.0)
            tot = 0.0
            for cls in range(K):
                if cls == ys:
                    v = S[k, r, cls] * own
                else:
                    v = S[k, r, cls] * F[c, cls]
                S[k, r, cls] = v
                tot += v
            inv = 1.0 / tot
            best = 0
            for cls in range(K):
                S[k, r, cls] *= inv
                if S[k, r, cls] > S[k, r, best]:
                    best = cls
            if zero_one:
                if best != ys:
                    acc += 1.0
            else:
                e = 1.0 - S[k, r, ys]
                acc += e * e
        out[k] = acc


_NONE = np.zeros(0, dtype=np.int64)
_NO_LOGS = np.zeros((0, 0, 0))
LOG_TABLE_CELLS = 1 << 20
LOG_TABLE_RATIO = 2
LOG_TABLE_SMALL = 4096
"""An attribute's log factors are tabulated for every seen parent configuration and child
value (`_flat`) when that table has at most `LOG_TABLE_CELLS` cells and at most
`LOG_TABLE_RATIO` times the cells its counts hold, plus `LOG_TABLE_SMALL`: classification
then reads one value per row and class instead of two counts and a log. A sparser table
(deep parent lists over many-valued attributes, an ID-like parent: most configurations
seen with one child value) would cost more to fill than it saves; its counts are read and
the log taken per row. The factors are the same either way."""


class _Lookups(NamedTuple):
    """One table's lookups as flat arrays (`_flat`)."""

    pk: np.ndarray  # every depth's pair keys, end to end
    pk_at: np.ndarray  # where each depth's start
    pk_len: np.ndarray
    pp: np.ndarray  # every depth's direct index (length 0: none, search the keys)
    pp_at: np.ndarray
    pp_len: np.ndarray
    parents: np.ndarray
    counted: tuple  # the cell and configuration counts, as `_cell_ratios` reads them
    logs: np.ndarray  # (configurations, |X_i|, K) log factors; empty: not tabulated
    unseen: np.ndarray  # (K,) the log factor of a configuration not seen


def _flat(t: _AttributeTable, K: int) -> _Lookups:
    """The table's lookups as flat arrays for the kernels (built once, kept on the table):
    every depth's pair keys end to end with their starts and lengths, the same for the
    direct indexes (length 0: none, search the keys), the cell and configuration counts
    for `_cell_ratios`, and the log factors of every configuration and child value
    (`LOG_TABLE_CELLS`; empty: none) with the factor of an unseen configuration."""
    if t.flat is None:
        keys = t.pair_keys
        pos = [p if p is not None else _NONE for p in t.pair_pos] + \
            [_NONE] * (len(keys) - len(t.pair_pos))
        klen = np.array([len(k) for k in keys], dtype=np.int64)
        plen = np.array([len(p) for p in pos], dtype=np.int64)
        cell_pos = _NONE if t.cell_pos is None else t.cell_pos
        cfg_pos = _NONE if t.cfg_pos is None else t.cfg_pos
        nc, nf = len(t.cell_keys), len(t.cfg_keys)
        counted = (np.concatenate([t.cell_keys, t.cfg_keys]).astype(np.int64),
                   np.concatenate([t.cell_counts, t.cfg_counts]).astype(np.int64),
                   np.concatenate([cell_pos, cfg_pos]).astype(np.int64),
                   np.array([[0, nc, 0, len(cell_pos)], [nc, nf, len(cell_pos), len(cfg_pos)]],
                            dtype=np.int64))
        configs = int(t.offsets[-1]) + (len(keys[-1]) if keys else 1)
        logs = _NO_LOGS
        cells = configs * t.card * K
        if cells <= LOG_TABLE_CELLS and \
                cells <= LOG_TABLE_RATIO * len(t.cell_keys) + LOG_TABLE_SMALL:
            gid = np.repeat(np.arange(configs, dtype=np.int64), t.card)
            x = np.tile(np.arange(t.card, dtype=np.int64), configs)
            ratios = np.empty((gid.size, K))
            _cell_ratios(gid, x, t.card, K, *counted, ratios)
            logs = np.log(ratios).reshape(configs, t.card, K)
        unseen = np.empty((1, K))
        _cell_ratios(np.full(1, -1, dtype=np.int64), np.zeros(1, dtype=np.int64), t.card, K,
                     *counted, unseen)
        t.flat = _Lookups(np.concatenate([_NONE, *keys]).astype(np.int64),
                  np.concatenate([[0], np.cumsum(klen)[:-1]]).astype(np.int64) if len(keys)
                  else _NONE, klen,
                  np.concatenate([_NONE, *pos]).astype(np.int64),
                  np.concatenate([[0], np.cumsum(plen)[:-1]]).astype(np.int64) if len(pos)
                  else _NONE, plen,
                  np.asarray(t.parents, dtype=np.int64), counted, logs, np.log(unseen)[0])
    return t.flat


@numba.njit(cache=True, nogil=True)
def _lower_bound(keys, lo, size, q):
    """The number of keys[lo : lo + size] (sorted) below q (`np.searchsorted`, left)."""
    a, b = 0, size
    while a < b:
        m = (a + b) >> 1
        if keys[lo + m] < q:
            a = m + 1
        else:
            b = m
    return a


@numba.njit(cache=True, nogil=True)
def _cell_ratios(gid, x, card, K, keys, counts, pos, look, out):
    """out[i, y] = (#(g, x, y) + 1/|X_i|) / (#(g, y) + 1) for configuration g = gid[i] and
    child value x[i] (0 where a count is absent); (0 + 1/|X_i|) / (0 + 1) for g < 0 (not
    seen), 1 for x < 0 (missing, log 0) — the operations, in their order, of the tables'
    numpy formula. The cell counts (w = 0) and the configuration counts (w = 1) are laid
    end to end in keys / counts / pos; look[w] = (first key, keys, first direct-index
    entry, entries: 0 = search the sorted keys). A row's K keys are consecutive: without a
    direct index one binary search finds the first, a forward scan the others."""
    inv = 1.0 / card
    for i in range(gid.shape[0]):
        g = gid[i]
        v = x[i]
        if v < 0:
            for y in range(K):
                out[i, y] = 1.0
            continue
        if g < 0:
            for y in range(K):
                out[i, y] = (0.0 + inv) / (0.0 + 1.0)
            continue
        for w in range(2):
            q0 = (g * card + v) * K if w == 0 else g * K
            klo, kn, plo, pn = look[w, 0], look[w, 1], look[w, 2], look[w, 3]
            a = _lower_bound(keys, klo, kn, q0) if kn > 0 and pn == 0 else 0
            for y in range(K):
                q = q0 + y
                c = 0.0
                if kn > 0 and pn > 0:
                    at = pos[plo + min(q, pn - 1)]
                    if at >= 0 and q < pn:
                        c = np.float64(counts[klo + at])
                elif kn > 0:
                    while a < kn and keys[klo + a] < q:
                        a += 1
                    if keys[klo + min(a, kn - 1)] == q:
                        c = np.float64(counts[klo + min(a, kn - 1)])
                if w == 0:
                    out[i, y] = c
                else:
                    out[i, y] = (out[i, y] + inv) / (c + 1.0)


@numba.njit(cache=True, nogil=True)
def _configs(X, caps, backoff, cards, par_at, parents, off_at, offsets, pk, pk_at, pk_len, pp,
             pp_at, pp_len, gid):
    """gid[r, a] = test row r's parent configuration (global id) in attribute a's table:
    the deepest prefix of up to caps[a] parents seen in training (with `backoff`; without
    it the full prefix, or −1 when a parent value along it was not seen). Each depth's
    lookup goes through its direct index where it has one, else binary search
    (`np.searchsorted`, clipped to the last key). A row's attributes are walked while the
    row is in cache."""
    for r in range(X.shape[0]):
        for a in range(caps.shape[0]):
            pa = par_at[a]
            local = 0
            alive = True
            g = 0
            for j in range(1, caps[a] + 1):
                p = parents[pa + j - 1]
                xp = X[r, p]
                q = local * cards[p] + xp
                size = pk_len[pa + j - 1]
                found = False
                idx = 0
                if size > 0 and pp_len[pa + j - 1] > 0:
                    idx = pp[pp_at[pa + j - 1] + min(max(q, 0), pp_len[pa + j - 1] - 1)]
                    found = alive and xp >= 0 and idx >= 0
                    idx = max(idx, 0)
                elif size > 0:
                    lo = pk_at[pa + j - 1]
                    idx = min(_lower_bound(pk, lo, size, q), size - 1)
                    found = alive and xp >= 0 and pk[lo + idx] == q
                local = idx if found else 0
                alive = found
                if found:
                    g = offsets[off_at[a] + j] + idx
                elif not backoff:
                    g = -1
            gid[r, a] = g


@numba.njit(cache=True, nogil=True)
def _summed_logs(X, gid, prior, child, card, log_at, logs, unseen, out):
    """out[r, y] = log P(y) + Σ over the attributes, in order, of row r's tabulated log
    factor (`unseen`'s for a configuration not seen, 0 for a missing value): the sum in
    the order the attribute-at-a-time scoring adds, so the same bits."""
    m = child.shape[0]
    K = out.shape[1]
    for r in range(X.shape[0]):
        for y in range(K):
            out[r, y] = prior[y]
        for a in range(m):
            x = X[r, child[a]]
            g = gid[r, a]
            if x < 0:
                for y in range(K):
                    out[r, y] += 0.0
            elif g < 0:
                for y in range(K):
                    out[r, y] += unseen[a, y]
            else:
                at = log_at[a] + (g * card[a] + x) * K
                for y in range(K):
                    out[r, y] += logs[at + y]


class Scorer:
    """A fitted model's attributes (in product order) as flat arrays for the kernels:
    every table's parents, depth offsets and pair keys / direct indexes end to end (where
    each attribute's start), its counts for `_cell_ratios`, and its tabulated log factors
    where it has them (`LOG_TABLE_CELLS`)."""

    _ROWS = 4096  # test rows per block: their configurations stay in cache

    def __init__(self, tables: list[_AttributeTable], cards: np.ndarray, K: int, cap: int,
                 backoff: bool) -> None:
        flats = [_flat(t, K) for t in tables]
        m = len(tables)
        self.tables, self.flats, self.K = tables, flats, K
        self.caps = np.array([min(cap, len(t.parents)) for t in tables], dtype=np.int64)
        self.backoff = bool(backoff)
        self.cards = np.asarray(cards, dtype=np.int64)
        self.child = np.array([t.child for t in tables], dtype=np.int64)
        self.card = np.array([t.card for t in tables], dtype=np.int64)
        self.tabulated = np.array([f.logs.size > 0 for f in flats], dtype=bool)
        sizes = lambda xs: np.concatenate([[0], np.cumsum(xs)]).astype(np.int64)  # noqa: E731
        cat = lambda parts, dtype=np.int64: np.concatenate(  # noqa: E731
            [np.zeros(0, dtype), *[np.asarray(p, dtype).reshape(-1) for p in parts]])
        self.par_at = sizes([len(t.parents) for t in tables])
        self.off_at = sizes([len(t.offsets) for t in tables])
        self.log_at = sizes([f.logs.size for f in flats])
        pk_base = sizes([f.pk.size for f in flats])
        pp_base = sizes([f.pp.size for f in flats])
        self.parents = cat([f.parents for f in flats])
        self.offsets = cat([t.offsets for t in tables])
        self.pk = cat([f.pk for f in flats])
        self.pk_at = cat([f.pk_at + pk_base[i] for i, f in enumerate(flats)])
        self.pk_len = cat([f.pk_len for f in flats])
        self.pp = cat([f.pp for f in flats])
        self.pp_at = cat([f.pp_at + pp_base[i] for i, f in enumerate(flats)])
        self.pp_len = cat([f.pp_len for f in flats])
        self.logs = cat([f.logs for f in flats], np.float64)
        self.unseen = np.array([f.unseen for f in flats]).reshape(m, K)

    def scores(self, X: np.ndarray, prior: np.ndarray) -> np.ndarray:
        """log P(y) + Σ_i log P(x_i | π_i, y) for the rows of X (int64 codes): with every
        attribute tabulated, one pass per block of rows; otherwise each attribute's logs
        (read from its table, or numpy's log of `_cell_ratios`) added in order, as the
        same formula in numpy."""
        n, K = X.shape[0], self.K
        out = np.empty((n, K))
        gid = np.empty((min(n, self._ROWS), len(self.tables)), dtype=np.int64)
        every = bool(self.tabulated.all())
        for r0 in range(0, n, self._ROWS):
            Xb = X[r0:r0 + self._ROWS]
            g = gid[:Xb.shape[0]]
            _configs(Xb, self.caps, self.backoff, self.cards, self.par_at, self.parents,
                     self.off_at, self.offsets, self.pk, self.pk_at, self.pk_len, self.pp,
                     self.pp_at, self.pp_len, g)
            ob = out[r0:r0 + self._ROWS]
            if every:
                _summed_logs(Xb, g, prior, self.child, self.card, self.log_at, self.logs,
                             self.unseen, ob)
                continue
            ob[:] = prior
            part = np.empty((Xb.shape[0], K))
            for a, (t, f) in enumerate(zip(self.tables, self.flats)):
                x = Xb[:, t.child]
                if self.tabulated[a]:  # (read from its table: unseen / missing as above)
                    part[:] = f.logs[np.maximum(g[:, a], 0), np.maximum(x, 0)]
                    part[g[:, a] < 0] = f.unseen
                    part[x < 0] = 0.0
                else:
                    _cell_ratios(g[:, a], x, t.card, K, *f.counted, part)
                    np.log(part, out=part)
                ob += part
        return out
