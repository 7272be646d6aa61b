"""Big delimited text files to a catalog ARFF file in constant memory (the big sources of
`workbench fetch`: poker-hand, covtype, census-income, localization, kddcup, YearPrediction
MSD, PAMAP2, record linkage).

Two passes over the downloaded files, each reading `BLOCK` bytes of text at a time with
pyarrow's streaming CSV reader: the first counts the rows and collects each nominal
column's distinct values (its declaration, where the source does not fix one: sorted as
text, or as numbers); the second writes the ARFF header and then every block's rows as text
into a gzip stream. Memory: a block of rows and the distinct values, whatever the size of
the file (a 500,000-row kddcup file took 2.2 GB parsed whole; the 5.2 M rows of the real
one would have needed about 22 GB). Numbers are written as pyarrow formats them (the
shortest text that reads back as the same double).

The files come as `Part`s: a name for messages and a function that opens the bytes (a file,
a gzip file, a member of a zip archive, a member of a zip inside a zip).
"""

from __future__ import annotations

import gzip
import io
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Iterator

from workbench.data.arff import quote_value
from workbench.data.arrow import pa, pac, pcsv
from workbench.errors import WorkbenchError

__all__ = ["Column", "Layout", "Part", "file_part", "write_arff", "zip_parts"]

BLOCK = 4 << 20
"""Bytes of text parsed at a time."""


@dataclass(frozen=True)
class Column:
    """A column of the source files: numeric, or nominal with a fixed declaration
    (`declared`) or the sorted distinct values (`by_number`: sorted as numbers); `keep`
    False leaves it out of the data set."""

    name: str
    numeric: bool = False
    declared: tuple[str, ...] | None = None
    by_number: bool = False
    keep: bool = True


@dataclass(frozen=True)
class Layout:
    """The source files' columns (in file order), which one is the class, how the text is
    split, and a per-column fix of the text values (`fixes`: name → function on a string
    array, e.g. a trailing '.' removed)."""

    columns: tuple[Column, ...]
    class_name: str
    delimiter: str = ","
    header_rows: int = 0
    fixes: dict[str, Callable[[pa.Array], pa.Array]] = field(default_factory=dict)

    @property
    def kept(self) -> list[Column]:
        """The data set's attributes in order, the class last."""
        cols = [c for c in self.columns if c.keep and c.name != self.class_name]
        return cols + [c for c in self.columns if c.name == self.class_name]


@dataclass(frozen=True)
class Part:
    """One source file: its name (for messages) and how to open its bytes."""

    name: str
    open: Callable[[], IO[bytes]]


def file_part(path: Path) -> Part:
    """A downloaded file (gzip-compressed when its name ends in ``.gz``), named by the last
    part of its address (the fetcher stores ``a/b.data`` as ``a__b.data``)."""
    name = path.name.rsplit("__", 1)[-1]
    if path.name.endswith(".gz"):
        return Part(name, lambda: gzip.open(path, "rb"))
    return Part(name, lambda: open(path, "rb"))


def _shown(path: Path) -> str:
    return path.name.rsplit("__", 1)[-1]


def zip_parts(path: Path, suffix: str, order: Callable[[str], object] = str,
              inner: str | None = None) -> list[Part]:
    """The members of a zip archive whose names end with `suffix`, in `order`; with
    `inner`, the members ending with `inner` of each such member (itself a zip)."""
    try:
        with zipfile.ZipFile(path) as z:
            names = sorted((n for n in z.namelist() if n.endswith(suffix)), key=order)
    except (zipfile.BadZipFile, OSError) as exc:
        raise WorkbenchError(f"{_shown(path)}: not a readable zip archive ({exc})") from None
    if not names:
        raise WorkbenchError(f"{_shown(path)}: no member ending with {suffix} in it")

    def member(name: str) -> Callable[[], IO[bytes]]:
        return lambda: zipfile.ZipFile(path).open(name)

    if inner is None:
        return [Part(n, member(n)) for n in names]

    def nested(name: str) -> Callable[[], IO[bytes]]:
        def opener() -> IO[bytes]:
            outer = zipfile.ZipFile(path)
            blob = io.BytesIO(outer.read(name))  # (a block of the archive: a few MB)
            try:
                box = zipfile.ZipFile(blob)
            except zipfile.BadZipFile as exc:
                raise WorkbenchError(f"{name}: not a readable zip archive ({exc})") from None
            found = [n for n in box.namelist() if n.endswith(inner)]
            if not found:
                raise WorkbenchError(f"{name}: no member ending with {inner} in it")
            return box.open(found[0])
        return opener

    return [Part(n, nested(n)) for n in names]


def _batches(part: Part, layout: Layout) -> Iterator[pa.RecordBatch]:
    names = [c.name for c in layout.columns]
    types = {c.name: (pa.float64() if c.numeric else pa.string()) for c in layout.columns}
    try:
        with part.open() as raw:
            reader = pcsv.open_csv(
                raw, read_options=pcsv.ReadOptions(column_names=names, block_size=BLOCK,
                                                   use_threads=False,
                                                   skip_rows=layout.header_rows),
                parse_options=pcsv.ParseOptions(delimiter=layout.delimiter),
                convert_options=pcsv.ConvertOptions(
                    column_types=types, null_values=["?", "", "NaN"],
                    strings_can_be_null=True,
                    include_columns=[c.name for c in layout.kept]))
            yield from reader
    except WorkbenchError:
        raise
    except (pa.ArrowException, OSError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, (EOFError, zlib.error, gzip.BadGzipFile)):
            raise WorkbenchError(f"{part.name}: the download is not a whole gzip stream "
                                 f"({text}); it was cut short or altered on the way: fetch "
                                 "again") from None
        raise WorkbenchError(f"{part.name}: not in the expected format ({text}); the "
                             "download was cut short or altered, or the source changed: "
                             "fetch again") from None


def _text(batch: pa.RecordBatch, layout: Layout, col: Column) -> pa.Array:
    values = pac.utf8_trim_whitespace(batch.column(col.name))
    fix = layout.fixes.get(col.name)
    return fix(values) if fix is not None else values


def _order(values: set[str], col: Column) -> tuple[str, ...]:
    if not col.by_number:
        return tuple(sorted(values))
    try:
        return tuple(sorted(values, key=float))
    except ValueError:
        raise WorkbenchError(f"column '{col.name}': a value that is not a number among "
                             f"{sorted(values)[:5]}") from None


def declarations(parts: list[Part], layout: Layout) -> tuple[int, dict[str, tuple[str, ...]]]:
    """Pass 1: the rows and each nominal column's declaration (its fixed one, checked, or
    its sorted distinct values)."""
    rows = 0
    seen: dict[str, set[str]] = {c.name: set() for c in layout.kept if not c.numeric}
    for part in parts:
        for batch in _batches(part, layout):
            rows += batch.num_rows
            for c in layout.kept:
                if not c.numeric:
                    seen[c.name].update(v for v in pac.unique(_text(batch, layout, c))
                                        .to_pylist() if v is not None)
    out = {}
    for c in layout.kept:
        if c.numeric:
            continue
        if c.declared is not None:
            extra = sorted(seen[c.name] - set(c.declared))
            if extra:
                raise WorkbenchError(f"column '{c.name}': value {extra[0]!r} is not one of "
                                     f"{', '.join(c.declared)}")
            out[c.name] = c.declared
        else:
            out[c.name] = _order(seen[c.name], c)
    return rows, out


def write_arff(parts: list[Part], layout: Layout, out: Path, relation: str,
               expect_rows: int | None = None) -> int:
    """The two passes: `parts` as the ARFF file `out` (gzip), the kept columns in order and
    the class last; returns the rows. With `expect_rows`, another count is refused after
    the first pass, before anything is written."""
    rows, declared = declarations(parts, layout)
    if expect_rows is not None and rows != expect_rows:
        raise WorkbenchError(f"{parts[0].name}: {rows:,} rows, the source has "
                             f"{expect_rows:,}: a short or altered file; nothing was written")
    head = [f"@relation {quote_value(relation)}", ""]
    labels: dict[str, pa.Array] = {}
    for c in layout.kept:
        if c.numeric:
            head.append(f"@attribute {quote_value(c.name)} numeric")
        else:
            head.append(f"@attribute {quote_value(c.name)} "
                        f"{{{','.join(quote_value(v) for v in declared[c.name])}}}")
            labels[c.name] = pa.array([quote_value(v) for v in declared[c.name]] + ["?"])
    head += ["", "@data", ""]
    with gzip.open(out, "wb", compresslevel=6) as sink:
        sink.write("\n".join(head).encode())
        for part in parts:
            for batch in _batches(part, layout):
                cols = []
                for c in layout.kept:
                    if c.numeric:
                        cols.append(pac.fill_null(pac.cast(batch.column(c.name), pa.string()),
                                                  "?"))
                    else:
                        values = declared[c.name]
                        code = pac.index_in(_text(batch, layout, c),
                                            value_set=pa.array(values, pa.string()))
                        cols.append(labels[c.name].take(pac.fill_null(code, len(values))))
                lines = pac.binary_join_element_wise(*cols, ",")
                sink.write(("\n".join(lines.to_pylist()) + "\n").encode())
    return rows


def upper(values: pa.Array) -> pa.Array:
    """A text fix: upper case (record linkage's booleans as TRUE / FALSE)."""
    return pac.utf8_upper(values)


def strip_dot(values: pa.Array) -> pa.Array:
    """A text fix: a trailing '.' removed (KDD Cup's labels)."""
    return pac.replace_substring_regex(values, pattern=r"\.$", replacement="")


def whole_number(values: pa.Array) -> pa.Array:
    """A text fix: '2001.0' written '2001' (a year read as text)."""
    return pac.replace_substring_regex(values, pattern=r"\.0+$", replacement="")
