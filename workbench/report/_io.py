"""Atomic, reproducible file writing for the report (temp file in the same folder + rename)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from workbench.fileio import atomic_write_bytes


def write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (readers see the old or the new file, never half)."""
    return atomic_write_bytes(path, data)


def write_text(path: Path, text: str) -> Path:
    """Write UTF-8 text with ``\\n`` line endings atomically."""
    return write_bytes(path, text.encode("utf-8"))


def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    """Write a DataFrame as CSV (no index, ``\\n`` line ends, full float precision) atomically."""
    text = frame.to_csv(index=False, lineterminator="\n", float_format="%.12g")
    return write_text(path, text)
