"""The paper-style bar figures: each learner's values normalised to the baseline per
collection (Figs. 1-4 of PAKDD 2013, one per further metric)."""

from __future__ import annotations

from workbench.report import agreement as agr
from workbench.report._io import write_csv
from workbench.report.context import ReportContext
from workbench.report.document import Document
from workbench.report.options import ReportOptions
from workbench.report.sections.wdl import direction_note


def render(ctx: ReportContext, doc: Document) -> None:
    baseline, data = ctx.baseline, ctx.data
    doc.add("## Figures", "" if ctx.figures else "_Figures were not rendered (--no-figures)._",
            f"Bars are normalised to the baseline **{baseline}**: the geometric mean over the "
            f"collection's data sets of value(learner) / value({baseline}) on each data set "
            "(1 = same as the baseline, lower is better). A data set where both values are 0 "
            "counts as ratio 1; one where exactly one of the two is 0 (ratio 0 or infinite) or "
            "a value is missing is left out of that learner's mean and the caption says so."
            + direction_note(ctx.metrics))
    if baseline is None or not ctx.figures:
        return
    from workbench.report import figures as fg

    paper_figures = paper_figure_labels(ctx.opts)
    for stem, (title, ms) in fg.bar_figures(ctx.metrics).items():
        if stem in paper_figures:  # the configured paper's number, never another's
            title = f"{title} (cf. the paper's {paper_figures[stem]})"
        # a metric the baseline does not report (e.g. iterations of NB) has no ratios
        ms = [m for m in ms if m in ctx.metrics and data.loc[data["learner"] == baseline, m]
              .notna().any()]
        if not ms:
            continue
        fig, caption = fg.normalised_bar_figure(data, ms, ctx.learners, baseline, ctx.colls,
                                                title)
        doc.place(fig, stem, caption)
    if ctx.opts.log_time_figure and {"train_cpu_seconds", "test_cpu_seconds"} <= \
            set(data.columns):
        colls = {"all": ctx.colls.get("all", []),
                 **{c: ctx.colls[c] for c in ctx.opts.collections if c in ctx.colls}}
        learners = [n for n in ctx.learners if n in set(data["learner"])]
        write_csv(ctx.out / "tables" / "log_time.csv", fg.log_mean_times(data, learners, colls))
        fig, caption = fg.log_mean_time_figure(data, learners, colls)
        doc.place(fig, "fig_log_time", caption + " Values: `tables/log_time.csv`.")


def paper_figure_labels(opts: ReportOptions) -> dict[str, str]:
    """The configured paper's figure labels by report figure (its metric map's
    ``figures``), so that a title cites that paper's figure numbers or none."""
    from pathlib import Path

    if not isinstance(opts.paper_agreement, Path):
        return {}
    return agr.load_metric_map(opts.paper_agreement).figures
