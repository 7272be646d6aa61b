"""`python -m workbench discretize` (not implemented yet)."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from workbench.errors import WorkbenchError

    raise WorkbenchError("'discretize' is not implemented yet")
