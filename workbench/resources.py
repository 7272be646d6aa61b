"""Where the workbench's own files are: built-in configs, embedded data sets, the papers'
published cells and metric maps, the committed reproductions; and where `fetch` keeps the
data sets it downloads (`cache_dir`).

In a checkout they are the repository's ``configs/``, ``datasets/`` and ``experiments/``;
an installed wheel carries a copy of them in ``workbench/_bundled/`` (see ``setup.py``), so
``python -m workbench run pakdd13`` and ``report pakdd13 --out DIR`` work from any
directory. Nothing else in the package knows the difference.
"""

from __future__ import annotations

import os
from pathlib import Path

from workbench.errors import WorkbenchError

_PACKAGE = Path(__file__).resolve().parent
_BUNDLED = _PACKAGE / "_bundled"

ROOT: Path = _BUNDLED if _BUNDLED.is_dir() else _PACKAGE.parent
"""The folder holding ``configs/``, ``datasets/`` and ``experiments/``."""

CONFIGS = ROOT / "configs"
DATASETS = ROOT / "datasets"
EXPERIMENTS = ROOT / "experiments"

CACHE_ENV = "WORKBENCH_CACHE"


def cache_dir() -> Path:
    """Where downloaded data sets are kept: ``$WORKBENCH_CACHE`` or
    ``~/.cache/workbench/datasets``."""
    text = os.environ.get(CACHE_ENV, "").strip()
    return Path(text).expanduser() if text else Path.home() / ".cache" / "workbench" / \
        "datasets"

BUNDLED_PATTERNS: dict[str, tuple[str, ...]] = {
    "configs": ("*.yaml",),
    "datasets": ("*.arff.gz",),
    "experiments": ("*/*.csv", "*/*.yaml", "*/README.md", "*/reproduction*/PUBLISHED",
                    "*/reproduction*/*.csv", "*/reproduction*/*.yaml",
                    "*/reproduction*/config_hash", "*/reproduction*/metadata.json",
                    "*/reproduction*/README.md"),
}
"""What a wheel carries, relative to the repository root (`setup.py` copies these): every
file a built-in config, a paper comparison or a re-rendered reproduction reads — not the
committed reports' figures, which `report` draws again."""


def config_names() -> list[str]:
    """Names of the built-in configs (``pakdd13`` for ``configs/pakdd13.yaml``)."""
    return sorted(p.stem for p in CONFIGS.glob("*.yaml"))


def config_path(text: str) -> Path:
    """A config file: `text` itself if it exists, else the built-in config of that name."""
    path = Path(text).expanduser()
    if path.exists() or path.suffix in (".yaml", ".yml") or "/" in text:
        return path
    builtin = CONFIGS / f"{text}.yaml"
    if builtin.is_file():
        return builtin
    raise WorkbenchError(f"config '{text}': no such file and no built-in config of that "
                         f"name (built-in: {', '.join(config_names())})")


def reproductions() -> dict[str, Path]:
    """The committed reproductions by name: ``experiments/P/reproduction`` is ``P``,
    ``experiments/P/reproduction-X`` is ``P-X`` (e.g. ``pakdd13``, ``pakdd14-bv``)."""
    out: dict[str, Path] = {}
    for run in sorted(EXPERIMENTS.glob("*/reproduction*")):
        if (run / "summary.csv").is_file():
            suffix = run.name[len("reproduction"):]
            out[run.parent.name + suffix] = run
    return out


def run_dir_path(text: str) -> Path:
    """A run directory: `text` itself if it is a directory, else a committed reproduction
    of that name."""
    path = Path(text).expanduser()
    if path.is_dir():
        return path
    known = reproductions()
    if text in known:
        return known[text]
    raise WorkbenchError(f"RUN_DIR: {text} is not a directory nor a packaged reproduction "
                         f"(packaged: {', '.join(known)})")
