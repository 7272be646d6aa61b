"""Data files as chunks of rows: ARFF, CSV and Parquet (pyarrow), for data larger than
memory, and a seeded reservoir sample of a pass (to fit discretisation cut points).

A CSV or Parquet file has no ARFF header, so its schema comes from a first pass
(`scan_header`): numeric columns are numeric attributes; string, categorical and boolean
columns are nominal, their declared values the sorted distinct values; the class is the
column named `class_column`, else the one named ``class`` (any case), else the last. A
numeric class column is read as nominal labels when every value is a whole number, and
refused otherwise (a regression target, as ARFF refuses a numeric class). A header may also be given (any Dataset with the same columns,
e.g. the first chunk of an ARFF file), which fixes the declared values and their order.
Chunks are `Dataset`s of at most `rows` rows in file order, every one with the same
header; a value not declared in it is an error naming the file and the column.

`Reservoir(size, seed)` keeps a uniform random sample of the rows it is shown (Vitter's
algorithm R with numpy's seeded generator): the same file, chunk size and seed give the
same sample whatever else runs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterator

import numpy as np

from workbench.data.arff import iter_arff_chunks, load_arff
from workbench.data.arrow import from_numpy, pa, pac, pcsv, pq, to_numpy
from workbench.data.dataset import Attribute, Dataset
from workbench.errors import WorkbenchError
from workbench.fileio import parquet_damage, parquet_file, read_parquet

__all__ = ["Reservoir", "iter_chunks", "load_table", "reservoir_slots", "scan_header",
           "table_kind"]

_BATCH = 1 << 18
"""Rows per record batch read from a Parquet file, at most; fewer for wide files, so that a
batch's numbers stay within `_BATCH_BYTES` (256 K rows of 20 columns: no chunk of the
out-of-core readers is glued from several batches)."""
_BATCH_BYTES = 1 << 26


def table_kind(path: str | os.PathLike) -> str:
    """``arff``, ``csv`` or ``parquet`` by the file name (``.gz`` allowed for ARFF/CSV)."""
    name = Path(path).name.lower()
    name = name[:-3] if name.endswith(".gz") else name
    for kind in ("arff", "csv", "parquet"):
        if name.endswith("." + kind) or (kind == "parquet" and name.endswith(".pq")):
            return kind
    raise WorkbenchError(f"{path}: unknown data file type (expected .arff, .csv or .parquet, "
                         "optionally .gz)")


def _check_columns(schema: pa.Schema, path: Path) -> None:
    """Column names must be unique, and text must be UTF-8 (one line naming the column)."""
    seen: set[str] = set()
    for f in schema:
        if f.name in seen:
            raise WorkbenchError(f"{path}: column name '{f.name}' appears more than once; "
                                 "rename the columns so each name is used once")
        seen.add(f.name)
        t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            raise WorkbenchError(f"{path}: column '{f.name}' holds bytes that are not UTF-8 "
                                 "text; convert the file to UTF-8 (e.g. iconv -f latin1 "
                                 "-t utf-8)")


def _batches(path: Path, kind: str, size: int = _BATCH,
             groups: list[int] | None = None) -> Iterator[pa.RecordBatch]:
    """The file's record batches in order (a Parquet file's row groups `groups` only, when
    given)."""
    if not path.is_file():
        raise WorkbenchError(f"{path}: no such file")
    try:
        if kind == "parquet":
            # one iterator per row group: a single iter_batches over a whole file keeps
            # memory it no longer needs (RSS grew 0.13 → 0.38 GB over 50 M rows here,
            # cf. apache/arrow#39808); per row group it stays flat
            schema = pq.ParquetFile(path).schema_arrow
            _check_columns(schema, path)
            pf = parquet_file(path, read_dictionary=_text_columns(schema))
            size = max(1 << 10, min(size, _BATCH_BYTES // (8 * max(1, len(schema)))))
            for group in range(pf.metadata.num_row_groups) if groups is None else groups:
                yield from pf.iter_batches(batch_size=size, row_groups=[group])
        else:
            stream = pa.input_stream(str(path), compression="detect")
            reader = pcsv.open_csv(stream, read_options=pcsv.ReadOptions(
                block_size=1 << 22), convert_options=_csv_options())
            _check_columns(reader.schema, path)
            yield from reader
    except (pa.ArrowException, OSError) as exc:
        raise _unreadable(path, kind, exc) from None


def _unreadable(path: Path, kind: str, exc: BaseException) -> WorkbenchError:
    """One line for a file pyarrow cannot read: a Parquet page whose checksum fails, or a
    CSV cell that does not convert — named by its line and its column's name."""
    if kind == "parquet":
        return parquet_damage(path, exc)
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    m = re.match(r"In CSV column #(\d+): .*?(?:error to (\w+))?: invalid value '(.*)'$", text)
    if m:
        column, line = _csv_cell(path, int(m.group(1)), m.group(3))
        where = f"{path}, line {line}" if line else str(path)
        kind_text = f" ({m.group(2)})" if m.group(2) else ""
        return WorkbenchError(f"{where}: column '{column}' holds '{m.group(3)}' where its "
                              f"other rows are numbers{kind_text}; fix the cell, or write the "
                              "column as text throughout")
    return WorkbenchError(f"{path}: cannot read as {kind.upper()}: {text}")


def _csv_cell(path: Path, index: int, value: str) -> tuple[str, int | None]:
    """The name of column `index` of a CSV file and the first line holding `value` there
    (a slow scan, only to say where a conversion failed)."""
    import csv
    import gzip

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as f:
        rows = csv.reader(f)
        header = next(rows, [])
        name = header[index] if index < len(header) else f"#{index + 1}"
        for number, row in enumerate(rows, 2):
            if index < len(row) and row[index].strip() == value:
                return name, number
    return name, None


def _csv_options() -> pcsv.ConvertOptions:
    """How CSV cells are read: these texts are missing; text columns come dictionary-encoded
    from the parser (no string column to encode afterwards)."""
    return pcsv.ConvertOptions(null_values=["", "?", "NA", "NaN", "nan"],
                               strings_can_be_null=True, auto_dict_encode=True,
                               auto_dict_max_cardinality=(1 << 31) - 1)


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


class _Scan:
    """Column statistics that make a header: names, kinds, distinct values, missing."""

    def __init__(self) -> None:
        self.encoded: dict = {}  # of the last batch: name -> (dictionary array, codes, used)
        self.names: list[str] | None = None
        self.numeric: list[bool] = []
        self.values: list[set] = []
        self.missing: list[bool] = []
        self.rows = 0

    def add(self, batch) -> None:
        """One record batch or table."""
        from workbench.data.gather import map_columns  # numba: not on the import path

        if self.names is None:
            self.names = list(batch.schema.names)
            self.numeric = [_is_numeric(f.type) for f in batch.schema]
            self.values = [set() for _ in self.names]
            self.missing = [False] * len(self.names)
        self.rows += batch.num_rows
        self.encoded = {}
        coded = [j for j in range(len(self.names))
                 if not self.numeric[j] or j == self.class_index()]
        for j, col in enumerate(batch.columns):
            self.missing[j] |= col.null_count > 0
        for j, (dic, idx, used) in zip(coded, map_columns(
                _encoded, [batch.column(j) for j in coded], batch.num_rows)):
            self.encoded[self.names[j]] = (dic, idx, used)
            self.values[j].update(_text(v) for v in dic.dictionary.take(
                from_numpy(np.flatnonzero(used).astype(np.int64))).to_pylist())

    def merge(self, other: "_Scan") -> "_Scan":
        """Add the statistics of another part of the same file (the parts in file order)."""
        if other.names is None:
            return self
        if self.names is None:
            self.names, self.numeric = list(other.names), list(other.numeric)
            self.values = [set() for _ in self.names]
            self.missing = [False] * len(self.names)
        elif other.names != self.names:
            raise WorkbenchError(f"parts with different columns: {self.names} vs {other.names}")
        self.rows += other.rows
        for j in range(len(self.names)):
            self.values[j] |= other.values[j]
            self.missing[j] |= other.missing[j]
        return self

    def class_index(self, class_column: str | None = None) -> int:
        """The class column: the one named `class_column`, else the one named ``class``
        (in any case, when exactly one is), else the last."""
        if class_column is not None:
            return self.names.index(class_column) if class_column in self.names else -1
        named = [j for j, n in enumerate(self.names) if n.lower() == "class"]
        return named[0] if len(named) == 1 else len(self.names) - 1

    def header(self, path: Path, class_column: str | None) -> Dataset:
        if self.names is None:
            raise WorkbenchError(f"{path}: no rows")
        ci = self.class_index(class_column)
        if ci < 0:
            raise WorkbenchError(f"{path}: no column named '{class_column}' (class)")
        if ci != len(self.names) - 1 and self.numeric[ci]:
            raise WorkbenchError(f"{path}: class column '{class_column}' is numeric; name it "
                                 "as the last column or give a header")
        if self.numeric[ci]:
            fractional = sorted((v for v in self.values[ci] if not _whole(v)), key=_order)
            if fractional:  # a regression target, not class labels
                raise WorkbenchError(
                    f"{path}: class column '{self.names[ci]}' is numeric with values such as "
                    f"{fractional[0]} ({len(self.values[ci])} distinct); a classifier needs a "
                    "nominal class (whole-number labels are read as nominal): discretise it "
                    "or name another class column")
        attrs = [Attribute(n, None if self.numeric[j] else tuple(sorted(self.values[j],
                                                                          key=_order)),
                           has_missing=self.missing[j])
                 for j, n in enumerate(self.names) if j != ci]
        cls = Attribute(self.names[ci], tuple(sorted(self.values[ci], key=_order)))
        return Dataset(path.name.split(".")[0], tuple(attrs), cls,
                       np.zeros((0, len(attrs))), np.zeros(0, dtype=np.int64),
                       source=str(path), meta={"rows": self.rows})


def scan_header(path: str | os.PathLike, class_column: str | None = None,
                map_groups=None) -> Dataset:
    """The header of a CSV / Parquet file from one pass (see the module docstring): an
    empty Dataset whose attributes have `has_missing` set where the file has a missing
    value (``meta["rows"]``: the rows counted). ARFF files: their own header
    (`has_missing` from the whole file). `map_groups(fn, path, groups)` (e.g. on Dask
    workers) scans a Parquet file's row groups in parallel; the parts are merged in order."""
    path = Path(path)
    kind = table_kind(path)
    if kind == "arff":
        return load_arff(path).take(np.arange(0))
    scan = _Scan()
    if kind == "parquet" and map_groups is not None:
        if not path.is_file():
            raise WorkbenchError(f"{path}: no such file")
        groups = pq.ParquetFile(path).metadata.num_row_groups
        for part in map_groups(scan_row_group, str(path), list(range(groups))):
            scan.merge(part)
        return scan.header(path, class_column)
    for batch in _batches(path, kind):
        scan.add(batch)
    return scan.header(path, class_column)


def scan_row_group(path: str, group: int) -> _Scan:
    """The header statistics of one row group of a Parquet file."""
    scan = _Scan()
    for batch in _batches(Path(path), "parquet", groups=[group]):
        scan.add(batch)
    scan.encoded = {}  # the codes of its last batch (a row group's worth) stay here: the
    return scan  # statistics travel to the client, which merges one per row group


def _text(v) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def _whole(v: str) -> bool:
    """A class value that is a whole number (``3``, ``-1``): a label, not a measurement."""
    return v.lstrip("-").isdigit()


def _order(v: str):
    """Numbers in numeric order, then text."""
    try:
        return (0, float(v), v)
    except ValueError:
        return (1, 0.0, v)


def _indices(enc) -> tuple[np.ndarray, np.ndarray]:
    """A dictionary array's codes (missing = the dictionary's length) and which entries
    some row uses."""
    from workbench.data.gather import used_codes  # numba: not on the import path

    ind, k = enc.indices, len(enc.dictionary)
    idx = to_numpy(ind, k)
    used = used_codes(idx, k + 1)
    if len(used) == 0:
        raise WorkbenchError("a dictionary code outside its dictionary")
    return idx, used[:k]


def _encoded(col) -> tuple[pa.DictionaryArray, np.ndarray, np.ndarray]:
    """A text column dictionary-encoded, with `_indices`'s codes and used entries."""
    dic = _dictionary(col)
    return (dic, *_indices(dic))


def batch_dataset(batch, header: Dataset, path: Path, encoded: dict | None = None) -> Dataset:
    """One record batch (or table) as a Dataset under `header` (columns matched by name;
    `encoded`: their codes as `_Scan.add` found them)."""
    from workbench.data.gather import fill_columns, map_columns  # numba: only when used

    names = batch.schema.names
    d = len(header.attributes)
    out = np.empty((batch.num_rows, d + 1), dtype=np.float64)  # the class in the last column
    idxs, luts, dest = [], [], []
    attrs = (*header.attributes, header.class_attribute)
    for a in attrs:
        if a.name not in names:
            raise WorkbenchError(f"{path}: no column '{a.name}' (in the header)")
    encoded = dict(encoded or {})
    todo = [a.name for a in attrs if a.values is not None and a.name not in encoded]
    encoded.update(zip(todo, map_columns(
        _encoded, [batch.column(names.index(n)) for n in todo], batch.num_rows)))
    for j, a in enumerate(attrs):
        col = batch.column(names.index(a.name))
        if a.values is None:
            if not _is_numeric(col.type):
                raise WorkbenchError(f"{path}: column '{a.name}' is not numeric")
            out[:, j] = to_numpy(col, np.nan, pa.float64())
            bad = np.isinf(out[:, j])
            if bad.any():  # (a missing value is an empty cell, '?', NA or NaN)
                raise WorkbenchError(
                    f"{path}: column '{a.name}' holds {out[np.argmax(bad), j]:g} (in "
                    f"{int(bad.sum())} row(s)); numbers must be finite, as in ARFF: write a "
                    "missing value as an empty cell or '?'")
            continue
        codes = {v: k for k, v in enumerate(a.values)}
        enc, idx, used = encoded[a.name]
        lookup = []
        for v, u in zip(enc.dictionary.to_pylist(), used):
            key = _text(v) if isinstance(v, (int, float)) else str(v)
            if key not in codes and u:  # a dictionary may list values no row has
                raise WorkbenchError(f"{path}: value '{key}' of column '{a.name}' is not "
                                     "declared in the header")
            lookup.append(codes.get(key, np.nan))
        idxs.append(idx)
        luts.append(lookup + [np.nan])
        dest.append(j)
    fill_columns(out, dest, luts, idxs)
    yf = out[:, d]
    y = np.where(np.isnan(yf), -1, yf).astype(np.int64)
    return header.replace(X=out[:, :d], y=y)


def iter_chunks(path: str | os.PathLike, rows: int, header: Dataset | None = None,
                class_column: str | None = None) -> Iterator[Dataset]:
    """The rows of an ARFF, CSV or Parquet file as Datasets of at most `rows` rows, in
    file order, all with one header (`header`, else the file's: ARFF's own, or
    `scan_header`'s pass for CSV / Parquet)."""
    path = Path(path)
    if rows < 1:
        raise WorkbenchError(f"chunk size must be a positive number of rows, got {rows}")
    kind = table_kind(path)
    if kind == "arff":
        yield from iter_arff_chunks(path, rows, class_column)
        return
    header = scan_header(path, class_column) if header is None else header
    pending: list[Dataset] = []
    have = 0
    for batch in _batches(path, kind, min(rows, _BATCH)):
        pending.append(batch_dataset(batch, header, path))
        have += batch.num_rows
        while have >= rows:
            block = _concat(pending, header)
            # row ranges as views: a chunk that is a whole batch is passed on as it is
            yield block if block.n_instances == rows else \
                block.replace(X=block.X[:rows], y=block.y[:rows])
            rest = block.replace(X=block.X[rows:], y=block.y[rows:])
            pending, have = ([rest], rest.n_instances) if rest.n_instances else ([], 0)
    if have:
        yield _concat(pending, header)


def _concat(parts: list[Dataset], header: Dataset) -> Dataset:
    if len(parts) == 1:
        return parts[0]
    return header.replace(X=np.vstack([p.X for p in parts]),
                          y=np.concatenate([p.y for p in parts]))


def _text_columns(schema: pa.Schema) -> list[str] | None:
    """The text columns of a Parquet schema: read dictionary-encoded, never decoded to
    strings (Parquet stores them with a dictionary; we only need codes and the values)."""
    return [f.name for f in schema if pa.types.is_string(f.type)
            or pa.types.is_large_string(f.type)] or None


def _read_parquet(path: Path) -> pa.Table:
    """A Parquet file with its text columns read dictionary-encoded (no text decoding)."""
    return read_parquet(path, read_dictionary=_text_columns(pq.ParquetFile(path).schema_arrow))


def _dictionary(col) -> pa.DictionaryArray:
    """`col` dictionary-encoded as one array (already encoded columns as they are)."""
    if isinstance(col, pa.ChunkedArray):
        if pa.types.is_dictionary(col.type):
            if col.num_chunks == 1:
                return col.chunk(0)
            return col.unify_dictionaries().combine_chunks()
        col = col.combine_chunks()
    return col if pa.types.is_dictionary(col.type) else pac.dictionary_encode(col)


def load_table(path: str | os.PathLike, class_column: str | None = None) -> Dataset:
    """A whole ARFF, CSV or Parquet file as one Dataset (CSV / Parquet: read at once by
    pyarrow, multi-threaded; the header from its columns as `scan_header` makes it)."""
    path = Path(path)
    kind = table_kind(path)
    if kind == "arff":
        return load_arff(path, class_column)
    if not path.is_file():
        raise WorkbenchError(f"{path}: no such file")
    try:
        table = _read_parquet(path) if kind == "parquet" else pcsv.read_csv(
            pa.input_stream(str(path), compression="detect"), convert_options=_csv_options())
    except (pa.ArrowException, OSError) as exc:
        raise _unreadable(path, kind, exc) from None
    _check_columns(table.schema, path)
    return _table_dataset(table, path, class_column)


def _table_dataset(table: pa.Table, path: Path, class_column: str | None) -> Dataset:
    """A pyarrow table as a Dataset with the header its own columns make."""
    scan = _Scan()
    scan.add(table)  # the text columns encoded once for the scan and the values
    return batch_dataset(table, scan.header(path, class_column), path, scan.encoded)


def first_rows(path: str | os.PathLike, class_column: str | None = None) -> Dataset | None:
    """The first record batch of a CSV / Parquet file as a Dataset with its own header (the
    values seen in it: a lower bound of the file's), read without a pass over the file;
    None for an ARFF file (whose header declares the values) or an empty file."""
    path = Path(path)
    kind = table_kind(path)
    if kind == "arff":
        return None
    batch = next(_batches(path, kind), None)
    if batch is None or batch.num_rows == 0:
        return None
    return _table_dataset(pa.Table.from_batches([batch]), path, class_column)


def reservoir_slots(rng: np.random.Generator, seen: int, held: int, size: int,
                    n: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Algorithm R for `n` new items after `seen` (of which `held` are in a sample of at
    most `size`): (fill, rows, slots) — the first `fill` items are appended, then item
    rows[i] replaces slot slots[i], in order (item t, counted from 1 over the whole
    stream, replaces slot j ~ U{0..t-1} when j < size)."""
    fill = min(n, max(0, size - held))
    rest = np.arange(fill, n)
    if not rest.size:
        return fill, rest, rest
    j = rng.integers(0, seen + rest + 1)
    hit = j < size
    return fill, rest[hit], j[hit]


class Reservoir:
    """A uniform random sample of at most `size` rows of what it is shown (algorithm R,
    numpy's generator seeded with `seed`)."""

    def __init__(self, size: int, seed: int = 0) -> None:
        if size < 1:
            raise WorkbenchError(f"reservoir size must be positive, got {size}")
        self.size = int(size)
        self.rng = np.random.default_rng(seed)
        self.seen = 0
        self.X: np.ndarray | None = None
        self.y: np.ndarray | None = None
        self.header: Dataset | None = None

    def add(self, chunk: Dataset) -> None:
        """Offer the rows of `chunk` (in order)."""
        if self.header is None:
            self.header = chunk
            self.X = np.empty((0, chunk.n_attributes))
            self.y = np.empty(0, dtype=np.int64)
        n = chunk.n_instances
        fill, rows, slots = reservoir_slots(self.rng, self.seen, self.X.shape[0], self.size, n)
        if fill:
            self.X = np.vstack([self.X, chunk.X[:fill]])
            self.y = np.concatenate([self.y, chunk.y[:fill]])
        # in row order: a slot written twice keeps the later row (numpy assigns the
        # repeated indices of a fancy assignment in order)
        self.X[slots] = chunk.X[rows]
        self.y[slots] = chunk.y[rows]
        self.seen += n

    def sample(self) -> Dataset:
        """The sample as a Dataset with the first chunk's header."""
        if self.header is None:
            raise WorkbenchError("reservoir: no rows were offered")
        return self.header.replace(X=self.X.copy(), y=self.y.copy())
