"""KDB and SKDB against Petal (Webb's C++), paired in one run: train + classify CPU.

    PETAL=/path/to/petal python benchmarks/bench_vs_petal.py [--datasets adult ...]
        [--repeats 3] [--seed 1] [--fresh]

Per data set (default: adult connect-4 letter splice, found along the catalog search path,
e.g. ``WORKBENCH_DATA=../shared/datasets/fetched``): a seeded 50/50 split, MDL fitted on
the training half, both halves written in Petal's own format (a metadata file naming every
value, comma-separated data, the class last). Each row pairs one of our learners with
Petal's (``kdb +k2``, ``kdb +k5``, ``selective-kdb +k5 +selectiveK`` — k and attributes
selected, as our SKDB — and ``selective-kdb +k5`` — attributes only, as our SKDB-atts; Petal
has no TAN) on the same halves:

- ours: `time.process_time` around `fit` and `predict_proba` (kernels compiled before,
  and the halves' value codes — the learners' input layout, which a Dataset makes once
  and keeps, `Dataset.column_codes` — made by that first call too: Petal's parsing of its
  files into its codes is left out of its side below). With ``--fresh`` every repeat
  runs on fresh Datasets of the halves, so ours also converts their 8-byte values to
  codes, as a first fit does;
- Petal: the CPU of its whole process (user + sys of the child) running ``-t test`` with
  that learner, **minus** what reading costs it: Petal streams its files, parsing the
  training file once per pass (KDB 2 passes, selective KDB 3, from its source) and the
  test file once; Petal's ``-z`` action (data statistics: one parse of a file, a few
  counts per row) measures one parse of each half, and ``-z`` on a one-row file the
  start-up (metadata, loading). Petal's learner = whole − (start-up + passes · train
  parse + test parse): its counting, structure learning and classification, as ours.

(An earlier version subtracted Petal's naive Bayes run instead, which on letter costs
more than its KDB2 — NB also allocates pair tables — and left KDB2 at the 1 ms floor.)

The repeats are interleaved (Petal, its reading, ours, …); every quantity is the minimum
over the repeats. The table prints Petal's whole process (whole_s), its learner (petal_s)
and ours (ours_s), ratio = ours / Petal's learner (< 1: we are faster), and Petal's test
error next to ours (the same classifier should make about the same errors).

Building Petal (outside this repository): fetch ``ddd-ctrl/petal`` and run ``make`` in it
(g++, -O3). With a current g++, ``extLearnVW.cpp`` needs ``#include <unistd.h>``, and if
the link step trips over the tree's ``petal/`` directory, link by hand: ``gcc -O3 -c
lbfgs.c && g++ -o petal.bin *.o``. No code of Petal is part of this repository.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


HERE = Path(__file__).resolve().parent
DATASETS = ["adult", "connect-4", "letter", "splice"]
ROWS = [("KDB2", ["-lkdb", "+k2"], 2), ("KDB5", ["-lkdb", "+k5"], 2),
        ("SKDB", ["-lselective-kdb", "+k5", "+selectiveK"], 3),
        ("SKDB-atts", ["-lselective-kdb", "+k5"], 3)]  # (ours, Petal's learner, its passes)
# SKDB selects both k and the attributes (Petal: ``+selectiveK``); SKDB-atts only the
# attributes at k = 5 (Petal's selective-kdb without it): like with like, the same errors
# (Petal's learner list has no TAN: ``petal … -ltan`` says "Learner tan is not supported")


def write_petal(train, test, meta: Path, train_path: Path, test_path: Path) -> None:
    """Both halves (all nominal) in Petal's format: metadata with values v0, v1, … per
    attribute (plus `?` as a value where either half has a missing one: our KDB family
    treats `?` as a value too) and the class last, then comma-separated rows."""
    codes = [train.codes(), test.codes()]
    missing = (codes[0] < 0).any(axis=0) | (codes[1] < 0).any(axis=0)
    lines = [f"a{i}: " + ",".join([f"v{j}" for j in range(max(a.cardinality, 1))]
                                  + (["?"] if missing[i] else []))
             for i, a in enumerate(train.attributes)]
    lines.append(":class:cls: " + ",".join(f"c{k}" for k in range(train.n_classes)))
    meta.write_text("\n".join(lines) + "\n")
    for data, c, path in ((train, codes[0], train_path), (test, codes[1], test_path)):
        with path.open("w") as fh:
            for r in range(c.shape[0]):
                vals = ["?" if v < 0 else f"v{v}" for v in c[r]]
                fh.write(",".join(vals) + f",c{int(data.y[r])}\n")


def petal_cpu(petal: str, meta: Path, train: Path, args: list[str]
              ) -> tuple[float, float | None]:
    """CPU seconds of one Petal process (user + sys) and the test error it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([petal, str(meta), str(train), *args],
                         capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    m = re.search(r"0-1 loss\s*[=:]\s*([0-9.]+)", out, re.I)
    return cpu, (float(m.group(1)) if m else None)


def petal_reading(petal: str, meta: Path, train: Path, test: Path, one: Path
                  ) -> tuple[float, float, float]:
    """(start-up, one parse of the training half, one of the test half), CPU seconds:
    Petal's ``-z`` (statistics) on a one-row file, on each half."""
    z1 = petal_cpu(petal, meta, one, ["-z"])[0]
    return z1, petal_cpu(petal, meta, train, ["-z"])[0] - z1, \
        petal_cpu(petal, meta, test, ["-z"])[0] - z1


def ours_cpu(name: str, train, test, fresh: bool = False) -> tuple[float, float]:
    from workbench.learners.registry import create

    if fresh:  # (the same arrays, nothing kept: the codes made inside the timing)
        train, test = train.replace(), test.replace()
    c0 = time.process_time()
    proba = create(name).fit(train).predict_proba(test)
    cpu = time.process_time() - c0
    return cpu, float((proba.argmax(1) != test.y).mean())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=DATASETS)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fresh", action="store_true",
                    help="ours on fresh Datasets each repeat (value codes made each time)")
    args = ap.parse_args(argv)
    petal = os.environ.get("PETAL")
    if not petal or not Path(petal).is_file():
        print("error: set PETAL to the petal executable (see the docstring)", file=sys.stderr)
        return 2
    from halves import each_split

    hdr = (f"{'data set':<10} {'learner':<9} {'whole_s':>8} {'petal_s':>8} {'ours_s':>8} "
           f"{'ratio':>6} {'petal_err':>9} {'ours_err':>8}")
    print(hdr)
    print("-" * len(hdr), flush=True)
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for slug, train, test in each_split(args.datasets, args.seed, 10):
            meta, trf, tef = tmp / "meta.txt", tmp / "train.csv", tmp / "test.csv"
            one = tmp / "one.csv"
            write_petal(train, test, meta, trf, tef)
            one.write_text(trf.read_text().split("\n", 1)[0] + "\n")
            for ours, learner, passes in ROWS:
                ours_cpu(ours, train, test)  # compile / load the kernels
                whole, reading, mine, perr, oerr = [], [], [], None, None
                for _ in range(args.repeats):  # interleaved
                    full, perr = petal_cpu(petal, meta, trf, ["-t" + str(tef), *learner])
                    if perr is None:
                        break
                    whole.append(full)
                    reading.append(petal_reading(petal, meta, trf, tef, one))
                    cpu, oerr = ours_cpu(ours, train, test, args.fresh)
                    mine.append(cpu)
                if perr is None:
                    print(f"{slug:<10} {ours:<9} (Petal printed no 0-1 loss for "
                          f"{' '.join(learner)}: skipped)", flush=True)
                    continue
                start, parse_tr, parse_te = np.min(np.array(reading), axis=0)
                theirs = min(whole) - (start + passes * parse_tr + parse_te)
                ratio = min(mine) / theirs
                print(f"{slug:<10} {ours:<9} {min(whole):8.4f} {theirs:8.4f} {min(mine):8.4f} "
                      f"{ratio:6.2f} {perr:9.4f} {oerr:8.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
