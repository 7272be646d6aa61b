"""Attribute selection's cost (PAKDD 2014, issue targets): training and classification of
ASAODE against A1DE, and of attribute-selective A2DE (ASA2DE) against A2DE, on the same
data, with `?` as a value (SPEC §5.1) in every learner.

    python benchmarks/bench_selection.py [--datasets adult connect-4 letter] [--repeats 5]
                                         [--n-jobs 2]

Per data set: MDL fitted on all rows, every learner trained and then classifying all rows;
the fastest of `--repeats` runs of each, the four runs taken in turn (numba kernels
compiled or loaded first). Prints the seconds and the ratios selective / plain: the
leave-one-out pass reads every parent set's child factors once per training row and class
(O(N·K·d^(n+1))), where counting adds one to each combination (O(N·d^(n+1))
increments), so the training ratio grows with K.
`--n-jobs` gives the selective learners that many threads for the pass (the same model
bit for bit); the plain learners count on one.
"""

from __future__ import annotations

import argparse
import time

from bench_learners import find_file, warm_up


def paired_min_times(fns: list, repeats: int) -> list[float]:
    """The fastest of `repeats` runs of each function, run in turn (A B C A B C …) so a
    drift in the machine's speed reaches every one alike; the minimum is the run least
    disturbed by other load."""
    best = [float("inf")] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["adult", "connect-4", "letter"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data-dir", action="append", default=[])
    ap.add_argument("--n-jobs", type=int, default=1, help="threads of the selective pass")
    args = ap.parse_args(argv)

    from workbench.data.arff import load_arff
    from workbench.discretize import fit_discretizer
    from workbench.learners.ande import AnDE
    from workbench.learners.registry import create

    warm_up()
    pairs = [("A1DE", lambda: AnDE(n=1, missing="value"), "ASAODE"),
             ("A2DE", lambda: AnDE(n=2, missing="value"), "ASA2DE")]
    print(f"{'dataset':<10} {'rows':>7} {'K':>3} {'d':>3} {'learner':<7} {'train_s':>8} "
          f"{'test_s':>7} {'selective':<9} {'train_s':>8} {'test_s':>7} {'train×':>7} "
          f"{'test×':>6}")
    for slug in args.datasets:
        raw = load_arff(find_file(slug, args.data_dir))
        data = fit_discretizer("mdl", raw).transform(raw)
        for plain, make, selective in pairs:
            fns = []
            for mk in (make, lambda: create(selective, n_jobs=args.n_jobs)):
                model = mk().fit(data)  # compile / load this learner's kernels
                model.predict_proba(data.take(range(min(50, data.n_instances))))
                fns += [lambda mk=mk: mk().fit(data), lambda m=model: m.predict_proba(data)]
            tr, te, str_, ste = paired_min_times(fns, args.repeats)
            print(f"{slug:<10} {data.n_instances:>7} {data.n_classes:>3} "
                  f"{data.n_attributes:>3} {plain:<7} {tr:8.3f} {te:7.3f} {selective:<9} "
                  f"{str_:8.3f} {ste:7.3f} {str_ / tr:7.2f} {ste / te:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
