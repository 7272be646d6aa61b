"""glibc's malloc thresholds for the kernels' work arrays.

The scoring kernels allocate work arrays of a few hundred kilobytes per call (per row and
class: sums, products, factor offsets). glibc serves an allocation above its mmap
threshold (128 KiB at start) with fresh pages, and gives the top of its heap back to the
system whenever more than its trim threshold is free: either way the next call's arrays
are new pages, a page fault and a cleared page every 4 KiB. glibc raises both thresholds
by itself once the process frees a large mapped block (up to 32 MiB and 64 MiB), but not
reliably: a process that had fitted an A1DE and then an A1DE-W took 500–580 page faults
per `predict_proba` on nursery's test half (3.5 ms a call instead of 2.0–2.2). Setting
the thresholds where glibc's own rule ends up, from the start, keeps those arrays in the
heap (the same call: 0 faults).

Left as glibc has them when the user chose otherwise (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, a malloc tunable in ``GLIBC_TUNABLES``, or
``WORKBENCH_MALLOC=glibc``: glibc's own behaviour, e.g. to measure the difference), and
off glibc.
"""

from __future__ import annotations

import os

MMAP_THRESHOLD = 32 << 20
"""Allocations above this are mapped on their own (glibc's dynamic maximum, 64-bit)."""
TRIM_THRESHOLD = 64 << 20
"""Free memory at the top of the heap kept for reuse (twice the mmap threshold, glibc's
own rule when it raises the threshold)."""
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # (mallopt's parameter numbers, malloc.h)
_DONE: list[bool] = []


def user_chose() -> bool:
    """The environment sets glibc's malloc thresholds itself."""
    env = os.environ
    return ("MALLOC_MMAP_THRESHOLD_" in env or "MALLOC_TRIM_THRESHOLD_" in env
            or "glibc.malloc" in env.get("GLIBC_TUNABLES", "")
            or env.get("WORKBENCH_MALLOC") == "glibc")


def keep_work_arrays() -> bool:
    """Set glibc's mmap and trim thresholds (`MMAP_THRESHOLD`, `TRIM_THRESHOLD`) once per
    process; True when they were set (now or before)."""
    if _DONE:
        return _DONE[0]
    ok = False
    try:
        glibc = bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (AttributeError, ValueError, OSError):
        glibc = False
    if glibc and not user_chose():
        try:
            import ctypes

            libc = ctypes.CDLL(None)
            ok = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                      and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
        except (OSError, AttributeError):
            ok = False
    _DONE.append(ok)
    return ok
