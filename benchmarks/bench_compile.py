"""First-run cost: how long each learner family takes to compile its numba kernels on a
machine that has never run the workbench (an empty kernel cache), and to load them once
they are cached.

Usage: ``python benchmarks/bench_compile.py [--family NAME ...] [--datasets iris,labor]``

Each family runs in a fresh Python process whose kernel cache is an empty temporary
directory (``XDG_CACHE_HOME``; ``NUMBA_CACHE_DIR`` unset): one 2-fold CV fold of each of
its learners on each data set (a binary and a multi-class one, so both class-count paths
are reached), through `evaluation.pipeline.run_fold`. Then the same again in a second
process with that cache: the warm load. Printed per family: kernel specialisations
compiled, CPU seconds inside numba's compiler lock (compiling, or loading from the cache:
`workbench.jit.compile_clock`), and the whole process's CPU seconds. Loading the data
files (their own gather kernels) is counted apart, as ``(loading)``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

FAMILIES: dict[str, list[str]] = {
    "NB": ["NB"],
    "AnDE n=1": ["A1DE", "A1DE-SW"],
    "AnDE n=2": ["A2DE", "A2DE-SW"],
    "KDB/SKDB/TAN": ["KDB1", "KDB5", "SKDB", "TAN"],
    "ASAODE/BSEAODE": ["ASAODE", "BSEAODE"],
    "AnJE/WANBIA": ["A2JE", "WANBIA-C", "WANBIA"],
    "RF": ["RF10"],
}

CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from workbench.jit import compile_clock
    from workbench.data.catalog import load_dataset
    from workbench.evaluation.pipeline import run_fold
    clock = compile_clock()
    learners, datasets = sys.argv[1].split(","), sys.argv[2].split(",")
    t0 = clock.read()
    data = [load_dataset(d).without_missing_class() for d in datasets]
    t1 = clock.read()
    for ds in data:
        idx = np.random.default_rng(0).permutation(ds.n_instances)
        half = ds.n_instances // 2
        for name in learners:
            run_fold(ds, name, {}, np.sort(idx[:half]), np.sort(idx[half:]))
    t2 = clock.read()
    print(json.dumps({"load": [(t1 - t0).compiled, (t1 - t0).cpu_seconds],
                      "folds": [(t2 - t1).compiled, (t2 - t1).cpu_seconds],
                      "process_cpu": time.process_time()}))
""")


def _child(learners: list[str], datasets: str, cache: str) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    env.pop("NUMBA_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", CHILD, ",".join(learners), datasets],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", action="append", choices=list(FAMILIES))
    ap.add_argument("--datasets", default="labor,iris",
                    help="comma-separated data sets (default: labor (2 classes), iris (3))")
    args = ap.parse_args()
    print(f"{'family':16s} {'learners':28s} {'compiled':>8s} {'cold CPU s':>10s} "
          f"{'warm load s':>11s} {'cold process':>12s} {'(loading)':>9s}")
    for family in args.family or list(FAMILIES):
        learners = FAMILIES[family]
        with tempfile.TemporaryDirectory() as cache:
            cold = _child(learners, args.datasets, cache)
            warm = _child(learners, args.datasets, cache)
        print(f"{family:16s} {','.join(learners):28s} {cold['folds'][0]:8d} "
              f"{cold['folds'][1]:10.2f} {warm['folds'][1]:11.2f} "
              f"{cold['process_cpu']:12.2f} {cold['load'][1]:9.2f}", flush=True)


if __name__ == "__main__":
    main()
