"""MDL and equal-frequency discretisation (SPEC §1): known results, hand-worked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import EMBEDDED
from workbench.data.arff import load_arff
from workbench.data.dataset import Attribute, Dataset
from workbench.discretize import (
    bin_labels,
    check_method,
    equal_frequency_cuts,
    fit_discretizer,
    mdl_cuts,
    parse_method,
)
from workbench.errors import WorkbenchError


def _dataset(columns: dict[str, list], labels: list[int], classes=("a", "b")) -> Dataset:
    attrs = tuple(Attribute(name) for name in columns)
    X = np.column_stack([np.asarray(v, dtype=float) for v in columns.values()])
    return Dataset("t", attrs, Attribute("class", tuple(classes)), X, np.asarray(labels))


# ----- iris: the known result ------------------------------------------------------------
def test_iris_mdl_cut_points_exactly():
    iris = load_arff(EMBEDDED / "iris.arff.gz")
    cuts = fit_discretizer("mdl", iris).cuts
    # every cut is the float midpoint of two adjacent distinct values
    assert cuts == {
        "sepallength": [(5.5 + 5.6) / 2, (6.1 + 6.2) / 2],
        "sepalwidth": [(2.9 + 3.0) / 2, (3.3 + 3.4) / 2],
        "petallength": [(1.9 + 3.0) / 2, (4.7 + 4.8) / 2],
        "petalwidth": [(0.6 + 1.0) / 2, (1.7 + 1.8) / 2],
    }
    assert cuts["sepallength"] == [5.55, 6.15]
    assert cuts["petallength"] == [2.45, 4.75]
    assert cuts["petalwidth"] == [0.8, 1.75]
    assert cuts["sepalwidth"] == pytest.approx([2.95, 3.35], abs=1e-12)
    out = fit_discretizer("mdl", iris).transform(iris)
    assert out.attributes[0].values == ("(-inf-5.55]", "(5.55-6.15]", "(6.15-inf)")
    assert out.attributes[1].values == ("(-inf-2.95]", "(2.95-3.35]", "(3.35-inf)")
    assert out.is_all_nominal and out.codes().max() == 2


# ----- hand-worked MDL cases -------------------------------------------------------------
def test_mdl_pure_split_accepted():
    # 1..8, classes 0000|1111. Best cut 4.5 (both sides pure): E = 1, cond = 0, gain = 1.
    # k = 2, k1 = k2 = 1, E1 = E2 = 0: delta = log2(3^2-2) - (2*1 - 0 - 0) = 2.807 - 2 = 0.807
    # threshold = (log2(7) + 0.807) / 8 = (2.807 + 0.807) / 8 = 0.452 < 1  -> accepted.
    # Both sides are pure, so no further cut.
    assert mdl_cuts(range(1, 9), [0, 0, 0, 0, 1, 1, 1, 1], 2) == [4.5]


def test_mdl_noisy_split_rejected():
    # 1..8, classes 0 0 0 1 0 1 1 1 (E = 1). Best cuts: after 3 -> (3,0 | 1,4) and after 5
    # -> (4,1 | 0,3), both cond = 5/8 * H(1/5) = 0.625 * 0.7219 = 0.4512; gain = 0.5488.
    # k = 2, k1 = 1 (E1 = 0), k2 = 2 (E2 = 0.7219):
    # delta = log2(7) - (2*1 - 0 - 2*0.7219) = 2.8074 - 0.5561 = 2.2513
    # threshold = (log2(7) + 2.2513) / 8 = 0.6323 > 0.5488  -> rejected: no cut at all.
    assert mdl_cuts(range(1, 9), [0, 0, 0, 1, 0, 1, 1, 1], 2) == []


def test_mdl_tie_first_minimum_wins_then_recursion_rejects():
    # 1..14, classes 0x6, 1, 0, 1x6 (E = 1). Cuts after 6 -> (6,0 | 1,7) and after 8 ->
    # (7,1 | 0,6) tie at cond = 8/14 * H(1/8) = 0.5714 * 0.5436 = 0.3106: the first (6.5)
    # wins. gain = 0.6894; k1 = 1, k2 = 2, E2 = 0.5436:
    # delta = log2(7) - (2 - 2*0.5436) = 1.8946; threshold = (log2(13) + 1.8946)/14 = 0.3996
    # -> accepted. Right side 7..14 = 1,0,1x6 (E = 0.5436): best cut after 8 -> (1,1 | 0,6),
    # cond = 2/8 * 1 = 0.25, gain = 0.2936; k1 = 2 (E1 = 1), k2 = 1:
    # delta = log2(7) - (2*0.5436 - 2*1) = 3.7202; threshold = (log2(7)+3.7202)/8 = 0.816
    # -> rejected. Left side pure. Result: [6.5] only.
    assert mdl_cuts(range(1, 15), [0] * 6 + [1, 0] + [1] * 6, 2) == [6.5]


def test_mdl_three_classes_with_tie():
    # 1..9, classes 000111222, E = log2(3) = 1.585. Cuts after 3 -> (3,0,0 | 0,3,3) and after
    # 6 -> (3,3,0 | 0,0,3) tie at cond = 6/9 * 1 = 0.667; the first (3.5) wins, gain 0.918.
    # k = 3, k1 = 1, k2 = 2 (E2 = 1): delta = log2(25) - (3*1.585 - 2*1) = 1.889;
    # threshold = (log2(8) + 1.889) / 9 = 0.543 -> accepted. Right 4..9 = 111222: pure cut
    # 6.5, gain 1 > (log2(5) + log2(7) - 2) / 6 = 0.522 -> accepted.
    assert mdl_cuts(range(1, 10), [0, 0, 0, 1, 1, 1, 2, 2, 2], 3) == [3.5, 6.5]


def test_mdl_cuts_only_between_distinct_values():
    # ten 1s (class 0) and ten 2s (one of class 0, nine of class 1): the class changes inside
    # the run of 2s, but the only candidate cut is 1.5. E = H(11/20) = 0.9928;
    # cond = 10/20 * H(1/10) = 0.2345, gain = 0.7583; k1 = 1, k2 = 2, E2 = 0.4690:
    # delta = log2(7) - (2*0.9928 - 2*0.4690) = 1.7598;
    # threshold = (log2(19) + 1.7598) / 20 = 0.3004 -> accepted.
    values = [1.0] * 10 + [2.0] * 10
    labels = [0] * 10 + [0] + [1] * 9
    assert mdl_cuts(values, labels, 2) == [1.5]
    # the same rows shuffled give the same answer
    rng = np.random.default_rng(1)
    order = rng.permutation(20)
    assert mdl_cuts(np.array(values)[order], np.array(labels)[order], 2) == [1.5]


def test_mdl_ignores_missing_values_and_missing_classes():
    base_v = list(range(1, 9))
    base_y = [0, 0, 0, 0, 1, 1, 1, 1]
    v = base_v + [np.nan, np.nan, 100.0, -100.0]
    y = base_y + [0, 1, -1, -1]  # NaN values and unknown classes must not matter
    assert mdl_cuts(v, y, 2) == mdl_cuts(base_v, base_y, 2) == [4.5]


def test_mdl_degenerate_inputs():
    assert mdl_cuts([], [], 2) == []
    assert mdl_cuts([3.0], [1], 2) == []
    assert mdl_cuts([2.0] * 10, [0, 1] * 5, 2) == []  # single distinct value
    assert mdl_cuts(range(10), [1] * 10, 2) == []  # single class present


def _reference_mdl(values, labels):
    """Literal, slow transcription of SPEC §1 (for cross-checking the fast version)."""

    def entropy(ys):
        n = len(ys)
        return -sum((c / n) * math.log2(c / n) for c in np.bincount(ys) if c) if n else 0.0

    def recurse(pairs):
        n = len(pairs)
        ys = [y for _, y in pairs]
        best = None
        for s in range(1, n):
            if pairs[s - 1][0] < pairs[s][0]:
                left, right = ys[:s], ys[s:]
                cond = (len(left) * entropy(left) + len(right) * entropy(right)) / n
                if best is None or cond < best[0] - 1e-9:
                    best = (cond, s, left, right)
        if best is None:
            return []
        cond, s, left, right = best
        e, e1, e2 = entropy(ys), entropy(left), entropy(right)
        k, k1, k2 = (len(set(z)) for z in (ys, left, right))
        delta = math.log2(3**k - 2) - (k * e - k1 * e1 - k2 * e2)
        if not e - cond > (math.log2(n - 1) + delta) / n:
            return []
        cut = (pairs[s - 1][0] + pairs[s][0]) / 2
        return recurse(pairs[:s]) + [cut] + recurse(pairs[s:])

    return recurse(sorted(zip(values, labels), key=lambda p: p[0]))


@pytest.mark.parametrize("seed", range(12))
def test_mdl_matches_literal_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 120))
    k = int(rng.integers(2, 5))
    x = rng.integers(0, 15, size=n).astype(float)  # many ties
    y = np.clip((x / 15 * k + rng.normal(0, 0.6, n)).astype(int), 0, k - 1)
    assert mdl_cuts(x, y, k) == pytest.approx(_reference_mdl(x.tolist(), y.tolist()))


# ----- equal frequency -------------------------------------------------------------------
def test_equal_frequency_known_cuts():
    # 10 distinct values, 5 bins: target 2 rows each -> cuts after 2, 4, 6, 8
    assert equal_frequency_cuts(range(1, 11), 5) == [2.5, 4.5, 6.5, 8.5]
    assert equal_frequency_cuts([4, 3, 2, 1], 2) == [2.5]
    # values 1..10, ten copies each, 3 bins: target 33.3; the boundary after 30 rows is
    # closer (3.3 short) than the one after 40 (6.7 over) -> cut 3.5; then target 35 of
    # the remaining 70: boundaries after 60 and 70 are equally far (5) -> the later one.
    assert equal_frequency_cuts(np.repeat(np.arange(1, 11), 10), 3) == [3.5, 7.5]


def test_equal_frequency_fewer_distinct_values_fewer_cuts():
    assert equal_frequency_cuts([1, 1, 1, 2, 2, 3], 5) == [1.5, 2.5]
    assert equal_frequency_cuts([7.0] * 9, 5) == []
    # one dominant value: never a cut inside a run of equal values
    vals = list(range(1, 11)) + [11] * 100
    assert equal_frequency_cuts(vals, 5) == [10.5]


def test_equal_frequency_ignores_missing():
    assert equal_frequency_cuts([np.nan, 1, 2, np.nan, 3, 4], 2) == [2.5]


# ----- method strings --------------------------------------------------------------------
def test_check_method():
    for ok in ("mdl", "none", "ef:5", "ef:3", "ef:2"):
        check_method(ok, "x")
    assert parse_method("ef:5") == ("ef", 5)
    for bad in ("MDL", "ef", "ef:1", "ef:x", "ef:5 ", "", None, 5):
        with pytest.raises(WorkbenchError, match="learner 'nb'"):
            check_method(bad, "learner 'nb'")


# ----- Discretizer -----------------------------------------------------------------------
def test_transform_bins_labels_and_missing():
    train = _dataset({"x": [1, 2, 3, 4, 5, 6, 7, 8], "c": [5.0] * 8},
                     [0, 0, 0, 0, 1, 1, 1, 1])
    disc = fit_discretizer("mdl", train)
    assert disc.cuts == {"x": [4.5], "c": []}
    test = _dataset({"x": [4.5, 4.6, -1e9, np.nan], "c": [1.0, 5.0, np.nan, 9.0]},
                    [0, 1, -1, 0])
    out = disc.transform(test)
    assert out.attributes[0].values == ("(-inf-4.5]", "(4.5-inf)")
    assert out.attributes[1].values == ("All",)  # no cut: one value, attribute kept
    np.testing.assert_array_equal(out.X[:, 0], [0, 1, 0, np.nan])  # 4.5 == cut -> lower
    np.testing.assert_array_equal(out.X[:, 1], [0, 0, np.nan, 0])
    np.testing.assert_array_equal(out.y, test.y)
    assert out.meta["discretization"] == "mdl"


def test_transform_leaves_nominal_attributes_alone_and_checks_header():
    attrs = (Attribute("n", ("p", "q")), Attribute("x"))
    X = np.array([[0, 1.0], [1, 2.0], [np.nan, 3.0], [0, 4.0]])
    train = Dataset("t", attrs, Attribute("class", ("a", "b")), X, np.array([0, 0, 1, 1]))
    disc = fit_discretizer("ef:2", train)
    assert disc.cuts == {"x": [2.5]}
    out = disc.transform(train)
    assert out.attributes[0] == attrs[0]
    np.testing.assert_array_equal(out.X[:, 0], X[:, 0])
    other = train.replace(attributes=(Attribute("n", ("p", "r")), Attribute("x")))
    with pytest.raises(WorkbenchError, match="header differs.*attribute 1"):
        disc.transform(other)


def test_none_is_identity_and_missing_class_rows_ignored():
    train = _dataset({"x": [1, 2, 3, 4, 100, 200]}, [0, 0, 1, 1, -1, -1])
    assert fit_discretizer("none", train).transform(train) is train
    # the two unknown-class rows would add boundaries; EF must not see them
    assert fit_discretizer("ef:2", train).cuts == {"x": [2.5]}


def test_sample_option():
    rng = np.random.default_rng(0)
    x = rng.normal(size=5000)
    train = _dataset({"x": x}, (x > 0).astype(int))
    full = fit_discretizer("ef:4", train).cuts["x"]
    a = fit_discretizer("ef:4", train, sample=500, seed=3).cuts["x"]
    b = fit_discretizer("ef:4", train, sample=500, seed=3).cuts["x"]
    c = fit_discretizer("ef:4", train, sample=500, seed=4).cuts["x"]
    assert a == b and a != c and len(a) == 3
    assert fit_discretizer("ef:4", train, sample=10_000).cuts["x"] == full
    assert np.allclose(a, full, atol=0.3)


def test_bin_labels():
    assert bin_labels([]) == ("All",)
    assert bin_labels([-1.5, 2.0]) == ("(-inf--1.5]", "(-1.5-2]", "(2-inf)")
    labels = bin_labels([1.0000001, 1.0000002])  # equal at 6 decimals -> full precision
    assert len(set(labels)) == 3


def test_mdl_speed_on_large_numeric_data():
    import time

    rng = np.random.default_rng(0)
    n, d = 20_000, 10
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + X[:, 1] + rng.normal(0, 0.5, n) > 0).astype(int)
    train = _dataset({f"a{i}": X[:, i] for i in range(d)}, y)
    t = time.perf_counter()
    fit_discretizer("mdl", train)
    assert time.perf_counter() - t < 2.0
