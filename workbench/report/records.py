"""W/D/L records written in prose (the experiments' READMEs), tied to the committed tables.

Every record ``W/D/L`` in a README is preceded by a marker naming where it comes from::

    SKDB vs KDB1 (true-class RMSE): <!--wdl reproduction rmse_true_class SKDB | KDB1-->9/0/0

``<!--wdl RUN METRIC ROW | COL [| COLLECTION]-->``: the run folder (relative to the README),
the metric, the two learners (the record is ROW's wins/draws/losses against COL) and the
collection (default ``all``). The marker is an HTML comment, invisible where the README is
rendered. `check` lists every record that is unmarked, names a cell that does not exist, or
disagrees with ``RUN/report/tables/wdl.csv``; `fix` rewrites the records from the tables.

    python -m workbench.report.records experiments/*/README.md [--fix]
"""

from __future__ import annotations

import argparse
import re
import sys
from functools import lru_cache
from pathlib import Path

RECORD = re.compile(r"(?<![\w/.])(\d+)/(\d+)/(\d+)(?![\w/])")
MARKED = re.compile(r"<!--wdl\s+(?P<spec>[^>]*?)\s*-->(?P<record>\d+/\d+/\d+)")


@lru_cache(maxsize=None)
def _table(path: Path) -> dict[tuple[str, str, str, str], tuple[int, int, int]]:
    import pandas as pd

    df = pd.read_csv(path, dtype={"row": str, "col": str})
    out = {}
    for r in df.itertuples(index=False):
        w, d, l_ = int(r.wins), int(r.draws), int(r.losses)
        out[(r.metric, r.collection, r.row, r.col)] = (w, d, l_)
        out.setdefault((r.metric, r.collection, r.col, r.row), (l_, d, w))
    return out


def _parse(spec: str) -> tuple[str, str, str, str, str] | None:
    """(run, metric, row, col, collection) of a marker's text, None when malformed."""
    head, _, rest = spec.partition(" ")
    metric, _, rest = rest.strip().partition(" ")
    parts = [p.strip() for p in rest.split("|")]
    if not head or not metric or len(parts) not in (2, 3) or not all(parts):
        return None
    return head, metric, parts[0], parts[1], parts[2] if len(parts) == 3 else "all"


def expected(readme: Path, spec: str) -> tuple[int, int, int] | str:
    """The record a marker names, or why there is none."""
    parsed = _parse(spec)
    if parsed is None:
        return f"malformed marker '<!--wdl {spec}-->' (want RUN METRIC ROW | COL [| COLLECTION])"
    run, metric, row, col, coll = parsed
    table = readme.parent / run / "report" / "tables" / "wdl.csv"
    if not table.is_file():
        return f"no table {table}"
    cell = _table(table.resolve()).get((metric, coll, row, col))
    return cell if cell is not None else f"no cell {metric}/{coll}: {row} vs {col} in {table}"


def check(readme: Path) -> list[str]:
    """Every problem with the records of one README: ``file:line: what``."""
    problems = []
    for no, line in enumerate(Path(readme).read_text(encoding="utf-8").splitlines(), 1):
        marked = {m.start("record") for m in MARKED.finditer(line)}
        for m in RECORD.finditer(line):
            if m.start() not in marked:
                problems.append(f"{readme}:{no}: record {m.group(0)} has no <!--wdl ...--> "
                                "marker naming its table cell")
        for m in MARKED.finditer(line):
            want = expected(Path(readme), m.group("spec"))
            if isinstance(want, str):
                problems.append(f"{readme}:{no}: {want}")
            elif m.group("record") != "/".join(map(str, want)):
                problems.append(f"{readme}:{no}: {m.group('record')} but the table says "
                                f"{'/'.join(map(str, want))} ({m.group('spec')})")
    return problems


def fix(readme: Path) -> int:
    """Rewrite every marked record from its table; returns how many changed."""
    text = Path(readme).read_text(encoding="utf-8")
    changed = 0

    def repl(m: re.Match) -> str:
        nonlocal changed
        want = expected(Path(readme), m.group("spec"))
        if isinstance(want, str):
            return m.group(0)
        new = "/".join(map(str, want))
        changed += new != m.group("record")
        return f"<!--wdl {m.group('spec')}-->{new}"

    out = MARKED.sub(repl, text)
    if changed:
        Path(readme).write_text(out, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="check (or --fix) the W/D/L records of READMEs")
    ap.add_argument("readmes", nargs="+", type=Path)
    ap.add_argument("--fix", action="store_true", help="rewrite the records from the tables")
    args = ap.parse_args(argv)
    if args.fix:
        for r in args.readmes:
            print(f"{r}: {fix(r)} record(s) rewritten")
    problems = [p for r in args.readmes for p in check(r)]
    print("\n".join(problems) or "every record agrees with its table")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
