"""`python -m workbench fit` — train a count-based learner on a data file out of core (one
pass for NB and the AnDE family, two for KDB/TAN/ASAODE, three for SKDB, one more per
elimination step for BSEAODE).

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

from workbench.cli import SET_HELP


def add_data_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments `fit` and `evaluate` share."""
    p.add_argument("--learner", required=True, metavar="NAME",
                   help="a count-based registered learner (NB, A1DE, A2DE-SW, KDB2, TAN, "
                   "SKDB, ...)")
    p.add_argument("--data", required=True, metavar="FILE",
                   help="ARFF, CSV or Parquet file (.gz allowed for ARFF and CSV)")
    p.add_argument("--set", dest="params", action="append", default=[], metavar="KEY=VALUE",
                   help=SET_HELP)
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
    add_cluster_arguments(p, "count a Parquet file's row groups on N local Dask worker "
                             "processes and add the counts up")


def add_cluster_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """--workers / --scheduler / --scheduler-file (one of them)."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N", help=what)
    where.add_argument("--scheduler", metavar="ADDR",
                       help="... on the workers of this Dask scheduler (tcp://host:8786)")
    where.add_argument("--scheduler-file", metavar="FILE", help="... of this scheduler file")


def dask_client(args: argparse.Namespace):
    """A context giving the Dask client the flags ask for (None: count here), with
    `experiment.workers.dask_session`'s bounded retries and one-line cluster errors."""
    import contextlib

    from workbench.errors import WorkbenchError
    from workbench.experiment.workers import SCHEDULER_FILE, dask_session

    if not (args.workers or args.scheduler or args.scheduler_file):
        return contextlib.nullcontext(None)
    if args.workers is not None and args.workers < 1:
        raise WorkbenchError(f"--workers: expected a positive number, got {args.workers}")
    where = (SCHEDULER_FILE + args.scheduler_file if args.scheduler_file
             else args.scheduler if not args.workers else None)
    return dask_session(args.workers or 1, where)


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
    with dask_client(args) as client:
        res = fit_file(args.data, args.learner, parse_overrides(args.params),
                       chunk_rows=args.chunk_rows, sample=args.sample, seed=args.seed,
                       holdout=holdout, class_column=args.class_column, client=client)
    if args.save:
        atomic_write_bytes(Path(args.save), pickle.dumps(
            {"learner": res.model, "discretizer": res.discretizer}))
    print(json.dumps({"data": str(args.data), "learner": args.learner, **res.summary},
                     indent=2))
    return 0
