"""Atomic file writes: readers see the old file or the new one, never half of one.

Every stage that writes (ARFF output, the run store, the report) goes through here, so an
interrupted or failing write never leaves a truncated file behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

from workbench.errors import CannotWrite, WorkbenchError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes, durable: bool = True) -> Path:
    """Write `data` to `path` via a temporary file in the same folder + `os.replace`
    (`atomic_path`).

    Parent folders are created. The file gets the usual permissions (umask), not
    mkstemp's 0600. An OS error becomes one `WorkbenchError` naming the path. With
    ``durable=False`` the data is not forced to disk first (no fsync): a crashed process
    still never leaves a partial file, but after an operating-system crash the file may
    be empty — for files whose reader detects that and recomputes them.
    """
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
    return Path(path)


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 text atomically (see `atomic_write_bytes`)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside `path` to write (e.g. stream) a file to; moved onto `path`
    when the block ends normally, removed if it raises (see `atomic_write_bytes`)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise CannotWrite(f"{path}: cannot write: {exc}") from None
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise CannotWrite(f"{path}: cannot write: {exc}") from None
        raise


# ----- Parquet: every file the workbench writes carries page checksums ----------------------
PARQUET_OPTIONS = {"write_page_checksum": True}
"""Options of every Parquet file the workbench writes (predictions, converted data sets):
each data page carries a CRC, so damage inside a page — which Parquet's format alone does
not notice — is found when the page is read (`parquet_file`, `read_parquet`)."""


def parquet_file(path: str | Path, **options):
    """``pyarrow.parquet.ParquetFile`` that verifies each page's checksum where the file
    has them (files written elsewhere usually have none: read as before)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path, page_checksum_verification=True, **options)


def read_parquet(path: str | Path, **options):
    """``pyarrow.parquet.read_table`` verifying page checksums (see `parquet_file`)."""
    import pyarrow.parquet as pq

    return pq.read_table(path, page_checksum_verification=True, **options)


def parquet_damage(path: str | Path, exc: BaseException) -> WorkbenchError:
    """One line for a Parquet file that cannot be read: a failed page checksum says the
    file was altered after it was written."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "CRC" in text or "checksum" in text:
        return WorkbenchError(f"{path}: damaged: a page's checksum does not match its "
                              f"content ({text}); the file was altered after it was written")
    return WorkbenchError(f"{path}: cannot read as PARQUET: {text}")
