"""A data file's chunks read once and replayed from a compact local copy.

A multi-pass protocol (out-of-core k-fold CV: a counting pass, a scoring pass, and KDB's or
SKDB's extra passes, per round) reads the same file several times. Decoding it — Parquet's
dictionary pages, CSV or ARFF text — into value matrices cost more than the counting itself
(16 M rows × 20 attributes of Parquet: 1.6 s CPU per pass). `Replay` decodes the file once:
the first complete pass writes every chunk in a raw form — nominal codes in the narrowest
unsigned integer type that holds them (NaN as its largest value), numbers as float64, the
class as a code — and every later pass reads that copy back (from the page cache, then one
compiled loop per chunk: 16 M rows × 20 attributes in ~0.4 s against 1.6 s of decoding)
instead of the file. The chunks replayed are the same rows in
the same order and chunk boundaries, bit for bit.

The copy lives in a temporary directory (``$WORKBENCH_REPLAY_DIR``, else the system's
temporary directory) and is removed when the `Replay` is closed. It needs (rows × bytes per
row) of free disk: when there is not that much room (with a margin), every pass reads the
file again, as before, and one note says so. Files are written through the page cache,
never held in the process's memory, so the memory a run needs does not grow with the file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import numpy as np

from workbench import log
from workbench.data.dataset import Dataset
from workbench.data.sources import iter_chunks

__all__ = ["DIR_ENV", "Replay"]

DIR_ENV = "WORKBENCH_REPLAY_DIR"
_MARGIN = 1.1  # free space wanted, as a multiple of the copy's size (plus 64 MiB)


def _code_type(header: Dataset) -> type:
    """The narrowest unsigned type whose largest value is none of the header's codes."""
    sizes = [len(a.values) for a in (*header.attributes, header.class_attribute)
             if a.values is not None]
    most = max(sizes, default=0)
    return np.uint8 if most < 255 else np.uint16 if most < 65535 else np.uint32


def _raw(a: np.ndarray) -> np.ndarray:
    """A C-contiguous array's bytes, as a writable view (empty arrays too)."""
    return a.reshape(-1).view(np.uint8)


class Replay:
    """The chunks of `path` (as `iter_chunks` gives them under `header`, `rows` rows in all):
    `chunks()` reads the file the first time and the copy every later time (without
    `copy`, the file every time)."""

    def __init__(self, path: str | os.PathLike, chunk_rows: int, header: Dataset, rows: int,
                 class_column: str | None = None, copy: bool = True) -> None:
        self.path, self.chunk_rows, self.header = Path(path), chunk_rows, header
        self.rows = rows
        self.class_column = class_column
        attrs = header.attributes
        self._nominal = np.array([j for j, a in enumerate(attrs) if a.values is not None],
                                 dtype=np.int64)
        self._numeric = np.array([j for j, a in enumerate(attrs) if a.values is None],
                                 dtype=np.int64)
        self._type = _code_type(header)
        self._top = int(np.iinfo(self._type).max)
        item = np.dtype(self._type).itemsize
        self._row_bytes = (len(self._nominal) + 1) * item + 8 * len(self._numeric)
        self._sizes: list[int] = []  # rows of each chunk of a complete copy
        self._dir: str | None = None
        self._file: Path | None = None
        self.replayed = 0  # passes read from the copy
        if not copy:
            return
        need = int(rows * self._row_bytes * _MARGIN) + (64 << 20)
        where = os.environ.get(DIR_ENV, "").strip() or tempfile.gettempdir()
        try:
            room = shutil.disk_usage(where).free
        except OSError:
            room = 0
        if room < need:
            log.note(f"note: {where} has {room >> 20} MiB free, less than the "
                     f"{need >> 20} MiB a decoded copy of {self.path.name} needs: every "
                     f"pass reads the file again (set ${DIR_ENV} to a roomier place)")
            return
        self._dir = tempfile.mkdtemp(prefix="workbench-replay-", dir=where)
        self._file = Path(self._dir) / "rows.bin"

    @property
    def copying(self) -> bool:
        """Whether passes after the first read the copy (there was room for it)."""
        return self._file is not None

    def chunks(self) -> Iterator[tuple[int, Dataset]]:
        """(first row index, chunk) in file order, every chunk under the header's
        attributes."""
        if self._file is not None and self._sizes:
            self.replayed += 1
            yield from self._replay()
            return
        yield from self._read()

    def _read(self) -> Iterator[tuple[int, Dataset]]:
        """A pass over the file, written to the copy as it goes; a pass stopped early
        leaves no copy (the next pass writes it again)."""
        from workbench.data.gather import pack_rows  # numba: not on the import path

        out = None if self._file is None else open(self._file, "wb")
        sizes: list[int] = []
        start = 0
        bufs = (np.empty((self.chunk_rows, len(self._nominal)), dtype=self._type),
                np.empty((self.chunk_rows, len(self._numeric))),
                np.empty(self.chunk_rows, dtype=self._type)) if out is not None else ()
        try:
            for chunk in iter_chunks(self.path, self.chunk_rows, header=self.header,
                                     class_column=self.class_column):
                chunk = chunk.replace(attributes=self.header.attributes)
                if out is not None:
                    n = chunk.n_instances
                    codes, numbers, classes = (b[:n] for b in bufs)
                    pack_rows(chunk.X, chunk.y, self._nominal, self._numeric, codes, numbers,
                              classes, self._top)
                    for a in (codes, numbers, classes):
                        out.write(_raw(a))
                    sizes.append(n)
                yield start, chunk
                start += chunk.n_instances
            if out is not None:
                out.close()
                self._sizes = sizes
        finally:
            if out is not None and not out.closed:
                out.close()

    def _replay(self) -> Iterator[tuple[int, Dataset]]:
        """The copy's chunks, each read into the same buffers (a chunk is used before the
        next is asked for, as by every pass here): a fresh chunk-sized matrix per chunk
        is a fresh mapping whose page faults cost more than the conversion."""
        from workbench.data.gather import unpack_rows  # numba: not on the import path

        d = len(self.header.attributes)
        most = max(self._sizes, default=0)
        codes_buf = np.empty((most, len(self._nominal)), dtype=self._type)
        numbers_buf = np.empty((most, len(self._numeric)))
        classes_buf = np.empty(most, dtype=self._type)
        X_buf, y_buf = np.empty((most, d)), np.empty(most, dtype=np.int64)
        start = 0
        with open(self._file, "rb") as src:
            for n in self._sizes:
                codes, numbers, classes = codes_buf[:n], numbers_buf[:n], classes_buf[:n]
                for a in (codes, numbers, classes):
                    view = _raw(a)
                    if src.readinto(view) != len(view):
                        raise OSError(f"{self._file}: the decoded copy of {self.path} "
                                      "ended early")
                X, y = X_buf[:n], y_buf[:n]
                unpack_rows(codes, numbers, classes, self._nominal, self._numeric, X, y,
                            self._top)
                yield start, self.header.replace(X=X, y=y)
                start += n

    def warm_up(self, chunk: Dataset) -> None:
        """The copy's kernels compiled or loaded on a chunk's first rows, before any timed
        pass."""
        from workbench.data.gather import pack_rows, unpack_rows

        n = min(2, chunk.n_instances)
        codes = np.empty((n, len(self._nominal)), dtype=self._type)
        numbers = np.empty((n, len(self._numeric)))
        classes = np.empty(n, dtype=self._type)
        pack_rows(chunk.X[:n], chunk.y[:n], self._nominal, self._numeric, codes, numbers,
                  classes, self._top)
        unpack_rows(codes, numbers, classes, self._nominal, self._numeric,
                    np.empty((n, chunk.n_attributes)), np.empty(n, dtype=np.int64), self._top)

    def close(self) -> None:
        """Remove the copy."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = self._file = None
            self._sizes = []

    def __enter__(self) -> "Replay":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
