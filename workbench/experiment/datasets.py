"""The data-set resolution step: a config's `datasets` items (slugs, aliases, groups,
files) expanded into the files they name, looked up on disk once, before any work
(`run_experiment` calls `resolve_datasets`). The config itself stays pure data."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from workbench.data import catalog
from workbench.errors import ConfigError, WorkbenchError
from workbench.experiment.config import ALL, GROUPS, DatasetRef, ExperimentConfig, \
    looks_like_path


def _check_items(config: ExperimentConfig) -> None:
    """Every item names something: a group, a catalog slug or alias, a file that exists,
    or a name found in the search path; else one error naming the config line."""
    for item in config.datasets:
        where = config.dataset_where.get(item, f"{config.source or '<config>'}: datasets")
        if item in (ALL, *GROUPS) or catalog.get_entry(item) is not None:
            continue
        if looks_like_path(item):
            if not Path(item).is_file():
                raise ConfigError(f"{where}: data set file not found: {item}")
            continue
        try:
            found = catalog.find_dataset(item, extra_dirs=search_dirs(config)) is not None
        except WorkbenchError:
            found = False
        if not found:
            raise ConfigError(
                f"{where}: unknown data set {item!r} (not a catalog slug, alias or group "
                f"({ALL}, {', '.join(GROUPS)}), and not found in the search path)")


def search_dirs(config: ExperimentConfig) -> tuple[Path, ...]:
    """A config's extra search folders: its `data_dirs`, then its own folder (a data set
    named by its bare file name beside the config is found)."""
    own = (Path(config.source).resolve().parent,) if config.source else ()
    return (*config.data_dirs, *own)


def _canonical_slug(slug: str) -> str:
    """The catalog slug for `slug` (resolving aliases such as vote → house-votes-84)."""
    for attr in ("resolve_slug", "canonical_slug"):
        fn = getattr(catalog, attr, None)
        if callable(fn):
            try:
                out = fn(slug)
            except WorkbenchError:
                return slug
            if isinstance(out, str):
                return out
            return getattr(out, "slug", slug)
    aliases = getattr(catalog, "ALIASES", None)
    if isinstance(aliases, Mapping):
        return aliases.get(slug, slug)
    return slug


def resolve_datasets(
    config: ExperimentConfig,
) -> tuple[list[DatasetRef], list[str]]:
    """Expand `all` / groups / slugs into data sets found on disk, largest first.

    Returns (found, missing): missing are catalog slugs with no file in the search path
    (listed once by the caller and skipped, not fatal).
    """
    by_slug = {e.slug: e for e in catalog.CATALOG + catalog.OTHER_PAPERS}
    _check_items(config)
    wanted = _expanded(config)
    found: list[DatasetRef] = []
    missing: list[str] = []
    for slug in wanted:
        if looks_like_path(slug):
            p = Path(slug)
            found.append(DatasetRef(_stem(p), p, None))
            continue
        path = catalog.find_dataset(slug, extra_dirs=search_dirs(config))
        if path is None:
            missing.append(slug)
            continue
        entry = by_slug.get(slug)
        found.append(DatasetRef(slug, Path(path), entry.instances if entry else None))
    # largest first (catalog size, else file size as a proxy), ties by name
    def size_key(ref: DatasetRef) -> tuple[float, str]:
        n = ref.n_instances
        if n is None:
            try:
                n = ref.path.stat().st_size / 100.0
            except OSError:
                n = 0
        return (-float(n), ref.name)

    found.sort(key=size_key)
    by_name: dict[str, DatasetRef] = {}
    for ref in found:
        other = by_name.setdefault(ref.name, ref)
        if other is not ref and Path(other.path).resolve() != Path(ref.path).resolve():
            raise ConfigError(
                f"{config.source or '<config>'}: datasets: two data sets are named "
                f"'{ref.name}': {other.path} and {ref.path}; their results would be stored "
                "as one (rename a file, or list only one)")
    found = [r for r in found if by_name[r.name] is r]
    return found, missing


def _expanded(config: ExperimentConfig) -> list[str]:
    """The config's `datasets` items expanded: `all` and the size groups into catalog
    slugs, aliases resolved, files kept as given; in order, each once."""
    wanted: list[str] = []
    for item in config.datasets:
        if item == ALL:
            names = [e.slug for e in catalog.CATALOG]
        elif item in GROUPS:
            names = [e.slug for e in catalog.CATALOG if e.group == item]
        elif looks_like_path(item):
            names = [item]
        else:
            names = [_canonical_slug(item)]
        wanted += [n for n in names if n not in wanted]
    return wanted


def named_datasets(config: ExperimentConfig) -> list[str]:
    """The catalog slugs a config names (groups expanded, aliases resolved; files left
    out), whether or not they are found: what ``workbench fetch CONFIG`` downloads."""
    return [n for n in _expanded(config) if not looks_like_path(n)]


def fetch_hint(config: ExperimentConfig) -> str:
    """How to get a config's missing data sets, for the "not found" line: the fetch
    command for this config (its path as given, relative to the working folder where it
    can be) and the search path variable."""
    import os

    source = config.source
    if source is None:
        target = "CONFIG"
    else:
        try:
            target = os.path.relpath(source)
        except ValueError:  # (another drive)
            target = str(source)
        if target.startswith(".." + os.sep + ".."):
            target = str(source)
    return (f"download them: workbench fetch {target}; or add the folder holding your "
            "copies to $WORKBENCH_DATA")


def canonical_dataset_names(names: list[str]) -> list[str]:
    """Canonical slugs for user-given names (aliases resolved)."""
    return [_canonical_slug(n) for n in names]


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".arff.gz", ".arff"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem
