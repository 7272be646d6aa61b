"""Where numba keeps compiled kernels: a cache directory named after the kernels' source.

Numba checks only a cached function's own file, so a kernel calling a changed kernel in
another module (the AnDE package, the shared counting layer) would load stale machine code.
The cache therefore lives in ``~/.cache/workbench/numba/<hash of every kernel module>``
(``$XDG_CACHE_HOME`` respected): any change to any kernel source compiles afresh. A
``NUMBA_CACHE_DIR`` set by the user is left alone.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def kernel_source_hash() -> str:
    """sha256 (16 hex digits) over the package's modules that define numba kernels."""
    h = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        text = path.read_bytes()
        if b"numba.njit" in text:
            h.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + text)
    return h.hexdigest()[:16]


def _ours(path: str) -> bool:
    """A directory this module chose (inherited from a parent process, maybe another
    version of the package), not the user's."""
    p = Path(path)
    return p.parent.name in ("numba",) and p.parent.parent.name == "workbench" or \
        p.parent.name.startswith("workbench-numba-")


def configure_cache() -> str | None:
    """Point numba's cache at this source version's directory (before any kernel module
    is imported); returns it, or None when the user chose NUMBA_CACHE_DIR."""
    chosen = os.environ.get("NUMBA_CACHE_DIR", "")
    if chosen and not _ours(chosen):
        return None
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = root / "workbench" / "numba" / kernel_source_hash()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        path = Path(tempfile.gettempdir()) / f"workbench-numba-{os.getuid()}" / path.name
        path.mkdir(parents=True, exist_ok=True)
    os.environ["NUMBA_CACHE_DIR"] = str(path)  # worker processes and a later numba import
    if "numba" in sys.modules:
        sys.modules["numba"].config.CACHE_DIR = str(path)
    return str(path)
