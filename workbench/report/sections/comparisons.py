"""The configured time and rank figures (report.time_figures, report.rank_figure: JMLR
2016's Figs. 3, 4, 9 and 10)."""

from __future__ import annotations

import pandas as pd

from workbench.evaluation.metrics import lower_is_better
from workbench.report._io import write_csv
from workbench.report.context import ReportContext
from workbench.report.document import Document
from workbench.report.sections.figures import paper_figure_labels
from workbench.report.sections.wdl import direction_note
from workbench.stats.ranks import rank_matrix
from workbench.stats.wdl import metric_matrix


def render(ctx: ReportContext, doc: Document) -> None:
    """The configured time and rank figures (report.time_figures, report.rank_figure:
    JMLR 2016's Figs. 3, 4, 9 and 10)."""
    rep, out, data, opts = doc, ctx.out, ctx.data, ctx.opts
    if not ctx.figures or not (opts.time_figures or opts.rank_figure):
        return
    from workbench.report import figures as fg

    paper = paper_figure_labels(opts)

    def cite(stem: str) -> str:
        return f" (cf. the paper's {paper[stem]})" if stem in paper else ""

    rep.add("## Time and rank comparisons")
    tf = opts.time_figures or {}
    if tf.get("pairs"):
        fig = fg.time_pairs_figure(data, tf["pairs"], "Training and classification time, "
                                   "summed over data sets" + cite("time_pairs"))
        rep.place(fig, "time_pairs",
                  "CPU seconds of training and of classification (totals over folds), summed "
                  "over the data sets both learners of a pair have; the pair's bars side by "
                  "side (report.time_figures.pairs).")
    if tf.get("reference") and tf.get("learners"):
        ref = tf["reference"]
        fig = fg.time_per_dataset_figure(data, ref, tf["learners"], f"Time relative to {ref} "
                                         "per data set" + cite("time_per_dataset"))
        rep.place(fig, "time_per_dataset",
                  f"Training and classification CPU seconds of each learner divided by "
                  f"{ref}'s on the same data set (log axis; 1 = {ref}), data sets in "
                  f"increasing {ref} time.")
    if tf.get("bars"):
        fig = fg.time_bars_figure(data, tf["bars"], "Training and classification time per "
                                  "data set" + cite("time_bars"))
        write_csv(out / "tables" / "time_bars.csv", fg.mean_fold_times(data, tf["bars"]))
        rep.place(fig, "time_bars",
                  "Mean CPU seconds per fold of training and of classification (log axis) "
                  "per data set, data sets in increasing size; values in "
                  "`tables/time_bars.csv` (report.time_figures.bars).")
    rf = opts.rank_figure or {}
    if rf.get("learners"):
        metrics = rf.get("metrics") or ["rmse_true_class", "zero_one_loss"]
        ranks = {m: rank_matrix(metric_matrix(data, m, rf["learners"]),
                                 lower_is_better=lower_is_better(m))
                 for m in metrics if m in data.columns}
        fig = fg.rank_figure(ranks, "Average ranks" + cite("rank_figure"))
        rows = [[m, name, float(r[name].mean()), float(r[name].std(ddof=0)), r.shape[0]]
                for m, r in ranks.items() for name in r.columns]
        write_csv(out / "tables" / "rank_figure.csv", pd.DataFrame(
            rows, columns=["metric", "learner", "mean_rank", "std_rank", "n_datasets"]))
        rep.place(fig, "rank_figure",
                  "Average rank over the data sets on which every listed learner has a value "
                  "(1 = lowest value, ties share the average rank), with one standard "
                  "deviation of the per-data-set ranks; values in `tables/rank_figure.csv` "
                  "(report.rank_figure)." + direction_note(list(ranks)))
