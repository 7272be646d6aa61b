"""Appendices: every table metric per data set, and what learners report but the tables
do not rank (selection, training, memory: `metrics.APPENDICES`; the layouts' test times)."""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from workbench.evaluation.metrics import APPENDICES, metric_names, per_class_precision_recall
from workbench.report import tables as tb
from workbench.report._io import write_csv, write_text
from workbench.report.context import ReportContext
from workbench.report.document import Document
from workbench.stats.wdl import metric_matrix
from workbench.store import load_pair_arrays


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

    layout_test_times(ctx, doc)
    per_class(ctx, doc)


def per_class(ctx: ReportContext, doc: Document) -> None:
    """Per-class precision and recall of every pair whose summary holds its confusion
    matrix (pooled over the rounds), in ``tables/per_class.csv``."""
    rows = []
    for (dataset, learner), conf in load_pair_arrays(ctx.run_dir, "confusion").items():
        if learner not in ctx.learners:
            continue
        precision, recall = per_class_precision_recall(conf)
        for k in range(conf.shape[0]):
            rows.append([dataset, learner, k, int(conf[k].sum()), precision[k], recall[k]])
    if not rows:
        return
    table = pd.DataFrame(rows, columns=["dataset", "learner", "class", "support",
                                        "precision", "recall"])
    write_csv(ctx.out / "tables" / "per_class.csv", table)
    doc.add("## Appendix: precision and recall per class",
            "Per data set, learner and class (the class's index in the data set's header): "
            "precision (of the rows predicted as the class, the share that are) and recall "
            "(of the rows of the class, the share predicted as it), from the predictions of "
            "every round pooled; support counts the class's rows over the rounds. In "
            "`tables/per_class.csv`.")


def layout_pairs(learners: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(compact, naive) display names of a config's learners that differ only in AnDE's
    ``layout`` (``naive`` against ``compact`` or unset)."""
    if not isinstance(learners, Mapping):  # ([NB, A1DE]: names only, no layouts)
        return []
    specs = {name: dict(spec) for name, spec in learners.items()
             if isinstance(spec, Mapping)}
    pairs = []
    for naive, spec in specs.items():
        if spec.pop("layout", None) != "naive":
            continue
        for name, other in specs.items():
            if name != naive and other.get("layout", "compact") == "compact" and \
                    {k: v for k, v in other.items() if k != "layout"} == spec:
                pairs.append((name, naive))
                break
    return pairs


def layout_test_times(ctx: ReportContext, doc: Document) -> None:
    """Salem et al.'s Fig. 4b: the share of the naive layout's classification CPU time the
    compact layout saves, per data set, for each config pair of the two layouts."""
    pairs = layout_pairs(ctx.cfg.get("learners") or {})
    data = ctx.data
    if not pairs or "test_cpu_seconds" not in data.columns:
        return
    compact = metric_matrix(data, "test_cpu_seconds", [a for a, _ in pairs])
    naive = metric_matrix(data, "test_cpu_seconds", [b for _, b in pairs])
    saved = pd.DataFrame({a: 1.0 - compact[a] / naive[b].where(naive[b] > 0)
                          for a, b in pairs}).dropna(how="all")
    if saved.empty:
        return
    tidy = saved.rename_axis("dataset").reset_index().melt(
        id_vars="dataset", var_name="learner", value_name="test_time_saved").dropna()
    write_csv(ctx.out / "tables" / "layout_test_time.csv", tidy)
    rows = ["| data set | " + " | ".join(saved.columns) + " |",
            "|---|" + "---:|" * saved.shape[1]]
    rows += [f"| {d} | " + " | ".join("" if pd.isna(v) else f"{100 * v:.0f} %" for v in row)
             + " |" for d, row in saved.iterrows()]
    names = ", ".join(f"{a} against {b}" for a, b in pairs)
    doc.add("## Appendix: classification time, compact against naive layout",
            f"Share of the naive count layout's classification CPU time that the compact layout "
            f"saves ({names}; 1 − compact / naive, total CPU seconds over folds, kernel "
            "compilation excluded) — Salem et al.'s Fig. 4b. Also in "
            "`tables/layout_test_time.csv`.", "\n".join(rows))
    if ctx.figures:
        from workbench.report import figures as fg
        fig = fg.share_saved_figure(saved, ["Classification time: share of the naive layout's "
                                            "saved by the compact one", f"({names})"],
                                    "test time saved (%)")
        doc.place(fig, "layout_test_time",
                  "Share of the naive layout's classification CPU time the compact layout "
                  "saves, per data set (Salem et al., Fig. 4b).")
