"""Figures of the report (matplotlib, Agg backend, PNG + PDF, byte-reproducible).

- Normalised grouped bars (the paper's Figs. 1–4): one group per collection, one bar per
  learner. A bar is the **geometric mean over the collection's data sets of the per-data-set
  ratio learner / baseline** (so the baseline is exactly 1). Zeros: a data set where both
  values are 0 counts as ratio 1; a data set where exactly one of the two is 0 (ratio 0 or
  ∞) or either is missing is *left out* of that learner's mean, and the number left out is
  stated in the caption.
- Critical-difference diagram (Demšar 2006): average ranks (1 = lowest value) with the
  Nemenyi CD; learners joined by a bar do not differ significantly.
- Pairwise scatter plots: learner A (y) against learner B (x), one point per data set,
  the diagonal y = x; points below the diagonal are data sets where A is lower.

Every figure is saved with fixed metadata (PNG 'Software' = 'workbench', PDF without
creation date) so that rendering twice gives identical bytes. PDF and PS embed TrueType
(Type 42) fonts, never Type 3 (which IEEE/ACM checks flag).

Width: by default each figure takes the width its content needs (a screen report). Inside
`paper_width(inches)` (report option ``figure_width``: ``column`` 8.5 cm, ``lncs`` 12.2 cm,
``page`` 17 cm or a length in cm) every figure is drawn at exactly that width with text of
7–8 pt, so it can be included at 100 % in a paper and no text is below 7 pt.
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.lines  # noqa: E402
import matplotlib.patches  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from workbench.report._io import write_bytes  # noqa: E402
from workbench.evaluation.metrics import lower_is_better, metric_names  # noqa: E402
from workbench.report.tables import TABLE_METRICS  # noqa: E402
from workbench.stats.wdl import metric_matrix  # noqa: E402

PNG_METADATA = {"Software": "workbench"}
PDF_METADATA = {"CreationDate": None, "ModDate": None, "Producer": "workbench",
                "Creator": "workbench"}
DPI = 120
T = TypeVar("T")

GROUP_COLOURS = {"large": "#1f77b4", "medium": "#ff7f0e", "small": "#2ca02c"}

# the paper's figures
BAR_FIGURES: dict[str, tuple[str, list[str]]] = {
    "fig1_bias_variance": ("Bias and variance", ["bias", "variance"]),
    "fig2_zero_one_loss": ("0-1 loss", ["zero_one_loss"]),
    "fig3_rmse": ("RMSE", ["rmse", "rmse_true_class"]),
    "fig4_time": ("Training and classification time", ["train_cpu_seconds", "test_cpu_seconds"]),
}


def bar_figures(metrics: list[str]) -> dict[str, tuple[str, list[str]]]:
    """The paper's figures, then one normalised bar figure for every other table metric of
    the run (a metric declared in the registry gets a figure without code here)."""
    out = dict(BAR_FIGURES)
    covered = {m for _, ms in BAR_FIGURES.values() for m in ms}
    for m in metrics:
        if m not in covered:
            out[f"fig_{m}"] = (TABLE_METRICS.get(m, m), [m])
    return out


MIN_PAPER_POINTS = 7.0

_paper_width: float | None = None  # inches, inside `paper_width`


@contextlib.contextmanager
def paper_width(inches: float | None):
    """Draw every figure at `inches` wide with 7–8 pt text (None: the screen layout)."""
    global _paper_width
    previous, _paper_width = _paper_width, inches
    try:
        yield
    finally:
        _paper_width = previous


def _fs(points: float) -> float:
    """A font size: as given on screen; 7–8 pt at a paper width."""
    return points if _paper_width is None else max(MIN_PAPER_POINTS, min(points, 8.0))


def _width(natural: float) -> float:
    """A figure's width in inches: what its content needs (at most `SCREEN_WIDTH`), or the
    paper width."""
    return min(natural, SCREEN_WIDTH) if _paper_width is None else _paper_width


def _style() -> dict:
    sizes = {"font.size": _fs(9), "axes.titlesize": _fs(10), "axes.labelsize": _fs(9),
             "legend.fontsize": _fs(8), "legend.title_fontsize": _fs(9),
             "xtick.labelsize": _fs(8), "ytick.labelsize": _fs(8),
             "figure.titlesize": _fs(11)}
    return {**sizes, "svg.hashsalt": "workbench", "path.simplify": True,
            "pdf.fonttype": 42, "ps.fonttype": 42}


def styled(func: Callable[..., T]) -> Callable[..., T]:
    """Run a figure builder under the report's fixed style (ignores the user's matplotlibrc)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        with plt.style.context("default"), matplotlib.rc_context(_style()):
            return func(*args, **kwargs)

    return wrapper


def new_figure(width: float, height: float) -> Figure:
    """A new (pyplot-free) figure of the given size in inches."""
    return Figure(figsize=(width, height), dpi=DPI)


@styled
def save_figure(fig: Figure, base: Path) -> list[Path]:
    """Save ``fig`` as ``base.png`` and ``base.pdf`` (atomically, fixed metadata)."""
    out = []
    for fmt, meta in (("png", PNG_METADATA), ("pdf", PDF_METADATA)):
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, metadata=meta, dpi=DPI)
        out.append(write_bytes(base.with_suffix(f".{fmt}"), buf.getvalue()))
    return out


def learner_colours(learners: Sequence[str]) -> dict[str, tuple]:
    """A fixed colour per learner (tab10, or tab20 for more than ten)."""
    cmap = matplotlib.colormaps["tab10" if len(learners) <= 10 else "tab20"]
    return {name: cmap(i % cmap.N) for i, name in enumerate(learners)}


def _n_sets(n: int) -> str:
    return f"{n} data set" if n == 1 else f"{n} data sets"


def _plain_number(value: float, _pos: int | None = None) -> str:
    """Tick label without exponent notation: 0.5, 1, 20, 1000."""
    return f"{value:g}" if 1e-4 <= abs(value) < 1e6 else f"{value:.0e}"


# ------------------------------------------------------------------- normalised bars
@dataclass
class Normalised:
    """Geometric-mean ratios to the baseline for one metric and one collection."""

    ratio: pd.Series  # learner -> geometric mean ratio (NaN when no data set usable)
    used: pd.Series  # learner -> data sets used
    skipped: pd.Series  # learner -> data sets left out (exactly one value 0, or missing)


def normalised_ratios(
    summary: pd.DataFrame, metric: str, learners: Sequence[str], baseline: str,
    datasets: Sequence[str],
) -> Normalised:
    """Geometric mean over ``datasets`` of value(learner) / value(baseline), per learner."""
    wide = metric_matrix(summary, metric, list(learners), datasets)
    base = wide[baseline].to_numpy()
    ratio, used, skipped = {}, {}, {}
    for name in learners:
        v = wide[name].to_numpy()
        ok = ~(np.isnan(v) | np.isnan(base))
        both_zero = ok & (v == 0) & (base == 0)
        positive = ok & (v > 0) & (base > 0)
        logs = np.concatenate([np.log(v[positive] / base[positive]), np.zeros(both_zero.sum())])
        n_used = int(logs.size)
        ratio[name] = float(np.exp(logs.mean())) if n_used else float("nan")
        used[name] = n_used
        skipped[name] = int(len(v) - n_used)
    return Normalised(pd.Series(ratio), pd.Series(used), pd.Series(skipped))


@styled
def normalised_bar_figure(
    summary: pd.DataFrame, metrics: Sequence[str], learners: Sequence[str], baseline: str,
    collections: Mapping[str, Sequence[str]], title: str,
) -> tuple[Figure, str]:
    """Grouped bars (group = collection, bar = learner) of normalised metrics; + caption."""
    learners = list(learners)
    colls = [c for c, members in collections.items() if len(members) > 0]
    n_panels = len(metrics)
    width = _width(max(6.0, 2.6 + 0.2 * len(learners) * max(1, len(colls))))
    paper = _paper_width is not None
    legend_cols = _legend_columns(learners, width)
    legend_h = 0.2 + 0.16 * math.ceil(len(learners) / legend_cols) if paper else 0.0
    heading, top_h = _title_block([title], width, gap=0.35) if paper else (title, 0.8)
    panel_h, bottom_h = (2.2, 0.6 + legend_h) if paper else (3.0, 0.75)
    if paper:  # within a page: lower panels when the legend is long
        panel_h = max(1.4, min(panel_h, (MAX_HEIGHT - top_h - bottom_h) / n_panels))
    height = n_panels * panel_h + top_h + bottom_h
    if not paper:  # the legend (one learner a line, right of the top panel) must fit
        height = max(height, top_h + 0.21 * (len(learners) + 1) + 0.4
                     + (n_panels - 1) * panel_h)
    fig = new_figure(width, height)
    # fixed margins in inches (no tight bbox: faster and layout-stable)
    left, right = (0.75, 0.1) if paper else (
        1.0, 0.75 + max(_text_inches(n, 8.0) for n in learners + ["learner"]))
    fig.subplots_adjust(left=left / width, right=1.0 - right / width, top=1.0 - top_h / height,
                        bottom=bottom_h / height, hspace=0.75 / panel_h * n_panels / 1.5)
    axes = fig.subplots(n_panels, 1, squeeze=False)[:, 0]
    colours = learner_colours(learners)
    notes = []
    bar_w = 0.8 / max(1, len(learners))
    for ax, metric in zip(axes, metrics):
        label = TABLE_METRICS.get(metric, metric)
        log = metric in metric_names(log=True)
        drawn = [1.0]
        for ci, coll in enumerate(colls):
            norm = normalised_ratios(summary, metric, learners, baseline, collections[coll])
            for li, name in enumerate(learners):
                x = ci + (li - (len(learners) - 1) / 2) * bar_w
                val = norm.ratio[name]
                if not math.isnan(val):
                    drawn.append(val)
                    # log axes: bars grow up or down from the baseline's 1
                    ax.bar(x, val - 1.0 if log else val, bottom=1.0 if log else 0.0,
                           width=bar_w * 0.95, color=colours[name],
                           label=name if ci == 0 else None, edgecolor="black", linewidth=0.3)
                    if log:  # a cap at the value: a ratio of 1 (the baseline) stays visible
                        ax.plot([x - bar_w * 0.475, x + bar_w * 0.475], [val, val],
                                color=colours[name], linewidth=2.5, solid_capstyle="butt",
                                zorder=3)
                if norm.skipped[name] and name != baseline:
                    notes.append(f"{label}, {coll}, {name}: {norm.skipped[name]} data set(s) "
                                 f"left out (zero or missing value)")
        if not colls:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center")
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_xticks(range(len(colls)))
        ticks = [f"{c}\n({_n_sets(len(collections[c]))})" for c in colls]
        slot = (width - left - right) / max(1, len(colls))  # inches per collection
        if max((_text_inches(t, _fs(8)) for t in ticks), default=0.0) > slot:
            ax.set_xticklabels([f"{c}\n({len(collections[c])})" for c in colls],
                               rotation=30, ha="right", rotation_mode="anchor")
        else:
            ax.set_xticklabels(ticks)
        ax.set_xlim(-0.5, len(colls) - 0.5)
        if log:
            ax.set_yscale("log")
            lo_v, hi_v = min(drawn) / 1.25, max(drawn) * 1.25
            ax.set_ylim(lo_v, hi_v)
            subs = (1.0, 2.0, 5.0) if hi_v / lo_v > 10 else (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
            ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=subs))
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain_number))
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_ylabel(f"{label}\nrelative to {baseline}" + ("" if paper else " (geo. mean)"))
        ax.set_xlabel("collection")
        ax.set_title(_wrap_title([f"{label}, normalised to {baseline}"],
                                 width - left - right + 0.2, _fs(10)))
        ax.grid(axis="y", linewidth=0.3, alpha=0.6)
        ax.set_axisbelow(True)
        handles, labels = ax.get_legend_handles_labels()
        if handles and ax is axes[0] and paper:
            fig.legend(handles, labels, loc="lower center", ncols=legend_cols, frameon=False,
                       bbox_to_anchor=(0.5, 0.0), columnspacing=LEGEND_SPACING)
        elif handles and ax is axes[0]:
            ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                      title="learner", frameon=False)
    fig.suptitle(heading, y=1 - 0.12 / height, va="top", fontsize=_fs(11))
    caption = (
        f"{title}. Each bar is the geometric mean, over the data sets of the collection, of "
        f"the learner's value divided by {baseline}'s on the same data set ({baseline} = 1, "
        f"dashed line; {_direction(metrics)}). Data sets where both values are 0 count as ratio 1; "
        f"data sets where exactly one of the two is 0 or either is missing are left out of "
        f"that learner's mean."
    )
    if any(m in metric_names(log=True) for m in metrics):
        caption += (" Times are CPU seconds; the" if any(m.endswith("_seconds") for m in metrics)
                    else " The") + (
            " value axes are logarithmic and their bars start at 1 "
            f"({baseline}), going up for higher values and down for lower ones; a thick cap "
            f"marks each value, so a ratio of 1 ({baseline}'s own) shows as a line at 1.")
    if notes:
        caption += " Left out: " + "; ".join(notes) + "."
    return fig, caption


def _direction(metrics: Sequence[str]) -> str:
    """'lower is better', naming the metrics where higher is."""
    higher = [TABLE_METRICS.get(m, m) for m in metrics if not lower_is_better(m)]
    if not higher:
        return "lower is better"
    if len(higher) == len(metrics):
        return "higher is better"
    return f"lower is better, except for {', '.join(higher)}"


# ------------------------------------------------------------------- CD diagram
@styled
def cd_diagram(avg_ranks: pd.Series, cd: float, cliques: Sequence[Sequence[str]],
               title: str) -> Figure:
    """Demšar-style critical-difference diagram of average ranks (1 = best, on the left).
    The label columns are as wide as the longest label, so no name is cut off."""
    order = avg_ranks.sort_values(kind="mergesort")
    names, ranks = list(order.index), order.to_numpy()
    k = len(names)
    lo, hi = 1, max(k, 2)
    half = (k + 1) // 2
    rows = max(half, k - half)
    width = _width(7.0)
    labels = [f"{name} ({r:.2f})" for name, r in zip(names, ranks)]
    room = 0.4 * width - 0.2  # a label column takes at most 40 % of the width
    labels = [t if _text_inches(t, _fs(8)) <= room else t.replace(" (", "\n(")
              for t in labels]  # too long: the rank under the name
    margin = (max((_text_inches(t, _fs(8)) for t in labels), default=0.0) + 0.2) / width
    left, right = min(margin, 0.4), max(1.0 - margin, 0.6)
    heading = _wrap_title([title, "average rank: 1 = best"], width, _fs(9))
    # vertical layout in inches from the top (the axes maps 1 unit = 1 inch)
    extra = heading.count("\n") * _fs(9) * 1.3 / 72
    title_y, cd_y, axis_y = 0.3 + extra / 2, 0.8 + extra, 1.3 + extra
    clique_y0 = axis_y + 0.18
    label_y0 = clique_y0 + 0.13 * len(cliques) + 0.2
    height = label_y0 + 0.28 * max(rows - 1, 0) + 0.35
    fig = new_figure(width, height)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_axis_off()
    ax.set_xlim(0, 1)
    ax.set_ylim(height, 0)

    def xpos(r: float) -> float:
        return left + (r - lo) / (hi - lo) * (right - left)

    ax.text(0.5, title_y, heading, ha="center", va="center", fontsize=_fs(9))
    ax.plot([xpos(lo), xpos(hi)], [axis_y, axis_y], color="black", linewidth=1)
    for t in range(lo, hi + 1):
        ax.plot([xpos(t), xpos(t)], [axis_y, axis_y - 0.07], color="black", linewidth=1)
        ax.text(xpos(t), axis_y - 0.1, str(t), ha="center", va="bottom", fontsize=_fs(8))
    # CD bar, above the axis at the left end
    cd_end = xpos(min(lo + cd, hi))  # a CD longer than the axis is drawn to its end
    ax.plot([xpos(lo), cd_end], [cd_y, cd_y], color="black", linewidth=1.5)
    for x in (xpos(lo), cd_end):
        ax.plot([x, x], [cd_y - 0.05, cd_y + 0.05], color="black", linewidth=1)
    longer = " (longer than the axis)" if lo + cd > hi else ""
    cd_text = f"CD = {cd:.3f}{longer}"
    if _text_inches(cd_text, _fs(8)) <= (1.0 - cd_end) * width - 0.1:  # right of the bar
        ax.text(cd_end + 0.01, cd_y, cd_text, ha="left", va="center", fontsize=_fs(8))
    else:  # a long bar: its label above it
        ax.text(xpos(lo), cd_y - 0.12, cd_text, ha="left", va="bottom", fontsize=_fs(8))
    # cliques (groups not significantly different), just below the axis
    for i, group in enumerate(cliques):
        rs = [float(avg_ranks[n]) for n in group]
        y = clique_y0 + 0.13 * i
        ax.plot([xpos(min(rs)) - 0.005, xpos(max(rs)) + 0.005], [y, y], color="black",
                linewidth=3, solid_capstyle="round")
    for i, (label, r) in enumerate(zip(labels, ranks)):
        if i < half:
            y = label_y0 + 0.28 * i
            xt, ha = left - 0.03, "right"
        else:
            y = label_y0 + 0.28 * (k - 1 - i)
            xt, ha = right + 0.03, "left"
        ax.plot([xpos(r), xpos(r), xt + (0.01 if ha == "right" else -0.01)],
                [axis_y, y, y], color="black", linewidth=0.8)
        ax.text(xt, y, label, ha=ha, va="center", fontsize=_fs(8))
    return fig


LEGEND_SPACING = 1.0
"""Space between legend columns (em; matplotlib's default is 2)."""


def _legend_columns(names: Sequence[str], width: float, points: float | None = None) -> int:
    """How many legend columns of `names` fit in `width` inches (measured, with the
    marker, its gap and `LEGEND_SPACING` between columns: 3.8 em)."""
    size = _fs(8) if points is None else points
    col = max((_text_inches(str(n), size) for n in names), default=0.5) + 3.8 * size / 72
    return max(1, min(len(names), int((width - 0.2) // col)))


def _text_inches(text: str, points: float) -> float:
    """The width of one line of `text` at `points` in the report's font (inches)."""
    from matplotlib.textpath import TextPath

    return max(TextPath((0, 0), line, size=points).get_extents().width
               for line in text.split("\n")) / 72.0


# ------------------------------------------------------------------- scatter plots
@styled
def scatter_figure(
    summary: pd.DataFrame, metric: str, pairs: Sequence[tuple[str, str]],
    groups: Mapping[str, str], log: bool = False, title: str | None = None,
) -> Figure:
    """Grid of scatter plots, one per (A, B): A's value (y) vs B's (x) per data set."""
    learners = list(dict.fromkeys([p for pair in pairs for p in pair]))
    wide = metric_matrix(summary, metric, learners)
    label = TABLE_METRICS.get(metric, metric)
    ncols, nrows, width, row_h, head, heading = _scatter_grid(
        len(pairs), [title or f"{label} per data set",
                     "points below the diagonal: the learner on the y axis is lower"])
    height = row_h * nrows - 0.6 + head + 1.0
    fig = new_figure(width, height)
    fig.subplots_adjust(left=0.9 / width, right=1 - 0.35 / width, top=1 - head / height,
                        bottom=1.0 / height, wspace=0.45,
                        hspace=0.5 if _paper_width is None else 0.75)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    colour = [GROUP_COLOURS.get(groups.get(str(d), ""), "#7f7f7f") for d in wide.index]
    for ax, (a, b) in zip(axes, pairs):
        x, y = wide[b].to_numpy(), wide[a].to_numpy()
        ok = ~(np.isnan(x) | np.isnan(y))
        if log:
            ok &= (x > 0) & (y > 0)
        cols = [c for c, keep in zip(colour, ok) if keep]
        ax.scatter(x[ok], y[ok], s=14, c=cols, edgecolors="black", linewidths=0.3, zorder=3)
        if ok.any():
            lo_v = float(min(x[ok].min(), y[ok].min()))
            hi_v = float(max(x[ok].max(), y[ok].max()))
        else:
            lo_v, hi_v = (0.1, 1.0) if log else (0.0, 1.0)
        if log:
            lo_v, hi_v = lo_v / 1.3, hi_v * 1.3
            ax.set_xscale("log")
            ax.set_yscale("log")
            decades = math.log10(hi_v / lo_v)
            subs = (1.0, 2.0, 3.0, 5.0) if decades <= 1.5 else (
                (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,))
            for axis in (ax.xaxis, ax.yaxis):  # labelled ticks even within one decade
                axis.set_major_locator(matplotlib.ticker.LogLocator(subs=subs, numticks=12))
                axis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain_number))
                axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        else:
            pad = 0.05 * (hi_v - lo_v if hi_v > lo_v else 1.0)
            lo_v, hi_v = lo_v - pad, hi_v + pad
        ax.plot([lo_v, hi_v], [lo_v, hi_v], color="black", linewidth=0.8, linestyle="--",
                zorder=2)
        ax.set_xlim(lo_v, hi_v)
        ax.set_ylim(lo_v, hi_v)
        ax.set_aspect("equal", adjustable="box")
        below = int(np.sum(y[ok] < x[ok]))
        above = int(np.sum(y[ok] > x[ok]))
        narrow = (width - 1.25) / ncols < 1.4  # counts on lines of their own
        ax.set_title(f"{a}\n{below} lower\n{above} higher" if narrow else
                     f"{a} vs {b}\nlower on {below}, higher on {above}", fontsize=_fs(9))
        short = _paper_width is not None  # narrow panels: the metric is in the title
        side = (width - 1.25) / ncols  # a panel's side, inches
        ax.set_xlabel(b if short else _wrap_title([f"{b}: {label}"], side + 0.2, _fs(9)))
        ax.set_ylabel(a if short else _wrap_title([f"{a}: {label}"], side + 0.2, _fs(9)))
        ax.grid(linewidth=0.3, alpha=0.6)
    for ax in axes[len(pairs):]:
        ax.set_axis_off()
    handles = [matplotlib.lines.Line2D([], [], marker="o", linestyle="", color=c,
                                       markeredgecolor="black", label=g)
               for g, c in GROUP_COLOURS.items()]
    fig.legend(handles=handles, loc="lower center", ncols=3, title="size group",
               frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(heading, y=1 - 0.15 / height, va="top", fontsize=_fs(SUPTITLE_POINTS))
    return fig


SUPTITLE_POINTS = 10.0
MAX_HEIGHT = 8.5
"""Tallest figure drawn at a paper width (inches, 21.6 cm: within an A4 or LNCS page's
text height with its caption)."""
SCREEN_WIDTH = 9.0
"""Widest figure of the screen layout (inches: 1,080 px at 120 dpi, within the HTML page's
1,100 px column, so a 1,280 px screen shows every figure at full size)."""


def _scatter_grid(panels: int, title: Sequence[str]
                  ) -> tuple[int, int, float, float, float, str]:
    """(columns, rows, width, row height, title height, title) of the scatter grid: up to
    four panels a row on screen (2.35 inches, less to stay within `SCREEN_WIDTH`); at a paper width as many columns as keep the
    figure within `MAX_HEIGHT` (panels of at least 2.2 inches while they fit)."""
    n = max(1, panels)
    if _paper_width is None:
        ncols = min(4, n)
        width = min(SCREEN_WIDTH, 2.35 * ncols + 0.9)
        heading, head = _title_block(title, width)
        return ncols, math.ceil(n / ncols), width, (width - 1.1) / ncols + 0.95, head, heading
    width = _paper_width
    heading, head = _title_block(title, width)
    ncols, nrows, row_h = _fitting_columns(n, min(n, max(1, int((width - 0.3) // 2.2))),
                                           lambda c: (width - 0.9) / c * 0.75 + 0.75,
                                           head + 0.4)
    return ncols, nrows, width, row_h, head, heading


def _fitting_columns(panels: int, ncols: int, row_height: Callable[[int], float],
                     other: float) -> tuple[int, int, float]:
    """(columns, rows, row height) of a grid of `panels` at a paper width: from `ncols`
    columns, one more (narrower panels) until rows · row_height(columns) + `other`
    inches fit in `MAX_HEIGHT`."""
    while True:
        nrows = math.ceil(panels / ncols)
        row_h = row_height(ncols)
        if row_h * nrows + other <= MAX_HEIGHT or ncols >= panels:
            return ncols, nrows, row_h
        ncols += 1


def _panel_grid(panels: int, min_panel: float = 2.3) -> tuple[int, int, float]:
    """(columns, rows, figure width in inches) of a grid of 3.4-inch panels, ≤ 3 a row (at
    a paper width: as many panels of at least `min_panel` inches as fit)."""
    per_row = 3 if _paper_width is None else max(1, int((_paper_width - 0.3) // min_panel))
    ncols = min(per_row, max(1, panels))
    return ncols, math.ceil(max(1, panels) / ncols), _width(3.4 * ncols + 0.3)


def _title_block(parts: Sequence[str], width_in: float, gap: float = 0.7
                 ) -> tuple[str, float]:
    """A figure's wrapped title and the inches it needs above the axes (+ `gap`)."""
    points = _fs(SUPTITLE_POINTS)
    heading = _wrap_title(parts, width_in, points)
    return heading, 0.15 + heading.count("\n") * points * 1.35 / 72 + gap


def _wrap_title(parts: Sequence[str], width_in: float, points: float) -> str:
    """Lines of a figure title wrapped to fit ``width_in`` inches at ``points`` size
    (about 0.55 em per character), so a narrow figure never cuts its title off."""
    chars = max(16, int((width_in - 0.2) * 72 / (0.55 * points)))
    lines = [line for part in parts for line in textwrap.wrap(part, chars) or [""]]
    return "\n".join(lines)


# ------------------------------------------------------------------- learning curves
@styled
def learning_curve_figure(curves: pd.DataFrame, metric: str, learners: Sequence[str],
                          title: str | None = None) -> Figure:
    """Error against training-set size (log x axis), one panel per data set and one line
    per learner; ``curves`` has columns dataset, learner, n_train, value."""
    datasets = list(dict.fromkeys(curves["dataset"]))
    ncols, nrows, width = _panel_grid(len(datasets), min_panel=1.8)
    label = TABLE_METRICS.get(metric, metric)
    heading, head = _title_block([title or f"{label} against training-set size",
                                  "one line per learner; fixed held-out test set"], width)
    legend_cols = _legend_columns(learners, width)
    legend_rows = math.ceil(len(learners) / legend_cols)
    if _paper_width is None:
        row_h = 3.0
    else:  # as many columns as keep the figure within a page
        ncols, nrows, row_h = _fitting_columns(
            max(1, len(datasets)), ncols, lambda c: (width - 0.3) / c * 0.8 + 0.6,
            head + 0.6 + 0.25 * legend_rows)
    height = row_h * nrows + head + 0.6 + 0.25 * legend_rows
    fig = new_figure(width, height)
    fig.subplots_adjust(left=0.75 / width, right=1 - 0.35 / width, top=1 - head / height,
                        bottom=(0.6 + 0.25 * legend_rows) / height, wspace=0.35, hspace=0.55)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    colours = learner_colours(learners)
    for ax, d in zip(axes, datasets):
        part = curves[curves["dataset"] == d]
        for name in learners:
            line = part[part["learner"] == name].sort_values("n_train")
            if line.empty:
                continue
            ax.plot(line["n_train"], line["value"], marker="o", markersize=3,
                    linewidth=1.0, color=colours[name], label=name)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain_number))
        ax.set_title(str(d), fontsize=_fs(9))
        ax.set_xlabel("training instances")
        ax.set_ylabel(label)
        ax.grid(linewidth=0.3, alpha=0.6)
    for ax in axes[len(datasets):]:
        ax.set_axis_off()
    handles = [matplotlib.lines.Line2D([], [], marker="o", color=colours[name], label=name)
               for name in learners]
    fig.legend(handles=handles, loc="lower center", ncols=legend_cols,
               frameon=False, bbox_to_anchor=(0.5, 0.0), columnspacing=LEGEND_SPACING)
    fig.suptitle(heading, y=1 - 0.15 / height, va="top", fontsize=_fs(SUPTITLE_POINTS))
    return fig


# ------------------------------------------------------------- layout savings (Fig. 4a, 4b)
def memory_saved_figure(summary: pd.DataFrame, learners: Sequence[str]) -> Figure:
    """Share of the naive count layout the compact one saves, per data set (grouped bars,
    one per learner): Salem et al.'s Fig. 4a."""
    return share_saved_figure(metric_matrix(summary, "memory_saved", learners),
                              ["Count tables: share of the naive layout saved by the compact "
                               "one", "(impossible same-attribute value combinations left "
                               "out)"], "memory saved (%)")


@styled
def share_saved_figure(wide: pd.DataFrame, lines: Sequence[str], ylabel: str) -> Figure:
    """Grouped bars of shares (0..1, drawn in %) per data set (rows of `wide`), one bar per
    learner (its columns): Salem et al.'s Fig. 4."""
    wide = wide.dropna(how="all")
    learners = list(wide.columns)
    names = [name for name in learners if wide[name].notna().any()]
    n = max(1, wide.shape[0])
    width = _width(min(16.0, max(6.5, 2.6 + 0.16 * n * max(1, len(names)))))
    paper = _paper_width is not None
    heading, head = _title_block(list(lines), width, gap=0.45)
    legend_cols = _legend_columns(names, width - 0.2)
    legend_h = 0.25 * math.ceil(len(names) / legend_cols) if paper else 0.0
    label_h = 0.25 + 0.075 * max((len(str(d)) for d in wide.index), default=4)
    height = 2.3 + label_h + legend_h + head
    right = 0.1 if paper else 0.75 + max(_text_inches(n, 8.0) for n in names)
    fig = new_figure(width, height)
    fig.subplots_adjust(left=0.7 / width, right=1 - right / width,
                        top=1 - head / height, bottom=(label_h + legend_h) / height)
    ax = fig.subplots()
    colours = learner_colours(learners)
    step = 0.8 / max(1, len(names))
    x = np.arange(wide.shape[0])
    for i, name in enumerate(names):
        ax.bar(x + (i - (len(names) - 1) / 2) * step, 100 * wide[name].to_numpy(),
               width=step * 0.95, color=colours[name], label=name)
    ax.set_xticks(x)
    ax.set_xticklabels([str(d) for d in wide.index], rotation=90, fontsize=7.0)
    ax.set_ylabel(ylabel)
    ax.set_xlim(-0.6, wide.shape[0] - 0.4)
    ax.axhline(0.0, color="black", linewidth=0.5)
    ax.grid(axis="y", linewidth=0.3, alpha=0.6)
    if paper:  # below the data set names
        fig.legend(loc="lower center", frameon=False, fontsize=_fs(8), ncols=legend_cols,
                   bbox_to_anchor=(0.5, 0.0), columnspacing=LEGEND_SPACING)
    else:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
    fig.suptitle(heading, y=1 - 0.15 / height, va="top", fontsize=_fs(SUPTITLE_POINTS))
    return fig


# ------------------------------------------------------------------- Bayesian signed-rank
@styled
def bayes_simplex_figure(results: Sequence[tuple[str, str, Any]], metric: str,
                         title: str | None = None, points: int = 3000) -> Figure:
    """One simplex per comparison (A, B, `stats.bayesian.SignedRank`): posterior samples of
    (θ_A, θ_rope, θ_B) in barycentric coordinates — A better at the left corner, B better at
    the right, practical equivalence at the top; the three regions are split where two θs
    are equal (lines from the centre to the sides' midpoints)."""
    from workbench.stats.bayesian import simplex_xy

    ncols, nrows, width = _panel_grid(len(results), min_panel=1.5)
    label = TABLE_METRICS.get(metric, metric)
    rope = results[0][2].rope if results else 0.0
    heading, head = _title_block([title or f"{label}: Bayesian signed-rank tests (rope "
                                  f"{rope:g})", "posterior samples; a corner: that learner "
                                  "better by more than the rope (top: equivalent), with its "
                                  "posterior probability"], width)
    height = (width - 0.2) / ncols * 1.3 * nrows + head + 0.2
    fig = new_figure(width, height)
    fig.subplots_adjust(left=0.1 / width, right=1 - 0.1 / width, top=1 - head / height,
                        bottom=0.2 / height, wspace=0.15, hspace=0.35)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    h = math.sqrt(3) / 2
    centre = (0.5, h / 3)
    for ax, (a, b, res) in zip(axes, results):
        ax.plot([0, 1, 0.5, 0], [0, 0, h, 0], color="black", linewidth=0.8)
        for mid in ((0.5, 0.0), (0.75, h / 2), (0.25, h / 2)):
            ax.plot([centre[0], mid[0]], [centre[1], mid[1]], color="grey", linewidth=0.6,
                    linestyle="--")
        step = max(1, res.samples.shape[0] // points)
        xy = simplex_xy(res.samples[::step])
        ax.scatter(xy[:, 0], xy[:, 1], s=1.5, color="#1f77b4", alpha=0.25, linewidths=0)
        ax.text(0.0, -0.06, f"{a}\n{res.p_a_better:.3f}", ha="left", va="top",
                fontsize=_fs(8))
        ax.text(1.0, -0.06, f"{b}\n{res.p_b_better:.3f}", ha="right", va="top",
                fontsize=_fs(8))
        ax.text(0.5, h + 0.03, f"rope {res.p_rope:.3f}", ha="center", va="bottom",
                fontsize=_fs(8))
        ax.set_title(f"{a} vs {b}\n{res.n} data sets", fontsize=_fs(9), pad=14)
        ax.set_xlim(-0.05, 1.05)
        ax.set_ylim(-0.22, h + 0.12)
        ax.set_aspect("equal")
        ax.set_axis_off()
    for ax in axes[len(results):]:
        ax.set_axis_off()
    fig.suptitle(heading, y=1 - 0.15 / height, va="top", fontsize=_fs(SUPTITLE_POINTS))
    return fig


# ------------------------------------------------------------------- JMLR 2016: times, ranks
TIME_PANELS = (("train_cpu_seconds", "training"), ("test_cpu_seconds", "classification"))


@styled
def time_pairs_figure(summary: pd.DataFrame, pairs: Sequence[tuple[str, str]],
                      title: str) -> Figure:
    """Training and classification CPU seconds summed over the data sets both learners of a
    pair have, the pair's bars side by side (JMLR 2016's Fig. 3)."""
    width = _width(max(6.0, 1.2 + 0.9 * len(pairs)))
    heading, head = _title_block([title], width, gap=0.35)
    height = 2.0 * 2.4 + head + 0.9
    fig = new_figure(width, height)
    fig.subplots_adjust(left=0.8 / width, right=1 - 0.15 / width, top=1 - head / height,
                        bottom=0.9 / height, hspace=0.55)
    axes = fig.subplots(2, 1)
    learners = list(dict.fromkeys(p for pair in pairs for p in pair))
    colours = {"first": "#1f77b4", "second": "#ff7f0e"}
    for ax, (metric, label) in zip(axes, TIME_PANELS):
        wide = metric_matrix(summary, metric, learners)
        for i, (a, b) in enumerate(pairs):
            both = wide[[a, b]].dropna()
            for j, (name, side) in enumerate(((a, "first"), (b, "second"))):
                ax.bar(i + (j - 0.5) * 0.38, float(both[name].sum()), width=0.36,
                       color=colours[side], edgecolor="black", linewidth=0.3)
        ax.set_xticks(range(len(pairs)))
        ax.set_xticklabels([f"{a}\n{b}" for a, b in pairs], fontsize=_fs(8))
        ax.set_ylabel(f"{label}\nCPU seconds (sum)")
        ax.grid(axis="y", linewidth=0.3, alpha=0.6)
        ax.set_axisbelow(True)
    handles = [matplotlib.patches.Patch(color=c, label=t) for t, c in
               (("first of the pair", colours["first"]), ("second", colours["second"]))]
    fig.legend(handles=handles, loc="lower center", ncols=2, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(heading, y=1 - 0.12 / height, va="top", fontsize=_fs(SUPTITLE_POINTS))
    return fig


def _time_panels(width: float, title: str, learners: Sequence[str], datasets: Sequence[str]
                 ) -> tuple[Figure, Any, Callable[[], None]]:
    """Two stacked panels (training, classification) with data set names under each, room
    for a legend of `learners` and the title; `finish()` draws the legend and the title
    once the panels are filled."""
    heading, head = _title_block([title], width, gap=0.35)
    legend_cols = _legend_columns(learners, width)
    legend_h = 0.25 * math.ceil(len(learners) / legend_cols)
    label_h = 0.1 + 0.07 * max((len(str(d)) for d in datasets), default=4)
    panel_h = 2.4 if _paper_width is None else max(
        1.2, min(1.8, (MAX_HEIGHT - 2 * label_h - head - 0.2 - legend_h) / 2))
    height = 2 * (panel_h + label_h) + head + 0.2 + legend_h
    fig = new_figure(width, height)
    fig.subplots_adjust(left=0.95 / width, right=1 - 0.15 / width, top=1 - head / height,
                        bottom=(label_h + 0.2 + legend_h) / height,
                        hspace=(label_h + 0.15) / panel_h)
    axes = fig.subplots(2, 1)

    def finish() -> None:
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncols=legend_cols,
                   frameon=False, bbox_to_anchor=(0.5, 0.0), columnspacing=LEGEND_SPACING)
        fig.suptitle(heading, y=1 - 0.12 / height, va="top", fontsize=_fs(SUPTITLE_POINTS))

    return fig, axes, finish


@styled
def time_per_dataset_figure(summary: pd.DataFrame, reference: str, learners: Sequence[str],
                            title: str) -> Figure:
    """Each learner's training and classification time relative to `reference` per data
    set (log axis, 1 = the reference), data sets in increasing reference time (JMLR 2016's
    Fig. 4)."""
    learners = [n for n in learners if n != reference]
    n_sets = len(set(summary["dataset"]))
    width = _width(max(6.0, 1.6 + 0.32 * n_sets))
    fig, axes, finish = _time_panels(width, title, learners, summary["dataset"])
    colours = learner_colours([reference, *learners])
    for ax, (metric, label) in zip(axes, TIME_PANELS):
        wide = metric_matrix(summary, metric, [reference, *learners])
        wide = wide[wide[reference] > 0].sort_values(reference, kind="mergesort")
        x = np.arange(len(wide))
        for name in learners:
            ratio = (wide[name] / wide[reference]).to_numpy()
            ok = np.isfinite(ratio) & (ratio > 0)
            ax.plot(x[ok], ratio[ok], marker="o", markersize=3, linewidth=0.8,
                    color=colours[name], label=name)
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain_number))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xticks(x)
        ax.set_xticklabels([str(d) for d in wide.index], rotation=90, fontsize=7.0)
        ax.set_ylabel(f"{label} time\nrelative to {reference}")
        ax.grid(linewidth=0.3, alpha=0.6)
    finish()
    return fig


def mean_fold_times(summary: pd.DataFrame, learners: Sequence[str]) -> pd.DataFrame:
    """Each learner's training and classification CPU seconds per fold (its totals over
    the folds divided by rounds × folds) per data set, long form (dataset, n_instances,
    learner, metric, seconds), data sets in increasing size."""
    rows = summary[summary["learner"].isin(list(learners))]
    folds = (rows["rounds"] * rows["folds"]).where(rows["rounds"] * rows["folds"] > 0, 1) \
        if {"rounds", "folds"} <= set(rows.columns) else 1
    out = [pd.DataFrame({"dataset": rows["dataset"], "n_instances": rows["n_instances"],
                         "learner": rows["learner"], "metric": metric,
                         "seconds": rows[metric] / folds})
           for metric, _ in TIME_PANELS if metric in rows.columns]
    table = pd.concat(out, ignore_index=True) if out else pd.DataFrame(
        columns=["dataset", "n_instances", "learner", "metric", "seconds"])
    return table.sort_values(["n_instances", "dataset"], kind="mergesort")


@styled
def time_bars_figure(summary: pd.DataFrame, learners: Sequence[str], title: str) -> Figure:
    """Per data set, each learner's mean training and classification CPU seconds per fold
    as bars side by side, classification on a log axis (JMLR 2016's Fig. 10), data sets in
    increasing size."""
    learners = list(learners)
    table = mean_fold_times(summary, learners)
    sets = list(dict.fromkeys(table["dataset"]))
    width = _width(max(6.0, 1.4 + (0.25 + 0.09 * len(learners)) * len(sets)))
    fig, axes, finish = _time_panels(width, title, learners, sets)
    colours = learner_colours(learners)
    bar_w = 0.8 / max(1, len(learners))
    for ax, (metric, label) in zip(axes, TIME_PANELS):
        part = table[table["metric"] == metric]
        for li, name in enumerate(learners):
            mine = part[part["learner"] == name].set_index("dataset")["seconds"]
            x = np.array([i for i, d in enumerate(sets) if d in mine.index and mine[d] > 0])
            if not len(x):
                continue
            ax.bar(x + (li - (len(learners) - 1) / 2) * bar_w,
                   [float(mine[sets[i]]) for i in x], width=bar_w * 0.95,
                   color=colours[name], label=name, edgecolor="black", linewidth=0.3)
        if metric == "test_cpu_seconds":
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain_number))
        ax.set_xticks(range(len(sets)))
        ax.set_xticklabels(sets, rotation=90, fontsize=7.0)
        ax.set_xlim(-0.5, len(sets) - 0.5)
        ax.set_ylabel(f"{label}\nCPU seconds per fold" + (" (log)" if metric ==
                                                           "test_cpu_seconds" else ""))
        ax.grid(axis="y", linewidth=0.3, alpha=0.6)
        ax.set_axisbelow(True)
    finish()
    return fig


@styled
def rank_figure(ranks: Mapping[str, pd.DataFrame], title: str) -> Figure:
    """Average rank ± standard deviation over data sets per learner, one panel per metric
    (`ranks`: metric → data set × learner rank matrix), best first (JMLR 2016's Fig. 9)."""
    metrics = list(ranks)
    n = max((r.shape[1] for r in ranks.values()), default=1)
    name_w = 0.25 + 0.065 * max((len(str(c)) for r in ranks.values() for c in r.columns),
                                default=4)
    width = _width(max(6.0, (name_w + 2.4) * len(metrics)))
    heading, head = _title_block([title, "mean rank over the data sets (1 = lowest value), "
                                  "bar: ± one standard deviation"], width, gap=0.35)
    height = 0.8 + 0.28 * n + head
    fig = new_figure(width, height)
    per_row = len(metrics) if _paper_width is None or width / max(1, len(metrics)) >= 2.6 \
        else 1
    rows = math.ceil(len(metrics) / per_row)
    height = rows * (0.8 + 0.28 * n) + head
    fig.set_size_inches(width, height)
    panel_w = (width - name_w - 0.15) / per_row - (name_w if per_row > 1 else 0.0)
    fig.subplots_adjust(left=name_w / width, right=1 - 0.15 / width, top=1 - head / height,
                        bottom=0.5 / height, wspace=name_w / max(panel_w, 0.5), hspace=0.6)
    axes = fig.subplots(rows, per_row, squeeze=False).ravel()
    for ax, m in zip(axes, metrics):
        r = ranks[m]
        mean, std = r.mean(axis=0), r.std(axis=0, ddof=0)
        order = mean.sort_values(kind="mergesort").index
        y = np.arange(len(order))[::-1]
        ax.errorbar(mean[order].to_numpy(), y, xerr=std[order].to_numpy(), fmt="o",
                    markersize=4, capsize=2, color="#1f77b4", ecolor="black", linewidth=0.8)
        ax.set_yticks(y)
        ax.set_yticklabels(list(order))
        ax.set_xlim(0.5, r.shape[1] + 0.5)
        ax.set_xlabel("rank")
        ax.set_title(f"{TABLE_METRICS.get(m, m)} ({r.shape[0]} data sets)", fontsize=_fs(9))
        ax.grid(axis="x", linewidth=0.3, alpha=0.6)
    for ax in axes[len(metrics):]:
        ax.set_axis_off()
    fig.suptitle(heading, y=1 - 0.12 / height, va="top", fontsize=_fs(SUPTITLE_POINTS))
    return fig


# ------------------------------------------------------------------- parameter sweeps
@styled
def sweep_figure(table: pd.DataFrame, parameter: str, metrics: Sequence[str],
                 title: str) -> Figure:
    """A sweep's mean metric over the data sets against the swept value, one panel per
    metric; ``table`` has columns value, metric, mean (one row per variant and metric).
    Numeric values on a log axis when all are positive and span a factor of ten or more;
    other values as evenly spaced categories."""
    ncols = len(metrics)
    width = _width(3.2 * ncols + 0.6)
    heading, head = _title_block([title, "mean over the data sets where every variant has "
                                  "results"], width)
    height = 2.9 + head
    fig = new_figure(width, height)
    fig.subplots_adjust(left=0.8 / width, right=1 - 0.3 / width, top=1 - head / height,
                        bottom=0.6 / height, wspace=0.45)
    axes = fig.subplots(1, ncols, squeeze=False).ravel()
    values = list(dict.fromkeys(table["value"]))
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    for ax, metric in zip(axes, metrics):
        part = table[table["metric"] == metric]
        if numeric:
            part = part.sort_values("value", kind="mergesort")
            x = part["value"].astype(float).to_numpy()
        else:
            x = np.array([values.index(v) for v in part["value"]], dtype=float)
            ax.set_xticks(range(len(values)), [str(v) for v in values])
        ax.plot(x, part["mean"], marker="o", markersize=3, linewidth=1.0)
        if numeric and min(x) > 0 and max(x) >= 10 * min(x):
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain_number))
        ax.set_xlabel(parameter)
        ax.set_ylabel(TABLE_METRICS.get(metric, metric))
        ax.grid(linewidth=0.3, alpha=0.6)
    fig.suptitle(heading, y=1 - 0.15 / height, va="top", fontsize=_fs(SUPTITLE_POINTS))
    return fig


# ------------------------------------------------------------------- PAKDD 2014's Fig. 2
def log_mean_times(summary: pd.DataFrame, learners: Sequence[str],
                   collections: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Per collection, metric (training / classification CPU seconds) and learner: the mean
    over the collection's data sets with a value, and ln(mean + 1)."""
    rows = []
    sub = summary.assign(dataset=summary["dataset"].astype(str))
    for coll, members in collections.items():
        part = sub[sub["dataset"].isin(set(map(str, members)))]
        for metric in ("train_cpu_seconds", "test_cpu_seconds"):
            for name in learners:
                values = part.loc[part["learner"] == name, metric].dropna()
                if len(values):
                    mean = float(values.mean())
                    rows.append({"collection": coll, "metric": metric, "learner": name,
                                 "datasets": len(values), "mean_seconds": mean,
                                 "log_mean_plus_1": math.log(mean + 1.0)})
    return pd.DataFrame(rows, columns=["collection", "metric", "learner", "datasets",
                                       "mean_seconds", "log_mean_plus_1"])


@styled
def log_mean_time_figure(summary: pd.DataFrame, learners: Sequence[str],
                         collections: Mapping[str, Sequence[str]]) -> tuple[Figure, str]:
    """Chen et al.'s time figure: per learner, ln(mean CPU seconds over the collection's
    data sets + 1), training and classification side by side, grouped by collection."""
    learners = list(learners)
    colls = [c for c, members in collections.items() if len(members) > 0]
    metrics = [("train_cpu_seconds", "training"), ("test_cpu_seconds", "classification")]
    width = _width(max(6.0, 1.6 + 2 * (0.9 + 0.16 * len(learners) * max(1, len(colls)))))
    heading, top_h = _title_block(["CPU time: ln(mean seconds over the data sets + 1)"], width)
    legend_cols = _legend_columns(learners, width)
    legend_h = 0.3 + 0.18 * math.ceil(len(learners) / legend_cols)
    height = 2.8 + top_h + 0.6 + legend_h
    fig = new_figure(width, height)
    fig.subplots_adjust(left=0.7 / width, right=1 - 0.2 / width, top=1 - top_h / height,
                        bottom=(0.6 + legend_h) / height, wspace=0.3)
    axes = fig.subplots(1, 2, squeeze=False)[0]
    colours = learner_colours(learners)
    bar_w = 0.8 / max(1, len(learners))
    table = log_mean_times(summary, learners, collections)
    for ax, (metric, what) in zip(axes, metrics):
        for ci, coll in enumerate(colls):
            for li, name in enumerate(learners):
                hit = table[(table["metric"] == metric) & (table["collection"] == coll)
                            & (table["learner"] == name)]
                if hit.empty:
                    continue
                x = ci + (li - (len(learners) - 1) / 2) * bar_w
                ax.bar(x, float(hit["log_mean_plus_1"].iloc[0]), width=bar_w * 0.95,
                       color=colours[name], label=name if ci == 0 else None,
                       edgecolor="black", linewidth=0.3)
        ax.set_xticks(range(len(colls)))
        ax.set_xticklabels([f"{c}\n({_n_sets(len(collections[c]))})" for c in colls])
        ax.set_xlim(-0.5, len(colls) - 0.5)
        ax.set_title(f"{what} time", fontsize=_fs(10))
        ax.set_ylabel("ln(mean CPU s + 1)")
        ax.grid(axis="y", linewidth=0.3, alpha=0.6)
        ax.set_axisbelow(True)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncols=legend_cols, frameon=False,
               bbox_to_anchor=(0.5, 0.0), columnspacing=LEGEND_SPACING)
    fig.suptitle(heading, y=1 - 0.15 / height, va="top", fontsize=_fs(SUPTITLE_POINTS))
    caption = ("Training and classification CPU time as Chen et al. (PAKDD 2014) draw it: for "
               "each learner the mean over the collection's data sets of its CPU seconds "
               "(summed over folds), plus 1, on a natural-log scale (the 1 keeps every bar "
               "above 0); collections: all data sets and the config's own.")
    return fig, caption


# ------------------------------------------------------------- reliability diagram
@styled
def reliability_figure(bins: Mapping[str, np.ndarray], title: str) -> Figure:
    """Accuracy against mean top-label confidence per confidence bin (the
    `metrics.calibration_bins` sums of each learner, pooled), one line per learner, the
    diagonal the perfectly calibrated; a marker's area grows with its bin's rows."""
    learners = list(bins)
    width = _width(5.5)
    legend_cols = _legend_columns(learners, width)
    legend_rows = math.ceil(len(learners) / legend_cols)
    heading, head = _title_block([title, "accuracy against mean confidence per bin of the "
                                  "top-label probability; diagonal: calibrated"], width)
    height = 3.6 + head + 0.55 + 0.25 * legend_rows
    fig = new_figure(width, height)
    fig.subplots_adjust(left=0.75 / width, right=1 - 0.3 / width, top=1 - head / height,
                        bottom=(0.55 + 0.25 * legend_rows + 0.35) / height)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=0.8)
    colours = learner_colours(learners)
    for name in learners:
        b = np.asarray(bins[name], dtype=np.float64)
        full = b[:, 0] > 0
        if not full.any():
            continue
        share = b[full, 0] / b[:, 0].sum()
        x, y = b[full, 1] / b[full, 0], b[full, 2] / b[full, 0]
        ax.plot(x, y, color=colours[name], linewidth=1.0, label=name)
        ax.scatter(x, y, s=8 + 80 * share, color=colours[name], zorder=3)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("mean confidence (largest probability)")
    ax.set_ylabel("accuracy")
    ax.grid(linewidth=0.3, alpha=0.6)
    handles = [matplotlib.lines.Line2D([], [], color=colours[n], label=n) for n in learners]
    fig.legend(handles=handles, loc="lower center", ncols=legend_cols, frameon=False,
               bbox_to_anchor=(0.5, 0.0), columnspacing=LEGEND_SPACING)
    fig.suptitle(heading, y=1 - 0.15 / height, va="top", fontsize=_fs(SUPTITLE_POINTS))
    return fig
