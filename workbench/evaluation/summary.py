"""The per-(data set, learner) summary of a protocol's fold results.

Aggregation, `summarize` (`summarize_folds` for k-fold shapes given as numbers):

* ``zero_one_loss``, ``rmse``, ``rmse_true_class``, ``log_loss``: pooled over all r×n test
  predictions (every tested row is tested once per round). Pooled RMSE = sqrt of the
  pooled mean squared error (Weka: over n·K terms per round; true-class: over n terms per round),
  not the mean of per-fold RMSEs.
* ``bias``, ``variance``, ``bias_weka_corrected``: Kohavi–Wolpert over the (r, n) matrix of
  predicted classes (`metrics.bias_variance`); ``bias + variance == zero_one_loss``.
* ``*_seconds``: totals over all r×k folds (training includes discretisation).
* every other registered ``pooled`` metric with a ``compute`` function (Brier, AUC,
  kappa, a plugin's): the mean over rounds of its value on the round's predictions
  pooled over its folds (Weka: one Evaluation per cross-validation run).
* ``model_bytes``, ``iterations`` and every named measure a learner reports
  (`Learner.measures`, declared in the registry or not): means over the folds that
  report them; absent when none does.
* ``<metric>_std``: sample standard deviation (ddof=1) over the r×k folds of the per-fold
  value of that metric (0 when only one fold).
* ``per_fold`` (only with ``summarize_folds(..., per_fold=True)``, as the runner stores it):
  ``{metric: [value of fold (0, 0), (0, 1), ..., (r-1, k-1)]}`` for each metric of
  `fold_metric_names()` (then undeclared measures by name) — the per-fold losses (each fold's test rows pooled) and the fold's
  CPU times. The JMLR 2016 W/D/L decides each data set by a Wilcoxon test over these.
* ``tuned`` (a nested-tuned learner, `evaluation.tuning`): the parameters each fold chose,
  as compact JSON, in (round, fold) order.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from workbench.errors import WorkbenchError
from workbench.evaluation import metrics
from workbench.evaluation.pipeline import FoldResult
from workbench.evaluation.protocols import Protocol

SUMS_METRICS = ("zero_one_loss", "rmse", "rmse_true_class", "log_loss")
"""Pooled metrics summed over every test prediction of every round (`metrics.loss_sums`);
every other ``compute`` metric is a mean over rounds of its value on the round's pooled
predictions."""


CONFUSION_KEY = "confusion"
"""A summary's K × K confusion matrix (rows true classes, columns predictions) summed over
every round's tested rows: per-class precision and recall in the report."""
TUNED_KEY = "tuned"
"""A summary's per-fold choices of a nested-tuned learner (``fit_report['tuned']``, JSON),
in (round, fold) order: the ``tuned`` column of ``fold_metrics.csv``."""
CALIBRATION_KEY = "calibration"
"""A summary's `metrics.calibration_bins` summed over every round's tested rows: the
reliability diagrams and the Brier decomposition of the report."""


def fold_metric_names() -> tuple[str, ...]:
    """Metrics with a value per fold, in registry order (read at each call: a metric a
    plugin registers later is included)."""
    return metrics.metric_names(per_fold=True)


def summary_keys() -> tuple[str, ...]:
    """Keys every summary has (besides ``<m>_std`` and reported measures)."""
    pooled = metrics.metric_names(aggregate="pooled", per_fold=True)
    return (*pooled, "bias", "variance", "bias_weka_corrected",
            *metrics.metric_names(aggregate="total"), "n_instances", "rounds", "folds")


def _small_int_dtype(max_value: int) -> np.dtype:
    for dt in (np.int8, np.int16, np.int32):
        if max_value <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.int64)


def _ordered(results: Sequence[FoldResult], rounds: int, folds: int) -> list[FoldResult]:
    """The results in (round, fold) order, each (round, fold) exactly once."""
    by_key: dict[tuple[int, int], FoldResult] = {}
    for res in results:
        key = (int(res.round), int(res.fold))
        if not (0 <= key[0] < rounds and 0 <= key[1] < folds):
            raise WorkbenchError(f"fold result for round {key[0]}, fold {key[1]} is outside "
                                 f"{rounds} rounds × {folds} folds")
        if key in by_key:
            raise WorkbenchError(f"two fold results for round {key[0]}, fold {key[1]}")
        by_key[key] = res
    missing = [(r, f) for r in range(rounds) for f in range(folds) if (r, f) not in by_key]
    if missing:
        r, f = missing[0]
        raise WorkbenchError(f"no fold result for round {r}, fold {f} "
                             f"({len(missing)} of {rounds * folds} missing)")
    return [by_key[(r, f)] for r in range(rounds) for f in range(folds)]


def assemble(results: Sequence[FoldResult], n: int, n_classes: int, rounds: int,
             folds: int, test_rows: np.ndarray | None = None
             ) -> tuple[list[FoldResult], np.ndarray, np.ndarray]:
    """Check the fold results cover each (round, fold) once and each instance once per round
    (each of `test_rows` only, for protocols with a fixed test set).

    Returns (results sorted by (round, fold), predicted classes (r, n), fold ids (r, n),
    untested rows −1); the two matrices use the smallest integer dtype that fits
    (poker-hand: 20 × 1M entries).
    """
    ordered = _ordered(results, rounds, folds)
    preds = np.zeros((rounds, n), dtype=_small_int_dtype(n_classes))
    splits = np.full((rounds, n), -1, dtype=_small_int_dtype(folds))
    for res in ordered:
        idx = np.asarray(res.test_index, dtype=np.int64)
        if res.proba.shape != (idx.size, n_classes):
            raise WorkbenchError(f"round {res.round}, fold {res.fold}: distributions have "
                                 f"shape {res.proba.shape}, expected ({idx.size}, {n_classes})")
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise WorkbenchError(f"round {res.round}, fold {res.fold}: test index out of "
                                 f"range for {n} instances")
        if (splits[res.round, idx] >= 0).any() or np.unique(idx).size != idx.size:
            raise WorkbenchError(f"round {res.round}: an instance is tested twice "
                                 f"(fold {res.fold})")
        splits[res.round, idx] = res.fold
        preds[res.round, idx] = np.argmax(res.proba, axis=1)
    expected = np.zeros(n, dtype=bool)
    expected[np.arange(n) if test_rows is None else np.asarray(test_rows, dtype=np.int64)] = True
    for r in range(rounds):
        untested = np.flatnonzero((splits[r] < 0) & expected)
        if untested.size:
            raise WorkbenchError(f"round {r}: instance {int(untested[0])} is never tested")
        extra = np.flatnonzero((splits[r] >= 0) & ~expected)
        if extra.size:
            raise WorkbenchError(f"round {r}: instance {int(extra[0])} is tested but not in "
                                 "the protocol's test set")
    return ordered, preds, splits


def _std(values: list[float]) -> float:
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def summarize_folds(
    results: Sequence[FoldResult],
    y: np.ndarray,
    n_classes: int,
    rounds: int,
    folds: int,
    *,
    per_fold: bool = False,
    test_rows: np.ndarray | None = None,
    bias_variance: bool = True,
) -> dict[str, Any]:
    """The per-(data set, learner) summary dict from stored fold results (any order).

    `y` are the true class codes of the evaluated rows (`evaluation_data(data).y`). Keys:
    `summary_keys()` plus ``<m>_std`` for each per-fold pooled metric (see module docstring
    for the exact aggregation), plus ``per_fold`` (per-fold values of `fold_metric_names()` in
    (round, fold) order) when `per_fold` is true. Independent of the order of `results`;
    memory is O(r·n) small integers plus one fold's distributions, never (r, n, K).
    """
    y = np.asarray(y, dtype=np.int64)
    n = int(y.size)
    ordered, preds, _ = assemble(results, n, n_classes, rounds, folds, test_rows)
    return summarize_assembled(ordered, preds, y, n_classes, rounds, folds,
                               per_fold=per_fold, test_rows=test_rows,
                               bias_variance=bias_variance)


def summarize_assembled(ordered: list[FoldResult], preds: np.ndarray, y: np.ndarray,
                        n_classes: int, rounds: int, folds: int, per_fold: bool = False,
                        test_rows: np.ndarray | None = None, bias_variance: bool = True
                        ) -> dict[str, Any]:
    """`summarize_folds` from `assemble`'s output, for callers that keep its matrices too
    (they need not check and assemble the folds twice)."""
    sums = [metrics.loss_sums(res.proba, y[res.test_index]) for res in ordered]
    extra: dict[str, Any] = {}
    fold_extra: dict[str, list[float]] = {}
    for m in metrics.METRICS.values():
        if m.aggregate == "pooled" and m.compute is not None and m.name not in SUMS_METRICS:
            extra[m.name], values = _computed(m, ordered, y, rounds)
            if m.per_fold:
                fold_extra[m.name] = values
    confusion = sum(metrics.confusion_matrix(res.proba, y[res.test_index]) for res in ordered)
    extra[CONFUSION_KEY] = np.asarray(confusion, np.int64).tolist()
    extra[CALIBRATION_KEY] = sum(metrics.calibration_bins(res.proba, y[res.test_index])
                                 for res in ordered).tolist()
    if bias_variance:  # over the rounds' predictions of the tested rows
        cols = slice(None) if test_rows is None else np.asarray(test_rows, dtype=np.int64)
        bv = metrics.bias_variance(preds[:, cols], y[cols], n_classes, weka_correction=True)
        extra["bias"] = bv.bias
        extra["variance"] = bv.variance
        extra["bias_weka_corrected"] = bv.bias_weka_corrected
    return _from_sums(ordered, sums, int(y.size), n_classes, rounds, folds, per_fold, extra,
                      fold_extra)


def summarize_sums(results: Sequence[FoldResult], n: int, n_classes: int, rounds: int,
                   folds: int, *, tested: int | None = None, per_fold: bool = False,
                   extra: dict[str, Any] | None = None,
                   fold_extra: dict[str, list[float]] | None = None) -> dict[str, Any]:
    """The summary of fold results that carry each fold's loss sums (`FoldResult.sums`:
    out of core): the pooled and per-fold losses, times and measures of
    `summarize_folds`; bias/variance and the metrics computed from predictions only as
    given (`extra`, per fold `fold_extra`: `streamed_extras` of the rounds' files), none
    with ``predictions: false``. Each round must test `tested` rows (default `n`)."""
    ordered = _ordered(results, rounds, folds)
    want = n if tested is None else tested
    for r in range(rounds):
        got = sum(int(res.sums[0]) for res in ordered[r * folds:(r + 1) * folds])
        if got != want:
            raise WorkbenchError(f"round {r}: {got} rows tested, expected {want}")
    sums = [metrics.LossSums(*res.sums) for res in ordered]
    return _from_sums(ordered, sums, n, n_classes, rounds, folds, per_fold, dict(extra or {}),
                      dict(fold_extra or {}))


FOLD_IN_MEMORY = 1 << 20
"""A fold of at most this many rows has its AUC computed in memory; a larger one by the
bucketed external sort (`metrics.auc_weighted_parts`, the same value up to the order of
the sums) — so a streamed summary's memory does not grow with the rows."""

Rows = Callable[[], Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]]
"""A round's tested rows from its file, in the file's order: batches of (folds, classes,
probabilities)."""


def streamed_extras(rounds: Sequence[Rows], n_classes: int, folds: int,
                    bias_variance: bool, folder: str) -> tuple[dict[str, Any],
                                                            dict[str, list[float]]]:
    """What `summarize_assembled` computes from predictions, from the rounds' files:

    * Kohavi–Wolpert bias/variance over the rounds read in lockstep (a batch of each
      round in memory), and in the same pass each fold's squared-error sum and confusion
      matrix and calibration bins: the Brier score, the metrics of the confusion matrix
      (Cohen's kappa, macro F1, MCC) and the expected calibration error per fold and pooled
      per round, from those sufficient statistics;
    * AUC pooled per round by `metrics.auc_weighted_parts` (an external bucketed sort
      under `folder`: about a 32nd of a round's rows in memory) and per fold from that
      fold's rows (in memory up to `FOLD_IN_MEMORY` rows, else bucketed too);
    * any other registered ``compute`` metric (a plugin's) from one round's rows at a
      time.

    Returns ``(extra, fold_extra)`` for `summarize_sums`; equal to the in-memory values up
    to the order of the sums."""
    extra: dict[str, Any] = {}
    fold_extra: dict[str, list[float]] = {}
    computed = [m for m in metrics.METRICS.values() if m.aggregate == "pooled"
                and m.compute is not None and m.name not in SUMS_METRICS]
    k2 = n_classes * n_classes
    conf = np.zeros((len(rounds), folds, k2), np.int64)
    sq = np.zeros((len(rounds), folds))
    count = np.zeros((len(rounds), folds), np.int64)
    cal = np.zeros((len(rounds), folds, metrics.ECE_EDGES.size,
                    len(metrics.CALIBRATION_COLUMNS)))
    acc = metrics.BiasVarianceSums(n_classes)
    for parts in zip(*(rows() for rows in rounds)):
        y = parts[0][1]
        if any(p[1].shape != y.shape or not np.array_equal(p[1], y) for p in parts):
            raise WorkbenchError("the rounds' prediction files do not hold the same rows "
                                 "in the same order")
        predicted = np.stack([np.argmax(p[2], axis=1) for p in parts])
        if bias_variance:
            acc.add(predicted, y)
        t = np.asarray(y, np.int64)
        for r, (fold, _, proba) in enumerate(parts):
            fold = np.asarray(fold, np.int64)
            d = proba.copy()
            d[np.arange(t.size), t] -= 1.0
            sq[r] += np.bincount(fold, weights=(d * d).sum(axis=1), minlength=folds)
            count[r] += np.bincount(fold, minlength=folds)
            conf[r] += np.bincount(fold * k2 + t * n_classes + predicted[r],
                                   minlength=folds * k2).reshape(folds, k2)
            for f in np.unique(fold):
                mine = fold == f
                cal[r, f] += metrics.calibration_bins(proba[mine], t[mine])
    extra[CONFUSION_KEY] = conf.sum(axis=(0, 1)).reshape(n_classes, n_classes).tolist()
    extra[CALIBRATION_KEY] = cal.sum(axis=(0, 1)).tolist()
    if bias_variance:
        bv = acc.result(weka_correction=True)
        extra |= {"bias": bv.bias, "variance": bv.variance,
                  "bias_weka_corrected": bv.bias_weka_corrected}
    for m in computed:
        if m.compute is metrics.brier_score:
            per_round = [float(sq[r].sum() / count[r].sum()) if count[r].sum() else
                         float("nan") for r in range(len(rounds))]
            per_fold = [float(sq[r, f] / count[r, f]) if count[r, f] else float("nan")
                        for r in range(len(rounds)) for f in range(folds)]
        elif m.from_confusion is not None:  # (kappa, F1, MCC: the confusion matrices)
            per_round = [m.from_confusion(conf[r].sum(axis=0).reshape(n_classes, n_classes))
                         for r in range(len(rounds))]
            per_fold = [m.from_confusion(conf[r, f].reshape(n_classes, n_classes))
                        if count[r, f] else float("nan")
                        for r in range(len(rounds)) for f in range(folds)]
        elif m.compute is metrics.ece:  # (the calibration bins' sufficient statistics)
            per_round = [metrics.ece_of(cal[r].sum(axis=0)) for r in range(len(rounds))]
            per_fold = [metrics.ece_of(cal[r, f]) for r in range(len(rounds))
                        for f in range(folds)]
        elif m.compute is metrics.auc_weighted:
            per_round = [metrics.auc_weighted_parts(_probabilities(rows), n_classes, folder)
                         for rows in rounds]
            per_fold = [m.compute(*_fold_rows(rows, f)) if count[r, f] <= FOLD_IN_MEMORY
                        else metrics.auc_weighted_parts(_fold_probabilities(rows, f),
                                                        n_classes, folder)
                        for r, rows in enumerate(rounds) for f in range(folds)]
        else:  # (a plugin's metric: one round's rows at a time)
            per_round, per_fold = [], []
            for rows in rounds:
                fold, y, proba = (np.concatenate(c) for c in zip(*rows()))
                per_round.append(float(m.compute(proba, y)))
                per_fold += [float(m.compute(proba[fold == f], y[fold == f]))
                             for f in range(folds)]
        known = [v for v in per_round if not np.isnan(v)]
        extra[m.name] = float(np.mean(known)) if known else float("nan")
        if m.per_fold:
            fold_extra[m.name] = [float(v) for v in per_fold]
    return extra, fold_extra


def _probabilities(rows: Rows) -> Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]:
    return lambda: ((proba, y) for _, y, proba in rows())


def _fold_probabilities(rows: Rows, fold: int
                        ) -> Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]:
    return lambda: ((proba[f == fold], y[f == fold]) for f, y, proba in rows())


def _fold_rows(rows: Rows, fold: int) -> tuple[np.ndarray, np.ndarray]:
    """One fold's probabilities and classes, in the file's order."""
    parts = [(proba[f == fold], y[f == fold]) for f, y, proba in rows()]
    return (np.concatenate([p for p, _ in parts]), np.concatenate([y for _, y in parts]))


def _from_sums(ordered: list[FoldResult], sums: list[metrics.LossSums], n: int,
               n_classes: int, rounds: int, folds: int, per_fold: bool,
               extra: dict[str, Any], fold_extra: dict[str, list[float]]) -> dict[str, Any]:
    """The summary from each fold's loss sums, plus the metrics computed from predictions
    (`extra`, per fold `fold_extra`)."""
    registry = metrics.METRICS
    out: dict[str, Any] = dict(metrics.pooled_metrics(sums, n_classes))
    fold_values: dict[str, list[float]] = {
        m: [] for m in metrics.metric_names(aggregate="pooled", per_fold=True)}
    for s in sums:
        for m, v in metrics.pooled_metrics([s], n_classes).items():
            fold_values.setdefault(m, []).append(float(v))
    out.update(extra)
    fold_values.update(fold_extra)
    for key in metrics.metric_names(aggregate="total"):
        out[key] = float(sum(getattr(res, key) for res in ordered))
    reported = _reported_measures(ordered)
    for key, values in reported.items():
        known = [float(x) for x in values if x is not None]
        out[key] = float(sum(known) / len(known))
    out["n_instances"] = int(n)
    out["rounds"] = int(rounds)
    out["folds"] = int(folds)
    chosen = [(res.fit_report or {}).get(TUNED_KEY) for res in ordered]
    if any(c is not None for c in chosen):
        out[TUNED_KEY] = ["" if c is None else json.dumps(c, sort_keys=True) for c in chosen]
    for m, values in fold_values.items():
        if values:
            out[f"{m}_std"] = _std(values)
    if per_fold:
        table = {m: v for m, v in fold_values.items() if v and registry.get(m) and
                 registry[m].per_fold}
        table.update({k: [float(getattr(res, k)) for res in ordered]
                      for k in metrics.metric_names(aggregate="total", per_fold=True)})
        table.update({k: [float("nan") if x is None else float(x) for x in v]
                      for k, v in reported.items()})
        order = [m for m in fold_metric_names() if m in table]
        out["per_fold"] = {m: table[m] for m in order + sorted(set(table) - set(order))}
    return out


def _computed(metric: metrics.Metric, ordered: Sequence[FoldResult], y: np.ndarray,
              rounds: int) -> tuple[float, list[float]]:
    """A ``compute`` metric's value (mean over rounds of the round's pooled predictions;
    NaN rounds left out) and its per-fold values."""
    per_round = []
    for r in range(rounds):
        mine = [res for res in ordered if int(res.round) == r]
        if mine:
            proba = np.concatenate([res.proba for res in mine])
            truth = np.concatenate([y[res.test_index] for res in mine])
            per_round.append(float(metric.compute(proba, truth)))
    known = [v for v in per_round if not np.isnan(v)]
    value = float(np.mean(known)) if known else float("nan")
    return value, [float(metric.compute(res.proba, y[res.test_index])) for res in ordered]


def _reported_measures(ordered: Sequence[FoldResult]) -> dict[str, list[Any]]:
    """Per-fold values of each measure some fold reports: the declared ``mean`` metrics
    and any name a learner's `measures` gives (undeclared ones too)."""
    names = list(metrics.metric_names(aggregate="mean"))
    for res in ordered:
        names += [k for k in (res.measures or {}) if k not in names]
    values = {k: [res.value(k) for res in ordered] for k in names}
    return {k: v for k, v in values.items() if any(x is not None for x in v)}


def test_rows_of(protocol: Protocol, results: Sequence[FoldResult]) -> np.ndarray | None:
    """The rows every round tests: None (all rows) when the protocol tests every row, else
    round 0's test rows (a fixed test set)."""
    if protocol.tests_all_rows:
        return None
    return np.unique(np.concatenate([np.asarray(r.test_index, dtype=np.int64)
                                     for r in results if int(r.round) == 0]))


def summarize(results: Sequence[FoldResult], y: np.ndarray, n_classes: int,
              protocol: Protocol, *, per_fold: bool = False) -> dict[str, Any]:
    """`summarize_folds` for `protocol`'s fold results: its shape, its test set, and
    bias/variance when its rounds are repetitions."""
    return summarize_folds(results, y, n_classes, protocol.rounds, protocol.folds,
                           per_fold=per_fold, test_rows=test_rows_of(protocol, results),
                           bias_variance=protocol.repeats)
