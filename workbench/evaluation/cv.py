"""Repeated k-fold cross-validation of one learner on one data set, and its summary.

Which rows are evaluated: rows whose class is missing are removed **before splitting**
(`evaluation_data`); split matrices, fold results and prediction files index the remaining
rows 0..n-1 in file order, and ``n_instances`` counts them. (SPEC: missing-class rows are
ignored for training, discretisation and evaluation.)

Per-(data set, learner) aggregation, `summarize_folds`:

* ``zero_one_loss``, ``rmse``, ``rmse_true_class``, ``log_loss``: pooled over all r×n test
  predictions (every instance is tested once per round). Pooled RMSE = sqrt of the pooled
  mean squared error (Weka: over n·K terms per round; true-class: over n terms per round),
  not the mean of per-fold RMSEs.
* ``bias``, ``variance``, ``bias_weka_corrected``: Kohavi–Wolpert over the (r, n) matrix of
  predicted classes (`metrics.bias_variance`); ``bias + variance == zero_one_loss``.
* ``*_seconds``: totals over all r×k folds (training includes discretisation).
* ``model_bytes``, ``iterations``: means over the folds whose learner reports them
  (`Learner.model_bytes()` / `iterations()`); absent when none does.
* ``<metric>_std``: sample standard deviation (ddof=1) over the r×k folds of the per-fold
  value of that metric (0 when only one fold).
* ``per_fold`` (only with ``summarize_folds(..., per_fold=True)``, as the runner stores it):
  ``{metric: [value of fold (0, 0), (0, 1), ..., (r-1, k-1)]}`` for each metric of
  `FOLD_METRICS` — the per-fold losses (each fold's test rows pooled) and the fold's
  CPU times. The JMLR 2016 W/D/L decides each data set by a Wilcoxon test over these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import WorkbenchError
from workbench.evaluation import metrics
from workbench.evaluation.pipeline import (
    FoldResult,
    LearnerLike,
    fold_seed,
    make_learner,
    run_fold,
)
from workbench.evaluation.splits import check_splits, fold_indices, make_splits

# views of the metric registry (`metrics.METRICS`), in its order
PER_FOLD_METRICS = metrics.metric_names(aggregate="pooled", per_fold=True)
TIME_KEYS = metrics.metric_names(aggregate="total")
MEAN_KEYS = metrics.metric_names(aggregate="mean")
FOLD_METRICS = metrics.metric_names(per_fold=True)
SUMMARY_KEYS = (*PER_FOLD_METRICS, "bias", "variance", "bias_weka_corrected", *TIME_KEYS,
                "n_instances", "rounds", "folds")


def evaluation_data(data: Dataset) -> Dataset:
    """The rows that are split and evaluated: those whose class is known."""
    return data.without_missing_class()


@dataclass(frozen=True, eq=False)
class CVResult:
    """Everything one repeated cross-validation produced.

    `fold_results` are ordered by (round, fold); `predictions` (r, n) are predicted class
    codes, `distributions` (r, n, K) the predicted distributions, `splits` (r, n) the fold
    ids, `y` the true class codes of the evaluated rows.
    """

    summary: dict[str, Any]
    fold_results: list[FoldResult]
    splits: np.ndarray
    predictions: np.ndarray
    distributions: np.ndarray
    y: np.ndarray
    data: Dataset


def _small_int_dtype(max_value: int) -> np.dtype:
    for dt in (np.int8, np.int16, np.int32):
        if max_value <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.int64)


def assemble(results: Sequence[FoldResult], n: int, n_classes: int, rounds: int,
             folds: int, test_rows: np.ndarray | None = None
             ) -> tuple[list[FoldResult], np.ndarray, np.ndarray]:
    """Check the fold results cover each (round, fold) once and each instance once per round
    (each of `test_rows` only, for protocols with a fixed test set).

    Returns (results sorted by (round, fold), predicted classes (r, n), fold ids (r, n),
    untested rows −1); the two matrices use the smallest integer dtype that fits
    (poker-hand: 20 × 1M entries).
    """
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
    ordered = [by_key[(r, f)] for r in range(rounds) for f in range(folds)]
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
    `SUMMARY_KEYS` plus ``<m>_std`` for each m in `PER_FOLD_METRICS` (see module docstring
    for the exact aggregation), plus ``per_fold`` (per-fold values of `FOLD_METRICS` in
    (round, fold) order) when `per_fold` is true. Independent of the order of `results`;
    memory is O(r·n) small integers plus one fold's distributions, never (r, n, K).
    """
    y = np.asarray(y, dtype=np.int64)
    n = int(y.size)
    ordered, preds, _ = assemble(results, n, n_classes, rounds, folds, test_rows)
    return _summary(ordered, preds, y, n_classes, rounds, folds, per_fold=per_fold,
                    test_rows=test_rows, bias_variance=bias_variance)


def _summary(ordered: list[FoldResult], preds: np.ndarray, y: np.ndarray, n_classes: int,
             rounds: int, folds: int, per_fold: bool = False,
             test_rows: np.ndarray | None = None, bias_variance: bool = True
             ) -> dict[str, Any]:
    sums = [metrics.loss_sums(res.proba, y[res.test_index]) for res in ordered]
    out: dict[str, Any] = dict(metrics.pooled_metrics(sums, n_classes))
    if bias_variance:  # over the rounds' predictions of the tested rows
        cols = slice(None) if test_rows is None else np.asarray(test_rows, dtype=np.int64)
        bv = metrics.bias_variance(preds[:, cols], y[cols], n_classes, weka_correction=True)
        out["bias"] = bv.bias
        out["variance"] = bv.variance
        out["bias_weka_corrected"] = bv.bias_weka_corrected
    for key in TIME_KEYS:
        out[key] = float(sum(getattr(res, key) for res in ordered))
    reported = {k: [getattr(res, k) for res in ordered] for k in MEAN_KEYS}
    reported = {k: v for k, v in reported.items() if any(x is not None for x in v)}
    for key, values in reported.items():
        known = [float(x) for x in values if x is not None]
        out[key] = float(sum(known) / len(known))
    out["n_instances"] = int(y.size)
    out["rounds"] = int(rounds)
    out["folds"] = int(folds)
    fold_values = [metrics.pooled_metrics([s], n_classes) for s in sums]
    for m in PER_FOLD_METRICS:
        out[f"{m}_std"] = _std([pf[m] for pf in fold_values])
    if per_fold:
        table = {m: [float(pf[m]) for pf in fold_values] for m in PER_FOLD_METRICS}
        table.update({k: [float(getattr(res, k)) for res in ordered] for k in FOLD_METRICS
                      if k in TIME_KEYS})
        table.update({k: [float("nan") if x is None else float(x) for x in v]
                      for k, v in reported.items()})
        out["per_fold"] = {m: table[m] for m in FOLD_METRICS if m in table}
    return out


def _run_fold_in_worker(spec: Any, *args: Any, **kwargs: Any) -> FoldResult:
    """`run_fold` in a worker process, first registering a name the parent registered at
    run time (tests, plugins) if the worker does not know it."""
    if spec is not None:
        from workbench.learners import registry

        if spec.name not in registry.names():
            registry.register(spec.name, spec.factory, source=spec.source,
                              description=spec.description, **spec.defaults)
    return run_fold(*args, **kwargs)


def cross_validate(
    data: Dataset,
    learner_name: LearnerLike,
    params: Mapping[str, Any] | None = None,
    rounds: int = 20,
    folds: int = 2,
    seed: int = 1,
    stratify: bool = False,
    splits: np.ndarray | None = None,
    n_jobs: int = 1,
    discretize_sample: int | None = None,
) -> CVResult:
    """Run `rounds` × `folds` cross-validation of one learner (name or factory) on `data`.

    Missing-class rows are dropped first (`evaluation_data`). `splits` (rounds, n), if
    given, replaces `make_splits(n, rounds, folds, seed, stratify, labels=y)` and its shape
    sets `rounds` and `folds`. Fold (r, f) gets learner seed `fold_seed(seed, r, f)` for
    learners with a ``seed``/``random_state`` parameter. Folds run in parallel with
    joblib when ``n_jobs != 1``; results never depend on order or parallelism.
    `discretize_sample` fits the discretiser of fold (r, f) on at most that many training
    rows, drawn with the fold's seed (see `run_fold`; None = all rows).
    """
    d = evaluation_data(data)
    n = d.n_instances
    if splits is None:
        splits = make_splits(n, rounds, folds, seed, stratify=stratify, labels=d.y)
    else:
        splits = check_splits(splits, n=n)
        rounds, folds = int(splits.shape[0]), int(splits.max()) + 1
    tasks = [(r, f) for r in range(rounds) for f in range(folds)]
    make_learner(learner_name, params, seed)  # bad names / parameters fail here, once

    if n_jobs == 1 or len(tasks) == 1:
        results = [
            run_fold(d, learner_name, params, *fold_indices(splits, r, f), round=r, fold=f,
                     seed=fold_seed(seed, r, f), discretize_sample=discretize_sample)
            for r, f in tasks
        ]
    else:
        from joblib import Parallel, delayed

        spec = None
        if isinstance(learner_name, str):
            from workbench.learners import registry

            spec = registry.get(learner_name)
        results = Parallel(n_jobs=n_jobs)(
            delayed(_run_fold_in_worker)(spec, d, learner_name, params,
                                         *fold_indices(splits, r, f), round=r, fold=f,
                                         seed=fold_seed(seed, r, f),
                                         discretize_sample=discretize_sample)
            for r, f in tasks
        )
    ordered, preds, _ = assemble(results, n, d.n_classes, rounds, folds)
    summary = _summary(ordered, preds, d.y, d.n_classes, rounds, folds)
    dist = np.empty((rounds, n, d.n_classes))
    for res in ordered:
        dist[res.round, res.test_index] = res.proba
    return CVResult(
        summary=summary,
        fold_results=ordered,
        splits=splits,
        predictions=preds.astype(np.int64),
        distributions=dist,
        y=np.asarray(d.y),
        data=d,
    )
