"""`python -m workbench warm-up` — compile every learner's kernels ahead (e.g. after
``pip install``), so that the first run spends its time on the work.

    python -m workbench warm-up [--learners NAME[,NAME...]] [--jobs N]
"""

from __future__ import annotations

import argparse
import sys
import time

from workbench.cli import usable_cores


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--learners", default=None, metavar="NAME[,NAME...]",
                   help="learners to compile (default: every built-in learner whose work "
                        "is the workbench's own code, not Weka, VW or scikit-learn)")
    p.add_argument("--jobs", type=int, default=usable_cores(), metavar="N",
                   help="processes compiling at once (default: one per core)")


def run(args: argparse.Namespace) -> int:
    from workbench.errors import ConfigError
    from workbench.evaluation import warmup
    from workbench.jit import kernel_cache_dir
    from workbench.learners import registry

    if args.jobs < 1:
        raise ConfigError(f"--jobs: expected a positive number, got {args.jobs}")
    names = warmup.default_learners() if args.learners is None else \
        [n.strip() for n in args.learners.split(",") if n.strip()]
    for name in names:
        registry.get(name)  # an unknown name: one clear error before any work
    print(f"compiling the kernels of {len(names)} learner(s) into {kernel_cache_dir()} "
          f"({args.jobs} process(es))", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    spent = warmup.compile_in_processes(
        names, args.jobs, lambda text: print(text, file=sys.stderr, flush=True))
    print(f"done: {len(spent)} learner(s), {sum(spent.values()):.0f} s CPU compiling or "
          f"loading, {time.monotonic() - t0:.0f} s in all", file=sys.stderr)
    return 0
