"""The evaluation driver: one learner on one data set under a `Protocol`, fold by fold.

Both front ends go through it: ``cv`` runs `evaluate` in one process (joblib for parallel
folds); ``run`` sends single folds (`protocol_fold`) to its worker pool, stores them, and
summarises a pair with the same `summary.summarize`. So a fold's rows, its learner seed and
its summary are the same whichever front end computed them.

Which rows are evaluated: rows whose class is missing are removed **before splitting**
(`evaluation_data`); split matrices, fold results and prediction files index the remaining
rows 0..n-1 in file order, and ``n_instances`` counts them. (SPEC: missing-class rows are
ignored for training, discretisation and evaluation.) The summary's definitions are in
`workbench.evaluation.summary`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from workbench.data.dataset import Dataset
from workbench.evaluation.pipeline import (
    FoldResult,
    LearnerLike,
    fold_seed,
    make_learner,
    run_fold,
)
from workbench.evaluation.outofcore import prequential_fold
from workbench.evaluation.protocols import FoldSpec, GivenSplits, KFold, Prequential, Protocol
from workbench.evaluation.summary import (
    assemble,
    fold_metric_names,
    summarize_assembled,
    summarize_folds,
    summary_keys,
    test_rows_of,
)
from workbench.learners import registry

__all__ = ["CVResult", "cross_validate", "evaluate", "evaluation_data", "protocol_fold",
           # the summary's names, importable from here as before the split
           "fold_metric_names", "summary_keys", "summarize_folds"]


def evaluation_data(data: Dataset) -> Dataset:
    """The rows that are split and evaluated: those whose class is known."""
    return data.without_missing_class()


@dataclass(frozen=True, eq=False)
class CVResult:
    """Everything one evaluation produced.

    `fold_results` are ordered by (round, fold); `predictions` (r, n) are predicted class
    codes, `distributions` (r, n, K) the predicted distributions (NaN for rows a round does
    not test), `splits` (r, n) the fold ids (−1: not tested), `y` the true class codes of
    the evaluated rows.
    """

    summary: dict[str, Any]
    fold_results: list[FoldResult]
    splits: np.ndarray
    predictions: np.ndarray
    distributions: np.ndarray
    y: np.ndarray
    data: Dataset


def protocol_fold(data: Dataset, learner: LearnerLike, params: Mapping[str, Any] | None,
                  protocol: Protocol, spec: FoldSpec,
                  discretize_sample: int | None = None) -> FoldResult:
    """Run one fold of `protocol` on the evaluated rows `data`: learner seed
    `fold_seed(protocol.seed, round, fold)` for learners with a seed parameter (a
    prequential protocol's fold is its test-then-train stream)."""
    if isinstance(protocol, Prequential):
        return prequential_fold(data, learner, params, protocol.window,
                                fold_seed(protocol.seed, spec.round, spec.fold))
    return run_fold(data, learner, params, spec.train, spec.test, round=spec.round,
                    fold=spec.fold, seed=fold_seed(protocol.seed, spec.round, spec.fold),
                    discretize_sample=discretize_sample,
                    min_test_seconds=getattr(protocol, "min_test_seconds", 0.0))


def _fold_in_worker(spec: Any, *args: Any, **kwargs: Any) -> FoldResult:
    """`protocol_fold` in a joblib worker, first registering a name the parent registered
    at run time (tests, plugins) if the worker does not know it."""
    if spec is not None and spec.name not in registry.names():
        registry.register(spec.name, spec.factory, source=spec.source,
                          description=spec.description, **spec.defaults)
    return protocol_fold(*args, **kwargs)


def evaluate(data: Dataset, learner: LearnerLike, params: Mapping[str, Any] | None,
             protocol: Protocol, *, n_jobs: int = 1,
             discretize_sample: int | None = None) -> CVResult:
    """Run every fold of `protocol` for one learner (name or factory) on `data`.

    Missing-class rows are dropped first (`evaluation_data`). Folds run in parallel with
    joblib when ``n_jobs != 1``; results never depend on order or parallelism.
    `discretize_sample` fits the discretiser of each fold on at most that many training
    rows, drawn with the fold's seed (see `run_fold`; None = all rows).
    """
    d = evaluation_data(data)
    n = d.n_instances
    specs = protocol.plan(n, d.y)
    make_learner(learner, params, protocol.seed)  # bad names / parameters fail here, once
    keys = protocol.keys()
    if n_jobs == 1 or len(keys) == 1:
        results = [protocol_fold(d, learner, params, protocol, specs[k], discretize_sample)
                   for k in keys]
    else:
        from joblib import Parallel, delayed  # only here: 0.1 s of CPU to import

        spec = registry.get(learner) if isinstance(learner, str) else None
        results = Parallel(n_jobs=n_jobs)(
            delayed(_fold_in_worker)(spec, d, learner, params, protocol, specs[k],
                                     discretize_sample)
            for k in keys)
    test_rows = test_rows_of(protocol, results)
    ordered, preds, splits = assemble(results, n, d.n_classes, protocol.rounds,
                                      protocol.folds, test_rows)
    summary = summarize_assembled(ordered, preds, np.asarray(d.y, dtype=np.int64), d.n_classes,
                                  protocol.rounds, protocol.folds, test_rows=test_rows,
                                  bias_variance=protocol.repeats)
    dist = np.full((protocol.rounds, n, d.n_classes), np.nan)
    for res in ordered:
        dist[res.round, res.test_index] = res.proba
    return CVResult(summary=summary, fold_results=ordered, splits=splits.astype(np.int64),
                    predictions=preds.astype(np.int64), distributions=dist,
                    y=np.asarray(d.y), data=d)


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
    """`evaluate` under `rounds` × `folds` cross-validation (`KFold`), or on the given
    `splits` (rounds, n) (`GivenSplits`; its shape sets `rounds` and `folds`). Fold (r, f)
    gets learner seed `fold_seed(seed, r, f)`."""
    if splits is None:
        protocol: Protocol = KFold(rounds=rounds, folds=folds, seed=seed, stratify=stratify)
    else:
        protocol = GivenSplits(splits, seed=seed)
    return evaluate(data, learner_name, params, protocol, n_jobs=n_jobs,
                    discretize_sample=discretize_sample)
