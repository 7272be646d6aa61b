"""Win/draw/loss tables laid out like the paper's Tables 2–5, and per-data-set tables.

A W/D/L table is the lower triangle: one row per learner except the first, one column per
learner except the last, both in config order; the cell in row A, column B is A's
"wins/draws/losses" against B (a win = A has the lower value). Significant cells (two-tailed
sign test, p < alpha) are bold: ``**w/d/l**`` in Markdown, ``\\textbf{w/d/l}`` in LaTeX.
The tidy CSV has one line per cell: metric, collection, row, col, wins, draws, losses,
p_value, significant.

Two ways of deciding each data set (``report.wdl``): ``sign`` (default, the PAKDD 2013
tables) compares the two values per data set; ``wilcoxon-folds`` (the JMLR 2016 tables)
counts a data set as a win only if a Wilcoxon signed-rank test over the paired per-fold
values is significant (`workbench.stats.wdl.fold_wdl_table`), otherwise a draw;
``corrected-t`` does the same with Weka's corrected resampled t-test. Metrics without
per-fold values (bias, variance) always use ``sign``. With ``report.correction`` (Holm or
Bonferroni) the p-values of the pairs of each table are adjusted together (column
``p_adjusted``), and bold and printed p-values are the adjusted ones.
"""

from __future__ import annotations

import math
from collections import abc
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from workbench.evaluation import metrics as registry_of_metrics
from workbench.evaluation.metrics import metric_names
from workbench.stats import WDL_CORRECTED_T, WDL_SIGN, WDL_WILCOXON_FOLDS
from workbench.stats.corrections import adjust_p_values
from workbench.stats.wdl import (
    ALPHA,
    fold_outcomes,
    metric_matrix,
    wdl_from_matrix,
    wdl_from_outcomes,
)


class _TableMetrics(abc.Mapping):
    """metric column -> title for every metric the registry shows in tables, read from
    `metrics.METRICS` at each use: a metric declared there is shown."""

    def __getitem__(self, name: str) -> str:
        m = registry_of_metrics.METRICS[name]
        if not m.table:
            raise KeyError(name)
        return m.title

    def __iter__(self):
        return iter(metric_names(table=True))

    def __len__(self) -> int:
        return len(metric_names(table=True))


TABLE_METRICS: Mapping[str, str] = _TableMetrics()

TIDY_COLUMNS = [
    "metric", "collection", "row", "col", "wins", "draws", "losses", "p_value", "significant",
]

COLLECTION_TITLES = {
    "all": "All data sets",
    "large": "Large data sets (> 10,000 instances)",
    "medium": "Medium data sets (1,000 < n ≤ 10,000)",
    "small": "Small data sets (n ≤ 1,000)",
}


def collection_title(name: str, n: int | None = None) -> str:
    """Human title of a collection, with its number of data sets when given."""
    base = COLLECTION_TITLES.get(name, f"Collection '{name}'")
    return base if n is None else f"{base}: {n} data set{'' if n == 1 else 's'} run"


def wdl_tidy(
    summary: pd.DataFrame,
    learners: Sequence[str],
    collections: Mapping[str, Sequence[str]],
    metrics: Sequence[str] = tuple(TABLE_METRICS),
    decimals: Mapping[str, int | None] | int | None = None,
    alpha: float = ALPHA,
    fold_metrics: pd.DataFrame | None = None,
    tails: int = 2,
    outcome=None,
    correction: str = "none",
) -> pd.DataFrame:
    """Tidy W/D/L records for every metric × collection × lower-triangle learner pair
    (``tails``: the sign test's, 2 or 1).

    With ``fold_metrics`` (long format, `store.load_fold_metrics`), each metric that has
    per-fold values is decided per data set by ``outcome`` over its folds at ``alpha``
    (default a Wilcoxon test, ``wilcoxon-folds``); the others compare the summary values
    (``sign``). ``correction`` (`stats.corrections`) adjusts the p-values of each table.
    """
    parts = []
    fold_names = (set() if fold_metrics is None or fold_metrics.empty
                  else set(fold_metrics["metric"]))
    for metric in metrics:
        if metric not in summary.columns:
            continue
        dec = decimals.get(metric) if isinstance(decimals, Mapping) else decimals
        lower = registry_of_metrics.lower_is_better(metric)
        outcomes = (fold_outcomes(fold_metrics, metric, list(learners), alpha,
                                  **({} if outcome is None else {"outcome": outcome}),
                                  lower_is_better=lower)
                    if metric in fold_names else None)
        wide_all = metric_matrix(summary, metric, list(learners)) if outcomes is None else None
        for coll, members in collections.items():
            if outcomes is not None:
                t = wdl_from_outcomes(outcomes, learners, members, alpha, tails=tails)
            else:
                t = wdl_from_matrix(subset_rows(wide_all, members), learners, decimals=dec,
                                    alpha=alpha, tails=tails, lower_is_better=lower)
            t.insert(0, "collection", coll)
            t.insert(0, "metric", metric)
            parts.append(t)
    if not parts:
        return pd.DataFrame(columns=TIDY_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    out = out[TIDY_COLUMNS + ["n"]].reset_index(drop=True)
    if correction != "none":
        out["p_adjusted"] = np.nan
        for _, idx in out.groupby(["metric", "collection"], sort=False).groups.items():
            out.loc[idx, "p_adjusted"] = adjust_p_values(out.loc[idx, "p_value"], correction)
        out["significant"] = out["p_adjusted"] < alpha
    return out


def subset_rows(wide: pd.DataFrame, datasets: Sequence[str]) -> pd.DataFrame:
    """The rows of a data set × learner matrix for ``datasets`` (those present, sorted)."""
    keep = sorted(set(map(str, datasets)) & set(wide.index))
    return wide.loc[keep]


def p_text(p: float) -> str:
    """A p-value as the papers print it: three decimals, "<0.001" below."""
    return "<0.001" if p < 0.0005 else f"{p:.3f}"


def _grid(tidy: pd.DataFrame, learners: Sequence[str], bold: tuple[str, str],
          p_values: bool = False) -> list[list[str]]:
    """Rows of the lower-triangle grid: [row learner, cell for col 0, ..., cell for col k-2];
    with `p_values` each cell also shows its p-value, as PAKDD 2014's Table 2 does."""
    shown = "p_adjusted" if "p_adjusted" in tidy.columns else "p_value"
    cells = {
        (r.row, r.col): (f"{r.wins}/{r.draws}/{r.losses}"
                         + (f" ({p_text(getattr(r, shown))})" if p_values else ""),
                         bool(r.significant))
        for r in tidy.itertuples(index=False)
    }
    out = []
    for i in range(1, len(learners)):
        line = [learners[i]]
        for j in range(len(learners) - 1):
            if j >= i or (learners[i], learners[j]) not in cells:
                line.append("")
                continue
            text, sig = cells[(learners[i], learners[j])]
            line.append(f"{bold[0]}{text}{bold[1]}" if sig else text)
        out.append(line)
    return out


def markdown_table(tidy: pd.DataFrame, learners: Sequence[str], p_values: bool = False) -> str:
    """One lower-triangle W/D/L table (one metric, one collection) as Markdown."""
    learners = list(learners)
    if len(learners) < 2:
        return "_(fewer than two learners: nothing to compare)_\n"
    header = [""] + learners[:-1]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in _grid(tidy, learners, ("**", "**"), p_values):
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def _tex(s: str) -> str:
    repl = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
            "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}
    return "".join(repl.get(ch, ch) for ch in s)


def latex_table(tidy: pd.DataFrame, learners: Sequence[str], caption: str, label: str,
                p_values: bool = False) -> str:
    """One lower-triangle W/D/L table as a LaTeX ``table`` (significant cells bold)."""
    learners = list(learners)
    if len(learners) < 2:
        return f"% {caption}: fewer than two learners\n"
    ncol = len(learners) - 1
    lines = [
        r"\begin{table}[ht]",
        r"\centering",
        r"\scriptsize",
        rf"\caption{{{_tex(caption)}}}",
        rf"\label{{{label}}}",
        r"\begin{tabular}{l" + "c" * ncol + "}",
        r"\hline",
        " & ".join([""] + [_tex(x) for x in learners[:-1]]) + r" \\",
        r"\hline",
    ]
    for row in _grid(tidy, learners, (r"\textbf{", "}"), p_values):
        lines.append(" & ".join([_tex(row[0])] + row[1:]) + r" \\")
    lines += [r"\hline", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def wdl_rule(metric: str, alpha: float = ALPHA, method: str = WDL_SIGN, tails: int = 2,
             correction: str = "none") -> str:
    """One sentence: what a win is for this metric under ``method``, in its direction."""
    title = TABLE_METRICS.get(metric, metric)
    lower = registry_of_metrics.lower_is_better(metric)
    better, worse = ("lower", "higher") if lower else ("higher", "lower")
    test = "two-tailed sign test" if tails == 2 else \
        "one-tailed sign test (in the direction of the larger count)"
    if correction != "none":
        test += f", {correction.capitalize()}-adjusted over the table's pairs,"
    if method in (WDL_WILCOXON_FOLDS, WDL_CORRECTED_T):
        by = ("a two-sided Wilcoxon signed-rank test" if method == WDL_WILCOXON_FOLDS else
              "Weka's corrected resampled t-test (two-sided)")
        return (f"Row learner vs column learner over data sets: a data set is a win when "
                f"{by} over the paired per-fold {title} values gives p < {alpha:g} and the "
                f"row learner is {better}, a loss when p < {alpha:g} and it is {worse}, "
                f"otherwise a draw; **bold** = {test} on those wins vs losses p < {alpha:g}.")
    return (f"Row learner vs column learner over data sets (win = row has the {better} "
            f"{title}); **bold** = {test} p < {alpha:g}.")


def metric_markdown(
    tidy: pd.DataFrame, metric: str, learners: Sequence[str], sizes: Mapping[str, int],
    alpha: float = ALPHA, method: str = WDL_SIGN, p_values: bool = False, tails: int = 2,
    correction: str = "none",
) -> str:
    """All collections of one metric as a Markdown document (like the paper's Table 4)."""
    title = TABLE_METRICS.get(metric, metric)
    by = {WDL_WILCOXON_FOLDS: " (Wilcoxon over folds)",
          WDL_CORRECTED_T: " (corrected resampled t-test over folds)"}.get(method, "")
    parts = [
        f"### Win/draw/loss: {title}{by}\n",
        wdl_rule(metric, alpha, method, tails, correction) + "\n",
    ]
    sub = tidy[tidy["metric"] == metric]
    for coll in dict.fromkeys(sub["collection"]):
        parts.append(f"#### {collection_title(coll, sizes.get(coll))}\n")
        if sizes.get(coll, 1) == 0:
            parts.append("_No data set of this collection was run._\n")
            continue
        parts.append(markdown_table(sub[sub["collection"] == coll], learners, p_values))
    return "\n".join(parts)


def metric_latex(
    tidy: pd.DataFrame, metric: str, learners: Sequence[str], sizes: Mapping[str, int],
    alpha: float = ALPHA, method: str = WDL_SIGN, p_values: bool = False, tails: int = 2,
    correction: str = "none",
) -> str:
    """All collections of one metric as LaTeX tables (one ``table`` per collection)."""
    title = TABLE_METRICS.get(metric, metric)
    sub = tidy[tidy["metric"] == metric]
    out = [f"% {wdl_rule(metric, alpha, method, tails, correction).replace('**', '')}\n"]
    for coll in dict.fromkeys(sub["collection"]):
        if sizes.get(coll, 1) == 0:
            out.append(f"% {collection_title(coll)}: no data set of this collection was run\n")
            continue
        caption = f"Win/Draw/Loss of {title} comparison, {collection_title(coll, sizes.get(coll))}"
        out.append(latex_table(sub[sub["collection"] == coll], learners, caption,
                               f"tab:wdl-{metric}-{coll}".replace("_", "-"), p_values))
    return "\n".join(out)


def tidy_csv_frame(tidy: pd.DataFrame) -> pd.DataFrame:
    """The columns of the tidy W/D/L CSV (metric, collection, row, col, w, d, l, p, sig;
    and p_adjusted when a correction is applied)."""
    extra = ["p_adjusted"] if "p_adjusted" in tidy.columns else []
    return tidy[TIDY_COLUMNS + extra].reset_index(drop=True)


# ---------------------------------------------------------------------------- per data set
def _fmt(value: float, metric: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if metric.endswith("_seconds"):
        return f"{value:.3g}"
    if metric.endswith("_bytes"):
        return f"{value / 2**20:.1f} MiB"
    if metric in ("iterations", "train_objective"):
        return f"{value:.6g}"
    return f"{value:.4f}"


def per_dataset_tidy(
    summary: pd.DataFrame, learners: Sequence[str], groups: Mapping[str, str],
    metrics: Sequence[str] = tuple(TABLE_METRICS),
) -> pd.DataFrame:
    """Tidy per-(data set, learner, metric) means and standard deviations over folds."""
    rows = []
    frame = summary.copy()
    frame["dataset"] = frame["dataset"].astype(str)
    frame["learner"] = frame["learner"].astype(str)
    order = {name: i for i, name in enumerate(learners)}
    frame = frame[frame["learner"].isin(order)]
    frame = frame.assign(_o=frame["learner"].map(order)).sort_values(
        ["dataset", "_o"], kind="mergesort")
    for rec in frame.to_dict("records"):
        for metric in metrics:
            if metric not in frame.columns:
                continue
            std = rec.get(f"{metric}_std", np.nan)
            rows.append([
                rec["dataset"], groups.get(rec["dataset"], ""), rec.get("n_instances"),
                rec["learner"], metric, rec[metric], std,
            ])
    return pd.DataFrame(
        rows, columns=["dataset", "size_group", "n_instances", "learner", "metric", "mean", "std"]
    )


def per_dataset_markdown(tidy: pd.DataFrame, metric: str, learners: Sequence[str]) -> str:
    """Data set × learner table of one metric, cells ``value ± std`` (std over folds, where
    stored), headed by the metric's declared title."""
    sub = tidy[tidy["metric"] == metric]
    learners = [name for name in learners if name in set(sub["learner"])]
    declared = registry_of_metrics.METRICS.get(metric)
    title = declared.title if declared is not None else metric
    # the title says how folds combine (pooled, total, mean); a ± is a std over folds
    spread = " (± std over folds)" if sub["std"].notna().any() else ""
    lines = [
        f"### {title} per data set{spread}\n",
        "| data set | group | n | " + " | ".join(learners) + " |",
        "|---|---|---:|" + "---:|" * len(learners),
    ]
    for ds, g in sub.groupby("dataset", sort=True):
        by = {r.learner: r for r in g.itertuples(index=False)}
        first = g.iloc[0]
        n = first["n_instances"]
        n_text = "" if pd.isna(n) else str(int(n))
        cells = []
        for name in learners:
            r = by.get(name)
            if r is None:
                cells.append("")
                continue
            m = _fmt(float(r.mean), metric)
            s = _fmt(float(r.std), metric) if pd.notna(r.std) else ""
            cells.append(f"{m} ± {s}" if s else m)
        lines.append(f"| {ds} | {first['size_group']} | {n_text} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def learning_curve_tidy(fold_metrics: pd.DataFrame, sizes: Sequence[int],
                        learners: Sequence[str]) -> pd.DataFrame:
    """A learning-curve run's per-fold values as (dataset, learner, n_train, metric, value):
    round r of the protocol trained on ``sizes[r]`` instances (one fold per round)."""
    cols = ["dataset", "learner", "n_train", "metric", "value"]
    fm = fold_metrics[fold_metrics["learner"].isin(list(learners))
                      & fold_metrics["round"].between(0, len(sizes) - 1)]
    if fm.empty:
        return pd.DataFrame(columns=cols)
    out = fm.assign(n_train=[int(sizes[int(r)]) for r in fm["round"]])
    order = {name: i for i, name in enumerate(learners)}
    out = out.assign(_l=out["learner"].map(order)).sort_values(
        ["dataset", "_l", "metric", "n_train"], kind="stable")
    return out[cols].reset_index(drop=True)
