"""Out-of-core training and evaluation: a data file (ARFF, CSV, Parquet) read chunk by
chunk, at memory independent of its number of rows, by a count-based learner: NB and the
AnDE family in one pass (`CountingLearner.partial_fit`); KDB, TAN and ASAODE in two, SKDB
in three and BSEAODE in one more per elimination step (`MultiPassLearner`: every pass
reading the same training rows in the same order).

The rooms, in the order the data flows through them:

- `passes` — reading a file in passes (the first: missing flags, rows, a reservoir
  sample), holdouts, the out-of-core model, the folds' CPU clock; `replay` — the file
  decoded once, its later passes read from a compact copy;
- `assignment` — which fold tests each row (k-fold by row index, or a holdout) and each
  fold's record;
- `subtraction` — every fold trained from shared counts (the AnDE family; the KDB
  family's additive passes); `side_by_side` — k models in the learner's own passes;
- `scoring` — each row classified by its fold's model, its prediction streamed on;
- `cluster` — the same on Dask workers, a Parquet row group a task, tree reduction;
- `fit` (one model, a holdout), `prequential` (test-then-train) and `kfold` (r × k-fold
  CV) — the evaluations the CLI calls;
- here: `evaluate_file_task`, the one entry the experiment runner calls per task.

Metrics are those of `cv` (pooled 0-1 loss, both RMSEs, log loss) with CPU seconds of
training and testing, rows, the fitted model's bytes and the process's peak resident
memory. With a sample at least as large as the training rows, training here equals
training in memory on the same rows (same cut points, same counts).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from typing import Any, Callable, ContextManager, Mapping

import numpy as np

from workbench.evaluation.outofcore.assignment import CVFold, Keep
from workbench.evaluation.outofcore.fit import OutOfCoreResult, evaluate_holdout, fit_file
from workbench.evaluation.outofcore.kfold import CVResult, distributes, evaluate_kfold
from workbench.evaluation.outofcore.passes import (DEFAULT_CHUNK, DEFAULT_SAMPLE, CPUClock,
                                                   Holdout, first_pass, gather_rows,
                                                   out_of_core_model,
                                                   parse_holdout, rows_with_class)
from workbench.evaluation.outofcore.prequential import (class_known_windows,
                                                        evaluate_prequential,
                                                        prequential_fold, prequential_loop,
                                                        stream_fold)
from workbench.evaluation.outofcore.scoring import PredictionWriter
from workbench.evaluation.pipeline import FoldResult, fold_seed
from workbench.evaluation.protocols import FoldSpec, Protocol

__all__ = ["CPUClock", "CVFold", "CVResult", "DEFAULT_CHUNK", "DEFAULT_SAMPLE", "Holdout",
           "Keep", "OutOfCoreResult", "PredictionWriter", "class_known_windows",
           "distributes", "evaluate_file_task", "evaluate_holdout", "evaluate_kfold",
           "evaluate_prequential", "fit_file", "gather_rows", "out_of_core_model",
           "parse_holdout", "prequential_fold", "prequential_loop", "rows_with_class",
           "stream_fold"]


def evaluate_file_task(path: str, protocol: Protocol, n_rows: int, learner: Any,
                       params: Mapping[str, Any] | None, round_: int, fold: int, *,
                       chunk_rows: int = DEFAULT_CHUNK, sample: int = DEFAULT_SAMPLE,
                       predictions: bool = True, discretize_sample: int | None = None,
                       keep: Keep | None = None,
                       cluster: Callable[[], ContextManager[Any]] | None = None
                       ) -> list[tuple[FoldResult, np.ndarray]]:
    """One runner task on a data file read in chunks (`n_rows` rows with a class): the
    folds it evaluates, each with its test rows' classes.

    - k-fold CV (``fold`` < 0: the whole round `round_`) and holdout: `evaluate_kfold`;
      the folds carry loss sums, no rows — each scored chunk's predictions go to `keep`
      (in the file's order) when kept. With `cluster` (a context giving a Dask client, e.g.
      inside a Dask task), a round that `distributes` runs on the workers row group by row
      group. Wall seconds: the round's, shared in proportion to the folds' CPU seconds.
    - prequential: the stream's one fold over the windows it has in memory;
    - sampled and learning-curve folds: the fold's rows gathered in one pass
      (`gather_rows`), then the fold as in memory on them (the file's row indices)."""
    if protocol.kind in ("kfold", "holdout") and (fold < 0 or protocol.kind == "holdout"):
        return _round(path, protocol, n_rows, learner, params, round_, chunk_rows, sample,
                      keep if predictions else None, cluster)
    if protocol.kind == "prequential":
        header, _, _ = first_pass(path, chunk_rows, None, None, None, protocol.seed)
        result, y = stream_fold(class_known_windows(path, protocol.window, header), header,
                                n_rows, learner, params, fold_seed(protocol.seed, 0, 0),
                                predictions)
        return [(result, y)]
    return [_gathered(path, protocol, n_rows, learner, params, round_, fold, chunk_rows,
                      discretize_sample)]


@functools.lru_cache(maxsize=8)
def _plan(protocol: Protocol, n: int) -> dict:
    """The protocol's fold specs for `n` rows with a class (cached: a worker runs many
    tasks of one plan)."""
    return protocol.plan(n)


def _round(path: str, plan: Protocol, n_rows: int, learner: Any,
           params: Mapping[str, Any] | None, round_: int, chunk_rows: int, sample: int,
           keep: Keep | None, cluster: Callable[[], ContextManager[Any]] | None
           ) -> list[tuple[FoldResult, np.ndarray]]:
    """A k-fold round (or a holdout's one fold) as fold results with loss sums."""
    holdout = plan.kind == "holdout"  # its one fold: the plan's test rows (8 bytes a row)
    test = _plan(plan, n_rows)[(0, 0)].test if holdout else None
    wrapped = keep
    if keep is not None and holdout:  # (a holdout's fold is the protocol's fold 0)
        def wrapped(r, folds, idx, proba, y) -> None:
            keep(r, np.zeros_like(folds), idx, proba, y)
    wall = time.perf_counter()
    with (cluster() if cluster is not None and distributes(path, learner, params)
          else contextlib.nullcontext(None)) as client:
        res = evaluate_kfold(path, learner, params, folds=max(plan.folds, 2), rounds=1,
                             seed=plan.seed, test=test, chunk_rows=chunk_rows,
                             sample=sample, keep=wrapped, first_round=round_,
                             client=client)
    wall = time.perf_counter() - wall
    cpu = sum(f.train_cpu_seconds + f.test_cpu_seconds for f in res.folds) or 1.0
    none = np.zeros(0, np.int64)
    return [(FoldResult(round=f.round, fold=f.fold, test_index=none,
                        proba=np.zeros((0, res.header.n_classes)),
                        train_cpu_seconds=f.train_cpu_seconds,
                        test_cpu_seconds=f.test_cpu_seconds,
                        train_wall_seconds=wall * f.train_cpu_seconds / cpu,
                        test_wall_seconds=wall * f.test_cpu_seconds / cpu, n_train=f.n_train,
                        preprocessing=res.summary["preprocessing"], cuts=f.cuts,
                        model_bytes=f.model_bytes, iterations=f.iterations,
                        fit_report=f.fit_report,
                        peak_rss_bytes=res.summary["peak_rss_bytes"],
                        compile_seconds=res.summary["compile_seconds"] / len(res.folds),
                        sums=tuple(f.sums)), none) for f in res.folds]


def _gathered(path: str, plan: Protocol, n_rows: int, learner: Any,
              params: Mapping[str, Any] | None, round_: int, fold: int, chunk_rows: int,
              discretize_sample: int | None) -> tuple[FoldResult, np.ndarray]:
    """A sampled or learning-curve fold: its training and test rows gathered in one pass,
    then the fold as in memory on them — the same rows in the same order, so the same
    result; its test rows named by their indices in the file."""
    from workbench.evaluation.cv import protocol_fold  # (cv uses `prequential_fold`)

    spec = _plan(plan, n_rows)[(round_, fold)]
    wanted = np.union1d(spec.train, spec.test)
    rows = gather_rows(path, wanted, chunk_rows)
    local = FoldSpec(spec.round, spec.fold, np.searchsorted(wanted, spec.train),
                     np.searchsorted(wanted, spec.test))
    result = protocol_fold(rows, learner, params, plan, local, discretize_sample)
    y = rows.y[result.test_index]
    return dataclasses.replace(result, test_index=wanted[result.test_index]), y
