"""How each catalog data set is made from its public original: where the files are, how they
are read and which documented changes turn them into the catalog's file (the reference
copies our reproductions used, see ``content.json``).

A `Recipe` is an `Origin` (OpenML's Weka ARFF by data id, a UCI text file, members of a
UCI archive, a seeded generator) and a list of `Step`s. Every step runs forwards on the
downloaded table and backwards (`Step.invert`) on a reference copy: the tests build each
source's original files from the reference copy that way, serve them over HTTP and check
that fetching them gives the reference content again. The catalog's facts — attribute
names, kinds and declared values of the text sources, row counts and content checksums —
are in ``content.json``, computed from the reference copies.

Origins whose files publish no header (UCI text) take the catalog's header with the steps
undone (`Recipe.source_header`): a dropped column comes back as free text, a moved one at
its old place, a grouped one numeric.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import tarfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Callable, Protocol
from urllib.parse import urlparse

from workbench.data import lzw
from workbench.data.dataset import Dataset
from workbench.data.tables import (Kind, Table, arff_bytes, from_dataset, read_arff,
                                   read_text, text_bytes, to_dataset)
from workbench.errors import WorkbenchError

__all__ = ["RECIPES", "Recipe", "catalog_content", "UCI", "OPENML", "UCI_KDD"]

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
UCI_KDD = "https://kdd.ics.uci.edu/databases/"
OPENML = "https://api.openml.org/"

CC_BY = "CC BY 4.0 (UCI Machine Learning Repository)"
UCI_CITE = ("Kelly, M., Longjohn, R. & Nottingham, K. The UCI Machine Learning Repository. "
            "https://archive.ics.uci.edu")
OPENML_CITE = ("Vanschoren, J., van Rijn, J. N., Bischl, B. & Torgo, L. (2013). OpenML: "
               "networked science in machine learning. SIGKDD Explorations 15(2), 49-60; "
               "and the UCI Machine Learning Repository (Kelly, Longjohn & Nottingham)")

Get = Callable[[str, str], Path]
"""``get(base, relative path)`` → the downloaded file (the fetcher's download, resumed and
retried, under a mirror when one is set)."""


@cache
def catalog_content() -> dict[str, dict]:
    """``content.json``: per slug, the reference copy's rows and content checksum, and for
    text sources its header (``[[name, kind], ...]``) and relation name."""
    path = Path(__file__).with_name("content.json")
    return json.loads(path.read_text(encoding="utf-8"))


def _header_table(slug: str) -> Table:
    entry = catalog_content()[slug]
    kinds = [k if isinstance(k, str) else tuple(k) for _, k in entry["header"]]
    return Table([n for n, _ in entry["header"]], kinds, [[] for _ in kinds],
                 entry.get("relation", slug), slug)


# ----- steps -----------------------------------------------------------------------------------
class Step(Protocol):
    def apply(self, t: Table) -> Table: ...
    def invert(self, t: Table) -> Table: ...
    def describe(self) -> str: ...


@dataclass(frozen=True)
class Drop:
    """Column `name` left out (it stood at position `at` at this point)."""

    name: str
    at: int

    def apply(self, t: Table) -> Table:
        t.pop(self.name)
        return t

    def invert(self, t: Table) -> Table:
        t.insert(self.at, self.name, "string", [f"{self.name}-{i}" for i in range(t.n_rows)])
        return t

    def describe(self) -> str:
        return f"'{self.name}' left out"


@dataclass(frozen=True)
class Move:
    """Column `name` moved from position `frm` to `to` (-1: last)."""

    name: str
    frm: int
    to: int = -1

    def apply(self, t: Table) -> Table:
        t.insert(self.to, *t.pop(self.name))
        return t

    def invert(self, t: Table) -> Table:
        t.insert(self.frm, *t.pop(self.name))
        return t

    def describe(self) -> str:
        return f"'{self.name}' moved {'last' if self.to == -1 else f'to {self.to + 1}'}"


def _number_token(v: str | None) -> str | None:
    if v is None:
        return None
    x = float(v)
    return str(int(x)) if x.is_integer() else repr(x)


@dataclass(frozen=True)
class Retype:
    """Column `name` re-typed: to numeric, or to nominal with the declared values `to`."""

    name: str
    to: Kind

    def apply(self, t: Table) -> Table:
        j = t.index(self.name)
        if self.to != "numeric":
            try:
                t.columns[j] = [_number_token(v) for v in t.columns[j]]
            except ValueError:
                raise WorkbenchError(f"{t.where}: '{self.name}' is not numeric") from None
        t.kinds[j] = self.to
        return t

    def invert(self, t: Table) -> Table:
        j = t.index(self.name)
        t.kinds[j] = "numeric" if self.to != "numeric" else tuple(
            sorted({v for v in t.columns[j] if v is not None}, key=float))
        return t

    def describe(self) -> str:
        return f"'{self.name}' re-typed {'numeric' if self.to == 'numeric' else 'nominal'}"


@dataclass(frozen=True)
class AsMissing:
    """A nominal value written as the text `token` (a quoted ``'?'``) read as missing."""

    token: str = "?"

    def apply(self, t: Table) -> Table:
        for j, kind in enumerate(t.kinds):
            if isinstance(kind, tuple) and self.token in kind:
                t.kinds[j] = tuple(v for v in kind if v != self.token)
                t.columns[j] = [None if v == self.token else v for v in t.columns[j]]
        return t

    def invert(self, t: Table) -> Table:
        for j, kind in enumerate(t.kinds):
            if isinstance(kind, tuple) and None in t.columns[j]:
                t.kinds[j] = kind + (self.token,)
                t.columns[j] = [self.token if v is None else v for v in t.columns[j]]
        return t

    def describe(self) -> str:
        return f"the value '{self.token}' read as missing"


@dataclass(frozen=True)
class Group:
    """Numeric column `name` replaced by nominal `new_name`: the label of the group
    ``(label, low, high)`` (inclusive) its value falls in."""

    name: str
    new_name: str
    groups: tuple[tuple[str, float, float], ...]

    def apply(self, t: Table) -> Table:
        j = t.index(self.name)

        def label(v: str | None) -> str | None:
            if v is None:
                return None
            x = float(v)
            for lab, lo, hi in self.groups:
                if lo <= x <= hi:
                    return lab
            raise WorkbenchError(f"{t.where}: '{self.name}' = {v} is in no group")

        t.columns[j] = [label(v) for v in t.columns[j]]
        t.names[j], t.kinds[j] = self.new_name, tuple(g[0] for g in self.groups)
        return t

    def invert(self, t: Table) -> Table:
        j = t.index(self.new_name)
        low = {lab: (hi if math.isinf(lo) else lo) for lab, lo, hi in self.groups}
        t.columns[j] = [None if v is None else _number_token(str(low[v]))
                        for v in t.columns[j]]
        t.names[j], t.kinds[j] = self.name, "numeric"
        return t

    def describe(self) -> str:
        return f"'{self.name}' grouped into " + " / ".join(g[0] for g in self.groups)


@dataclass(frozen=True)
class Sub:
    """`pattern` removed from every value of column `name` (the fixture writes `example`
    after every other value)."""

    name: str
    pattern: str
    example: str

    def apply(self, t: Table) -> Table:
        j, rx = t.index(self.name), re.compile(self.pattern)
        t.columns[j] = [None if v is None else rx.sub("", v) for v in t.columns[j]]
        return t

    def invert(self, t: Table) -> Table:
        j = t.index(self.name)
        t.columns[j] = [v if v is None or i % 2 else v + self.example
                        for i, v in enumerate(t.columns[j])]
        return t

    def describe(self) -> str:
        return f"'{self.name}' without the pattern {self.pattern} (e.g. '{self.example}')"


@dataclass(frozen=True)
class Rename:
    """Values of column `name` renamed (``pairs``: source value, catalog value)."""

    name: str
    pairs: tuple[tuple[str, str], ...]

    def apply(self, t: Table) -> Table:
        return self._mapped(t, dict(self.pairs))

    def invert(self, t: Table) -> Table:
        return self._mapped(t, {b: a for a, b in self.pairs})

    def _mapped(self, t: Table, m: dict[str, str]) -> Table:
        j = t.index(self.name)
        t.columns[j] = [None if v is None else m.get(v, v) for v in t.columns[j]]
        if isinstance(t.kinds[j], tuple):
            t.kinds[j] = tuple(m.get(v, v) for v in t.kinds[j])
        return t

    def describe(self) -> str:
        return f"'{self.name}' codes named"


@dataclass(frozen=True)
class BlockClass:
    """A class column `name` appended: row i gets ``blocks[i // size]`` (the file's
    blocks), the class declaring `declared`."""

    name: str
    declared: tuple[str, ...]
    blocks: tuple[str, ...]
    size: int

    def apply(self, t: Table) -> Table:
        if t.n_rows != self.size * len(self.blocks):
            raise WorkbenchError(f"{t.where}: {t.n_rows} rows, expected "
                                 f"{self.size * len(self.blocks)} ({len(self.blocks)} "
                                 f"blocks of {self.size})")
        t.insert(-1, self.name, self.declared,
                 [self.blocks[i // self.size] for i in range(t.n_rows)])
        return t

    def invert(self, t: Table) -> Table:
        t.pop(self.name)
        return t

    def describe(self) -> str:
        return f"class '{self.name}' from the block order ({self.size} rows each)"


@dataclass(frozen=True)
class DropRows:
    """Rows whose `name` is neither missing nor one of `allowed` left out (a malformed,
    shifted record); the fixture adds one with the value `example`."""

    name: str
    allowed: tuple[str, ...]
    example: str

    def apply(self, t: Table) -> Table:
        col = t.columns[t.index(self.name)]
        t.keep_rows([v is None or v in self.allowed for v in col])
        return t

    def invert(self, t: Table) -> Table:
        j = t.index(self.name)
        for i, col in enumerate(t.columns):
            col.insert(t.n_rows // 2, self.example if i == j else None)
        return t

    def describe(self) -> str:
        return f"rows with an impossible '{self.name}' left out"


@dataclass(frozen=True)
class Split:
    """Column `name` (a sequence written as one token) split into one column per
    character: `names`, each of kind `kind`."""

    name: str
    names: tuple[str, ...]
    kind: tuple[str, ...]

    def apply(self, t: Table) -> Table:
        j = t.index(self.name)
        _, _, col = t.pop(self.name)
        seqs = [None if v is None else "".join(v.split()) for v in col]
        bad = next((v for v in seqs if v is None or len(v) != len(self.names)), "")
        if bad != "":
            raise WorkbenchError(f"{t.where}: a '{self.name}' of {len(bad or '')} "
                                 f"characters, expected {len(self.names)}")
        for k, n in reversed(list(enumerate(self.names))):
            t.insert(j, n, self.kind, [v[k] for v in seqs])
        return t

    def invert(self, t: Table) -> Table:
        j = t.index(self.names[0])
        parts = [t.pop(n)[2] for n in self.names]
        t.insert(j, self.name, "string", ["".join(chars) for chars in zip(*parts)])
        return t

    def describe(self) -> str:
        return f"'{self.name}' split into {len(self.names)} positions"


# ----- origins ---------------------------------------------------------------------------------
def _text(path: Path, where: str) -> str:
    raw = path.read_bytes()
    if path.name.endswith(".Z"):
        raw = lzw.decompress(raw, where)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


@dataclass(frozen=True)
class OpenML:
    """OpenML's ARFF of data set `data_id` (its description names the file and its MD5)."""

    data_id: int
    name: str
    base: str = OPENML

    def describe(self) -> str:
        return f"OpenML data set {self.data_id} ({self.name}), ARFF"

    def address(self) -> str:
        return f"https://www.openml.org/d/{self.data_id}"

    def read(self, get: Get, header: Table | None) -> Table:
        where = f"{self.base}api/v1/json/data/{self.data_id}"
        try:
            desc = json.loads(get(self.base, f"api/v1/json/data/{self.data_id}")
                              .read_text(encoding="utf-8"))["data_set_description"]
            url, md5 = desc["url"], desc.get("md5_checksum")
        except (ValueError, KeyError, TypeError):
            raise WorkbenchError(f"{where}: not an OpenML data set description") from None
        if str(desc.get("name", "")).lower() != self.name.lower():
            raise WorkbenchError(f"{where}: OpenML data set {self.data_id} is "
                                 f"'{desc.get('name')}', expected '{self.name}'")
        path = get(self.base, urlparse(url).path.lstrip("/"))
        if md5 and hashlib.md5(path.read_bytes()).hexdigest() != md5:
            raise WorkbenchError(f"{url}: MD5 {hashlib.md5(path.read_bytes()).hexdigest()} "
                                 f"differs from the {md5} OpenML publishes; the download was "
                                 "altered or cut short: fetch again")
        return read_arff(_text(path, url), url)

    def fixture(self, t: Table) -> dict[str, bytes]:
        rel = f"data/v1/download/{self.data_id}/{self.name}.arff"
        body = arff_bytes(t)
        desc = {"data_set_description": {
            "id": str(self.data_id), "name": self.name, "file_id": str(self.data_id),
            "format": "ARFF", "url": f"{self.base}{rel}",
            "md5_checksum": hashlib.md5(body).hexdigest()}}
        return {f"api/v1/json/data/{self.data_id}": json.dumps(desc).encode(), rel: body}


@dataclass(frozen=True)
class Text:
    """Delimited text files (one after another) without a header: the catalog's header
    with the recipe's steps undone names and types their columns."""

    files: tuple[str, ...]
    sep: str | None = ","
    comment: str | None = None
    file_rows: tuple[int, ...] = ()  # rows per file, where several (the fixture's split)
    skip_ragged: bool = False   # rows with another number of values left out
    base: str = UCI

    def describe(self) -> str:
        return "UCI " + " + ".join(f.rsplit("/", 1)[-1] for f in self.files)

    def address(self) -> str:
        return self.base + self.files[0].rsplit("/", 1)[0] + "/"

    def read(self, get: Get, header: Table | None) -> Table:
        assert header is not None
        rows = []
        for rel in self.files:
            rows += read_text(_text(get(self.base, rel), rel), self.base + rel, self.sep,
                              self.comment, fields=len(header.names),
                              skip_ragged=self.skip_ragged)
        t = header.copy()
        t.columns = [list(c) for c in zip(*rows)] if rows else [[] for _ in t.names]
        t.where = self.base + self.files[0]
        return t

    def fixture(self, t: Table) -> dict[str, bytes]:
        rows = list(zip(*t.columns))
        sizes = self.file_rows or (len(rows),)
        out, start = {}, 0
        for k, rel in enumerate(self.files):
            end = len(rows) if k == len(self.files) - 1 else start + sizes[k]
            part = rows[start:end]
            body = text_bytes(part, ", " if self.sep == "," else (self.sep or " "))
            out[rel] = lzw.compress(body) if rel.endswith(".Z") else body
            start = end
        if self.comment and not self.files[-1].endswith(".Z"):
            out[self.files[-1]] = f"{self.comment}a comment line\n".encode() + \
                out[self.files[-1]]
        return out


@dataclass(frozen=True)
class TarMembers:
    """The members of a ``.tar.gz`` archive whose names match `pattern` (group 1: their
    number, the order they are read in), white-space separated text."""

    archive: str
    pattern: str
    base: str = UCI_KDD

    def describe(self) -> str:
        return f"UCI KDD {self.archive.rsplit('/', 1)[-1]} ({self.pattern})"

    def address(self) -> str:
        return self.base + self.archive

    def read(self, get: Get, header: Table | None) -> Table:
        assert header is not None
        path, rx = get(self.base, self.archive), re.compile(self.pattern)
        parts: list[tuple[int, list]] = []
        try:
            with tarfile.open(path, mode="r:gz") as tar:
                for member in tar:  # streamed: the images in the archive are never read
                    m = rx.search(member.name)
                    if m and member.isfile():
                        text = tar.extractfile(member).read().decode("latin-1")
                        parts.append((int(m.group(1)), read_text(
                            text, f"{self.archive}:{member.name}", None,
                            fields=len(header.names))))
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise WorkbenchError(f"{self.base + self.archive}: not a whole tar.gz archive "
                                 f"({exc}); the download was cut short or altered: fetch "
                                 "again") from None
        rows = [r for _, part in sorted(parts, key=lambda p: p[0]) for r in part]
        t = header.copy()
        t.columns = [list(c) for c in zip(*rows)] if rows else [[] for _ in t.names]
        t.where = self.base + self.archive
        return t

    def fixture(self, t: Table) -> dict[str, bytes]:
        import io

        rows = list(zip(*t.columns))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for k, (lo, hi) in enumerate([(0, len(rows) // 2), (len(rows) // 2, len(rows))]):
                # the numbers sort as numbers: img2 before img10
                name = "package/GroundTruths/" + ("img2.lxyr" if k == 0 else "img10.lxyr")
                data = text_bytes(rows[lo:hi], " ")
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            info = tarfile.TarInfo("package/Images/img2.sdt")
            info.size = 4
            tar.addfile(info, io.BytesIO(b"\0\1\2\3"))
        return {self.archive: buf.getvalue()}


@dataclass(frozen=True)
class LedGenerator:
    """The UCI LED display generator: a uniform digit (``randrange(10)``), then each of its
    7 segments inverted with probability `noise` (``random() < noise``), Python's
    ``random.Random(seed)`` in that order."""

    n: int = 1000
    noise: float = 0.1
    seed: int = 20130101
    base: str = ""

    SEGMENTS = ("1110111", "0010010", "1011101", "1011011", "0111010", "1101011",
                "1101111", "1010010", "1111111", "1111011")

    def describe(self) -> str:
        return (f"generated: UCI LED display generator, {self.n} rows, noise "
                f"{self.noise:g}, seed {self.seed}")

    def address(self) -> str:
        return "(generated, nothing to download)"

    def read(self, get: Get, header: Table | None) -> Table:
        assert header is not None
        rng = random.Random(self.seed)
        rows = []
        for _ in range(self.n):
            digit = rng.randrange(10)
            segs = [str(int(bit) ^ (rng.random() < self.noise))
                    for bit in self.SEGMENTS[digit]]
            rows.append(segs + [str(digit)])
        t = header.copy()
        t.columns = [list(c) for c in zip(*rows)]
        t.where = "LED generator"
        return t

    def fixture(self, t: Table) -> dict[str, bytes]:
        return {}


@dataclass(frozen=True)
class NetTalk:
    """Sejnowski & Rosenberg's NETtalk task from the corpus file (``word phonemes stress
    flag`` per line, ``;`` comments; a word may be listed with several pronunciations) and
    the list of the 1,000 most common words (the first token of each line): for each listed
    word, in the list's order, its first listed pronunciation, one row per letter — the
    7-letter window (3 left, the letter, 3 right; ``_`` outside the word) and the letter's
    phoneme symbol. The class declares every phoneme symbol of the corpus, in character
    order; a listed word missing from the corpus is an error."""

    files: tuple[str, str] = ("undocumented/connectionist-bench/nettalk/nettalk.data",
                              "undocumented/connectionist-bench/nettalk/nettalk.list")
    base: str = UCI
    width: int = 3

    def describe(self) -> str:
        return "UCI NETtalk corpus nettalk.data + the 1,000-word list nettalk.list"

    def address(self) -> str:
        return self.base + self.files[0].rsplit("/", 1)[0] + "/"

    @staticmethod
    def _lines(text: str):
        for line in text.splitlines():
            parts = line.split()
            if parts and not parts[0].startswith((";", "#", "%")):
                yield parts

    def read(self, get: Get, header: Table | None) -> Table:
        assert header is not None
        corpus, listed = (_text(get(self.base, rel), rel) for rel in self.files)
        where = self.base + self.files[0]
        first: dict[str, str] = {}
        symbols: set[str] = set()
        for parts in self._lines(corpus):
            if len(parts) < 2 or len(parts[0]) != len(parts[1]):
                continue  # (not a word line)
            first.setdefault(parts[0], parts[1])
            symbols.update(parts[1])
        rows = []
        pad = "_" * self.width
        for parts in self._lines(listed):
            word = parts[0]
            if word not in first:
                raise WorkbenchError(f"{self.base + self.files[1]}: '{word}' is not in "
                                     f"{where}")
            padded = pad + word + pad
            for i, phoneme in enumerate(first[word]):
                rows.append(list(padded[i:i + 2 * self.width + 1]) + [phoneme])
        t = header.copy()
        t.kinds[-1] = tuple(sorted(symbols))
        t.columns = [list(c) for c in zip(*rows)] if rows else [[] for _ in t.names]
        t.where = where
        return t

    def fixture(self, t: Table) -> dict[str, bytes]:
        words, phonemes = [], []
        for row in zip(*t.columns):
            letter = row[self.width]
            if row[self.width - 1] == "_":  # a word begins
                words.append("")
                phonemes.append("")
            words[-1] += letter
            phonemes[-1] += row[-1]
        unused = "".join(v for v in t.kinds[-1] if v not in "".join(phonemes))
        corpus = [";; the NETtalk corpus (a fixture): word, phonemes, stress, flag"]
        corpus += [f"{w}\t{p}\t{'1' * len(w)}\t0" for w, p in zip(words, phonemes)]
        corpus.append(f"{words[0]}\t{'-' * len(words[0])}\t{'0' * len(words[0])}\t1")
        if unused:  # a word only the corpus has, so the class declares every symbol
            corpus.append(f"{'q' * len(unused)}\t{unused}\t{'0' * len(unused)}\t2")
        listed = list(dict.fromkeys(words))
        return {self.files[0]: ("\n".join(corpus) + "\n").encode(),
                self.files[1]: ("\n".join(listed) + "\n").encode()}


Origin = OpenML | Text | TarMembers | LedGenerator | NetTalk


@dataclass(frozen=True)
class Recipe:
    """A catalog data set's public origin and the documented changes to it."""

    slug: str
    origin: Origin
    steps: tuple = ()
    note: str = ""
    licence: str = CC_BY
    cite: str = UCI_CITE
    rows: int | None = None  # the documented rows, for a data set without a reference copy
    header_of: str | None = None  # the data set whose header it shares (no copy of its own)

    def source_header(self) -> Table | None:
        """The catalog's header with the steps undone (for origins without a header)."""
        if isinstance(self.origin, OpenML):
            return None
        t = _header_table(self.header_of or self.slug)
        for step in reversed(self.steps):
            step.invert(t)
        return t

    def convert(self, get: Get) -> Dataset:
        """Download (through `get`), read and convert: the catalog's Dataset."""
        t = self.origin.read(get, self.source_header())
        for step in self.steps:
            t = step.apply(t)
        if relation := catalog_content().get(self.slug, {}).get("relation"):
            t.relation = relation
        return to_dataset(t, self.slug)

    def fixture(self, reference: Dataset) -> dict[str, bytes]:
        """The origin's files (relative path → bytes) made from a reference copy."""
        t = from_dataset(reference)
        for step in reversed(self.steps):
            t = step.invert(t)
        return self.origin.fixture(t)

    def changes(self) -> str:
        """The documented changes, one line."""
        return "; ".join(s.describe() for s in self.steps)


def _openml(slug: str, data_id: int, name: str, *steps, note: str = "",
            rows: int | None = None) -> Recipe:
    return Recipe(slug, OpenML(data_id, name), tuple(steps), note, cite=OPENML_CITE,
                  rows=rows)


def _uci(slug: str, files, *steps, note: str = "", rows: int | None = None,
         header_of: str | None = None, **text) -> Recipe:
    files = (files,) if isinstance(files, str) else tuple(files)
    return Recipe(slug, Text(files, **text), tuple(steps), note, rows=rows,
                  header_of=header_of)


_ABALONE_GROUPS = (("1-8", -math.inf, 8), ("9-10", 9, 10), ("11+", 11, math.inf))
_SHUTTLE = tuple((str(i), n) for i, n in enumerate(
    ("Rad.Flow", "Fpv.Close", "Fpv.Open", "High", "Bypass", "Bpv.Close", "Bpv.Open"), 1))
_SYNCON = ("Normal", "Cyclic", "Increasing_trend", "Decreasing_trend", "Upward_shift",
           "Downward_shift")
_SYNCON_BLOCKS = tuple(_SYNCON[i] for i in (4, 0, 3, 1, 5, 2))

_WEKA = (
    ("audiology", 7, "audiology"),
    ("autos", 9, "autos"),
    ("balance-scale", 11, "balance-scale"),
    ("breast-cancer-w", 15, "breast-w"),
    ("car", 21, "car"),
    ("contraceptive-mc", 23, "cmc"),
    ("credit-a", 29, "credit-a"),
    ("dermatology", 35, "dermatology"),
    ("heart-c", 49, "heart-c"),
    ("hepatitis", 55, "hepatitis"),
    ("horse-colic", 27, "colic"),
    ("hungarian", 51, "heart-h"),
    ("hypothyroid", 57, "hypothyroid"),
    ("kr-vs-kp", 3, "kr-vs-kp"),
    ("letter", 6, "letter"),
    ("lymphography", 10, "lymph"),
    ("mushroom", 24, "mushroom"),
    ("nursery", 26, "nursery"),
    ("optdigits", 28, "optdigits"),
    ("page-blocks", 30, "page-blocks"),
    ("pendigits", 32, "pendigits"),
    ("primary-tumor", 171, "primary-tumor"),
    ("segment", 36, "segment"),
    ("sick", 38, "sick"),
    ("sonar", 40, "sonar"),
    ("spambase", 44, "spambase"),
    ("splice", 46, "splice"),
    ("tic-tac-toe", 50, "tic-tac-toe"),
    ("vehicle", 54, "vehicle"),
    ("vowel", 307, "vowel"),
    ("waveform-5000", 60, "waveform-5000"),
    ("contact-lenses", 164, "contact-lenses"),
    ("german", 31, "credit-g"),
    ("glass", 41, "glass"),
    ("house-votes-84", 56, "vote"),
    ("ionosphere", 59, "ionosphere"),
    ("iris", 61, "iris"),
    ("labor", 4, "labor"),
    ("pima", 37, "diabetes"),
)
"""Weka's ARFF files as OpenML serves them, unchanged: (slug, OpenML data id, OpenML name);
the embedded Weka examples among them, for a copy of one's own."""

RECIPES: dict[str, Recipe] = {r.slug: r for r in (
    # Weka's ARFF files (the versions the catalog describes), as OpenML serves them
    *(_openml(*entry) for entry in _WEKA),
    _openml("anneal", 1, "anneal", AsMissing("?"),
            note="Weka's file writes not-applicable values as a quoted '?'"),
    _openml("haberman", 43, "haberman", Retype("Patients_year_of_operation", "numeric"),
            note="the year is numeric in UCI's documentation"),
    _openml("post-operative", 34, "postoperative-patient-data", Retype("COMFORT", "numeric"),
            note="COMFORT is an integer 0-20 in UCI's documentation"),
    _openml("tae", 48, "tae",
            Retype("Course_instructor", tuple(str(i) for i in range(1, 26))),
            Retype("Course", tuple(str(i) for i in range(1, 27))),
            note="instructor and course are categorical in UCI's documentation"),
    _openml("zoo", 62, "zoo", Drop("animal", 0),
            note="the animal's name (an identifier) left out"),
    # UCI's own files
    _uci("abalone", "abalone/abalone.data",
         Group("Rings", "rings_group", _ABALONE_GROUPS),
         note="the 3-class grouping of UCI's abalone.names (Waugh 1995)"),
    _uci("adult", ("adult/adult.data", "adult/adult.test"), Sub("class", r"\.$", "."),
         comment="|", file_rows=(32561, 16281),
         note="data then test rows; the test labels' trailing '.' removed"),
    _uci("bupa", "liver-disorders/bupa.data", note="the selector field is the class"),
    _uci("cylinder-bands", "cylinder-bands/bands.data",
         note="typed per bands.names; blank lines skipped"),
    _uci("echocardiogram", "echocardiogram/echocardiogram.data",
         DropRows("pericardial-effusion", ("0", "1"), "77"),
         Drop("survival", 0), Drop("still-alive", 0), Drop("wall-motion-score", 5),
         Drop("mult", 6), Drop("name", 6), Drop("group", 6), skip_ragged=True,
         note="the shifted record left out; name, group and mult (UCI: ignore), survival "
              "and still-alive (the class derives from them) and wall-motion-score "
              "(redundant) left out"),
    _uci("lung-cancer", "lung-cancer/lung-cancer.data", Move("class", 0),
         note="the class moved last"),
    _uci("magic", "magic/magic04.data"),
    _uci("new-thyroid", "thyroid-disease/new-thyroid.data", Move("class", 0),
         note="the class moved last"),
    _uci("syncon", "synthetic_control/synthetic_control.data",
         BlockClass("class", _SYNCON, _SYNCON_BLOCKS, 100), sep=None,
         note="the class from the file's six blocks of 100, labelled as the catalog's copy "
              "has them: Upward_shift, Normal, Decreasing_trend, Cyclic, Downward_shift, "
              "Increasing_trend (UCI's documentation names the blocks Normal, Cyclic, "
              "Increasing, Decreasing, Upward, Downward: the same partition, other names)"),
    _uci("thyroid", "thyroid-disease/thyroid0387.data",
         Sub("diagnosis", r"\[\d+\]$", "[840801013]"),
         note="the record id removed from the diagnosis"),
    _uci("wall-following", "00194/sensor_readings_24.data"),
    _uci("wine", "wine/wine.data", Move("class", 0), note="the class moved last"),
    _uci("yeast", "yeast/yeast.data", Drop("Sequence_Name", 0), sep=None,
         note="the sequence name (an identifier) left out"),
    _uci("satellite", ("statlog/satimage/sat.trn", "statlog/satimage/sat.tst"), sep=None,
         file_rows=(4435, 2000), note="training then test rows"),
    _uci("shuttle", ("statlog/shuttle/shuttle.trn.Z", "statlog/shuttle/shuttle.tst"),
         Rename("Class", _SHUTTLE), sep=None, file_rows=(43500, 14500),
         note="training then test rows; class codes 1-7 named as in UCI's documentation"),
    _uci("musk1", "musk/clean1.data.Z", Drop("molecule_name", 0),
         Drop("conformation_name", 0), Retype("Class", ("0", "1")),
         note="version 1 (clean1); the molecule and conformation names left out"),
    # other papers' data sets (no reference copy: the documented row count is checked)
    _openml("soybean", 42, "soybean", rows=683,
            note="PAKDD 2014's soybean (large): 683 rows, 19 classes"),
    _uci("musk2", "musk/clean2.data.Z", Drop("molecule_name", 0),
         Drop("conformation_name", 0), Retype("Class", ("0", "1")), rows=6598,
         header_of="musk1", note="version 2 (clean2), laid out as musk1"),
    _uci("promoters", "molecular-biology/promoter-gene-sequences/promoters.data",
         Drop("instance", 1), Split("sequence", tuple(f"V{i}" for i in range(2, 59)),
                                    ("a", "c", "g", "t")), Move("Class", 0),
         note="the instance name left out, the sequence split into its 57 positions, "
              "the class moved last"),
    Recipe("volcanoes", TarMembers("volcanoes/volcanoes.tar.gz",
                                   r"GroundTruths/img(\d+)\.lxyr$"),
           (Move("class", 0),),
           note="the ground-truth files of the 134 images concatenated in image order "
                "(label, x, y, radius); the label is the class"),
    Recipe("phoneme", NetTalk(), (),
           note="a reconstruction: one row per letter of the 1,000 most common words (their "
                "first listed pronunciation), the 7-letter window and the letter's phoneme; "
                "the files' layout is the benchmark collection's description, not "
                "confirmed against a download"),
    Recipe("led", LedGenerator(), (),
           note="UCI's LED generator with the catalog's seed (the archive has no data "
                "file)"),
)}
"""The small data sets' recipes (the big ones: `workbench.data.fetch.SOURCES`)."""

NO_SOURCE: dict[str, str] = {
    "chess": "the only copy found is integer-coded (names and labels lost) and its origin "
             "unconfirmed; no public file gives it",
    "sign": "only an MDL-discretised copy exists; UCI's Australian Sign Language files give "
            "other attributes",
    "connect-4": "embedded (a reconstruction): UCI's connect-4.data.Z holds the same "
                 "positions, but its mirror images and row order differ",
    "ipums-la-99": "the PAKDD 2014 copy (UCI KDD's IPUMS census extract, 61 attributes, "
                   "19 classes) is not laid out in any file the workbench can confirm",
    "waveform-100000": "generated data (PAKDD 2014): the generator's seed and code are not "
                       "published",
    "uscensus1990": "JMLR 2016 does not say which attribute is its 4-valued class",
    **{slug: "JMLR 2016's copy from the large-scale learning benchmarks it cites; no "
             "public file of that version is known to the workbench"
       for slug in ("uspsextended", "mitfaceseta", "mitfacesetb", "mitfacesetc",
                    "satellite-8m", "splice-50m")},
}
"""Catalog data sets no recipe makes, and why (`workbench datasets` says so)."""
