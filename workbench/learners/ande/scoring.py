"""Scoring one level of AnDE for a batch of test instances (numba).

Block-major: parent sets and child combinations run over *attribute* combinations in colex
order (block id = level base + enumeration index), and each block is read for every
instance of the batch while it is in cache. Each (lev+1)-combination S is read once and
feeds the lev+1 parent sets S∖{c} with child c (Salem et al.).

Per instance r, act[a, r] says attribute a takes part (value present, not deleted by
subsumption resolution) and seen[a, r] that its value occurs in training; `Inputs.parent_ok`
/ `child_ok` restrict which attributes may form parent sets / act as children. Dense tables
are read even for unseen values (they hold zeros); sparse blocks are not searched for a
combination with an unseen value (splice's instance names: ~25 % of A2DE's time).
"""

from __future__ import annotations

from workbench.jit import numba
import numpy as np

from workbench.learners.ande.estimates import (RESCALE, add_log, inverse_total, joint_term,
                                               log_joint_term, rescale, times_child_missing,
                                               times_m_estimate_inv)
from workbench.learners.ande.tables import read_call, read_row
from workbench.learners.counting.combinations import next_colex
from workbench.learners.counting.layout import KIND_DENSE


@numba.njit(cache=True, nogil=True, error_model="numpy")
def parent_pass(X, act, nb, lev, d, tb, est, ws, nused, wsum, n_values):
    """#(y, x_s) of every parent set s of size lev for each instance; which sets are used
    (#(x_s) ≥ F, every attribute allowed as a parent); their number and total weight."""
    K = tb.K
    idx = np.empty(lev, dtype=np.int64)
    cnt = np.empty(K, dtype=np.int64)
    for t in range(lev):
        idx[t] = t
    q = 0
    while True:
        b = tb.lbase[lev] + q
        vs = 1.0
        allowed = True
        for t in range(lev):
            vs *= tb.cards[idx[t]]
            allowed = allowed and est.parent_ok[idx[t]]
        n_values[q] = vs
        for r in range(nb):
            ok = allowed
            for t in range(lev):
                ok = ok and act[idx[t], r]
            if not ok:
                ws.used[q, r] = False
                continue
            read_row(tb, b, idx, lev, X, r, cnt)
            tot = 0
            for y in range(K):
                tot += cnt[y]
                ws.cnt[q, r, y] = cnt[y]
                ws.inv[q, r, y] = inverse_total(cnt[y], est.m)
                ws.prod[q, r, y] = 1.0
                ws.lacc[q, r, y] = 0.0
            used = tot >= est.F
            ws.used[q, r] = used
            if used:
                nused[r] += 1
                wsum[r] += est.wts[b]
        q += 1
        if not next_colex(idx, lev, d):
            return


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _rows_in(X, act, nb, L1, idx, cards, rows, loc):
    """The instances for which every attribute of combination idx[0:L1] takes part, into
    rows[0:k], with their value-combination index loc[i]; returns k."""
    k = 0
    for r in range(nb):
        ok = True
        for t in range(L1):
            ok = ok and act[idx[t], r]
        if ok:
            v = 0
            for t in range(L1):
                v = v * cards[idx[t]] + X[r, idx[t]]
            rows[k] = r
            loc[k] = v
            k += 1
    return k


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _rescale_small(rows, k, small, resc, L1, child, used, qs, prod, lacc, K):
    """For each instance rows[i] (i < k) with a product below RESCALE, move the products of
    every parent set that took a child from this block into the log accumulator."""
    for i in range(k):
        r = rows[i]
        if small[r]:
            resc[r] = True
            for t in range(L1):
                if child[t] and used[qs[t], r]:
                    rescale(prod, lacc, qs[t], r, K)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _children_dense(X, act, allact, nb, L1, idx, qs, madd, child, o_block, tb, ws, resc, rows,
                    orow, small):
    """Child factors from one dense (lev+1)-block when no child has missing training values:
    parent set qs[t] = S∖{idx[t]} gets child idx[t] (if child[t]). Child-major, so each
    parent set's constants stay in registers. `allact` (a compile-time constant, see
    `child_pass`): every value of the batch takes part, so the loops run over the batch
    directly; otherwise (subsumption resolution deletes most values) the instances whose
    values of S all take part are gathered into rows[0:k] first."""
    K = tb.K
    used, prod, inv, lacc, dense, cards = ws.used, ws.prod, ws.inv, ws.lacc, tb.dense, tb.cards
    k = 0
    for r in range(nb):
        v = 0
        if allact:  # no early exit: the compiler unrolls this loop
            for t in range(L1):
                v = v * cards[idx[t]] + X[r, idx[t]]
        else:
            for t in range(L1):
                a = idx[t]
                if not act[a, r]:
                    v = -1
                    break
                v = v * cards[a] + X[r, a]
        orow[r] = o_block + v * K if v >= 0 else -1
        rows[k] = r
        small[r] = False
        k += v >= 0
    for t in range(L1):
        if not child[t]:
            continue
        q = qs[t]
        ma = madd[t]
        for i in range(nb if allact else k):
            r = i if allact else rows[i]
            o = orow[r]
            if o < 0 or not used[q, r]:
                continue
            sm = False
            for y in range(K):
                pv = times_m_estimate_inv(prod[q, r, y], dense[o + y], ma, inv[q, r, y])
                prod[q, r, y] = pv
                sm |= pv < RESCALE
            small[r] |= sm
    _rescale_small(rows, k, small, resc, L1, child, used, qs, prod, lacc, K)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _children_general(X, act, seen, nb, lev, combo, b2, tb, est, ws, resc, scratch):
    """Child factors from one (lev+1)-block of any storage, with missing-child denominators
    (#(y, x_s) − #(y, x_s, x_c ?) + m); sparse blocks are searched only for seen values.
    combo = (idx, qs, madd, mbase, child): the block's attributes and, per member t as
    child, the rank of the others, its m-share, missing-count base and whether it may be
    one; scratch = (rows, loc, small, ccb, mc, s), work arrays."""
    idx, qs, madd, mbase, child = combo
    rows, loc, small, ccb, mc, s = scratch
    K = tb.K
    L1 = lev + 1
    m = est.m
    used, prod, inv, lacc, wcnt = ws.used, ws.prod, ws.inv, ws.lacc, ws.cnt
    kind, off, dense, cards = tb.kind, tb.off, tb.dense, tb.cards
    k = _rows_in(X, act, nb, L1, idx, cards, rows, loc)
    small[:] = False
    for i in range(k):
        r = rows[i]
        allseen = True
        for t in range(L1):
            allseen = allseen and seen[idx[t], r]
        if allseen and kind[b2] == KIND_DENSE:  # the common case without a call
            o = off[b2] + loc[i] * K
            for y in range(K):
                ccb[i, y] = dense[o + y]
        elif allseen:
            read_call(tb, b2, loc[i], ccb[i])
        else:
            ccb[i, :] = 0
    for t in range(L1):
        if not child[t]:
            continue
        q = qs[t]
        ma = madd[t]
        mb = mbase[t]
        u = 0
        for v in range(L1):
            if v != t:
                s[u] = idx[v]
                u += 1
        for i in range(k):
            r = rows[i]
            if not used[q, r]:
                continue
            if mb < 0:
                sm = False
                for y in range(K):
                    pv = times_m_estimate_inv(prod[q, r, y], ccb[i, y], ma, inv[q, r, y])
                    prod[q, r, y] = pv
                    sm |= pv < RESCALE
                small[r] |= sm
                continue
            pseen = True
            v = 0
            for u in range(lev):
                pseen = pseen and seen[s[u], r]
                v = v * cards[s[u]] + X[r, s[u]]
            if pseen and kind[mb + q] == KIND_DENSE:
                o = off[mb + q] + v * K
                for y in range(K):
                    mc[y] = dense[o + y]
            elif pseen:
                read_call(tb, mb + q, v, mc)
            else:
                mc[:] = 0
            if times_child_missing(prod, lacc, wcnt, q, r, ccb[i], mc, ma, m, K):
                resc[r] = True
    _rescale_small(rows, k, small, resc, L1, child, used, qs, prod, lacc, K)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _child_blocks(X, act, seen, nb, lev, d, tb, est, ws, resc, allact):
    """`child_pass` for one value of `allact`, which callers pass as a constant."""
    L1 = lev + 1
    if d <= lev:
        return
    idx = np.empty(L1, dtype=np.int64)
    qs = np.empty(L1, dtype=np.int64)
    madd = np.empty(L1)
    mbase = np.empty(L1, dtype=np.int64)
    child = np.empty(L1, dtype=np.bool_)
    mc = np.empty(tb.K, dtype=np.int64)
    ccb = np.empty((nb, tb.K), dtype=np.int64)
    s = np.empty(max(lev, 1), dtype=np.int64)
    rows = np.empty(nb, dtype=np.int64)
    loc = np.empty(nb, dtype=np.int64)
    small = np.empty(nb, dtype=np.bool_)  # per instance: a product fell below RESCALE
    for t in range(L1):
        idx[t] = t
    q2 = 0
    while True:
        b2 = tb.lbase[L1] + q2
        anymiss = False
        anychild = False
        for t in range(L1):
            qq = 0  # colex rank of S∖{idx[t]}
            for u in range(t):
                qq += tb.binom[idx[u], u + 1]
            for u in range(t + 1, L1):
                qq += tb.binom[idx[u], u]
            qs[t] = qq
            c = idx[t]
            madd[t] = est.m / tb.cards[c]
            mbase[t] = tb.miss_base[lev, c]
            anymiss |= mbase[t] >= 0
            child[t] = est.child_ok[c]
            anychild |= child[t]
        if anychild:
            if tb.kind[b2] == KIND_DENSE and not anymiss:
                # literal orders let the compiler unroll the loops over the combination
                if L1 == 2:
                    _children_dense(X, act, allact, nb, 2, idx, qs, madd, child, tb.off[b2],
                                    tb, ws, resc, rows, loc, small)
                elif L1 == 3:
                    _children_dense(X, act, allact, nb, 3, idx, qs, madd, child, tb.off[b2],
                                    tb, ws, resc, rows, loc, small)
                else:
                    _children_dense(X, act, allact, nb, L1, idx, qs, madd, child, tb.off[b2],
                                    tb, ws, resc, rows, loc, small)
            else:
                _children_general(X, act, seen, nb, lev, (idx, qs, madd, mbase, child), b2, tb,
                                  est, ws, resc, (rows, loc, small, ccb, mc, s))
        q2 += 1
        if not next_colex(idx, L1, d):
            return


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _child_pass_all(X, act, seen, nb, lev, d, tb, est, ws, resc):
    _child_blocks(X, act, seen, nb, lev, d, tb, est, ws, resc, True)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _child_pass_some(X, act, seen, nb, lev, d, tb, est, ws, resc):
    _child_blocks(X, act, seen, nb, lev, d, tb, est, ws, resc, False)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def child_pass(X, act, seen, nb, lev, d, tb, est, ws, resc):
    """Multiply every used parent set by its children's factors, one (lev+1)-block at a
    time. Two compiled versions: one for batches where every value takes part, and one for
    batches where some do not (subsumption resolution, missing values) — one loop serving
    both compiles ~20 % slower for A2DE, and gathering saves ~25 % for A2DE-S."""
    allact = True
    for a in range(d):
        for r in range(nb):
            allact = allact and act[a, r]
    if allact:
        _child_pass_all(X, act, seen, nb, lev, d, tb, est, ws, resc)
    else:
        _child_pass_some(X, act, seen, nb, lev, d, tb, est, ws, resc)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def combine_pass(nb, lev, n_sets, tb, est, ws, nused, wsum, resc, n_values, done, lp):
    """lp[r, y] = log Σ_s w_s P(y, x_s) Π_c P(x_c | y, x_s) over the used parent sets — summed
    in linear space when no product of instance r was rescaled (every term is then a normal
    double), otherwise as a log-sum-exp. done[r] = False when no parent set is used."""
    K = tb.K
    mx = np.empty(K)
    acc = np.empty(K)
    for r in range(nb):
        done[r] = nused[r] > 0
        if not done[r]:
            continue
        equal = wsum[r] <= 0.0
        for y in range(K):
            mx[y] = -np.inf
            acc[y] = 0.0
        for q in range(n_sets):
            if not ws.used[q, r]:
                continue
            b = tb.lbase[lev] + q
            w = 1.0 if equal else est.wts[b]
            if w <= 0.0:
                continue
            if not resc[r]:
                for y in range(K):
                    acc[y] += joint_term(ws.cnt[q, r, y], ws.prod[q, r, y], est.m, K,
                                         n_values[q], w, est.ptot[b])
                continue
            lw = 0.0 if equal else np.log(w)
            for y in range(K):
                mx[y], acc[y] = add_log(mx[y], acc[y], log_joint_term(
                    ws.cnt[q, r, y], ws.prod[q, r, y], ws.lacc[q, r, y], est.m, K, n_values[q],
                    lw, est.ptot[b]))
        for y in range(K):
            lp[r, y] = np.log(acc[y]) if not resc[r] else mx[y] + np.log(acc[y])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def score_level(X, act, seen, nb, lev, d, tb, est, ws, done, lp, wsum):
    """AnDE of order lev ≥ 1 for instances 0..nb−1 of X: log scores into lp, done[r] = False
    for an instance no parent set qualifies for (the caller falls back to order lev − 1),
    wsum[r] = the total weight of its used parent sets."""
    done[:nb] = False
    wsum[:nb] = 0.0
    if lev > d:
        return
    n_sets = tb.binom[d, lev]
    n_values = np.empty(n_sets)
    nused = np.zeros(nb, dtype=np.int64)
    resc = np.zeros(nb, dtype=np.bool_)
    parent_pass(X, act, nb, lev, d, tb, est, ws, nused, wsum, n_values)
    child_pass(X, act, seen, nb, lev, d, tb, est, ws, resc)
    combine_pass(nb, lev, n_sets, tb, est, ws, nused, wsum, resc, n_values, done, lp)
