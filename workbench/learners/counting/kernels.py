"""The counting kernels: one pass over a chunk of coded rows adds its counts into the
blocks (`count_kernel`: an increment per row; `bitmap_kernel`: popcounts of the AND of
per-value row bit sets, for small dense blocks, or for a pair an increment per row off
an attribute's most frequent value), and block totals (`totals_kernel`)."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from workbench.jit import numba
from workbench.learners.counting.layout import (KIND_DENSE, KIND_EMPTY, KIND_SPARSE,
                                                first_at_least)

# ----- numba kernels ---------------------------------------------------------------------
@numba.njit(cache=True, nogil=True, error_model="numpy")
def count_kernel(codes_t, y, K, battrs, blen, bcond, kind, off, vbase, sslot,
                  dense, keybuf, vy, need, row0, nrows):
    """Count rows [row0, row0+nrows) into dense blocks; write sparse keys to keybuf.

    The common dense blocks — unconditioned of 1–4 attributes, missing-child of 1–2 — have
    loops with the attribute indices and cardinalities in locals (hoisted out of the row
    loop). For the unconditioned ones the value of each attribute that ends such a block
    (need[a] = 2) and the class are first combined once per row, vy[a, i] = x_a·K + y
    (−1: missing; vy has room for the rows), so a block's cell is (leading values' mixed
    radix)·|X_last|·K + vy of its last attribute; when no value of those blocks'
    attributes (need[a] ≥ 1) is missing in the chunk, without a test per row (a branch
    per increment costs 2x on letter's pairs)."""
    d = codes_t.shape[0]
    anymiss = False
    for a in range(d):
        if need[a] == 2:
            for i in range(nrows):
                r = np.uint64(row0 + i)
                v = codes_t[a, r]
                vy[a, i] = v * K + y[r] if v >= 0 else -1
                anymiss |= v < 0
        elif need[a] == 1:
            for i in range(nrows):
                anymiss |= codes_t[a, np.uint64(row0 + i)] < 0
    nb = battrs.shape[0]
    pend = np.empty((2 * d, _GROUP), dtype=np.int64)  # blocks of 2, 3 waiting (see below)
    npend = np.zeros(2 * d, dtype=np.int64)
    for b in range(nb):
        k = kind[b]
        if k == KIND_EMPTY:
            continue
        l = blen[b]
        c = bcond[b]
        slot = sslot[b]
        # (rows indexed unsigned: numba adds no negative-index code to each read, 1.5x
        # faster on letter's pairs)
        if k == KIND_DENSE and c < 0 and 1 <= l <= 4:
            o = off[b]
            a0 = battrs[b, 0]
            w = vy[battrs[b, l - 1]]  # the last attribute's x·K + y
            if l == 1:
                for i in range(nrows):
                    if not anymiss or w[i] >= 0:
                        dense[np.uint64(o + w[i])] += 1
            elif l <= 3:  # (grouped by length and last attribute: `_count_grouped`)
                at = (l - 2) * d + battrs[b, l - 1]
                g = npend[at]
                pend[at, g] = b
                npend[at] = g + 1
                if g + 1 == _GROUP:
                    _count_grouped(codes_t, dense, battrs, off, pend[at], _GROUP, l, w, K,
                                   anymiss, row0, nrows)
                    npend[at] = 0
            else:
                a1 = battrs[b, 1]
                a2 = battrs[b, 2]
                c1 = battrs[b, 5]
                c2 = battrs[b, 6]
                m3 = battrs[b, 7] * K
                for i in range(nrows):
                    r = np.uint64(row0 + i)
                    v0 = codes_t[a0, r]
                    v1 = codes_t[a1, r]
                    v2 = codes_t[a2, r]
                    if not anymiss or (v0 >= 0 and v1 >= 0 and v2 >= 0 and w[i] >= 0):
                        dense[np.uint64(o + ((v0 * c1 + v1) * c2 + v2) * m3 + w[i])] += 1
            continue
        if k == KIND_DENSE and c >= 0 and 1 <= l <= 2:  # missing-child blocks of A1DE, A2DE
            o = off[b]
            a0 = battrs[b, 0]
            if l == 1:
                for i in range(nrows):
                    r = np.uint64(row0 + i)
                    v0 = codes_t[a0, r]
                    if codes_t[c, r] < 0 and v0 >= 0:
                        dense[o + v0 * K + y[r]] += 1
            else:
                a1 = battrs[b, 1]
                c1 = battrs[b, 3]
                for i in range(nrows):
                    r = np.uint64(row0 + i)
                    v0 = codes_t[a0, r]
                    v1 = codes_t[a1, r]
                    if codes_t[c, r] < 0 and v0 >= 0 and v1 >= 0:
                        dense[o + (v0 * c1 + v1) * K + y[r]] += 1
            continue
        for rr in range(nrows):
            r = row0 + rr
            if k == KIND_SPARSE:
                keybuf[slot, rr] = -1
            if c >= 0 and codes_t[c, r] >= 0:
                continue
            loc = 0
            ok = True
            for t in range(l):
                a = battrs[b, t]
                v = codes_t[a, r]
                if v < 0:
                    ok = False
                    break
                loc = loc * battrs[b, l + t] + v  # cardinality stored after attrs
            if not ok:
                continue
            loc = loc * K + y[r]
            if k == KIND_DENSE:
                dense[off[b] + loc] += 1
            else:
                keybuf[slot, rr] = vbase[b] + loc
    for at in range(2 * d):
        if npend[at]:
            _count_grouped(codes_t, dense, battrs, off, pend[at], npend[at], 2 + at // d,
                           vy[at % d], K, anymiss, row0, nrows)


_GROUP = 4
"""Unconditioned dense blocks of two or three attributes ending with the same attribute
counted in one pass over the rows (`_count_grouped`)."""


@numba.njit(cache=True, nogil=True, inline="always")
def _leads(battrs, b, l):
    """Block b's leading attributes as (first, second, the first's multiplier): a block
    of two repeats its first with multiplier 0, so x0·c1 + x1 = x0 (one form for both)."""
    if l == 2:
        return battrs[b, 0], battrs[b, 0], 0
    return battrs[b, 0], battrs[b, 1], battrs[b, 4]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _count_grouped(codes_t, dense, battrs, off, ids, n, l, w, K, anymiss, row0, nrows):
    """Count rows [row0, row0+nrows) into the unconditioned dense blocks ids[:n] (n ≤ 4)
    of l = 2 or 3 attributes ending with the same attribute (w: its x·K + y per row, −1
    missing), four or two blocks per pass. One block per pass waits on each increment
    before the next (the next row's cell may be the same): four measured 2x faster on
    letter's pairs."""
    m = battrs[ids[0], 2 * l - 1] * K  # (the last attribute's cardinality) × K
    j = 0
    while j < n:
        o0 = off[ids[j]]
        p0, q0, c0 = _leads(battrs, ids[j], l)
        if n - j >= 4:
            o1, o2, o3 = off[ids[j + 1]], off[ids[j + 2]], off[ids[j + 3]]
            p1, q1, c1 = _leads(battrs, ids[j + 1], l)
            p2, q2, c2 = _leads(battrs, ids[j + 2], l)
            p3, q3, c3 = _leads(battrs, ids[j + 3], l)
            for i in range(nrows):
                r = np.uint64(row0 + i)
                wi = w[i]
                x0, y0 = codes_t[p0, r], codes_t[q0, r]
                x1, y1 = codes_t[p1, r], codes_t[q1, r]
                x2, y2 = codes_t[p2, r], codes_t[q2, r]
                x3, y3 = codes_t[p3, r], codes_t[q3, r]
                if anymiss:
                    if wi < 0:
                        continue
                    if x0 >= 0 and y0 >= 0:
                        dense[np.uint64(o0 + (x0 * c0 + y0) * m + wi)] += 1
                    if x1 >= 0 and y1 >= 0:
                        dense[np.uint64(o1 + (x1 * c1 + y1) * m + wi)] += 1
                    if x2 >= 0 and y2 >= 0:
                        dense[np.uint64(o2 + (x2 * c2 + y2) * m + wi)] += 1
                    if x3 >= 0 and y3 >= 0:
                        dense[np.uint64(o3 + (x3 * c3 + y3) * m + wi)] += 1
                    continue
                dense[np.uint64(o0 + (x0 * c0 + y0) * m + wi)] += 1
                dense[np.uint64(o1 + (x1 * c1 + y1) * m + wi)] += 1
                dense[np.uint64(o2 + (x2 * c2 + y2) * m + wi)] += 1
                dense[np.uint64(o3 + (x3 * c3 + y3) * m + wi)] += 1
            j += 4
        elif n - j >= 2:
            o1 = off[ids[j + 1]]
            p1, q1, c1 = _leads(battrs, ids[j + 1], l)
            for i in range(nrows):
                r = np.uint64(row0 + i)
                wi = w[i]
                x0, y0 = codes_t[p0, r], codes_t[q0, r]
                x1, y1 = codes_t[p1, r], codes_t[q1, r]
                if anymiss:
                    if wi < 0:
                        continue
                    if x0 >= 0 and y0 >= 0:
                        dense[np.uint64(o0 + (x0 * c0 + y0) * m + wi)] += 1
                    if x1 >= 0 and y1 >= 0:
                        dense[np.uint64(o1 + (x1 * c1 + y1) * m + wi)] += 1
                    continue
                dense[np.uint64(o0 + (x0 * c0 + y0) * m + wi)] += 1
                dense[np.uint64(o1 + (x1 * c1 + y1) * m + wi)] += 1
            j += 2
        else:  # (one block: the loop of `count_kernel`'s other blocks)
            for i in range(nrows):
                r = np.uint64(row0 + i)
                x0, y0 = codes_t[p0, r], codes_t[q0, r]
                if not anymiss or (x0 >= 0 and y0 >= 0 and w[i] >= 0):
                    dense[np.uint64(o0 + (x0 * c0 + y0) * m + w[i])] += 1
            j += 1


@intrinsic
def _popcount(typingctx, x):
    """Set bits of a 64-bit integer (LLVM's ctpop: one instruction, vectorised in loops)."""
    if not isinstance(x, types.Integer) or x.bitwidth != 64:
        return None

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.ctpop", [args[0].type])
        return builder.call(fn, [args[0]])

    return types.uint64(x), codegen


@intrinsic
def _trailing_zeros(typingctx, x):
    """Trailing zero bits of a nonzero 64-bit integer (LLVM's cttz: one instruction)."""
    if not isinstance(x, types.Integer) or x.bitwidth != 64:
        return None

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.cttz", [args[0].type, ir.IntType(1)])
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 1)])

    return types.uint64(x), codegen


@numba.njit(cache=True, nogil=True, inline="always")
def _and_count(bits, i, j, nw):
    """Rows in both bit sets i and j (their AND's popcount). (Rows indexed directly, not
    sliced: a slice is reference-counted, two atomic instructions per call.)"""
    s = np.uint64(0)
    for w in range(nw):
        s += _popcount(bits[i, w] & bits[j, w])
    return np.int64(s)


@numba.njit(cache=True, nogil=True, inline="always")
def _add_cells(bits, src, m, j0, c, nw, nset, full, dense, cell, stride, tg):
    """dense[cell + v·stride] += rows in both set src (m rows) and value set j0 + v, for
    v < c. Value sets go two to a pass over src; when ``full`` (every row of the
    chunk has a value: the sets partition it), the last value gets m minus the others."""
    nt = 0
    for v in range(c - 1 if full else c):
        if nset[j0 + v]:
            tg[nt] = v
            nt += 1
    for g in range(0, nt, 2):
        i0 = j0 + tg[g]
        s0 = np.uint64(0)
        s1 = np.uint64(0)
        if g + 1 < nt:
            i1 = j0 + tg[g + 1]
            for w in range(nw):
                x = bits[src, w]
                s0 += _popcount(x & bits[i0, w])
                s1 += _popcount(x & bits[i1, w])
            dense[cell + tg[g + 1] * stride] += np.int64(s1)
            m -= np.int64(s1)
        else:
            for w in range(nw):
                s0 += _popcount(bits[src, w] & bits[i0, w])
        dense[cell + tg[g] * stride] += np.int64(s0)
        m -= np.int64(s0)
    if full:
        dense[cell + (c - 1) * stride] += m


@numba.njit(cache=True, nogil=True, inline="always")
def _and_into(bits, dst, i, j, nw):
    """Bit set dst = i AND j; returns its popcount."""
    s = np.uint64(0)
    for w in range(nw):
        x = bits[i, w] & bits[j, w]
        bits[dst, w] = x
        s += _popcount(x)
    return np.int64(s)


_COMPARE_MAX = 8
"""Attributes of at most this many values build their bit sets by comparing 64 codes with
each value (vectorised), larger ones by setting one bit per row."""


@numba.njit(cache=True, nogil=True, inline="always")
def _equal_bits(x, lo, nrows, v, bits, row):
    """Bit set `row` = the rows r < nrows with x[lo + r] == v (v of x's type)."""
    nfull = nrows >> 6
    for w in range(nfull):
        m = np.uint64(0)
        seg = x[lo + w * 64: lo + w * 64 + 64]  # a slice: indexed from 0, so vectorised
        for r in range(64):
            m |= np.uint64(seg[r] == v) << np.uint64(r)
        bits[row, w] = m
    if nrows & 63:
        m = np.uint64(0)
        seg = x[lo + nfull * 64: lo + nrows]
        for r in range(seg.shape[0]):
            m |= np.uint64(seg[r] == v) << np.uint64(r)
        bits[row, nfull] = m


@numba.njit(cache=True, nogil=True)
def _set_bits(x, lo, nrows, bits, first, miss):
    """Set bit r of bit set first + x[lo + r] (miss where x[lo + r] < 0) for r < nrows
    (the sets zeroed), in four runs of whole words taken a row of each at a time: rows of
    one value in a row set bits of one word, each OR waiting for the one before; the four
    runs' ORs go to different words and overlap (one run: a tenth of adult KDB2's fit)."""
    q = (((nrows + 63) >> 6) + 3) >> 2 << 6  # rows per run
    one = np.uint64(1)
    for i in range(q):
        for t in range(4):
            r = t * q + i
            if r < nrows:
                v = x[np.uint64(lo + r)]
                row = miss if v < 0 else first + v
                bits[np.uint64(row), np.uint64(r >> 6)] |= one << np.uint64(r & 63)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def bitmap_kernel(codes_t, y, K, ids, battrs, blen, bcond, off, cards, voff, needmiss,
                   dense, bits, nset, row0, nrows):
    """Count rows [row0, row0+nrows) (at most 64·bits.shape[1]) into the dense blocks `ids`
    (see `BITMAP_MAX_CELLS`) from bit sets of the chunk's rows.

    Bit set rows: [0, V·K) value i = voff[a] + v and class k at i·K + k; [V·K, V·K + V)
    value i; then one per attribute (its value missing, built where ``needmiss``); then one
    per class; the last two are scratch. Attributes with voff[a] < 0 get no value sets.
    ``nset`` receives each set's popcount (empty sets are skipped). Pairs for which a
    pass over the rows off an attribute's most frequent value costs less
    (`_skip_routes`) are counted that way (`_skip_count`)."""
    d = codes_t.shape[0]
    V = voff[d]
    VK = V * K
    miss0 = VK + V
    cls0 = miss0 + d
    t0 = cls0 + K
    t1 = t0 + 1
    nw = (nrows + 63) >> 6
    ycode = np.empty(1, dtype=y.dtype)
    for k in range(K):
        ycode[0] = k
        _equal_bits(y, row0, nrows, ycode[0], bits, cls0 + k)
    code = np.empty(1, dtype=codes_t.dtype)
    for a in range(d):
        base = voff[a]
        ca = cards[a] if base >= 0 else 0
        x = codes_t[a]
        if ca <= _COMPARE_MAX:  # (one call site: numba copies an inlined body per site)
            for v in range(-1 if needmiss[a] else 0, ca):
                code[0] = v
                at = miss0 + a if v < 0 else VK + base + v
                _equal_bits(x, row0, nrows, code[0], bits, at)
            continue
        for i in range(VK + base, VK + base + ca):
            for w in range(nw):
                bits[i, w] = 0
        for w in range(nw):
            bits[miss0 + a, w] = 0
        _set_bits(x, row0, nrows, bits, VK + base, miss0 + a)
    for i in range(V):
        s = _and_count(bits, VK + i, VK + i, nw)
        nset[VK + i] = s
        for k in range(K):
            nset[i * K + k] = _and_into(bits, i * K + k, VK + i, cls0 + k, nw) if s else 0
    full = np.zeros(d, dtype=np.bool_)  # a's value sets cover every row of the chunk
    for a in range(d):
        if voff[a] >= 0:
            tot = 0  # (a loop: numba's ndarray.sum is a compile of its own)
            for i in range(VK + voff[a], VK + voff[a] + cards[a]):
                tot += nset[i]
            full[a] = tot == nrows
    tg = np.empty(max(V, 1), dtype=np.int64)
    lead, top = _skip_routes(ids, battrs, blen, bcond, cards, voff, nset, K, nw, nrows,
                             full)
    for q in range(ids.shape[0]):
        if lead[q] >= 0:
            continue  # (`_skip_count`, below)
        b = ids[q]
        l = blen[b]
        c = bcond[b]
        o = off[b]
        a0 = battrs[b, 0]
        c0 = battrs[b, l]
        for v0 in range(c0):
            for k in range(K):
                src = (voff[a0] + v0) * K + k
                m = nset[src]
                if m and c >= 0:  # rows whose attribute c is missing
                    m = _and_into(bits, t0, src, miss0 + c, nw)
                    src = t0
                if m == 0:
                    continue
                if l == 1:
                    dense[o + v0 * K + k] += m
                    continue
                a1 = battrs[b, 1]
                c1 = battrs[b, l + 1]
                # l = 2: the last attribute's cells once; l = 3: per value of the middle
                # one, rows narrowed to it first (one `_add_cells` site, see above)
                last = a1 if l == 2 else battrs[b, 2]
                cl = c1 if l == 2 else battrs[b, 5]
                for v1 in range(1 if l == 2 else c1):
                    s1, m1, cell = src, m, o + v0 * c1 * K + k
                    if l == 3:
                        j1 = VK + voff[a1] + v1
                        if nset[j1] == 0:
                            continue
                        s1, m1 = t1, _and_into(bits, t1, src, j1, nw)
                        cell = o + (v0 * c1 + v1) * cl * K + k
                    if m1:
                        _add_cells(bits, s1, m1, VK + voff[last], cl, nw, nset, full[last],
                                   dense, cell, K, tg)
    _skip_count(codes_t, y, K, ids, lead, top, battrs, off, voff, nset, bits, dense, row0,
                nrows)


SKIP_ROW_WORDS = 16
"""A listed row's cost in bit-set words ANDed and counted (`_skip_routes`' estimate;
measured on adult's 78 pairs, 24,421 rows: 4 -> 0.79 ms, 8 0.58, 12-16 0.52, 28 0.57,
none taken 1.09 — against 0.55 ms of bit sets + 0.43 of row loop for the 17 pairs above
the cap before)."""


@numba.njit(cache=True, nogil=True)
def _skip_routes(ids, battrs, blen, bcond, cards, voff, nset, K, nw, nrows, full):
    """lead[q]: the attribute of block ids[q] whose most frequent value's rows are left
    out of a pass over the chunk's rows (`_skip_count`), or −1: counted from the bit sets.
    A two-attribute block without condition takes the pass when its rows off the value
    (`SKIP_ROW_WORDS` each) cost less than its ANDs (nw words per source set and value
    set): an attribute with one dominant value (adult's native-country, capital-gain)
    leaves a tenth of the rows to count, where the bit sets cost the same whatever the
    values' frequencies."""
    lead = np.full(ids.shape[0], -1, dtype=np.int64)
    d = voff.shape[0] - 1
    VK = voff[d] * K
    top = np.zeros(d, dtype=np.int64)
    rest = np.full(d, nrows, dtype=np.int64)
    for a in range(d):
        if voff[a] >= 0:
            best = 0
            for v in range(cards[a]):
                c = nset[VK + voff[a] + v]
                if c > best:
                    best = c
                    top[a] = v
            rest[a] = nrows - best
    for q in range(ids.shape[0]):
        b = ids[q]
        if blen[b] != 2 or bcond[b] >= 0:
            continue
        a0, a1 = battrs[b, 0], battrs[b, 1]
        a = a0 if rest[a0] <= rest[a1] else a1
        c0, c1 = battrs[b, 2], battrs[b, 3]
        skip = SKIP_ROW_WORDS * rest[a] + 2 * c0 * c1 * K  # (cells merged from scratch)
        if skip >= nw * c0 * K * c1:
            continue  # (more than every AND it could spare)
        sources = 0
        for i in range(voff[a0] * K, (voff[a0] + c0) * K):
            sources += nset[i] > 0
        targets = -1 if full[a1] else 0
        for i in range(VK + voff[a1], VK + voff[a1] + c1):
            targets += nset[i] > 0
        if skip < nw * sources * max(targets, 0):
            lead[q] = a
    return lead, top


@numba.njit(cache=True, nogil=True)
def _skip_count(codes_t, y, K, ids, lead, top, battrs, off, voff, nset, bits, dense, row0,
                nrows):
    """Count the blocks with lead[q] ≥ 0 (`_skip_routes`) over rows [row0, row0 + nrows)
    from the rows whose lead attribute L is off its value top[L], listed once per lead
    with their (L, class) part of a cell, L·K + y (L missing: |L|), then four blocks of
    that lead to a pass (`_skip_blocks`)."""
    skipped = np.flatnonzero(lead >= 0)
    if skipped.shape[0] == 0:
        return
    VK = voff[codes_t.shape[0]] * K
    rows = np.empty(nrows, dtype=np.int64)
    ly = np.empty(nrows, dtype=np.int64)
    buf = np.empty(13, dtype=np.int64)  # (`_skip_blocks`' blocks, other attributes, starts)
    size = 0
    for q in skipped:
        b = ids[q]
        size = max(size, (battrs[b, 2] + 1) * (battrs[b, 3] + 1) * K)
    scratch = np.empty(8 * size, dtype=np.int32)
    for a in range(codes_t.shape[0]):
        m, ng, cl = -1, 0, 0
        for q in skipped:
            if lead[q] != a:
                continue
            b = ids[q]
            if m < 0:  # (the rows of a are listed at its first block)
                cl = battrs[b, 2] if battrs[b, 0] == a else battrs[b, 3]
                m = _off_rows(codes_t[a], y, bits, VK + voff[a] + top[a], cl, K, row0,
                              nrows, rows, ly)
            buf[ng] = b
            ng += 1
            if ng == 4:
                _skip_blocks(codes_t, a, buf, ng, top[a], cl, battrs, off, voff, nset, K,
                             dense, rows, ly, m, scratch)
                ng = 0
        if ng:
            _skip_blocks(codes_t, a, buf, ng, top[a], cl, battrs, off, voff, nset, K, dense,
                         rows, ly, m, scratch)


@numba.njit(cache=True, nogil=True)
def _off_rows(x, y, bits, vset, cl, K, row0, nrows, rows, ly):
    """rows[:m] = the rows r (from row0) outside bit set `vset` (those of x's skipped
    value: the set bits of its complement, a word at a time) and ly[:m] their x·K + y (a
    missing x as cl); returns m."""
    m = 0
    nw = (nrows + 63) >> 6
    for w in range(nw):
        z = ~bits[vset, w]
        if w == nw - 1 and nrows & 63:
            z &= (np.uint64(1) << np.uint64(nrows & 63)) - np.uint64(1)
        while z:
            rows[m] = row0 + w * 64 + np.int64(_trailing_zeros(z))
            m += 1
            z &= z - np.uint64(1)
    for t in range(m):
        v = x[np.uint64(rows[t])]
        ly[t] = (v if v >= 0 else cl) * K + y[np.uint64(rows[t])]
    return m


@numba.njit(cache=True, nogil=True)
def _skip_blocks(codes_t, a, buf, ng, s, cl, battrs, off, voff, nset, K, dense, rows, ly, m,
                 scratch):
    """Blocks buf[:ng] (1–4) of lead attribute a over the listed rows: a scratch table
    per block, (other value + 1, L, class) — slot 0 for a missing other value, L's |L|
    for a missing L, so each row's cell is (v + 1)·stride + ly without a test — counted
    in one pass (four blocks: four increments per row, independent), then merged; buf[4:8]
    and buf[8:13] receive the other attributes and where each table starts."""
    stride = (cl + 1) * K
    group, other, at = buf[:4], buf[4:8], buf[8:13]
    at[0] = 0
    for g in range(4):
        b = group[min(g, ng - 1)]  # (fewer than four: the last block's rows again, unused)
        other[g] = battrs[b, 1] if battrs[b, 0] == a else battrs[b, 0]
        co = battrs[b, 3] if battrs[b, 0] == a else battrs[b, 2]
        at[g + 1] = at[g] + (co + 1) * stride
    h = at[4]  # (odd rows count into a second copy: half the waits on a cell's last)
    scratch[:2 * h] = 0
    x0, x1 = codes_t[other[0]], codes_t[other[1]]
    x2, x3 = codes_t[other[2]], codes_t[other[3]]
    o0, o1, o2, o3 = at[0] + stride, at[1] + stride, at[2] + stride, at[3] + stride
    if ng == 1:
        for t in range(m):
            r = np.uint64(rows[t])
            scratch[np.uint64((t & 1) * h + o0 + x0[r] * stride + ly[t])] += 1
    else:
        for t in range(m):
            r = np.uint64(rows[t])
            lt = ly[t] + (t & 1) * h
            scratch[np.uint64(o0 + x0[r] * stride + lt)] += 1
            scratch[np.uint64(o1 + x1[r] * stride + lt)] += 1
            scratch[np.uint64(o2 + x2[r] * stride + lt)] += 1
            scratch[np.uint64(o3 + x3[r] * stride + lt)] += 1
    for i in range(h):
        scratch[i] += scratch[h + i]
    for g in range(ng):
        b = group[g]
        first = battrs[b, 0] == a
        co = battrs[b, 3] if first else battrs[b, 2]
        o = other[g]
        for vo in range(co):
            for k in range(K):
                src = at[g] + (vo + 1) * stride + k
                rest = nset[(voff[o] + vo) * K + k] - scratch[src + cl * K]
                for vl in range(cl):
                    c = np.int64(scratch[src + vl * K])
                    cell = (vl * co + vo) if first else (vo * cl + vl)
                    dense[off[b] + cell * K + k] += c
                    rest -= c  # (0 at vl = s: those rows are not listed)
                dense[off[b] + ((s * co + vo) if first else (vo * cl + s)) * K + k] += rest


@numba.njit(cache=True, nogil=True)
def totals_kernel(ids, kind, off, vbase, bsize, dense, skeys, svals, out):
    """out[b, y] = the sum of block b's cells of class y (the class is innermost in a
    block, so a cell's class is its position mod K = out.shape[1]), for each b in ids."""
    K = out.shape[1]
    for q in range(ids.shape[0]):
        b = ids[q]
        for y in range(K):
            out[b, y] = 0
        if kind[b] == KIND_DENSE:
            for i in range(bsize[b]):
                out[b, i % K] += dense[off[b] + i]
        elif kind[b] == KIND_SPARSE:
            i = first_at_least(skeys, vbase[b])
            hi = vbase[b] + bsize[b]
            while i < skeys.shape[0] and skeys[i] < hi:
                out[b, (skeys[i] - vbase[b]) % K] += svals[i]
                i += 1
