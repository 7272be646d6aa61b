"""`python -m workbench run CONFIG` — run or resume an experiment, then render its report."""

from __future__ import annotations

import argparse

from workbench.cli import usable_cores


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="experiment config (YAML), or a built-in config by name "
                                   "(pakdd13, smoke, ...: python -m workbench run smoke)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="parallel worker processes (default: one per usable core; the "
                        "results are the same whatever the number)")
    p.add_argument("--datasets", type=_csv_list, metavar="A,B",
                   help="only these of the config's data sets (same config hash)")
    p.add_argument("--learners", type=_csv_list, metavar="X,Y",
                   help="only these of the config's learners (same config hash)")
    p.add_argument("--rounds", type=int, metavar="R",
                   help="override protocol.rounds (changes the config hash)")
    p.add_argument("--output", metavar="DIR", help="run directory (default: the config's output)")
    p.add_argument("--fresh", action="store_true",
                   help="wipe the run directory's stored results and start again (never "
                        "a directory that is not a run directory, nor published results)")
    p.add_argument("--force", action="store_true",
                   help="reuse results stored under a different config hash, or write into "
                        "a non-empty directory that is not a run directory (use with care)")
    p.add_argument("--backend", choices=("loky", "dask"), default="loky",
                   help="loky (local processes, default) or dask (LocalCluster or --scheduler)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDR",
                       help="Dask scheduler address, e.g. tcp://host:8786 (with --backend "
                            "dask); data files must be at the same absolute path on the "
                            "workers (checked before the run)")
    where.add_argument("--scheduler-file", metavar="FILE",
                       help="Dask scheduler file (dask scheduler --scheduler-file FILE; "
                            "dask-jobqueue/Slurm), with --backend dask")
    p.add_argument("--no-report", action="store_true", help="do not render the report")


def _note_moved_output(config) -> None:
    """A config's ``output:`` is read relative to the config file; earlier versions read it
    relative to the working directory. Say so when an earlier run's folder is found there."""
    from pathlib import Path

    from workbench import log
    from workbench import store

    if config.source is None or config.output_text is None:
        return
    old = Path(config.output_text).expanduser()
    if old.is_absolute() or old.resolve() == Path(config.output).resolve():
        return
    if (old / store.CONFIG_HASH).is_file():
        log.note(f"note: output '{config.output_text}' is read relative to the config file, "
                 f"so this run writes to {config.output}; the run in ./{old} (relative to the "
                 f"working directory, as earlier versions read it) is not touched: resume it "
                 f"with --output {old}")


def run(args: argparse.Namespace) -> int:
    import sys

    from workbench import log
    from workbench.errors import ConfigError, PartialFailure
    from workbench.experiment.config import load_config
    from pathlib import Path

    from workbench.experiment.runner import run_experiment
    from workbench.experiment.workers import SCHEDULER_FILE
    from workbench.resources import config_path

    config = load_config(config_path(args.config))
    if args.rounds is not None:
        config = config.with_rounds(args.rounds)
    if args.output:
        config = config.with_output(args.output)
    else:
        _note_moved_output(config)
    if args.jobs is not None and args.jobs < 1:
        raise ConfigError(f"--jobs: expected a positive integer, got {args.jobs}")
    result = run_experiment(
        config,
        jobs=args.jobs if args.jobs is not None else usable_cores(),
        backend=args.backend,
        scheduler=(args.scheduler if not args.scheduler_file else
                   SCHEDULER_FILE + str(Path(args.scheduler_file).resolve())),
        datasets=args.datasets,
        learners=args.learners,
        fresh=args.fresh,
        force=args.force,
        stream=sys.stderr,
        verbosity=log.level(),
    )
    if not args.no_report and (result.pairs_completed or result.pairs_already_complete):
        from workbench.report.render import render_report  # pandas, matplotlib: only here

        render_report(result.run_dir)
        log.note(f"report: rendered in {result.run_dir}")
    if result.failures:
        raise PartialFailure(
            f"{len(result.failures)} (data set, learner) pair(s) failed; the rest are stored "
            f"in {result.run_dir} (first: {result.failures[0]})"
        )
    return 0
