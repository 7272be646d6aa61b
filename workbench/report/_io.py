"""Atomic, reproducible file writing for the report (temp file in the same folder + rename)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (readers see the old or the new file, never half)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    """Write UTF-8 text with ``\\n`` line endings atomically."""
    return write_bytes(path, text.encode("utf-8"))


def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    """Write a DataFrame as CSV (no index, ``\\n`` line ends, full float precision) atomically."""
    text = frame.to_csv(index=False, lineterminator="\n", float_format="%.12g")
    return write_text(path, text)
