"""A new method's W/D/L table against a stored run's learners (``workbench compare``).

Rows are the new learners, columns the baseline run's learners; a cell is wins/draws/losses
of the row learner over the data sets both have results for (a win: a lower value of the
metric, higher for those where higher is better), with the two-tailed sign test's p-value;
one table per metric and collection (all data sets and the PAKDD 2013 size groups).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from workbench.evaluation.metrics import lower_is_better
from workbench.report.tables import TABLE_METRICS, collection_title, p_text, subset_rows
from workbench.stats.wdl import ALPHA
from workbench.stats.wdl import metric_matrix, wdl_from_matrix

COLUMNS = ["metric", "collection", "row", "col", "wins", "draws", "losses", "n", "p_value",
           "significant"]


def versus_table(summary: pd.DataFrame, new: Sequence[str], base: Sequence[str],
                 metrics: Sequence[str], collections: Mapping[str, Sequence[str]],
                 alpha: float = ALPHA) -> pd.DataFrame:
    """Tidy W/D/L records of every (new, baseline) learner pair per metric and collection."""
    pairs = [(n, b) for n in new for b in base]
    learners = list(dict.fromkeys([*new, *base]))
    parts = []
    for metric in metrics:
        if metric not in summary.columns:
            continue
        wide = metric_matrix(summary, metric, learners)
        for coll, members in collections.items():
            t = wdl_from_matrix(subset_rows(wide, members), learners, alpha=alpha,
                                pairs=pairs, lower_is_better=lower_is_better(metric))
            t.insert(0, "collection", coll)
            t.insert(0, "metric", metric)
            parts.append(t)
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(parts, ignore_index=True)[COLUMNS]


def versus_markdown(tidy: pd.DataFrame, new: Sequence[str], base: Sequence[str],
                    sizes: Mapping[str, int]) -> str:
    """Every table of `versus_table` as Markdown: a heading per metric and collection, a row
    per new learner, a column per baseline learner, significant cells in bold."""
    out = []
    for (metric, coll), part in tidy.groupby(["metric", "collection"], sort=False):
        cells = {(r.row, r.col): r for r in part.itertuples(index=False)}
        out += [f"### {TABLE_METRICS.get(metric, metric)}: "
                f"{collection_title(coll, sizes.get(coll))}", "",
                "| new \\ baseline | " + " | ".join(base) + " |",
                "|---" * (1 + len(base)) + "|"]
        for n in new:
            row = []
            for b in base:
                r = cells.get((n, b))
                if r is None or r.n == 0:
                    row.append("")
                    continue
                text = f"{r.wins}/{r.draws}/{r.losses} ({p_text(r.p_value)})"
                row.append(f"**{text}**" if r.significant else text)
            out.append(f"| {n} | " + " | ".join(row) + " |")
        out.append("")
    return "\n".join(out)
