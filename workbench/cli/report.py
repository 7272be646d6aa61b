"""`python -m workbench report RUN_DIR`: tables, figures and paper agreement of a run.

Reads only the stored results (`store.load_summary`) and the run's resolved config.yaml;
never re-trains. Writes RUN_DIR/report/ (or --out); published results (a ``PUBLISHED``
file, e.g. ``experiments/pakdd13/reproduction``) are never overwritten: their report is
re-rendered into --out.
"""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR",
                   help="run directory written by 'run', or a packaged reproduction by name "
                        "(pakdd13, pakdd14, pakdd14-bv, aoard15, ...; with --out)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output folder (default: RUN_DIR/report)")
    p.add_argument("--no-figures", action="store_true",
                   help="tables, CSVs and report.md/.html only (much faster)")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[], dest="set_",
                   help="a report option, as under a config's report: (value read as YAML; "
                        "repeatable), e.g. --set figure_width=lncs --set alpha=0.01 "
                        "--set bayesian.rope=0.01")
    p.add_argument("--paper-map", metavar="FILE",
                   help="compare with the published cells through this metric map instead "
                        "of the config's report.paper_agreement (e.g. a learner variant)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workbench import log
    from workbench.errors import WorkbenchError
    from workbench.experiment.rundir import PUBLISHED, is_published, writable_path
    from workbench.report.render import render_report
    from workbench.resources import run_dir_path

    run_dir = run_dir_path(args.run_dir)
    target = Path(args.out) if args.out else run_dir / "report"
    if is_published(target):
        raise WorkbenchError(
            f"{target} is inside published results (a {PUBLISHED} file), which are never "
            "overwritten; re-render them elsewhere with --out DIR")
    writable_path(target, "--out" if args.out else "report", "choose a folder with --out DIR")
    config = None
    if args.paper_map or args.set_:
        from workbench.report.options import read_config, with_overrides

        config = read_config(run_dir)
        if args.paper_map:
            config["report"] = {**(config.get("report") or {}),
                                "paper_agreement": str(Path(args.paper_map).resolve())}
        config = with_overrides(config, args.set_)
    out = render_report(run_dir, args.out, figures=not args.no_figures, config=config)
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        log.note(f"wrote {path}", log.VERBOSE)
    print(f"report written to {out / 'report.md'} and {out / 'report.html'}")
    return 0
