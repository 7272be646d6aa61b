"""Scoring a round: each row classified by its fold's model in one pass, its loss sums
kept and its prediction handed on (`Keep`, e.g. `PredictionWriter` to Parquet)."""

from __future__ import annotations

import numpy as np

from workbench.evaluation.metrics import LossSums, loss_sums
from workbench.evaluation.outofcore.assignment import Grouped, Keep, fold_chunks, rows_of
from workbench.evaluation.outofcore.passes import fold_cpu, scored_proba
from workbench.evaluation.outofcore.replay import Replay
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
