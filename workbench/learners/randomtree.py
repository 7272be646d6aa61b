"""Weka's RandomTree, reproduced bit for bit (SPEC §2 RF-3 … RF-9), as numba kernels.

A tree is grown depth-first from an ordered list of (row, weight) entries with Java's
RNG (`jrandom`): at each node attributes are drawn from one shared window until at least
K were tried and one had information gain > 1e-6; nominal attributes split multiway,
numeric ones at a midpoint; an instance with a missing value goes down every branch with
the branch's proportion as weight. Every sum runs left to right in the order SPEC states,
and numeric attributes re-order the node's list with Weka's quicksort, so the trees — and
the probabilities — are the same doubles as Weka 3.6.14's.

A grown tree is a set of flat arrays (`Tree`); `predict_tree` walks them without recursion
(an explicit stack keeps the nested sums of missing-value branches in Weka's order).

``old_rules`` switches on Weka 3.5.7's rules 3–6 of RF-V: gain > 0 instead of > 1e-6,
x·ln x = 0 below 1e-6, the plain midpoint as threshold, and each attribute's own instance
order sorted once at the root (3.5.7's quicksort; nominal attributes: bag order, missing
last), restricted to each node's instances. That variant is statistically, not bitwise,
reproducible (SPEC: Java's and C's logarithms may differ in the last bit).
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass

from workbench.jit import numba
import numpy as np

from workbench.data.dataset import Dataset
from workbench.learners.jrandom import (
    java_string_hash,
    next_int_bound,
    seed_state,
)

DBL_MAX = 1.7976931348623157e308
LN2 = 0.6931471805599453
GAIN_EPS = 1e-6

KIND_EMPTY, KIND_LEAF, KIND_SPLIT = -1, 0, 1

_BRANCHES = np.int64(2)
"""A numeric split's branches (int64, not a literal 2: the helpers are compiled once for
both kinds of split, `workbench.jit.ZERO`)."""


# ----- entropies (RF-5 G) ---------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _lnf(x: float, old_rules: bool) -> float:
    if x <= 0.0 or (old_rules and x < 1e-6):
        return 0.0
    return x * math.log(x)


@numba.njit(cache=True, nogil=True)
def _in_bits(nats, tot):
    """Σ-weighted nats over a table of total weight `tot` as bits per unit weight (0 for
    an empty table, as Weka's ContingencyTables)."""
    return 0.0 if abs(tot) < 1e-6 else nats / (tot * LN2)


@numba.njit(cache=True, nogil=True)
def _h_cols(T, nb, C, old_rules):
    """Entropy of the class distribution (the column sums of T)."""
    acc, tot = 0.0, 0.0
    for j in range(C):
        s = 0.0
        for b in range(nb):
            s += T[b, j]
        acc -= _lnf(s, old_rules)
        tot += s
    return _in_bits(acc + _lnf(tot, old_rules), tot)


@numba.njit(cache=True, nogil=True)
def _h_rows(T, nb, C, old_rules):
    """Entropy of the class conditioned on the rows (branches) of T."""
    acc, tot = 0.0, 0.0
    for b in range(nb):
        r = 0.0
        for j in range(C):
            acc += _lnf(T[b, j], old_rules)
            r += T[b, j]
        acc -= _lnf(r, old_rules)
        tot += r
    return _in_bits(-acc, tot)


@numba.njit(cache=True, nogil=True)
def _proportions(T, nb, C, P):
    """P_b = row sums of T, normalised (1/nb each when the total is ≈ 0)."""
    tot = 0.0
    for b in range(nb):
        r = 0.0
        for j in range(C):
            r += T[b, j]
        P[b] = r
        tot += r
    if abs(tot) < 1e-6:
        for b in range(nb):
            P[b] = 1.0 / nb
    else:
        for b in range(nb):
            P[b] = P[b] / tot


# ----- Weka's quicksort on a permutation (RF-9) ----------------------------------------------
@numba.njit(cache=True, nogil=True)
def _cas(keys, perm, p, q):
    if keys[perm[p]] > keys[perm[q]]:
        t = perm[p]
        perm[p] = perm[q]
        perm[q] = t


@numba.njit(cache=True, nogil=True)
def weka_quicksort(keys, perm, stack):
    """Sort `perm` (0..len−1 initially) by ``keys[perm[·]]`` exactly as Weka 3.6 does;
    `stack` is int64 scratch of size ≥ 4·len + 16."""
    sp = 0
    stack[0] = 0
    stack[1] = perm.shape[0] - 1
    sp = 2
    while sp > 0:
        hi = stack[sp - 1]
        lo = stack[sp - 2]
        sp -= 2
        size = hi - lo + 1
        if size <= 1:
            continue
        if size == 2:
            _cas(keys, perm, lo, hi)
            continue
        if size == 3:
            _cas(keys, perm, lo, lo + 1)
            _cas(keys, perm, lo, hi)
            _cas(keys, perm, lo + 1, hi)
            continue
        c = (lo + hi) // 2
        _cas(keys, perm, lo, c)
        _cas(keys, perm, lo, hi)
        _cas(keys, perm, c, hi)
        t = perm[c]
        perm[c] = perm[hi - 1]
        perm[hi - 1] = t
        pivot = keys[perm[hi - 1]]
        i = lo
        j = hi - 1
        while True:
            i += 1
            while keys[perm[i]] < pivot:
                i += 1
            j -= 1
            while keys[perm[j]] > pivot:
                j -= 1
            if i >= j:
                break
            t = perm[i]
            perm[i] = perm[j]
            perm[j] = t
        t = perm[i]
        perm[i] = perm[hi - 1]
        perm[hi - 1] = t
        stack[sp] = lo
        stack[sp + 1] = i - 1
        stack[sp + 2] = i + 1
        stack[sp + 3] = hi
        sp += 4


@numba.njit(cache=True, nogil=True)
def weka357_quicksort(keys, perm, stack):
    """Weka 3.5.7's quicksort of `perm` by ``keys[perm[·]]`` (RF-V rule 6)."""
    stack[0] = 0
    stack[1] = perm.shape[0] - 1
    sp = 2
    while sp > 0:
        hi = stack[sp - 1]
        lo = stack[sp - 2]
        sp -= 2
        if lo >= hi:
            continue
        pivot = keys[perm[(lo + hi) // 2]]
        i = lo
        j = hi
        while i < j:
            while keys[perm[i]] < pivot and i < j:
                i += 1
            while keys[perm[j]] > pivot and i < j:
                j -= 1
            if i < j:
                t = perm[i]
                perm[i] = perm[j]
                perm[j] = t
                i += 1
                j -= 1
        if i == j and keys[perm[j]] > pivot:
            j -= 1
        stack[sp] = lo
        stack[sp + 1] = j
        stack[sp + 2] = j + 1
        stack[sp + 3] = hi
        sp += 4


# ----- evaluating one attribute on a node's list (RF-5) -----------------------------------------
@numba.njit(cache=True, nogil=True)
def _eval_nominal(X, y, att, nb, C, rows, wts, off, n, T, P):
    for b in range(nb):
        for j in range(C):
            T[b, j] = 0.0
    first_missing = -1
    for p in range(off, off + n):
        v = X[rows[p], att]
        if np.isnan(v):
            if first_missing < 0:
                first_missing = p
            continue
        T[int(v), y[rows[p]]] += wts[p]
    _proportions(T, nb, C, P)
    if first_missing >= 0:
        for p in range(first_missing, off + n):
            if np.isnan(X[rows[p], att]):
                cls = y[rows[p]]
                for b in range(nb):
                    T[b, cls] += P[b] * wts[p]


Sorting = namedtuple("Sorting", ["keys", "perm", "tmp_r", "tmp_w", "qstack"])
"""Work arrays for sorting a node's list of n entries: keys, permutation, rows, weights and
the quicksort's stack (`_sort_scratch`)."""


@numba.njit(cache=True, nogil=True)
def _eval_numeric(X, y, att, C, rows, wts, off, n, T, P, cur, srt, old_rules):
    """Re-order the node's list by the attribute (missing last), find the best threshold;
    returns it (NaN when all known values are equal or none is known). Under the 3.5.7
    rules the list is the attribute's own, already in root-sorted order (RF-V rule 6).
    `srt`: the sorting work arrays (`Sorting`)."""
    keys, perm, tmp_r, tmp_w, qstack = srt
    f = 0
    if old_rules:
        for p in range(off, off + n):
            if not np.isnan(X[rows[p], att]):
                f += 1
    else:
        for p in range(n):
            v = X[rows[off + p], att]
            keys[p] = DBL_MAX if np.isnan(v) else v
            perm[p] = p
        weka_quicksort(keys[:n], perm[:n], qstack)
        for p in range(n):
            tmp_r[p] = rows[off + perm[p]]
            tmp_w[p] = wts[off + perm[p]]
            if not np.isnan(X[tmp_r[p], att]):
                f += 1
        for p in range(n):
            rows[off + p] = tmp_r[p]
            wts[off + p] = tmp_w[p]
    for b in range(2):
        for j in range(C):
            cur[b, j] = 0.0
    for p in range(off, off + f):
        cur[1, y[rows[p]]] += wts[p]
    prior = _h_cols(cur, _BRANCHES, C, old_rules)
    for b in range(2):
        for j in range(C):
            T[b, j] = cur[b, j]
    thr = np.nan
    best = -DBL_MAX
    prev = X[rows[off], att] if n > 0 else np.nan
    for p in range(off, off + f):
        v = X[rows[p], att]
        if v > prev:
            g = prior - _h_rows(cur, _BRANCHES, C, old_rules)
            if g > best:
                best = g
                thr = (v + prev) / 2.0
                if not old_rules and thr <= prev:
                    thr = v
                for b in range(2):
                    for j in range(C):
                        T[b, j] = cur[b, j]
            prev = v
        cls = y[rows[p]]
        cur[0, cls] += wts[p]
        cur[1, cls] -= wts[p]
    _proportions(T, _BRANCHES, C, P)
    for p in range(off + f, off + n):
        cls = y[rows[p]]
        for b in range(2):
            T[b, cls] += P[b] * wts[p]
    return thr


# ----- growing (RF-4) ---------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _grow(a, size):
    """A copy of `a` with room for at least `size` entries (doubling)."""
    out = np.empty(max(size, 2 * a.shape[0]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@numba.njit(cache=True, nogil=True)
def _list_of(X, rows0, is_nominal, old_rules):
    """(list index of each attribute, number of lists) of a node's region: one list in bag
    order (3.6 rules), or under 3.5.7's (RF-V rule 6) one per numeric attribute (sorted
    once at the root) and per nominal attribute with a missing value in the bag (bag order,
    missing values last), the nominal attributes without one sharing a list in bag order —
    the list each would have on its own, split at every node as its own would be."""
    a = X.shape[1]
    list_of = np.zeros(a, dtype=np.int64)
    if not old_rules:
        return list_of, 1
    nl = 0
    shared = -1
    for j in range(a):
        own = not is_nominal[j]
        for p in range(rows0.shape[0]):
            if own:
                break
            own = np.isnan(X[rows0[p], j])
        if own:
            list_of[j] = nl
            nl += 1
        else:
            if shared < 0:
                shared = nl
                nl += 1
            list_of[j] = shared
    return list_of, max(nl, 1)


@numba.njit(cache=True, nogil=True)
def _root_lists(X, rows0, wts0, is_nominal, list_of, nl, old_rules):
    """The root's list pool (`_list_of`): the 3.6 rules' one list in bag order, or under
    3.5.7's list li the bag in its attributes' order — nominal in bag order with missing
    values last (the shared list: none missing), numeric sorted once with 3.5.7's
    quicksort (RF-V rule 6). Room for the children's lists follows."""
    a = X.shape[1]
    n0 = rows0.shape[0]
    rows = np.empty(max(2 * nl * n0, 16), dtype=np.int64)
    wts = np.empty(max(2 * nl * n0, 16), dtype=np.float64)
    if not old_rules:
        rows[:n0] = rows0
        wts[:n0] = wts0
        return rows, wts
    done = np.zeros(nl, dtype=np.bool_)
    rkeys = np.empty(max(n0, 1))
    rperm = np.empty(max(n0, 1), dtype=np.int64)
    rstack = np.empty(4 * max(n0, 1) + 16, dtype=np.int64)
    for j in range(a):
        li = list_of[j]
        if done[li]:
            continue
        done[li] = True
        base = li * n0
        if is_nominal[j]:  # bag order, missing values last
            q = 0
            for missing in (False, True):
                for p in range(n0):
                    if np.isnan(X[rows0[p], j]) == missing:
                        rows[base + q] = rows0[p]
                        wts[base + q] = wts0[p]
                        q += 1
        else:
            for p in range(n0):
                v = X[rows0[p], j]
                rkeys[p] = DBL_MAX if np.isnan(v) else v
                rperm[p] = p
            weka357_quicksort(rkeys[:n0], rperm[:n0], rstack)
            for p in range(n0):
                rows[base + p] = rows0[rperm[p]]
                wts[base + p] = wts0[rperm[p]]
    return rows, wts


@numba.njit(cache=True, nogil=True)
def _partition(X, rows, wts, off, n, nl, att, nominal, thr, props, nb, counts, starts,
               start):
    """Split the node's nl lists at rows[off:off + nl·n] by attribute `att` into nb child
    regions from `start` on, each list in its current order: child b gets counts[b] entries
    per list at starts[b]; a missing value goes to every branch b with props[b] > 0 with
    weight props[b]·w. Returns the (possibly grown) pool."""
    for b in range(nb):
        counts[b] = 0
    for p in range(off, off + n):
        v = X[rows[p], att]
        if np.isnan(v):
            for b in range(nb):
                if props[b] > 0.0:
                    counts[b] += 1
        elif nominal:
            counts[int(v)] += 1
        elif v < thr:
            counts[0] += 1
        else:
            counts[1] += 1
    need = start
    for b in range(nb):
        starts[b] = need
        need += nl * counts[b]
    if need > rows.shape[0]:
        rows = _grow(rows, need)
        wts = _grow(wts, need)
    for li in range(nl):  # each list in its own order (3.6: the one list)
        fill = starts[:nb].copy()
        for b in range(nb):
            fill[b] += li * counts[b]
        for p in range(off + li * n, off + (li + 1) * n):
            r = rows[p]
            w = wts[p]
            v = X[r, att]
            if np.isnan(v):
                for b in range(nb):
                    if props[b] > 0.0:
                        rows[fill[b]] = r
                        wts[fill[b]] = props[b] * w
                        fill[b] += 1
                continue
            if nominal:
                b = int(v)
            elif v < thr:
                b = 0
            else:
                b = 1
            rows[fill[b]] = r
            wts[fill[b]] = w
            fill[b] += 1
    return rows, wts


@numba.njit(cache=True, nogil=True)
def _best_split(X, y, is_nominal, n_values, C, rows, wts, off, n, K, rng, window,
                old_rules, tables, srt, list_of):
    """T3: draw attributes from the window (RNG advanced in place) until K are tried and one
    has gain > eps (0 under 3.5.7's rules, else `GAIN_EPS`); returns (gain, attribute,
    branches, threshold) of the best (equal gains: the lower index), its table and branch
    proportions in bestT / bestP (`tables` = (T, P, bestT, bestP, cur): the tried
    attribute's and the best one's; `srt`: `Sorting`; `list_of`: each attribute's list in
    the node's region of the pool rows / wts)."""
    T, P, bestT, bestP, cur = tables
    eps = 0.0 if old_rules else GAIN_EPS
    a = X.shape[1]
    best_gain = -DBL_MAX
    best_att = 0
    best_nb = 0
    best_thr = np.nan
    m = a
    tried = 0
    seen = False
    while m > 0 and (tried < K or not seen):
        c = next_int_bound(rng, m)
        at = window[c]
        window[c] = window[m - 1]
        window[m - 1] = at
        m -= 1
        tried += 1
        lo = off + list_of[at] * n  # the attribute's list
        if is_nominal[at]:
            nb = n_values[at]
            _eval_nominal(X, y, at, nb, C, rows, wts, lo, n, T, P)
            thr = np.nan
        else:
            nb = 2
            thr = _eval_numeric(X, y, at, C, rows, wts, lo, n, T, P, cur, srt, old_rules)
        g = _h_cols(T, nb, C, old_rules) - _h_rows(T, nb, C, old_rules)
        if g > eps:
            seen = True
        if g > best_gain or (g == best_gain and at < best_att):
            best_gain = g
            best_att = at
            best_nb = nb
            best_thr = thr
            for b in range(nb):
                bestP[b] = P[b]
                for j in range(C):
                    bestT[b, j] = T[b, j]
    return best_gain, best_att, best_nb, best_thr


@numba.njit(cache=True, nogil=True)
def _sort_scratch(n):
    """Work arrays for sorting a list of n entries (`Sorting`)."""
    return Sorting(np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
                   np.empty(n), np.empty(4 * n + 16, dtype=np.int64))


@numba.njit(cache=True, nogil=True)
def _stays_leaf(dist, c0, C, min_num, depth, max_depth):
    """T2: total weight below 2·min_num, (almost) one class only, or the depth limit."""
    total = 0.0
    mx = dist[c0]
    for j in range(C):
        total += dist[c0 + j]
        if dist[c0 + j] > mx:
            mx = dist[c0 + j]
    return total < 2.0 * min_num or abs(mx - total) < 1e-6 or (max_depth > 0
                                                               and depth >= max_depth)


@numba.njit(cache=True, nogil=True)
def _grow_nodes(kind, att_, thr_, child0, nchild, cn_off, p_off, size):
    """The node arrays with room for `size` nodes."""
    return (_grow(kind, size), _grow(att_, size), _grow(thr_, size), _grow(child0, size),
            _grow(nchild, size), _grow(cn_off, size), _grow(p_off, size))


@numba.njit(cache=True, nogil=True)
def _grow_stack(st_node, st_depth, st_off, st_len, st_top, size):
    """The pending-node stack with room for `size` frames."""
    return (_grow(st_node, size), _grow(st_depth, size), _grow(st_off, size),
            _grow(st_len, size), _grow(st_top, size + 1))


@numba.njit(cache=True, nogil=True)
def grow_tree(X, y, is_nominal, n_values, C, rows0, wts0, K, min_num, max_depth, rng,
              window, old_rules):
    """Grow one tree from the list (rows0, wts0) with the tree RNG state `rng` and the
    attribute window `window` (both advanced in place). Returns the node arrays
    (kind, att, thr, child0, nchild, cn_off, p_off, dist, props)."""
    a = X.shape[1]
    n0 = rows0.shape[0]
    vmax = 2
    for j in range(a):
        if is_nominal[j] and n_values[j] > vmax:
            vmax = n_values[j]
    cap = 64
    kind = np.empty(cap, dtype=np.int64)
    att_ = np.empty(cap, dtype=np.int64)
    thr_ = np.empty(cap, dtype=np.float64)
    child0 = np.empty(cap, dtype=np.int64)
    nchild = np.empty(cap, dtype=np.int64)
    cn_off = np.empty(cap, dtype=np.int64)
    p_off = np.empty(cap, dtype=np.int64)
    dist = np.empty(cap * C, dtype=np.float64)
    props = np.empty(cap * 2, dtype=np.float64)
    n_nodes = 1
    n_dist = C
    n_props = 0
    # the root's class weights, summed in list order
    for j in range(C):
        dist[j] = 0.0
    for p in range(n0):
        dist[y[rows0[p]]] += wts0[p]
    cn_off[0] = 0
    # list pool and the stack of pending nodes (node, depth, offset, length). A node's region
    # holds `nl` lists of its n entries: one (3.6 rules), or one per attribute order,
    # sorted once at the root (3.5.7 rules, RF-V rule 6; `_list_of`)
    list_of, nl = _list_of(X, rows0, is_nominal, old_rules)
    rows, wts = _root_lists(X, rows0, wts0, is_nominal, list_of, nl, old_rules)
    st_node = np.empty(64, dtype=np.int64)
    st_depth = np.empty(64, dtype=np.int64)
    st_off = np.empty(64, dtype=np.int64)
    st_len = np.empty(64, dtype=np.int64)
    st_top = np.zeros(65, dtype=np.int64)  # st_top[s] = max list end of frames 0..s−1
    st_node[0], st_depth[0], st_off[0], st_len[0] = 0, 0, 0, n0
    st_top[1] = nl * n0
    sp = 1
    # scratch
    T = np.empty((vmax, C))
    P = np.empty(vmax)
    bestT = np.empty((vmax, C))
    bestP = np.empty(vmax)
    cur = np.empty((2, C))
    counts = np.empty(vmax, dtype=np.int64)
    starts = np.empty(vmax, dtype=np.int64)
    srt = _sort_scratch(max(n0, 1))
    tables = (T, P, bestT, bestP, cur)
    eps = 0.0 if old_rules else GAIN_EPS
    while sp > 0:
        sp -= 1
        node, depth, off, n = st_node[sp], st_depth[sp], st_off[sp], st_len[sp]
        live_top = st_top[sp]
        if n == 0:  # T1
            kind[node] = KIND_EMPTY
            continue
        kind[node] = KIND_LEAF
        if _stays_leaf(dist, cn_off[node], C, min_num, depth, max_depth):
            continue  # T2
        if n > srt.keys.shape[0]:
            srt = _sort_scratch(n)
        # T3: attribute search
        best_gain, best_att, best_nb, best_thr = _best_split(
            X, y, is_nominal, n_values, C, rows, wts, off, n, K, rng, window, old_rules,
            tables, srt, list_of)
        if best_gain <= eps:
            continue  # T4: leaf
        # T4: split; children get contiguous node ids
        nb = best_nb
        if n_nodes + nb > kind.shape[0]:
            kind, att_, thr_, child0, nchild, cn_off, p_off = _grow_nodes(
                kind, att_, thr_, child0, nchild, cn_off, p_off, n_nodes + nb)
        if n_dist + nb * C > dist.shape[0]:
            dist = _grow(dist, n_dist + nb * C)
        if n_props + nb > props.shape[0]:
            props = _grow(props, n_props + nb)
        kind[node] = KIND_SPLIT
        att_[node] = best_att
        thr_[node] = best_thr
        child0[node] = n_nodes
        nchild[node] = nb
        p_off[node] = n_props
        for b in range(nb):
            props[n_props + b] = bestP[b]
        n_props += nb
        rows, wts = _partition(X, rows, wts, off, n, nl, best_att, is_nominal[best_att],
                               best_thr, bestP, nb, counts, starts, max(live_top, off + nl * n))
        # children: class weights = rows of the winning table; pushed last-first
        if sp + nb + 1 > st_node.shape[0]:
            st_node, st_depth, st_off, st_len, st_top = _grow_stack(
                st_node, st_depth, st_off, st_len, st_top, sp + nb + 1)
        for b in range(nb):
            ch = n_nodes + b
            cn_off[ch] = n_dist
            for j in range(C):
                dist[n_dist + j] = bestT[b, j]
            n_dist += C
        for b in range(nb - 1, -1, -1):
            st_node[sp] = n_nodes + b
            st_depth[sp] = depth + 1
            st_off[sp] = starts[b]
            st_len[sp] = counts[b]
            st_top[sp + 1] = max(st_top[sp], starts[b] + nl * counts[b])
            sp += 1
        n_nodes += nb
    return (kind[:n_nodes].copy(), att_[:n_nodes].copy(), thr_[:n_nodes].copy(),
            child0[:n_nodes].copy(), nchild[:n_nodes].copy(), cn_off[:n_nodes].copy(),
            p_off[:n_nodes].copy(), dist[:n_dist].copy(), props[:n_props].copy())


# ----- prediction (RF-6) ------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _leaf_into(dist, c0, C, out):
    s = 0.0
    for j in range(C):
        s += dist[c0 + j]
    for j in range(C):
        out[j] = dist[c0 + j] / s


@numba.njit(cache=True, nogil=True)
def predict_tree(X, is_nominal, C, kind, att, thr, child0, nchild, cn_off, p_off, dist,
                 props, out):
    """Class distributions of one tree for every row of X (into `out`, shape (n, C))."""
    depth_cap = kind.shape[0] + 1
    fr_node = np.empty(depth_cap, dtype=np.int64)
    fr_b = np.empty(depth_cap, dtype=np.int64)
    acc = np.zeros((depth_cap, C))
    res = np.empty(C)
    for r in range(X.shape[0]):
        sp = 0
        cur = 0
        while True:
            # descend from `cur` until a result is known or a missing value branches
            descend = True
            while descend:
                if kind[cur] != KIND_SPLIT:
                    _leaf_into(dist, cn_off[cur], C, res)
                    break
                v = X[r, att[cur]]
                if np.isnan(v):
                    fr_node[sp] = cur
                    fr_b[sp] = -1
                    for j in range(C):
                        acc[sp, j] = 0.0
                    sp += 1
                    descend = False  # the unwinding loop picks the first branch
                    for j in range(C):
                        res[j] = 0.0
                    break
                if is_nominal[att[cur]]:
                    b = int(v)
                elif v < thr[cur]:
                    b = 0
                else:
                    b = 1
                ch = child0[cur] + b
                if kind[ch] == KIND_EMPTY:
                    _leaf_into(dist, cn_off[cur], C, res)
                    break
                cur = ch
            # unwind: add the result to the innermost open missing-value node
            go_down = False
            while sp > 0:
                top = sp - 1
                node = fr_node[top]
                b = fr_b[top]
                if b >= 0:
                    pb = props[p_off[node] + b]
                    for j in range(C):
                        acc[top, j] += pb * res[j]
                b += 1
                while b < nchild[node] and kind[child0[node] + b] == KIND_EMPTY:
                    b += 1
                if b < nchild[node]:
                    fr_b[top] = b
                    cur = child0[node] + b
                    go_down = True
                    break
                for j in range(C):
                    res[j] = acc[top, j]
                sp -= 1
            if not go_down:
                break
        for j in range(C):
            out[r, j] = res[j]
    return out


# ----- Python side ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tree:
    """A grown tree as flat arrays (see `grow_tree`)."""

    kind: np.ndarray
    att: np.ndarray
    thr: np.ndarray
    child0: np.ndarray
    nchild: np.ndarray
    cn_off: np.ndarray
    p_off: np.ndarray
    dist: np.ndarray
    props: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.kind.shape[0])

    def nbytes(self) -> int:
        return sum(getattr(self, f).nbytes for f in self.__dataclass_fields__)

    def predict(self, X: np.ndarray, is_nominal: np.ndarray, C: int) -> np.ndarray:
        out = np.empty((X.shape[0], C))
        return predict_tree(X, is_nominal, C, self.kind, self.att, self.thr, self.child0,
                            self.nchild, self.cn_off, self.p_off, self.dist, self.props, out)


def format_number(v: float) -> str:
    """Weka's 6-decimal rendering of a numeric value in an instance string (RF-3)."""
    t = v * 1e6
    p = math.trunc(t + 0.5) if t > 0 else -math.trunc(abs(t) + 0.5)
    if p == 0:
        return "0"
    digits = str(abs(p)).rjust(7, "0")
    text = (digits[:-6] + "." + digits[-6:]).rstrip("0").rstrip(".")
    return "-" + text if p < 0 else text


_ESCAPE = {"\\": "\\\\", "'": "\\'", "\t": "\\t", "\n": "\\n", "\r": "\\r", '"': '\\"',
           "%": "\\%", "\u001e": "\\u001E"}


def quote_label(label: str) -> str:
    """A nominal label as Weka writes it in an instance string (RF-3)."""
    if any(ch in label for ch in _ESCAPE):
        return "'" + "".join(_ESCAPE.get(ch, ch) for ch in label) + "'"
    if any(ch in label for ch in "{}, ") or label in ("?", ""):
        return "'" + label + "'"
    return label


def instance_string(data: Dataset, row: int) -> str:
    """Weka's ``Instance.toString()`` of one row: attributes then class, header order."""
    parts = []
    for j, attribute in enumerate(data.attributes):
        v = data.X[row, j]
        if np.isnan(v):
            parts.append("?")
        elif attribute.values is not None:
            parts.append(quote_label(attribute.values[int(v)]))
        else:
            parts.append(format_number(float(v)))
    yv = int(data.y[row])
    parts.append("?" if yv < 0 else quote_label(data.class_values[yv]))
    return ",".join(parts)


def default_k(n_attributes: int, k_features: int, old_rules: bool = False) -> int:
    """K of RF-2 F1 (3.6.14: ⌊ln a / ln 2⌋ + 1; 3.5.7 counts the class: ⌊log2(a+1)⌋ + 1)."""
    a = n_attributes
    if k_features >= 1:
        return min(k_features, a)
    base = a + 1 if old_rules else a
    if base <= 0:
        return 1
    return min(int(math.log(base) / math.log(2)) + 1, max(a, 1))


def build_tree(data: Dataset, rows: np.ndarray, seed: int, K: int, min_num: float,
               max_depth: int, old_rules: bool = False) -> Tree:
    """One tree on the list `rows` (row indices of `data`, weight 1 each, in order) with
    tree seed `seed` (RF-3: the RNG is re-seeded from the hash of a drawn row)."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    m = rows.shape[0]
    rng = np.array([seed_state(seed)], dtype=np.int64)
    if m > 0:
        j = int(next_int_bound(rng, m))
        h = java_string_hash(instance_string(data, int(rows[j])))
        rng[0] = seed_state(h + seed)
    is_nom, n_values = attribute_kinds(data)
    window = np.arange(data.n_attributes, dtype=np.int64)
    arrays = grow_tree(np.ascontiguousarray(data.X, dtype=np.float64),
                       np.ascontiguousarray(data.y, dtype=np.int64), is_nom, n_values,
                       data.n_classes, rows, np.ones(m), K, float(min_num), int(max_depth),
                       rng, window, old_rules)
    return Tree(*arrays)


def attribute_kinds(data: Dataset) -> tuple[np.ndarray, np.ndarray]:
    is_nom = np.array([a.values is not None for a in data.attributes], dtype=np.bool_)
    n_values = np.array([len(a.values) if a.values is not None else 0
                         for a in data.attributes], dtype=np.int64)
    return is_nom, n_values
