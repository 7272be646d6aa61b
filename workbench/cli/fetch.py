"""`python -m workbench fetch SLUG ...` — download catalog data sets from their public
sources into the cache (``$WORKBENCH_CACHE``, default ~/.cache/workbench/datasets), where
every command and config then finds them (`workbench.data.fetch`)."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("slugs", nargs="*", metavar="SLUG",
                   help="data sets to download (none: list the ones with a known source)")
    p.add_argument("--force", action="store_true", help="download again even if cached")


def run(args: argparse.Namespace) -> int:
    from workbench import log
    from workbench.data.catalog import resolve_slug
    from workbench.data.fetch import SOURCES, cache_dir, fetch

    if not args.slugs:
        for slug, src in SOURCES.items():
            print(f"{slug:15s} {src.base}{', '.join(src.files)}"
                  + (f"  ({src.note})" if src.note else ""))
        print(f"cache: {cache_dir()}")
        return 0
    for slug in args.slugs:
        log.note(f"fetching {slug} ...")
        print(fetch(resolve_slug(slug), force=args.force))
    return 0
