"""What produced a run: the workbench version and, from a git checkout, its commit and
whether the tree had uncommitted changes; the versions of the numeric stack; the Python
build and the machine (as benchopt records them). Written into ``metadata.json`` by the
runner, shown by ``status``.
"""

from __future__ import annotations

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
        changes = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(changes)}


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
                         "build": " ".join(platform.python_build()),
                         "executable": sys.executable},
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
    }


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
    lines.append(f"python: {build.get('implementation', 'Python')} {python}"
                 + (f" ({build['compiler']})" if build.get("compiler") else "")
                 + f" on {prov.get('platform') or meta.get('platform') or '?'}")
    return lines
