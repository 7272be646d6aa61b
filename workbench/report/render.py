"""Render a run directory's report from stored results only (never re-trains).

`render_report(run_dir)` reads ``store.load_summary(run_dir)`` (one row per complete
(data set, learner)) and the resolved ``RUN_DIR/config.yaml`` (learner order, baseline,
``report`` options; see `workbench.report.options`), and writes ``RUN_DIR/report/``::

    report.md, report.html         the report (HTML self-contained: figures inline)
    per_dataset_metrics.csv        tidy means ± std over folds per (data set, learner, metric)
    paper_agreement.csv            one row per published cell (when the paper's learners ran)
    paper_agreement_all.csv        … for every metric mapping (e.g. both RMSEs)
    tables/wdl.csv                 tidy W/D/L: metric, collection, row, col, w, d, l, p, sig
    tables/wdl_<metric>.md|.tex    the paper-style lower-triangle tables per collection
    tables/wilcoxon.csv, ranks.csv, friedman.csv, per_dataset_<metric>.md,
    tables/paper_agreement_totals.csv
    figures/*.png|.pdf             Figs. 1-4, CD diagrams, scatter plots

Every file is written atomically; all output is byte-for-byte reproducible except the one
line of report.md / report.html marked ``<!-- timestamp -->`` (set ``SOURCE_DATE_EPOCH`` to
fix it too).
"""

from __future__ import annotations

import contextlib
import functools
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.evaluation.metrics import APPENDICES, METRICS, lower_is_better, metric_names
from workbench.report import agreement as agr
from workbench.report import tables as tb
from workbench.report._io import write_csv, write_text
from workbench.report.html import markdown_to_html
from workbench.report.options import (
    ReportOptions,
    options_from_config,
    read_config,
)
from workbench.stats.groups import collections as make_collections
from workbench.stats.groups import dataset_groups
from workbench.stats.ranks import friedman_test, nemenyi_cd, nemenyi_cliques, rank_matrix
from workbench.stats.bayesian import signed_rank
from workbench.stats import TAILS
from workbench.stats.wdl import corrected_t_outcome, metric_matrix, wilcoxon_from_matrix
from workbench.store import load_fold_metrics, load_summary, read_metadata

REPORT_DIR = "report"
TIMESTAMP_MARK = "<!-- timestamp: the only line that differs between renders -->"


def _timestamp() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = (datetime.fromtimestamp(int(epoch), tz=timezone.utc) if epoch and epoch.isdigit()
            else datetime.now(timezone.utc))
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _load_summary(run_dir: Path) -> pd.DataFrame:
    return load_summary(run_dir)


def _clean(summary: pd.DataFrame) -> pd.DataFrame:
    for col in ("dataset", "learner", "n_instances"):
        if col not in summary.columns:
            raise WorkbenchError(f"results summary has no column {col!r}")
    out = summary.copy()
    out["dataset"] = out["dataset"].astype(str).astype(object)
    out["learner"] = out["learner"].astype(str).astype(object)
    return out


def _metrics(summary: pd.DataFrame) -> list[str]:
    """The table metrics this run has values of; bias/variance (``needs_repeats``) only
    when instances were tested more than once (rounds ≥ 2)."""
    single = "rounds" in summary.columns and bool(
        (pd.to_numeric(summary["rounds"], errors="coerce") <= 1).all())
    repeats = set(metric_names(needs_repeats=True))
    return [m for m in tb.TABLE_METRICS
            if m in summary.columns and pd.to_numeric(summary[m], errors="coerce").notna().any()
            and not (single and m in repeats)]


class _Report:
    """Accumulates Markdown; knows the output folder."""

    def __init__(self, out: Path):
        self.out = out
        self.md: list[str] = []
        self.n_figures = 0

    def add(self, *blocks: str) -> None:
        for b in blocks:
            self.md.append(b.rstrip("\n") + "\n")

    def place(self, fig, stem: str, caption: str) -> None:
        """Save `fig` as figures/<stem>.png and .pdf and add it under the next number."""
        from workbench.report import figures as fg

        fg.save_figure(fig, self.out / "figures" / stem)
        self.n_figures += 1
        rel = f"figures/{stem}.png"
        self.add(f"![Figure {self.n_figures}]({rel})\n_Figure {self.n_figures}. {caption}_ "
                 f"(PDF: [figures/{stem}.pdf](figures/{stem}.pdf))")


def _run_warnings(run_dir: Path) -> list[str]:
    """The run's data warnings (single class, all-missing attribute, k > attributes), as
    recorded in its metadata."""
    try:
        return [str(w) for w in read_metadata(run_dir).get("warnings") or []]
    except WorkbenchError:
        return []


def _load_fold_metrics(run_dir: Path) -> pd.DataFrame:
    return load_fold_metrics(run_dir)


def render_report(
    run_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    summary: pd.DataFrame | None = None,
    config: Mapping[str, Any] | None = None,
    figures: bool = True,
    fold_metrics: pd.DataFrame | None = None,
) -> Path:
    """Write the report of ``run_dir`` into ``out_dir`` (default ``RUN_DIR/report``); see
    `_render` (the figure width of ``report.figure_width`` holds only while rendering)."""
    with contextlib.ExitStack() as stack:
        return _render(run_dir, out_dir, stack, summary=summary, config=config,
                       figures=figures, fold_metrics=fold_metrics)


def _render(
    run_dir: str | Path,
    out_dir: str | Path | None,
    stack: contextlib.ExitStack,
    *,
    summary: pd.DataFrame | None = None,
    config: Mapping[str, Any] | None = None,
    figures: bool = True,
    fold_metrics: pd.DataFrame | None = None,
) -> Path:
    """Write the report of ``run_dir`` into ``out_dir`` (default ``RUN_DIR/report``).

    Reads only ``store.load_summary(run_dir)``, ``RUN_DIR/config.yaml`` and, for
    ``report.wdl: wilcoxon-folds``, ``store.load_fold_metrics(run_dir)`` (``summary`` /
    ``config`` / ``fold_metrics`` may be passed instead, e.g. by the runner or tests).
    ``figures=False`` skips the (slow) figures: tables, CSVs and report.md/.html only.
    Returns the folder.
    """
    if figures:
        from workbench.report import figures as fg  # matplotlib only when drawing

    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir / REPORT_DIR
    data = _clean(_load_summary(run_dir) if summary is None else summary)
    if data.empty:
        raise WorkbenchError(f"{run_dir}: no complete (data set, learner) results to report")
    cfg = dict(read_config(run_dir) if config is None else config)
    present = list(dict.fromkeys(data["learner"]))
    opts = options_from_config(cfg, run_dir, present)
    if figures:
        stack.enter_context(fg.paper_width(opts.figure_width))
    learners, baseline = opts.learners, opts.baseline
    all_colls = make_collections(data, opts.collections)
    colls = {c: m for c, m in all_colls.items() if m}  # empty collections are left out
    empty = [c for c in all_colls if c not in colls]
    if empty:
        opts.notes.append(f"No data set of this run is in the collection(s) {', '.join(empty)}; "
                          "they are left out of the tables and figures.")
    opts.notes.extend(_run_warnings(run_dir))
    groups = dataset_groups(data)
    sizes = {c: len(m) for c, m in colls.items()}
    metrics = _metrics(data)
    decimals = (opts.draw_decimals if isinstance(opts.draw_decimals, dict)
                else {m: opts.draw_decimals for m in metrics})

    folds_used, wdl_note, outcome = None, None, None
    if opts.wdl in (tb.WDL_WILCOXON_FOLDS, tb.WDL_CORRECTED_T):
        fm = _load_fold_metrics(run_dir) if fold_metrics is None else fold_metrics
        folds_used, wdl_note = _fold_metrics_for_wdl(fm, data, learners, opts.wdl)
        opts.notes.append(wdl_note)
        if opts.wdl == tb.WDL_CORRECTED_T:
            outcome = functools.partial(corrected_t_outcome,
                                        test_train_ratio=opts.test_train_ratio)
    ranked = list(learners)  # an oracle is not ranked
    if opts.oracle is not None:
        data, folds_used, chosen = _add_oracle(data, folds_used, opts.oracle, metrics)
        write_csv(out / "tables" / "oracle.csv", chosen)
        learners = learners + [opts.oracle["name"]]
        opts.notes.append(
            f"'{opts.oracle['name']}' is not a learner: for each data set and metric it takes "
            f"the lowest value among {', '.join(opts.oracle['learners'])} (chosen a posteriori, "
            "from the stored results; report.oracle), with that learner's per-fold values. It "
            "is a column of the W/D/L and per-data-set tables, not of the ranks. The choices "
            "are in `tables/oracle.csv`.")

    rep = _Report(out)
    rep.add(f"# Report: {opts.name}", f"_Generated: {_timestamp()}_ {TIMESTAMP_MARK}")
    rep.add("## Run", *[_run_lines(opts, data, colls, metrics)])

    # ---- W/D/L tables
    fold_names = set() if folds_used is None else set(folds_used["metric"])
    tails = TAILS[opts.sign_test]
    tidy = tb.wdl_tidy(data, learners, colls, metrics, decimals, opts.alpha,
                       fold_metrics=folds_used, tails=tails, outcome=outcome,
                       correction=opts.correction)
    write_csv(out / "tables" / "wdl.csv", tb.tidy_csv_frame(tidy))
    rep.add("## Win/draw/loss tables", _wdl_intro(opts, metrics, fold_names))
    for m in metrics:
        method = opts.wdl if m in fold_names else tb.WDL_SIGN
        md = tb.metric_markdown(tidy, m, learners, sizes, opts.alpha, method,
                                opts.wdl_p_values, tails, opts.correction)
        write_text(out / "tables" / f"wdl_{m}.md", md)
        write_text(out / "tables" / f"wdl_{m}.tex",
                   tb.metric_latex(tidy, m, learners, sizes, opts.alpha, method,
                                   opts.wdl_p_values, tails, opts.correction))
        rep.add(md)

    # ---- Wilcoxon, Friedman, ranks
    wil, rank_rows, fried_rows, cd_info = [], [], [], {}
    for m in metrics:
        wide_all = metric_matrix(data, m, ranked)
        for c, members in colls.items():
            wide = tb.subset_rows(wide_all, members)
            w = wilcoxon_from_matrix(wide, ranked, opts.alpha)
            lower = lower_is_better(m)
            w.insert(0, "collection", c)
            w.insert(0, "metric", m)
            wil.append(w)
            fr = friedman_test(wide, lower)
            cd = nemenyi_cd(fr.n_learners, fr.n_datasets, opts.alpha) if (
                fr.n_learners >= 2 and fr.n_datasets >= 1) else float("nan")
            fried_rows.append([m, c, fr.n_datasets, fr.n_learners, fr.statistic, fr.p_value,
                               fr.iman_davenport_f, fr.iman_davenport_p, cd])
            for name, r in fr.average_ranks.items():
                rank_rows.append([m, c, name, r, fr.n_datasets])
            if c == "all":
                cd_info[m] = (fr, cd)
    if wil:
        write_csv(out / "tables" / "wilcoxon.csv", pd.concat(wil, ignore_index=True))
    write_csv(out / "tables" / "ranks.csv", pd.DataFrame(
        rank_rows, columns=["metric", "collection", "learner", "average_rank", "n_datasets"]))
    write_csv(out / "tables" / "friedman.csv", pd.DataFrame(fried_rows, columns=[
        "metric", "collection", "n_datasets", "n_learners", "friedman_chi2", "friedman_p",
        "iman_davenport_f", "iman_davenport_p", "nemenyi_cd"]))

    # ---- figures
    rep.add("## Figures", "" if figures else "_Figures were not rendered (--no-figures)._",
            f"Bars are normalised to the baseline **{baseline}**: the geometric mean over the "
            f"collection's data sets of value(learner) / value({baseline}) on each data set "
            "(1 = same as the baseline, lower is better). A data set where both values are 0 "
            "counts as ratio 1; one where exactly one of the two is 0 (ratio 0 or infinite) or "
            "a value is missing is left out of that learner's mean and the caption says so."
            + direction_note(metrics))
    paper_figures = _paper_figures(opts)
    if baseline is not None and figures:
        for stem, (title, ms) in fg.bar_figures(metrics).items():
            if stem in paper_figures:  # the configured paper's number, never another's
                title = f"{title} (cf. the paper's {paper_figures[stem]})"
            # a metric the baseline does not report (e.g. iterations of NB) has no ratios
            ms = [m for m in ms if m in metrics and data.loc[data["learner"] == baseline, m]
                  .notna().any()]
            if not ms:
                continue
            fig, caption = fg.normalised_bar_figure(data, ms, learners, baseline, colls, title)
            rep.place(fig, stem, caption)

    rep.add("## Average ranks and critical differences",
            "Average rank over the data sets of the collection 'all' on which every learner "
            "has a value (1 = lowest value; ties share the average rank). Friedman test with "
            f"Iman-Davenport's F; Nemenyi CD = q_α·sqrt(k(k+1)/(6N)) at α = {opts.alpha:g}. "
            "Per-collection values are in `tables/ranks.csv` and `tables/friedman.csv`."
            + direction_note(metrics))
    rep.add(_ranks_markdown(cd_info, ranked))
    for m in metric_names(cd=True):
        if m not in cd_info:
            continue
        fr, cd = cd_info[m]
        if not figures or fr.n_datasets < 1 or fr.n_learners < 2 or np.isnan(cd):
            continue
        label = tb.TABLE_METRICS[m]
        fig = fg.cd_diagram(fr.average_ranks, cd, nemenyi_cliques(fr.average_ranks, cd),
                            f"{label}: average ranks over {fr.n_datasets} data sets "
                            f"(Nemenyi CD at α = {opts.alpha:g})")
        rep.place(fig, f"cd_{m}",
                  f"Critical-difference diagram, {label}, all data sets (N = "
                  f"{fr.n_datasets}, k = {fr.n_learners}, CD = {cd:.3f}). Learners joined "
                  "by a thick bar are not significantly different (Nemenyi test).")

    if opts.bayesian is not None:
        _bayesian_section(rep, out, data, opts, figures)
    if figures and (opts.time_figures or opts.rank_figure):
        _comparison_figures(rep, out, data, opts)

    if baseline is not None and len(learners) >= 2 and figures:
        rep.add("## Per-data-set scatter plots",
                f"Each learner (y) against the baseline {baseline} (x), one point per data "
                "set, coloured by size group; points below the dashed diagonal are data sets "
                "where the learner's value is lower.")
        pairs = [(name, baseline) for name in learners if name != baseline]

        def scatter(m: str, pairs_: list, log: bool, title: str, stem: str, caption: str) -> None:
            fig = fg.scatter_figure(data, m, pairs_, groups, log=log,
                                    title=title + (" (log axes)" if log else ""))
            rep.place(fig, stem, caption)

        for m in metric_names(scatter=True):  # every learner vs the baseline
            log = False
            if m not in metrics:
                continue
            scatter(m, pairs, log, f"{tb.TABLE_METRICS[m]} per data set vs {baseline}",
                    f"scatter_{m}",
                    f"{tb.TABLE_METRICS[m]} of each learner against {baseline}, per data "
                    "set" + (" (log axes; zero values not shown)" if log else "") + ".")
        if opts.scatter:
            for m in opts.scatter_metrics:
                log = opts.scatter_log or METRICS[m].log
                if m not in metrics:
                    rep.add(f"_No {tb.TABLE_METRICS.get(m, m)} values in this run: the "
                            "configured scatter plot of that metric is not drawn._")
                    continue
                names = ", ".join(f"{a} vs {b}" for a, b in opts.scatter)
                scatter(m, opts.scatter, log, f"{tb.TABLE_METRICS[m]}: {names}",
                        f"scatter_pairs_{m}",
                        f"{tb.TABLE_METRICS[m]} per data set for the configured pairs "
                        f"(report.scatter; first learner of a pair on the y axis)"
                        + ("; log axes, zero values not shown" if log else "") + ".")

    # ---- learning curves (the learning-curve protocol: one round per training size)
    protocol = cfg.get("protocol") if isinstance(cfg.get("protocol"), Mapping) else {}
    if protocol.get("type") == "learning_curve":
        fm = _load_fold_metrics(run_dir) if fold_metrics is None else fold_metrics
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
            part = curves[curves["metric"] == m]
            fig = fg.learning_curve_figure(part, m, learners)
            rep.place(fig, f"learning_curve_{m}",
                      f"{tb.TABLE_METRICS[m]} against the number of training instances "
                      "(log scale), per data set.")

    # ---- paper agreement (its headline also goes to the top, after the Run section)
    headline = _agreement_section(rep, data, opts, all_colls, decimals, folds_used, outcome)
    if headline:
        rep.md.insert(4, "**Agreement with the published win/draw/loss cells (primary metric "
                         f"mapping): {headline}** Details below.\n")

    # ---- appendix
    per = tb.per_dataset_tidy(data, learners, groups, metrics)
    write_csv(out / "per_dataset_metrics.csv", per)
    rep.add("## Appendix: metrics per data set",
            "Mean over folds ± standard deviation over folds (where stored); times are total "
            "CPU seconds over all folds. Also in `per_dataset_metrics.csv`.")
    for m in metrics:
        md = tb.per_dataset_markdown(per, m, learners)
        write_text(out / "tables" / f"per_dataset_{m}.md", md)
        rep.add(md)

    # ---- what the learners report but the tables do not rank (table=False, mean over folds)
    for key, (heading, stem, what) in APPENDICES.items():
        chosen = [m for m in metric_names(aggregate="mean", table=False, appendix=key)
                  if m in data.columns and data[m].notna().any()]
        if not chosen:
            continue
        kept = tb.per_dataset_tidy(data, learners, groups, chosen)
        kept = kept[kept["mean"].notna()]
        write_csv(out / "tables" / f"{stem}.csv", kept)
        rep.add(f"## Appendix: {heading}",
                f"Mean over folds ± standard deviation over folds of {what}. Also in "
                f"`tables/{stem}.csv`.")
        for m in chosen:
            rep.add(tb.per_dataset_markdown(kept, m, [l for l in learners
                                                      if l in set(kept["learner"])]))
        if key == "memory" and "memory_saved" in chosen and figures:
            fig = fg.memory_saved_figure(data, learners)
            rep.place(fig, "memory_saved",
                      "Share of the naive layout's cells (every pair of attribute values, "
                      "same-attribute ones included) that the compact layout saves, per data "
                      "set and learner (Salem et al., Fig. 4a).")

    text = "\n".join(rep.md)
    write_text(out / "report.md", text)
    write_text(out / "report.html", markdown_to_html(text, f"Report: {opts.name}", out))
    return out


_FOLD_TESTS = {tb.WDL_WILCOXON_FOLDS: ("a two-sided Wilcoxon signed-rank test", "the JMLR "
                                       "2016 protocol"),
               tb.WDL_CORRECTED_T: ("Weka's corrected resampled t-test (Nadeau & Bengio)",
                                    "Weka's Experimenter default")}


def _fold_metrics_for_wdl(fm: pd.DataFrame, data: pd.DataFrame, learners: list[str],
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


def direction_note(metrics: Sequence[str]) -> str:
    """A sentence naming the metrics of `metrics` where higher is better ('' when none):
    for them a win, rank 1 and 'A better' mean the higher value."""
    higher = [tb.TABLE_METRICS.get(m, m) for m in metrics if not lower_is_better(m)]
    if not higher:
        return ""
    return (f" Higher is better for {', '.join(higher)}: there a win, rank 1 and 'better' "
            "go to the higher value.")


def _wdl_intro(opts: ReportOptions, metrics: list[str], fold_names: set[str]) -> str:
    """The paragraph above the W/D/L tables: how a data set is decided, per metric."""
    note = direction_note(metrics)
    intro = ("Laid out like the paper's Tables 2-5: the cell in row A, column B is A's "
             "wins/draws/losses against B over the data sets of the collection (lower is "
             + ("better for every metric). " if not note else
                f"better, except where said below).{note} Below, 'lower' means 'better'. "))
    by_folds = [m for m in metrics if m in fold_names]
    plain = [m for m in metrics if m not in fold_names]
    if by_folds and opts.wdl == tb.WDL_CORRECTED_T:
        intro += (f"**W/D/L decided per data set by Weka's corrected resampled t-test over "
                  f"folds** (report.wdl = corrected-t) for {', '.join(by_folds)}: a data set "
                  f"is a win for A when the two-sided test over the paired per-fold "
                  f"differences (variance corrected by 1/k + n_test/n_train = 1/k + "
                  f"{opts.test_train_ratio:.4g}, k − 1 degrees of freedom) gives p < "
                  f"{opts.alpha:g} and A's mean is lower, a loss when p < {opts.alpha:g} and "
                  "it is higher, otherwise a draw. ")
    elif by_folds:
        intro += (f"**W/D/L decided per data set by a Wilcoxon signed-rank test over folds** "
                  f"(report.wdl = wilcoxon-folds) for {', '.join(by_folds)}: a data set is a "
                  f"win for A when the two-sided Wilcoxon signed-rank test over the paired "
                  f"per-fold values gives p < {opts.alpha:g} and A's values are lower, a loss "
                  f"when p < {opts.alpha:g} and they are higher, otherwise a draw (exact null "
                  "distribution, or the normal approximation with ties). ")
    if by_folds:
        if plain:
            intro += (f"No per-fold values for {', '.join(plain)}: a win = A has the lower "
                      f"value. {_draw_rule(opts)} ")
    else:
        intro += f"A win = A has the lower value. {_draw_rule(opts)} "
    test = ("two-tailed" if opts.sign_test == "two-tailed" else
            "one-tailed (in the direction of the larger count; report.sign_test)")
    adjusted = "" if opts.correction == "none" else (
        f", its p-values {opts.correction.capitalize()}-adjusted over the pairs of each table "
        "(report.correction; printed p-values are the adjusted ones, `p_adjusted` in "
        "`tables/wdl.csv`)")
    intro += (f"**Bold** = {test} binomial sign test on wins vs losses (draws excluded)"
              f"{adjusted}, p < {opts.alpha:g}. Times are total CPU seconds over all folds "
              "of a data set. Files: `tables/wdl_<metric>.md`, "
              "`.tex` and the tidy `tables/wdl.csv`.")
    return intro


def _add_oracle(data: pd.DataFrame, folds: pd.DataFrame | None, oracle: Mapping[str, Any],
                metrics: list[str]) -> tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame]:
    """The summary (and per-fold values) with the oracle's rows: per data set and metric
    the member learner with the lowest value (ties: the first listed) and its values."""
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
            best = g.iloc[int(np.nanargmin(vals.to_numpy()))]
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


def _comparison_figures(rep: "_Report", out: Path, data: pd.DataFrame,
                        opts: ReportOptions) -> None:
    """The configured time and rank figures (report.time_figures, report.rank_figure:
    JMLR 2016's Figs. 3, 4 and 9)."""
    from workbench.report import figures as fg

    paper = _paper_figures(opts)

    def cite(stem: str) -> str:
        return f" (cf. the paper's {paper[stem]})" if stem in paper else ""

    rep.add("## Time and rank comparisons")
    tf = opts.time_figures or {}
    if tf.get("pairs"):
        fig = fg.time_pairs_figure(data, tf["pairs"], "Training and classification time, "
                                   "summed over data sets" + cite("time_pairs"))
        rep.place(fig, "time_pairs",
                  "CPU seconds of training and of classification (totals over folds), summed "
                  "over the data sets both learners of a pair have; the pair's bars side by "
                  "side (report.time_figures.pairs).")
    if tf.get("reference") and tf.get("learners"):
        ref = tf["reference"]
        fig = fg.time_per_dataset_figure(data, ref, tf["learners"], f"Time relative to {ref} "
                                         "per data set" + cite("time_per_dataset"))
        rep.place(fig, "time_per_dataset",
                  f"Training and classification CPU seconds of each learner divided by "
                  f"{ref}'s on the same data set (log axis; 1 = {ref}), data sets in "
                  f"increasing {ref} time.")
    rf = opts.rank_figure or {}
    if rf.get("learners"):
        metrics = rf.get("metrics") or ["rmse_true_class", "zero_one_loss"]
        ranks = {m: rank_matrix(metric_matrix(data, m, rf["learners"]), lower_is_better(m))
                 for m in metrics if m in data.columns}
        fig = fg.rank_figure(ranks, "Average ranks" + cite("rank_figure"))
        rows = [[m, name, float(r[name].mean()), float(r[name].std(ddof=0)), r.shape[0]]
                for m, r in ranks.items() for name in r.columns]
        write_csv(out / "tables" / "rank_figure.csv", pd.DataFrame(
            rows, columns=["metric", "learner", "mean_rank", "std_rank", "n_datasets"]))
        rep.place(fig, "rank_figure",
                  "Average rank over the data sets on which every listed learner has a value "
                  "(1 = lowest value, ties share the average rank), with one standard "
                  "deviation of the per-data-set ranks; values in `tables/rank_figure.csv` "
                  "(report.rank_figure)." + direction_note(list(ranks)))


def _bayesian_section(rep: "_Report", out: Path, data: pd.DataFrame, opts: ReportOptions,
                      figures: bool) -> None:
    """Bayesian signed-rank tests (`stats.bayesian`) of the configured pairs per metric:
    tables/bayesian.csv, a Markdown table and a simplex figure per metric."""
    bay = opts.bayesian or {}
    rope, pairs = bay["rope"], bay["pairs"]
    rep.add("## Bayesian signed-rank tests",
            f"For each pair (A, B) and metric, the posterior probability that A is better by "
            f"more than the region of practical equivalence (rope = {rope:g} in the metric's "
            f"units), that the two are practically equivalent, and that B is better, from the "
            f"Bayesian signed-rank test over the data sets (Benavoli et al. 2014, 2017: "
            f"Dirichlet-process prior of strength 0.5 at 0, {bay['samples']:,} posterior "
            f"samples, seed {bay['seed']}; report.bayesian). Also in `tables/bayesian.csv`."
            + direction_note(bay["metrics"]))
    rows = []
    for m in bay["metrics"]:
        if m not in data.columns:
            rep.add(f"_No {tb.TABLE_METRICS.get(m, m)} values in this run._")
            continue
        wide = metric_matrix(data, m, list(dict.fromkeys(x for p in pairs for x in p)))
        results = []
        lines = [f"### {tb.TABLE_METRICS[m]}\n", "| A | B | data sets | P(A better) | "
                 "P(equivalent) | P(B better) |", "|---|---|---:|---:|---:|---:|"]
        for a, b in pairs:
            res = signed_rank(wide[a], wide[b], rope, samples=bay["samples"], seed=bay["seed"],
                              lower_is_better=lower_is_better(m))
            results.append((a, b, res))
            rows.append([m, a, b, rope, res.n, res.p_a_better, res.p_rope, res.p_b_better])
            lines.append(f"| {a} | {b} | {res.n} | {res.p_a_better:.3f} | {res.p_rope:.3f} | "
                         f"{res.p_b_better:.3f} |")
        rep.add("\n".join(lines) + "\n")
        if figures and results:
            from workbench.report import figures as fg

            fig = fg.bayes_simplex_figure(results, m)
            rep.place(fig, f"bayes_{m}",
                      f"{tb.TABLE_METRICS[m]}: posterior of the Bayesian signed-rank test "
                      f"(rope {rope:g}) for each pair, in barycentric coordinates.")
    write_csv(out / "tables" / "bayesian.csv", pd.DataFrame(rows, columns=[
        "metric", "a", "b", "rope", "n_datasets", "p_a_better", "p_rope", "p_b_better"]))


def _paper_figures(opts: ReportOptions) -> dict[str, str]:
    """The configured paper's figure labels by report figure (its metric map's
    ``figures``), so that a title cites that paper's figure numbers or none."""
    if not isinstance(opts.paper_agreement, Path):
        return {}
    return agr.load_metric_map(opts.paper_agreement).figures


def _draw_rule(opts: ReportOptions) -> str:
    if opts.draw_decimals is None:
        return "A draw = exactly equal values."
    if isinstance(opts.draw_decimals, dict):
        spec = ", ".join(f"{k}: {v}" for k, v in sorted(opts.draw_decimals.items()))
        return f"A draw = equal values after rounding (decimals per metric: {spec})."
    return f"A draw = equal values after rounding to {opts.draw_decimals} decimals."


def _run_lines(opts: ReportOptions, data: pd.DataFrame, colls: Mapping[str, list[str]],
               metrics: list[str]) -> str:
    lines = [
        f"- Learners (config order): {', '.join(opts.learners)}",
        f"- Baseline for the figures: {opts.baseline}",
        f"- Data sets with results: {data['dataset'].nunique()}; (data set, learner) "
        f"pairs: {len(data)}",
        "- Collections: " + "; ".join(f"{c} = {len(m)}" for c, m in colls.items()),
        "- Size groups: the paper's (catalog) group per data set, else by instances: large "
        "> 10,000, medium 1,000 < n ≤ 10,000, small n ≤ 1,000",
        f"- Metrics: {', '.join(metrics)}",
    ]
    lines += [f"- Note: {note}" for note in opts.notes]
    incomplete = []
    per_learner = data.groupby("learner")["dataset"].nunique()
    n_all = data["dataset"].nunique()
    for name in opts.learners:
        if per_learner.get(name, 0) < n_all:
            incomplete.append(f"{name} ({per_learner.get(name, 0)}/{n_all})")
    if incomplete:
        lines.append("- Learners without results on every data set (pairs are compared on "
                     "the data sets both have): " + ", ".join(incomplete))
    return "\n".join(lines)


def _ranks_markdown(cd_info: Mapping[str, Any], learners: list[str]) -> str:
    if not cd_info:
        return ""
    head = "| metric | N | " + " | ".join(learners) + " | Friedman p | CD |"
    lines = [head, "|---|---:|" + "---:|" * len(learners) + "---:|---:|"]
    for m, (fr, cd) in cd_info.items():
        cells = [f"{fr.average_ranks.get(n, np.nan):.2f}" for n in learners]
        p = "" if np.isnan(fr.p_value) else f"{fr.p_value:.3g}"
        c = "" if np.isnan(cd) else f"{cd:.3f}"
        lines.append(f"| {tb.TABLE_METRICS.get(m, m)} | {fr.n_datasets} | "
                     + " | ".join(cells) + f" | {p} | {c} |")
    return "\n".join(lines) + "\n"


def _agreement_section(rep: _Report, data: pd.DataFrame, opts: ReportOptions,
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
