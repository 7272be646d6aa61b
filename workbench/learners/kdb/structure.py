"""KDB structure (SPEC §4): MI(X_i; Y) and CMI(X_i; X_j | Y) in bits from raw relative
frequencies (zero-count terms skipped, each sum taken over its terms sorted so that equal
multisets of terms give bit-identical scores), the MI order and the parent choices of KDB
and TAN."""

from __future__ import annotations

import numba
import numpy as np

# A dense (v, w, y) table per attribute pair is used when it has at most this many cells
# (or 4 cells per training row); otherwise the pair is counted sparsely with np.unique.
_DENSE_PAIR_CELLS = 1 << 16



def _sorted_sum(terms: np.ndarray) -> float:
    """Sum in a canonical (sorted) order: equal multisets of terms give identical sums."""
    if terms.size == 0:
        return 0.0
    return float(np.sort(terms).sum())


def mutual_information(X: np.ndarray, y: np.ndarray, cards: np.ndarray, K: int) -> np.ndarray:
    """MI(X_i; Y) in bits for every column of int codes X (all values valid, < cards)."""
    n, d = X.shape
    out = np.zeros(d)
    if n == 0:
        return out
    ny = np.bincount(y, minlength=K).astype(np.float64)
    N = float(n)
    for i in range(d):
        c = np.bincount(X[:, i] * K + y, minlength=int(cards[i]) * K).reshape(-1, K)
        a = c.sum(axis=1)
        v, yy = np.nonzero(c)
        cv = c[v, yy].astype(np.float64)
        out[i] = _sorted_sum((cv / N) * np.log2((N * cv) / (a[v].astype(np.float64) * ny[yy])))
    return out


def _class_value_tables(X: np.ndarray, y: np.ndarray, cards: np.ndarray, K: int) -> list:
    return [
        np.bincount(X[:, i] * K + y, minlength=int(cards[i]) * K).reshape(-1, K).astype(
            np.float64
        )
        for i in range(X.shape[1])
    ]


@numba.njit(cache=True, nogil=True)
def _count_pairs(X, y, K, cards, pair_i, pair_j, pair_off, out):
    """out[pair_off[p] + (x_i·|X_j| + x_j)·K + y] += 1 for every row and listed pair (i, j)."""
    n = X.shape[0]
    for r in range(n):
        yr = y[r]
        for p in range(pair_i.shape[0]):
            i = pair_i[p]
            j = pair_j[p]
            out[pair_off[p] + (X[r, i] * cards[j] + X[r, j]) * K + yr] += 1


_PAIR_BATCH_CELLS = 1 << 23  # dense pair cells counted per kernel call (32 MB of int32)


def conditional_mutual_information(
    X: np.ndarray, y: np.ndarray, cards: np.ndarray, K: int
) -> np.ndarray:
    """Symmetric (d, d) matrix of CMI(X_i; X_j | Y) in bits (diagonal 0).

    Pair tables are counted densely in one pass over the rows per batch of pairs (numba);
    a pair whose table would be much larger than the data (ID-like attributes) is counted
    sparsely with np.unique instead.
    """
    n, d = X.shape
    cmi = np.zeros((d, d))
    if n == 0 or d < 2:
        return cmi
    N = float(n)
    X = np.ascontiguousarray(X, dtype=np.int64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    cards = np.asarray(cards, dtype=np.int64)
    ny = np.bincount(y, minlength=K).astype(np.float64)
    tabs = _class_value_tables(X, y, cards, K)
    dense_limit = max(_DENSE_PAIR_CELLS, 4 * n)

    def finish(i: int, j: int, idx: np.ndarray, c: np.ndarray) -> None:
        cj = int(cards[j])
        yy = idx % K
        vw = idx // K
        terms = (c / N) * np.log2((ny[yy] * c) / (tabs[i][vw // cj, yy] * tabs[j][vw % cj, yy]))
        cmi[i, j] = cmi[j, i] = _sorted_sum(terms)

    dense: list[tuple[int, int, int]] = []
    for i in range(d - 1):
        for j in range(i + 1, d):
            cells = int(cards[i]) * int(cards[j]) * K
            if cells <= dense_limit:
                dense.append((i, j, cells))
            else:
                key = (X[:, i] * int(cards[j]) + X[:, j]) * K + y
                idx, cnt = np.unique(key, return_counts=True)
                finish(i, j, idx, cnt.astype(np.float64))
    start = 0
    while start < len(dense):
        stop, total = start, 0
        while stop < len(dense) and (stop == start or total + dense[stop][2] <= _PAIR_BATCH_CELLS):
            total += dense[stop][2]
            stop += 1
        batch = dense[start:stop]
        sizes = np.array([b[2] for b in batch], dtype=np.int64)
        offs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        out = np.zeros(int(sizes.sum()), dtype=np.int32)
        _count_pairs(
            X, y, K, cards,
            np.array([b[0] for b in batch], dtype=np.int64),
            np.array([b[1] for b in batch], dtype=np.int64),
            offs, out,
        )
        for (i, j, cells), off in zip(batch, offs):
            block = out[off: off + cells]
            idx = np.flatnonzero(block)
            finish(i, j, idx, block[idx].astype(np.float64))
        start = stop
    return cmi


def mi_order(mi: np.ndarray) -> np.ndarray:
    """Attribute indices by decreasing MI; exact ties keep header order (stable sort)."""
    return np.argsort(-np.asarray(mi, dtype=np.float64), kind="stable")


def kdb_parents(order: np.ndarray, cmi: np.ndarray, k: int) -> list[list[int]]:
    """KDB parent lists (indexed by attribute): for L_i the min(i−1, k) earlier attributes of
    L with the largest CMI(L_i; L_j | Y), ties → earlier in L, listed in that order."""
    d = len(order)
    parents: list[list[int]] = [[] for _ in range(d)]
    for pos in range(1, d):
        a = int(order[pos])
        cands = np.asarray(order[:pos], dtype=np.int64)
        vals = cmi[a, cands]
        pick = np.argsort(-vals, kind="stable")[: min(pos, k)]
        parents[a] = [int(p) for p in cands[pick]]
    return parents


def tan_parents(cmi: np.ndarray) -> list[list[int]]:
    """TAN tree by Prim's maximum spanning tree on CMI, rooted at attribute 0 (SPEC §4)."""
    d = cmi.shape[0]
    parents: list[list[int]] = [[] for _ in range(d)]
    if d < 2:
        return parents
    in_tree = np.zeros(d, dtype=bool)
    in_tree[0] = True
    w = cmi[0].astype(np.float64).copy()
    par = np.zeros(d, dtype=np.int64)
    for _ in range(d - 1):
        remaining = np.flatnonzero(~in_tree)
        new = int(remaining[np.argmax(w[remaining])])  # first maximum = lowest index
        in_tree[new] = True
        parents[new] = [int(par[new])]
        for a in np.flatnonzero(~in_tree):
            if cmi[new, a] > w[a]:
                w[a] = cmi[new, a]
                par[a] = new
    return parents
