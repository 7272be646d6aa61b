"""Pairs taken from stored runs (a config's ``baselines:``) instead of being recomputed.

Round r of a protocol's folds depends only on (seed, r), and a learner's output only on the
data file, its effective parameters (registry defaults + overrides + preprocessing) and its
code, so a stored (data set, learner) pair *is* the pair a new run would compute when all of
these match:

* the data file: the same sha256 as the stored pair's ``data_sha256``;
* the protocol: the same resolved ``protocol`` mapping (type, rounds, folds, seed,
  stratification, sizes, ``discretize_sample``...) as the stored run's ``config.yaml``;
* the learner: the same effective parameters as one of the stored run's learner columns
  (its ``metadata.json`` ``learner_parameters``; the display name may differ, and so may the
  registry name when both name the same learner class, e.g. ``VWLF`` and ``vw`` with
  VWLF's parameters) and the same
  `Learner.output_version` (``learner_output_versions``; a run that records none was made
  by version 1 of every learner).

A matching pair is copied into the new run directory (its summary, with its per-fold values
and bias/variance, and its ``predictions.parquet`` when the stored run kept one), marked with
where it came from (``reused_from`` in its ``summary.json``). A pair that a baseline holds under
the same display name but that fails one of the checks is recomputed, with one line saying
which check failed. Nothing is ever written into a baseline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence, TextIO

import yaml

from workbench import store
from workbench.errors import ConfigError
from workbench.experiment.config import DatasetRef, ExperimentConfig

VERSIONS_KEY = "learner_output_versions"


@dataclass
class StoredRun:
    """One baseline run directory, read once: its protocol, learner columns and pairs."""

    label: str
    path: Path
    protocol: dict[str, Any]
    learners: dict[str, dict[str, Any]]
    versions: dict[str, int]
    summaries: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def columns_like(self, effective: dict[str, Any], version: int) -> list[str]:
        """The stored learner columns with these effective parameters and output version."""
        return [name for name, params in self.learners.items()
                if same_learner(params, effective) and self.versions.get(name, 1) == version]


def open_runs(config: ExperimentConfig) -> list[StoredRun]:
    """Read every baseline of `config` (`ConfigError` naming ``baselines.i`` when one cannot
    be read)."""
    runs = []
    where = f"{config.source}: " if config.source is not None else ""
    for i, (label, path) in enumerate(config.baselines):
        try:
            meta = store.read_metadata(path)
            text = (path / store.CONFIG_YAML).read_text(encoding="utf-8")
            stored = yaml.safe_load(text) or {}
            summaries = {(str(r["dataset"]), str(r["learner"])): r
                         for r in store.iter_summaries(path)}
        except (OSError, yaml.YAMLError, store.StoreCorrupt) as exc:
            raise ConfigError(f"{where}baselines.{i}: cannot read the stored run {path}: "
                              f"{exc}") from None
        params = meta.get("learner_parameters")
        if not isinstance(params, dict) or not isinstance(stored.get("protocol"), dict):
            raise ConfigError(f"{where}baselines.{i}: {path} records no learner parameters "
                              "or protocol (metadata.json / config.yaml of a workbench run)")
        runs.append(StoredRun(label, path, stored["protocol"], params,
                              dict(meta.get(VERSIONS_KEY) or {}), summaries))
    return runs


def output_versions(config: ExperimentConfig) -> dict[str, int]:
    """Each learner column's output version (what `StoredRun.versions` reads back)."""
    from workbench.learners import registry

    return {lc.display: registry.get(lc.learner).output_version for lc in config.learners}


@dataclass
class Adopted:
    """What `adopt` did: pairs taken (new display → baseline label) and the reasons given."""

    taken: dict[tuple[str, str], str] = field(default_factory=dict)
    recomputed: list[str] = field(default_factory=list)


def adopt(run_dir: Path, config: ExperimentConfig, refs: Sequence[DatasetRef],
          learners: Sequence[str], shas: dict[str, str], runs: Sequence[StoredRun],
          stream: TextIO) -> Adopted:
    """Copy into `run_dir` every pair of `refs` × `learners` that it does not hold yet and a
    baseline holds with the same data file, protocol, parameters and output version; print
    one line for each pair a baseline holds under its name but cannot give, and why."""
    out = Adopted()
    if not runs:
        return out
    protocol = config.to_dict()["protocol"]
    versions = output_versions(config)
    effective_all = config.hash_payload()["learners"]
    for name in learners:
        effective = effective_all[name]
        for ref in refs:
            if store.pair_dir(run_dir, ref.name, name).exists() or \
                    store.is_complete(run_dir, ref.name, name):
                continue
            found, reasons = _find(runs, ref.name, name, shas[ref.name], effective,
                                   versions[name], protocol)
            if found is not None:
                run, column, row = found
                store.adopt_pair(run_dir, ref.name, name, run.path, column, row,
                                 {"run": str(run.path), "baseline": run.label,
                                  "learner": column})
                out.taken[(ref.name, name)] = run.label
            elif reasons:
                line = f"recomputing {ref.name} / {name}: {'; '.join(reasons)}"
                out.recomputed.append(line)
                print(line, file=stream)
    return out


def _find(runs: Sequence[StoredRun], dataset: str, name: str, sha: str,
          effective: dict[str, Any], version: int, protocol: dict[str, Any]
          ) -> tuple[tuple[StoredRun, str, dict[str, Any]] | None, list[str]]:
    """The first stored pair that can stand for (dataset, name), or the reasons why the
    pairs stored under that display name cannot."""
    reasons = []
    for run in runs:
        same_protocol = _canonical(_by_content(run.protocol)) == _canonical(
            _by_content(protocol))
        columns = run.columns_like(effective, version)
        candidates = ([name] if name in columns else []) + [c for c in columns if c != name]
        for column in candidates:
            row = run.summaries.get((dataset, column))
            if row is not None and same_protocol and row.get(store.DATA_HASH_KEY) == sha:
                return (run, column, row), []
        row = run.summaries.get((dataset, name))
        if row is None:
            continue
        why = []
        if row.get(store.DATA_HASH_KEY) != sha:
            why.append("another version of the data file"
                       if row.get(store.DATA_HASH_KEY) else "no data file hash recorded")
        if not same_protocol:
            why.append(f"another protocol ({_diff(run.protocol, protocol)})")
        stored = run.learners.get(name)
        if stored is not None and (diff := _param_diff(stored, effective)):
            why.append(f"other learner parameters ({diff})")
        elif run.versions.get(name, 1) != version:
            why.append(f"learner output version {run.versions.get(name, 1)}, now {version}")
        if why:
            reasons.append(f"baseline {run.label} has it from {', '.join(why)}")
    return None, reasons


def same_learner(stored: dict[str, Any], effective: dict[str, Any]) -> bool:
    """Two effective-parameter records (``learner_parameters``) describe the same learner."""
    return not _param_diff(stored, effective)


def _param_diff(stored: dict[str, Any], effective: dict[str, Any]) -> str:
    """How a stored learner column's effective parameters differ from `effective` ('' when
    they are the same learner). A parameter the stored run does not record was added to the
    learner since; it is the same learner while the parameter keeps its registry default
    (a parameter whose default changes the output comes with a new output version)."""
    from workbench.learners import registry

    def flat(e: dict[str, Any]) -> dict[str, Any]:
        return {"learner": e.get("learner"), **dict(e.get("params") or {}),
                "preprocessing": e.get("preprocessing")}

    old, new = flat(stored), flat(effective)
    try:
        spec = registry.get(str(new["learner"]))
        defaults = spec.parameters()
        # two registry names of one learner class (VWLF is vw with its presets) compute the
        # same thing when their effective parameters agree
        same_class = registry.get(str(old["learner"])).factory is spec.factory
    except Exception:  # a learner no longer registered: compare what is recorded
        defaults, same_class = {}, False

    def excused(key: str) -> bool:
        if key == "learner":
            return same_class
        return key not in old and key in defaults and \
            _canonical(new.get(key)) == _canonical(defaults[key])
    return _diff(old, new, excused)


def _diff(old: dict[str, Any], new: dict[str, Any], same=lambda key: False) -> str:
    """``key: old → new`` for each key whose values differ (and `same` does not excuse)."""
    return ", ".join(f"{key}: {old.get(key)!r} → {new.get(key)!r}"
                     for key in dict.fromkeys([*old, *new])
                     if not same(key) and _canonical(old.get(key)) != _canonical(new.get(key)))


def _by_content(protocol: dict[str, Any]) -> dict[str, Any]:
    """A protocol mapping without a fold file's path (its sha256 says what it is)."""
    return {k: v for k, v in protocol.items() if k != "splits"}


def _canonical(value: Any) -> str:
    """Comparable text of plain data; 1 and 1.0 are the same parameter value."""
    def norm(v: Any) -> Any:
        if isinstance(v, dict):
            return {str(k): norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        if isinstance(v, int) and not isinstance(v, bool):
            return float(v)
        return v
    return json.dumps(norm(value), sort_keys=True, default=str)
