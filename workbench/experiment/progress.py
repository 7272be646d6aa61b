"""Progress display: a one-line bar with ETA on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO


def _fmt_seconds(s: float) -> str:
    s = max(0, int(round(s)))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


class Progress:
    """Counts finished tasks out of `total` and shows rate and ETA on `stream`.

    On a terminal the line is redrawn in place (at most ~10 times a second); otherwise a
    plain line is printed every `interval` seconds (and at the end).
    """

    def __init__(
        self,
        total: int,
        stream: TextIO | None = None,
        interval: float = 10.0,
        label: str = "tasks",
        tty: bool | None = None,
        clock=time.monotonic,
        eta: Callable[[float], float | None] | None = None,
    ) -> None:
        self.total = int(total)
        self.stream = stream if stream is not None else sys.stderr
        self.interval = float(interval)
        self.label = label
        self.clock = clock
        self._eta = eta  # seconds left from the elapsed time (default: by task count)
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty and isatty())
        self.tty = tty
        self.done = 0
        self.start = clock()
        # plain lines: the first one after `interval` seconds; the bar: from the first task
        self._last_draw = float("-inf") if tty else self.start
        self._drawn = False
        self.note = ""

    def eta(self) -> float | None:
        """Seconds left (None before the first task): from the `eta` callable given, else
        extrapolated from the number of tasks done so far."""
        if self.done == 0:
            return None
        elapsed = self.clock() - self.start
        if self._eta is not None:
            return self._eta(elapsed)
        return elapsed / self.done * (self.total - self.done)

    def line(self) -> str:
        elapsed = self.clock() - self.start
        eta = self.eta()
        pct = 100.0 * self.done / self.total if self.total else 100.0
        eta_text = "--:--" if eta is None else _fmt_seconds(eta)
        text = (
            f"{self.done}/{self.total} {self.label} ({pct:5.1f}%) "
            f"elapsed {_fmt_seconds(elapsed)} eta {eta_text}"
        )
        return f"{text}  {self.note}" if self.note else text

    def update(self, n: int = 1, note: str = "") -> None:
        """Record `n` more finished tasks; `note` (e.g. the last data set) is shown too."""
        self.done += n
        if note:
            self.note = note
        now = self.clock()
        if self.tty:
            if now - self._last_draw >= 0.1 or self.done >= self.total:
                self._draw_bar()
                self._last_draw = now
        elif now - self._last_draw >= self.interval and self.done < self.total:
            self.stream.write(f"progress: {self.line()}\n")
            self.stream.flush()
            self._last_draw = now

    def _draw_bar(self) -> None:
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r[{bar}] {self.line()}"[:200] + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Finish the display (newline after the bar / a final plain line)."""
        if self.tty:
            if self._drawn or self.total:
                self._draw_bar()
                self.stream.write("\n")
        elif self.total:
            self.stream.write(f"progress: {self.line()}\n")
        self.stream.flush()
