"""AnDE classification speed against training size and against the number of attributes.

    python benchmarks/bench_scaling.py [--sizes 0.1 1 3 10] [--datasets connect-4 adult]
        [--attributes 20 60 100] [--repeats 3]

Part 1 (training size): a seeded 50/50 split of each data set (MDL fitted on the training
half), the training half replicated to 0.1, 1, 3 and 10 million rows by `partial_fit` in
chunks (the counts of replicated rows, without holding them), then the classification rate
of A1DE and A2DE (A1DE derived from A2DE's counts) on the test half: rows per CPU second
of `predict_proba`, best of the repeats, warm (each model classifies once untimed first).
Only the training size changes, so a rate that falls means a kernel that does not scale.

Part 2 (attributes): synthetic data (3-valued attributes, 2 classes, 5,000 training rows,
2,000 test rows) at each number of attributes d; the A2DE classification CPU divided by
rows × parent pairs × children × classes = n · C(d, 2) · (d − 2) · K: the cost of one
multiply of the scoring kernel, in nanoseconds.

Both parts time our process only (`time.process_time`); kernels are compiled before any
timing.
"""

from __future__ import annotations

import argparse
import sys
import time
from math import comb
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def classify_cpu(model, test, repeats: int) -> float:
    """Best CPU seconds of `predict_proba` over the repeats (one untimed call first)."""
    model.predict_proba(test)
    best = float("inf")
    for _ in range(repeats):
        c0 = time.process_time()
        model.predict_proba(test)
        best = min(best, time.process_time() - c0)
    return best


def training_sizes(slug: str, sizes: list[float], repeats: int) -> None:
    from halves import discretised_halves
    from workbench.learners.ande import AnDE

    halves = discretised_halves(slug)
    if halves is None:
        print(f"{slug}: not found along the search path (set WORKBENCH_DATA): skipped")
        return
    train, test = halves
    reps = max(1, 200_000 // train.n_instances)  # a chunk of about 200 k rows
    chunk = train.take(np.tile(np.arange(train.n_instances), reps))
    first = {}
    for size in sizes:
        target = int(round(size * 1e6))
        model = AnDE(n=2)
        done = 0
        c0 = time.process_time()
        while done < target:
            part = chunk if target - done >= chunk.n_instances else \
                chunk.take(np.arange(target - done))
            model.partial_fit(part)
            done += part.n_instances
        train_cpu = time.process_time() - c0
        for n in (1, 2):
            learner = model if n == 2 else model.derive(n=1)
            rate = test.n_instances / classify_cpu(learner, test, repeats)
            first.setdefault(n, rate)
            spent = f"{train_cpu:9.1f}" if n == 2 else f"{'(shared)':>9}"
            print(f"{slug:<10} A{n}DE {size:6.1f} M {rate:12,.0f} rows/s {rate / first[n]:7.2f}"
                  f" {spent}", flush=True)


def attribute_counts(ds: list[int], repeats: int) -> None:
    from workbench.data.dataset import Attribute, Dataset
    from workbench.learners.ande import AnDE

    first = None
    for d in ds:
        rng = np.random.default_rng(d)
        n_tr, n_te, K = 5000, 2000, 2
        y = rng.integers(0, K, n_tr + n_te)
        X = rng.integers(0, 3, (n_tr + n_te, d)).astype(float)
        X[:, : d // 4] = np.where(rng.random((n_tr + n_te, d // 4)) < 0.4, y[:, None],
                                  X[:, : d // 4])
        atts = tuple(Attribute(f"a{i}", ("x", "y", "z")) for i in range(d))
        data = Dataset(f"synthetic-{d}", atts, Attribute("c", ("p", "q")), X, y)
        train, test = data.take(np.arange(n_tr)), data.take(np.arange(n_tr, n_tr + n_te))
        model = AnDE(n=2).fit(train)
        cpu = classify_cpu(model, test, repeats)
        ns = cpu / (n_te * comb(d, 2) * (d - 2) * K) * 1e9
        first = first or ns
        print(f"d = {d:4d}  A2DE classify {cpu:8.3f} s  {ns:6.2f} ns per row·pair·child·class"
              f"  {ns / first:5.2f} × d = {ds[0]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[0.1, 1, 3, 10])
    ap.add_argument("--datasets", nargs="+", default=["connect-4", "adult"])
    ap.add_argument("--attributes", nargs="+", type=int, default=[20, 60, 100])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    from bench_learners import warm_up

    warm_up()
    print(f"{'data set':<10} {'learner'} {'training':>8} {'classify rate':>19} "
          f"{'÷ first':>7} {'train CPU s':>9}")
    for slug in args.datasets:
        training_sizes(slug, args.sizes, args.repeats)
    attribute_counts(args.attributes, args.repeats)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
