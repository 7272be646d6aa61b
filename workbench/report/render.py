"""Render a run directory's report from stored results only (never re-trains).

`render_report(run_dir)` reads ``store.load_summary(run_dir)`` (one row per complete
(data set, learner)) and the resolved ``RUN_DIR/config.yaml`` (learner order, baseline,
``report`` options; see `workbench.report.options`), and writes ``RUN_DIR/report/``::

    report.md, report.html         the report (HTML self-contained: figures inline)
    per_dataset_metrics.csv        tidy means ± std over folds per (data set, learner, metric)
    paper_agreement.csv            one row per published cell (when the paper's learners ran)
    paper_agreement_all.csv        … for every metric mapping (e.g. both RMSEs)
    tables/wdl.csv                 tidy W/D/L: metric, collection, row, col, w, d, l, p, sig
    tables/wdl_<metric>.md|.tex    the paper-style lower-triangle tables per collection
    tables/wilcoxon.csv, ranks.csv, friedman.csv, per_dataset_<metric>.md,
    tables/paper_agreement_totals.csv
    figures/*.png|.pdf             Figs. 1-4, CD diagrams, scatter plots

Every file is written atomically; all output is byte-for-byte reproducible except the one
line of report.md / report.html marked ``<!-- timestamp -->`` (set ``SOURCE_DATE_EPOCH`` to
fix it too).
"""

from __future__ import annotations

import contextlib
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.report._io import write_text
from workbench.report.context import prepare
from workbench.report.document import Document
from workbench.report.html import markdown_to_html
from workbench.report.options import read_config
from workbench.report.sections import (agreement, appendix, bayesian, calibration,
                                       comparisons, curves, figures as figure_section, ranks,
                                       run, scatter, sweeps, tuning, wdl)

REPORT_DIR = "report"
TIMESTAMP_MARK = "<!-- timestamp: the only line that differs between renders -->"

SECTIONS = (wdl, figure_section, ranks, bayesian, comparisons, scatter, curves, sweeps,
            tuning, agreement, appendix, calibration)
"""After the Run section, in report order; each module's ``render(ctx, doc)``."""

PLUGIN_SECTIONS: dict[str, Callable[[Any, Any], None]] = {}
"""Sections plugins registered (`register_section`), rendered after the built-in ones in
the order registered."""


def register_section(name: str, render: Callable[[Any, Any], None]) -> Callable:
    """Add a report section: ``render(ctx, doc)`` gets the `context.ReportContext` (the
    run's summary as ``ctx.data``, its learners, collections, options, output folder) and
    the `document.Document` to ``add`` Markdown to and ``place`` figures in, as the
    built-in sections do. Registering a name again replaces that section."""
    if not isinstance(name, str) or not name.strip() or not callable(render):
        raise WorkbenchError("register_section: expected a name and a render(ctx, doc) "
                             "function")
    PLUGIN_SECTIONS[name] = render
    return render


def _timestamp() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.fromtimestamp(int(epoch), tz=timezone.utc) if epoch and epoch.isdigit()
            else datetime.now(timezone.utc))
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def load_run_plugins(run_dir: Path, config: Mapping[str, Any]) -> None:
    """Import the plugins the run's config lists (its metrics, sections and learners: a
    report of a run must know what the run knew); paths are relative to the run."""
    from workbench.plugins import load_plugins

    specs = [str(p) for p in (config.get("plugins") or [])]
    if specs:
        load_plugins(specs, base_dir=run_dir)


def render_report(
    run_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    summary: pd.DataFrame | None = None,
    config: Mapping[str, Any] | None = None,
    figures: bool = True,
    fold_metrics: pd.DataFrame | None = None,
) -> Path:
    """Write the report of ``run_dir`` into ``out_dir`` (default ``RUN_DIR/report``).

    Reads only ``store.load_summary(run_dir)``, ``RUN_DIR/config.yaml`` and, for
    ``report.wdl: wilcoxon-folds``, ``store.load_fold_metrics(run_dir)`` (``summary`` /
    ``config`` / ``fold_metrics`` may be passed instead, e.g. by the runner or tests).
    ``figures=False`` skips the (slow) figures: tables, CSVs and report.md/.html only.
    The figure width of ``report.figure_width`` holds only while rendering. Returns the
    folder.
    """
    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir / REPORT_DIR
    if config is None:
        config = read_config(run_dir)
    load_run_plugins(run_dir, config)
    ctx = prepare(run_dir, out, summary=summary, config=config, figures=figures,
                  fold_metrics=fold_metrics)
    with contextlib.ExitStack() as stack:
        if figures:
            from workbench.report import figures as fg  # matplotlib only when drawing

            stack.enter_context(fg.paper_width(ctx.opts.figure_width))
        doc = Document(out)
        run.render(ctx, doc, _timestamp(), TIMESTAMP_MARK)
        for section in SECTIONS:
            section.render(ctx, doc)
        for name, render in PLUGIN_SECTIONS.items():
            try:
                render(ctx, doc)
            except WorkbenchError:
                raise
            except Exception as exc:  # noqa: BLE001 - a plugin's bug, named
                raise WorkbenchError(f"report section '{name}' (a plugin's) failed: "
                                     f"{type(exc).__name__}: {exc}") from None
    text = doc.text()
    write_text(out / "report.md", text)
    write_text(out / "report.html", markdown_to_html(text, f"Report: {ctx.opts.name}", out))
    return out
