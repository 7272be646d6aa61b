"""`python -m workbench datasets` — the paper's 71 data sets, where each is found, and how
the file's counts compare with the paper's Table 1; `--sources` shows where each comes from
(public source, licence, how to cite it, or why there is none) and `--verify` checks every
file found against the catalog's content checksum (ok / mismatch / no checksum).

Columns: slug, size group, where (``embedded`` = the project's ``datasets/``, else the
directory, or ``missing``), instances / attributes (incl. class) / classes in the file and
in the paper, and a flag column naming every deviation. File classes are the *declared*
count, with the number actually present in parentheses when it differs (``7 (6 used)``);
a class count is flagged only when neither matches the paper.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data-dir", action="append", default=[], metavar="DIR",
        help="extra directory to search (repeatable; after datasets/ and $WORKBENCH_DATA)",
    )
    p.add_argument(
        "--no-load", action="store_true",
        help="only locate the files, do not read them to count instances/attributes/classes",
    )
    p.add_argument("--verify", action="store_true",
                   help="check every file found against the catalog's content checksum: "
                        "ok / mismatch / no checksum (exit status 1 on a mismatch)")
    p.add_argument("--sources", action="store_true",
                   help="each data set's public source, licence and citation (or why it "
                        "has none)")


def _where(path, embedded_dir) -> str:
    return "embedded" if path.parent.resolve() == embedded_dir.resolve() else str(path.parent)


def _all_entries():
    from workbench.data.catalog import CATALOG, OTHER_PAPERS

    return CATALOG + OTHER_PAPERS


def _verify(args: argparse.Namespace) -> int:
    from workbench.data.catalog import PROJECT_DATASETS, find_dataset, verify

    counts: dict[str, int] = {}
    for e in _all_entries():
        path = find_dataset(e.slug, args.data_dir)
        if path is None:
            continue
        status, detail = verify(e.slug, path)
        counts[status] = counts.get(status, 0) + 1
        print(f"{e.slug:18s} {status:11s} {_where(path, PROJECT_DATASETS)}: {detail}")
    print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no data set found")
    return 1 if counts.get("mismatch") else 0


def _sources(args: argparse.Namespace) -> int:
    from workbench.data.fetch import SOURCES
    from workbench.data.recipes import NO_SOURCE, RECIPES, UCI_CITE

    for e in _all_entries():
        if e.slug in RECIPES:
            r = RECIPES[e.slug]
            text = (f"{r.origin.describe()} <{r.origin.address()}>"
                    + (f"; changes: {r.changes()}" if r.changes() else "")
                    + f"\n    licence: {r.licence}\n    cite: {r.cite}")
        elif e.slug in SOURCES:
            src = SOURCES[e.slug]
            text = (f"{src.base}{', '.join(src.files)}" + (f" ({src.note})" if src.note
                                                            else "")
                    + f"\n    licence: the publisher's\n    cite: {UCI_CITE}"
                    if "archive.ics.uci.edu" in src.base else
                    f"{src.base}{', '.join(src.files)}\n    licence: the publisher's")
        else:
            text = "no public source" + (f": {NO_SOURCE[e.slug]}" if e.slug in NO_SOURCE
                                         else "")
        print(f"{e.slug}: {text}")
    return 0


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from workbench.data.arff import load_arff
    from workbench.data.catalog import CATALOG, PROJECT_DATASETS, find_dataset, load_dataset
    from workbench.data.fetch import has_source
    from workbench.errors import WorkbenchError

    if args.verify:
        return _verify(args)
    if args.sources:
        return _sources(args)
    header = ("slug", "group", "where", "inst", "paper", "att", "paper", "classes", "paper",
              "flags")
    rows: list[tuple[str, ...]] = []
    found = 0
    for e in CATALOG:
        path = find_dataset(e.slug, args.data_dir)
        if path is None:
            how = (f"missing: workbench fetch {e.slug}" if has_source(e.slug)
                   else "missing: no public source (datasets --sources)")
            rows.append((e.slug, e.group, "missing", "-", str(e.instances), "-",
                         str(e.attributes), "-", str(e.classes), how))
            continue
        found += 1
        where = _where(path, PROJECT_DATASETS)
        if args.no_load:
            rows.append((e.slug, e.group, where, "?", str(e.instances), "?",
                         str(e.attributes), "?", str(e.classes), ""))
            continue
        if path.suffix == ".parquet":  # (big: its metadata, not its rows)
            n, att = _parquet_shape(path)
            flags = [f for f, bad in ((f"instances {n} vs {e.instances}", n != e.instances),
                                      (f"attributes {att} vs {e.attributes}",
                                       att != e.attributes)) if bad]
            rows.append((e.slug, e.group, where, str(n), str(e.instances), str(att),
                         str(e.attributes), "?", str(e.classes), "; ".join(flags)))
            continue
        try:
            d = load_arff(path, name=e.slug) if path.name.endswith((".arff", ".arff.gz")) \
                else load_dataset(path)
        except WorkbenchError as exc:
            rows.append((e.slug, e.group, where, "-", str(e.instances), "-",
                         str(e.attributes), "-", str(e.classes), f"ERROR: {exc}"))
            continue
        n, att, declared = d.n_instances, d.n_attributes + 1, d.n_classes
        present = int(np.unique(d.y[d.y >= 0]).size)
        flags = []
        if n != e.instances:
            flags.append(f"instances {n} vs {e.instances}")
        if att != e.attributes:
            flags.append(f"attributes {att} vs {e.attributes}")
        if e.classes not in (declared, present):
            flags.append(f"classes {declared} vs {e.classes}")
        classes = str(declared) if present == declared else f"{declared} ({present} used)"
        rows.append((e.slug, e.group, where, str(n), str(e.instances), str(att),
                     str(e.attributes), classes, str(e.classes), "; ".join(flags)))

    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    right = {3, 4, 5, 6, 7, 8}
    out = sys.stdout

    def line(r: tuple[str, ...]) -> str:
        cells = [r[i].rjust(widths[i]) if i in right else r[i].ljust(widths[i])
                 for i in range(len(widths))]
        return ("  ".join(cells) + "  " + r[-1]).rstrip()

    print(line(header), file=out)
    for r in rows:
        print(line(r), file=out)
    missing = len(CATALOG) - found
    print(f"{len(CATALOG)} catalog entries, {found} found, {missing} missing", file=out)
    return 0


def _parquet_shape(path) -> tuple[int, int]:
    """A Parquet file's rows and columns (the class included), from its footer."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    return meta.num_rows, meta.num_columns
