"""Parent-major scoring of one AnDE level from child factors built per parent set (numba).

For parent set s, the child factors
P(x_c | y, x_s) = (#(y, x_s, x_c) + m/|X_c|) / (#(y, x_s) − #(y, x_s, x_c ?) + m) of the
value combinations the rows have are computed into a small buffer laid out by parent cell:
``fac[cell · rowlen + (cstart[c] + slot(x_c)) · KS + y]`` (KS: `slot_stride`). Cells and
slots count the values the chunk's rows have, not the declared ones (`value_slots`: values
training never saw share one slot, their factors being equal), so an identifier-like
attribute with thousands of values costs what its values in the rows cost. The slots of
the parent's own attributes (and of attributes that may not be children) hold 1.0, so a
row multiplies the factors of all its active children without a membership test; a last
slot of 1.0s pads rows with fewer children (`_even_children`). Then every row of the chunk
reads them while they are in cache, and each row's weighted sum over parent sets
accumulates directly.
The result is `score_level`'s (same estimates, products in another order: equal to
rounding), with one division per factor per chunk instead of per row.

No product underflows, whatever the number of attributes or the training size. Child
factors are ≤ 1, so a product that ends normal never underflowed on the way: each row's
product is checked once per parent set, and the rare one too small for its term to be a
normal double is recomputed by `_scaled_row`, whose chains are checked every
`rescale_group` factors and, when below 2⁻²⁵⁶, multiplied by 2²⁵⁶ (exact: the bits are
those of the unscaled product) with the count kept per class; its terms are scaled back
when added, or folded in log space if too small for a double. That path is compiled only
into `score_rescaling`, which scores a level only where some product may be that small
(many attributes, tiny factors: a bound checked per parent set); most data never compile
it.

Single-valued attributes left out of the counts (``AnDE.constant_``) cost nothing here:
each level 1..top is scored over the counted attributes (the lower ones only for the rows
that need them) and combined per row as `predict.combine_orders` says.

Used at every order ≥ 1 when building costs less than scoring (cells · Σ slots ≤ rows · d
per parent set, i.e. the test set is not tiny; otherwise the instance-major A1DE or
block-major kernels run). Against those: A1DE on connect-4 1.9×, A2DE 3.7× faster; on
splice (60 nucleotides and a 3,178-valued instance name) A1DE 6×.
"""

from __future__ import annotations

import contextlib
import functools
from collections import namedtuple
from typing import Iterator

import numpy as np

from workbench.jit import FALSE, ONE, TRUE, ZERO, by_classes, numba, slp_vectorized

from workbench.learners.ande.estimates import add_log, inverse_total, m_estimate
from workbench.learners.ande.predict import (ValueScratch, active_values, combine_orders,
                                             mark_bits, mark_listed, nb_scores,
                                             reads_level0, scratch_words, value_scratch)
from workbench.learners.ande.tables import insert_sorted, largest, read, read_call
from workbench.learners.counting.layout import KIND_DENSE
from workbench.learners.counting.combinations import first_ints, next_colex

_CHUNK_BYTES = 64 << 20
_NB_CHUNK = 4096  # naive Bayes: rows whose factor offsets are gathered before their products
_LOW = 2.0 ** -256  # a chain below this is multiplied by _UP (exact) …
_UP = 2.0 ** 256
_DOWN_LOG = 256 * np.log(2.0)  # … and its term divided again when added
_TINY = 2.2250738585072014e-308  # smallest normal double


def parent_major_ok(tb, est, lev: int, X: np.ndarray) -> bool:
    """Use the parent-major path at order `lev` ≥ 1 for the rows of X (codes of the counted
    attributes)? Building a parent set's factors must cost less than the rows' reads
    (`build_ok`), with a slot per declared value or, failing that, per value slot
    (`value_slots`)."""
    n_rows, d = X.shape
    if lev < 1 or d <= lev:
        return False
    return bool(build_ok(tb.cards, lev, n_rows, d)
                or build_ok(slot_counts(X, tb), lev, n_rows, d))


@numba.njit(cache=True, nogil=True)
def largest_product(sizes, lev):
    """The product of the `lev` largest of sizes (lev ≤ len(sizes)), as a float (no
    overflow): the cells of the largest parent set. By selection, not a sort: numba
    compiles its sorts per type (seconds at first use) and lev is small."""
    n = sizes.shape[0]
    taken = np.zeros(n, dtype=np.bool_)
    cells = 1.0
    for _ in range(lev):
        best = -1
        for a in range(n):
            if not taken[a] and (best < 0 or sizes[a] > sizes[best]):
                best = a
        taken[best] = True
        cells *= sizes[best]
    return cells


@numba.njit(cache=True, nogil=True)
def build_ok(sizes, lev, n_rows, d):
    """Factors of a parent set laid out by `sizes` (values or slots per attribute) cost
    no more to build than the rows' reads: the largest set's cells × Σ sizes ≤ rows · d."""
    total = 0.0
    for a in range(sizes.shape[0]):
        total += sizes[a]
    return largest_product(sizes, lev) * total <= max(n_rows, 1) * d


def slot_counts(X: np.ndarray, tb) -> np.ndarray:
    """Value slots per attribute of the rows of X (`value_slots`)."""
    d = X.shape[1]
    cb = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(tb.cards, out=cb[1:])
    slot = np.full(cb[d], -1, dtype=np.int64)
    rep = np.empty(cb[d], dtype=np.int64)
    nsl = np.zeros(d, dtype=np.int64)
    value_slots(np.ascontiguousarray(X), X.shape[0], tb, cb, slot, rep, nsl,
                np.empty(int(tb.K), dtype=np.int64))
    return nsl


@numba.njit(cache=True, nogil=True)
def value_slots(X, n, tb, cb, slot, rep, nsl, cnt):
    """The factor slots of rows 0..n−1 of X, per attribute a: each value present that
    training saw gets its own, the present values training never saw share one (all their
    counts are zero, so their factors are equal). slot[cb[a] + v] = slot of a's value v
    (−1: absent; slot must come in all −1), rep[cb[a] + s] = a value of slot s, nsl[a] =
    a's slots. The factors are built for slots, not values: an attribute with thousands of
    values (an identifier) costs what its values in the rows cost."""
    d = X.shape[1]
    K = tb.K
    unseen = np.full(d, -1, dtype=np.int64)
    for r in range(n):
        for a in range(d):
            v = X[r, a]
            if v < 0 or slot[cb[a] + v] >= 0:
                continue
            read(tb, tb.lbase[1] + a, v, cnt)
            tot = 0
            for y in range(K):
                tot += cnt[y]
            if tot == 0 and unseen[a] >= 0:
                slot[cb[a] + v] = unseen[a]
                continue
            s = nsl[a]
            nsl[a] += 1
            slot[cb[a] + v] = s
            rep[cb[a] + s] = v
            if tot == 0:
                unseen[a] = s


@numba.njit(cache=True, nogil=True, inline="always")
def slot_stride(K):
    """The factors' slot stride for K classes: K rounded up to a multiple of 4 where that
    adds at most a quarter (K = 7, 10, 11, ≥ 13), so that every slot starts 32 bytes into
    the (aligned) table and a block's vector loads never straddle two cache lines (letter's
    26 classes: its products an eighth faster); the padding is never read."""
    ks = (K + 3) // 4 * 4
    return ks if (ks - K) * 4 <= K else K


@numba.njit(cache=True, nogil=True, inline="always")
def _log_fmin(est, tb):
    """log of the smallest possible child factor, (m/max|X|)/(N+m)."""
    return min(np.log((est.m / max(largest(tb.cards), 1)) / (est.N + est.m)), -1e-300)


@numba.njit(cache=True, nogil=True, inline="always")
def rescale_group(lfmin):
    """Child factors a chain may take between two checks: g of them stay ≥ 2⁻²⁵⁶ (g ≥ 1),
    so a chain checked every g factors stays ≥ 2⁻⁵¹²."""
    return max(1, min(1 << 30, int(_DOWN_LOG / -lfmin)))


@numba.njit(cache=True, nogil=True, inline="always")
def _renormalise(pr, e, K):
    """Chain pr below 2⁻²⁵⁶: times 2²⁵⁶ (exact), e counts it."""
    for y in range(K):
        if pr[y] < _LOW:
            pr[y] *= _UP
            e[y] += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _add_term(acc, mx, sm, r, y, v, e):
    """acc[r, y] += v · 2^(−256 e): exactly when that is a normal double, else in log space
    (mx, sm: `add_log`'s running max and scaled sum)."""
    if e == 0:
        acc[r, y] += v
        return
    x = v
    for _ in range(e):
        x *= _LOW
    if x >= _TINY:
        acc[r, y] += x
    elif v > 0.0:
        mx[r, y], sm[r, y] = add_log(mx[r, y], sm[r, y], np.log(v) - e * _DOWN_LOG)


@numba.njit(cache=True, nogil=True, inline="always")
def _log_total(acc, mx, sm, r, y):
    """log of acc[r, y] plus the log-space part (sm, mx have a row per row only where
    the rescaling path may write them)."""
    a = np.log(acc[r, y])
    if sm.shape[0] < acc.shape[0] or sm[r, y] <= 0.0:
        return a
    b = mx[r, y] + np.log(sm[r, y])
    hi = max(a, b)
    return hi + np.log(np.exp(a - hi) + np.exp(b - hi))


@numba.njit(cache=True, nogil=True, inline="always")
def _fill_cell(tb, est, lev, q, idx, cell, slots, rowlen, vals, S, cnt, mc, cc, den, fac,
               pcnt):
    """Cell `cell` of parent set q (attributes idx[0:lev], colex rank q; cell = mixed
    radix of the parents' value slots, `value_slots`): its #(y, x_s) into pcnt and, when
    that reaches the frequency limit (returned), its child factors into fac
    (fac[cell · rowlen + (cstart[c] + slot of x_c) · KS + y], KS = `slot_stride`)."""
    cb, rep, nsl, cstart = slots
    d = tb.cards.shape[0]
    K = tb.K
    m = est.m
    L1 = lev + 1
    # the tables' arrays taken out of the tuples once: each read of a tuple's array in
    # the loops below would cost a reference count (two atomic instructions)
    cards, binom, miss_base, lbase = tb.cards, tb.binom, tb.miss_base, tb.lbase
    kind, off, dense, child_ok = tb.kind, tb.off, tb.dense, est.child_ok
    uK = np.uint64(K)
    KS = slot_stride(K)
    b = lbase[lev] + q
    rest = cell
    for t in range(lev - 1, -1, -1):
        vals[t] = rep[cb[idx[t]] + rest % nsl[idx[t]]]
        rest //= nsl[idx[t]]
    full = ZERO  # the cell in the parents' value space, where the tables are read
    for t in range(lev):
        full = full * cards[idx[t]] + vals[t]
    if kind[b] == KIND_DENSE:  # (reads written out: see `rows_products`)
        at = off[b] + full * K
        for y in range(K):
            cnt[y] = dense[at + y]
    else:
        read_call(tb, b, full, cnt)
    tot = 0.0
    for y in range(K):
        pcnt[cell, y] = cnt[y]
        tot += pcnt[cell, y]
    if tot < est.F:  # no row reads this cell's factors
        return False
    row0 = cell * rowlen
    for y in range(K):  # the unit slot, last in the row (`_even_children`)
        fac[row0 + rowlen - KS + y] = 1.0
    for c in range(d):
        member = False
        for t in range(lev):
            member |= idx[t] == c
        o = row0 + cstart[c] * KS
        if member or not child_ok[c]:
            for k in range(nsl[c] * KS):
                fac[o + k] = 1.0
            continue
        mb = miss_base[lev, c]
        if mb >= 0 and kind[mb + q] == KIND_DENSE:
            at = off[mb + q] + full * K
            for y in range(K):
                mc[y] = dense[at + y]
        elif mb >= 0:
            read_call(tb, mb + q, full, mc)
        else:
            mc[:] = 0
        pos = insert_sorted(idx, lev, c, S)  # S = sorted(idx ∪ {c})
        rank = 0
        for t in range(L1):
            rank += binom[S[t], t + 1]
        b2 = lbase[L1] + rank
        madd = m / cards[c]
        for y in range(K):  # `m_estimate`'s denominator, the same for every slot of c
            den[y] = (cnt[y] - mc[y]) + m
        loc0 = ZERO  # the cell of (x_s, x_c = 0) in the set s ∪ {c}; x_c's stride in it
        stride = ONE
        v = 0
        for t in range(L1):
            if t == pos:
                xv = 0
            else:
                xv = vals[v]
                v += 1
            loc0 = loc0 * cards[S[t]] + xv
            if t > pos:
                stride *= cards[S[t]]
        dense2 = kind[b2] == KIND_DENSE
        for sc in range(nsl[c]):
            loc = loc0 + rep[cb[c] + sc] * stride
            oc = np.uint64(o + sc * KS)  # (unsigned, classes too: see `rows_products`)
            if dense2:
                at = np.uint64(off[b2] + loc * K)
                for y in range(uK):
                    fac[oc + y] = (dense[at + y] + madd) / den[y]
            else:
                read_call(tb, b2, loc, cc)
                for y in range(uK):
                    fac[oc + y] = (cc[y] + madd) / den[y]
    return True


def _rows_kernel(W: int):
    """`rows_products` for blocks of W ≤ 11 or W = 16 classes (W a compile-time
    constant)."""

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def rows_products(fac, coff, nch, rows, bases, nr, yb, prod):
        """prod[i, yb … yb+W−1] = Π over row rows[i]'s nch active children (factor
        offsets coff[r, ·]) of fac[bases[i] + offset + y], for i < nr: two chains (even
        and odd children, the last odd one in the first) of W local scalars each, which
        stay in registers (the compiler packs them into vector registers). The chains are
        written out here, not in a helper: numba reference-counts the arrays handed to an
        inlined helper with a loop at every call, two atomic instructions per array that
        stall the pipeline (they took 57 % of A1DE's scoring CPU)."""
        # offsets as unsigned integers: numba wraps a negative signed index around (a
        # compare and a conditional move per read), which also kept the compiler from
        # packing a block's classes into vector instructions
        u1, u2, u3, u4 = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
        u5, u6, u7, u8 = np.uint64(5), np.uint64(6), np.uint64(7), np.uint64(8)
        u9, u10, u11, u12 = np.uint64(9), np.uint64(10), np.uint64(11), np.uint64(12)
        u13, u14, u15 = np.uint64(13), np.uint64(14), np.uint64(15)
        for i in range(nr):
            r = rows[i]
            base = bases[i] + yb
            kc = nch[r]
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = a10 = 1.0
            b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = b8 = b9 = b10 = 1.0
            a11 = a12 = a13 = a14 = a15 = b11 = b12 = b13 = b14 = b15 = 1.0
            t = 0
            while t < kc:  # child t into the a chains, which then trade places with b
                o0 = np.uint64(base + coff[r, t])
                a0 *= fac[o0]
                if W > 1:
                    a1 *= fac[o0 + u1]
                if W > 2:
                    a2 *= fac[o0 + u2]
                if W > 3:
                    a3 *= fac[o0 + u3]
                if W > 4:
                    a4 *= fac[o0 + u4]
                if W > 5:
                    a5 *= fac[o0 + u5]
                if W > 6:
                    a6 *= fac[o0 + u6]
                if W > 7:
                    a7 *= fac[o0 + u7]
                if W > 8:  # (blocks of 9-11 and 16 only)
                    a8 *= fac[o0 + u8]
                    if W > 9:
                        a9 *= fac[o0 + u9]
                        if W > 10:
                            a10 *= fac[o0 + u10]
                            if W > 11:
                                a11 *= fac[o0 + u11]
                                a12 *= fac[o0 + u12]
                                a13 *= fac[o0 + u13]
                                a14 *= fac[o0 + u14]
                                a15 *= fac[o0 + u15]
                (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,
                 b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15) = \
                    (b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15,
                     a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15)
                t += 1
            prod[i, yb] = a0 * b0
            if W > 1:
                prod[i, yb + 1] = a1 * b1
            if W > 2:
                prod[i, yb + 2] = a2 * b2
            if W > 3:
                prod[i, yb + 3] = a3 * b3
            if W > 4:
                prod[i, yb + 4] = a4 * b4
            if W > 5:
                prod[i, yb + 5] = a5 * b5
            if W > 6:
                prod[i, yb + 6] = a6 * b6
            if W > 7:
                prod[i, yb + 7] = a7 * b7
            if W == 9:  # (blocks of 9-11 and 16 only)
                prod[i, yb + 8] = a8 * b8
            elif W == 10:
                prod[i, yb + 8], prod[i, yb + 9] = a8 * b8, a9 * b9
            elif W == 11:
                prod[i, yb + 8], prod[i, yb + 9], prod[i, yb + 10] = a8 * b8, a9 * b9, a10 * b10
            elif W == 16:
                prod[i, yb + 8], prod[i, yb + 9], prod[i, yb + 10] = a8 * b8, a9 * b9, a10 * b10
                prod[i, yb + 11], prod[i, yb + 12] = a11 * b11, a12 * b12
                prod[i, yb + 13], prod[i, yb + 14] = a13 * b13, a14 * b14
                prod[i, yb + 15] = a15 * b15

    return rows_products


(_rows1, _rows2, _rows3, _rows4, _rows5, _rows6, _rows7, _rows8, _rows9, _rows10, _rows11,
 _rows16) = (slp_vectorized(_rows_kernel(w)) for w in (*range(1, 12), 16))


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def row_products(fac, coff, nch, rows, bases, nr, K, prod):
    """prod[i, y] = Π over row rows[i]'s active children of its factors of class y (from
    offset bases[i] of fac), for i < nr. Called once per parent set and chunk, not per row.
    Inlined, so that in a kernel whose K is a compile-time constant (2 or 3,
    `workbench.jit.by_classes`) numba prunes the other branches and compiles only that
    block's loop, not all eight (a third of a cold A1DE run's compiling)."""
    if K == 2:
        _rows2(fac, coff, nch, rows, bases, nr, 0, prod)
    elif K == 3:
        _rows3(fac, coff, nch, rows, bases, nr, 0, prod)
    else:
        _row_blocks(fac, coff, nch, rows, bases, nr, K, prod)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _row_blocks(fac, coff, nch, rows, bases, nr, K, prod):
    """`row_products` for any K: in blocks of 16 while 16 remain, then of 8 while more
    than 11 remain, then the rest at once (a block walks all the children again: one of
    9–11 beats 8 + 1–3 by a fifth; 16 + 10 beats 8 + 8 + 8 + 2 on letter's 26 classes;
    blocks of 12–15 measured slower than 8 + 4…7)."""
    yb = 0
    while K - yb >= 16:
        _rows16(fac, coff, nch, rows, bases, nr, yb, prod)
        yb += 16
    while K - yb >= 12 or K - yb == 8:
        _rows8(fac, coff, nch, rows, bases, nr, yb, prod)
        yb += 8
    tail = K - yb
    if tail == 1:
        _rows1(fac, coff, nch, rows, bases, nr, yb, prod)
    elif tail == 2:
        _rows2(fac, coff, nch, rows, bases, nr, yb, prod)
    elif tail == 3:
        _rows3(fac, coff, nch, rows, bases, nr, yb, prod)
    elif tail == 4:
        _rows4(fac, coff, nch, rows, bases, nr, yb, prod)
    elif tail == 5:
        _rows5(fac, coff, nch, rows, bases, nr, yb, prod)
    elif tail == 6:
        _rows6(fac, coff, nch, rows, bases, nr, yb, prod)
    elif tail == 7:
        _rows7(fac, coff, nch, rows, bases, nr, yb, prod)
    elif tail == 9:
        _rows9(fac, coff, nch, rows, bases, nr, yb, prod)
    elif tail == 10:
        _rows10(fac, coff, nch, rows, bases, nr, yb, prod)
    elif tail == 11:
        _rows11(fac, coff, nch, rows, bases, nr, yb, prod)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _scaled_row(fac, base, coff, r, kc, K, step, pcnt, cell, terms, pos, weighted, sums,
                sums1, chains):
    """One row's term of one parent set when its product may leave the normal range: two
    chains renormalised every `step` factors (`_renormalise`), terms added by `_add_term`
    (terms = (prior, scale, scale1); sums, sums1 = (acc, mx, sm) of the used and the
    equally weighted sets; chains = (pr0, pr1, e0, e1), work arrays)."""
    prior, scale, scale1 = terms
    acc, mx, sm = sums
    acc1, mx1, sm1 = sums1
    pr0, pr1, e0, e1 = chains
    for y in range(K):
        pr0[y] = 1.0
        pr1[y] = 1.0
        e0[y] = 0
        e1[y] = 0
    t = 0
    while t < kc:
        end = min(t + step, kc)
        while t + 1 < end:
            o0 = base + coff[r, t]
            o1 = base + coff[r, t + 1]
            for y in range(K):
                pr0[y] *= fac[o0 + y]
                pr1[y] *= fac[o1 + y]
            t += 2
        if t < end:  # (only at the end: step is even)
            for y in range(K):
                pr0[y] *= fac[base + coff[r, t] + y]
            t += 1
        _renormalise(pr0, e0, K)
        _renormalise(pr1, e1, K)
    for y in range(K):
        joint = (pcnt[cell, y] + prior) * (pr0[y] * pr1[y])
        if pos:
            _add_term(acc, mx, sm, r, y, joint * scale, e0[y] + e1[y])
        if weighted:
            _add_term(acc1, mx1, sm1, r, y, joint * scale1, e0[y] + e1[y])


def slot_layout(X: np.ndarray, n: int, tb, lev: int, cnt: np.ndarray,
                declared: tuple) -> tuple:
    """Where `score_parent_major` finds a parent set's factors: (same, slot, cb, rep, nsl,
    cstart) — attribute a's values from cb[a], its nsl[a] slots' factors from cstart[a];
    `declared` (`declared_layout`: a slot per declared value, nothing to find) where
    building those costs no more than the rows' reads, else slots by value
    (`value_slots`), whose kernels are compiled only where some data needs them."""
    if not _RARE[0] and build_ok(tb.cards, lev, n, tb.cards.shape[0]):
        return declared
    return _value_layout(X, n, tb, cnt)


def declared_layout(cards: np.ndarray) -> tuple:
    """`slot_layout` with a slot per declared value: slot v of value v (same = True)."""
    d = cards.shape[0]
    cb = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(cards, out=cb[1:])
    slot = np.arange(cb[d], dtype=np.int64) - np.repeat(cb[:-1], cards)
    return True, slot, cb, slot.copy(), cards.astype(np.int64), cb[:-1].copy()


@numba.njit(cache=True, nogil=True)
def _value_layout(X, n, tb, cnt):
    """`slot_layout` by value slot (`value_slots`): a slot per value the rows have."""
    cards = tb.cards
    d = cards.shape[0]
    cb = np.zeros(d + 1, dtype=np.int64)
    for a in range(d):
        cb[a + 1] = cb[a] + cards[a]
    slot = np.full(cb[d], -1, dtype=np.int64)
    rep = np.empty(cb[d], dtype=np.int64)
    nsl = np.zeros(d, dtype=np.int64)
    value_slots(X, n, tb, cb, slot, rep, nsl, cnt)
    cstart = np.zeros(d, dtype=np.int64)
    for a in range(1, d):
        cstart[a] = cstart[a - 1] + nsl[a - 1]
    return False, slot, cb, rep, nsl, cstart


@numba.njit(cache=True, nogil=True)
def _row_slots(X, actl, nact, n, same, slot, cb, cstart, KS, child_ok, xt, coff, nch, wout):
    """Per active attribute a of each row r < n its value slot xt[a, r], and the row's
    children's factor offsets coff[r, 0:nch[r]] (KS: the slot stride); wout[r] = 0."""
    for r in range(n):
        wout[r] = 0.0
        k = 0
        for t in range(nact[r]):
            a = actl[r, t]
            sa = X[r, a] if same else slot[cb[a] + X[r, a]]
            xt[a, r] = sa
            if child_ok[a]:
                coff[r, k] = (cstart[a] + sa) * KS
                k += 1
        nch[r] = k


@numba.njit(cache=True, nogil=True)
def _even_children(nch, n, coff, unit):
    """The rows' child counts for the product loop: each row's children padded with the
    unit slot (offset `unit`, factors 1.0) to the most any row has, when that adds at most
    an eighth to the multiplies, else `nch` itself. A count that varies row by row
    (subsumption resolution deletes children, values go missing) makes the loop's exit a
    mispredicted branch per row and parent set; a product times 1.0 is exact."""
    tot = 0
    top = 0
    for r in range(n):
        tot += nch[r]
        top = max(top, nch[r])
    if top * n == tot or (top * n - tot) * 8 > tot:
        return nch
    run = np.empty(n, dtype=np.int64)
    for r in range(n):
        for t in range(nch[r], top):
            coff[r, t] = unit
        run[r] = top
    return run


@numba.njit(cache=True, nogil=True)
def _level_scores(n, K, weighted, nused, wout, sums, sums1, done, lp):
    """`_score`'s results: done[r] = row r used some parent set; lp[r] = the log of its
    sums (those of equal weights when its used sets all weigh 0 and `weighted`)."""
    acc, mx, sm = sums
    acc1, mx1, sm1 = sums1
    for r in range(n):
        done[r] = nused[r] > 0
        if not done[r]:
            continue
        for y in range(K):
            if weighted and wout[r] <= 0.0:
                lp[r, y] = _log_total(acc1, mx1, sm1, r, y)
            else:
                lp[r, y] = _log_total(acc, mx, sm, r, y)


def _score_kernel(kc: int, scaled: bool):
    """`score_parent_major` for kc classes (2, 3; 0: any number, read from the tables); the
    body not an inlined helper: numba copies inlined IR twice, seconds for one this size.
    Without `scaled` (compile-time) it has no rescaling path (`_scaled_row` not compiled)
    and returns False (scores void) for a level where a product could leave normal range."""

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def score_parent_major(X, actl, nact, n, lev, tb, est, weighted, done, lp, wout,
                           layout):
        """Order-`lev` scores of rows 0..n−1 (active attributes actl[r, 0:nact[r]],
        ascending) into lp; done[r] = some parent set is used, wout[r] = their total
        weight (`layout`: `slot_layout`'s). With `weighted`, a row whose used sets all
        weigh 0 counts them equally (SPEC §2). Returns whether it scored them (always,
        when `scaled`)."""
        K = kc if kc else tb.K
        cards = tb.cards  # (taken out of the tuple once: a read in the row loop costs a
        d = cards.shape[0]  # reference count, an atomic instruction, per row)
        m = est.m
        lfmin = _log_fmin(est, tb)
        step = 2 * rescale_group(lfmin)  # factors of both chains between two checks
        # without `scaled`, a set whose least product (d − lev factors ≥ e^lfmin, e⁻¹ spare)
        # may be below its limit declines the level (at the end), so none admitted is below
        floor = (d - lev) * lfmin - 1.0
        declined = False
        cnt = np.empty(K, dtype=np.int64)
        same, slot, cb, rep, nsl, cstart = layout
        KS = slot_stride(K)
        unit = (cstart[d - 1] + nsl[d - 1]) * KS  # (a slot of 1.0s after the children's)
        rowlen = unit + KS
        idx = first_ints(lev)
        maxcell = int(largest_product(nsl, lev))  # (exact: the path is chosen when small)
        fac, pcnt, cok, filled, vals, S, mc, cc, den = _scratch(maxcell, rowlen, lev, K)
        # the equally weighted sums are read only for a row whose used sets all weigh 0:
        # kept only when some set may (bench_vs_java's magic A2DE-SW has none)
        eq = weighted and _some_set_weighs_zero(tb, est, lev, d)
        sums, sums1, nused, xt, coff, nch, rows, cells, bases, prod, chains = \
            _level_arrays(n, d, K, eq, scaled)
        acc, acc1 = sums[0], sums1[0]
        _row_slots(X, actl, nact, n, same, slot, cb, cstart, KS, est.child_ok, xt, coff, nch,
                   wout)
        nrun = _even_children(nch, n, coff, unit)
        slots = (cb, rep, nsl, cstart)
        q = ZERO
        while True:
            b = tb.lbase[lev] + q
            allowed = True
            nv = 1.0
            ncell = 1  # the set's cells in slot space, filled when a row first has one
            for t in range(lev):
                allowed = allowed and est.parent_ok[idx[t]]
                nv *= tb.cards[idx[t]]
                ncell *= nsl[idx[t]]
            if allowed:
                for cell in range(ncell):
                    filled[cell] = False
                w = est.wts[b]
                scale = w / (est.ptot[b] + m)
                scale1 = inverse_total(est.ptot[b], m)
                prior = m / (K * nv)
                small = min(scale if w > 0.0 else 1.0, scale1 if weighted else 1.0)
                lim = _TINY / (prior * small)  # a product below gives a subnormal term
                if not scaled and not np.log(lim) <= floor:
                    declined = True
                    break
                nr = ZERO  # the rows this set takes part in, and their factors' offsets
                x0 = xt[idx[0]]  # (one parent, A1DE: its slots, without the loop below)
                for r in range(n):
                    if lev == 1:
                        cell = x0[r]
                        if cell < 0:
                            continue
                    else:
                        ok = True
                        cell = ZERO
                        for t in range(lev):
                            v = xt[idx[t], r]
                            ok = ok and v >= 0
                            cell = cell * nsl[idx[t]] + v
                        if not ok:
                            continue
                    cu = np.uint64(cell)  # (unsigned: see `rows_products`)
                    if not filled[cu]:
                        filled[cu] = True
                        cok[cu] = _fill_cell(tb, est, lev, q, idx, cell, slots, rowlen,
                                             vals, S, cnt, mc, cc, den, fac, pcnt)
                    if not cok[cu]:
                        continue
                    nused[r] += 1
                    wout[r] += w
                    un = np.uint64(nr)
                    rows[un] = r
                    cells[un] = cell
                    bases[un] = cell * rowlen
                    nr += 1
                row_products(fac, coff, nrun, rows, bases, nr, K, prod)
                for i in range(nr):
                    r = np.uint64(rows[i])  # (unsigned: no wrap-around code per access)
                    cell = np.uint64(cells[i])
                    if scaled:  # (without, no product can be below lim: see `floor`)
                        low = False  # factors ≤ 1: a normal end means no step underflowed
                        for y in range(K):
                            low |= prod[i, y] < lim
                        if low:  # (rare) again, with renormalised chains
                            terms = (prior, scale, scale1)
                            _scaled_row(fac, bases[i], coff, r, nch[r], K, step, pcnt,
                                        cell, terms, w > 0.0, eq, sums, sums1, chains)
                            continue
                    if w > 0.0:
                        for y in range(K):
                            acc[r, y] += (pcnt[cell, y] + prior) * prod[i, y] * scale
                    if eq:
                        for y in range(K):
                            acc1[r, y] += (pcnt[cell, y] + prior) * prod[i, y] * scale1
            q += 1
            if not next_colex(idx, lev, d):
                break
        _level_scores(n, K, eq, nused, wout, sums, sums1, done, lp)
        return not declined

    return score_parent_major


score_parent_major = by_classes(functools.partial(_score_kernel, scaled=False))
"""``score_parent_major(K)``: the scoring kernel for K classes (`workbench.jit.by_classes`:
two and three classes get their own compiled loops, each compiled on first need), without
the rescaling path; `score_rescaling(K)` has it."""

score_rescaling = by_classes(functools.partial(_score_kernel, scaled=True))

_RARE = [False]  # `rare_paths_everywhere`'s switch


@contextlib.contextmanager
def rare_paths_everywhere() -> Iterator[None]:
    """Within: every level is scored by `score_rescaling` over value slots, as when some
    product may leave the normal range and the declared values are too many (the same
    results). `workbench warm-up` compiles their kernels this way (its small data never
    need them); tests check them against the usual paths."""
    _RARE[0] = True
    try:
        yield
    finally:
        _RARE[0] = False


@numba.njit(cache=True, nogil=True)
def _level_arrays(n, d, K, eq, scaled):
    """`score_parent_major`'s arrays per row: the sums (acc, mx, sm) and equal-weight sums
    (acc1, mx1, sm1; one row unless `eq`) — mx, sm their log-space parts, for tiny terms,
    one row unless `scaled` (the rescaling path, which alone writes them) — used-set counts; per attribute each row's value slot where it takes part (else −1,
    xt) and per row its active children's factor offsets (coff, nch): both streamed once
    per parent set, so small and contiguous in the order they are read; the rows, cells
    and factor bases of a set, the products, and `_scaled_row`'s chains."""
    acc1 = np.zeros((n, K) if eq else (1, K))
    nl = n if scaled else 1
    sums = (np.zeros((n, K)), np.full((nl, K), -np.inf), np.zeros((nl, K)))
    nl1 = acc1.shape[0] if scaled else 1
    sums1 = (acc1, np.full((nl1, K), -np.inf), np.zeros((nl1, K)))
    chains = (np.empty(K), np.empty(K), np.empty(K, dtype=np.int64),
              np.empty(K, dtype=np.int64))
    return (sums, sums1, np.zeros(n, dtype=np.int64), np.full((d, n), -1, dtype=np.int32),
            np.empty((n, d), dtype=np.int32), np.zeros(n, dtype=np.int64),
            np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
            np.empty(n, dtype=np.int64), np.empty((n, K)), chains)


@numba.njit(cache=True, nogil=True)
def _scratch(maxcell, rowlen, lev, K):
    """`score_parent_major`'s work arrays for the cells of one parent set: factors, class
    counts, usable and filled flags, and per-cell scratch."""
    return (np.empty(maxcell * rowlen), np.empty((maxcell, K)),
            np.empty(maxcell, dtype=np.bool_), np.empty(maxcell, dtype=np.bool_),
            np.empty(lev, dtype=np.int64), np.empty(lev + 1, dtype=np.int64),
            np.empty(K, dtype=np.int64), np.empty(K, dtype=np.int64), np.empty(K))


@numba.njit(cache=True, nogil=True, inline="always")
def _some_set_weighs_zero(tb, est, lev, d):
    """Some parent set of level `lev` that may be used weighs 0 (or NaN): only then can a
    row's used sets all weigh 0 (wout ≤ 0, `_level_scores` reads the equal-weight sums)."""
    idx = first_ints(lev)
    q = ZERO
    while True:
        allowed = True
        for t in range(lev):
            allowed = allowed and est.parent_ok[idx[t]]
        if allowed and not est.wts[tb.lbase[lev] + q] > 0.0:
            return True
        q += 1
        if not next_colex(idx, lev, d):
            return False


def _actives_kernel(sr: bool):
    """`chunk_actives` with or without subsumption resolution (`sr` a compile-time
    constant: without it, numba prunes the resolution's branches and never compiles
    `active_values` or the generalisation lists' readers)."""

    @numba.njit(cache=True, nogil=True)
    def chunk_actives(Xb, XUb, uparent, iidx, uidx, N, nb, tb, crit, gen, actl, nact, ux,
                      sc):
        """actl[r, 0:nact[r]] = the counted attributes of rows 0..nb−1 of Xb that take
        part, ux[r] = how many left-out single-valued ones (XUb) do and may be parents
        (`sc`: the work arrays, `ValueScratch`)."""
        isu, hit, words = sc.isu, sc.hit, sc.words
        vbase, ptr, attr, val, bits = gen  # (once: a field read per row is a reference
        bitsets = bits.shape[1] > 0  # count, an atomic instruction)
        one_word = bits.shape[1] == 1
        dU = XUb.shape[1]
        need_counts = dU > 0 or ptr.shape[0] == 0
        d = Xb.shape[1]
        vid = np.empty(d, dtype=np.uint64)  # (the one-word path's value ids of a row)
        for rr in range(nb):
            if sr:
                if need_counts:  # resolution from the counts (left-out attributes too)
                    na, u = active_values(tb, Xb, XUb, uparent, iidx, uidx, N, rr, TRUE,
                                          crit, gen, actl, sc, True)
                    nact[rr] = na
                    ux[rr] = u
                    continue
            # the present values, less those their generalisation lists delete (the
            # general helper costs 3× here, its call's reference counts more)
            na = ZERO
            u = 0
            for j in range(dU):  # left-out values present that may be parents
                if XUb[rr, j] and uparent[j]:
                    u += 1
            if sr and one_word:  # (`row_word` fused in): the values whose bit the ORed
                word = np.uint64(0)  # words of the row's values lack (vid: their ids)
                for a in range(d):
                    x = Xb[rr, a]
                    if x >= 0:
                        actl[rr, na] = a
                        vid[na] = vbase[a] + x
                        word |= bits[vid[na], ZERO]
                        na += 1
                k = ZERO
                for t in range(na):
                    actl[rr, k] = actl[rr, t]
                    k += np.int64((word >> vid[t]) & np.uint64(1)) ^ 1
                nact[rr] = k
                ux[rr] = u
                continue
            for a in range(d):
                if Xb[rr, a] >= 0:
                    actl[rr, na] = a
                    isu[na] = False
                    na += 1
            if sr:
                if bitsets:
                    mark_bits(gen, Xb, rr, actl, na, isu, hit, words)
                else:
                    mark_listed(vbase, ptr, attr, val, Xb, rr, actl, na, isu, hit)
                k = 0
                for t in range(na):
                    a = actl[rr, t]
                    if hit[a]:
                        hit[a] = False
                    else:
                        actl[rr, k] = a
                        k += 1
                na = k
            nact[rr] = na
            ux[rr] = u

    return chunk_actives


_actives_for = functools.cache(_actives_kernel)
"""``_actives_for(sr)``: `chunk_actives` for sr = True or False, built on first need."""


Levels = namedtuple("Levels", ["lp", "done", "w"])
"""Each level's scores of a chunk's rows (lp[lev, r]), whether some parent set is used
(done[lev, r]) and their total weight (w[lev, r]), as `score_parent_major` fills them."""


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _combine(Xb, nb, actl, nact, ux, need, order, top, tb, est, weighted, levels, cnt, prod,
             out):
    """Each row's score from its levels (`combine_orders`; naive Bayes over the children is
    level 0) or, when no order has a used parent set, naive Bayes over all its values."""
    llp, ldone, lw = levels
    n_ok = est.N >= est.F
    K = out.shape[1]
    lp0 = llp[0]  # (a view taken once, not per row: each costs a reference count)
    want = np.empty(nb, dtype=np.bool_)
    reads_level0(order, top, ux, need, nb, ldone, lw, weighted, n_ok, want)
    for r in range(nb):
        if not need[r]:
            for y in range(K):
                out[r, y] = llp[top, r, y]
        elif want[r]:
            nb_scores(tb, est, Xb, r, actl, nact[r], lp0, cnt, prod, TRUE)
    found = np.empty(nb, dtype=np.bool_)
    combine_orders(order, top, ux, need, nb, llp, ldone, lw, weighted, n_ok, out, 0, found)
    for r in range(nb):
        if need[r] and not found[r]:
            nb_scores(tb, est, Xb, r, actl, nact[r], lp0, cnt, prod, FALSE)
            for y in range(K):
                out[r, y] = lp0[r, y]


def log_scores_parent_major(X: np.ndarray, XU: np.ndarray, uparent: np.ndarray,
                            iidx: np.ndarray, uidx: np.ndarray, order: int, top: int, tb, est,
                            weighted: bool, sr: bool, crit: int, gen) -> np.ndarray:
    """log P̂(y, x) of AnDE of order `order` for every row of X (the counted attributes, whose
    attribute indices are iidx; XU[r, j] = left-out single-valued attribute uidx[j] present
    in row r, uparent[j] = it may be a parent; top = the highest level over the counted
    ones), in chunks of rows. Level `top`
    is scored for every row; the lower levels, and naive Bayes, for the rows with left-out
    attributes or without a usable parent set at `top` (SPEC §2's fallback). The chunks are
    walked here, in Python (a few per million rows), so that only the kernel of this class
    count is compiled."""
    n, d = X.shape
    dU = XU.shape[1]
    K = int(tb.K)
    out = np.empty((n, K))
    B = min(max(_CHUNK_BYTES // (d * 24 + K * 16 * (top + 1)), 1024), max(n, 1))
    actl = np.empty((B, d + dU), dtype=np.int64)
    nact = np.empty(B, dtype=np.int64)
    ux = np.empty(B, dtype=np.int64)
    vc, deleted, isu, hit, _, _, cnt = value_scratch(0, d + dU, K)
    sc = ValueScratch(vc, deleted, isu, hit, cnt, scratch_words(gen))
    llp = np.empty((top + 1, B, K))  # (a level is read only where ldone says it was scored)
    ldone = np.zeros((top + 1, B), dtype=np.bool_)
    lw = np.zeros((top + 1, B))
    levels = Levels(llp, ldone, lw)
    prod = np.empty(K)
    kernel = (score_rescaling if _RARE[0] else score_parent_major)(K)
    declared = declared_layout(tb.cards)

    def score(lev: int, counts: np.ndarray) -> None:
        nonlocal kernel  # `score_rescaling`'s from the first level that needs it on
        layout = slot_layout(Xb, nb, tb, lev, cnt, declared)  # (cnt: scratch)
        args = (Xb, actl, counts, nb, lev, tb, est, weighted, ldone[lev], llp[lev], lw[lev],
                layout)
        if not kernel(*args):
            kernel = score_rescaling(K)
            kernel(*args)

    actives = _actives_for(bool(sr))
    for r0 in range(0, n, B):
        nb = min(B, n - r0)
        Xb = X[r0:r0 + nb]
        actives(Xb, XU[r0:r0 + nb], uparent, iidx, uidx, np.int64(est.N), nb, tb, crit, gen,
                actl, nact, ux, sc)
        ldone[:, :nb] = False
        score(top, nact)
        need = (ux[:nb] > 0) | ~ldone[top, :nb]
        if not need.any():  # every row scored at `top`: `_combine` (and what it calls)
            out[r0:r0 + nb] = llp[top, :nb]  # is compiled only where some row needs it
            continue
        if top > 1:
            low = np.where(need, nact[:nb], 0)
            for lev in range(top - 1, 0, -1):
                score(lev, low)
        _combine(Xb, nb, actl, nact, ux, need, order, top, tb, est, weighted, levels, cnt, prod,
                 out[r0:r0 + nb])
    return out


def _nb_kernel(kc: int):
    """`log_scores_nb`'s kernel for kc classes (2, 3; 0: any number); the body not an
    inlined helper (see `_score_kernel`)."""

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def nb_rows(X, tb, est, sr, crit, gen, out):
        """Naive Bayes log scores of every row of X from one factor table (`row_products`
        over each row's active values, in chunks); a row whose product is not a normal
        double is scored again by `nb_scores`, which rescales."""
        K = kc if kc else tb.K
        n, d = X.shape
        m = est.m
        cstart = np.zeros(d + 1, dtype=np.int64)
        for a in range(d):
            cstart[a + 1] = cstart[a] + tb.cards[a]
        KS = slot_stride(K)
        fac = np.empty(cstart[d] * KS)
        cnt = np.empty(K, dtype=np.int64)
        for c in range(d):
            madd = m / tb.cards[c]
            for v in range(tb.cards[c]):
                read(tb, tb.lbase[1] + c, v, cnt)
                for y in range(K):
                    f = m_estimate(cnt[y], madd, est.nb_den[c, y], m)
                    fac[(cstart[c] + v) * KS + y] = f
        lprior = np.empty(K)
        for y in range(K):
            lprior[y] = np.log(m_estimate(est.class_counts[y], m / K, est.N, m))
        vc, deleted, isu, hit, iidx, none, _ = value_scratch(1, d, K)
        sc = ValueScratch(vc, deleted, isu, hit, cnt, scratch_words(gen))
        C = min(max(n, 1), _NB_CHUNK)
        actl = np.empty((C, d), dtype=np.int64)
        act1 = np.empty((1, d), dtype=np.int64)
        coff = np.empty((C, d), dtype=np.int32)
        nch = np.empty(C, dtype=np.int64)
        rows = first_ints(C)
        bases = np.zeros(C, dtype=np.int64)
        p = np.empty((C, K))
        prod = np.empty(K)
        need_counts = sr and gen.ptr.shape[0] == 0
        for r0 in range(0, n, C):
            nb = min(C, n - r0)
            for i in range(nb):
                r = r0 + i
                if sr:
                    na, _ = active_values(tb, X[r:r + 1], none, isu, iidx, iidx, ZERO, ZERO,
                                          sr, crit, gen, act1, sc, need_counts)
                    for t in range(na):
                        a = act1[0, t]
                        actl[i, t] = a
                        coff[i, t] = (cstart[a] + X[r, a]) * KS
                else:
                    na = ZERO
                    for a in range(d):
                        if X[r, a] >= 0:
                            actl[i, na] = a
                            coff[i, na] = (cstart[a] + X[r, a]) * KS
                            na += 1
                nch[i] = na
            row_products(fac, coff, nch, rows, bases, nb, K, p)
            for i in range(nb):
                r = r0 + i
                low = False
                for y in range(K):
                    low |= p[i, y] < _TINY
                if low:  # (rare) again, rescaling as it goes
                    nb_scores(tb, est, X[r:r + 1], ZERO, actl[i:i + 1], nch[i],
                              out[r:r + 1], cnt, prod, FALSE)
                    continue
                for y in range(K):
                    out[r, y] = lprior[y] + np.log(p[i, y])

    return nb_rows


_nb_for = by_classes(_nb_kernel)


def log_scores_nb(X: np.ndarray, tb, est, sr: bool, crit: int, gen) -> np.ndarray:
    """Naive Bayes (order 0) log P̂(y, x) of every row of X (int64 codes), with subsumption
    resolution when `sr`."""
    out = np.empty((X.shape[0], int(tb.K)))
    _nb_for(int(tb.K))(X, tb, est, sr, crit, gen, out)
    return out
