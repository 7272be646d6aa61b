"""The win/draw/loss tables (paper-style, per metric and collection) and the paragraph
saying how a data set is decided."""

from __future__ import annotations

from typing import Sequence

from workbench.evaluation.metrics import lower_is_better
from workbench.report import tables as tb
from workbench.report._io import write_csv, write_text
from workbench.report.context import ReportContext
from workbench.report.document import Document
from workbench.report.options import ReportOptions


def render(ctx: ReportContext, doc: Document) -> None:
    opts, out = ctx.opts, ctx.out
    fold_names = ctx.fold_names
    tidy = tb.wdl_tidy(ctx.data, ctx.learners, ctx.colls, ctx.metrics, ctx.decimals,
                       opts.alpha, fold_metrics=ctx.folds_used, tails=ctx.tails,
                       outcome=ctx.outcome, correction=opts.correction)
    write_csv(out / "tables" / "wdl.csv", tb.tidy_csv_frame(tidy))
    doc.add("## Win/draw/loss tables", _wdl_intro(opts, ctx.metrics, fold_names))
    for m in ctx.metrics:
        method = opts.wdl if m in fold_names else tb.WDL_SIGN
        args = (tidy, m, ctx.learners, ctx.sizes, opts.alpha, method, opts.wdl_p_values,
                ctx.tails, opts.correction)
        md = tb.metric_markdown(*args)
        write_text(out / "tables" / f"wdl_{m}.md", md)
        write_text(out / "tables" / f"wdl_{m}.tex", tb.metric_latex(*args))
        doc.add(md)


def direction_note(metrics: Sequence[str]) -> str:
    """A sentence naming the metrics of `metrics` where higher is better ('' when none):
    for them a win, rank 1 and 'A better' mean the higher value."""
    higher = [tb.TABLE_METRICS.get(m, m) for m in metrics if not lower_is_better(m)]
    if not higher:
        return ""
    return (f" Higher is better for {', '.join(higher)}: there a win, rank 1 and 'better' "
            "go to the higher value.")


def _wdl_intro(opts: ReportOptions, metrics: list[str], fold_names: set[str]) -> str:
    """The paragraph above the W/D/L tables: how a data set is decided, per metric."""
    note = direction_note(metrics)
    intro = ("Laid out like the paper's Tables 2-5: the cell in row A, column B is A's "
             "wins/draws/losses against B over the data sets of the collection (lower is "
             + ("better for every metric). " if not note else
                f"better, except where said below).{note} Below, 'lower' means 'better'. "))
    by_folds = [m for m in metrics if m in fold_names]
    plain = [m for m in metrics if m not in fold_names]
    if by_folds and opts.wdl == tb.WDL_CORRECTED_T:
        intro += (f"**W/D/L decided per data set by Weka's corrected resampled t-test over "
                  f"folds** (report.wdl = corrected-t) for {', '.join(by_folds)}: a data set "
                  f"is a win for A when the two-sided test over the paired per-fold "
                  f"differences (variance corrected by 1/k + n_test/n_train = 1/k + "
                  f"{opts.test_train_ratio:.4g}, k − 1 degrees of freedom) gives p < "
                  f"{opts.alpha:g} and A's mean is lower, a loss when p < {opts.alpha:g} and "
                  "it is higher, otherwise a draw"
                  + (" (report.weka_sd_rule: as in Weka, a standard deviation of the "
                     "differences ≤ 1e-6 counts as none, p = 0 unless the mean difference is 0)"
                     if opts.weka_sd_rule else " (a constant non-zero difference: p = 0)")
                  + ". ")
    elif by_folds:
        intro += (f"**W/D/L decided per data set by a Wilcoxon signed-rank test over folds** "
                  f"(report.wdl = wilcoxon-folds) for {', '.join(by_folds)}: a data set is a "
                  f"win for A when the two-sided Wilcoxon signed-rank test over the paired "
                  f"per-fold values gives p < {opts.alpha:g} and A's values are lower, a loss "
                  f"when p < {opts.alpha:g} and they are higher, otherwise a draw (p from the "
                  "exact permutation distribution of the signed ranks, midranks for tied "
                  "differences, up to 50 non-zero differences; above, the normal "
                  "approximation with tie correction). ")
    if by_folds:
        if plain:
            intro += (f"No per-fold values for {', '.join(plain)}: a win = A has the lower "
                      f"value. {_draw_rule(opts)} ")
    else:
        intro += f"A win = A has the lower value. {_draw_rule(opts)} "
    test = ("two-tailed" if opts.sign_test == "two-tailed" else
            "one-tailed (in the direction of the larger count; report.sign_test)")
    adjusted = "" if opts.correction == "none" else (
        f", its p-values {opts.correction.capitalize()}-adjusted over the pairs of each table "
        "(report.correction; printed p-values are the adjusted ones, `p_adjusted` in "
        "`tables/wdl.csv`)")
    intro += (f"**Bold** = {test} binomial sign test on wins vs losses (draws excluded)"
              f"{adjusted}, p < {opts.alpha:g}. Times are total CPU seconds over all folds "
              "of a data set. Files: `tables/wdl_<metric>.md`, "
              "`.tex` and the tidy `tables/wdl.csv`.")
    return intro


def _draw_rule(opts: ReportOptions) -> str:
    if opts.draw_decimals is None:
        return "A draw = exactly equal values."
    if isinstance(opts.draw_decimals, dict):
        spec = ", ".join(f"{k}: {v}" for k, v in sorted(opts.draw_decimals.items()))
        return f"A draw = equal values after rounding (decimals per metric: {spec})."
    return f"A draw = equal values after rounding to {opts.draw_decimals} decimals."
