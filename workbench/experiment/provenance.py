"""What produced a run: the workbench version and, from a git checkout, its commit and
whether the tree had uncommitted changes; the versions of the numeric stack; the Python
build and the machine (as benchopt records them). Written into ``metadata.json`` by the
runner, shown by ``status``.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("workbench", "snb-workbench", "numpy", "scipy", "numba", "llvmlite", "pyarrow",
            "pandas", "joblib", "PyYAML", "scikit-learn", "liac-arff", "dask", "distributed")
"""Distributions whose versions a run records (those installed)."""

SHOWN = ("numpy", "numba", "scipy", "pyarrow")
"""The versions `describe` names next to the workbench's."""


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def git_state(root: Path | None = None) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the git checkout the package was imported from, or None
    (an installed package, no git, or git failing)."""
    root = root or Path(__file__).resolve().parents[2]
    if not (root / ".git").exists() or not (root / "workbench" / "__init__.py").is_file():
        return None
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # reading must not take git's index lock

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=10, check=True, env=env).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        changes = git("status", "--porcelain", "--untracked-files=normal")
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(changes)}  # (untracked files count as changes)


def cpu_model() -> str:
    """The processor's model name (Linux: /proc/cpuinfo; ``platform.processor()`` is
    empty there), else what the platform says, else ""."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or ""


def memory_bytes() -> int | None:
    """The machine's physical memory, where the system says."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


@functools.lru_cache(maxsize=1)
def code_identity() -> str:
    """The code that computes a fold: the workbench version, and in a git checkout its
    commit (``-dirty`` with uncommitted or untracked changes) — what each stored fold
    records, so a resume can tell folds of other code apart."""
    from workbench import __version__

    git = git_state()
    if not git:
        return __version__
    return f"{__version__}+git.{git['commit'][:12]}" + ("-dirty" if git["dirty"] else "")


def provenance() -> dict[str, Any]:
    """Everything above as one JSON-ready mapping."""
    from workbench import __version__

    return {
        "workbench_version": __version__,
        "git": git_state(),
        "packages": package_versions(),
        "python": sys.version.split()[0],
        "python_build": {"implementation": platform.python_implementation(),
                         "version": sys.version, "compiler": platform.python_compiler(),
                         "build": " ".join(platform.python_build())},
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or cpu_model(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": memory_bytes(),
    }


INVOCATION_KEYS = ("workbench_version", "git", "cpu_model", "cpu_count", "memory_bytes",
                   "python")
"""What each invocation of a run records of its provenance (a run resumed under other code
or on another machine lists each)."""


def _code(prov: dict[str, Any]) -> str:
    git = prov.get("git") or {}
    return (f"workbench {prov.get('workbench_version', '?')}"
            + (f" (git {git['commit'][:12]}{', changed' if git.get('dirty') else ''})"
               if git.get("commit") else ""))


def invocation_lines(meta: dict[str, Any]) -> list[str]:
    """When a run's invocations ran under other code or on other machines: a line saying
    so, then one per invocation (when it started, the code, the CPU); else none."""
    runs = [inv for inv in meta.get("invocations") or []
            if isinstance(inv, dict) and isinstance(inv.get("provenance"), dict)]
    kinds = {(_code(inv["provenance"]), inv["provenance"].get("cpu_model")) for inv in runs}
    if len(kinds) < 2:
        return []
    return [f"made by {len(runs)} invocations under {len(kinds)} code versions or machines:",
            *(f"  {inv.get('started', '?')}: {_code(inv['provenance'])} on "
              f"{inv['provenance'].get('cpu_model') or '?'}" for inv in runs)]


def describe(meta: dict[str, Any]) -> list[str]:
    """Lines for ``status``: what produced the run (from its metadata)."""
    prov = meta.get("provenance") or {}
    packages = prov.get("packages") or meta.get("packages") or {}
    version = prov.get("workbench_version") or packages.get("workbench") or \
        packages.get("snb-workbench") or "?"
    git = prov.get("git")
    source = (f" (git {git['commit'][:12]}{', uncommitted changes' if git['dirty'] else ''})"
              if git else "")
    stack = ", ".join(f"{n} {packages[n]}" for n in SHOWN if n in packages)
    build = prov.get("python_build") or {}
    python = prov.get("python") or meta.get("python") or "?"
    lines = [f"produced by: workbench {version}{source}" + (f"; {stack}" if stack else "")]
    lines += invocation_lines(meta)
    lines.append(f"python: {build.get('implementation', 'Python')} {python}"
                 + (f" ({build['compiler']})" if build.get("compiler") else "")
                 + f" on {prov.get('platform') or meta.get('platform') or '?'}")
    return lines
