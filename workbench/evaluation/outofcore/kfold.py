"""r × k-fold cross-validation of a data file out of core, every fold in the same
passes.

The fold of a row is a seeded function of its index among the rows with a class
(`splits.row_folds`; in memory: a k-fold protocol with ``assignment: rows``), so the folds
are those of the same data in memory, whatever the chunking. Per round:

1. **Discretisation** (numeric attributes, the learner's MDL or EF): one pass fills a seeded
   reservoir per fold of ⌈sample / (k − 1)⌉ rows; training fold f's cut points are fitted on
   the other folds' reservoirs together — at most about `sample` of its rows (PAKDD 2014:
   MDL on ≤ 100,000 training rows; JMLR 2016: EF5 on a 100,000 sample), all of them when
   `sample` ≥ the training rows (then the cut points are those of the run in memory).
2. **Training.** The AnDE family (NB, A1DE…A3DE and their -S/-W variants) on data without
   per-fold cut points (all nominal) uses **count subtraction**: one pass counts each row
   once, into the table of the fold that tests it; fold f's training table is the total
   minus fold f's (counts are additive: the same counts as counting the other folds). Any
   other out-of-core learner — or per-fold cut points, under which a row's codes differ
   between folds — trains k models side by side in the learner's natural passes (KDB and
   TAN two, SKDB three, ASAODE two, BSEAODE one per elimination step, AnJE-SGD one per
   epoch), each pass reading the file once for all k folds. A pass that only adds up
   counts (`MultiPassLearner.additive_pass`: KDB's, TAN's and SKDB's structure counts and
   family counts) is shared by subtraction among the folds whose structure and cut points
   agree: each row counted once per distinct structure; SKDB's leave-one-out pass and the
   other learners' passes are not additive and stay side by side.
3. **Scoring.** One pass classifies each row with the model (and cut points) of its fold.

A holdout is the same with two folds (`evaluate_kfold(test=…)`, `Assignment`): the given
test rows are fold 1, the only fold trained (on the rest) and scored.

So r × k-fold CV reads the rows r × (1 + passes + 1) times, not r × k × (passes + 1), and
counts each row once per round under subtraction. The file itself is decoded once: its
first complete pass writes a raw copy of the chunks that every later pass reads
(`replay.Replay`; the file again where the disk has no room for it). Time per fold:
what the fold's own model
did (its counting or passes, its subtraction, its cut points, its classification) plus an
equal share of the shared reading and counting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from workbench.data.dataset import Dataset
from workbench.data.sources import Reservoir, table_kind
from workbench.discretize import fit_discretizer
from workbench.errors import WorkbenchError
from workbench.evaluation.metrics import pooled_metrics
from workbench.evaluation.outofcore.assignment import (Assignment, CVFold, Grouped, Keep,
                                                       fold_chunks)
from workbench.evaluation.outofcore.cluster import cv_distributed, parquet_only
from workbench.evaluation.outofcore.passes import (CPUClock, DEFAULT_CHUNK, DEFAULT_SAMPLE,
                                                   file_chunks, first_pass, fold_cpu,
                                                   out_of_core_model, refuse_early)
from workbench.evaluation.outofcore.replay import Replay
from workbench.evaluation.outofcore.scoring import score_pass
from workbench.evaluation.outofcore.side_by_side import train_side_by_side
from workbench.evaluation.outofcore.subtraction import subtracts, train_subtracting
from workbench.evaluation.pipeline import fold_seed, peak_rss, reset_peak_rss, warm_up
from workbench.jit import compile_clock

@dataclass
class CVResult:
    """The folds, the pooled summary (``subtraction`` says how the folds trained) and the
    file's header."""

    folds: list[CVFold]
    summary: dict[str, Any]
    header: Dataset | None = None


def distributes(path, learner: Any, params: Mapping[str, Any] | None) -> bool:
    """Whether k-fold CV of `learner` on `path` can run on Dask workers row group by row
    group (`evaluate_kfold(client=…)`): a Parquet file and a learner of one additive pass
    (NB and the AnDE family). Otherwise a round runs whole where it is called."""
    try:
        model = out_of_core_model(learner, params, None, one_pass=True)
    except WorkbenchError:
        return False
    return (table_kind(path) == "parquet" and hasattr(model, "start")
            and hasattr(model, "merge"))


def evaluate_kfold(path, learner: Any, params: Mapping[str, Any] | None = None, *,
                   folds: int = 10, rounds: int = 1, seed: int = 1,
                   chunk_rows: int = DEFAULT_CHUNK, sample: int = DEFAULT_SAMPLE,
                   class_column: str | None = None, keep: Keep | None = None,
                   client: Any = None, first_round: int = 0,
                   test: np.ndarray | None = None) -> CVResult:
    """r × k-fold CV of `learner` on the file out of core (see the module docstring);
    `keep` receives every test row's probabilities (e.g. to stream them to Parquet). With
    a Dask `client` (a Parquet file, a one-pass learner), each row group's fold tables are
    counted on a worker, added up in a tree on the workers, and the row groups scored
    there (`cv_distributed`); fold times are then the workers' CPU seconds. Rounds
    `first_round` … `first_round + rounds − 1` are run (a runner task runs one). With
    `test` (sorted indices among the rows with a class) it is a holdout instead: those rows
    test (fold 1), the others train (`Assignment`)."""
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise WorkbenchError(f"k-fold CV: folds must be an integer >= 2, got {folds!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise WorkbenchError(f"k-fold CV: rounds must be an integer >= 1, got {rounds!r}")
    if test is not None:
        folds = 2
    assign = Assignment(folds, seed, None if test is None else np.asarray(test, np.int64))
    probe = out_of_core_model(learner, params, seed, one_pass=client is not None)
    if client is not None:
        parquet_only(path)
    method = str(getattr(probe, "preprocessing", "none") or "none")
    reset_peak_rss()
    whole = CPUClock()  # (the whole run's CPU, first loads left out)
    # fold tables, their total and a subtraction's copy (on a Dask worker: two row
    # groups' k fold models and their sum)
    refuse_early(path, probe, class_column, (3 if client is not None else 1) * folds + 2)
    header, total, _ = first_pass(path, chunk_rows, class_column, None, None, seed)
    if method != "none" and header.is_all_nominal:
        method = "none"
    first = next((c for _, c in file_chunks(path, chunk_rows, header, class_column)), None)
    if first is not None:  # kernels compiled / loaded untimed, as `run_fold` does
        warm_up(f"{learner}|{sorted((params or {}).items())!r}", learner, params, seed,
                first.take(np.flatnonzero(first.y >= 0)))
        Grouped()(first, np.zeros(first.n_instances, dtype=np.int64), folds)  # (kernel)
    # the file decoded once, its later passes read from a compact copy (`Replay`)
    # (with Dask, only the sample pass is read here: no copy)
    src = Replay(path, chunk_rows, header, total, class_column, copy=client is None)
    if first is not None:
        src.warm_up(first)
    clock = compile_clock()
    jit0 = clock.read()
    out: list[CVFold] = []
    try:
        passes, subtraction = _rounds(src, path, learner, params, seed, assign, header, total,
                                      method, sample, first_round, rounds, client, keep, out)
    finally:
        src.close()
    sums = [f.sums for f in out]
    summary = {"rows": total, "rounds": rounds, "folds": folds, "passes": passes,
               "replayed": src.replayed,
               "subtraction": bool(subtraction), "preprocessing": method,
               "discretize_sample": None if method == "none" else sample,
               "n_test": sum(s.n for s in sums),
               "train_cpu_seconds": sum(f.train_cpu_seconds for f in out),
               "test_cpu_seconds": sum(f.test_cpu_seconds for f in out),
               "cpu_seconds": whole.cpu_seconds(), "peak_rss_bytes": peak_rss(),
               "compile_seconds": (clock.read() - jit0).cpu_seconds,
               **pooled_metrics(sums, header.n_classes)}
    return CVResult(out, summary, header)


def _rounds(src: Replay, path, learner, params, seed: int, assign: Assignment,
            header: Dataset, total: int, method: str, sample: int, first_round: int,
            rounds: int, client: Any, keep: Keep | None, out: list[CVFold]
            ) -> tuple[int, bool | None]:
    """The rounds' folds appended to `out`; returns the passes read and whether the folds
    trained by subtraction."""
    folds, scored = assign.folds, assign.scored
    passes = 1
    subtraction = None
    for r in range(first_round, first_round + rounds):
        res = None if method == "none" else fold_reservoirs(src, assign, r, sample)
        cpu = fold_cpu()
        discs = None if res is None else fold_discretizers(method, res, scored)
        shared_disc = fold_cpu() - cpu
        cv = [CVFold(r, assign.fold_id(f)) for f in range(folds)]
        for f, fold in enumerate(cv):
            fold.train_cpu_seconds += shared_disc / len(scored)
            if discs is not None and discs[f] is not None:
                fold.cuts = {str(k): [float(c) for c in v]
                             for k, v in getattr(discs[f], "cuts", {}).items()}
        models = [out_of_core_model(learner, params, fold_seed(seed, r, assign.fold_id(f)))
                  for f in range(folds)]
        subtraction = subtracts(models[0], discs)
        if client is not None:
            models = cv_distributed(client, path, learner, params, assign, header, discs,
                                    cv, r, total, subtraction, keep)
            n_passes = 2  # (counting and scoring on the workers)
            passes += (res is not None) + n_passes
            out.extend(cv[f] for f in scored)
            continue
        if subtraction:
            n_passes = train_subtracting(src, models, cv, assign, r, total)
        else:
            n_passes, subtraction = train_side_by_side(src, models, cv, discs, assign, r)
        score_pass(src, models, cv, discs, assign, r, keep)
        for f in scored:
            fold, m = cv[f], models[f]
            fold.model_bytes = m.model_bytes() if hasattr(m, "model_bytes") else None
            fold.fit_report = m.fit_report() if hasattr(m, "fit_report") else None
            fold.iterations = m.iterations() if hasattr(m, "iterations") else None
        passes += (res is not None) + n_passes + 1
        out.extend(cv[f] for f in scored)
        del models
    return passes, subtraction


def fold_reservoirs(src: Replay, assign: Assignment, round_: int, sample: int
                    ) -> list[Reservoir]:
    """One seeded reservoir per fold of ⌈sample / (k − 1)⌉ of its rows."""
    folds, seed = assign.folds, assign.seed
    size = max(1, math.ceil(sample / (folds - 1)))
    res = [Reservoir(size, seed=(seed, round_, f)) for f in range(folds)]  # type: ignore[arg-type]
    for part, _, fold in fold_chunks(src, assign, round_):
        for f in range(folds):
            rows = np.flatnonzero(fold == f)
            if rows.size:
                res[f].add(part.take(rows))
    return res


def fold_discretizers(method: str, res: list[Reservoir], scored: list[int]
                      ) -> list[Any]:
    """Fold f's discretiser (f scored), fitted on the reservoirs of every other fold
    together (None for a fold not scored)."""
    out: list[Any] = []
    for f in range(len(res)):
        if f not in scored:
            out.append(None)
            continue
        parts = [r for g, r in enumerate(res) if g != f and r.seen]
        if not parts:
            raise WorkbenchError("k-fold CV: a training fold has no rows with a class")
        head = parts[0].header
        sample = head.replace(X=np.vstack([r.X for r in parts]),
                              y=np.concatenate([r.y for r in parts]))
        out.append(fit_discretizer(method, sample))
    return out
