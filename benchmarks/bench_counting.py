"""Counting and loading at scale: real data sets replicated to 1 M+ rows.

    python benchmarks/bench_counting.py [--datasets adult connect-4] [--rows 1000000]
        [--learners A1DE A2DE] [--n-jobs 1] [--repeats 3] [--folder /tmp/wb-count]

Each data set (found along the catalog search path, e.g. with
``WORKBENCH_DATA=../shared/datasets/fetched``) is discretised (MDL on the whole file, as the
issue's measurement did), its rows repeated up to --rows, and written once as ARFF, CSV and
Parquet. Then, each in a fresh process: loading each file with `load_dataset` 1 + --repeats
times (rows/s of the fastest load after the first; the first, which also pays the process's
one-time imports and compiled-kernel loading, is printed beside it), and training each
learner on the in-memory rows with ``n_jobs`` counting threads — each fit on a fresh
Dataset of them, so that it makes the value codes it counts from as a first fit does (a
Dataset keeps them once made). Every line carries that process's peak resident memory
(VmHWM).

Training is compared CPU with CPU against a bare numba loop making the same rows ×
C(a, n+1) (+ lower levels) increments into dense tables of the same shapes, data already
as int8 codes — what counting one increment per row and table reaches here. The bare loop
comes in two orders: row-major (each row visits every table) and block-major (each table
takes every row while it is in cache, the attributes stored column by column); the faster
of the two is the reference, and the table says which. Training and both loops run in
turn, --repeats times each (interleaved, so drift hits all three alike); the fastest CPU
time of each is used. The fraction is training's CPU rate over the reference's CPU rate
(above 1 where small tables are counted from bit sets of the rows,
`workbench.learners.counting.BITMAP_MAX_CELLS`). With --n-jobs > 1 training's CPU sums its
threads, the bare loops run on one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

import numba
import numpy as np

from workbench.learners.counting import next_colex


def peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def prepare(slug: str, rows: int, folder: Path) -> dict[str, Path]:
    """The replicated, discretised data set as ARFF, CSV and Parquet (written once)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from workbench.data.arff import save_arff
    from workbench.data.catalog import find_dataset, load_dataset
    from workbench.discretize import fit_discretizer

    stem = folder / f"{slug}-{rows}"
    paths = {fmt: stem.with_suffix("." + fmt) for fmt in ("arff", "csv", "parquet")}
    if all(p.is_file() for p in paths.values()):
        return paths
    data = load_dataset(find_dataset(slug)).without_missing_class()
    data = fit_discretizer("mdl", data).transform(data)
    idx = np.resize(np.arange(data.n_instances), rows)
    big = data.take(idx)
    save_arff(big, paths["arff"])
    cols = {}
    for j, a in enumerate((*big.attributes, big.class_attribute)):
        codes = big.codes()[:, j] if j < len(big.attributes) else big.y
        cols[a.name] = pa.DictionaryArray.from_arrays(
            pa.array(codes.astype(np.int32), mask=codes < 0), pa.array(list(a.values)))
    table = pa.table(cols)
    pq.write_table(table, paths["parquet"], row_group_size=1 << 20)
    pcsv.write_csv(table.cast(pa.schema([(f.name, pa.string()) for f in table.schema])),
                   paths["csv"])
    return paths


@numba.njit(cache=True, nogil=True)
def _bare(X, y, K, n, offs, cards):
    """All increments of order-n AnDE counting (sizes 1..n+1), row-major, dense tables."""
    rows, d = X.shape
    tables = np.zeros(offs[-1], dtype=np.int32)
    idx = np.empty(n + 1, dtype=np.int64)
    for r in range(rows):
        k = y[r]
        b = 0
        for size in range(1, n + 2):
            for t in range(size):
                idx[t] = t
            while True:
                loc = 0
                for t in range(size):
                    loc = loc * cards[idx[t]] + X[r, idx[t]]
                tables[offs[b] + loc * K + k] += 1
                b += 1
                if not next_colex(idx, size, d):
                    break
    return tables


@numba.njit(cache=True, nogil=True)
def _bare_block_major(XT, y, K, n, offs, cards):
    """The same increments as `_bare`, table by table: every row of a table's attributes
    (XT: one contiguous row per attribute) while that table is in cache."""
    d, rows = XT.shape
    tables = np.zeros(offs[-1], dtype=np.int32)
    idx = np.empty(n + 1, dtype=np.int64)
    b = 0
    for size in range(1, n + 2):
        for t in range(size):
            idx[t] = t
        while True:
            base = offs[b]
            for r in range(rows):
                loc = 0
                for t in range(size):
                    loc = loc * cards[idx[t]] + XT[idx[t], r]
                tables[base + loc * K + y[r]] += 1
            b += 1
            if not next_colex(idx, size, d):
                break
    return tables


class BareLoops:
    """Both bare loops over the same codes, ready to be timed (compiled on creation)."""

    def __init__(self, codes: np.ndarray, y: np.ndarray, K: int, n: int) -> None:
        d = codes.shape[1]
        self.cards = codes.max(axis=0).astype(np.int64) + 1
        sizes = [int(np.prod(self.cards[list(c)])) * K for s in range(1, n + 2)
                 for c in sorted(combinations(range(d), s), key=lambda c: c[::-1])]
        self.offs = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        self.X = np.ascontiguousarray(np.maximum(codes, 0), dtype=np.int8)
        self.XT = np.ascontiguousarray(self.X.T)
        self.y, self.K, self.n = y, K, n
        first = (_bare(self.X[:10], y[:10], K, n, self.offs, self.cards),
                 _bare_block_major(np.ascontiguousarray(self.XT[:, :10]), y[:10], K, n,
                                   self.offs, self.cards))
        assert np.array_equal(*first)  # the same increments in either order

    def cpu(self, order: str) -> float:
        """CPU seconds of one pass in `order` (``row`` or ``block``)."""
        t0 = time.process_time()
        if order == "row":
            _bare(self.X, self.y, self.K, self.n, self.offs, self.cards)
        else:
            _bare_block_major(self.XT, self.y, self.K, self.n, self.offs, self.cards)
        return time.process_time() - t0


def one(args: argparse.Namespace) -> None:
    """The child process: one measurement, printed as JSON."""
    from workbench.data.catalog import load_dataset

    t0 = time.perf_counter()
    data = load_dataset(args.path)
    cold = time.perf_counter() - t0
    load = float("inf")
    for _ in range(args.repeats):  # again: the throughput without one-time start-up
        del data
        t0 = time.perf_counter()
        data = load_dataset(args.path)
        load = min(load, time.perf_counter() - t0)
    out = {"rows": data.n_instances, "load_s": load, "cold_s": cold}
    if args.one != "load":
        from workbench.learners.registry import create

        # compile / load the kernels (enough rows for the compiled code conversion too)
        create(args.one).fit(data.take(np.arange(min(data.n_instances, 20_000))))
        n = int(args.one[1]) if args.one.startswith("A") else 0
        bare = BareLoops(data.codes(), data.y.astype(np.int64), data.n_classes, n)
        out["fit_s"] = out["fit_cpu_s"] = float("inf")
        best = {"row": float("inf"), "block": float("inf")}
        for _ in range(args.repeats):  # interleaved: ours, row-major, block-major
            model = create(args.one, n_jobs=args.n_jobs)
            rows = data.replace()  # (the same arrays, nothing kept: codes made in the fit)
            c0, w0 = time.process_time(), time.perf_counter()
            model.fit(rows)
            out["fit_s"] = min(out["fit_s"], time.perf_counter() - w0)
            out["fit_cpu_s"] = min(out["fit_cpu_s"], time.process_time() - c0)
            for order in best:
                best[order] = min(best[order], bare.cpu(order))
        out["bare_order"] = min(best, key=best.get)
        out["bare_cpu_s"] = best[out["bare_order"]]
        out["other_cpu_s"] = max(best.values())
    out["peak_mib"] = peak_mib()
    print(json.dumps(out))


def child(what: str, path: Path, n_jobs: int = 1, repeats: int = 3) -> dict:
    res = subprocess.run([sys.executable, __file__, "--one", what, "--path", str(path),
                          "--n-jobs", str(n_jobs), "--repeats", str(repeats)],
                         capture_output=True, text=True)
    if res.returncode:
        sys.exit(f"error: {what} on {path} failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["adult", "connect-4"])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--learners", nargs="+", default=["A1DE", "A2DE"])
    ap.add_argument("--n-jobs", type=int, default=1, help="counting threads of each fit")
    ap.add_argument("--repeats", type=int, default=3,
                    help="loads and fits per process; the fastest is printed")
    ap.add_argument("--folder", default="/tmp/wb-count")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        one(args)
        return 0
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    print(f"counting threads per fit: {args.n_jobs}")
    print(f"{'data set':<10} {'what':<14} {'rows':>9} {'seconds':>8} {'M rows/s':>9} "
          f"{'bare M rows/s':>13} {'fraction':>8} {'peak MiB':>9} {'CPU s':>6}")
    print("(loads: wall seconds; fits: CPU seconds, CPU M rows/s, the bare loop's CPU rate "
          "in its faster order, and the fraction = ours / bare, CPU against CPU)")
    for slug in args.datasets:
        paths = prepare(slug, args.rows, folder)
        for fmt, path in paths.items():
            r = child("load", path, repeats=args.repeats)
            print(f"{slug:<10} {'load ' + fmt:<14} {r['rows']:9d} {r['load_s']:8.2f} "
                  f"{r['rows'] / r['load_s'] / 1e6:9.2f} {'':>13} {'':>8} "
                  f"{r['peak_mib']:9.0f}  (first load in the process: {r['cold_s']:.2f} s)",
                  flush=True)
        for name in args.learners:
            r = child(name, paths["parquet"], args.n_jobs, args.repeats)
            rate, bare = r["rows"] / r["fit_cpu_s"], r["rows"] / r["bare_cpu_s"]
            other = "row" if r["bare_order"] == "block" else "block"
            print(f"{slug:<10} {'fit ' + name:<14} {r['rows']:9d} {r['fit_cpu_s']:8.2f} "
                  f"{rate / 1e6:9.2f} {bare / 1e6:13.2f} {rate / bare:8.2f} "
                  f"{r['peak_mib']:9.0f} {r['fit_cpu_s']:6.2f}  (bare: {r['bare_order']}-"
                  f"major; {other}-major {r['rows'] / r['other_cpu_s'] / 1e6:.2f} M rows/s; "
                  f"our wall {r['fit_s']:.2f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
