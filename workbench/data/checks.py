"""Facts about a data set that a run checks before computing: content hash, degeneracies."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from workbench.data.dataset import Dataset


def file_sha256(path: str | Path) -> str:
    """sha256 of the file's bytes (what a stored result records as its data identity)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


MANY_CLASSES = 100
"""More classes than this, and more than one for every 4 labelled rows, is warned of (a
whole-number quantity such as a count or a price read as class labels)."""


def data_warnings(data: Dataset) -> list[str]:
    """Degenerate but legal data: a single class present, a class with very many values
    for its rows, attributes with every value missing. Each is one sentence naming the
    data set."""
    name = data.name
    out = []
    labelled = data.without_missing_class()
    present = np.unique(labelled.y)
    if present.size == 1:
        out.append(f"{name}: every labelled row has class "
                   f"'{data.class_values[int(present[0])]}' (single-class data)")
    if present.size > MANY_CLASSES and present.size > labelled.n_instances / 4:
        out.append(f"{name}: class '{data.class_attribute.name}' has {present.size} distinct "
                   f"values in {labelled.n_instances} labelled rows: a quantity read as "
                   "labels? Discretise it into classes or name another column as the "
                   "class; if these are labels, ignore this")
    if labelled.n_instances:
        missing = np.isnan(labelled.X).all(axis=0)
        names = [data.attributes[j].name for j in np.flatnonzero(missing)]
        if names:
            shown = ", ".join(f"'{n}'" for n in names[:5]) + (", …" if len(names) > 5 else "")
            out.append(f"{name}: {len(names)} attribute(s) with every value missing ({shown})")
    return out
