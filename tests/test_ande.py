"""AnDE family (SPEC §2): hand-computed probabilities, an independent brute-force reference,
identities between variants, the counting layer, and bad input."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as Fr

import numpy as np
import pytest

from workbench.data.dataset import Attribute, Dataset
from workbench.errors import LearnerError, WorkbenchError
from workbench.learners.counting import blocks as counts_mod
from workbench.learners import registry
from workbench.learners.ande import AnDE
from workbench.learners.counting import AnDECounts, BlockStore, colex_combinations

from conftest import needs_shared, shared_file


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------
def make(rows, classes=2, cards=None, name="toy"):
    """Dataset from rows of ints/None (last column = class code, None = missing)."""
    X = np.array([[np.nan if v is None else v for v in r[:-1]] for r in rows], dtype=float)
    y = np.array([-1 if r[-1] is None else r[-1] for r in rows], dtype=int)
    d = X.shape[1]
    if cards is None:
        cards = [int(np.nanmax(X[:, i])) + 1 if np.isfinite(X[:, i]).any() else 1
                 for i in range(d)]
    atts = tuple(Attribute(f"a{i}", tuple(f"v{j}" for j in range(cards[i]))) for i in range(d))
    cls = Attribute("class", tuple(f"c{j}" for j in range(classes)))
    return Dataset(name, atts, cls, X, y)


def test_rows(train, rows):
    """Test Dataset with train's header (class unknown)."""
    X = np.array([[np.nan if v is None else v for v in r] for r in rows], dtype=float)
    return train.replace(X=X, y=np.full(len(rows), -1))


test_rows.__test__ = False  # not a test


def norm(scores):
    t = sum(scores)
    return [float(s / t) for s in scores]


def proba(learner, train, rows):
    return learner.fit(train).predict_proba(test_rows(train, rows))


def random_data(n, d, cards, K, seed, missing=0.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = np.stack([rng.integers(0, c, n) for c in cards], 1).astype(float)
    X[:, 0] = (y + rng.integers(0, 2, n)) % cards[0]  # class-dependent attribute
    if d > 2:
        X[:, 2] = (X[:, 1] + (rng.random(n) < 0.3)) % cards[2]  # attribute dependence
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    atts = tuple(Attribute(f"a{i}", tuple(f"v{j}" for j in range(c))) for i, c in enumerate(cards))
    return Dataset(f"r{seed}", atts, Attribute("cls", tuple(f"c{k}" for k in range(K))), X, y)


# ----------------------------------------------------------------------------------------------
# brute-force reference: SPEC §2 transcribed literally, counting by scanning the rows
# ----------------------------------------------------------------------------------------------
def reference_proba(train, test, n, m=1.0, F=1, C=None, weighted=False, mi_estimate="reference"):
    tr = train.without_missing_class()
    X, Y = tr.codes(), tr.y
    cards, K, N = list(tr.cardinalities), tr.n_classes, tr.n_instances
    d = X.shape[1]

    def cnt(assign, y=None, missing=()):
        return sum(1 for r in range(N)
                   if (y is None or Y[r] == y) and all(X[r, a] == v for a, v in assign)
                   and all(X[r, a] < 0 for a in missing))

    def present(s):
        return sum(1 for r in range(N) if all(X[r, a] >= 0 for a in s))

    def mi(s):
        vs, T, tot = math.prod(cards[a] for a in s), present(s), 0.0
        # SPEC §2: D_s = N for A1DE's single parents under the paper's code ("reference")
        D = N if (mi_estimate == "reference" and n == 1) else T
        for xs in itertools.product(*[range(cards[a]) for a in s]):
            asg = list(zip(s, xs))
            px = (cnt(asg) + m / vs) / (D + m)
            for y in range(K):
                py = (cnt([], y) + m / K) / (N + m)
                pxy = (cnt(asg, y) + m / (K * vs)) / (T + m)
                if pxy >= 1e-6 and px * py >= 1e-6:
                    tot += pxy * math.log2(pxy / (px * py))
        return tot

    out = []
    for x in test.codes():
        A = [a for a in range(d) if x[a] >= 0]
        if C is not None:
            gone = set()
            for i in A:
                for j in A:
                    ci, cj, cij = cnt([(i, x[i])]), cnt([(j, x[j])]), cnt([(i, x[i]), (j, x[j])])
                    if i != j and cj > C and cij == cj and not (ci == cj and i < j):
                        gone.add(i)
            A = [a for a in A if a not in gone]
        res = None
        for lev in range(n, 0, -1):
            sets = [s for s in itertools.combinations(A, lev)
                    if cnt([(a, x[a]) for a in s]) >= F]
            if not sets:
                continue
            ws = [mi(s) if weighted else 1.0 for s in sets]
            if sum(ws) == 0:
                ws = [1.0] * len(sets)
            sc = np.zeros(K)
            for s, w in zip(sets, ws):
                asg = [(a, x[a]) for a in s]
                vs, T = math.prod(cards[a] for a in s), present(s)
                for y in range(K):
                    cy = cnt(asg, y)
                    p = (cy + m / (K * vs)) / (T + m)
                    for c in A:
                        if c not in s:
                            p *= (cnt(asg + [(c, x[c])], y) + m / cards[c]) / (
                                cy - cnt(asg, y, missing=[c]) + m)
                    sc[y] += w * p
            res = sc / sc.sum()
            break
        if res is None:
            sc = np.zeros(K)
            for y in range(K):
                p = (cnt([], y) + m / K) / (N + m)
                for c in A:
                    den = sum(cnt([(c, v)], y) for v in range(cards[c]))
                    p *= (cnt([(c, x[c])], y) + m / cards[c]) / (den + m)
                sc[y] = p
            res = sc / sc.sum()
        out.append(res)
    return np.array(out)


# ----------------------------------------------------------------------------------------------
# hand-computed cases
# ----------------------------------------------------------------------------------------------
# Toy data: a ∈ {0,1}, b ∈ {0,1}, c ∈ {0,1,2}, two classes, N = 7, m = 1.
#   r1 (0,0,0|0) r2 (0,1,1|0) r3 (1,0,2|0) r4 (1,1,1|1) r5 (0,1,0|1) r6 (1,1,1|1) r7 (0,0,2|0)
# #y0 = 4 (r1 r2 r3 r7), #y1 = 3 (r4 r5 r6). Test instance x = (a0, b1, c1).
TOY = [(0, 0, 0, 0), (0, 1, 1, 0), (1, 0, 2, 0), (1, 1, 1, 1), (0, 1, 0, 1), (1, 1, 1, 1),
       (0, 0, 2, 0)]
X_TOY = [(0, 1, 1)]


def toy():
    return make(TOY, cards=[2, 2, 3])


def test_nb_hand():
    # P(y0) = (4 + 1/2)/(7 + 1), P(y1) = (3 + 1/2)/8
    # y0: #(a0)=3 #(b1)=1 #(c1)=1 of 4 → (3+1/2)/5, (1+1/2)/5, (1+1/3)/5
    # y1: #(a0)=1 #(b1)=3 #(c1)=2 of 3 → (1+1/2)/4, (3+1/2)/4, (2+1/3)/4
    s0 = Fr(9, 2) / 8 * Fr(7, 2) / 5 * Fr(3, 2) / 5 * Fr(4, 3) / 5
    s1 = Fr(7, 2) / 8 * Fr(3, 2) / 4 * Fr(7, 2) / 4 * Fr(7, 3) / 4
    p = proba(AnDE(n=0), toy(), X_TOY)
    np.testing.assert_allclose(p[0], norm([s0, s1]), rtol=1e-12)
    np.testing.assert_allclose(p, proba(registry.create("NB"), toy(), X_TOY), rtol=0, atol=0)


def a1de_toy_terms():
    """Per-parent terms P(y, x_p) Π P(x_c | y, x_p) for x = (a0, b1, c1); N − miss = 7."""
    # parent a0 (#=4): #(y,a0) = 3, 1 → P = (3 + 1/4)/8, (1 + 1/4)/8
    #   b1: #(y,a0,b1) = 1, 1 → (1+1/2)/(3+1), (1+1/2)/(1+1)
    #   c1: #(y,a0,c1) = 1, 0 → (1+1/3)/(3+1), (0+1/3)/(1+1)
    ta = (Fr(13, 4) / 8 * Fr(3, 2) / 4 * Fr(4, 3) / 4,
          Fr(5, 4) / 8 * Fr(3, 2) / 2 * Fr(1, 3) / 2)
    # parent b1 (#=4): #(y,b1) = 1, 3 → (1 + 1/4)/8, (3 + 1/4)/8
    #   a0: #(y,b1,a0) = 1, 1 → (1+1/2)/(1+1), (1+1/2)/(3+1)
    #   c1: #(y,b1,c1) = 1, 2 → (1+1/3)/(1+1), (2+1/3)/(3+1)
    tb = (Fr(5, 4) / 8 * Fr(3, 2) / 2 * Fr(4, 3) / 2,
          Fr(13, 4) / 8 * Fr(3, 2) / 4 * Fr(7, 3) / 4)
    # parent c1 (#=3): #(y,c1) = 1, 2 → (1 + 1/6)/8, (2 + 1/6)/8
    #   a0: #(y,c1,a0) = 1, 0 → (1+1/2)/(1+1), (0+1/2)/(2+1)
    #   b1: #(y,c1,b1) = 1, 2 → (1+1/2)/(1+1), (2+1/2)/(2+1)
    tc = (Fr(7, 6) / 8 * Fr(3, 2) / 2 * Fr(3, 2) / 2,
          Fr(13, 6) / 8 * Fr(1, 2) / 3 * Fr(5, 2) / 3)
    return ta, tb, tc


def test_a1de_hand():
    ta, tb, tc = a1de_toy_terms()
    p = proba(AnDE(n=1), toy(), X_TOY)
    np.testing.assert_allclose(p[0], norm([ta[0] + tb[0] + tc[0], ta[1] + tb[1] + tc[1]]),
                               rtol=1e-12)


def test_a2de_hand():
    # parent (a0,b1) (#=2): #(y,a0,b1) = 1, 1 → (1 + 1/8)/8 each
    #   c1: #(y,a0,b1,c1) = 1, 0 → (1+1/3)/(1+1), (0+1/3)/(1+1)
    # parent (a0,c1) (#=1): #(y,a0,c1) = 1, 0 → (1 + 1/12)/8, (0 + 1/12)/8
    #   b1: #(y,a0,c1,b1) = 1, 0 → (1+1/2)/(1+1), (0+1/2)/(0+1)
    # parent (b1,c1) (#=3): #(y,b1,c1) = 1, 2 → (1 + 1/12)/8, (2 + 1/12)/8
    #   a0: #(y,b1,c1,a0) = 1, 0 → (1+1/2)/(1+1), (0+1/2)/(2+1)
    s0 = (Fr(9, 8) / 8 * Fr(4, 3) / 2 + Fr(13, 12) / 8 * Fr(3, 2) / 2
          + Fr(13, 12) / 8 * Fr(3, 2) / 2)
    s1 = (Fr(9, 8) / 8 * Fr(1, 3) / 2 + Fr(1, 12) / 8 * Fr(1, 2) / 1
          + Fr(25, 12) / 8 * Fr(1, 2) / 3)
    p = proba(AnDE(n=2), toy(), X_TOY)
    np.testing.assert_allclose(p[0], norm([s0, s1]), rtol=1e-12)
    # frequency limit 2: (a0,c1) has #=1 < 2 and is left out
    s0 = Fr(9, 8) / 8 * Fr(4, 3) / 2 + Fr(13, 12) / 8 * Fr(3, 2) / 2
    s1 = Fr(9, 8) / 8 * Fr(1, 3) / 2 + Fr(25, 12) / 8 * Fr(1, 2) / 3
    p = proba(AnDE(n=2, frequency_limit=2), toy(), X_TOY)
    np.testing.assert_allclose(p[0], norm([s0, s1]), rtol=1e-12)


def test_a3de_single_parent_triple():
    # d = 3: the only parent set is (a,b,c), no children: P(y, a0,b1,c1) = (# + 1/(2·12))/8,
    # #(y0, a0,b1,c1) = 1 (r2), #(y1, …) = 0
    p = proba(AnDE(n=3), toy(), X_TOY)
    np.testing.assert_allclose(p[0], norm([Fr(25, 24), Fr(1, 24)]), rtol=1e-12)


def test_subsumption_hand():
    # class-free counts at x = (a0,b1,c1): #(a0)=4 #(b1)=4 #(c1)=3,
    # #(a0,b1)=2 #(a0,c1)=1 #(b1,c1)=3. #(c1) = #(b1,c1) = 3: b1 generalises c1, so with
    # C = 2 (3 > 2) b1 is deleted (as parent and child); with C = 3 nothing is deleted.
    ta, tb, tc = a1de_toy_terms()
    # A1DE over {a, c}: parent a0 with child c1; parent c1 with child a0
    sa = (Fr(13, 4) / 8 * Fr(4, 3) / 4, Fr(5, 4) / 8 * Fr(1, 3) / 2)
    sc = (Fr(7, 6) / 8 * Fr(3, 2) / 2, Fr(13, 6) / 8 * Fr(1, 2) / 3)
    p = proba(AnDE(n=1, subsumption=2), toy(), X_TOY)
    np.testing.assert_allclose(p[0], norm([sa[0] + sc[0], sa[1] + sc[1]]), rtol=1e-12)
    p = proba(AnDE(n=1, subsumption=3), toy(), X_TOY)
    np.testing.assert_allclose(p[0], norm([ta[0] + tb[0] + tc[0], ta[1] + tb[1] + tc[1]]),
                               rtol=1e-12)
    # A2DE-S with C = 2: active {a, c}: single parent pair (a0,c1), no child
    p = proba(AnDE(n=2, subsumption=2), toy(), X_TOY)
    np.testing.assert_allclose(p[0], norm([Fr(13, 12), Fr(1, 12)]), rtol=1e-12)
    # NB-S with C = 2: NB over {a, c}
    s0 = Fr(9, 2) / 8 * Fr(7, 2) / 5 * Fr(4, 3) / 5
    s1 = Fr(7, 2) / 8 * Fr(3, 2) / 4 * Fr(7, 3) / 4
    np.testing.assert_allclose(proba(AnDE(n=0, subsumption=2), toy(), X_TOY)[0],
                               norm([s0, s1]), rtol=1e-12)


def mi_term(pxy, px, py):
    return 0.0 if pxy < 1e-6 or px * py < 1e-6 else pxy * math.log2(pxy / (px * py))


def toy_mi_weights():
    # P(y) = (#y + 1/2)/8: 4.5/8, 3.5/8. Attribute a: cells #(a,y): a0 → 3,1; a1 → 1,2;
    # P(a,y) = (# + 1/4)/8, P(a) = (#a + 1/2)/8 with #a0 = 4, #a1 = 3.
    py = (4.5 / 8, 3.5 / 8)
    wa = sum(mi_term((c + 0.25) / 8, (ca + 0.5) / 8, py[y])
             for ca, cells in ((4, (3, 1)), (3, (1, 2))) for y, c in enumerate(cells))
    # b: b0 → 3,0 (#3); b1 → 1,3 (#4)
    wb = sum(mi_term((c + 0.25) / 8, (cb + 0.5) / 8, py[y])
             for cb, cells in ((3, (3, 0)), (4, (1, 3))) for y, c in enumerate(cells))
    # c (3 values): c0 → 1,1 (#2); c1 → 1,2 (#3); c2 → 2,0 (#2); P(c,y) = (# + 1/6)/8,
    # P(c) = (#c + 1/3)/8
    wc = sum(mi_term((c + 1 / 6) / 8, (cc + 1 / 3) / 8, py[y])
             for cc, cells in ((2, (1, 1)), (3, (1, 2)), (2, (2, 0))) for y, c in enumerate(cells))
    return wa, wb, wc


def test_weighted_hand():
    wa, wb, wc = toy_mi_weights()
    learner = AnDE(n=1, weighting="mi").fit(toy())
    np.testing.assert_allclose(learner.weights(1), [wa, wb, wc], rtol=1e-12)
    ta, tb, tc = a1de_toy_terms()
    s = [wa * float(ta[y]) + wb * float(tb[y]) + wc * float(tc[y]) for y in (0, 1)]
    p = learner.predict_proba(test_rows(toy(), X_TOY))
    np.testing.assert_allclose(p[0], norm(s), rtol=1e-12)
    # -SW with C = 2: b deleted, weights of a and c only
    sa = (Fr(13, 4) / 8 * Fr(4, 3) / 4, Fr(5, 4) / 8 * Fr(1, 3) / 2)
    sc = (Fr(7, 6) / 8 * Fr(3, 2) / 2, Fr(13, 6) / 8 * Fr(1, 2) / 3)
    s = [wa * float(sa[y]) + wc * float(sc[y]) for y in (0, 1)]
    p = proba(AnDE(n=1, subsumption=2, weighting="mi"), toy(), X_TOY)
    np.testing.assert_allclose(p[0], norm(s), rtol=1e-12)


def test_a2de_weighted_matches_reference():
    for C in (None, 2):
        p = proba(AnDE(n=2, weighting="mi", subsumption=C), toy(), X_TOY + [(1, 0, 2)])
        ref = reference_proba(toy(), test_rows(toy(), X_TOY + [(1, 0, 2)]), 2, C=C, weighted=True)
        np.testing.assert_allclose(p, ref, rtol=1e-12)


# Missing values: a, b binary; r1 (0,0|0) r2 (0,?|0) r3 (1,1|1) r4 (?,1|1) r5 (0,1|1),
# plus a row with a missing class (ignored). N = 5, #y0 = 2, #y1 = 3.
MISS = [(0, 0, 0), (0, None, 0), (1, 1, 1), (None, 1, 1), (0, 1, 1), (1, 1, None)]


def test_missing_values_hand():
    train = make(MISS)
    # NB at x = (0,1): P(y) = 2.5/6, 3.5/6; P(a0|y0) = (2+1/2)/(2+1), P(b1|y0) = (0+1/2)/(1+1)
    # (one y0 row has b missing); P(a0|y1) = (1+1/2)/(2+1), P(b1|y1) = (3+1/2)/(3+1)
    s0 = Fr(5, 2) / 6 * Fr(5, 2) / 3 * Fr(1, 2) / 2
    s1 = Fr(7, 2) / 6 * Fr(3, 2) / 3 * Fr(7, 2) / 4
    np.testing.assert_allclose(proba(AnDE(n=0), train, [(0, 1)])[0], norm([s0, s1]), rtol=1e-12)
    # A1DE at x = (0,1): N − miss_a = N − miss_b = 4.
    # parent a0: #(y,a0) = 2, 1 → (2+1/4)/5, (1+1/4)/5;
    #   b1: #(y,a0,b1) = 0, 1; #(y,a0,b missing) = 1, 0 → (0+1/2)/(2−1+1), (1+1/2)/(1−0+1)
    # parent b1: #(y,b1) = 0, 3 → (0+1/4)/5, (3+1/4)/5;
    #   a0: #(y,b1,a0) = 0, 1; #(y,b1,a missing) = 0, 1 → (0+1/2)/(0+1), (1+1/2)/(3−1+1)
    s0 = Fr(9, 4) / 5 * Fr(1, 2) / 2 + Fr(1, 4) / 5 * Fr(1, 2) / 1
    s1 = Fr(5, 4) / 5 * Fr(3, 2) / 2 + Fr(13, 4) / 5 * Fr(3, 2) / 3
    np.testing.assert_allclose(proba(AnDE(n=1), train, [(0, 1)])[0], norm([s0, s1]), rtol=1e-12)
    # missing at test time: x = (0,?) → A1DE over {a}: P(y,a0) only
    np.testing.assert_allclose(proba(AnDE(n=1), train, [(0, None)])[0],
                               norm([Fr(9, 4), Fr(5, 4)]), rtol=1e-12)
    # A2DE at x = (0,?): no pair → A1DE over {a}
    np.testing.assert_allclose(proba(AnDE(n=2), train, [(0, None)])[0],
                               norm([Fr(9, 4), Fr(5, 4)]), rtol=1e-12)
    # all values missing → class prior (m-estimate) for every order and variant
    for n in range(4):
        for kw in ({}, {"subsumption": 0}, {"weighting": "mi"}):
            np.testing.assert_allclose(proba(AnDE(n=n, **kw), train, [(None, None)])[0],
                                       [2.5 / 6, 3.5 / 6], rtol=1e-12)


def test_mi_weights_with_missing_values_hand():
    # MISS: N = 5, #y = 2, 3 → P(y) = 2.5/6, 3.5/6. Attribute a (binary) is missing in one
    # row (N − miss_a = 4): #(a0,y) = 2, 1; #(a1,y) = 0, 1. P(a,y) = (# + 1/4)/(4 + 1).
    # P(a) = (#a + 1/2)/(D + 1): D = N = 5 ("reference", the paper's A1DE code) or
    # D = N − miss_a = 4 ("consistent"). Attribute b likewise: #(b0,y) = 1, 0; #(b1,y) = 0, 3.
    train = make(MISS)
    py = (2.5 / 6, 3.5 / 6)

    def w(cells, D):
        tot = 0.0
        for row in cells:
            px = (sum(row) + 0.5) / (D + 1)
            tot += sum(mi_term((c + 0.25) / 5, px, py[y]) for y, c in enumerate(row))
        return tot

    a_cells, b_cells = ((2, 1), (0, 1)), ((1, 0), (0, 3))
    ref = AnDE(n=1, weighting="mi").fit(train)
    assert ref.mi_estimate == "reference"
    np.testing.assert_allclose(ref.weights(1), [w(a_cells, 5), w(b_cells, 5)], rtol=1e-12)
    con = AnDE(n=1, weighting="mi", mi_estimate="consistent").fit(train)
    np.testing.assert_allclose(con.weights(1), [w(a_cells, 4), w(b_cells, 4)], rtol=1e-12)
    assert abs(ref.weights(1)[0] - con.weights(1)[0]) > 1e-3
    # A2DE: D_s = N − miss(s) in both modes (the pair (a, b) is present in 3 rows)
    for est in ("reference", "consistent"):
        a2 = AnDE(n=2, weighting="mi", mi_estimate=est).fit(train)
        np.testing.assert_array_equal(
            a2.weights(2), AnDE(n=2, weighting="mi").fit(train).weights(2))
    with pytest.raises(LearnerError, match="mi_estimate"):
        AnDE(n=1, mi_estimate="paper")


def test_mi_estimates_agree_without_missing_values():
    train = random_data(60, 5, [2, 3, 2, 4, 3], 3, seed=5)
    test = random_data(20, 5, [2, 3, 2, 4, 3], 3, seed=6, missing=0.1)
    for sr in (None, 100):
        ref = AnDE(n=1, weighting="mi", subsumption=sr).fit(train)
        con = AnDE(n=1, weighting="mi", subsumption=sr, mi_estimate="consistent").fit(train)
        np.testing.assert_array_equal(ref.weights(1), con.weights(1))
        np.testing.assert_array_equal(ref.predict_proba(test), con.predict_proba(test))


def test_unseen_parent_value_falls_back():
    # a declares 3 values, a2 never occurs in training.
    train = make(MISS, cards=[3, 2])
    # A1DE at x = (2,1): parent a2 has δ = 0 (skipped); parent b1 (#=3) is used with child
    # a2: P(y,b1) = (#(y,b1) + 1/(2·2))/(4+1), P(a2|y,b1) = (0 + 1/3)/(#(y,b1) − #(y,b1,a?) + 1):
    #   y0: (0+1/4)/5 · (0+1/3)/(0−0+1);  y1: (3+1/4)/5 · (0+1/3)/(3−1+1)
    s0 = Fr(1, 4) / 5 * Fr(1, 3) / 1
    s1 = Fr(13, 4) / 5 * Fr(1, 3) / 3
    np.testing.assert_allclose(proba(AnDE(n=1), train, [(2, 1)])[0], norm([s0, s1]), rtol=1e-12)
    # A2DE at x = (2,1): the only pair (a2,b1) is unseen → A1DE (same result)
    np.testing.assert_allclose(proba(AnDE(n=2), train, [(2, 1)])[0], norm([s0, s1]), rtol=1e-12)
    # A2DE at x = (1,0): #(a1,b0) = 0 → A1DE; frequency limit 2 → no single parent either → NB
    t = [(1, 0)]
    np.testing.assert_allclose(proba(AnDE(n=2), train, t), proba(AnDE(n=1), train, t), rtol=1e-13)
    np.testing.assert_allclose(proba(AnDE(n=2, frequency_limit=2), train, t),
                               proba(AnDE(n=0), train, t), rtol=1e-13)


def test_subsumption_tie_deletes_higher_index_only():
    # attribute 2 is a copy of attribute 0 but declares 3 values (so it is distinguishable
    # through m/|X|). #(x_0) = #(x_2) = #(x_0,x_2) > C: only attribute 2 must be deleted.
    base = random_data(300, 3, [2, 3, 2], 2, seed=5)
    X = base.X.copy()
    X[:, 2] = X[:, 0]
    atts = base.attributes[:2] + (Attribute("copy", ("v0", "v1", "v2")),)
    dup = base.replace(attributes=atts, X=X)
    without = base.replace(attributes=base.attributes[:2], X=X[:, :2])
    without_low = base.replace(attributes=base.attributes[1:2] + atts[2:], X=X[:, 1:])
    for n in (1, 2):
        got = AnDE(n=n, subsumption=10).fit(dup).predict_proba(dup)
        want = AnDE(n=n).fit(without).predict_proba(without)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        other = AnDE(n=n).fit(without_low).predict_proba(without_low)
        assert not np.allclose(got, other)  # deleting the lower index would differ


# ----------------------------------------------------------------------------------------------
# reference comparison on random data (missing values, SR, weights, frequency limit)
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_reference_random(seed):
    train = random_data(40, 5, [2, 3, 1, 4, 2], 3, seed=seed, missing=0.12)
    y = train.y.copy()
    y[:2] = -1
    train = train.replace(y=y)
    test = random_data(12, 5, [2, 3, 1, 4, 2], 3, seed=seed + 100, missing=0.2)
    for n in range(4):
        for C in (None, 2):
            for w, est in ((None, "reference"), ("mi", "reference"), ("mi", "consistent")):
                F = 1 + (n + seed) % 2
                got = AnDE(n=n, subsumption=C, weighting=w, frequency_limit=F,
                           mi_estimate=est).fit(train).predict_proba(test)
                want = reference_proba(train, test, n, F=F, C=C, weighted=w == "mi",
                                       mi_estimate=est)
                np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-14,
                                           err_msg=f"n={n} C={C} w={w} {est}")


def test_matches_reference_complete_training_data():
    # no missing training values (the fast dense paths); test rows with missing values and
    # values never seen in training (declared cardinalities larger than the values used)
    train = random_data(50, 5, [2, 3, 2, 4, 3], 3, seed=11)
    X = train.X.copy()
    X[:, 3] = np.minimum(X[:, 3], 2)  # value 3 of attribute 3 never occurs
    train = train.replace(X=X)
    test = random_data(20, 5, [2, 3, 2, 4, 3], 3, seed=12, missing=0.15)
    for n in range(4):
        for C in (None, 3):
            for w in (None, "mi"):
                got = AnDE(n=n, subsumption=C, weighting=w).fit(train).predict_proba(test)
                want = reference_proba(train, test, n, C=C, weighted=w == "mi")
                np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-14,
                                           err_msg=f"n={n} C={C} w={w}")


# ----------------------------------------------------------------------------------------------
# identities
# ----------------------------------------------------------------------------------------------
def test_identities():
    train = random_data(200, 6, [3, 2, 3, 4, 2, 5], 3, seed=3, missing=0.05)
    test = random_data(50, 6, [3, 2, 3, 4, 2, 5], 3, seed=4, missing=0.05)
    for n in (0, 1, 2):
        plain = AnDE(n=n).fit(train).predict_proba(test)
        # C ≥ data size: subsumption never fires
        np.testing.assert_array_equal(AnDE(n=n, subsumption=10**6).fit(train).predict_proba(test),
                                      plain)
        # n = 0 ignores weights
        if n == 0:
            np.testing.assert_array_equal(AnDE(n=0, weighting="mi").fit(train).predict_proba(test),
                                          plain)
    # all-zero MI weights (single-valued attributes) → equal weights → unweighted
    const = make([(0, 0, y) for y in (0, 1, 1, 0, 1)], cards=[1, 1])
    t = test_rows(const, [(0, 0), (0, None)])
    for n in (1, 2):
        w = AnDE(n=n, weighting="mi").fit(const)
        assert np.all(w.weights(n) == 0)
        np.testing.assert_allclose(w.predict_proba(t), AnDE(n=n).fit(const).predict_proba(t),
                                   rtol=1e-14)
    # all-equal weights: two identical attributes
    X = train.X[:, :1].repeat(2, axis=1)
    twin = Attribute("b", train.attributes[0].values)
    two = train.replace(attributes=(train.attributes[0], twin), X=X)
    w = AnDE(n=1, weighting="mi").fit(two)
    assert w.weights(1)[0] == w.weights(1)[1] > 0
    np.testing.assert_allclose(w.predict_proba(two), AnDE(n=1).fit(two).predict_proba(two),
                               rtol=1e-12)


def test_derive_shares_counts():
    train = random_data(200, 6, [3, 2, 3, 4, 2, 5], 3, seed=3, missing=0.05)
    a2 = AnDE(n=2).fit(train)
    for name in ("A2DE-S", "A2DE-W", "A2DE-SW", "A1DE", "A1DE-SW", "NB"):
        spec = registry.get(name)
        derived = a2.derive(**spec.defaults)
        assert derived.counts_ is a2.counts_
        fresh = registry.create(name).fit(train)
        np.testing.assert_allclose(derived.predict_proba(train), fresh.predict_proba(train),
                                   rtol=1e-13)
    with pytest.raises(LearnerError):
        AnDE(n=1).fit(train).derive(n=3)


def test_partial_fit_chunks_equal_single_fit():
    train = random_data(300, 5, [3, 2, 3, 4, 2], 3, seed=8, missing=0.0)
    X = train.X.copy()
    X[150:, 1] = np.where(np.arange(150) % 7 == 0, np.nan, X[150:, 1])  # missing only later
    train = train.replace(X=X)
    test = random_data(40, 5, [3, 2, 3, 4, 2], 3, seed=9, missing=0.1)
    whole = AnDE(n=2, weighting="mi", subsumption=5).fit(train)
    chunked = AnDE(n=2, weighting="mi", subsumption=5)
    for lo in range(0, 300, 70):
        chunked.partial_fit(train.take(np.arange(lo, min(lo + 70, 300))))
    np.testing.assert_array_equal(chunked.predict_proba(test), whole.predict_proba(test))
    for s in ([0], [1, 3], [0, 2, 4]):
        np.testing.assert_array_equal(chunked.counts_.joint(s), whole.counts_.joint(s))
    np.testing.assert_array_equal(chunked.counts_.child_missing([0, 2], 1),
                                  whole.counts_.child_missing([0, 2], 1))


# ----------------------------------------------------------------------------------------------
# counting layer
# ----------------------------------------------------------------------------------------------
def _random_codes(rng, n, cards, p_missing):
    """n rows of codes below `cards`, each missing (−1) with probability p_missing."""
    X = np.stack([rng.integers(0, c, n) for c in cards], 1)
    X[rng.random(X.shape) < p_missing] = -1
    return X


@pytest.mark.parametrize("bitmap_cells", [0, 512])
def test_counts_match_brute_force_dense_and_sparse(monkeypatch, bitmap_cells):
    """Both counting kernels: one increment per row (bitmap_cells = 0) and the bit sets of
    the small dense blocks (the default)."""
    monkeypatch.setattr(counts_mod, "BITMAP_MAX_CELLS", bitmap_cells)
    rng = np.random.default_rng(0)
    n, cards, K = 200, [2, 3, 1, 4, 60], 3
    X = _random_codes(rng, n, cards, 0.1)
    y = rng.integers(0, K, n)
    monkeypatch.setattr(counts_mod, "SPARSE_MIN_CELLS", 64)
    monkeypatch.setattr(counts_mod, "SPARSE_ROW_FACTOR", 0)
    ct = AnDECounts(cards, K, 3, parent_levels=2)
    ct.partial_fit(X[:90], y[:90])
    ct.partial_fit(X[90:], y[90:])
    assert (ct.store.kind == counts_mod.KIND_SPARSE).any()
    for l in (1, 2, 3):
        for s in itertools.combinations(range(5), l):
            ref = np.zeros([cards[a] for a in s] + [K], dtype=int)
            for r in range(n):
                if all(X[r, a] >= 0 for a in s):
                    ref[tuple(X[r, a] for a in s) + (y[r],)] += 1
            np.testing.assert_array_equal(ct.joint(s), ref)
    for s in itertools.combinations(range(5), 2):
        for c in set(range(5)) - set(s):
            ref = np.zeros([cards[a] for a in s] + [K], dtype=int)
            for r in range(n):
                if all(X[r, a] >= 0 for a in s) and X[r, c] < 0:
                    ref[tuple(X[r, a] for a in s) + (y[r],)] += 1
            np.testing.assert_array_equal(ct.child_missing(s, c), ref)
    np.testing.assert_array_equal(ct.class_counts, np.bincount(y, minlength=K))
    np.testing.assert_array_equal(ct.pair_counts(0, 4), ct.joint([0, 4]).sum(-1))
    np.testing.assert_array_equal(ct.value_counts(4), [np.sum(X[:, 4] == v) for v in range(60)])


@pytest.mark.parametrize("K, cards", [(2, [3, 1, 4, 7, 2]), (26, [3, 1, 4, 7, 2]),
                                      (3, [3, 1, 4, 7, 2, 5, 3])])
def test_row_loop_blocks_with_and_without_missing_values(monkeypatch, K, cards):
    """The row loop (`count_kernel`, bit sets off) on blocks of 1–4 attributes over chunks
    with no missing value (its loop without a test per row), with missing values of one
    attribute and of all: every table = brute force. Attribute 0 only leads blocks (its
    missing values are looked for without a combined value-class code of its own). Blocks
    of 2 and 3 sharing their last attribute go four, two or one to a pass
    (`_count_grouped`): 1 to 6 pairs and 1 to 15 triples end with each attribute here,
    and the blocks come in lexicographic order, not grouped."""
    monkeypatch.setattr(counts_mod, "BITMAP_MAX_CELLS", 0)
    rng = np.random.default_rng(K)
    n, d = 3000, len(cards)
    X = _random_codes(rng, n, cards, 0.0)
    X[1000:2000, 0][rng.random(1000) < 0.1] = -1  # (then attribute 0 alone missing)
    X[2000:][rng.random((1000, d)) < 0.1] = -1  # (the last 1,000 rows: any)
    y = rng.integers(0, K, n)
    sets = [s for l in range(1, 5) for s in itertools.combinations(range(d), l)
            if s != (0,)]
    store = BlockStore(cards, K, sets)
    for part in (slice(0, 1000), slice(1000, 2000), slice(2000, n)):
        store.add(X[part], y[part])
    assert (store.kind == counts_mod.KIND_DENSE).all()
    for b, s in enumerate(sets):
        ref = np.zeros([cards[a] for a in s] + [K], dtype=int)
        for r in range(n):
            if all(X[r, a] >= 0 for a in s):
                ref[tuple(X[r, a] for a in s) + (y[r],)] += 1
        np.testing.assert_array_equal(store.block(b).reshape(ref.shape), ref)


def test_four_attribute_counts_match_brute_force():
    """The dense fast path of blocks of four attributes (A3DE's level), with missing values."""
    rng = np.random.default_rng(1)
    n, cards, K = 150, [2, 3, 1, 4, 5], 2
    X = _random_codes(rng, n, cards, 0.1)
    y = rng.integers(0, K, n)
    ct = AnDECounts(cards, K, 4, parent_levels=3)
    ct.partial_fit(X[:70], y[:70])
    ct.partial_fit(X[70:], y[70:])
    assert not (ct.store.kind == counts_mod.KIND_SPARSE).any()
    for s in itertools.combinations(range(5), 4):
        ref = np.zeros([cards[a] for a in s] + [K], dtype=int)
        for r in range(n):
            if all(X[r, a] >= 0 for a in s):
                ref[tuple(X[r, a] for a in s) + (y[r],)] += 1
        np.testing.assert_array_equal(ct.joint(s), ref)


@pytest.mark.parametrize("level", [1, 2, 3])
def test_bit_set_counting_equals_the_row_loop(monkeypatch, level):
    """The bit-set kernel (values compared 64 rows at a time, or set row by row for an
    attribute of more than 8 values, `_set_bits`' four runs of whole words — chunks of 5
    words: runs of 2, 2, 1 and none; missing-child conditions; several chunks with a
    partial last word) and threads over parts of the rows give the row loop's tables."""
    rng = np.random.default_rng(level)
    n, cards, K = 5000, [2, 3, 9, 1, 4, 12, 3], 3
    X = _random_codes(rng, n, cards, 0.05)
    X[:, 3] = 0  # single-valued, never missing
    y = rng.integers(0, K, n)

    def counted(bitmap_cells, jobs=1, columns=False):
        monkeypatch.setattr(counts_mod, "BITMAP_MAX_CELLS", bitmap_cells)
        ct = AnDECounts(cards, K, level, parent_levels=max(level - 1, 1), rows_hint=n)
        for part in (slice(0, 1234), slice(1234, n)):
            codes = np.ascontiguousarray(X[part].T, dtype=np.int8) if columns else X[part]
            ct.partial_fit(codes, y[part], columns=columns, n_jobs=jobs)
        return ct

    ref = counted(0)
    monkeypatch.setattr(counts_mod, "_BITMAP_ROWS", 320)  # chunks of 5 words, 1234 = 3·320+274
    monkeypatch.setattr(counts_mod, "PARALLEL_MIN_ROWS", 100)
    for got in (counted(512), counted(40), counted(512, jobs=2), counted(512, columns=True),
                counted(0, jobs=3)):
        np.testing.assert_array_equal(got.store.dense, ref.store.dense)
        np.testing.assert_array_equal(got.class_counts, ref.class_counts)
        assert got.has_missing.tolist() == ref.has_missing.tolist()
    plan = counted(512).store._bitmap_plan()
    assert plan[1].size == ref.store.n_blocks - (ref.store.kind == counts_mod.KIND_EMPTY).sum() \
        - ((ref.store.bsize > counts_mod.bitmap_cells(K)) |
           (ref.store.blen + (ref.store.bcond >= 0) > 3)).sum()
    assert counts_mod.bitmap_cells(K) == 512 * 2 // 3  # (bit sets per value and class)
    s = (0, 2, 5)[:level]
    want = np.zeros([cards[a] for a in s] + [K], dtype=int)
    ok = (X[:, list(s)] >= 0).all(1)
    np.add.at(want, tuple(X[ok][:, a] for a in s) + (y[ok],), 1)
    np.testing.assert_array_equal(counted(512).joint(s), want)


@pytest.mark.parametrize("K, p_missing", [(2, 0.0), (3, 0.05)])
def test_pairs_counted_off_a_dominant_value_equal_brute_force(monkeypatch, K, p_missing):
    """Pairs with an attribute that nearly always takes one value (`_skip_routes`: its
    other rows are listed from the complement of that value's bit set and counted, four
    pairs of one lead to a pass, and the value's cells are the other attribute's
    value-class counts less them — `_skip_count`), led by the pair's first attribute or
    its second, one to four pairs per lead, small blocks and ones above `BITMAP_CAP`, over
    chunks with a partial last word, with missing values of the lead (a slice of their
    own) and of the other attribute, among blocks of one and three attributes: every
    table = brute force."""
    rng = np.random.default_rng(K)
    n, cards = 3000, [40, 7, 3, 12, 2, 30]
    X = _random_codes(rng, n, cards, 0.0)
    for a, top in ((0, 5), (4, 1), (5, 0)):  # three attributes with one value in 50 rows
        X[:, a] = np.where(rng.random(n) < 0.98, top, X[:, a])
    X[rng.random(X.shape) < p_missing] = -1
    y = rng.integers(0, K, n)
    pairs = list(itertools.combinations(range(len(cards)), 2))
    sets = [(a,) for a in range(len(cards))] + pairs + [(1, 2, 4), (0, 3, 5)]
    monkeypatch.setattr(counts_mod, "_BITMAP_ROWS", 1280)  # chunks: 1280, 1280, 440 rows
    store = BlockStore(cards, K, sets)
    assert store.bsize.max() > counts_mod.BITMAP_CAP  # (40 × 30 × K: above the cap)
    store.add(X, y)
    assert counts_mod.bitmap_cells(K) == counts_mod.BITMAP_CAP
    assert store._plan[1].size == len(sets) - 1  # (all but the large triple from bit sets)
    for b, s in enumerate(sets):
        ref = np.zeros([cards[a] for a in s] + [K], dtype=int)
        ok = (X[:, list(s)] >= 0).all(1)
        np.add.at(ref, tuple(X[ok][:, a] for a in s) + (y[ok],), 1)
        np.testing.assert_array_equal(store.block(b), ref)


def test_column_codes_are_the_transposed_codes():
    rng = np.random.default_rng(3)
    # numpy below 4,096 values, the compiled copy above: tiles of 4,096 rows (the last
    # one part full), of 54 rows with 300 attributes; a value matrix in Fortran order
    # (copied to rows first) and wider code types
    for n, d, order in ((50, 4, "C"), (20_000, 4, "C"), (1_001, 300, "C"), (20_000, 5, "F")):
        X = rng.integers(0, 5, (n, d)).astype(float)
        X[rng.random(X.shape) < 0.1] = np.nan
        X = np.asarray(X, order=order)
        data = Dataset("c", tuple(Attribute(f"a{j}", tuple("vwxyz")) for j in range(d)),
                       Attribute("class", ("p", "q")), X, rng.integers(0, 2, n))
        for dtype in (np.int8, np.int16, np.int64):
            got = data.column_codes(dtype)
            assert got.dtype == dtype and got.flags.c_contiguous and got.shape == (d, n)
            np.testing.assert_array_equal(got, data.codes().T)
        # a code no attribute declares (258 would wrap to 2 in int8) is reported, not counted
        bad = X.copy()  # (none a code; NaN is `?`; infinity only where compiled: numpy's
        bad[7, 2], bad[8, 2] = 258.0, -3.0  # cast of it warns)
        bad[9, 2] = np.inf if n * d >= 4096 else 300.0
        bad = data.replace(X=bad)
        assert bad.column_codes(np.int8)[2, 7:10].tolist() == [-2, -2, -2]
        for missing in ("skip", "value"):  # not taken for a `?` either
            with pytest.raises(LearnerError, match="attribute 3: value code outside"):
                AnDE(n=1, missing=missing).fit(bad)


def test_count_tables_of_one_shape_share_their_layout_not_their_counts():
    """`AnDECounts` of the same cardinalities, classes, levels and sparse threshold lay
    their blocks out once (`_template`): two models share the layout arrays, count
    independently, and one declaring missing-child blocks leaves the other's layout as it
    was; a different rows hint that changes the sparse threshold gets its own layout."""
    rng = np.random.default_rng(5)
    cards, K = [3, 2, 4, 2], 3
    X = _random_codes(rng, 200, cards, 0.0)
    y = rng.integers(0, K, 200)
    a, b = AnDECounts(cards, K, 2, rows_hint=200), AnDECounts(cards, K, 2, rows_hint=200)
    assert a.store.off is b.store.off and a.store.dense is not b.store.dense
    from workbench.learners.counting.ande import _template
    kept = _template(a.cards, K, 2, 200)[0]  # (no cells held)
    assert kept.off is a.store.off and kept.dense.strides == (0,)
    assert kept.dense.shape == a.store.dense.shape and not kept.dense.flags.writeable
    layout = (b.store.n_blocks, b.store.off.copy(), b.store.kind.copy())
    miss = X.copy()
    miss[::7, 2] = -1
    a.partial_fit(miss, y)  # declares attribute 2's missing-child blocks in a only
    assert a.store.n_blocks > layout[0] and b.store.dense.sum() == 0
    assert b.store.n_blocks == layout[0]
    np.testing.assert_array_equal(b.store.off, layout[1])
    np.testing.assert_array_equal(b.store.kind, layout[2])
    b.partial_fit(X, y)
    fresh = AnDECounts(cards, K, 2).partial_fit(X, y)  # (a third model: the same counts)
    np.testing.assert_array_equal(b.store.dense, fresh.store.dense)
    big = AnDECounts([300, 400], 2, 2, rows_hint=1)  # 240,000 cells: sparse for one row,
    wide = AnDECounts([300, 400], 2, 2, rows_hint=100_000)  # dense for many
    assert big.store.kind[-1] != wide.store.kind[-1]


def test_laid_out_stores_share_their_layout_not_their_counts():
    """`laid_out` (KDB's structure counts): stores of the same cardinalities, classes,
    blocks and sparse threshold share the layout arrays and plan, count independently and
    as a store laid out anew; other blocks or another sparse threshold get a layout of
    their own."""
    from workbench.learners.counting.blocks import laid_out

    rng = np.random.default_rng(11)
    cards, K = np.array([3, 2, 40, 30]), 2
    X = _random_codes(rng, 500, cards, 0.05)
    y = rng.integers(0, K, 500)
    pairs = np.array(list(itertools.combinations(range(4), 2)))
    a, b = laid_out(cards, K, pairs, 500), laid_out(cards, K, pairs, 500)
    assert a.off is b.off and a._plan is b._plan and a.dense is not b.dense
    a.add(X, y)
    assert b.dense.sum() == 0
    fresh = BlockStore(cards, K, pairs, rows_hint=500)
    fresh.add(X, y)
    np.testing.assert_array_equal(a.dense, fresh.dense)
    assert laid_out(cards, K, pairs[:3], 500).off is not a.off
    assert BlockStore.sparse_threshold(10**7) != BlockStore.sparse_threshold(500)
    assert laid_out(cards, K, pairs, 10**7).off is not a.off
    assert laid_out(cards, K, pairs, 501).off is a.off  # (the same threshold: shared)


def test_block_store_generic_and_merge():
    codes = np.array([[0, 1, -1], [1, 1, 0], [0, 0, 1], [0, 1, 1]])
    y = np.array([0, 1, 1, 0])
    a = BlockStore([2, 2, 2], 2, blocks=[(2, 0), (1,)])
    a.add(codes[:2], y[:2])
    b = BlockStore([2, 2, 2], 2, blocks=[(2, 0), (1,)])
    b.add(codes[2:], y[2:])
    a.merge(b)
    # block (2,0): rows 2,3,4 → (x2,x0,y) = (0,1,1), (1,0,1), (1,0,0)
    want = np.zeros((2, 2, 2), dtype=int)
    want[0, 1, 1] = want[1, 0, 1] = want[1, 0, 0] = 1
    np.testing.assert_array_equal(a.block(0), want)
    # block (1,): x1 = 1,1,0,1 with y = 0,1,1,0 → (1,y0) = 2, (1,y1) = 1, (0,y1) = 1
    np.testing.assert_array_equal(a.block(1), [[0, 1], [2, 1]])
    np.testing.assert_array_equal(a.block_totals(), [3, 4])
    assert colex_combinations(4, 2).tolist() == [[0, 1], [0, 2], [1, 2], [0, 3], [1, 3], [2, 3]]


def test_id_attribute_tables_stay_small():
    # a 3,000-valued ID attribute: dense triples with it would be 60·60/2·3000·25·3 cells
    n = 600
    rng = np.random.default_rng(1)
    cards = [3000] + [5] * 20
    X = np.column_stack([np.arange(n)] + [rng.integers(0, 5, n) for _ in range(20)])
    ct = AnDECounts(cards, 3, 3, parent_levels=2, rows_hint=n)
    ct.partial_fit(X, rng.integers(0, 3, n))
    assert ct.nbytes < 0.05 * ct.compact_bound_cells() * 4


# ----------------------------------------------------------------------------------------------
# many attributes: no underflow
# ----------------------------------------------------------------------------------------------
@needs_shared
@pytest.mark.parametrize("n", [2, 3])
def test_sonar_finite_normalised(n):
    from workbench.data.arff import load_arff
    from workbench.discretize import fit_discretizer

    data = load_arff(shared_file("sonar"))
    rng = np.random.default_rng(1)
    perm = rng.permutation(data.n_instances)
    tr, te = data.take(perm[:104]), data.take(perm[104:])
    disc = fit_discretizer("mdl", tr)
    tr, te = disc.transform(tr), disc.transform(te)
    for kw in ({}, {"subsumption": 100, "weighting": "mi"}):
        p = AnDE(n=n, **kw).fit(tr).predict_proba(te)
        assert p.shape == (te.n_instances, 2)
        assert np.isfinite(p).all()
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
        assert (p.argmax(1) == te.y).mean() > 0.6


def test_many_attributes_no_underflow():
    # 150 attributes that each favour class 0 strongly: products reach ~1e-400
    rng = np.random.default_rng(2)
    n, d = 80, 150
    y = rng.integers(0, 2, n)
    X = np.where(rng.random((n, d)) < 0.97, y[:, None], 1 - y[:, None]).astype(float)
    atts = tuple(Attribute(f"a{i}", ("u", "v")) for i in range(d))
    data = Dataset("wide", atts, Attribute("c", ("p", "q")), X, y)
    for n_ in (0, 1):
        p = AnDE(n=n_).fit(data).predict_proba(data)
        assert np.isfinite(p).all()
        assert (p.argmax(1) == y).all()


# ----------------------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------------------
def test_bad_input():
    with pytest.raises(LearnerError, match="unknown learner"):
        registry.create("A4DE")
    with pytest.raises(LearnerError, match="unknown parameter 'k'"):
        registry.create("A1DE", k=3)
    with pytest.raises(LearnerError, match="'m' must be"):
        registry.create("A1DE", m="abc")
    with pytest.raises(LearnerError, match="'weighting'"):
        registry.create("A2DE", weighting="entropy")
    with pytest.raises(LearnerError, match="'n' must be"):
        AnDE(n=4)
    with pytest.raises(LearnerError, match="'m' must be"):
        AnDE(m=0)
    numeric = Dataset("num", (Attribute("x"),), Attribute("c", ("a", "b")),
                      np.array([[0.5], [1.5]]), np.array([0, 1]))
    with pytest.raises(LearnerError, match="numeric attribute"):
        AnDE(n=1).fit(numeric)
    with pytest.raises(LearnerError, match="before fit"):
        AnDE(n=1).predict_proba(toy())
    other = make(TOY, cards=[2, 2, 4])
    with pytest.raises(LearnerError, match="header differs"):
        AnDE(n=1).fit(toy()).predict_proba(other)
    assert issubclass(LearnerError, WorkbenchError)


def test_classes_absent_in_training():
    # K = 3 declared, class 2 never seen: it still gets (m-estimated) probability
    train = make(TOY, classes=3, cards=[2, 2, 3])
    for n in range(3):
        p = proba(AnDE(n=n), train, X_TOY)
        assert p.shape == (1, 3) and 0 < p[0, 2] < p[0].max()
        np.testing.assert_allclose(p.sum(), 1.0)


def _masked(n, train, test, parent_ok, child_ok):
    model = AnDE(n=n).fit(train)
    model.parent_mask_ = np.asarray(parent_ok, dtype=bool)
    model.child_mask_ = np.asarray(child_ok, dtype=bool)
    return model.predict_proba(test)


@pytest.mark.parametrize("n", [1, 2])
def test_attribute_masks_equal_dropping_the_attribute(n):
    """An attribute that is neither parent nor child scores like a data set without it
    (no missing values: every row has a used parent set, so the NB fallback never runs)."""
    cards = [3, 2, 3, 4, 2, 5]
    train = random_data(300, 6, cards, 3, seed=7)
    test = random_data(60, 6, cards, 3, seed=8)
    keep = [0, 1, 3, 4, 5]
    drop = lambda d: d.replace(attributes=tuple(d.attributes[i] for i in keep),  # noqa: E731
                               X=d.X[:, keep])
    ok = [i != 2 for i in range(6)]
    np.testing.assert_allclose(_masked(n, train, test, ok, ok),
                               AnDE(n=n).fit(drop(train)).predict_proba(drop(test)), rtol=1e-12)


def test_a1de_parent_mask_is_a_sum_of_spodes():
    """A1DE restricted to parents {p, q}: P(y|x) ∝ Σ_{s ∈ {p,q}} P(y, x_s) Π_{c ≠ s} P(x_c|y, x_s),
    children masked out drop their factor from every SPODE (hand-built from the counts)."""
    rows = [(0, 1, 0, 0), (1, 1, 0, 1), (0, 0, 1, 1), (1, 0, 1, 0), (0, 1, 1, 1),
            (1, 1, 1, 1)]
    train = make(rows)
    x = (0, 1, 1)
    N, K, cards = len(rows), 2, [2, 2, 2]

    def c(cond):  # #(rows with r[column] == value for every (column, value))
        return sum(all(r[k] == v for k, v in cond) for r in rows)

    def spode(s, y, children):
        v = (c([(s, x[s]), (3, y)]) + 1 / (K * cards[s])) / (N + 1)
        for ch in children:
            if ch != s:
                v *= (c([(s, x[s]), (ch, x[ch]), (3, y)]) + 1 / cards[ch]) / \
                     (c([(s, x[s]), (3, y)]) + 1)
        return v

    expect = norm([spode(0, y, [0, 2]) + spode(2, y, [0, 2]) for y in (0, 1)])
    got = _masked(1, train, test_rows(train, [x]), [True, False, True], [True, False, True])
    np.testing.assert_allclose(got[0], expect, rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# single-valued attributes present in every training row: left out of the counts
# ----------------------------------------------------------------------------------------------
class CountEverything(AnDE):
    """The literal SPEC §2 computation: single-valued attributes counted like any other."""
    leave_out_constants = False


def _with_constants(n, d, cards, seed, missing=0.0):
    data = random_data(n, d, cards, 2, seed=seed, missing=missing)
    X = data.X.copy()
    X[:, 0] = np.where(np.isnan(X[:, 0]), np.nan, np.minimum(X[:, 0], cards[0] - 1))
    return data.replace(X=X)


@pytest.mark.parametrize("cards", [[2, 1, 3, 1, 2, 1], [1, 1, 1], [3, 2, 1], [2, 1, 1, 1, 1]])
def test_single_valued_attributes_left_out_match_the_reference(cards):
    """Order n over u present constants = Σ_j C(u, j) · level n − j over the counted
    attributes, with SR (a constant's value occurs in all N rows), MI weights (a set with
    constants weighs as the set without them; only constants: 0), F and the fallback."""
    train = _with_constants(40, len(cards), cards, seed=5)
    test = _with_constants(15, len(cards), cards, seed=6, missing=0.25)
    for n in range(4):
        for C in (None, 3):
            for w, est in ((None, "reference"), ("mi", "reference"), ("mi", "consistent")):
                for F in (1, 2, 100):
                    model = AnDE(n=n, subsumption=C, weighting=w, mi_estimate=est,
                                 frequency_limit=F).fit(train)
                    assert model.constant_.tolist() == [c == 1 and n >= 2 for c in cards]
                    got = model.predict_proba(test)
                    want = reference_proba(train, test, n, F=F, C=C, weighted=w == "mi",
                                           mi_estimate=est)
                    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-14,
                                               err_msg=f"n={n} C={C} w={w} {est} F={F}")


def test_leaving_constants_out_changes_only_rounding_and_saves_tables():
    cards = [2, 1, 3, 1, 2, 1, 3]
    train = _with_constants(300, 7, cards, seed=1)
    X = train.X.copy()
    X[::9, 0] = np.nan  # a counted attribute with missing values
    train = train.replace(X=X)
    test = _with_constants(80, 7, cards, seed=2, missing=0.15)
    rng = np.random.default_rng(0)
    for n in (2, 3):  # orders 0 and 1 count them (test above)
        for kw in ({}, {"subsumption": 30}, {"weighting": "mi"}):
            new, old = AnDE(n=n, **kw).fit(train), CountEverything(n=n, **kw).fit(train)
            np.testing.assert_allclose(new.predict_proba(test), old.predict_proba(test),
                                       rtol=1e-12, atol=1e-15)
            assert new.model_bytes() < old.model_bytes()
            assert new.fit_report() == old.fit_report()  # Salem et al.'s layout of all
            for lev in range(1, n + 1):
                np.testing.assert_array_equal(new.weights(lev), old.weights(lev))
            pm, cm = rng.random(7) < 0.6, rng.random(7) < 0.7  # attribute masks
            for model in (new, old):
                model.parent_mask_, model.child_mask_, model._prepared = pm, cm, None
            np.testing.assert_allclose(new.predict_proba(test), old.predict_proba(test),
                                       rtol=1e-12, atol=1e-15, err_msg=f"{n} {kw} masks")


def test_a_left_out_constant_missing_in_a_later_chunk_is_counted_from_then_on():
    cards = [3, 1, 2, 1, 4]
    train = _with_constants(200, 5, cards, seed=8)
    X = train.X.copy()
    X[120:, 1] = np.where(np.arange(80) % 5 == 0, np.nan, X[120:, 1])
    X[150:, 3] = np.where(np.arange(50) % 3 == 0, np.nan, X[150:, 3])
    train = train.replace(X=X)
    test = _with_constants(40, 5, cards, seed=9, missing=0.1)
    for n, C, w in ((2, None, None), (2, 5, "mi"), (3, None, "mi")):
        whole = AnDE(n=n, subsumption=C, weighting=w).fit(train)
        chunked = AnDE(n=n, subsumption=C, weighting=w)
        for lo in range(0, 200, 60):
            chunked.partial_fit(train.take(np.arange(lo, min(lo + 60, 200))))
            assert chunked.constant_.tolist() == [False, lo < 120, False, lo < 120, False]
        np.testing.assert_array_equal(chunked.predict_proba(test), whole.predict_proba(test))
        for s in ([1], [1, 3], [0, 1, 4]):
            if len(s) <= whole.counts_.max_level:
                np.testing.assert_array_equal(chunked.counts_.joint(s), whole.counts_.joint(s))
        np.testing.assert_array_equal(chunked.counts_.child_missing([1], 3),
                                      whole.counts_.child_missing([1], 3))
        np.testing.assert_allclose(whole.predict_proba(test),
                                   reference_proba(train, test, n, C=C, weighted=w == "mi"),
                                   rtol=1e-11, atol=1e-14)


# ----------------------------------------------------------------------------------------------
# memory: the layout sizes (Salem et al., Section 3), model_bytes and the budget
# ----------------------------------------------------------------------------------------------
def test_layout_sizes_on_the_papers_aode_example():
    from workbench.learners.counting.budget import elementary_symmetric, layout_cells
    # attributes A (2 values) and B (3 values): the 2-combinations a_i b_j are 6 of the
    # naive matrix's C(5, 2) = 10 off-diagonal cells (a1a2, b1b2, b1b3, b2b3 are impossible)
    assert elementary_symmetric([2, 3], 2) == [1, 5, 6]
    assert math.comb(5, 2) == 10
    compact, naive = layout_cells([2, 3], 1, 1)
    assert (compact, naive) == (5 + 6, 5 + 10)  # + the 5 single values on the diagonal
    assert layout_cells([2, 3], 3, 1) == (33, 45)  # per class
    # A2DE: triples over 4 attributes of 2 values: C(4,3)·8 = 32 possible, C(8+2, 3) naive
    compact, naive = layout_cells([2, 2, 2, 2], 1, 2)
    assert compact == 8 + 6 * 4 + 4 * 8 and naive == math.comb(10, 3)


def test_the_all_dense_bound_is_never_below_the_block_by_block_estimate():
    """`check_budget` skips sizing block by block when the all-dense bound fits: the bound
    (every block's cells at 4 bytes, and the bookkeeping) equals the estimate when every
    block is dense and exceeds it when some are sparse (16 bytes per row < 4 per cell)."""
    from workbench.learners.counting.budget import elementary_symmetric, estimate_block_bytes

    small = ([3, 4, 2, 5], 3, [1, 2, 3], 300, 2)
    assert estimate_block_bytes(*small, enumerate_blocks=0) == estimate_block_bytes(*small)
    cards, K = [300, 400, 2, 500, 7], 4  # pairs and triples of 300 · 400 … cells: sparse
    wide = (cards, K, [1, 2, 3], 1000, 1)
    bound = estimate_block_bytes(*wide, enumerate_blocks=0)
    e = elementary_symmetric(cards, 3)
    meta = [math.comb(5, l) * 16 * (3 * l + 8) for l in (0, 1, 2, 3)]
    assert bound == sum((2 if l < 3 else 1) * (meta[l] + e[l] * K * 4) for l in (1, 2, 3))
    assert estimate_block_bytes(*wide) < bound / 10


def test_model_bytes_is_the_sum_of_the_allocated_tables():
    train = make([[0, 1, 0], [1, 0, 1], [1, 1, 1], [0, 2, 0]], cards=[2, 3])
    model = registry.create("A1DE").fit(train)
    st = model.counts_.store
    assert model.model_bytes() == st.dense.nbytes + st.skeys.nbytes + st.svals.nbytes + \
        model.counts_.class_counts.nbytes
    # dense int32 cells: K·(|X_0| + |X_1| + |X_0|·|X_1|) plus int64 class counts
    assert model.model_bytes() == 4 * 2 * (2 + 3 + 6) + 8 * 2


def test_child_missing_and_joint_of_any_parent_set_or_a_clear_error():
    """Issue 35: child_missing([], c) returned an unrelated block. Every parent set from
    none to max_level − 1 parents is #(x_s, y, x_c missing) counted by hand (stored
    blocks and those derived from the joints alike); bad indices are one clear error."""
    rng = np.random.default_rng(3)
    n, cards, K = 120, [2, 3, 2, 4], 2
    X = _random_codes(rng, n, cards, 0.15)
    y = rng.integers(0, K, n)
    ct = AnDECounts(cards, K, 3, parent_levels=1)  # stored: one parent; derived: 0 and 2
    ct.partial_fit(X, y)
    for l in (0, 1, 2):
        for s in itertools.combinations(range(4), l):
            for c in set(range(4)) - set(s):
                ref = np.zeros([cards[a] for a in s] + [K], dtype=int)
                for r in range(n):
                    if all(X[r, a] >= 0 for a in s) and X[r, c] < 0:
                        ref[tuple(X[r, a] for a in s) + (y[r],)] += 1
                np.testing.assert_array_equal(ct.child_missing(s, c), ref, err_msg=f"{s} {c}")
    np.testing.assert_array_equal(ct.joint([]), np.bincount(y, minlength=K))
    for call, message in ((lambda: ct.child_missing([], 4), "attribute 4 is out of range"),
                          (lambda: ct.child_missing([-1], 0), "attribute -1 is out of range"),
                          (lambda: ct.child_missing([1, 1], 0), "given twice"),
                          (lambda: ct.child_missing([0, 2], 0), "child 0 is one of the parents"),
                          (lambda: ct.child_missing([0, 1, 2], 3), "at most 3 are counted"),
                          (lambda: ct.joint([0, 1, 2, 3]), "at most 3 are counted"),
                          (lambda: ct.joint([7]), "attribute 7 is out of range")):
        with pytest.raises(LearnerError, match=message):
            call()


def test_count_tables_over_the_memory_budget_fail_before_allocating(tmp_path, monkeypatch):
    import subprocess
    import sys
    rng = np.random.default_rng(0)
    lines = ["@relation wide"] + [f"@attribute a{i} {{0,1,2}}" for i in range(40)] + \
        ["@attribute class {x,y}", "@data"] + \
        [",".join(map(str, rng.integers(0, 3, 40))) + "," + "xy"[i % 2] for i in range(30)]
    path = tmp_path / "wide.arff"
    path.write_text("\n".join(lines) + "\n")
    env = {**__import__("os").environ, "WORKBENCH_MEMORY_BUDGET": "64M"}
    proc = subprocess.run([sys.executable, "-m", "workbench", "predict", "--learner", "A3DE",
                           "--train", str(path), "--test", str(path)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("error: A3DE on wide: the count tables would need about ")
    assert "over the memory budget of 0.1 GiB ($WORKBENCH_MEMORY_BUDGET" in proc.stderr
    monkeypatch.setenv("WORKBENCH_MEMORY_BUDGET", "lots")
    with pytest.raises(LearnerError, match="WORKBENCH_MEMORY_BUDGET='lots': expected bytes"):
        AnDE(n=1).fit(make([[0, 0], [1, 1]]))
    monkeypatch.setenv("WORKBENCH_MEMORY_BUDGET", "1G")
    AnDE(n=1).fit(make([[0, 0], [1, 1]]))  # small enough


def test_fit_report_gives_the_layout_and_the_fold_its_memory_saved():
    from workbench.evaluation.pipeline import FoldResult
    from workbench.learners.counting import layout_cells
    train = make([[0, 1, 0], [1, 0, 1], [1, 2, 1], [None, 2, 0]], cards=[2, 3])
    for n in (1, 2):
        rep = AnDE(n=n).fit(train).fit_report()
        # a0 has a missing value: the paper's v counts it as one more value (3 and 3)
        assert rep["layout_cells"] == list(layout_cells([3, 3], 2, 1))
    fold = FoldResult(0, 0, np.arange(1), np.ones((1, 2)) / 2, 0, 0, 0, 0, 4,
                      fit_report={"layout_cells": [6, 10]})
    assert fold.memory_saved == pytest.approx(0.4)
    assert fold.selected_parents is None


def test_subsumption_lists_delete_what_the_pairwise_counts_delete():
    """The per-value generalisation lists (built once per model) give the same deletions as
    reading #(x_i), #(x_i, x_j) per row: correlated attributes so that implications occur."""
    from workbench.learners.ande.predict import Generalisations, generalisations, with_bits

    rng = np.random.default_rng(3)
    base = rng.integers(0, 3, 400)
    X = np.column_stack([base, (base == 0).astype(int), np.minimum(base, 1),
                         rng.integers(0, 2, 400), rng.integers(0, 4, 400)]).astype(float)
    X[::13, 4] = np.nan
    atts = tuple(Attribute(f"a{i}", tuple(map(str, range(int(np.nanmax(X[:, i])) + 1))))
                 for i in range(5))
    y = (base + rng.integers(0, 2, 400)) % 2
    plain = Dataset("sr", atts, Attribute("c", ("p", "q")), X, y)
    # with a single-valued attribute, left out of the counts: rows resolved by
    # `active_values` (its counts), not the row loop of `chunk_actives`
    const = Dataset("sr1", (*atts, Attribute("k", ("0",))), plain.class_attribute,
                    np.column_stack([X, np.zeros(400)]), y)
    for data, n in ((plain, 1), (plain, 2), (const, 1), (const, 2)):
        test = data.take(np.arange(0, 400, 3))
        model = AnDE(n=n, subsumption=10).fit(data)
        listed = model.predict_proba(test)
        assert np.abs(listed - AnDE(n=n).fit(data).predict_proba(test)).max() > 1e-3
        tb, gen = model._prepare()["tb"], model._prepare()["generalisations"]
        assert gen.ptr.size > 0 and gen.attr.size > 0  # some value implies another
        assert gen.bits.shape[1] == 1  # ≤ 64 value ids: one word a value (`row_word`)
        e = np.zeros(0, dtype=np.int64)
        lists = gen._replace(bits=np.zeros((0, 0), np.uint64))
        words = gen._replace(bits=np.hstack([gen.bits, np.zeros_like(gen.bits)]))
        assert with_bits(lists).bits.tobytes() == gen.bits.tobytes()
        for form in (lists, gen, words):  # the lists, one word, two words (`mark_bits`)
            model._prepared["generalisations"] = form
            np.testing.assert_array_equal(model.predict_proba(test), listed)
        model._prepared["generalisations"] = Generalisations(e, e, e, e,
                                                             np.zeros((0, 0), np.uint64))
        np.testing.assert_array_equal(model.predict_proba(test), listed)
        assert generalisations(tb, None).ptr.size == 0


@pytest.mark.parametrize("n", [1, 2, 3])
def test_parent_major_factors_score_as_the_block_major_kernels(n, monkeypatch):
    """Child factors built per parent set (parent-major) give the block-major probabilities
    (to rounding) with missing values in training and test, SR, MI weights, a frequency
    limit that sends rows to the fallback orders, and attribute masks."""
    from workbench.learners.ande import model as model_mod

    data = random_data(300, 6, [2, 3, 4, 2, 3, 2], 3, seed=11, missing=0.08)
    test = random_data(120, 6, [2, 3, 4, 2, 3, 2], 3, seed=12, missing=0.1)
    rng = np.random.default_rng(1)
    for kw in ({}, {"subsumption": 20}, {"weighting": "mi"}, {"frequency_limit": 30},
               {"subsumption": 20, "weighting": "mi", "frequency_limit": 2}):
        model = AnDE(n=n, **kw).fit(data)
        for masks in (None, (rng.random(6) < 0.7, rng.random(6) < 0.7)):
            if masks is not None:
                model.parent_mask_, model.child_mask_ = masks
            model._prepared = None
            prep = model._prepare()
            assert model_mod.parent_major_ok(prep["tb"], prep["est"], n,
                                             model.recode(test.codes()))
            fast = model.predict_proba(test)
            with monkeypatch.context() as mp:
                mp.setattr(model_mod, "parent_major_ok", lambda *a: False)
                np.testing.assert_allclose(model.predict_proba(test), fast, rtol=1e-12,
                                           atol=1e-15, err_msg=f"{kw} masks={masks is not None}")


def test_parent_weights_is_the_public_hook_mi_weights_use():
    """A subclass sets parent weights through `parent_weights`: unit weights give the
    unweighted AnDE, the MI weights read back from `weights()` give A1DE-W / A2DE-W, one
    parent set alone gives that SPODE, and a wrong answer is one clear error."""
    data = random_data(200, 5, [2, 3, 4, 2, 3], 3, seed=21, missing=0.05)
    test = random_data(60, 5, [2, 3, 4, 2, 3], 3, seed=22, missing=0.05)

    class Given(AnDE):
        given = None

        def parent_weights(self, parents):
            return None if self.given is None else self.given(parents)

    for n in (1, 2):
        plain = AnDE(n=n).fit(data).predict_proba(test)
        mi = AnDE(n=n, weighting="mi").fit(data)
        model = Given(n=n).fit(data)
        model.given = lambda parents: np.ones(len(parents))
        model._prepared = None
        np.testing.assert_allclose(model.predict_proba(test), plain, rtol=1e-12, atol=1e-15)
        levels = {lev: mi.weights(lev) for lev in range(1, n + 1)}
        model.given = lambda parents: np.array([levels[len(s)][AnDECounts(
            [2] * 5, 3, len(s)).rank(s)] for s in parents])
        model._prepared = None
        np.testing.assert_allclose(model.predict_proba(test), mi.predict_proba(test),
                                   rtol=1e-12, atol=1e-15)
    # all the weight on one parent = that SPODE = A1DE with only it allowed as a parent
    full = random_data(200, 5, [2, 3, 4, 2, 3], 3, seed=23)
    rows = random_data(60, 5, [2, 3, 4, 2, 3], 3, seed=24)
    spode = Given(n=1).fit(full)
    spode.given = lambda parents: np.array([1.0 if s == (2,) else 0.0 for s in parents])
    masked = AnDE(n=1).fit(full)
    masked.parent_mask_ = np.array([False, False, True, False, False])
    masked._prepared = None
    np.testing.assert_allclose(spode.predict_proba(rows), masked.predict_proba(rows),
                               rtol=1e-12, atol=1e-15)
    # a set weighing ≤ 0 takes no part (SPEC §2's MI estimate can be slightly negative)
    spode.given = lambda parents: np.array([1.0 if s == (2,) else -1e-6 for s in parents])
    spode._prepared = None
    np.testing.assert_allclose(spode.predict_proba(rows), masked.predict_proba(rows),
                               rtol=1e-12, atol=1e-15)
    spode.given = lambda parents: np.array([np.nan] * len(parents))
    spode._prepared = None
    with pytest.raises(LearnerError, match="parent_weights must give 5 finite weights"):
        spode.predict_proba(test)


def _parent_major_as_reference(model, train, test, n, codes, rows, monkeypatch):
    """The parent-major path is chosen for `codes` (the counted attributes' test codes) and
    gives SPEC §2's brute force on `rows` and the block-major kernels' probabilities."""
    from workbench.learners.ande import model as model_mod

    prep = model._prepare()
    assert model_mod.parent_major_ok(prep["tb"], prep["est"], n, codes)
    fast = model.predict_proba(test)
    np.testing.assert_allclose(fast[rows], reference_proba(train, test.take(rows), n),
                               rtol=1e-10, atol=1e-15)
    with monkeypatch.context() as mp:
        mp.setattr(model_mod, "parent_major_ok", lambda *a: False)
        np.testing.assert_allclose(model.predict_proba(test), fast, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n", [1, 2])
def test_an_identifier_attribute_is_scored_parent_major(n, monkeypatch):
    """An attribute with a value per training row (an identifier, as splice's instance
    name) whose test values training mostly never saw takes the parent-major path: the
    unseen values share one factor slot (all their counts are zero, so are their
    factors'), so the factors built do not grow with its 500 values. Probabilities:
    SPEC §2's brute force and the block-major kernels'."""
    from workbench.learners.ande.parentmajor import slot_counts

    def with_id(ds, ids):
        atts = ds.attributes[:2] + (Attribute("id", tuple(f"i{j}" for j in range(500))),) \
            + ds.attributes[2:]
        return ds.replace(attributes=atts, X=np.column_stack([ds.X[:, :2], ids, ds.X[:, 2:]]))

    train = with_id(random_data(150, 4, [2, 3, 4, 3], 3, seed=41, missing=0.05),
                    np.arange(150.0))
    ids = np.arange(200.0, 450.0)
    ids[:10] = np.arange(0, 30, 3)  # ten rows carry a training row's identifier
    ids[10:14] = np.nan
    test = with_id(random_data(250, 4, [2, 3, 4, 3], 3, seed=42, missing=0.05), ids)
    model = AnDE(n=n).fit(train)
    prep = model._prepare()
    codes = model.recode(test.codes())
    np.testing.assert_array_equal(slot_counts(codes, prep["tb"]), [2, 3, 11, 4, 3])
    _parent_major_as_reference(model, train, test, n, codes, np.r_[0:16, 100:110],
                               monkeypatch)


@pytest.mark.parametrize("n", [2, 3])
def test_identifier_and_single_valued_attributes_through_value_slots(n, monkeypatch):
    """The value-slot layout with a single-valued attribute left out of the counts (from
    order 2 on) beside an identifier, the constant present or missing in test rows: SPEC
    §2's brute force and the block-major kernels."""
    from workbench.learners.ande.parentmajor import build_ok

    rng = np.random.default_rng(5)

    def extend(ds, ids, const):
        atts = ds.attributes + (Attribute("id", tuple(f"i{j}" for j in range(500))),
                                Attribute("one", ("u",)))
        return ds.replace(attributes=atts, X=np.column_stack([ds.X, ids, const]))

    train = extend(random_data(150, 4, [2, 3, 4, 3], 3, seed=43, missing=0.05),
                   np.arange(150.0), np.zeros(150))
    const = rng.choice([0.0, np.nan], 250)
    test = extend(random_data(250, 4, [2, 3, 4, 3], 3, seed=44, missing=0.05),
                  np.arange(200.0, 450.0), const)
    model = AnDE(n=n).fit(train)
    assert model.constant_.tolist() == [False] * 5 + [True]
    prep = model._prepare()
    codes = model.recode(test.codes())[:, ~model.constant_]
    assert not build_ok(prep["tb"].cards, n, len(codes), codes.shape[1])  # (slots, not values)
    _parent_major_as_reference(model, train, test, n, codes, np.r_[0:12, 120:130],
                               monkeypatch)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_every_scoring_path_gives_the_same_probabilities(n, monkeypatch):
    """The same fitted model scored through each kernel path — parent-major, block-major,
    and for A1DE the instance-major fast path — gives the same distributions (to
    rounding: the paths fold the same SPEC §2 factors in different orders)."""
    from workbench.learners.ande import model as model_mod

    data = random_data(250, 6, [2, 3, 4, 2, 3, 2], 3, seed=31, missing=0.06)
    test = random_data(90, 6, [2, 3, 4, 2, 3, 2], 3, seed=32, missing=0.08)
    real_fast = model_mod.a1de_fast_ok
    for kw in ({}, {"subsumption": 20, "weighting": "mi"}, {"frequency_limit": 25}):
        model = AnDE(n=n, **kw).fit(data)
        results = {}
        for major in (True, False):
            for fast in ((True, False) if n == 1 else (False,)):
                with monkeypatch.context() as mp:
                    if not major:
                        mp.setattr(model_mod, "parent_major_ok", lambda *a: False)
                    mp.setattr(model_mod, "a1de_fast_ok",
                               real_fast if fast else (lambda *a: False))
                    model._prepared = None
                    results[(major, fast)] = model.predict_proba(test)
        if n == 1:  # the fast path really ran somewhere
            prep = model._prepare()
            assert real_fast(prep["tb"], prep["est"], 1) or kw
        first = next(iter(results.values()))
        for key, proba in results.items():
            np.testing.assert_allclose(proba, first, rtol=1e-12, atol=1e-15,
                                       err_msg=f"{kw} parent-major={key[0]} fast={key[1]}")


# ----------------------------------------------------------------------------------------------
# the naive count layout (Salem et al.'s timing study, `layout="naive"`)
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("F,m", [(1, 1.0), (4, 0.5)])
def test_naive_layout_scores_as_spec_and_the_compact_layout(n, F, m):
    """Naive layout = SPEC §2 brute force = compact layout, missing values (skipped, their
    denominators), δ and the fallback down to NB included; a constant attribute too."""
    train = random_data(70, 5, [2, 3, 2, 3, 1], 3, seed=11 + n, missing=0.1)
    test = random_data(25, 5, [2, 3, 2, 3, 1], 3, seed=99, missing=0.1)
    naive = AnDE(n=n, m=m, frequency_limit=F, layout="naive")
    got = naive.fit(train).predict_proba(test)
    ref = reference_proba(train, test, n, m=m, F=F)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    compact = AnDE(n=n, m=m, frequency_limit=F).fit(train).predict_proba(test)
    np.testing.assert_allclose(got, compact, rtol=0, atol=1e-13)


def test_naive_layout_cells_and_counts():
    """K · C(V + n, n + 1) cells (V counting a missing value's cell), as `layout_cells`
    says; a level-(n+1) cell holds #(y, x_s), a lower level's its diagonal."""
    from workbench.learners.ande.naive import _cell
    from workbench.learners.counting import layout_cells

    train = make(TOY, cards=[2, 2, 3])
    a1 = AnDE(n=1, layout="naive").fit(train)
    nv = a1.naive_
    assert nv.table.size == layout_cells([2, 2, 3], 2, 1)[1] == 2 * math.comb(8, 2)
    assert a1.model_bytes() == nv.nbytes
    ct = a1.counts_
    vals = np.empty(4, dtype=np.int64)
    g = nv.offsets + np.array([0, 1, 1])  # the values a0, b1, c1
    for s in [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2)]:
        idx = np.array(s + (0,) * 3, dtype=np.int64)
        cell = _cell(g, idx, len(s), -1, nv.size, nv.binom, vals)
        joint = ct.joint(list(s))[tuple(int(g[a] - nv.offsets[a]) for a in s)]
        assert [nv.table[y * nv.per_class + cell] for y in range(2)] == list(joint)
    # r2 (a0, b1, c1 | y0) is the only y0 row with b1 and c1; r4, r6 are y1 rows with them
    idx = np.array([1, 2, 0, 0], dtype=np.int64)
    cell = _cell(g, idx, 2, -1, nv.size, nv.binom, vals)
    assert (nv.table[cell], nv.table[nv.per_class + cell]) == (1, 2)
    with_missing = make(TOY + [(None, 1, 1, 0)], cards=[2, 2, 3])
    assert AnDE(n=2, layout="naive").fit(with_missing).naive_.table.size == \
        2 * math.comb(8 + 2, 3) == layout_cells([3, 2, 3], 2, 2)[1]


def test_naive_layout_is_additive_and_refuses_what_it_does_not_do(monkeypatch):
    train = random_data(90, 4, [3, 2, 3, 2], 2, seed=5, missing=0.05)
    whole = AnDE(n=2, layout="naive").fit(train)
    parts = AnDE(n=2, layout="naive")
    for lo in range(0, 90, 30):
        parts.partial_fit(train.take(np.arange(lo, lo + 30)))
    np.testing.assert_array_equal(whole.naive_.table, parts.naive_.table)
    np.testing.assert_array_equal(whole.naive_.present, parts.naive_.present)
    for bad in ({"subsumption": 100}, {"weighting": "mi"}, {"missing": "value"}):
        with pytest.raises(LearnerError, match="layout 'naive' is the plain AnDE"):
            AnDE(n=1, layout="naive", **bad).fit(train)
    monkeypatch.setenv("WORKBENCH_MEMORY_BUDGET", "4K")
    with pytest.raises(LearnerError, match=r"A2DE \(layout 'naive'\) on r5: the naive layout "
                                           r"would need .* over the memory budget"):
        AnDE(n=2, layout="naive").fit(train)


@pytest.mark.parametrize("n", [1, 2])
def test_rows_whose_used_sets_all_weigh_zero_count_them_equally_parent_major(n):
    """Weight only on the parent set s (SPEC §2): a row with s's values present gets that
    set's estimate alone, a row missing one of them (every used set weighs 0) the unweighted
    AnDE's — on the parent-major path, which keeps the equal-weight sums only when some set
    may weigh 0 (and skips them otherwise: all-positive weights give A1DE-W there)."""
    from workbench.learners.ande import model as model_mod

    data = random_data(300, 5, [2, 3, 4, 2, 3], 3, seed=31, missing=0.1)
    test = random_data(80, 5, [2, 3, 4, 2, 3], 3, seed=32, missing=0.1)
    s = (2,) if n == 1 else (1, 2)

    class Only(AnDE):
        def parent_weights(self, parents):
            return np.array([1.0 if p == s else 0.0 for p in parents])

    model = Only(n=n).fit(data)
    prep = model._prepare()
    codes = test.codes()
    assert model_mod.parent_major_ok(prep["tb"], prep["est"], n, codes)
    got = model.predict_proba(test)
    plain = AnDE(n=n).fit(data).predict_proba(test)
    lacking = np.isnan(test.X[:, list(s)]).any(axis=1)
    assert 3 <= lacking.sum() < len(lacking)
    np.testing.assert_allclose(got[lacking], plain[lacking], rtol=1e-12, atol=1e-15)
    assert not np.allclose(got[~lacking], plain[~lacking], rtol=1e-6)
    ref = reference_proba(data, test, n)  # (unweighted brute force: the lacking rows)
    np.testing.assert_allclose(got[lacking], ref[lacking], rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("n,C", [(1, None), (2, None), (1, 5), (2, 5)])
def test_rows_of_unequal_child_counts_are_padded_exactly_parent_major(n, C):
    """Rows with a few missing values (and, with subsumption resolution, deleted
    children) have fewer children than the others: the parent-major product loop pads
    them with factors of 1.0 to one trip count (`_even_children`, here: under an eighth
    more multiplies). The probabilities stay SPEC §2's brute force's."""
    from workbench.learners.ande import model as model_mod

    cards = [2, 3, 4, 2, 3, 3, 2, 4]
    data = random_data(200, 8, cards, 3, seed=41, missing=0.01)
    test = random_data(60, 8, cards, 3, seed=42, missing=0.02)
    present = (~np.isnan(test.X)).sum(axis=1)
    extra = (present.max() * len(present) - present.sum()) / present.sum()
    assert present.min() < present.max() and extra <= 1 / 8  # (the padded case)
    model = AnDE(n=n, subsumption=C).fit(data)
    prep = model._prepare()
    assert model_mod.parent_major_ok(prep["tb"], prep["est"], n, test.codes())
    np.testing.assert_allclose(model.predict_proba(test), reference_proba(data, test, n, C=C),
                               rtol=1e-10, atol=1e-15)



def test_long_generalisation_lists_become_bit_sets_with_the_same_deletions():
    """Thirty copies of one attribute (each value deletes its later copies')
    and noise attributes, 150 values: `generalisations` keeps them as bit sets (three
    words), and A1DE/A2DE with subsumption resolution classify bit for bit as with the
    lists alone and as from the counts (no lists)."""
    from workbench.learners.ande.predict import Generalisations

    rng = np.random.default_rng(11)
    n = 300
    base = rng.integers(0, 3, n)
    cols = [base.copy() for _ in range(30)]  # (a copy's value implies the others')
    cols += [rng.integers(0, 3, n) for _ in range(20)]
    X = np.column_stack(cols).astype(float)
    X[::17, 5] = np.nan
    atts = tuple(Attribute(f"a{i}", ("0", "1", "2")) for i in range(X.shape[1]))
    y = (base + (rng.random(n) < 0.2)) % 2
    data = Dataset("copies", atts, Attribute("c", ("p", "q")), X, y)
    test = data.take(np.arange(0, n, 2))
    none = np.zeros((0, 0), dtype=np.uint64)
    for order in (1, 2):
        model = AnDE(n=order, subsumption=30).fit(data)
        gen = model._prepare()["generalisations"]
        assert gen.bits.shape == (150, 3) and gen.attr.size == 3 * 435  # (a tie: one way)
        got = model.predict_proba(test)
        model._prepared["generalisations"] = gen._replace(bits=none)  # the lists
        np.testing.assert_array_equal(model.predict_proba(test), got)
        e = np.zeros(0, dtype=np.int64)
        model._prepared["generalisations"] = Generalisations(e, e, e, e, none)  # the counts
        np.testing.assert_array_equal(model.predict_proba(test), got)
        assert np.abs(got - AnDE(n=order).fit(data).predict_proba(test)).max() > 1e-3

def test_block_layout_is_the_layout_formula():
    """`BlockStore.add_blocks` (compiled `block_layout`) against the layout written out in
    numpy: three calls adding blocks of 0-3 attributes (tuples and −1-padded arrays, some
    marked empty), dense blocks end to end, the large ones sparse with consecutive slots
    and key ranges, each block's attributes followed by their cardinalities."""
    cards = np.array([3, 70, 1, 400, 2, 90])
    K = 4
    st = BlockStore(cards, K, rows_hint=10)
    rng = np.random.default_rng(7)
    dense_top = vtop = slot = 0
    for call in range(3):
        blocks = [tuple(sorted(rng.choice(6, size=rng.integers(0, 4), replace=False)))
                  for _ in range(12)]
        empty = rng.random(12) < 0.2
        width = max(len(b) for b in blocks)
        arr = np.full((12, width), -1)
        for i, b in enumerate(blocks):
            arr[i, :len(b)] = b
        ids = st.add_blocks(arr if call == 1 else blocks, empty=empty)
        assert ids.tolist() == list(range(12 * call, 12 * call + 12))
        for i, b in enumerate(blocks):
            j = ids[i]
            size = 0 if empty[i] else int(np.prod(cards[list(b)])) * K
            sparse_min = max(counts_mod.SPARSE_MIN_CELLS, counts_mod.SPARSE_ROW_FACTOR * 10)
            kind = (counts_mod.KIND_EMPTY if size == 0 else counts_mod.KIND_SPARSE
                    if size > sparse_min else counts_mod.KIND_DENSE)
            row = st.battrs[j]
            assert (st.blen[j], st.bsize[j], st.kind[j]) == (len(b), size, kind)
            assert row[:2 * len(b)].tolist() == list(b) + cards[list(b)].tolist()
            assert (row[2 * len(b):] == -1).all()
            assert (st.off[j], st.vbase[j]) == (dense_top, vtop)
            assert st.sslot[j] == (slot if kind == counts_mod.KIND_SPARSE else -1)
            dense_top += size if kind == counts_mod.KIND_DENSE else 0
            vtop += size if kind == counts_mod.KIND_SPARSE else 0
            slot += kind == counts_mod.KIND_SPARSE
        assert st.dense.shape[0] == dense_top
    assert slot > 0 and (st.kind == counts_mod.KIND_EMPTY).any()
