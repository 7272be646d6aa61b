"""AnJE family (SPEC §6): hand-computed estimates, a brute-force AnJE, identities (A1JE = NB,
WANBIA at weights 1 = A1JE, WANBIA-C and LR reach the same CLL), finite-difference
gradients of every objective and parameterisation, a row-by-row SGD / AdaGrad reference,
unseen values, WANBIA-bnc's rule, the registered names and bad options."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from workbench.data.dataset import Attribute, Dataset
from workbench.errors import LearnerError
from workbench.learners import registry
from workbench.learners.anje import AnJE
from workbench.learners.anje.objective import Problem
from workbench.learners.joins import JoinIndex, anje_exponent

from conftest import needs_shared, shared_file, train_in_passes


def make(X, y, cards, K):
    """Dataset from an int matrix (−1 = missing) and class codes."""
    X = np.where(np.asarray(X) < 0, np.nan, np.asarray(X, dtype=float))
    atts = tuple(Attribute(f"a{i}", tuple(f"v{j}" for j in range(c)))
                 for i, c in enumerate(cards))
    cls = Attribute("class", tuple(f"c{k}" for k in range(K)))
    return Dataset("toy", atts, cls, X, np.asarray(y, dtype=np.int64))


def random_data(n, cards, K, seed, missing=0.0, signal=1.0):
    """Rows whose class depends (noisily) on the first attributes: never separable."""
    rng = np.random.default_rng(seed)
    X = np.stack([rng.integers(0, c, n) for c in cards], 1)
    logits = signal * np.stack([(X[:, 0] == k) + 0.5 * (X[:, 1] % K == k)
                                for k in range(K)], 1)
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    y = np.array([rng.choice(K, p=row) for row in p])
    if missing:
        X = np.where(rng.random(X.shape) < missing, -1, X)
    return make(X, y, cards, K)


# ----- estimates and AnJE ---------------------------------------------------------------------
def test_a1je_hand_computed_with_a_missing_value_read_as_the_first_value():
    # two attributes (|X| = 2, 3), two classes; row 3's a1 is missing → read as value 0
    train = make([[0, 2], [1, 0], [0, -1], [1, 1]], [0, 0, 1, 1], [2, 3], 2)
    test = make([[1, 0]], [0], [2, 3], 2)
    p = registry.create("A1JE").fit(train).predict_proba(test)[0]
    # P(y) = (2 + 1/2)/(4 + 1) both; P(a0=1|y0) = (1 + 1/2)/3, P(a0=1|y1) = (1 + 1/2)/3,
    # P(a1=0|y0) = (1 + 1/3)/3, P(a1=0|y1) = (1 + 1/3)/3 (the missing value counts as 0)
    s0 = 0.5 * (1.5 / 3) * (4 / 3 / 3)
    s1 = 0.5 * (1.5 / 3) * (4 / 3 / 3)
    assert p == pytest.approx([s0 / (s0 + s1), s1 / (s0 + s1)], abs=1e-15)
    test2 = make([[0, 1]], [0], [2, 3], 2)
    q = registry.create("A1JE").fit(train).predict_proba(test2)[0]
    a = (1.5 / 3) * (1 / 3 / 3)           # y0: a0=0 once, a1=1 never
    b = (1.5 / 3) * (1 + 1 / 3) / 3       # y1: a0=0 once (the missing row), a1=1 once
    assert q == pytest.approx([a / (a + b), b / (a + b)], abs=1e-15)


def brute_anje(train, test, n):
    """SPEC §6.4 over declared joint values with dictionaries (independent of JoinIndex)."""
    X = np.nan_to_num(train.X, nan=0).astype(int)
    T = np.nan_to_num(test.X, nan=0).astype(int)
    K, A, N = train.n_classes, X.shape[1], X.shape[0]
    cards = train.cardinalities
    cy = np.bincount(train.y, minlength=K)
    e = 1 / math.comb(A - 1, n - 1)
    out = []
    for t in T:
        s = np.log((cy + 1 / K) / (N + 1)).astype(float)
        for alpha in itertools.combinations(range(A), n):
            size = np.prod([cards[j] for j in alpha])
            match = np.all(X[:, alpha] == t[list(alpha)], axis=1)
            c = np.bincount(train.y[match], minlength=K)
            s = s + e * np.log((c + 1 / size) / (cy + 1))
        p = np.exp(s - s.max())
        out.append(p / p.sum())
    return np.array(out)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_anje_equals_a_brute_force_reference(n):
    train = random_data(60, [2, 3, 4, 2, 3], 3, seed=n, missing=0.1)
    test = random_data(25, [2, 3, 4, 2, 3], 3, seed=10 + n, missing=0.1)
    got = registry.create(f"A{n}JE").fit(train).predict_proba(test)
    assert np.max(np.abs(got - brute_anje(train, test, n))) < 1e-12


def test_a1je_equals_nb_without_missing_values_and_differs_with_them():
    train = random_data(200, [3, 4, 2, 5], 3, seed=1)
    test = random_data(80, [3, 4, 2, 5], 3, seed=2)
    a = registry.create("A1JE").fit(train).predict_proba(test)
    b = registry.create("NB").fit(train).predict_proba(test)
    assert np.max(np.abs(a - b)) < 1e-12
    trainm = random_data(200, [3, 4, 2, 5], 3, seed=1, missing=0.2)
    a = registry.create("A1JE").fit(trainm).predict_proba(test)
    b = registry.create("NB").fit(trainm).predict_proba(test)
    assert np.max(np.abs(a - b)) > 1e-3  # §6.2's rule is not §2's


@needs_shared
def test_a1je_equals_nb_on_discretised_iris_to_1e12():
    from workbench.data.arff import load_arff
    from workbench.discretize import fit_discretizer
    data = load_arff(shared_file("iris"))
    d = fit_discretizer("mdl", data).transform(data)
    a = registry.create("A1JE").fit(d).predict_proba(d)
    b = registry.create("NB").fit(d).predict_proba(d)
    assert np.max(np.abs(a - b)) < 1e-12


def test_join_exponent_and_too_few_attributes():
    assert anje_exponent(10, 1) == 1.0 and anje_exponent(10, 2) == 1 / 9
    assert anje_exponent(6, 3) == 1 / math.comb(5, 2)
    tiny = random_data(20, [2, 3, 2, 2], 2, seed=0)  # A = 4 < 5
    with pytest.raises(LearnerError, match="n = 5 needs at least 5 attributes"):
        registry.create("A5JE").fit(tiny)


def test_join_index_stores_only_seen_values_and_finds_them_again():
    cards = np.array([3190, 4, 4])  # an ID-like attribute: no dense table over it
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, c, 500) for c in cards], 1)
    y = rng.integers(0, 3, 500)
    idx = JoinIndex(cards, 3, 2)
    slots = idx.fit(codes, y)
    assert idx.n_keys == 3190 * 4 * 2 + 16
    assert idx.n_slots == len({(a, tuple(r[list(j)])) for r in codes
                               for a, j in enumerate(idx.joins)})
    assert idx.counts.sum() == 500 * 3 and np.array_equal(idx.lookup(codes), slots)
    never = min(set(range(3190)) - set(codes[:, 0].tolist()))
    got = idx.lookup(np.array([[never, codes[0, 1], codes[0, 2]]]))[0]
    assert got[0] == -1 and got[1] == -1 and got[2] == slots[0, 2]


def test_join_index_refuses_a_layout_over_the_memory_budget():
    idx = JoinIndex(np.full(60, 3), 2, 3)  # C(60, 3) = 34,220 joins
    codes = np.zeros((1000, 60), dtype=np.int64)
    with pytest.raises(LearnerError, match=r"34,220 attribute subsets × 1,000 rows need about "
                                           r"1\.0 GiB, over the memory budget of 0\.5 GiB"):
        idx.fit(codes, np.zeros(1000, dtype=np.int64), budget=1 << 29)


# ----- gradients --------------------------------------------------------------------------------
def problem_of(data, n, parameterisation, objective, l2=0.0):
    codes = np.nan_to_num(data.X, nan=0).astype(np.int64)
    idx = JoinIndex(data.cardinalities, data.n_classes, n)
    slots = idx.fit(codes, data.y)
    return Problem(slots, data.y, idx.log_prior(),
                   idx.log_conditional(), idx.joins[idx.slot_join(), 0], data.n_attributes,
                   parameterisation, objective, l2)


@pytest.mark.parametrize("form,objective,l2,n", [
    ("weighted", "cll", 0.0, 1), ("weighted", "mse", 0.0, 1), ("weighted", "cll", 0.01, 2),
    ("direct", "cll", 0.0, 1), ("direct", "mse", 0.0, 2), ("direct", "cll", 0.01, 1),
    ("tied", "cll", 0.0, 1), ("tied", "mse", 0.0, 1),
])
def test_gradient_equals_finite_differences(form, objective, l2, n):
    data = random_data(40, [2, 3, 3, 2], 3, seed=7)
    pb = problem_of(data, n, form, objective, l2)
    rng = np.random.default_rng(3)
    theta = rng.normal(0, 0.5, pb.size) + (0.5 if form == "tied" else 0.0)
    f, g = pb.value_and_gradient(theta)
    h = 1e-6
    fd = np.array([(pb.value(theta + h * e) - pb.value(theta - h * e)) / (2 * h)
                   for e in np.eye(pb.size)])
    assert np.linalg.norm(g - fd) / max(np.linalg.norm(fd), 1e-12) < 1e-6


def test_cll_is_zero_at_theta_zero_and_includes_the_log_k_offset():
    data = random_data(30, [2, 3], 3, seed=1)
    for form in ("weighted", "direct"):
        pb = problem_of(data, 1, form, "cll")
        assert pb.value(np.zeros(pb.size)) == pytest.approx(0.0, abs=1e-12)
    pb = problem_of(data, 1, "weighted", "mse")
    assert pb.value(np.zeros(pb.size)) == pytest.approx(30 * (4 / 9 + 2 / 9), rel=1e-12)


# ----- identities between the models ----------------------------------------------------------
def test_wanbia_at_unit_weights_is_a1je():
    train = random_data(150, [3, 2, 4], 2, seed=4, missing=0.1)
    test = random_data(50, [3, 2, 4], 2, seed=5, missing=0.1)
    w1 = registry.create("WANBIA", max_iter=0).fit(train)
    assert w1.iterations() == 0 and np.all(w1.theta_ == 1.0)
    a = registry.create("A1JE").fit(train).predict_proba(test)
    assert np.max(np.abs(w1.predict_proba(test) - a)) < 1e-12
    w = registry.create("WANBIA").fit(train)
    assert np.all((w.theta_ >= 0) & (w.theta_ <= 1))
    assert w.fit_report()["train_objective"] <= w1.fit_report()["train_objective"]


def test_wanbia_c_and_lr_reach_the_same_conditional_log_likelihood():
    train = random_data(400, [3, 4, 2, 3], 3, seed=11)
    fw = registry.create("WANBIA-C").fit(train).fit_report()
    fd = registry.create("LR").fit(train).fit_report()
    fi = registry.create("LR-initNB").fit(train).fit_report()
    assert fw["train_objective"] < -30  # well below f(0) = 0
    for other in (fd, fi):
        assert abs(fw["train_objective"] - other["train_objective"]) <= \
            1e-6 * abs(fw["train_objective"])


def test_init_anje_starts_at_the_anje_estimates():
    train = random_data(120, [3, 4, 2, 3], 2, seed=2)
    test = random_data(40, [3, 4, 2, 3], 2, seed=3)
    # n = 1: e_1 = 1, both forms start at naive Bayes (AOARD Fig. 7's "LR initialised to NB")
    a = registry.create("A1JE").fit(train).predict_proba(test)
    for name in ("WANBIA-C", "LR"):
        m = registry.create(name, init="anje", max_iter=0).fit(train)
        assert m.iterations() == 0
        assert np.max(np.abs(m.predict_proba(test) - a)) < 1e-12
    # n = 2: every entry e_2 (the class weight too), i.e. A2JE with its prior scaled by e_2
    gen = registry.create("A2JE").fit(train)
    e = 1 / 3
    s = gen._joint_log_likelihood(test) + (e - 1) * gen._terms[0][None, :]
    expect = np.exp(s - s.max(1, keepdims=True))
    expect /= expect.sum(1, keepdims=True)
    for name in ("ALR2", "LR2"):
        m = registry.create(name, init="anje", max_iter=0).fit(train)
        assert np.max(np.abs(m.predict_proba(test) - expect)) < 1e-12


def test_unseen_test_values_keep_their_initial_parameter():
    train = make([[0, 0], [1, 1], [0, 1], [1, 0], [0, 0]], [0, 1, 1, 0, 0], [3, 2], 2)
    test = make([[2, 0]], [0], [3, 2], 2)  # a0 = 2 never seen
    for name, init in (("WANBIA-C", 0), ("LR", 0), ("LR", 1), ("WANBIA-C", "anje"),
                       ("LR", "anje")):
        m = registry.create(name, init=init).fit(train)
        s = m._joint_log_likelihood(test)[0]
        c, per_slot, _ = m._terms
        slot = m.index_.lookup(np.array([[2, 0]]))[0]
        assert slot[0] == -1 and slot[1] >= 0
        unseen_l = np.log((1 / 3) / (m.index_.class_counts + 1.0))
        e = 1.0
        expect_unseen = {0: 0.0 * unseen_l, 1: (unseen_l if name == "WANBIA-C" else 1.0),
                         "anje": e * unseen_l}[init]
        assert s == pytest.approx(c + per_slot[slot[1]] + expect_unseen, abs=1e-13)


# ----- SGD and AdaGrad against a row-by-row reference -------------------------------------------
def sgd_reference(train, weighted, adagrad, eta=0.01, passes=1, order=None):
    """SPEC §6.8 with dictionaries of parameters and plain Python loops."""
    X = np.nan_to_num(train.X, nan=0).astype(int)
    K, A, N = train.n_classes, X.shape[1], X.shape[0]
    cards = train.cardinalities
    cy = np.bincount(train.y, minlength=K)
    Ly = np.log((cy + 1 / K) / (N + 1))
    cnt = {}
    for r, y in zip(X, train.y):
        for a in range(A):
            cnt[(a, r[a], y)] = cnt.get((a, r[a], y), 0) + 1

    def L(a, v, y):
        return math.log((cnt.get((a, v, y), 0) + 1 / cards[a]) / (cy[y] + 1))

    th, G = {}, {}
    for _ in range(passes):
        for i in (range(N) if order is None else order):
            r, t = X[i], train.y[i]
            s = [th.get(("c", y), 0.0) * (Ly[y] if weighted else 1.0) for y in range(K)]
            for a in range(A):
                for y in range(K):
                    s[y] += th.get((a, r[a], y), 0.0) * (L(a, r[a], y) if weighted else 1.0)
            m = max(s)
            e = [math.exp(v - m) for v in s]
            p = [v / sum(e) for v in e]
            grads = {}
            for y in range(K):
                res = p[y] - (y == t)
                grads[("c", y)] = res * (Ly[y] if weighted else 1.0)
                for a in range(A):
                    grads[(a, r[a], y)] = res * (L(a, r[a], y) if weighted else 1.0)
            for key, g in grads.items():
                if adagrad:
                    G[key] = G.get(key, 0.0) + g * g
                    th[key] = th.get(key, 0.0) - eta * g / (1e-9 + math.sqrt(G[key]))
                else:
                    th[key] = th.get(key, 0.0) - eta * g
    return th


@pytest.mark.parametrize("name", ["WANBIA-C-SGD", "LR-SGD", "WANBIA-C-ADAGRAD", "LR-ADAGRAD"])
def test_sgd_and_adagrad_follow_the_row_by_row_reference(name):
    train = random_data(120, [3, 2, 4], 3, seed=8, missing=0.05)
    test = random_data(30, [3, 2, 4], 3, seed=9)
    m = registry.create(name, passes=2).fit(train)
    th = sgd_reference(train, name.startswith("WANBIA"), name.endswith("ADAGRAD"), passes=2)
    tc, ts = m.theta_[:3], m.theta_[3:].reshape(-1, 3)
    assert np.max(np.abs(tc - [th[("c", y)] for y in range(3)])) < 1e-12
    keys = m.index_.seen_keys
    for slot, key in enumerate(keys):
        a = int(np.searchsorted(m.index_.base, key, side="right") - 1)
        v = int(key - m.index_.base[a])
        for y in range(3):
            assert abs(ts[slot, y] - th.get((a, v, y), 0.0)) < 1e-12
    assert m.iterations() == 2
    p = m.predict_proba(test)
    assert np.allclose(p.sum(1), 1.0)


def test_shuffled_sgd_is_seeded_and_uses_numpys_permutation():
    train = random_data(80, [3, 2], 2, seed=1)
    a = registry.create("LR-SGD", shuffle_seed=5).fit(train).theta_
    b = registry.create("LR-SGD", shuffle_seed=5).fit(train).theta_
    assert np.array_equal(a, b)
    order = np.random.default_rng(5).permutation(80)
    th = sgd_reference(train, False, False, order=order)
    assert abs(a[0] - th[("c", 0)]) < 1e-12
    assert not np.array_equal(a, registry.create("LR-SGD").fit(train).theta_)


@pytest.mark.parametrize("name", ["LR-SGD", "LR-ADAGRAD", "LR2-SGD"])
def test_the_stream_form_chunk_by_chunk_is_one_pass_in_file_order(name):
    """`stream()` (the prequential protocol's form): chunks of 7 rows, each a partial_fit,
    give LR-SGD's single pass over all rows in file order — θ and probabilities exactly —
    though each joint value's parameters appear only when a chunk first shows it."""
    train = random_data(120, [3, 2, 4], 3, seed=8, missing=0.05)
    test = random_data(30, [3, 2, 4], 3, seed=9)
    whole = registry.create(name).fit(train)
    form = registry.create(name).stream()
    for start in range(0, 120, 7):
        form.partial_fit(train.take(np.arange(start, min(start + 7, 120))))
    np.testing.assert_array_equal(form.index_.seen_keys, whole.index_.seen_keys)
    np.testing.assert_array_equal(form.theta_, whole.theta_)
    np.testing.assert_array_equal(form.predict_proba(test), whole.predict_proba(test))
    assert np.array_equal(registry.create(name).stream().fit(train).theta_, whole.theta_)


@pytest.mark.parametrize("name, why", [("WANBIA-C-SGD", "direct form"), ("LR", "direct form"),
                                       ("A1JE", "direct form")])
def test_only_the_direct_single_pass_forms_learn_a_stream(name, why):
    train = random_data(40, [3, 2], 2, seed=1)
    with pytest.raises(LearnerError, match=why):
        registry.create(name).stream().partial_fit(train)
    with pytest.raises(LearnerError, match="read once"):
        registry.create("LR-SGD", passes=2).stream().partial_fit(train)


# ----- WANBIA-bnc -----------------------------------------------------------------------------
def test_wanbia_bnc_prediction_rule_with_given_weights():
    train = random_data(90, [3, 2, 4], 2, seed=3)
    test = random_data(20, [3, 2, 4], 2, seed=4)
    w = [0.3, 1.0, 0.0]
    p = registry.create("WANBIA-bnc", weights=w).fit(train).predict_proba(test)
    X = train.X.astype(int)
    cy = np.bincount(train.y, minlength=2)
    out = []
    for t in test.X.astype(int):
        s = np.log((cy + 1) / (90 + 2))
        for j, c in enumerate(train.cardinalities):
            theta = np.array([[(np.sum((X[:, j] == u) & (train.y == y)) + 1) / (cy[y] + c)
                               for y in range(2)] for u in range(c)])
            s = s + w[j] * np.log(theta[t[j]]) - np.log((theta ** w[j]).sum(axis=0))
        q = np.exp(s - s.max())
        out.append(q / q.sum())
    assert np.max(np.abs(p - np.array(out))) < 1e-12
    with pytest.raises(LearnerError, match="'weights' has 2 value"):
        registry.create("WANBIA-bnc", weights=[1.0, 1.0]).fit(train)
    with pytest.raises(LearnerError, match="weights"):
        registry.create("WANBIA-bnc", weights=[1.5, 0, 0])
    fitted = registry.create("WANBIA-bnc").fit(train)
    assert np.all((fitted.weights_ >= 0) & (fitted.weights_ <= 1))


# ----- registry and options -------------------------------------------------------------------------
def test_registered_names_and_aliases():
    names = set(registry.names())
    expected = {"A1JE", "A5JE", "WANBIA-C", "ALR1", "ALR2", "WANJE2", "ALR5", "WANJE5", "LR",
                "LR1", "LR5", "WANBIA", "WANBIA-bnc", "WANBIA-C-init1", "WANBIA-C-initNB",
                "WANBIA-C-MSE", "WANBIA-C-SGD", "WANBIA-C-ADAGRAD", "LR-SGD", "LR-ADAGRAD",
                "ALR2-init1", "LR3-MSE"}
    assert expected <= names
    assert registry.get("ALR1").defaults == registry.get("WANBIA-C").defaults
    assert registry.get("WANJE3").defaults == registry.get("ALR3").defaults
    lr = registry.create("LR")
    assert (lr.model, lr.objective, lr.optimizer, lr.init, lr.l2) == \
        ("direct", "cll", "lbfgs", 0, 0.0)
    assert (lr.max_iter, lr.factr, lr.pgtol, lr.history, lr.eta, lr.passes) == \
        (10000, 1e7, 1e-33, 5, 0.01, 1)


@pytest.mark.parametrize("params,match", [
    ({"model": "tied", "n": 2}, "needs n = 1"),
    ({"model": "tied", "init": 0}, "always starts at weights 1"),
    ({"model": "tied", "init": 1, "optimizer": "sgd"}, "weighted or direct"),
    ({"model": "weighted", "optimizer": "sgd", "objective": "mse"}, "cll objective only"),
    ({"model": "weighted", "objective": "mse", "l2": 0.01}, "'l2' applies"),
    ({"model": "weighted", "init": 2}, "'init' must be one of"),
])
def test_bad_option_combinations_are_refused(params, match):
    with pytest.raises(LearnerError, match=match):
        AnJE(**params)


def test_objective_and_iterations_are_recorded_per_fold():
    from workbench.evaluation.cv import evaluate
    from workbench.evaluation.protocols import KFold
    data = random_data(120, [3, 2, 4], 2, seed=6)
    out = evaluate(data, "WANBIA-C", {}, KFold(folds=3, rounds=1, seed=1))
    assert all(r.iterations > 0 for r in out.fold_results)
    assert all(r.train_objective < 0 for r in out.fold_results)
    assert out.summary["iterations"] == np.mean([r.iterations for r in out.fold_results])
    assert out.summary["train_objective"] == \
        pytest.approx(np.mean([r.train_objective for r in out.fold_results]))


# ----- training in passes over chunks (out of core) ------------------------------------------
@pytest.mark.parametrize("name,params", [("A2JE", {}), ("WANBIA-C-SGD", {}),
                                         ("WANBIA-C-ADAGRAD", {"passes": 3}),
                                         ("LR2-SGD", {}), ("ALR2-ADAGRAD", {})])
@pytest.mark.parametrize("chunk", [1, 13, 10_000])
def test_passes_over_chunks_equal_fit(name, params, chunk):
    """Counting chunk by chunk (JoinIndex.add/finish), SGD passes in file order and a pass
    for the objective, resumed from a pickle between passes: the same θ and probabilities
    as `fit` (bit for bit) and its objective to rounding."""
    data = random_data(90, [3, 2, 4, 3], 3, seed=11, missing=0.1)
    ref = registry.create(name, **params).fit(data)
    model, p = train_in_passes(registry.create(name, **params), data, chunk)
    assert p == model.n_passes() == 2 + (0 if name == "A2JE" else params.get("passes", 1))
    np.testing.assert_array_equal(model.predict_proba(data), ref.predict_proba(data))
    if ref.theta_ is not None:
        np.testing.assert_array_equal(model.theta_, ref.theta_)
    got, want = model.fit_report(), ref.fit_report()
    assert got["train_objective"] == pytest.approx(want["train_objective"], rel=1e-12)
    assert {k: v for k, v in got.items() if k != "train_objective"} == \
        {k: v for k, v in want.items() if k != "train_objective"}


def test_passes_refused_where_all_rows_are_needed():
    data = random_data(30, [3, 2], 2, seed=1)
    for name, params in (("WANBIA-C", {}), ("WANBIA", {}),
                         ("WANBIA-C-SGD", {"shuffle_seed": 3})):
        with pytest.raises(LearnerError, match="all rows"):
            registry.create(name, **params).begin(data)
