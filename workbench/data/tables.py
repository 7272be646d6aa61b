"""Text tables as the public sources publish them: ARFF (OpenML's Weka files) and delimited
text (the UCI archive's ``.data`` files), read into a `Table` of text tokens, changed by
the conversion steps (`workbench.data.recipes`) and turned into a `Dataset`; and the way
back (`from_dataset`, `arff_bytes`, `text_bytes`), with which the tests build a source's
files from a reference copy.

A token is the value's text as written (quotes removed, spaces around it stripped); a
missing value is None. In ARFF a bare ``?`` is missing and a quoted ``'?'`` is the text
``?`` (Weka's anneal file declares it as a value).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from workbench.data.arff import quote_value
from workbench.data.dataset import Attribute, Dataset
from workbench.errors import WorkbenchError

__all__ = ["Kind", "Table", "arff_bytes", "from_dataset", "read_arff", "read_text",
           "text_bytes", "to_dataset"]

Kind = object
"""A column's kind: ``"numeric"``, ``"string"`` (free text) or the tuple of declared
nominal values."""

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


@dataclass
class Table:
    """Named columns of text tokens (column-major) with their kinds; the class is last."""

    names: list[str]
    kinds: list[Kind]
    columns: list[list[str | None]]
    relation: str = ""
    where: str = field(default="", compare=False)  # the source, for messages

    @property
    def n_rows(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise WorkbenchError(f"{self.where}: no attribute '{name}' (it has "
                                 f"{', '.join(self.names)})") from None

    def pop(self, name: str) -> tuple[str, Kind, list]:
        j = self.index(name)
        return self.names.pop(j), self.kinds.pop(j), self.columns.pop(j)

    def insert(self, at: int, name: str, kind: Kind, column: list) -> None:
        at = len(self.names) + 1 + at if at < 0 else at
        self.names.insert(at, name)
        self.kinds.insert(at, kind)
        self.columns.insert(at, column)

    def keep_rows(self, keep: list[bool]) -> None:
        self.columns = [[v for v, k in zip(col, keep) if k] for col in self.columns]

    def copy(self) -> "Table":
        return Table(list(self.names), list(self.kinds), [list(c) for c in self.columns],
                     self.relation, self.where)


# ----- reading ---------------------------------------------------------------------------------
def _tokens(line: str, sep: str = ",") -> list[str | None]:
    """One ARFF data line or declaration list split at `sep` outside quotes."""
    if "'" not in line and '"' not in line:
        return [None if t == "?" else t for t in (s.strip() for s in line.split(sep))]
    out: list[str | None] = []
    i, n = 0, len(line)
    while i <= n:
        while i < n and line[i] in " \t":
            i += 1
        if i < n and line[i] in "'\"":
            quote, i, buf = line[i], i + 1, []
            while i < n and line[i] != quote:
                if line[i] == "\\" and i + 1 < n:
                    buf.append(_ESCAPES.get(line[i + 1], line[i + 1]))
                    i += 2
                else:
                    buf.append(line[i])
                    i += 1
            out.append("".join(buf))
            j = line.find(sep, i + 1)
            i = n + 1 if j < 0 else j + 1
        else:
            j = line.find(sep, i)
            j = n if j < 0 else j
            token = line[i:j].strip()
            out.append(None if token == "?" else token)
            i = j + 1
    return out


def _name(rest: str) -> tuple[str, str]:
    """An attribute's (possibly quoted) name and the text after it."""
    rest = rest.strip()
    if rest[:1] in ("'", '"'):
        quote, i, buf = rest[0], 1, []
        while i < len(rest) and rest[i] != quote:
            if rest[i] == "\\" and i + 1 < len(rest):
                buf.append(rest[i + 1])
                i += 2
            else:
                buf.append(rest[i])
                i += 1
        return "".join(buf), rest[i + 1:].strip()
    parts = rest.split(None, 1)
    return parts[0], (parts[1].strip() if len(parts) > 1 else "")


def _kind(spec: str, where: str) -> Kind:
    if spec.startswith("{"):
        end = spec.rfind("}")
        values = tuple(v for v in _tokens(spec[1:end]) if v is not None)
        return values if values != ("",) else ()
    word = spec.split()[0].lower() if spec else ""
    if word in ("numeric", "real", "integer"):
        return "numeric"
    if word in ("string", "date"):
        return "string"
    raise WorkbenchError(f"{where}: attribute type '{spec}' is not supported")


def read_arff(text: str, where: str) -> Table:
    """An ARFF file's header and rows (dense rows only)."""
    names: list[str] = []
    kinds: list[Kind] = []
    rows: list[list[str | None]] = []
    relation = ""
    in_data = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        if in_data:
            if line.startswith("{"):
                raise WorkbenchError(f"{where}, line {number}: sparse ARFF rows are not "
                                     "supported")
            row = _tokens(line)
            if len(row) != len(names):
                raise WorkbenchError(f"{where}, line {number}: {len(row)} values, the header "
                                     f"declares {len(names)}")
            rows.append(row)
            continue
        word = line.split(None, 1)[0].lower()
        rest = line[len(word):]
        if word == "@relation":
            relation = _name(rest)[0] if rest.strip() else ""
        elif word == "@attribute":
            name, spec = _name(rest)
            names.append(name)
            kinds.append(_kind(spec, f"{where}, line {number}"))
        elif word == "@data":
            in_data = True
        else:
            raise WorkbenchError(f"{where}, line {number}: not an ARFF header line: "
                                 f"{line[:60]}")
    if not in_data:
        raise WorkbenchError(f"{where}: no @data section (not an ARFF file)")
    columns = [list(c) for c in zip(*rows)] if rows else [[] for _ in names]
    return Table(names, kinds, columns, relation, where)


def read_text(text: str, where: str, sep: str | None = ",", comment: str | None = None,
              missing: tuple[str, ...] = ("?",), fields: int | None = None,
              skip_ragged: bool = False) -> list[list[str | None]]:
    """The rows of a delimited text file (`sep` None: runs of white space), blank lines and
    lines starting with `comment` skipped; every row must have `fields` values (or be
    skipped, with `skip_ragged`)."""
    rows = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or (comment and line.startswith(comment)):
            continue
        row = [t.strip() for t in (line.split(sep) if sep else line.split())]
        if fields is not None and len(row) != fields:
            if skip_ragged:
                continue
            raise WorkbenchError(f"{where}, line {number}: {len(row)} values, expected "
                                 f"{fields}")
        rows.append([None if t in missing else t for t in row])
    return rows


# ----- to a Dataset ----------------------------------------------------------------------------
def _numbers(column: list, name: str, where: str) -> np.ndarray:
    try:
        return np.array([np.nan if v is None else float(v) for v in column], dtype=np.float64)
    except ValueError:
        bad = next(v for v in column if v is not None and not is_number(v))
        raise WorkbenchError(f"{where}: attribute '{name}' is numeric but has the value "
                             f"{bad!r}") from None


def is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _codes(column: list, values: tuple, name: str, where: str) -> np.ndarray:
    index = {v: float(i) for i, v in enumerate(values)}
    index[None] = np.nan
    try:
        return np.array([index[v] for v in column], dtype=np.float64)
    except KeyError as exc:
        raise WorkbenchError(f"{where}: attribute '{name}' has the value {exc.args[0]!r}, "
                             f"which it does not declare") from None


def to_dataset(table: Table, name: str) -> Dataset:
    """The Dataset of a converted table (class = last column, nominal)."""
    where = table.where or name
    cols = []
    for n, kind, column in zip(table.names, table.kinds, table.columns):
        if kind == "string":
            raise WorkbenchError(f"{where}: attribute '{n}' is free text; the conversion "
                                 "should have dropped or typed it")
        cols.append(_numbers(column, n, where) if kind == "numeric"
                    else _codes(column, kind, n, where))
    if not cols or table.kinds[-1] in ("numeric", "string"):
        raise WorkbenchError(f"{where}: the last attribute (the class) is not nominal")
    X = np.column_stack(cols[:-1]) if len(cols) > 1 else np.zeros((table.n_rows, 0))
    y = np.where(np.isnan(cols[-1]), -1, cols[-1]).astype(np.int64)
    attrs = tuple(Attribute(n, None if k == "numeric" else tuple(k),
                            has_missing=bool(np.isnan(X[:, j]).any()))
                  for j, (n, k) in enumerate(zip(table.names[:-1], table.kinds[:-1])))
    return Dataset(name, attrs, Attribute(table.names[-1], tuple(table.kinds[-1])), X, y,
                   source=where, meta={"relation": table.relation or name})


# ----- the way back: a Dataset as a source's files (test fixtures, mirrors) ------------------
def _number_text(v: float) -> str:
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)


def from_dataset(data: Dataset) -> Table:
    """A Dataset as a table of tokens (numbers written so that they read back the same)."""
    names, kinds, columns = [], [], []
    y = data.y.astype(np.float64)
    y[data.y < 0] = np.nan
    for a, col in zip((*data.attributes, data.class_attribute),
                      [*data.X.T, y]):
        names.append(a.name)
        kinds.append("numeric" if a.values is None else tuple(a.values))
        if a.values is None:
            columns.append([None if np.isnan(v) else _number_text(float(v)) for v in col])
        else:
            columns.append([None if np.isnan(v) else a.values[int(v)] for v in col])
    return Table(names, kinds, columns, str(data.meta.get("relation") or data.name),
                 data.source)


def arff_bytes(table: Table) -> bytes:
    """The table as an ARFF file."""
    out = [f"@relation {quote_value(table.relation or 'data')}", ""]
    for n, k in zip(table.names, table.kinds):
        spec = k if isinstance(k, str) else "{" + ",".join(quote_value(v) for v in k) + "}"
        out.append(f"@attribute {quote_value(n)} {spec}")
    out += ["", "@data"]
    out += [",".join("?" if v is None else quote_value(v) for v in row)
            for row in zip(*table.columns)]
    return ("\n".join(out) + "\n").encode()


def text_bytes(rows, sep: str = ",") -> bytes:
    """Rows of tokens as delimited text (missing written ``?``)."""
    return "".join(sep.join("?" if v is None else v for v in row) + "\n"
                   for row in rows).encode()
