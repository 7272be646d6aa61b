"""`python -m workbench status RUN_DIR` — done / partial / missing (data set, learner) pairs."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", help="a run directory written by `python -m workbench run`, or a "
                                   "packaged reproduction by name (pakdd13, ...)")
    p.add_argument("--all", action="store_true",
                   help="list every pair (default: only pairs that are not done)")
    p.add_argument("--verify", action="store_true",
                   help="check every stored predictions file against the checksum its "
                        "summary recorded (exit status 1 when one differs)")
    p.add_argument("--folds-out", metavar="FILE",
                   help="write the folds the run's protocol lays on its data sets (dataset, "
                        "round, index, fold; CSV, or Parquet for .parquet) — what "
                        "`protocol: {splits: FILE}` and other tools read back")


def run(args: argparse.Namespace) -> int:
    from workbench import store
    from workbench.errors import WorkbenchError
    from workbench.experiment import rundir
    from workbench.experiment.provenance import describe
    from workbench.resources import run_dir_path

    run_dir = run_dir_path(args.run_dir)
    meta = store.read_metadata(run_dir)
    if not meta and not store.looks_like_run_dir(run_dir):
        raise WorkbenchError(f"{run_dir}: not a run directory (no {store.METADATA_JSON})")
    if args.folds_out:
        from workbench.experiment.config import load_config
        from workbench.experiment.folds import write_folds

        n = write_folds(load_config(run_dir / "config.yaml"), args.folds_out)
        print(f"wrote {n} fold rows to {args.folds_out}")
        return 0
    statuses = store.pair_statuses(run_dir, verify=args.verify)
    plan = meta.get("plan") or {}
    expected = plan.get("folds_per_pair")
    done = [s for s in statuses if s.complete]
    partial = [s for s in statuses if not s.complete and not s.corrupt and s.folds_done]
    todo = [s for s in statuses if not s.complete and not s.corrupt and not s.folds_done]
    folds_done = sum(s.folds_done for s in statuses)
    folds_total = expected * sum(1 for s in statuses if s.planned) if expected else None

    print(f"run directory: {run_dir}")
    if meta:
        print(f"config: {meta.get('name', '?')} (hash {str(meta.get('config_hash', '?'))[:12]})"
              f", {plan.get('rounds', '?')} rounds × {plan.get('folds', '?')} folds")
        for line in describe(meta):
            print(line)
        last = (meta.get("invocations") or [{}])[-1]
        if last:
            state = last.get("status", "?")
            holder = rundir.lock_holder(run_dir)
            if state == "running" and holder is None:
                state = "interrupted (its process is gone)"
            elif holder is not None:
                state = f"running (process {holder})" if holder > 0 else "running"
            print(f"last invocation: {state}, started {last.get('started')}"
                  f", finished {last.get('finished', '-')}")
    corrupt = [s for s in statuses if s.corrupt]
    print(f"pairs: {len(done)} done, {len(partial)} partial, {len(todo)} missing "
          + (f", {len(corrupt)} corrupt (recomputed by the next run) " if corrupt else "")
          + f"of {len(statuses)}")
    if folds_total:
        print(f"folds stored: {folds_done} of {folds_total}")
    missing_sets = plan.get("missing_datasets") or []
    if missing_sets:
        print(f"data sets not found when planned ({len(missing_sets)}): {', '.join(missing_sets)}")
    for s in corrupt:
        if s.problem:
            print(f"corrupt: {s.dataset} / {s.learner}: {s.problem}")
    if args.verify:
        recorded = sum(1 for s in done if _recorded(run_dir, s))
        print(f"verified: {recorded} pair(s) match the files their summaries recorded, "
              f"{len(corrupt)} do not, {len(done) - recorded} record none (summary-only "
              "or stored before files were recorded)")
    shown = statuses if args.all else corrupt + partial + todo
    rows = _rows(shown, compact=not args.all, n_planned=len(plan.get("learners") or []))
    if rows:
        width_d = max([len("dataset")] + [len(r[0]) for r in rows])
        width_l = max([len("learner")] + [len(r[1]) for r in rows])
        print()
        print(f"{'dataset':<{width_d}}  {'learner':<{width_l}}  state    folds")
        for d, l, state, folds in rows:
            print(f"{d:<{width_d}}  {l:<{width_l}}  {state:<7}  {folds}")
    return 1 if args.verify and corrupt else 0


def _recorded(run_dir, s) -> bool:
    from workbench import store

    try:
        row = store.read_summary(run_dir, s.dataset, s.learner)
    except store.StoreCorrupt:
        return False
    return bool(row and row.get(store.FILES_KEY))


def _rows(shown, compact: bool, n_planned: int) -> list[tuple[str, str, str, str]]:
    """Table rows; with `compact`, a data set with every learner missing is one row."""
    by_dataset: dict[str, list] = {}
    for s in shown:
        by_dataset.setdefault(s.dataset, []).append(s)
    rows = []
    for dataset, items in by_dataset.items():
        n_learners = len({s.learner for s in items})
        if compact and n_learners > 1 and n_learners == n_planned and all(s.state == "missing" for s in items):
            exp = items[0].folds_expected
            total = f"0/{exp * n_learners}" if exp else "0"
            rows.append((dataset, f"(all {n_learners})", "missing", total))
            continue
        for s in items:
            folds = f"{s.folds_done}/{s.folds_expected}" if s.folds_expected else str(s.folds_done)
            rows.append((s.dataset, s.learner, s.state, folds))
    return rows
