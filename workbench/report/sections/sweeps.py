"""Parameter sweeps: each variant's metrics against the value of the swept parameter."""

from __future__ import annotations

import pandas as pd

from workbench.report import tables as tb
from workbench.report._io import write_csv
from workbench.report.context import ReportContext
from workbench.report.document import Document
from workbench.store import safe_name

FIGURE_METRICS = ("zero_one_loss", "rmse")


def sweep_table(data: pd.DataFrame, learners: dict[str, object], metrics: list[str]
                ) -> pd.DataFrame:
    """Per variant and metric: the swept value, the mean over the data sets where every
    variant has a value, and how many data sets that is."""
    part = data[data["learner"].isin(list(learners))]
    rows = []
    for metric in metrics:
        wide = part.pivot_table(index="dataset", columns="learner", values=metric,
                                aggfunc="first").reindex(columns=list(learners)).dropna()
        for name, value in learners.items():
            rows.append({"learner": name, "value": value, "metric": metric,
                         "mean": float(wide[name].mean()) if len(wide) else float("nan"),
                         "datasets": len(wide)})
    return pd.DataFrame(rows, columns=["learner", "value", "metric", "mean", "datasets"])


def render(ctx: ReportContext, doc: Document) -> None:
    if not ctx.opts.sweeps:
        return
    doc.add("## Parameter sweeps",
            "Each sweep's variants differ in one parameter only; the mean of each metric over "
            "the data sets where every variant has results (values in "
            "`tables/sweep_<name>.csv`).")
    for name, sweep in ctx.opts.sweeps.items():
        metrics = [m for m in ctx.metrics if m in ctx.data.columns]
        table = sweep_table(ctx.data, sweep["learners"], metrics)
        stem = f"sweep_{safe_name(name)}"
        write_csv(ctx.out / "tables" / f"{stem}.csv", table)
        shown = [m for m in FIGURE_METRICS if m in metrics] or metrics[:2]
        mean = {(r.learner, r.metric): r.mean for r in table.itertuples()}
        lines = [f"### {name}: {sweep['parameter']}", "",
                 "| " + " | ".join([sweep["parameter"], "learner",
                                    *(tb.TABLE_METRICS.get(m, m) for m in shown)]) + " |",
                 "|---" * (2 + len(shown)) + "|"]
        for learner, value in sweep["learners"].items():
            lines.append("| " + " | ".join([str(value), learner, *(
                f"{mean[(learner, m)]:.4f}" for m in shown)]) + " |")
        n = int(table["datasets"].iloc[0]) if len(table) else 0
        doc.add("\n".join(lines), f"_Mean over {n} data set(s)._")
        fig_metrics = [m for m in FIGURE_METRICS if m in metrics]
        if ctx.figures and fig_metrics and n:
            from workbench.report import figures as fg

            fig = fg.sweep_figure(table, sweep["parameter"], fig_metrics,
                                  f"{name}: metric against {sweep['parameter']}")
            labels = ", ".join(tb.TABLE_METRICS.get(m, m) for m in fig_metrics)
            doc.place(fig, stem, f"{name}: mean {labels} over {n} data set(s) against "
                      f"{sweep['parameter']}.")
