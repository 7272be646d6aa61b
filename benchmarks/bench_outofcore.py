"""Out-of-core training: peak memory and throughput against the number of rows.

    python benchmarks/bench_outofcore.py [--rows 1000000 4000000] [--attributes 20]
        [--learners A1DE KDB2] [--folder /tmp/wb-bench] [--workers 0] [--memory-cap 2048]

Writes a seeded synthetic Parquet file per size (`workbench.data.synthetic.
bayes_network_rows`: a known naive-Bayes network, 4 values per attribute, text columns
stored dictionary-encoded, row groups of 1,000,000), then for each size runs
``python -m workbench fit`` per learner in a fresh process — with --memory-cap MiB under
that address-space limit (`setrlimit(RLIMIT_AS)`, what ``prlimit --as`` sets) — and prints
its rows/s, passes, CPU seconds and peak resident memory (VmHWM): flat peak memory across
sizes is what "out of core" means (A1DE reads the file twice, KDB2 three times).
Next to it: a bare counting loop (numba; the same rows × C(a, 2) A1DE pair increments into
dense tables, data already in memory) — the physical limit of one pass on this machine —
and the training throughput as a fraction of it. With --workers N, also the row groups
counted on N local Dask worker processes (speed-up against one process). With --in-memory,
also the same file loaded whole and fitted in a fresh process (`load_table` + `fit`, the
learner's kernels loaded before the clock starts, as `fit`'s are), interleaved with the
out-of-core runs, --repeats times: the minimum CPU of each and the out-of-core rate as a
fraction of the in-memory one. --text writes the columns as plain strings (Parquet's usual
text columns) instead of dictionary-typed ones.

With --run, each size instead runs the README's ``big.yaml`` — a config with
``out_of_core: {chunk_rows: 250000}``, 10-fold CV with `assignment: rows`, the --learners,
predictions kept — as ``python -m workbench run`` in a fresh process, and prints the whole
process tree's peak memory (the sum of its processes' PSS, sampled every 50 ms: the runner
and its forked fold worker), its CPU (user + system of the tree) and wall time, and for each
learner its folds' CPU against one ``workbench fit`` of the file (CV ÷ fit). With
``--run --workers N`` the run is ``--backend dask --jobs N`` (a local cluster: NB's and the
AnDE family's rounds counted and scored row group by row group on the workers), and the
runner's own peak (the client, with the local scheduler in it) is printed apart.

With --cv K, each size also runs ``python -m workbench evaluate --cv K`` (K-fold CV out of
core, the same cap) per learner: its peak resident memory, the training CPU (one counting
pass and the k subtractions for the AnDE family on this nominal data) and the
classification CPU, its whole CPU against the one `fit` of the same file above (CPU
against CPU, both fresh processes, each including its reading of the file), and its
training CPU against k separate fits (k × that fit's CPU: the subtraction's gain).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from workbench.data.synthetic import bayes_network_rows
from workbench.learners.base import MultiPassLearner
from workbench.learners.registry import create

BLOCK = 1_000_000


IN_MEMORY = """
import sys, time
import numpy as np
from workbench.data.sources import load_table
from workbench.learners.registry import create
path, learner = sys.argv[1], sys.argv[2]
create(learner).fit(load_table(path).take(np.arange(1000)))  # kernels loaded, not timed
c = time.process_time()
create(learner).fit(load_table(path))
print(time.process_time() - c)
"""


def in_memory_cpu(path: Path, learner: str) -> float:
    """CPU seconds of loading the whole file and fitting it, in a fresh process."""
    out = subprocess.run([sys.executable, "-c", IN_MEMORY, str(path), learner],
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"error: in-memory fit of {path} failed:\n{out.stderr[-2000:]}")
    return float(out.stdout.strip())


def write_parquet(path: Path, rows: int, attributes: int, seed: int = 1,
                  text: bool = False) -> None:
    if path.is_file() and pq.ParquetFile(path).metadata.num_rows == rows:
        return
    labels = pa.array([str(v) for v in range(4)])
    writer = None
    for start in range(0, rows, BLOCK):
        X, y = bayes_network_rows(min(BLOCK, rows - start), attributes, seed=seed,
                                  start=start)
        cols = {f"a{j}": pa.DictionaryArray.from_arrays(pa.array(X[:, j]), labels)
                for j in range(attributes)}
        cols["class"] = pa.DictionaryArray.from_arrays(pa.array(y), labels.slice(0, 2))
        if text:  # plain string columns (Parquet still stores them with a dictionary)
            cols = {k: v.cast(pa.string()) for k, v in cols.items()}
        table = pa.table(cols)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=BLOCK)
    writer.close()


@numba.njit(cache=True, nogil=True)
def _count_pairs(X, y, K, tables):
    n, d = X.shape
    for r in range(n):
        k = y[r]
        for i in range(d):
            xi = X[r, i]
            for j in range(i + 1, d):
                tables[i, j, xi, X[r, j], k] += 1


def counting_loop_rows_per_second(rows: int, attributes: int) -> float:
    """Rows/s of a bare A1DE pair-counting loop over in-memory codes (the limit)."""
    X, y = bayes_network_rows(min(rows, BLOCK), attributes, seed=1)
    X = X.astype(np.int64)
    y = y.astype(np.int64)
    tables = np.zeros((attributes, attributes, 4, 4, 2), dtype=np.int32)
    _count_pairs(X[:100], y[:100], 2, tables)  # compile
    t0 = time.process_time()
    _count_pairs(X, y, 2, tables)
    return X.shape[0] / (time.process_time() - t0)


def fit(path: Path, learner: str, workers: int = 0, cap_mib: int = 0) -> dict:
    cmd = [sys.executable, "-m", "workbench", "-q", "fit", "--learner", learner, "--data",
           str(path), "--chunk-rows", "250000"]
    if workers:
        cmd += ["--workers", str(workers)]
    return _run(cmd, cap_mib)


def _run(cmd: list[str], cap_mib: int) -> dict:
    """Run a workbench command printing JSON, under an address-space cap (MiB, 0: none)."""

    def limit() -> None:
        if cap_mib:
            resource.setrlimit(resource.RLIMIT_AS, (cap_mib * 2**20, cap_mib * 2**20))

    # under an address-space cap, allocators that reserve large arenas up front (Arrow's
    # default pool, glibc's per-thread arenas) would count against it without using it
    env = dict(os.environ, ARROW_DEFAULT_MEMORY_POOL="system", MALLOC_ARENA_MAX="2") \
        if cap_mib else None
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=limit, env=env)
    if out.returncode:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    info = json.loads(out.stdout)
    info["wall_seconds"] = time.perf_counter() - t0
    return info


def cross_validate(path: Path, learner: str, folds: int, cap_mib: int = 0,
                   chunk_rows: int = 250_000, workers: int = 0) -> dict:
    """`workbench evaluate --cv` in a fresh process (under the cap; on `workers` local Dask
    workers): its JSON summary."""
    cmd = [sys.executable, "-m", "workbench", "-q", "evaluate", "--learner", learner,
           "--data", str(path), "--chunk-rows", str(chunk_rows), "--cv", str(folds)]
    if workers:
        cmd += ["--workers", str(workers)]
    return _run(cmd, cap_mib)


def _tree_pss(pid: int, descendants: bool = True) -> int:
    """The PSS bytes of process `pid` and (with `descendants`) its descendants (Linux
    /proc)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next(int(line.split()[1]) * 1024 for line in f
                              if line.startswith("Pss:"))
            for task in os.listdir(f"/proc/{p}/task") if descendants else ():
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, StopIteration):
            continue
    return total


def run_config(path: Path, learners: list[str], folder: Path, workers: int = 0) -> dict:
    """README's big.yaml on `path` as ``workbench run`` in a fresh process (with `workers`:
    ``--backend dask --jobs N``, a local cluster of N worker processes): the process
    tree's peak PSS, the runner's own (the client; with a local cluster, its scheduler
    too), its CPU and wall seconds, and each learner's fold CPU seconds."""
    import csv

    out = folder / f"run-{path.stem}"
    cfg = folder / f"big-{path.stem}.yaml"
    cfg.write_text(f"name: big\ndatasets: [{path}]\nprotocol: {{rounds: 1, folds: 10, "
                   f"seed: 1, assignment: rows}}\nout_of_core: {{chunk_rows: 250000}}\n"
                   f"learners: [{', '.join(learners)}]\n")
    cmd = [sys.executable, "-m", "workbench", "-q", "run", str(cfg), "--output", str(out),
           "--no-report", "--fresh"]
    if workers:
        cmd += ["--backend", "dask", "--jobs", str(workers)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    peak = client = 0
    while proc.poll() is None:
        peak = max(peak, _tree_pss(proc.pid))
        client = max(client, _tree_pss(proc.pid, descendants=False))
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{proc.stderr.read()[-2000:]}")
    fold_cpu: dict[str, float] = {}
    with open(out / "fold_metrics.csv", newline="") as f:
        for row in csv.DictReader(f):  # (a row per fold, a column per metric)
            fold_cpu[row["learner"]] = fold_cpu.get(row["learner"], 0.0) + \
                float(row["train_cpu_seconds"]) + float(row["test_cpu_seconds"])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"peak_pss": peak, "client_pss": client, "cpu": cpu, "wall": wall,
            "fold_cpu": fold_cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 4_000_000])
    ap.add_argument("--attributes", type=int, default=20)
    ap.add_argument("--learners", nargs="+", default=["A1DE", "KDB2"])
    ap.add_argument("--folder", default="/tmp/wb-bench")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--memory-cap", type=int, default=0, metavar="MiB",
                    help="address-space limit of each training process (0: none)")
    ap.add_argument("--in-memory", action="store_true",
                    help="also load + fit the whole file in memory (paired, interleaved)")
    ap.add_argument("--repeats", type=int, default=3, help="pairs with --in-memory")
    ap.add_argument("--text", action="store_true", help="plain string columns")
    ap.add_argument("--run", action="store_true",
                    help="run README's big.yaml per size: the process tree's peak and CPU")
    ap.add_argument("--cv", type=int, default=0, metavar="K",
                    help="also K-fold CV out of core per learner and size (0: none)")
    ap.add_argument("--cv-chunk-rows", type=int, default=250_000, metavar="N",
                    help="the CV's chunk rows (default 250,000, as the fit's; the CLI's "
                         "own default is 65,536: a lower peak)")
    args = ap.parse_args()
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    if args.run:
        if args.workers:
            print(f"--backend dask --jobs {args.workers}: also the runner's own peak (the "
                  "client and the local scheduler)")
        print(f"{'rows':>11} {'tree peak PSS MiB':>17} {'runner MiB':>10} {'CPU s':>7} "
              f"{'wall s':>7}  CV / fit (folds' CPU against one fit's training CPU)")
        for rows in args.rows:
            path = folder / f"bn-{rows}-{args.attributes}.parquet"
            write_parquet(path, rows, args.attributes)
            res = run_config(path, args.learners, folder, args.workers)
            ratios = ", ".join(f"{lr} {res['fold_cpu'][lr] / fit(path, lr)['train_cpu_seconds']:.2f}"
                               for lr in args.learners)
            print(f"{rows:>11,} {res['peak_pss'] / 2**20:>17.0f} "
                  f"{res['client_pss'] / 2**20:>10.0f} {res['cpu']:>7.1f} "
                  f"{res['wall']:>7.1f}  {ratios}", flush=True)
        return
    limit = counting_loop_rows_per_second(max(args.rows), args.attributes)
    print(f"bare counting loop (A1DE pairs, {args.attributes} attributes): "
          f"{limit / 1e6:.2f} M rows/s")
    if args.memory_cap:
        print(f"each training process limited to {args.memory_cap} MiB of address space")
    print(f"{'learner':<8} {'rows':>11} {'passes':>6} {'train CPU s':>11} {'M rows/s':>9} "
          f"{'of limit':>8} {'peak RSS MiB':>12} {'wall s':>7}")
    for rows in args.rows:
        path = folder / f"bn-{rows}-{args.attributes}{'-text' if args.text else ''}.parquet"
        write_parquet(path, rows, args.attributes, text=args.text)
        for learner in args.learners:
            info = fit(path, learner, cap_mib=args.memory_cap)
            rate = rows / info["train_cpu_seconds"]
            print(f"{learner:<8} {rows:>11,} {info['passes']:>6} "
                  f"{info['train_cpu_seconds']:>11.1f} {rate / 1e6:>9.2f} {rate / limit:>8.2f} "
                  f"{info['peak_rss_bytes'] / 2**20:>12.0f} {info['wall_seconds']:>7.1f}",
                  flush=True)
            if args.in_memory:  # interleaved: out of core, in memory, out of core, ...
                ooc, mem = [info["train_cpu_seconds"]], []
                for i in range(args.repeats):
                    mem.append(in_memory_cpu(path, learner))
                    if i + 1 < args.repeats:
                        ooc.append(fit(path, learner)["train_cpu_seconds"])
                print(f"{'':<8} in memory (load + fit) {min(mem):.2f} s CPU, out of core "
                      f"{min(ooc):.2f} s (min of {args.repeats}): out-of-core rate "
                      f"{min(mem) / min(ooc):.2f} of the in-memory one", flush=True)
            if args.cv:
                cv = cross_validate(path, learner, args.cv, cap_mib=args.memory_cap,
                                    chunk_rows=args.cv_chunk_rows)
                print(f"{'':<8} {args.cv}-fold CV: peak RSS {cv['peak_rss_bytes'] / 2**20:.0f} "
                      f"MiB, {cv['passes']} passes, training {cv['train_cpu_seconds']:.1f} s "
                      f"CPU (subtraction: {cv['subtraction']}; {args.cv} separate fits "
                      f"{args.cv * info['train_cpu_seconds']:.1f} s), classification "
                      f"{cv['test_cpu_seconds']:.1f} s, whole {cv['cpu_seconds']:.1f} s CPU = "
                      f"{cv['cpu_seconds'] / info['train_cpu_seconds']:.2f} x one fit, "
                      f"0-1 loss {cv['zero_one_loss']:.4f}", flush=True)
            model = create(learner)
            if args.workers and not (isinstance(model, MultiPassLearner)
                                     and model.n_passes() > 1):  # one-pass learners only
                dist = fit(path, learner, args.workers, cap_mib=args.memory_cap)
                print(f"{'':<8} {args.workers} Dask workers: wall {dist['wall_seconds']:.1f} s "
                      f"(one process {info['wall_seconds']:.1f} s: speed-up "
                      f"{info['wall_seconds'] / dist['wall_seconds']:.2f})", flush=True)
                if args.cv:  # the CV on the workers against the CV in one process
                    dcv = cross_validate(path, learner, args.cv, args.memory_cap,
                                         args.cv_chunk_rows, args.workers)
                    print(f"{'':<8} {args.cv}-fold CV on {args.workers} Dask workers: wall "
                          f"{dcv['wall_seconds']:.1f} s (one process {cv['wall_seconds']:.1f}"
                          f" s: speed-up {cv['wall_seconds'] / dcv['wall_seconds']:.2f}; 0-1 "
                          f"loss {dcv['zero_one_loss']:.6f} vs {cv['zero_one_loss']:.6f})",
                          flush=True)


if __name__ == "__main__":
    main()
