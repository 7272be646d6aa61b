"""Subcommands of `python -m workbench` (one module each) and their shared argument helpers."""

from __future__ import annotations


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system says, else
    every core): the default number of parallel jobs — results are identical whatever
    the number."""
    import os

    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # (no affinity on this system)
        return os.cpu_count() or 1


SET_HELP = ("learner parameter override (repeatable); VALUE is read as YAML: numbers in "
            "any spelling (5, 0.5, .5, 1e-3, 1E5), true/false, null, else a string (ef:5)")
"""The help of every ``--set KEY=VALUE`` option (as `parse_overrides` reads it; kept here
so that building the parser does not import YAML)."""


def parse_overrides(items: list[str]) -> dict:
    """A learner's ``--set KEY=VALUE`` parameters (`workbench.yamlnum.assignments`)."""
    from workbench import yamlnum

    return yamlnum.assignments(items)


def warn_about(data, role: str = "") -> None:
    """The degenerate-data warnings `run` prints (single class, all-missing attributes),
    for a data set a command is about to use (`role`: e.g. "training data")."""
    import sys

    from workbench.data.checks import data_warnings

    for w in data_warnings(data):
        print(f"warning: {role + ': ' if role else ''}{w}", file=sys.stderr)


def check_output_file(path: str, flag: str) -> None:
    """One-line error before any work when the file `path` (given as `flag`) could not be
    written: its folder missing, not a folder, or not writable."""
    from pathlib import Path

    from workbench.errors import WorkbenchError
    from workbench.experiment.rundir import writable_dir

    folder = Path(path).parent
    if not folder.is_dir():
        raise WorkbenchError(f"{flag} {path}: folder {folder} does not exist")
    if Path(path).is_dir():
        raise WorkbenchError(f"{flag} {path}: is a folder, expected a file name")
    writable_dir(folder, f"{flag} {path}", "choose another path")
