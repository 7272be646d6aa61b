"""`python -m workbench fit` — train a count-based learner on a data file out of core.

    python -m workbench fit --learner A1DE --data big.parquet [--chunk-rows N]
        [--sample N] [--holdout every:K|last:N] [--save model.pkl] [--set key=value ...]

Reads the file (ARFF, CSV or Parquet) in chunks: a first pass for the header, the missing
values and a reservoir sample of at most --sample rows on which the learner's
discretisation is fitted, a second pass counting (`evaluation.outofcore`). Prints a JSON
summary (rows, chunks, CPU seconds, model bytes, peak resident memory) on stdout; --save
writes the fitted learner and its discretiser as a pickle.
"""

from __future__ import annotations

import argparse

from workbench.yamlnum import VALUE_HELP


def add_data_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments `fit` and `evaluate` share."""
    p.add_argument("--learner", required=True, metavar="NAME",
                   help="a count-based registered learner (NB, A1DE, A2DE-SW, ...)")
    p.add_argument("--data", required=True, metavar="FILE",
                   help="ARFF, CSV or Parquet file (.gz allowed for ARFF and CSV)")
    p.add_argument("--set", dest="params", action="append", default=[], metavar="KEY=VALUE",
                   help=f"learner parameter override (repeatable); {VALUE_HELP}")
    p.add_argument("--class", dest="class_column", metavar="NAME",
                   help="class column (default: the last)")
    p.add_argument("--chunk-rows", type=int, default=65_536, metavar="N",
                   help="rows read at a time (default 65536)")
    p.add_argument("--sample", type=int, default=100_000, metavar="N",
                   help="rows of the reservoir sample the discretiser is fitted on "
                        "(default 100000)")
    p.add_argument("--seed", type=int, default=1, help="seed of the sample (default 1)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_arguments(p)
    p.add_argument("--holdout", metavar="every:K|last:N",
                   help="leave these rows out of training (see 'evaluate')")
    p.add_argument("--save", metavar="FILE.pkl",
                   help="write the fitted learner and discretiser (pickle)")


def check_sizes(args: argparse.Namespace) -> None:
    from workbench.errors import WorkbenchError

    for flag, value in (("--chunk-rows", args.chunk_rows), ("--sample", args.sample)):
        if value < 1:
            raise WorkbenchError(f"{flag}: expected a positive number of rows, got {value}")


def run(args: argparse.Namespace) -> int:
    import json
    import pickle
    from pathlib import Path

    from workbench.cli import parse_overrides
    from workbench.evaluation.outofcore import fit_file, parse_holdout
    from workbench.fileio import atomic_write_bytes

    check_sizes(args)
    holdout = parse_holdout(args.holdout) if args.holdout else None
    res = fit_file(args.data, args.learner, parse_overrides(args.params),
                   chunk_rows=args.chunk_rows, sample=args.sample, seed=args.seed,
                   holdout=holdout, class_column=args.class_column)
    if args.save:
        atomic_write_bytes(Path(args.save), pickle.dumps(
            {"learner": res.model, "discretizer": res.discretizer}))
    print(json.dumps({"data": str(args.data), "learner": args.learner, **res.summary},
                     indent=2))
    return 0
