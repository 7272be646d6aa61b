"""r × k-fold cross-validation of a data file out of core, every fold in the same passes.

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
(`data.replay.Replay`; the file again where the disk has no room for it). Time per fold: what the fold's own model
did (its counting or passes, its subtraction, its cut points, its classification) plus an
equal share of the shared reading and counting.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from workbench.data.dataset import Dataset
from workbench.data.replay import Replay
from workbench.data.sources import Reservoir, table_kind
from workbench.discretize import fit_discretizer
from workbench.errors import WorkbenchError
from workbench.fileio import PARQUET_OPTIONS
from workbench.evaluation.metrics import LossSums, loss_sums, pooled_metrics
from workbench.evaluation.outofcore import (DEFAULT_CHUNK, DEFAULT_SAMPLE, CPUClock, _chunks,
                                            out_of_core_model, _first_pass, _multi_pass,
                                            _parquet_only, _refuse_early, _row_group,
                                            _row_group_starts, _scored)
from workbench.evaluation.pipeline import _warm_up, fold_seed, peak_rss, reset_peak_rss
from workbench.jit import compile_clock
from workbench.evaluation.splits import row_folds

__all__ = ["CVFold", "CVResult", "PredictionWriter", "evaluate_kfold", "rows_with_class"]

Keep = Callable[[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray], None]
"""keep(round, folds, row indices among the rows with a class, probabilities, classes):
once per scored chunk, its rows in the file's order (each with its fold)."""


@dataclass
class CVFold:
    """One (round, fold) of an out-of-core CV: its sizes, loss sums, metrics and times."""

    round: int
    fold: int
    n_train: int = 0
    sums: LossSums = LossSums(0, 0, 0.0, 0.0, 0.0)
    train_cpu_seconds: float = 0.0
    test_cpu_seconds: float = 0.0
    model_bytes: int | None = None
    cuts: dict | None = None
    fit_report: dict | None = None  # the fold model's `fit_report()` (e.g. selection)
    iterations: float | None = None  # the fold model's `iterations()`

    def metrics(self, n_classes: int) -> dict[str, float]:
        return pooled_metrics([self.sums], n_classes)


@dataclass
class CVResult:
    """The folds, the pooled summary (``subtraction`` says how the folds trained) and the
    file's header."""

    folds: list[CVFold]
    summary: dict[str, Any]
    header: Dataset | None = None


def _cpu() -> float:
    """Process CPU seconds less numba's compilation and kernel loads so far: the fold
    timers' clock (a kernel first needed in the middle of a pass is not the fold's work)."""
    return time.process_time() - compile_clock().read().cpu_seconds


def rows_with_class(path, chunk_rows: int = DEFAULT_CHUNK, class_column: str | None = None
                    ) -> tuple[Dataset, int]:
    """The file's header (missing flags of the whole file) and its rows with a class —
    what a run checks before planning folds, without loading the data."""
    header, _, _ = _first_pass(path, chunk_rows, class_column, None, None, 1)
    n = sum(int((chunk.y >= 0).sum()) for _, chunk in _chunks(path, chunk_rows, header,
                                                             class_column))
    return header, n


@dataclass(frozen=True, eq=False)
class Assignment:
    """Which fold tests each row with a class: `splits.row_folds` (k-fold CV), or with
    `test` (sorted row indices) a holdout — fold 1 the test rows, fold 0 the rest, only
    fold 1 trained on the others and scored."""

    folds: int
    seed: int
    test: np.ndarray | None = None

    def of(self, index: int, n: int, round_: int) -> np.ndarray:
        """Folds of rows index .. index + n − 1 (among the rows with a class)."""
        if self.test is None:
            return row_folds(index, n, self.folds, self.seed, round_)
        lo, hi = np.searchsorted(self.test, [index, index + n])
        out = np.zeros(n, dtype=np.int64)
        out[self.test[lo:hi] - index] = 1
        return out

    def fold_id(self, f: int) -> int:
        """The protocol's fold number of fold f (a holdout's one fold is fold 0)."""
        return f if self.test is None else 0

    @property
    def scored(self) -> list[int]:
        return list(range(self.folds)) if self.test is None else [1]


def _class_known(chunk: Dataset, index: int, assign: Assignment, round_: int
                 ) -> tuple[Dataset, np.ndarray, np.ndarray]:
    """The chunk's rows with a class, their indices among such rows (from `index`) and
    their folds."""
    keep = chunk.y >= 0
    part = chunk if keep.all() else chunk.take(np.flatnonzero(keep))
    idx = np.arange(index, index + part.n_instances, dtype=np.int64)
    return part, idx, assign.of(index, part.n_instances, round_)


def _fold_chunks(src: Replay, assign: Assignment, round_: int
                 ) -> Iterator[tuple[Dataset, np.ndarray, np.ndarray]]:
    """Each chunk's rows with a class, their indices among such rows and their folds."""
    index = 0
    for _, chunk in src.chunks():
        part, idx, fold = _class_known(chunk, index, assign, round_)
        index += part.n_instances
        yield part, idx, fold


class _Grouped:
    """Rows grouped by fold (`gather.group_rows`: one copy, each fold's rows then a view,
    in row order), written into one value buffer kept from chunk to chunk: a fresh
    chunk-sized matrix per chunk is a fresh mapping of memory, and faulting its pages in
    cost more system time than the copy. A group is used before the next chunk's."""

    def __init__(self) -> None:
        self._X = np.empty((0, 0))

    def __call__(self, part: Dataset, fold: np.ndarray, k: int
                 ) -> tuple[Dataset, np.ndarray, np.ndarray]:
        """The grouped rows, the order taken and the k + 1 bounds of the groups."""
        from workbench.data.gather import group_rows  # numba: not on the import path

        n, d = part.X.shape
        if self._X.shape[0] < n or self._X.shape[1] != d:
            self._X = np.empty((n, d))
        X = self._X[:n]
        y = np.empty_like(part.y)
        order = np.empty(n, dtype=np.int64)
        bounds = group_rows(part.X, part.y, fold, k, X, y, order)
        return part.replace(X=X, y=y), order, bounds


def _rows_of(grouped: Dataset, bounds: np.ndarray, f: int) -> Dataset:
    lo, hi = int(bounds[f]), int(bounds[f + 1])
    return grouped.replace(X=grouped.X[lo:hi], y=grouped.y[lo:hi])


def _reservoirs(src: Replay, assign: Assignment, round_: int, sample: int
                ) -> list[Reservoir]:
    """One seeded reservoir per fold of ⌈sample / (k − 1)⌉ of its rows."""
    folds, seed = assign.folds, assign.seed
    size = max(1, math.ceil(sample / (folds - 1)))
    res = [Reservoir(size, seed=(seed, round_, f)) for f in range(folds)]  # type: ignore[arg-type]
    for part, _, fold in _fold_chunks(src, assign, round_):
        for f in range(folds):
            rows = np.flatnonzero(fold == f)
            if rows.size:
                res[f].add(part.take(rows))
    return res


def _fold_discretizers(method: str, res: list[Reservoir], scored: list[int]
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


def _subtracts(model: Any, discs: list[Any] | None) -> bool:
    """Count subtraction applies: an additive one-pass model (`start`/`merge`) and the same
    codes in every fold (no per-fold cut points)."""
    return discs is None and hasattr(model, "start") and hasattr(model, "merge") \
        and not _multi_pass(model)


def distributes(path, learner: Any, params: Mapping[str, Any] | None) -> bool:
    """Whether k-fold CV of `learner` on `path` can run on Dask workers row group by row
    group (`evaluate_kfold(client=…)`): a Parquet file and a learner of one additive pass
    (NB and the AnDE family). Otherwise a round runs whole where it is called."""
    try:
        model = out_of_core_model(learner, params, None, one_pass=True)
    except WorkbenchError:
        return False
    return table_kind(path) == "parquet" and hasattr(model, "start") and hasattr(model, "merge")


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
    there (`_cv_distributed`); fold times are then the workers' CPU seconds. Rounds
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
        _parquet_only(path)
    method = str(getattr(probe, "preprocessing", "none") or "none")
    reset_peak_rss()
    whole = CPUClock()  # (the whole run's CPU, first loads left out)
    # fold tables, their total and a subtraction's copy (on a Dask worker: two row
    # groups' k fold models and their sum)
    _refuse_early(path, probe, class_column, (3 if client is not None else 1) * folds + 2)
    header, total, _ = _first_pass(path, chunk_rows, class_column, None, None, seed)
    if method != "none" and header.is_all_nominal:
        method = "none"
    first = next((c for _, c in _chunks(path, chunk_rows, header, class_column)), None)
    if first is not None:  # kernels compiled / loaded untimed, as `run_fold` does
        _warm_up(f"{learner}|{sorted((params or {}).items())!r}", learner, params, seed,
                 first.take(np.flatnonzero(first.y >= 0)))
        _Grouped()(first, np.zeros(first.n_instances, dtype=np.int64), folds)  # (kernel)
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
        res = None if method == "none" else _reservoirs(src, assign, r, sample)
        cpu = _cpu()
        discs = None if res is None else _fold_discretizers(method, res, scored)
        shared_disc = _cpu() - cpu
        cv = [CVFold(r, assign.fold_id(f)) for f in range(folds)]
        for f, fold in enumerate(cv):
            fold.train_cpu_seconds += shared_disc / len(scored)
            if discs is not None and discs[f] is not None:
                fold.cuts = {str(k): [float(c) for c in v]
                             for k, v in getattr(discs[f], "cuts", {}).items()}
        models = [out_of_core_model(learner, params, fold_seed(seed, r, assign.fold_id(f)))
                  for f in range(folds)]
        subtraction = _subtracts(models[0], discs)
        if client is not None:
            models = _cv_distributed(client, path, learner, params, assign, header, discs,
                                     cv, r, total, subtraction, keep)
            n_passes = 2  # (counting and scoring on the workers)
            passes += (res is not None) + n_passes
            out.extend(cv[f] for f in scored)
            continue
        if subtraction:
            n_passes = _train_subtracting(src, models, cv, assign, r, total)
        else:
            n_passes, subtraction = _train_side_by_side(src, models, cv, discs, assign, r)
        _score(src, models, cv, discs, assign, r, keep)
        for f in scored:
            fold, m = cv[f], models[f]
            fold.model_bytes = m.model_bytes() if hasattr(m, "model_bytes") else None
            fold.fit_report = m.fit_report() if hasattr(m, "fit_report") else None
            fold.iterations = m.iterations() if hasattr(m, "iterations") else None
        passes += (res is not None) + n_passes + 1
        out.extend(cv[f] for f in scored)
        del models
    return passes, subtraction


def _train_subtracting(src: Replay, models, cv, assign, round_, total) -> int:
    """One counting pass (each row into its own fold's table), then fold f's training
    table = total − fold f's. Returns the passes read (1)."""
    k = len(models)
    for m in models:
        m.start(src.header, total)
    own = np.zeros(k)
    n_train = np.zeros(k, dtype=np.int64)
    cpu = _cpu()
    index = 0
    by_fold = _Grouped()
    for part, _, fold in _fold_chunks(src, assign, round_):
        index += part.n_instances
        grouped, _, bounds = by_fold(part, fold, k)
        for f in range(k):
            if bounds[f + 1] > bounds[f]:
                t = _cpu()
                models[f].partial_fit(_rows_of(grouped, bounds, f))
                own[f] += _cpu() - t
                n_train[f] += bounds[f + 1] - bounds[f]
    shared = _cpu() - cpu
    cpu = _cpu()
    whole = copy.deepcopy(models[0])
    for m in models[1:]:
        whole.merge(m)
    shared += _cpu() - cpu
    for f in assign.scored:
        t = _cpu()
        train = copy.deepcopy(whole).merge(models[f], sign=-1)
        models[f] = train
        cv[f].train_cpu_seconds += _cpu() - t + shared / len(assign.scored)
        cv[f].n_train = int(index - n_train[f])
    return 1


def _train_side_by_side(src: Replay, models, cv, discs, assign, round_) -> tuple[int, bool]:
    """k models trained in the learner's passes, each pass one read of the file for all
    folds (fold f's model learns the rows of the other folds, with its cut points); an
    additive pass (`MultiPassLearner.additive_pass`) is shared by the models whose counts
    agree (`_shared_pass`). Returns the passes read and whether one was shared."""
    k = len(models)
    sharing = False
    multi = _multi_pass(models[0])
    active = assign.scored
    if multi:
        for f in active:
            models[f].begin(discs[f].transform(src.header) if discs is not None
                            else src.header)
    p = 0
    while active:
        own = np.zeros(k)
        n_train = np.zeros(k, dtype=np.int64)
        cpu = _cpu()
        if multi and _families(models, active, cv, p):
            alone = _family_pass(src, models, assign, round_, p, own, n_train)
        elif multi and models[active[0]].additive_pass(p):
            alone = _shared_pass(src, models, cv, discs, assign, round_, p, own, n_train)
        else:
            alone = active
        sharing = sharing or len(alone) < len(active)
        for part, _, fold in (_fold_chunks(src, assign, round_) if alone else ()):
            for f in alone:
                rows = np.flatnonzero(fold != f)
                if not rows.size:
                    continue
                t = _cpu()
                rows_f = part.take(rows)
                rows_f = discs[f].transform(rows_f) if discs is not None else rows_f
                models[f].learn(p, rows_f) if multi else models[f].partial_fit(rows_f)
                own[f] += _cpu() - t
                n_train[f] += rows.size
        for f in active:
            if n_train[f] == 0:
                raise WorkbenchError(f"{src.path}: fold {f + 1} has no training rows with "
                                     "a class")
            t = _cpu()
            if multi:
                models[f].end_pass(p)
            own[f] += _cpu() - t
        shared = _cpu() - cpu - own.sum()
        for f in active:
            cv[f].train_cpu_seconds += own[f] + shared / len(active)
            cv[f].n_train = int(n_train[f])
        active = [f for f in active if multi and models[f].training]
        p += 1
    return p, sharing


def _shared_pass(src: Replay, models, cv, discs, assign, round_, p: int, own: np.ndarray,
                 n_train: np.ndarray) -> list[int]:
    """Additive pass `p` by count subtraction: the models whose `pass_key` and cut points
    agree form a group; in one read each row is counted once per group, into its own
    fold's count (under the group's structure), and model f's pass-p counts are the total
    less fold f's — each row counted once per distinct structure, not k − 1 times. What
    cannot be shared: a model whose structure (or cut points) no other fold has — it
    learns its training rows itself (returned) — and a non-additive pass (SKDB's
    leave-one-out losses). Counting time is split equally within a group."""
    k = len(models)
    groups: dict[Any, list[int]] = {}
    for f in assign.scored:
        groups.setdefault((models[f].pass_key(p), _cut_key(cv[f])), []).append(f)
    shared = [g for g in groups.values() if len(g) > 1]
    if not shared:
        return assign.scored
    by_fold = _Grouped()
    counts = [[copy.deepcopy(models[g[0]]) for _ in range(k)] for g in shared]
    rows = np.zeros(k, dtype=np.int64)
    cpu = _cpu()
    for part, _, fold in _fold_chunks(src, assign, round_):
        rows += np.bincount(fold, minlength=k)
        for g, acc in zip(shared, counts):
            f0 = g[0]
            mine = discs[f0].transform(part) if discs is not None else part
            grouped, _, bounds = by_fold(mine, fold, k)
            for h in range(k):
                if bounds[h + 1] > bounds[h]:
                    acc[h].learn(p, _rows_of(grouped, bounds, h))
    spent = (_cpu() - cpu) / sum(len(g) for g in shared)
    for g, acc in zip(shared, counts):
        t = _cpu()
        total = copy.deepcopy(acc[0])
        for part_counts in acc[1:]:
            total.merge_pass(p, part_counts)
        merged = (_cpu() - t) / len(g)
        for f in g:
            t = _cpu()
            models[f].merge_pass(p, total).merge_pass(p, acc[f], sign=-1)
            own[f] += _cpu() - t + spent + merged
            n_train[f] = rows.sum() - rows[f]
    return [f for g in groups.values() if len(g) == 1 for f in g]


def _families(models, active: list[int], cv, p: int) -> bool:
    """Pass `p` counts families' tuples (`family_columns`), every fold has the same codes
    (cut points) and there are several models (a holdout's one model counts its own
    training rows)."""
    return len(active) > 1 and len({_cut_key(cv[f]) for f in active}) == 1 and all(
        getattr(models[f], "family_columns", lambda p: None)(p) is not None for f in active)


FAMILY_SPACE = 1 << 22
"""The largest tuple space (beyond the rows counted) of one joint family count: larger
unions of the folds' parents are split (`_family_pass`)."""


def _family_pass(src: Replay, models, assign, round_, p: int, own: np.ndarray,
                 n_train: np.ndarray) -> list[int]:
    """A pass of family counts (KDB's, TAN's, SKDB's second) for every fold at once, what
    differs between folds being only the parents chosen: per attribute, the tuples of
    the union of the folds' families, the class and the row's fold are counted once per
    row; fold f's family counts are then those tuples of the other folds, summed over the
    parents its model does not use (integer counts: exactly the counts of its training
    rows). The folds whose union would exceed `FAMILY_SPACE` tuples (beyond the rows) are
    counted in several such joint counts. So a row is counted about once per attribute,
    as in one fit, not k − 1 times."""
    k = len(models)
    scored = assign.scored
    head = models[scored[0]]
    declared = head._declared  # (the same header for every fold)
    K = head.n_classes_
    fams = {f: models[f].family_columns(p) for f in scored}
    joints = []  # (attribute, columns, folds, TupleCounts of columns + class + fold)
    for a in fams[scored[0]]:
        group: list[int] = []
        cols: set[int] = set()
        for f in sorted(scored, key=lambda f: fams[f][a]):
            more = cols | set(fams[f][a])
            space = np.prod([float(declared[c] + 1) for c in more]) * K * k
            if group and space > max(FAMILY_SPACE, src.rows):
                joints.append(_joint(a, cols, group, declared, K, k))
                group, more = [], set(fams[f][a])
            group.append(f)
            cols = more
        joints.append(_joint(a, cols, group, declared, K, k))
    rows = np.zeros(k, dtype=np.int64)
    cpu = _cpu()
    for part, _, fold in _fold_chunks(src, assign, round_):
        rows += np.bincount(fold, minlength=k)
        codes = part.column_codes(np.int64)
        for c in range(codes.shape[0]):
            codes[c][codes[c] < 0] = declared[c]
        for _, cols, _, counts in joints:
            counts.add(np.column_stack([*(codes[c] for c in cols), part.y, fold]))
    spent = (_cpu() - cpu) / len(scored)
    for a, cols, group, counts in joints:
        tuples, weights = counts.decode(), counts.counts
        at = {c: i for i, c in enumerate(cols)}
        for f in group:
            t = _cpu()
            mine = tuples[:, -1] != f
            take = [at[c] for c in fams[f][a]] + [len(cols)]
            models[f].set_family_counts(a, tuples[mine][:, take], weights[mine])
            own[f] += _cpu() - t
    for f in scored:
        own[f] += spent
        n_train[f] = rows.sum() - rows[f]
    return []


def _joint(a: int, cols: set[int], group: list[int], declared: np.ndarray, K: int, k: int
           ) -> tuple[int, list[int], list[int], Any]:
    from workbench.learners.tuples import TupleCounts

    order = sorted(cols)
    return a, order, group, TupleCounts([int(declared[c]) + 1 for c in order] + [K, k])


def _cut_key(fold: CVFold) -> Any:
    """A fold's cut points as a hashable key (equal cut points: equal codes)."""
    return tuple(sorted((a, tuple(c)) for a, c in (fold.cuts or {}).items()))


def _score(src: Replay, models, cv, discs, assign, round_, keep: Keep | None) -> None:
    """One pass: each row classified by its fold's model (and cut points)."""
    k = len(models)
    sums: list[list[LossSums]] = [[] for _ in range(k)]
    own = np.zeros(k)
    cpu = _cpu()
    by_fold = _Grouped()
    for part, idx, fold in _fold_chunks(src, assign, round_):
        grouped, order, bounds = by_fold(part, fold, k)
        kept = []
        for f in assign.scored:
            if bounds[f + 1] == bounds[f]:
                continue
            t = _cpu()
            test = _rows_of(grouped, bounds, f)
            proba = _scored(models[f], None if discs is None else discs[f], test)
            own[f] += _cpu() - t
            sums[f].append(loss_sums(proba, test.y))
            if keep is not None:
                kept.append((np.full(test.y.size, f), idx[order[bounds[f]:bounds[f + 1]]],
                             proba, test.y))
        if kept:  # the chunk's rows in the file's order, whatever their folds
            folds, rows, proba, y = (np.concatenate(part) for part in zip(*kept))
            back = np.argsort(rows, kind="stable")
            keep(round_, folds[back], rows[back], proba[back], y[back])
    shared = _cpu() - cpu - own.sum()
    for f in assign.scored:
        cv[f].sums = LossSums(*(sum(col) for col in zip(*sums[f]))) if sums[f] else cv[f].sums
        cv[f].test_cpu_seconds += own[f] + shared / len(assign.scored)


class PredictionWriter:
    """A `Keep` that streams every test row's prediction to a Parquet file — round, fold,
    index (among the rows with a class), class, predicted class and one probability column
    per class — a row group per scored part, so memory stays that of one chunk."""

    def __init__(self, path, class_names: list[str]) -> None:
        self.path = path
        self.names = [f"p_{c}" for c in class_names]
        self._writer = None

    def __call__(self, round_: int, fold: np.ndarray, idx: np.ndarray, proba: np.ndarray,
                 y: np.ndarray) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        n = idx.size
        cols = {"round": pa.array(np.full(n, round_, dtype=np.int32)),
                "fold": pa.array(np.asarray(fold, dtype=np.int32)),
                "index": pa.array(idx.astype(np.int64)), "y": pa.array(y.astype(np.int32)),
                "predicted": pa.array(np.argmax(proba, axis=1).astype(np.int32))}
        cols.update({name: pa.array(proba[:, j]) for j, name in enumerate(self.names)})
        table = pa.table(cols)
        if self._writer is None:
            self._writer = pq.ParquetWriter(str(self.path), table.schema, **PARQUET_OPTIONS)
        self._writer.write_table(table)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


# ----- on Dask workers -------------------------------------------------------------------------
def _group_rows_with_class(path: str, group: int, header: Dataset) -> int:
    """Rows with a class in one row group (on a worker): the fold index offsets."""
    return int(_row_group(path, group, 0, 0, header, None, test=False).n_instances)


def _count_folds(path: str, group: int, index: int, learner: Any, params: Mapping[str, Any],
                 assign: Assignment, header: Dataset, discs: list[Any] | None, round_: int,
                 rows_hint: int, subtraction: bool) -> tuple[list[Any], float]:
    """One row group's fold models (on a worker): each row into its own fold's model
    under subtraction, else into every other scored fold's model with that fold's cut
    points (None for a fold neither needs)."""
    cpu = _cpu()
    part = _row_group(path, group, 0, 0, header, None, test=False)
    fold = assign.of(index, part.n_instances, round_)
    models: list[Any] = []
    for f in range(assign.folds):
        if not subtraction and f not in assign.scored:
            models.append(None)
            continue
        m = out_of_core_model(learner, dict(params), fold_seed(assign.seed, round_, assign.fold_id(f)),
                      one_pass=True)
        disc = None if discs is None else discs[f]
        m.start(disc.transform(header) if disc is not None else header, rows_hint)
        rows = np.flatnonzero(fold == f if subtraction else fold != f)
        if rows.size:
            mine = part.take(rows)
            m.partial_fit(disc.transform(mine) if disc is not None else mine)
        models.append(m)
    return models, _cpu() - cpu


def _merge_folds(a: tuple[list[Any], float], b: tuple[list[Any], float]
                 ) -> tuple[list[Any], float]:
    """Two row groups' fold models added up, fold by fold (on a worker)."""
    cpu = _cpu()
    merged = [None if x is None else x.merge(y) for x, y in zip(a[0], b[0])]
    return merged, a[1] + b[1] + _cpu() - cpu


def _score_folds(path: str, group: int, index: int, models: list[Any], header: Dataset,
                 discs: list[Any] | None, assign: Assignment, round_: int, keep: bool
                 ) -> tuple[list[LossSums], float, tuple | None]:
    """One row group's loss sums per fold, each row scored by its fold's model (on a
    worker); with `keep`, also its scored rows' (folds, indices, probabilities, classes)
    in the file's order."""
    cpu = _cpu()
    part = _row_group(path, group, 0, 0, header, None, test=False)
    fold = assign.of(index, part.n_instances, round_)
    out, kept = [], []
    for f in range(assign.folds):
        rows = np.flatnonzero(fold == f)
        if not rows.size or f not in assign.scored:
            out.append(LossSums(0, 0, 0.0, 0.0, 0.0))
            continue
        test = part.take(rows)
        proba = _scored(models[f], None if discs is None else discs[f], test)
        out.append(loss_sums(proba, test.y))
        if keep:
            kept.append((np.full(rows.size, f), index + rows, proba, test.y))
    cpu = _cpu() - cpu
    if not kept:
        return out, cpu, None
    folds, idx, proba, y = (np.concatenate(c) for c in zip(*kept))
    back = np.argsort(idx, kind="stable")
    return out, cpu, (folds[back], idx[back], proba[back], y[back])


def _cv_distributed(client: Any, path, learner, params, assign, header, discs, cv, round_,
                    total, subtraction, keep: Keep | None) -> list[Any]:
    """One round on the workers: fold tables per row group, a tree reduction (neighbours
    pair by pair: the client receives only the k summed fold models), subtraction on the
    client, then every row group scored by the workers (the models sent once), its
    predictions — when kept — streamed back to `keep` group by group in the file's order
    (`_in_order`: at most `IN_FLIGHT` groups' predictions held anywhere at once)."""
    scored = assign.scored
    src = str(Path(path).resolve())
    starts = _row_group_starts(path)
    groups = len(starts) - 1
    sizes = client.gather([client.submit(_group_rows_with_class, src, g, header, pure=False)
                           for g in range(groups)])
    index = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    level = [client.submit(_count_folds, src, g, int(index[g]), learner, dict(params or {}),
                           assign, header, discs, round_, total, subtraction, pure=False)
             for g in range(groups)]
    while len(level) > 1:
        level = [client.submit(_merge_folds, level[i], level[i + 1], pure=False)
                 if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    models, counting_cpu = level[0].result()
    cpu = _cpu()
    if subtraction:
        whole = copy.deepcopy(models[0])
        for m in models[1:]:
            whole.merge(m)
        models = [copy.deepcopy(whole).merge(m, sign=-1) if f in scored else None
                  for f, m in enumerate(models)]
    counting_cpu += _cpu() - cpu
    shared = client.scatter(models, broadcast=True)
    parts = []
    for g, (sums, cpu, rows) in _in_order(client, [
            (_score_folds, src, g, int(index[g]), shared, header, discs, assign, round_,
             keep is not None) for g in range(groups)]):
        parts.append((sums, cpu))
        if rows is not None:
            keep(round_, *rows)
    n_known = int(index[-1])
    for f in scored:
        sums = [s[0][f] for s in parts if s[0][f].n]
        cv[f].sums = LossSums(*(sum(col) for col in zip(*sums))) if sums else cv[f].sums
        cv[f].train_cpu_seconds += counting_cpu / len(scored)
        cv[f].test_cpu_seconds += sum(s[1] for s in parts) / len(scored)
        cv[f].n_train = n_known - cv[f].sums.n
    return models


IN_FLIGHT = 4
"""Row groups scored ahead of the one `keep` is writing (distributed scoring): bounds the
predictions held by the workers and the client, whatever the rows."""


def _in_order(client: Any, calls: list[tuple]) -> Iterator[tuple[int, Any]]:
    """(i, result) of each call in order, at most `IN_FLIGHT` submitted ahead, each
    future released once its result is taken."""
    ahead: list[Any] = []
    todo = iter(enumerate(calls))
    for i, call in todo:
        ahead.append(client.submit(*call, pure=False))
        if len(ahead) >= IN_FLIGHT:
            break
    done = 0
    while ahead:
        value = ahead.pop(0).result()
        nxt = next(todo, None)
        if nxt is not None:
            ahead.append(client.submit(*nxt[1], pure=False))
        yield done, value
        done += 1
