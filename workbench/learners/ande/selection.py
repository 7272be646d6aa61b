"""Attribute selection for AODE by leave-one-out over the counts (SPEC §5): ASAODE's
MI-ranked nested model space and BSEAODE's backward elimination. ASAODE's search extends
to AnDE (attribute-selective A2DE, A3DE; not in SPEC): model M(r, s) has the n-subsets of
the first r ranked attributes (r ≥ n) as parent sets and the first s as children, with
SPEC §2's estimates (`?` a value), and the Petal rule becomes "a row adds to table row r
only if one of the parent sets holding L_r is usable for it" (at n = 1, SPEC §5.3's rule).

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
import threading
from concurrent.futures import ThreadPoolExecutor

from workbench.jit import ONE, by_classes, numba
import numpy as np

from workbench.learners.ande.estimates import inverse_total, m_estimate, m_estimate_inv
from workbench.learners.ande.tables import (Tables, cell, insert_sorted, largest, read,
                                            read_call)
from workbench.learners.counting.budget import memory_budget
from workbench.learners.counting.combinations import next_colex
from workbench.learners.counting.layout import KIND_DENSE

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


# ----- ASAODE and selective AnDE: every nested model in one pass ---------------------------
@numba.njit(cache=True, nogil=True, inline="always")
def _block_of(tb, attrs, l, strides):
    """Block id of the sorted attribute set attrs[0:l]; strides[t] = the weight of attrs[t]
    in the block's cell index."""
    b = tb.lbase[l]
    w = 1
    for t in range(l - 1, -1, -1):
        b += tb.binom[attrs[t], t + 1]
        strides[t] = w
        w *= tb.cards[attrs[t]]
    return b


@numba.njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _flush(acc, flag, nb, yv, r0, sse, top, err, e2, K):
    """The error of every row b < nb flagged for table row `top`: added to sse[top, s],
    or, when `err` has rows, stored as err[top, r0 + b, s] (0 for a row that adds
    nothing) for `add_errors`. Every child count s at once (no branch: the loop over s
    is vectorised); a row whose classes all score 0 adds 0. acc[b] is laid out by
    (class, child) when K ≤ 4 (contiguous over s), else by (child, class)."""
    d = e2.shape[0]
    direct = err.shape[0] == 0
    for b in range(nb):
        if not flag[b]:
            if not direct:
                err[top, r0 + b, :] = 0.0
            continue
        ys = yv[r0 + b]
        if K <= 4:
            for s in range(d):
                tot = 0.0
                for y in range(K):
                    tot += acc[b, y, s]
                e = 1.0 - acc[b, ys, s] / tot
                e2[s] = e * e if tot > 0.0 else 0.0
        else:  # many classes: four sums at once (each in class order)
            s0 = 0
            while s0 + 4 <= d:
                t0, t1, t2, t3 = 0.0, 0.0, 0.0, 0.0
                for y in range(K):
                    t0 += acc[b, s0, y]
                    t1 += acc[b, s0 + 1, y]
                    t2 += acc[b, s0 + 2, y]
                    t3 += acc[b, s0 + 3, y]
                e2[s0], e2[s0 + 1], e2[s0 + 2], e2[s0 + 3] = t0, t1, t2, t3
                s0 += 4
            for s in range(s0, d):
                tot = 0.0
                for y in range(K):
                    tot += acc[b, s, y]
                e2[s] = tot
            for s in range(d):  # e2 held the sums
                tot = e2[s]
                e = 1.0 - acc[b, s, ys] / tot
                e2[s] = e * e if tot > 0.0 else 0.0
        if direct:
            for s in range(d):
                sse[top, s] += e2[s]  # + 0.0 leaves a sum of squares as it is
        else:
            for s in range(d):
                err[top, r0 + b, s] = e2[s]
        flag[b] = False


@numba.njit(cache=True, nogil=True)
def add_errors(sse, err, nb):
    """Add the stored errors of rows 0 .. nb − 1 to the SSE table: each cell gets them
    row after row, the same additions in the same order as `_flush` adding them directly.
    Four cells at a time, their sums held in locals (four chains of additions in flight)."""
    d = sse.shape[0]
    for r in range(d):
        s = 0
        while s + 4 <= d:
            a0, a1, a2, a3 = sse[r, s], sse[r, s + 1], sse[r, s + 2], sse[r, s + 3]
            for b in range(nb):
                a0 += err[r, b, s]
                a1 += err[r, b, s + 1]
                a2 += err[r, b, s + 2]
                a3 += err[r, b, s + 3]
            sse[r, s], sse[r, s + 1], sse[r, s + 2], sse[r, s + 3] = a0, a1, a2, a3
            s += 4
        for t in range(s, d):
            a0 = sse[r, t]
            for b in range(nb):
                a0 += err[r, b, t]
            sse[r, t] = a0


@numba.njit(cache=True, nogil=True, inline="always")
def _parent_set(tb, order, pos, lev, qa, qst, member, catt, cstr, cblk, ccard):
    """Set up parent set Q = order[pos[0:lev]]: qa its attributes sorted, qst their
    strides, member[s] whether order[s] is in Q, and for every child s outside Q the block
    of Q ∪ {order[s]} (its attributes, strides, id) and |X_c|. Returns (Q's block, its
    cells, Σ cells · |X_c| over the children)."""
    d = member.shape[0]
    for t in range(lev):  # Q's attributes, sorted (insertion sort)
        a = order[pos[t]]
        u = t
        while u > 0 and qa[u - 1] > a:
            qa[u] = qa[u - 1]
            u -= 1
        qa[u] = a
    bq = _block_of(tb, qa, lev, qst)
    cells = ONE
    for t in range(lev):
        cells *= tb.cards[qa[t]]
    member[:] = False
    for t in range(lev):
        member[pos[t]] = True
    total = 0
    for s in range(d):  # each child's block of Q ∪ {c}
        if member[s]:
            continue
        c = order[s]
        insert_sorted(qa, lev, c, catt[s])
        cblk[s] = _block_of(tb, catt[s], lev + 1, cstr[s])
        ccard[s] = tb.cards[c]
        total += cells * ccard[s]
    return bq, cells, total


@numba.njit(cache=True, nogil=True)
def _gather(tb, qa, qst, lev, bq, cells, order, kids, cnt, pc, gofs, fac, g0, h, n, scale):
    """Parent set Q's scores from fac[g0] on, for a held-out row of another class than y
    at fac[i] and of class y at fac[h + i] (its own count taken out). From gofs[d] = g0,
    per cell of Q: the K start values (#(x_Q, y) + 1/(K·cells)) / n · scale and #(x_Q);
    then child s's factors at gofs[s], laid out by (Q's cell · |X_c| + x_c) · K + y:
    (#(x_Q, x_c, y) + 1/|X_c|) · 1/(#(x_Q, y) + 1). The operations the row loop would do,
    so the same bits; a row reads one value per class. Returns the end offset. kids =
    (member, catt, cstr, cblk, ccard): the children of Q as `_parent_set` lays them out."""
    member, catt, cstr, cblk, ccard = kids
    d = member.shape[0]
    K = tb.K
    den = np.empty(K)
    held = np.empty(K)
    jadd = 1.0 / (K * cells)
    gofs[d] = g0
    g = g0 + cells * (K + 1)
    for s in range(d):
        if member[s]:
            continue
        gofs[s] = g
        g += cells * ccard[s] * K
    for qv in range(cells):
        read_call(tb, bq, qv, pc)
        ib = g0 + qv * (K + 1)
        tot = 0
        for y in range(K):
            den[y] = inverse_total(pc[y], 1.0)  # SPEC §5: m = 1, leave-one-out
            held[y] = inverse_total(pc[y] - 1, 1.0) if pc[y] >= 1 else 0.0
            fac[ib + y] = (pc[y] + jadd) / n * scale
            fac[h + ib + y] = ((pc[y] - 1) + jadd) / n * scale
            tot += pc[y]
        fac[ib + K] = tot
        fac[h + ib + K] = tot  # unused
        if tot < 2:  # no row can use Q's cell qv (no other row in it): its factors unread
            continue
        for s in range(d):
            if member[s]:
                continue
            c = order[s]
            base = 0
            for t in range(lev):  # Q's values of cell qv, placed in the child block
                v = (qv // qst[t]) % tb.cards[qa[t]]
                for u in range(lev + 1):
                    if catt[s, u] == qa[t]:
                        base += v * cstr[s, u]
            cs = 0
            for u in range(lev + 1):
                if catt[s, u] == c:
                    cs = cstr[s, u]
            inv = 1.0 / ccard[s]
            for xc in range(ccard[s]):
                read(tb, cblk[s], base + xc * cs, cnt)
                o = gofs[s] + (qv * ccard[s] + xc) * K
                for y in range(K):
                    fac[o + y] = m_estimate_inv(cnt[y], inv, den[y])
                    fac[h + o + y] = m_estimate_inv(cnt[y] - 1, inv, held[y])
    return g


@numba.njit(cache=True, nogil=True, inline="always")
def _ones(tb):
    """Size of the block of factors 1.0 at the start of each half of a factor buffer: a
    child that is one of the parents reads it at x_c · K (< K · the largest |X_c|)."""
    return tb.K * largest(tb.cards)


@numba.njit(cache=True, nogil=True, inline="always")
def _work(d, lev, K):
    """Scratch arrays of `_parent_set` and `_gather`: (pos, qa, qst, member, catt, cstr,
    cblk, ccard, cnt, pc)."""
    return (np.empty(lev, dtype=np.int64), np.empty(lev, dtype=np.int64),
            np.empty(lev, dtype=np.int64), np.zeros(d, dtype=np.bool_),
            np.empty((d, lev + 1), dtype=np.int64), np.empty((d, lev + 1), dtype=np.int64),
            np.empty(d, dtype=np.int64), np.empty(d, dtype=np.int64),
            np.empty(K, dtype=np.int64), np.empty(K, dtype=np.int64))


@numba.njit(cache=True, nogil=True)
def gather_plan(tb, order, lev, nrows, budget):
    """Where every parent set's scores (see `_gather`) go in one buffer shared by all
    chunks and threads of a pass: starts[j] for the j-th parent set in the pass's order
    (starts[-1] = the buffer's half size, after the factors 1.0 at 0 of a child that is
    one of the parents). Empty when they exceed `budget` bytes or a quarter of the rows'
    reads (not worth it)."""
    d = order.shape[0]
    K = tb.K
    pos, qa, qst, member, catt, cstr, cblk, ccard, _, _ = _work(d, lev, K)
    for t in range(lev):
        pos[t] = t
    sets = 0
    while True:
        sets += 1
        if not next_colex(pos, lev, d):
            break
    starts = np.empty(sets + 1, dtype=np.int64)
    starts[0] = _ones(tb)
    total = 0
    for t in range(lev):
        pos[t] = t
    for j in range(sets):
        _, cells, t = _parent_set(tb, order, pos, lev, qa, qst, member, catt, cstr, cblk,
                                  ccard)
        total += t
        starts[j + 1] = starts[j] + cells * (K + 1) + t * K
        next_colex(pos, lev, d)
    if starts[sets] * 16 > budget or 4 * total > nrows * sets * d:
        return starts[:0]
    return starts


@numba.njit(cache=True, nogil=True)
def gather_sets(tb, order, lev, n, scale, fac, goffs, starts, j0, j1):
    """Parent sets j0 .. j1 − 1's scores into fac at `starts`, their offsets into goffs."""
    d = order.shape[0]
    pos, qa, qst, member, catt, cstr, cblk, ccard, cnt, pc = _work(d, lev, tb.K)
    kids = (member, catt, cstr, cblk, ccard)  # (filled in place by `_parent_set`)
    for t in range(lev):
        pos[t] = t
    for j in range(j0):
        next_colex(pos, lev, d)
    for j in range(j0, j1):
        bq, cells, _ = _parent_set(tb, order, pos, lev, qa, qst, member, catt, cstr, cblk,
                                   ccard)
        _gather(tb, qa, qst, lev, bq, cells, order, kids, cnt, pc, goffs[j], fac, starts[j],
                starts[-1], n, scale)
        next_colex(pos, lev, d)


def gather_all(tb: Tables, order: np.ndarray, lev: int, nrows: int, n: float, scale: float,
               budget: int, n_jobs: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Every parent set's scores in one buffer (see `gather_plan`), gathered by n_jobs
    threads: (fac, goffs[j] = the j-th parent set's offsets), or empty arrays."""
    d = order.shape[0]
    starts = gather_plan(tb, order, lev, nrows, budget)
    if starts.shape[0] == 0:
        return np.empty(0), np.empty((0, d + 1), dtype=np.int64)
    size, sets = int(starts[-1]), starts.shape[0] - 1
    fac = np.zeros(2 * size)  # zero pages: the factors no row reads cost nothing
    fac[:starts[0]] = 1.0
    fac[size:size + starts[0]] = 1.0
    goffs = np.zeros((sets, d + 1), dtype=np.int64)
    if size < GATHER_PER_THREAD:
        n_jobs = 1
    # n_jobs ranges of parent sets of about equal size
    cuts = [0, *np.searchsorted(starts, [size * k / n_jobs for k in range(1, n_jobs)]), sets]
    ranges = [(int(a), int(b)) for a, b in zip(cuts, cuts[1:]) if b > a]
    work = (tb, order, lev, n, scale, fac, goffs, starts)
    if len(ranges) == 1:
        gather_sets(*work, *ranges[0])
    else:
        with ThreadPoolExecutor(len(ranges)) as pool:
            for running in [pool.submit(gather_sets, *work, a, b) for a, b in ranges]:
                running.result()
    return fac, goffs


def _sse_kernel(kc: int):
    """`selective_sse` for kc classes (2, 3; 0: any number, read from the tables); the body
    not an inlined helper (numba copies inlined IR twice: seconds for one this size)."""

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def selective_sse(tb, X, yv, order, lev, n, scale, sse, chunk, gcap, err, fac, goffs):
        K = kc if kc else tb.K
        nrows, d = X.shape
        pos, qa, qst, member, catt, cstr, cblk, ccard, cnt, pc = _work(d, lev, K)
        coff = np.empty(d, dtype=np.int64)  # dense block offset, −1: sparse
        cinv = np.empty(d)
        gofs = np.empty(d + 1, dtype=np.int64)
        gb = np.empty(d, dtype=np.int64)  # child s's factors: gb[s] + qv·cst[s] + x_s·K
        cst = np.empty(d, dtype=np.int64)
        xk = np.empty((chunk, d), dtype=np.int64)
        ones = _ones(tb)
        pre = goffs.shape[0] > 0
        if not pre:
            fac = np.empty(2 * gcap)
            fac[:ones] = 1.0  # the factors 1.0 of a child that is one of the parents
            fac[gcap:gcap + ones] = 1.0
        h = fac.shape[0] // 2
        # by (class, child) when K <= 4: the errors' loop over s reads it contiguously
        acc = np.zeros((chunk, K, d)) if K <= 4 else np.zeros((chunk, d, K))
        flag = np.zeros(chunk, dtype=np.bool_)
        prod = np.empty(K)
        den = np.empty(K)
        kids = (member, catt, cstr, cblk, ccard)  # (filled in place by `_parent_set`)
        rowkids = (member, coff, catt, cinv, cblk)
        work = (cnt, prod, den)
        e2 = np.empty(d)
        for r0 in range(0, nrows, chunk):
            nb = min(chunk, nrows - r0)
            acc[:nb] = 0.0
            for b in range(nb):  # the chunk's values in ranking order, times K
                for s in range(d):
                    xk[b, s] = X[r0 + b, order[s]] * K
            for t in range(lev):
                pos[t] = t
            j = 0
            while True:
                bq, cells, total = _parent_set(tb, order, pos, lev, qa, qst, member, catt,
                                               cstr, cblk, ccard)
                jadd = 1.0 / (K * cells)
                for s in range(d):
                    if not member[s]:
                        cb = cblk[s]
                        coff[s] = tb.off[cb] if tb.kind[cb] == KIND_DENSE else -1
                        cinv[s] = 1.0 / ccard[s]
                if pre:  # every parent set's factors gathered before the pass
                    gathered = True
                    gofs[:] = goffs[j]
                else:  # small enough for the chunk: gathered for it
                    room = ones + cells * (K + 1) + total * K <= h
                    gathered = total <= nb * d // 4 and room
                    if gathered:
                        _gather(tb, qa, qst, lev, bq, cells, order, kids, cnt, pc, gofs,
                                fac, ones, h, n, scale)
                j += 1
                for s in range(d):  # a parent of Q as child: x_s · K into the factors 1.0
                    gb[s] = 0 if member[s] else gofs[s]
                    cst[s] = 0 if member[s] else ccard[s] * K
                for b in range(nb):
                    r = r0 + b
                    ys = yv[r]
                    qv = cell(tb, qa, lev, X, r)  # the row's cell of Q
                    if gathered:
                        ib = gofs[d] + qv * (K + 1)
                        if fac[ib + K] < 2.0:  # no other row in the cell: Q unusable
                            continue
                        flag[b] = True
                        for y in range(K):
                            prod[y] = fac[ib + y]
                        prod[ys] = fac[h + ib + ys]
                        if K <= 4:  # up to four running products in registers, side by side
                            # class y's factor at fac[o + y] (the row's own: fac[h + o + y])
                            f0 = h if ys == 0 else 0
                            f1 = 1 + (h if ys == 1 else 0)
                            f2 = min(2, K - 1) + (h if ys == 2 else 0)
                            f3 = min(3, K - 1) + (h if ys == 3 else 0)
                            p0, p1 = prod[0], prod[1]
                            p2, p3 = prod[min(2, K - 1)], prod[min(3, K - 1)]
                            for s in range(d):  # unsigned indices: no sign checks
                                o = gb[s] + qv * cst[s] + xk[b, s]
                                p0 *= fac[np.uint64(o + f0)]
                                p1 *= fac[np.uint64(o + f1)]
                                if K > 2:
                                    p2 *= fac[np.uint64(o + f2)]
                                if K > 3:
                                    p3 *= fac[np.uint64(o + f3)]
                                acc[b, 0, s] += p0
                                acc[b, 1, s] += p1
                                if K > 2:
                                    acc[b, 2, s] += p2
                                if K > 3:
                                    acc[b, 3, s] += p3
                        else:  # many classes: the class loops innermost (vectorised)
                            for s in range(d):
                                a_ = acc[b, s]
                                o = gb[s] + qv * cst[s] + xk[b, s]
                                f = fac[o:o + K]  # a view: its indices need no sign check
                                keep, akeep = prod[ys], a_[ys]
                                for y in range(K):
                                    v = prod[y] * f[y]
                                    prod[y] = v
                                    a_[y] += v
                                prod[ys] = keep * fac[h + o + ys]  # the row's own class
                                a_[ys] = akeep + prod[ys]
                        continue
                    if _row_from_counts(tb, X, r, b, ys, bq, qv, lev, n, scale, jadd,
                                        rowkids, work, acc, K):
                        flag[b] = True
                top = pos[lev - 1]
                more = next_colex(pos, lev, d)
                if not more or pos[lev - 1] != top:
                    _flush(acc, flag, nb, yv, r0, sse, top, err, e2, K)
                if not more:
                    break

    return selective_sse


_sse_for = by_classes(_sse_kernel)


def selective_sse(tb, X, yv, order, lev, n, scale, sse, chunk, gcap, err, fac, goffs):
    """Add to sse[r, s], the SSE of model M(r + 1, s + 1) — parent sets = the lev-subsets
    of the first r + 1 attributes of `order`, children = its first s + 1 — the rows of X,
    each held out in turn from the counts of all `n` training rows. A row adds to table
    row r only if one of the parent sets that M(r + 1, ·) adds (those holding order[r]) is
    usable for it: SPEC §5.3's Petal rule at lev = 1, where this is ASAODE.

    Parent-major over chunks of `chunk` rows: each parent set's scores are read for every
    row of the chunk while they are in cache; per row, the SPODEs are summed in ranking
    order and the errors added in file order, exactly as row by row. The scores come as
    floats from `fac` (goffs[j]: parent set j's offsets, see `gather_plan`) when gathered
    for the pass, else each chunk gathers a parent set's into a buffer of 2 · gcap values
    if they fit (and are worth it), else reads the count tables. Two and three classes get
    their own compiled loops (`workbench.jit.by_classes`: a constant K unrolls the class
    loops; each variant compiled on first need). With rows in `err`
    (err[r, row, s], at least X's rows), the errors are stored there instead for
    `add_errors`, so that blocks of rows can be scored in parallel."""
    _sse_for(int(tb.K))(tb, X, yv, order, lev, n, scale, sse, chunk, gcap, err, fac, goffs)


@numba.njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _row_from_counts(tb, X, r, b, ys, bq, qv, lev, n, scale, jadd, rowkids, work, acc, K):
    """Row r's leave-one-out running products over the children, read from the count
    tables (parent set Q = block bq, the row's cell qv), added into acc[b]; False when no
    other row shares its cell (Q unusable for it). rowkids = (member, coff, catt, cinv,
    cblk): the children of Q, their dense tables' offsets and 1/|X_c|; work = (cnt, prod,
    den)."""
    member, coff, catt, cinv, cblk = rowkids
    cnt, prod, den = work
    d = X.shape[1]
    dense = tb.dense
    read_call(tb, bq, qv, cnt)
    cnt[ys] -= 1
    tot = 0
    for y in range(K):
        tot += cnt[y]
    if tot < 1:
        return False
    for y in range(K):
        prod[y] = (cnt[y] + jadd) / n * scale
        den[y] = inverse_total(cnt[y], 1.0)
    for s in range(d):
        if not member[s]:
            o = coff[s]
            loc = cell(tb, catt[s], lev + 1, X, r)
            inv = cinv[s]
            if o >= 0:
                o += loc * K
                for y in range(K):  # #'(x_Q, x_c, y): the row's own class less 1
                    cy = dense[o + y] - np.int64(y == ys)
                    prod[y] *= m_estimate_inv(cy, inv, den[y])
            else:
                read_call(tb, cblk[s], loc, cnt)
                cnt[ys] -= 1
                for y in range(K):
                    prod[y] *= m_estimate_inv(cnt[y], inv, den[y])
        for y in range(K):
            if K <= 4:
                acc[b, y, s] += prod[y]
            else:
                acc[b, s, y] += prod[y]
    return True


def selective_scale(d: int, lev: int) -> float:
    """The linear scores' scale (SPEC §5.6: (1/d)·(DBL_MAX/d) at lev = 1): (1/P)·(DBL_MAX/P)
    for the P = C(d, lev) parent sets, so their sum cannot overflow."""
    p = float(math.comb(d, lev))
    return (1.0 / p) * (DBL_MAX / p)


def selective_chunk(d: int, K: int, gathered: bool) -> int:
    """Rows per chunk of `selective_sse`: its per-row accumulators within ~1 MB (a core's
    L2 keeps them beside the parent set's factors) when the factors were gathered before
    the pass, else ~4 MB (each chunk gathers them again: fewer, larger chunks)."""
    return max(64, min(4096, (1 << (17 if gathered else 19)) // max(1, d * K)))


ERROR_BYTES = 4 << 20
"""Per thread of a parallel pass: the stored errors of its block of rows (d² per row),
sized to stay in a core's cache until the thread adds them."""
FACTOR_BYTES = 256 << 20
"""At most this much memory for every parent set's child factors, gathered once per pass."""


def factor_budget(tb: Tables) -> int:
    """Bytes for the factors gathered once per pass: FACTOR_BYTES, or half of what the
    memory budget leaves beside the count tables if that is less (else each chunk gathers
    its own, in a buffer the size of its accumulators)."""
    tables = tb.dense.nbytes + tb.skeys.nbytes + tb.svals.nbytes
    return min(FACTOR_BYTES, max(0, memory_budget() - tables) // 2)
GATHER_PER_THREAD = 1 << 18
"""Fewer factors than this are gathered by one thread (a thread costs more than it saves)."""
_NO_ERRORS = np.empty((0, 0, 0))


def selective_pass(tb: Tables, X: np.ndarray, y: np.ndarray, order: np.ndarray, lev: int,
                   n: int, sse: np.ndarray, n_jobs: int = 1) -> None:
    """Add the rows X (held out from the counts of all n training rows) to the SSE table.
    The child factors of every parent set are gathered once for all chunks and threads
    (within FACTOR_BYTES). With n_jobs > 1, threads score blocks of rows into their own
    error buffers (the kernel releases the GIL), each adding its block's errors once the
    block before is added: the table gets the same additions in the same order, bit for
    bit, for any n_jobs."""
    nrows, d = X.shape
    if d < lev:
        return  # no parent set of lev attributes: nothing to add
    scale = selective_scale(d, lev)
    fac, goffs = gather_all(tb, order, lev, nrows, float(n), scale, factor_budget(tb), n_jobs)
    chunk = selective_chunk(d, tb.K, goffs.shape[0] > 0)
    model = (order, lev, float(n), scale, sse)  # the same for every block
    rows = max(1, min(chunk, ERROR_BYTES // (8 * d * d)))
    if n_jobs == 1 or nrows <= rows:
        selective_sse(tb, X, y, *model, chunk, chunk * d * tb.K, _NO_ERRORS, fac, goffs)
        return
    starts = range(0, nrows, rows)
    added = [threading.Event() for _ in starts]

    def blocks(k: int) -> None:  # blocks k, k + n_jobs, …; each added after the one before
        try:
            err = np.zeros((d, rows, d))  # table rows < lev − 1 stay 0
            for j in range(k, len(starts), n_jobs):
                lo, hi = starts[j], min(nrows, starts[j] + rows)
                selective_sse(tb, X[lo:hi], y[lo:hi], *model, rows, rows * d * tb.K, err,
                              fac, goffs)
                if j:
                    added[j - 1].wait()
                add_errors(sse, err, hi - lo)
                added[j].set()
        except BaseException:
            for event in added:  # nobody waits for a block that will not come
                event.set()
            raise

    with ThreadPoolExecutor(n_jobs) as pool:
        for running in [pool.submit(blocks, k) for k in range(n_jobs)]:
            running.result()


def first_minimum(values: np.ndarray) -> int:
    """Flat index of the first value within a factor (1 + TAU) of the minimum (row-major)."""
    flat = np.ravel(values)
    finite = flat[np.isfinite(flat)]
    if finite.size == 0:
        return 0
    return int(np.flatnonzero(flat <= finite.min() * (1.0 + TAU))[0])


def asaode_choose(sse: np.ndarray, n: int, lev: int = 1) -> tuple[int, int, np.ndarray]:
    """(r*, s*, RMSE table) from the SSE table over n rows: the model M(r*, s*) (1-based
    sizes) with the smallest leave-one-out true-class RMSE, ties to the smallest r then s.
    Models with fewer than lev parent attributes have no parent set (RMSE +inf)."""
    rmse = np.sqrt(sse / n)
    rmse[: lev - 1] = np.inf
    d = sse.shape[0]
    if not np.isfinite(rmse).any():  # d < lev: no parent set; keep every attribute
        return d, d, rmse
    k = first_minimum(rmse)
    return k // d + 1, k % d + 1, rmse


def asaode_select(tb: Tables, X: np.ndarray, y: np.ndarray, order: np.ndarray, lev: int = 1,
                  n_jobs: int = 1) -> tuple[int, int, np.ndarray]:
    """The search over all training rows X at once (see `asaode_choose`)."""
    d = X.shape[1]
    sse = np.zeros((d, d))
    selective_pass(tb, X, y, order, lev, X.shape[0], sse, n_jobs)
    return asaode_choose(sse, X.shape[0], lev)


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
                    f = m_estimate(pair[p, c, y], inv, single[p, y], 1.0)
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
