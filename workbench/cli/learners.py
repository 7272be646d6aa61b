"""`python -m workbench learners` — registered learners with parameters, input and source.

    python -m workbench learners [--format text|csv]
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("text", "csv"), default="text",
                   help="plain table (default) or CSV")


def rows() -> list[dict]:
    """One dict per registered learner: name, parameters, preprocessing, source, description."""
    from workbench.learners import registry

    out = []
    for name in registry.names():
        spec = registry.get(name)
        params = spec.parameters()
        prep = spec.defaults.get(registry.PREPROCESSING_KEY) or getattr(
            spec.factory, "preprocessing", "?")
        out.append({
            "name": name,
            "parameters": ", ".join(f"{k}={v!r}" for k, v in params.items()),
            "preprocessing": str(prep),
            "source": spec.source,
            "description": spec.description,
        })
    return out


def run(args: argparse.Namespace) -> int:
    table = rows()
    if args.format == "csv":
        import csv

        w = csv.DictWriter(sys.stdout, fieldnames=list(table[0]) if table else ["name"],
                           lineterminator="\n")
        w.writeheader()
        w.writerows(table)
        return 0
    cols = ("name", "preprocessing", "source", "parameters")
    widths = {c: max([len(c)] + [len(r[c]) for r in table]) for c in cols[:-1]}
    print("  ".join(c.ljust(widths[c]) for c in cols[:-1]) + "  parameters")
    for r in table:
        print("  ".join(r[c].ljust(widths[c]) for c in cols[:-1]) + "  " + r["parameters"])
    return 0
