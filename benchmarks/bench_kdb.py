"""Training and classification time of KDB5, SKDB, TAN and BayesNet on the larger data sets.

Usage: ``python benchmarks/bench_kdb.py [slug ...] [--data-dir DIR] [--test-fraction 0.1]``

Each data set is EF5-discretised (cuts fitted on the training part), split 90/10 with a fixed
seed, and every learner is trained on the training part and classifies the test part. The
table shows wall seconds (best of `--repeat` runs) and the ratios SKDB / KDB5 and BayesNet /
SKDB (training; the JMLR 2016 paper's Fig. 8 compares BayesNet's time with SKDB's).
Data sets are looked up along the catalog search path (plus ``../shared/datasets/*``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from workbench.data.catalog import load_dataset
from workbench.discretize import fit_discretizer
from workbench.errors import WorkbenchError
from workbench.learners.registry import create

DEFAULT = ["adult", "letter", "magic", "connect-4", "nursery", "pendigits", "poker-hand", "sign"]
LEARNERS = ["KDB5", "SKDB", "TAN", "BayesNet"]
SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _time(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _warm_up() -> None:
    """Load the numba kernels (compiled or from cache) before anything is timed."""
    from workbench.data.dataset import Attribute, Dataset

    X = np.array([[0, 1], [1, 0], [1, 1], [0, 0]], dtype=float)
    atts = (Attribute("a", ("0", "1")), Attribute("b", ("0", "1")))
    tiny = Dataset("warm-up", atts, Attribute("c", ("0", "1")), X, np.array([0, 1, 1, 0]))
    for name in LEARNERS:
        create(name).fit(tiny).predict_proba(tiny)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("datasets", nargs="*", default=DEFAULT)
    ap.add_argument("--data-dir", action="append", default=[])
    ap.add_argument("--test-fraction", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    dirs = args.data_dir + [str(SHARED / "registry"), str(SHARED / "fetched")]
    _warm_up()

    head = f"{'data set':<12}{'n':>8}{'d':>5}{'K':>4}"
    for name in LEARNERS:
        head += f"{name + ' train':>16}{name + ' test':>15}"
    head += f"{'SKDB/KDB5 train':>17}{'BayesNet/SKDB':>15}{'SKDB (l,k)':>12}"
    print(head)
    print("-" * len(head))
    for slug in args.datasets:
        try:
            data = load_dataset(slug, dirs).without_missing_class()
        except WorkbenchError as exc:
            print(f"{slug:<12} skipped: {exc}")
            continue
        rng = np.random.default_rng(1)
        perm = rng.permutation(data.n_instances)
        n_test = int(round(args.test_fraction * data.n_instances))
        train, test = data.take(np.sort(perm[n_test:])), data.take(np.sort(perm[:n_test]))
        disc = fit_discretizer("ef:5", train, sample=100_000, seed=1)
        train, test = disc.transform(train), disc.transform(test)
        row = f"{slug:<12}{train.n_instances:>8}{train.n_attributes:>5}{train.n_classes:>4}"
        times = {}
        chosen = ""
        for name in LEARNERS:
            t_fit, model = _time(lambda: create(name).fit(train), args.repeat)
            t_pred, _ = _time(lambda: model.predict_proba(test), args.repeat)
            times[name] = t_fit
            row += f"{t_fit:>16.3f}{t_pred:>15.3f}"
            if name == "SKDB":
                chosen = str(model.selected_)
        row += (f"{times['SKDB'] / times['KDB5']:>17.2f}"
                f"{times['BayesNet'] / times['SKDB']:>15.2f}{chosen:>12}")
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
