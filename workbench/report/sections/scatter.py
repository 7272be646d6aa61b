"""Per-data-set scatter plots: every learner against the baseline, and the configured pairs
(report.scatter)."""

from __future__ import annotations

from workbench.evaluation.metrics import METRICS, metric_names
from workbench.report import tables as tb
from workbench.report.context import ReportContext
from workbench.report.document import Document


def render(ctx: ReportContext, doc: Document) -> None:
    rep, data, opts, baseline, learners = doc, ctx.data, ctx.opts, ctx.baseline, ctx.learners
    metrics, groups = ctx.metrics, ctx.groups
    if baseline is None or len(learners) < 2 or not ctx.figures:
        return
    from workbench.report import figures as fg

    rep.add("## Per-data-set scatter plots",
            f"Each learner (y) against the baseline {baseline} (x), one point per data "
            "set, coloured by size group; points below the dashed diagonal are data sets "
            "where the learner's value is lower.")
    pairs = [(name, baseline) for name in learners if name != baseline]

    def scatter(m: str, pairs_: list, log: bool, title: str, stem: str, caption: str) -> None:
        fig = fg.scatter_figure(data, m, pairs_, groups, log=log,
                                title=title + (" (log axes)" if log else ""))
        rep.place(fig, stem, caption)

    for m in metric_names(scatter=True):  # every learner vs the baseline
        log = False
        if m not in metrics:
            continue
        scatter(m, pairs, log, f"{tb.TABLE_METRICS[m]} per data set vs {baseline}",
                f"scatter_{m}",
                f"{tb.TABLE_METRICS[m]} of each learner against {baseline}, per data "
                "set" + (" (log axes; zero values not shown)" if log else "") + ".")
    if opts.scatter:
        for m in opts.scatter_metrics:
            log = opts.scatter_log or METRICS[m].log
            if m not in metrics:
                rep.add(f"_No {tb.TABLE_METRICS.get(m, m)} values in this run: the "
                        "configured scatter plot of that metric is not drawn._")
                continue
            names = ", ".join(f"{a} vs {b}" for a, b in opts.scatter)
            scatter(m, opts.scatter, log, f"{tb.TABLE_METRICS[m]}: {names}",
                    f"scatter_pairs_{m}",
                    f"{tb.TABLE_METRICS[m]} per data set for the configured pairs "
                    f"(report.scatter; first learner of a pair on the y axis)"
                    + ("; log axes, zero values not shown" if log else "") + ".")
