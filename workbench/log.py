"""One verbosity for every command: ``-q`` (warnings and errors only), the default, ``-v``
(details). Progress and notes go to stderr; results go to stdout or files, whatever the
verbosity."""

from __future__ import annotations

import sys
from typing import TextIO

QUIET, NORMAL, VERBOSE = 0, 1, 2

_level = NORMAL


def set_level(level: int) -> None:
    """Set the verbosity (`QUIET`, `NORMAL` or `VERBOSE`) for this process."""
    global _level
    _level = max(QUIET, min(VERBOSE, int(level)))


def level() -> int:
    return _level


class _Discard:
    """A text stream that drops what is written (notes below the verbosity)."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


DISCARD: TextIO = _Discard()  # type: ignore[assignment]


def stream_for(min_level: int, stream: TextIO | None = None) -> TextIO:
    """`stream` (default stderr) if the verbosity reaches `min_level`, else a discarding one."""
    return (stream or sys.stderr) if _level >= min_level else DISCARD


def note(message: str, min_level: int = NORMAL) -> None:
    """A progress or information line on stderr, shown from verbosity `min_level` on."""
    if _level >= min_level:
        print(message, file=sys.stderr)
