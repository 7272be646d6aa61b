"""Out-of-core training and evaluation: a data file (ARFF, CSV, Parquet) read chunk by
chunk, at memory independent of its number of rows, by a count-based learner: NB and the
AnDE family in one pass (`CountingLearner.partial_fit`); KDB, TAN and ASAODE in two, SKDB
in three and BSEAODE in one more per elimination step (`MultiPassLearner`: counts, then
KDB's family counts and the leave-one-out passes of the selective learners, every pass
reading the same training rows in the same order).

- **Pass 1** reads the file once for what must be known before counting: the rows, the
  attributes with a missing value anywhere (`Attribute.has_missing`, as an in-memory load
  sets it) and, when the learner discretises (MDL or EF), a seeded reservoir sample of at
  most `sample` training rows on which the cut points are fitted — as `discretize_sample`
  does in memory.
- **Then** each of the learner's passes reads every chunk's training rows, discretised.
- **Holdout** (`holdout`): ``every:K`` — every K-th row (rows K−1, 2K−1, … counting from
  0) is a test row; ``last:N`` — the last N rows are. A third pass predicts the test rows.
- **Prequential** (test-then-train): the rows are taken in windows of `window` rows; each
  window is first predicted by the model of all rows before it (the first window is only
  learned), then learned. Discretisation: the learner's batch method (MDL, EF) is fitted on
  the first window and kept (a stream cannot look ahead); ``ida:B:S`` / ``idaw:B:S``
  (incremental quantiles, `discretize.IncrementalDiscretizer`) are updated after every
  window. The same loop serves the `Prequential` protocol of configs (`prequential_fold`).

Metrics are those of `cv` (pooled 0-1 loss, both RMSEs, log loss) with CPU seconds of
training and testing, rows, the fitted model's bytes and the process's peak resident
memory. With a sample at least as large as the training rows, training here equals
training in memory on the same rows (same cut points, same counts).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from workbench.data.dataset import Dataset
from workbench.data.replay import Replay
from workbench.data.sources import Reservoir, first_rows, iter_chunks, scan_header, table_kind
from workbench.errors import LearnerError, WorkbenchError
from workbench.fileio import parquet_file
from workbench.evaluation.metrics import LossSums, loss_sums, pooled_metrics
from workbench.evaluation.pipeline import (FoldResult, checked_proba, make_learner, peak_rss,
                                          reset_peak_rss)
from workbench.jit import CompileTime, compile_clock
from workbench.discretize import fit_discretizer, is_incremental
from workbench.learners.base import CountingLearner, MultiPassLearner

__all__ = ["Holdout", "OutOfCoreResult", "class_known_windows", "fit_file",
           "evaluate_holdout", "gather_rows", "stream_fold",
           "evaluate_prequential", "parse_holdout", "prequential_fold", "prequential_loop"]

DEFAULT_CHUNK = 65_536
DEFAULT_SAMPLE = 100_000


@dataclass(frozen=True)
class Holdout:
    """Which rows test: every `every`-th row, or the `last` rows."""

    every: int | None = None
    last: int | None = None

    def test_mask(self, start: int, n: int, total: int) -> np.ndarray:
        """Test rows among rows start .. start+n−1 of a file of `total` rows."""
        rows = np.arange(start, start + n)
        if self.every is not None:
            return rows % self.every == self.every - 1
        return rows >= total - int(self.last or 0)


def _rows(chunk: Dataset, start: int, total: int, holdout: Holdout | None,
          test: bool = False) -> np.ndarray:
    """The chunk's rows with a class on one side of `holdout` (training unless `test`;
    without a holdout, every row with a class trains)."""
    keep = chunk.y >= 0
    if holdout is not None:
        in_test = holdout.test_mask(start, chunk.n_instances, total)
        keep &= in_test if test else ~in_test
    return keep


def parse_holdout(text: str) -> Holdout:
    """``every:K`` (K ≥ 2) or ``last:N`` (N ≥ 1)."""
    m = re.fullmatch(r"(every|last):(\d+)", str(text).strip())
    if not m or int(m.group(2)) < (2 if m.group(1) == "every" else 1):
        raise WorkbenchError(f"--holdout {text!r}: expected every:K (K >= 2, every K-th row "
                             "tests) or last:N (the last N rows test)")
    k = int(m.group(2))
    return Holdout(every=k) if m.group(1) == "every" else Holdout(last=k)


@dataclass
class OutOfCoreResult:
    """What one out-of-core run gives: the summary (metrics and measurements), for a
    prequential run the per-window values, and the fitted model and discretiser."""

    summary: dict[str, Any]
    windows: list[dict[str, Any]] = field(default_factory=list)
    model: Any = None
    discretizer: Any = None
    header: Dataset | None = None  # the file's header, missing flags of the whole file


def out_of_core_model(learner: Any, params: Mapping[str, Any] | None, seed: int | None,
                      one_pass: bool = False) -> Any:
    """The learner, if it trains out of core: in one pass (`CountingLearner`), or — unless
    `one_pass` (streams, distributed counting) — in several (`MultiPassLearner`)."""
    model = make_learner(learner, params, seed)
    if _multi_pass(model) and one_pass:
        raise WorkbenchError(
            f"learner {learner!r} trains in several passes over all training rows; a stream "
            "or distributed counting needs a one-pass learner (NB and the AnDE family "
            "without attribute selection)")
    why = model.pass_refusal() if isinstance(model, MultiPassLearner) else None
    if why:
        raise WorkbenchError(f"learner {learner!r}: {why}")
    if not isinstance(model, (CountingLearner, MultiPassLearner)):
        raise WorkbenchError(
            f"learner {learner!r} trains in memory only; out-of-core training needs a "
            "count-based learner (NB, the AnDE family and their -S/-W variants in one pass; "
            "KDB1-5, TAN and ASAODE in two, SKDB in three, BSEAODE in one more per "
            "elimination step; AnJE and its -SGD / -ADAGRAD forms)")
    return model


def _multi_pass(model: Any) -> bool:
    return isinstance(model, MultiPassLearner) and model.n_passes() > 1


class CPUClock:
    """CPU seconds since it started, less the seconds numba spent meanwhile compiling or
    loading kernels (first-use costs, reported apart as ``compile_seconds``). numba and
    the data layer's kernel module — importing them hashes every kernel source — are
    imported before it starts: stored timings never include first loads."""

    def __init__(self) -> None:
        import workbench.data.gather  # noqa: F401 - numba and the kernel cache, untimed

        self._jit = compile_clock()
        self._jit0 = self._jit.read()
        self._cpu0 = time.process_time()

    def compile_seconds(self) -> float:
        return (self._jit.read() - self._jit0).cpu_seconds

    def cpu_seconds(self) -> float:
        return time.process_time() - self._cpu0 - self.compile_seconds()


def _chunks(path, chunk_rows: int, header: Dataset | None, class_column: str | None
            ) -> Iterator[tuple[int, Dataset]]:
    """(first row index, chunk) in file order; with `header`, its attributes (the whole
    file's missing flags) on every chunk."""
    start = 0
    for chunk in iter_chunks(path, chunk_rows, header=header, class_column=class_column):
        if header is not None:
            chunk = chunk.replace(attributes=header.attributes)
        yield start, chunk
        start += chunk.n_instances


def _first_pass(path, chunk_rows: int, class_column: str | None, holdout: Holdout | None,
                sample: int | None, seed: int, client: Any = None
                ) -> tuple[Dataset, int, Reservoir | None]:
    """The header with whole-file missing flags, the row count, and (if `sample`) a
    reservoir sample of the training rows (with a known class). CSV / Parquet: the header
    pass gives flags and rows (with a Dask `client`, a Parquet file's row groups are
    scanned on the workers); ARFF: a pass over the chunks."""
    if table_kind(path) != "arff":
        header = scan_header(path, class_column, map_groups=None if client is None else (
            lambda fn, p, groups: client.gather(
                [client.submit(fn, str(Path(p).resolve()), g, pure=False) for g in groups])))
        total = int(header.meta["rows"])
    else:
        missing, total, header = None, 0, None
        for _, chunk in _chunks(path, chunk_rows, None, class_column):
            header = header or chunk
            m = np.isnan(chunk.X).any(axis=0)
            missing = m if missing is None else (missing | m)
            total += chunk.n_instances
        if header is None:
            raise WorkbenchError(f"{path}: no rows")
        header = header.with_missing(missing)
    res = None
    if sample is not None and not header.is_all_nominal:
        res = Reservoir(sample, seed)
        for start, chunk in _chunks(path, chunk_rows, header, class_column):
            keep = _rows(chunk, start, total, holdout)
            if keep.any():
                res.add(chunk.take(np.flatnonzero(keep)))
    return header, total, res


def gather_rows(path, indices: np.ndarray, chunk_rows: int = DEFAULT_CHUNK,
                class_column: str | None = None) -> Dataset:
    """The rows at `indices` (ascending) among the file's rows with a class, in that order,
    under the whole file's header (its missing flags): what a sampled or learning-curve
    fold needs of a file too large to load, read in one pass over its chunks."""
    indices = np.asarray(indices, dtype=np.int64)
    header, _, _ = _first_pass(path, chunk_rows, class_column, None, None, 1)
    X, y, seen = [], [], 0
    for _, chunk in _chunks(path, chunk_rows, header, class_column):
        known = np.flatnonzero(chunk.y >= 0)
        lo, hi = np.searchsorted(indices, [seen, seen + known.size])
        if hi > lo:
            rows = known[indices[lo:hi] - seen]
            X.append(chunk.X[rows])
            y.append(chunk.y[rows])
        seen += known.size
    if indices.size and (indices[-1] >= seen or indices[0] < 0):
        raise WorkbenchError(f"{path}: rows {indices[0]}..{indices[-1]} asked for, but the "
                             f"file has {seen} rows with a class")
    return header.replace(X=np.vstack(X) if X else np.empty((0, header.n_attributes)),
                          y=np.concatenate(y) if y else np.empty(0, dtype=np.int64))


def _row_group(path: str, group: int, start: int, total: int, header: Dataset,
               holdout: Holdout | None, test: bool) -> Dataset:
    """The training (or, with `test`, the test) rows with a class of one row group of a
    Parquet file, under the whole file's header."""
    import pyarrow.parquet as pq

    from workbench.data.sources import _columns

    chunk = _columns(parquet_file(path).read_row_group(group), header, Path(path))
    chunk = chunk.replace(attributes=header.attributes)
    return chunk.take(np.flatnonzero(_rows(chunk, start, total, holdout, test)))


def _scored(model: Any, disc: Any, part: Dataset) -> np.ndarray:
    """The model's checked distributions of `part` (discretised first when `disc` is set)."""
    proba = model.predict_proba(disc.transform(part) if disc is not None else part)
    return checked_proba(proba, part.n_instances, part.n_classes, type(model).__name__)


def _score_partition(path: str, group: int, start: int, total: int, model: Any,
                     header: Dataset, disc: Any, holdout: Holdout) -> LossSums:
    """The loss sums of one row group's test rows (on a Dask worker)."""
    part = _row_group(path, group, start, total, header, holdout, test=True)
    if not part.n_instances:
        return LossSums(0, 0, 0.0, 0.0, 0.0)
    return loss_sums(_scored(model, disc, part), part.y)


def _row_group_starts(path) -> np.ndarray:
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    return np.concatenate(([0], np.cumsum([meta.row_group(g).num_rows
                                           for g in range(meta.num_row_groups)])))


def _count_partition(path: str, group: int, start: int, total: int, learner: Any,
                     params: Mapping[str, Any] | None, seed: int, header: Dataset, disc: Any,
                     holdout: Holdout | None, rows_hint: int) -> Any:
    """Count one row group of a Parquet file (on a Dask worker): a model started from the
    whole file's header, so that every partition's model has the same layout."""
    part = _row_group(path, group, start, total, header, holdout, test=False)
    model = out_of_core_model(learner, params, seed)
    model.start(disc.transform(header) if disc is not None else header, rows_hint)
    if part.n_instances:
        model.partial_fit(disc.transform(part) if disc is not None else part)
    return model, int(part.n_instances)


def _merge_pair(a: tuple[Any, int], b: tuple[Any, int]) -> tuple[Any, int]:
    """Two partitions' (model, rows) added up (on a Dask worker)."""
    return a[0].merge(b[0]), a[1] + b[1]


def _fit_distributed(client: Any, path, learner, params, seed, header, disc, holdout,
                     total: int):
    """Count a Parquet file's row groups on the Dask workers and add the counts up in a
    tree on the workers — neighbours in row-group order, pair by pair — so the client only
    ever receives the one total (counts are added exactly: any order gives the same)."""
    starts = _row_group_starts(path)
    groups = len(starts) - 1
    level = [client.submit(_count_partition, str(Path(path).resolve()), g, int(starts[g]),
                           total, learner, dict(params or {}), seed, header, disc,
                           holdout, total, pure=False)
             for g in range(groups)]
    while len(level) > 1:
        level = [client.submit(_merge_pair, level[i], level[i + 1], pure=False)
                 if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    model, n_train = level[0].result()
    return model, n_train, groups


def _parquet_only(path) -> None:
    if table_kind(path) != "parquet":
        raise WorkbenchError(f"{path}: distributed counting reads Parquet row groups; "
                             "convert the file to Parquet (or train without --scheduler)")


def _score_distributed(client: Any, path, model: Any, header: Dataset, disc: Any,
                       holdout: Holdout, total: int) -> list[LossSums]:
    """Score a Parquet file's test rows on the Dask workers, one row group a task (the
    model sent once to every worker); the sums in row-group order."""
    starts = _row_group_starts(path)
    shared = client.scatter(model, broadcast=True)
    futures = [client.submit(_score_partition, str(Path(path).resolve()), g, int(starts[g]),
                             total, shared, header, disc, holdout, pure=False)
               for g in range(len(starts) - 1)]
    return [s for s in client.gather(futures) if s.n]


def _refuse_early(path, model: Any, class_column: str | None, copies: int = 1) -> None:
    """Refuse a model that cannot fit the memory budget before the pass over the file: its
    count tables from the values of the first record batch (a lower bound of every nominal
    attribute's; a numeric one counted as one bin) — the same check as at the start of
    counting, whose figure can only be larger; `copies` models held at once."""
    check = getattr(model, "check_budget", None)
    if check is None:
        return
    first = first_rows(path, class_column)
    if first is None:
        return
    cards = np.array([a.cardinality if a.is_nominal else 1 for a in first.attributes])
    try:
        check(cards, first, 0, copies)
    except LearnerError as exc:
        raise LearnerError(str(exc).replace("would need about", "would need at least")
                           + f" — from the values of its first {first.n_instances} rows, "
                           "before reading the rest of the file") from None


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
        _parquet_only(path)
    _refuse_early(path, model, class_column, 3 if client is not None else 1)  # (a merge:
    # two partial models and their sum on a worker)
    header, total, res = _first_pass(path, chunk_rows, class_column, holdout,
                                     None if method == "none" else sample, seed, client)
    if method != "none" and header.is_all_nominal:
        method = "none"  # nothing to discretise: no cut points, no sample
    disc = None
    if method != "none":
        if res is None or res.seen == 0:
            raise WorkbenchError(f"{path}: no training rows with a known class")
        disc = fit_discretizer(method, res.sample())
    if client is not None:
        model, n_train, chunks = _fit_distributed(client, path, learner, params, seed,
                                                  header, disc, holdout, total)
        summary = {"rows": total, "n_train": n_train, "chunks": chunks, "passes": 2,
                   "partitions": chunks, "train_cpu_seconds": clock.cpu_seconds(),
                   "compile_seconds": clock.compile_seconds(),
                   "model_bytes": model.model_bytes(), "peak_rss_bytes": peak_rss(),
                   "preprocessing": method,
                   "discretize_sample": None if disc is None else min(sample, res.seen)}
        return OutOfCoreResult(summary, model=model, discretizer=disc, header=header)
    multi = _multi_pass(model)
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
                keep = _rows(chunk, start, total, holdout)
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
        sums = _score_distributed(client, path, model, header, disc, holdout, total)
    else:
        for start, chunk in _chunks(path, chunk_rows, header, class_column):
            test = _rows(chunk, start, total, holdout, test=True)
            if not test.any():
                continue
            part = chunk.take(np.flatnonzero(test))
            sums.append(loss_sums(_scored(model, disc, part), part.y))
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


def prequential_loop(windows, model, header: Dataset, seed: int = 1,
                     keep: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None
                     ) -> tuple[Any, float, float, CompileTime]:
    """Test-then-train over `windows` ((first row, Dataset) in order): each window's rows
    with a known class are predicted by the model of all earlier windows (from the second
    window on), then learned. The learner's preprocessing decides the cut points: IDA /
    IDAW (``ida:B:S``, ``idaw:B:S``) follow the stream, updated after every window; a batch
    method (MDL, EF) is fitted on the first window and kept. Each window's predictions go
    to ``keep(row indices, probabilities, true classes)`` as soon as they are made (and
    checked, outside the timers), so the loop itself holds one window whatever the stream's
    length. Returns the discretiser, the training and testing CPU seconds, and the kernel
    compilation kept out of them (`workbench.jit.compile_clock`)."""
    method = str(getattr(model, "preprocessing", "none") or "none")
    incremental = method != "none" and is_incremental(method)
    disc = None
    train_cpu = test_cpu = 0.0
    clock = compile_clock()
    first = clock.read()
    name = type(model).__name__
    for start, chunk in windows:
        keep_rows = np.flatnonzero(chunk.y >= 0)
        labelled = chunk.take(keep_rows)
        c0 = clock.read()
        t0 = time.process_time()
        if disc is None and method != "none":
            disc = fit_discretizer(method, labelled if not incremental else
                                   labelled.take(np.arange(0)), seed=seed)
            if incremental:
                disc.update(labelled)  # the first window is only learned
        proba = None
        if model._header is not None and labelled.n_instances:
            proba = model.predict_proba(disc.transform(labelled) if disc else labelled)
        t1 = time.process_time()
        c1 = clock.read()
        if labelled.n_instances:
            model.partial_fit(disc.transform(labelled) if disc else labelled)
            if incremental and model._header is not None and start:
                disc.update(labelled)
        t2 = time.process_time()
        c2 = clock.read()
        test_cpu += t1 - t0 - (c1 - c0).cpu_seconds
        train_cpu += t2 - t1 - (c2 - c1).cpu_seconds
        if proba is not None:
            checked_proba(proba, labelled.y.size, header.n_classes, name)
            if keep is not None:
                keep(start + keep_rows, proba, labelled.y)
    return disc, max(train_cpu, 0.0), max(test_cpu, 0.0), clock.read() - first


def evaluate_prequential(path, learner: Any, params: Mapping[str, Any] | None = None, *,
                         window: int = 1000, seed: int = 1, class_column: str | None = None
                         ) -> OutOfCoreResult:
    """Test-then-train over the file's rows in windows of `window` rows (see
    `prequential_loop`; preprocessing from the learner, or ``preprocessing`` in `params`,
    e.g. ``"ida:5:1000"``)."""
    model = out_of_core_model(learner, params, seed, one_pass=True)
    header, total, _ = _first_pass(path, window, class_column, None, None, seed)
    reset_peak_rss()
    K = header.n_classes
    sums: list = []  # one window's sums (a few numbers) each: no predictions are kept
    windows: list[dict[str, Any]] = []

    def keep(rows: np.ndarray, proba: np.ndarray, y: np.ndarray) -> None:
        s = loss_sums(proba, y)
        sums.append(s)
        windows.append({"start": int(rows[0]), "rows": s.n, **pooled_metrics([s], K)})

    disc, train_cpu, test_cpu, compiled = prequential_loop(
        _chunks(path, window, header, class_column), model, header, seed, keep)
    summary = {"rows": total, "window": window, "windows": len(windows),
               "n_test": sum(s.n for s in sums),
               "preprocessing": str(getattr(model, "preprocessing", "none")),
               "train_cpu_seconds": train_cpu, "test_cpu_seconds": test_cpu,
               "compile_seconds": compiled.cpu_seconds, **pooled_metrics(sums, K),
               "model_bytes": model.model_bytes() if hasattr(model, "model_bytes") else None,
               "peak_rss_bytes": peak_rss()}
    return OutOfCoreResult(summary, windows, model, disc, header)


def prequential_fold(data: Dataset, learner: Any, params: Mapping[str, Any] | None,
                     window: int, seed: int | None = None) -> FoldResult:
    """The prequential protocol's one fold on in-memory rows (file order): the test rows
    are every row after the first window; their probabilities are those the stream gave."""
    n = data.n_instances
    windows = ((lo, data.take(np.arange(lo, min(lo + window, n))))
               for lo in range(0, n, window))
    return stream_fold(windows, data, n, learner, params, seed)[0]


def class_known_windows(path, window: int, header: Dataset,
                        class_column: str | None = None) -> Iterator[tuple[int, Dataset]]:
    """A file's rows with a class in windows of `window` rows (the last one shorter),
    each with its first row's index among those rows: the windows `prequential_fold`
    makes of the same data in memory."""
    X: list[np.ndarray] = []
    y: list[np.ndarray] = []
    held = start = 0
    for _, chunk in _chunks(path, max(window, DEFAULT_CHUNK), header, class_column):
        known = np.flatnonzero(chunk.y >= 0)
        X.append(chunk.X[known])
        y.append(chunk.y[known])
        held += known.size
        while held >= window:
            allX, ally = np.vstack(X), np.concatenate(y)
            yield start, header.replace(X=allX[:window], y=ally[:window])
            X, y = [allX[window:]], [ally[window:]]
            held -= window
            start += window
    if held:
        yield start, header.replace(X=np.vstack(X), y=np.concatenate(y))


def stream_fold(windows, header: Dataset, n: int, learner: Any,
                params: Mapping[str, Any] | None, seed: int | None = None,
                predictions: bool = True) -> tuple[FoldResult, np.ndarray]:
    """The prequential fold over `windows` ((first row, rows) of `n` rows with a class, in
    memory or read from a file: `class_known_windows`) and its test rows' classes: the
    stream's predictions, or without `predictions` only their loss sums (constant
    memory; no classes)."""
    model = out_of_core_model(learner, params, seed, one_pass=True)
    reset_peak_rss()
    wall0 = time.perf_counter()
    preds: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    sums: list[LossSums] = []

    def keep(rows: np.ndarray, proba: np.ndarray, y: np.ndarray) -> None:
        if predictions:
            preds.append((rows, proba, y))
        else:
            sums.append(loss_sums(proba, y))

    disc, train_cpu, test_cpu, compiled = prequential_loop(
        windows, model, header, 1 if seed is None else seed, keep)
    wall = max(time.perf_counter() - wall0 - compiled.wall_seconds, 0.0)
    rows = np.concatenate([r for r, _, _ in preds]) if preds else np.zeros(0, np.int64)
    proba = np.vstack([p for _, p, _ in preds]) if preds else np.zeros((0, header.n_classes))
    cuts = getattr(disc, "cuts", None)
    y = np.concatenate([t for _, _, t in preds]) if preds else np.zeros(0, np.int64)
    return FoldResult(
        round=0, fold=0, test_index=rows, proba=proba, train_cpu_seconds=train_cpu,
        test_cpu_seconds=test_cpu, train_wall_seconds=wall * train_cpu / max(
            train_cpu + test_cpu, 1e-12), test_wall_seconds=wall * test_cpu / max(
            train_cpu + test_cpu, 1e-12), n_train=n,
        preprocessing=str(getattr(model, "preprocessing", "none")),
        cuts={k: [float(c) for c in v] for k, v in cuts.items()} if cuts else None,
        model_bytes=model.model_bytes() if hasattr(model, "model_bytes") else None,
        peak_rss_bytes=peak_rss(), compile_seconds=compiled.cpu_seconds,
        compiled_kernels=compiled.compiled,
        sums=None if predictions else tuple(LossSums(*(sum(c) for c in zip(*sums)))
                                             if sums else LossSums(0, 0, 0.0, 0.0, 0.0))), y
