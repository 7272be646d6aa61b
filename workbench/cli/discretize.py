"""`python -m workbench discretize` — fit MDL / equal-frequency cut points on a training
file and apply them to it (and to a test file).

    python -m workbench discretize --train TRAIN.arff [--test TEST.arff] --method mdl|ef:B
        [--cuts-json CUTS.json] [--out-train F.arff[.gz]] [--out-test F.arff[.gz]]

CUTS.json maps each numeric attribute to its ascending cut points (full-precision floats).
With no output requested the cuts JSON is printed to stdout. Everything is computed before
anything is written, and each file is written atomically (temporary file + rename), so an
error never leaves a half-written output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from workbench.fileio import atomic_write_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--train", required=True, metavar="TRAIN.arff",
                   help="training data (the cut points are fitted on it)")
    p.add_argument("--test", metavar="TEST.arff", help="data to transform with the same cuts")
    p.add_argument("--method", default="mdl", metavar="mdl|ef:B",
                   help="'mdl' (Fayyad-Irani, default) or 'ef:B' (equal frequency, B bins)")
    p.add_argument("--class", dest="class_attribute", metavar="NAME|INDEX",
                   help="class attribute (name or 1-based index; default: last)")
    p.add_argument("--sample", type=int, metavar="N",
                   help="fit on a random sample of at most N training rows")
    p.add_argument("--seed", type=int, default=0, help="seed for --sample (default 0)")
    p.add_argument("--cuts-json", metavar="CUTS.json", help="write the cut points as JSON")
    p.add_argument("--out-train", metavar="F.arff", help="write the discretised training data")
    p.add_argument("--out-test", metavar="F.arff", help="write the discretised test data")


def run(args: argparse.Namespace) -> int:
    from workbench.data.arff import load_arff, save_arff
    from workbench.discretize import check_method, fit_discretizer
    from workbench.errors import WorkbenchError

    check_method(args.method, "--method")
    if args.out_test and not args.test:
        raise WorkbenchError("--out-test needs --test")
    if args.sample is not None and args.sample < 1:
        raise WorkbenchError(f"--sample must be >= 1, got {args.sample}")
    outputs = [p for p in (args.cuts_json, args.out_train, args.out_test) if p]
    for out in outputs:
        parent = Path(out).parent
        if str(parent) and not parent.is_dir():
            raise WorkbenchError(f"{out}: directory {parent} does not exist")

    train = load_arff(args.train, class_attribute=args.class_attribute)
    test = load_arff(args.test, class_attribute=args.class_attribute) if args.test else None
    disc = fit_discretizer(args.method, train, sample=args.sample, seed=args.seed)
    train_out = disc.transform(train) if args.out_train else None
    test_out = disc.transform(test) if test is not None else None  # checks the header
    cuts_text = json.dumps(disc.cuts_json(), indent=2) + "\n"

    if not outputs:
        sys.stdout.write(cuts_text)
        return 0
    if args.cuts_json:
        atomic_write_text(Path(args.cuts_json), cuts_text)
    if train_out is not None:
        save_arff(train_out, args.out_train)
    if args.out_test and test_out is not None:
        save_arff(test_out, args.out_test)
    return 0
