"""Every figure of a report keeps its text on the canvas at every figure width, and
stays within a page at the paper widths (matplotlib's tight bounding box against the
figure's size)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workbench.report import figures as fg
from workbench.report.options import PAPER_WIDTHS_CM
from workbench.report.render import render_report

LEARNERS = ["NB", "A1DE", "A1DE-SW", "A2DE", "A2DE-SW", "KDB1", "KDB2", "KDB3", "KDB4", "KDB5",
            "SKDB", "TAN", "AODE", "BayesNet-K2", "RF10-3.6.14", "WANBIA-C-ADAGRAD"]
"""Sixteen, some with long names: the legends of the JMLR 2016 and PAKDD 2013 reports."""
TOLERANCE = 0.02  # inches


def _summary() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for d in range(8):
        n = [150, 800, 3000, 20000][d % 4]
        for i, name in enumerate(LEARNERS):
            loss = float(rng.uniform(0.05, 0.4))
            rows.append({
                "dataset": f"data-set-{d:02d}", "learner": name, "n_instances": n,
                "rounds": 2, "folds": 5, "zero_one_loss": loss, "zero_one_loss_std": 0.02,
                "rmse": loss ** 0.5 / 2, "rmse_true_class": loss ** 0.5, "log_loss": loss * 2,
                "bias": loss * 0.7, "variance": loss * 0.3, "auc": 1 - loss / 2,
                "kappa": 1 - 2 * loss, "brier": loss, "model_bytes": 1000.0 * (i + 1),
                "train_cpu_seconds": 0.01 * (i + 1) * (d + 1),
                "test_cpu_seconds": 0.002 * (i + 1), "memory_saved": 0.3 + 0.01 * i,
            })
    return pd.DataFrame(rows)


def _config(width: str) -> dict:
    return {"name": "canvas", "learners": LEARNERS,
            "protocol": {"rounds": 2, "folds": 5, "seed": 1},
            "report": {"baseline": "NB", "figure_width": width,
                       "scatter": {"pairs": [["A2DE", "A1DE"], ["RF10-3.6.14", "NB"]],
                                   "metrics": ["zero_one_loss", "train_cpu_seconds"]},
                       "bayesian": {"rope": 0.01, "metrics": ["zero_one_loss", "auc"],
                                    "pairs": [["A1DE", "NB"], ["RF10-3.6.14", "A2DE"]],
                                    "samples": 2000},
                       "time_figures": {"reference": "NB", "learners": LEARNERS[1:],
                                        "pairs": [["A1DE", "NB"], ["A2DE-SW", "KDB2"]],
                                        "bars": LEARNERS[:7]},
                       "rank_figure": {"learners": LEARNERS[:6]}}}


def _problems(fig, name: str, width: str) -> list[str]:
    """What is wrong with a figure drawn at `width`: text off the canvas, a screen figure
    wider than the screen layout, a paper figure taller than a page."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    box = fig.get_tightbbox(FigureCanvasAgg(fig).get_renderer())
    w, h = fig.get_size_inches()
    out = []
    if (box.x0 < -TOLERANCE or box.y0 < -TOLERANCE or box.x1 > w + TOLERANCE
            or box.y1 > h + TOLERANCE):
        out.append(f"{name} ({w:.2f} x {h:.2f} in): text reaches "
                   f"({box.x0:.2f}, {box.y0:.2f}) - ({box.x1:.2f}, {box.y1:.2f})")
    if width == "screen" and w > fg.SCREEN_WIDTH + 1e-9:
        out.append(f"{name}: {w:.2f} in wide on screen")
    if width != "screen" and h > fg.MAX_HEIGHT + 1e-9:
        out.append(f"{name}: {h * 2.54:.1f} cm tall at {width}")
    return out


@pytest.mark.parametrize("width", ["screen", *PAPER_WIDTHS_CM])
def test_no_text_leaves_the_canvas(width, tmp_path, monkeypatch):
    seen, problems = [], []

    def checked(fig, base):  # measured, not written (writing is tested elsewhere)
        seen.append(base.name)
        problems.extend(_problems(fig, base.name, width))
        return []

    monkeypatch.setattr(fg, "save_figure", checked)
    render_report(tmp_path, tmp_path / "report", summary=_summary(), config=_config(width))
    assert {"fig1_bias_variance", "fig4_time", "cd_zero_one_loss", "scatter_zero_one_loss",
            "bayes_auc", "time_per_dataset", "rank_figure", "memory_saved"} <= set(seen)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("width", ["screen", *PAPER_WIDTHS_CM])
def test_learning_curves_fit_the_canvas(width):
    from workbench.report.options import figure_width_inches

    rows = [[f"data-set-{d:02d}", name, n, "zero_one_loss", 0.5 / (1 + i + n / 1000)]
            for d in range(12) for i, name in enumerate(LEARNERS) for n in (50, 200, 800)]
    curves = pd.DataFrame(rows, columns=["dataset", "learner", "n_train", "metric", "value"])
    with fg.paper_width(figure_width_inches(width)):
        fig = fg.learning_curve_figure(curves, "zero_one_loss", LEARNERS)
        assert not _problems(fig, "learning_curve", width)
