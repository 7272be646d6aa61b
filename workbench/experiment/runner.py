"""Run an experiment: the (data set, learner, round, fold) task grid over joblib or Dask.

The runner only wires stages: the catalog loads data, `evaluation.splits` makes the
partitions, `evaluation.pipeline.run_fold` runs one fold, `evaluation.cv.summarize_folds`
aggregates a pair, `store` keeps everything atomically. Each task is a pure function of
(data file, learner definition, protocol, round, fold), so results do not depend on the
number of jobs, the backend or the order in which tasks finish.

Flow: validate → prepare the run directory (hash check / ``--fresh``) → skip what is
stored → run the missing folds largest data sets first, storing each fold as it arrives
→ summarise a pair as soon as its last fold is stored → metadata + ``summary.csv``.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence, TextIO

import numpy as np
import yaml

from workbench.errors import ConfigError, WorkbenchError
from workbench.experiment import store
from workbench.experiment.config import (
    DatasetRef,
    ExperimentConfig,
    canonical_dataset_names,
    resolve_datasets,
)
from workbench.experiment.progress import Progress

BACKENDS = ("loky", "dask")


class RunError(WorkbenchError):
    """A run could not start or finished with failed tasks (message says which)."""


@dataclass(frozen=True)
class Task:
    """One fold of one (data set, learner): everything a worker needs, picklable."""

    dataset: str
    path: str
    learner: str  # display name
    registry_name: str
    params: tuple[tuple[str, Any], ...]
    round: int
    fold: int
    rounds: int
    folds: int
    seed: int
    stratify: bool
    plugins: tuple[str, ...] = ()
    plugin_dir: str = ""
    spec: bytes | None = None  # pickled LearnerSpec of a name registered at run time
    discretize_sample: int | None = None  # protocol.discretize_sample


@dataclass
class RunResult:
    """What one invocation did (for the final summary and the CLI's exit status)."""

    run_dir: Path
    config_hash: str
    datasets: list[str] = field(default_factory=list)
    missing_datasets: list[str] = field(default_factory=list)
    learners: list[str] = field(default_factory=list)
    pairs_already_complete: int = 0
    pairs_completed: int = 0
    folds_run: int = 0
    folds_reused: int = 0
    failures: list[str] = field(default_factory=list)
    interrupted: bool = False
    wall_seconds: float = 0.0


# ----- worker side ----------------------------------------------------------------------------
@functools.lru_cache(maxsize=3)
def _evaluation_data(path: str):
    """The evaluated rows of a data set file (cached per worker process)."""
    from workbench.data.catalog import load_dataset
    from workbench.evaluation.cv import evaluation_data

    return evaluation_data(load_dataset(path))


@functools.lru_cache(maxsize=8)
def _splits(path: str, rounds: int, folds: int, seed: int, stratify: bool) -> np.ndarray:
    from workbench.evaluation.splits import make_splits

    data = _evaluation_data(path)
    return make_splits(data.n_instances, rounds, folds, seed, stratify=stratify, labels=data.y)


def run_task(task: Task) -> dict[str, Any]:
    """Run one fold; returns the fold record (+ ``y``), or ``{"error": text}`` on failure."""
    try:
        if task.plugins:
            from workbench.plugins import load_plugins

            load_plugins(task.plugins, base_dir=Path(task.plugin_dir) if task.plugin_dir else None)
        if task.spec is not None:
            from workbench.learners import registry

            if task.registry_name not in registry.names():
                # unpickled only when needed: a plugin file's classes import only after the
                # plugin is loaded, so the plugin route above must go first
                import pickle

                s = pickle.loads(task.spec)
                registry.register(s.name, s.factory, source=s.source,
                                  description=s.description, **s.defaults)
        from workbench.evaluation.pipeline import fold_seed, run_fold
        from workbench.evaluation.splits import fold_indices

        data = _evaluation_data(task.path)
        splits = _splits(task.path, task.rounds, task.folds, task.seed, task.stratify)
        train_idx, test_idx = fold_indices(splits, task.round, task.fold)
        result = run_fold(
            data,
            task.registry_name,
            dict(task.params),
            train_idx,
            test_idx,
            round=task.round,
            fold=task.fold,
            seed=fold_seed(task.seed, task.round, task.fold),
            discretize_sample=task.discretize_sample,
        )
        record = result.to_record()
        record["y"] = np.asarray(data.y[result.test_index], dtype=np.int64)
        return record
    except KeyboardInterrupt:
        raise
    except WorkbenchError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # a learner bug must not lose the rest of a long run
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" ({tb[-1].filename}:{tb[-1].lineno})" if tb else ""
        return {"error": f"{type(exc).__name__}: {exc}{where}"}


# ----- summaries ------------------------------------------------------------------------------
def summarize_pair(run_dir: Path, dataset: str, learner: str, rounds: int, folds: int) -> dict:
    """Summarise one pair from its stored folds and write ``summary.json`` (pair complete)."""
    from workbench.evaluation.cv import summarize_folds
    from workbench.evaluation.pipeline import FoldResult

    recs = store.read_folds(run_dir, dataset, learner)
    recs = [r for r in recs if r["round"] < rounds and r["fold"] < folds]
    n = max(int(r["test_index"].max()) + 1 for r in recs if r["test_index"].size)
    y = np.full(n, -1, dtype=np.int64)
    for r in recs:
        y[r["test_index"]] = r["y"]
    n_classes = int(recs[0]["proba"].shape[1])
    results = [FoldResult.from_record(r) for r in recs]
    summary = summarize_folds(results, y, n_classes, rounds, folds, per_fold=True)
    store.write_summary(run_dir, dataset, learner, summary)
    return summary


# ----- run directory --------------------------------------------------------------------------
def _prepare_run_dir(run_dir: Path, config_hash: str, fresh: bool, force: bool) -> str | None:
    """Check the directory may take this config's results; wipe it for ``fresh``.

    Returns the hash previously stored there (None for a new directory).
    """
    hash_file = run_dir / store.CONFIG_HASH
    old = hash_file.read_text().strip() if hash_file.is_file() else None
    if fresh and run_dir.exists():
        if not store.looks_like_run_dir(run_dir) and any(run_dir.iterdir()):
            raise RunError(
                f"--fresh: {run_dir} is not empty and does not look like a run directory "
                f"(no {store.CONFIG_HASH}); refusing to wipe it"
            )
        store.remove_run(run_dir)
        return None
    if old is not None and old != config_hash and not force:
        raise RunError(
            f"{run_dir} holds results of a different config (stored hash {old[:12]}, this "
            f"config {config_hash[:12]}); use --fresh to wipe and restart, --force to keep "
            "and reuse them anyway, or --output for another directory"
        )
    return old


def _package_versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for name in ("workbench", "numpy", "scipy", "pandas", "joblib", "PyYAML", "pyarrow",
                 "scikit-learn", "numba", "liac-arff", "dask", "distributed"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _times_by_learner(run_dir: Path) -> dict[str, Any]:
    keys = ("train_cpu_seconds", "test_cpu_seconds", "train_wall_seconds", "test_wall_seconds")
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
def _iterate(tasks: Sequence[Task], jobs: int, backend: str, scheduler: str | None
             ) -> Iterator[tuple[Task, dict[str, Any]]]:
    """Yield (task, record) as tasks finish, in any order."""
    if not tasks:
        return
    from joblib import Parallel, delayed

    if backend == "loky":
        if jobs == 1:
            for t in tasks:
                yield t, run_task(t)
            return
        par = Parallel(n_jobs=jobs, backend="loky", return_as="generator_unordered")
        yield from par(delayed(_run_with_task)(t) for t in tasks)
        return
    if backend != "dask":
        raise RunError(f"--backend: unknown backend {backend!r} (choose {', '.join(BACKENDS)})")
    try:
        from dask.distributed import Client, LocalCluster
        from joblib import parallel_config
    except ImportError as exc:  # pragma: no cover - dask is an optional dependency
        raise RunError(f"--backend dask needs dask[distributed]: {exc}") from None
    cluster = None
    if scheduler:
        try:
            client = Client(scheduler)
        except Exception as exc:
            raise RunError(f"--scheduler {scheduler}: cannot connect: {exc}") from None
    else:
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        with parallel_config(backend="dask"):
            par = Parallel(n_jobs=-1, return_as="generator_unordered")
            yield from par(delayed(_run_with_task)(t) for t in tasks)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _run_with_task(task: Task) -> tuple[Task, dict[str, Any]]:
    return task, run_task(task)


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
) -> RunResult:
    """Run (or resume) `config` into ``config.output``; returns what this invocation did.

    `datasets` / `learners` restrict the work to a subset of the config's (data set names
    or aliases / learner display names); they do not change the config hash. Raises
    `RunError` / `ConfigError` before writing anything if the request is invalid.
    KeyboardInterrupt propagates after the finished folds are kept and reported.
    """
    stream = stream if stream is not None else sys.stderr
    if backend not in BACKENDS:
        raise RunError(f"--backend: unknown backend {backend!r} (choose {', '.join(BACKENDS)})")
    if not isinstance(jobs, int) or jobs < 1:
        raise RunError(f"--jobs: expected a positive integer, got {jobs!r}")
    if scheduler and backend != "dask":
        raise RunError("--scheduler needs --backend dask")

    # ----- plan (nothing written yet) -----
    found, missing = resolve_datasets(config)
    all_names = [r.name for r in found] + missing
    learner_names = config.learner_names
    sel_found = found
    if datasets:
        wanted = canonical_dataset_names(list(datasets))
        unknown = [w for w in wanted if w not in all_names]
        if unknown:
            raise ConfigError(
                f"--datasets: {', '.join(unknown)} not in this config's data sets "
                f"({', '.join(all_names) if len(all_names) <= 20 else str(len(all_names)) + ' sets'})"
            )
        sel_found = [r for r in found if r.name in wanted]
        sel_missing = [m for m in missing if m in wanted]
    else:
        sel_missing = missing
    sel_learners = learner_names
    if learners:
        unknown = [l for l in learners if l not in learner_names]
        if unknown:
            raise ConfigError(
                f"--learners: {', '.join(unknown)} not among the config's learners "
                f"({', '.join(learner_names)})"
            )
        sel_learners = [l for l in learner_names if l in set(learners)]

    config_hash = config.config_hash()
    run_dir = Path(config.output)
    result = RunResult(run_dir=run_dir, config_hash=config_hash,
                       datasets=[r.name for r in sel_found], missing_datasets=sel_missing,
                       learners=list(sel_learners))
    _prepare_run_dir(run_dir, config_hash, fresh, force)

    # ----- the run directory -----
    started = time.monotonic()
    run_dir.mkdir(parents=True, exist_ok=True)
    resolved = config.to_dict()
    store.atomic_write_text(
        run_dir / store.CONFIG_YAML,
        "# resolved config written by `python -m workbench run`\n"
        + yaml.safe_dump(resolved, sort_keys=False, allow_unicode=True),
    )
    store.atomic_write_text(run_dir / store.CONFIG_HASH, config_hash + "\n")
    meta = store.read_metadata(run_dir)
    if meta.get("config_hash") not in (None, config_hash):
        meta = {"previous_config_hash": meta.get("config_hash")}
    p = config.protocol
    invocation: dict[str, Any] = {
        "started": _now(),
        "jobs": jobs,
        "backend": backend,
        "scheduler": scheduler,
        "restrict_datasets": list(datasets) if datasets else None,
        "restrict_learners": list(learners) if learners else None,
        "status": "running",
    }
    meta.update({
        "name": config.name,
        "config_hash": config_hash,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "packages": _package_versions(),
        "learner_parameters": config.hash_payload()["learners"],
        "plan": {
            "datasets": [r.name for r in found],
            "missing_datasets": missing,
            "learners": learner_names,
            "rounds": p.rounds,
            "folds": p.folds,
            "folds_per_pair": p.n_folds_total,
            "dataset_files": {r.name: str(r.path) for r in found},
        },
    })
    meta.setdefault("started", invocation["started"])
    meta.setdefault("invocations", []).append(invocation)
    _write_metadata(run_dir, meta)

    # ----- what is left to do -----
    tasks: list[Task] = []
    remaining: dict[tuple[str, str], int] = {}
    to_summarize: list[tuple[str, str]] = []
    plugin_dir = str(config.base_dir)
    specs = _runtime_specs(config, sel_learners)
    for ref in sel_found:
        for name in sel_learners:
            if _complete_for(run_dir, ref.name, name, p):
                if not _has_per_fold(run_dir, ref.name, name) and len(
                        store.stored_folds(run_dir, ref.name, name)) >= p.n_folds_total:
                    to_summarize.append((ref.name, name))  # older summary: add per_fold
                    continue
                result.pairs_already_complete += 1
                continue
            done = store.stored_folds(run_dir, ref.name, name)
            lc = config.learner(name)
            todo = [(r, f) for r in range(p.rounds) for f in range(p.folds) if (r, f) not in done]
            result.folds_reused += p.n_folds_total - len(todo)
            if not todo:
                to_summarize.append((ref.name, name))
                continue
            remaining[(ref.name, name)] = len(todo)
            for r, f in todo:
                tasks.append(Task(
                    dataset=ref.name, path=str(ref.path), learner=name,
                    registry_name=lc.learner, params=tuple(sorted(lc.params.items())),
                    round=r, fold=f, rounds=p.rounds, folds=p.folds, seed=p.seed,
                    stratify=p.stratify, plugins=tuple(config.plugins), plugin_dir=plugin_dir,
                    spec=specs.get(lc.learner), discretize_sample=p.discretize_sample,
                ))

    print(_plan_line(result, len(tasks), sel_found, sel_learners), file=stream)
    if sel_missing:
        print(f"skipped: {len(sel_missing)} data set(s) not found in the search path: "
              f"{', '.join(sel_missing)}", file=stream)

    failed_pairs: set[tuple[str, str]] = set()
    progress = Progress(len(tasks), stream=stream, interval=progress_interval, label="folds")
    try:
        for ds, name in to_summarize:
            _finish_pair(run_dir, ds, name, p, result, stream)
        for task, rec in _iterate(tasks, jobs, backend, scheduler):
            key = (task.dataset, task.learner)
            if "error" in rec:
                if key not in failed_pairs:
                    failed_pairs.add(key)
                    msg = f"{task.dataset} / {task.learner} (round {task.round}, fold " \
                          f"{task.fold}): {rec['error']}"
                    result.failures.append(msg)
                    _print_above(progress, stream, f"failed: {msg}")
                progress.update(note=f"{task.dataset}/{task.learner}")
                continue
            store.write_fold(run_dir, task.dataset, task.learner, rec)
            result.folds_run += 1
            remaining[key] -= 1
            if remaining[key] == 0 and key not in failed_pairs:
                _finish_pair(run_dir, task.dataset, task.learner, p, result, stream)
            progress.update(note=f"{task.dataset}/{task.learner}")
    except KeyboardInterrupt:
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
    _print_summary(result, stream)
    return result


def _complete_for(run_dir: Path, dataset: str, learner: str, p) -> bool:
    """The pair has a summary for exactly this protocol's rounds × folds."""
    if not store.is_complete(run_dir, dataset, learner):
        return False
    try:
        with open(store.summary_path(run_dir, dataset, learner), encoding="utf-8") as fh:
            row = json.load(fh)
    except (OSError, ValueError):
        return False
    return row.get("rounds", p.rounds) == p.rounds and row.get("folds", p.folds) == p.folds


def _has_per_fold(run_dir: Path, dataset: str, learner: str) -> bool:
    """The pair's summary.json holds per-fold values (written since they were added)."""
    try:
        with open(store.summary_path(run_dir, dataset, learner), encoding="utf-8") as fh:
            return isinstance(json.load(fh).get(store.PER_FOLD_KEY), dict)
    except (OSError, ValueError):
        return False


def _runtime_specs(config: ExperimentConfig, names: Sequence[str]) -> dict[str, bytes]:
    """Specs of learners registered at run time (tests, plugins) to ship to workers."""
    from workbench.learners import registry

    import pickle

    out = {}
    for name in names:
        spec = registry.get(config.learner(name).learner)
        if spec.source != "builtin" and spec.name not in out:
            try:
                out[spec.name] = pickle.dumps(spec)
            except Exception:  # not picklable (e.g. a local class): workers need a plugin
                pass
    return out


def _finish_pair(run_dir: Path, dataset: str, learner: str, p, result: RunResult,
                 stream: TextIO) -> None:
    try:
        summarize_pair(run_dir, dataset, learner, p.rounds, p.folds)
    except WorkbenchError as exc:
        result.failures.append(f"{dataset} / {learner}: cannot summarise stored folds: {exc}")
        return
    result.pairs_completed += 1


def _print_above(progress: Progress, stream: TextIO, text: str) -> None:
    if progress.tty:
        stream.write("\r\x1b[K")
    print(text, file=stream)


def _plan_line(result: RunResult, n_tasks: int, found: list[DatasetRef],
               learners: list[str]) -> str:
    return (
        f"run {result.run_dir}: {len(found)} data set(s) × {len(learners)} learner(s); "
        f"{result.pairs_already_complete} pair(s) already complete, "
        f"{result.folds_reused} fold(s) already stored, {n_tasks} fold(s) to run"
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
        "failures": result.failures,
    })
    meta["finished"] = invocation["finished"]
    meta["wall_seconds_total"] = round(
        sum(float(i.get("wall_seconds") or 0.0) for i in meta.get("invocations", [])), 3
    )
    try:
        meta["times"] = _times_by_learner(run_dir)
        store.write_summary_csv(run_dir)
        store.write_fold_metrics_csv(run_dir)
    except Exception:  # never mask the original outcome because of bookkeeping
        pass
    _write_metadata(run_dir, meta)


def _print_summary(result: RunResult, stream: TextIO) -> None:
    lines = [
        f"done in {result.wall_seconds:.1f}s: ran {result.folds_run} fold(s), "
        f"completed {result.pairs_completed} pair(s); skipped "
        f"{result.pairs_already_complete} pair(s) already complete and reused "
        f"{result.folds_reused} stored fold(s)",
    ]
    if result.missing_datasets:
        lines.append(f"not found (skipped): {', '.join(result.missing_datasets)}")
    if result.failures:
        lines.append(f"{len(result.failures)} pair(s) failed (not summarised):")
        lines.extend(f"  {f}" for f in result.failures)
    lines.append(f"results: {result.run_dir}")
    print("\n".join(lines), file=stream)
