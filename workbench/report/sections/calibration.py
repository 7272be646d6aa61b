"""Calibration appendix: reliability diagrams per data-set collection and the Brier
score's reliability / resolution decomposition per learner and data set, from the
calibration bins each pair's summary keeps (`metrics.calibration_bins`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.evaluation.metrics import brier_decomposition
from workbench.report._io import write_csv
from workbench.report.context import ReportContext
from workbench.report.document import Document
from workbench.store import load_pair_arrays

COLUMNS = ("brier_top", "reliability", "resolution", "uncertainty", "within_bin")


def render(ctx: ReportContext, doc: Document) -> None:
    bins = {k: v for k, v in load_pair_arrays(ctx.run_dir, "calibration").items()
            if k[1] in ctx.learners}
    if not bins:
        return
    learners = [name for name in ctx.learners if any(l == name for _, l in bins)]
    rows = [[d, l, *brier_decomposition(b).values()] for (d, l), b in bins.items()]
    per_pair = pd.DataFrame(rows, columns=["dataset", "learner", *COLUMNS])
    pooled = {c: {l: sum((b for (d, ll), b in bins.items() if ll == l and d in members),
                         np.zeros_like(next(iter(bins.values()))))
                  for l in learners}
              for c, members in ctx.colls.items()}
    summary = pd.DataFrame([[c, l, *brier_decomposition(b).values()]
                            for c, per in pooled.items() for l, b in per.items()
                            if b[:, 0].sum()], columns=["collection", "learner", *COLUMNS])
    write_csv(ctx.out / "tables" / "brier_decomposition.csv", per_pair)
    write_csv(ctx.out / "tables" / "brier_decomposition_pooled.csv", summary)
    doc.add("## Appendix: calibration",
            "The top-label Brier score B = mean (c − o)², c the largest probability and o = 1 "
            "when its class is right, split as Murphy's B = reliability − resolution + "
            "uncertainty + within-bin, over ten equal-width confidence bins (those of "
            "`ece`): reliability Σ_b (n_b/n)(c̄_b − ō_b)² is the miscalibration (lower is "
            "better), resolution Σ_b (n_b/n)(ō_b − ō)² how well confidence separates right "
            "from wrong (higher is better), uncertainty ō(1 − ō), within-bin what binning "
            "the confidences leaves. Pooled over every round's tested rows of the data sets "
            "of 'all' below; per data set in `tables/brier_decomposition.csv`, per "
            "collection in `tables/brier_decomposition_pooled.csv`.")
    table = summary[summary["collection"] == "all"].drop(columns="collection")
    doc.add(_markdown(table))
    if not ctx.figures:
        return
    from workbench.report import figures as fg

    for c, per in pooled.items():
        kept = {l: b for l, b in per.items() if b[:, 0].sum()}
        if not kept:
            continue
        fig = fg.reliability_figure(kept, f"Reliability, collection '{c}' "
                                    f"({len(ctx.colls[c])} data sets, rows pooled)")
        doc.place(fig, f"reliability_{c}",
                  f"Reliability diagram, collection '{c}': per confidence bin, the accuracy "
                  "of the first-maximum prediction against the mean largest probability, "
                  "every round's tested rows of the collection's data sets pooled.")


def _markdown(frame: pd.DataFrame) -> str:
    """A plain Markdown table, numbers to four decimals."""
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|---|" + "---:|" * (len(frame.columns) - 1)
    body = ["| " + " | ".join(str(v) if isinstance(v, str) else f"{v:.4f}" for v in row)
            + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"
