"""The AOARD 2015 learners' speed claims, measured.

1. One SGD epoch of WANBIA-C against one A1DE counting pass over the same data (synthetic,
   ``--rows`` × ``--attributes``, seeded): the report's single-pass learner should cost about
   as much as counting. Printed: seconds of each (best of ``--repeat``), rows/s and the ratio
   epoch / counting (the bar: ≤ 2). The epoch is the compiled update loop alone; building the
   join index (one pass that also counts the estimates) is printed separately.
2. With ``--run DIR`` (a finished ``configs/aoard15.yaml`` run): on how many data sets
   WANBIA-C needed fewer L-BFGS iterations (mean over folds; the report's central claim)
   than logistic regression started at 0 (LR) and at the NB estimates (LR-initNB), and the
   median ratios.

Usage: ``python benchmarks/bench_anje.py [--rows 1000000] [--attributes 50] [--run DIR]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from workbench.learners.anje.objective import Problem
from workbench.learners.anje.optimize import stochastic
from workbench.learners.counting import AnDECounts
from workbench.learners.joins import JoinIndex


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def synthetic(rows: int, attributes: int, values: int, seed: int):
    """Codes (rows, attributes) and a class that depends on the first attributes."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, values, size=(rows, attributes), dtype=np.int32)
    score = codes[:, :5].sum(axis=1) + rng.normal(0, 2, rows)
    y = (score > np.median(score)).astype(np.int64)
    return codes, y


def epoch_vs_counting(rows: int, attributes: int, values: int, repeat: int) -> None:
    codes, y = synthetic(rows, attributes, values, seed=1)
    cards = np.full(attributes, values)
    print(f"synthetic data: {rows:,} rows × {attributes} attributes ({values} values), 2 classes")

    def count():
        AnDECounts(cards, 2, max_level=2, parent_levels=1, rows_hint=rows).partial_fit(codes, y)

    count()  # compile / load kernels
    t_count = _best(count, repeat)
    index = JoinIndex(cards, 2, 1)
    t0 = time.perf_counter()
    slots = index.fit(codes.astype(np.int64), y)
    t_index = time.perf_counter() - t0
    problem = Problem(slots, y, index.log_prior(), index.log_conditional(),
                      index.joins[index.slot_join(), 0], attributes, "weighted", "cll")
    theta0 = np.zeros(problem.size)
    stochastic(Problem(slots[:100], y[:100], problem.log_prior, problem.log_cond,
                       problem.slot_attribute, attributes), theta0, False, 0.01, 1, None)

    def epoch():
        stochastic(problem, theta0, False, 0.01, 1, None)

    t_epoch = _best(epoch, repeat)
    print(f"A1DE counting pass (all attribute pairs × class): {t_count:8.3f} s "
          f"({rows / t_count / 1e6:.2f} M rows/s)")
    print(f"WANBIA-C join index + estimates (one pass):       {t_index:8.3f} s")
    print(f"WANBIA-C one SGD epoch:                           {t_epoch:8.3f} s "
          f"({rows / t_epoch / 1e6:.2f} M rows/s; includes the final objective)")
    print(f"ratio epoch / counting pass: {t_epoch / t_count:.2f}  (bar: ≤ 2)")


def iterations_from_run(run: str) -> None:
    from workbench.store import load_summary
    summary = load_summary(run)
    wide = summary.pivot(index="dataset", columns="learner", values="iterations")
    for other in ("LR", "LR-initNB"):
        if other not in wide.columns:
            continue
        pair = wide[["WANBIA-C", other]].dropna()
        fewer = int((pair["WANBIA-C"] < pair[other]).sum())
        same = int((pair["WANBIA-C"] == pair[other]).sum())
        ratio = (pair["WANBIA-C"] / pair[other]).median()
        print(f"{run}: WANBIA-C needed fewer L-BFGS iterations than {other} on {fewer} of "
              f"{len(pair)} data sets ({100 * fewer / max(len(pair), 1):.0f} %; {same} equal); "
              f"median ratio WANBIA-C / {other} = {ratio:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--attributes", type=int, default=50)
    ap.add_argument("--values", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--run", help="a finished configs/aoard15.yaml run directory")
    args = ap.parse_args()
    epoch_vs_counting(args.rows, args.attributes, args.values, args.repeat)
    if args.run:
        iterations_from_run(args.run)


if __name__ == "__main__":
    main()
