"""Attribute selection for AODE by leave-one-out over the counts (SPEC §5): ASAODE's
MI-ranked nested model space and BSEAODE's backward elimination.

Both read A1DE's count tables (with `?` as a value, SPEC §5.1) and one extra pass over
the training rows per search step. For a held-out row (x, y*), every count it reads loses
the row's own contribution: #'(x_p, y) = #(x_p, y) − [y = y*], #'(x_p, x_c, y) likewise,
N' = N − 1. Arithmetic follows the authors' code (SPEC §5.6): linear scores scaled by
DBL_MAX / d, child factors multiplied in a fixed order, models summed over parents in a
fixed order; RMSEs are compared with the relative tolerance `TAU`.

The result of a search is a pair of attribute masks (parents, children) for `AnDE`,
which then classifies with the full-data estimates.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from workbench.learners.ande.tables import Tables, read

TAU = 1e-9
DBL_MAX = float(np.finfo(np.float64).max)
CHILD, PARENT, PARENT_AND_CHILD = 0, 1, 2
ELIMINATIONS = {"child": CHILD, "parent": PARENT, "parent_and_child": PARENT_AND_CHILD}


# ----- ranking ----------------------------------------------------------------------------
def mi_order(value_class: list[np.ndarray], class_counts: np.ndarray, n: int) -> np.ndarray:
    """Attributes in decreasing mutual information with the class (SPEC §5.3: raw relative
    frequencies, log base 2, zero counts skipped); equal MI → lower index first.

    `value_class[i]` is #(x_i = v, y) as a (|X_i|, K) array."""
    mi = np.zeros(len(value_class))
    for i, vy in enumerate(value_class):
        vy = np.asarray(vy, dtype=np.float64)
        nv = vy.sum(axis=1)
        total = 0.0
        for v in range(vy.shape[0]):
            for y in range(vy.shape[1]):
                c = vy[v, y]
                if c > 0:
                    total += (c / n) * math.log2(c / ((nv[v] / n) * class_counts[y]))
        mi[i] = total
    return np.argsort(-mi, kind="stable")


# ----- the leave-one-out counts of one row -------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _row_counts(tb, X, r, yr, single, pair):
    """single[p, y] = #'(x_p, y) and pair[p, c, y] = #'(x_p, x_c, y) for row r (its own
    contribution removed; pair[p, p] unused). Pairs read block lbase[2] + colex rank."""
    d = X.shape[1]
    K = tb.K
    for p in range(d):
        read(tb, tb.lbase[1] + p, X[r, p], single[p])
        single[p, yr] -= 1
    for b in range(1, d):
        for a in range(b):
            blk = tb.lbase[2] + tb.binom[a, 1] + tb.binom[b, 2]
            read(tb, blk, X[r, a] * tb.cards[b] + X[r, b], pair[a, b])
            pair[a, b, yr] -= 1
            for y in range(K):
                pair[b, a, y] = pair[a, b, y]


@numba.njit(cache=True, nogil=True, inline="always")
def _usable(single, p, K):
    tot = 0
    for y in range(K):
        tot += single[p, y]
    return tot >= 1


# ----- ASAODE: every nested model in one pass --------------------------------------------
@numba.njit(cache=True, nogil=True)
def asaode_sse(tb, X, yv, order, n, sse):
    """Add to sse[r, s], the SSE of model M(r + 1, s + 1) (parents / children = the first
    r + 1 / s + 1 attributes of `order`), the rows of X, each held out in turn from the
    counts of all `n` training rows (SPEC §5.3: a row adds to row r only if attribute
    order[r] is usable for it). Row by row in order: chunks of the rows in file order sum
    exactly as all rows at once."""
    d = X.shape[1]
    K = tb.K
    single = np.zeros((d, K), dtype=np.int64)
    pair = np.zeros((d, d, K), dtype=np.int64)
    acc = np.zeros((d, K))
    prod = np.zeros(K)
    den = np.zeros(K)
    scale = (1.0 / d) * (DBL_MAX / d)
    for r in range(X.shape[0]):
        ys = yv[r]
        _row_counts(tb, X, r, ys, single, pair)
        acc[:, :] = 0.0
        for i in range(d):
            p = order[i]
            if not _usable(single, p, K):
                continue
            cp = tb.cards[p]
            for y in range(K):
                prod[y] = (single[p, y] + 1.0 / (K * cp)) / n * scale
                den[y] = 1.0 / (single[p, y] + 1.0)
            for s in range(d):
                c = order[s]
                if c != p:
                    inv = 1.0 / tb.cards[c]
                    for y in range(K):
                        prod[y] *= (pair[p, c, y] + inv) * den[y]
                for y in range(K):
                    acc[s, y] += prod[y]
            for s in range(d):
                tot = 0.0
                for y in range(K):
                    tot += acc[s, y]
                if tot > 0.0:
                    e = 1.0 - acc[s, ys] / tot
                    sse[i, s] += e * e


def first_minimum(values: np.ndarray) -> int:
    """Flat index of the first value within a factor (1 + TAU) of the minimum (row-major)."""
    flat = np.ravel(values)
    finite = flat[np.isfinite(flat)]
    if finite.size == 0:
        return 0
    return int(np.flatnonzero(flat <= finite.min() * (1.0 + TAU))[0])


def asaode_choose(sse: np.ndarray, n: int) -> tuple[int, int, np.ndarray]:
    """(r*, s*, RMSE table) from the SSE table over n rows: the model M(r*, s*) (1-based
    sizes) with the smallest leave-one-out true-class RMSE, ties to the smallest r then s."""
    rmse = np.sqrt(sse / n)
    k = first_minimum(rmse)
    d = sse.shape[0]
    return k // d + 1, k % d + 1, rmse


def asaode_select(tb: Tables, X: np.ndarray, y: np.ndarray, order: np.ndarray
                  ) -> tuple[int, int, np.ndarray]:
    """ASAODE's search over all training rows X at once (see `asaode_choose`)."""
    d = X.shape[1]
    sse = np.zeros((d, d))
    asaode_sse(tb, X, y, order, float(X.shape[0]), sse)
    return asaode_choose(sse, X.shape[0])


# ----- BSEAODE: one pass per elimination step ----------------------------------------------
@numba.njit(cache=True, nogil=True)
def bse_pass(tb, X, yv, n, parents, children, mode, sse_now, sse, bad):
    """One leave-one-out pass of backward elimination (SPEC §5.4) over the rows of X, each
    held out from the counts of all `n` training rows, added row by row (in order) to:
    sse_now[0] = the SSE of the current model, sse = the SSE per candidate, bad = per
    candidate whether it leaves a row that needs it with no usable active parent.
    Candidates are the attributes active in the role `mode` eliminates (CHILD:
    `children`; PARENT: `parents`; PARENT_AND_CHILD: both, which are equal)."""
    d = X.shape[1]
    K = tb.K
    single = np.zeros((d, K), dtype=np.int64)
    pair = np.zeros((d, d, K), dtype=np.int64)
    spode = np.zeros((d, K))
    fac = np.zeros((d, d, K))
    total = np.zeros(K)
    cand = np.zeros(K)
    usable = np.zeros(d, dtype=np.bool_)
    scale = DBL_MAX / d
    for r in range(X.shape[0]):
        ys = yv[r]
        _row_counts(tb, X, r, ys, single, pair)
        any_usable = False
        n_active = 0
        total[:] = 0.0
        for p in range(d):
            usable[p] = _usable(single, p, K)
            any_usable = any_usable or usable[p]
            if not (usable[p] and parents[p]):
                continue
            n_active += 1
            cp = tb.cards[p]
            for y in range(K):
                spode[p, y] = (single[p, y] + 1.0 / (K * cp)) / n * scale
            for c in range(d):
                if c == p or not children[c]:
                    continue
                inv = 1.0 / tb.cards[c]
                for y in range(K):
                    f = (pair[p, c, y] + inv) / (single[p, y] + 1.0)
                    fac[p, c, y] = f
                    spode[p, y] *= f
            for y in range(K):
                total[y] += spode[p, y]
        if not any_usable:
            continue
        if n_active > 0:
            tot = 0.0
            for y in range(K):
                tot += total[y]
            e = 1.0 - total[ys] / tot
            sse_now[0] += e * e
        for a in range(d):
            if mode == CHILD:
                if not children[a]:
                    continue
                cand[:] = 0.0
                for p in range(d):
                    if usable[p] and parents[p]:
                        for y in range(K):
                            cand[y] += spode[p, y] if p == a else spode[p, y] / fac[p, a, y]
            else:
                if not (parents[a] and usable[a]):
                    continue
                if n_active < 2:  # a was the row's only usable active parent
                    bad[a] = True
                    continue
                if mode == PARENT:
                    for y in range(K):
                        cand[y] = total[y] - spode[a, y]
                else:
                    cand[:] = 0.0
                    for p in range(d):
                        if p != a and usable[p] and parents[p]:
                            for y in range(K):
                                cand[y] += spode[p, y] / fac[p, a, y]
            tot = 0.0
            for y in range(K):
                tot += cand[y]
            e = 1.0 - cand[ys] / tot
            sse[a] += e * e


class BSESearch:
    """Backward sequential elimination (SPEC §5.4) as a sequence of leave-one-out passes:
    `new_pass()` gives the accumulators of one pass (`bse_pass` adds rows to them, all at
    once or chunk by chunk in file order), `step(...)` eliminates one attribute or ends
    the search (returns whether another pass is needed)."""

    def __init__(self, d: int, n: int, mode: int, initial_candidate_sse: float = 1.0) -> None:
        self.d, self.n, self.mode = d, n, mode
        self.parents = np.ones(d, dtype=np.bool_)
        self.children = np.ones(d, dtype=np.bool_)
        self.s0 = float(initial_candidate_sse)
        self.previous: float | None = None
        self.eliminated: list[int] = []
        self.done = not self._role().sum() > 1

    def _role(self) -> np.ndarray:
        return self.children if self.mode == CHILD else self.parents

    def new_pass(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sse_now (1,), sse (d,), bad (d,)) zeroed for a pass."""
        return np.zeros(1), np.zeros(self.d), np.zeros(self.d, dtype=np.bool_)

    def step(self, sse_now: np.ndarray, sse: np.ndarray, bad: np.ndarray) -> bool:
        """Eliminate the best candidate if it lowers the RMSE by more than TAU."""
        role, n = self._role(), self.n
        if self.previous is None:
            self.previous = math.sqrt(float(sse_now[0]) / n)
        rmse = np.sqrt((self.s0 + sse) / n)
        rmse[~role | bad] = np.inf
        if not np.isfinite(rmse).any():
            self.done = True
            return False
        a = first_minimum(rmse)
        if not rmse[a] < self.previous * (1.0 - TAU):
            self.done = True
            return False
        self.previous = float(rmse[a])
        role[a] = False
        if self.mode == PARENT_AND_CHILD:
            self.children[a] = False
        self.eliminated.append(a)
        self.s0 = 0.0
        self.done = not role.sum() > 1
        return not self.done


def bse_select(tb: Tables, X: np.ndarray, y: np.ndarray, mode: int,
               initial_candidate_sse: float = 1.0) -> tuple[np.ndarray, np.ndarray, list]:
    """Backward sequential elimination over all training rows X at once: (active parents,
    active children, the eliminated attributes in order)."""
    search = BSESearch(X.shape[1], X.shape[0], mode, initial_candidate_sse)
    while not search.done:
        acc = search.new_pass()
        bse_pass(tb, X, y, float(X.shape[0]), search.parents, search.children, mode, *acc)
        search.step(*acc)
    return search.parents, search.children, search.eliminated
