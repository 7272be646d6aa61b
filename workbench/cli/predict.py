"""`python -m workbench predict` — train one learner on TRAIN, print distributions for TEST.

    python -m workbench predict --learner NAME --train TRAIN.arff --test TEST.arff
        [--discretize mdl|ef:B|none] [--set key=value ...] [--class NAME|INDEX] [--out FILE]

Output is CSV: ``index,actual,predicted,<label 1>,…,<label K>`` — 0-based test row, the
actual and predicted class labels (``?`` for a missing actual class) and the probability
of each declared class (Python ``repr`` of the float). The preprocessing defaults to the
learner's declared one (MDL fitted on TRAIN for the Bayesian learners, none for RF10).
"""

from __future__ import annotations

import argparse
import sys

from workbench.cli import SET_HELP


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--learner", required=True, metavar="NAME",
                   help="registered learner name (see 'python -m workbench learners')")
    p.add_argument("--train", required=True, metavar="TRAIN.arff", help="training data")
    p.add_argument("--test", required=True, metavar="TEST.arff", help="data to classify")
    p.add_argument("--discretize", metavar="mdl|ef:B|none",
                   help="preprocessing (default: the learner's own, fitted on TRAIN)")
    p.add_argument("--set", dest="params", action="append", default=[], metavar="KEY=VALUE",
                   help=SET_HELP)
    p.add_argument("--class", dest="class_attribute", metavar="NAME|INDEX",
                   help="class attribute (name or 1-based index; default: last)")
    p.add_argument("--out", metavar="FILE", help="write the CSV here instead of stdout")


def predict_rows(learner_name: str, train, test, discretize: str | None = None,
                 params: dict | None = None):
    """Fit `learner_name` on `train` (after its preprocessing) and return (learner, test
    after preprocessing, probabilities)."""
    from workbench.discretize import check_method, fit_discretizer
    from workbench.errors import WorkbenchError
    from workbench.learners.registry import create

    overrides = dict(params or {})
    if discretize is not None:
        check_method(discretize, "--discretize")
        overrides["preprocessing"] = discretize
    learner = create(learner_name, **overrides)
    train = train.training_rows()
    diff = train.header_difference(test)
    if diff is not None:
        raise WorkbenchError(
            f"{test.source or test.name}: header differs from {train.source or train.name}: "
            f"{diff}")
    method = learner.preprocessing
    if method != "none":
        disc = fit_discretizer(method, train)
        train, test = disc.transform(train), disc.transform(test)
    learner.fit(train)
    from workbench.evaluation.pipeline import checked_proba  # (what run, cv, evaluate do)

    proba = checked_proba(learner.predict_proba(test), test.n_instances, test.n_classes,
                          learner_name)
    return learner, test, proba


def format_csv(test, proba) -> str:
    """The CSV text (header + one line per test row)."""
    import csv
    import io

    labels = test.class_values
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["index", "actual", "predicted", *labels])
    pred = proba.argmax(axis=1) if proba.shape[0] else []
    for i in range(test.n_instances):
        yv = int(test.y[i])
        w.writerow([i, labels[yv] if yv >= 0 else "?", labels[int(pred[i])],
                    *(repr(float(p)) for p in proba[i])])
    return buf.getvalue()


def run(args: argparse.Namespace) -> int:
    from workbench.data.arff import load_arff
    from workbench.errors import WorkbenchError

    from workbench.cli import parse_overrides, warn_about

    params = parse_overrides(args.params)
    if "preprocessing" in params:
        raise WorkbenchError("--set preprocessing=...: use --discretize instead")
    # validate the learner and its parameters before reading any data
    from workbench.learners.registry import create

    create(args.learner, **params)
    train = load_arff(args.train, class_attribute=args.class_attribute)
    warn_about(train, "training data")
    test = load_arff(args.test, class_attribute=args.class_attribute)
    # one data set split in two: `?` is declared for an attribute if either half has one
    train, test = train.with_missing_flags_of(test), test.with_missing_flags_of(train)
    _, test_pp, proba = predict_rows(args.learner, train, test, args.discretize, params)
    text = format_csv(test_pp, proba)
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise WorkbenchError(f"{args.out}: cannot write: {exc}") from None
    else:
        sys.stdout.write(text)
    return 0
