"""The run directory: atomic per-fold and per-(data set, learner) results.

Layout of a run directory ``RUN_DIR``::

    config.yaml        the resolved config (committed)
    config_hash        sha256 of the result-determining part of the config (committed)
    metadata.json      versions, machine, times, plan, invocations (committed)
    summary.csv        one row per complete (data set, learner) (committed; regenerated)
    fold_metrics.csv   per-fold values: dataset, learner, round, fold, one column per
                       metric (committed; regenerated; what the report reads without
                       predictions/)
    predictions/       per-fold predictions + per-pair summaries (git-ignored, can be large)
      <dataset>/<learner>/
        round-000-fold-0.npz   while the pair runs: test_index int64, y int64, proba
                               float64 (n_test, K), and round, fold, times, … as one
                               JSON member ``scalars``
        predictions.parquet    once the pair is complete, all its folds in one file
                               (`consolidate_pair`, `load_predictions`)
        summary.json           written when every fold is stored: the pair is *complete*
                               iff this file exists; the summary metrics plus
                               ``per_fold: {metric: [values in (round, fold) order]}``

Every file is written to a temporary name in the same directory and moved into place with
`os.replace`, so a crash (even SIGKILL) never leaves a half-written result behind (only a
stale ``.*.tmp`` file, which the next run removes).

*Summary-only* directories (a published reproduction: ``summary.csv`` and
``fold_metrics.csv`` without ``predictions/``) are understood: a pair with a row in
``summary.csv`` and no ``summary.json`` is complete, and its per-fold values come from
``fold_metrics.csv``. A file that cannot be read (zero bytes, truncated) raises
`StoreCorrupt` naming its path.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import yaml

from workbench.data.arrow import from_numpy, pa, pq
from workbench.errors import WorkbenchError
from workbench.evaluation.summary import (CALIBRATION_KEY, CONFUSION_KEY, TUNED_KEY,
                                         fold_metric_names)
from workbench.fileio import (PARQUET_OPTIONS, atomic_path, atomic_write_bytes,
                              atomic_write_text, parquet_file, read_parquet)
from workbench.resources import run_dir_path

if TYPE_CHECKING:  # pandas is imported where a DataFrame is made: a run writes its CSVs
    import pandas as pd  # without it (about 0.2 s of CPU per process)

    from workbench.evaluation.outofcore import PredictionWriter

PREDICTIONS = "predictions"
SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
FOLD_METRICS_CSV = "fold_metrics.csv"
PER_FOLD_KEY = "per_fold"
REUSED_KEY = "reused_from"
"""In a pair's ``summary.json``: the stored run it was copied from (``baselines:``)."""
FOLD_METRICS_COLUMNS = ["dataset", "learner", "round", "fold", "metric", "value"]
CONFIG_YAML = "config.yaml"
CONFIG_HASH = "config_hash"
METADATA_JSON = "metadata.json"

_FOLD_RE = re.compile(r"^round-(\d+)-fold-(\d+)\.npz$")
DATA_HASH_KEY = "data_sha256"
VERSION_KEY = "output_version"
"""The learner's output version (`Learner.output_version`) a fold or summary was made by:
a resume recomputes results of another version."""
CODE_KEY = "code"
"""The code that made a fold (`provenance.code_identity`: version and commit)."""
ROWS_FILE_KEY = "rows_file"
"""A fold record whose rows a round file holds (out of core: `round_writer`) names it here;
its own arrays are then empty."""
FILES_KEY = "files"
"""A summary's record of the files it was made from: ``{name: {"sha256", "rows"}}`` (the
pair's ``predictions.parquet``), which `verify_pair` checks."""
SCHEMA_KEY = "schema_version"
SCHEMA_VERSION = 2
"""The run directory's layout version, in ``metadata.json`` (1: before it was recorded;
2: data hashes, protocol plans, model_bytes). A newer version than this is refused."""


class StoreCorrupt(WorkbenchError):
    """A stored result file that cannot be read; `path` names it."""

    def __init__(self, path: Path, reason: str) -> None:
        reason = " ".join(reason.split())  # (one line, whatever the reader said)
        super().__init__(f"{path}: corrupt stored result ({reason})")
        self.path = Path(path)


# ----- atomic writes --------------------------------------------------------------------------
def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)  # paths, enums, anything else: its text


# ----- names and paths ------------------------------------------------------------------------
def safe_name(name: str) -> str:
    """A file-system-safe directory name for a data set or learner display name."""
    out = re.sub(r"[^A-Za-z0-9._+=,@-]", "_", name)
    return out if out not in ("", ".", "..") else f"_{out}_"


def pair_dir(run_dir: Path, dataset: str, learner: str) -> Path:
    return Path(run_dir) / PREDICTIONS / safe_name(dataset) / safe_name(learner)


def fold_path(run_dir: Path, dataset: str, learner: str, round_: int, fold: int) -> Path:
    return pair_dir(run_dir, dataset, learner) / f"round-{round_:03d}-fold-{fold}.npz"


# ----- folds ----------------------------------------------------------------------------------
_SCALARS = "scalars"
"""The npz member holding a fold's scalars (round, fold, times, …) as JSON text."""


def write_fold(run_dir: Path, dataset: str, learner: str, record: dict[str, Any]) -> Path:
    """Store one fold's record atomically (npz); returns its path. Not fsync'ed: a fold
    file lives until its pair is consolidated (durably), and a fold lost or truncated by
    an operating-system crash reads as corrupt on resume and is recomputed — so a run pays
    one fsync per pair instead of one per fold.

    `record` is `FoldResult.to_record()` plus ``y`` (true classes of the test rows):
    arrays ``test_index``, ``y``, ``proba`` (float64) and scalars round, fold, n_train,
    the four times, ``preprocessing`` and ``cuts`` (JSON text, '' for none), the scalars
    together as one JSON member.
    """
    path = fold_path(run_dir, dataset, learner, int(record["round"]), int(record["fold"]))
    arrays: dict[str, np.ndarray] = {
        "test_index": np.asarray(record["test_index"], dtype=np.int64),
        "y": np.asarray(record["y"], dtype=np.int64),
        "proba": np.asarray(record["proba"], dtype=np.float64),
    }
    scalars = {key: "" if value is None else value.item() if isinstance(value, np.generic)
               else value for key, value in record.items() if key not in arrays}
    arrays[_SCALARS] = np.array(json.dumps(scalars))  # one member: each costs a header
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue(), durable=False)
    return path


def npz_folds(run_dir: Path, dataset: str, learner: str) -> set[tuple[int, int]]:
    """(round, fold) of the pair's per-fold files (folds of a pair still running)."""
    d = pair_dir(run_dir, dataset, learner)
    out = set()
    if d.is_dir():
        for p in d.iterdir():
            m = _FOLD_RE.match(p.name)
            if m:
                out.add((int(m.group(1)), int(m.group(2))))
    return out


def stored_folds(run_dir: Path, dataset: str, learner: str) -> set[tuple[int, int]]:
    """(round, fold) pairs already stored for one (data set, learner): its per-fold files
    and its consolidated ``predictions.parquet``."""
    out = npz_folds(run_dir, dataset, learner)
    path = parquet_path(run_dir, dataset, learner)
    if path.is_file():
        t = _read_parquet(path, columns=["round", "fold"])
        out |= set(zip(t.column("round").to_pylist(), t.column("fold").to_pylist()))
    return out


# ----- a complete pair's predictions: one Parquet file ------------------------------------
PAIR_PARQUET = "predictions.parquet"
_FOLD_SCALARS = ("n_train", "train_cpu_seconds", "test_cpu_seconds", "train_wall_seconds",
                 "test_wall_seconds", "model_bytes", "iterations", "peak_rss_bytes",
                 "compile_seconds", "compiled_kernels", VERSION_KEY)
_FOLD_TEXT = ("preprocessing", "cuts", DATA_HASH_KEY, "fit_report", "measures", CODE_KEY)


def parquet_path(run_dir: Path, dataset: str, learner: str) -> Path:
    return pair_dir(run_dir, dataset, learner) / PAIR_PARQUET


def _read_parquet(path: Path, columns: list[str] | None = None):
    try:
        return read_parquet(path, columns=columns)
    except FileNotFoundError:
        raise
    except Exception as exc:  # truncated, altered (a page's checksum fails) or not Parquet
        what = "a page's checksum does not match its content: altered after it was " \
            "written" if "CRC" in str(exc) else f"{type(exc).__name__}: {exc}"
        raise StoreCorrupt(path, what) from None


def _number(value: Any) -> float:
    if value is None or (isinstance(value, str) and not value):
        return float("nan")
    return float(value)


def _arrow_text(texts: list[str], sizes: list[int]) -> pa.DictionaryArray:
    """Each text repeated sizes[i] times, dictionary-encoded (int32 indices, the dictionary
    in order of first appearance: what ``pa.array(...).dictionary_encode()`` gives)."""
    index: dict[str, int] = {}
    codes = np.array([index.setdefault(t, len(index)) for t in texts], np.int32)
    data = [t.encode("utf-8") for t in index]
    offsets = np.zeros(len(data) + 1, np.int32)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    dictionary = pa.Array.from_buffers(pa.string(), len(data), [
        None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])
    return pa.DictionaryArray.from_arrays(from_numpy(np.repeat(codes, sizes)), dictionary)


# ----- out of core: a round's predictions streamed to a file as they are made ---------------
def round_path(run_dir: Path, dataset: str, learner: str, round_: int) -> Path:
    return pair_dir(run_dir, dataset, learner) / f"round-{round_:03d}.parquet"


def round_writer(run_dir: Path, dataset: str, learner: str, round_: int
                 ) -> "PredictionWriter":
    """The writer of a round's test rows as they are scored (round, fold, index, y, p_0 …,
    in the file's order; the file appears only when it is closed)."""
    from workbench.evaluation.outofcore import PredictionWriter

    return PredictionWriter(round_path(run_dir, dataset, learner, round_))


def round_batches(path: Path, columns: list[str] | None = None, rows: int = 1 << 16):
    """A round file's record batches in order (`StoreCorrupt` when it cannot be read); one
    iterator per row group (over a whole file, pyarrow's keeps memory it no longer needs:
    apache/arrow#39808)."""
    try:
        pf = parquet_file(path)
        for group in range(pf.metadata.num_row_groups):
            yield from pf.iter_batches(batch_size=rows, columns=columns, row_groups=[group])
    except FileNotFoundError:
        raise StoreCorrupt(path, "missing") from None
    except Exception as exc:
        raise StoreCorrupt(path, f"{type(exc).__name__}: {exc}") from None


def _consolidate_rounds(run_dir: Path, dataset: str, learner: str,
                        recs: list[dict[str, Any]]) -> Path:
    """`consolidate_pair` for out-of-core folds: each round file's rows copied batch by
    batch into ``predictions.parquet`` with their fold's scalars (never every row in
    memory); the round files and fold records removed afterwards."""
    where = {(int(r["round"]), int(r["fold"])): i for i, r in enumerate(recs)}
    files = sorted({str(r[ROWS_FILE_KEY]) for r in recs})
    folder = pair_dir(run_dir, dataset, learner)
    path = parquet_path(run_dir, dataset, learner)
    with atomic_path(path) as tmp:  # (renamed onto `path` when every round is copied)
        writer = None
        try:
            for name in files:
                for batch in round_batches(folder / name):
                    rounds = batch.column("round").to_numpy()
                    folds = batch.column("fold").to_numpy()
                    keys, inverse = np.unique(rounds.astype(np.int64) * (1 << 20) + folds,
                                              return_inverse=True)
                    of_key = np.array([where.get((int(k) >> 20, int(k) & 0xFFFFF), -1)
                                       for k in keys], dtype=np.int64)
                    if (of_key < 0).any():
                        raise StoreCorrupt(folder / name, "rows of a fold with no stored record")
                    row_pos = of_key[inverse]
                    proba = np.column_stack([batch.column(c).to_numpy() for c in
                                             batch.schema.names if c.startswith("p_")])
                    table = _rows_table(dataset, learner, recs, row_pos, rounds, folds,
                                        batch.column("index").to_numpy(),
                                        batch.column("y").to_numpy(), proba)
                    if writer is None:
                        writer = pq.ParquetWriter(str(tmp), table.schema, compression="zstd",
                                                  **PARQUET_OPTIONS)
                    writer.write_table(table)
        finally:
            if writer is not None:
                writer.close()
    for name in files:
        (folder / name).unlink(missing_ok=True)
    for r, f in npz_folds(run_dir, dataset, learner):
        fold_path(run_dir, dataset, learner, r, f).unlink(missing_ok=True)
    return path


def _text_column(texts: list[str], pos: np.ndarray) -> pa.DictionaryArray:
    """Row i's text ``texts[pos[i]]``, dictionary-encoded (the dictionary in order of first
    appearance in `texts`, as `_arrow_text` makes it)."""
    index: dict[str, int] = {}
    codes = np.array([index.setdefault(t, len(index)) for t in texts], np.int32)
    dictionary = _arrow_text(list(index), [0] * len(index)).dictionary
    return pa.DictionaryArray.from_arrays(from_numpy(codes[pos] if codes.size else
                                                     np.zeros(0, np.int32)), dictionary)


def _rows_table(dataset: str, learner: str, recs: list[dict[str, Any]], pos: np.ndarray,
                rounds: np.ndarray, folds: np.ndarray, index: np.ndarray, y: np.ndarray,
                proba: np.ndarray) -> pa.Table:
    """Rows of a pair's ``predictions.parquet``: dataset, learner, round, fold, index, y,
    p_0 … p_{K−1}, then the scalars of each row's fold (`recs[pos[i]]`)."""
    n = int(index.size)
    cols: dict[str, Any] = {"round": rounds.astype(np.int32), "fold": folds.astype(np.int32),
                            "index": index.astype(np.int64), "y": y.astype(np.int64)}
    for k in range(proba.shape[1]):
        cols[f"p_{k}"] = np.ascontiguousarray(proba[:, k], dtype=np.float64)
    for key in _FOLD_SCALARS:
        cols[key] = np.array([_number(r.get(key)) for r in recs], np.float64)[pos] \
            if recs else np.zeros(n)
    cols = {key: from_numpy(values) for key, values in cols.items()}
    zeros = np.zeros(n, np.int64)
    cols = {"dataset": _text_column([dataset], zeros),
            "learner": _text_column([learner], zeros)} | cols
    for key in _FOLD_TEXT:
        cols[key] = _text_column([str(r.get(key) or "") for r in recs], pos)
    return pa.table(cols)


def consolidate_pair(run_dir: Path, dataset: str, learner: str,
                     recs: list[dict[str, Any]] | None = None) -> Path:
    """Write every stored fold of a pair into one ``predictions.parquet`` — one row per
    tested instance: dataset, learner, round, fold, index, y, p_0 … p_{K−1} and the fold's scalars
    (times, n_train, model_bytes, iterations, peak RSS, preprocessing, cuts, data hash) — and remove
    its per-fold files (27,200 files for PAKDD 2013 become 680). `recs`: the pair's
    `read_folds`, when the caller has just read them. Folds whose rows a round file holds
    (`ROWS_FILE_KEY`: out of core) are copied from it batch by batch (`_consolidate_rounds`)."""
    recs = read_folds(run_dir, dataset, learner) if recs is None else recs
    if recs and all(r.get(ROWS_FILE_KEY) for r in recs):
        return _consolidate_rounds(run_dir, dataset, learner, recs)
    sizes = [int(np.asarray(r["test_index"]).size) for r in recs]
    pos = np.repeat(np.arange(len(recs)), sizes)
    table = _rows_table(
        dataset, learner, recs, pos,
        np.repeat([int(r["round"]) for r in recs], sizes),
        np.repeat([int(r["fold"]) for r in recs], sizes),
        np.concatenate([np.asarray(r["test_index"], np.int64) for r in recs]),
        np.concatenate([np.asarray(r["y"], np.int64) for r in recs]),
        np.concatenate([np.asarray(r["proba"], np.float64) for r in recs]))
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", **PARQUET_OPTIONS)
    path = parquet_path(run_dir, dataset, learner)
    atomic_write_bytes(path, buf.getvalue())
    for r, f in npz_folds(run_dir, dataset, learner):
        fold_path(run_dir, dataset, learner, r, f).unlink(missing_ok=True)
    return path


def file_record(path: Path) -> dict[str, Any]:
    """A stored file's SHA-256 and rows (Parquet: from its footer), for `FILES_KEY`."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    rows = pq.ParquetFile(path).metadata.num_rows if path.suffix == ".parquet" else None
    return {"sha256": digest.hexdigest(), "rows": rows}


def verify_pair(run_dir: Path, dataset: str, learner: str, row: dict[str, Any],
                checksum: bool = True) -> str | None:
    """What is wrong with the files a pair's summary `row` was made from (missing,
    truncated, another pair's…), or None when each is as recorded (or nothing was
    recorded: a summary-only pair, or one stored before files were recorded). Without
    `checksum` only what the file's footer says is compared (its rows: cheap)."""
    for name, want in (row.get(FILES_KEY) or {}).items():
        path = pair_dir(run_dir, dataset, learner) / name
        if not path.is_file():
            return f"{path} is missing"
        if not checksum:
            try:
                rows = pq.ParquetFile(path).metadata.num_rows
            except Exception as exc:  # truncated: no footer
                return f"{path} cannot be read ({' '.join(str(exc).split())})"
            if rows != want.get("rows"):
                return f"{path} has {rows} rows, its summary was made from {want.get('rows')}"
            continue
        try:
            got = file_record(path)
        except Exception as exc:  # truncated: no footer
            return f"{path} cannot be read ({' '.join(str(exc).split())})"
        if got["sha256"] != want.get("sha256"):
            return (f"{path} is not the file its summary was made from (sha256 "
                    f"{got['sha256'][:12]}…, recorded {str(want.get('sha256'))[:12]}…; "
                    f"{got['rows']} rows, recorded {want.get('rows')})")
    return None


def adopt_pair(run_dir: Path, dataset: str, learner: str, source: Path, source_learner: str,
               row: dict[str, Any], reused_from: dict[str, Any]) -> None:
    """Store a pair of another run (`source`, its learner column `source_learner`, its
    summary `row`) as this run's complete pair `learner`: its ``predictions.parquet`` when
    it has one (dataset/learner columns renamed), then its summary with ``reused_from``."""
    src = parquet_path(Path(source), dataset, source_learner)
    row = {k: v for k, v in row.items() if k != FILES_KEY}  # (the source's own files)
    if src.is_file():
        table = _read_parquet(src)
        n = table.num_rows
        for key, text in (("dataset", dataset), ("learner", learner)):
            col = _arrow_text([text], [n])
            if key in table.column_names:
                table = table.set_column(table.column_names.index(key), key, col)
            else:
                table = table.add_column(0 if key == "dataset" else 1, key, col)
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="zstd", **PARQUET_OPTIONS)
        dest = atomic_write_bytes(parquet_path(run_dir, dataset, learner), buf.getvalue())
        row[FILES_KEY] = {dest.name: file_record(dest)}
    write_summary(run_dir, dataset, learner, {**row, REUSED_KEY: reused_from})


def parquet_folds(path: Path) -> dict[tuple[int, int], dict[str, Any]]:
    """The fold records held in a pair's Parquet file (the form `read_fold` returns);
    `StoreCorrupt` when it cannot be read."""
    df = _read_parquet(path).to_pandas()
    pcols = sorted((c for c in df.columns if c.startswith("p_")), key=lambda c: int(c[2:]))
    out = {}
    for (r, f), g in df.groupby(["round", "fold"], sort=True):
        first = g.iloc[0]
        rec: dict[str, Any] = {"round": int(r), "fold": int(f),
                               "test_index": g["index"].to_numpy(np.int64),
                               "y": g["y"].to_numpy(np.int64),
                               "proba": g[pcols].to_numpy(np.float64)}
        for key in _FOLD_SCALARS:  # (files written before a field existed lack it)
            v = float(first[key]) if key in first.index else float("nan")
            rec[key] = "" if v != v else (int(v) if key in ("n_train", "compiled_kernels",
                                                          VERSION_KEY) else v)
        for key in _FOLD_TEXT:  # (files written before a field existed lack it)
            rec[key] = str(first[key]) if key in first.index else ""
        out[(int(r), int(f))] = rec
    return out


def load_predictions(run_dir: str | Path, dataset: str, learner: str
                     ) -> pd.DataFrame:
    """A pair's per-instance predictions as a DataFrame: round, fold, index, y, p_0 …"""
    import pandas as pd

    recs = read_folds(Path(run_dir), dataset, learner)
    frames = []
    for r in recs:
        part = pd.DataFrame({"round": r["round"], "fold": r["fold"],
                             "index": r["test_index"], "y": r["y"]})
        for k in range(r["proba"].shape[1]):
            part[f"p_{k}"] = r["proba"][:, k]
        frames.append(part)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def read_fold(path: Path) -> dict[str, Any]:
    """One stored fold as a dict: arrays stay arrays, 0-d entries become Python scalars.
    An unreadable file raises `StoreCorrupt`."""
    out: dict[str, Any] = {}
    try:
        with np.load(path, allow_pickle=False) as z:
            for key in z.files:
                value = z[key]
                if key == _SCALARS:
                    out.update(json.loads(value.item()))
                else:  # (files written before the scalars were one member have one each)
                    out[key] = value.item() if value.ndim == 0 else value
    except FileNotFoundError:
        raise
    except Exception as exc:  # zero bytes, truncated zip, bad member: all the same to us
        raise StoreCorrupt(path, f"{type(exc).__name__}: {exc}") from None
    for key in ("test_index", "proba", "y", "round", "fold"):
        if key not in out:
            raise StoreCorrupt(path, f"no '{key}'")
    return out


def read_folds(run_dir: Path, dataset: str, learner: str) -> list[dict[str, Any]]:
    """Every stored fold of one pair, ordered by (round, fold) (Parquet first, then the
    per-fold files of folds it does not hold)."""
    path = parquet_path(run_dir, dataset, learner)
    held = parquet_folds(path) if path.is_file() else {}
    for r, f in npz_folds(run_dir, dataset, learner) - set(held):
        held[(r, f)] = read_fold(fold_path(run_dir, dataset, learner, r, f))
    return [held[k] for k in sorted(held)]


# ----- pair summaries ----------------------------------------------------------------------
def summary_path(run_dir: Path, dataset: str, learner: str) -> Path:
    return pair_dir(run_dir, dataset, learner) / SUMMARY_JSON


def write_summary(run_dir: Path, dataset: str, learner: str, summary: dict[str, Any]) -> None:
    """Mark a pair complete: write its summary (metrics + times) atomically."""
    row = {"dataset": dataset, "learner": learner}
    row.update({k: v for k, v in summary.items() if k not in ("dataset", "learner")})
    atomic_write_json(summary_path(run_dir, dataset, learner), row)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            row = json.load(fh)
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreCorrupt(path, f"invalid JSON: {exc}") from None
    if not isinstance(row, dict) or "dataset" not in row or "learner" not in row:
        raise StoreCorrupt(path, "not a pair summary")
    return row


def _csv_row(run_dir: Path, dataset: str, learner: str) -> dict[str, Any] | None:
    """The pair's ``summary.csv`` row when the pair is summary-only: it has no directory of
    its own. A pair directory without ``summary.json`` is a pair being (re)computed, whose
    own stored folds are the truth, whatever an older ``summary.csv`` says."""
    if pair_dir(run_dir, dataset, learner).exists():
        return None
    return _csv_summaries(Path(run_dir)).get((dataset, learner))


def read_summary(run_dir: Path, dataset: str, learner: str) -> dict[str, Any] | None:
    """The pair's summary (``summary.json``, else the ``summary.csv`` row of a summary-only
    pair), None when the pair is not complete; `StoreCorrupt` when its ``summary.json``
    cannot be read."""
    path = summary_path(run_dir, dataset, learner)
    if path.is_file():
        return _read_json(path)
    return _csv_row(run_dir, dataset, learner)


def is_complete(run_dir: Path, dataset: str, learner: str) -> bool:
    """A summary is stored for the pair (its own ``summary.json``, or a ``summary.csv`` row
    of a summary-only pair)."""
    return summary_path(run_dir, dataset, learner).is_file() or \
        _csv_row(run_dir, dataset, learner) is not None


def iter_summaries(run_dir: Path, corrupt: list[Path] | None = None
                   ) -> Iterator[dict[str, Any]]:
    """Every stored pair summary (complete pairs only): the ``summary.json`` files, then the
    ``summary.csv`` rows of pairs that have none (summary-only results).

    An unreadable ``summary.json`` raises `StoreCorrupt`, or, when a `corrupt` list is
    given, is appended to it and skipped.
    """
    run_dir = Path(run_dir)
    root = run_dir / PREDICTIONS
    seen: set[tuple[str, str]] = set()
    if root.is_dir():
        for p in sorted(root.glob(f"*/*/{SUMMARY_JSON}")):
            try:
                row = _read_json(p)
            except StoreCorrupt:
                if corrupt is None:
                    raise
                corrupt.append(p)
                continue
            seen.add((str(row["dataset"]), str(row["learner"])))
            yield row
    for key, row in _csv_summaries(run_dir).items():
        if key not in seen and not pair_dir(run_dir, *key).exists():
            yield row


_CSV_CACHE: dict[Path, tuple[tuple, dict]] = {}


def _stamp(path: Path) -> tuple:
    try:
        st = path.stat()
    except OSError:
        return ()
    return (st.st_mtime_ns, st.st_size)


def _csv_summaries(run_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Pair summaries held only in ``summary.csv`` (+ per-fold values from
    ``fold_metrics.csv``), keyed by (data set, learner); cached by the files' stamps."""
    csv_path, fm_path = run_dir / SUMMARY_CSV, run_dir / FOLD_METRICS_CSV
    stamp = (_stamp(csv_path), _stamp(fm_path))
    hit = _CSV_CACHE.get(run_dir)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    out: dict[tuple[str, str], dict[str, Any]] = {}
    if stamp[0]:
        import pandas as pd

        try:
            df = pd.read_csv(csv_path)
            per_fold = _csv_per_fold(fm_path) if stamp[1] else {}
        except StoreCorrupt:
            raise
        except Exception as exc:  # an empty or truncated CSV
            raise StoreCorrupt(csv_path, f"{type(exc).__name__}: {exc}") from None
        if not {"dataset", "learner"} <= set(df.columns):
            raise StoreCorrupt(csv_path, "no dataset/learner columns")
        for rec in df.to_dict("records"):
            row = {k: _plain_scalar(v) for k, v in rec.items()}
            row = {k: v for k, v in row.items() if v is not None}
            key = (str(row["dataset"]), str(row["learner"]))
            row["dataset"], row["learner"] = key
            if key in per_fold:
                row[PER_FOLD_KEY] = dict(per_fold[key])
                if TUNED_KEY in row[PER_FOLD_KEY]:
                    row[TUNED_KEY] = row[PER_FOLD_KEY].pop(TUNED_KEY)
            out[key] = row
    _CSV_CACHE[run_dir] = (stamp, out)
    return out


def _csv_per_fold(path: Path) -> dict[tuple[str, str], dict[str, list[float]]]:
    import pandas as pd

    try:
        wide = pd.read_csv(path)
    except Exception as exc:
        raise StoreCorrupt(path, f"{type(exc).__name__}: {exc}") from None
    if not set(_FOLD_KEYS) <= set(wide.columns):
        raise StoreCorrupt(path, "missing dataset/learner/round/fold columns")
    wide = wide.sort_values(_FOLD_KEYS, kind="mergesort")
    metrics = [c for c in wide.columns if c not in (*_FOLD_KEYS, TUNED_KEY)]
    out = {}
    for (d, l), grp in wide.groupby(["dataset", "learner"], sort=False):
        out[(str(d), str(l))] = {m: [float(v) for v in grp[m]] for m in metrics
                                 if grp[m].notna().any()}
        if TUNED_KEY in grp and grp[TUNED_KEY].notna().any():
            out[(str(d), str(l))][TUNED_KEY] = ["" if v != v else str(v)
                                                for v in grp[TUNED_KEY]]
    return out


def _plain_scalar(value: Any) -> Any:
    """A CSV cell as plain Python (NaN → None, numpy scalars → Python)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def _has_pair_summaries(run_dir: Path) -> bool:
    root = Path(run_dir) / PREDICTIONS
    return root.is_dir() and next(root.glob(f"*/*/{SUMMARY_JSON}"), None) is not None


_SUMMARY_INT_COLUMNS = ("n_instances", "rounds", "folds")


def _summary_rows(run_dir: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """The pair summaries (without their ``per_fold`` lists) in plan order, and their
    columns: dataset, learner, n_instances, then the others in order of first appearance."""
    rows = [{k: v for k, v in row.items()
             if k not in (PER_FOLD_KEY, REUSED_KEY, VERSION_KEY, CODE_KEY, FILES_KEY,
                          CONFUSION_KEY, CALIBRATION_KEY, TUNED_KEY)}
            for row in iter_summaries(run_dir)]
    first = ["dataset", "learner", "n_instances"]
    seen = dict.fromkeys(k for row in rows for k in row)
    cols = [c for c in first if c in seen or not rows] + [c for c in seen if c not in first]
    rank = _plan_rank(run_dir)
    rows.sort(key=lambda r: rank(r["dataset"], r["learner"]))
    return cols, rows


def load_pair_arrays(run_dir: str | Path, key: str) -> dict[tuple[str, str], np.ndarray]:
    """Each complete pair's array stored under `key` in its summary — ``confusion`` (the
    confusion matrix summed over its rounds; rows true classes) or ``calibration`` (the
    calibration bins' sums) — where it holds one (runs summarised before they did, and
    copies committed without predictions, have none)."""
    out = {}
    for row in iter_summaries(Path(run_dir)):
        if isinstance(row.get(key), list):
            out[(str(row["dataset"]), str(row["learner"]))] = np.asarray(row[key])
    return out


def load_summary(run_dir: str | Path) -> pd.DataFrame:
    """One row per complete (data set, learner): dataset, learner, n_instances + metrics.

    Reads the per-pair summaries under ``predictions/`` (without their ``per_fold`` lists,
    see `load_fold_metrics`); a run directory committed without its (git-ignored)
    predictions falls back to ``summary.csv``.
    """
    import pandas as pd

    run_dir = Path(run_dir)
    if not _has_pair_summaries(run_dir) and (run_dir / SUMMARY_CSV).is_file():
        df = pd.read_csv(run_dir / SUMMARY_CSV)  # summary-only: the file as it is, less
        # values are floats (an integral mean such as a byte count reads back as int)
        floats = [c for c in df.columns if c not in _SUMMARY_INT_COLUMNS
                  and pd.api.types.is_integer_dtype(df[c])]
        df = df.astype({c: np.float64 for c in floats})
        own = [pair_dir(run_dir, str(d), str(l)).exists()  # pairs being recomputed
               for d, l in zip(df["dataset"], df["learner"])]
        return df[~np.asarray(own, dtype=bool)].reset_index(drop=True) if any(own) else df
    cols, rows = _summary_rows(run_dir)
    return pd.DataFrame(rows, columns=cols)


def _plan_rank(run_dir: Path) -> Any:
    """The sort key of a (data set, learner) pair: its place in the run's plan
    (metadata.json; pairs not in it after those that are), then the names."""
    order = _plan_order(run_dir)
    if order is None:
        return lambda d, l: (d, l)
    ds_rank = {d: i for i, d in enumerate(order[0])}
    ln_rank = {l: i for i, l in enumerate(order[1])}
    return lambda d, l: (ds_rank.get(d, len(ds_rank)), d, ln_rank.get(l, len(ln_rank)), l)


def _in_plan_order(run_dir: Path, df: pd.DataFrame, keys: list[str]
                   ) -> pd.DataFrame:
    """`df` sorted by data set and learner in plan order (`_plan_rank`), then `keys`."""
    rank = _plan_rank(run_dir)
    rest = [df[k].tolist() for k in keys[2:]]
    pairs = [rank(d, l) for d, l in zip(df["dataset"].tolist(), df["learner"].tolist())]
    order = sorted(range(len(df)), key=lambda i: (pairs[i], *(r[i] for r in rest)))
    return df.iloc[order].reset_index(drop=True)


FOLD_VALUE_DIGITS = 10  # significant digits kept per fold value (losses)
FOLD_TIME_DIGITS = 6  # ... per fold time (CPU seconds are not reproducible beyond this)


def _fold_value(metric: str, value: Any) -> float:
    """A per-fold value rounded as `load_fold_metrics` and ``fold_metrics.csv`` keep it."""
    if value is None:
        return float("nan")
    digits = FOLD_TIME_DIGITS if metric.endswith("_seconds") else FOLD_VALUE_DIGITS
    return float(f"{float(value):.{digits}g}")


def fold_metrics_rows(row: dict[str, Any]) -> list[tuple[str, str, int, int, str, float]]:
    """The long-format per-fold rows of one pair summary (none if it has no ``per_fold``).

    Values are in (round, fold) order; fold i is (i // folds, i % folds); each is rounded
    to `FOLD_VALUE_DIGITS` (times: `FOLD_TIME_DIGITS`) significant digits.
    """
    per_fold = row.get(PER_FOLD_KEY)
    if not isinstance(per_fold, dict):
        return []
    folds = int(row.get("folds") or 0)
    out = []
    for metric, values in per_fold.items():
        k = folds if folds > 0 else len(values)
        for i, value in enumerate(values):
            out.append((str(row["dataset"]), str(row["learner"]), i // k, i % k, str(metric),
                        _fold_value(str(metric), value)))
    return out


_FOLD_KEYS = ["dataset", "learner", "round", "fold"]


def _fold_keys(row: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    """(data set, learner, round, fold) of each fold of a pair summary, in order."""
    k = int(row.get("folds") or 0)
    n = len(row.get(TUNED_KEY) or [])
    k = k if k > 0 else max(n, 1)
    return [(str(row["dataset"]), str(row["learner"]), i // k, i % k) for i in range(n)]


def load_fold_metrics(run_dir: str | Path) -> pd.DataFrame:
    """Per-fold metric values, long format: dataset, learner, round, fold, metric, value.

    Read from the ``per_fold`` lists of the pair summaries under ``predictions/``; a run
    directory committed without its predictions falls back to ``fold_metrics.csv`` (as
    `load_summary` falls back to ``summary.csv``); both give the same frame (values rounded
    to 10 significant digits, CPU times to 6). Pairs summarised before per-fold values were
    stored contribute no rows; the frame is empty when no pair has them.
    """
    import pandas as pd

    run_dir = Path(run_dir)
    if not _has_pair_summaries(run_dir) and (run_dir / FOLD_METRICS_CSV).is_file():
        wide = pd.read_csv(run_dir / FOLD_METRICS_CSV)
        missing = [c for c in _FOLD_KEYS if c not in wide.columns]
        if missing:
            raise WorkbenchError(f"{run_dir / FOLD_METRICS_CSV}: missing column(s) "
                                 f"{', '.join(missing)}")
        df = wide.drop(columns=[TUNED_KEY], errors="ignore").melt(
            id_vars=_FOLD_KEYS, var_name="metric", value_name="value")
        # a metric a learner does not report is an empty column for its pairs: no rows
        reported = df.groupby(["dataset", "learner", "metric"], sort=False)["value"] \
            .transform(lambda v: v.notna().any())
        df = df[reported.astype(bool)][FOLD_METRICS_COLUMNS]
    else:
        rows = [r for row in iter_summaries(run_dir) for r in fold_metrics_rows(row)]
        df = pd.DataFrame(rows, columns=FOLD_METRICS_COLUMNS)
    df = df.astype({"dataset": str, "learner": str, "round": np.int64, "fold": np.int64,
                    "metric": str, "value": np.float64})
    return _in_plan_order(run_dir, df, ["dataset", "learner", "metric", "round", "fold"])


def load_tuned(run_dir: str | Path) -> pd.DataFrame:
    """The parameters a nested-tuned learner chose in each fold: dataset, learner, round,
    fold, tuned (compact JSON), from the pair summaries (or ``fold_metrics.csv``'s
    ``tuned`` column); empty when no learner of the run was tuned."""
    import pandas as pd

    rows = [(*key, text) for row in iter_summaries(Path(run_dir))
            for key, text in zip(_fold_keys(row), row.get(TUNED_KEY) or []) if text]
    return pd.DataFrame(rows, columns=[*_FOLD_KEYS, TUNED_KEY])


def _metric_columns(metrics: Any) -> list[str]:
    """Per-fold metric columns: the registry's order, then any others by name."""
    metrics = list(dict.fromkeys(metrics))
    known = fold_metric_names()
    return [m for m in known if m in metrics] + sorted(m for m in metrics if m not in known)


def write_fold_metrics_csv(run_dir: Path) -> Path:
    """Regenerate ``fold_metrics.csv``: `load_fold_metrics` in wide form (one line per
    (data set, learner, round, fold), one column per metric; a third of the long form)."""
    run_dir = Path(run_dir)
    cells: dict[tuple, dict[str, Any]] = {}
    tuned = False
    for row in iter_summaries(run_dir):
        for d, l, r, f, metric, value in fold_metrics_rows(row):
            cells.setdefault((d, l, r, f), {})[metric] = value
        for (d, l, r, f), text in zip(_fold_keys(row), row.get(TUNED_KEY) or []):
            cells.setdefault((d, l, r, f), {})[TUNED_KEY] = text or None
            tuned = True
    metrics = _metric_columns(m for values in cells.values() for m in values
                              if m != TUNED_KEY) + ([TUNED_KEY] if tuned else [])
    rank = _plan_rank(run_dir)
    keys = sorted(cells, key=lambda k: (rank(k[0], k[1]), k[2], k[3]))
    rows = [dict(zip(_FOLD_KEYS, k)) | cells[k] for k in keys]
    path = run_dir / FOLD_METRICS_CSV
    atomic_write_text(path, csv_text([*_FOLD_KEYS, *metrics], rows,
                                     f"%.{FOLD_VALUE_DIGITS}g"))
    return path


def write_summary_csv(run_dir: Path) -> Path:
    """Regenerate ``summary.csv`` (the committed copy of `load_summary`)."""
    run_dir = Path(run_dir)
    if not _has_pair_summaries(run_dir) and (run_dir / SUMMARY_CSV).is_file():
        # summary-only: the file as pandas reads it (as rows, the missing values would be
        # dropped, which reorders columns and loses those missing in every row)
        text = load_summary(run_dir).to_csv(index=False, float_format="%.17g")
    else:
        text = csv_text(*_summary_rows(run_dir), "%.17g")
    path = run_dir / SUMMARY_CSV
    atomic_write_text(path, text)
    return path


def csv_text(columns: list[str], rows: list[dict[str, Any]], float_format: str) -> str:
    """`rows` as CSV text, byte for byte what pandas' ``DataFrame(rows, columns=columns)
    .to_csv(index=False, float_format=float_format)`` writes, without importing pandas.

    As there: a column whose values are all numbers, with a float or a missing value among
    them, is a float column (every number written with `float_format`, NaN and missing
    empty); an all-integer column is written as integers; any other column as ``str`` of
    each value, missing and NaN empty.
    """
    def number(v: Any) -> bool:
        return isinstance(v, (int, float, np.integer, np.floating)) and \
            not isinstance(v, (bool, np.bool_))

    formats = []
    for c in columns:
        values = [row.get(c) for row in rows]
        if all(v is None or number(v) for v in values) and \
                any(v is None or isinstance(v, (float, np.floating)) for v in values):
            formats.append(lambda v: "" if v is None or v != v else float_format % v)
        else:
            formats.append(lambda v: "" if v is None or (isinstance(v, float) and v != v)
                           else str(v))
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(columns)
    for row in rows:
        out.writerow([fmt(row.get(c)) for c, fmt in zip(columns, formats)])
    return buf.getvalue()


# ----- status ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PairStatus:
    """Progress of one (data set, learner) pair in a run directory."""

    dataset: str
    learner: str
    folds_done: int
    folds_expected: int | None
    complete: bool
    planned: bool = True
    corrupt: bool = False  # its summary.json cannot be read (the next run recomputes it)
    problem: str = ""  # what is wrong with its stored files (the next run recomputes it)

    @property
    def state(self) -> str:
        if self.corrupt:
            return "corrupt"
        if self.complete:
            return "done"
        return "partial" if self.folds_done else "missing"


def read_metadata(run_dir: Path) -> dict[str, Any]:
    """``metadata.json`` as a dict ({} when absent); `StoreCorrupt` when unreadable."""
    p = Path(run_dir) / METADATA_JSON
    if not p.is_file():
        return {}
    try:
        with open(p, encoding="utf-8") as fh:
            meta = json.load(fh)
    except (ValueError, UnicodeDecodeError) as exc:
        raise StoreCorrupt(p, f"invalid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise StoreCorrupt(p, "not a JSON object")
    version = meta.get(SCHEMA_KEY, 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise WorkbenchError(
            f"{p}: written by a newer workbench (store schema {version!r}; this one reads up "
            f"to {SCHEMA_VERSION}); upgrade the workbench to read it")
    return meta


def _plan_order(run_dir: Path) -> tuple[list[str], list[str]] | None:
    plan = read_metadata(run_dir).get("plan")
    if not plan:
        return None
    return list(plan.get("datasets", [])), list(plan.get("learners", []))


def pair_statuses(run_dir: str | Path, verify: bool = False) -> list[PairStatus]:
    """Done / partial / missing state of every planned pair (plus stray stored pairs).

    The plan (data sets found × learners of the full config) comes from ``metadata.json``.
    A pair whose summary is held only in ``summary.csv`` is complete; one whose
    ``summary.json`` cannot be read, or whose stored predictions are not those its summary
    was made from (`verify_pair`: missing or another row count; with `verify`, another
    checksum), is ``corrupt`` with its `problem`.
    """
    run_dir = Path(run_dir)
    meta = read_metadata(run_dir)
    plan = meta.get("plan") or {}
    expected = plan.get("folds_per_pair")
    out: list[PairStatus] = []
    seen: set[tuple[str, str]] = set()
    for d in plan.get("datasets", []):
        for l in plan.get("learners", []):
            seen.add((safe_name(d), safe_name(l)))
            problem = ""
            try:
                row = read_summary(run_dir, d, l)
                complete, corrupt = row is not None, False
                if row is not None:
                    problem = verify_pair(run_dir, d, l, row, checksum=verify) or ""
            except StoreCorrupt as exc:
                complete, corrupt, problem = False, True, str(exc)
            try:
                n_folds = 0 if problem else len(stored_folds(run_dir, d, l))
            except StoreCorrupt as exc:  # an unreadable predictions.parquet
                n_folds, complete, corrupt, problem = 0, False, True, str(exc)
            if problem:
                complete, corrupt = False, True
            out.append(PairStatus(d, l, n_folds, expected, complete, corrupt=corrupt,
                                  problem=problem))
    for row in iter_summaries(run_dir, corrupt=[]):
        key = (safe_name(row["dataset"]), safe_name(row["learner"]))
        if key not in seen:
            seen.add(key)
            try:
                n = len(stored_folds(run_dir, row["dataset"], row["learner"]))
            except StoreCorrupt:
                n = 0
            out.append(PairStatus(row["dataset"], row["learner"], n, expected, True, False))
    return out


def remove_pair(run_dir: Path, dataset: str, learner: str) -> None:
    """Delete one pair's stored folds and summary (stale or corrupt results), including its
    rows in ``summary.csv`` and ``fold_metrics.csv``: otherwise, once its directory is
    gone, a run stopped before recomputing it would take the old row for a complete pair."""
    import pandas as pd

    run_dir = Path(run_dir)
    for name in (SUMMARY_CSV, FOLD_METRICS_CSV):
        path = run_dir / name
        if not path.is_file():
            continue
        try:
            df = pd.read_csv(path, dtype={"dataset": str, "learner": str})
        except Exception:  # unreadable: the next run reports and rewrites it
            continue
        if not {"dataset", "learner"} <= set(df.columns):
            continue
        drop = ((df["dataset"] == dataset) & (df["learner"] == learner)).to_numpy()
        if not drop.any():
            continue
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        if len(lines) == len(df) + 1:  # one line per row: keep the others byte for byte
            text = lines[0] + "".join(l for l, d in zip(lines[1:], drop) if not d)
        else:
            text = df[~drop].to_csv(index=False, float_format="%.17g")
        atomic_write_text(path, text)
    d = pair_dir(run_dir, dataset, learner)
    if d.exists():
        shutil.rmtree(d)


def remove_run(run_dir: Path) -> None:
    """Delete a run directory's contents written by the runner (for ``--fresh``)."""
    run_dir = Path(run_dir)
    for name in (PREDICTIONS,):
        p = run_dir / name
        if p.exists():
            shutil.rmtree(p)
    for name in (CONFIG_YAML, CONFIG_HASH, METADATA_JSON, SUMMARY_CSV, FOLD_METRICS_CSV):
        p = run_dir / name
        if p.exists():
            p.unlink()


def looks_like_run_dir(run_dir: Path) -> bool:
    run_dir = Path(run_dir)
    return (run_dir / CONFIG_HASH).is_file() or (run_dir / PREDICTIONS).is_dir()


@dataclass
class Results:
    """A run directory's results as tidy pandas DataFrames (`load_results`)."""

    run_dir: Path
    summary: pd.DataFrame
    """One row per (data set, learner): every summary metric and its ``<metric>_std``."""
    folds: pd.DataFrame
    """Long per-fold values: ``dataset, learner, round, fold, metric, value``."""
    config: dict[str, Any]
    """The run's resolved config (``config.yaml``); of several runs: run → config."""
    runs: list[Path] | None = None
    """The run directories of results loaded from several runs (None: one run)."""

    def predictions(self, dataset: str | None = None,
                    learner: str | None = None) -> pd.DataFrame:
        """Per-instance predictions (``dataset, learner, round, fold, index, y, p_0 …``) of
        the stored pairs, optionally of one data set and/or learner; empty for results
        kept as summaries only (the committed reproductions). Of several runs: with a
        leading ``run`` column."""
        import pandas as pd

        frames = []
        for run in self.runs or [self.run_dir]:
            for st in pair_statuses(run):
                if (dataset is None or st.dataset == dataset) and \
                        (learner is None or st.learner == learner) and st.folds_done:
                    part = load_predictions(run, st.dataset, st.learner)
                    if len(part):
                        part.insert(0, "learner", st.learner)
                        part.insert(0, "dataset", st.dataset)
                        if self.runs is not None:
                            part.insert(0, "run", str(run))
                        frames.append(part)
        columns = ["run"] * (self.runs is not None) + ["dataset", "learner", "round", "fold",
                                                        "index", "y"]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=columns)


def load_results(run_dir: str | Path | list[str | Path]) -> Results:
    """The results of a run directory (or of a packaged reproduction by name, e.g.
    ``"pakdd13"``) as tidy DataFrames: ``.summary``, ``.folds``, ``.predictions()``.

    Several runs at once: a list of them, or a folder holding run directories (found at
    any depth); the frames then start with a ``run`` column (each run's path as found, or
    the name given), ``.runs`` lists them and ``.config`` maps each to its config."""
    if isinstance(run_dir, (list, tuple)):
        paths = [(str(r), run_dir_path(str(r))) for r in run_dir]
    else:
        path = run_dir_path(str(run_dir))
        if looks_like_run_dir(path) or (path / SUMMARY_CSV).is_file():
            return _one_run(path)
        paths = [(str(p.parent), p.parent) for p in sorted(path.rglob(CONFIG_YAML))
                 if looks_like_run_dir(p.parent) or (p.parent / SUMMARY_CSV).is_file()]
        if not paths:
            raise WorkbenchError(f"{run_dir}: neither a run directory nor a folder holding "
                                 "run directories")
    import pandas as pd

    parts = [(label, _one_run(p)) for label, p in paths]
    frames = {}
    for attr in ("summary", "folds"):
        tables = [getattr(r, attr).assign(run=label) for label, r in parts]
        df = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()
        frames[attr] = df[["run", *[c for c in df.columns if c != "run"]]]
    return Results(paths[0][1] if len(paths) == 1 else Path(), frames["summary"],
                   frames["folds"], {label: r.config for label, r in parts},
                   runs=[p for _, p in paths])


def _one_run(path: Path) -> Results:
    config_file = path / CONFIG_YAML
    config = yaml.safe_load(config_file.read_text(encoding="utf-8")) \
        if config_file.is_file() else {}
    return Results(path, load_summary(path), load_fold_metrics(path), config or {})
