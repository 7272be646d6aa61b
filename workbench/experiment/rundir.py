"""Guarding a run directory: what may be written there, by whom, and what is left over.

* **Published results** (a committed reproduction, marked by a ``PUBLISHED`` file) are
  never a run's output: `run` refuses them whatever the flags, `report` writes elsewhere.
* **Whose results**: a directory written under another config hash, or a non-empty
  directory that is not a run directory, is refused with one line naming ``--force`` /
  ``--output`` (``--fresh`` wipes a run directory of ours, never anything else).
* **One run at a time**: an exclusive ``flock`` on ``RUN_DIR/.lock`` (``msvcrt.locking``
  on Windows; released by the kernel however the holder dies; refused in one line where
  the platform has neither); a second run names the PID holding it, and `status`
  tells a dead run (lock free, status "running") from a live one.
* **Leftovers**: ``.*.tmp`` files of atomic writes cut short by a kill are removed by the
  next run that holds the lock.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
try:
    import msvcrt
except ImportError:  # POSIX
    msvcrt = None  # type: ignore[assignment]

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
    writable_path(run_dir, field, "use --output DIR")


def writable_path(path: Path, field: str, way_out: str) -> None:
    """One-line error unless the folder `path` exists and takes files or can be made:
    its nearest existing ancestor must be a folder that really takes a file."""
    probe = Path(path)
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise RunDirError(f"{field}: {path} lies under {probe}, which is a file; {way_out}")
    writable_dir(probe, field, way_out)


def writable_dir(folder: Path, field: str, way_out: str) -> None:
    """One-line error unless a file can really be made in the existing `folder` (a probe
    created and removed at once: permissions alone do not tell, e.g. on /proc or a
    read-only mount, nor for root)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".workbench-probe-", dir=folder)
    except OSError as exc:
        raise RunDirError(f"{field}: cannot write in {folder} ({exc.strerror}); "
                          f"{way_out}") from None
    os.close(fd)
    os.unlink(probe)


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


_HELD: set[int] = set()
"""File descriptors of the run locks this process holds."""


def _close_held_in_child() -> None:
    """A forked worker closes its copies of the run lock: the lock then goes with the
    runner (a flock lasts while any copy of its descriptor is open)."""
    for fd in list(_HELD):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_held_in_child)


class RunLock:
    """Exclusive lock of a run directory for the lifetime of one run (context manager)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / LOCK
        self._fd: int | None = None

    def __enter__(self) -> "RunLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            locked = _try_lock(fd)
        except RunDirError:
            os.close(fd)
            raise
        if not locked:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"process {holder}" if holder else "another process"
            raise RunDirError(
                f"{self.path.parent} is in use by a running experiment ({who}); wait for it "
                "or stop it, or use --output for another directory") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        _HELD.add(fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            _HELD.discard(self._fd)
            os.close(self._fd)  # releases the lock
            self._fd = None


def _try_lock(fd: int, exclusive: bool = True) -> bool:
    """Lock the open file without waiting (POSIX ``flock``, Windows ``msvcrt.locking``);
    False when another process holds it. No locking primitive: `RunDirError`."""
    if fcntl is not None:
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
    if msvcrt is not None:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    raise RunDirError("this platform offers no file lock (neither fcntl nor msvcrt), so "
                      "two runs on one directory could not be kept apart; run on a POSIX "
                      "system or Windows")


def _unlock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
    elif msvcrt is not None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)


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
        if not _try_lock(fd, exclusive=False):
            return _read_pid(fd) or -1
        _unlock(fd)
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
