"""`python -m workbench status RUN_DIR` — done / partial / missing (data set, learner) pairs."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", help="a run directory written by `python -m workbench run`")
    p.add_argument("--all", action="store_true",
                   help="list every pair (default: only pairs that are not done)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workbench.errors import WorkbenchError
    from workbench.experiment import store

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise WorkbenchError(f"{run_dir}: no such run directory")
    meta = store.read_metadata(run_dir)
    if not meta and not store.looks_like_run_dir(run_dir):
        raise WorkbenchError(f"{run_dir}: not a run directory (no {store.METADATA_JSON})")
    statuses = store.pair_statuses(run_dir)
    plan = meta.get("plan") or {}
    expected = plan.get("folds_per_pair")
    done = [s for s in statuses if s.complete]
    partial = [s for s in statuses if not s.complete and s.folds_done]
    todo = [s for s in statuses if not s.complete and not s.folds_done]
    folds_done = sum(s.folds_done for s in statuses)
    folds_total = expected * sum(1 for s in statuses if s.planned) if expected else None

    print(f"run directory: {run_dir}")
    if meta:
        print(f"config: {meta.get('name', '?')} (hash {str(meta.get('config_hash', '?'))[:12]})"
              f", {plan.get('rounds', '?')} rounds × {plan.get('folds', '?')} folds")
        last = (meta.get("invocations") or [{}])[-1]
        if last:
            print(f"last invocation: {last.get('status', '?')}, started {last.get('started')}"
                  f", finished {last.get('finished', '-')}")
    print(f"pairs: {len(done)} done, {len(partial)} partial, {len(todo)} missing "
          f"of {len(statuses)}")
    if folds_total:
        print(f"folds stored: {folds_done} of {folds_total}")
    missing_sets = plan.get("missing_datasets") or []
    if missing_sets:
        print(f"data sets not found when planned ({len(missing_sets)}): {', '.join(missing_sets)}")
    shown = statuses if args.all else partial + todo
    if shown:
        width_d = max([len("dataset")] + [len(s.dataset) for s in shown])
        width_l = max([len("learner")] + [len(s.learner) for s in shown])
        print()
        print(f"{'dataset':<{width_d}}  {'learner':<{width_l}}  state    folds")
        for s in shown:
            folds = f"{s.folds_done}/{s.folds_expected}" if s.folds_expected else str(s.folds_done)
            print(f"{s.dataset:<{width_d}}  {s.learner:<{width_l}}  {s.state:<7}  {folds}")
    return 0
