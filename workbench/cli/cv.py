"""`python -m workbench cv` — repeated k-fold cross-validation of one learner on one data set.

Prints the summary (see `workbench.evaluation.cv`) as JSON. Instance indices in the fold and
prediction files are 0-based positions among the rows whose class is known (the file's row
order; identical to the file row number when no class is missing).
"""

from __future__ import annotations

import argparse

from workbench.cli import SET_HELP


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--learner", required=True, help="registered learner name (see 'learners')")
    p.add_argument("--data", required=True, help="ARFF file (.arff/.arff.gz) or catalog slug")
    p.add_argument("--rounds", type=int, default=None, help="rounds of CV (default 20)")
    p.add_argument("--folds", type=int, default=None, help="folds per round (default 2)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--stratify", action="store_true", help="stratified folds")
    p.add_argument("--set", dest="params", action="append", default=[], metavar="KEY=VALUE",
                   help=SET_HELP)
    p.add_argument("--folds-out", metavar="CSV", help="write the folds used (round,index,fold)")
    p.add_argument("--folds-in", metavar="CSV",
                   help="use these folds (round,index,fold) instead of drawing them")
    p.add_argument("--predictions-out", metavar="CSV",
                   help="write round,fold,index,actual,predicted,<one column per class>")
    p.add_argument("--jobs", type=int, default=1, help="parallel folds (joblib; -1 = all cores)")
    p.add_argument("--discretize-sample", type=int, default=None, metavar="N",
                   help="fit the discretiser on a random sample of at most N training rows "
                        "per fold, drawn with the fold's seed (default: all rows)")


def load_data(spec: str):
    """A Dataset from a file path or a catalog slug (`catalog.load_dataset`)."""
    from workbench.data.catalog import load_dataset

    return load_dataset(spec)


def write_predictions(path: str, cv) -> None:
    """One row per (round, test instance): round,fold,index,actual,predicted,p_1..p_K."""
    import csv

    labels = list(cv.data.class_values)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["round", "fold", "index", "actual", "predicted", *labels])
        for res in cv.fold_results:
            pred = res.proba.argmax(axis=1)
            for j, i in enumerate(res.test_index.tolist()):
                w.writerow([res.round, res.fold, i, labels[cv.y[i]], labels[pred[j]],
                            *(repr(float(v)) for v in res.proba[j])])


def _jsonable(value):
    import math

    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def run(args: argparse.Namespace) -> int:
    import json

    import numpy as np

    from workbench import log
    from workbench.errors import WorkbenchError
    from workbench.evaluation.cv import cross_validate, evaluation_data
    from workbench.evaluation.splits import load_splits, save_splits

    from workbench.cli import check_output_file, parse_overrides, warn_about

    params = parse_overrides(args.params)
    if args.jobs == 0:
        raise WorkbenchError("--jobs: must be a positive number or -1")
    if args.discretize_sample is not None and args.discretize_sample < 1:
        raise WorkbenchError(f"--discretize-sample: expected a positive integer, got "
                             f"{args.discretize_sample}")
    for flag, value, minimum in (("--rounds", args.rounds, 1), ("--folds", args.folds, 2),
                                 ("--seed", args.seed, 0)):
        if value is not None and value < minimum:
            raise WorkbenchError(f"{flag}: {flag[2:]} must be >= {minimum}, got {value}")
    for flag, target in (("--folds-out", args.folds_out),
                         ("--predictions-out", args.predictions_out)):
        if target:  # before computing anything
            check_output_file(target, flag)
    data = load_data(args.data)
    warn_about(data)
    splits = None
    if args.folds_in:
        if args.stratify:
            raise WorkbenchError("--stratify cannot be combined with --folds-in (the file "
                                 "fixes the folds)")
        splits = load_splits(args.folds_in, n=evaluation_data(data).n_instances)
        for flag, given, actual in (("--rounds", args.rounds, splits.shape[0]),
                                    ("--folds", args.folds, int(splits.max()) + 1)):
            if given is not None and given != actual:
                raise WorkbenchError(f"{flag} {given} contradicts --folds-in {args.folds_in} "
                                     f"({actual})")
    cv = cross_validate(
        data,
        args.learner,
        params,
        rounds=20 if args.rounds is None else args.rounds,
        folds=2 if args.folds is None else args.folds,
        seed=args.seed,
        stratify=args.stratify,
        splits=splits,
        n_jobs=args.jobs,
        discretize_sample=args.discretize_sample,
    )
    for fr in cv.fold_results:
        wrong = np.mean(cv.predictions[fr.round, fr.test_index] != cv.y[fr.test_index])
        log.note(f"round {fr.round} fold {fr.fold}: {fr.test_index.size} test rows, 0-1 loss "
                 f"{wrong:.4f}, train {fr.train_cpu_seconds:.3f} s, test "
                 f"{fr.test_cpu_seconds:.3f} s CPU", log.VERBOSE)
    if args.folds_out:
        save_splits(cv.splits, args.folds_out)
    if args.predictions_out:
        write_predictions(args.predictions_out, cv)
    out = {
        "dataset": data.name,
        "learner": args.learner,
        "params": params,
        "seed": args.seed,
        "stratify": bool(args.stratify),
        "discretize_sample": args.discretize_sample,
        **{k: _jsonable(v) for k, v in cv.summary.items()},
    }
    print(json.dumps(out, indent=2))
    return 0
