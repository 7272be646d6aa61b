"""Every input goes through the parent-major scoring path (issue 36): products that underflow
a double (many attributes, tiny m), 3 M training rows, single-valued attributes left out of
the counts. Each case is checked against a brute force of SPEC §2 computed from the model's
own counts with every product in extended precision (x87 long double: exponents to
10⁻⁴⁹³¹, so nothing underflows), compared as log-probabilities so that a class whose
probability is 10⁻³⁰⁰ is checked too."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from workbench.data.dataset import Attribute, Dataset
from workbench.learners.ande import AnDE
from workbench.learners.ande import model as model_mod
from workbench.learners.ande import parentmajor as pm

LONG = np.longdouble
pytestmark = pytest.mark.skipif(np.finfo(LONG).minexp > -16000,
                                reason="no extended-precision long double here")


def brute_log_joint(model: AnDE, test: Dataset) -> np.ndarray:
    """log P̂(y, x) of SPEC §2 AnDE of order model.n (unweighted, F = 1, no subsumption,
    missing values skipped), per test row and class, from `model.counts_` (every attribute
    counted: fit with ``leave_out_constants = False`` when there are constants): the sum over
    the row's parent sets with #(x_s) ≥ 1 of P(y, x_s) Π_c P(x_c | y, x_s), falling back
    to lower orders and finally naive Bayes, in long double."""
    ct, m = model.counts_, LONG(model.m)
    assert not model.constant_.any()
    X = test.codes()
    n_rows, d = X.shape
    K, N = ct.K, ct.n
    cards = [int(c) for c in ct.cards]
    present = X >= 0
    out = np.full((n_rows, K), np.nan, dtype=LONG)
    for lev in range(model.n, 0, -1):
        total = np.zeros((n_rows, K), dtype=LONG)
        used = np.zeros(n_rows, dtype=bool)
        for s in itertools.combinations(range(d), lev):
            rows = present[:, list(s)].all(1) & np.isnan(out[:, 0])
            if not rows.any():
                continue
            at = tuple(X[rows][:, a] for a in s)
            js = ct.joint(s)
            cy = js[at].astype(LONG)  # #(y, x_s), rows × K
            ok = cy.sum(1) >= 1
            T = LONG(js.sum())  # rows where every attribute of s is present
            p = (cy + m / (K * math.prod(cards[a] for a in s))) / (T + m)
            for c in range(d):
                if c in s:
                    continue
                has = present[rows, c]
                xc = np.where(has, X[rows, c], 0)
                cc = ct.joint(s + (c,))[at + (xc,)].astype(LONG)
                miss = ct.child_missing(s, c)[at].astype(LONG)
                f = (cc + m / cards[c]) / (cy - miss + m)
                p *= np.where(has[:, None], f, LONG(1))
            idx = np.flatnonzero(rows)[ok]
            total[idx] += p[ok]
            used[idx] = True
        out[used] = np.log(total[used])
    rest = np.isnan(out[:, 0])
    if rest.any():  # naive Bayes
        cy = ct.class_counts.astype(LONG)
        lp = np.tile(np.log((cy + m / K) / (LONG(N) + m)), (int(rest.sum()), 1))
        for c in range(d):
            jc = ct.joint((c,)).astype(LONG)
            has = present[rest, c]
            f = (jc[np.where(has, X[rest, c], 0)] + m / cards[c]) / (jc.sum(0) + m)
            lp += np.where(has[:, None], np.log(f), LONG(0))
        out[rest] = lp
    return out


def log_posterior(jll) -> np.ndarray:
    """Normalise log joints per row (in the given precision)."""
    jll = np.asarray(jll)
    top = jll.max(1, keepdims=True)
    return jll - top - np.log(np.exp(jll - top).sum(1, keepdims=True))


def scored_by_parent_major(model: AnDE, test: Dataset, monkeypatch) -> np.ndarray:
    """The model's log joints, asserting they came from the parent-major path alone."""
    calls = []
    real = model_mod.log_scores_parent_major
    monkeypatch.setattr(model_mod, "log_scores_parent_major",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    for slow in ("log_scores", "log_scores_reduced", "log_scores_nb"):
        monkeypatch.setattr(model_mod, slow, _refuse(slow))
    out = model._joint_log_likelihood(test)
    assert calls, "the parent-major path did not run"
    return out


def _refuse(name):
    def refuse(*a, **k):
        raise AssertionError(f"{name} ran instead of the parent-major path")
    return refuse


def old_guard_refused(model: AnDE) -> bool:
    """The underflow guard the parent-major path had before: (d+1)·ln(fmin) < ln(1e-280)."""
    tb, est = model._prepare()["tb"], model._prepare()["est"]
    fmin = (est.m / tb.cards.max()) / (est.N + est.m)
    return (tb.cards.shape[0] + 1) * math.log(fmin) < math.log(1e-280)


def latent_rows(n, d, seed, n_test=40):
    """Training rows whose 4-valued attributes are fixed by the class and a latent z
    (x_a = z + a·y mod 4, 2 % missing); random test rows. Given a parent value and a class,
    z and so every child's value is fixed, and a test value that differs has a count of 0:
    its factor is (m/4)/(#(y, x_s) + m), ~10⁻⁹ at m = 10⁻⁶."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    z = rng.integers(0, 4, n)
    X = ((z[:, None] + np.arange(d)[None, :] * y[:, None]) % 4).astype(float)
    X[rng.random(X.shape) < 0.02] = np.nan
    atts = tuple(Attribute(f"a{i}", ("a", "c", "g", "t")) for i in range(d))
    cls = Attribute("c", ("p", "q"))
    test = rng.integers(0, 4, (n_test, d)).astype(float)
    test[rng.random(test.shape) < 0.02] = np.nan
    return (Dataset("latent", atts, cls, X, y),
            Dataset("latent-test", atts, cls, test, rng.integers(0, 2, n_test)))


def assert_same_log_posterior(got, want, what):
    want = log_posterior(want).astype(np.float64)
    got = log_posterior(got)
    assert np.isfinite(got).all(), what
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-9, err_msg=what)


@pytest.mark.parametrize("n, d", [(1, 80), (2, 56)])
def test_products_below_the_double_range_are_rescaled(n, d, monkeypatch):
    """m = 10⁻⁶; A1DE, 80 attributes: every term of every class of most rows lies below
    the smallest double; the products are renormalised exactly and the log-probabilities
    are the brute force's. A2DE (the same kernel code per row and parent set): a class
    whose pair count is 0 gets uniform child factors, so no class sum is that small, but
    the old guard's case is scored by the parent-major path as the brute force says."""
    train, test = latent_rows(600, d, seed=7, n_test=100)
    model = AnDE(n=n, m=1e-6).fit(train)
    assert old_guard_refused(model)
    want = brute_log_joint(model, test)
    if n == 1:
        assert (want < -745).all(axis=1).sum() >= 30  # every class below the double range
    got = scored_by_parent_major(model, test, monkeypatch)
    assert_same_log_posterior(got, want, f"A{n}DE")


def test_three_million_training_rows(monkeypatch):
    """connect-4-like rows (42 ternary attributes, 3 classes) replicated to 3 M: A1DE and
    A2DE classify through the parent-major path (the old guard sent them elsewhere)."""
    rng = np.random.default_rng(11)
    base_n, reps, d = 2000, 1500, 42
    y = rng.integers(0, 3, base_n)
    X = rng.integers(0, 3, (base_n, d)).astype(float)
    X[:, :8] = np.where(rng.random((base_n, 8)) < 0.6, y[:, None], X[:, :8])
    atts = tuple(Attribute(f"a{i}", ("b", "x", "o")) for i in range(d))
    cls = Attribute("c", ("win", "loss", "draw"))
    chunk = Dataset("c4", atts, cls, np.tile(X, (100, 1)), np.tile(y, 100))
    model = AnDE(n=2)
    for _ in range(reps // 100):
        model.partial_fit(chunk)
    assert model.counts_.n == base_n * reps == 3_000_000
    test = Dataset("c4t", atts, cls, rng.integers(0, 3, (300, d)).astype(float),
                   rng.integers(0, 3, 300))
    for n in (1, 2):
        learner = model.derive(n=n)
        assert old_guard_refused(learner)
        want = brute_log_joint(learner, test)
        got = scored_by_parent_major(learner, test, monkeypatch)
        assert_same_log_posterior(got, want, f"A{n}DE after 3 M rows")


@pytest.mark.parametrize("d, m, K, rescales", [(80, 1e-6, 2, True), (6, 1.0, 2, False),
                                                 (6, 1.0, 3, False), (6, 1.0, 5, False),
                                                 (80, 1e-6, 7, True)])
def test_rescaling_kernel_only_where_a_product_may_underflow(d, m, K, rescales,
                                                             monkeypatch):
    """The kernel without a rescaling path declines a level where some product of child
    factors could fall below the normal range (80 attributes, m = 10⁻⁶) and the rescaling
    kernel scores it; on six attributes it scores every level itself. Either way the
    results are those of the rare paths everywhere (rescaling, factors by value slot),
    bit for bit."""
    train, test = latent_rows(600, d, seed=3, n_test=500)
    y = np.arange(600) % K
    atts = train.attributes
    train = Dataset("k", atts, Attribute("c", tuple(f"k{j}" for j in range(K))), train.X, y)
    test = Dataset("kt", atts, train.class_attribute, test.X, np.arange(500) % K)
    model = AnDE(n=1, m=m).fit(train)
    used = []
    real = pm.score_rescaling
    monkeypatch.setattr(pm, "score_rescaling", lambda k: used.append(k) or real(k))
    got = scored_by_parent_major(model, test, monkeypatch)
    assert bool(used) == rescales
    with pm.rare_paths_everywhere():
        want = scored_by_parent_major(model, test, monkeypatch)
    assert len(used) > int(rescales)  # the switch took the rescaling kernel
    assert np.array_equal(got, want)


class CountAll(AnDE):
    """AnDE with single-valued attributes counted like any other (the literal SPEC §2)."""

    leave_out_constants = False


def test_single_valued_attributes_take_the_parent_major_path(monkeypatch):
    """Single-valued attributes (one missing in some test rows, one a possible parent only
    through the fallback) no longer send A2DE/A3DE to a reduced kernel: the parent-major
    levels combined per row equal the brute force over every attribute counted."""
    rng = np.random.default_rng(5)
    n, d = 400, 9
    y = rng.integers(0, 2, n)
    X = rng.integers(0, 3, (n, d)).astype(float)
    X[:, 0] = np.where(rng.random(n) < 0.7, y, X[:, 0])
    X[:, [2, 5, 7]] = 0.0  # single-valued, present in every training row
    X[rng.random((n, d)) < 0.03] = np.nan
    X[:, [2, 5, 7]] = 0.0
    atts = tuple(Attribute(f"a{i}", ("p", "q", "r")[: 1 if i in (2, 5, 7) else 3])
                 for i in range(d))
    data = Dataset("const", atts, Attribute("c", ("n", "y")), X, y)
    train, test = data.take(np.arange(300)), data.take(np.arange(300, 400))
    Xt = test.X.copy()
    Xt[::4, 5] = np.nan  # a single-valued attribute missing in test rows
    test = test.replace(X=Xt)
    for order in (2, 3):
        model = AnDE(n=order).fit(train)
        assert model.constant_.tolist() == [i in (2, 5, 7) for i in range(d)]
        want = brute_log_joint(CountAll(n=order).fit(train), test)
        got = scored_by_parent_major(model, test, monkeypatch)
        assert_same_log_posterior(got, want, f"A{order}DE with single-valued attributes")


@pytest.mark.parametrize("K", [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 19, 26, 32])
def test_every_class_count_through_the_row_products(K, monkeypatch):
    """The products are taken for all classes at once up to eleven, else in blocks of
    sixteen, then of nine to eleven or of eight and a tail of one to seven
    (`row_products`), from slots K apart or padded to a multiple of four (`slot_stride`:
    7, 10, 11, 13, 17, 19, 26): A1DE and A2DE through the parent-major path, and naive
    Bayes through its factor table, equal the brute force for every K, with missing
    values (rows with fewer children, and rows without a usable parent)."""
    rng = np.random.default_rng(40 + K)
    n, d = 90 * K + 150, 7
    y = rng.integers(0, K, n)
    X = rng.integers(0, 4, (n, d)).astype(float)
    X[:, :3] = np.where(rng.random((n, 3)) < 0.5, y[:, None] % 4, X[:, :3])
    X[rng.random((n, d)) < 0.08] = np.nan
    atts = tuple(Attribute(f"a{i}", ("p", "q", "r", "s")) for i in range(d))
    cls = Attribute("c", tuple(f"k{j}" for j in range(K)))
    data = Dataset("classes", atts, cls, X, y)
    train, test = data.take(np.arange(n - 150)), data.take(np.arange(n - 150, n))
    for order in (0, 1, 2):
        model = AnDE(n=order).fit(train)
        want = brute_log_joint(model, test)
        got = model._joint_log_likelihood(test) if order == 0 else \
            scored_by_parent_major(model, test, monkeypatch)
        assert_same_log_posterior(got, want, f"A{order}DE, {K} classes")


def test_slot_stride_pads_to_aligned_slots_only_where_cheap():
    """A slot of factors starts a multiple of four doubles (32 bytes) into its table where
    padding K to that adds at most a quarter; otherwise slots are K apart."""
    got = {K: pm.slot_stride(K) for K in range(1, 30)}
    assert [K for K in got if got[K] != K] == [7, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22,
                                               23, 25, 26, 27, 29]
    assert all(got[K] % 4 == 0 and got[K] - K <= K / 4 for K in got if got[K] != K)
    assert got[26] == 28 and got[13] == 16 and got[5] == 5 and got[3] == 3
