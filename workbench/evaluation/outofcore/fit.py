"""One model trained on a file out of core (`fit_file`; on Dask workers by row group)
and a holdout evaluated with it (`evaluate_holdout`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from workbench.data.dataset import Dataset
from workbench.discretize import fit_discretizer
from workbench.errors import WorkbenchError
from workbench.evaluation.metrics import LossSums, loss_sums, pooled_metrics
from workbench.evaluation.outofcore.cluster import (fit_distributed, parquet_only,
                                                    score_distributed)
from workbench.evaluation.outofcore.passes import (CPUClock, DEFAULT_CHUNK, DEFAULT_SAMPLE,
                                                   Holdout, file_chunks, first_pass,
                                                   holdout_rows, out_of_core_model,
                                                   refuse_early, scored_proba)
from workbench.evaluation.outofcore.replay import Replay
from workbench.evaluation.pipeline import peak_rss, reset_peak_rss
from workbench.learners.base import trains_in_passes

@dataclass
class OutOfCoreResult:
    """What one out-of-core run gives: the summary (metrics and measurements), for a
    prequential run the per-window values, and the fitted model and discretiser."""

    summary: dict[str, Any]
    windows: list[dict[str, Any]] = field(default_factory=list)
    model: Any = None
    discretizer: Any = None
    header: Dataset | None = None  # the file's header, missing flags of the whole file


def fit_file(path, learner: Any, params: Mapping[str, Any] | None = None, *,
             chunk_rows: int = DEFAULT_CHUNK, sample: int = DEFAULT_SAMPLE, seed: int = 1,
             holdout: Holdout | None = None, class_column: str | None = None,
             client: Any = None) -> OutOfCoreResult:
    """Train `learner` on the file's training rows (all rows, or those `holdout` leaves)
    out of core; `summary` has rows, chunks, CPU seconds, model bytes and peak memory.
    With a Dask `client`, the row groups of a Parquet file are counted on the workers and
    the counts added up (counts are additive: the same model as counting here)."""
    model = out_of_core_model(learner, params, seed, one_pass=client is not None)
    method = str(getattr(model, "preprocessing", "none") or "none")
    reset_peak_rss()
    clock = CPUClock()
    if client is not None:
        parquet_only(path)
    refuse_early(path, model, class_column, 3 if client is not None else 1)  # (a merge:
    # two partial models and their sum on a worker)
    header, total, res = first_pass(path, chunk_rows, class_column, holdout,
                                    None if method == "none" else sample, seed, client)
    if method != "none" and header.is_all_nominal:
        method = "none"  # nothing to discretise: no cut points, no sample
    disc = None
    if method != "none":
        if res is None or res.seen == 0:
            raise WorkbenchError(f"{path}: no training rows with a known class")
        disc = fit_discretizer(method, res.sample())
    if client is not None:
        model, n_train, chunks = fit_distributed(client, path, learner, params, seed,
                                                 header, disc, holdout, total)
        summary = {"rows": total, "n_train": n_train, "chunks": chunks, "passes": 2,
                   "partitions": chunks, "train_cpu_seconds": clock.cpu_seconds(),
                   "compile_seconds": clock.compile_seconds(),
                   "model_bytes": model.model_bytes(), "peak_rss_bytes": peak_rss(),
                   "preprocessing": method,
                   "discretize_sample": None if disc is None else min(sample, res.seen)}
        return OutOfCoreResult(summary, model=model, discretizer=disc, header=header)
    multi = trains_in_passes(model)
    if multi:
        model.begin(disc.transform(header) if disc is not None else header)
    # a learner of several passes decodes the file once (`Replay`: the later passes read
    # a raw copy of the chunks)
    src = Replay(path, chunk_rows, header, total, class_column, copy=multi)
    p = 0
    try:
        while p == 0 or (multi and model.training):
            n_train = chunks = 0
            for start, chunk in src.chunks():
                keep = holdout_rows(chunk, start, total, holdout)
                part = chunk if keep.all() else chunk.take(np.flatnonzero(keep))
                if part.n_instances:
                    part = disc.transform(part) if disc is not None else part
                    model.learn(p, part) if multi else model.partial_fit(part)
                    n_train += part.n_instances
                chunks += 1
            if n_train == 0:
                raise WorkbenchError(f"{path}: no training rows with a known class")
            if multi:
                model.end_pass(p)
            p += 1
    finally:
        src.close()
    summary = {"rows": total, "n_train": n_train, "chunks": chunks,
               "passes": 1 + p, "replayed": src.replayed,
               "train_cpu_seconds": clock.cpu_seconds(),
               "compile_seconds": clock.compile_seconds(),
               "model_bytes": model.model_bytes() if hasattr(model, "model_bytes") else None,
               "peak_rss_bytes": peak_rss(), "preprocessing": method,
               "discretize_sample": None if disc is None else min(sample, res.seen)}
    return OutOfCoreResult(summary, model=model, discretizer=disc, header=header)


def evaluate_holdout(path, learner: Any, params: Mapping[str, Any] | None = None, *,
                     holdout: Holdout, chunk_rows: int = DEFAULT_CHUNK,
                     sample: int = DEFAULT_SAMPLE, seed: int = 1,
                     class_column: str | None = None, client: Any = None) -> OutOfCoreResult:
    """Train out of core on the rows `holdout` leaves, then predict its test rows. With a
    Dask `client` (Parquet), the row groups are counted and then scored on the workers."""
    fitted = fit_file(path, learner, params, chunk_rows=chunk_rows, sample=sample,
                      seed=seed, holdout=holdout, class_column=class_column, client=client)
    model, disc, total = fitted.model, fitted.discretizer, fitted.summary["rows"]
    header = fitted.header
    sums: list[LossSums] = []
    clock = CPUClock()
    if client is not None:
        sums = score_distributed(client, path, model, header, disc, holdout, total)
    else:
        for start, chunk in file_chunks(path, chunk_rows, header, class_column):
            test = holdout_rows(chunk, start, total, holdout, test=True)
            if not test.any():
                continue
            part = chunk.take(np.flatnonzero(test))
            sums.append(loss_sums(scored_proba(model, disc, part), part.y))
    summary = dict(fitted.summary)
    summary["passes"] += 1
    summary["test_cpu_seconds"] = clock.cpu_seconds()
    summary["compile_seconds"] += clock.compile_seconds()
    summary["n_test"] = sum(s.n for s in sums)
    summary["holdout"] = (f"every:{holdout.every}" if holdout.every is not None
                          else f"last:{holdout.last}")
    summary.update(pooled_metrics(sums, header.n_classes))
    summary["peak_rss_bytes"] = peak_rss()
    return OutOfCoreResult(summary, model=model, discretizer=disc, header=header)
