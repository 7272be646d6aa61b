"""Scoring a round: each row classified by its fold's model in one pass, its loss sums
kept and its prediction handed on (`Keep`, e.g. `PredictionWriter` to Parquet)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from workbench.evaluation.metrics import LossSums, loss_sums
from workbench.evaluation.outofcore.assignment import Grouped, Keep, fold_chunks, rows_of
from workbench.evaluation.outofcore.passes import fold_cpu, scored_proba
from workbench.evaluation.outofcore.replay import Replay
from workbench.data.arrow import from_numpy
from workbench.errors import CannotWrite, WorkbenchError
from workbench.fileio import PARQUET_OPTIONS

def score_pass(src: Replay, models, cv, discs, assign, round_, keep: Keep | None) -> None:
    """One pass: each row classified by its fold's model (and cut points)."""
    k = len(models)
    sums: list[list[LossSums]] = [[] for _ in range(k)]
    own = np.zeros(k)
    cpu = fold_cpu()
    by_fold = Grouped()
    for part, idx, fold in fold_chunks(src, assign, round_):
        grouped, order, bounds = by_fold(part, fold, k)
        kept = []
        for f in assign.scored:
            if bounds[f + 1] == bounds[f]:
                continue
            t = fold_cpu()
            test = rows_of(grouped, bounds, f)
            proba = scored_proba(models[f], None if discs is None else discs[f], test)
            own[f] += fold_cpu() - t
            sums[f].append(loss_sums(proba, test.y))
            if keep is not None:
                kept.append((np.full(test.y.size, f), idx[order[bounds[f]:bounds[f + 1]]],
                             proba, test.y))
        if kept:  # the chunk's rows in the file's order, whatever their folds
            folds, rows, proba, y = (np.concatenate(part) for part in zip(*kept))
            back = np.argsort(rows, kind="stable")
            keep(round_, folds[back], rows[back], proba[back], y[back])
    shared = fold_cpu() - cpu - own.sum()
    for f in assign.scored:
        cv[f].sums = LossSums(*(sum(col) for col in zip(*sums[f]))) if sums[f] else cv[f].sums
        cv[f].test_cpu_seconds += own[f] + shared / len(assign.scored)


class PredictionWriter:
    """A `Keep` that streams every test row's prediction to a Parquet file — round, fold,
    index (among the rows with a class), class, with `predicted` the predicted class, and
    one probability column per class (`prob_names`; default ``p_0 … p_{K−1}``) — a row
    group per call, so memory stays that of one chunk. The rows go to a temporary file
    beside `path`, which appears (atomically renamed) at `close`; `discard` removes it. The
    one writer of predictions streamed out of core: the CLI's ``--predictions-out`` and a
    run's round files (`store.round_writer`)."""

    def __init__(self, path, prob_names: list[str] | None = None,
                 predicted: bool = False) -> None:
        self.path = Path(path)
        self.names = prob_names
        self.predicted = predicted
        self.rows = 0
        self._writer = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp",
                                       dir=self.path.parent)
        except OSError as exc:
            raise CannotWrite(f"{self.path}: cannot write: {exc}") from None
        os.close(fd)
        self.tmp = Path(tmp)

    def __call__(self, round_: int, fold: np.ndarray, idx: np.ndarray, proba: np.ndarray,
                 y: np.ndarray) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        n = int(idx.size)
        cols = {"round": from_numpy(np.full(n, round_, np.int32)),
                "fold": from_numpy(np.asarray(fold, np.int32)),
                "index": from_numpy(np.asarray(idx, np.int64)),
                "y": from_numpy(np.asarray(y, np.int64))}
        if self.predicted:
            cols["predicted"] = from_numpy(np.argmax(proba, axis=1).astype(np.int32))
        names = self.names or [f"p_{k}" for k in range(proba.shape[1])]
        cols |= {name: from_numpy(np.ascontiguousarray(proba[:, k], np.float64))
                 for k, name in enumerate(names)}
        table = pa.table(cols)
        if self._writer is None:
            self._writer = pq.ParquetWriter(str(self.tmp), table.schema, compression="zstd",
                                            **PARQUET_OPTIONS)
        self._writer.write_table(table)
        self.rows += n

    write = __call__

    def close(self) -> Path:
        """Finish the file and move it onto `path` (an error if no row was written)."""
        if self._writer is None:
            self.discard()
            raise WorkbenchError(f"{self.path}: no rows were scored")
        self._writer.close()
        self._writer = None
        os.replace(self.tmp, self.path)
        return self.path

    def discard(self) -> None:
        """Remove the temporary file (an error or interruption: nothing half-written)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self.tmp.unlink(missing_ok=True)
