"""AnDE classification (numba): which attribute values take part, the top level in batches,
fallback to lower orders down to naive Bayes, and an instance-major A1DE fast path.

`log_scores` returns log P̂(y, x) up to a constant per row; the learner template normalises.
"""

from __future__ import annotations

from collections import namedtuple

from workbench.jit import FALSE, TRUE, ZERO, numba
import numpy as np

from workbench.learners.ande.estimates import (RESCALE, add_log, inverse_total, joint_term,
                                               m_estimate, m_estimate_inv, times_m_estimate)
from workbench.learners.ande.scoring import score_level
from workbench.learners.ande.tables import read
from workbench.learners.counting.combinations import first_ints

_NO_UNDERFLOW = np.log(1e-280)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def active_values(tb, X, XU, uparent, iidx, uidx, N, r, sr, crit, gen, actl, sc, counts):
    """The attributes of row r that take part, in increasing order of attribute index.

    X holds the counted attributes (attribute iidx[i] is column i), XU[r, j] whether the
    left-out single-valued attribute uidx[j] is present. Returns (na, u): actl[r, 0:na] =
    the counted ones by column (with `counts`, vc[t] = class-free count #(x_a)), u = the
    number of left-out ones that take part and may be parents (uparent). Missing values
    never take part; with subsumption resolution (sr, critical count crit) x_i is deleted
    when some x_j with #(x_j) > crit has #(x_i, x_j) = #(x_j) (a tie keeps only the lower
    attribute index). A left-out value occurs in all N rows: #(x_u) = N, #(x_i, x_u) = #(x_i).
    Between two counted attributes the outcome depends only on their values, so when
    `generalisations` could list them (gen.ptr non-empty), each present value deletes the
    values on its list that the row has. `sc`: the work arrays (`ValueScratch`)."""
    vc, deleted, isu, hit, cnt, words = sc
    d = X.shape[1]
    dU = XU.shape[1]
    na = 0
    i = 0
    j = 0
    while i < d or j < dU:
        if j >= dU or (i < d and iidx[i] < uidx[j]):
            if X[r, i] >= 0:
                actl[r, na] = i
                isu[na] = False
                na += 1
            i += 1
        else:
            if XU[r, j]:
                actl[r, na] = j
                isu[na] = True
                na += 1
            j += 1
    if counts and tb.lbase.shape[0] > 2:
        for t in range(na):
            if isu[t]:
                vc[t] = N
            else:
                a = actl[r, t]
                read(tb, tb.lbase[1] + a, X[r, a], cnt)
                vc[t] = cnt.sum()
    elif dU > 0:
        for t in range(na):
            vc[t] = N if isu[t] else 0
    for t in range(na):
        deleted[t] = False
    listed = sr and gen.ptr.shape[0] > 0
    if listed and na >= 2:  # counted attributes: each value deletes the listed ones it implies
        if gen.bits.shape[1] == 1:
            word = row_word(gen.vbase, gen.bits, X, r, actl, na, isu)
            for t in range(na):
                a = actl[r, t]
                hit[a] = (word >> np.uint64(gen.vbase[a] + X[r, a])) & np.uint64(1) != 0
        elif gen.bits.shape[1]:
            mark_bits(gen, X, r, actl, na, isu, hit, words)
        else:
            mark_listed(gen.vbase, gen.ptr, gen.attr, gen.val, X, r, actl, na, isu, hit)
        for t in range(na):
            if not isu[t]:
                a = actl[r, t]
                deleted[t] = hit[a]  # a hit is a present counted attribute: one of these
                hit[a] = False
    anyu = False
    for t in range(na):
        anyu |= isu[t]
    if sr and na >= 2 and (anyu or not listed):
        for t in range(na):
            i = uidx[actl[r, t]] if isu[t] else iidx[actl[r, t]]
            for u in range(na):
                if u == t or deleted[t] or (listed and not isu[t] and not isu[u]):
                    continue
                if vc[u] <= crit or vc[t] < vc[u]:
                    continue
                j = uidx[actl[r, u]] if isu[u] else iidx[actl[r, u]]
                if vc[t] == vc[u] and i < j:
                    continue  # tie: only the higher attribute index is deleted
                if isu[t] and isu[u]:
                    pair = N
                elif isu[t]:
                    pair = vc[u]
                elif isu[u]:
                    pair = vc[t]
                else:
                    lo, hi = min(actl[r, t], actl[r, u]), max(actl[r, t], actl[r, u])
                    read(tb, tb.lbase[2] + tb.binom[lo, 1] + tb.binom[hi, 2],
                         X[r, lo] * tb.cards[hi] + X[r, hi], cnt)
                    pair = cnt.sum()
                if pair == vc[u]:
                    deleted[t] = True
                    break
    k = 0
    nu = 0
    for t in range(na):
        if deleted[t]:
            continue
        if isu[t]:
            nu += uparent[actl[r, t]]
        else:
            actl[r, k] = actl[r, t]
            vc[k] = vc[t]
            k += 1
    return k, nu


@numba.njit(cache=True, nogil=True, inline="always")
def mark_listed(vbase, ptr, attr, val, X, r, actl, na, isu, hit):
    """hit[a] = True for each counted attribute a whose value in row r is on the
    generalisation list (`Generalisations`' vbase, ptr, attr, val) of another of the row's
    counted values actl[r, 0:na] (not isu). Inlined (a call per row cost more than magic's
    short lists), the lists' arrays passed, not the tuple (a field read in the caller's row
    loop is a reference count each), unsigned indexes (no wrap-around code per read)."""
    for t in range(na):
        if not isu[t]:
            a = np.uint64(actl[r, t])
            v = np.uint64(vbase[a] + X[r, a])
            for e in range(ptr[v], ptr[v + np.uint64(1)]):
                b = np.uint64(attr[e])
                if X[r, b] == val[e]:
                    hit[b] = True


@numba.njit(cache=True, nogil=True, inline="always")
def row_word(vbase, bits, X, r, actl, na, isu):
    """The OR of the one-word bit sets (`Generalisations.bits`, at most 64 value ids) of
    row r's counted values actl[r, 0:na] (not isu): bit vbase[a] + x_a set = the row's
    value of a is deleted. No branch per list entry, kept in a register."""
    word = np.uint64(0)
    for t in range(na):
        if not isu[t]:
            a = np.uint64(actl[r, t])
            word |= bits[np.uint64(vbase[a] + X[r, a]), ZERO]
    return word


@numba.njit(cache=True, nogil=True)
def mark_bits(gen, X, r, actl, na, isu, hit, words):
    """`mark_listed` from the lists' bit sets (gen.bits, W words; words: W words of
    scratch): OR the sets of the row's values, then test each of its values. A call, not
    inlined: used where the lists are long, so its entry costs little."""
    vbase, bits = gen.vbase, gen.bits
    W = bits.shape[1]
    for w in range(W):
        words[w] = 0
    for t in range(na):
        if not isu[t]:
            a = np.uint64(actl[r, t])
            v = np.uint64(vbase[a] + X[r, a])
            for w in range(W):
                words[w] |= bits[v, np.uint64(w)]
    for t in range(na):
        if not isu[t]:
            a = np.uint64(actl[r, t])
            v = np.uint64(vbase[a] + X[r, a])
            if (words[v >> np.uint64(6)] >> (v & np.uint64(63))) & np.uint64(1):
                hit[a] = True


ValueScratch = namedtuple("ValueScratch", ["vc", "deleted", "isu", "hit", "cnt", "words"])
ValueScratch.__doc__ = """`active_values`' work arrays (one tuple: a kernel takes at most 16
parameters): vc[t] = the class-free count of the row's t-th active value, deleted[t],
isu[t] = it is a left-out attribute, hit[a] (marked by `mark_listed` or `mark_bits`), cnt
(K counts), words (`mark_bits`' scratch, `scratch_words`)."""


@numba.njit(cache=True, nogil=True, inline="always")
def scratch_words(gen):
    """`mark_bits`' scratch for the bit sets of `gen` (a word each)."""
    return np.empty(gen.bits.shape[1], dtype=np.uint64)


@numba.njit(cache=True, nogil=True, inline="always")
def value_scratch(n, d, K):
    """Work arrays of `active_values` over d counted attributes and no left-out ones: vc,
    deleted, isu, hit, iidx (the identity), none (no left-out columns for n rows), cnt."""
    return (np.empty(d, dtype=np.int64), np.zeros(d, dtype=np.bool_),
            np.zeros(d, dtype=np.bool_), np.zeros(d, dtype=np.bool_), first_ints(d),
            np.zeros((n, 0), dtype=np.bool_), np.empty(K, dtype=np.int64))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def nb_scores(tb, est, X, r, actl, na, lp, cnt, prod, children_only):
    """Naive Bayes log scores lp[r] of row r over its active attributes actl[r, 0:na] (the
    last fallback): P(y) Π_c (#(y, x_c) + m/|X_c|) / (#y − #(y, x_c ?) + m); with
    `children_only`, c runs over the attributes allowed as children (`Inputs.child_ok`)."""
    K = tb.K
    m = est.m
    for y in range(K):
        prod[y] = 1.0
        lp[r, y] = np.log(m_estimate(est.class_counts[y], m / K, est.N, m))
    for t in range(na):
        c = actl[r, t]
        if children_only and not est.child_ok[c]:
            continue
        read(tb, tb.lbase[1] + c, X[r, c], cnt)
        madd = m / tb.cards[c]
        for y in range(K):
            prod[y] *= m_estimate(cnt[y], madd, est.nb_den[c, y], m)
            if prod[y] < RESCALE:
                lp[r, y] += np.log(prod[y])
                prod[y] = 1.0
    for y in range(K):
        lp[r, y] += np.log(prod[y])


Generalisations = namedtuple("Generalisations", ["vbase", "ptr", "attr", "val", "bits"])
Generalisations.__doc__ = """Subsumption resolution between counted attributes as lists: value
v of attribute a has id vbase[a] + v, and the values it deletes when present in the same row
are (attr[e], val[e]) for e in ptr[id] .. ptr[id + 1] − 1; when the lists are long, the
same sets as bits too: bits[id, w] bit j = value 64·w + j is on id's list (else 0 × 0)."""

_BITS_MAX_VALUES = 4096  # value ids a bit set may cover (a row ORs ids / 64 words a value)


def generalisations(tb, crit: int | None) -> Generalisations:
    """For every value x_u, the values x_t of other counted attributes it deletes (the rule
    of `active_values`: #(x_u) > crit, #(x_t) ≥ #(x_u), #(x_t, x_u) = #(x_u), a tie deletes
    the higher index). Usually short lists (an implication between frequent values is
    rare), so a row costs O(active values + hits) instead of O(pairs); where a value's list
    is on average longer than a bit set of all value ids in words, plus one (musk1: 166
    attributes, 51 entries a value, four words), bit sets, which a row ORs (`mark_bits`);
    with at most 64 value ids always, one word a value (`row_word`: no branch per entry;
    magic's 56 values, 0.5 entries a value: its test half's active values 0.73 → 0.33 ms).
    Empty (ptr of size 0) without subsumption resolution (crit None) or when a pair or
    single-attribute block is not dense: the kernel then reads the counts."""
    d = tb.cards.shape[0]
    none = np.zeros((0, 0), dtype=np.uint64)
    if crit is None or tb.lbase.shape[0] < 3 or d < 2 or \
            (tb.kind[int(tb.lbase[1]):int(tb.lbase[2] + tb.binom[d, 2])] != 0).any():
        e = np.zeros(0, dtype=np.int64)
        return Generalisations(e, e, e, e, none)
    gen = Generalisations(*_generalisations_kernel(tb, crit), none)
    ids = int(gen.vbase[-1])
    if ids > _BITS_MAX_VALUES or (ids > 64 and gen.attr.size <= ids * ((ids + 63) // 64 + 1)):
        return gen  # (a row's value walks its list, or ORs W words and tests itself)
    return with_bits(gen)


def with_bits(gen: Generalisations) -> Generalisations:
    """`gen` with its lists also as bit sets over the value ids (`Generalisations.bits`)."""
    ids = int(gen.vbase[-1])
    bits = np.zeros((ids, (ids + 63) // 64), dtype=np.uint64)
    _set_bits(gen.vbase, gen.ptr, gen.attr, gen.val, bits)
    return gen._replace(bits=bits)


@numba.njit(cache=True, nogil=True)
def _set_bits(vbase, ptr, attr, val, bits):
    """bits[v] |= the bit of each value id on v's list (compiled: numpy's
    ``bitwise_or.at`` and its index arrays cost 40 µs a model on magic's 28 entries)."""
    for v in range(ptr.shape[0] - 1):
        for e in range(ptr[v], ptr[v + 1]):
            b = vbase[attr[e]] + val[e]
            bits[v, b >> 6] |= np.uint64(1) << np.uint64(b & 63)


@numba.njit(cache=True, nogil=True)
def _generalisations_kernel(tb, crit):
    """`generalisations`' lists. Only values counted more than crit times can delete or be
    deleted (an identifier-like attribute has none, so it costs no pairs): per pair of
    such values, x_j deletes x_i when #(x_i) > #(x_j) = #(x_i, x_j), x_i deletes x_j when
    #(x_j) ≥ #(x_i) = #(x_i, x_j). Two sweeps: the list lengths, then the lists. The
    tables' arrays are taken out of the tuple once and nothing is handed to a helper in
    the loops (each would be reference-counted per pair: see `tables.read`)."""
    cards, dense, off, binom = tb.cards, tb.dense, tb.off, tb.binom
    d = cards.shape[0]
    K = tb.K
    l1, l2 = tb.lbase[1], tb.lbase[2]
    vbase = np.zeros(d + 1, dtype=np.int64)
    for a in range(d):
        vbase[a + 1] = vbase[a] + cards[a]
    vc = np.zeros(vbase[d], dtype=np.int64)  # #(x_a)
    for a in range(d):
        for v in range(cards[a]):
            for y in range(K):
                vc[vbase[a] + v] += dense[off[l1 + a] + v * K + y]
    fbase = np.zeros(d + 1, dtype=np.int64)  # each attribute's values counted > crit
    fval = np.empty(vbase[d], dtype=np.int64)
    for a in range(d):
        fbase[a + 1] = fbase[a]
        for v in range(cards[a]):
            if vc[vbase[a] + v] > crit:
                fval[fbase[a + 1]] = v
                fbase[a + 1] += 1
    ptr = np.zeros(vbase[d] + 1, dtype=np.int64)
    attr = np.empty(0, dtype=np.int64)
    val = np.empty(0, dtype=np.int64)
    fill = np.empty(0, dtype=np.int64)
    for sweep in range(2):
        if sweep == 1:
            for v in range(vbase[d]):
                ptr[v + 1] += ptr[v]
            attr = np.empty(ptr[vbase[d]], dtype=np.int64)
            val = np.empty(ptr[vbase[d]], dtype=np.int64)
            fill = ptr[:-1].copy()
        for j in range(1, d):
            if fbase[j] == fbase[j + 1]:
                continue
            cj = cards[j]
            for i in range(j):
                if fbase[i] == fbase[i + 1]:
                    continue
                o = off[l2 + binom[i, 1] + binom[j, 2]]
                for fi in range(fbase[i], fbase[i + 1]):
                    xi = fval[fi]
                    vi = vc[vbase[i] + xi]
                    for fj in range(fbase[j], fbase[j + 1]):
                        xj = fval[fj]
                        vj = vc[vbase[j] + xj]
                        at = o + (xi * cj + xj) * K
                        tot = 0
                        for y in range(K):
                            tot += dense[at + y]
                        for side in range(2):  # x_j deletes x_i, then x_i x_j
                            if side == 0:
                                hit, owner, a, x = vi > vj and tot == vj, vbase[j] + xj, i, xi
                            else:
                                hit, owner, a, x = vj >= vi and tot == vi, vbase[i] + xi, j, xj
                            if not hit:
                                continue
                            if sweep == 0:
                                ptr[owner + 1] += 1
                            else:
                                attr[fill[owner]] = a
                                val[fill[owner]] = x
                                fill[owner] += 1
    return vbase, ptr, attr, val


def a1de_fast_ok(tb, est, top):
    """Can the instance-major A1DE path run? Order 1, every pair table and every
    missing-child table dense, and products that cannot underflow."""
    d = tb.cards.shape[0]
    if top != 1 or d < 2:
        return False
    pairs = slice(int(tb.lbase[2]), int(tb.lbase[2] + tb.binom[d, 2]))
    if (tb.kind[pairs] != 0).any():
        return False
    for c in np.flatnonzero(tb.miss_base[1, :d] >= 0):  # #(y, x_p, x_c ?) by parent p
        blocks = tb.kind[int(tb.miss_base[1, c]): int(tb.miss_base[1, c]) + d]
        if ((blocks != 0) & (np.arange(d) != c)).any():
            return False
    # every factor (#+m/|X_c|)/(# − #? + m) ≥ (m/max|X|)/(N+m); d−1 of them times P(y, x_p)
    fmin = (est.m / max(int(tb.cards.max()), 1)) / (est.N + est.m)
    return bool(d * np.log(fmin) > _NO_UNDERFLOW)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def a1de_instance_major(X, actl, nact, nb, tb, est, done, lp, wout):
    """A1DE for rows 0..nb−1 of X without any checks (see `a1de_fast_ok`); an unseen value
    simply reads zero counts from the dense tables. A child with missing training values
    divides by #(y, x_p) − #(y, x_p, x_c ?) + m (the missing-child table of its parent),
    with the general path's arithmetic. wout[r] = total weight of the used parents. Two and
    three classes get their own compiled loops (a literal K unrolls the class loops)."""
    if tb.K == 2:
        _a1de_rows(X, actl, nact, nb, tb, est, done, lp, wout, 2)
    elif tb.K == 3:
        _a1de_rows(X, actl, nact, nb, tb, est, done, lp, wout, 3)
    else:
        _a1de_rows(X, actl, nact, nb, tb, est, done, lp, wout, tb.K)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _a1de_rows(X, actl, nact, nb, tb, est, done, lp, wout, K):
    """`a1de_instance_major` for a given number of classes K."""
    d = X.shape[1]
    s_cnt = np.empty((d, K), dtype=np.int64)
    s_inv = np.empty((d, K))
    s_prod = np.empty((d, K))
    s_used = np.empty(d, dtype=np.bool_)
    s_child = np.empty(d, dtype=np.bool_)
    s_madd = np.empty(d)
    acc = np.empty(K)
    m = est.m
    # the tuples' arrays taken out once: a read of one in the loops costs a reference count
    off, dense, cards, lbase = tb.off, tb.dense, tb.cards, tb.lbase
    wts, ptot, parent_ok, child_ok = est.wts, est.ptot, est.parent_ok, est.child_ok
    lb1 = lbase[1]
    mb1 = tb.miss_base[1]  # missing-child blocks by child (−1: never missing)
    for r in range(nb):
        na = nact[r]
        nused = 0
        wsum = 0.0
        for t in range(na):
            a = actl[r, t]
            o = off[lb1 + a] + X[r, a] * K
            tot = 0
            for y in range(K):
                cv = dense[o + y]
                tot += cv
                s_cnt[t, y] = cv
                s_inv[t, y] = inverse_total(cv, m)
                s_prod[t, y] = 1.0
            s_used[t] = tot >= est.F and parent_ok[a]
            s_child[t] = child_ok[a]
            s_madd[t] = m / cards[a]
            if s_used[t]:
                nused += 1
                wsum += wts[lb1 + a]
        done[r] = nused > 0
        wout[r] = wsum
        if not done[r]:
            continue
        for u in range(1, na):
            j = actl[r, u]
            xj = X[r, j]
            cj = cards[j]
            base_j = lbase[2] + j * (j - 1) // 2
            into_t = s_child[u]  # parent t gets child j
            into_u = s_used[u]
            for t in range(u):
                i = actl[r, t]
                o = off[base_j + i] + (X[r, i] * cj + xj) * K
                if s_used[t] and into_t:
                    if mb1[j] < 0:
                        for y in range(K):
                            s_prod[t, y] *= m_estimate_inv(dense[o + y], s_madd[u],
                                                           s_inv[t, y])
                    else:  # parent i, child j missing in training: #(y, x_i, x_j ?)
                        om = off[mb1[j] + i] + X[r, i] * K
                        for y in range(K):
                            s_prod[t, y] = times_m_estimate(s_prod[t, y], dense[o + y],
                                                            s_madd[u],
                                                            s_cnt[t, y] - dense[om + y], m)
                if into_u and s_child[t]:
                    if mb1[i] < 0:
                        for y in range(K):
                            s_prod[u, y] *= m_estimate_inv(dense[o + y], s_madd[t],
                                                           s_inv[u, y])
                    else:  # parent j, child i missing in training
                        om = off[mb1[i] + j] + xj * K
                        for y in range(K):
                            s_prod[u, y] = times_m_estimate(s_prod[u, y], dense[o + y],
                                                            s_madd[t],
                                                            s_cnt[u, y] - dense[om + y], m)
        equal = wsum <= 0.0
        for y in range(K):
            acc[y] = 0.0
        for t in range(na):
            if s_used[t]:
                b = lb1 + actl[r, t]
                w = 1.0 if equal else wts[b]
                if w > 0.0:
                    nv = cards[actl[r, t]]
                    for y in range(K):
                        acc[y] += joint_term(s_cnt[t, y], s_prod[t, y], m, K, nv, w,
                                             ptot[b])
        for y in range(K):
            lp[r, y] = np.log(acc[y])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _fall_back(X, act, seen, nb, top, d, tb, est, ws, done, lp):
    """Score the rows that no parent set of order `top` qualified for at orders top−1 … 1."""
    K = tb.K
    k = 0
    for r in range(nb):
        k += not done[r]
    if k == 0:
        return
    rows = np.empty(nb, dtype=np.int64)
    for lev in range(top - 1, 0, -1):
        k = 0
        for r in range(nb):
            if not done[r]:
                rows[k] = r
                k += 1
        if k == 0:
            return
        Xs = np.empty((k, d), dtype=X.dtype)
        acts = np.empty((d, k), dtype=np.bool_)
        seens = np.empty((d, k), dtype=np.bool_)
        for i in range(k):
            Xs[i] = X[rows[i]]
            for a in range(d):
                acts[a, i] = act[a, rows[i]]
                seens[a, i] = seen[a, rows[i]]
        dsub = np.empty(k, dtype=np.bool_)
        lsub = np.empty((k, K))
        # Xs.shape[0] (= k), not k: numba may type k as the literal 0 it starts from,
        # which would compile the whole block-major path a second time (~20 s cold)
        score_level(Xs, acts, seens, Xs.shape[0], lev, d, tb, est, ws, dsub, lsub,
                    np.empty(k))
        for i in range(k):
            if dsub[i]:
                done[rows[i]] = True
                lp[rows[i]] = lsub[i]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def log_scores(X, top, tb, est, ws, sr, crit, gen, fast1):
    """log P̂(y, x) of AnDE of order `top` (falling back per row to lower orders and finally
    naive Bayes), for every row of X, in batches of ws.used.shape[1] rows."""
    n, d = X.shape
    K = tb.K
    B = ws.used.shape[1]
    out = np.empty((n, K))
    vc, deleted, isu, hit, iidx, none, cnt = value_scratch(n, d, K)
    sc = ValueScratch(vc, deleted, isu, hit, cnt, scratch_words(gen))
    actl = np.empty((B, d), dtype=np.int64)
    nact = np.empty(B, dtype=np.int64)
    act = np.zeros((d, B), dtype=np.bool_)
    seen = np.zeros((d, B), dtype=np.bool_)
    done = np.zeros(B, dtype=np.bool_)
    lpb = np.empty((B, K))
    wsum = np.empty(B)
    prod = np.empty(K)
    # #(x_a) is read for subsumption resolution without its table and for `seen`, which
    # only the block-major levels use
    need_counts = (sr and gen.ptr.shape[0] == 0) or (top >= 1 and not fast1)
    for r0 in range(0, n, B):
        nb = min(B, n - r0)
        Xb = X[r0:r0 + nb]
        if top >= 1:
            act[:, :] = False
            seen[:, :] = False
        for rr in range(nb):
            na, _ = active_values(tb, Xb, none, isu, iidx, iidx, ZERO, rr, sr, crit, gen, actl,
                                  sc, need_counts)
            nact[rr] = na
            if top >= 1:
                for t in range(na):
                    act[actl[rr, t], rr] = True
                    seen[actl[rr, t], rr] = vc[t] > 0
        done[:] = False
        if fast1:
            a1de_instance_major(Xb, actl, nact, nb, tb, est, done, lpb, wsum)
        elif top >= 1:
            score_level(Xb, act, seen, nb, top, d, tb, est, ws, done, lpb, wsum)
        if top >= 2:
            _fall_back(Xb, act, seen, nb, top, d, tb, est, ws, done, lpb)
        for rr in range(nb):
            if not done[rr]:
                nb_scores(tb, est, Xb, rr, actl, nact[rr], lpb, cnt, prod, FALSE)
            out[r0 + rr] = lpb[rr]
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def found_order(order, top, u, r, ldone, lw, weighted, n_ok):
    """The order that scores row r (u left-out constants present): the first from `order`
    down with a used parent set (SPEC §2 fallback; 0: none), and its used sets' total
    weight. Order o uses the sets t ∪ v (|t| = o − j counted, v = j of the u constants):
    level o − j for j ≤ min(o, u); level 0 (constants only) is used iff N ≥ F (n_ok) and
    weighs 0 when weighted."""
    for o in range(order, 0, -1):
        tot = 0.0
        anyd = False
        for j in range(min(o, u) + 1):
            k = o - j
            if k > top:
                continue
            if k == 0:
                if n_ok:
                    anyd = True
                    tot += 0.0 if weighted else 1.0
            elif ldone[k, r]:
                anyd = True
                tot += lw[k, r]
        if anyd:
            return o, tot
    return 0, 0.0


@numba.njit(cache=True, nogil=True)
def reads_level0(order, top, ux, need, nb, ldone, lw, weighted, n_ok, want):
    """want[r] = `combine_orders` reads row r's level 0 (naive Bayes over its children), for
    r < nb: its order o has o ≤ ux[r] (the sets of o constants) and those sets count (n_ok;
    unweighted, or every used set weighing 0). Only those rows need `nb_scores`: with one
    constant (letter, adult), only rows no pair or single parent scores."""
    for r in range(nb):
        want[r] = False
        if need[r] and ux[r] > 0:
            o, tot = found_order(order, top, ux[r], r, ldone, lw, weighted, n_ok)
            want[r] = 0 < o <= ux[r] and n_ok and not (weighted and tot > 0.0)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def combine_orders(order, top, ux, need, nb, llp, ldone, lw, weighted, n_ok, out, r0, found):
    """Each row r < nb with need[r]: its score of order `order` from the level sums over the
    counted attributes, into out[r0 + r]: Σ_j C(u, j) · level(o − j) over the order o that
    `found_order` gives (found[r] = False: none, the caller uses naive Bayes); if its total
    weight is 0, every used set counts equally. (All rows in one call: a call per row paid
    reference counts on its array arguments that cost more than the row's work.)"""
    K = out.shape[1]
    mx = np.empty(K)
    acc = np.empty(K)
    for r in range(nb):
        found[r] = False
        if not need[r]:
            continue
        u = ux[r]
        o, tot = found_order(order, top, u, r, ldone, lw, weighted, n_ok)
        if o == 0:
            continue
        equal = tot <= 0.0
        for y in range(K):
            mx[y] = -np.inf
            acc[y] = 0.0
        lc = 0.0  # log C(u, j)
        for j in range(min(o, u) + 1):
            if j > 0:
                lc += np.log((u - j + 1) / j)
            k = o - j
            if k > top:
                continue
            if k == 0:
                if not n_ok or (weighted and not equal):
                    continue
            elif not ldone[k, r] or (not equal and lw[k, r] <= 0.0):
                continue
            for y in range(K):
                mx[y], acc[y] = add_log(mx[y], acc[y], lc + llp[k, r, y])
        for y in range(K):
            out[r0 + r, y] = mx[y] + np.log(acc[y])
        found[r] = True


@numba.njit(cache=True, nogil=True, error_model="numpy")
def log_scores_reduced(X, XU, uparent, iidx, uidx, order, top, tb, est, ws, sr, crit, gen, fast1,
                       weighted):
    """`log_scores` of AnDE of order `order` when single-valued attributes present in every
    training row were left out of the counts (see `AnDE`): X = the counted attributes
    (iidx: their attribute indices), XU[r, j] = left-out attribute uidx[j] present in row r,
    uparent[j] = it may be a parent. Every level 0..top (top = min(order, counted)) is
    scored for the batch and combined per row by `combine_orders`."""
    n, d = X.shape
    dU = XU.shape[1]
    K = tb.K
    B = ws.used.shape[1]
    out = np.empty((n, K))
    vc = np.empty(d + dU, dtype=np.int64)
    deleted = np.zeros(d + dU, dtype=np.bool_)
    isu = np.zeros(d + dU, dtype=np.bool_)
    hit = np.zeros(max(d, 1), dtype=np.bool_)
    cnt = np.empty(K, dtype=np.int64)
    sc = ValueScratch(vc, deleted, isu, hit, cnt, scratch_words(gen))
    actl = np.empty((B, d + dU), dtype=np.int64)
    nact = np.empty(B, dtype=np.int64)
    ux = np.empty(B, dtype=np.int64)
    act = np.zeros((max(d, 1), B), dtype=np.bool_)
    seen = np.zeros((max(d, 1), B), dtype=np.bool_)
    llp = np.zeros((top + 1, B, K))
    ldone = np.zeros((top + 1, B), dtype=np.bool_)
    lw = np.zeros((top + 1, B))
    prod = np.empty(K)
    every = np.ones(B, dtype=np.bool_)
    found = np.empty(B, dtype=np.bool_)
    want = np.empty(B, dtype=np.bool_)
    N = np.int64(est.N)
    n_ok = N >= est.F
    for r0 in range(0, n, B):
        nb = min(B, n - r0)
        Xb = X[r0:r0 + nb]
        XUb = XU[r0:r0 + nb]
        act[:, :] = False
        seen[:, :] = False
        for rr in range(nb):
            na, u = active_values(tb, Xb, XUb, uparent, iidx, uidx, N, rr, sr, crit, gen, actl,
                                  sc, True)
            nact[rr] = na
            ux[rr] = u
            for t in range(na):
                act[actl[rr, t], rr] = True
                seen[actl[rr, t], rr] = vc[t] > 0
        for lev in range(1, top + 1):
            if fast1:
                a1de_instance_major(Xb, actl, nact, nb, tb, est, ldone[lev], llp[lev], lw[lev])
            else:
                score_level(Xb, act, seen, nb, lev, d, tb, est, ws, ldone[lev], llp[lev],
                            lw[lev])
        lp0 = llp[0]
        reads_level0(order, top, ux, every, nb, ldone, lw, weighted, n_ok, want)
        for rr in range(nb):
            if want[rr]:
                nb_scores(tb, est, Xb, rr, actl, nact[rr], lp0, cnt, prod, TRUE)
        combine_orders(order, top, ux, every, nb, llp, ldone, lw, weighted, n_ok, out, r0, found)
        for rr in range(nb):
            if not found[rr]:
                nb_scores(tb, est, Xb, rr, actl, nact[rr], lp0, cnt, prod, FALSE)
                for y in range(K):
                    out[r0 + rr, y] = lp0[rr, y]
    return out
