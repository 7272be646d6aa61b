"""Agreement of our win/draw/loss records with a paper's published ones.

The published cells (CSV: metric, collection, row, col, wins, draws, losses) and the
mapping from the paper's metric and learner names to ours live in the experiment folder
(e.g. ``experiments/pakdd13/metric_map.yaml``), never in code. The map's format::

    paper_wdl: paper_wdl.csv        # relative to the map file
    metrics:                        # paper metric -> our metric(s); the first is primary
      rmse: [rmse, rmse_true_class]
    learners: {}                    # paper learner name -> ours, where they differ

For every published cell we compute our record over the data sets actually run in the
same collection, with the same sign test. ``paper_agreement.csv`` uses each paper metric's
primary mapping (one row per published cell); ``paper_agreement_all.csv`` has one row per
(published cell, our mapped metric), so alternatives (e.g. true-class RMSE) can be compared.

Flags: ``same_direction`` — sign(wins − losses) equal (both 0 counts as equal);
``both_significant_same`` — both significant with the same sign; ``significant_reversal``
— both significant with opposite signs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import yaml

from workbench.errors import ConfigError
from workbench.evaluation.metrics import lower_is_better
from workbench.stats.wdl import (ALPHA, WDL, fold_outcomes, metric_matrix, sign_test,
                                 wdl_from_outcomes, win_draw_loss)

PAPER_COLUMNS = ["metric", "collection", "row", "col", "wins", "draws", "losses"]

AGREEMENT_COLUMNS = [
    "metric", "our_metric", "collection", "row", "col",
    "paper_wins", "paper_draws", "paper_losses", "paper_p_value", "paper_significant",
    "our_wins", "our_draws", "our_losses", "our_n_datasets", "our_p_value", "our_significant",
    "same_direction", "both_significant_same", "significant_reversal",
]


@dataclass
class MetricMap:
    """Where the published cells are and how the paper's names map to ours."""

    path: Path
    paper_wdl: Path
    metrics: dict[str, list[str]]
    learners: dict[str, str] = field(default_factory=dict)
    figures: dict[str, str] = field(default_factory=dict)  # report figure stem → "Fig. 1"

    def primary(self, paper_metric: str) -> str:
        """Our primary metric for a paper metric."""
        return self.metrics[paper_metric][0]

    def ours(self, paper_learner: str) -> str:
        """Our learner name for a paper learner name."""
        return self.learners.get(paper_learner, paper_learner)


def load_metric_map(path: Path) -> MetricMap:
    """Read and validate a metric map YAML (errors name the file and field)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"report.paper_agreement: metric map {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML ({exc})") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    wdl = data.get("paper_wdl")
    if not isinstance(wdl, str):
        raise ConfigError(f"{path}: field 'paper_wdl' (path of the published cells) is missing")
    metrics = data.get("metrics")
    if not isinstance(metrics, Mapping) or not metrics:
        raise ConfigError(f"{path}: field 'metrics' must map paper metrics to our metrics")
    mm: dict[str, list[str]] = {}
    for key, val in metrics.items():
        vals = [val] if isinstance(val, str) else val
        if not isinstance(vals, list) or not vals or not all(isinstance(v, str) for v in vals):
            raise ConfigError(f"{path}: metrics.{key}: expected a metric name or a list of them")
        mm[str(key)] = list(vals)
    learners = data.get("learners") or {}
    if not isinstance(learners, Mapping):
        raise ConfigError(f"{path}: field 'learners' must map paper names to ours")
    wdl_path = Path(wdl)
    if not wdl_path.is_absolute():
        wdl_path = path.parent / wdl_path
    figures = data.get("figures") or {}
    if not isinstance(figures, Mapping):
        raise ConfigError(f"{path}: field 'figures' must map report figures (e.g. "
                          "fig1_bias_variance) to the paper's figure labels (e.g. 'Fig. 1')")
    return MetricMap(path, wdl_path, mm, {str(k): str(v) for k, v in learners.items()},
                     {str(k): str(v) for k, v in figures.items()})


def load_paper_wdl(path: Path) -> pd.DataFrame:
    """The published W/D/L cells (columns ``PAPER_COLUMNS``)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"published W/D/L table {path} does not exist")
    frame = pd.read_csv(path, dtype={"metric": str, "collection": str, "row": str, "col": str})
    missing = [c for c in PAPER_COLUMNS if c not in frame.columns]
    if missing:
        raise ConfigError(f"{path}: missing column(s) {', '.join(missing)}")
    return frame[PAPER_COLUMNS].astype(
        {"wins": np.int64, "draws": np.int64, "losses": np.int64}
    ).astype({"metric": object, "collection": object, "row": object, "col": object})


def paper_learners(paper: pd.DataFrame, mm: MetricMap) -> list[str]:
    """Our names of every learner appearing in the published cells."""
    names = list(dict.fromkeys(list(paper["col"]) + list(paper["row"])))
    return [mm.ours(n) for n in names]


def compare_with_paper(
    summary: pd.DataFrame,
    paper: pd.DataFrame,
    mm: MetricMap,
    collections: Mapping[str, Sequence[str]],
    decimals: Mapping[str, int | None] | int | None = None,
    alpha: float = ALPHA,
    tails: int = 2,
    fold_metrics: pd.DataFrame | None = None,
    outcome=None,
) -> pd.DataFrame:
    """One row per (published cell, mapped metric of ours) whose learners were both run;
    significance on both sides by the sign test with ``tails`` (the paper's convention).
    Our record is decided as our tables decide it: per data set from the per-fold values
    (``fold_metrics``, by ``outcome``, default Wilcoxon) for metrics that have them, else by
    the better summary value (the metric's direction, `metrics.lower_is_better`)."""
    present_list = list(dict.fromkeys(summary["learner"].astype(str)))
    present = set(present_list)
    fold_names = set() if fold_metrics is None else set(fold_metrics["metric"])
    rows = []
    cache: dict[tuple[str, str], pd.DataFrame] = {}
    for cell in paper.itertuples(index=False):
        if cell.metric not in mm.metrics:
            continue
        r, c = mm.ours(cell.row), mm.ours(cell.col)
        if r not in present or c not in present:
            continue
        pp = sign_test(cell.wins, cell.losses, tails)
        psig = bool(pp < alpha)
        pdir = int(np.sign(cell.wins - cell.losses))
        for ours in mm.metrics[cell.metric]:
            if ours not in summary.columns:
                continue
            key = (ours, cell.collection)
            if key not in cache:
                members = collections.get(cell.collection, [])
                cache[key] = metric_matrix(summary, ours, present_list, members)
            wide = cache[key]
            dec = decimals.get(ours) if isinstance(decimals, Mapping) else decimals
            lower = lower_is_better(ours)
            if fold_metrics is not None and ours in fold_names:
                oc = fold_outcomes(fold_metrics, ours, [r, c], alpha,
                                   **({} if outcome is None else {"outcome": outcome}),
                                   lower_is_better=lower)
                t = wdl_from_outcomes(oc, [r, c], collections.get(cell.collection, []),
                                      alpha, pairs="all", tails=tails).iloc[0]
                rec = WDL(int(t.wins), int(t.draws), int(t.losses), float(t.p_value),
                          bool(t.significant))
            else:
                rec = win_draw_loss(wide[r].to_numpy(), wide[c].to_numpy(), dec, alpha, tails,
                                    lower_is_better=lower)
            odir = int(np.sign(rec.wins - rec.losses))
            rows.append([
                cell.metric, ours, cell.collection, cell.row, cell.col,
                int(cell.wins), int(cell.draws), int(cell.losses), pp, psig,
                rec.wins, rec.draws, rec.losses, rec.n, rec.p_value, rec.significant,
                pdir == odir,
                psig and rec.significant and pdir == odir,
                psig and rec.significant and pdir != odir,
            ])
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def primary_rows(frame: pd.DataFrame, mm: MetricMap) -> pd.DataFrame:
    """Only the rows of each paper metric's primary mapping (one per published cell)."""
    keep = [mm.metrics.get(m, [None])[0] == o for m, o in zip(frame["metric"], frame["our_metric"])]
    return frame[np.asarray(keep, dtype=bool)].reset_index(drop=True)


def agreement_totals(frame: pd.DataFrame) -> pd.DataFrame:
    """Totals per (paper metric, our metric) and overall for the primary rows."""
    out = []
    for (m, o), g in frame.groupby(["metric", "our_metric"], sort=False):
        out.append(_totals(g, m, o))
    return pd.DataFrame(
        out,
        columns=["metric", "our_metric", "cells", "same_direction", "both_significant_same",
                 "paper_significant", "significant_reversals", "significance_agrees"],
    )


def totals_by_learner(primary: pd.DataFrame, learners: list[str]) -> pd.DataFrame:
    """Primary-mapping totals of the cells that involve each paper learner (paper names; a
    cell counts for both of its learners): one row per learner, the columns of
    `agreement_totals`."""
    out = []
    for name in learners:
        g = primary[(primary["row"] == name) | (primary["col"] == name)]
        if len(g):
            out.append(_totals(g, "all", name))
    frame = pd.DataFrame(out, columns=["metric", "our_metric", "cells", "same_direction",
                                       "both_significant_same", "paper_significant",
                                       "significant_reversals", "significance_agrees"])
    return frame.drop(columns="metric").rename(columns={"our_metric": "learner"})


def _totals(g: pd.DataFrame, metric: str, ours: str) -> list:
    return [
        metric, ours, int(len(g)), int(g["same_direction"].sum()),
        int(g["both_significant_same"].sum()), int(g["paper_significant"].sum()),
        int(g["significant_reversal"].sum()),
        int((g["paper_significant"] == g["our_significant"]).sum()),
    ]


def headline(frame: pd.DataFrame) -> str:
    """'412/450 cells same direction, 0 significant reversals' for a set of rows."""
    n = len(frame)
    same = int(frame["same_direction"].sum()) if n else 0
    rev = int(frame["significant_reversal"].sum()) if n else 0
    both = int(frame["both_significant_same"].sum()) if n else 0
    psig = int(frame["paper_significant"].sum()) if n else 0
    return (f"{same}/{n} cells same direction, {rev} significant reversal"
            f"{'' if rev == 1 else 's'}; {both}/{psig} of the paper's significant cells "
            f"significant in the same direction here")


def better_mapping(frame: pd.DataFrame, paper_metric: str) -> list[str]:
    """Our metric(s) mapped to ``paper_metric`` that agree best: most same-direction cells,
    then fewest significant reversals, then most both-significant cells. Several names =
    a tie; [] when nothing was compared."""
    sub = frame[frame["metric"] == paper_metric]
    scores: dict[str, tuple[int, int, int]] = {}
    for ours, g in sub.groupby("our_metric", sort=False):
        scores[str(ours)] = (-int(g["same_direction"].sum()),
                             int(g["significant_reversal"].sum()),
                             -int(g["both_significant_same"].sum()))
    if not scores:
        return []
    best = min(scores.values())
    return [name for name, sc in scores.items() if sc == best]
