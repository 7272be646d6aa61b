"""`workbench fetch SLUG`: download a catalog data set from its public source into a cache
directory, converted to the catalog's file, where the search path finds it.

- Small data sets (`workbench.data.recipes`): OpenML's Weka ARFF files by data id, the UCI
  archive's text files, a UCI archive's members or a seeded generator, changed as the
  catalog documents; the converted *content* must equal the reference copy's (rows and
  `content_checksum`, ``content.json``), else nothing is written.
- Big sources (`SOURCES`): the UCI repository's files of the full poker-hand (training +
  testing files, 1,025,010 rows; its training part is checked against the catalog's copy),
  covtype, census-income (data + test files, the instance weight left out) and
  localization, JMLR 2016's big sets (kddcup, msdyearprediction, pamap2, record-linkage)
  and LIBSVM's mnist8m. Each pins the rows its publisher documents and refuses another
  count; a source may pin each file's SHA-256. mnist8m (8.1 M rows × 784 pixels) is
  converted block by block (`BLOCK_BYTES` of text) into ``<slug>.parquet``.
- Every download's SHA-256 is recorded in ``<slug>.source.json`` next to the data.
- The cache is ``$WORKBENCH_CACHE`` or ``~/.cache/workbench/datasets``; it is on the data
  search path (`catalog.search_path`), so after ``fetch covtype`` configs and commands find
  ``covtype``. ``$WORKBENCH_FETCH_BASE`` (or ``fetch --mirror``) replaces every publisher's
  base address (a mirror holding the same paths, or a local server in tests).
- Safety: files are downloaded one at a time into the cache's ``.partial/<slug>`` folder; a
  transfer cut short (a closed connection, fewer bytes than announced, a server error) is
  resumed with an HTTP range request, or begun again, up to `RETRIES` attempts with doubling
  waits, and a fetch that was interrupted or gave up is resumed from there by the next one.
  The data set is written atomically, and only after the conversion and its checks
  succeeded. An HTTP error, a checksum or row-count mismatch, a truncated or altered gzip /
  bzip2 / .Z stream or a malformed file gives one line naming the address or file and leaves
  no file behind.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from workbench.data.arff import iter_arff_chunks, save_arff
from workbench.data.arrow import pa
from workbench.data.content import content_checksum, short
from workbench.data.convert import (Column, Layout, Part, file_part, strip_dot, upper,
                                    whole_number, write_arff, zip_parts)
from workbench.data.dataset import Dataset
from workbench.data.recipes import NO_SOURCE, RECIPES, catalog_content
from workbench import log
from workbench.errors import WorkbenchError
from workbench.fileio import PARQUET_OPTIONS, atomic_write_text
from workbench.resources import cache_dir

__all__ = ["SOURCES", "expected_content", "fetch", "has_source", "mirror"]

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
BASE_ENV = "WORKBENCH_FETCH_BASE"
TIMEOUT = 60


@dataclass(frozen=True)
class Source:
    """Where a big data set comes from and how its downloaded files become the catalog's
    file: `stream(paths, out, rows)` writes `out` from the files on disk in constant memory
    and returns its rows (refusing a count other than `rows`, the publisher's documented
    one, before writing where it can)."""

    files: tuple[str, ...]  # paths relative to the base address
    stream: Callable[[list[Path], Path, int | None], int]
    suffix: str = ".arff.gz"
    sha256: dict[str, str] = field(default_factory=dict)  # pinned checksums by file
    base: str = UCI
    note: str = ""
    rows: int | None = None  # the rows the publisher documents (another count is refused)


# ----- the big sources' layouts: their files -> the catalog's ARFF, streamed (convert.py) ----
def _arff(slug: str, layout: Layout, parts: Callable[[list[Path]], list[Part]] | None = None
          ) -> Callable[[list[Path], Path, int | None], int]:
    """A `Source.stream` writing the files' rows as `slug`'s ARFF file (`convert`)."""
    def stream(paths: list[Path], out: Path, rows: int | None) -> int:
        chosen = parts(paths) if parts is not None else [file_part(p) for p in paths]
        return write_arff(chosen, layout, out, slug, expect_rows=rows)
    return stream


def _nominal(name: str, values: tuple[str, ...] | None = None, by_number: bool = False,
             ) -> Column:
    return Column(name, declared=values, by_number=by_number)


def _numbers(names) -> tuple[Column, ...]:
    return tuple(Column(n, numeric=True) for n in names)


_SUITS, _RANKS = tuple(str(v) for v in range(1, 5)), tuple(str(v) for v in range(1, 14))
_POKER = Layout(tuple(_nominal(f"{k}{i}", _SUITS if k == "S" else _RANKS)
                      for i in range(1, 6) for k in "SC")
                + (_nominal("class", tuple(str(v) for v in range(10))),), "class")

_COVTYPE_NUMERIC = ["Elevation", "Aspect", "Slope", "Horizontal_Distance_To_Hydrology",
                    "Vertical_Distance_To_Hydrology", "Horizontal_Distance_To_Roadways",
                    "Hillshade_9am", "Hillshade_Noon", "Hillshade_3pm",
                    "Horizontal_Distance_To_Fire_Points"]
_COVTYPE = Layout(_numbers(_COVTYPE_NUMERIC)
                  + tuple(_nominal(n, ("0", "1")) for n in
                          [f"Wilderness_Area{i}" for i in range(1, 5)]
                          + [f"Soil_Type{i}" for i in range(1, 41)])
                  + (_nominal("Cover_Type", tuple("1234567")),), "Cover_Type")

_CENSUS = [("age", True), ("class of worker", False), ("detailed industry recode", False),
           ("detailed occupation recode", False), ("education", False),
           ("wage per hour", True), ("enroll in edu inst last wk", False),
           ("marital stat", False), ("major industry code", False),
           ("major occupation code", False), ("race", False), ("hispanic origin", False),
           ("sex", False), ("member of a labor union", False),
           ("reason for unemployment", False), ("full or part time employment stat", False),
           ("capital gains", True), ("capital losses", True), ("dividends from stocks", True),
           ("tax filer stat", False), ("region of previous residence", False),
           ("state of previous residence", False),
           ("detailed household and family stat", False),
           ("detailed household summary in household", False), ("instance weight", True),
           ("migration code-change in msa", False), ("migration code-change in reg", False),
           ("migration code-move within reg", False), ("live in this house 1 year ago", False),
           ("migration prev res in sunbelt", False),
           ("num persons worked for employer", True), ("family members under 18", False),
           ("country of birth father", False), ("country of birth mother", False),
           ("country of birth self", False), ("citizenship", False),
           ("own business or self employed", False),
           ("fill inc questionnaire for veteran's admin", False),
           ("veterans benefits", False), ("weeks worked in year", True), ("year", False),
           ("income", False)]
_CENSUS_LAYOUT = Layout(tuple(
    Column(n, numeric=num, keep=n != "instance weight")  # (UCI: a sampling weight)
    for n, num in _CENSUS), "income")

_LOCALIZATION = Layout((_nominal("sequence"), _nominal("tag"), Column("timestamp", True),
                        Column("date", keep=False), *_numbers("xyz"), _nominal("activity")),
                       "activity")

_KDD = ["duration", "protocol_type", "service", "flag", "src_bytes", "dst_bytes", "land",
        "wrong_fragment", "urgent", "hot", "num_failed_logins", "logged_in",
        "num_compromised", "root_shell", "su_attempted", "num_root", "num_file_creations",
        "num_shells", "num_access_files", "num_outbound_cmds", "is_host_login",
        "is_guest_login", "count", "srv_count", "serror_rate", "srv_serror_rate",
        "rerror_rate", "srv_rerror_rate", "same_srv_rate", "diff_srv_rate",
        "srv_diff_host_rate", "dst_host_count", "dst_host_srv_count",
        "dst_host_same_srv_rate", "dst_host_diff_srv_rate", "dst_host_same_src_port_rate",
        "dst_host_srv_diff_host_rate", "dst_host_serror_rate", "dst_host_srv_serror_rate",
        "dst_host_rerror_rate", "dst_host_srv_rerror_rate"]
_KDD_TEXT = ("protocol_type", "service", "flag")
_KDDCUP = Layout(tuple(_nominal(n) if n in _KDD_TEXT else Column(n, True) for n in _KDD)
                 + (_nominal("label"),), "label", fixes={"label": strip_dot})
"""KDD Cup 1999: the full training data then the corrected test data (4,898,431 + 311,029
rows, 41 attributes — protocol_type, service and flag nominal — and the connection type as
the class, its trailing '.' dropped)."""

_MSD = Layout((_nominal("year", by_number=True),
               *_numbers([f"timbre_avg_{i}" for i in range(1, 13)]
                         + [f"timbre_cov_{i}" for i in range(1, 79)])), "year",
              fixes={"year": whole_number})
"""YearPredictionMSD: the release year (the class, 1922-2011) of 515,345 songs from 90
timbre features (12 averages, 78 covariances)."""

_LINKAGE_NAMES = ["id_1", "id_2", "cmp_fname_c1", "cmp_fname_c2", "cmp_lname_c1",
                  "cmp_lname_c2", "cmp_sex", "cmp_bd", "cmp_bm", "cmp_by", "cmp_plz"]
_LINKAGE = Layout(_numbers(_LINKAGE_NAMES) + (_nominal("is_match", ("FALSE", "TRUE")),),
                  "is_match", header_rows=1, fixes={"is_match": upper})
"""Record linkage comparison patterns (donation.zip: ten zipped CSV blocks, 5,749,132
pairs): 11 numeric attributes (the two record ids and nine agreement scores, '?' missing)
and is_match (FALSE/TRUE, read as text) as the class."""

_IMU = [f"{part}_{name}" for part in ("hand", "chest", "ankle") for name in (
    ["temperature"] + [f"acc16_{a}" for a in "xyz"] + [f"acc6_{a}" for a in "xyz"]
    + [f"gyro_{a}" for a in "xyz"] + [f"mag_{a}" for a in "xyz"]
    + [f"orientation_{i}" for i in range(1, 5)])]
_PAMAP2 = Layout((Column("timestamp", True), _nominal("activity", by_number=True),
                  *_numbers(["heart_rate"] + _IMU)), "activity", delimiter=" ")
"""PAMAP2 physical activity monitoring: every subject file of Protocol/ then Optional/
(3,850,505 rows of space-separated readings, 'NaN' missing): timestamp, heart rate and
three IMUs' 51 readings as numeric attributes, the activity id (0 = transient, and 18
activities) as the class."""


def _block_number(name: str) -> int:
    return int("".join(c for c in name if c.isdigit()) or 0)


LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/"
BLOCK_BYTES = 64 << 20
"""Text decompressed and parsed at a time by the LIBSVM converter (one Parquet row group)."""


def _libsvm_parquet(paths: list[Path], out: Path, features: int, prefix: str,
                    classes: tuple[str, ...]) -> int:
    """bzip2-compressed LIBSVM files (``label index:value …``, indices from 1, absent = 0)
    of pixel values 0…255 into a Parquet file: `features` uint8 columns ``<prefix>1`` …
    and a nominal class of the declared `classes` (labels written as integers). Streamed:
    `BLOCK_BYTES` of text at a time, never the whole file; returns the rows."""
    import bz2

    import pyarrow.parquet as pq
    from sklearn.datasets import load_svmlight_file

    names = [f"{prefix}{j + 1}" for j in range(features)]
    schema = pa.schema([(n, pa.uint8()) for n in names]
                       + [("class", pa.dictionary(pa.int8(), pa.string()))])
    labels = {float(c): i for i, c in enumerate(classes)}
    dictionary = pa.array(list(classes))
    rows = 0
    with pq.ParquetWriter(out, schema, **PARQUET_OPTIONS) as writer:
        for path in paths:
            line = 1
            try:
                with bz2.open(path, "rb") as text:
                    while block := text.readlines(BLOCK_BYTES):
                        where = f"{path.name}, lines {line}-{line + len(block) - 1}"
                        try:
                            X, y = load_svmlight_file(io.BytesIO(b"".join(block)),
                                                      n_features=features, zero_based=False)
                        except ValueError as exc:
                            raise WorkbenchError(f"{where}: not LIBSVM data of {features} "
                                                 f"features ({exc})") from None
                        v = X.data  # (absent pixels are 0: only the stored ones to check)
                        if not ((v >= 0) & (v <= 255) & (v == np.floor(v))).all():
                            raise WorkbenchError(f"{where}: a value that is not a pixel "
                                                 "value 0..255")
                        dense = X.astype(np.uint8).toarray()  # (a byte a pixel, not 8)
                        try:
                            codes = np.array([labels[v] for v in y], dtype=np.int8)
                        except KeyError as exc:
                            raise WorkbenchError(f"{where}: label {exc.args[0]:g} is not one "
                                                 f"of {', '.join(classes)}") from None
                        cols = [pa.array(dense[:, j]) for j in range(features)]
                        cols.append(pa.DictionaryArray.from_arrays(pa.array(codes), dictionary))
                        writer.write_table(pa.Table.from_arrays(cols, schema=schema))
                        rows += len(block)
                        line += len(block)
            except (OSError, EOFError) as exc:
                raise WorkbenchError(f"{path.name}: not a whole bzip2 stream ({exc}); the "
                                     "download was cut short or altered: fetch again") from None
    return rows


def _mnist8m(paths: list[Path], out: Path, rows: int | None = None) -> int:
    return _libsvm_parquet(paths, out, 784, "pixel", tuple(str(d) for d in range(10)))


SOURCES: dict[str, Source] = {
    "poker-hand": Source(("poker/poker-hand-training-true.data",
                          "poker/poker-hand-testing.data"), _arff("poker-hand", _POKER),
                         note="training (25,010) then testing (1,000,000) rows",
                         rows=1_025_010),
    "covtype": Source(("covtype/covtype.data.gz",), _arff("covtype", _COVTYPE), rows=581_012),
    "census-income": Source(("census-income-mld/census-income.data.gz",
                             "census-income-mld/census-income.test.gz"),
                            _arff("census-income", _CENSUS_LAYOUT),
                            note="data then test rows; the instance weight is left out",
                            rows=299_285),
    "localization": Source(("00196/ConfLongDemo_JSI.txt",),
                           _arff("localization", _LOCALIZATION),
                           note="the date column (a text copy of the timestamp) is left out",
                           rows=164_860),
    # JMLR 2016's Table 7 (Martinez et al.) beyond the PAKDD 2013 catalog
    "kddcup": Source(("kddcup99-mld/kddcup.data.gz", "kddcup99-mld/corrected.gz"),
                     _arff("kddcup", _KDDCUP),
                     note="full training data then the corrected test data; the class is "
                          "the connection type", rows=5_209_460),
    "msdyearprediction": Source(("00203/YearPredictionMSD.txt.zip",),
                                _arff("msdyearprediction", _MSD, lambda paths: zip_parts(
                                    paths[0], "YearPredictionMSD.txt")),
                                note="the year as a nominal class", rows=515_345),
    "pamap2": Source(("00231/PAMAP2_Dataset.zip",), _arff("pamap2", _PAMAP2, lambda paths:
                     zip_parts(paths[0], ".dat", lambda n: ("Optional" in n, n))),
                     note="Protocol then Optional subject files; the activity id is the "
                          "class", rows=3_850_505),
    "record-linkage": Source(("00210/donation.zip",), _arff(
        "record-linkage", _LINKAGE, lambda paths: zip_parts(paths[0], ".zip", _block_number,
                                                            inner=".csv")),
        note="the ten blocks in order; is_match is the class", rows=5_749_132),
    "mnist8m": Source(("multiclass/mnist8m.bz2",), _mnist8m, suffix=".parquet", base=LIBSVM,
                      note="LIBSVM's 8.1 M digits (Loosli, Canu & Bottou's deformed MNIST): "
                           "784 pixel values 0-255 and the digit as the class; streamed to "
                           "Parquet", rows=8_100_000),
}


# ----- download ---------------------------------------------------------------------------------
RETRIES = 4
"""Attempts per file; between them the wait doubles from `BACKOFF` seconds."""
BACKOFF = 1.0
PARTIAL = ".partial"
"""The cache's folder of downloads under way (``<slug>/<file>``): a transfer that was cut
or killed is resumed from there by the next fetch; removed once the data set is written or
its content refused."""


class _Broken(Exception):
    """A transfer cut short (`got` bytes so far); worth another attempt."""

    def __init__(self, reason: str, got: int) -> None:
        super().__init__(reason)
        self.got = got


class _FileSink:
    """A download appended to a file (kept, so a later fetch can resume it); the
    `bytearray` operations `_attempt` uses."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, "ab")

    def __len__(self) -> int:
        return self.file.tell()

    def __iadd__(self, chunk: bytes) -> "_FileSink":
        self.file.write(chunk)
        return self

    def clear(self) -> None:
        self.file.seek(0)
        self.file.truncate()


class _Progress:
    """A progress bar on a terminal's stderr (nothing when stderr is not a terminal or
    the verbosity is quiet): bytes so far of the announced size, at most 5 updates a
    second."""

    def __init__(self, url: str) -> None:
        import sys

        self.name = url.rsplit("/", 1)[-1] or url
        self.stream = log.stream_for(log.NORMAL)
        self.on = self.stream.isatty() if hasattr(self.stream, "isatty") else False
        self.last = 0.0
        self.shown = False
        self._sys = sys

    def update(self, got: int, total: int | None, final: bool = False) -> None:
        if not self.on or (not final and time.monotonic() - self.last < 0.2):
            return
        self.last = time.monotonic()
        if total:
            width = 30
            done = int(width * min(got, total) / total)
            bar = f"[{'#' * done}{'.' * (width - done)}] {got / 1e6:.1f} of {total / 1e6:.1f} MB"
        else:
            bar = f"{got / 1e6:.1f} MB"
        self.stream.write(f"\r{self.name}: {bar}" + ("\n" if final else ""))
        self.stream.flush()
        self.shown = not final


def _attempt(url: str, have: bytearray | _FileSink, progress: _Progress | None = None
             ) -> None:
    """Read `url` into `have`, asking only for the bytes after those `have` holds (an HTTP
    range; a server that ignores it sends the whole file again, which then replaces them).
    Raises `_Broken` for a cut transfer, WorkbenchError for an answer that will not change."""
    req = urllib.request.Request(url)
    if have:
        req.add_header("Range", f"bytes={len(have)}-")
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
            if have and resp.status != 206:
                have.clear()
            length = resp.headers.get("Content-Length")
            expected = len(have) + int(length) if length and length.isdigit() else None
            while chunk := resp.read(1 << 20):
                have += chunk
                if progress is not None:
                    progress.update(len(have), expected)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # the range starts at the end: nothing was missing
            return
        if exc.code >= 500 or exc.code == 429:
            raise _Broken(f"HTTP {exc.code} {exc.reason}", len(have)) from None
        raise WorkbenchError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or type(exc).__name__
        if isinstance(exc, http.client.IncompleteRead):
            reason = f"the connection closed after {len(have)} bytes"
        raise _Broken(str(reason), len(have)) from None
    if expected is not None and len(have) != expected:
        raise _Broken(f"received {len(have)} of {expected} bytes", len(have))
    if progress is not None:
        progress.update(len(have), expected, final=True)


def _download(url: str, retries: int | None = None, backoff: float | None = None,
              to: Path | None = None) -> bytes:
    """The bytes at `url` (or, with `to`, written to that file — appended to what it holds
    from an earlier, interrupted fetch; then b""): a transfer cut short is resumed from
    where it stopped (or begun again), up to `RETRIES` attempts with doubling waits, one
    connection at a time; one line when it cannot be had."""
    retries = RETRIES if retries is None else retries
    wait = BACKOFF if backoff is None else backoff
    sink = None if to is None else _FileSink(to)
    have: bytearray | _FileSink = bytearray() if sink is None else sink
    if sink is not None and len(sink):
        log.note(f"resuming {url} from byte {len(sink)}")
    progress = _Progress(url)
    try:
        for attempt in range(1, retries + 1):
            try:
                _attempt(url, have, progress)
                return b"" if sink is not None else bytes(have)
            except _Broken as exc:
                if attempt == retries:
                    kept = (f"; the {len(have)} bytes received are kept and the next fetch "
                            "resumes them") if sink is not None and len(have) else ""
                    raise WorkbenchError(
                        f"cannot download {url}: {exc} ({retries} attempts; offline? set "
                        f"${BASE_ENV} or --mirror to a mirror){kept}") from None
                log.note(f"download of {url} broke ({exc}); attempt {attempt + 1} of "
                         f"{retries} in {wait:g} s, resuming from byte {exc.got}")
                time.sleep(wait)
                wait *= 2
    finally:
        if progress.shown:
            progress.stream.write("\n")
        if sink is not None:
            sink.file.close()
    raise AssertionError("unreachable")


def mirror() -> str:
    """``$WORKBENCH_FETCH_BASE``: one address that replaces every publisher's base
    address (an institution's mirror, or a local server), or ""."""
    text = os.environ.get(BASE_ENV, "").strip()
    return text if not text or text.endswith("/") else text + "/"


def has_source(slug: str) -> bool:
    """Whether `fetch` knows a public source for catalog data set `slug`."""
    return slug in RECIPES or slug in SOURCES


def expected_content(slug: str) -> dict | None:
    """The catalog's rows and content checksum of `slug` (``content.json``), or None."""
    return catalog_content().get(slug)


class _Downloads:
    """The files of one fetch, downloaded one at a time into the cache's ``.partial/<slug>``
    folder (resumed there after an interrupted fetch) and their SHA-256s."""

    def __init__(self, slug: str) -> None:
        self.folder = cache_dir() / PARTIAL / slug
        self.digests: dict[str, str] = {}
        self.urls: list[str] = []

    def get(self, base: str, rel: str) -> Path:
        url = (mirror() or base) + rel
        path = self.folder / rel.replace("/", "__")
        _download(url, to=path)
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(1 << 24):
                digest.update(block)
        self.digests[rel] = digest.hexdigest()
        self.urls.append(url)
        return path

    def discard(self) -> None:
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)
        try:
            self.folder.parent.rmdir()  # (only when no other fetch is under way)
        except OSError:
            pass


def fetch(slug: str, force: bool = False) -> Path:
    """Download data set `slug` (a catalog slug; aliases are resolved by the caller, e.g.
    `catalog.resolve_slug`) into the cache (see the module docstring); returns the path of
    its ``<slug>.arff.gz`` (``<slug>.parquet`` for a streamed source). An existing copy is
    kept unless `force`. The converted content must equal the catalog's (rows and content
    checksum, `workbench.data.content`), else nothing is written."""
    if slug in RECIPES:
        return _fetch_recipe(RECIPES[slug], force)
    if slug not in SOURCES:
        reason = NO_SOURCE.get(slug)
        raise WorkbenchError(f"fetch: no public source recorded for '{slug}'"
                             + (f" ({reason})" if reason else "")
                             + f" (known: {', '.join(sorted([*RECIPES, *SOURCES]))})")
    src = SOURCES[slug]
    target = cache_dir() / f"{slug}{src.suffix}"
    if target.is_file() and not force:
        return target
    base = mirror() or src.base
    target.parent.mkdir(parents=True, exist_ok=True)
    downloads = _Downloads(slug)
    try:
        rows = _fetch_streamed(slug, src, downloads, target)
    except WorkbenchError as exc:
        if "the next fetch resumes" not in str(exc):
            downloads.discard()
        raise
    downloads.discard()
    _write_record(target, slug, {"base": base, "files": list(src.files),
                                 "sha256": downloads.digests, "rows": rows,
                                 "note": src.note})
    return target


def _write_record(target: Path, slug: str, info: dict) -> None:
    atomic_write_text(target.with_name(f"{slug}.source.json"),
                      json.dumps({"slug": slug, **info}, indent=2) + "\n")


def _fetch_recipe(recipe, force: bool) -> Path:
    """A small data set: its recipe's files downloaded, converted, checked against the
    catalog's content and written as ARFF."""
    slug = recipe.slug
    target = cache_dir() / f"{slug}.arff.gz"
    if target.is_file() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    downloads = _Downloads(slug)
    try:
        try:
            data = recipe.convert(downloads.get)
        except WorkbenchError as exc:
            raise WorkbenchError(f"fetch {slug}: {exc}") from None
        if recipe.rows is not None and data.n_instances != recipe.rows:
            raise WorkbenchError(f"fetch {slug}: {recipe.origin.address()} gave "
                                 f"{data.n_instances:,} rows, the data set has "
                                 f"{recipe.rows:,}: a short or altered file; nothing was "
                                 "written")
        _check_content(slug, data, recipe.origin.address())
        for rel, digest in downloads.digests.items():
            log.note(f"note: {rel}: its publisher gives no checksum of the file; the "
                     f"converted content was checked instead (sha256 {digest[:16]}… "
                     f"recorded in {slug}.source.json)", log.VERBOSE)
        save_arff(data, target)  # atomic: a temporary file renamed
    except WorkbenchError as exc:
        if "the next fetch resumes" not in str(exc):
            downloads.discard()
        raise
    downloads.discard()
    _write_record(target, slug, {
        "source": recipe.origin.describe(), "urls": downloads.urls,
        "sha256": downloads.digests, "rows": data.n_instances,
        "content": content_checksum(data), "changes": recipe.changes(),
        "note": recipe.note})
    return target


def _check_content(slug: str, data: Dataset, where: str) -> None:
    """Refuse a conversion whose rows or content checksum differ from the catalog's (for a
    catalog copy of only a file's first rows, e.g. poker-hand's training part, `data` holds
    those rows)."""
    want = expected_content(slug)
    if want is None:
        return
    got = content_checksum(data)
    if got != want["checksum"]:
        what = f" (its first {want['rows']:,} rows)" if want.get("first_rows") else ""
        raise WorkbenchError(
            f"fetch {slug}: the content converted from {where}{what} has checksum "
            f"{short(got)} ({data.n_instances:,} rows), the catalog's copy "
            f"{short(want['checksum'])} ({want['rows']:,} rows): not the version the "
            "reproductions used; nothing was written")


def _checked(slug: str, src: Source, base: str, rel: str, got: str) -> str:
    """A downloaded file's SHA-256, checked against the pinned one (else a note)."""
    pinned = src.sha256.get(rel)
    if pinned is not None and got != pinned:
        raise WorkbenchError(f"checksum mismatch for {base + rel}: expected sha256 "
                             f"{pinned}, got {got}; nothing was written")
    if pinned is None:
        log.note(f"note: {base + rel}: its source publishes no checksum, so a byte "
                 f"altered on the way cannot be detected (recorded sha256 {got[:16]}… "
                 f"in {slug}.source.json)")
    return got


def _fetch_streamed(slug: str, src: Source, downloads: _Downloads, target: Path) -> int:
    """A big source's files downloaded to disk (the cache's ``.partial`` folder) and
    converted by `src.stream` into a file there, checked (rows; for an ARFF file the
    catalog's content of its first rows, where the catalog has a copy), then renamed to
    `target`. Returns the rows."""
    base = mirror() or src.base
    paths = []
    for rel in src.files:
        paths.append(downloads.get(src.base, rel))
        _checked(slug, src, base, rel, downloads.digests[rel])
    out = downloads.folder / target.name
    where = base + src.files[0]
    try:
        rows = src.stream(paths, out, src.rows)
    except WorkbenchError as exc:
        raise WorkbenchError(f"fetch {slug}: {exc}") from None
    if src.rows is not None and rows != src.rows:
        raise WorkbenchError(f"fetch {slug}: {where} gave {rows:,} rows, the source has "
                             f"{src.rows:,}: a short or altered file; nothing was written")
    want = expected_content(slug)
    if want is not None and target.name.endswith(".arff.gz"):
        first = next(iter_arff_chunks(out, want["rows"]), None)
        if first is not None:
            _check_content(slug, first, where)
    os.replace(out, target)
    return rows
