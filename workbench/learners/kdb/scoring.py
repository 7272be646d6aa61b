"""Classification of the KDB family (SPEC §4): a fitted model's count tables (`tables`)
as flat arrays, tables of factors P(x_i | π, y), direct tables indexed by the parent
values, and the compiled pass that multiplies a row's factors (`Scorer`)."""

from __future__ import annotations

import math
from collections import namedtuple
from typing import NamedTuple

import numpy as np

from workbench.jit import numba
from workbench.learners.ande.estimates import m_estimate
from workbench.learners.kdb.tables import AttributeTable, joined, starts

_NONE = np.zeros(0, dtype=np.int64)
_NO_FACTORS = np.zeros((0, 0, 0))
FACTOR_TABLE_CELLS = 1 << 20
FACTOR_TABLE_RATIO = 8
FACTOR_TABLE_SMALL = 4096
"""An attribute's factors P(x_i | π, y) are tabulated for every seen parent configuration
and child value (`_flat`) when that table has at most `FACTOR_TABLE_CELLS` cells and at
most `FACTOR_TABLE_RATIO` times the cells its counts hold, plus `FACTOR_TABLE_SMALL` — or
the rows being classified are enough to pay for filling it (a row's factors from the
counts cost about (2K + 20)/3 cells' filling, as for `DIRECT_CELLS`: adult KDB5
classification 8.0 -> 6.5 ms) —: classification then reads one value per row and class
instead of two counts and a division. A sparser table (deep parent lists over
many-valued attributes, an ID-like parent: most configurations seen with one child value)
would cost more to fill than it saves for a few rows; its counts are read per row. The
factors are the same either way."""


Lookup = namedtuple("Lookup", ["cards", "par_at", "parents", "off_at", "offsets", "pk",
                               "pk_at", "pk_len", "pp", "pp_at", "pp_len"])
"""Every table's parent configurations as the kernels search them (`Scorer`): the
attributes' cardinalities; each table's parents (from par_at[a]) and depth offsets (from
off_at[a]); each depth's pair keys pk[pk_at[e]: + pk_len[e]] and direct index
pp[pp_at[e]: + pp_len[e]] (depth j of attribute a is entry e = par_at[a] + j − 1).
The kernels take it whole and its arrays out of it once (a read from a tuple in a loop
costs a reference count)."""

Counts = namedtuple("Counts", ["keys", "counts", "start", "cfg", "count_at", "m"])
"""The counts of the attributes whose factors are computed per row (`_ratio`), end to end:
sorted cell keys and their counts, where each configuration's cells start, #(g, y), and
per attribute where its three begin (count_at[a]); and the m of the m-estimate."""

Factors = namedtuple("Factors", ["fac_at", "dir_at", "fa", "unseen_at", "ones_at"])
"""The factor rows a row's product reads (`Scorer._with_direct`): fa, with each
attribute's tabulated factors at fac_at[a] and direct table at dir_at[a] (−1: none), the
unseen rows from unseen_at and a row of ones at ones_at."""

Prefixes = namedtuple("Prefixes", ["pre_at", "pre_h", "pre_local", "pre_gid"])
"""The prefix tables (`_prefix_fill`): attribute a's from pre_at[a] over its first
pre_h[a] parents (−1 / 0: none)."""


class _Flat(NamedTuple):
    """Every table's counts as the kernels read them, end to end (`_flat`)."""

    keys: np.ndarray  # the counted cells' sorted keys (g · |X_i| + x) · K + y
    counts: np.ndarray  # their counts (float64)
    start: np.ndarray  # per configuration (+ 1 per table) where its cells start
    cfg: np.ndarray  # #(g, y) dense (configurations · K per table)
    count_at: np.ndarray  # (tables, 3): where each table's keys, starts and cfg begin
    factors: np.ndarray  # the tabulated tables' factors (configurations, |X_i|, K) each
    fac_at: np.ndarray  # where each table's factors begin (−1: not tabulated)
    cells: np.ndarray  # each table's configurations · |X_i| · K


def _flat(tables: list[AttributeTable], K: int, m: float, rows: int = 0) -> _Flat:
    """The tables' counts as arrays for the kernels, in one compiled call (`_flat_arrays`):
    the counted cells by configuration (sorted keys and where each configuration's
    start) and the configuration counts as a dense array, for `_ratio`, and the factors
    of every configuration and child value where tabulated (`FACTOR_TABLE_CELLS`, for
    `rows` rows to classify), all with the m-estimate's `m`."""
    configs = np.array([int(t.offsets[-1]) + (len(t.pair_keys[-1]) if t.pair_keys else 1)
                        for t in tables], dtype=np.int64)
    card = np.array([t.card for t in tables], dtype=np.int64)
    n_keys = np.array([len(t.cell_keys) for t in tables], dtype=np.int64)
    cells = configs * card * K
    tabulate = (cells <= FACTOR_TABLE_CELLS) & (
        (cells <= FACTOR_TABLE_RATIO * n_keys + FACTOR_TABLE_SMALL)
        | (3 * cells <= (2 * K + 20) * rows))
    keys = joined([t.cell_keys for t in tables])
    return _Flat(keys, *_flat_arrays(card, K, configs, tabulate, starts(n_keys), keys,
                                     joined([t.cell_counts for t in tables]),
                                     starts([len(t.cfg_keys) for t in tables]),
                                     joined([t.cfg_keys for t in tables]),
                                     joined([t.cfg_counts for t in tables]), m), cells)


@numba.njit(cache=True, nogil=True)
def _lower_bound(keys, lo, size, q):
    """The number of keys[lo : lo + size] (sorted) below q (`np.searchsorted`, left)."""
    a, b = 0, size
    while a < b:
        m = (a + b) >> 1
        if keys[lo + m] < q:
            a = m + 1
        else:
            b = m
    return a


@numba.njit(cache=True, nogil=True, inline="always")
def _ratio(g, v, card, K, keys, counts, start, cfg, m, out, i):
    """out[i, y] = (#(g, v, y) + m/|X_i|) / (#(g, y) + m) for configuration g ≥ 0 and
    child value v ≥ 0 (0 where a cell was not counted) — the operations, in their order,
    of the tables' numpy formula. Configuration g's counted cells are keys[start[g] :
    start[g + 1]] (sorted): one binary search among them finds the first of the K keys of
    (g, v), a forward scan the others; cfg holds #(g, y) densely."""
    share = m / card
    q0 = (g * card + v) * K
    lo, hi = start[g], start[g + 1]
    a = lo + _lower_bound(keys, lo, hi - lo, q0)
    for y in range(K):
        while a < hi and keys[a] < q0 + y:
            a += 1
        c = 0.0
        if a < hi and keys[a] == q0 + y:
            c = counts[a]
        out[i, y] = m_estimate(c, share, cfg[g * K + y], m)


@numba.njit(cache=True, nogil=True)
def _flat_arrays(card, K, configs, tabulate, key_at, cell_keys, cell_counts, cfg_at,
                 cfg_keys, cfg_counts, m):
    """`_flat`'s arrays, table after table: the cell counts as float64, where each
    configuration's cells start among the sorted cell keys, #(g, y) dense (configs · K),
    where each table's begin, and the factors of the tables to `tabulate`
    (`_all_ratios`) with where each begins (−1: none)."""
    T = card.shape[0]
    count_at = np.zeros((T, 3), dtype=np.int64)
    fac_at = np.full(T, -1, dtype=np.int64)
    n_start, n_cfg, n_fac = 0, 0, 0
    for a in range(T):
        count_at[a, 0] = key_at[a]
        count_at[a, 1] = n_start
        count_at[a, 2] = n_cfg
        n_start += configs[a] + 1
        n_cfg += configs[a] * K
        if tabulate[a]:
            fac_at[a] = n_fac
            n_fac += configs[a] * card[a] * K
    counts = np.empty(cell_keys.shape[0])
    start = np.zeros(n_start, dtype=np.int64)
    cfg = np.zeros(n_cfg)
    factors = np.empty(n_fac)
    for a in range(T):
        k0, k1, s0, c0 = key_at[a], key_at[a + 1], count_at[a, 1], count_at[a, 2]
        ck = card[a] * K
        for i in range(k0, k1):
            counts[i] = cell_counts[i]
            start[s0 + cell_keys[i] // ck + 1] += 1
        for g in range(configs[a]):
            start[s0 + g + 1] += start[s0 + g]
        for i in range(cfg_at[a], cfg_at[a + 1]):
            cfg[c0 + cfg_keys[i]] = cfg_counts[i]
        if tabulate[a]:
            f0 = fac_at[a]
            _all_ratios(card[a], K, configs[a], cell_keys[k0:k1], counts[k0:k1],
                        cfg[c0:c0 + configs[a] * K], m, factors[f0:f0 + configs[a] * ck])
    return counts, start, cfg, count_at, factors, fac_at


@numba.njit(cache=True, nogil=True)
def _all_ratios(card, K, configs, keys, counts, cfg, m, flat):
    """flat[(g · |X_i| + v) · K + y] = `_ratio` of every configuration g and child value v
    (the tabulated factors), in O(cells + keys): every cell first as never counted,
    (0 + m/|X_i|) / (#(g, y) + m), then the counted ones from the sorted cell keys."""
    share = m / card
    zero = np.empty(K)
    for g in range(configs):
        for y in range(K):  # (one division per configuration and class, not per cell)
            zero[y] = m_estimate(0.0, share, cfg[g * K + y], m)
        for v in range(card):
            at = (g * card + v) * K
            for y in range(K):
                flat[at + y] = zero[y]
    for i in range(keys.shape[0]):
        k = keys[i]
        g = k // K // card
        flat[k] = m_estimate(counts[i], share, cfg[g * K + k % K], m)


_TINY = 2.0 ** -600
_LIFT = 2.0 ** 600
_LIFT_EVERY = 4
M_MIN = 2.0 ** -20
"""The smallest m of the m-estimate KDB takes. Its products are kept in linear space with
one power of two per row (`_products`): a class far below the row's best can underflow
and is lost if later attributes would bring it back. With m = 1 one attribute moves a
class against another by at most 2^84; m = 2^-20 allows 2^104, a smaller m far more (a
test value unseen with a class gets (m/|X_i|) / (#(π, y) + m)) and the products would no
longer equal the log-space computation."""


def lift_every(m: float) -> int:
    """After how many attributes `_products` checks its products for underflow with the
    m-estimate's m: with m = 1 every factor lies in (2^-84, 1] (1/|X_i| over a count + 1),
    so 4 attributes take a product lifted to at least 2^-600 no lower than 2^-936, a normal
    double. A smaller m lowers that bound by at most m ((m/|X_i|) / (#(π, y) + m) ≥ m ·
    2^-84 for m ≤ 1; a larger m only raises it), so fewer attributes go between checks
    (3 at m = `M_MIN`)."""
    if not m >= M_MIN:
        raise ValueError(f"the m-estimate's m must be at least 2^-20, got {m!r}")
    bits = 84 + max(0, math.ceil(-math.log2(m)))
    return max(1, (_LIFT_EVERY * 84) // bits)
_ROWS = 2048


@numba.njit(cache=True, nogil=True, inline="always")
def _advance(local, alive, gid, i, idx, found, base, backoff):
    """Row i's search one depth on: found → its id there (global: base + idx); else it
    stays at the last depth found (with `backoff`) or has none (−1)."""
    local[i] = idx if found else 0
    alive[i] = found
    if found:
        gid[i] = base + idx
    elif not backoff:
        gid[i] = -1


@numba.njit(cache=True, nogil=True, inline="always")
def _mixed_index(T, parents, pa, h, cards, nb, local, alive):
    """local[i] = the mixed radix of row i's values of the parents parents[pa : pa + h]
    (the first most significant), alive[i] = all of them present; parent by parent over
    the rows (loops the compiler vectorises). Returns whether every row has them all."""
    for i in range(nb):
        local[i] = 0
        alive[i] = True
    for j in range(h):
        p = parents[pa + j]
        rp = cards[p]
        Tp = T[p]
        for i in range(nb):
            v = Tp[i]
            local[i] = local[i] * rp + v
            alive[i] = alive[i] and v >= 0
    every = True
    for i in range(nb):
        every = every and alive[i]
    return every


@numba.njit(cache=True, nogil=True)
def _direct_rows(T, parents, cards, c, pa, da, cap, ca, K, ones_at, nb, local, alive, fi):
    """`_products`' factor rows of child c for the block's nb rows in its direct table (at
    da), from the mixed-radix index of the row's first `cap` parent values, into fi: the
    ones for a missing child, −1 when a parent value is missing (searched by `_walk_rows`);
    True if some row is."""
    if cap <= 2:  # (one or two parents in registers; selects, no branches)
        p0 = parents[pa] if cap > 0 else c
        p1 = parents[pa + 1] if cap > 1 else c
        r1 = cards[p1] if cap > 1 else 0
        m0 = 1 if cap > 0 else 0
        nwalk = 0
        Tc, T0, T1 = T[c], T[p0], T[p1]  # (row views: the loop vectorises)
        for i in range(nb):
            x = Tc[i]
            v0 = T0[i] * m0
            v1 = T1[i] if cap > 1 else 0
            q = da + ((v0 * r1 + v1 if cap > 1 else v0) * ca + x) * K
            q = -1 if (v0 | v1) < 0 else q
            q = ones_at if x < 0 else q
            nwalk += q < 0
            fi[i] = q
        return nwalk > 0
    else:
        _mixed_index(T, parents, pa, cap, cards, nb, local, alive)
        nwalk = 0
        Tc = T[c]
        for i in range(nb):  # (selects, no branches)
            x = Tc[i]
            q = da + (local[i] * ca + x) * K if alive[i] else -1
            q = ones_at if x < 0 else q
            nwalk += q < 0
            fi[i] = q
        return nwalk > 0


@numba.njit(cache=True, nogil=True)
def _walk_rows(T, lk, pre, a, cap, backoff, nb, local, gid, alive):
    """`_products`' search for the configuration of attribute a's first `cap` parents of
    the block's nb rows, depth by depth (the first ones at once through its prefix table,
    if any): each row's global id into gid (−1: none seen; with `backoff` the deepest seen
    prefix), through the depth's direct index where it has one, else binary search."""
    cards, par_at, parents, off_at, offsets, pk, pk_at, pk_len, pp, pp_at, pp_len = lk
    pre_at, pre_h, pre_local, pre_gid = pre
    pa = par_at[a]
    first = 1
    h = pre_h[a]
    # the first h depths at once: the prefix table (`_prefix_fill`); a block
    # with a parent value missing among them walks from depth 1
    if h > 0 and _mixed_index(T, parents, pa, h, cards, nb, local, alive):
        po = pre_at[a]
        for i in range(nb):
            q = po + local[i]
            lo = pre_local[q]
            gid[i] = pre_gid[q]
            alive[i] = lo >= 0
            local[i] = lo if lo >= 0 else 0
        first = h + 1
    if first == 1:
        for i in range(nb):
            local[i] = 0
            gid[i] = 0
            alive[i] = True
    for j in range(first, cap + 1):
        p = parents[pa + j - 1]
        cp = cards[p]
        size = pk_len[pa + j - 1]
        plen = pp_len[pa + j - 1]
        pat = pp_at[pa + j - 1]
        kat = pk_at[pa + j - 1]
        base = offsets[off_at[a] + j]
        Tp = T[p]
        if size > 0 and plen > 0:  # through the depth's direct index
            for i in range(nb):
                xp = Tp[i]
                idx = pp[pat + min(max(local[i] * cp + xp, 0), plen - 1)]
                _advance(local, alive, gid, i, idx,
                         alive[i] and xp >= 0 and idx >= 0, base, backoff)
        else:  # by binary search among its keys (none: nothing seen)
            for i in range(nb):
                xp = Tp[i]
                q = local[i] * cp + xp
                found = False
                idx = 0
                if size > 0:
                    idx = min(_lower_bound(pk, kat, size, q), size - 1)
                    found = alive[i] and xp >= 0 and pk[kat + idx] == q
                _advance(local, alive, gid, i, idx, found, base, backoff)


@numba.njit(cache=True, nogil=True, inline="always")
def _block_codes(XT, miss, r0, nb, T):
    """T[v, i] = XT[v, r0 + i], a missing value (< 0) read as miss[v], for i < nb: row
    views, one-dimensional loops the compiler vectorises (indexing the 2-D arrays in
    them costs 2-5x here)."""
    for v in range(XT.shape[0]):
        mv = miss[v]
        src = XT[v, r0:r0 + nb]
        dst = T[v]
        for i in range(nb):
            x = src[i]
            dst[i] = x if x >= 0 else mv


@numba.njit(cache=True, nogil=True)
def _products(XT, miss, caps, backoff, prior, child, card, checks, lk, cn, fx, pre, normalise,
              out):
    """out[r, y] = P(y) · Π over the attributes, in order, of P(x_i | π_i, y) for row r,
    times a power of two common to the row's classes (or divided by the row's sum with
    `normalise`).

    XT: the codes attribute-major (d, n), missing −1, read as miss[v] (the attribute's
    `?` code, or −1: none in training). Blocks of `_ROWS` rows (their products held row
    by row), attribute by attribute: first each row's factor row in `fa` (the direct
    tables, the tabulated factors, one `unseen` row per attribute and a row of ones, end
    to end), then each row's products multiplied by its factor row (contiguous classes);
    rows whose factors are computed from counts are multiplied after. The factor row of a
    row:
    - an attribute with a direct table (dir_at[a] ≥ 0, `_direct_fill`): the one at the
      mixed-radix index of its parent values, unless one of them is missing;
    - else its parent configuration (global id), found depth by depth — the deepest
      prefix of up to caps[a] parents seen in training (with `backoff`; without it the
      full prefix, or none when a parent value along it was not seen), through the
      depth's direct index where it has one, else binary search (`np.searchsorted`,
      clipped to the last key) — read in the attribute's tabulated factors (fac_at[a] ≥
      0), else computed from its counts (`_ratio`); `unseen` for a configuration not
      seen;
    - the ones for a missing value (left out).
    Every factor lies in (2^-84, 1] with m = 1 (1/|X_i| over a count + 1), so lifting a
    row's product by 2^600 (exactly) whenever, after every `_LIFT_EVERY` attributes, its
    largest class is below 2^-600 keeps it from underflowing (`lift_every`: fewer
    attributes for m < 1): checks[a] such checks follow attribute a (`Scorer`)."""
    cards, par_at, parents = lk.cards, lk.par_at, lk.parents
    keys, counts, start, cfg, count_at, mest = cn
    fac_at, dir_at, fa, unseen_at, ones_at = fx
    n, K = out.shape
    m = child.shape[0]
    d = XT.shape[0]
    local = np.empty(_ROWS, dtype=np.int64)
    gid = np.empty(_ROWS, dtype=np.int64)
    # the factor rows of up to `_GROUP` attributes, multiplied in one pass (rows padded:
    # one row's reads of them would map to one cache set at a power-of-two stride)
    FI = np.empty((_GROUP, _ROWS + 8), dtype=np.int64)
    calc = np.empty(_ROWS, dtype=np.bool_)
    alive = np.empty(_ROWS, dtype=np.bool_)
    # the block's codes (missing mapped; rows padded: a power-of-two stride would map every
    # attribute's write of a row to one cache set) and products, row-major: a row's
    # factors are one contiguous run of fa, read once (class-major, a pass per class read
    # every factor row's cache lines again per pass: letter's 26 classes, KDB2 2x slower)
    T = np.empty((d, _ROWS + 24), dtype=XT.dtype)  # (the codes' type: it holds every `?` code)
    Q = np.empty((_ROWS, K))
    f = np.empty((1, K))
    for r0 in range(0, n, _ROWS):
        nb = min(n, r0 + _ROWS) - r0
        _block_codes(XT, miss, r0, nb, T)
        for i in range(nb):
            for y in range(K):
                Q[i, y] = prior[y]
        g = 0  # attributes whose factor rows wait in FI[:g]
        for a in range(m):
            c = child[a]
            pa = par_at[a]
            da = dir_at[a]
            ca = card[a]
            fi = FI[g]
            g += 1
            walk = da < 0
            if da >= 0:  # the mixed-radix index of the row's parent values: its factor row
                walk = _direct_rows(T, parents, cards, c, pa, da, caps[a], ca, K, ones_at, nb,
                                    local, alive, fi)
            if walk:
                _walk_rows(T, lk, pre, a, caps[a], backoff, nb, local, gid, alive)
            fa_a = fac_at[a]
            computed = False
            Tc = T[c]
            for i in range(nb if walk else 0):
                x = Tc[i]
                calc[i] = False
                if x < 0:
                    fi[i] = ones_at
                elif da >= 0 and fi[i] >= 0:
                    continue
                elif gid[i] < 0:
                    fi[i] = unseen_at + a * K
                elif fa_a >= 0:
                    fi[i] = fa_a + (gid[i] * ca + x) * K
                else:  # (from the counts, below)
                    fi[i] = ones_at
                    calc[i] = True
                    computed = True
            if not (computed or checks[a] > 0 or g == _GROUP or a == m - 1):
                continue  # (multiplied with the next attributes', in order)
            _multiply_group(Q, FI, g, nb, fa)
            g = 0
            if computed:
                k0, s0, c0 = count_at[a, 0], count_at[a, 1], count_at[a, 2]
                for i in range(nb):
                    if calc[i]:
                        _ratio(gid[i], T[c, i], ca, K, keys[k0:], counts[k0:], start[s0:],
                               cfg[c0:], mest, f, 0)
                        for y in range(K):
                            Q[i, y] *= f[0, y]
            for _ in range(checks[a]):
                for i in range(nb):
                    top = 0.0
                    for y in range(K):
                        top = max(top, Q[i, y])
                    if top < _TINY:
                        for y in range(K):
                            Q[i, y] *= _LIFT
        for i in range(nb):
            tot = 0.0
            if normalise:
                for y in range(K):
                    tot += Q[i, y]
            for y in range(K):
                out[r0 + i, y] = Q[i, y] / tot if normalise else Q[i, y]




_GROUP = 4


@numba.njit(cache=True, nogil=True)
def _multiply_group(Q, FI, g, nb, fa):
    """Q[i] *= the factor rows FI[0, i], …, FI[g − 1, i] of fa, in that order, for the
    block's nb rows: a row's products read and written once per `_GROUP` attributes, not
    per attribute (adult KDB2: the classification kernel 0.52 -> 0.43 ms)."""
    K = Q.shape[1]
    for i in range(nb):
        if K == 2:  # (a loop of two costs more than its work; the products in registers)
            v0, v1 = Q[i, 0], Q[i, 1]
            for t in range(g):
                o = np.uint64(FI[t, i])  # (≥ 0; unsigned: no wrap-around code per read)
                v0 *= fa[o]
                v1 *= fa[o + np.uint64(1)]
            Q[i, 0], Q[i, 1] = v0, v1
            continue
        for t in range(g):
            o = np.uint64(FI[t, i])
            for y in range(K):
                Q[i, y] *= fa[o + np.uint64(y)]


@numba.njit(cache=True, nogil=True)
def _direct_fill(a, cap, backoff, lk, card, fac_at, factors, unseen, cn, K, out):
    """Attribute a's factors for every combination of its first `cap` parents' values
    (mixed radix, the first parent most significant) and child value: the configuration
    `_products` finds for those values (deepest seen prefix with `backoff`, else the full
    one or none), read as it reads it."""
    cards, par_at, parents, off_at, offsets, pk, pk_at, pk_len, pp, pp_at, pp_len = lk
    keys, counts, start, cfg, count_at, m = cn
    pa = par_at[a]
    P = 1
    for j in range(cap):
        P *= cards[parents[pa + j]]
    digits = np.empty(max(cap, 1), dtype=np.int64)
    zero = np.empty(K)
    for kk in range(P):
        rest = kk
        for j in range(cap - 1, -1, -1):
            cp = cards[parents[pa + j]]
            digits[j] = rest % cp
            rest //= cp
        local = 0
        g = 0
        for j in range(1, cap + 1):
            q = local * cards[parents[pa + j - 1]] + digits[j - 1]
            size = pk_len[pa + j - 1]
            idx = 0
            found = False
            if size > 0 and pp_len[pa + j - 1] > 0:
                idx = pp[pp_at[pa + j - 1] + min(q, pp_len[pa + j - 1] - 1)]
                found = idx >= 0 and q < pp_len[pa + j - 1]
            elif size > 0:
                lo = pk_at[pa + j - 1]
                idx = min(_lower_bound(pk, lo, size, q), size - 1)
                found = pk[lo + idx] == q
            if not found:
                if not backoff:
                    g = -1
                break
            local = idx
            g = offsets[off_at[a] + j] + idx
        ca = card[a]
        at = kk * ca * K
        if g < 0:
            for x in range(ca):
                for y in range(K):
                    out[at + x * K + y] = unseen[a, y]
        elif fac_at[a] >= 0:
            src = fac_at[a] + g * ca * K
            for i in range(ca * K):
                out[at + i] = factors[src + i]
        else:  # every cell as never counted, then the counted ones (as `_all_ratios`)
            k0, s0, c0 = count_at[a, 0], count_at[a, 1], count_at[a, 2]
            share = m / ca
            for y in range(K):
                zero[y] = m_estimate(0.0, share, cfg[c0 + g * K + y], m)
            for x in range(ca):
                for y in range(K):
                    out[at + x * K + y] = zero[y]
            for i in range(start[s0 + g], start[s0 + g + 1]):
                q = keys[k0 + i] - g * ca * K
                out[at + q] = m_estimate(counts[k0 + i], share, cfg[c0 + g * K + q % K], m)


@numba.njit(cache=True, nogil=True)
def _direct_fills(attrs, ats, caps, backoff, lk, card, fac_at, fa, unseen, cn, K):
    """`_direct_fill` of each attribute attrs[i] into fa from ats[i], in one call."""
    for i in range(attrs.shape[0]):
        a = attrs[i]
        _direct_fill(a, caps[a], backoff, lk, card, fac_at, fa, unseen, cn, K, fa[ats[i]:])


@numba.njit(cache=True, nogil=True)
def _prefix_fill(a, h, lk, out_local, out_gid):
    """Attribute a's search (with back-off) through its first h parents for every
    combination of their values (mixed radix, the first parent most significant), as
    `_products` walks it: out_local = the local id at depth h (−1: some depth ≤ h not
    seen), out_gid = the global id of the deepest seen configuration. Depth by depth, each
    combination extends its prefix's state by one step (one lookup per combination and
    depth)."""
    cards, par_at, parents, off_at, offsets, pk, pk_at, pk_len, pp, pp_at, pp_len = lk
    pa = par_at[a]
    loc = np.zeros(1, dtype=np.int64)  # the states at the previous depth
    gid = np.zeros(1, dtype=np.int64)
    for j in range(1, h + 1):
        cp = cards[parents[pa + j - 1]]
        size = pk_len[pa + j - 1]
        plen = pp_len[pa + j - 1]
        kat = pk_at[pa + j - 1]
        pat = pp_at[pa + j - 1]
        base = offsets[off_at[a] + j]
        nl = np.empty(loc.shape[0] * cp, dtype=np.int64)
        ng = np.empty(loc.shape[0] * cp, dtype=np.int64)
        for k in range(loc.shape[0]):
            for v in range(cp):
                e = k * cp + v
                ng[e] = gid[k]
                nl[e] = -1
                if loc[k] < 0:
                    continue
                q = loc[k] * cp + v
                idx = 0
                found = False
                if size > 0 and plen > 0:
                    idx = pp[pat + min(q, plen - 1)]
                    found = idx >= 0 and q < plen
                elif size > 0:
                    idx = min(_lower_bound(pk, kat, size, q), size - 1)
                    found = pk[kat + idx] == q
                if found:
                    nl[e] = idx
                    ng[e] = base + idx
        loc, gid = nl, ng
    out_local[:] = loc
    out_gid[:] = gid


PREFIX_CELLS = 1 << 16
PREFIX_RATIO = 2
"""A walked attribute (no direct table; with back-off) whose first h ≥ 2 parents take at
most `PREFIX_CELLS` value combinations — and at most 1/`PREFIX_RATIO` of the rows to classify —
gets a prefix table (`_prefix_fill`, deepest such h): `_products` finds a row's search
state after h depths with one read instead of h steps, then walks the rest."""

NARROW_RANKS = 1 << 31  # direct indexes of depths with fewer keys are int32 (half the bytes)
DIRECT_CELLS = 1 << 18
DIRECT_SMALL = 4096
DIRECT_TOTAL = 1 << 23
DIRECT_TABULATED = 2
"""An attribute gets a direct table (`_direct_fill`) when its parent-value combinations
(up to the depth cap) × |X_i| × K hold at most `DIRECT_CELLS` cells, all direct tables
together stay within `DIRECT_TOTAL`, and the table pays for itself: it is small
(`DIRECT_SMALL`), or the attribute's factors are not tabulated — a row's then cost a
search among the configuration's counts and K divisions, about (2K + 20)/3 cells'
filling — and the rows being classified are enough (letter's 10,000 test rows fill
106 k-cell tables, splice's 1,595 not its 48 k-cell ones); a tabulated attribute's when
the rows are at least `DIRECT_TABULATED` times its cells (a copy of its factors per
parent-value combination against a walk per row: adult KDB2's 9,408-cell table for
24,421 rows, its classification 1.77 -> 1.66 ms; fewer rows than that and the copy costs
more than the walks it saves). Classification then computes one index from the row's
parent values and reads the factors. A table filled for one call is kept for the next."""


def _varying(tables: list[AttributeTable], every: int
             ) -> tuple[list[AttributeTable], np.ndarray]:
    """The tables whose child takes more than one code, and after each of them how many
    underflow checks `_products` makes (one after every `every` attributes, `lift_every`).
    A constant child's factor is 1 exactly for every row — (#(π, y) + m) / (#(π, y) + m),
    or a missing value's 1 — so
    it is left out (musk1: 87 of 166 attributes after MDL) and the checks that followed
    it follow the last attribute kept before it: the products, lifts included, are the
    bits of multiplying by all of them."""
    kept = [t for t in tables if t.card > 1]
    checks = np.zeros(len(kept), dtype=np.int64)
    last = -1
    for p, t in enumerate(tables):
        last += t.card > 1
        if ((p + 1) % every == 0 or p == len(tables) - 1) and last >= 0:
            checks[last] += 1
    return kept, checks


def _useful_checks(checks: np.ndarray, cards: list[int], K: int, n: float | None,
                   m: float) -> np.ndarray:
    """`checks` without those that provably never lift (`_products`), from a lower bound
    on a row's largest product: its prior ≥ 1/K, and every factor ≥ (m/|X_i|) / (n + m)
    (a count ≥ 0 over a configuration's ≤ n training rows; 1 for a missing value). While
    the bound stays above 2^-599 a check would find the largest class ≥ 2^-600 and change
    nothing, so it is dropped; after a kept one the bound is min(2^-600, bound · 2^600),
    what a lift leaves. The products are the same bits (adult: none of its checks stay;
    three passes over the rows each)."""
    if n is None:
        return checks
    out = checks.copy()
    lb = -math.log2(K)
    for a, c in enumerate(cards):
        lb += math.log2(m / c) - math.log2(n + m)
        for _ in range(int(checks[a])):
            if lb >= -599.0:  # (a bit below 2^-600 spared for the products' roundings)
                out[a] -= 1
            else:
                lb = min(-600.0, lb + 600.0)
    return out


class Scorer:
    """A fitted model's attributes (in product order) as flat arrays for the kernels:
    every table's parents, depth offsets and pair keys / direct indexes end to end (where
    each attribute's start), its counts for `_ratio` (`count_at`: where they start), and
    one array of factor rows (`fa`, laid out at the first classification): the tabulated
    factors (`FACTOR_TABLE_CELLS`; fac_at), a row of unseen factors per attribute, a row
    of ones, then the direct tables filled so far (`DIRECT_CELLS`; dir_at) — every factor
    the m-estimate with `m` (SPEC §4 has m = 1)."""

    def __init__(self, tables: list[AttributeTable], cards: np.ndarray, K: int, cap: int,
                 backoff: bool, rows: int = 0, m: float = 1.0,
                 n_train: float | None = None) -> None:
        self.tables, self.cap, self.m = tables, cap, float(m)
        tables, checks = _varying(tables, lift_every(self.m))
        self.checks = _useful_checks(checks, [t.card for t in tables], K, n_train, self.m)
        flat = _flat(tables, K, self.m, rows)
        m = len(tables)
        self.K = K
        self.caps = np.array([min(cap, len(t.parents)) for t in tables], dtype=np.int64)
        self.backoff = bool(backoff)
        self.cards = np.asarray(cards, dtype=np.int64)
        self.child = np.array([t.child for t in tables], dtype=np.int64)
        self.card = np.array([t.card for t in tables], dtype=np.int64)
        self.fac_at, self.cells = flat.fac_at, flat.cells
        self.tabulated = self.fac_at >= 0
        self.par_at = starts([len(t.parents) for t in tables])
        self.off_at = starts([len(t.offsets) for t in tables])
        self.parents = np.array([p for t in tables for p in t.parents], dtype=np.int64)
        self.offsets = joined([t.offsets for t in tables])
        # every table's depths in turn: depth j of attribute a is entry par_at[a] + j − 1
        pk = [k for t in tables for k in t.pair_keys]
        pp = [_NONE if p is None else p for t in tables
              for p in t.pair_pos + [None] * (len(t.pair_keys) - len(t.pair_pos))]
        self.pk, self.pk_len = joined(pk), np.array([k.size for k in pk], dtype=np.int64)
        # a direct index holds a depth's key ranks (−1: none): int32 unless they need more
        narrow = np.int32 if self.pk_len.max(initial=0) < NARROW_RANKS else np.int64
        self.pp, self.pp_len = joined(pp, narrow), np.array([p.size for p in pp], dtype=np.int64)
        self.pk_at, self.pp_at = starts(self.pk_len)[:-1], starts(self.pp_len)[:-1]
        self._factors = flat.factors  # (into fa, `_with_direct`)
        # (m_estimate(0, m/|X_i|, 0, m): the same two operations, for every table at once)
        self.unseen = np.repeat(((0.0 + self.m / self.card.astype(np.float64))
                                 / (0.0 + self.m))[:, None], K, axis=1).reshape(m, K)
        # every table's counts end to end (read for the attributes not tabulated)
        self.keys, self.counts, self.start, self.cfg = (flat.keys, flat.counts, flat.start,
                                                        flat.cfg)
        self.count_at = flat.count_at
        # every factor row the kernel reads: tabulated factors, unseen, ones, then the
        # direct tables filled so far, as one (dir_at, fa) snapshot (`_with_direct`)
        nf = self._factors.size
        self.unseen_at, self.ones_at = nf, nf + m * K
        card_of, caps = self.cards.tolist(), self.caps.tolist()
        self.direct_cells = np.array(
            [math.prod(card_of[p] for p in t.parents[:caps[a]]) * t.card * K
             for a, t in enumerate(tables)], dtype=np.int64)
        self.lookup = Lookup(self.cards, self.par_at, self.parents, self.off_at, self.offsets,
                             self.pk, self.pk_at, self.pk_len, self.pp, self.pp_at,
                             self.pp_len)
        self.count_tables = Counts(self.keys, self.counts, self.start, self.cfg,
                                   self.count_at, self.m)
        self._state: tuple = (np.full(m, -1, dtype=np.int64), None)
        self._prefix: tuple | None = None

    def _with_direct(self, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """(dir_at, fa) with the direct tables worth filling for `rows` rows to classify
        (`DIRECT_CELLS`), filled now and kept for later calls. The first call lays out fa
        at its full size at once (the factors copied in once, room for its direct
        tables); a later one that adds tables grows it."""
        dir_at, fa = self._state
        total = self.ones_at + self.K if fa is None else int(fa.size)
        new = []
        for a in np.flatnonzero(dir_at < 0):
            c = int(self.direct_cells[a])
            worth = c <= DIRECT_SMALL or (3 * c <= (2 * self.K + 20) * rows
                                          if not self.tabulated[a]
                                          else DIRECT_TABULATED * c <= rows)
            if worth and c <= DIRECT_CELLS and total + c <= DIRECT_TOTAL:
                new.append((a, total))
                total += c
        if fa is not None and not new:
            return dir_at, fa
        grown = np.empty(total)
        if fa is None:
            grown[:self._factors.size] = self._factors
            grown[self.unseen_at:self.ones_at] = self.unseen.reshape(-1)
            grown[self.ones_at:self.ones_at + self.K] = 1.0
        else:
            grown[:fa.size] = fa
        fa = grown
        dir_at = dir_at.copy()
        if new:
            attrs, ats = np.array(new, dtype=np.int64).T.copy()
            _direct_fills(attrs, ats, self.caps, self.backoff, self.lookup, self.card,
                          self.fac_at, fa, self.unseen, self.count_tables, self.K)
            dir_at[attrs] = ats
        self._state = (dir_at, fa)  # (one assignment: a concurrent call sees one or other)
        return dir_at, fa

    def _prefixes(self, rows: int, dir_at: np.ndarray) -> tuple:
        """(pre_at, pre_h, pre_local, pre_gid): the prefix tables (`PREFIX_CELLS`) of the
        attributes without a direct table, made at the first classification and kept."""
        if self._prefix is not None:
            return self._prefix
        m = self.caps.size
        pre_at, pre_h = np.full(m, -1, dtype=np.int64), np.zeros(m, dtype=np.int64)
        plan, total = [], 0
        for a in range(m):
            if dir_at[a] >= 0 or not self.backoff:
                continue
            pa = int(self.par_at[a])
            sizes = np.cumprod(self.cards[self.parents[pa: pa + int(self.caps[a])]])
            h = int(np.count_nonzero(sizes <= min(PREFIX_CELLS, rows // PREFIX_RATIO)))
            if h >= 2:  # (sizes grow with h: the first h fit)
                plan.append((a, h, total, int(sizes[h - 1])))
                total += int(sizes[h - 1])
        pre_local = np.empty(total, dtype=np.int64)
        pre_gid = np.empty(total, dtype=np.int64)
        for a, h, at, size in plan:
            _prefix_fill(a, h, self.lookup, pre_local[at:at + size], pre_gid[at:at + size])
            pre_at[a], pre_h[a] = at, h
        self._prefix = Prefixes(pre_at, pre_h, pre_local, pre_gid)
        return self._prefix

    def products(self, codes_t: np.ndarray, missing_code: np.ndarray, prior: np.ndarray,
                 normalise: bool = False) -> np.ndarray:
        """P(y) · Π_i P(x_i | π_i, y) for the rows of codes_t (d, n: attribute-major,
        missing −1, read as the attribute's `missing_code`), each row times a power of two
        of its own, or divided by its sum with `normalise` (`_products`)."""
        out = np.empty((codes_t.shape[1], self.K))
        dir_at, fa = self._with_direct(codes_t.shape[1])
        _products(codes_t, np.asarray(missing_code, dtype=np.int64), self.caps, self.backoff,
                  prior, self.child, self.card, self.checks, self.lookup, self.count_tables,
                  Factors(self.fac_at, dir_at, fa, self.unseen_at, self.ones_at),
                  self._prefixes(codes_t.shape[1], dir_at), bool(normalise), out)
        return out
