"""Experiment configs: YAML → validated, immutable dataclasses.

Everything is checked up front (before a run directory is created); each problem raises one
`ConfigError` that names the file, the line (when known) and the field path, e.g.
``configs/x.yaml:12: learners.A2DE-m.m: learner 'A2DE': parameter 'm' must be float, ...``.

Schema::

    name: pakdd13                       # required, used for the default output directory
    datasets: all                       # or a list of slugs / groups (large|medium|small) / paths
    data_dirs: [../data]                # extra search directories, relative to this file
    protocol: {rounds: 20, folds: 2, seed: 1, stratify: false,
               discretize_sample: null}  # fit discretisers on <= N training rows (null = all)
      # or {type: holdout, fraction: 0.1, min_test_seconds: 0} (> 0: classification timed
      #     by a loop of at least that many CPU seconds)
      #     | {type: sampled, n_train: 1000, n_test: 1000, repetitions: 10}
      #     | {type: learning_curve, sizes: [...], n_test: 1000}
      #     | {type: prequential, window: 1000} (a stream, test-then-train)
      #     | {splits: FILE} (the folds of a CSV / Parquet file of round, index, fold rows,
      #       with a dataset column for several data sets: OpenML's or Weka's folds, or
      #       another run's from `workbench status RUN --folds-out FILE`)
      # (`evaluation.protocols`; seed and discretize_sample apply to every type)
    learners:                           # display name -> {learner: REGISTRY_NAME, params...}
      NB: NB                            #   (a bare registry name is shorthand)
      A2DE-SW-m0.5: {learner: A2DE-SW, m: 0.5}
      A1DE-m: {learner: A1DE, m: [0.1, 1, 5]}  # a sweep: one variant per value, named
                                        #   A1DE-m[m=0.1] ...; or grid: {m: [...], ...}
                                        #   (every combination); the report draws the
                                        #   metric against a one-parameter sweep's values
      KDB-tuned: {learner: KDB, k: [1, 2, 3], tune: {folds: 3, metric: rmse}}
                                        # nested tuning: one learner, k chosen per
                                        #   training fold by an inner stratified CV
                                        #   (seed: the fold's, or tune.seed); in memory
                                        #   or out of core (count-based learners)
    baseline: NB                        # default NB; must be one of the learners
    output: runs/pakdd13                # relative to this file; default results/<name>
                                        # relative to the working directory
    report: {...}                       # passed through to the report stage
    plugins: [my_plugin.py]             # loaded before the learners are validated
    baselines: [pakdd13, runs/old]      # stored runs (a run directory, or a packaged
                                        # reproduction by name) whose matching pairs are
                                        # copied instead of recomputed (`reuse`)
    out_of_core: true                   # each data file read in chunks, never whole:
                                        # k-fold CV a round a task (`evaluation.outofcore.kfold`;
                                        # folds by row index, assignment: rows), the holdout
                                        # and prequential stream likewise, sampled and
                                        # learning-curve folds from their rows gathered in a
                                        # pass; or {chunk_rows: N, sample: N, predictions:
                                        # false}: rows a chunk (65,536), training rows a CV
                                        # fold's cut points come from (discretize_sample,
                                        # else 100,000), k-fold CV storing each fold's loss
                                        # sums only (constant memory; no bias/variance)
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from workbench import yamlnum
from workbench.errors import ConfigError, FieldError, WorkbenchError
from workbench.evaluation import protocols, tuning
from workbench.evaluation.pipeline import make_learner, takes_list
from workbench.store import safe_name
from workbench.learners import registry
from workbench.plugins import load_plugins

GROUPS = ("large", "medium", "small")
ALL = "all"
TOP_LEVEL_KEYS = (
    "name",
    "datasets",
    "data_dirs",
    "protocol",
    "learners",
    "baseline",
    "output",
    "report",
    "plugins",
    "baselines",
    "out_of_core",
)
SPLITS_KEYS = ("type", "splits", "seed", "splits_sha256", "discretize_sample")
PROTOCOL_DEFAULTS: dict[str, Any] = {"rounds": 10, "folds": 2, "seed": 1, "stratify": False,
                                     "assignment": "shuffle", "discretize_sample": None}
"""The k-fold defaults (a protocol mapping without ``type``)."""


@dataclass(frozen=True)
class ProtocolChoice:
    """The evaluation protocol of a config: `plan` (an `evaluation.protocols.Protocol`)
    plus the options every protocol shares."""

    plan: protocols.Protocol = field(default_factory=protocols.KFold)
    discretize_sample: int | None = None  # fit discretisers on <= N training rows; None = all

    @property
    def rounds(self) -> int:
        return self.plan.rounds

    @property
    def folds(self) -> int:
        return self.plan.folds

    @property
    def seed(self) -> int:
        return self.plan.seed

    @property
    def stratify(self) -> bool:
        return bool(getattr(self.plan, "stratify", False))

    @property
    def n_folds_total(self) -> int:
        """Number of (round, fold) evaluations per (data set, learner)."""
        return self.plan.n_folds_total


@dataclass(frozen=True)
class LearnerConfig:
    """One learner column: display name, registry name and parameter overrides."""

    display: str
    learner: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def create(self):
        """A fresh, unfitted learner instance (`Tuned` with a ``tune`` key)."""
        return make_learner(self.learner, dict(self.params))


@dataclass(frozen=True)
class DatasetRef:
    """One resolved data set: canonical name and the file it is read from."""

    name: str
    path: Path
    n_instances: int | None = None  # from the catalog, used to order the work


@dataclass(frozen=True)
class ExperimentConfig:
    """A validated experiment config (see the module docstring for the schema)."""

    name: str
    datasets: tuple[str, ...]
    data_dirs: tuple[Path, ...]
    protocol: ProtocolChoice
    learners: tuple[LearnerConfig, ...]
    baseline: str
    output: Path
    report: Mapping[str, Any] = field(default_factory=dict)
    plugins: tuple[str, ...] = ()
    baselines: tuple[tuple[str, Path], ...] = ()  # (as written, resolved run directory)
    out_of_core: Mapping[str, int] | None = None  # {chunk_rows, sample}: CV out of core
    source: Path | None = None
    output_text: str | None = None  # ``output:`` as written (None: the default was used)
    # each `datasets` item's ``file:line: datasets.i``, for the resolution step's errors
    dataset_where: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def base_dir(self) -> Path:
        """Directory relative paths in the config are resolved against."""
        return self.source.parent if self.source is not None else Path.cwd()

    @property
    def learner_names(self) -> list[str]:
        return [lc.display for lc in self.learners]

    def learner(self, display: str) -> LearnerConfig:
        for lc in self.learners:
            if lc.display == display:
                return lc
        raise KeyError(display)

    def with_rounds(self, rounds: int) -> "ExperimentConfig":
        """A copy with a different number of rounds (changes the config hash)."""
        if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
            raise ConfigError(f"--rounds: expected a positive integer, got {rounds!r}")
        if not isinstance(self.protocol.plan, protocols.KFold):
            raise ConfigError(f"--rounds: only for k-fold protocols (this config's protocol "
                              f"is {self.protocol.plan.kind})")
        plan = replace(self.protocol.plan, rounds=rounds)
        return replace(self, protocol=replace(self.protocol, plan=plan))

    def learner_parameters(self, display: str) -> dict[str, Any]:
        """The effective constructor parameters of one learner column (registry defaults
        + overrides)."""
        return dict(_effective_params(self.learner(display))["params"])

    def with_output(self, output: Path | str) -> "ExperimentConfig":
        return replace(self, output=Path(output))

    # ----- serialisation -------------------------------------------------------------------
    def to_dict(self, relative_to: Path | None = None) -> dict[str, Any]:
        """The resolved config as plain data (what `config.yaml` in a run directory holds).
        With `relative_to` (the run directory the file is written to), its paths — data
        directories, plugin files, baselines, the output — are written relative to it,
        so that the stored config names no directory of the machine it ran on and still
        resolves (a relative path in a config is read relative to the config's folder)."""
        def where(p: Path | str) -> str:
            return _relative(p, relative_to) if relative_to is not None else str(p)

        return {
            "name": self.name,
            "datasets": [where(d) if looks_like_path(d) else d for d in self.datasets],
            "data_dirs": [where(p) for p in self.data_dirs],
            "protocol": self._protocol_dict(where),
            "learners": {
                lc.display: {"learner": lc.learner, **dict(lc.params)} for lc in self.learners
            },
            "baseline": self.baseline,
            "output": where(self.output),
            "report": _plain(self.report),
            "plugins": [where(self._absolute_plugin(p)) if _is_file_spec(p) else p
                        for p in self.plugins],
        } | ({"baselines": [where(path) for _, path in self.baselines]}
             if self.baselines else {}) | (
                 {"out_of_core": dict(self.out_of_core)} if self.out_of_core else {})

    def _protocol_dict(self, where: Callable[[str], str] = str) -> dict[str, Any]:
        """The protocol as plain data; ``discretize_sample`` only when set, so configs
        without it keep their config hash; a fold file's path through `where`."""
        out: dict[str, Any] = self.protocol.plan.to_dict()
        if "splits" in out:
            out["splits"] = where(out["splits"])
        if self.protocol.discretize_sample is not None:
            out["discretize_sample"] = self.protocol.discretize_sample
        return out

    def _absolute_plugin(self, spec: str) -> str:
        """A plugin file path made absolute (so the stored config works from anywhere)."""
        if _is_file_spec(spec):
            p = Path(spec).expanduser()
            return str(p if p.is_absolute() else (self.base_dir / p).resolve())
        return spec

    def hash_payload(self) -> dict[str, Any]:
        """The part of the config that determines the stored results.

        Excluded: name, output, data_dirs (where files are, not what they are), report
        options, baseline (presentation only), baselines (where results may be copied
        from: a copied pair is the pair this config computes). The learners enter with their *effective*
        parameters (registry defaults + overrides + preprocessing), so a changed default is
        detected too.
        """
        protocol = {k: v for k, v in self._protocol_dict().items()
                    if k != "splits"}  # a fold file enters by its content, not its path
        return {
            "datasets": sorted(set(self.datasets)),
            "protocol": protocol,
            "learners": {lc.display: _effective_params(lc) for lc in self.learners},
        } | ({"out_of_core_sample": self.out_of_core["sample"]} if self.out_of_core and
             self.protocol.plan.kind in ("kfold", "holdout") else {})

    def config_hash(self) -> str:
        """sha256 of the canonical JSON of `hash_payload()`."""
        text = json.dumps(self.hash_payload(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ----- loading --------------------------------------------------------------------------------
def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate a YAML experiment config; every problem is one `ConfigError`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    return parse_config(text, source=path)


def parse_config(text: str, source: Path | None = None, *,
                 load_user_code: bool = True) -> ExperimentConfig:
    """Validate config `text` (YAML); `source` names the file and anchors relative paths.

    Parsing itself runs no user code: the listed plugins are imported only as the separate
    last step that `load_user_code` allows (a run needs it; inspecting a config does not).
    Without it, learners that no built-in registers are accepted as written when the config
    lists plugins (they would register them), and not checked further."""
    where = str(source) if source is not None else "<config>"
    try:
        data = yamlnum.load(text)
        lines = _line_map(yamlnum.compose(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        detail = f"{context}, {problem}" if context else problem
        if mark is not None:
            raise ConfigError(
                f"{where}:{mark.line + 1}:{mark.column + 1}: YAML syntax error: {detail}"
            ) from None
        raise ConfigError(f"{where}: YAML syntax error: {detail}") from None
    return _Validator(where, lines, source, load_user_code).run(data)


def _line_map(node: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], int]:
    """Map each field path (tuple of keys/indices) to its 1-based line in the YAML text."""
    out: dict[tuple[str, ...], int] = {}
    if node is None:
        return out
    out.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            out[prefix + (key,)] = key_node.start_mark.line + 1
            for k, v in _line_map(value_node, prefix + (key,)).items():
                out.setdefault(k, v)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            for k, v in _line_map(item, prefix + (str(i),)).items():
                out.setdefault(k, v)
    return out


class _Validator:
    """Turns the parsed YAML into an `ExperimentConfig`, raising one error per problem."""

    def __init__(self, where: str, lines: dict[tuple[str, ...], int], source: Path | None,
                 load_user_code: bool = True):
        self.where = where
        self.lines = lines
        self.source = source
        self.load_user_code = load_user_code
        self.has_plugins = False
        self.base_dir = source.parent if source is not None else Path.cwd()
        self.dataset_where: dict[str, str] = {}
        self.sweeps: dict[str, dict[str, Any]] = {}  # one-parameter sweeps, for the report
        self.variant_of: dict[str, str] = {}  # a sweep's variant -> the column it came from

    def location(self, path: tuple[str, ...]) -> str:
        """``file:line: field`` of a config field, for an error message."""
        line = None
        for n in range(len(path), -1, -1):
            line = self.lines.get(path[:n])
            if line is not None:
                break
        loc = f"{self.where}:{line}" if line is not None else self.where
        return f"{loc}: {'.'.join(path)}" if path else loc

    def error(self, path: tuple[str, ...], message: str) -> ConfigError:
        return ConfigError(f"{self.location(path)}: {message}")

    # ----- generic checks ------------------------------------------------------------------
    def expect(self, value: Any, kind: type | tuple[type, ...], path: tuple[str, ...], what: str):
        ok = isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, (int,)))
        if not ok:
            raise self.error(path, f"expected {what}, got {_show(value)}")
        return value

    def positive_int(self, value: Any, path: tuple[str, ...], minimum: int = 1) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.error(path, f"expected an integer >= {minimum}, got {_show(value)}")
        return value

    def local_path(self, text: str) -> Path:
        """A path as a config gives it: relative to the config's folder, made absolute."""
        p = Path(text).expanduser()
        return (p if p.is_absolute() else self.base_dir / p).resolve()

    def nonempty_str(self, value: Any, path: tuple[str, ...]) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.error(path, f"expected a non-empty string, got {_show(value)}")
        return value.strip()

    # ----- the schema ----------------------------------------------------------------------
    def run(self, data: Any) -> ExperimentConfig:
        if data is None:
            raise self.error((), "the config is empty (expected a mapping with at least "
                             "'name', 'datasets' and 'learners')")
        if not isinstance(data, dict):
            raise self.error((), f"expected a mapping at the top level, got {_show(data)}")
        for key in data:
            if key not in TOP_LEVEL_KEYS:
                raise self.error(
                    (str(key),), f"unknown key (allowed: {', '.join(TOP_LEVEL_KEYS)})"
                )
        for key in ("name", "datasets", "learners"):
            if key not in data:
                raise self.error((), f"missing required key '{key}'")

        name = self.nonempty_str(data["name"], ("name",))
        if "/" in name or "\\" in name:
            raise self.error(("name",), f"must not contain path separators, got {name!r}")
        data_dirs = self.data_dirs(data.get("data_dirs", []))
        plugins = self.plugins(data.get("plugins", []))
        out_of_core = self.out_of_core(data.get("out_of_core"), data.get("protocol"))
        protocol = self.protocol(data.get("protocol", {}), out_of_core is not None)
        if out_of_core is not None:
            out_of_core.setdefault("sample", protocol.discretize_sample or 100_000)
            if getattr(protocol.plan, "min_test_seconds", 0):
                raise self.error(("protocol", "min_test_seconds"),
                                 "a timing loop re-classifies the test split in memory; "
                                 "not with out_of_core")
        datasets = self.datasets(data["datasets"])
        learners = self.learners(data["learners"])
        baseline = self.baseline(data.get("baseline", "NB"), learners, "baseline" in data)
        output = data.get("output")
        if output is None:
            output_path = Path("results") / name
        else:  # like every path in a config: relative to the config file's folder
            output_path = Path(self.nonempty_str(output, ("output",))).expanduser()
            if not output_path.is_absolute() and self.source is not None:
                output_path = self.base_dir / output_path
        baselines = self.baselines(data.get("baselines", []), output_path)
        report = data.get("report", {})
        if report is None:
            report = {}
        self.expect(report, dict, ("report",), "a mapping of report options")
        if self.sweeps:  # the figure of each sweep, unless the config draws its own
            report = {**report, "sweeps": {**self.sweeps, **dict(report.get("sweeps") or {})}}
        return ExperimentConfig(
            name=name,
            datasets=datasets,
            data_dirs=data_dirs,
            protocol=protocol,
            learners=learners,
            baseline=baseline,
            output=output_path,
            report=report,
            plugins=plugins,
            baselines=baselines,
            out_of_core=out_of_core,
            source=self.source,
            output_text=None if output is None else str(output),
            dataset_where=dict(self.dataset_where),
        )

    def data_dirs(self, value: Any) -> tuple[Path, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            value = [value]
        self.expect(value, list, ("data_dirs",), "a list of directories")
        out = []
        for i, item in enumerate(value):
            out.append(self.local_path(self.nonempty_str(item, ("data_dirs", str(i)))))
        return tuple(out)

    def baselines(self, value: Any, output: Path) -> tuple[tuple[str, Path], ...]:
        """Stored runs to copy matching pairs from: run directories (relative to this file)
        or packaged reproductions by name."""
        from workbench import resources

        if value is None:
            return ()
        if isinstance(value, str):
            value = [value]
        self.expect(value, list, ("baselines",), "a list of run directories or packaged "
                    "reproduction names")
        out = []
        for i, item in enumerate(value):
            text = self.nonempty_str(item, ("baselines", str(i)))
            p = Path(text).expanduser()
            p = p if p.is_absolute() else self.base_dir / p
            known = resources.reproductions()
            if not p.is_dir() and text in known:
                p = known[text]
            if p.resolve() == output.resolve():
                raise self.error(("baselines", str(i)), "is this config's own output "
                                 "directory (a run resumes its own results anyway)")
            if not (p / "config.yaml").is_file() or not (p / "metadata.json").is_file():
                raise self.error(("baselines", str(i)),
                                 f"{text!r} is neither a run directory (config.yaml and "
                                 "metadata.json) nor a packaged reproduction (packaged: "
                                 f"{', '.join(known)})")
            out.append((text, p.resolve()))
        return tuple(out)

    def plugins(self, value: Any) -> tuple[str, ...]:
        if value is None:
            return ()
        self.expect(value, list, ("plugins",), "a list of modules or .py files")
        specs = tuple(self.nonempty_str(item, ("plugins", str(i))) for i, item in enumerate(value))
        self.has_plugins = bool(specs)
        if specs and self.load_user_code:
            try:
                load_plugins(specs, base_dir=self.base_dir)
            except WorkbenchError as exc:
                raise self.error(("plugins",), str(exc)) from None
        return specs

    def out_of_core(self, value: Any, protocol: Any) -> dict[str, int] | None:
        """``out_of_core: true`` or ``{chunk_rows, sample, predictions}``: every protocol
        on files read in chunks — k-fold CV a task a round and the holdout in one
        (`evaluation.outofcore.kfold`: counting passes, then a scoring pass), the sampled and
        learning-curve folds from their rows gathered in a pass (`outofcore.gather_rows`),
        the prequential stream from the file's windows (`outofcore.class_known_windows`)."""
        if value is None or value is False:
            return None
        kind = protocol.get("type", "kfold") if isinstance(protocol, dict) else "kfold"
        if value is True:
            return {"chunk_rows": 65_536}
        self.expect(value, dict, ("out_of_core",), "true, or a mapping with chunk_rows "
                    "and sample")
        out = {"chunk_rows": 65_536}
        for key, item in value.items():
            if key not in ("chunk_rows", "sample", "predictions"):
                raise self.error(("out_of_core", str(key)),
                                 "unknown key (allowed: chunk_rows, sample, predictions)")
            if key == "predictions":
                if not isinstance(item, bool):
                    raise self.error(("out_of_core", key),
                                     f"expected true or false, got {_show(item)}")
                if not item and kind not in ("kfold", "holdout", "prequential"):
                    raise self.error(("out_of_core", key), "false applies to k-fold CV, "
                                     "the holdout and the prequential stream (the other "
                                     "protocols' folds are small)")
                if not item:
                    out[key] = False
                continue
            out[key] = self.positive_int(item, ("out_of_core", key))
        return out

    def splits_protocol(self, value: dict) -> ProtocolChoice:
        """``{splits: FILE, seed}``: the folds of a file (a path relative to the config's
        folder); a stored config's ``splits_sha256`` must still match the file."""
        for key in value:
            if key not in SPLITS_KEYS:
                raise self.error(("protocol", str(key)), "unknown key for a fold file "
                                 f"protocol (allowed: {', '.join(SPLITS_KEYS)})")
        if "splits" not in value:
            raise self.error(("protocol", "splits"), "missing: the fold file")
        path = self.local_path(self.nonempty_str(value["splits"], ("protocol", "splits")))
        sample = value.get("discretize_sample")
        if sample is not None:
            sample = self.positive_int(sample, ("protocol", "discretize_sample"))
        try:
            plan = protocols.SplitsFile(str(path), value.get("seed", 1))
        except FieldError as exc:
            raise self.error(("protocol", exc.field.split(".")[-1]), exc.reason) from None
        except WorkbenchError as exc:  # the fold file's own errors name the file
            raise self.error(("protocol", "splits"), str(exc)) from None
        stored = value.get("splits_sha256")
        if stored is not None and stored != plan.digest:
            raise self.error(("protocol", "splits"), f"{path} has changed since the run "
                             "that recorded it (its sha256 differs)")
        return ProtocolChoice(plan=plan, discretize_sample=sample)

    def protocol(self, value: Any, by_rows: bool = False) -> ProtocolChoice:
        if value is None:
            value = {}
        self.expect(value, dict, ("protocol",),
                    "a mapping with rounds, folds, seed, stratify, discretize_sample (or a "
                    f"'type': {', '.join(protocols.PROTOCOLS)})")
        value = dict(value)
        kind = value.pop("type", "splits" if "splits" in value else "kfold")
        if kind == "splits":
            return self.splits_protocol(value)
        if kind not in protocols.PROTOCOLS:
            raise self.error(("protocol", "type"), f"unknown protocol {_show(kind)} (choose "
                             f"{', '.join(protocols.PROTOCOLS)})")
        allowed = (*protocols.protocol_keys(kind), "discretize_sample")
        for key in value:
            if key not in allowed:
                raise self.error(("protocol", str(key)),
                                 f"unknown key for a {kind} protocol (allowed: type, "
                                 f"{', '.join(allowed)})")
        sample = value.pop("discretize_sample", None)
        if sample is not None:
            sample = self.positive_int(sample, ("protocol", "discretize_sample"))
        if kind == "kfold":
            written = dict(value)
            value = {k: v for k, v in {**PROTOCOL_DEFAULTS, **value}.items()
                     if k in protocols.protocol_keys("kfold")}
            stratify = value["stratify"]
            if not isinstance(stratify, bool):
                raise self.error(("protocol", "stratify"),
                                 f"expected true or false, got {_show(stratify)}")
            if by_rows:  # out of core: folds by row index (`splits.row_folds`)
                if stratify or written.get("assignment", "rows") != "rows":
                    raise self.error(("protocol", "stratify" if stratify else "assignment"),
                                     "out_of_core folds by row index: assignment rows, "
                                     "not stratified")
                value["assignment"] = "rows"
        if "sizes" in value:
            self.expect(value["sizes"], list, ("protocol", "sizes"),
                        "a list of increasing training sizes")
            value["sizes"] = tuple(value["sizes"])
        try:
            plan = protocols.PROTOCOLS[kind](**value)
        except FieldError as exc:
            raise self.error(("protocol", exc.field.split(".")[-1]), exc.reason) from None
        except WorkbenchError as exc:
            raise self.error(("protocol",), str(exc)) from None
        return ProtocolChoice(plan=plan, discretize_sample=sample)

    def datasets(self, value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value:
            raise self.error(
                ("datasets",),
                f"expected 'all', a size group or a non-empty list of data set slugs, "
                f"got {_show(value)}",
            )
        out: list[str] = []
        for i, item in enumerate(value):
            path = ("datasets", str(i))
            text = self.nonempty_str(item, path)
            if looks_like_path(text):  # made absolute here; its existence is checked when
                p = Path(text).expanduser()  # the data sets are resolved (`datasets.py`)
                text = str((p if p.is_absolute() else self.base_dir / p).resolve())
            if text not in out:
                out.append(text)
                self.dataset_where[text] = self.location(path)
        return tuple(out)

    def learners(self, value: Any) -> tuple[LearnerConfig, ...]:
        if isinstance(value, list) and value:  # [NB, A1DE] shorthand
            items: list[tuple[Any, Any]] = []
            for i, item in enumerate(value):
                self.nonempty_str(item, ("learners", str(i)))
                items.append((item, item))
        elif isinstance(value, dict) and value:
            items = list(value.items())
        else:
            raise self.error(
                ("learners",),
                f"expected a non-empty mapping of display name -> learner, got {_show(value)}",
            )
        out = []
        dirs: dict[str, str] = {}
        expanded = []
        for display, spec in items:
            expanded += self.sweep(str(display), spec)
        for display, spec in expanded:
            lc = self.one_learner(display, spec)
            if display in dirs.values():
                raise self.error(("learners", display), "listed twice")
            other = dirs.setdefault(safe_name(display), display)
            if other != display:
                raise self.error(("learners", display), f"display name clashes with "
                                 f"'{other}' (both are stored as '{safe_name(display)}')")
            out.append(lc)
        return tuple(out)

    def sweep(self, display: str, spec: Any) -> list[tuple[str, Any]]:
        """A learner column, or the variants of a sweep: a ``grid: {param: [values]}`` key,
        or a list given for a parameter that takes no list, gives one variant per value
        (per combination), named ``display[param=value,...]``; a one-parameter sweep is
        noted in `sweeps` for the report's figure."""
        if not isinstance(spec, dict) or tuning.TUNE_KEY in spec:  # (tuned: one learner)
            return [(display, spec)]
        params = dict(spec)
        path = ("learners", display)
        grid = params.pop("grid", None)
        if grid is not None:
            if not isinstance(grid, dict) or not grid:
                raise self.error(path + ("grid",), "expected a mapping {parameter: [values]}")
        grid = dict(grid or {})
        reg_name = params.get("learner", display)
        for key, val in list(params.items()):
            if isinstance(val, list) and key not in ("learner", registry.PREPROCESSING_KEY) \
                    and not takes_list(str(reg_name), key, val):  # (given a list: not swept)
                grid[key] = params.pop(key)
        if not grid:
            return [(display, spec)]
        for key, values in grid.items():
            if key in params:
                raise self.error(path + (str(key),), "given both as a value and in grid")
            if not isinstance(values, list) or not values or len(set(map(repr, values))) \
                    != len(values):
                raise self.error(path + ("grid", str(key)),
                                 f"expected a non-empty list of distinct values, got "
                                 f"{_show(values)}")
        out = []
        for combo in itertools.product(*grid.values()):
            chosen = dict(zip(map(str, grid), combo))
            name = display + "[" + ",".join(f"{k}={_value_text(v)}"
                                            for k, v in chosen.items()) + "]"
            out.append((name, {**params, **chosen}))
            self.variant_of[name] = display
        if len(grid) == 1:
            key = str(next(iter(grid)))
            self.sweeps[display] = {"parameter": key,
                                    "learners": {name: v for (name, _), v in
                                                 zip(out, grid[next(iter(grid))])}}
        return out

    def one_learner(self, display: str, spec: Any) -> LearnerConfig:
        path = ("learners", self.variant_of.get(display, display))
        if "/" in display or "\\" in display or display.strip() != display or not display:
            raise self.error(path, "display names must be non-empty, without '/' or spaces "
                             "at either end")
        if spec is None:
            spec = {}
        if isinstance(spec, str):
            spec = {"learner": spec}
        if not isinstance(spec, dict):
            raise self.error(
                path, f"expected a registry name or a mapping {{learner: NAME, ...}}, "
                f"got {_show(spec)}"
            )
        params = dict(spec)
        reg_name = params.pop("learner", display)
        reg_name = self.nonempty_str(reg_name, path + ("learner",))
        try:
            lspec = registry.get(reg_name)
        except WorkbenchError as exc:
            if self.has_plugins and not self.load_user_code:  # a plugin's, not loaded
                return LearnerConfig(display=display, learner=reg_name, params=params)
            raise self.error(path + ("learner",), str(exc)) from None
        allowed = set(lspec.parameters()) | {registry.PREPROCESSING_KEY}
        if tuning.TUNE_KEY in params:
            return self.tuned_learner(display, reg_name, params, allowed, path)
        for key, val in params.items():
            key = str(key)
            if key not in allowed:
                raise self.error(
                    path + (key,),
                    f"learner '{reg_name}' has no parameter '{key}' "
                    f"(parameters: {', '.join(sorted(allowed))})",
                )
            try:
                registry.create(reg_name, **{key: val})
            except WorkbenchError as exc:
                raise self.error(path + (key,), str(exc)) from None
        try:
            registry.create(reg_name, **params)
        except WorkbenchError as exc:
            raise self.error(path, str(exc)) from None
        return LearnerConfig(display=display, learner=reg_name, params=params)

    def tuned_learner(self, display: str, reg_name: str, params: dict[str, Any],
                      allowed: set[str], path: tuple[str, ...]) -> LearnerConfig:
        """A learner with ``tune``: its options and every candidate checked (each error
        naming its field), kept as one learner whose lists are the grid."""
        for key in params:
            if str(key) not in allowed | {tuning.TUNE_KEY}:
                raise self.error(path + (str(key),), f"learner '{reg_name}' has no parameter "
                                 f"'{key}' (parameters: {', '.join(sorted(allowed))})")
        try:
            fixed, grid, _ = tuning.split_tuned(params, functools.partial(takes_list, reg_name))
        except FieldError as exc:
            raise self.error(path + tuple(exc.field.split(".")), exc.reason) from None
        for cand in tuning.candidates(grid):
            try:
                registry.create(reg_name, **{**fixed, **cand})
            except WorkbenchError as exc:
                key = next(iter(cand)) if len(cand) == 1 else None
                raise self.error(path + ((key,) if key else ()),
                                 f"candidate {tuning.label(cand)}: {exc}") from None
        try:
            make_learner(reg_name, params)
        except FieldError as exc:
            raise self.error(path + tuple(exc.field.split(".")), exc.reason) from None
        return LearnerConfig(display=display, learner=reg_name, params=params)

    def baseline(self, value: Any, learners: tuple[LearnerConfig, ...], given: bool) -> str:
        names = [lc.display for lc in learners]
        if not given and value not in names:  # default NB not in the list: use the first
            return names[0]
        text = self.nonempty_str(value, ("baseline",))
        if text not in names:
            raise self.error(
                ("baseline",), f"{text!r} is not one of the learners ({', '.join(names)})"
            )
        return text


def looks_like_path(text: str) -> bool:
    """A data set item naming a file (else a catalog slug, alias, group or a name to find in
    the search path)."""
    return "/" in text or "\\" in text or text.endswith((".arff", ".arff.gz"))


# ----- helpers --------------------------------------------------------------------------------
def _effective_params(lc: LearnerConfig) -> dict[str, Any]:
    spec = registry.get(lc.learner)
    params = {**spec.parameters(), **{k: v for k, v in lc.params.items()
                                      if k != registry.PREPROCESSING_KEY}}
    pre = lc.params.get(registry.PREPROCESSING_KEY, spec.defaults.get(registry.PREPROCESSING_KEY))
    if pre is None:
        pre = getattr(spec.factory, "preprocessing", None)
    return {"learner": lc.learner, "params": _plain(params), "preprocessing": pre}


def _plain(value: Any) -> Any:
    """Plain YAML/JSON-friendly copy (tuples → lists, paths → strings)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _value_text(value: Any) -> str:
    """A swept value as it reads in a variant's name (YAML spelling for booleans/null)."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return str(value)


def _show(value: Any) -> str:
    if isinstance(value, (dict, list)):
        text = repr(value)
        text = text if len(text) <= 60 else text[:57] + "..."
        return f"{text} ({type(value).__name__})"
    if value is None:
        return "nothing (null)"
    return f"{value!r} ({type(value).__name__})"


def _is_file_spec(spec: str) -> bool:
    """A plugin given as a file (``x.py``, a path), not as a module name."""
    return spec.endswith(".py") or "/" in spec or "\\" in spec


def _relative(path: Path | str, base: Path) -> str:
    """`path` relative to the directory `base` (``..`` steps as needed; POSIX form)."""
    import os

    return Path(os.path.relpath(Path(path).resolve(), Path(base).resolve())).as_posix()
