"""W/D/L records written in prose (the experiments' READMEs), tied to the committed tables.

Every record ``W/D/L`` in a README is preceded by a marker naming where it comes from::

    SKDB vs KDB1 (true-class RMSE): <!--wdl reproduction rmse_true_class SKDB | KDB1-->9/0/0

``<!--wdl RUN METRIC ROW | COL [| COLLECTION]-->``: the run folder (relative to the README),
the metric, the two learners (the record is ROW's wins/draws/losses against COL) and the
collection (default ``all``). The marker is an HTML comment, invisible where the README is
rendered. `check` lists every record that is unmarked, names a cell that does not exist, or
disagrees with ``RUN/report/tables/wdl.csv``; `fix` rewrites the records from the tables.

A number quoted from a run is tied the same way, ``<!--value RUN METRIC WHERE EXPR-->NUMBER``.
METRIC is a column of ``RUN/summary.csv`` (``a+b``: the sum of two columns); EXPR is a
learner ``L``, a difference ``L - M`` (M a learner or ``oracle``, the report's a-posteriori
best, ``RUN/report/tables/oracle.csv``), a ratio ``L / M`` or a saving ``1 - L / M``; WHERE
is

- a data set — EXPR on it;
- ``DATASET@N`` — EXPR at N training rows of a learning curve
  (``RUN/report/tables/learning_curves.csv``);
- ``total`` — EXPR of the learners' sums over the data sets (``*``: every learner);
- ``mean``, ``median``, ``min``, ``max`` — of EXPR's per-data-set values;
- ``rank`` — the learner's average rank (``RUN/report/tables/ranks.csv``, all data sets).

A count or total from one of the report's tables is ``<!--value RUN TABLE.csv COLUMN
[KEY=V1,V2 …]-->NUMBER``: COLUMN summed over the rows of ``RUN/report/tables/TABLE.csv``
whose KEY is one of the values listed (every filter must hold; at least one row).

A data set named in prose as where a minimum or maximum falls is tied by
``<!--name RUN METRIC argmin|argmax EXPR-->DATASET``.

The number agrees when it is the value rounded to the decimals written (a sign is part of
it; ``−`` and ``-`` alike); a number followed by ``%``, ``GB`` or ``MB`` is read as a
percentage, 10⁹ or 10⁶ (bytes).

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
VALUE = re.compile(r"<!--value\s+(?P<spec>[^>]*?)\s*-->(?P<number>[+\-−]?[\d,]*\.?\d+)"
                   r"(?P<unit>\s?(?:%|GB|MB)(?!\w))?")
SCALE = {"%": 100.0, "GB": 1e-9, "MB": 1e-6}
"""A unit written after a quoted number: the value is shown times this."""
NAME = re.compile(r"<!--name\s+(?P<spec>[^>]*?)\s*-->(?P<name>[\w.\-]+)")


@lru_cache(maxsize=None)
def _frame(path: Path):
    import pandas as pd

    return pd.read_csv(path)


def _expr(words: list[str]) -> tuple[str, str | None, str] | None:
    """EXPR as (L, M, operation), None when malformed."""
    if len(words) == 1:
        return words[0], None, ""
    if len(words) == 3 and words[1] in ("-", "/"):
        return words[0], words[2], words[1]
    if len(words) == 5 and words[:2] == ["1", "-"] and words[3] == "/":
        return words[2], words[4], "saving"
    return None


def _combine(op: str, a: float, b: float | None) -> float:
    if op == "-":
        return a - b
    if op == "/":
        return a / b
    if op == "saving":
        return 1.0 - a / b
    return a


def _per_dataset(folder: Path, df, metric: str, learner: str):
    """The learner's METRIC by data set (a pandas Series), or why there is none."""
    if learner == "oracle":
        table = folder / "report" / "tables" / "oracle.csv"
        if not table.is_file():
            return f"no table {table}"
        o = _frame(table.resolve())
        o = o[o["metric"] == metric]
        return o.set_index("dataset")["value"].astype(float)
    rows = df if learner == "*" else df[df["learner"] == learner]
    if rows.empty:
        return f"no learner {learner} in {folder / 'summary.csv'}"
    cols = metric.split("+")
    return rows.groupby("dataset", sort=False)[cols].sum().sum(axis=1).astype(float)


def _evaluate(readme: Path, spec: str):
    """(per-data-set values as a Series, WHERE) for a marker's text, a float for the forms
    with one value, or why there is none (a str)."""
    words = spec.split()
    form = ("RUN METRIC DATASET|DATASET@N|total|mean|median|min|max|rank|argmin|argmax "
            "L [- M | / M] or 1 - L / M")
    parsed = _expr(words[3:]) if len(words) >= 4 else None
    if parsed is None:
        return f"malformed marker '{spec}' (want {form})"
    run, metric, where = words[:3]
    first, second, op = parsed
    folder = readme.parent / run
    if where == "rank":
        table = folder / "report" / "tables" / "ranks.csv"
        if not table.is_file():
            return f"no table {table}"
        r = _frame(table.resolve())
        hit = r[(r["metric"] == metric) & (r["collection"] == "all")
                & (r["learner"] == first)]["average_rank"]
        return float(hit.iloc[0]) if len(hit) and not op else \
            f"no rank {metric}: {first} in {table}"
    if "@" in where:
        table = folder / "report" / "tables" / "learning_curves.csv"
        if not table.is_file():
            return f"no table {table}"
        c = _frame(table.resolve())
        name, _, n = where.partition("@")
        out = []
        for learner in (first, second)[:2 if op else 1]:
            hit = c[(c["dataset"] == name) & (c["n_train"].astype(str) == n)
                    & (c["metric"] == metric) & (c["learner"] == learner)]["value"]
            if not len(hit):
                return f"no point {metric}: {name} / {learner} at {n} rows in {table}"
            out.append(float(hit.iloc[0]))
        return _combine(op, out[0], out[1] if op else None)
    summary = folder / "summary.csv"
    if not summary.is_file():
        return f"no table {summary}"
    df = _frame(summary.resolve())
    missing = [c for c in metric.split("+") if c not in df.columns]
    if missing:
        return f"no column {missing[0]} in {summary}"
    series = [_per_dataset(folder, df, metric, name) for name in (first, second) if name]
    for x in series:
        if isinstance(x, str):
            return x
    if where == "total":
        return _combine(op, float(series[0].sum()), float(series[1].sum()) if op else None)
    per = _combine(op, series[0], series[1] if op else None)
    if where in ("mean", "median", "min", "max", "argmin", "argmax"):
        per = per.dropna()
        return per, where
    for learner, x in zip((first, second), series):
        if where not in x.index:
            return f"no cell {metric}: {where} / {learner} in {folder}"
    return float(per[where])


def _table_sum(readme: Path, words: list[str]) -> float | str:
    """``RUN TABLE.csv COLUMN [KEY=V1,V2 …]``: COLUMN summed over the matching rows."""
    if len(words) < 3 or any("=" not in w for w in words[3:]):
        return (f"malformed marker '{' '.join(words)}' (want RUN TABLE.csv COLUMN "
                "[KEY=V1,V2 ...])")
    table = readme.parent / words[0] / "report" / "tables" / words[1]
    if not table.is_file():
        return f"no table {table}"
    df = _frame(table.resolve())
    rows = df
    for w in words[3:]:
        key, _, values = w.partition("=")
        if key not in df.columns:
            return f"no column {key} in {table}"
        rows = rows[rows[key].astype(str).isin(values.split(","))]
    if words[2] not in df.columns:
        return f"no column {words[2]} in {table}"
    if rows.empty:
        return f"no row of {table} has {' '.join(words[3:])}"
    return float(rows[words[2]].astype(float).sum())


def value(readme: Path, spec: str) -> float | str:
    """The number a ``<!--value …-->`` marker names, or why there is none."""
    words = spec.split()
    if len(words) > 1 and words[1].endswith(".csv"):
        return _table_sum(readme, words)
    got = _evaluate(readme, spec)
    if isinstance(got, tuple):
        per, where = got
        if where.startswith("arg"):
            return f"'{where}' names a data set: use <!--name {spec}-->"
        return float(getattr(per, where)())
    return got


def name(readme: Path, spec: str) -> tuple[str | None, str | None]:
    """(the data set a ``<!--name RUN METRIC argmin|argmax EXPR-->`` marker names, None) or
    (None, why there is none)."""
    got = _evaluate(readme, spec)
    if isinstance(got, str):
        return None, got
    if not isinstance(got, tuple) or not got[1].startswith("arg"):
        return None, f"'{spec}' does not name a data set (WHERE argmin or argmax)"
    per, where = got
    return str(per.idxmin() if where == "argmin" else per.idxmax()), None


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
            got = _quoted(Path(readme), m)
            if isinstance(got, str):
                problems.append(f"{readme}:{no}: {got}")
            elif not _agrees(m.group("number"), got):
                problems.append(f"{readme}:{no}: {m.group('number')} but the table says "
                                f"{_render(m.group('number'), got)} ({m.group('spec')})")
        for m in NAME.finditer(line):
            want_name, why = name(Path(readme), m.group("spec"))
            if why is not None:
                problems.append(f"{readme}:{no}: {why}")
            elif m.group("name") != want_name:
                problems.append(f"{readme}:{no}: {m.group('name')} but the table says "
                                f"{want_name} ({m.group('spec')})")
    return problems


def _quoted(readme: Path, m: re.Match) -> float | str:
    """The value a VALUE match should show (`SCALE`d when a unit follows it)."""
    got = value(readme, m.group("spec"))
    unit = (m.group("unit") or "").strip()
    return got * SCALE[unit] if unit and not isinstance(got, str) else got


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
        got = _quoted(Path(readme), m)
        if isinstance(got, str) or _agrees(m.group("number"), got):
            return m.group(0)
        changed += 1
        return (f"<!--value {m.group('spec')}-->{_render(m.group('number'), got)}"
                f"{m.group('unit') or ''}")

    def repl_name(m: re.Match) -> str:
        nonlocal changed
        want_name, _ = name(Path(readme), m.group("spec"))
        if want_name is None or want_name == m.group("name"):
            return m.group(0)
        changed += 1
        return f"<!--name {m.group('spec')}-->{want_name}"

    out = NAME.sub(repl_name, VALUE.sub(repl_value, MARKED.sub(repl, text)))
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
