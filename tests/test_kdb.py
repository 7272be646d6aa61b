"""KDB / SKDB / TAN (SPEC §4): hand-computed structures and probabilities, a brute-force
reference implementation written independently of the vectorised one, and naive
leave-one-out retraining versus the incremental LOO pass."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from workbench.data.dataset import Attribute, Dataset
from workbench.errors import LearnerError
from workbench.learners import registry
from workbench.learners.kdb import structure as kdb_structure
from workbench.learners.kdb import (
    KDB,
    SKDB,
    TAN,
    conditional_mutual_information,
    kdb_parents,
    mi_order,
    mutual_information,
    tan_parents,
)

from conftest import train_in_passes


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------
def make(rows, classes, cards=None, name="toy"):
    """Dataset from rows of ints/None (last column = class code)."""
    arr = [[np.nan if v is None else v for v in r[:-1]] for r in rows]
    X = np.array(arr, dtype=float)
    y = np.array([-1 if r[-1] is None else r[-1] for r in rows], dtype=int)
    d = X.shape[1]
    cards = cards or [
        int(np.nanmax(X[:, i])) + 1 if np.isfinite(X[:, i]).any() else 1 for i in range(d)
    ]
    atts = tuple(Attribute(f"a{i}", tuple(f"v{j}" for j in range(cards[i]))) for i in range(d))
    cls = Attribute("class", tuple(f"c{j}" for j in range(classes)))
    return Dataset(name, atts, cls, X, y)


def random_data(n, d, card, K, seed, missing=0.0, dep=True):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, card, size=(n, d)).astype(float)
    y = rng.integers(0, K, size=n)
    if dep:  # make attributes depend on the class and on each other
        X[:, 0] = (y + rng.integers(0, 2, n)) % card
        if d > 2:
            X[:, 2] = (X[:, 0] + X[:, 1] * (rng.random(n) < 0.7)) % card
    if missing:
        X[rng.random((n, d)) < missing] = np.nan
    atts = tuple(Attribute(f"a{i}", tuple(f"v{j}" for j in range(card))) for i in range(d))
    cls = Attribute("class", tuple(f"c{j}" for j in range(K)))
    return Dataset(f"rand{seed}", atts, cls, X, y)


# ----------------------------------------------------------------------------------------------
# brute-force reference (plain Python, dict counts) — follows SPEC §4 literally
# ----------------------------------------------------------------------------------------------
class Ref:
    """Value coding + counting straight from the SPEC text (m-estimates with `m`)."""

    def __init__(self, data: Dataset, m: float = 1.0):
        self.m = m
        train = data.without_missing_class()
        self.K = data.n_classes
        self.d = data.n_attributes
        declared = [a.cardinality for a in data.attributes]
        self.miss = [bool(np.isnan(train.X[:, i]).any()) for i in range(self.d)]
        self.card = [declared[i] + (1 if self.miss[i] else 0) for i in range(self.d)]
        self.qcode = [declared[i] if self.miss[i] else None for i in range(self.d)]
        self.rows = [self.code_row(r) for r in train.X]
        self.y = [int(v) for v in train.y]

    def code_row(self, r):
        out = []
        for i, v in enumerate(r):
            out.append(self.qcode[i] if np.isnan(v) else int(v))  # None = invalid
        return out

    def mi(self):
        N = len(self.y)
        ny = Counter(self.y)
        res = []
        for i in range(self.d):
            nvy = Counter((r[i], c) for r, c in zip(self.rows, self.y))
            nv = Counter(r[i] for r in self.rows)
            res.append(sum(c / N * math.log2(N * c / (nv[v] * ny[yy])) for (v, yy), c in nvy.items()))
        return res

    def cmi(self, i, j):
        N = len(self.y)
        ny = Counter(self.y)
        t = Counter((r[i], r[j], c) for r, c in zip(self.rows, self.y))
        a = Counter((r[i], c) for r, c in zip(self.rows, self.y))
        b = Counter((r[j], c) for r, c in zip(self.rows, self.y))
        return sum(
            c / N * math.log2(ny[yy] * c / (a[(v, yy)] * b[(w, yy)])) for (v, w, yy), c in t.items()
        )

    @staticmethod
    def match(r, attrs, vals):
        return all(r[a] == v for a, v in zip(attrs, vals))

    def cond(self, rows, ys, child, parents, xrow, cls, drop=None):
        """(#(x_i, π, y), #(π, y)) over `rows` (optionally without index `drop`)."""
        num = den = 0
        pv = [xrow[p] for p in parents]
        for t, (r, c) in enumerate(zip(rows, ys)):
            if t == drop or c != cls or not self.match(r, parents, pv):
                continue
            den += 1
            num += r[child] == xrow[child]
        return num, den

    def predict(self, test: Dataset, order, parents, cap, backoff=True):
        out = []
        for logs in self.joint_logs(test, order, parents, cap, backoff):
            m = max(logs)
            e = [math.exp(v - m) for v in logs]
            out.append([v / sum(e) for v in e])
        return np.array(out)

    def joint_logs(self, test: Dataset, order, parents, cap, backoff=True):
        """log P(y) + Σ log P(x_i | π_i, y) per test row and class, summed in log space."""
        out = []
        N = len(self.y)
        for r in test.X:
            x = self.code_row(r)
            logs = []
            for cls in range(self.K):
                s = math.log((self.y.count(cls) + self.m / self.K) / (N + self.m))
                for a in order:
                    if x[a] is None:
                        continue
                    par = parents[a][:cap]
                    if backoff:
                        depth = 0
                        for j in range(1, len(par) + 1):
                            if any(self.match(rr, par[:j], [x[p] for p in par[:j]]) for rr in self.rows):
                                depth = j
                            else:
                                break
                        par = par[:depth]
                    num, den = self.cond(self.rows, self.y, a, par, x, cls)
                    s += math.log((num + self.m / self.card[a]) / (den + self.m))
                logs.append(s)
            out.append(logs)
        return out

    def loo_losses(self, order, parents, kmax, zero_one=False):
        """Naive LOO: per held-out row, retrain counts on n−1 rows, SPEC's LOO depth rule."""
        n, K = len(self.y), self.K
        d = len(order)
        losses = np.zeros((d + 1, kmax + 1))
        for h in range(n):
            x, ys = self.rows[h], self.y[h]
            rows = self.rows[:h] + self.rows[h + 1:]
            yl = self.y[:h] + self.y[h + 1:]
            for k in range(kmax + 1):
                logs = [math.log((yl.count(c) + self.m / K) / (n - 1 + self.m))
                        for c in range(K)]
                for l in range(d + 1):
                    if l > 0:
                        a = order[l - 1]
                        par = parents[a]
                        depth = 0
                        for j in range(1, len(par) + 1):
                            cnt = sum(
                                1 for rr in rows
                                if rr[a] == x[a] and self.match(rr, par[:j], [x[p] for p in par[:j]])
                            )
                            if cnt >= 1:
                                depth = j
                            else:
                                break
                        use = par[: min(k, depth)]
                        for c in range(K):
                            num, den = self.cond(rows, yl, a, use, x, c)
                            logs[c] += math.log((num + self.m / self.card[a]) / (den + self.m))
                    m = max(logs)
                    e = [math.exp(v - m) for v in logs]
                    p = [v / sum(e) for v in e]
                    if zero_one:
                        loss = float(int(np.argmax(p)) != ys)
                    else:
                        loss = (1 - p[ys]) ** 2
                    if l == 0:
                        losses[0, k] += loss
                    else:
                        losses[l, k] += loss
        return losses


# ----------------------------------------------------------------------------------------------
# hand-computed structure and probabilities
# ----------------------------------------------------------------------------------------------
# a0 = class; a1 = exact copy of a0 (tied MI); a2 = noise; a3 = class xor a2 (pure interaction)
TOY = [
    [0, 0, 0, 0, 0],
    [0, 0, 1, 1, 0],
    [1, 1, 0, 1, 1],
    [1, 1, 1, 0, 1],
    [0, 0, 0, 0, 0],
    [1, 1, 1, 0, 1],
]


def test_mi_values_and_tied_order():
    ds = make(TOY, 2)
    X, y = ds.codes().astype(np.int64), ds.y
    mi = mutual_information(X, y, np.array([2, 2, 2, 2]), 2)
    # a0, a1 determine the class: MI = H(Y) = 1 bit; a2: counts (2,1 | 1,2) ...
    assert mi[0] == mi[1] == pytest.approx(1.0)
    # a2 = (0,0,0,1,0,1) vs y = (0,0,1,1,0,1): joint (0,0)=2,(0,1)=1,(1,0)=1,(1,1)=2
    m2 = 2 * (2 / 6 * math.log2(6 * 2 / (3 * 3))) + 2 * (1 / 6 * math.log2(6 * 1 / (3 * 3)))
    assert mi[2] == pytest.approx(m2, abs=1e-15)
    assert list(mi_order(mi)) == [0, 1, 2, 3]
    # exact tie between a0 and a1 keeps header order even when listed the other way round
    assert list(mi_order(np.array([0.5, 1.0, 1.0, 0.0]))) == [1, 2, 0, 3]


def test_relabelled_copy_is_an_exact_tie():
    rng = np.random.default_rng(3)
    n = 200
    a = rng.integers(0, 4, n)
    y = (a + rng.integers(0, 2, n)) % 3
    perm = np.array([2, 0, 3, 1])
    X = np.stack([perm[a], a], axis=1).astype(np.int64)  # attr 1 = relabelled attr 0
    mi = mutual_information(X, y, np.array([4, 4]), 3)
    assert mi[0] == mi[1]
    Z = np.stack([perm[a], rng.integers(0, 3, n), a], axis=1).astype(np.int64)
    cmi = conditional_mutual_information(Z, y, np.array([4, 3, 4]), 3)
    assert cmi[1, 0] == cmi[1, 2]


def test_cmi_by_hand_and_parent_choice():
    ds = make(TOY, 2)
    X, y = ds.codes().astype(np.int64), ds.y
    cmi = conditional_mutual_information(X, y, np.array([2, 2, 2, 2]), 2)
    ref = Ref(ds)
    for i in range(4):
        for j in range(4):
            if i != j:
                assert cmi[i, j] == pytest.approx(ref.cmi(i, j), abs=1e-14)
    # given the class, a3 is a function of a2: CMI(a3; a2 | Y) = H(a3 | Y) = 1 bit here
    assert cmi[3, 2] == pytest.approx(ref.cmi(3, 2))
    assert cmi[3, 2] > cmi[3, 0]
    mi = mutual_information(X, y, np.array([2, 2, 2, 2]), 2)
    order = mi_order(mi)
    assert list(order[:2]) == [0, 1]
    parents = kdb_parents(order, cmi, 1)
    assert parents[3] == [2]  # a3's best parent is a2 (CMI 1 bit)
    assert parents[1] == [0]
    # a2 comes before a3 (MI(a3) = 0 exactly), a2's single parent: CMI(a2;a0|Y) = CMI(a2;a1|Y),
    # tie → earlier in L, i.e. a0
    assert mi[3] == 0.0
    assert parents[2] == [0]
    p2 = kdb_parents(order, cmi, 2)
    assert p2[3][0] == 2 and len(p2[3]) == 2
    assert p2[2] == [0, 1]


def test_kdb_parents_are_a_stable_sort_by_cmi():
    """KDB's parent choice (compiled: a merge sort per attribute) = numpy's stable argsort
    of the negated CMIs among the earlier attributes, on matrices with many exact ties
    (±0 among them) and without, k from 0 to more than the attributes."""
    def by_numpy(order, cmi, k):
        parents = [[] for _ in order]
        for pos in range(1, len(order)):
            cands = np.asarray(order[:pos])
            pick = np.argsort(-cmi[order[pos], cands], kind="stable")[:k]
            parents[order[pos]] = [int(p) for p in cands[pick]]
        return parents

    rng = np.random.default_rng(7)
    for trial in range(60):
        d = int(rng.integers(1, 30))
        cmi = (rng.choice([0.0, -0.0, 0.25, 0.5, 0.5, 1.0], size=(d, d)) if trial % 2
               else rng.random((d, d)))
        order = rng.permutation(d)
        for k in (0, 1, 2, 5, d + 3):
            assert kdb_parents(order, cmi, k) == by_numpy(order, cmi, k)


def test_kdb_probabilities_by_hand():
    # one attribute, two classes: P(y) = (#y + 1/2)/(N + 1), P(x|y) = (#(x,y) + 1/2)/(#y + 1)
    rows = [[0, 0], [0, 0], [1, 0], [1, 1]]
    ds = make(rows, 2)
    p = KDB(k=1).fit(ds).predict_proba(make([[0, 0]], 2, cards=[2]))
    s0 = (3 + 0.5) / 5 * (2 + 0.5) / (3 + 1)
    s1 = (1 + 0.5) / 5 * (0 + 0.5) / (1 + 1)
    assert p[0] == pytest.approx([s0 / (s0 + s1), s1 / (s0 + s1)], abs=1e-15)


def test_backoff_when_parent_configuration_unseen():
    # a0 = parent of a1 (k=1). Test value a0=2 never occurs in training -> a1 backs off to P(a1|y)
    rows = [[0, 0, 0], [0, 1, 0], [1, 1, 1], [1, 0, 1], [0, 0, 0], [1, 1, 1]]
    train = make(rows, 2, cards=[3, 2])
    kdb = KDB(k=1).fit(train)
    assert kdb.parents_[1] == [0] or kdb.parents_[0] == [1]
    test = make([[2, 1, 0], [0, 1, 0]], 2, cards=[3, 2])
    ref = Ref(train)
    expect = ref.predict(test, list(kdb.order_), kdb.parents_, 1)
    np.testing.assert_allclose(kdb.predict_proba(test), expect, rtol=0, atol=1e-14)
    # by hand for the unseen row, order [a0, a1] (a0 carries more class information)
    assert list(kdb.order_) == [0, 1]
    N, K = 6, 2
    s = []
    for c, ny in ((0, 3), (1, 3)):
        pa0 = (0 + 1 / 3) / (ny + 1)  # a0 = 2 never seen
        n_a1 = sum(1 for r in rows if r[1] == 1 and r[2] == c)
        pa1 = (n_a1 + 1 / 2) / (ny + 1)  # backed off: no parent
        s.append((ny + 1 / K) / (N + 1) * pa0 * pa1)
    assert kdb.predict_proba(test)[0] == pytest.approx([v / sum(s) for v in s], abs=1e-15)


def test_seen_configuration_with_unseen_child_value_is_still_used():
    # parent config a0=0 seen, but never with child a1=1: no back-off, (0 + 1/2)/(#(π,y)+1)
    rows = [[0, 0, 0], [0, 0, 1], [1, 1, 1], [1, 1, 0], [1, 0, 1]]
    train = make(rows, 2)
    kdb = KDB(k=1).fit(train)
    test = make([[0, 1, 0]], 2, cards=[2, 2])
    ref = Ref(train)
    np.testing.assert_allclose(
        kdb.predict_proba(test), ref.predict(test, list(kdb.order_), kdb.parents_, 1), atol=1e-14
    )


def test_missing_as_distinct_value():
    # a0 has missing training values -> 3 values (0, 1, ?); a1 has none -> a missing test value
    # of a1 leaves it out, a missing test value of a0 is the value '?'
    rows = [[0, 0, 0], [None, 1, 1], [1, 1, 1], [None, 0, 0], [0, 1, 0], [1, 0, 1]]
    train = make(rows, 2, cards=[2, 2])
    kdb = KDB(k=1).fit(train)
    assert list(kdb.cards_) == [3, 2]
    test = make([[None, 1, 0], [0, None, 0], [None, None, 1]], 2, cards=[2, 2])
    ref = Ref(train)
    got = kdb.predict_proba(test)
    np.testing.assert_allclose(got, ref.predict(test, list(kdb.order_), kdb.parents_, 1), atol=1e-14)
    # the row with a1 missing equals a model of a0 alone (+ prior)
    nb = KDB(k=0).fit(make([r[:1] + r[2:] for r in rows], 2, cards=[2]))
    np.testing.assert_allclose(got[1], nb.predict_proba(make([[0, 0]], 2, cards=[2]))[0], atol=1e-15)


@pytest.mark.parametrize("name", ["KDB2", "TAN"])
def test_products_far_below_the_smallest_double_against_log_space(name):
    """400 attributes: every class's P(y, x) lies far below the smallest double (checked on
    the log-space brute force), so the products are lifted by powers of two on the way;
    the distributions still equal the brute force computed in log space."""
    train = random_data(40, 400, 8, 3, seed=51, missing=0.02)
    test = random_data(8, 400, 8, 3, seed=52, missing=0.05)
    model = registry.create(name).fit(train)
    ref = Ref(train)
    cap, backoff = (2, True) if name == "KDB2" else (1, False)
    logs = ref.joint_logs(test, list(model.attributes_), model.parents_, cap, backoff)
    assert max(max(row) for row in logs) < math.log(2.0 ** -1074)
    got = model.predict_proba(test)
    np.testing.assert_allclose(got, ref.predict(test, list(model.attributes_), model.parents_,
                                                cap, backoff), rtol=0, atol=1e-12)
    assert np.isfinite(model._joint_log_likelihood(test)).all()


@pytest.mark.parametrize("name", ["KDB2", "TAN"])
def test_checks_that_cannot_lift_are_dropped_bit_for_bit(name, monkeypatch):
    """`_useful_checks` drops only the underflow checks that provably find the largest
    class at or above 2^-600 (a lower bound from 1/K and (m/|X_i|) / (n + m) per factor):
    on 400 attributes of products far below the smallest double, the first checks go and
    the later ones stay, and the raw products and the distributions are the bits of
    checking after every fourth attribute."""
    from workbench.learners.kdb import scoring as scoring_mod

    train = random_data(40, 400, 8, 3, seed=51, missing=0.02)
    test = random_data(8, 400, 8, 3, seed=52, missing=0.05)
    got = {}
    for mode in ("dropped", "all"):
        with monkeypatch.context() as mp:
            if mode == "all":
                mp.setattr(scoring_mod, "_useful_checks", lambda checks, *args: checks)
            model = registry.create(name).fit(train)
            got[mode] = model._products(test)
            got[mode, "p"] = model.predict_proba(test)
            got[mode, "checks"] = int(model._scorer.checks.sum())
    assert 0 < got["dropped", "checks"] < got["all", "checks"]
    np.testing.assert_array_equal(got["dropped"], got["all"])
    np.testing.assert_array_equal(got["dropped", "p"], got["all", "p"])
    # by hand: K = 2 (prior bound 2^-1), 100 binary attributes, n = 15, m = 1: every
    # factor ≥ (1/2)/16 = 2^-5, so the bound after attribute a is −1 − 5(a + 1) bits:
    # ≥ −599 up to a = 118 — all 25 checks (after every fourth) go; with n = 2^20 − 1
    # (−21 bits a factor) the bound passes −599 after attribute 28: the checks after
    # attributes 27 (−589) and before stay out, from 31 on they stay
    checks = np.array([(a + 1) % 4 == 0 for a in range(100)], dtype=np.int64)
    assert scoring_mod._useful_checks(checks, [2] * 100, 2, 15.0, 1.0).sum() == 0
    kept = scoring_mod._useful_checks(checks, [2] * 100, 2, 2.0 ** 20 - 1, 1.0)
    assert np.flatnonzero(kept).tolist() == list(range(31, 100, 4))
    assert scoring_mod._useful_checks(checks, [2] * 100, 2, None, 1.0) is checks


def test_missing_class_rows_are_ignored():
    rows = [[0, 1, 0], [1, 0, 1], [0, 0, 0], [1, 1, None], [1, 1, 1]]
    a = KDB(k=1).fit(make(rows, 2))
    b = KDB(k=1).fit(make([r for r in rows if r[-1] is not None], 2))
    t = make([[0, 0, 0], [1, 1, 1]], 2)
    np.testing.assert_array_equal(a.predict_proba(t), b.predict_proba(t))


def test_tan_tree_by_hand():
    # CMI matrix with a known maximum spanning tree rooted at 0
    cmi = np.array(
        [
            [0.0, 0.1, 0.5, 0.0],
            [0.1, 0.0, 0.2, 0.9],
            [0.5, 0.2, 0.0, 0.3],
            [0.0, 0.9, 0.3, 0.0],
        ]
    )
    # start {0}: w = [., .1, .5, 0] -> add 2 (parent 0); update: w1 = .2 (par 2), w3 = .3 (par 2)
    # add 3 (w .3, parent 2); update w1: cmi[3,1] = .9 > .2 -> parent 3; add 1 (parent 3)
    assert tan_parents(cmi) == [[], [3], [0], [2]]
    # ties: equal weights -> lowest index first; equal CMI does not replace (strict)
    tie = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], dtype=float)
    assert tan_parents(tie) == [[], [0], [0]]


def test_tan_no_backoff_matches_reference():
    ds = random_data(80, 5, 3, 2, seed=4, missing=0.05)
    tan = TAN().fit(ds)
    ref = Ref(ds)
    test = random_data(30, 5, 3, 2, seed=5, missing=0.1)
    for a in range(1, 5):
        assert len(tan.parents_[a]) == 1
    assert tan.parents_[0] == []
    cmi = np.array([[ref.cmi(i, j) if i != j else 0 for j in range(5)] for i in range(5)])
    assert tan.parents_ == tan_parents(cmi)
    np.testing.assert_allclose(
        tan.predict_proba(test),
        ref.predict(test, list(range(5)), tan.parents_, 1, backoff=False),
        atol=1e-13,
    )


@pytest.mark.parametrize("k", [0, 1, 2, 3, 9])
def test_kdb_matches_brute_force_reference(k):
    ds = random_data(90, 5, 3, 3, seed=10 + k, missing=0.04)
    kdb = KDB(k=k).fit(ds)
    ref = Ref(ds)
    np.testing.assert_allclose(kdb.mi_, ref.mi(), atol=1e-13)
    test = random_data(40, 5, 3, 3, seed=99, missing=0.1)
    np.testing.assert_allclose(
        kdb.predict_proba(test),
        ref.predict(test, list(kdb.order_), kdb.parents_, min(k, 4)),
        atol=1e-13,
    )


@pytest.mark.parametrize("name", ["KDB1", "KDB2", "KDB5", "SKDB", "TAN"])
def test_direct_indexed_tables_equal_the_sorted_ones(name, monkeypatch):
    """Count tables built and read by direct indexing (small key spaces) give the same
    tables and bits as sorting and binary search (forced everywhere with no dense space),
    and a mix of both (a space just too large for one attribute) as well."""
    from workbench.learners.kdb import tables as tables_mod

    train = random_data(300, 7, 4, 3, seed=41, missing=0.05)
    test = random_data(120, 7, 4, 3, seed=42, missing=0.1)
    dense = registry.create(name).fit(train)
    if any(t.parents[:dense.depth_cap_] for t in dense.tables_.values()):  # (SKDB may keep k = 0)
        assert any(p is not None for t in dense.tables_.values() for p in t.pair_pos)
    want = dense.predict_proba(test)
    for limit in (0, 48):
        with monkeypatch.context() as mp:
            mp.setattr(tables_mod, "DENSE_CELLS", limit)
            other = registry.create(name).fit(train)
            if limit == 0:
                assert all(p is None for t in other.tables_.values() for p in t.pair_pos)
            for a, t in other.tables_.items():
                for f in ("cfg_keys", "cfg_counts", "cell_keys", "cell_counts", "offsets"):
                    np.testing.assert_array_equal(getattr(t, f), getattr(dense.tables_[a], f))
            np.testing.assert_array_equal(other.predict_proba(test), want)
    # tables built dense, read sorted (and the other way round) also agree
    for t in dense.tables_.values():
        t.pair_pos = [None] * len(t.parents)
    del dense._scorer  # (the scorer's arrays are built again from these)
    np.testing.assert_array_equal(dense.predict_proba(test), want)


@pytest.mark.parametrize("dense_cells", [0, 6, 1 << 21])
def test_counts_on_the_full_parent_space_equal_the_depth_by_depth_ranking(dense_cells,
                                                                          monkeypatch):
    """An attribute's tables counted on its full parent-value space (`_mixed_counts`: one
    increment per row, shallower depths summed) — for all depths, or the first few and the
    rest ranked from there — equal those of the depth-by-depth ranking (`_level`, by
    marking or by sorting): keys, counts, pair keys and their direct indexes, offsets and
    SKDB's LOO arrays, for
    random families with weights, single-valued attributes, one class and no parents."""
    from workbench.learners.kdb import tables as tables_mod

    monkeypatch.setattr(tables_mod, "DENSE_CELLS", dense_cells)
    rng = np.random.default_rng(47)
    for trial in range(60):
        n, d, K = int(rng.integers(1, 50)), int(rng.integers(1, 6)), int(rng.integers(1, 4))
        cards = rng.integers(1, 5, size=d)
        X = np.asfortranarray(np.stack([rng.integers(0, c, size=n) for c in cards], axis=1))
        y = rng.integers(0, K, size=n)
        child = int(rng.integers(0, d))
        others = [i for i in range(d) if i != child]
        rng.shuffle(others)
        parents = others[:int(rng.integers(0, len(others) + 1))]
        w = None if trial % 2 else rng.integers(1, 4, size=n).astype(float)
        for loo, head in ((False, 1 << 20), (True, 1 << 20), (False, 40), (True, 40)):
            got = []  # all depths on the full space, the first few (40 cells), none
            for cells in (head, 0):
                monkeypatch.setattr(tables_mod, "MIXED_CELLS", cells)
                got.append(tables_mod.build_table(X, y, child, parents, cards, K, loo=loo,
                                                   weights=w))
            (a, *la), (b, *lb) = (g if loo else (g,) for g in got)
            for f in ("cfg_keys", "cfg_counts", "cell_keys", "cell_counts", "offsets"):
                np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
            assert len(a.pair_keys) == len(b.pair_keys) == len(parents)
            for u, v in zip(a.pair_keys, b.pair_keys):
                np.testing.assert_array_equal(u, v)
            assert len(a.pair_pos) == len(b.pair_pos) == len(parents)
            for u, v in zip(a.pair_pos, b.pair_pos):  # (direct indexes made while counting)
                assert (u is None) == (v is None)
                if u is not None:
                    np.testing.assert_array_equal(u, v)
            for u, v in zip(la, lb):
                assert u.shape == v.shape
                np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("mixed_cells", [0, 60, 1 << 20])
def test_tables_built_together_equal_those_built_one_by_one(mixed_cells, monkeypatch):
    """`build_tables` (the attributes counted whole on their parent-value space in one
    compiled call, the others one by one) gives every attribute the tables `build_table`
    gives it alone: keys, counts and their types, pair keys, direct indexes, offsets —
    with every attribute on that path, some, or none (`MIXED_CELLS`), single-valued
    attributes, one class, no parents and no rows."""
    from workbench.learners.kdb import tables as tables_mod

    monkeypatch.setattr(tables_mod, "MIXED_CELLS", mixed_cells)
    rng = np.random.default_rng(48)
    for trial in range(40):
        n, d, K = int(rng.integers(0, 60)), int(rng.integers(1, 7)), int(rng.integers(1, 4))
        cards = rng.integers(1, 6, size=d)
        X = np.asfortranarray(np.stack([rng.integers(0, c, size=n) for c in cards], axis=1)
                              .astype(np.int8))
        y = rng.integers(0, K, size=n)
        order = [int(a) for a in rng.permutation(d)]
        parents = {a: order[:i][-int(rng.integers(0, i + 1)):] if i else []
                   for i, a in enumerate(order)}
        together = tables_mod.build_tables(X, y, order, parents, cards, K)
        assert list(together) == order
        for a in order:
            one, both = tables_mod.build_table(X, y, a, parents[a], cards, K), together[a]
            assert (one.child, one.parents, one.card) == (both.child, both.parents, both.card)
            for f in ("cfg_keys", "cfg_counts", "cell_keys", "cell_counts", "offsets"):
                u, v = getattr(one, f), getattr(both, f)
                assert u.dtype == v.dtype
                np.testing.assert_array_equal(u, v)
            assert len(one.pair_keys) == len(both.pair_keys) == len(parents[a])
            for u, v in zip(one.pair_keys, both.pair_keys):
                np.testing.assert_array_equal(u, v)
            assert len(one.pair_pos) == len(both.pair_pos)
            for u, v in zip(one.pair_pos, both.pair_pos):
                assert (u is None) == (v is None)
                if u is not None:
                    np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("name", ["KDB1", "KDB2", "KDB5", "SKDB", "TAN"])
def test_tabulated_factors_equal_the_ones_computed_per_row(name, monkeypatch):
    """Classification reads tabulated factors (every seen configuration × child value) or
    computes each row's from the counts: the same bits, with missing values, unseen parent
    configurations (backoff, and TAN's none) and child values never seen."""
    from workbench.learners.kdb import scoring as tables_mod

    train = random_data(300, 7, 4, 3, seed=43, missing=0.05)
    test = random_data(150, 7, 4, 3, seed=44, missing=0.1)
    got = {}
    smallest = None
    for mode, cells in (("tabulated", 1 << 30), ("per row", 0), ("mixed", 0)):
        with monkeypatch.context() as mp:
            mp.setattr(tables_mod, "FACTOR_TABLE_CELLS", smallest if mode == "mixed" else cells)
            mp.setattr(tables_mod, "FACTOR_TABLE_SMALL", 1 << 30)
            model = registry.create(name).fit(train)
            got[mode] = model.predict_proba(test)
            done = model._scorer.tabulated
            if mode == "tabulated":  # one pass over all attributes
                assert done.all()
                smallest = int(model._scorer.cells.min())
            elif mode == "per row":
                assert not done.any()
            elif done.size > 1:  # some attributes read from tables, the others computed
                assert done.any() and not done.all()  # (SKDB here may keep just one)
    np.testing.assert_array_equal(got["tabulated"], got["per row"])
    np.testing.assert_array_equal(got["mixed"], got["per row"])


@pytest.mark.parametrize("name", ["KDB1", "KDB2", "KDB5", "SKDB", "TAN"])
def test_direct_tables_equal_the_search_for_the_deepest_configuration(name, monkeypatch):
    """Classification through direct tables (one index from the row's parent values,
    `_direct_fill`) gives the bits of the search for the deepest seen configuration, with
    one and two parents (spelled out) and more (parent by parent), test values missing
    where training had none (the row falls back to the search), and child values and
    configurations never seen; the search's direct indexes as int32 or int64 ranks."""
    from workbench.learners.kdb import scoring as tables_mod

    train = random_data(300, 7, 3, 3, seed=45, missing=0.0)
    test = random_data(200, 7, 3, 3, seed=46, missing=0.1)
    got = {}
    for mode, cells in (("direct", 1 << 30), ("search", 0), ("search, int64 ranks", 0)):
        with monkeypatch.context() as mp:
            mp.setattr(tables_mod, "DIRECT_CELLS", cells)
            mp.setattr(tables_mod, "DIRECT_SMALL", cells)
            wide = mode.endswith("int64 ranks")
            mp.setattr(tables_mod, "NARROW_RANKS", 0 if wide else tables_mod.NARROW_RANKS)
            model = registry.create(name).fit(train)
            got[mode] = model.predict_proba(test)
            dir_at = model._scorer._state[0]
            assert (dir_at >= 0).all() if mode == "direct" else (dir_at < 0).all()
            assert model._scorer.pp.dtype == (np.int64 if wide else np.int32)
            if mode == "direct" and name == "KDB5":
                assert model._scorer.caps.max() > 2
    assert np.isnan(test.X).any()
    np.testing.assert_array_equal(got["direct"], got["search"])
    np.testing.assert_array_equal(got["search, int64 ranks"], got["search"])


@pytest.mark.parametrize("name", ["KDB1", "KDB2", "TAN"])
def test_constant_children_are_left_out_of_the_product(name, monkeypatch):
    """A constant attribute's factor is 1 exactly, so classification leaves it out: the
    raw products (each row times its own power of two) are the bits of multiplying by
    every factor with the underflow checks after every fourth attribute, here with 150
    attributes (60 constant, interleaved, one of them missing in some test rows) deep
    enough into underflow for rows to be lifted (KDB1: against the log-space sums)."""
    from workbench.learners.kdb import scoring as scoring_mod

    rng = np.random.default_rng(50)
    n, d, K = 400, 150, 2
    const = np.isin(np.arange(d) % 5, (1, 3))
    cards = np.where(const, 1, 60)
    y = rng.integers(0, K, n)
    X = np.where(const, 0, rng.integers(0, 60, (n, d))).astype(float)
    atts = tuple(Attribute(f"a{i}", tuple(str(v) for v in range(c))) for i, c in enumerate(cards))
    train = Dataset("const", atts, Attribute("c", ("0", "1")), X, y)
    Xt = np.where(const, 0, rng.integers(0, 60, (300, d))).astype(float)
    Xt[::7, 1] = np.nan
    test = Dataset("const", atts, Attribute("c", ("0", "1")), Xt, rng.integers(0, K, 300))
    got = {}
    for mode in ("left out", "multiplied"):
        with monkeypatch.context() as mp:
            if mode == "multiplied":
                mp.setattr(scoring_mod, "_varying", lambda ts, every: (list(ts), np.array(
                    [(p + 1) % every == 0 or p == len(ts) - 1 for p in range(len(ts))],
                    dtype=np.int64)))
            model = registry.create(name).fit(train)
            got[mode] = model._products(test)
            got[mode, "p"] = model.predict_proba(test)
            varying = sum(int(model.cards_[a]) > 1 for a in model.attributes_)
            assert model._scorer.caps.size == (varying if mode == "left out"
                                               else len(model.attributes_))
    assert varying < len(model.attributes_)
    np.testing.assert_array_equal(got["left out"], got["multiplied"])
    np.testing.assert_array_equal(got["left out", "p"], got["multiplied", "p"])
    assert np.isfinite(got["left out", "p"]).all()
    if name == "KDB1":  # raw = true product · 2^(600 · lifts)
        true = np.array(Ref(train).joint_logs(test.take(np.arange(5)), list(model.order_),
                                              model.parents_, 1))
        lifts = (np.log(got["left out"][:5]) - true) / (600 * math.log(2))
        np.testing.assert_allclose(lifts, np.round(lifts), atol=1e-6)
        assert (np.round(lifts) >= 1).all()


@pytest.mark.parametrize("name", ["KDB2", "KDB3", "KDB5"])
def test_prefix_tables_equal_the_depth_by_depth_search(name, monkeypatch):
    """Without direct tables, a row's search through an attribute's first h parents read
    from its prefix table (`_prefix_fill`) gives the bits of the depth-by-depth search:
    seen and unseen configurations (back-off at every depth), deeper depths walked after;
    a block with a test value missing where training had none walks from depth 1."""
    from workbench.learners.kdb import scoring as scoring_mod

    train = random_data(300, 7, 3, 3, seed=47, missing=0.0)
    tests = {"complete": random_data(400, 7, 3, 3, seed=48, missing=0.0),
             "missing": random_data(400, 7, 3, 3, seed=49, missing=0.1)}
    got = {}
    for mode, cells in (("prefix", 1 << 16), ("search", 0)):
        with monkeypatch.context() as mp:
            mp.setattr(scoring_mod, "DIRECT_CELLS", 0)
            mp.setattr(scoring_mod, "PREFIX_CELLS", cells)
            mp.setattr(scoring_mod, "PREFIX_RATIO", 1)
            model = registry.create(name).fit(train)
            for kind, test in tests.items():
                got[mode, kind] = model.predict_proba(test)
            pre_h = model._scorer._prefix[1]
            assert (pre_h >= 2).any() if mode == "prefix" else not pre_h.any()
            if mode == "prefix" and name == "KDB5":
                assert pre_h.max() >= 4 and (model._scorer.caps > pre_h).any()
    for kind in tests:
        np.testing.assert_array_equal(got["prefix", kind], got["search", kind])


# ----------------------------------------------------------------------------------------------
# SKDB
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,m", [("KDB0", 0.5), ("KDB2", 0.5), ("KDB2", 3.0), ("TAN", 0.25),
                                    ("KDB3", 1e-3)])
def test_m_estimate_equals_the_reference(name, m):
    """KDB and TAN take the m of the m-estimate (SPEC §4 with m for 1): the probabilities
    equal the log-space brute force with that m, and differ from m = 1's."""
    train = random_data(60, 6, 3, 3, seed=31, missing=0.05)
    test = random_data(25, 6, 3, 3, seed=32, missing=0.1)
    model = registry.create(name, m=m).fit(train)
    cap, backoff = (model.depth_cap_, True) if name != "TAN" else (1, False)
    expect = Ref(train, m).predict(test, list(model.attributes_), model.parents_, cap, backoff)
    got = model.predict_proba(test)
    np.testing.assert_allclose(got, expect, rtol=0, atol=1e-13)
    assert np.abs(got - registry.create(name).fit(train).predict_proba(test)).max() > 1e-3


def test_m_estimate_by_hand():
    """m = 0.5 on one attribute: P(y) = (#y + m/K)/(N + m), P(x|y) = (#(x,y) + m/|X|)/(#y + m)."""
    rows = [[0, 0], [0, 0], [1, 0], [1, 1]]
    p = KDB(k=1, m=0.5).fit(make(rows, 2)).predict_proba(make([[0, 0]], 2, cards=[2]))
    s0 = (3 + 0.25) / 4.5 * (2 + 0.25) / (3 + 0.5)
    s1 = (1 + 0.25) / 4.5 * (0 + 0.25) / (1 + 0.5)
    assert p[0] == pytest.approx([s0 / (s0 + s1), s1 / (s0 + s1)], abs=1e-15)


@pytest.mark.parametrize("m", [2.0 ** -20, 0.01])
def test_small_m_products_far_below_the_smallest_double(m):
    """A small m lowers the smallest factor to (m/|X_i|)/(N + m): the products are checked
    for underflow after fewer attributes (every third at m = 2^-20) and still equal the
    log-space brute force on 400 attributes."""
    train = random_data(40, 400, 8, 3, seed=53, missing=0.02)
    test = random_data(8, 400, 8, 3, seed=54, missing=0.05)
    model = registry.create("KDB2", m=m).fit(train)
    ref = Ref(train, m)
    logs = ref.joint_logs(test, list(model.attributes_), model.parents_, 2)
    assert max(max(row) for row in logs) < math.log(2.0 ** -1074)
    np.testing.assert_allclose(model.predict_proba(test),
                               ref.predict(test, list(model.attributes_), model.parents_, 2),
                               rtol=0, atol=1e-12)


def test_m_below_the_lifting_bound_is_refused():
    with pytest.raises(LearnerError, match="m"):
        registry.create("KDB2", m=2.0 ** -21)
    with pytest.raises(LearnerError, match="m"):
        registry.create("TAN", m=0)


@pytest.mark.parametrize("zero_one", [False, True])
@pytest.mark.parametrize("m", [1.0, 0.3])
def test_incremental_loo_equals_naive_retraining(zero_one, m):
    ds = random_data(40, 4, 3, 2, seed=21, missing=0.05)
    sk = SKDB(k_max=3, loss="zero_one" if zero_one else "rmse", m=m).fit(ds)
    ref = Ref(ds, m)
    naive = ref.loo_losses([int(a) for a in sk.order_], sk.parents_, 3, zero_one=zero_one)
    np.testing.assert_allclose(sk.losses_, naive, rtol=0, atol=1e-12)


@pytest.mark.parametrize("K", [1, 3, 5])
def test_incremental_loo_deep_parents_one_three_and_five_classes(K):
    """The LOO step's spelled-out (three classes) and general (one, five) paths."""
    ds = random_data(35, 5, 2, K, seed=7)
    sk = SKDB(k_max=4).fit(ds)
    ref = Ref(ds)
    naive = ref.loo_losses([int(a) for a in sk.order_], sk.parents_, 4)
    np.testing.assert_allclose(sk.losses_, naive, rtol=0, atol=1e-12)


def _kdb_on_prefix(ds, sk):
    """KDB(k*) trained on the columns L_1..L_l* (header order) of the same data."""
    l, k = sk.selected_
    keep = sorted(int(a) for a in sk.order_[:l])
    sub = ds.replace(attributes=tuple(ds.attributes[i] for i in keep), X=ds.X[:, keep])
    return KDB(k=k).fit(sub), keep


@pytest.mark.parametrize("select", ["both", "k", "attributes"])
def test_selected_skdb_equals_that_kdb(select):
    ds = random_data(300, 6, 3, 3, seed=31, missing=0.03)
    test = random_data(50, 6, 3, 3, seed=32, missing=0.03)
    sk = SKDB(k_max=3, select=select).fit(ds)
    l, k = sk.selected_
    if select == "k":
        assert l == 6
    if select == "attributes":
        assert k == 3
    kdb, keep = _kdb_on_prefix(ds, sk)
    sub_test = test.replace(attributes=kdb._header.attributes, X=test.X[:, keep])
    np.testing.assert_allclose(sk.predict_proba(test), kdb.predict_proba(sub_test), atol=1e-14)


def test_one_candidate_search_space_equals_kdb():
    ds = random_data(150, 5, 3, 2, seed=41, missing=0.05)
    test = random_data(40, 5, 3, 2, seed=42, missing=0.05)
    sk = SKDB(k_max=0, select="k").fit(ds)  # only candidate: all attributes, k = 0
    assert sk.selected_ == (5, 0)
    np.testing.assert_array_equal(sk.predict_proba(test), KDB(k=0).fit(ds).predict_proba(test))


def test_scan_order_and_strict_improvement():
    ds = random_data(200, 5, 3, 2, seed=51)
    sk = SKDB(k_max=2).fit(ds)
    L = sk.losses_
    cands = [(0, 0)] + [(l, k) for l in range(1, 6) for k in range(3)]
    best = min(L[c] for c in cands)
    first = next(c for c in cands if L[c] == best)
    assert sk.selected_ == first
    # identical models tie exactly: k beyond any parent list length changes nothing
    sk9 = SKDB(k_max=9).fit(ds)
    assert sk9.losses_.shape == (6, 5)  # k clipped to d - 1 = 4


@pytest.mark.parametrize("k", [1, 2, 3])
def test_skdb_at_fixed_k_selects_only_attributes(k):
    """SKDB-k<k> (the paper's SKDB_sub): the selected k is always k, the attributes are the
    best prefix of the MI order by leave-one-out RMSE among l = 0..d at that k, and the
    model equals KDB(k) on those attributes; the fold record gives both."""
    ds = random_data(300, 6, 3, 3, seed=60 + k, missing=0.03)
    sk = registry.create(f"SKDB-k{k}").fit(ds)
    assert sk.select == "attributes" and sk.k_max == k and sk.selected_[1] == k
    losses = sk.losses_[:, k]
    assert sk.selected_[0] == int(np.argmin(losses))  # first minimum: fewest attributes
    rep = sk.fit_report()
    assert rep["k"] == k and rep["attributes"] == [ds.attributes[a].name
                                                    for a in sk.order_[:sk.selected_[0]]]
    kdb, keep = _kdb_on_prefix(ds, sk)
    np.testing.assert_allclose(
        sk.predict_proba(ds),
        kdb.predict_proba(ds.replace(attributes=kdb._header.attributes, X=ds.X[:, keep])),
        atol=1e-14)


def test_useless_attributes_are_dropped():
    rng = np.random.default_rng(5)
    n = 400
    y = rng.integers(0, 2, n)
    X = np.stack([y, rng.integers(0, 3, n), rng.integers(0, 3, n)], axis=1).astype(float)
    atts = (Attribute("sig", ("a", "b")), Attribute("n1", ("a", "b", "c")), Attribute("n2", ("a", "b", "c")))
    ds = Dataset("sel", atts, Attribute("c", ("0", "1")), X, y)
    sk = SKDB().fit(ds)
    assert sk.selected_[0] == 1 and sk.selected_attributes_ == [0]
    assert np.all(sk.predict(ds) == y)


# ----------------------------------------------------------------------------------------------
# registry and errors
# ----------------------------------------------------------------------------------------------
def test_registered_variants():
    for name, k in (("KDB1", 1), ("KDB5", 5)):
        obj = registry.create(name)
        assert isinstance(obj, KDB) and obj.k == k and obj.preprocessing == "ef:5"
    assert registry.create("SKDB").k_max == 5
    assert registry.create("SKDB-k").select == "k"
    assert registry.create("SKDB-atts").select == "attributes"
    assert isinstance(registry.create("TAN"), TAN)
    assert registry.create("KDB0").k == 0
    aode = registry.create("AODE")
    assert aode.preprocessing == "ef:5" and aode.get_params()["n"] == 1
    with pytest.raises(LearnerError, match="select"):
        registry.create("SKDB", select="all")


def test_bad_input_errors():
    with pytest.raises(LearnerError, match="k"):
        KDB(k=-1)
    with pytest.raises(LearnerError, match="k_max"):
        SKDB(k_max=1.5)
    with pytest.raises(LearnerError, match="loss"):
        SKDB(loss="log")
    num = Dataset(
        "num", (Attribute("x"), Attribute("b", ("p", "q"))), Attribute("c", ("0", "1")),
        np.array([[0.3, 0], [1.2, 1]]), np.array([0, 1]),
    )
    for learner in (KDB(), SKDB(), TAN()):
        with pytest.raises(LearnerError, match="numeric"):
            learner.fit(num)
    with pytest.raises(LearnerError, match="before fit"):
        KDB().predict_proba(make(TOY, 2))
    fitted = KDB().fit(make(TOY, 2))
    with pytest.raises(LearnerError, match="header"):
        fitted.predict_proba(make([[0, 0, 0]], 2))


def test_degenerate_inputs():
    # no attributes: class prior only; all training classes missing: uniform
    ds = Dataset("empty", (), Attribute("c", ("a", "b", "c")), np.zeros((4, 0)), np.array([0, 0, 1, 2]))
    for learner in (KDB(k=2), SKDB(), TAN()):
        p = learner.fit(ds).predict_proba(ds)
        np.testing.assert_allclose(p[0], np.array([2 + 1 / 3, 1 + 1 / 3, 1 + 1 / 3]) / 5)
    nocls = make([[0, 1, None], [1, 0, None]], 2)
    for learner in (KDB(k=2), SKDB(), TAN()):
        p = learner.fit(nocls).predict_proba(nocls)
        np.testing.assert_allclose(p, 0.5)


def test_id_like_attributes_use_sparse_pair_counts():
    # two 400-valued attributes: their (v, w, y) table (400·400·2 cells) is counted sparsely
    rng = np.random.default_rng(8)
    n = 300
    y = rng.integers(0, 2, n)
    X = np.stack([np.arange(n) % 400, rng.integers(0, 400, n), (y + rng.integers(0, 2, n)) % 3], 1)
    atts = (
        Attribute("id", tuple(str(i) for i in range(400))),
        Attribute("id2", tuple(str(i) for i in range(400))),
        Attribute("s", ("a", "b", "c")),
    )
    ds = Dataset("ids", atts, Attribute("c", ("0", "1")), X.astype(float), y)
    cmi = conditional_mutual_information(X.astype(np.int64), y, np.array([400, 400, 3]), 2)
    ref = Ref(ds)
    for i in range(3):
        for j in range(3):
            if i != j:
                assert cmi[i, j] == pytest.approx(ref.cmi(i, j), abs=1e-12)
    kdb = KDB(k=2).fit(ds)
    np.testing.assert_allclose(
        kdb.predict_proba(ds), ref.predict(ds, list(kdb.order_), kdb.parents_, 2), atol=1e-13
    )


@pytest.mark.parametrize("batch_cells,K", [(None, 3), (1, 3), (None, 10)])
def test_value_tables_from_the_pair_tables_or_counted(monkeypatch, batch_cells, K):
    """In memory, MI's (value, class) tables come from the first batch of dense pair tables
    (each attribute's first pair summed over the other) and are counted on their own for
    an attribute in none: here an ID of 6,000 declared values (its pairs sparse) and, with
    one pair per batch, every attribute but the first pair's. MI and CMI = the out-of-core
    counts (every table counted on its own) bit for bit, and SPEC §4's sums; with three
    classes and ten (the CMI terms written without a branch, `BRANCHLESS_CLASSES`)."""
    if batch_cells is not None:
        monkeypatch.setattr(kdb_structure, "_PAIR_BATCH_CELLS", batch_cells)
    rng = np.random.default_rng(12)
    n = 300
    y = rng.integers(0, K, n)
    X = np.stack([rng.integers(0, 3, n), np.arange(n), (y + rng.integers(0, 2, n)) % 4,
                  rng.integers(0, 2, n), (y * rng.integers(0, 2, n)) % 5], 1).astype(np.int64)
    cards = np.array([3, 6000, 4, 2, 5])
    atts = tuple(Attribute(f"a{i}", tuple(str(v) for v in range(c))) for i, c in enumerate(cards))
    ds = Dataset("mixed", atts, Attribute("c", tuple(str(k) for k in range(K))),
                 X.astype(float), y)
    mi, cmi = kdb_structure.mi_and_cmi(X, y, cards, K)
    sc = kdb_structure.StructureCounts(cards, K).add(X, y)
    np.testing.assert_array_equal(mi, sc.mutual_information())
    np.testing.assert_array_equal(cmi, sc.conditional_mutual_information())
    ref = Ref(ds)
    np.testing.assert_allclose(mi, ref.mi(), atol=1e-13)
    for i in range(5):
        for j in range(5):
            if i != j:
                assert cmi[i, j] == pytest.approx(ref.cmi(i, j), abs=1e-12)


def test_pairs_with_a_constant_attribute_are_not_counted(monkeypatch):
    """A constant attribute (one code, e.g. a numeric attribute MDL leaves without cuts)
    has no pair counted in memory: its CMI with every attribute is the +0 that counting
    gives (every term c/N · log2(1)) — the bits of the out-of-core counts, which count
    every pair — and MI is unchanged; the KDB built on them classifies as before."""
    rng = np.random.default_rng(21)
    n, K = 500, 3
    y = rng.integers(0, K, n)
    X = np.stack([(y + rng.integers(0, 2, n)) % 4, np.zeros(n, dtype=np.int64),
                  rng.integers(0, 3, n), (y * rng.integers(0, 2, n)) % 5,
                  np.zeros(n, dtype=np.int64)], 1).astype(np.int64)
    cards = np.array([4, 1, 3, 5, 1])
    counted = []
    real = kdb_structure._count_dense
    monkeypatch.setattr(kdb_structure, "_count_dense",
                        lambda *a: counted.extend(p[:2] for p in a[4]) or real(*a))
    mi, cmi = kdb_structure.mi_and_cmi(X, y, cards, K)
    assert sorted(counted) == [(0, 2), (0, 3), (2, 3)]
    given = kdb_structure.mi_and_cmi(X, y, cards, K, class_counts=np.bincount(y, minlength=K))
    np.testing.assert_array_equal(given[0], mi)  # (the caller's class counts: the same bits)
    np.testing.assert_array_equal(given[1], cmi)
    sc = kdb_structure.StructureCounts(cards, K).add(X, y)
    np.testing.assert_array_equal(mi, sc.mutual_information())
    np.testing.assert_array_equal(cmi, sc.conditional_mutual_information())
    assert not cmi[[1, 4]].any() and not cmi[:, [1, 4]].any() and cmi[0, 2] > 0
    assert mi[1] == 0.0 and mi[4] == 0.0
    atts = tuple(Attribute(f"a{i}", tuple(str(v) for v in range(c))) for i, c in enumerate(cards))
    ds = Dataset("const", atts, Attribute("c", ("0", "1", "2")), X.astype(float), y)
    kdb = KDB(k=2).fit(ds)
    np.testing.assert_allclose(kdb.predict_proba(ds),
                               Ref(ds).predict(ds, list(kdb.order_), kdb.parents_, 2),
                               atol=1e-13)


def test_jmlr16_config_validates():
    from pathlib import Path

    from workbench.experiment.config import load_config

    cfg = load_config(Path(__file__).resolve().parents[1] / "configs" / "jmlr16-skdb.yaml")
    assert (cfg.protocol.rounds, cfg.protocol.folds) == (1, 10)
    assert cfg.datasets == ("large",)
    assert cfg.learner_names == [
        "NB", "TAN", "AODE", "KDB1", "KDB2", "KDB3", "KDB4", "KDB5",
        "SKDB", "SKDB-k", "SKDB-atts", *(f"SKDB-k{k}" for k in range(1, 6)),
        *(f"SKDB-kmax{k}" for k in range(1, 5)), "SKDB-01", "SKDB-MDL", "BayesNet", "RF100",
        "RF100-EF5",
    ]
    for lc in cfg.learners:
        assert lc.create().preprocessing == {"RF100": "none", "SKDB-MDL": "mdl"}.get(
            lc.display, "ef:5")
    assert cfg.learner("AODE").create().missing == "value"


# ----------------------------------------------------------------------------------------------
# training in passes over chunks (out of core)
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["KDB0", "KDB1", "KDB3", "TAN", "SKDB", "SKDB-k",
                                  "SKDB-atts", "SKDB:0.5", "KDB3:0.5"])
@pytest.mark.parametrize("chunk,restart", [(1, False), (7, True), (10_000, True)])
def test_passes_over_chunks_equal_fit_in_memory(name, chunk, restart):
    """Two passes (KDB, TAN) or three (SKDB) over chunks, resumed from a pickle between
    passes: the same tables, structure, selection, LOO losses (to the last bit) and
    probabilities as `fit` on all rows — with missing values, unlabelled rows and an
    ID-like attribute whose pair tables are sparse; with m = 1 and 0.5."""
    name, _, m = name.partition(":")
    params = {"m": float(m)} if m else {}
    for data in (random_data(400, 7, 4, 3, seed=5, missing=0.08),
                 random_data(150, 4, 300, 2, seed=6, missing=0.02)):
        y = data.y.copy()
        y[::13] = -1
        data = data.replace(y=y)
        ref = registry.create(name, **params).fit(data)
        got, _ = train_in_passes(registry.create(name, **params), data, chunk, restart)
        assert got.n_passes() == (3 if name.startswith("SKDB") else 2)
        np.testing.assert_array_equal(got.predict_proba(data), ref.predict_proba(data))
        assert got.parents_ == ref.parents_ and got.attributes_ == ref.attributes_
        assert got.model_bytes() == ref.model_bytes()
        np.testing.assert_array_equal(got.cmi_, ref.cmi_)
        if name.startswith("SKDB"):
            assert got.selected_ == ref.selected_
            np.testing.assert_array_equal(got.losses_, ref.losses_)


def test_passes_are_checked():
    data = random_data(50, 4, 3, 2, seed=1)
    m = registry.create("KDB2").begin(data)
    with pytest.raises(LearnerError, match=r"learn\(pass 1\) while in pass 0"):
        m.learn(1, data)
    m.learn(0, data).end_pass(0)
    with pytest.raises(LearnerError, match="during training"):
        m.predict_proba(data)
    m.learn(1, data).end_pass(1)
    assert m.predict_proba(data).shape == (50, 2)
    with pytest.raises(LearnerError, match="while not training"):
        m.learn(0, data)
    other = random_data(50, 5, 3, 2, seed=1)
    m2 = registry.create("TAN").begin(data)
    with pytest.raises(LearnerError, match="header differs"):
        m2.learn(0, other)
