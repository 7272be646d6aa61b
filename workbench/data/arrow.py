"""numpy <-> Arrow for numeric columns, without pyarrow's pandas probe; pyarrow itself
imported on first use.

`pa.array`, `pa.scalar` and `Array.to_numpy` find out whether they were given a pandas
object by importing pandas on first use: about 0.2 s of CPU in every process, most of a
small run's start-up outside numba. Loading and storing go through these functions
instead. They use the same bytes (DLPack and raw buffers), and Arrow's compute functions
for casts and null filling, so pandas is imported only by what really makes a DataFrame.

The data modules take pyarrow from here (`pa`, `pac`, `pcsv`, `pq`): handles that import
the module when an attribute is first read, so a run on small ARFF files (which liac-arff
parses) never pays pyarrow's import (about 0.13 s of CPU).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np


class _OnFirstUse:
    """A module imported when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


pa: Any = _OnFirstUse("pyarrow")
pac: Any = _OnFirstUse("pyarrow.compute")
pcsv: Any = _OnFirstUse("pyarrow.csv")
pq: Any = _OnFirstUse("pyarrow.parquet")


def from_numpy(values: np.ndarray) -> pa.Array:
    """A 1-d numeric array as an Arrow array over its bytes (copied only if strided)."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values),
                                 [None, pa.py_buffer(values)])


def to_numpy(arr: pa.Array | pa.ChunkedArray, fill: float | int | None = None,
             dtype: pa.DataType | None = None) -> np.ndarray:
    """A numeric Arrow array's values as a read-only numpy array, cast to `dtype` (default:
    its own type) and with nulls replaced by `fill` (ValueError when it has nulls and no
    `fill` is given)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_decimal(arr.type):  # through Python's Decimal: correctly rounded
        arr = from_numpy(np.array([np.nan if v is None else float(v)
                                   for v in arr.to_pylist()]))
    if dtype is not None and arr.type != dtype:
        arr = pac.cast(arr, dtype, safe=False)  # as numpy casts: large integers round
    if arr.null_count:
        if fill is None:
            raise ValueError("missing values and no value to fill them with")
        value = np.array([fill], dtype=arr.type.to_pandas_dtype())
        arr = pac.fill_null(arr, from_numpy(value)[0])
    return np.from_dlpack(arr)
