"""`python -m workbench fetch ...` — download catalog data sets from their public sources
into the cache (``$WORKBENCH_CACHE``, default ~/.cache/workbench/datasets), where every
command and config then finds them (`workbench.data.fetch`).

    workbench fetch                        the data sets with a public source, and where
    workbench fetch adult covtype          these data sets
    workbench fetch --paper pakdd13        every data set of a paper's configs not found yet
    workbench fetch configs/mine.yaml      every data set a config names not found yet

Each data set is checked against the catalog's content (`workbench datasets --verify`
checks what is on the search path); one connection at a time; an interrupted fetch is
resumed by the next one.
"""

from __future__ import annotations

import argparse

PAPERS = ("pakdd13", "pakdd14", "salem", "jmlr16", "aoard15")
"""The five papers; ``--paper P`` takes the built-in configs named P or P-…"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("slugs", nargs="*", metavar="SLUG|CONFIG",
                   help="data sets, or config files whose data sets to download (none: "
                        "list the data sets with a public source)")
    p.add_argument("--paper", choices=PAPERS, action="append", default=[],
                   help="every data set of this paper's built-in configs (repeatable)")
    p.add_argument("--force", action="store_true", help="download again even if cached")
    p.add_argument("--mirror", metavar="URL",
                   help="base address replacing every publisher's (a mirror with the same "
                        "paths); also $WORKBENCH_FETCH_BASE")


def _is_config(text: str) -> bool:
    return text.lower().endswith((".yaml", ".yml"))


def _config_slugs(path) -> list[str]:
    from workbench.experiment.config import load_config
    from workbench.experiment.datasets import named_datasets

    return named_datasets(load_config(path))


def _paper_slugs(paper: str) -> list[str]:
    from workbench import resources

    out: list[str] = []
    for name in resources.config_names():
        if name == paper or name.startswith(paper + "-"):
            out += [s for s in _config_slugs(resources.config_path(name)) if s not in out]
    return out


def _listing() -> int:
    from workbench.data.fetch import SOURCES, mirror
    from workbench.resources import cache_dir
    from workbench.data.recipes import NO_SOURCE, RECIPES

    for slug in sorted([*RECIPES, *SOURCES]):
        if slug in RECIPES:
            r = RECIPES[slug]
            where, what = r.origin.address(), r.origin.describe()
        else:
            src = SOURCES[slug]
            where, what = src.base, ", ".join(src.files)
        print(f"{slug:18s} {what}  <{where}>")
    for slug, why in NO_SOURCE.items():
        print(f"{slug:18s} no public source: {why}")
    print(f"cache: {cache_dir()}" + (f"; mirror: {mirror()}" if mirror() else ""))
    return 0


def run(args: argparse.Namespace) -> int:
    import os

    from workbench import log
    from workbench.data.catalog import find_dataset, resolve_slug
    from workbench.data.fetch import BASE_ENV, fetch, has_source
    from workbench.data.recipes import NO_SOURCE
    from workbench.errors import WorkbenchError

    if args.mirror:
        os.environ[BASE_ENV] = args.mirror
    if not args.slugs and not args.paper:
        return _listing()
    named = [s for s in args.slugs if not _is_config(s)]
    wanted: list[str] = [resolve_slug(s) for s in named]
    whole = bool(args.paper) or len(named) < len(args.slugs)  # "what is not found yet"
    for paper in args.paper:
        wanted += _paper_slugs(paper)
    for path in (s for s in args.slugs if _is_config(s)):
        wanted += _config_slugs(path)
    wanted = list(dict.fromkeys(wanted))
    fetched, present, unsourced, failed = [], [], [], []
    for slug in wanted:
        found = find_dataset(slug)
        if found is not None and not args.force and (whole or slug not in named):
            present.append(slug)
            log.note(f"{slug}: found ({found})", log.VERBOSE)
            continue
        if not has_source(slug):
            if not whole:
                fetch(slug)  # (raises: one line naming the reason)
            unsourced.append(slug)
            log.note(f"{slug}: no public source"
                     + (f" ({NO_SOURCE[slug]})" if slug in NO_SOURCE else ""))
            continue
        log.note(f"fetching {slug} ...")
        try:
            print(fetch(slug, force=args.force))
            fetched.append(slug)
        except WorkbenchError as exc:
            if not whole:
                raise
            failed.append(slug)
            text = str(exc)
            log.note(f"error: {text if text.startswith('fetch ') else f'fetch {slug}: {text}'}",
                     log.QUIET)
    if whole:
        parts = [f"{len(fetched)} fetched", f"{len(present)} already found"]
        if unsourced:
            parts.append(f"{len(unsourced)} without a public source "
                         f"({', '.join(unsourced)})")
        if failed:
            parts.append(f"{len(failed)} failed ({', '.join(failed)})")
        log.note(f"{len(wanted)} data sets: " + "; ".join(parts), log.QUIET)
    return 1 if failed else 0
