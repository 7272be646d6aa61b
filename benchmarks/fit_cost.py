"""Fit the runner's prior fold-cost model (`workbench.experiment.cost`) to a finished run.

Usage: ``python benchmarks/fit_cost.py RUN_DIR [CONFIG]``

For every stored fold of RUN_DIR (``fold_metrics.csv``: train + test CPU seconds, which
include discretisation and exclude compiling) the model's work terms are computed from the
config's learner parameters and the data set's rows, attributes and classes, and summed
per (data set, learner) pair; the coefficients (a, b, c) of each kind (nb, ande, forest)
are fitted by least squares on the log of each pair's predicted / measured time (ratios
are what the runner's schedule and ETA use: over- and under-estimates weigh alike), and
printed next to the ones in use with the median and 90th percentile of |predicted /
measured − 1| over each learner's pairs for both. Only the kinds and learners present in
the run are fitted; the runner's own time per fold (`cost.FOLD_OVERHEAD`) is apart: the
run's wall time × jobs less its folds' CPU, over its folds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares, nnls

from workbench.data.catalog import load_dataset
from workbench.experiment import cost
from workbench.experiment.config import load_config


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("config", nargs="?", type=Path)
    args = ap.parse_args(argv)
    config = load_config(args.config or args.run / "config.yaml")
    folds = pd.read_csv(args.run / "fold_metrics.csv")
    dims = {}
    for name in folds["dataset"].unique():
        ds = load_dataset(name).without_missing_class()
        dims[name] = cost.Dims(ds.n_instances, len(ds.attributes), ds.n_classes)
    rows = []
    for r in folds.itertuples():
        d = dims[r.dataset]
        n_train, n_test = config.protocol.plan.fold_sizes(d.n, int(r.round))
        kind, work, disc, times = cost.fold_terms(config.learner_parameters(r.learner), d,
                                                  n_train, n_test)
        sec = (r.train_cpu_seconds + r.test_cpu_seconds) / times
        rows.append((kind, r.dataset, r.learner, work, disc, 1.0, sec))
    folds_t = pd.DataFrame(rows, columns=["kind", "dataset", "learner", "work", "disc",
                                          "folds", "seconds"])
    # per (data set, learner) pair: what the ETA and the schedule add up
    t = folds_t.groupby(["kind", "dataset", "learner"], sort=False, as_index=False).sum()
    t = t[t.seconds > 0]
    fitted = {}
    for kind, g in t.groupby("kind"):
        A = np.column_stack([g.work, g.disc, g.folds])
        y = g.seconds.to_numpy()
        start, _ = nnls(A / y[:, None], np.ones(len(g)))  # relative error, then log ratio
        fit = least_squares(lambda z: np.log(A @ np.exp(z)) - np.log(y),
                            np.log(np.maximum(start, 1e-12)), bounds=(-60, 5))
        fitted[kind] = tuple(float(f"{c:.2g}") if c > 1e-20 else 0.0 for c in np.exp(fit.x))
        print(f"{kind:7s} in use {cost.COEFFICIENTS[kind]}  fitted {fitted[kind]}  "
              f"({len(g)} pairs)")
    for label, coefs in (("in use", dict(cost.COEFFICIENTS)), ("fitted", fitted)):
        print(f"\n|predicted / measured - 1| per learner, coefficients {label}: median, p90")
        for learner, g in t.groupby("learner", sort=False):
            a, b, c = coefs.get(g.kind.iloc[0], cost.COEFFICIENTS[g.kind.iloc[0]])
            pred = a * g.work + b * g.disc + c * g.folds
            err = np.abs(pred / g.seconds - 1.0)
            print(f"  {learner:10s} {np.median(err):6.2f} {np.quantile(err, 0.9):6.2f}"
                  f"  (measured {g.seconds.sum():8.1f} s, predicted "
                  f"{pred.sum():8.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
