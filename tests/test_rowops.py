"""The compiled row reductions give numpy's bits: distributions, row sums and loss sums
equal to the numpy formulas they replace, for any number of classes (numpy's pairwise
summation changes at 8 and 128 terms) and for NaN / infinite rows."""

import numpy as np
import pytest

from workbench.evaluation.metrics import LOG_LOSS_EPSILON, loss_sums
from workbench.evaluation.pipeline import probability_problem
from workbench.learners.base import normalise_log
from workbench.rowops import (class_counts, loss_terms, normalise_rows, pairwise_sum, row_ranks,
                              row_sums)

KS = [1, 2, 3, 7, 8, 9, 15, 16, 17, 26, 127, 128, 129, 257, 1000]


def numpy_normalise(L: np.ndarray) -> np.ndarray:
    s = L - L.max(axis=1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    return p


@pytest.mark.parametrize("n", [1, 5, 7, 8, 9, 16, 17, 127, 128, 129, 136, 1000, 8193, 100_003])
def test_pairwise_sum_is_numpys_sum(n):
    rng = np.random.default_rng(n)
    a = rng.normal(size=n) * rng.choice([1.0, 1e-9, 1e9], size=n)  # (rounding shows)
    assert pairwise_sum(a, 0, n) == np.sum(a)
    if n > 3:  # a run that starts inside the array
        assert pairwise_sum(a, 3, n - 3) == np.sum(a[3:])


@pytest.mark.parametrize("K", KS)
def test_normalise_rows_is_numpys_formula_bit_for_bit(K):
    rng = np.random.default_rng(K)
    L = rng.normal(size=(600, K)) * rng.choice([1.0, 40.0, 700.0], size=(600, 1))
    L[3] = -np.inf  # every class impossible: NaN, as numpy gives
    L[4, 0] = np.nan
    L[5, K - 1] = np.nan
    L[6, 0] = np.inf
    with np.errstate(invalid="ignore"):
        want = numpy_normalise(L)
        got = normalise_rows(L)
        assert np.array_equal(got, want, equal_nan=True)
        assert np.array_equal(row_sums(np.ascontiguousarray(want)), want.sum(axis=1),
                              equal_nan=True)
        # normalise_log: numpy below 4,096 cells, compiled from there — the same bits
        big = np.tile(L, (8, 1))
        assert np.array_equal(normalise_log(big), numpy_normalise(big), equal_nan=True)
        assert np.array_equal(normalise_log(L[:2]), numpy_normalise(L[:2]), equal_nan=True)


def numpy_loss(p, t, eps):
    rows = np.arange(t.size)
    true_p = p[rows, t]
    d = p.copy()
    d[rows, t] -= 1.0
    return (int(np.count_nonzero(np.argmax(p, axis=1) != t)), float(np.sum(d * d)),
            float(np.sum((1.0 - true_p) ** 2)),
            float(-np.sum(np.log(np.clip(true_p, eps, 1.0 - eps)))))


@pytest.mark.parametrize("K", KS)
def test_loss_sums_compiled_are_numpys(K):
    rng = np.random.default_rng(100 + K)
    n = max(5000 // K, 40) + 7
    p = numpy_normalise(rng.normal(size=(n, K)) * 6)
    p[1] = 1.0 / K  # ties: the first maximum
    p[2, :] = 0.0
    p[2, -1] = 1.0  # a certain prediction (clipped log)
    t = rng.integers(0, K, n)
    want = numpy_loss(p, t, LOG_LOSS_EPSILON)
    assert loss_terms(p, t, LOG_LOSS_EPSILON) == want
    got = loss_sums(np.tile(p, (4096 // p.size + 1, 1)), np.tile(t, 4096 // p.size + 1))
    big = numpy_loss(np.tile(p, (4096 // p.size + 1, 1)), np.tile(t, 4096 // p.size + 1),
                     LOG_LOSS_EPSILON)
    assert (got.errors, got.squared_error, got.true_class_squared_error, got.neg_log) == big
    small = loss_sums(p[:3], t[:3])  # (numpy below 4,096 cells)
    assert (small.errors, small.squared_error, small.true_class_squared_error,
            small.neg_log) == numpy_loss(p[:3], t[:3], LOG_LOSS_EPSILON)


def test_argmax_counts_a_nan_first_as_numpy_does():
    p = np.array([[0.2, np.nan, 0.8], [np.nan, 0.9, 0.1], [0.5, 0.5, 0.0]])
    t = np.array([1, 1, 0])
    errors = loss_terms(p, t, LOG_LOSS_EPSILON)[0]
    assert errors == int(np.count_nonzero(np.argmax(p, axis=1) != t)) == 1


def test_a_distribution_that_does_not_sum_to_one_is_found_through_the_kernel():
    p = np.full((5000, 2), 0.5)
    assert probability_problem(p) == ""
    p[4321] = [0.5, 0.6]
    assert "(row 4321)" in probability_problem(p)


@pytest.mark.parametrize("k", [2, 3, 10, 32, 33, 100])
def test_row_ranks_are_numpys_stable_argsort(k):
    rng = np.random.default_rng(k)
    keys = rng.integers(0, 6, size=(300, k)).astype(np.uint64)  # many ties: stability
    order = np.argsort(keys, axis=1, kind="stable")
    want = np.empty(order.shape, dtype=np.int64)
    np.put_along_axis(want, order, np.arange(k)[None, :], axis=1)
    assert np.array_equal(row_ranks(keys), want)


@pytest.mark.parametrize("k", [2, 10, 40])
def test_row_folds_the_same_through_the_kernel(k):
    from workbench.evaluation.splits import row_folds

    whole = row_folds(0, 100_000, k, 7, 2)  # compiled
    blocks = 100_000 // k  # each block of k rows holds every fold once
    assert np.array_equal(np.bincount(whole[:k * blocks], minlength=k), np.full(k, blocks))
    parts = np.concatenate([row_folds(s, 1000, k, 7, 2) for s in range(0, 100_000, 1000)])
    assert np.array_equal(whole, parts)  # (1,000 rows: numpy's argsort)


def test_warm_up_loads_the_specialisations_the_evaluation_uses():
    """After `warm_up`, the calls an evaluation makes on large tables add no kernel
    specialisation (nothing to compile or load inside a timed fold)."""
    from workbench import rowops
    from workbench.evaluation.splits import row_folds

    rowops.warm_up()
    kernels = [rowops._shift_by_row_max, rowops._divide_by_row_sums, rowops._loss_terms,
               rowops.pairwise_sum, rowops.row_sums, rowops.row_ranks]
    before = [len(k.signatures) for k in kernels]
    rng = np.random.default_rng(1)
    p = normalise_log(rng.normal(size=(5000, 3)))
    loss_sums(p, rng.integers(0, 3, 5000))
    probability_problem(p)
    row_folds(0, 5000, 10, 1, 0)
    assert [len(k.signatures) for k in kernels] == before


def test_sorted_segment_sums_are_numpys_sums_of_each_sorted_run():
    """Runs of 0 to 1,000 terms (both sides of the 8-term and 128-term switches of the sum,
    and of `SHORT_RUN`: sorted compiled or by numpy), each sorted and summed as numpy sums
    that sorted run alone."""
    from workbench.rowops import sorted_segment_sums

    rng = np.random.default_rng(5)
    lens = np.array([0, 1, 2, 7, 8, 9, 15, 16, 17, 127, 128, 129, 255, 256, 257, 300, 3, 1000, 0],
                    dtype=np.int64)
    a = rng.normal(size=int(lens.sum())) * 10.0 ** rng.integers(-8, 8, int(lens.sum()))
    bounds = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    got = sorted_segment_sums(a.copy(), bounds)
    want = np.array([np.sort(a[bounds[s]:bounds[s + 1]]).sum() for s in range(len(lens))])
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


@pytest.mark.parametrize("K", [1, 2, 5, 8, 9, 26])
def test_class_counts_are_bincount(K):
    """`class_counts`: a count per class up to 8 classes, four histograms above — both
    np.bincount(y, minlength=K)[:K] for any length (the histograms' leftover rows) and
    code type; codes outside 0 … K − 1 are not counted."""
    rng = np.random.default_rng(K)
    for n in (0, 1, 7, 4_099):
        y = rng.integers(0, K, n)
        for dt in (np.int8, np.int64):
            np.testing.assert_array_equal(class_counts(y.astype(dt), K),
                                          np.bincount(y, minlength=K)[:K])
    y = np.array([0, K, -1, K - 1, 99])
    np.testing.assert_array_equal(class_counts(y, K), np.bincount(y[[0, 3]], minlength=K))
