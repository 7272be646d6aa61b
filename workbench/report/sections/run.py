"""The Run section: what was run, the notes collected while preparing, and a slot for the
agreement headline (filled by the agreement section)."""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from workbench.report.context import ReportContext
from workbench.report.document import Document
from workbench.report.options import ReportOptions

HEADLINE = "headline"


def render(ctx: ReportContext, doc: Document, timestamp: str, mark: str) -> None:
    doc.add(f"# Report: {ctx.opts.name}", f"_Generated: {timestamp}_ {mark}")
    doc.add("## Run", run_lines(ctx.opts, ctx.data, ctx.colls, ctx.metrics))
    doc.slot(HEADLINE)


def run_lines(opts: ReportOptions, data: pd.DataFrame, colls: Mapping[str, list[str]],
              metrics: list[str]) -> str:
    lines = [
        f"- Learners (config order): {', '.join(opts.learners)}",
        f"- Baseline for the figures: {opts.baseline}",
        f"- Data sets with results: {data['dataset'].nunique()}; (data set, learner) "
        f"pairs: {len(data)}",
        "- Collections: " + "; ".join(f"{c} = {len(m)}" for c, m in colls.items()),
        "- Size groups: the paper's (catalog) group per data set, else by instances: large "
        "> 10,000, medium 1,000 < n ≤ 10,000, small n ≤ 1,000",
        f"- Metrics: {', '.join(metrics)}",
    ]
    lines += [f"- Note: {note}" for note in opts.notes]
    incomplete = []
    per_learner = data.groupby("learner")["dataset"].nunique()
    n_all = data["dataset"].nunique()
    for name in opts.learners:
        if per_learner.get(name, 0) < n_all:
            incomplete.append(f"{name} ({per_learner.get(name, 0)}/{n_all})")
    if incomplete:
        lines.append("- Learners without results on every data set (pairs are compared on "
                     "the data sets both have): " + ", ".join(incomplete))
    return "\n".join(lines)
