"""Nested tuning: each tuned learner against the oracle and the fixed candidates.

A tuned learner (``tune:``, `evaluation.tuning`) chose its parameters inside each training
fold. Its candidates run as fixed learners in the same run (e.g. a sweep of the same
lists without ``tune``) give the *fixed* results and the *oracle* — per data set the best
fixed candidate, chosen after seeing the test folds, as JMLR 2016's "best k": the honest
tuned learner can only approach it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pandas as pd

from workbench.evaluation import metrics as mt
from workbench.evaluation.tuning import TUNE_KEY, candidates, label
from workbench.report import tables as tb
from workbench.report._io import write_csv
from workbench.report.context import ReportContext
from workbench.report.document import Document
from workbench.store import load_tuned, safe_name

SHOWN = ("rmse", "zero_one_loss")


def tuned_learners(cfg: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The config's tuned learners: display → {learner, fixed, grid, metric, fixed_runs},
    fixed_runs = {candidate label: display of the fixed learner that ran it}."""
    learners = cfg.get("learners")
    if not isinstance(learners, dict):  # ([NB, A1DE]: registry names, none tuned)
        return {}
    specs = {name: dict(spec) for name, spec in learners.items() if isinstance(spec, dict)}
    out = {}
    for name, spec in specs.items():
        if TUNE_KEY not in spec:
            continue
        reg = spec.get("learner", name)
        tune = spec.get(TUNE_KEY) or {}
        fixed = {k: v for k, v in spec.items() if k not in ("learner", TUNE_KEY)
                 and not isinstance(v, list)}
        grid = {k: v for k, v in spec.items() if k not in ("learner", TUNE_KEY)
                and isinstance(v, list)}
        runs = {}
        for cand in candidates(grid):
            want = _key({**fixed, **cand})
            for other, ospec in specs.items():
                if TUNE_KEY not in ospec and ospec.get("learner", other) == reg and \
                        _key({k: v for k, v in ospec.items() if k != "learner"}) == want:
                    runs[label(cand)] = other
                    break
        out[name] = {"learner": reg, "fixed": fixed, "grid": grid,
                     "metric": tune.get("metric", "rmse"), "fixed_runs": runs}
    return out


def _key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=str)


def comparison(data: pd.DataFrame, name: str, runs: dict[str, str], metric: str
               ) -> pd.DataFrame:
    """Per data set: the tuned learner's value of `metric`, the oracle's (the best fixed
    candidate there, in the metric's direction; ties → the earlier candidate) and which
    candidate that is, and every fixed candidate's value."""
    wide = data.pivot_table(index="dataset", columns="learner", values=metric,
                            aggfunc="first", sort=False)
    lower = mt.lower_is_better(metric)
    rows = []
    for ds in wide.index:
        row: dict[str, Any] = {"dataset": ds, "tuned": wide.at[ds, name]
                               if name in wide.columns else float("nan")}
        best, best_label = float("nan"), ""
        for cand, learner in runs.items():
            v = wide.at[ds, learner] if learner in wide.columns else float("nan")
            row[cand] = v
            if v == v and (best != best or (v < best if lower else v > best)):
                best, best_label = v, cand
        row["oracle"], row["oracle_choice"] = best, best_label
        rows.append(row)
    return pd.DataFrame(rows)


def _choices(ctx: ReportContext, name: str) -> dict[str, str]:
    """Per data set, how often each candidate was chosen over the folds ("k=1 ×3, …")."""
    try:
        tuned = load_tuned(ctx.run_dir)
    except Exception:  # noqa: BLE001 - a report of results without the folds' choices
        return {}
    out = {}
    for ds, grp in tuned[tuned["learner"] == name].groupby("dataset", sort=False):
        counts = Counter(grp["tuned"])
        out[str(ds)] = ", ".join(f"{_short(c)} ×{n}" for c, n in counts.most_common())
    return out


def _short(text: str) -> str:
    """A candidate's JSON as k=1, m=0.5."""
    try:
        return ", ".join(f"{k}={v}" for k, v in json.loads(text).items())
    except ValueError:
        return text


def render(ctx: ReportContext, doc: Document) -> None:
    tuned = tuned_learners(ctx.cfg)
    if not tuned:
        return
    doc.add("## Nested tuning",
            "Each tuned learner chose its parameters in every training fold by an inner, "
            "stratified cross-validation of that fold only (the metric it chose by is "
            "named). *Fixed*: each candidate run on its own; *oracle*: per data set the best "
            "fixed candidate, chosen after seeing the test folds (as JMLR 2016's best k) — "
            "a bound the honest tuned learner cannot be expected to reach. Values in "
            "`tables/tuning_<learner>_<metric>.csv`.")
    for name, t in tuned.items():
        choices = _choices(ctx, name)
        runs = t["fixed_runs"]
        doc.add(f"### {name}: {t['learner']} tuned over "
                + ", ".join(f"{k} ∈ {v}" for k, v in t["grid"].items())
                + f" by inner {t['metric']}")
        if not runs:
            doc.add("_No candidate ran as a fixed learner in this run (add the same lists "
                    "without `tune` — a sweep — to see the fixed and oracle results)._")
        for metric in [m for m in SHOWN if m in ctx.data.columns]:
            table = comparison(ctx.data[ctx.data["learner"].isin([name, *runs.values()])],
                               name, runs, metric)
            write_csv(ctx.out / "tables" / f"tuning_{safe_name(name)}_{metric}.csv", table)
            cands = list(runs)
            head = ["data set", "tuned", *(["oracle", "oracle's"] if runs else []),
                    *(_short(c) for c in cands), "chosen in the folds"]
            lines = [f"**{tb.TABLE_METRICS.get(metric, metric)}**", "",
                     "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
            for rec in table.to_dict("records"):
                cells = [str(rec["dataset"]), f"{rec['tuned']:.4f}"]
                if runs:
                    cells += [f"{rec['oracle']:.4f}", _short(rec["oracle_choice"])]
                cells += [f"{rec[c]:.4f}" for c in cands]
                cells.append(choices.get(str(rec["dataset"]), ""))
                lines.append("| " + " | ".join(cells) + " |")
            means = ["**mean**", f"{table['tuned'].mean():.4f}"]
            if runs:
                means += [f"{table['oracle'].mean():.4f}", ""]
            means += [f"{table[c].mean():.4f}" for c in cands] + [""]
            lines.append("| " + " | ".join(means) + " |")
            doc.add("\n".join(lines))
