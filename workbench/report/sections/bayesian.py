"""Bayesian signed-rank tests with a rope (`stats.bayesian`) of the configured pairs
(report.bayesian): a table and a simplex figure per metric."""

from __future__ import annotations

import pandas as pd

from workbench.evaluation.metrics import lower_is_better
from workbench.report import tables as tb
from workbench.report._io import write_csv
from workbench.report.context import ReportContext
from workbench.report.document import Document
from workbench.report.sections.wdl import direction_note
from workbench.stats.bayesian import signed_rank
from workbench.stats.wdl import metric_matrix


def render(ctx: ReportContext, doc: Document) -> None:
    """Bayesian signed-rank tests (`stats.bayesian`) of the configured pairs per metric:
    tables/bayesian.csv, a Markdown table and a simplex figure per metric."""
    rep, out, data, opts, figures = doc, ctx.out, ctx.data, ctx.opts, ctx.figures
    if opts.bayesian is None:
        return
    bay = opts.bayesian
    rope, pairs = bay["rope"], bay["pairs"]
    rep.add("## Bayesian signed-rank tests",
            f"For each pair (A, B) and metric, the posterior probability that A is better by "
            f"more than the region of practical equivalence (rope = {rope:g} in the metric's "
            f"units), that the two are practically equivalent, and that B is better, from the "
            f"Bayesian signed-rank test over the data sets (Benavoli et al. 2014, 2017: "
            f"Dirichlet-process prior of strength 0.5 at 0, {bay['samples']:,} posterior "
            f"samples, seed {bay['seed']}; report.bayesian). Also in `tables/bayesian.csv`."
            + direction_note(bay["metrics"]))
    rows = []
    for m in bay["metrics"]:
        if m not in data.columns:
            rep.add(f"_No {tb.TABLE_METRICS.get(m, m)} values in this run._")
            continue
        wide = metric_matrix(data, m, list(dict.fromkeys(x for p in pairs for x in p)))
        results = []
        lines = [f"### {tb.TABLE_METRICS[m]}\n", "| A | B | data sets | P(A better) | "
                 "P(equivalent) | P(B better) |", "|---|---|---:|---:|---:|---:|"]
        for a, b in pairs:
            res = signed_rank(wide[a], wide[b], rope, samples=bay["samples"], seed=bay["seed"],
                              lower_is_better=lower_is_better(m))
            results.append((a, b, res))
            rows.append([m, a, b, rope, res.n, res.p_a_better, res.p_rope, res.p_b_better])
            lines.append(f"| {a} | {b} | {res.n} | {res.p_a_better:.3f} | {res.p_rope:.3f} | "
                         f"{res.p_b_better:.3f} |")
        rep.add("\n".join(lines) + "\n")
        if figures and results:
            from workbench.report import figures as fg

            fig = fg.bayes_simplex_figure(results, m)
            rep.place(fig, f"bayes_{m}",
                      f"{tb.TABLE_METRICS[m]}: posterior of the Bayesian signed-rank test "
                      f"(rope {rope:g}) for each pair, in barycentric coordinates.")
    write_csv(out / "tables" / "bayesian.csv", pd.DataFrame(rows, columns=[
        "metric", "a", "b", "rope", "n_datasets", "p_a_better", "p_rope", "p_b_better"]))
