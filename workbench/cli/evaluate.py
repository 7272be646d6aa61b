"""`python -m workbench evaluate` — evaluate a count-based learner on a data file out of
core: r × k-fold cross-validation, a holdout (every K-th row, or the last N rows) or
prequential test-then-train.

    python -m workbench evaluate --learner A1DE --data big.parquet --cv 10 [--rounds R]
        [--folds-out folds.csv] [--predictions-out predictions.parquet | --workers N]
    python -m workbench evaluate --learner A1DE --data big.parquet --holdout every:10
        [--workers N | --scheduler ADDR | --scheduler-file FILE]
    python -m workbench evaluate --learner NB --data stream.csv --prequential
        [--window 1000] [--discretize ida:5:1000|idaw:5:500|mdl|ef:B]

Prints the metrics `cv` prints (pooled 0-1 loss, both RMSEs, log loss) with rows, CPU
seconds, model bytes and peak memory as JSON; --folds-out writes a CV's per-fold values and
--predictions-out streams its per-row predictions to Parquet; --windows-out writes a
prequential run's per-window values as CSV.
"""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    from workbench.cli.fit import add_cluster_arguments, add_data_arguments

    add_data_arguments(p)
    add_cluster_arguments(p, "holdout and --cv: count, then score, a Parquet file's row "
                             "groups on N local Dask worker processes")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--holdout", metavar="every:K|last:N",
                     help="test on every K-th row (rows K-1, 2K-1, ...) or the last N rows")
    how.add_argument("--prequential", action="store_true",
                     help="test-then-train over windows of --window rows")
    how.add_argument("--cv", type=int, metavar="K",
                     help="K-fold cross-validation: folds a seeded function of the row index "
                          "(the folds of assignment 'rows' in memory), cut points per "
                          "training fold from a sample of --sample rows, count subtraction "
                          "for the AnDE family on nominal data")
    p.add_argument("--rounds", type=int, default=1, metavar="R",
                   help="--cv: rounds of K-fold CV (default 1)")
    p.add_argument("--folds-out", metavar="FILE.csv", help="--cv: write the per-fold values")
    p.add_argument("--predictions-out", metavar="FILE.parquet",
                   help="--cv: stream every row's prediction to a Parquet file")
    p.add_argument("--window", type=int, default=1000, metavar="N",
                   help="prequential window (default 1000 rows)")
    p.add_argument("--discretize", metavar="METHOD",
                   help="the learner's preprocessing instead of its own: mdl, ef:B, none, "
                        "or incremental ida:B:S / idaw:B:S (B bins, a sample / window of S "
                        "values per attribute); a prequential run fits a batch method on its "
                        "first window")
    p.add_argument("--windows-out", metavar="FILE.csv",
                   help="write the per-window values of a prequential run")


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    import pandas as pd

    from workbench.cli import parse_overrides
    from workbench.cli.fit import check_sizes, dask_client
    from workbench.errors import WorkbenchError
    from workbench.evaluation.outofcore import (evaluate_holdout, evaluate_prequential,
                                                parse_holdout)
    from workbench.fileio import atomic_write_text

    check_sizes(args)
    params = parse_overrides(args.params)
    if args.discretize is not None:
        from workbench.discretize import check_method

        check_method(args.discretize, "--discretize")
        params["preprocessing"] = args.discretize
    if args.cv is None and (args.folds_out or args.predictions_out):
        raise WorkbenchError("--folds-out and --predictions-out go with --cv")
    if args.cv is not None:
        res = _cross_validate(args, params)
    elif args.holdout:
        holdout = parse_holdout(args.holdout)
        with dask_client(args) as client:
            res = evaluate_holdout(args.data, args.learner, params, holdout=holdout,
                                   chunk_rows=args.chunk_rows, sample=args.sample,
                                   seed=args.seed, class_column=args.class_column,
                                   client=client)
    else:
        if args.workers or args.scheduler or args.scheduler_file:
            raise WorkbenchError("--prequential runs in one process (each window tests the "
                                 "model of every earlier row); drop --workers / --scheduler")
        if args.window < 1:
            raise WorkbenchError(f"--window: expected a positive number of rows, got "
                                 f"{args.window}")
        res = evaluate_prequential(args.data, args.learner, params, window=args.window,
                                   seed=args.seed, class_column=args.class_column)
        if args.windows_out:
            atomic_write_text(Path(args.windows_out),
                              pd.DataFrame(res.windows).to_csv(index=False))
    print(json.dumps({"data": str(args.data), "learner": args.learner, **res.summary},
                     indent=2))
    return 0


def _cross_validate(args: argparse.Namespace, params: dict):
    """`--cv K`: the CV out of core, its per-fold CSV and streamed predictions written
    atomically (nothing half-written on an error)."""
    from pathlib import Path

    from workbench.data.sources import scan_header
    from workbench.errors import WorkbenchError
    from workbench.evaluation.outofcore import PredictionWriter, evaluate_kfold

    if args.cv < 2:
        raise WorkbenchError(f"--cv: expected K >= 2 folds, got {args.cv}")
    if args.rounds < 1:
        raise WorkbenchError(f"--rounds: expected a positive number, got {args.rounds}")
    options = dict(folds=args.cv, rounds=args.rounds, seed=args.seed,
                   chunk_rows=args.chunk_rows, sample=args.sample,
                   class_column=args.class_column)
    from workbench.cli.fit import dask_client

    with dask_client(args) as client:
        if not args.predictions_out:
            return _folds_out(args, evaluate_kfold(args.data, args.learner, params,
                                                   client=client, **options))
        header = scan_header(args.data, args.class_column)
        writer = PredictionWriter(Path(args.predictions_out),
                                  [f"p_{c}" for c in header.class_attribute.values],
                                  predicted=True)
        try:  # (with Dask: each row group's predictions streamed back in order)
            res = evaluate_kfold(args.data, args.learner, params, keep=writer,
                                 client=client, **options)
            writer.close()
        except BaseException:
            writer.discard()
            raise
    return _folds_out(args, res)


def _folds_out(args: argparse.Namespace, res):
    """`--folds-out`: the per-fold CSV, written atomically; returns `res`."""
    from pathlib import Path

    import pandas as pd

    from workbench.fileio import atomic_write_text

    if args.folds_out:
        rows = [{"round": f.round, "fold": f.fold, "n_train": f.n_train, "n_test": f.sums.n,
                 **f.metrics(res.header.n_classes),
                 "train_cpu_seconds": f.train_cpu_seconds,
                 "test_cpu_seconds": f.test_cpu_seconds, "model_bytes": f.model_bytes}
                for f in res.folds]
        atomic_write_text(Path(args.folds_out), pd.DataFrame(rows).to_csv(index=False))
    return res
