"""Agreement with the published win/draw/loss cells of the configured paper
(report.paper_agreement): totals, by learner, by metric mapping, and the cells that differ."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from workbench.report import agreement as agr
from workbench.report._io import write_csv
from workbench.report.context import ReportContext
from workbench.report.document import Document
from workbench.report.options import ReportOptions
from workbench.report.sections.run import HEADLINE
from workbench.stats import TAILS


def render(ctx: ReportContext, doc: Document) -> None:
    """The agreement section, its headline also under the Run section."""
    headline = _section(doc, ctx.data, ctx.opts, ctx.all_colls, ctx.decimals, ctx.folds_used,
                        ctx.outcome)
    if headline:
        doc.fill(HEADLINE, "**Agreement with the published win/draw/loss cells (primary "
                 f"metric mapping): {headline}** Details below.\n")


def _section(rep: Document, data: pd.DataFrame, opts: ReportOptions,
             colls: Mapping[str, list[str]], decimals: Any,
             fold_metrics: pd.DataFrame | None = None, outcome=None) -> str | None:
    """Compare with the published cells when the config names a paper's metric map
    (``report.paper_agreement``); never otherwise (a run of other learners or data sets has
    nothing to agree with).

    Returns the headline (None when no comparison was made)."""
    if not isinstance(opts.paper_agreement, Path):
        return None
    mm = agr.load_metric_map(opts.paper_agreement)
    paper = agr.load_paper_wdl(mm.paper_wdl)
    present = set(data["learner"])
    theirs = agr.paper_learners(paper, mm)
    full = agr.compare_with_paper(data, paper, mm, colls, decimals, opts.alpha,
                                  TAILS[opts.sign_test], fold_metrics, outcome)
    primary = agr.primary_rows(full, mm)
    write_csv(rep.out / "paper_agreement.csv", primary)
    write_csv(rep.out / "paper_agreement_all.csv", full)
    totals = agr.agreement_totals(full)
    write_csv(rep.out / "tables" / "paper_agreement_totals.csv", totals)

    missing = [n for n in dict.fromkeys(theirs) if n not in present]
    rep.add("## Agreement with the published win/draw/loss tables",
            f"Published cells: `{mm.paper_wdl.name}` ({len(paper)} cells), names mapped by "
            f"`{mm.path.name}`. For each cell whose two learners were run, our record is "
            "computed over the data sets actually run in the same collection; the paper's "
            "p-value is recomputed from its wins and losses with the same sign test. "
            "Same direction = sign(wins − losses) equal; significant reversal = both "
            "significant in opposite directions. Files: `paper_agreement.csv` (primary "
            "metric mapping, one row per cell), `paper_agreement_all.csv` (every mapping).")
    if missing:
        rep.add(f"Learners of the paper not in this run (their cells are skipped): "
                f"{', '.join(missing)}.")
    rep.add(f"**Primary mapping: {agr.headline(primary)}.**")
    paper_names = list(dict.fromkeys([*paper["col"], *paper["row"]]))
    by_learner = agr.totals_by_learner(primary, paper_names)
    write_csv(rep.out / "tables" / "paper_agreement_by_learner.csv", by_learner)
    lines = ["| cells involving | cells | same direction | paper significant | both "
             "significant, same direction | significant reversals |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in by_learner.itertuples(index=False):
        ours = mm.ours(r.learner)
        name = r.learner if ours == r.learner else f"{r.learner} (ours: {ours})"
        lines.append(f"| {name} | {r.cells} | {r.same_direction} | "
                     f"{r.paper_significant} | {r.both_significant_same} | "
                     f"{r.significant_reversals} |")
    rep.add("By learner (primary mapping; a cell counts for both of its learners):",
            "\n".join(lines))
    empty = int((primary["our_n_datasets"] == 0).sum())
    if empty:
        rep.add(f"{empty} of these cells are in collections with no data set run here "
                "(our record 0/0/0); they count as not in the same direction unless the "
                "paper's record is balanced.")
    lines = ["| paper metric | our metric | cells | same direction | paper significant | "
             "both significant, same direction | significant reversals |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in totals.itertuples(index=False):
        lines.append(f"| {r.metric} | {r.our_metric} | {r.cells} | {r.same_direction} | "
                     f"{r.paper_significant} | {r.both_significant_same} | "
                     f"{r.significant_reversals} |")
    rep.add("\n".join(lines))
    for pm, ours in mm.metrics.items():
        if len(ours) > 1:
            best = agr.better_mapping(full, pm)
            rule = ("(most cells in the same direction, then fewest significant reversals, "
                    "then most cells significant in the same direction)")
            if len(best) == 1:
                rep.add(f"The paper's `{pm}` agrees better with our `{best[0]}` {rule}.")
            elif best:
                rep.add(f"The paper's `{pm}` agrees equally well with our "
                        + " and ".join(f"`{b}`" for b in best) + f" {rule}.")
    bad = primary[~primary["same_direction"]]
    rep.add(f"### Cells not in the same direction (primary mapping): {len(bad)}")
    if len(bad):
        lines = ["| metric | collection | row | col | paper w/d/l | paper p | ours w/d/l | "
                 "our p | significant reversal |", "|---|---|---|---|---|---:|---|---:|---|"]
        for r in bad.itertuples(index=False):
            lines.append(
                f"| {r.metric} | {r.collection} | {r.row} | {r.col} | "
                f"{_b(f'{r.paper_wins}/{r.paper_draws}/{r.paper_losses}', r.paper_significant)}"
                f" | {r.paper_p_value:.3g} | "
                f"{_b(f'{r.our_wins}/{r.our_draws}/{r.our_losses}', r.our_significant)} | "
                f"{r.our_p_value:.3g} | {'yes' if r.significant_reversal else ''} |")
        rep.add("\n".join(lines))
    return agr.headline(primary) + "."


def _b(text: str, bold: bool) -> str:
    return f"**{text}**" if bold else text
