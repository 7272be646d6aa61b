"""Reading a data file in passes: the chunks in file order under the whole file's
header, the first pass (missing flags, rows, a reservoir sample), a holdout's rows, the
rows a sampled fold needs, the learner as an out-of-core model, the CPU clock the folds'
times use (compilation left out), and the refusal of a model over the memory budget before
any pass."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from workbench.data.dataset import Dataset
from workbench.data.sources import Reservoir, first_rows, iter_chunks, scan_header, table_kind
from workbench.errors import LearnerError, WorkbenchError
from workbench.evaluation.pipeline import checked_proba, make_learner
from workbench.evaluation.tuning import Tuned
from workbench.jit import compile_clock
from workbench.learners.base import CountingLearner, MultiPassLearner, trains_in_passes

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


def holdout_rows(chunk: Dataset, start: int, total: int, holdout: Holdout | None,
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


def out_of_core_model(learner: Any, params: Mapping[str, Any] | None, seed: int | None,
                      one_pass: bool = False, stream: bool = False) -> Any:
    """The learner, if it trains out of core: in one pass (`CountingLearner`), or — unless
    `one_pass` (streams, distributed counting) — in several (`MultiPassLearner`). On a
    `stream` (the prequential protocol) a learner of several passes that has a stream form
    (``model.stream()``: LR-SGD's chunk after chunk) learns in that form."""
    one_pass = one_pass or stream
    model = make_learner(learner, params, seed)
    if isinstance(model, Tuned):  # (on a stream: prequential choice; else inner CV)
        model = model.stream() if one_pass else model.passes()
        why = model.chunk_refusal() if one_pass else None
        if why:
            raise WorkbenchError(f"learner {learner!r} with tune: {why}")
    elif stream and trains_in_passes(model) and hasattr(model, "stream"):
        model = model.stream()
        why = model.chunk_refusal()
        if why:
            raise WorkbenchError(f"learner {learner!r} on a stream: {why}")
    if trains_in_passes(model) and one_pass:
        raise WorkbenchError(
            f"learner {learner!r} trains "
            + ("in several passes over" if model.n_passes() > 1 else "only once it has read")
            + " all its training rows; a stream or distributed counting needs a learner that "
            "counts chunk by chunk (NB and the AnDE family without attribute selection)")
    why = model.pass_refusal() if isinstance(model, MultiPassLearner) else None
    if why:
        raise WorkbenchError(f"learner {learner!r}: {why}")
    if not isinstance(model, (CountingLearner, MultiPassLearner)):
        raise WorkbenchError(
            f"learner {learner!r} trains in memory only; out-of-core training needs a "
            "count-based learner (NB, the AnDE family and their -S/-W variants in one pass; "
            "KDB1-5, TAN and ASAODE in two, SKDB in three, BSEAODE in one more per "
            "elimination step; AnJE and its -SGD / -ADAGRAD forms; VW from a spool of its "
            "examples)")
    return model


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


def fold_cpu() -> float:
    """Process CPU seconds less numba's compilation and kernel loads so far: the fold
    timers' clock (a kernel first needed in the middle of a pass is not the fold's work)."""
    return time.process_time() - compile_clock().read().cpu_seconds


def file_chunks(path, chunk_rows: int, header: Dataset | None, class_column: str | None
                ) -> Iterator[tuple[int, Dataset]]:
    """(first row index, chunk) in file order; with `header`, its attributes (the whole
    file's missing flags) on every chunk."""
    start = 0
    for chunk in iter_chunks(path, chunk_rows, header=header, class_column=class_column):
        if header is not None:
            chunk = chunk.replace(attributes=header.attributes)
        yield start, chunk
        start += chunk.n_instances


def first_pass(path, chunk_rows: int, class_column: str | None, holdout: Holdout | None,
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
        for _, chunk in file_chunks(path, chunk_rows, None, class_column):
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
        for start, chunk in file_chunks(path, chunk_rows, header, class_column):
            keep = holdout_rows(chunk, start, total, holdout)
            if keep.any():
                res.add(chunk.take(np.flatnonzero(keep)))
    return header, total, res


def gather_rows(path, indices: np.ndarray, chunk_rows: int = DEFAULT_CHUNK,
                class_column: str | None = None) -> Dataset:
    """The rows at `indices` (ascending) among the file's rows with a class, in that order,
    under the whole file's header (its missing flags): what a sampled or learning-curve
    fold needs of a file too large to load, read in one pass over its chunks."""
    indices = np.asarray(indices, dtype=np.int64)
    header, _, _ = first_pass(path, chunk_rows, class_column, None, None, 1)
    X, y, seen = [], [], 0
    for _, chunk in file_chunks(path, chunk_rows, header, class_column):
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


def rows_with_class(path, chunk_rows: int = DEFAULT_CHUNK, class_column: str | None = None
                    ) -> tuple[Dataset, int]:
    """The file's header (missing flags of the whole file) and its rows with a class —
    what a run checks before planning folds, without loading the data."""
    header, _, _ = first_pass(path, chunk_rows, class_column, None, None, 1)
    n = sum(int((chunk.y >= 0).sum()) for _, chunk in file_chunks(path, chunk_rows, header,
                                                             class_column))
    return header, n


def scored_proba(model: Any, disc: Any, part: Dataset) -> np.ndarray:
    """The model's checked distributions of `part` (discretised first when `disc` is set)."""
    proba = model.predict_proba(disc.transform(part) if disc is not None else part)
    return checked_proba(proba, part.n_instances, part.n_classes, type(model).__name__)


def refuse_early(path, model: Any, class_column: str | None, copies: int = 1) -> None:
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
