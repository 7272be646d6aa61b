"""Which fold tests each row of a file read in chunks (`Assignment`: seeded k-fold by
row index, or a holdout's given rows), each fold's record (`CVFold`), and the chunks' rows
with their folds and grouped by fold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from workbench.data.dataset import Dataset
from workbench.evaluation.metrics import LossSums, pooled_metrics
from workbench.evaluation.outofcore.replay import Replay
from workbench.evaluation.splits import row_folds

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


def class_known(chunk: Dataset, index: int, assign: Assignment, round_: int
                ) -> tuple[Dataset, np.ndarray, np.ndarray]:
    """The chunk's rows with a class, their indices among such rows (from `index`) and
    their folds."""
    keep = chunk.y >= 0
    part = chunk if keep.all() else chunk.take(np.flatnonzero(keep))
    idx = np.arange(index, index + part.n_instances, dtype=np.int64)
    return part, idx, assign.of(index, part.n_instances, round_)


def fold_chunks(src: Replay, assign: Assignment, round_: int
                ) -> Iterator[tuple[Dataset, np.ndarray, np.ndarray]]:
    """Each chunk's rows with a class, their indices among such rows and their folds."""
    index = 0
    for _, chunk in src.chunks():
        part, idx, fold = class_known(chunk, index, assign, round_)
        index += part.n_instances
        yield part, idx, fold


class Grouped:
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


def rows_of(grouped: Dataset, bounds: np.ndarray, f: int) -> Dataset:
    lo, hi = int(bounds[f]), int(bounds[f + 1])
    return grouped.replace(X=grouped.X[lo:hi], y=grouped.y[lo:hi])
