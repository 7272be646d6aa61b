"""The naive count layout of Salem et al. (Section 3), for their timing study (Fig. 4b).

One array of K × C(V + L − 1, L) cells, class outermost, over all V attribute values (a
missing value one more value of its attribute): cell (y, v_1 ≤ … ≤ v_L) counts #(y, x_s) for
the combination s of the distinct values, a combination of l < L values sitting on the
diagonal (its first value repeated L − l + 1 times). L = min(n + 1, d). Same-attribute
cells — two values of one attribute — are allocated but never counted: that waste is what
the compact layout (`AnDECounts`, one block per attribute combination) saves (Fig. 4a).

Scoring is the straightforward algorithm over it: for every test row, parent set s and
child c ∉ s, the index of the value combination (s, c) is computed — sorted, ranked — and
read, class by class (and that of (s, `?` of c) for SPEC §2's denominator), one log factor
at a time. Same estimates, δ and fallback as SPEC §2 (no subsumption, weighting or
selection: the paper times the plain AnDE), so the probabilities equal the compact
layout's to rounding.
"""

from __future__ import annotations

from math import comb

import numpy as np

from workbench.jit import numba
from workbench.learners.ande.estimates import m_estimate
from workbench.learners.counting.combinations import binomial_table, next_colex


def naive_cells(values: int, n_classes: int, size: int) -> int:
    """Cells of the naive layout: K · C(V + L − 1, L) (= `layout_cells`' naive figure)."""
    return n_classes * comb(values + size - 1, size)


class NaiveLayout:
    """Counts of AnDE (parent sets of `n` attributes, levels 1..n + 1) in the naive layout.

    `cards`: declared values per attribute; `missing`: the attributes whose `?` has a cell
    (it must be declared before counting rows that hold one). Counting is additive."""

    def __init__(self, cards: np.ndarray, missing: np.ndarray, n_classes: int, n: int) -> None:
        self.cards = np.asarray(cards, dtype=np.int64)
        self.d = int(self.cards.shape[0])
        self.K = int(n_classes)
        self.size = min(int(n) + 1, self.d)  # L
        self.top = min(int(n), self.d)  # parent-set size
        slots = self.cards + np.asarray(missing, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(slots)[:-1]]).astype(np.int64)
        self.missing_slot = np.where(missing, self.offsets + self.cards, -1).astype(np.int64)
        self.values = int(slots.sum())
        self.per_class = comb(self.values + self.size - 1, self.size)
        self.binom = binomial_table(self.values + self.size, self.size)
        self.table = np.zeros(self.K * self.per_class, dtype=np.int64)
        self.class_counts = np.zeros(self.K, dtype=np.int64)
        # rows (class known) with every attribute of a parent set present, per level
        self.present = np.zeros((self.top + 1, max([comb(self.d, l)
                                                    for l in range(self.top + 1)] or [1])),
                                dtype=np.int64)
        self.attr_binom = binomial_table(self.d, max(self.top, 1))

    @property
    def nbytes(self) -> int:
        return int(self.table.nbytes + self.class_counts.nbytes + self.present.nbytes)

    def add(self, codes: np.ndarray, y: np.ndarray) -> None:
        """Count rows (codes: rows × d, −1 = missing; y: class codes, −1 = unknown)."""
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        y = np.ascontiguousarray(y, dtype=np.int64)
        if codes.size and ((codes < 0) & (self.missing_slot[None, :] < 0)).any():
            raise ValueError("NaiveLayout.add: a missing value of an attribute without a "
                             "missing cell")
        _count(codes, y, self.offsets, self.missing_slot, self.size, self.top, self.binom,
               self.attr_binom, self.per_class, self.table, self.class_counts, self.present)

    def merge(self, other: "NaiveLayout", sign: int = 1) -> None:
        """Add (``sign=-1``: subtract) the counts of `other`, of the same layout."""
        self.table += sign * other.table
        self.class_counts += sign * other.class_counts
        self.present += sign * other.present

    def log_scores(self, codes: np.ndarray, m: float, frequency_limit: int) -> np.ndarray:
        """log P̂(y, x) per row and class up to a constant per row (SPEC §2, unweighted)."""
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        out = np.empty((codes.shape[0], self.K), dtype=np.float64)
        _score(codes, self.offsets, self.missing_slot, self.cards, self.size, self.top,
               self.binom, self.attr_binom, self.per_class, self.table, self.class_counts,
               self.present, float(m), int(frequency_limit), out)
        return out


@numba.njit(cache=True, nogil=True)
def _rank(vals, size, binom):
    """Colex rank of the multiset vals[0] ≤ … ≤ vals[size − 1] (as the set vals[i] + i)."""
    r = 0
    for i in range(size):
        r += binom[vals[i] + i, i + 1]
    return r


@numba.njit(cache=True, nogil=True, inline="always")
def _insert(vals, k, v):
    """Insert v into the sorted vals[0:k] (one more value)."""
    j = k
    while j > 0 and vals[j - 1] > v:
        vals[j] = vals[j - 1]
        j -= 1
    vals[j] = v


@numba.njit(cache=True, nogil=True)
def _cell(g, idx, l, extra, size, binom, vals):
    """Rank of the value combination {g[idx[0..l−1]]} ∪ {extra} (extra < 0: none), its first
    value repeated to `size` values: sorted by insertion, then ranked."""
    k = 0
    for t in range(l):
        _insert(vals, k, g[idx[t]])
        k += 1
    if extra >= 0:
        _insert(vals, k, extra)
        k += 1
    pad = size - k  # repeat the smallest value
    if pad > 0:
        for j in range(k - 1, -1, -1):
            vals[j + pad] = vals[j]
        for j in range(pad):
            vals[j] = vals[pad]
    return _rank(vals, size, binom)


@numba.njit(cache=True, nogil=True)
def _global(codes, r, offsets, missing_slot, g):
    """Row r's global value indices (`?`: the attribute's missing cell, or −1)."""
    for a in range(codes.shape[1]):
        v = codes[r, a]
        g[a] = offsets[a] + v if v >= 0 else missing_slot[a]


@numba.njit(cache=True, nogil=True)
def _count(codes, y, offsets, missing_slot, size, top, binom, attr_binom, per_class, table,
           class_counts, present):
    rows, d = codes.shape
    g = np.empty(d, dtype=np.int64)
    idx = np.empty(size + 1, dtype=np.int64)
    vals = np.empty(size + 1, dtype=np.int64)
    for r in range(rows):
        c = y[r]
        if c < 0:
            continue
        class_counts[c] += 1
        present[0, 0] += 1
        _global(codes, r, offsets, missing_slot, g)
        base = c * per_class
        for l in range(1, size + 1):
            for t in range(l):
                idx[t] = t
            more = True
            while more:
                table[base + _cell(g, idx, l, -1, size, binom, vals)] += 1
                if l <= top:
                    ok = True
                    rank = 0
                    for t in range(l):
                        if codes[r, idx[t]] < 0:
                            ok = False
                        rank += attr_binom[idx[t], t + 1]
                    if ok:
                        present[l, rank] += 1
                more = next_colex(idx, l, d)


@numba.njit(cache=True, nogil=True)
def _score(codes, offsets, missing_slot, cards, size, top, binom, attr_binom, per_class,
           table, class_counts, present, m, flimit, out):
    rows, d = codes.shape
    K = class_counts.shape[0]
    g = np.empty(d, dtype=np.int64)
    idx = np.empty(size + 1, dtype=np.int64)
    vals = np.empty(size + 1, dtype=np.int64)
    lp = np.empty(K, dtype=np.float64)
    acc = np.empty(K, dtype=np.float64)
    inset = np.zeros(d, dtype=np.bool_)
    for r in range(rows):
        _global(codes, r, offsets, missing_slot, g)
        for level in range(top, -1, -1):
            for k in range(K):
                acc[k] = -np.inf
            used = 0
            for t in range(level):
                idx[t] = t
            more = True
            while more:
                ok = True
                arank = 0
                vprod = 1.0
                for t in range(level):
                    if codes[r, idx[t]] < 0:
                        ok = False
                    arank += attr_binom[idx[t], t + 1]
                    vprod *= cards[idx[t]]
                if ok:
                    prank = _cell(g, idx, level, -1, size, binom, vals) if level else 0
                    total = 0
                    for k in range(K):
                        total += table[k * per_class + prank] if level else class_counts[k]
                    if total >= flimit:
                        used += 1
                        for t in range(level):
                            inset[idx[t]] = True
                        for k in range(K):
                            cy = table[k * per_class + prank] if level else class_counts[k]
                            lp[k] = np.log(m_estimate(cy, m / (K * vprod),
                                                      present[level, arank], m))
                        for c in range(d):
                            if inset[c] or codes[r, c] < 0:
                                continue
                            jrank = _cell(g, idx, level, g[c], size, binom, vals)
                            mrank = -1
                            if missing_slot[c] >= 0:
                                mrank = _cell(g, idx, level, missing_slot[c], size, binom, vals)
                            for k in range(K):
                                cy = table[k * per_class + prank] if level else class_counts[k]
                                miss = table[k * per_class + mrank] if mrank >= 0 else 0
                                lp[k] += np.log(m_estimate(table[k * per_class + jrank],
                                                           m / cards[c], cy - miss, m))
                        for t in range(level):
                            inset[idx[t]] = False
                        for k in range(K):  # log-sum-exp into acc
                            a, b = acc[k], lp[k]
                            if a < b:
                                a, b = b, a
                            acc[k] = a if b == -np.inf else a + np.log1p(np.exp(b - a))
                more = next_colex(idx, level, d) if level else False
            if used:
                break
        for k in range(K):
            out[r, k] = acc[k]
