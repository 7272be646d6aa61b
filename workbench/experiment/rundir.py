"""Guarding a run directory: what may be written there, by whom, and what is left over.

* **Published results** (a committed reproduction, marked by a ``PUBLISHED`` file) are
  never a run's output: `run` refuses them whatever the flags, `report` writes elsewhere.
* **Whose results**: a directory written under another config hash, or a non-empty
  directory that is not a run directory, is refused with one line naming ``--force`` /
  ``--output`` (``--fresh`` wipes a run directory of ours, never anything else).
* **One run at a time**: an exclusive ``flock`` on ``RUN_DIR/.lock`` (released by the
  kernel however the holder dies); a second run names the PID holding it, and `status`
  tells a dead run (lock free, status "running") from a live one.
* **Leftovers**: ``.*.tmp`` files of atomic writes cut short by a kill are removed by the
  next run that holds the lock.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench import store

PUBLISHED = "PUBLISHED"
LOCK = ".lock"


class RunDirError(WorkbenchError):
    """The run directory cannot take this run (message names it and the way out)."""


def is_published(path: Path) -> bool:
    """`path` or one of its parents holds a ``PUBLISHED`` marker."""
    path = Path(path).resolve()
    return any((p / PUBLISHED).is_file() for p in (path, *path.parents))


def check_output(run_dir: Path, field: str = "output") -> None:
    """One-line errors for an output path that cannot be a run directory: published,
    a file, under a file, or not writable."""
    run_dir = Path(run_dir)
    if is_published(run_dir):
        raise RunDirError(
            f"{field}: {run_dir} holds published results (a {PUBLISHED} file), which a run "
            "never writes into; choose another directory with --output")
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"{field}: {run_dir} is a file, not a directory; use --output DIR")
    probe = run_dir
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise RunDirError(f"{field}: {run_dir} lies under {probe}, which is a file; "
                          "use --output DIR")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise RunDirError(f"{field}: {probe} is not writable; use --output DIR")


def check_ownership(run_dir: Path, config_hash: str, *, fresh: bool, force: bool) -> None:
    """Refuse a directory holding results this config did not write (see module doc)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or not any(p.name != LOCK for p in run_dir.iterdir()):
        return
    hash_file = run_dir / store.CONFIG_HASH
    if not hash_file.is_file():
        if fresh:
            raise RunDirError(
                f"--fresh: {run_dir} is not empty and is not a run directory (no "
                f"{store.CONFIG_HASH}); refusing to wipe it; use --output for another directory")
        if not force:
            raise RunDirError(
                f"{run_dir} is not empty and is not a run directory (no {store.CONFIG_HASH}), "
                "so nothing there can be resumed; use --output for another directory, or "
                "--force to write into it anyway")
        return
    old = hash_file.read_text(encoding="utf-8", errors="replace").strip()
    if old != config_hash and not (fresh or force):
        raise RunDirError(
            f"{run_dir} holds results of a different config (stored hash {old[:12]}, this "
            f"config {config_hash[:12]}); use --output for another directory, --fresh to "
            "wipe it, or --force to keep and reuse its results anyway")


class RunLock:
    """Exclusive lock of a run directory for the lifetime of one run (context manager)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / LOCK
        self._fd: int | None = None

    def __enter__(self) -> "RunLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"process {holder}" if holder else "another process"
            raise RunDirError(
                f"{self.path.parent} is in use by a running experiment ({who}); wait for it "
                "or stop it, or use --output for another directory") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None


def _read_pid(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 64).decode(errors="replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def lock_holder(run_dir: Path) -> int | None:
    """PID of the live run holding the directory's lock, None when no run holds it."""
    path = Path(run_dir) / LOCK
    if not path.is_file():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd) or -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def remove_stale_tmp(run_dir: Path) -> list[Path]:
    """Delete ``.*.tmp`` leftovers of interrupted atomic writes (call holding the lock)."""
    removed = []
    for root, _dirs, files in os.walk(run_dir):
        for name in files:
            if name.startswith(".") and name.endswith(".tmp"):
                p = Path(root) / name
                try:
                    p.unlink()
                    removed.append(p)
                except OSError:
                    pass
    return removed
