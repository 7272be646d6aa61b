"""What every report section reads: the cleaned summary, the report options, learners,
collections, metrics and the per-fold values the W/D/L tables decide by, prepared once
from a run directory's stored results (`prepare`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.evaluation.metrics import lower_is_better, metric_names
from workbench.report import tables as tb
from workbench.report._io import write_csv
from workbench.report.options import ReportOptions, options_from_config, read_config
from workbench.stats import TAILS
from workbench.stats.groups import collections as make_collections
from workbench.stats.groups import dataset_groups
from workbench.stats.wdl import as_loss, corrected_t_outcome
from workbench.store import load_fold_metrics, load_summary, read_metadata


@dataclass
class ReportContext:
    """The inputs of every section (see `prepare`)."""

    run_dir: Path
    out: Path
    cfg: dict[str, Any]
    data: pd.DataFrame  # the summary, one row per (data set, learner); oracle rows added
    opts: ReportOptions
    learners: list[str]  # config order, then the oracle
    ranked: list[str]  # the learners ranked (never the oracle)
    colls: dict[str, list[str]]  # non-empty collections
    all_colls: dict[str, list[str]]
    groups: Any
    metrics: list[str]  # the table metrics with values in this run
    decimals: Any
    figures: bool
    fold_metrics: pd.DataFrame | None  # as passed in (None: read from the run when needed)
    folds_used: pd.DataFrame | None = None  # per-fold values the W/D/L decides by
    outcome: Callable[..., Any] | None = None  # the per-data-set fold test

    @property
    def baseline(self) -> str | None:
        return self.opts.baseline

    @property
    def sizes(self) -> dict[str, int]:
        return {c: len(m) for c, m in self.colls.items()}

    @property
    def tails(self) -> int:
        return TAILS[self.opts.sign_test]

    @property
    def fold_names(self) -> set[str]:
        return set() if self.folds_used is None else set(self.folds_used["metric"])

    def stored_fold_metrics(self) -> pd.DataFrame:
        """The run's per-fold values (passed in, else read from the run directory)."""
        return load_fold_metrics(self.run_dir) if self.fold_metrics is None \
            else self.fold_metrics


def clean(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary with text data set and learner columns; an error if a key is missing."""
    for col in ("dataset", "learner", "n_instances"):
        if col not in summary.columns:
            raise WorkbenchError(f"results summary has no column {col!r}")
    out = summary.copy()
    out["dataset"] = out["dataset"].astype(str).astype(object)
    out["learner"] = out["learner"].astype(str).astype(object)
    return out


def table_metrics(summary: pd.DataFrame) -> list[str]:
    """The table metrics this run has values of; bias/variance (``needs_repeats``) only
    when instances were tested more than once (rounds ≥ 2)."""
    single = "rounds" in summary.columns and bool(
        (pd.to_numeric(summary["rounds"], errors="coerce") <= 1).all())
    repeats = set(metric_names(needs_repeats=True))
    return [m for m in tb.TABLE_METRICS
            if m in summary.columns and pd.to_numeric(summary[m], errors="coerce").notna().any()
            and not (single and m in repeats)]


def run_warnings(run_dir: Path) -> list[str]:
    """The run's data warnings (single class, all-missing attribute, k > attributes), as
    recorded in its metadata, and the invocations when they ran under other code or on
    other machines (``invocation_notes``, written by the runner)."""
    try:
        meta = read_metadata(run_dir)
    except WorkbenchError:
        return []
    lines = [str(x) for x in meta.get("invocation_notes") or []]
    notes = [lines[0] + " " + "; ".join(ln.strip() for ln in lines[1:])] if lines else []
    return [str(w) for w in meta.get("warnings") or []] + notes


def prepare(run_dir: Path, out: Path, *, summary: pd.DataFrame | None,
            config: Mapping[str, Any] | None, figures: bool,
            fold_metrics: pd.DataFrame | None) -> ReportContext:
    """Read and prepare everything the sections share (notes for the Run section are
    collected in ``opts.notes``)."""
    data = clean(load_summary(run_dir) if summary is None else summary)
    if data.empty:
        raise WorkbenchError(f"{run_dir}: no complete (data set, learner) results to report")
    cfg = dict(read_config(run_dir) if config is None else config)
    opts = options_from_config(cfg, run_dir, list(dict.fromkeys(data["learner"])))
    all_colls = make_collections(data, opts.collections)
    colls = {c: m for c, m in all_colls.items() if m}  # empty collections are left out
    empty = [c for c in all_colls if c not in colls]
    if empty:
        opts.notes.append(f"No data set of this run is in the collection(s) {', '.join(empty)}; "
                          "they are left out of the tables and figures.")
    opts.notes.extend(run_warnings(run_dir))
    metrics = table_metrics(data)
    decimals = (opts.draw_decimals if isinstance(opts.draw_decimals, dict)
                else {m: opts.draw_decimals for m in metrics})
    ctx = ReportContext(run_dir=run_dir, out=out, cfg=cfg, data=data, opts=opts,
                        learners=list(opts.learners), ranked=list(opts.learners),
                        colls=colls, all_colls=all_colls, groups=dataset_groups(data),
                        metrics=metrics, decimals=decimals, figures=figures,
                        fold_metrics=fold_metrics)
    if opts.wdl in (tb.WDL_WILCOXON_FOLDS, tb.WDL_CORRECTED_T):
        ctx.folds_used, note = fold_metrics_for_wdl(ctx.stored_fold_metrics(), data,
                                                    opts.wdl)
        opts.notes.append(note)
        if opts.wdl == tb.WDL_CORRECTED_T:
            ctx.outcome = functools.partial(corrected_t_outcome,
                                            test_train_ratio=opts.test_train_ratio,
                                            weka_sd_rule=opts.weka_sd_rule)
    if opts.oracle is not None:
        _with_oracle(ctx)
    return ctx


_FOLD_TESTS = {tb.WDL_WILCOXON_FOLDS: ("a two-sided Wilcoxon signed-rank test", "the JMLR "
                                       "2016 protocol"),
               tb.WDL_CORRECTED_T: ("Weka's corrected resampled t-test (Nadeau & Bengio)",
                                    "Weka's Experimenter default")}


def fold_metrics_for_wdl(fm: pd.DataFrame, data: pd.DataFrame,
                         method: str = tb.WDL_WILCOXON_FOLDS
                         ) -> tuple[pd.DataFrame | None, str]:
    """The per-fold values for ``wdl: wilcoxon-folds`` / ``corrected-t`` (None = none
    stored) and the note for the report's Run section saying what was used."""
    pairs = set(zip(data["dataset"].astype(str), data["learner"].astype(str)))
    test, origin = _FOLD_TESTS[method]
    if fm is None or fm.empty:
        return None, (f"report.wdl = {method} was asked for, but this run directory has "
                      "no per-fold values (no per_fold in predictions/*/*/summary.json, no "
                      "fold_metrics.csv: results stored before they were recorded). The "
                      "W/D/L tables fall back to the sign-test W/D/L (lower value wins); "
                      "re-running the config recomputes the per-fold values from the stored "
                      "folds.")
    fm = fm[[(d, l) in pairs for d, l in zip(fm["dataset"].astype(str),
                                             fm["learner"].astype(str))]]
    have = set(zip(fm["dataset"].astype(str), fm["learner"].astype(str)))
    lacking = sorted(pairs - have)
    note = (f"W/D/L: each data set is decided by {test} over the paired per-fold values "
            f"(report.wdl = {method}, {origin}) for the metrics with per-fold values; the "
            "others use the sign-test W/D/L.")
    if lacking:
        shown = ", ".join(f"{d}/{l}" for d, l in lacking[:5])
        note += (f" {len(lacking)} of {len(pairs)} (data set, learner) pairs have no "
                 f"per-fold values ({shown}{', ...' if len(lacking) > 5 else ''}); the "
                 "W/D/L cells involving them leave those data sets out.")
    return fm, note


def _with_oracle(ctx: ReportContext) -> None:
    """Add the configured oracle (report.oracle) as a column of the tables, not the ranks."""
    oracle = ctx.opts.oracle
    ctx.data, ctx.folds_used, chosen = add_oracle(ctx.data, ctx.folds_used, oracle,
                                                  ctx.metrics)
    write_csv(ctx.out / "tables" / "oracle.csv", chosen)
    ctx.learners = ctx.learners + [oracle["name"]]
    higher = [m for m in ctx.metrics if not lower_is_better(m)]
    lowest = "the lowest value" + (f" (the highest for {', '.join(higher)})" if higher else "")
    ctx.opts.notes.append(
        f"'{oracle['name']}' is not a learner: for each data set and metric it takes "
        f"{lowest} among {', '.join(oracle['learners'])} (chosen a posteriori, "
        "from the stored results; report.oracle), with that learner's per-fold values. It "
        "is a column of the W/D/L and per-data-set tables, not of the ranks. The choices "
        "are in `tables/oracle.csv`.")


def add_oracle(data: pd.DataFrame, folds: pd.DataFrame | None, oracle: Mapping[str, Any],
               metrics: list[str]) -> tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame]:
    """The summary (and per-fold values) with the oracle's rows: per data set and metric
    the member learner with the best value (the lowest, the highest where higher is
    better; ties: the first listed) and its values."""
    name, members = oracle["name"], list(oracle["learners"])
    rank = {m: i for i, m in enumerate(members)}
    part = data[data["learner"].isin(members)].assign(_o=lambda f: f["learner"].map(rank))
    rows, chosen, fold_parts = [], [], []
    for ds, g in part.sort_values(["dataset", "_o"], kind="mergesort").groupby("dataset",
                                                                               sort=True):
        rec = g.iloc[0].drop("_o").to_dict()
        rec["learner"] = name
        for m in metrics:
            vals = pd.to_numeric(g[m], errors="coerce")
            if vals.isna().all():
                continue
            loss = as_loss(vals.to_numpy(), lower_is_better=lower_is_better(m))
            best = g.iloc[int(np.nanargmin(loss))]
            rec[m] = best[m]
            if f"{m}_std" in g.columns:
                rec[f"{m}_std"] = best[f"{m}_std"]
            chosen.append([ds, m, best["learner"], best[m]])
            if folds is not None:
                sel = folds[(folds["dataset"] == ds) & (folds["learner"] == best["learner"])
                            & (folds["metric"] == m)]
                fold_parts.append(sel.assign(learner=name))
        rows.append(rec)
    out = pd.concat([data, pd.DataFrame(rows)], ignore_index=True)
    if folds is not None and fold_parts:
        folds = pd.concat([folds, *fold_parts], ignore_index=True)
    return out, folds, pd.DataFrame(chosen, columns=["dataset", "metric", "learner", "value"])
