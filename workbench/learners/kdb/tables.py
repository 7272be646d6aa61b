"""An attribute's count tables along its parent list (sparse, compact configuration ids),
the leave-one-out step of SKDB and the test-time lookups (SPEC §4; see the package doc)."""

from __future__ import annotations

from dataclasses import dataclass, field

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


def _unique_inverse(keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(keys, return_inverse=True)` for keys in [0, size): by marking a dense
    array when the space is small (O(n + size), no sort), else by sorting."""
    if keys.size == 0 or not _dense_ok(size, keys.size):
        uq, inv = np.unique(keys, return_inverse=True)
        return uq, inv.reshape(-1).astype(np.int64)
    seen = np.zeros(size, dtype=bool)
    seen[keys] = True
    uq = np.flatnonzero(seen)
    rank = np.cumsum(seen, dtype=np.int64) - 1
    return uq, rank[keys]


def _dense_index(keys: np.ndarray, size: int) -> np.ndarray | None:
    """pos[k] = the index of k in the sorted `keys`, −1 if absent, over [0, size); None if
    the space is too large (the lookups then search the keys)."""
    if not _dense_ok(size, keys.size):
        return None
    pos = np.full(size, -1, dtype=np.int64)
    pos[keys] = np.arange(keys.size, dtype=np.int64)
    return pos


def _lookup(keys: np.ndarray, counts: np.ndarray, q: np.ndarray,
            pos: np.ndarray | None = None) -> np.ndarray:
    """Counts of the sorted `keys` at queries `q` ≥ 0 (0 where absent); `pos` = their
    `_dense_index` when there is one."""
    if keys.size == 0:
        return np.zeros(q.shape, dtype=np.float64)
    if pos is not None:
        idx = pos[np.minimum(q, pos.size - 1)]
        found = (idx >= 0) & (q < pos.size)
        return np.where(found, counts[np.maximum(idx, 0)], 0).astype(np.float64)
    idx = np.searchsorted(keys, q)
    np.minimum(idx, keys.size - 1, out=idx)
    found = keys[idx] == q
    return np.where(found, counts[idx], 0).astype(np.float64)


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
            uq, local = _unique_inverse(local * int(cards[p]) + X[:, p], n_cfg * int(cards[p]))
            pair_keys.append(uq)
            n_cfg = len(uq)
        offsets.append(offset)
        ccount = np.bincount(local * K + y, weights=weights, minlength=n_cfg * K)
        nz = np.flatnonzero(ccount)
        cfg_k.append(nz + offset * K)
        cfg_c.append(ccount[nz])
        ucell, cinv = _unique_inverse(local * card + x, n_cfg * card)
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


def _table_log_probs(
    t: _AttributeTable, Xt: np.ndarray, cards: np.ndarray, K: int, cap: int, backoff: bool
) -> np.ndarray:
    """log P(x_i | π, y) for test rows (n, K); 0 where the child value is invalid."""
    n = Xt.shape[0]
    x = Xt[:, t.child]
    cap = min(cap, len(t.parents))
    local = np.zeros(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    gid = np.zeros(n, dtype=np.int64)  # depth-0 configuration
    for j in range(1, cap + 1):
        p = t.parents[j - 1]
        xp = Xt[:, p]
        keys = t.pair_keys[j - 1]
        q = local * int(cards[p]) + xp
        pos = t.pair_pos[j - 1] if j - 1 < len(t.pair_pos) else None
        if keys.size and pos is not None:
            idx = pos[np.clip(q, 0, pos.size - 1)]
            found = alive & (xp >= 0) & (idx >= 0)
            idx = np.maximum(idx, 0)
        elif keys.size:
            idx = np.searchsorted(keys, q)
            np.minimum(idx, keys.size - 1, out=idx)
            found = alive & (xp >= 0) & (keys[idx] == q)
        else:
            idx = np.zeros(n, dtype=np.int64)
            found = np.zeros(n, dtype=bool)
        local = np.where(found, idx, 0)
        alive = found
        if backoff:
            gid = np.where(found, t.offsets[j] + idx, gid)
        else:
            gid = np.where(found, t.offsets[j] + idx, -1)
    valid = x >= 0
    ks = np.arange(K, dtype=np.int64)
    seen = gid >= 0
    gq = np.maximum(gid, 0)  # (unseen rows are zeroed below)
    A = _lookup(t.cell_keys, t.cell_counts, ((gq * t.card + np.maximum(x, 0)) * K)[:, None]
                + ks, t.cell_pos)
    B = _lookup(t.cfg_keys, t.cfg_counts, (gq * K)[:, None] + ks, t.cfg_pos)
    unusable = ~(seen & valid)
    if unusable.any():
        A[unusable] = 0.0
        B[unusable] = 0.0
    out = np.log((A + 1.0 / t.card) / (B + 1.0))
    out[~valid] = 0.0
    return out
