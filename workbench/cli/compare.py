"""`python -m workbench compare NEW --baseline RUN` — a new method's W/D/L table against a
stored run's learners, computing only the new learner(s).

NEW is a registered learner (parameters with ``--set``), a config of new learners (YAML), or
a run directory already computed. A learner is run with the baseline's protocol on the
baseline's data sets; a config is run as written with the baseline added to its
``baselines:`` (so its pairs that match the baseline are copied, not recomputed). Then every
new learner — one whose effective parameters match none of the baseline's learners — is
compared with every baseline learner: printed, and written to ``compare/<baseline>.md`` and
``.csv`` in the new run directory.
"""

from __future__ import annotations

import argparse


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("new", help="a registered learner (see 'learners'), a config of new "
                               "learners (YAML), or a run directory to compare as it is")
    p.add_argument("--baseline", required=True, metavar="RUN",
                   help="the stored run to compare with: a run directory or a packaged "
                        "reproduction by name (pakdd13, jmlr16, ...)")
    p.add_argument("--set", dest="params", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter of the new learner (repeatable)")
    p.add_argument("--name", help="display name of the new learner (default: its registry "
                                  "name with the parameters set, e.g. A1DE[m=0.5])")
    p.add_argument("--metrics", type=_csv_list, default=["zero_one_loss", "rmse"],
                   metavar="M,N", help="metrics to compare (default zero_one_loss,rmse)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="sign-test level for the bold cells (default 0.05)")
    p.add_argument("--datasets", type=_csv_list, metavar="A,B",
                   help="only these data sets (a learner or config run on the others later "
                        "resumes)")
    p.add_argument("--output", metavar="DIR",
                   help="run directory of the new learner(s) (default results/compare-NAME "
                        "for a learner; the config's output for a config)")
    p.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                   help="parallel worker processes (default 1)")


def run(args: argparse.Namespace) -> int:
    import dataclasses
    import sys
    from pathlib import Path

    import yaml

    from workbench import log, store
    from workbench.errors import ConfigError, PartialFailure, WorkbenchError
    from workbench.experiment.config import load_config, parse_config
    from workbench.experiment.runner import run_experiment
    from workbench.experiment.rundir import is_published
    from workbench.resources import config_path, run_dir_path

    base = run_dir_path(args.baseline)
    base_cfg = yaml.safe_load((base / store.CONFIG_YAML).read_text(encoding="utf-8")) \
        if (base / store.CONFIG_YAML).is_file() else None
    if not isinstance(base_cfg, dict) or not store.read_metadata(base):
        raise WorkbenchError(f"--baseline {args.baseline}: {base} is not a run directory "
                             "(config.yaml and metadata.json)")
    if not 0 < args.alpha < 1:
        raise ConfigError(f"--alpha: expected a level in (0, 1), got {args.alpha}")
    new = Path(args.new).expanduser()
    if new.is_dir():
        if args.params or args.name:
            raise ConfigError("--set/--name: only for a learner (NEW is a run directory)")
        run_dir = new
        if not store.read_metadata(run_dir):
            raise WorkbenchError(f"{new}: not a run directory (no {store.METADATA_JSON})")
    else:
        if new.suffix in (".yaml", ".yml") or new.is_file():
            if args.params or args.name:
                raise ConfigError("--set/--name: only for a learner (NEW is a config)")
            config = load_config(config_path(args.new))
        else:
            config = _learner_config(args, base_cfg, parse_config)
        config = dataclasses.replace(
            config, baselines=(*config.baselines, (args.baseline, base.resolve())))
        if args.output:
            config = config.with_output(args.output)
        if not config.plugins:  # (a plugin's metric is known once the run loads it)
            _check_metrics(args.metrics)  # before computing anything
        result = run_experiment(config, jobs=args.jobs, datasets=args.datasets,
                                stream=sys.stderr, verbosity=log.level())
        run_dir = result.run_dir
        if result.failures:
            raise PartialFailure(f"{len(result.failures)} pair(s) failed; nothing compared "
                                 f"(first: {result.failures[0]})")
    text, tidy = _compare(run_dir, base, args.baseline, args.metrics, args.alpha,
                          args.datasets)
    print(text)
    if is_published(run_dir):
        log.note(f"not written: {run_dir} holds published results")
        return 0
    out = run_dir / "compare"
    label = store.safe_name(args.baseline if not Path(args.baseline).is_dir() else base.name)
    store.atomic_write_text(out / f"{label}.md", text + "\n")
    store.atomic_write_text(out / f"{label}.csv", tidy.to_csv(index=False))
    log.note(f"written: {out / label}.md and .csv")
    return 0


def _learner_config(args: argparse.Namespace, base_cfg: dict, parse_config):
    """A config running one learner with the baseline's protocol on its data sets."""
    from pathlib import Path

    import yaml

    from workbench.cli import parse_overrides
    from workbench.learners import registry

    registry.get(args.new)  # an unknown learner: one error naming it, before anything runs
    params = parse_overrides(args.params)
    name = args.name or (args.new + ("[" + ",".join(f"{k}={v}" for k, v in params.items())
                                     + "]" if params else ""))
    body = {
        "name": f"compare-{name}",
        "datasets": base_cfg.get("datasets") or "all",
        "data_dirs": base_cfg.get("data_dirs") or [],
        "protocol": base_cfg.get("protocol") or {},
        "learners": {name: {"learner": args.new, **params}},
        "plugins": [str(Path(p).resolve()) if p.endswith(".py") else p
                    for p in getattr(args, "plugin", [])],
        "output": args.output or str(Path("results") / f"compare-{name}"),
    }
    return parse_config(yaml.safe_dump(body, sort_keys=False))


def _check_metrics(metrics: list[str]) -> None:
    """One line for a metric `--metrics` names that is not registered."""
    from workbench.errors import WorkbenchError
    from workbench.evaluation.metrics import metric_names

    unknown = [m for m in metrics if m not in metric_names(table=True)]
    if unknown:
        raise WorkbenchError(f"--metrics: unknown metric(s) {', '.join(unknown)} (choose from "
                             f"{', '.join(metric_names(table=True))})")


def _compare(run_dir, base, label: str, metrics: list[str], alpha: float, datasets):
    """The Markdown tables and tidy records of the new learners of `run_dir` against every
    learner of `base`."""
    import pandas as pd

    from workbench import store
    from workbench.errors import WorkbenchError
    from workbench.experiment.datasets import canonical_dataset_names
    from workbench.experiment.reuse import same_learner
    from workbench.report.compare import versus_markdown, versus_table
    from workbench.stats.groups import collections

    _check_metrics(metrics)
    mine = store.read_metadata(run_dir).get("learner_parameters") or {}
    theirs = store.read_metadata(base).get("learner_parameters") or {}
    ours = store.load_summary(run_dir)
    base_summary = store.load_summary(base)
    base_learners = list(dict.fromkeys(base_summary["learner"]))
    new = [name for name in dict.fromkeys(ours["learner"])
           if not any(same_learner(p, mine.get(name) or {}) for p in theirs.values())]
    if not new:
        raise WorkbenchError(f"{run_dir}: every learner is one of the baseline's (same "
                             "parameters): nothing new to compare")
    summary = pd.concat([ours[ours["learner"].isin(new)], base_summary], ignore_index=True)
    if datasets:
        summary = summary[summary["dataset"].isin(canonical_dataset_names(list(datasets)))]
    both = set(summary.loc[summary["learner"].isin(new), "dataset"]) & \
        set(base_summary["dataset"])
    summary = summary[summary["dataset"].isin(both)]
    colls = {c: m for c, m in collections(summary).items() if m}
    tidy = versus_table(summary, new, base_learners, metrics, colls, alpha)
    sizes = {c: len(m) for c, m in colls.items()}
    head = (f"# {', '.join(new)} against {label}\n\nW/D/L of the row learner against each "
            f"baseline learner on the {len(both)} data set(s) both have results for (a win: "
            f"a better value); two-tailed sign test, bold when p < {alpha:g}.\n")
    return head + "\n" + versus_markdown(tidy, new, base_learners, sizes), tidy
