"""Appendices: every table metric per data set, and what learners report but the tables
do not rank (selection, training, memory: `metrics.APPENDICES`)."""

from __future__ import annotations

from workbench.evaluation.metrics import APPENDICES, metric_names
from workbench.report import tables as tb
from workbench.report._io import write_csv, write_text
from workbench.report.context import ReportContext
from workbench.report.document import Document


def render(ctx: ReportContext, doc: Document) -> None:
    rep, out, data, learners, groups = doc, ctx.out, ctx.data, ctx.learners, ctx.groups
    metrics, figures = ctx.metrics, ctx.figures
    if figures:
        from workbench.report import figures as fg
    per = tb.per_dataset_tidy(data, learners, groups, metrics)
    write_csv(out / "per_dataset_metrics.csv", per)
    rep.add("## Appendix: metrics per data set",
            "Mean over folds ± standard deviation over folds (where stored); times are total "
            "CPU seconds over all folds. Also in `per_dataset_metrics.csv`.")
    for m in metrics:
        md = tb.per_dataset_markdown(per, m, learners)
        write_text(out / "tables" / f"per_dataset_{m}.md", md)
        rep.add(md)

    # ---- what the learners report but the tables do not rank (table=False, mean over folds)
    for key, (heading, stem, what) in APPENDICES.items():
        chosen = [m for m in metric_names(aggregate="mean", table=False, appendix=key)
                  if m in data.columns and data[m].notna().any()]
        if not chosen:
            continue
        kept = tb.per_dataset_tidy(data, learners, groups, chosen)
        kept = kept[kept["mean"].notna()]
        write_csv(out / "tables" / f"{stem}.csv", kept)
        rep.add(f"## Appendix: {heading}",
                f"Mean over folds ± standard deviation over folds of {what}. Also in "
                f"`tables/{stem}.csv`.")
        for m in chosen:
            rep.add(tb.per_dataset_markdown(kept, m, [l for l in learners
                                                      if l in set(kept["learner"])]))
        if key == "memory" and "memory_saved" in chosen and figures:
            fig = fg.memory_saved_figure(data, learners)
            rep.place(fig, "memory_saved",
                      "Share of the naive layout's cells (every pair of attribute values, "
                      "same-attribute ones included) that the compact layout saves, per data "
                      "set and learner (Salem et al., Fig. 4a).")
