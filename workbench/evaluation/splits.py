"""Repeated k-fold partitions: `make_splits` and their CSV form ``round,index,fold``.

A split matrix is an int64 array of shape (rounds, n); entry [r, i] is the fold (0..k-1) in
which instance i is *tested* in round r (it is a training instance in every other fold of
that round). Indices refer to the rows of the evaluated data set, i.e. the data with its
missing-class rows removed (see `workbench.evaluation.cv.evaluation_data`).

Round r is drawn from ``numpy.random.default_rng([seed, r])``, so it depends only on
(n, folds, seed, r, stratify, labels) and not on how many rounds were requested.

`row_folds` is the other assignment (``assignment="rows"``): the fold of a row is a seeded
function of its index alone, so a file read chunk by chunk (out of core, on any number of
workers) gets the same folds as the whole data in memory: consecutive rows are taken in
blocks of k, and each block's rows go to the k folds in the order of a hash of (seed,
round, row index) — a random permutation per block, fold sizes differing by at most one.
"""

from __future__ import annotations

import csv
from os import PathLike
from pathlib import Path

import numpy as np

from workbench.errors import WorkbenchError

CSV_HEADER = ("round", "index", "fold")


def _check_counts(n: int, rounds: int, folds: int, seed: int) -> None:
    for name, value in (("n", n), ("rounds", rounds), ("folds", folds), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise WorkbenchError(f"make_splits: {name} must be an integer, got {value!r}")
    if rounds < 1:
        raise WorkbenchError(f"make_splits: rounds must be >= 1, got {rounds}")
    if folds < 2:
        raise WorkbenchError(f"make_splits: folds must be >= 2, got {folds}")
    if seed < 0:
        raise WorkbenchError(f"make_splits: seed must be >= 0, got {seed}")
    if n < folds:
        raise WorkbenchError(
            f"make_splits: cannot make {folds} non-empty folds from {n} instance(s)"
        )


def round_rng(seed: int, round_: int) -> np.random.Generator:
    """The generator of round `round_`: seeded from (seed, round) only."""
    return np.random.default_rng([int(seed), int(round_)])


def make_splits(
    n: int,
    rounds: int,
    folds: int,
    seed: int,
    stratify: bool = False,
    labels: np.ndarray | None = None,
    assignment: str = "shuffle",
) -> np.ndarray:
    """Fold ids (rounds, n): a fresh random partition per round, sizes differing by <= 1.

    Unstratified: a random permutation of the instances is dealt round-robin to the folds.
    Stratified: the instances of each class (classes in code order) are shuffled and the
    concatenation of these shuffled lists is dealt round-robin. Each class is then spread
    over the folds with per-fold counts differing by at most one, and, because the whole
    concatenation is dealt as one sequence, overall fold sizes also differ by at most one.
    ``assignment="rows"``: `row_folds` (not stratified). Pure function of its arguments.
    """
    _check_counts(n, rounds, folds, seed)
    if assignment not in ("shuffle", "rows"):
        raise WorkbenchError(f"make_splits: assignment must be 'shuffle' or 'rows', got "
                             f"{assignment!r}")
    if assignment == "rows":
        if stratify:
            raise WorkbenchError("make_splits: assignment 'rows' (a function of the row "
                                 "index) cannot stratify")
        return np.stack([row_folds(0, n, folds, seed, r) for r in range(rounds)])
    if stratify:
        if labels is None:
            raise WorkbenchError("make_splits: stratify=True needs labels")
        labels = np.asarray(labels)
        if labels.shape != (n,):
            raise WorkbenchError(
                f"make_splits: labels has shape {labels.shape}, expected ({n},)"
            )
        groups = [np.flatnonzero(labels == c) for c in np.unique(labels)]
    out = np.empty((rounds, n), dtype=np.int64)
    deal = np.arange(n, dtype=np.int64) % folds
    for r in range(rounds):
        rng = round_rng(seed, r)
        if stratify:
            order = np.concatenate([rng.permutation(g) for g in groups])
        else:
            order = rng.permutation(n)
        out[r, order] = deal
    return out


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a bijective, well-mixed 64-bit hash (uint64 arrays)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


ROW_RANKS_MAX = 32
"""Rows of at most this many fold keys are ranked by `rowops.row_ranks` (counting, k²
compares a key), longer ones by numpy's argsort."""


def row_folds(start: int, n: int, folds: int, seed: int, round_: int) -> np.ndarray:
    """Folds (int64, 0..folds−1) of rows start .. start+n−1 under ``assignment="rows"``
    (see the module docstring): the same whatever the chunking."""
    k = int(folds)
    first, stop = (int(start) // k) * k, -(-(int(start) + int(n)) // k) * k
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(int(seed) & 0xFFFFFFFF) * _GOLDEN
                   + np.uint64(int(round_) & 0xFFFFFFFF))
        keys = _mix(np.arange(first, stop, dtype=np.uint64) * _GOLDEN ^ key)
    if keys.size >= 1 << 12 and k <= ROW_RANKS_MAX:  # numpy's argsort of short rows is slow
        from workbench.rowops import row_ranks  # numba: not on the import path

        out = row_ranks(keys.reshape(-1, k))
    else:
        order = np.argsort(keys.reshape(-1, k), axis=1, kind="stable")
        out = np.empty(order.shape, dtype=np.int64)
        np.put_along_axis(out, order, np.arange(k, dtype=np.int64)[None, :], axis=1)
    return out.reshape(-1)[int(start) - first: int(start) - first + int(n)]


def fold_indices(splits: np.ndarray, round_: int, fold: int) -> tuple[np.ndarray, np.ndarray]:
    """(train_idx, test_idx) of one fold, both ascending int64 arrays."""
    row = np.asarray(splits)[round_]
    return np.flatnonzero(row != fold), np.flatnonzero(row == fold)


def check_splits(splits: np.ndarray, n: int | None = None, folds: int | None = None,
                 where: str = "splits") -> np.ndarray:
    """Validate a split matrix (shape, fold range, no empty fold); return it as int64."""
    s = np.asarray(splits)
    if s.ndim != 2 or s.shape[0] < 1:
        raise WorkbenchError(f"{where}: expected a (rounds, n) array, got shape {s.shape}")
    if not np.issubdtype(s.dtype, np.integer):
        raise WorkbenchError(f"{where}: fold ids must be integers, got dtype {s.dtype}")
    s = s.astype(np.int64, copy=False)
    if n is not None and s.shape[1] != n:
        raise WorkbenchError(f"{where}: splits cover {s.shape[1]} instances, data has {n}")
    k = int(s.max()) + 1 if s.size else 0
    if folds is not None:
        if k > folds:
            raise WorkbenchError(f"{where}: fold id {k - 1} out of range for {folds} folds")
        k = folds
    if s.size and int(s.min()) < 0:
        raise WorkbenchError(f"{where}: negative fold id {int(s.min())}")
    if k < 2:
        raise WorkbenchError(f"{where}: need at least 2 folds, found {k}")
    for r in range(s.shape[0]):
        counts = np.bincount(s[r], minlength=k)
        empty = np.flatnonzero(counts == 0)
        if empty.size:
            raise WorkbenchError(f"{where}: round {r} has no instance in fold {int(empty[0])}")
    return s


def n_folds(splits: np.ndarray) -> int:
    """Number of folds of a (validated) split matrix."""
    return int(np.asarray(splits).max()) + 1


def save_splits(splits: np.ndarray, path: str | PathLike) -> None:
    """Write ``round,index,fold`` rows (0-based, header line first), round-major."""
    s = check_splits(splits)
    rounds, n = s.shape
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(CSV_HEADER)
        idx = np.arange(n)
        for r in range(rounds):
            w.writerows(zip([r] * n, idx.tolist(), s[r].tolist()))


def load_splits(path: str | PathLike, n: int | None = None,
                folds: int | None = None) -> np.ndarray:
    """Read a ``round,index,fold`` CSV into a (rounds, n) array, validating everything.

    Rounds must be 0..R-1 and every round must list every index 0..n-1 exactly once
    (n = the given `n`, or 1 + the largest index seen). Rows may come in any order.
    Errors are `WorkbenchError`s naming the file and, where possible, the line.
    """
    p = Path(path)
    try:
        fh = open(p, newline="")
    except OSError as exc:
        raise WorkbenchError(f"{p}: cannot read split file: {exc.strerror}") from None
    rows: list[tuple[int, int, int]] = []
    lines: list[int] = []
    with fh:
        reader = csv.reader(fh)
        header = None
        for row in reader:
            if not row or all(not c.strip() for c in row):
                continue
            header = [c.strip().lower() for c in row]
            break
        if header is None:
            raise WorkbenchError(f"{p}: empty split file (expected header round,index,fold)")
        if tuple(header) != CSV_HEADER:
            raise WorkbenchError(
                f"{p}:{reader.line_num}: expected header 'round,index,fold', "
                f"got '{','.join(header)}'"
            )
        for row in reader:
            if not row or all(not c.strip() for c in row):
                continue
            line = reader.line_num
            if len(row) != 3:
                raise WorkbenchError(f"{p}:{line}: expected 3 fields, got {len(row)}")
            try:
                vals = tuple(int(c.strip()) for c in row)
            except ValueError:
                raise WorkbenchError(
                    f"{p}:{line}: fields must be integers, got '{','.join(row)}'"
                ) from None
            for name, v in zip(CSV_HEADER, vals):
                if v < 0:
                    raise WorkbenchError(f"{p}:{line}: negative {name} {v}")
            if n is not None and vals[1] >= n:
                raise WorkbenchError(
                    f"{p}:{line}: index {vals[1]} out of range for {n} instances"
                )
            if folds is not None and vals[2] >= folds:
                raise WorkbenchError(
                    f"{p}:{line}: fold {vals[2]} out of range for {folds} folds"
                )
            rows.append(vals)  # type: ignore[arg-type]
            lines.append(line)
    if not rows:
        raise WorkbenchError(f"{p}: no split rows after the header")
    arr = np.array(rows, dtype=np.int64)
    size = n if n is not None else int(arr[:, 1].max()) + 1
    return fold_matrix(arr[:, 0], arr[:, 1], arr[:, 2], str(p), size, folds, lines)


def _first_duplicate(rounds: np.ndarray, index: np.ndarray, size: int) -> int | None:
    """Position of the first (round, index) pair seen before, or None."""
    keys = rounds.astype(np.int64) * size + index
    _, first = np.unique(keys, return_index=True)
    if first.size == keys.size:
        return None
    repeated = np.ones(keys.size, bool)
    repeated[first] = False
    return int(np.flatnonzero(repeated)[0])


def fold_matrix(rounds: np.ndarray, index: np.ndarray, fold: np.ndarray, where: str,
                size: int | None = None, folds: int | None = None,
                lines: list[int] | None = None) -> np.ndarray:
    """The (rounds, n) fold-id matrix of (round, index, fold) triples (0-based, any order),
    checked: rounds 0..R-1, every index 0..n-1 once per round (n = `size`, or 1 + the
    largest index), no empty fold. Errors name `where` (and a triple's line, given
    `lines`)."""
    rounds, index, fold = (np.asarray(a, dtype=np.int64) for a in (rounds, index, fold))
    if rounds.size == 0:
        raise WorkbenchError(f"{where}: no fold rows")
    for name, a in (("round", rounds), ("index", index), ("fold", fold)):
        if int(a.min()) < 0:
            raise WorkbenchError(f"{where}: negative {name} {int(a.min())}")
    size = int(index.max()) + 1 if size is None else size
    if int(index.max()) >= size:
        raise WorkbenchError(f"{where}: index {int(index.max())} out of range for {size} "
                             "instances")
    twice = _first_duplicate(rounds, index, size)
    if twice is not None:
        at = f"{where}:{lines[twice]}" if lines is not None else where
        raise WorkbenchError(f"{at}: index {int(index[twice])} listed twice in round "
                             f"{int(rounds[twice])}")
    n_rounds = int(rounds.max()) + 1
    out = np.full((n_rounds, size), -1, dtype=np.int64)
    out[rounds, index] = fold
    for r in range(n_rounds):
        missing = np.flatnonzero(out[r] < 0)
        if missing.size == size:
            raise WorkbenchError(f"{where}: round {r} is missing (rounds must be "
                                 f"0..{n_rounds - 1})")
        if missing.size:
            raise WorkbenchError(
                f"{where}: round {r} has no row for index {int(missing[0])}"
                + (f" (and {missing.size - 1} more)" if missing.size > 1 else ""))
    return check_splits(out, n=size, folds=folds, where=where)


FOLD_COLUMNS = {"round": ("round", "repeat", "repetition"),
                "index": ("index", "row", "rowid", "row_id"), "fold": ("fold",)}
"""A fold file's columns and the names they may go by (OpenML's task splits: repeat,
rowid, fold, type)."""


def read_fold_table(path: str | PathLike) -> dict[str, np.ndarray]:
    """The fold-id matrices of a CSV or Parquet file of (round, index, fold) rows, keyed
    by its ``dataset`` column (one key, ``""``, without it). Column names are matched
    case-blind, with OpenML's names as aliases (repeat, rowid); with a ``type`` column
    only its TEST rows count (a row's test fold). Errors name the file."""
    p = Path(path)
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq  # (only for a Parquet fold file)

            frame = pq.read_table(p).to_pandas()
        else:
            import pandas as pd

            frame = pd.read_csv(p, dtype=str, skipinitialspace=True)
    except FileNotFoundError:
        raise WorkbenchError(f"{p}: no such fold file") from None
    except Exception as exc:  # noqa: BLE001 - any reader failure is the file's fault
        raise WorkbenchError(f"{p}: cannot read fold file ({exc})") from None
    names = {str(c).strip().lower(): c for c in frame.columns}
    picked = {}
    for want, aliases in FOLD_COLUMNS.items():
        found = [names[a] for a in aliases if a in names]
        if not found:
            raise WorkbenchError(f"{p}: no '{want}' column (columns: "
                                 f"{', '.join(map(str, frame.columns))})")
        picked[want] = found[0]
    if "type" in names:
        frame = frame[frame[names["type"]].astype(str).str.strip().str.upper() == "TEST"]
    out = {}
    groups = frame.groupby(names["dataset"], sort=False) if "dataset" in names else [
        ("", frame)]
    for name, part in groups:
        where = f"{p} (data set {name})" if name != "" else str(p)
        try:
            cols = [part[picked[c]].astype(str).str.strip().astype(np.int64).to_numpy()
                    for c in ("round", "index", "fold")]
        except ValueError:
            raise WorkbenchError(f"{where}: round, index and fold must be integers") from None
        out[str(name)] = fold_matrix(*cols, where)
    if not out:
        raise WorkbenchError(f"{p}: no fold rows")
    return out
