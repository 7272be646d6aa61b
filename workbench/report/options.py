"""Report options read from a run directory's resolved ``config.yaml``.

What the report takes from the config (everything optional):

- ``learners``: the learner list, in config order (entries are names, ``{name: ...}``
  mappings, or one-key mappings ``{A2DE-SW: {...}}``); rows/columns of every table follow it.
- ``baseline`` (top level or under ``report``): the learner figures are normalised to
  (default ``NB`` when run, else the first learner).
- ``report``: ``collections`` (custom groups, ``{name: [data set, ...]}``),
  ``draw_decimals`` (int, or ``{metric: int}``; default exact comparison), ``alpha``
  (default 0.05), ``paper_agreement`` (path of a metric map YAML, e.g.
  ``experiments/pakdd13/metric_map.yaml``; absent or ``false``: no comparison with a
  paper), ``scatter``
  (extra scatter plots: a list of ``[A, B]`` learner pairs, drawn for 0-1 loss and Weka
  RMSE, or a mapping ``{pairs: [[A, B], ...], metrics: [rmse_true_class, ...], log:
  false}``; A is on the y axis), ``wdl`` (how a data set counts in the W/D/L tables:
  ``sign`` (default, PAKDD 2013: the lower value wins) or ``wilcoxon-folds`` (JMLR 2016:
  a win/loss only when a Wilcoxon signed-rank test over the per-fold values is
  significant at ``alpha``, else a draw)), ``wdl_p_values`` (true: every W/D/L cell
  also prints its p-value, as PAKDD 2014's Table 2 does), ``sign_test`` (``two-tailed``,
  the default, or ``one-tailed`` in the direction of the larger count, Salem et al.'s
  convention: the tables, their bold cells and the paper comparison all use it),
  ``correction`` (``none``, ``holm`` or ``bonferroni``: adjust the sign-test p-values of
  the pairs of each W/D/L table for multiple comparisons; bold and printed p-values are the
  adjusted ones), ``posthoc`` (``nemenyi``, the default, ``holm`` or ``shaffer``: the
  all-pairs test after the Friedman test, `stats.posthoc`; its adjusted p-values are in
  ``tables/posthoc.csv`` and its groups are the bars of the CD diagrams), ``wdl:
  corrected-t`` (a data set is decided by Weka's corrected resampled t-test over the
  paired per-fold values, test/train ratio from the protocol),
  ``bayesian`` (true, or ``{rope, metrics, pairs, samples, seed}``: Bayesian signed-rank
  tests with a region of practical equivalence, with simplex plots; default rope 0.01,
  0-1 loss and RMSE, every learner against the baseline), ``figure_width`` (``screen``, the
  default; ``column`` 8.5 cm, ``lncs`` 12.2 cm, ``page`` 17 cm, or a number of cm: every
  figure is drawn at that width with text of at least 7 pt), ``oracle`` (``{name,
  learners}``: an a posteriori comparator computed from the stored results — per data set
  and metric the lowest value among `learners`, e.g. JMLR 2016's "KDB with the best k"; a
  column of the W/D/L and per-data-set tables, left out of the ranks), ``time_figures``
  (``{reference, learners, pairs}``: JMLR 2016's Figs. 3–4 — training and classification
  CPU seconds summed over data sets for pairs [A, B] side by side, and per data set each
  learner's time relative to the reference, data sets in increasing reference time; Fig.
  10 with ``bars``: per data set each listed learner's mean CPU seconds per fold,
  classification on a log axis),
  ``rank_figure`` (``{learners, metrics}``: JMLR 2016's Fig. 9 — the average rank of each
  learner over the data sets with its standard deviation; the oracle may be listed),
  ``sweeps`` (``{name: {parameter, learners: {learner: value}}}``: the metrics of learner
  variants against the value of the parameter they differ in; a config's one-parameter
  sweep, ``m: [0.1, 1, 5]``, fills it in), ``log_time_figure`` (true: PAKDD 2014's Fig. 2 —
  per learner ln(mean CPU seconds over the data sets + 1), training and classification,
  for all data sets and each of the config's own collections), ``weka_sd_rule`` (true: with
  ``wdl: corrected-t``, a standard deviation of the per-fold differences ≤ 1e-6 counts as
  none — significant unless the mean difference is 0 — as Weka's Experimenter does; default
  false: only an exactly constant difference).

Relative paths are looked up in the current directory, the run directory, the directory of
the original config (``config_path`` / ``source`` key, if recorded) and the project root.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from workbench import resources, yamlnum
from workbench.evaluation.metrics import metric_names
from workbench.errors import ConfigError
from workbench.stats import TAILS, WDL_METHODS
from workbench.stats.corrections import METHODS as CORRECTIONS
from workbench.stats.posthoc import METHODS as POSTHOC

REPORT_KEYS = ("baseline", "collections", "draw_decimals", "alpha", "paper_agreement",
               "scatter", "wdl", "wdl_p_values", "sign_test", "correction", "posthoc",
               "bayesian", "figure_width", "oracle", "time_figures", "rank_figure", "sweeps",
               "log_time_figure", "weka_sd_rule")
PROJECT_ROOT = resources.ROOT
DEFAULT_SCATTER_METRICS = metric_names(scatter=True)
BAYESIAN_KEYS = ("rope", "metrics", "pairs", "samples", "seed")
CM_PER_INCH = 2.54
PAPER_WIDTHS_CM = {"column": 8.5, "lncs": 12.2, "page": 17.0}
"""Named figure widths: a two-column paper's column, Springer LNCS's text width (the format
of the papers reproduced here), a full A4 text width."""


@dataclass
class ReportOptions:
    """Everything the report needs besides the results summary."""

    learners: list[str] = field(default_factory=list)
    baseline: str | None = None
    collections: dict[str, list[str]] = field(default_factory=dict)
    draw_decimals: int | None | dict[str, int | None] = None
    alpha: float = 0.05
    paper_agreement: Path | None | bool = None  # None = automatic, False = off
    scatter: list[tuple[str, str]] = field(default_factory=list)
    scatter_metrics: list[str] = field(default_factory=lambda: list(DEFAULT_SCATTER_METRICS))
    scatter_log: bool = False
    wdl: str = "sign"
    wdl_p_values: bool = False  # print each W/D/L cell's p-value (PAKDD 2014's Table 2)
    sign_test: str = "two-tailed"  # or "one-tailed" (Salem et al.'s convention)
    correction: str = "none"  # multiple-comparison correction of each W/D/L table's p-values
    posthoc: str = "nemenyi"  # the all-pairs test after Friedman (`stats.posthoc`)
    test_train_ratio: float | None = None  # wdl: corrected-t (from the run's protocol)
    bayesian: dict[str, Any] | None = None  # rope, metrics, pairs, samples, seed
    figure_width: float | None = None  # inches; None = the screen layout
    oracle: dict[str, Any] | None = None  # {name, learners}: best of `learners` per data set
    time_figures: dict[str, Any] | None = None  # {reference, learners, pairs, bars}
    rank_figure: dict[str, Any] | None = None  # {learners, metrics}
    log_time_figure: bool = False  # PAKDD 2014's Fig. 2: ln(mean seconds + 1)
    weka_sd_rule: bool = False  # wdl: corrected-t takes an SD <= 1e-6 for 0, as Weka
    sweeps: dict[str, dict[str, Any]] = field(default_factory=dict)  # {name: {parameter,
    # learners: {learner with results: value}}}, each with >= 2 learners
    name: str = ""
    notes: list[str] = field(default_factory=list)  # shown in the report's Run section

    def decimals_for(self, metric: str) -> int | None:
        """Draw-rounding decimals for one metric (None = exact)."""
        if isinstance(self.draw_decimals, dict):
            return self.draw_decimals.get(metric)
        return self.draw_decimals


def _learner_name(entry: Any, where: str) -> str:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, Mapping):
        for key in ("label", "name", "learner"):
            if isinstance(entry.get(key), str):
                return entry[key]
        if len(entry) == 1:
            return str(next(iter(entry)))
    raise ConfigError(f"{where}: cannot read a learner name from {entry!r}")


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def read_config(run_dir: Path) -> dict[str, Any]:
    """The run directory's resolved config as a plain dict ({} when absent)."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        return {}
    try:
        data = yamlnum.load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{line}: invalid YAML ({exc})") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return dict(data)


def with_overrides(config: Mapping[str, Any], items: list[str]) -> dict[str, Any]:
    """The config with its ``report:`` options overridden by ``KEY=VALUE`` items (the CLI's
    ``report --set``): VALUE is read as YAML, a dotted KEY sets a nested option
    (``bayesian.rope=0.01``); the result is validated as a config's ``report:`` is."""
    out = dict(config)
    report = dict(out.get("report") or {})
    for key, value in yamlnum.assignments(items).items():
        *parents, leaf = key.split(".")
        top = (parents or [leaf])[0]
        if top not in REPORT_KEYS:
            close = difflib.get_close_matches(top, REPORT_KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"--set {key}: unknown report option '{top}'{hint} (known: "
                              f"{', '.join(REPORT_KEYS)})")
        node = report
        for name in parents:
            child = node.get(name)
            node[name] = dict(child) if isinstance(child, Mapping) else {}
            node = node[name]
        node[leaf] = value
    out["report"] = report
    return out


def resolve_path(value: str | Path, run_dir: Path, config: Mapping[str, Any]) -> Path:
    """Find a relative path from the config (see module docstring for the search order)."""
    p = Path(value).expanduser()
    if p.is_absolute():
        return p
    bases = [Path.cwd(), Path(run_dir)]
    for key in ("config_path", "source", "config_file"):
        src = config.get(key)
        if isinstance(src, str):
            bases.append(Path(src).expanduser().parent)
    bases.append(PROJECT_ROOT)
    for base in bases:
        if (base / p).exists():
            return (base / p).resolve()
    return (PROJECT_ROOT / p).resolve()


def options_from_config(
    config: Mapping[str, Any], run_dir: Path, present_learners: list[str]
) -> ReportOptions:
    """Build `ReportOptions` from a config dict and the learners found in the results."""
    report = config.get("report") or {}
    if not isinstance(report, Mapping):
        raise ConfigError("report: expected a mapping of report options")
    for key in report:
        if key not in REPORT_KEYS:
            close = difflib.get_close_matches(str(key), REPORT_KEYS, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ConfigError(f"report.{key}: unknown option ({hint}allowed: "
                              f"{', '.join(REPORT_KEYS)})")
    opts = ReportOptions(name=str(config.get("name") or Path(run_dir).name))

    learners: list[str] = []
    for i, entry in enumerate(config.get("learners") or []):
        name = _learner_name(entry, f"learners[{i}]")
        if name not in learners:
            learners.append(name)
    present = set(present_learners)
    ordered = [n for n in learners if n in present]
    ordered += [n for n in present_learners if n not in ordered]
    opts.learners = ordered

    baseline = report.get("baseline", config.get("baseline"))
    if baseline is not None and not isinstance(baseline, str):
        raise ConfigError(f"report.baseline: expected a learner name, got {baseline!r}")
    if baseline is not None and baseline not in present:
        opts.notes.append(f"The configured baseline {baseline} has no results in this run; "
                          "the figures are normalised to the first learner with results.")
        baseline = ordered[0] if ordered else None
    elif baseline is None:
        baseline = "NB" if "NB" in present else (ordered[0] if ordered else None)
    opts.baseline = None if baseline is None else str(baseline)

    custom = report.get("collections") or {}
    if not isinstance(custom, Mapping):
        raise ConfigError("report.collections: expected a mapping {name: [data sets]}")
    for key, members in custom.items():
        if isinstance(members, str) or not isinstance(members, (list, tuple)):
            raise ConfigError(f"report.collections.{key}: expected a list of data set names")
        opts.collections[str(key)] = [str(m) for m in members]

    dec = report.get("draw_decimals")
    if isinstance(dec, Mapping):
        opts.draw_decimals = {str(k): (None if v is None else int(v)) for k, v in dec.items()}
    elif dec is not None:
        if isinstance(dec, bool) or not isinstance(dec, int) or dec < 0:
            raise ConfigError(f"report.draw_decimals: expected a non-negative integer, got {dec!r}")
        opts.draw_decimals = int(dec)

    alpha = report.get("alpha", 0.05)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ConfigError(f"report.alpha: expected a number in (0, 1), got {alpha!r}")
    opts.alpha = float(alpha)

    pa = report.get("paper_agreement")
    if pa is False:
        opts.paper_agreement = False
    elif pa not in (None, True):
        opts.paper_agreement = resolve_path(str(pa), run_dir, config)
        if not opts.paper_agreement.is_file():
            raise ConfigError(f"report.paper_agreement: metric map {pa!r} not found "
                              f"(looked for {opts.paper_agreement})")

    opts.oracle = _oracle_options(report.get("oracle"), present)
    known = present | ({opts.oracle["name"]} if opts.oracle else set())
    _scatter_options(opts, report.get("scatter"), known)

    wdl = report.get("wdl", "sign")
    if wdl not in WDL_METHODS:
        raise ConfigError(f"report.wdl: expected one of {', '.join(WDL_METHODS)}, got {wdl!r}")
    opts.wdl = str(wdl)
    pv = report.get("wdl_p_values", False)
    if not isinstance(pv, bool):
        raise ConfigError(f"report.wdl_p_values: expected true or false, got {pv!r}")
    opts.wdl_p_values = pv
    tails = report.get("sign_test", "two-tailed")
    if tails not in TAILS:
        raise ConfigError(f"report.sign_test: expected one of {', '.join(TAILS)}, got {tails!r}")
    opts.sign_test = str(tails)
    correction = report.get("correction", "none")
    if correction not in CORRECTIONS:
        raise ConfigError(f"report.correction: expected one of {', '.join(CORRECTIONS)}, "
                          f"got {correction!r}")
    opts.correction = str(correction)
    posthoc = report.get("posthoc", "nemenyi")
    if posthoc not in POSTHOC:
        raise ConfigError(f"report.posthoc: expected one of {', '.join(POSTHOC)}, "
                          f"got {posthoc!r}")
    opts.posthoc = str(posthoc)
    if opts.wdl == "corrected-t":
        opts.test_train_ratio = test_train_ratio(config.get("protocol") or {})
    opts.bayesian = _bayesian_options(report.get("bayesian"), present, opts.baseline)
    opts.figure_width = figure_width_inches(report.get("figure_width", "screen"))
    opts.time_figures = _learner_lists("time_figures", report.get("time_figures"), known,
                                       {"reference": str, "learners": list, "pairs": list,
                                        "bars": list})
    opts.rank_figure = _learner_lists("rank_figure", report.get("rank_figure"), known,
                                      {"learners": list, "metrics": list})
    opts.sweeps = _sweeps(report.get("sweeps"), present)
    log_time = report.get("log_time_figure", False)
    if not isinstance(log_time, bool):
        raise ConfigError(f"report.log_time_figure: expected true or false, got {log_time!r}")
    opts.log_time_figure = log_time
    sd_rule = report.get("weka_sd_rule", False)
    if not isinstance(sd_rule, bool):
        raise ConfigError(f"report.weka_sd_rule: expected true or false, got {sd_rule!r}")
    opts.weka_sd_rule = sd_rule
    return opts


def _sweeps(value: Any, present: set[str]) -> dict[str, dict[str, Any]]:
    """``report.sweeps`` checked; variants without results left out, and a sweep with
    fewer than two variants with results."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError("report.sweeps: expected a mapping {name: {parameter, learners}}")
    out = {}
    for name, sweep in value.items():
        where = f"report.sweeps.{name}"
        if not isinstance(sweep, Mapping) or set(sweep) != {"parameter", "learners"} or \
                not isinstance(sweep["learners"], Mapping):
            raise ConfigError(f"{where}: expected {{parameter: NAME, learners: {{learner: "
                              "value, ...}}")
        kept = {str(k): v for k, v in sweep["learners"].items() if str(k) in present}
        if len(kept) >= 2:
            out[str(name)] = {"parameter": str(sweep["parameter"]), "learners": kept}
    return out


def _learner_lists(key: str, value: Any, known: set[str], fields: dict[str, type]
                   ) -> dict[str, Any] | None:
    """A mapping of learner names / lists / pairs (`fields`), each learner with results."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) - set(fields):
        raise ConfigError(f"report.{key}: expected a mapping with keys {', '.join(fields)}")
    out: dict[str, Any] = {}
    for name, kind in fields.items():
        v = value.get(name)
        if v is None:
            continue
        if not isinstance(v, kind):
            raise ConfigError(f"report.{key}.{name}: expected a {kind.__name__}, got {v!r}")
        if name == "metrics":
            table = metric_names(table=True)
            bad = [m for m in v if m not in table]
            if bad or not v:
                raise ConfigError(f"report.{key}.metrics: unknown metric(s) {bad} (choose "
                                  f"from {', '.join(table)})")
            out[name] = [str(m) for m in v]
            continue
        items = [v] if kind is str else (list(v) if name != "pairs" else
                                         [p for pair in v for p in (
                                             pair if isinstance(pair, (list, tuple))
                                             and len(pair) == 2 else [None])])
        missing = [x for x in items if x not in known]
        if missing:
            raise ConfigError(f"report.{key}.{name}: {missing[0]!r} is not a learner with "
                              "results (pairs are [A, B])")
        out[name] = v if kind is str else ([tuple(p) for p in v] if name == "pairs" else
                                           [str(x) for x in v])
    return out


def _oracle_options(value: Any, present: set[str]) -> dict[str, Any] | None:
    """``report.oracle`` as {name, learners} (None: none)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) - {"name", "learners"} or \
            not isinstance(value.get("name"), str) or not value.get("learners"):
        raise ConfigError("report.oracle: expected {name: TEXT, learners: [learner, ...]}")
    name, members = value["name"], value["learners"]
    if name in present:
        raise ConfigError(f"report.oracle.name: {name!r} is a learner of this run; an oracle "
                          "needs a name of its own")
    if not isinstance(members, (list, tuple)) or any(not isinstance(m, str) for m in members):
        raise ConfigError("report.oracle.learners: expected a list of learner names")
    found = [m for m in members if m in present]
    if not found:
        raise ConfigError(f"report.oracle.learners: none of {', '.join(members)} has results")
    return {"name": name, "learners": found}


def test_train_ratio(protocol: Mapping[str, Any]) -> float:
    """n_test / n_train of one fold of the run's protocol (the corrected t-test's term)."""
    kind = protocol.get("type", "kfold")
    if kind == "kfold":
        folds = protocol.get("folds", 2)
        return 1.0 / (int(folds) - 1)
    if kind == "sampled":
        return float(protocol["n_test"]) / float(protocol["n_train"])
    raise ConfigError(f"report.wdl: corrected-t needs repeated folds of one size (k-fold or "
                      f"sampled protocols), not a {kind} protocol")


def figure_width_inches(value: Any) -> float | None:
    """``figure_width`` in inches (None: the screen layout)."""
    if value in (None, "screen"):
        return None
    if isinstance(value, str) and value in PAPER_WIDTHS_CM:
        return PAPER_WIDTHS_CM[value] / CM_PER_INCH
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 5 <= value <= 40:
        return float(value) / CM_PER_INCH
    raise ConfigError(f"report.figure_width: expected screen, {', '.join(PAPER_WIDTHS_CM)} or "
                      f"a width in cm between 5 and 40, got {value!r}")


def _bayesian_options(value: Any, present: set[str], baseline: str | None
                      ) -> dict[str, Any] | None:
    """``report.bayesian`` as {rope, metrics, pairs, samples, seed} (None: off)."""
    if value in (None, False):
        return None
    if value is True:
        value = {}
    if not isinstance(value, Mapping):
        raise ConfigError("report.bayesian: expected true or a mapping with keys "
                          f"{', '.join(BAYESIAN_KEYS)}")
    for key in value:
        if key not in BAYESIAN_KEYS:
            raise ConfigError(f"report.bayesian.{key}: unknown key (allowed: "
                              f"{', '.join(BAYESIAN_KEYS)})")
    rope = value.get("rope", 0.01)
    if isinstance(rope, bool) or not isinstance(rope, (int, float)) or not rope >= 0:
        raise ConfigError(f"report.bayesian.rope: expected a number >= 0, got {rope!r}")
    metrics = value.get("metrics", ["zero_one_loss", "rmse"])
    metrics = [metrics] if isinstance(metrics, str) else metrics
    table = metric_names(table=True)
    if not isinstance(metrics, (list, tuple)) or not metrics or \
            any(m not in table for m in metrics):
        raise ConfigError(f"report.bayesian.metrics: expected a list of metrics from "
                          f"{', '.join(table)}, got {metrics!r}")
    pairs = value.get("pairs")
    if pairs is None:
        pairs = [[name, baseline] for name in sorted(present) if name != baseline] \
            if baseline else []
    if not isinstance(pairs, (list, tuple)) or any(
            not isinstance(p, (list, tuple)) or len(p) != 2 for p in pairs):
        raise ConfigError("report.bayesian.pairs: expected a list of [learner A, learner B]")
    for i, (a, b) in enumerate(pairs):
        for who in (a, b):
            if who not in present:
                raise ConfigError(f"report.bayesian.pairs[{i}]: learner {who!r} has no "
                                  "results")
    out = {}
    for key, default, low in (("samples", 50_000, 100), ("seed", 1, 0)):
        v = value.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ConfigError(f"report.bayesian.{key}: expected an integer >= {low}, got {v!r}")
        out[key] = v
    return {"rope": float(rope), "metrics": [str(m) for m in dict.fromkeys(metrics)],
            "pairs": [(str(a), str(b)) for a, b in pairs], **out}


def _scatter_options(opts: ReportOptions, value: Any, present: set[str]) -> None:
    """Fill ``opts.scatter*`` from ``report.scatter`` (list of pairs, or a mapping)."""
    where = "report.scatter"
    pairs = value
    if isinstance(value, Mapping):
        unknown = [str(k) for k in value if k not in ("pairs", "metrics", "log")]
        if unknown:
            raise ConfigError(f"{where}.{unknown[0]}: unknown key (allowed: pairs, metrics, "
                              "log)")
        pairs = value.get("pairs")
        where = "report.scatter.pairs"
        metrics = value.get("metrics", list(DEFAULT_SCATTER_METRICS))
        if isinstance(metrics, str):
            metrics = [metrics]
        if not isinstance(metrics, (list, tuple)) or not metrics:
            raise ConfigError("report.scatter.metrics: expected a non-empty list of metrics")
        table = metric_names(table=True)
        for m in metrics:
            if m not in table:
                raise ConfigError(f"report.scatter.metrics: unknown metric {m!r} (choose "
                                  f"from {', '.join(table)})")
        opts.scatter_metrics = [str(m) for m in dict.fromkeys(metrics)]
        log = value.get("log", False)
        if not isinstance(log, bool):
            raise ConfigError(f"report.scatter.log: expected true or false, got {log!r}")
        opts.scatter_log = log
    if pairs is not None and not isinstance(pairs, (list, tuple)):
        raise ConfigError(f"{where}: expected a list of [learner A, learner B] pairs")
    for i, pair in enumerate(pairs or []):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ConfigError(f"{where}[{i}]: expected a pair [learner A, learner B]")
        a, b = str(pair[0]), str(pair[1])
        for who in (a, b):
            if who not in present:
                raise ConfigError(f"{where}[{i}]: learner {who!r} has no results")
        opts.scatter.append((a, b))
