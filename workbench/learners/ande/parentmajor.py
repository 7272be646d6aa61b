"""Parent-major scoring of one AnDE level from precomputed child factors (numba).

For small tables (connect-4, kr-vs-kp at order 2) the child factors
P(x_c | y, x_s) = (#(y, x_s, x_c) + m/|X_c|) / (#(y, x_s) − #(y, x_s, x_c ?) + m) of every
parent value combination x_s are computed once per model and laid out contiguously by
parent cell: ``fac[poff[q] + cell · rowlen + (cstart[c] + x_c) · K + y]``. The slots of the
parent's own attributes hold 1.0, so a row multiplies the factors of all its active children
without a membership test. Scoring runs parent set by parent set over a chunk of rows, so one
parent set's factors stay in cache while every row reads them, and each row's weighted sum
over parent sets accumulates directly. The result is `score_level`'s (same estimates, the
products in a different order: equal to rounding).

Used only when the table fits `FACTOR_BYTES` and no product can underflow (otherwise the
block-major kernels with their rescaling run); the caller handles the fallback orders.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from workbench.learners.ande.predict import active_values
from workbench.learners.ande.tables import read
from workbench.learners.counts import next_colex

FACTOR_BYTES = 192 << 20
"""Largest factor table built (beyond it the block-major kernels are faster anyway: the
factors no longer stay in cache while a chunk of rows reads them)."""

_CHUNK = 4096
_NO_UNDERFLOW = np.log(1e-280)

Factors = namedtuple("Factors", ["fac", "pcnt", "poff", "pcell", "cstart", "rowlen"])
Factors.__doc__ = """Child factors by parent cell (see module docstring); pcnt[pcell[q] + cell, y]
= #(y, x_s) of parent set q's value combination `cell`."""


def factor_table_bytes(cards: np.ndarray, K: int, lev: int) -> int:
    """Bytes of the factor table of level `lev`: Σ over parent sets of Π|X_s| · Σ|X_c| · K · 8."""
    from itertools import combinations

    cards = np.asarray(cards, dtype=np.int64)
    if lev < 1 or lev > cards.size - 1:
        return 0
    if lev == 2:  # Σ_{i<j} c_i c_j without the loop
        s, s2 = int(cards.sum()), int((cards * cards).sum())
        cells = (s * s - s2) // 2
    elif lev == 1:
        cells = int(cards.sum())
    else:
        cells = sum(int(np.prod(cards[list(c)])) for c in combinations(range(cards.size), lev))
    return cells * int(cards.sum()) * K * 8


def parent_major_ok(tb, est, lev: int) -> bool:
    """Use the parent-major path at order `lev` ≥ 2? Small enough, and no product of d
    factors ≥ (m/max|X|)/(N+m) times the parent estimate can underflow."""
    d = tb.cards.shape[0]
    if lev < 2 or d <= lev or factor_table_bytes(tb.cards, int(tb.K), lev) > FACTOR_BYTES:
        return False
    fmin = (est.m / max(int(tb.cards.max()), 1)) / (est.N + est.m)
    return bool((d + 1) * np.log(fmin) > _NO_UNDERFLOW)


def build_factors(tb, est, lev: int) -> Factors:
    """The factor table of level `lev` (see module docstring)."""
    d = tb.cards.shape[0]
    cards = tb.cards.astype(np.int64)
    cstart = np.concatenate(([0], np.cumsum(cards)[:-1])).astype(np.int64)
    rowlen = int(cards.sum()) * int(tb.K)
    n_sets = int(tb.binom[d, lev])
    pcell = np.zeros(n_sets + 1, dtype=np.int64)
    _cells(tb, lev, pcell)
    poff = pcell[:-1] * rowlen
    fac = np.empty(int(pcell[-1]) * rowlen)
    pcnt = np.empty((int(pcell[-1]), int(tb.K)))
    _fill(tb, est, lev, cstart, rowlen, pcell, fac, pcnt)
    return Factors(fac, pcnt, poff, pcell, cstart, rowlen)


@numba.njit(cache=True, nogil=True)
def _cells(tb, lev, pcell):
    """pcell[q] = first cell of parent set q (colex), pcell[-1] = total."""
    d = tb.cards.shape[0]
    idx = np.arange(lev)
    q = 0
    while True:
        c = 1
        for t in range(lev):
            c *= tb.cards[idx[t]]
        pcell[q + 1] = pcell[q] + c
        q += 1
        if not next_colex(idx, lev, d):
            return


@numba.njit(cache=True, nogil=True)
def _fill(tb, est, lev, cstart, rowlen, pcell, fac, pcnt):
    d = tb.cards.shape[0]
    K = tb.K
    m = est.m
    L1 = lev + 1
    idx = np.arange(lev)
    vals = np.empty(lev, dtype=np.int64)
    S = np.empty(L1, dtype=np.int64)
    cnt = np.empty(K, dtype=np.int64)
    mc = np.empty(K, dtype=np.int64)
    cc = np.empty(K, dtype=np.int64)
    q = 0
    while True:
        b = tb.lbase[lev] + q
        ncell = pcell[q + 1] - pcell[q]
        for cell in range(ncell):
            rest = cell
            for t in range(lev - 1, -1, -1):
                vals[t] = rest % tb.cards[idx[t]]
                rest //= tb.cards[idx[t]]
            read(tb, b, cell, cnt)
            for y in range(K):
                pcnt[pcell[q] + cell, y] = cnt[y]
            row0 = (pcell[q] + cell) * rowlen
            for c in range(d):
                member = False
                for t in range(lev):
                    member |= idx[t] == c
                o = row0 + cstart[c] * K
                if member or not est.child_ok[c]:
                    for k in range(tb.cards[c] * K):
                        fac[o + k] = 1.0
                    continue
                mb = tb.miss_base[lev, c]
                if mb >= 0:
                    read(tb, mb + q, cell, mc)
                else:
                    mc[:] = 0
                # S = sorted(idx ∪ {c}); rank, and where c sits
                u = 0
                pos = -1
                for t in range(lev):
                    if pos < 0 and c < idx[t]:
                        S[u] = c
                        pos = u
                        u += 1
                    S[u] = idx[t]
                    u += 1
                if pos < 0:
                    S[lev] = c
                    pos = lev
                rank = 0
                for t in range(L1):
                    rank += tb.binom[S[t], t + 1]
                b2 = tb.lbase[L1] + rank
                madd = m / tb.cards[c]
                for xc in range(tb.cards[c]):
                    loc = 0
                    v = 0
                    for t in range(L1):
                        if t == pos:
                            xv = xc
                        else:
                            xv = vals[v]
                            v += 1
                        loc = loc * tb.cards[S[t]] + xv
                    read(tb, b2, loc, cc)
                    for y in range(K):
                        fac[o + xc * K + y] = (cc[y] + madd) / (cnt[y] - mc[y] + m)
        q += 1
        if not next_colex(idx, lev, d):
            return


@numba.njit(cache=True, nogil=True, error_model="numpy")
def score_parent_major(X, actl, nact, n, lev, tb, est, ft, weighted, done, lp, wout):
    """Order-`lev` scores of rows 0..n−1 (active attributes actl[r, 0:nact[r]], ascending)
    into lp; done[r] = some parent set is used, wout[r] = their total weight. With
    `weighted`, a row whose used sets all weigh 0 counts them equally (SPEC §2)."""
    if tb.K == 2:
        _score(X, actl, nact, n, lev, tb, est, ft, weighted, done, lp, wout, 2)
    elif tb.K == 3:
        _score(X, actl, nact, n, lev, tb, est, ft, weighted, done, lp, wout, 3)
    else:
        _score(X, actl, nact, n, lev, tb, est, ft, weighted, done, lp, wout, tb.K)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _score(X, actl, nact, n, lev, tb, est, ft, weighted, done, lp, wout, K):
    d = tb.cards.shape[0]
    m = est.m
    acc = np.zeros((n, K))
    acc1 = np.zeros((n, K) if weighted else (1, K))
    nused = np.zeros(n, dtype=np.int64)
    act = np.zeros((d, n), dtype=np.bool_)
    coff = np.empty((n, d), dtype=np.int64)  # factor offset of each active child
    nch = np.zeros(n, dtype=np.int64)
    for r in range(n):
        wout[r] = 0.0
        k = 0
        for t in range(nact[r]):
            a = actl[r, t]
            act[a, r] = True
            if est.child_ok[a]:
                coff[r, k] = (ft.cstart[a] + X[r, a]) * K
                k += 1
        nch[r] = k
    idx = np.arange(lev)
    pr0 = np.empty(K)
    pr1 = np.empty(K)
    q = 0
    while True:
        b = tb.lbase[lev] + q
        allowed = True
        nv = 1.0
        for t in range(lev):
            allowed = allowed and est.parent_ok[idx[t]]
            nv *= tb.cards[idx[t]]
        if allowed:
            w = est.wts[b]
            scale = w / (est.ptot[b] + m)
            scale1 = 1.0 / (est.ptot[b] + m)
            prior = m / (K * nv)
            for r in range(n):
                ok = True
                for t in range(lev):
                    ok = ok and act[idx[t], r]
                if not ok:
                    continue
                cell = 0
                for t in range(lev):
                    cell = cell * tb.cards[idx[t]] + X[r, idx[t]]
                pc = ft.pcell[q] + cell
                tot = 0.0
                for y in range(K):
                    tot += ft.pcnt[pc, y]
                if tot < est.F:
                    continue
                nused[r] += 1
                wout[r] += w
                base = ft.poff[q] + cell * ft.rowlen
                for y in range(K):
                    pr0[y] = 1.0
                    pr1[y] = 1.0
                kc = nch[r]
                t = 0
                while t + 1 < kc:  # two independent product chains
                    o0 = base + coff[r, t]
                    o1 = base + coff[r, t + 1]
                    for y in range(K):
                        pr0[y] *= ft.fac[o0 + y]
                        pr1[y] *= ft.fac[o1 + y]
                    t += 2
                if t < kc:
                    o0 = base + coff[r, t]
                    for y in range(K):
                        pr0[y] *= ft.fac[o0 + y]
                for y in range(K):
                    joint = (ft.pcnt[pc, y] + prior) * (pr0[y] * pr1[y])
                    if w > 0.0:
                        acc[r, y] += joint * scale
                    if weighted:
                        acc1[r, y] += joint * scale1
        q += 1
        if not next_colex(idx, lev, d):
            break
    for r in range(n):
        done[r] = nused[r] > 0
        if not done[r]:
            continue
        src = acc1 if weighted and wout[r] <= 0.0 else acc
        for y in range(K):
            lp[r, y] = np.log(src[r, y])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def log_scores_parent_major(X, top, tb, est, ft, weighted, sr, crit, gen):
    """log P̂(y, x) at order `top` for every row of X, in chunks of rows; done[r] = False for
    the rows no parent set qualifies for (the caller scores those with `log_scores`, which
    falls back to lower orders)."""
    n, d = X.shape
    K = tb.K
    out = np.zeros((n, K))
    done = np.zeros(n, dtype=np.bool_)
    B = min(_CHUNK, max(n, 1))
    actl = np.empty((B, d), dtype=np.int64)
    nact = np.empty(B, dtype=np.int64)
    vc = np.empty(d, dtype=np.int64)
    deleted = np.zeros(d, dtype=np.bool_)
    isu = np.zeros(d, dtype=np.bool_)
    hit = np.zeros(d, dtype=np.bool_)
    iidx = np.arange(d)
    none = np.zeros((n, 0), dtype=np.bool_)
    cnt = np.empty(K, dtype=np.int64)
    need_counts = sr and gen.ptr.shape[0] == 0
    wout = np.empty(B)
    for r0 in range(0, n, B):
        nb = min(B, n - r0)
        Xb = X[r0:r0 + nb]
        for rr in range(nb):
            na, _ = active_values(tb, Xb, none, isu, iidx, iidx, 0, rr, sr, crit, gen, actl,
                                  vc, deleted, isu, hit, cnt, need_counts)
            nact[rr] = na
        score_parent_major(Xb, actl, nact, nb, top, tb, est, ft, weighted, done[r0:r0 + nb],
                           out[r0:r0 + nb], wout)
    return out, done
