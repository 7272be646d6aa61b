"""W/D/L records written in prose (the experiments' READMEs), tied to the committed tables.

Every record ``W/D/L`` in a README is preceded by a marker naming where it comes from::

    SKDB vs KDB1 (true-class RMSE): <!--wdl reproduction rmse_true_class SKDB | KDB1-->9/0/0

``<!--wdl RUN METRIC ROW | COL [| COLLECTION]-->``: the run folder (relative to the README),
the metric, the two learners (the record is ROW's wins/draws/losses against COL) and the
collection (default ``all``). The marker is an HTML comment, invisible where the README is
rendered. `check` lists every record that is unmarked, names a cell that does not exist, or
disagrees with ``RUN/report/tables/wdl.csv``; `fix` rewrites the records from the tables.

A number quoted from a run is tied the same way, ``<!--value RUN METRIC WHAT-->NUMBER``:

- ``METRIC DATASET LEARNER`` — the learner's summary value on the data set
  (``RUN/summary.csv``);
- ``METRIC DATASET LEARNER - OTHER`` — the difference, OTHER a learner or ``oracle`` (the
  report's a-posteriori best, ``RUN/report/tables/oracle.csv``);
- ``METRIC total LEARNER`` / ``METRIC mean LEARNER`` — over the run's data sets.

The number agrees when it is the value rounded to the decimals written (a sign is part of
it; ``−`` and ``-`` alike).

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
VALUE = re.compile(r"<!--value\s+(?P<spec>[^>]*?)\s*-->(?P<number>[+\-−]?[\d,]*\.?\d+)")


@lru_cache(maxsize=None)
def _frame(path: Path):
    import pandas as pd

    return pd.read_csv(path)


def value(readme: Path, spec: str) -> float | str:
    """The number a ``<!--value …-->`` marker names, or why there is none."""
    words = spec.split()
    if len(words) not in (4, 5, 6) or (len(words) == 6 and words[4] != "-"):
        return (f"malformed marker '<!--value {spec}-->' (want RUN METRIC DATASET LEARNER "
                "[- OTHER], or RUN METRIC total|mean LEARNER)")
    run, metric, where, learner = words[:4]
    folder = readme.parent / run
    summary = folder / "summary.csv"
    if not summary.is_file():
        return f"no table {summary}"
    df = _frame(summary.resolve())
    if metric not in df.columns:
        return f"no column {metric} in {summary}"
    if where in ("total", "mean") and len(words) == 4:
        rows = df[df["learner"] == learner][metric]
        if rows.empty:
            return f"no learner {learner} in {summary}"
        return float(rows.sum() if where == "total" else rows.mean())

    def cell(name: str) -> float | str:
        if name == "oracle":
            table = folder / "report" / "tables" / "oracle.csv"
            if not table.is_file():
                return f"no table {table}"
            o = _frame(table.resolve())
            hit = o[(o["dataset"] == where) & (o["metric"] == metric)]["value"]
        else:
            hit = df[(df["dataset"] == where) & (df["learner"] == name)][metric]
        return float(hit.iloc[0]) if len(hit) else f"no cell {metric}: {where} / {name} in {folder}"

    first = cell(learner)
    if isinstance(first, str) or len(words) == 4:
        return first
    other = cell(words[5])
    return other if isinstance(other, str) else first - other


def _written(number: str) -> tuple[float, int]:
    """A README number as (value, decimals written)."""
    text = number.replace("−", "-").replace(",", "")
    return float(text), len(text.split(".")[1]) if "." in text else 0


def _agrees(number: str, want: float) -> bool:
    got, places = _written(number)
    return abs(got - want) <= 0.5 * 10.0 ** -places + 1e-12


def _render(number: str, want: float) -> str:
    """`want` written as `number` is: its decimals, a sign when it has one (− when it
    uses −)."""
    _, places = _written(number)
    text = f"{want:+.{places}f}" if number[:1] in "+-−" else f"{want:.{places}f}"
    return text.replace("-", "−") if "−" in number else text


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
        for m in VALUE.finditer(line):
            got = value(Path(readme), m.group("spec"))
            if isinstance(got, str):
                problems.append(f"{readme}:{no}: {got}")
            elif not _agrees(m.group("number"), got):
                problems.append(f"{readme}:{no}: {m.group('number')} but the table says "
                                f"{_render(m.group('number'), got)} ({m.group('spec')})")
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

    def repl_value(m: re.Match) -> str:
        nonlocal changed
        got = value(Path(readme), m.group("spec"))
        if isinstance(got, str) or _agrees(m.group("number"), got):
            return m.group(0)
        changed += 1
        return f"<!--value {m.group('spec')}-->{_render(m.group('number'), got)}"

    out = VALUE.sub(repl_value, MARKED.sub(repl, text))
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
