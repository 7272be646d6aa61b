"""Run an experiment: the (data set, learner, round, fold) task grid over joblib or Dask.

The runner only wires stages: the catalog loads data, the config's `Protocol` plans the
folds, `evaluation.cv.protocol_fold` runs one (the driver ``cv`` uses too),
`evaluation.summary.summarize` aggregates a pair, `store` keeps everything atomically. Each task is a pure function of
(data file, learner definition, protocol, round, fold), so results do not depend on the
number of jobs, the backend or the order in which tasks finish.

Flow: pre-flight (output directory, report options, every data file parsed and hashed —
nothing is computed before all of it passes) → lock the run directory (`rundir`) → drop
stored results that are corrupt or were computed from another version of a data file →
estimate and order the missing folds (`cost`) → run them (`workers`), storing each fold
as it arrives → summarise a pair as soon as its last fold is stored → metadata +
``summary.csv``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import pickle
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence, TextIO

import numpy as np
import yaml

from workbench.data.catalog import load_dataset
from workbench.data.checks import data_warnings, file_sha256
from workbench.errors import CannotWrite, ConfigError, WorkbenchError, WriteFailure
from workbench.evaluation.cv import evaluation_data, protocol_fold
from workbench.evaluation.metrics import METRICS
from workbench.evaluation.outofcore import (evaluate_file_task, out_of_core_model,
                                            rows_with_class)
from workbench.evaluation.pipeline import FoldResult
from workbench.evaluation.protocols import Protocol
from workbench.evaluation.summary import streamed_extras, summarize, summarize_sums
from workbench import log, store
from workbench.experiment import reuse, rundir, workers
from workbench.experiment.config import DatasetRef, ExperimentConfig
from workbench.experiment.datasets import canonical_dataset_names, fetch_hint, \
    resolve_datasets
from workbench.experiment.cost import CostModel, Dims, fold_cost
from workbench.experiment.progress import Progress
from workbench.experiment.provenance import (INVOCATION_KEYS, code_identity,
                                             invocation_lines, provenance)
from workbench.experiment.workers import BACKENDS
from workbench.jit import note_compiling
from workbench.learners import registry
from workbench.plugins import load_plugins
from workbench.report.options import options_from_config


class RunError(WorkbenchError):
    """A run could not start (message says why)."""


@dataclass(frozen=True)
class LearnerRecipe:
    """How a worker gets a learner, in one form: its registry name and parameter overrides,
    and where the name comes from when the worker does not know it yet — the config's
    plugins (imported) or the pickled spec of a name registered at run time."""

    name: str  # registry name
    params: str  # parameter overrides as canonical JSON (hashable, nested ok)
    plugins: tuple[str, ...] = ()
    plugin_dir: str = ""
    spec: bytes | None = None  # pickled LearnerSpec of a name registered at run time

    def parameters(self) -> dict[str, Any]:
        return json.loads(self.params)

    def register(self) -> None:
        """Make the name known in this process (plugins first: a plugin file's classes
        unpickle only once the plugin is loaded)."""
        if self.plugins:
            load_plugins(self.plugins, base_dir=Path(self.plugin_dir) if self.plugin_dir
                         else None)
        if self.spec is not None and self.name not in registry.names():
            s = pickle.loads(self.spec)
            registry.register(s.name, s.factory, source=s.source, description=s.description,
                              **s.defaults)

    @property
    def session_only(self) -> bool:
        """Built only in this Python session: registered at run time, not picklable and no
        plugin to load it from (a forked worker inherits it; a spawned one cannot)."""
        return not self.plugins and self.spec is None and \
            registry.get(self.name).source != "builtin"


@dataclass(frozen=True)
class Task:
    """One fold of one (data set, learner): everything a worker needs, picklable."""

    dataset: str
    path: str
    learner: str  # display name
    recipe: LearnerRecipe
    round: int
    fold: int
    protocol: Protocol  # the plan (frozen, hashable): fold (round, fold) of it
    discretize_sample: int | None = None  # protocol.discretize_sample
    data_sha256: str = ""  # content hash of the data file, recorded with the fold
    notes: bool = True  # the worker says on stderr when it compiles kernels
    out_of_core: tuple[int, int, bool] | None = None  # (chunk_rows, sample, predictions)
    folds: tuple[int, ...] = ()  # out of core: the round's folds still to store
    n_rows: int = 0  # out of core: the file's rows with a class (the plan's n)
    run_dir: str = ""  # out of core: where a round's predictions are streamed to

    def __reduce__(self):
        """Pickled with its protocol as bytes, unpickled in a worker only once the recipe's
        plugins are loaded there: a plugin's protocol class is known only then."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                  if f.name != "protocol"}
        return (_task_from, (fields, pickle.dumps(self.protocol)))


def _task_from(fields: dict[str, Any], protocol: bytes) -> Task:
    """A `Task` unpickled (`Task.__reduce__`): plugins first, then its protocol."""
    fields["recipe"].register()
    return Task(**fields, protocol=pickle.loads(protocol))


@dataclass
class RunResult:
    """What one invocation did (for the final summary and the CLI's exit status)."""

    run_dir: Path
    config_hash: str
    datasets: list[str] = field(default_factory=list)
    missing_datasets: list[str] = field(default_factory=list)
    fetch_hint: str = ""  # how to get the missing ones
    learners: list[str] = field(default_factory=list)
    pairs_already_complete: int = 0
    pairs_completed: int = 0
    folds_run: int = 0
    folds_reused: int = 0
    pairs_from_baselines: int = 0
    recomputed_from_baselines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    interrupted: bool = False
    wall_seconds: float = 0.0


# ----- worker side ----------------------------------------------------------------------------
@functools.lru_cache(maxsize=3)
def _evaluation_data(path: str):
    """The evaluated rows of a data set file (cached per worker process)."""
    return evaluation_data(load_dataset(path))


@functools.lru_cache(maxsize=8)
def _plan(path: str, protocol: Protocol) -> dict:
    """The protocol's fold specs for a data set file (cached per worker process)."""
    data = _evaluation_data(path)
    return protocol.plan(data.n_instances, data.y)


def run_task(task: Task) -> dict[str, Any]:
    """Run one fold; returns the fold record (+ ``y``), or ``{"error": text}`` on failure."""
    try:
        if task.notes:
            note_compiling()
        task.recipe.register()
        if task.out_of_core is not None:
            return _out_of_core_task(task)
        data = _evaluation_data(task.path)
        spec = _plan(task.path, task.protocol)[(task.round, task.fold)]
        result = protocol_fold(data, task.recipe.name, task.recipe.parameters(),
                               task.protocol, spec, task.discretize_sample)
        return _stored(result, data.y[result.test_index], task)
    except KeyboardInterrupt:
        raise
    except WorkbenchError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # a learner bug must not lose the rest of a long run
        if isinstance(exc.__cause__, KeyboardInterrupt):  # a signal that arrived while a
            raise exc.__cause__ from None  # compiled kernel ran comes back as SystemError
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" ({tb[-1].filename}:{tb[-1].lineno})" if tb else ""
        return {"error": f"{type(exc).__name__}: {exc}{where}"}


def _stored(result: FoldResult, y: np.ndarray, task: Task) -> dict[str, Any]:
    """A fold's record as the store keeps it: `FoldResult.to_record` plus the test rows'
    classes and the data file's hash."""
    record = result.to_record()
    record["y"] = np.asarray(y, dtype=np.int64)
    record[store.DATA_HASH_KEY] = task.data_sha256
    record[store.VERSION_KEY] = registry.get(task.recipe.name).output_version
    record[store.CODE_KEY] = code_identity()
    return record


def _out_of_core_task(task: Task) -> dict[str, Any]:
    """A task on a data file read in chunks (`outofcore.evaluate_file_task`): a k-fold
    round or a holdout — its folds' records with loss sums, the rows' predictions, when
    kept, streamed as they are scored into the pair's round file (`store.round_writer`, in
    the file's order: memory stays a chunk's), which the records name; on a Dask worker
    its counting and scoring spread over the cluster's workers (`workers.worker_client`)
    — or a prequential, sampled or learning-curve fold, stored as in memory."""
    chunk_rows, sample, predictions = task.out_of_core
    plan = task.protocol
    streamed = plan.kind in ("kfold", "holdout") and (task.fold < 0 or plan.kind == "holdout")
    writer = store.round_writer(Path(task.run_dir), task.dataset, task.learner,
                                task.round) if predictions and streamed else None
    try:
        results = evaluate_file_task(
            task.path, plan, task.n_rows, task.recipe.name, task.recipe.parameters(),
            task.round, task.fold, chunk_rows=chunk_rows, sample=sample,
            predictions=predictions, discretize_sample=task.discretize_sample,
            keep=writer.write if writer is not None else None,
            cluster=workers.worker_client if workers.on_dask_worker() else None)
        rows_file = writer.close().name if writer is not None else None
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
    if not streamed:
        (result, y), = results
        return _stored(result, y, task)
    records = []
    for result, y in results:
        if result.fold in task.folds:
            record = _stored(result, y, task)
            if rows_file is not None:
                record[store.ROWS_FILE_KEY] = rows_file
            records.append(record)
    return {"records": records}


# ----- summaries ------------------------------------------------------------------------------
def summarize_pair(run_dir: Path, dataset: str, learner: str, protocol: Protocol,
                   n_rows: int | None = None) -> dict:
    """Summarise one pair from its stored folds and write ``summary.json`` (pair complete).

    `n_rows`: the data set's evaluated rows (default: the largest tested index + 1, which is
    right for k-fold, where every row is tested)."""
    keys = set(protocol.keys())
    stored = store.read_folds(run_dir, dataset, learner)
    recs = [r for r in stored if (int(r["round"]), int(r["fold"])) in keys]
    if recs and all(r.get(store.ROWS_FILE_KEY) for r in recs):  # out of core, streamed
        summary = _summarize_streamed(run_dir, dataset, learner, protocol, recs, n_rows)
        path = store.consolidate_pair(run_dir, dataset, learner, stored)
        summary[store.FILES_KEY] = {path.name: store.file_record(path)}
    elif any(r.get("sums") for r in recs):  # out of core without predictions: loss sums
        results = [FoldResult.from_record(r) for r in recs]
        tested = int(sum(res.sums[0] for res in results if res.round == 0))
        n = n_rows or tested
        summary = summarize_sums(results, n, int(recs[0]["proba"].shape[1]), protocol.rounds,
                                 protocol.folds, per_fold=True,  # (fold files stay: tiny)
                                 tested=n if protocol.tests_all_rows else
                                 protocol.fold_sizes(n, 0)[1])
    else:
        n = n_rows or max(int(r["test_index"].max()) + 1 for r in recs
                          if r["test_index"].size)
        y = np.full(n, -1, dtype=np.int64)
        for r in recs:
            y[r["test_index"]] = r["y"]
        n_classes = int(recs[0]["proba"].shape[1])
        results = [FoldResult.from_record(r) for r in recs]
        summary = summarize(results, y, n_classes, protocol, per_fold=True)
        path = store.consolidate_pair(run_dir, dataset, learner, stored)
        summary[store.FILES_KEY] = {path.name: store.file_record(path)}
    hashes = {str(r.get(store.DATA_HASH_KEY) or "") for r in recs}
    if len(hashes) == 1 and "" not in hashes:
        summary[store.DATA_HASH_KEY] = hashes.pop()
    versions = {str(r.get(store.VERSION_KEY, "")) for r in recs}
    if len(versions) == 1 and "" not in versions:
        summary[store.VERSION_KEY] = int(float(versions.pop()))
    codes = sorted({str(r.get(store.CODE_KEY) or "") for r in recs} - {""})
    if codes:
        summary[store.CODE_KEY] = codes
    store.write_summary(run_dir, dataset, learner, summary)
    return summary


def _summarize_streamed(run_dir: Path, dataset: str, learner: str, protocol: Protocol,
                        recs: list[dict[str, Any]], n_rows: int | None) -> dict:
    """The summary of out-of-core folds whose rows their round files hold: losses from
    the folds' sums, the rest by passes over the files (`streamed_extras`)."""
    results = [FoldResult.from_record(r) for r in recs]
    tested = int(sum(res.sums[0] for res in results if res.round == 0))
    n = n_rows or tested
    n_classes = int(recs[0]["proba"].shape[1])
    folder = store.pair_dir(run_dir, dataset, learner)
    files = {int(r["round"]): folder / str(r[store.ROWS_FILE_KEY]) for r in recs}

    def rows(path: Path):
        def batches():
            for b in store.round_batches(path):
                names = b.schema.names
                yield (b.column(names.index("fold")).to_numpy(),
                       b.column(names.index("y")).to_numpy(),
                       np.column_stack([b.column(names.index(f"p_{k}")).to_numpy()
                                        for k in range(n_classes)]))
        return batches

    extra, fold_extra = streamed_extras([rows(files[r]) for r in sorted(files)], n_classes,
                                        protocol.folds, protocol.repeats, str(folder))
    return summarize_sums(results, n, n_classes, protocol.rounds, protocol.folds,
                          per_fold=True, extra=extra, fold_extra=fold_extra,
                          tested=n if protocol.tests_all_rows else
                          protocol.fold_sizes(n, 0)[1])


# ----- metadata -------------------------------------------------------------------------------
def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _times_by_learner(run_dir: Path) -> dict[str, Any]:
    keys = ("train_cpu_seconds", "test_cpu_seconds", "train_wall_seconds", "test_wall_seconds",
            "compile_seconds")
    per: dict[str, dict[str, float]] = {}
    for row in store.iter_summaries(run_dir):
        acc = per.setdefault(row["learner"], {k: 0.0 for k in keys} | {"pairs": 0})
        for k in keys:
            acc[k] += float(row.get(k) or 0.0)
        acc["pairs"] += 1
    for acc in per.values():
        acc["cpu_seconds"] = acc["train_cpu_seconds"] + acc["test_cpu_seconds"]
        acc["wall_seconds"] = acc["train_wall_seconds"] + acc["test_wall_seconds"]
    total = {k: sum(a[k] for a in per.values()) for k in (*keys, "cpu_seconds", "wall_seconds")}
    return {"per_learner": per, "total": total}


def _write_metadata(run_dir: Path, meta: dict[str, Any]) -> None:
    store.atomic_write_json(run_dir / store.METADATA_JSON, meta)


# ----- execution ------------------------------------------------------------------------------
@dataclass(frozen=True)
class _DataInfo:
    """What the pre-flight learned of one data file."""

    sha256: str
    dims: Dims
    warnings: tuple[str, ...]


def run_experiment(
    config: ExperimentConfig,
    *,
    jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    datasets: Sequence[str] | None = None,
    learners: Sequence[str] | None = None,
    fresh: bool = False,
    force: bool = False,
    stream: TextIO | None = None,
    progress_interval: float = 10.0,
    verbosity: int = log.NORMAL,
) -> RunResult:
    """Run (or resume) `config` into ``config.output``; returns what this invocation did.

    `datasets` / `learners` restrict the work to a subset of the config's (data set names
    or aliases / learner display names); they do not change the config hash. Everything
    that can be checked is checked before anything is written or computed (the output
    directory, the report options, every data file of the plan), raising one
    `WorkbenchError`. KeyboardInterrupt (Ctrl-C, SIGTERM) propagates after the finished
    folds are kept and reported. Warnings, failures and stale or corrupt results go to
    `stream` (default stderr) always; the plan, progress and summary from `verbosity`
    NORMAL on, a line per completed pair at VERBOSE (`workbench.log`).
    """
    stream = stream if stream is not None else sys.stderr
    info = stream if verbosity >= log.NORMAL else log.DISCARD
    detail = stream if verbosity >= log.VERBOSE else log.DISCARD
    if backend not in BACKENDS:
        raise RunError(f"--backend: unknown backend {backend!r} (choose {', '.join(BACKENDS)})")
    if not isinstance(jobs, int) or jobs < 1:
        raise RunError(f"--jobs: expected a positive integer, got {jobs!r}")
    if scheduler and backend != "dask":
        raise RunError("--scheduler needs --backend dask")

    # ----- pre-flight (nothing written yet) -----
    found, missing = resolve_datasets(config)
    sel_found, sel_missing, sel_learners = _select(config, found, missing, datasets, learners)
    _preflight_learners(config, sel_learners)
    config_hash = config.config_hash()
    run_dir = Path(config.output)
    rundir.check_output(run_dir)
    rundir.check_ownership(run_dir, config_hash, fresh=fresh, force=force)
    _check_report_options(config)
    infos = _inspect_datasets(sel_found, config)
    warnings = [w for ref in sel_found for w in infos[ref.name].warnings]
    warnings += _learner_warnings(config, sel_learners, sel_found, infos)
    baseline_runs = reuse.open_runs(config)
    for w in warnings:
        print(f"warning: {w}", file=stream)

    result = RunResult(run_dir=run_dir, config_hash=config_hash,
                       datasets=[r.name for r in sel_found], missing_datasets=sel_missing,
                       fetch_hint=fetch_hint(config), learners=list(sel_learners))
    with rundir.RunLock(run_dir):
        if fresh:
            store.remove_run(run_dir)
        leftovers = rundir.remove_stale_tmp(run_dir)
        if leftovers:
            print(f"removed {len(leftovers)} temporary file(s) left by an interrupted run",
                  file=info)
        started = time.monotonic()
        meta, invocation = _start_metadata(run_dir, config, config_hash, found, missing,
                                           infos, warnings, jobs, backend, scheduler,
                                           datasets, learners, stream)
        adopted = reuse.adopt(run_dir, config, sel_found, sel_learners,
                              {name: i.sha256 for name, i in infos.items()}, baseline_runs,
                              stream)
        result.pairs_from_baselines = len(adopted.taken)
        result.recomputed_from_baselines = adopted.recomputed
        tasks, remaining, to_summarize = _plan_tasks(run_dir, config, sel_found, sel_learners,
                                                     infos, result, stream)
        result.pairs_already_complete -= result.pairs_from_baselines  # counted apart
        if verbosity < log.NORMAL:  # -q: the workers say nothing of compiling either
            tasks = [dataclasses.replace(t, notes=False) for t in tasks]
        model = CostModel()
        tasks = _schedule(tasks, config, infos, model)
        print(_plan_line(result, sum(remaining.values()), sel_found, sel_learners),
              file=info)  # (folds: an out-of-core task runs a round's)
        if sel_missing:
            print(f"skipped: {len(sel_missing)} data set(s) not found in the search path: "
                  f"{', '.join(sel_missing)} ({fetch_hint(config)})", file=info)
        _execute(run_dir, config, tasks, remaining, to_summarize, model, result, meta,
                 invocation, started, jobs, backend, scheduler, (stream, info, detail),
                 progress_interval, {name: i.dims.n for name, i in infos.items()})
    _print_summary(result, info)
    return result


def _select(config: ExperimentConfig, found: list[DatasetRef], missing: list[str],
            datasets: Sequence[str] | None, learners: Sequence[str] | None
            ) -> tuple[list[DatasetRef], list[str], list[str]]:
    """The data sets (found, missing) and learners this invocation works on."""
    all_names = [r.name for r in found] + missing
    learner_names = config.learner_names
    sel_found, sel_missing = found, missing
    if datasets:
        wanted = canonical_dataset_names(list(datasets))
        unknown = [w for w in wanted if w not in all_names]
        if unknown:
            shown = ", ".join(all_names) if len(all_names) <= 20 else f"{len(all_names)} sets"
            raise ConfigError(f"--datasets: {', '.join(unknown)} not in this config's data "
                              f"sets ({shown})")
        sel_found = [r for r in found if r.name in wanted]
        sel_missing = [m for m in missing if m in wanted]
    sel_learners = learner_names
    if learners:
        unknown = [name for name in learners if name not in learner_names]
        if unknown:
            raise ConfigError(f"--learners: {', '.join(unknown)} not among the config's "
                              f"learners ({', '.join(learner_names)})")
        sel_learners = [name for name in learner_names if name in set(learners)]
    return sel_found, sel_missing, sel_learners


def _check_report_options(config: ExperimentConfig) -> None:
    """Validate ``report:`` now, not after the run (scatter pairs must name learners)."""
    plain = config.to_dict()
    plain["source"] = str(config.source) if config.source is not None else None
    try:
        options_from_config(plain, Path(config.output), config.learner_names)
    except ConfigError as exc:
        where = f"{config.source}: " if config.source is not None else ""
        raise ConfigError(f"{where}{exc}") from None


def _inspect_datasets(refs: Sequence[DatasetRef], config: ExperimentConfig
                      ) -> dict[str, _DataInfo]:
    """Parse every data file of the plan (a malformed one fails now, once), check that the
    protocol can be laid on it (folds, sample sizes), hash it and note degenerate data."""
    out = {}
    for ref in refs:
        if config.out_of_core:  # never loaded whole: its header and rows from a pass
            out[ref.name] = _file_info(ref, config)
            continue
        data = load_dataset(ref.path)
        ev = evaluation_data(data)
        if ev.n_instances == 0:
            raise ConfigError(f"{ref.path}: no rows with a known class; nothing to evaluate")
        try:
            config.protocol.plan.for_dataset(ref.name).plan(ev.n_instances, ev.y)
        except WorkbenchError as exc:
            where = f"{config.source}: " if config.source is not None else ""
            raise ConfigError(f"{where}protocol: cannot be laid on {ref.name} "
                              f"({ev.n_instances} rows with a class): {exc}") from None
        out[ref.name] = _DataInfo(
            sha256=file_sha256(ref.path),
            dims=Dims(ev.n_instances, len(ev.attributes), ev.n_classes),
            warnings=tuple(data_warnings(data.replace(name=ref.name))),
        )
    return out


def _file_info(ref: DatasetRef, config: ExperimentConfig) -> _DataInfo:
    """An out-of-core data file's header, rows with a class and hash, read in chunks."""
    header, n = rows_with_class(ref.path, config.out_of_core["chunk_rows"])
    plan = config.protocol.plan
    try:
        if plan.kind == "kfold" and n < plan.folds:  # (its folds are laid chunk by chunk)
            raise WorkbenchError(f"cannot make {plan.folds} non-empty folds")
        if plan.kind != "kfold":
            plan.plan(n)  # (index sets: 8 bytes a row)
    except WorkbenchError as exc:
        where = f"{config.source}: " if config.source is not None else ""
        raise ConfigError(f"{where}protocol: cannot be laid on {ref.name} ({n} rows with a "
                          f"class): {exc}") from None
    return _DataInfo(sha256=file_sha256(ref.path),
                     dims=Dims(n, len(header.attributes), header.n_classes), warnings=())


def _preflight_learners(config: ExperimentConfig, learners: Sequence[str]) -> None:
    """Every learner can run here, as the config asks (its optional package, Java and jar,
    its engine's parameters; out of core, a learner that trains so): one `ConfigError`
    naming the learner's config field, before any directory is made or fold run."""
    kind = config.protocol.plan.kind
    ooc = config.out_of_core is not None and kind in ("kfold", "holdout", "prequential")
    for lc in config.learners:
        if lc.display not in learners:
            continue
        try:
            model = lc.create()
            model.preflight()
            if ooc:
                out_of_core_model(lc.learner, dict(lc.params), None,
                                  one_pass=kind == "prequential")
        except WorkbenchError as exc:
            raise ConfigError(f"{config.source or '<config>'}: learners: {lc.display}: "
                              f"{exc}") from None


def _learner_warnings(config: ExperimentConfig, learners: Sequence[str],
                      refs: Sequence[DatasetRef], infos: dict[str, _DataInfo]) -> list[str]:
    """A learner parameter ``k`` larger than a data set's number of attributes."""
    out = []
    for name in learners:
        k = config.learner_parameters(name).get("k")
        if not isinstance(k, int) or isinstance(k, bool):
            continue
        small = [r.name for r in refs if k > infos[r.name].dims.d]
        if small:
            out.append(f"{name}: k = {k} is larger than the number of attributes of "
                       f"{', '.join(small[:5])}{', …' if len(small) > 5 else ''} (each "
                       "attribute gets every earlier one as parent)")
    return out


def _start_metadata(run_dir: Path, config: ExperimentConfig, config_hash: str,
                    found: list[DatasetRef], missing: list[str],
                    infos: dict[str, _DataInfo], warnings: list[str], jobs: int,
                    backend: str, scheduler: str | None, datasets: Sequence[str] | None,
                    learners: Sequence[str] | None, stream: TextIO
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Write config.yaml, config_hash and metadata.json with this invocation as running."""
    run_dir.mkdir(parents=True, exist_ok=True)
    store.atomic_write_text(
        run_dir / store.CONFIG_YAML,
        "# resolved config written by `python -m workbench run`\n"
        + yaml.safe_dump(config.to_dict(relative_to=run_dir), sort_keys=False,
                         allow_unicode=True),
    )
    store.atomic_write_text(run_dir / store.CONFIG_HASH, config_hash + "\n")
    try:
        meta = store.read_metadata(run_dir)
    except store.StoreCorrupt as exc:
        print(f"corrupt: {exc}; starting its run history afresh", file=stream)
        meta = {}
    if meta.get("config_hash") not in (None, config_hash):
        meta = {"previous_config_hash": meta.get("config_hash")}
    p = config.protocol
    invocation: dict[str, Any] = {
        "started": _now(), "pid": os.getpid(), "jobs": jobs, "backend": backend,
        "scheduler": scheduler,
        "restrict_datasets": list(datasets) if datasets else None,
        "restrict_learners": list(learners) if learners else None,
        "status": "running",
    }
    prov = provenance()
    invocation["provenance"] = {k: prov.get(k) for k in INVOCATION_KEYS}
    hashes = dict((meta.get("plan") or {}).get("dataset_sha256") or {})
    hashes.update({name: info.sha256 for name, info in infos.items()})
    meta.update({
        store.SCHEMA_KEY: store.SCHEMA_VERSION,
        "name": config.name,
        "config_hash": config_hash,
        **{k: prov[k] for k in ("python", "platform", "machine", "processor", "cpu_count",
                                "packages")},
        "provenance": prov,
        "learner_parameters": config.hash_payload()["learners"],
        reuse.VERSIONS_KEY: reuse.output_versions(config),
        "plan": {
            "datasets": [r.name for r in found],
            "missing_datasets": missing,
            "learners": config.learner_names,
            "rounds": p.rounds,
            "folds": p.folds,
            "folds_per_pair": p.n_folds_total,
            "dataset_files": {r.name: os.path.relpath(Path(r.path).resolve(),
                                                      Path(run_dir).resolve())
                              for r in found},  # (relative: no directory of this machine)
            "dataset_sha256": hashes,
        },
        "warnings": list(dict.fromkeys([*(meta.get("warnings") or []), *warnings])),
    })
    meta.setdefault("started", invocation["started"])
    meta.setdefault("invocations", []).append(invocation)
    notes = invocation_lines(meta)  # (the report lists them: it reads no provenance code)
    if notes:
        meta["invocation_notes"] = notes
    _write_metadata(run_dir, meta)
    return meta, invocation


def _plan_tasks(run_dir: Path, config: ExperimentConfig, refs: Sequence[DatasetRef],
                learners: Sequence[str], infos: dict[str, _DataInfo], result: RunResult,
                stream: TextIO) -> tuple[list[Task], dict[tuple[str, str], int],
                                         list[tuple[str, str]]]:
    """The folds still to run; stored results that are corrupt or were computed from
    another version of the data file are removed first (with a line saying so)."""
    p = config.protocol
    tasks: list[Task] = []
    remaining: dict[tuple[str, str], int] = {}
    to_summarize: list[tuple[str, str]] = []
    recipes = _recipes(config, learners)
    versions = reuse.output_versions(config)
    new_metrics: dict[str, list[tuple[str, str, bool]]] = {}
    for ref in refs:
        sha = infos[ref.name].sha256
        for name in learners:
            state = _pair_state(run_dir, ref.name, name, p, sha, stream, new_metrics,
                                versions[name])
            if state == "complete":
                result.pairs_already_complete += 1
                continue
            done = store.stored_folds(run_dir, ref.name, name)
            if state == "summarize" or not (todo := [
                    key for key in p.plan.keys() if key not in done]):
                result.folds_reused += p.n_folds_total
                to_summarize.append((ref.name, name))
                continue
            result.folds_reused += p.n_folds_total - len(todo)
            remaining[(ref.name, name)] = len(todo)
            ooc = None if not config.out_of_core else (
                config.out_of_core["chunk_rows"], config.out_of_core["sample"],
                config.out_of_core.get("predictions", True))
            if ooc and p.plan.kind == "kfold":  # a task per round: its folds in one pass
                for r in sorted({r for r, _ in todo}):
                    tasks.append(Task(
                        dataset=ref.name, path=str(Path(ref.path).resolve()), learner=name,
                        recipe=recipes[name], round=r, fold=-1, protocol=p.plan,
                        data_sha256=sha, out_of_core=ooc, n_rows=infos[ref.name].dims.n,
                        folds=tuple(f for rr, f in todo if rr == r),
                        run_dir=str(Path(run_dir).resolve())))
                continue
            for r, f in todo:
                tasks.append(Task(
                    dataset=ref.name, path=str(Path(ref.path).resolve()), learner=name,
                    recipe=recipes[name], round=r, fold=f,
                    protocol=p.plan.for_dataset(ref.name),
                    discretize_sample=p.discretize_sample, data_sha256=sha,
                    out_of_core=ooc, n_rows=infos[ref.name].dims.n, folds=(f,),
                    run_dir=str(Path(run_dir).resolve()),
                ))
    _say_new_metrics(new_metrics, stream)
    return tasks, remaining, to_summarize


def _new_metrics(row: dict[str, Any]) -> list[str]:
    """Registered metrics computed from predictions that a stored summary lacks (declared
    after the pair was summarised, e.g. by a plugin)."""
    return [m.name for m in METRICS.values() if m.compute is not None and m.name not in row]


def _say_new_metrics(new: dict[str, list[tuple[str, str, bool]]], stream: TextIO) -> None:
    """One line per metric added since pairs were summarised: computed from their stored
    predictions, or which pairs lack it and why."""
    for metric, pairs in new.items():
        redone = sum(1 for *_, held in pairs if held)
        lacking = [f"{d}/{l}" for d, l, held in pairs if not held]
        if redone:
            print(f"metric {metric}: computed from the stored predictions of {redone} "
                  "complete pair(s)", file=stream)
        if lacking:
            shown = ", ".join(lacking[:3]) + (", ..." if len(lacking) > 3 else "")
            print(f"metric {metric}: not computed for {len(lacking)} pair(s) ({shown}): "
                  "their predictions are not stored (summary-only results, or pairs copied "
                  "from a baseline that kept none); recompute them in a fresh output "
                  "directory to have it", file=stream)


def _other_version(recs, version: int) -> int | None:
    """The learner output version a stored fold or summary records when it is not
    `version` (None: the same, or not recorded — a result made before versions were
    stored)."""
    for rec in recs:
        got = rec.get(store.VERSION_KEY)
        if got not in (None, "") and int(float(got)) != version:
            return int(float(got))
    return None


def _pair_state(run_dir: Path, dataset: str, learner: str, p, sha: str,
                stream: TextIO, new_metrics: dict[str, list[tuple[str, str, bool]]],
                version: int = 1) -> str:
    """``complete`` (nothing to do), ``summarize`` (every fold stored, summary missing,
    without per-fold values or without a metric registered since) or ``run`` (folds
    missing). Removes what cannot be used; notes new metrics in `new_metrics`."""
    try:
        row = store.read_summary(run_dir, dataset, learner)
    except store.StoreCorrupt as exc:
        print(f"corrupt: {exc}; recomputing it", file=stream)
        store.summary_path(run_dir, dataset, learner).unlink(missing_ok=True)
        row = None
    if row is not None and (old := _other_version([row], version)) is not None:
        print(f"stale: {dataset} / {learner} was computed by output version {old} of the "
              f"learner, now {version}; recomputing it", file=stream)
        store.remove_pair(run_dir, dataset, learner)
        return "run"
    if row is not None and (wrong := store.verify_pair(run_dir, dataset, learner, row)):
        print(f"corrupt: {wrong}; recomputing {dataset} / {learner}", file=stream)
        store.remove_pair(run_dir, dataset, learner)
        return "run"
    if row is not None:
        stored_sha = row.get(store.DATA_HASH_KEY)
        if stored_sha and stored_sha != sha:
            print(f"stale: {dataset} / {learner} was computed from another version of the "
                  "data file; recomputing it", file=stream)
            store.remove_pair(run_dir, dataset, learner)
            return "run"
        if row.get("rounds", p.rounds) == p.rounds and row.get("folds", p.folds) == p.folds:
            try:
                folds = store.stored_folds(run_dir, dataset, learner)
            except store.StoreCorrupt as exc:
                print(f"corrupt: {exc}; recomputing the pair", file=stream)
                store.remove_pair(run_dir, dataset, learner)
                return "run"
            held = len(folds) >= p.n_folds_total
            added = _new_metrics(row)
            for metric in added:
                new_metrics.setdefault(metric, []).append((dataset, learner, held))
            if isinstance(row.get(store.PER_FOLD_KEY), dict) and not added:
                return "complete"
            # summary-only pairs have no folds; an older summary gets its per-fold values
            # and the metrics registered since
            return "summarize" if held else "complete"
    parquet = store.parquet_path(run_dir, dataset, learner)
    if parquet.is_file():
        try:
            held = store.parquet_folds(parquet)
        except store.StoreCorrupt as exc:
            print(f"corrupt: {exc}; recomputing its folds", file=stream)
            parquet.unlink()
            held = {}
        if (old := _other_version(held.values(), version)) is not None:
            print(f"stale: {dataset} / {learner}: stored folds were computed by output "
                  f"version {old} of the learner, now {version}; recomputing them",
                  file=stream)
            store.remove_pair(run_dir, dataset, learner)
            return "run"
        if any(rec.get(store.DATA_HASH_KEY) not in ("", sha) for rec in held.values()):
            print(f"stale: {dataset} / {learner}: stored folds were computed from another "
                  "version of the data file; recomputing them", file=stream)
            store.remove_pair(run_dir, dataset, learner)
            return "run"
    for r, f in sorted(store.npz_folds(run_dir, dataset, learner)):
        path = store.fold_path(run_dir, dataset, learner, r, f)
        try:
            rec = store.read_fold(path)
        except store.StoreCorrupt as exc:
            print(f"corrupt: {exc}; recomputing that fold", file=stream)
            path.unlink(missing_ok=True)
            continue
        if (old := _other_version([rec], version)) is not None:
            print(f"stale: {dataset} / {learner}: stored folds were computed by output "
                  f"version {old} of the learner, now {version}; recomputing them",
                  file=stream)
            store.remove_pair(run_dir, dataset, learner)
            break
        fold_sha = rec.get(store.DATA_HASH_KEY)
        if fold_sha and fold_sha != sha:
            print(f"stale: {dataset} / {learner}: stored folds were computed from another "
                  "version of the data file; recomputing them", file=stream)
            store.remove_pair(run_dir, dataset, learner)
            break
    return "run"


def _schedule(tasks: list[Task], config: ExperimentConfig, infos: dict[str, _DataInfo],
              model: CostModel) -> list[Task]:
    """Estimate each task (`cost.fold_cost`) and order them: data sets by their total
    estimated cost, costliest first; within one, learners by cost, then round and fold
    (keeps each worker's data cache warm and starts the longest work first)."""
    by_ds: dict[str, float] = {}
    by_pair: dict[tuple[str, str], float] = {}
    params = {name: config.learner_parameters(name) for name in config.learner_names}
    for t in tasks:
        dims = infos[t.dataset].dims
        est = fold_cost(params[t.learner], dims, *t.protocol.fold_sizes(dims.n, t.round)) \
            * max(1, len(t.folds))  # (an out-of-core task runs a round's folds)
        model.add(t, t.learner, est)
        by_ds[t.dataset] = by_ds.get(t.dataset, 0.0) + est
        by_pair[(t.dataset, t.learner)] = by_pair.get((t.dataset, t.learner), 0.0) + est
    return sorted(tasks, key=lambda t: (-by_ds[t.dataset], t.dataset,
                                        -by_pair[(t.dataset, t.learner)], t.learner,
                                        t.round, t.fold))


def _execute(run_dir: Path, config: ExperimentConfig, tasks: list[Task],
             remaining: dict[tuple[str, str], int], to_summarize: list[tuple[str, str]],
             model: CostModel, result: RunResult, meta: dict[str, Any],
             invocation: dict[str, Any], started: float, jobs: int, backend: str,
             scheduler: str | None, streams: tuple[TextIO, TextIO, TextIO],
             progress_interval: float, n_rows: dict[str, int]) -> None:
    """Run the tasks, storing each fold as it arrives and summarising finished pairs
    (`streams`: warnings, notes and details, see `run_experiment`)."""
    stream, info, detail = streams
    p = config.protocol
    failed_pairs: set[tuple[str, str]] = set()
    rounds = bool(config.out_of_core) and p.plan.kind == "kfold"  # a task a round
    compiled = [0.0]  # kernel compiling and loading the finished tasks reported (CPU s)

    def eta(elapsed: float) -> float | None:
        """The cost model's ETA from the elapsed time less the compiling it held (shared
        by the jobs): first use is paid once, so it must not set the rate."""
        return model.eta(elapsed, compiling=compiled[0] / max(jobs, 1))

    progress = Progress(len(tasks), stream=info, interval=progress_interval,
                        label="rounds" if rounds else "folds", eta=eta)

    def take(task: Task, rec: dict[str, Any]) -> None:
        key = (task.dataset, task.learner)
        compiled[0] += sum(float(one.get("compile_seconds") or 0.0)
                           for one in rec.get("records", [rec]))
        if "records" in rec:  # an out-of-core round: its folds one by one
            model.observe(task, sum(float(one["train_wall_seconds"]) +
                                    float(one["test_wall_seconds"]) for one in rec["records"]))
            for one in rec["records"]:
                store_fold(task, one)
            progress.update(note=f"{task.dataset}/{task.learner}")
            return
        if "error" in rec:
            model.observe(task, None)
            if key not in failed_pairs:
                failed_pairs.add(key)
                which = f"round {task.round}" + ("" if task.fold < 0 else
                                                 f", fold {task.fold}")
                msg = f"{task.dataset} / {task.learner} ({which}): {rec['error']}"
                result.failures.append(msg)
                _print_above(progress, stream, f"failed: {msg}")
            progress.update(note=f"{task.dataset}/{task.learner}")
            return
        model.observe(task, float(rec["train_wall_seconds"]) + float(rec["test_wall_seconds"]))
        store_fold(task, rec)
        progress.update(note=f"{task.dataset}/{task.learner}")

    def store_fold(task: Task, rec: dict[str, Any]) -> None:
        key = (task.dataset, task.learner)
        with _signals_held():  # a fold stored is a fold counted: "kept N" stays true
            store.write_fold(run_dir, task.dataset, task.learner, rec)
            result.folds_run += 1
            remaining[key] -= 1
        if remaining[key] == 0 and key not in failed_pairs:
            _finish_pair(run_dir, task.dataset, task.learner, p, n_rows, result,
                         lambda text: _print_above(progress, detail, text))

    try:
        for ds, name in to_summarize:
            _finish_pair(run_dir, ds, name, p, n_rows, result, lambda text: None)
        with contextlib.closing(workers.iterate(
                tasks, run_task, jobs, backend, scheduler,
                in_process=(jobs == 1 and backend == "loky" and not workers.FORK
                            and _session_only(config, tasks))
        )) as finished:
            for task, rec in finished:
                take(task, rec)
    except KeyboardInterrupt as exc:
        print(f"{'terminating' if getattr(exc, 'exit_code', 130) == 143 else 'stopping'}: "
              "keeping the finished folds (Ctrl-C again quits at once; nothing stored is "
              "lost)", file=stream)
        with _second_signal_quits(stream):
            for task, rec in getattr(exc, "finished", ()):
                take(task, rec)  # finished in a worker, not yet collected: keep them too
            result.interrupted = True
            progress.close()
            _finalize(run_dir, meta, invocation, started, result, "interrupted")
        print(f"interrupted: kept {result.folds_run} fold(s) stored in this run and "
              f"{result.pairs_completed} newly complete pair(s) in {run_dir}; re-run the same "
              "command to resume", file=stream)
        raise
    except BaseException as exc:
        progress.close()
        _finalize(run_dir, meta, invocation, started, result, "failed")
        if isinstance(exc, (OSError, CannotWrite)):  # the store could not write: disk
            what = (f"cannot write {exc.filename or run_dir}: {exc.strerror or exc}"  # full..
                    if isinstance(exc, OSError) else str(exc))
            raise WriteFailure(
                f"{what}; the "
                f"{result.folds_run} fold(s) stored before are kept in {run_dir}; make room "
                "and re-run the same command to resume") from None
        if isinstance(exc, workers.ClusterLost):
            raise RunError(
                f"{exc}; the {result.folds_run} fold(s) finished in this run are kept in "
                f"{run_dir}. Start the cluster again and re-run the same command to resume"
            ) from None
        if type(exc).__name__ in ("TerminatedWorkerError", "BrokenProcessPool"):
            raise RunError(
                f"a worker process died ({type(exc).__name__}; out of memory?); the "
                f"{result.folds_run} fold(s) finished in this run are kept in {run_dir}. "
                "Re-run the same command to resume (perhaps with fewer --jobs)"
            ) from None
        raise
    progress.close()
    _finalize(run_dir, meta, invocation, started, result,
              "failed" if result.failures else "complete")


@contextlib.contextmanager
def _signal_handlers(handler: Any) -> Iterator[dict | None]:
    """`handler` for Ctrl-C and SIGTERM during the block, the previous ones restored after
    it; yields those previous handlers, or None off the main thread (where signals are not
    ours to handle and nothing is changed)."""
    try:
        previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:
        yield None
        return
    try:
        yield previous
    finally:
        for sig, before in previous.items():
            if before is not None:  # (None: a handler not set from Python, left alone)
                signal.signal(sig, before)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold Ctrl-C / SIGTERM until the block ends, then act on the first one as the
    handler in place would have (a few microseconds a fold)."""
    caught: list[int] = []
    previous = None
    try:
        with _signal_handlers(lambda signum, frame: caught.append(signum)) as previous:
            yield
    finally:
        if caught and previous is not None:
            handler = previous[caught[0]]
            if callable(handler):
                handler(caught[0], None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), caught[0])


@contextlib.contextmanager
def _second_signal_quits(stream: TextIO) -> Iterator[None]:
    """While the finished folds are kept after a first Ctrl-C / SIGTERM, a second one ends
    the process at once (130 / 143). Every store write is atomic, so what is stored stays
    whole; a temporary file cut short is removed by the next run, the lock goes with the
    process and the workers notice their parent is gone."""
    def quit_now(signum, frame) -> None:
        code = 143 if signum == signal.SIGTERM else 130
        try:
            print("interrupted again: quitting now; re-run the same command to resume",
                  file=stream, flush=True)
        finally:
            os._exit(code)

    with _signal_handlers(quit_now):
        yield


def _session_only(config: ExperimentConfig, tasks: Sequence[Task]) -> bool:
    """Some task's learner exists only in this Python session (registered at run time,
    not picklable, no plugin to load it from), so no spawned worker process can build it
    (a forked one inherits it)."""
    return any(recipe.session_only for recipe in {t.recipe for t in tasks})


def _recipes(config: ExperimentConfig, names: Sequence[str]) -> dict[str, LearnerRecipe]:
    """One `LearnerRecipe` per learner column: a learner registered at run time (tests,
    plugins) travels as its pickled spec when it pickles."""
    out = {}
    plugins = tuple(config.plugins)
    plugin_dir = str(Path(config.base_dir).resolve())
    for name in names:
        lc = config.learner(name)
        spec = registry.get(lc.learner)
        shipped = None
        if spec.source != "builtin":
            try:
                shipped = pickle.dumps(spec)
            except Exception:  # not picklable (e.g. a local class): workers need a plugin
                pass
        out[name] = LearnerRecipe(
            lc.learner, json.dumps(dict(lc.params), sort_keys=True, default=str),
            plugins, plugin_dir, shipped)
    return out


def _finish_pair(run_dir: Path, dataset: str, learner: str, p, n_rows: dict[str, int],
                 result: RunResult, say) -> None:
    try:
        summary = summarize_pair(run_dir, dataset, learner, p.plan, n_rows.get(dataset))
    except WorkbenchError as exc:
        result.failures.append(f"{dataset} / {learner}: cannot summarise stored folds: {exc}")
        return
    result.pairs_completed += 1
    loss = (summary or {}).get("zero_one_loss")
    say(f"complete: {dataset} / {learner}" +
        (f" (0-1 loss {loss:.4f})" if isinstance(loss, float) else ""))


def _print_above(progress: Progress, stream: TextIO, text: str) -> None:
    if progress.tty:
        stream.write("\r\x1b[K")
    print(text, file=stream)


def _plan_line(result: RunResult, n_tasks: int, found: list[DatasetRef],
               learners: list[str]) -> str:
    return (
        f"run {result.run_dir}: {len(found)} data set(s) × {len(learners)} learner(s); "
        f"{result.pairs_already_complete} pair(s) already complete, "
        + (f"{result.pairs_from_baselines} pair(s) copied from baselines, "
           if result.pairs_from_baselines else "")
        + f"{result.folds_reused} fold(s) already stored, {n_tasks} fold(s) to run"
    )


def _finalize(run_dir: Path, meta: dict[str, Any], invocation: dict[str, Any], started: float,
              result: RunResult, status: str) -> None:
    """Record the end of this invocation (times, counts) and refresh ``summary.csv``."""
    result.wall_seconds = time.monotonic() - started
    invocation.update({
        "finished": _now(),
        "wall_seconds": round(result.wall_seconds, 3),
        "status": status,
        "folds_run": result.folds_run,
        "folds_reused": result.folds_reused,
        "pairs_completed": result.pairs_completed,
        "pairs_already_complete": result.pairs_already_complete,
        "pairs_from_baselines": result.pairs_from_baselines,
        "recomputed_from_baselines": result.recomputed_from_baselines,
        "failures": result.failures,
    })
    meta["finished"] = invocation["finished"]
    meta["wall_seconds_total"] = round(
        sum(float(i.get("wall_seconds") or 0.0) for i in meta.get("invocations", [])), 3
    )
    try:
        meta["times"] = _times_by_learner(run_dir)
        # fold metrics first: a fresh run then never parses the summary.csv it just wrote
        store.write_fold_metrics_csv(run_dir)
        store.write_summary_csv(run_dir)
    except Exception:  # never mask the original outcome because of bookkeeping
        pass
    _write_metadata(run_dir, meta)


def _print_summary(result: RunResult, stream: TextIO) -> None:
    lines = [
        f"done in {result.wall_seconds:.1f}s: ran {result.folds_run} fold(s), "
        f"completed {result.pairs_completed} pair(s); skipped "
        f"{result.pairs_already_complete} pair(s) already complete and reused "
        f"{result.folds_reused} stored fold(s)"
        + (f"; copied {result.pairs_from_baselines} pair(s) from baselines"
           if result.pairs_from_baselines else ""),
    ]
    if result.missing_datasets:
        lines.append(f"not found (skipped): {', '.join(result.missing_datasets)} "
                     f"({result.fetch_hint})")
    if result.failures:
        lines.append(f"{len(result.failures)} pair(s) failed (not summarised):")
        lines.extend(f"  {f}" for f in result.failures)
    lines.append(f"results: {result.run_dir}")
    print("\n".join(lines), file=stream)
