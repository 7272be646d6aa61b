"""RF10 = Weka's RandomForest (SPEC §2 RF-0 … RF-W): the Java RNG, instance strings, bagging,
hand-built trees (gains, thresholds, fractional missing values, ties) and the worked
example's probabilities; SKRF10 (scikit-learn's forest) kept for users who want it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import REPO, shared_file
from workbench.data.catalog import load_dataset
from workbench.data.dataset import Attribute, Dataset
from workbench.errors import LearnerError
from workbench.learners import registry
from workbench.learners import randomtree as rt
from workbench.learners.forest import (
    RandomForest,
    RandomTree,
    SKRandomForest,
    weka_bag,
    weka_bag_357,
    weka_max_features,
)
from workbench.learners.jrandom import JavaRandom, java_string_hash


def dataset(columns, y, nominal=None, K=2, name="hand"):
    """A Dataset from columns (numeric unless `nominal` gives the values of column j)."""
    nominal = nominal or {}
    X = np.column_stack([np.asarray(c, dtype=float) for c in columns])
    atts = tuple(Attribute(f"a{j}", nominal.get(j)) for j in range(X.shape[1]))
    cls = Attribute("c", tuple(f"k{i}" for i in range(K)))
    return Dataset(name, atts, cls, X, np.asarray(y, dtype=np.int64))


# ----- RF-1: java.util.Random ---------------------------------------------------------------------
def test_java_random_test_vectors():
    r = JavaRandom(1)
    assert [r.next_int() for _ in range(3)] == [-1155869325, 431529176, 1761283695]
    r = JavaRandom(1)
    assert [r.next_double() for _ in range(2)] == [0.7308781907032909, 0.41008081149220166]
    r = JavaRandom(1)
    assert [r.next_int(10) for _ in range(5)] == [5, 8, 7, 3, 4]
    assert JavaRandom(1).next_int(16) == 11
    assert JavaRandom(-1155869325).next_int(75) == 53


# ----- RF-3: instance strings and their hashes -------------------------------------------------------
def test_instance_strings_and_hashes():
    iris = load_dataset(REPO / "datasets" / "iris.arff.gz")
    assert rt.instance_string(iris, 0) == "5.1,3.5,1.4,0.2,Iris-setosa"
    assert java_string_hash("5.1,3.5,1.4,0.2,Iris-setosa") == 752962594
    german = load_dataset(REPO / "datasets" / "german.arff.gz")
    s = rt.instance_string(german, 0)
    assert s == ("<0,6,'critical/other existing credit',radio/tv,1169,'no known savings',>=7,"
                 "4,'male single',none,4,'real estate',67,none,own,2,skilled,1,yes,yes,good")
    assert java_string_hash(s) == -1754658480
    assert java_string_hash("") == 0


@pytest.mark.parametrize("v, text", [
    (1.51793, "1.51793"), (40.0, "40"), (-0.5, "-0.5"), (1e-7, "0"), (5e-7, "0.000001"),
    (123456.7890125, "123456.789013"), (-0.0, "0"), (0.1 + 0.2, "0.3")])
def test_number_rendering(v, text):
    assert rt.format_number(v) == text


def test_label_quoting():
    assert rt.quote_label("male single") == "'male single'"
    assert rt.quote_label("<=50K") == "<=50K"
    assert rt.quote_label("?") == "'?'" and rt.quote_label("") == "''"
    assert rt.quote_label("a{b") == "'a{b'"
    assert rt.quote_label("it's") == "'it\\'s'"
    assert rt.quote_label("50%\t") == "'50\\%\\t'"


# ----- RF-2: K and the bag ------------------------------------------------------------------------
def test_k_features_rule():
    assert [weka_max_features(a) for a in (1, 2, 3, 4, 8, 60, 64, 166)] == \
        [1, 2, 2, 3, 4, 6, 7, 8]
    # 3.5.7 counts the class: one more when a + 1 is a power of two
    assert [rt.default_k(a, 0, old_rules=True) for a in (3, 7, 8, 15)] == [3, 4, 4, 5]
    assert rt.default_k(10, 3) == 3 and rt.default_k(2, 5) == 2


def test_iris_bag_draws_and_tree_seed():
    R = JavaRandom(1)
    bag = weka_bag(R.state, 150, np.empty(150, dtype=np.int64))
    assert list(bag[:5]) == [109, 61, 31, 49, 145]
    s0 = R.next_int()
    assert s0 == 844774588
    # tree 0's RNG: nextInt(150) = 147 → bag entry 147 = file row 132, re-seeded from its hash
    r = JavaRandom(s0)
    j = r.next_int(150)
    assert j == 147 and bag[j] == 132
    iris = load_dataset(REPO / "datasets" / "iris.arff.gz")
    s = rt.instance_string(iris, 132)
    assert s == "6.4,2.8,5.6,2.2,Iris-virginica" and java_string_hash(s) == -633505627
    r.set_seed(-633505627 + s0)
    assert [r.next_int(4), r.next_int(3)] == [3, 0]


def test_old_bagging_is_in_instance_order():
    R = JavaRandom(1)
    bag = weka_bag_357(R.state, 200, np.empty(200, dtype=np.int64))
    assert len(bag) == 200 and np.all(np.diff(bag) >= 0)
    assert 0.65 < len(np.unique(bag)) / 200 < 0.9  # ~75 % distinct (63 % for the bootstrap)


# ----- RF-5: evaluating attributes, by hand ---------------------------------------------------------
def test_nominal_multiway_gain():
    # T = [[2, 0], [1, 1], [0, 2]]: class entropy 1 bit, rows (2·0 + 2·1 + 2·0)/6 = 1/3
    X = np.array([[0], [0], [1], [1], [2], [2]], dtype=float)
    y = np.array([0, 0, 0, 1, 1, 1])
    T, P = np.empty((3, 2)), np.empty(3)
    rt._eval_nominal(X, y, 0, 3, 2, np.arange(6), np.ones(6), 0, 6, T, P)
    np.testing.assert_array_equal(T, [[2, 0], [1, 1], [0, 2]])
    np.testing.assert_allclose(P, [1 / 3] * 3, rtol=0, atol=1e-15)
    gain = rt._h_cols(T, 3, 2, False) - rt._h_rows(T, 3, 2, False)
    assert gain == pytest.approx(2 / 3, abs=1e-15)


def _numeric(values, y, w=None):
    X = np.array(values, dtype=float)[:, None]
    n = len(values)
    rows, wts = np.arange(n), np.ones(n) if w is None else np.array(w, float)
    T, P, cur = np.empty((2, 2)), np.empty(2), np.empty((2, 2))
    thr = rt._eval_numeric(X, np.array(y), 0, 2, rows, wts, 0, n, T, P, cur,
                           rt._sort_scratch(n), False)
    return thr, T, P, rows


def test_numeric_threshold_is_the_midpoint_of_the_best_gap():
    thr, T, P, rows = _numeric([10, 2, 11, 1, 12, 3], [1, 0, 1, 0, 1, 0])
    assert thr == 6.5
    np.testing.assert_array_equal(T, [[3, 0], [0, 3]])
    assert list(rows) == [3, 1, 5, 0, 2, 4]  # the node's list is re-ordered by value


def test_numeric_threshold_ties_and_rounding():
    # 1.5 and 3.5 give exactly the same gain: the lowest threshold wins
    thr, *_ = _numeric([1, 2, 3, 4], [0, 1, 1, 0])
    assert thr == 1.5
    # adjacent doubles: the midpoint rounds down to the lower value, so the upper is used
    lo = 1.0
    hi = math.nextafter(1.0, 2.0)
    thr, *_ = _numeric([lo, hi], [0, 1])
    assert thr == hi


def test_missing_values_become_fractional_instances():
    # known: x = 1, 2 (class 0), 10, 11 (class 1) → P = (0.5, 0.5); the missing row (class 1)
    # adds 0.5 to each branch
    thr, T, P, rows = _numeric([1, 2, np.nan, 10, 11], [0, 0, 1, 1, 1])
    assert thr == 6.0
    np.testing.assert_array_equal(P, [0.5, 0.5])
    np.testing.assert_array_equal(T, [[2, 0.5], [0, 2.5]])
    assert rows[-1] == 2  # missing values sort last


def test_hand_built_tree_training_and_classification_with_missing_values():
    data = dataset([[1, 2, np.nan, 10, 11]], [0, 0, 1, 1, 1])
    tree = RandomTree().fit(data)
    t = tree.trees_[0]
    assert t.kind[0] == rt.KIND_SPLIT and t.thr[0] == 6.0 and t.nchild[0] == 2
    # children receive the rows of the winning table, fractions included
    np.testing.assert_array_equal(t.dist[t.cn_off[1]: t.cn_off[1] + 2], [2, 0.5])
    np.testing.assert_array_equal(t.dist[t.cn_off[2]: t.cn_off[2] + 2], [0, 2.5])
    assert t.kind[1] == rt.KIND_LEAF and t.kind[2] == rt.KIND_LEAF
    test = dataset([[1.5, 20, np.nan]], [0, 1, 0])
    p = tree.predict_proba(test)
    np.testing.assert_array_equal(p[0], [0.8, 0.2])  # leaf: Cn / Σ
    np.testing.assert_array_equal(p[1], [0.0, 1.0])
    np.testing.assert_array_equal(p[2], [0.5 * 0.8, 0.5 * 0.2 + 0.5 * 1.0])  # Σ P_b · child


def test_equal_gains_pick_the_lower_attribute_index():
    x = [1, 2, 3, 10, 11, 12]
    data = dataset([x, x], [0, 0, 0, 1, 1, 1])  # two identical attributes, K = 2
    for seed in range(1, 6):
        t = RandomTree(seed=seed).fit(data).trees_[0]
        assert t.att[0] == 0


def test_empty_branch_falls_back_to_the_parent_distribution():
    # nominal attribute with a declared value never seen in training → empty child
    data = dataset([[0, 0, 0, 1, 1, 1]], [0, 0, 1, 1, 1, 1], nominal={0: ("u", "v", "w")})
    tree = RandomTree().fit(data)
    t = tree.trees_[0]
    assert t.kind[0] == rt.KIND_SPLIT and t.kind[3] == rt.KIND_EMPTY
    p = tree.predict_proba(dataset([[2]], [0], nominal={0: ("u", "v", "w")}))
    np.testing.assert_array_equal(p[0], [2 / 6, 4 / 6])


def test_weka_quicksorts_sort_with_ties():
    rng = np.random.default_rng(0)
    for sort in (rt.weka_quicksort, rt.weka357_quicksort):
        for n in (1, 2, 3, 4, 17, 200):
            keys = rng.integers(0, 5, n).astype(float)
            perm = np.arange(n)
            sort(keys, perm, np.empty(4 * n + 16, dtype=np.int64))
            assert sorted(perm) == list(range(n))
            assert np.all(np.diff(keys[perm]) >= 0)


def test_weka_357_rules_on_missing_values():
    # 3.5.7: per-attribute instance orders sorted once at the root, gain > 0 (RF-V)
    labor = load_dataset(shared_file("labor"))
    old = registry.create("RF10", weka_version="3.5.7")
    p = old.fit(labor).predict_proba(labor)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(p, registry.create("RF10", weka_version="3.5.7")
                                  .fit(labor).predict_proba(labor))
    assert (p.argmax(1) == labor.y).mean() > 0.9
    tree = RandomTree(weka_version="3.5.7").fit(labor).trees_[0]
    assert tree.n_nodes > 1 and tree.kind[0] == rt.KIND_SPLIT


def test_weka_357_attributes_without_missing_values_share_one_instance_list():
    """Under 3.5.7's rules a nominal attribute without a missing value in the bag has the
    bag order as its list: such attributes share one list (split once a node, not once per
    attribute: connect-4's forest 6× faster), numeric attributes and nominal ones with a
    missing value keep their own. The forest is the one of a list per attribute: the
    probabilities below were made by that implementation (commit 8acf394)."""
    import hashlib

    data = load_dataset(REPO / "datasets" / "connect-4.arff.gz").take(np.arange(1200))
    X = data.X.copy()
    X[:, :5][np.random.default_rng(3).random((1200, 5)) < 0.1] = np.nan
    data = data.replace(X=X)
    train, test = data.take(np.arange(0, 1200, 2)), data.take(np.arange(1, 1200, 2))
    list_of, nl = rt._list_of(train.X, np.arange(600), np.ones(42, dtype=np.bool_), True)
    assert nl == 6 and list(list_of[:5]) == [0, 1, 2, 3, 4] and set(list_of[5:]) == {5}
    mixed = np.array([True, False, True])
    Xm = np.array([[0.0, 1.5, np.nan], [1.0, 0.5, 1.0]])
    assert [list(v) if i == 0 else v for i, v in
            enumerate(rt._list_of(Xm, np.arange(2), mixed, True))] == [[0, 1, 2], 3]
    assert rt._list_of(Xm, np.arange(2), mixed, False)[1] == 1
    p = registry.create("RF10", weka_version="3.5.7").fit(train).predict_proba(test)
    assert hashlib.sha1(np.ascontiguousarray(p).tobytes()).hexdigest() == \
        "d321a3e45ca12f36eb8f50a0f87c838c05aea08f"
    assert p[0].tolist() == [0.9513658297944133, 0.0, 0.04863417020558677]


# ----- RF-W: the worked example -----------------------------------------------------------------
def test_labor_worked_example_probabilities():
    labor = load_dataset(shared_file("labor"))
    p = registry.create("RF10").fit(labor).predict_proba(labor)
    assert p[0].tolist() == [0.19452664213152054, 0.8054733578684795]
    assert p[1].tolist() == [0.018946938732788705, 0.9810530612672113]
    assert p[2].tolist() == [0.11364687432259621, 0.8863531256774039]


def test_rf10_registration_and_parameters():
    rf = registry.create("RF10")
    assert isinstance(rf, RandomForest) and rf.preprocessing == "none"
    assert (rf.n_trees, rf.seed, rf.k_features, rf.min_num, rf.max_depth, rf.weka_version) == \
        (10, 1, 0, 1.0, 0, "3.6.14")
    old = registry.create("RF10", weka_version="3.5.7")
    iris = load_dataset(REPO / "datasets" / "iris.arff.gz")
    a = rf.fit(iris).predict_proba(iris)
    b = old.fit(iris).predict_proba(iris)
    np.testing.assert_allclose(a.sum(axis=1), 1.0)
    assert not np.array_equal(a, b)
    with pytest.raises(LearnerError, match="weka_version"):
        registry.create("RF10", weka_version="3.8")
    with pytest.raises(LearnerError, match="n_trees"):
        RandomForest(n_trees=0)


def test_forest_is_deterministic_and_seeded():
    iris = load_dataset(REPO / "datasets" / "iris.arff.gz")
    a = RandomForest(seed=3).fit(iris).predict_proba(iris)
    b = RandomForest(seed=3).fit(iris).predict_proba(iris)
    c = RandomForest(seed=4).fit(iris).predict_proba(iris)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


# ----- SKRF10 ---------------------------------------------------------------------------------------
def mixed(n=200, seed=0, K=3, missing=0.1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K - 1, n)  # the last declared class never occurs
    num = y + rng.normal(0, 0.4, n)
    nom = (y + (rng.random(n) < 0.2)) % 3
    X = np.column_stack([num, nom, rng.normal(size=n)]).astype(float)
    X[rng.random(X.shape) < missing] = np.nan
    atts = (Attribute("x"), Attribute("colour", ("r", "g", "b")), Attribute("noise"))
    return Dataset("mixed", atts, Attribute("c", tuple(f"k{i}" for i in range(K))), X, y)


def test_both_forests_return_every_declared_class_with_missing_values():
    train, test = mixed(seed=0), mixed(seed=1)
    for model in (registry.create("SKRF10"), registry.create("RF10")):
        p = model.fit(train).predict_proba(test)
        assert p.shape == (test.n_instances, 3)
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
        assert np.all(p[:, 2] == 0)  # class never seen in training
        assert (p.argmax(1) == test.y).mean() > 0.7


def test_errors():
    with pytest.raises(LearnerError, match="before fit"):
        RandomForest().predict_proba(mixed())
    other = mixed().replace(attributes=(Attribute("y"),) + mixed().attributes[1:])
    with pytest.raises(LearnerError, match="header differs"):
        RandomForest().fit(mixed()).predict_proba(other)
    with pytest.raises(LearnerError, match="n_estimators"):
        registry.create("SKRF10", n_estimators="ten")
    with pytest.raises(LearnerError, match="max_features"):
        SKRandomForest(max_features=0)


def test_rf10_uses_seed_1_in_every_fold():
    # SPEC RF: "In cross-validation, every training fold builds a new forest with seed = 1"
    from workbench.evaluation.pipeline import fold_seed, make_learner

    assert make_learner("RF10", {}, seed=fold_seed(1, 3, 1)).seed == 1
    assert make_learner("RF10", {"seed": 5}, seed=fold_seed(1, 3, 1)).seed == 5
    # a variant that does not fix its seed still gets the per-fold one
    registry.register("RF-free-seed-test", RandomForest, n_trees=2, source="test")
    try:
        assert make_learner("RF-free-seed-test", {}, seed=7).seed == 7
    finally:
        registry.unregister("RF-free-seed-test")
