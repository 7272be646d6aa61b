"""What adding one learner to PAKDD 2013 costs with ``baselines: [pakdd13]``.

    WORKBENCH_DATA=../shared/datasets/fetched python benchmarks/bench_baselines.py \
        [--learner A1DE --set m=0.5] [--jobs 2] [--out DIR]

Writes a copy of ``configs/pakdd13.yaml`` with one more learner column and
``baselines: [pakdd13]`` (the committed reproduction) into a temporary folder (or --out),
runs it with ``python -m workbench run`` and prints:

- the pairs taken from the reproduction and the folds computed (from the run's metadata);
- the fold CPU of the new run — train + classify CPU seconds summed over every pair it
  computed, the measure the committed reproduction records (5,060 s for the whole config) —
  against the fold CPU of the whole config: the committed figure and, where the reproduction
  was recomputed on this machine, that one (pass it as --full-cpu);
- the whole command's wall and CPU time (process start, data loading, compilation and the
  report included), which the fold CPU does not count.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--learner", default="A1DE")
    ap.add_argument("--set", dest="params", action="append", default=["m=0.5"],
                    metavar="KEY=VALUE")
    ap.add_argument("--name", default=None)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default=None, help="run folder (default: a temporary one)")
    ap.add_argument("--full-cpu", type=float, default=None,
                    help="fold CPU of the whole config measured on this machine")
    args = ap.parse_args()

    from workbench import store, yamlnum

    params = yamlnum.assignments([p for p in args.params if p])
    name = args.name or args.learner + "".join(f"-{k}{v}" for k, v in params.items())
    config = yaml.safe_load((REPO / "configs" / "pakdd13.yaml").read_text())
    config["learners"][name] = {"learner": args.learner, **params}
    config["baselines"] = ["pakdd13"]
    config["name"] = "pakdd13-plus-one"
    folder = Path(args.out or tempfile.mkdtemp(prefix="bench-baselines-"))
    folder.mkdir(parents=True, exist_ok=True)
    config["output"] = str(folder / "run")
    path = folder / "pakdd13-plus-one.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "workbench", "-q", "run", str(path),
                           "--jobs", str(args.jobs)], env=os.environ.copy())
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        print(f"the run failed (exit {proc.returncode})", file=sys.stderr)
        return proc.returncode
    run_dir = folder / "run"
    meta = store.read_metadata(run_dir)
    last = meta["invocations"][-1]
    summary = store.load_summary(run_dir)
    own = summary[summary["learner"] == name]
    fold_cpu = float((own["train_cpu_seconds"] + own["test_cpu_seconds"]).sum())
    committed = store.load_summary(REPO / "experiments" / "pakdd13" / "reproduction")
    full = float((committed["train_cpu_seconds"] + committed["test_cpu_seconds"]).sum())
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    print(f"new learner {name} on {own['dataset'].nunique()} data set(s); "
          f"{last['pairs_from_baselines']} pair(s) taken from pakdd13, "
          f"{last['folds_run']} fold(s) computed")
    print(f"fold CPU of this run: {fold_cpu:.1f} s; the whole config: {full:.1f} s committed "
          f"(ratio {fold_cpu / full:.4f})"
          + (f", {args.full_cpu:.1f} s on this machine (ratio "
             f"{fold_cpu / args.full_cpu:.4f})" if args.full_cpu else ""))
    print(f"whole command: {wall:.1f} s wall, {cpu:.1f} s CPU (all processes: start-up, data, "
          f"compilation, report)")
    print(f"report: {run_dir / 'report' / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
