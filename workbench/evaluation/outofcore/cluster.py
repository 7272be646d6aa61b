"""The out-of-core work on Dask workers, a Parquet row group a task: counting with a
tree reduction (neighbours pair by pair: the client receives only the summed models),
scoring there, the predictions streamed back in the file's order (`in_order`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from workbench.data.dataset import Dataset
from workbench.data.sources import batch_dataset, table_kind
from workbench.errors import WorkbenchError
from workbench.evaluation.metrics import LossSums, loss_sums
from workbench.evaluation.outofcore.assignment import Assignment, Keep
from workbench.evaluation.outofcore.passes import (Holdout, fold_cpu, holdout_rows,
                                                   out_of_core_model, scored_proba)
from workbench.evaluation.pipeline import fold_seed
from workbench.fileio import parquet_file

def row_group(path: str, group: int, start: int, total: int, header: Dataset,
              holdout: Holdout | None, test: bool) -> Dataset:
    """The training (or, with `test`, the test) rows with a class of one row group of a
    Parquet file, under the whole file's header."""
    chunk = batch_dataset(parquet_file(path).read_row_group(group), header, Path(path))
    chunk = chunk.replace(attributes=header.attributes)
    return chunk.take(np.flatnonzero(holdout_rows(chunk, start, total, holdout, test)))


def row_group_starts(path) -> np.ndarray:
    """The first row of every row group of a Parquet file, and the rows after the last."""
    meta = parquet_file(path).metadata
    return np.concatenate(([0], np.cumsum([meta.row_group(g).num_rows
                                           for g in range(meta.num_row_groups)])))


def parquet_only(path) -> None:
    if table_kind(path) != "parquet":
        raise WorkbenchError(f"{path}: distributed counting reads Parquet row groups; "
                             "convert the file to Parquet (or train without --scheduler)")


def count_partition(path: str, group: int, start: int, total: int, learner: Any,
                    params: Mapping[str, Any] | None, seed: int, header: Dataset, disc: Any,
                    holdout: Holdout | None, rows_hint: int) -> Any:
    """Count one row group of a Parquet file (on a Dask worker): a model started from the
    whole file's header, so that every partition's model has the same layout."""
    part = row_group(path, group, start, total, header, holdout, test=False)
    model = out_of_core_model(learner, params, seed)
    model.start(disc.transform(header) if disc is not None else header, rows_hint)
    if part.n_instances:
        model.partial_fit(disc.transform(part) if disc is not None else part)
    return model, int(part.n_instances)


def merge_pair(a: tuple[Any, int], b: tuple[Any, int]) -> tuple[Any, int]:
    """Two partitions' (model, rows) added up (on a Dask worker)."""
    return a[0].merge(b[0]), a[1] + b[1]


def fit_distributed(client: Any, path, learner, params, seed, header, disc, holdout,
                    total: int):
    """Count a Parquet file's row groups on the Dask workers and add the counts up in a
    tree on the workers — neighbours in row-group order, pair by pair — so the client only
    ever receives the one total (counts are added exactly: any order gives the same)."""
    starts = row_group_starts(path)
    groups = len(starts) - 1
    level = [client.submit(count_partition, str(Path(path).resolve()), g, int(starts[g]),
                           total, learner, dict(params or {}), seed, header, disc,
                           holdout, total, pure=False)
             for g in range(groups)]
    while len(level) > 1:
        level = [client.submit(merge_pair, level[i], level[i + 1], pure=False)
                 if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    model, n_train = level[0].result()
    return model, n_train, groups


def score_partition(path: str, group: int, start: int, total: int, model: Any,
                    header: Dataset, disc: Any, holdout: Holdout) -> LossSums:
    """The loss sums of one row group's test rows (on a Dask worker)."""
    part = row_group(path, group, start, total, header, holdout, test=True)
    if not part.n_instances:
        return LossSums(0, 0, 0.0, 0.0, 0.0)
    return loss_sums(scored_proba(model, disc, part), part.y)


def score_distributed(client: Any, path, model: Any, header: Dataset, disc: Any,
                      holdout: Holdout, total: int) -> list[LossSums]:
    """Score a Parquet file's test rows on the Dask workers, one row group a task (the
    model sent once to every worker); the sums in row-group order."""
    starts = row_group_starts(path)
    shared = client.scatter(model, broadcast=True)
    futures = [client.submit(score_partition, str(Path(path).resolve()), g, int(starts[g]),
                             total, shared, header, disc, holdout, pure=False)
               for g in range(len(starts) - 1)]
    return [s for s in client.gather(futures) if s.n]


def group_rows_with_class(path: str, group: int, header: Dataset) -> int:
    """Rows with a class in one row group (on a worker): the fold index offsets — only the
    class column read and decoded."""
    name = header.class_attribute.name
    table = parquet_file(path).read_row_group(group, columns=[name])
    only = header.replace(attributes=(), X=np.empty((0, 0)), y=np.empty(0, np.int64))
    return int((batch_dataset(table, only, Path(path)).y >= 0).sum())


def count_folds(path: str, group: int, index: int, learner: Any, params: Mapping[str, Any],
                assign: Assignment, header: Dataset, discs: list[Any] | None, round_: int,
                rows_hint: int, subtraction: bool) -> tuple[list[Any], float]:
    """One row group's fold models (on a worker): each row into its own fold's model
    under subtraction, else into every other scored fold's model with that fold's cut
    points (None for a fold neither needs)."""
    cpu = fold_cpu()
    part = row_group(path, group, 0, 0, header, None, test=False)
    fold = assign.of(index, part.n_instances, round_)
    models: list[Any] = []
    for f in range(assign.folds):
        if not subtraction and f not in assign.scored:
            models.append(None)
            continue
        m = out_of_core_model(learner, dict(params),
                              fold_seed(assign.seed, round_, assign.fold_id(f)), one_pass=True)
        disc = None if discs is None else discs[f]
        m.start(disc.transform(header) if disc is not None else header, rows_hint)
        rows = np.flatnonzero(fold == f if subtraction else fold != f)
        if rows.size:
            mine = part.take(rows)
            m.partial_fit(disc.transform(mine) if disc is not None else mine)
        models.append(m)
    return models, fold_cpu() - cpu


def merge_folds(a: tuple[list[Any], float], b: tuple[list[Any], float]
                ) -> tuple[list[Any], float]:
    """Two row groups' fold models added up, fold by fold (on a worker)."""
    cpu = fold_cpu()
    merged = [None if x is None else x.merge(y) for x, y in zip(a[0], b[0])]
    return merged, a[1] + b[1] + fold_cpu() - cpu


def score_folds(path: str, group: int, index: int, models: list[Any], header: Dataset,
                discs: list[Any] | None, assign: Assignment, round_: int, keep: bool
                ) -> tuple[list[LossSums], float, tuple | None]:
    """One row group's loss sums per fold, each row scored by its fold's model (on a
    worker); with `keep`, also its scored rows' (folds, indices, probabilities, classes)
    in the file's order."""
    cpu = fold_cpu()
    part = row_group(path, group, 0, 0, header, None, test=False)
    fold = assign.of(index, part.n_instances, round_)
    out, kept = [], []
    for f in range(assign.folds):
        rows = np.flatnonzero(fold == f)
        if not rows.size or f not in assign.scored:
            out.append(LossSums(0, 0, 0.0, 0.0, 0.0))
            continue
        test = part.take(rows)
        proba = scored_proba(models[f], None if discs is None else discs[f], test)
        out.append(loss_sums(proba, test.y))
        if keep:
            kept.append((np.full(rows.size, f), index + rows, proba, test.y))
    cpu = fold_cpu() - cpu
    if not kept:
        return out, cpu, None
    folds, idx, proba, y = (np.concatenate(c) for c in zip(*kept))
    back = np.argsort(idx, kind="stable")
    return out, cpu, (folds[back], idx[back], proba[back], y[back])


def cv_distributed(client: Any, path, learner, params, assign, header, discs, cv, round_,
                   total, subtraction, keep: Keep | None) -> list[Any]:
    """One round on the workers: fold tables per row group, a tree reduction (neighbours
    pair by pair: the client receives only the k summed fold models), subtraction on the
    client, then every row group scored by the workers (the models sent once), its
    predictions — when kept — streamed back to `keep` group by group in the file's order
    (`in_order`: at most `IN_FLIGHT` groups' predictions held anywhere at once)."""
    scored = assign.scored
    src = str(Path(path).resolve())
    starts = row_group_starts(path)
    groups = len(starts) - 1
    sizes = client.gather([client.submit(group_rows_with_class, src, g, header, pure=False)
                           for g in range(groups)])
    index = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    level = [client.submit(count_folds, src, g, int(index[g]), learner, dict(params or {}),
                           assign, header, discs, round_, total, subtraction, pure=False)
             for g in range(groups)]
    while len(level) > 1:
        level = [client.submit(merge_folds, level[i], level[i + 1], pure=False)
                 if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)]
    models, counting_cpu = level[0].result()
    cpu = fold_cpu()
    if subtraction:
        whole = copy.deepcopy(models[0])
        for m in models[1:]:
            whole.merge(m)
        models = [copy.deepcopy(whole).merge(m, sign=-1) if f in scored else None
                  for f, m in enumerate(models)]
    counting_cpu += fold_cpu() - cpu
    shared = client.scatter(models, broadcast=True)
    parts = []
    for g, (sums, cpu, rows) in in_order(client, [
            (score_folds, src, g, int(index[g]), shared, header, discs, assign, round_,
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


def in_order(client: Any, calls: list[tuple]) -> Iterator[tuple[int, Any]]:
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
