"""Per-prediction metrics (SPEC §3) and the Kohavi–Wolpert bias/variance decomposition.

Conventions shared by every function here:

* ``proba`` is an (n, K) float array of class distributions, K = the number of classes
  *declared* in the header (not the number seen); ``y`` is an (n,) int array of true class
  codes in 0..K-1 (rows with a missing class are removed before evaluation).
* The predicted class is the first maximum of a distribution (``np.argmax``).
* All values are means over the given predictions; pooling over several folds / rounds is
  done by passing the concatenated predictions (see `workbench.evaluation.cv`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Literal, NamedTuple

import numpy as np

from workbench.ranking import midranks


# ----- what a metric declares --------------------------------------------------------------
@dataclass(frozen=True)
class Metric:
    """One declared metric: everything the summary, the store, the W/D/L tables, ranks and
    figures need to know about it. Declared once, in `METRICS`.

    ``aggregate`` says how a (data set, learner) value comes from the folds: ``pooled``
    over every test prediction, ``decomposition`` (Kohavi–Wolpert over the rounds),
    ``total`` (sum over folds) or ``mean`` (mean over the folds that report it).
    ``per_fold``: a value per fold is stored (``per_fold`` / ``fold_metrics.csv``).
    ``table``: W/D/L tables, ranks and the appendix show it; ``cd``: a critical-difference
    diagram; ``scatter``: learner-vs-baseline scatter plot; ``log``: log axes.
    ``needs_repeats``: only meaningful when every instance is tested more than once
    (bias/variance: rounds ≥ 2). ``appendix``: where the report lists a metric it does
    not rank (``table=False``): one of `APPENDICES`.

    ``lower_is_better`` is the direction every decision reads (W/D/L, sign and fold tests,
    ranks, CD diagrams, Bayesian comparisons, figures, the paper comparison).
    ``compute(proba, y) -> float``: a ``pooled`` metric computed from the predictions;
    its value is computed on each round's predictions pooled over its folds and averaged
    over the rounds (Weka: one Evaluation per cross-validation run), its per-fold values
    on each fold's. A ``mean`` metric without ``compute`` is a named measure a learner
    reports (`Learner.measures`).
    """

    name: str
    title: str
    aggregate: Literal["pooled", "decomposition", "total", "mean"]
    per_fold: bool = False
    lower_is_better: bool = True
    table: bool = True
    cd: bool = False
    scatter: bool = False
    log: bool = False
    needs_repeats: bool = False
    appendix: str = ""  # for table=False metrics: the report appendix that lists them
    compute: Callable[[np.ndarray, np.ndarray], float] | None = None
    from_confusion: Callable[[np.ndarray], float] | None = None  # the same, from the K × K
    # confusion matrix alone (additive: out-of-core summaries stream it)

    def __post_init__(self) -> None:
        if self.compute is not None and self.aggregate != "pooled":
            raise ValueError(f"metric {self.name!r}: only a 'pooled' metric is computed "
                             f"from predictions (aggregate is {self.aggregate!r})")

    @property
    def has_std(self) -> bool:
        """A ``<name>_std`` (std over folds) is part of the summary."""
        return self.aggregate == "pooled" and self.per_fold


LOG_LOSS_EPSILON = float(np.finfo(np.float64).eps)
"""Clip of the true-class probability in `log_loss`: to [eps, 1 − eps], eps = float64 machine
epsilon ≈ 2.22e-16 (so a 0 costs −ln(eps) ≈ 36.04); the same convention as
scikit-learn's ``log_loss``."""


def _check(proba: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(proba, dtype=np.float64)
    t = np.asarray(y)
    if p.ndim != 2:
        raise ValueError(f"proba must be (n, K), got shape {p.shape}")
    if t.shape != (p.shape[0],):
        raise ValueError(f"y has shape {t.shape}, expected ({p.shape[0]},)")
    t = t.astype(np.int64, copy=False)
    if t.size and (t.min() < 0 or t.max() >= p.shape[1]):
        raise ValueError(f"class codes must lie in 0..{p.shape[1] - 1} (missing classes "
                         "must be removed before evaluation)")
    return p, t


def predicted_classes(proba: np.ndarray) -> np.ndarray:
    """Class codes: first maximum of each row."""
    return np.argmax(np.asarray(proba), axis=1)


def zero_one_loss(proba: np.ndarray, y: np.ndarray) -> float:
    """Fraction of rows whose first-maximum class differs from `y`."""
    p, t = _check(proba, y)
    return float(np.mean(np.argmax(p, axis=1) != t)) if t.size else float("nan")


def squared_error_sum(proba: np.ndarray, y: np.ndarray) -> float:
    """Σ_i Σ_y (p_iy − [y = y_i])² — the numerator of Weka's RMSE."""
    p, t = _check(proba, y)
    d = p.copy()
    d[np.arange(t.size), t] -= 1.0
    return float(np.sum(d * d))


def rmse(proba: np.ndarray, y: np.ndarray) -> float:
    """Weka's all-class root mean squared error: sqrt(Σ_i Σ_y (p_iy − [y=y_i])² / (n·K))."""
    p, t = _check(proba, y)
    if not t.size:
        return float("nan")
    return float(np.sqrt(squared_error_sum(p, t) / (t.size * p.shape[1])))


def rmse_true_class(proba: np.ndarray, y: np.ndarray) -> float:
    """True-class RMSE (Webb's group tools): sqrt(mean_i (1 − p_i(y_i))²)."""
    p, t = _check(proba, y)
    if not t.size:
        return float("nan")
    e = 1.0 - p[np.arange(t.size), t]
    return float(np.sqrt(np.mean(e * e)))


def log_loss(proba: np.ndarray, y: np.ndarray, eps: float = LOG_LOSS_EPSILON) -> float:
    """Mean negative *natural* log of the true-class probability (nats), clipped.

    −mean_i ln(clip(p_i(y_i), eps, 1 − eps)), eps = `LOG_LOSS_EPSILON` by default. Only
    the true-class probability is used and nothing is renormalised, so a learner giving
    the true class probability 0 pays −ln(eps) ≈ 36.04 for that instance, not infinity.
    """
    p, t = _check(proba, y)
    if not t.size:
        return float("nan")
    q = np.clip(p[np.arange(t.size), t], eps, 1.0 - eps)
    return float(-np.mean(np.log(q)))


def brier_score(proba: np.ndarray, y: np.ndarray) -> float:
    """Brier's (1950) multi-class score: mean_i Σ_y (p_iy − [y = y_i])², in [0, 2]
    (scikit-learn's ``brier_score_loss(..., scale_by_half=False)``; = K · RMSE²)."""
    p, t = _check(proba, y)
    return squared_error_sum(p, t) / t.size if t.size else float("nan")


def cohen_kappa(proba: np.ndarray, y: np.ndarray) -> float:
    """Cohen's kappa of the first-maximum predictions against `y` (Weka's ``kappa()``):
    (p_o − p_e) / (1 − p_e) from the K × K confusion matrix; 1 when p_e = 1 (every
    prediction and every label the same class), as Weka; NaN without predictions."""
    p, t = _check(proba, y)
    if not t.size:
        return float("nan")
    return kappa_of(confusion_matrix(p, t))


def confusion_matrix(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The K × K counts of (true class, first-maximum prediction): additive over parts."""
    k = proba.shape[1]
    t = np.asarray(y, dtype=np.int64)
    return np.bincount(t * k + np.argmax(proba, axis=1), minlength=k * k).reshape(k, k)


def per_class_precision_recall(confusion: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(precision, recall) of each class from a K × K confusion matrix (rows true
    classes, columns predictions): C_kk / Σ_i C_ik and C_kk / Σ_j C_kj, NaN where the
    class was never predicted / never occurs (scikit-learn's ``zero_division=np.nan``)."""
    c = np.asarray(confusion, dtype=np.float64)
    tp = np.diag(c)
    said, truth = c.sum(axis=0), c.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.where(said > 0, tp / np.where(said > 0, said, 1), np.nan),
                np.where(truth > 0, tp / np.where(truth > 0, truth, 1), np.nan))


def kappa_of(confusion: np.ndarray) -> float:
    """Cohen's kappa of a confusion matrix (see `cohen_kappa`)."""
    n = float(confusion.sum())
    if not n:
        return float("nan")
    observed = np.trace(confusion) / n
    chance = float(np.sum(confusion.sum(axis=1) * confusion.sum(axis=0))) / (n * n)
    return 1.0 if chance >= 1.0 else float((observed - chance) / (1.0 - chance))


def f1_macro(proba: np.ndarray, y: np.ndarray) -> float:
    """Macro-averaged F1 of the first-maximum predictions (scikit-learn's ``f1_score(...,
    average="macro")``): the mean over the classes that occur as a label or a prediction of
    2·TP / (2·TP + FP + FN); NaN without predictions."""
    p, t = _check(proba, y)
    return f1_macro_of(confusion_matrix(p, t)) if t.size else float("nan")


def f1_macro_of(confusion: np.ndarray) -> float:
    """`f1_macro` of a confusion matrix (rows true classes, columns predictions)."""
    tp = np.diag(confusion).astype(np.float64)
    truth, said = confusion.sum(axis=1), confusion.sum(axis=0)
    present = (truth + said) > 0
    if not present.any():
        return float("nan")
    denom = truth + said  # = 2·TP + FP + FN
    f1 = np.divide(2.0 * tp, denom, out=np.zeros_like(tp), where=denom > 0)
    return float(f1[present].mean())


def mcc(proba: np.ndarray, y: np.ndarray) -> float:
    """Matthews' correlation coefficient of the first-maximum predictions, multi-class
    (Gorodkin 2004; scikit-learn's ``matthews_corrcoef``): (c·s − Σ p_k·t_k) /
    √((s² − Σ p_k²)(s² − Σ t_k²)) from the confusion matrix (c correct, s rows, p_k / t_k
    predictions / labels of class k); 0 when a factor is 0, NaN without predictions."""
    p, t = _check(proba, y)
    return mcc_of(confusion_matrix(p, t)) if t.size else float("nan")


def mcc_of(confusion: np.ndarray) -> float:
    """`mcc` of a confusion matrix."""
    s = float(confusion.sum())
    if not s:
        return float("nan")
    c = float(np.trace(confusion))
    truth = confusion.sum(axis=1).astype(np.float64)
    said = confusion.sum(axis=0).astype(np.float64)
    den = np.sqrt(s * s - said @ said) * np.sqrt(s * s - truth @ truth)
    return 0.0 if den == 0 else float((c * s - said @ truth) / den)


ECE_EDGES = np.linspace(0.1, 1.0, 10)
"""Upper edges of the expected calibration error's ten equal-width bins (0, 0.1], …,
(0.9, 1]."""


CALIBRATION_COLUMNS = ("rows", "confidence", "correct", "confidence_squared",
                       "confidence_correct")
"""What `calibration_bins` sums per bin: rows, c, o, c² and c·o (c the top-label
confidence, o = 1 when the first-maximum prediction is right)."""


def calibration_bins(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per bin of the top-label confidence (`ECE_EDGES`) the sums of
    `CALIBRATION_COLUMNS` — (10, 5), additive over parts: the expected calibration error,
    the reliability diagram and the Brier score's decomposition come from them."""
    conf = np.max(proba, axis=1)
    correct = (np.argmax(proba, axis=1) == np.asarray(y, np.int64)).astype(np.float64)
    b = np.minimum(np.searchsorted(ECE_EDGES, conf, side="left"), ECE_EDGES.size - 1)
    out = np.zeros((ECE_EDGES.size, len(CALIBRATION_COLUMNS)))
    for j, w in enumerate((None, conf, correct, conf * conf, conf * correct)):
        out[:, j] = np.bincount(b, weights=w, minlength=ECE_EDGES.size)
    return out


def brier_decomposition(bins: np.ndarray) -> dict[str, float]:
    """Murphy's decomposition of the top-label Brier score B = mean (c − o)² from
    `calibration_bins`: B = reliability − resolution + uncertainty + within-bin, with
    reliability Σ_b (n_b/n)(c̄_b − ō_b)² (lower is better calibrated), resolution
    Σ_b (n_b/n)(ō_b − ō)² (higher separates right from wrong better), uncertainty
    ō(1 − ō), and the within-bin term Σ_b (n_b/n)(var_b c − 2 cov_b(c, o)) that binning the
    confidences leaves (Stephenson et al. 2008). Exact up to rounding; NaN without rows."""
    n = float(bins[:, 0].sum())
    keys = ("brier_top", "reliability", "resolution", "uncertainty", "within_bin")
    if not n:
        return dict.fromkeys(keys, float("nan"))
    rows, sc, so, scc, sco = (bins[:, j] for j in range(5))
    full = rows > 0
    nb = rows[full]
    cbar, obar = sc[full] / nb, so[full] / nb
    o_all = float(so.sum() / n)
    within = (scc[full] / nb - cbar ** 2) - 2.0 * (sco[full] / nb - cbar * obar)
    return dict(zip(keys, (
        float((scc.sum() - 2.0 * sco.sum() + so.sum()) / n),
        float((nb * (cbar - obar) ** 2).sum() / n),
        float((nb * (obar - o_all) ** 2).sum() / n),
        o_all * (1.0 - o_all),
        float((nb * within).sum() / n))))


def ece(proba: np.ndarray, y: np.ndarray) -> float:
    """Expected calibration error, top label (Naeini et al. 2015; Guo et al. 2017): the
    rows binned by their largest probability into ten equal-width bins (0, 0.1], …,
    (0.9, 1]; Σ_b (n_b / n) · |accuracy_b − mean confidence_b|, the accuracy that of the
    first-maximum prediction. Lower is better; NaN without predictions."""
    p, t = _check(proba, y)
    return ece_of(calibration_bins(p, t)) if t.size else float("nan")


def ece_of(bins: np.ndarray) -> float:
    """`ece` of `calibration_bins` (summed over parts)."""
    n = float(bins[:, 0].sum())
    return float(np.abs(bins[:, 2] - bins[:, 1]).sum() / n) if n else float("nan")


def _auc_one_vs_rest(score: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve of `score` for the `positive` rows against the others:
    the Mann–Whitney statistic, ties counted ½ (Weka's ThresholdCurve and scikit-learn
    agree); NaN when either side is empty."""
    n_pos = int(np.count_nonzero(positive))
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = midranks(score)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def auc_weighted(proba: np.ndarray, y: np.ndarray) -> float:
    """Weka's weighted area under the ROC curve: each class's one-vs-rest AUC (its own
    probability as the score) weighted by its number of instances; classes without
    instances weigh 0. NaN when fewer than two classes occur (no curve)."""
    p, t = _check(proba, y)
    counts = np.bincount(t, minlength=p.shape[1])
    if np.count_nonzero(counts) < 2:
        return float("nan")
    total = 0.0
    for c in np.flatnonzero(counts):
        total += counts[c] * _auc_one_vs_rest(p[:, c], t == c)
    return float(total / t.size)


def auc_weighted_parts(parts: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]],
                       n_classes: int, folder: str, buckets: int = 32,
                       sample: int = 65_536) -> float:
    """`auc_weighted` of rows given in parts — `parts()` yields (probabilities, classes)
    batches, and may be called again — in memory bounded by about n / `buckets` rows: per
    class, the scores are spread over `buckets` ranges (cut at quantiles of a sample of
    them) into temporary files under `folder`, then each range's rows are ranked in turn,
    offset by the rows of the ranges below it. Equal scores share a range, so the mean
    ranks — and the AUC — are those of `auc_weighted` (up to the order of the sums)."""
    import tempfile

    counts = np.zeros(n_classes, np.int64)
    rng = np.random.default_rng(0)
    picked: list[np.ndarray] = []
    seen = 0
    for proba, y in parts():
        counts += np.bincount(np.asarray(y, np.int64), minlength=n_classes)
        take = rng.random(y.size) < sample / max(seen + y.size, sample)
        picked.append(np.asarray(proba)[take])
        seen += y.size
    n = int(counts.sum())
    if np.count_nonzero(counts) < 2:
        return float("nan")
    pool = np.concatenate(picked) if picked else np.zeros((0, n_classes))
    total = 0.0
    with tempfile.TemporaryDirectory(prefix="auc-", dir=folder) as tmp:
        for c in np.flatnonzero(counts):
            edges = np.unique(np.quantile(pool[:, c], np.linspace(0, 1, buckets + 1)[1:-1])) \
                if pool.size else np.zeros(0)
            files = [(open(f"{tmp}/{b}.s", "wb"), open(f"{tmp}/{b}.p", "wb"))
                     for b in range(edges.size + 1)]
            try:
                for proba, y in parts():
                    s = np.ascontiguousarray(np.asarray(proba)[:, c], np.float64)
                    pos = (np.asarray(y) == c).astype(np.uint8)
                    where = np.searchsorted(edges, s, side="right")
                    order = np.argsort(where, kind="stable")
                    bounds = np.searchsorted(where[order], np.arange(edges.size + 2))
                    for b in range(edges.size + 1):
                        rows = order[bounds[b]:bounds[b + 1]]
                        if rows.size:
                            files[b][0].write(s[rows].tobytes())
                            files[b][1].write(pos[rows].tobytes())
            finally:
                for fs, fp in files:
                    fs.close()
                    fp.close()
            rank_sum, below = 0.0, 0
            for b in range(edges.size + 1):
                s = np.fromfile(f"{tmp}/{b}.s", dtype=np.float64)
                pos = np.fromfile(f"{tmp}/{b}.p", dtype=np.uint8).astype(bool)
                if s.size:
                    rank_sum += float((midranks(s)[pos] + below).sum())
                below += s.size
            n_pos = int(counts[c])
            auc = (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * (n - n_pos))
            total += counts[c] * auc
    return float(total / n)


class LossSums(NamedTuple):
    """Additive per-prediction sums; pooled metrics of many folds are ratios of their sums."""

    n: int  # predictions
    errors: int  # misclassified (first maximum ≠ true class)
    squared_error: float  # Σ_i Σ_y (p_iy − [y = y_i])²   (Weka RMSE numerator)
    true_class_squared_error: float  # Σ_i (1 − p_i(y_i))²
    neg_log: float  # Σ_i −ln clip(p_i(y_i), eps, 1 − eps)


def loss_sums(proba: np.ndarray, y: np.ndarray, eps: float = LOG_LOSS_EPSILON) -> LossSums:
    """The sums behind `zero_one_loss`, `rmse`, `rmse_true_class` and `log_loss`."""
    p, t = _check(proba, y)
    if p.size >= 1 << 12:  # compiled, the same bits (`rowops.loss_terms`)
        from workbench.rowops import loss_terms  # numba: not on the import path

        errors, sq, tc, neg = loss_terms(p, t, eps)
        return LossSums(n=int(t.size), errors=errors, squared_error=sq,
                        true_class_squared_error=tc, neg_log=neg)
    rows = np.arange(t.size)
    true_p = p[rows, t]
    d = p.copy()
    d[rows, t] -= 1.0
    return LossSums(
        n=int(t.size),
        errors=int(np.count_nonzero(np.argmax(p, axis=1) != t)) if t.size else 0,
        squared_error=float(np.sum(d * d)),
        true_class_squared_error=float(np.sum((1.0 - true_p) ** 2)),
        neg_log=float(-np.sum(np.log(np.clip(true_p, eps, 1.0 - eps)))),
    )


def pooled_metrics(sums: "list[LossSums] | tuple[LossSums, ...]", n_classes: int) -> dict[str, float]:
    """0-1 loss, Weka RMSE, true-class RMSE and log-loss of the union of several sets of
    predictions, from their `LossSums` (RMSE = sqrt of the pooled mean squared error)."""
    n = sum(s.n for s in sums)
    if n == 0:
        nan = float("nan")
        return {"zero_one_loss": nan, "rmse": nan, "rmse_true_class": nan, "log_loss": nan}
    return {
        "zero_one_loss": sum(s.errors for s in sums) / n,
        "rmse": float(np.sqrt(sum(s.squared_error for s in sums) / (n * n_classes))),
        "rmse_true_class": float(np.sqrt(sum(s.true_class_squared_error for s in sums) / n)),
        "log_loss": sum(s.neg_log for s in sums) / n,
    }


class BiasVariance(NamedTuple):
    """Kohavi–Wolpert decomposition; `bias + variance == zero_one_loss` (up to rounding)."""

    bias: float
    variance: float
    zero_one_loss: float
    bias_weka_corrected: float | None  # None unless requested


def prediction_frequencies(predictions: np.ndarray, n_classes: int) -> np.ndarray:
    """p̂ (n, K): fraction of the r rounds (rows of `predictions`) predicting each class."""
    pred = np.asarray(predictions)
    if pred.ndim != 2:
        raise ValueError(f"predictions must be (rounds, n), got shape {pred.shape}")
    r, n = pred.shape
    if pred.size and (pred.min() < 0 or pred.max() >= n_classes):
        raise ValueError(f"predicted class codes must lie in 0..{n_classes - 1}")
    counts = np.zeros(n * n_classes, dtype=np.int64)
    base = np.arange(n, dtype=np.int64) * n_classes
    for row in pred:  # one round at a time: no (r, n) int64 temporaries on big data
        counts += np.bincount(base + row, minlength=n * n_classes)
    return counts.reshape(n, n_classes) / r


def bias_variance(
    predictions: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    weka_correction: bool = False,
) -> BiasVariance:
    """Kohavi–Wolpert bias and variance of repeated predictions (Webb 2000; SPEC §3).

    `predictions` is (r, n): the class predicted for instance i in round r (each instance
    is tested once per round). With p̂_y = fraction of rounds predicting y and t = y_i:
    bias_x = ½ Σ_y ([y = t] − p̂_y)², variance_x = ½ (1 − Σ_y p̂_y²); both are means over
    instances. Per instance, bias_x + variance_x = ½(1 − 2p̂_t + Σp̂²) + ½(1 − Σp̂²)
    = 1 − p̂_t, the fraction of rounds misclassifying x, so the means add up to the pooled
    0-1 loss exactly (noise is folded into bias).

    With ``weka_correction=True`` also returns `bias_weka_corrected`: Weka's BVDecompose
    estimate ½ Σ_y [([y = t] − p̂_y)² − p̂_y(1 − p̂_y)/(r − 1)] averaged over instances
    (NaN when r = 1). It is a separate quantity; `bias` is never corrected.
    """
    t = np.asarray(y, dtype=np.int64)
    ph = prediction_frequencies(predictions, n_classes)
    r, n = np.asarray(predictions).shape
    if t.shape != (n,):
        raise ValueError(f"y has shape {t.shape}, expected ({n},)")
    if n == 0:
        nan = float("nan")
        return BiasVariance(nan, nan, nan, nan if weka_correction else None)
    bias_x, var_x, corr_x = _bias_variance_rows(ph, t, r)
    loss = float(np.count_nonzero(np.asarray(predictions) != t[None, :]) / (r * n))
    corrected = None
    if weka_correction:
        corrected = float("nan") if r < 2 else float(np.mean(corr_x))
    return BiasVariance(float(np.mean(bias_x)), float(np.mean(var_x)), loss, corrected)


def _bias_variance_rows(ph: np.ndarray, t: np.ndarray, r: int
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per instance: Kohavi–Wolpert bias, variance and Weka's corrected bias (None for
    r < 2) from the prediction frequencies `ph` (n, K) and the classes `t`."""
    target = np.zeros_like(ph)
    target[np.arange(t.size), t] = 1.0
    sq = (target - ph) ** 2
    bias_x = 0.5 * sq.sum(axis=1)
    var_x = 0.5 * (1.0 - (ph * ph).sum(axis=1))
    corr_x = 0.5 * (sq - ph * (1.0 - ph) / (r - 1)).sum(axis=1) if r >= 2 else None
    return bias_x, var_x, corr_x


class BiasVarianceSums:
    """`bias_variance` over instances given in parts (out of core: the rounds' prediction
    files read in lockstep): `add` each part's (r, m) predictions and classes, `result`
    the means — equal to `bias_variance` of the whole up to the order of the sums."""

    def __init__(self, n_classes: int) -> None:
        self.n_classes = n_classes
        self.n = self.errors = 0
        self.bias = self.variance = self.corrected = 0.0
        self.r = 0

    def add(self, predictions: np.ndarray, y: np.ndarray) -> None:
        t = np.asarray(y, dtype=np.int64)
        self.r = int(predictions.shape[0])
        bias_x, var_x, corr_x = _bias_variance_rows(
            prediction_frequencies(predictions, self.n_classes), t, self.r)
        self.n += int(t.size)
        self.errors += int(np.count_nonzero(np.asarray(predictions) != t[None, :]))
        self.bias += float(bias_x.sum())
        self.variance += float(var_x.sum())
        self.corrected += 0.0 if corr_x is None else float(corr_x.sum())

    def result(self, weka_correction: bool = False) -> BiasVariance:
        if not self.n:
            nan = float("nan")
            return BiasVariance(nan, nan, nan, nan if weka_correction else None)
        corrected = None if not weka_correction else (
            float("nan") if self.r < 2 else self.corrected / self.n)
        return BiasVariance(self.bias / self.n, self.variance / self.n,
                            self.errors / (self.r * self.n), corrected)


# ----- the metric registry ------------------------------------------------------------------
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("bias", "Bias", "decomposition", cd=True, needs_repeats=True),
    Metric("variance", "Variance", "decomposition", cd=True, needs_repeats=True),
    Metric("zero_one_loss", "0-1 loss", "pooled", per_fold=True, cd=True, scatter=True,
           compute=zero_one_loss),
    Metric("rmse", "RMSE (Weka, all classes)", "pooled", per_fold=True, cd=True,
           scatter=True, compute=rmse),
    Metric("rmse_true_class", "RMSE (true class)", "pooled", per_fold=True, cd=True,
           compute=rmse_true_class),
    Metric("log_loss", "Log loss", "pooled", per_fold=True, compute=log_loss),
    Metric("brier", "Brier score (all classes)", "pooled", per_fold=True,
           compute=brier_score),
    Metric("auc", "AUC (one-vs-rest, weighted by class frequency, as Weka)", "pooled",
           per_fold=True, lower_is_better=False, compute=auc_weighted),
    Metric("kappa", "Cohen's kappa", "pooled", per_fold=True, lower_is_better=False,
           compute=cohen_kappa, from_confusion=kappa_of),
    Metric("f1_macro", "F1 (macro over classes)", "pooled", per_fold=True,
           lower_is_better=False, compute=f1_macro, from_confusion=f1_macro_of),
    Metric("mcc", "Matthews correlation coefficient", "pooled", per_fold=True,
           lower_is_better=False, compute=mcc, from_confusion=mcc_of),
    Metric("ece", "Expected calibration error (top label, 10 equal-width bins)", "pooled",
           per_fold=True, compute=ece),
    Metric("train_cpu_seconds", "Training time (total CPU seconds over folds)", "total",
           per_fold=True, log=True),
    Metric("test_cpu_seconds", "Classification time (total CPU seconds over folds)", "total",
           per_fold=True, log=True),
    Metric("model_bytes", "Model size (bytes of the fitted tables, mean over folds)", "mean",
           per_fold=True, log=True),
    Metric("iterations", "Optimiser iterations (mean over folds)", "mean", per_fold=True,
           log=True),
    Metric("peak_rss_bytes", "Peak resident memory of the fold's process (bytes, mean over "
           "folds)", "mean", per_fold=True, log=True, table=False, appendix="memory"),
    Metric("memory_saved", "Share of the naive count layout saved by the compact one "
           "(mean over folds)", "mean", per_fold=True, lower_is_better=False, table=False,
           appendix="memory"),
    Metric("train_objective", "Training objective at the end (SPEC §6.6; mean over folds)",
           "mean", per_fold=True, table=False, appendix="training"),
    # what a selective learner kept (`Learner.fit_report`): described, not ranked
    Metric("selected_parents", "Selected parent attributes (mean over folds)", "mean",
           per_fold=True, table=False, appendix="selection"),
    Metric("selected_children", "Selected child attributes (mean over folds)", "mean",
           per_fold=True, table=False, appendix="selection"),
    Metric("selected_attributes", "Attributes selected (SKDB; mean over folds)", "mean",
           per_fold=True, table=False, appendix="selection"),
    Metric("selected_k", "k selected (SKDB; mean over folds)", "mean", per_fold=True,
           table=False, appendix="selection"),
    Metric("bias_weka_corrected", "Bias (Weka's finite-sample correction)", "decomposition",
           table=False, needs_repeats=True),
    Metric("train_wall_seconds", "Training time (total wall seconds over folds)", "total",
           table=False, log=True),
    Metric("test_wall_seconds", "Classification time (total wall seconds over folds)",
           "total", table=False, log=True),
    Metric("compile_seconds", "Kernel compilation and cache loading (total CPU seconds "
           "over folds; a first-use cost, in neither time above)", "total", table=False,
           log=True),
)}
"""Every metric, in the order tables and files list them."""


APPENDICES: dict[str, tuple[str, str, str]] = {
    "selection": ("attributes selected", "selected_attributes",
                  "the attributes each selective learner kept (its `fit_report`; the names per "
                  "fold are stored with the fold's predictions)"),
    "training": ("training", "training",
                 "where each learner's optimiser stopped (its `fit_report`)"),
    "memory": ("memory", "memory",
               "memory: the fold process's peak resident memory, and the share of the naive "
               "count layout that the compact one saves (Salem et al., Fig. 4a)"),
}
"""Report appendices of the metrics it describes but does not rank: key → (heading, CSV
stem under tables/, what they hold)."""


def is_measurement(key: str) -> bool:
    """A summary key that measures the machine (times, peak memory, and their stds): it
    differs between runs of the same experiment, unlike every other value."""
    return "seconds" in key or key.startswith("peak_rss")


def register_metric(metric: Metric) -> Metric:
    """Declare a metric: one computed from predictions (``compute``) or a named measure
    learners report (`Learner.measures`); summaries, tables and figures take it from
    here, in its direction. Re-declaring a name replaces it."""
    if not isinstance(metric, Metric):
        raise TypeError(f"register_metric expects a Metric, got {type(metric).__name__}")
    METRICS[metric.name] = metric
    return metric


def lower_is_better(name: str) -> bool:
    """The direction of metric `name` (True for a name the registry does not declare)."""
    m = METRICS.get(name)
    return True if m is None else m.lower_is_better


def metric_names(**flags: object) -> tuple[str, ...]:
    """Names of the declared metrics whose attributes equal `flags`, in declaration order,
    e.g. ``metric_names(table=True)``, ``metric_names(aggregate="total")``."""
    return tuple(m.name for m in METRICS.values()
                 if all(getattr(m, k) == v for k, v in flags.items()))
