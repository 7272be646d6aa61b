"""A data set's *content* checksum: the parsed header and values, not the file's bytes.

Two files with the same attributes (names, kinds, declared nominal values in order), the
same class and the same rows in the same order have the same checksum whatever their
whitespace, quoting, comments, relation name, number formatting (``1`` = ``1.0``) or
compression. That is what "the copy our reproductions used" means: `workbench fetch`
refuses a conversion whose content differs from the catalog's, and `workbench datasets
--verify` checks every file on the search path.

Definition (version ``c1``): SHA-256 over

1. the JSON text of ``[[name, kind], ...]`` for every attribute and then the class, where
   ``kind`` is ``"numeric"`` or the list of declared values — compact separators, UTF-8;
2. a zero byte;
3. the value matrix, row-major, as little-endian float64: a nominal value is its code in
   the declaration, a missing value is one fixed NaN, ``-0.0`` is written as ``0.0``;
4. the class codes as little-endian int64 (``-1`` = missing).

The checksum is written ``c1:`` + 64 hex digits.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from workbench.data.dataset import Attribute, Dataset

__all__ = ["content_checksum", "short"]

PREFIX = "c1:"
_ROWS = 1 << 16  # rows hashed at a time (a big file's matrix is not copied whole)


def _kind(a: Attribute) -> object:
    return "numeric" if a.values is None else list(a.values)


def content_checksum(data: Dataset) -> str:
    """The content checksum of `data` (see the module docstring)."""
    h = hashlib.sha256()
    header = [[a.name, _kind(a)] for a in (*data.attributes, data.class_attribute)]
    h.update(json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode())
    h.update(b"\0")
    X = data.X
    for start in range(0, X.shape[0], _ROWS):
        block = X[start:start + _ROWS] + 0.0  # a copy; -0.0 + 0.0 = 0.0
        block[np.isnan(block)] = np.nan      # one NaN bit pattern
        h.update(np.ascontiguousarray(block, dtype="<f8").tobytes())
    h.update(np.ascontiguousarray(data.y, dtype="<i8").tobytes())
    return PREFIX + h.hexdigest()


def short(checksum: str | None) -> str:
    """The first 12 hex digits of a checksum, for messages (``-`` for none)."""
    if not checksum:
        return "-"
    return checksum[len(PREFIX):][:12] if checksum.startswith(PREFIX) else checksum[:12]
