"""Metrics on hand-computed examples and Kohavi–Wolpert bias/variance identities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.evaluation.metrics import (
    LOG_LOSS_EPSILON,
    bias_variance,
    log_loss,
    prediction_frequencies,
    rmse,
    rmse_true_class,
    zero_one_loss,
)


def test_zero_one_loss_first_maximum():
    proba = np.array([[0.5, 0.5], [0.2, 0.8], [0.4, 0.4 + 1e-12], [0.5, 0.5]])
    y = np.array([0, 0, 1, 1])
    # row 0: tie -> class 0 (right); row 1: 1 (wrong); row 2: 1 (right); row 3: tie -> 0 (wrong)
    assert zero_one_loss(proba, y) == 0.5


def test_rmse_three_classes_worked_example():
    # row 0: p=(0.7,0.2,0.1), y=0: squared errors 0.09+0.04+0.01 = 0.14; true-class 0.3² = 0.09
    # row 1: p=(0.2,0.5,0.3), y=2: squared errors 0.04+0.25+0.49 = 0.78; true-class 0.7² = 0.49
    # Weka RMSE = sqrt((0.14+0.78)/(2·3)) = sqrt(0.92/6) ≈ 0.39158
    # true-class RMSE = sqrt((0.09+0.49)/2) = sqrt(0.29) ≈ 0.53852
    proba = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3]])
    y = np.array([0, 2])
    assert rmse(proba, y) == pytest.approx(math.sqrt(0.92 / 6), abs=1e-14)
    assert rmse_true_class(proba, y) == pytest.approx(math.sqrt(0.29), abs=1e-14)
    assert abs(rmse(proba, y) - rmse_true_class(proba, y)) > 0.1


def test_rmse_declared_classes_count_in_denominator():
    # a 4th declared class nobody predicts still counts in K (SPEC: K = declared classes)
    proba = np.array([[0.7, 0.2, 0.1, 0.0], [0.2, 0.5, 0.3, 0.0]])
    assert rmse(proba, np.array([0, 2])) == pytest.approx(math.sqrt(0.92 / 8), abs=1e-14)


def test_rmse_two_classes_agree():
    # row 0: p=(0.8,0.2), y=0: 0.04+0.04 = 0.08, true-class 0.04
    # row 1: p=(0.4,0.6), y=0: 0.36+0.36 = 0.72, true-class 0.36
    # Weka sqrt(0.80/4) = sqrt(0.2); true-class sqrt(0.40/2) = sqrt(0.2)
    proba = np.array([[0.8, 0.2], [0.4, 0.6]])
    y = np.array([0, 0])
    assert rmse(proba, y) == pytest.approx(math.sqrt(0.2), abs=1e-14)
    assert rmse_true_class(proba, y) == pytest.approx(math.sqrt(0.2), abs=1e-14)
    rng = np.random.default_rng(5)
    p1 = rng.random(200)
    proba = np.column_stack([p1, 1 - p1])
    y = rng.integers(0, 2, 200)
    assert rmse(proba, y) == pytest.approx(rmse_true_class(proba, y), rel=1e-12)


def test_log_loss_natural_log_and_clipping():
    proba = np.array([[0.5, 0.5], [0.9, 0.1], [1.0, 0.0]])
    y = np.array([0, 1, 1])
    expected = -(math.log(0.5) + math.log(0.1) + math.log(LOG_LOSS_EPSILON)) / 3
    assert LOG_LOSS_EPSILON == np.finfo(np.float64).eps
    assert log_loss(proba, y) == pytest.approx(expected, rel=1e-14)
    assert log_loss(np.array([[1.0, 0.0]]), np.array([0])) < 1e-15


def test_against_scikit_learn_reference():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    n, k = 500, 4
    proba = rng.dirichlet(np.ones(k) * 0.3, size=n)
    proba[:20] = np.eye(k)[rng.integers(0, k, 20)]  # hard 0/1 distributions
    y = rng.integers(0, k, n)
    labels = list(range(k))
    assert log_loss(proba, y) == pytest.approx(sk.log_loss(y, proba, labels=labels), rel=1e-12)
    assert zero_one_loss(proba, y) == pytest.approx(
        sk.zero_one_loss(y, proba.argmax(axis=1)), abs=1e-15)
    onehot = np.eye(k)[y]
    assert rmse(proba, y) == pytest.approx(
        math.sqrt(sk.mean_squared_error(onehot, proba)), rel=1e-12)
    # true-class RMSE = sqrt of the Brier-type error restricted to the true class
    assert rmse_true_class(proba, y) == pytest.approx(
        math.sqrt(sk.mean_squared_error(np.ones(n), proba[np.arange(n), y])), rel=1e-12)


def test_metrics_reject_missing_class():
    with pytest.raises(ValueError, match="missing"):
        rmse(np.array([[0.5, 0.5]]), np.array([-1]))


# ----- Kohavi–Wolpert ---------------------------------------------------------------------
def test_always_right_is_zero_zero():
    y = np.array([0, 1, 2, 1])
    bv = bias_variance(np.tile(y, (6, 1)), y, 3, weka_correction=True)
    assert bv.bias == 0 and bv.variance == 0 and bv.zero_one_loss == 0
    assert bv.bias_weka_corrected == 0


def test_always_same_wrong_class_is_bias_one():
    y = np.array([0, 1, 2, 1])
    wrong = (y + 1) % 3
    bv = bias_variance(np.tile(wrong, (5, 1)), y, 3)
    assert bv.bias == 1.0 and bv.variance == 0.0 and bv.zero_one_loss == 1.0
    assert bv.bias_weka_corrected is None


def test_weka_correction_worked_example():
    # r = 4 rounds, K = 3.
    # instance 0, t = 0, predicted (0,0,1,2): p̂ = (1/2, 1/4, 1/4)
    #   bias = ½[(1-½)² + (¼)² + (¼)²] = ½·0.375 = 0.1875
    #   var  = ½[1 − (¼ + 1/16 + 1/16)] = ½·0.625 = 0.3125   (sum 0.5 = 2 of 4 wrong)
    #   Weka term Σ p̂(1−p̂)/(r−1) = (¼ + 3/16 + 3/16)/3 = 0.625/3
    #   bias_weka = ½(0.375 − 0.625/3) = 1/12
    # instance 1, t = 1, always predicted 1: bias = var = correction = 0
    # means: bias 0.09375, variance 0.15625, loss 0.25, bias_weka 1/24
    preds = np.array([[0, 1], [0, 1], [1, 1], [2, 1]])
    y = np.array([0, 1])
    bv = bias_variance(preds, y, 3, weka_correction=True)
    assert bv.bias == pytest.approx(0.09375, abs=1e-15)
    assert bv.variance == pytest.approx(0.15625, abs=1e-15)
    assert bv.zero_one_loss == 0.25
    assert bv.bias_weka_corrected == pytest.approx(1 / 24, abs=1e-15)
    assert bias_variance(preds, y, 3).bias == bv.bias  # correction never changes `bias`


def test_one_round_weka_correction_is_nan():
    bv = bias_variance(np.array([[0, 1]]), np.array([0, 0]), 2, weka_correction=True)
    assert math.isnan(bv.bias_weka_corrected)
    assert bv.bias + bv.variance == pytest.approx(0.5)


@pytest.mark.parametrize("seed", range(8))
def test_bias_plus_variance_equals_zero_one_loss(seed):
    # Per instance: ½Σ([y=t]−p̂_y)² + ½(1−Σp̂_y²) = ½(1 − 2p̂_t + Σp̂²) + ½(1 − Σp̂²) = 1 − p̂_t,
    # the fraction of rounds misclassifying it; averaging gives the pooled 0-1 loss. It is an
    # algebraic identity, so only floating-point rounding (~1e-16) separates the two sides.
    rng = np.random.default_rng(seed)
    r, n, k = rng.integers(1, 30), rng.integers(1, 300), rng.integers(2, 7)
    y = rng.integers(0, k, n)
    preds = rng.integers(0, k, (r, n))
    preds[:, : n // 3] = y[: n // 3]  # mix of easy and random instances
    bv = bias_variance(preds, y, k)
    loss = np.mean(preds != y[None, :])
    assert np.isclose(bv.bias + bv.variance, loss, rtol=0, atol=1e-12)
    assert bv.zero_one_loss == loss
    assert 0 <= bv.bias <= 1 and 0 <= bv.variance <= 0.5


def test_random_predictions_variance_near_maximum():
    # uniform random predictions over K classes: p̂ ≈ 1/K, variance ≈ ½(1 − 1/K)
    rng = np.random.default_rng(11)
    k, r, n = 4, 400, 200
    y = rng.integers(0, k, n)
    bv = bias_variance(rng.integers(0, k, (r, n)), y, k, weka_correction=True)
    assert bv.variance == pytest.approx(0.5 * (1 - 1 / k), abs=0.01)
    assert bv.bias == pytest.approx(0.5 * (1 - 1 / k), abs=0.01)  # ½[(1−¼)² + 3·(¼)²]
    assert bv.bias_weka_corrected < bv.bias


def test_prediction_frequencies():
    ph = prediction_frequencies(np.array([[0, 2], [1, 2], [0, 2], [0, 0]]), 3)
    assert np.array_equal(ph, [[0.75, 0.25, 0], [0.25, 0, 0.75]])


def _naive_kw(preds, y, k):
    """Loop transcription of SPEC §3 (and Weka's BVDecompose bias term) for cross-checking."""
    r, n = preds.shape
    b = v = bw = 0.0
    for i in range(n):
        ph = [sum(1 for j in range(r) if preds[j, i] == c) / r for c in range(k)]
        bi = sum(((1.0 if c == y[i] else 0.0) - ph[c]) ** 2 for c in range(k))
        corr = sum(ph[c] * (1 - ph[c]) / (r - 1) for c in range(k))
        b += bi / 2
        v += (1 - sum(p * p for p in ph)) / 2
        bw += (bi - corr) / 2
    return b / n, v / n, bw / n


@pytest.mark.parametrize("seed", range(4))
def test_bias_variance_matches_loop_transcription(seed):
    rng = np.random.default_rng(100 + seed)
    r, n, k = int(rng.integers(2, 12)), int(rng.integers(1, 60)), int(rng.integers(2, 5))
    preds, y = rng.integers(0, k, (r, n)), rng.integers(0, k, n)
    b, v, bw = _naive_kw(preds, y, k)
    bv = bias_variance(preds, y, k, weka_correction=True)
    assert bv.bias == pytest.approx(b, abs=1e-13)
    assert bv.variance == pytest.approx(v, abs=1e-13)
    assert bv.bias_weka_corrected == pytest.approx(bw, abs=1e-13)
