"""AnDE family (SPEC §2): NB = A0DE, A1DE, A2DE, A3DE with subsumption resolution ("-S")
and mutual-information weighting ("-W").

For a test instance x, with the set A of its non-missing attribute values (minus values
deleted by subsumption resolution), AnDE of order n scores

    score(y) = Σ_{used s ⊆ A, |s| = n} w_s · P(y, x_s) · Π_{c ∈ A∖s} P(x_c | y, x_s)

where s is *used* iff #(x_s) (over all classes) ≥ F (the frequency limit, δ). If no s of
size n is used, A(n−1)DE is tried with the same A, SR and weighting, down to NB. Estimates
are m-estimates with declared cardinalities (see SPEC §2 and `_level_scores`); all work is in
log space with a per-instance log-sum-exp over parent sets, so 100+ attributes never
underflow. Counts come from `workbench.learners.counts.AnDECounts` (one pass, additive).

The registered variants (NB, A1DE, A1DE-S, …, A3DE) are parameter sets of `AnDE`; fitted
variants of one order can share one count table via `AnDE.derive`.
"""

from __future__ import annotations

from math import comb

import numba
import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.base import Learner, choice, integer, number
from workbench.learners.counts import AnDECounts, lookup_k, next_colex
from workbench.learners.registry import register

MAX_ORDER = 3
MI_THRESHOLD = 1e-6
_RESCALE = 1e-280
_BATCH_BYTES = 64 << 20


# ----- numba kernels ---------------------------------------------------------------------
@numba.njit(cache=True, nogil=True, inline="always")
def _rank(attrs, l, binom):
    r = 0
    for t in range(l):
        r += binom[attrs[t], t + 1]
    return r


@numba.njit(cache=True, nogil=True, inline="always")
def _loc(attrs, l, x, cards):
    loc = 0
    for t in range(l):
        a = attrs[t]
        loc = loc * cards[a] + x[a]
    return loc


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _level_scores(x, active, na, seen, lev, cards, K, m, F, weighted, kind, off, vbase, dense,
                  skeys, svals, lbase, binom, miss_base, ptot, wts, ws_cnt, ws_inv, ws_used,
                  ws_prod, ws_lacc, out):
    """Log scores of AnDE of order `lev` ≥ 1 over the active attributes; False if no parent
    set qualifies (δ = 0 for all).

    P(y, x_s) = (#(y, x_s) + m/(K·Π|X_s|)) / (N − miss(s) + m), N − miss(s) = block total;
    P(x_c | y, x_s) = (#(y, x_s, x_c) + m/|X_c|) / (#(y, x_s) − #(y, x_s, x_c missing) + m).

    Parent sets are indexed by the colex rank of their *positions* in `active`; each
    (lev+1)-combination S is read once and feeds the lev+1 parent sets S∖{c} (Salem et al.).
    `seen[t]` is False when active[t]'s value never occurs in training: every count
    involving it is then 0 and no table is read.
    """
    if na < lev:
        return False
    idx = np.empty(lev + 1, dtype=np.int64)
    s = np.empty(lev, dtype=np.int64)
    sc = np.empty(lev + 1, dtype=np.int64)
    cnt = np.empty(K, dtype=np.int64)
    cc = np.empty(K, dtype=np.int64)
    mc = np.empty(K, dtype=np.int64)
    qs = np.empty(lev + 1, dtype=np.int64)
    # pass 1: parent-set counts, δ and total weight
    for t in range(lev):
        idx[t] = t
    nused = 0
    wsum = 0.0
    q = 0
    while True:
        allseen = True
        for t in range(lev):
            s[t] = active[idx[t]]
            allseen = allseen and seen[idx[t]]
        if allseen:
            b = lbase[lev] + _rank(s, lev, binom)
            _lk = 0
            for _tk in range(lev):
                _ak = s[_tk]
                _lk = _lk * cards[_ak] + x[_ak]
            _bk = b
            if kind[_bk] == 0:
                _ok = off[_bk] + _lk * K
                for _yk in range(K):
                    cnt[_yk] = dense[_ok + _yk]
            else:
                lookup_k(kind, off, vbase, dense, skeys, svals, _bk, _lk * K, K, cnt)
        else:
            for yy in range(K):
                cnt[yy] = 0
        tot = 0
        for yy in range(K):
            tot += cnt[yy]
            ws_cnt[q, yy] = cnt[yy]
            ws_inv[q, yy] = 1.0 / (cnt[yy] + m)
            ws_prod[q, yy] = 1.0
            ws_lacc[q, yy] = 0.0
        ws_used[q] = tot >= F
        if tot >= F:
            nused += 1
            if weighted:
                wsum += wts[lbase[lev] + _rank(s, lev, binom)]
        q += 1
        if not next_colex(idx, lev, na):
            break
    if nused == 0:
        return False
    # pass 2: every child combination S = s ∪ {c}, read once
    if na > lev:
        L1 = lev + 1
        for t in range(L1):
            idx[t] = t
        while True:
            allseen = True
            for t in range(L1):
                sc[t] = active[idx[t]]
                allseen = allseen and seen[idx[t]]
            # parent set S∖{sc[t]} has position rank qs[t]
            anyused = False
            for t in range(L1):
                qq = 0
                for u in range(t):
                    qq += binom[idx[u], u + 1]
                for u in range(t + 1, L1):
                    qq += binom[idx[u], u]
                qs[t] = qq
                anyused = anyused or ws_used[qq]
            if anyused:
                if allseen:
                    _rk = 0
                    for _tk in range(L1):
                        _rk += binom[sc[_tk], _tk + 1]
                    _lk = 0
                    for _tk in range(L1):
                        _ak = sc[_tk]
                        _lk = _lk * cards[_ak] + x[_ak]
                    _bk = lbase[L1] + _rk
                    if kind[_bk] == 0:
                        _ok = off[_bk] + _lk * K
                        for _yk in range(K):
                            cc[_yk] = dense[_ok + _yk]
                    else:
                        lookup_k(kind, off, vbase, dense, skeys, svals, _bk, _lk * K, K, cc)
                else:
                    for yy in range(K):
                        cc[yy] = 0
                for t in range(L1):
                    qq = qs[t]
                    if not ws_used[qq]:
                        continue
                    c = sc[t]
                    mcard = m / cards[c]
                    mb = miss_base[lev, c]
                    if mb >= 0:
                        pseen = True
                        for u in range(L1):
                            if u < t:
                                s[u] = sc[u]
                                pseen = pseen and seen[idx[u]]
                            elif u > t:
                                s[u - 1] = sc[u]
                                pseen = pseen and seen[idx[u]]
                        if pseen:
                            _rk = 0
                            for _tk in range(lev):
                                _rk += binom[s[_tk], _tk + 1]
                            _lk = 0
                            for _tk in range(lev):
                                _ak = s[_tk]
                                _lk = _lk * cards[_ak] + x[_ak]
                            _bk = mb + _rk
                            if kind[_bk] == 0:
                                _ok = off[_bk] + _lk * K
                                for _yk in range(K):
                                    mc[_yk] = dense[_ok + _yk]
                            else:
                                lookup_k(kind, off, vbase, dense, skeys, svals, _bk, _lk * K, K, mc)
                        else:
                            for yy in range(K):
                                mc[yy] = 0
                        for yy in range(K):
                            pv = (ws_prod[qq, yy] * (cc[yy] + mcard)
                                  / (ws_cnt[qq, yy] - mc[yy] + m))
                            if pv < _RESCALE:
                                ws_lacc[qq, yy] += np.log(pv)
                                pv = 1.0
                            ws_prod[qq, yy] = pv
                    else:
                        for yy in range(K):
                            pv = ws_prod[qq, yy] * (cc[yy] + mcard) * ws_inv[qq, yy]
                            if pv < _RESCALE:
                                ws_lacc[qq, yy] += np.log(pv)
                                pv = 1.0
                            ws_prod[qq, yy] = pv
            if not next_colex(idx, L1, na):
                break
    # pass 3: log-sum-exp over the used parent sets, per class
    equal = (not weighted) or wsum <= 0.0
    mx = np.full(K, -np.inf)
    acc = np.zeros(K)
    for t in range(lev):
        idx[t] = t
    q = 0
    while True:
        if ws_used[q]:
            for t in range(lev):
                s[t] = active[idx[t]]
            b = lbase[lev] + _rank(s, lev, binom)
            w = 1.0 if equal else wts[b]
            if w > 0.0:
                vs = 1.0
                for t in range(lev):
                    vs *= cards[s[t]]
                denom = ptot[b] + m
                lw = np.log(w)
                for yy in range(K):
                    v = (lw + np.log((ws_cnt[q, yy] + m / (K * vs)) / denom)
                         + ws_lacc[q, yy] + np.log(ws_prod[q, yy]))
                    if v > mx[yy]:
                        acc[yy] = acc[yy] * np.exp(mx[yy] - v) + 1.0
                        mx[yy] = v
                    else:
                        acc[yy] += np.exp(v - mx[yy])
        q += 1
        if not next_colex(idx, lev, na):
            break
    for yy in range(K):
        out[yy] = mx[yy] + np.log(acc[yy])
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _times_child(bw_prod, bw_inv, q, r, ccf, madd, K):
    """Multiply parent set q's running products for instance r by one child factor
    (#(y, x_s, x_c) + m/|X_c|) / (#(y, x_s) + m); True if any product fell below _RESCALE."""
    small = False
    for yy in range(K):
        pv = bw_prod[q, r, yy] * (ccf[yy] + madd) * bw_inv[q, r, yy]
        bw_prod[q, r, yy] = pv
        small |= pv < _RESCALE
    return small


@numba.njit(cache=True, nogil=True, inline="always")
def _rescale(bw_prod, bw_lacc, q, r, K):
    """Move parent set q's tiny products for instance r into the log accumulator."""
    for yy in range(K):
        pv = bw_prod[q, r, yy]
        if pv < _RESCALE:
            bw_lacc[q, r, yy] += np.log(pv)
            bw_prod[q, r, yy] = 1.0


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _batch_level_scores(xb, act, seenb, nb, lev, d, cards, K, m, F, weighted, kind, off, vbase,
                        dense, skeys, svals, lbase, binom, miss_base, ptot, wts, bw_cnt, bw_inv,
                        bw_used, bw_prod, bw_lacc, done, lpb):
    """`_level_scores` for a batch of nb instances at once, block-major: parent sets and
    child combinations run over *attribute* combinations in colex order (block id = level
    base + enumeration index), and each block is read for every instance of the batch while
    it is in cache. act[a, r] / seenb[a, r]: attribute a active / its value seen in training.
    """
    idx = np.empty(lev + 1, dtype=np.int64)
    qs = np.empty(lev + 1, dtype=np.int64)
    mct = np.empty(lev + 1)
    mbt = np.empty(lev + 1, dtype=np.int64)
    cnt = np.empty(K, dtype=np.int64)
    cc = np.empty(K, dtype=np.int64)
    mc = np.empty(K, dtype=np.int64)
    s = np.empty(lev, dtype=np.int64)
    nused = np.zeros(nb, dtype=np.int64)
    wsum = np.zeros(nb)
    resc = np.zeros(nb, dtype=np.bool_)
    ccf = np.empty(K)
    # stat[a, r]: 0 = inactive, 1 = active but value unseen in training, 2 = active and seen
    stat = np.zeros((d, nb), dtype=np.int8)
    for a in range(d):
        for r in range(nb):
            if act[a, r]:
                stat[a, r] = 2 if seenb[a, r] else 1
    nsets = binom[d, lev]
    qvs = np.empty(nsets)
    # pass 1: parent sets
    for t in range(lev):
        idx[t] = t
    q = 0
    while True:
        b = lbase[lev] + q
        vs = 1.0
        for t in range(lev):
            vs *= cards[idx[t]]
        qvs[q] = vs
        for r in range(nb):
            ok = True
            allseen = True
            for t in range(lev):
                ok = ok and act[idx[t], r]
                allseen = allseen and seenb[idx[t], r]
            if not ok:
                bw_used[q, r] = False
                continue
            if allseen:
                _lk = 0
                for _tk in range(lev):
                    _ak = idx[_tk]
                    _lk = _lk * cards[_ak] + xb[r][_ak]
                _bk = b
                if kind[_bk] == 0:
                    _ok = off[_bk] + _lk * K
                    for _yk in range(K):
                        cnt[_yk] = dense[_ok + _yk]
                else:
                    lookup_k(kind, off, vbase, dense, skeys, svals, _bk, _lk * K, K, cnt)
            else:
                for yy in range(K):
                    cnt[yy] = 0
            tot = 0
            for yy in range(K):
                tot += cnt[yy]
                bw_cnt[q, r, yy] = cnt[yy]
                bw_inv[q, r, yy] = 1.0 / (cnt[yy] + m)
                bw_prod[q, r, yy] = 1.0
                bw_lacc[q, r, yy] = 0.0
            used = tot >= F
            bw_used[q, r] = used
            if used:
                nused[r] += 1
                if weighted:
                    wsum[r] += wts[b]
        q += 1
        if not next_colex(idx, lev, d):
            break
    # pass 2: child combinations S (size lev+1), each block read once per batch
    L1 = lev + 1
    if d > lev:
        for t in range(L1):
            idx[t] = t
        q2 = 0
        while True:
            b2 = lbase[L1] + q2
            for t in range(L1):
                qq = 0
                for u in range(t):
                    qq += binom[idx[u], u + 1]
                for u in range(t + 1, L1):
                    qq += binom[idx[u], u]
                qs[t] = qq
            anymiss = False
            for t in range(L1):
                c = idx[t]
                mct[t] = m / cards[c]
                mbt[t] = miss_base[lev, c]
                anymiss = anymiss or mbt[t] >= 0
            kb = kind[b2]
            ob = off[b2]
            if L1 == 2 and kb == 0 and not anymiss:
                # fast path (A1DE, dense pair table, no missing-valued child): parents are
                # idx[0] (position qs[1]) with child idx[1], and idx[1] (qs[0]) with idx[0]
                i0 = idx[0]
                i1 = idx[1]
                q0 = qs[1]
                q1 = qs[0]
                c1 = cards[i1]
                m0 = mct[1]
                m1 = mct[0]
                for r in range(nb):
                    s0 = stat[i0, r]
                    s1 = stat[i1, r]
                    if s0 == 0 or s1 == 0:
                        continue
                    u0 = bw_used[q0, r]
                    u1 = bw_used[q1, r]
                    if s0 == 2 and s1 == 2:
                        o = ob + (xb[r, i0] * c1 + xb[r, i1]) * K
                        for yy in range(K):
                            ccf[yy] = dense[o + yy]
                    else:
                        for yy in range(K):
                            ccf[yy] = 0.0
                    small = False
                    if u0:
                        small |= _times_child(bw_prod, bw_inv, q0, r, ccf, m0, K)
                    if u1:
                        small |= _times_child(bw_prod, bw_inv, q1, r, ccf, m1, K)
                    if small:
                        resc[r] = True
                        _rescale(bw_prod, bw_lacc, q0, r, K)
                        _rescale(bw_prod, bw_lacc, q1, r, K)
                q2 += 1
                if not next_colex(idx, L1, d):
                    break
                continue
            if L1 == 3 and kb == 0 and not anymiss:
                # fast path (A2DE, dense triple table, no missing-valued child): parent set
                # qs[t] = S∖{idx[t]} gets child idx[t]
                i0 = idx[0]
                i1 = idx[1]
                i2 = idx[2]
                qa = qs[0]
                qb = qs[1]
                qc = qs[2]
                c1 = cards[i1]
                c2 = cards[i2]
                ma = mct[0]
                mb_ = mct[1]
                mc_ = mct[2]
                for r in range(nb):
                    s0 = stat[i0, r]
                    s1 = stat[i1, r]
                    s2 = stat[i2, r]
                    if s0 == 0 or s1 == 0 or s2 == 0:
                        continue
                    ua = bw_used[qa, r]
                    ub = bw_used[qb, r]
                    uc = bw_used[qc, r]
                    if not (ua or ub or uc):
                        continue
                    if s0 == 2 and s1 == 2 and s2 == 2:
                        o = ob + ((xb[r, i0] * c1 + xb[r, i1]) * c2 + xb[r, i2]) * K
                        for yy in range(K):
                            ccf[yy] = dense[o + yy]
                    else:
                        for yy in range(K):
                            ccf[yy] = 0.0
                    small = False
                    if ua:
                        small |= _times_child(bw_prod, bw_inv, qa, r, ccf, ma, K)
                    if ub:
                        small |= _times_child(bw_prod, bw_inv, qb, r, ccf, mb_, K)
                    if uc:
                        small |= _times_child(bw_prod, bw_inv, qc, r, ccf, mc_, K)
                    if small:
                        resc[r] = True
                        _rescale(bw_prod, bw_lacc, qa, r, K)
                        _rescale(bw_prod, bw_lacc, qb, r, K)
                        _rescale(bw_prod, bw_lacc, qc, r, K)
                q2 += 1
                if not next_colex(idx, L1, d):
                    break
                continue
            for r in range(nb):
                st = 2
                for t in range(L1):
                    st = min(st, stat[idx[t], r])
                if st == 0:
                    continue
                anyused = False
                for t in range(L1):
                    anyused |= bw_used[qs[t], r]
                if not anyused:
                    continue
                if st == 2:
                    loc = 0
                    for t in range(L1):
                        a = idx[t]
                        loc = loc * cards[a] + xb[r, a]
                    loc *= K
                    if kb == 0:
                        for yy in range(K):
                            cc[yy] = dense[ob + loc + yy]
                    else:
                        lookup_k(kind, off, vbase, dense, skeys, svals, b2, loc, K, cc)
                else:
                    for yy in range(K):
                        cc[yy] = 0
                for yy in range(K):
                    ccf[yy] = cc[yy]
                for t in range(L1):
                    qq = qs[t]
                    if not bw_used[qq, r]:
                        continue
                    mcard = mct[t]
                    if anymiss and mbt[t] >= 0:
                        pseen = True
                        for u in range(L1):
                            if u < t:
                                s[u] = idx[u]
                                pseen = pseen and seenb[idx[u], r]
                            elif u > t:
                                s[u - 1] = idx[u]
                                pseen = pseen and seenb[idx[u], r]
                        if pseen:
                            _lk = 0
                            for _tk in range(lev):
                                _ak = s[_tk]
                                _lk = _lk * cards[_ak] + xb[r][_ak]
                            _bk = mbt[t] + qq
                            if kind[_bk] == 0:
                                _ok = off[_bk] + _lk * K
                                for _yk in range(K):
                                    mc[_yk] = dense[_ok + _yk]
                            else:
                                lookup_k(kind, off, vbase, dense, skeys, svals, _bk, _lk * K, K, mc)
                        else:
                            for yy in range(K):
                                mc[yy] = 0
                        for yy in range(K):
                            pv = (bw_prod[qq, r, yy] * (cc[yy] + mcard)
                                  / (bw_cnt[qq, r, yy] - mc[yy] + m))
                            if pv < _RESCALE:
                                bw_lacc[qq, r, yy] += np.log(pv)
                                pv = 1.0
                                resc[r] = True
                            bw_prod[qq, r, yy] = pv
                    elif _times_child(bw_prod, bw_inv, qq, r, ccf, mcard, K):
                        resc[r] = True
                        _rescale(bw_prod, bw_lacc, qq, r, K)
            q2 += 1
            if not next_colex(idx, L1, d):
                break
    # pass 3: combine the used parent sets per class — in linear space when no product was
    # rescaled for this instance (every term is then ≥ ~1e-296, a normal double), otherwise
    # as a log-sum-exp
    mx = np.empty(K)
    acc = np.empty(K)
    for r in range(nb):
        if nused[r] == 0:
            done[r] = False
            continue
        done[r] = True
        equal = (not weighted) or wsum[r] <= 0.0
        if not resc[r]:
            for yy in range(K):
                acc[yy] = 0.0
            for q in range(nsets):
                if bw_used[q, r]:
                    b = lbase[lev] + q
                    w = 1.0 if equal else wts[b]
                    if w > 0.0:
                        f = w / (ptot[b] + m)
                        mk = m / (K * qvs[q])
                        for yy in range(K):
                            acc[yy] += (bw_cnt[q, r, yy] + mk) * f * bw_prod[q, r, yy]
            for yy in range(K):
                lpb[r, yy] = np.log(acc[yy])
            continue
        for yy in range(K):
            mx[yy] = -np.inf
            acc[yy] = 0.0
        for q in range(nsets):
            if bw_used[q, r]:
                b = lbase[lev] + q
                w = 1.0 if equal else wts[b]
                if w > 0.0:
                    lw = 0.0 if equal else np.log(w)
                    denom = ptot[b] + m
                    mk = m / (K * qvs[q])
                    for yy in range(K):
                        v = (lw + bw_lacc[q, r, yy]
                             + np.log((bw_cnt[q, r, yy] + mk) / denom * bw_prod[q, r, yy]))
                        if v > mx[yy]:
                            acc[yy] = acc[yy] * np.exp(mx[yy] - v) + 1.0
                            mx[yy] = v
                        else:
                            acc[yy] += np.exp(v - mx[yy])
        for yy in range(K):
            lpb[r, yy] = mx[yy] + np.log(acc[yy])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _predict_kernel(codes, order, max_level, cards, K, m, F, weighted, sr, crit, kind, off,
                    vbase, dense, skeys, svals, lbase, binom, miss_base, ptot, wts,
                    class_counts, N, nb_den, B):
    n, d = codes.shape
    out = np.empty((n, K))
    vc = np.empty(d, dtype=np.int64)
    deleted = np.zeros(d, dtype=np.bool_)
    cnt = np.empty(K, dtype=np.int64)
    pr = np.empty(2, dtype=np.int64)
    lp = np.empty(K)
    prod = np.empty(K)
    top = min(order, max_level)
    # batch workspace for the top level, per-instance workspace for fallback levels
    nsets = binom[d, top] if top >= 1 else 1
    bw_cnt = np.empty((nsets, B, K), dtype=np.int64)
    bw_inv = np.empty((nsets, B, K))
    bw_used = np.empty((nsets, B), dtype=np.bool_)
    bw_prod = np.empty((nsets, B, K))
    bw_lacc = np.empty((nsets, B, K))
    fsets = binom[d, top - 1] if top >= 2 else 1
    ws_cnt = np.empty((fsets, K), dtype=np.int64)
    ws_inv = np.empty((fsets, K))
    ws_used = np.empty(fsets, dtype=np.bool_)
    ws_prod = np.empty((fsets, K))
    ws_lacc = np.empty((fsets, K))
    actl = np.empty((B, d), dtype=np.int64)  # active attributes per instance
    nact = np.empty(B, dtype=np.int64)
    seenl = np.empty((B, d), dtype=np.bool_)  # per active position
    act = np.zeros((d, B), dtype=np.bool_)
    seenb = np.zeros((d, B), dtype=np.bool_)
    done = np.zeros(B, dtype=np.bool_)
    # can the A1DE instance-major fast path be used?
    simple1 = top == 1 and d >= 2
    if simple1:
        maxcard = 1
        for a in range(d):
            maxcard = max(maxcard, cards[a])
            simple1 = simple1 and miss_base[1, a] < 0
        for b in range(lbase[2], lbase[2] + binom[d, 2]):
            simple1 = simple1 and kind[b] == 0
        # every factor (#+m/|X_c|)/(#+m) ≥ (m/maxcard)/(N+m); d−1 of them times P(y,x_p)
        fmin = (m / maxcard) / (N + m)
        simple1 = simple1 and d * np.log(fmin) > np.log(1e-280)
    s_cnt = np.empty((d, K), dtype=np.int64)
    s_inv = np.empty((d, K))
    s_prod = np.empty((d, K))
    s_used = np.empty(d, dtype=np.bool_)
    s_mc = np.empty(d)
    lpb = np.empty((B, K))
    for r0 in range(0, n, B):
        nb = min(B, n - r0)
        for rr in range(nb):
            x = codes[r0 + rr]
            active = actl[rr]
            na = 0
            for a in range(d):
                act[a, rr] = False
                seenb[a, rr] = False
                if x[a] >= 0:
                    active[na] = a
                    na += 1
            # class-free value counts #(x_a)
            if max_level >= 1:
                for t in range(na):
                    a = active[t]
                    _bk = lbase[1] + a
                    if kind[_bk] == 0:
                        _ok = off[_bk] + x[a] * K
                        for _yk in range(K):
                            cnt[_yk] = dense[_ok + _yk]
                    else:
                        lookup_k(kind, off, vbase, dense, skeys, svals, _bk, x[a] * K, K, cnt)
                    tot = 0
                    for yy in range(K):
                        tot += cnt[yy]
                    vc[t] = tot
            if sr and na > 1:
                # subsumption resolution with class-free counts #(x_i), #(x_i, x_j)
                for t in range(na):
                    deleted[t] = False
                for t in range(na):
                    i = active[t]
                    for u in range(na):
                        if u == t or vc[u] <= crit or vc[t] < vc[u]:
                            continue
                        j = active[u]
                        if vc[t] == vc[u] and i < j:
                            continue  # tie: only the higher attribute index is deleted
                        if i < j:
                            pr[0] = i
                            pr[1] = j
                        else:
                            pr[0] = j
                            pr[1] = i
                        _rk = 0
                        for _tk in range(2):
                            _rk += binom[pr[_tk], _tk + 1]
                        _lk = 0
                        for _tk in range(2):
                            _ak = pr[_tk]
                            _lk = _lk * cards[_ak] + x[_ak]
                        _bk = lbase[2] + _rk
                        if kind[_bk] == 0:
                            _ok = off[_bk] + _lk * K
                            for _yk in range(K):
                                cnt[_yk] = dense[_ok + _yk]
                        else:
                            lookup_k(kind, off, vbase, dense, skeys, svals, _bk, _lk * K, K, cnt)
                        tot = 0
                        for yy in range(K):
                            tot += cnt[yy]
                        if tot == vc[u]:
                            deleted[t] = True
                            break
                k2 = 0
                for t in range(na):
                    if not deleted[t]:
                        active[k2] = active[t]
                        vc[k2] = vc[t]
                        k2 += 1
                na = k2
            nact[rr] = na
            for t in range(na):
                seenl[rr, t] = vc[t] > 0
                act[active[t], rr] = True
                seenb[active[t], rr] = vc[t] > 0
        if simple1:
            # A1DE, every pair table dense, no attribute with missing training values and
            # products that cannot underflow: instance-major loop without any checks
            # (an unseen value simply reads zero counts from the dense tables)
            for rr in range(nb):
                x = codes[r0 + rr]
                active = actl[rr]
                na = nact[rr]
                nused = 0
                wsum = 0.0
                for t in range(na):
                    a = active[t]
                    o = off[lbase[1] + a] + x[a] * K
                    tot = 0
                    for yy in range(K):
                        cv = dense[o + yy]
                        tot += cv
                        s_cnt[t, yy] = cv
                        s_inv[t, yy] = 1.0 / (cv + m)
                        s_prod[t, yy] = 1.0
                    s_used[t] = tot >= F
                    s_mc[t] = m / cards[a]
                    if tot >= F:
                        nused += 1
                        if weighted:
                            wsum += wts[lbase[1] + a]
                if nused == 0:
                    done[rr] = False
                    continue
                for u in range(1, na):
                    j = active[u]
                    xj = x[j]
                    cj = cards[j]
                    mcj = s_mc[u]
                    base_j = lbase[2] + j * (j - 1) // 2
                    uu = s_used[u]
                    for t in range(u):
                        i = active[t]
                        o = off[base_j + i] + (x[i] * cj + xj) * K
                        if s_used[t]:
                            for yy in range(K):
                                s_prod[t, yy] *= (dense[o + yy] + mcj) * s_inv[t, yy]
                        if uu:
                            mci = s_mc[t]
                            for yy in range(K):
                                s_prod[u, yy] *= (dense[o + yy] + mci) * s_inv[u, yy]
                equal = (not weighted) or wsum <= 0.0
                for yy in range(K):
                    lp[yy] = 0.0
                for t in range(na):
                    if s_used[t]:
                        b = lbase[1] + active[t]
                        w = 1.0 if equal else wts[b]
                        if w > 0.0:
                            f = w / (ptot[b] + m)
                            mk = m / (K * cards[active[t]])
                            for yy in range(K):
                                lp[yy] += (s_cnt[t, yy] + mk) * f * s_prod[t, yy]
                for yy in range(K):
                    lpb[rr, yy] = np.log(lp[yy])
                done[rr] = True
        elif top >= 1:
            _batch_level_scores(codes[r0:r0 + nb], act, seenb, nb, top, d, cards, K, m, F,
                                weighted, kind, off, vbase, dense, skeys, svals, lbase, binom,
                                miss_base, ptot, wts, bw_cnt, bw_inv, bw_used, bw_prod, bw_lacc,
                                done, lpb)
        else:
            for rr in range(nb):
                done[rr] = False
        for rr in range(nb):
            r = r0 + rr
            x = codes[r]
            active = actl[rr]
            na = nact[rr]
            if done[rr]:
                for yy in range(K):
                    lp[yy] = lpb[rr, yy]
            ok = done[rr]
            lev = top - 1
            while lev >= 1 and not ok:
                ok = _level_scores(x, active, na, seenl[rr], lev, cards, K, m, F, weighted, kind,
                                   off, vbase, dense, skeys, svals, lbase, binom, miss_base,
                                   ptot, wts, ws_cnt, ws_inv, ws_used, ws_prod, ws_lacc, lp)
                lev -= 1
            if not ok:
                # naive Bayes: P(y) Π P(x_c | y)
                for yy in range(K):
                    lp[yy] = np.log((class_counts[yy] + m / K) / (N + m))
                    prod[yy] = 1.0
                for t in range(na):
                    c = active[t]
                    _bk = lbase[1] + c
                    if kind[_bk] == 0:
                        _ok = off[_bk] + x[c] * K
                        for _yk in range(K):
                            cnt[_yk] = dense[_ok + _yk]
                    else:
                        lookup_k(kind, off, vbase, dense, skeys, svals, _bk, x[c] * K, K, cnt)
                    mcard = m / cards[c]
                    for yy in range(K):
                        prod[yy] *= (cnt[yy] + mcard) / (nb_den[c, yy] + m)
                        if prod[yy] < _RESCALE:
                            lp[yy] += np.log(prod[yy])
                            prod[yy] = 1.0
                for yy in range(K):
                    lp[yy] += np.log(prod[yy])
            mx = -np.inf
            for yy in range(K):
                if lp[yy] > mx:
                    mx = lp[yy]
            tot_p = 0.0
            for yy in range(K):
                out[r, yy] = np.exp(lp[yy] - mx)
                tot_p += out[r, yy]
            for yy in range(K):
                out[r, yy] /= tot_p
    return out


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _mi_kernel(ids, blen, battrs, cards, K, m, kind, off, vbase, dense, skeys, svals, ptot,
               class_counts, N, single_px_n, out):
    """out[b] = MI(X_s; Y) with m-estimates (SPEC §2 "MI weighting") for each block b.

    P(x_s) is estimated over D_s = N − miss(s) rows, or over all N rows for a single-attribute
    s when ``single_px_n`` (the paper's A1DE code, ``mi_estimate='reference'``)."""
    py = np.empty(K)
    for yy in range(K):
        py[yy] = (class_counts[yy] + m / K) / (N + m)
    cnt = np.empty(K, dtype=np.int64)
    for q in range(ids.shape[0]):
        b = ids[q]
        l = blen[b]
        vs = 1
        for t in range(l):
            vs *= cards[battrs[b, t]]
        denom = ptot[b] + m
        px_den = (N + m) if (single_px_n and l == 1) else denom
        mi = 0.0
        for v in range(vs):
            _bk = b
            if kind[_bk] == 0:
                _ok = off[_bk] + v * K
                for _yk in range(K):
                    cnt[_yk] = dense[_ok + _yk]
            else:
                lookup_k(kind, off, vbase, dense, skeys, svals, _bk, v * K, K, cnt)
            cs = 0
            for yy in range(K):
                cs += cnt[yy]
            px = (cs + m / vs) / px_den
            for yy in range(K):
                pxy = (cnt[yy] + m / (K * vs)) / denom
                pp = px * py[yy]
                if pxy < MI_THRESHOLD or pp < MI_THRESHOLD:
                    continue
                mi += pxy * np.log2(pxy / pp)
        out[b] = mi
    return out


# ----- the learner -----------------------------------------------------------------------
class AnDE(Learner):
    """Averaged n-dependence estimators (n = 0 is naive Bayes) with optional SR and MI weights."""

    preprocessing = "mdl"

    parameters = (
        integer("n", 1, 0, MAX_ORDER),
        number("m", 1.0, 0.0, strict=True),
        integer("frequency_limit", 1, 0),
        integer("subsumption", None, 0, optional=True),
        choice("weighting", None, (None, "mi")),
        choice("mi_estimate", "reference", ("reference", "consistent")),
    )

    def _reset(self) -> None:
        super()._reset()
        self.counts_: AnDECounts | None = None
        self._prepared: dict | None = None

    # ----- training --------------------------------------------------------------------
    def required_level(self) -> int:
        """Largest attribute-combination size the counts must hold for this variant."""
        return max(self.n + 1, 2 if self.subsumption is not None else 1)

    def _check_data(self, data: Dataset) -> None:
        if not data.is_all_nominal:
            names = ", ".join(f"'{data.attributes[i].name}'" for i in data.numeric_indices[:5])
            raise LearnerError(
                f"{type(self).__name__}: numeric attribute(s) {names} in "
                f"{data.source or data.name}; AnDE needs nominal data (use preprocessing "
                "'mdl' or 'ef:B')"
            )
        if data.n_classes < 1:
            raise LearnerError(f"{data.source or data.name}: the class declares no values")

    def fit(self, data: Dataset) -> "AnDE":
        """Count the training data (missing-class rows ignored) in one pass."""
        self._check_data(data)
        self._remember_header(data)
        self.counts_ = AnDECounts.from_dataset(data, self.required_level(), parent_levels=self.n)
        self._prepared = None
        return self

    def partial_fit(self, data: Dataset) -> "AnDE":
        """Add a chunk of training data; chunks give the same model as one `fit`."""
        self._check_data(data)
        if self.counts_ is None:
            self._remember_header(data)
            d = data.without_missing_class()
            self.counts_ = AnDECounts(d.cardinalities, d.n_classes, self.required_level(),
                                      parent_levels=self.n, rows_hint=d.n_instances)
        else:
            self._check_fitted(data)
        d = data.without_missing_class()
        self.counts_.partial_fit(d.codes(), d.y)
        self._prepared = None
        return self

    def derive(self, **params) -> "AnDE":
        """A fitted variant with other parameters sharing this model's counts (no re-count),
        e.g. ``a2de.derive(subsumption=100, weighting="mi")``."""
        if self.counts_ is None:
            raise LearnerError(f"{type(self).__name__}: derive called before fit")
        merged = {**self.get_params(), **params}
        other = type(self)(**merged)
        ct = self.counts_
        if (other.required_level() > ct.max_level and ct.max_level < ct.d) or \
                (other.n > ct.parent_levels and other.n < ct.d):
            raise LearnerError(
                f"AnDE: these counts hold parent sets up to size {ct.parent_levels} and "
                f"combinations up to size {ct.max_level}; {other!r} needs more")
        other._header = self._header
        other.counts_ = self.counts_
        return other

    def model_bytes(self) -> int | None:
        """Bytes of the count tables."""
        return None if self.counts_ is None else int(self.counts_.nbytes)

    # ----- derived tables --------------------------------------------------------------
    def _prepare(self) -> dict:
        if self._prepared is not None:
            return self._prepared
        ct = self.counts_
        assert ct is not None
        st = ct.store
        top = min(self.n, ct.max_level)
        ptot = st.block_totals(np.arange(int(ct.levels.base[1]) if top >= 1 else 0,
                                         int(ct.levels.base[top + 1]) if top >= 1 else 0))
        d, K = ct.d, ct.K
        nb_den = np.zeros((max(d, 1), K), dtype=np.int64)
        if ct.max_level >= 1:
            for a in range(d):
                nb_den[a] = st.block(int(ct.levels.base[1]) + a).sum(axis=0)
        wts = np.zeros(st.n_blocks, dtype=np.float64)
        if self.weighting == "mi":
            ids = np.arange(int(ct.levels.base[1]) if top >= 1 else 0,
                            int(ct.levels.base[top + 1]) if top >= 1 else 0, dtype=np.int64)
            if ids.size:
                _mi_kernel(ids, st.blen, st.battrs, ct.cards, K, self.m, *st.arrays(), ptot,
                           ct.class_counts, float(ct.n),
                           self.mi_estimate == "reference" and self.n == 1, wts)
        self._prepared = {"ptot": ptot, "nb_den": nb_den, "wts": wts}
        return self._prepared

    def weights(self, level: int | None = None) -> np.ndarray:
        """MI weights of the parent sets of one level (colex order), as used in scoring."""
        ct = self.counts_
        if ct is None:
            raise LearnerError(f"{type(self).__name__}: weights requested before fit")
        level = self.n if level is None else level
        w = self._prepare()["wts"]
        b0 = int(ct.levels.base[level])
        return w[b0: b0 + int(ct.levels.ncomb[level])].copy()

    # ----- classification --------------------------------------------------------------
    def predict_proba(self, data: Dataset) -> np.ndarray:
        """Class distributions (n, K), each row normalised."""
        self._check_fitted(data)
        ct = self.counts_
        if ct is None:
            raise LearnerError(f"{type(self).__name__}: predict called before fit")
        prep = self._prepare()
        codes = np.ascontiguousarray(data.codes(), dtype=np.int64)
        st = ct.store
        sr = self.subsumption is not None
        return _predict_kernel(
            codes, self.n, ct.max_level,
            ct.cards, ct.K, self.m, self.frequency_limit, self.weighting == "mi", sr,
            int(self.subsumption) if sr else 0, *st.arrays(), ct.levels.base, ct.binom,
            ct.miss_base, prep["ptot"], prep["wts"], ct.class_counts, float(ct.n),
            prep["nb_den"], self._batch_size(codes.shape[0]))

    def _batch_size(self, n_test: int) -> int:
        """Test instances scored together (block-major) within a ~64 MB workspace."""
        ct = self.counts_
        top = min(self.n, ct.max_level)
        nsets = comb(ct.d, top) if top >= 1 else 1
        per = max(1, nsets * ct.K * 8 * 4)
        return int(max(1, min(64, max(n_test, 1), _BATCH_BYTES // per)))


# ----- registered variants ---------------------------------------------------------------
register("NB", AnDE, n=0, description="naive Bayes (A0DE) with m-estimates")
register("A1DE", AnDE, n=1, description="AODE with m-estimates")
register("A1DE-S", AnDE, n=1, subsumption=100, description="A1DE + subsumption resolution")
register("A1DE-W", AnDE, n=1, weighting="mi", description="A1DE + MI weights")
register("A1DE-SW", AnDE, n=1, subsumption=100, weighting="mi",
         description="A1DE + subsumption resolution + MI weights")
register("A2DE", AnDE, n=2, description="A2DE with m-estimates")
register("A2DE-S", AnDE, n=2, subsumption=100, description="A2DE + subsumption resolution")
register("A2DE-W", AnDE, n=2, weighting="mi", description="A2DE + MI weights")
register("A2DE-SW", AnDE, n=2, subsumption=100, weighting="mi",
         description="A2DE + subsumption resolution + MI weights")
register("A3DE", AnDE, n=3, description="A3DE with m-estimates")
