"""Wilcoxon tests over data sets, Friedman tests, average ranks and critical-difference
diagrams (Demšar 2006), per metric in its direction."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from workbench.evaluation.metrics import lower_is_better, metric_names
from workbench.report import tables as tb
from workbench.report._io import write_csv
from workbench.report.context import ReportContext
from workbench.report.document import Document
from workbench.report.sections.wdl import direction_note
from workbench.stats import posthoc
from workbench.stats.ranks import friedman_test, nemenyi_cd, nemenyi_cliques
from workbench.stats.wdl import metric_matrix, wilcoxon_from_matrix


def render(ctx: ReportContext, doc: Document) -> None:
    opts = ctx.opts
    cd_info = _tests(ctx)
    doc.add("## Average ranks and critical differences",
            "Average rank over the data sets of the collection 'all' on which every learner "
            "has a value (1 = lowest value; ties share the average rank). Friedman test with "
            f"Iman-Davenport's F; Nemenyi CD = q_α·sqrt(k(k+1)/(6N)) at α = {opts.alpha:g}. "
            + _posthoc_text(opts.posthoc) +
            "Per-collection values are in `tables/ranks.csv` and `tables/friedman.csv`; "
            "`tables/wilcoxon.csv` has, per learner pair, the Wilcoxon signed-rank test over "
            "the data sets and effect sizes: the mean difference with its 95 % t-interval, "
            "the matched-pairs rank-biserial correlation and Cliff's delta."
            + direction_note(ctx.metrics))
    doc.add(ranks_markdown(cd_info, ctx.ranked))
    for m in metric_names(cd=True):
        if m not in cd_info:
            continue
        fr, cd, pairs = cd_info[m]
        if not ctx.figures or fr.n_datasets < 1 or fr.n_learners < 2 or np.isnan(cd):
            continue
        from workbench.report import figures as fg

        label = tb.TABLE_METRICS[m]
        test = posthoc.NAMES[opts.posthoc]
        bars = (nemenyi_cliques(fr.average_ranks, cd) if opts.posthoc == "nemenyi"
                else posthoc.groups(fr.average_ranks, pairs))
        fig = fg.cd_diagram(fr.average_ranks, cd, bars,
                            f"{label}: average ranks over {fr.n_datasets} data sets "
                            f"({test} at α = {opts.alpha:g})")
        doc.place(fig, f"cd_{m}",
                  f"Critical-difference diagram, {label}, all data sets (N = "
                  f"{fr.n_datasets}, k = {fr.n_learners}, Nemenyi CD = {cd:.3f}). Learners "
                  f"joined by a thick bar are not significantly different ({test}).")


def _posthoc_text(method: str) -> str:
    """What the report says of its all-pairs test."""
    if method == "nemenyi":
        return ("All pairs: Nemenyi's test (two learners differ when their ranks differ by "
                "at least CD); adjusted p-values in `tables/posthoc.csv`. ")
    return (f"All pairs: {posthoc.NAMES[method]} (García & Herrera 2008) on the z statistics "
            "of the rank differences; adjusted p-values in `tables/posthoc.csv`, its groups "
            "are the CD diagrams' bars. ")


def _tests(ctx: ReportContext) -> dict[str, Any]:
    """Write wilcoxon.csv, ranks.csv and friedman.csv; return the collection 'all''s
    (Friedman result, CD) per metric."""
    wil, rank_rows, fried_rows, post, cd_info = [], [], [], [], {}
    alpha = ctx.opts.alpha
    for m in ctx.metrics:
        wide_all = metric_matrix(ctx.data, m, ctx.ranked)
        for c, members in ctx.colls.items():
            wide = tb.subset_rows(wide_all, members)
            w = wilcoxon_from_matrix(wide, ctx.ranked, alpha)
            w.insert(0, "collection", c)
            w.insert(0, "metric", m)
            wil.append(w)
            fr = friedman_test(wide, lower_is_better=lower_is_better(m))
            cd = nemenyi_cd(fr.n_learners, fr.n_datasets, alpha) if (
                fr.n_learners >= 2 and fr.n_datasets >= 1) else float("nan")
            fried_rows.append([m, c, fr.n_datasets, fr.n_learners, fr.statistic, fr.p_value,
                               fr.iman_davenport_f, fr.iman_davenport_p, cd])
            for name, r in fr.average_ranks.items():
                rank_rows.append([m, c, name, r, fr.n_datasets])
            pairs = None
            if fr.n_learners >= 2 and fr.n_datasets >= 1:
                pairs = posthoc.pairwise(fr.average_ranks, fr.n_datasets, ctx.opts.posthoc,
                                         alpha)
                post.append(pairs.assign(metric=m, collection=c, method=ctx.opts.posthoc))
            if c == "all":
                cd_info[m] = (fr, cd, pairs)
    tables = ctx.out / "tables"
    if wil:
        write_csv(tables / "wilcoxon.csv", pd.concat(wil, ignore_index=True))
    if post:
        table = pd.concat(post, ignore_index=True)
        first = ["metric", "collection", "method"]
        write_csv(tables / "posthoc.csv", table[first + [c for c in table if c not in first]])
    write_csv(tables / "ranks.csv", pd.DataFrame(
        rank_rows, columns=["metric", "collection", "learner", "average_rank", "n_datasets"]))
    write_csv(tables / "friedman.csv", pd.DataFrame(fried_rows, columns=[
        "metric", "collection", "n_datasets", "n_learners", "friedman_chi2", "friedman_p",
        "iman_davenport_f", "iman_davenport_p", "nemenyi_cd"]))
    return cd_info


def ranks_markdown(cd_info: Mapping[str, Any], learners: list[str]) -> str:
    if not cd_info:
        return ""
    head = "| metric | N | " + " | ".join(learners) + " | Friedman p | CD |"
    lines = [head, "|---|---:|" + "---:|" * len(learners) + "---:|---:|"]
    for m, (fr, cd, _) in cd_info.items():
        cells = [f"{fr.average_ranks.get(n, np.nan):.2f}" for n in learners]
        p = "" if np.isnan(fr.p_value) else f"{fr.p_value:.3g}"
        c = "" if np.isnan(cd) else f"{cd:.3f}"
        lines.append(f"| {tb.TABLE_METRICS.get(m, m)} | {fr.n_datasets} | "
                     + " | ".join(cells) + f" | {p} | {c} |")
    return "\n".join(lines) + "\n"
