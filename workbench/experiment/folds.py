"""The folds a run's protocol lays on its data sets, as a table another tool (or a run with
``protocol: {splits: FILE}``) can read back: ``dataset, round, index, fold`` rows, the
index counting the rows with a known class in file order."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workbench.data.catalog import load_dataset
from workbench.errors import WorkbenchError
from workbench.evaluation.cv import evaluation_data
from workbench.experiment.config import ExperimentConfig
from workbench.experiment.datasets import resolve_datasets
from workbench.fileio import atomic_write_bytes


def fold_rows(config: ExperimentConfig):
    """A DataFrame of (dataset, round, index, fold) for every data set found: each row's
    test fold in each round (protocols that test every row once a round)."""
    import pandas as pd

    plan = config.protocol.plan
    if not plan.tests_all_rows:
        raise WorkbenchError(f"folds: a {plan.kind} protocol does not test every row once a "
                             "round (only cross-validation folds can be written)")
    parts = []
    for ref in resolve_datasets(config)[0]:
        data = evaluation_data(load_dataset(ref.path))
        specs = plan.for_dataset(ref.name).plan(data.n_instances, data.y)
        fold = np.full((plan.rounds, data.n_instances), -1, dtype=np.int64)
        for (r, f), spec in specs.items():
            fold[r, spec.test] = f
        rounds, index = np.indices(fold.shape)
        parts.append(pd.DataFrame({"dataset": ref.name, "round": rounds.ravel(),
                                   "index": index.ravel(), "fold": fold.ravel()}))
    if not parts:
        raise WorkbenchError("folds: none of the run's data sets was found")
    return pd.concat(parts, ignore_index=True)


def write_folds(config: ExperimentConfig, path: str | Path) -> int:
    """Write `fold_rows` to `path` (Parquet for .parquet, else CSV), atomically; returns
    the number of rows."""
    table = fold_rows(config)
    path = Path(path)
    if path.suffix.lower() in (".parquet", ".pq"):
        import io

        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        atomic_write_bytes(path, buffer.getvalue())
    else:
        atomic_write_bytes(path, table.to_csv(index=False, lineterminator="\n").encode())
    return len(table)
