"""Learning curves (the learning-curve protocol: one round per training size)."""

from __future__ import annotations

from typing import Mapping

from workbench.report import tables as tb
from workbench.report._io import write_csv
from workbench.report.context import ReportContext
from workbench.report.document import Document


def render(ctx: ReportContext, doc: Document) -> None:
    rep, out, cfg, learners, figures = doc, ctx.out, ctx.cfg, ctx.learners, ctx.figures
    protocol = cfg.get("protocol") if isinstance(cfg.get("protocol"), Mapping) else {}
    if protocol.get("type") == "learning_curve":
        fm = ctx.stored_fold_metrics()
        curves = tb.learning_curve_tidy(fm, [int(v) for v in protocol.get("sizes", [])],
                                        learners)
        write_csv(out / "tables" / "learning_curves.csv", curves)
        rep.add("## Learning curves",
                "Each learner trained on nested random samples of increasing size and tested "
                f"on the same {protocol.get('n_test', '?')} held-out instances (seed "
                f"{protocol.get('seed', '?')}); values per size in "
                "`tables/learning_curves.csv`.")
        for m in (x for x in tb.TABLE_METRICS if x in set(curves["metric"])):
            if not figures or m not in ("zero_one_loss", "rmse", "rmse_true_class"):
                continue
            from workbench.report import figures as fg

            part = curves[curves["metric"] == m]
            fig = fg.learning_curve_figure(part, m, learners)
            rep.place(fig, f"learning_curve_{m}",
                      f"{tb.TABLE_METRICS[m]} against the number of training instances "
                      "(log scale), per data set.")
