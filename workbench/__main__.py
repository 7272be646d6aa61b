"""`python -m workbench SUBCOMMAND ...` — the argparse front door.

Each subcommand lives in `workbench/cli/<name>.py` with `add_arguments(parser)` and
`run(args) -> int`; heavy imports happen inside `run`, so `--help` stays fast. A
`WorkbenchError` (bad file, config field, learner, parameter) is printed as one line, without
a traceback. Exit status: 0 done; 1 some pairs of a run failed (the others' results are
kept); 2 usage, config or data error (nothing computed); 3 a file could not be written
mid-way (disk full: what was stored before is kept); 130 Ctrl-C; 143 SIGTERM (handled like
Ctrl-C: what is finished is kept).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

from workbench.errors import Terminated, WorkbenchError, WriteFailure
from workbench import log
from workbench.log import NORMAL, QUIET, VERBOSE, set_level

EPILOG = ("exit status: 0 done, 1 some (data set, learner) pairs failed (the rest kept), "
          "2 usage/config/data error before computing, 3 a file could not be written "
          "mid-way (disk full; what was stored is kept), 130 interrupted (Ctrl-C), "
          "143 terminated (SIGTERM)")

SUBCOMMANDS: dict[str, str] = {
    "run": "run an experiment config (resumable, parallel)",
    "status": "show what a run directory has done and what is missing",
    "report": "render tables, figures and paper agreement from a run directory",
    "compare": "W/D/L of a new learner against a stored run's learners, computing only it",
    "cv": "repeated k-fold cross-validation of one learner on one data set",
    "predict": "train one learner on TRAIN and print class distributions for TEST",
    "fit": "train a count-based learner on a data file out of core (chunks)",
    "evaluate": "holdout or prequential evaluation of a learner on a data file, out of core",
    "learners": "list registered learners and their parameters",
    "datasets": "list the paper's data sets and where they are found",
    "fetch": "download catalog data sets from their public sources into the cache",
    "discretize": "fit MDL / equal-frequency discretisation and apply it",
    "warm-up": "compile every learner's kernels ahead (e.g. after pip install)",
}

PLUGIN_COMMANDS = ("learners", "predict", "cv", "fit", "evaluate", "compare")
"""Subcommands that take ``--plugin`` (run/report get plugins from the config)."""

COMPUTING_COMMANDS = ("predict", "cv", "fit", "evaluate", "compare", "discretize",
                      "warm-up")
"""Subcommands that train or classify in their own process: they say when kernels are
being compiled, as `run`'s workers do (`jit.note_compiling`)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m workbench",
        description="Experiment workbench for semi-naive Bayesian classifiers.",
        epilog=EPILOG,
    )
    from workbench import __version__

    parser.add_argument("--version", action="version", version=f"workbench {__version__}")
    _verbosity_flags(parser, default=NORMAL)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in SUBCOMMANDS.items():
        module = importlib.import_module(f"workbench.cli.{name.replace('-', '_')}")
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=EPILOG)
        _verbosity_flags(p, default=argparse.SUPPRESS)
        module.add_arguments(p)
        if name in PLUGIN_COMMANDS:
            p.add_argument("--plugin", action="append", default=[], metavar="MODULE|FILE.py",
                           help="import a plugin that registers learners (repeatable)")
        p.set_defaults(_module=module)
    return parser


def _verbosity_flags(p: argparse.ArgumentParser, default) -> None:
    """-q / -v, accepted before and after the subcommand."""
    p.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=QUIET,
                   default=default, help="only warnings and errors on stderr")
    p.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=VERBOSE,
                   default=default, help="more detail on stderr (per pair, per file)")


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_module", None) is None:
        parser.print_help()
        return 0
    level_before = log.level()  # (restored: an in-process caller's -q does not linger)
    set_level(args.verbosity)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    previous_int = signal.getsignal(signal.SIGINT)
    try:
        if args.command in COMPUTING_COMMANDS and log.level() >= NORMAL:
            from workbench.jit import note_compiling

            note_compiling()
        if getattr(args, "plugin", None):
            from workbench.plugins import load_plugins

            load_plugins(args.plugin)
        return int(args._module.run(args) or 0)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    except (KeyboardInterrupt, SystemError) as exc:
        if isinstance(exc, SystemError):  # a signal that arrived inside a compiled kernel
            if not isinstance(exc.__cause__, KeyboardInterrupt):  # comes back as this
                raise
            exc = exc.__cause__
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # exiting: a further ^C changes nothing
        code = getattr(exc, "exit_code", 130)
        print("terminated" if code == 143 else "interrupted", file=sys.stderr)
        return code
    except BrokenPipeError:
        return 0
    except MemoryError as exc:  # (a cap on memory or address space, or a huge request)
        print(f"error: out of memory{f' ({exc})' if str(exc) else ''}; free memory, raise "
              "the process's limit, or read the data in smaller chunks (out_of_core: "
              "{chunk_rows: N})", file=sys.stderr)
        return 2
    except OSError as exc:  # a file that could not be written or read mid-way
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return WriteFailure.exit_code
    finally:
        set_level(level_before)
        signal.signal(signal.SIGTERM, previous)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)


def cli() -> None:
    """The `workbench` command: `main`, then exit. An interrupted run's process ends at
    once on a further Ctrl-C / SIGTERM while Python shuts down (its exit handlers would
    otherwise print the second KeyboardInterrupt's traceback)."""
    code = main()
    if code in (130, 143):
        def quit_now(signum: int, frame: object) -> None:
            os._exit(code)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, quit_now)
    sys.exit(code)


if __name__ == "__main__":
    cli()
