"""RF10 against Weka 3.6's RandomForest: per-instance exactness and time, same splits.

    python benchmarks/compare_rf_weka.py [--datasets a,b] [--mode forest|tree] [--seed 1]

For each data set (default: every catalog data set found, e.g. with
``WORKBENCH_DATA=../shared/datasets/fetched``), the rows with a known class are split 50/50
(seeded), both halves are written as ARFF with the raw values, Weka's
``RandomForest -I 10 -K 0 -S 1`` (or ``RandomTree -K 0 -M 1 -S 1`` with ``--mode tree``) is
trained on one and classifies the other through ``benchmarks/weka/WekaForest.java`` (our
helper, compiled on the fly; it prints full-precision distributions and in-JVM times), and
our RF10 does the same in this process. Printed per data set: max |Δp|, predicted classes
that differ, Weka's and our build + classify seconds and the ratio ours / Weka.

Needs java, javac and Weka 3.6 (Debian: ``apt-get install weka``; ``WEKA_JAR`` overrides
``/usr/share/java/weka.jar``). No Weka code is part of this repository.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from workbench.data.arff import save_arff
from workbench.data.catalog import CATALOG, find_dataset, load_dataset
from workbench.evaluation.splits import fold_indices, make_splits
from workbench.learners import registry

HERE = Path(__file__).resolve().parent
WEKA_JAR = Path(os.environ.get("WEKA_JAR", "/usr/share/java/weka.jar"))


def compile_helper(tmp: Path, source: str = "WekaForest.java") -> Path:
    """Compile one of our Java helpers in benchmarks/weka against Weka into tmp/classes."""
    classes = tmp / "classes"
    classes.mkdir(exist_ok=True)
    subprocess.run(["javac", "-cp", str(WEKA_JAR), "-d", str(classes),
                    str(HERE / "weka" / source)], check=True)
    return classes


def run_weka(classes: Path, train: Path, test: Path, out: Path, mode: str
             ) -> tuple[np.ndarray, float, float]:
    subprocess.run(["java", "-Xmx6g", "-cp", f"{WEKA_JAR}{os.pathsep}{classes}", "WekaForest",
                    str(train), str(test), str(out), mode], check=True)
    lines = out.read_text().splitlines()
    head = lines[0].split()
    build, classify = float(head[2]), float(head[4])
    dist = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    return dist, build, classify


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", help="comma-separated slugs (default: all found)")
    ap.add_argument("--mode", choices=("forest", "tree"), default="forest")
    ap.add_argument("--seed", type=int, default=1, help="split seed (default 1)")
    args = ap.parse_args(argv)
    if not WEKA_JAR.is_file():
        print(f"error: Weka jar not found at {WEKA_JAR} (apt-get install weka)", file=sys.stderr)
        return 2
    names = args.datasets.split(",") if args.datasets else [e.slug for e in CATALOG]
    learner = "RF10" if args.mode == "forest" else "RandomTree"
    warm = load_dataset(find_dataset("iris"))
    registry.create(learner).fit(warm).predict_proba(warm)  # compile the kernels first
    print(f"{'dataset':<16} {'n_train':>7} {'max|dp|':>9} {'class≠':>6} {'weka_s':>8} "
          f"{'ours_s':>8} {'ours/weka':>9}")
    worst, tot_w, tot_o, n_sets = 0.0, 0.0, 0.0, 0
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        classes = compile_helper(tmp)
        for slug in names:
            path = find_dataset(slug)
            if path is None:
                continue
            data = load_dataset(path).without_missing_class()
            splits = make_splits(data.n_instances, 1, 2, args.seed)
            tr_idx, te_idx = fold_indices(splits, 0, 0)
            train, test = data.take(tr_idx), data.take(te_idx)
            save_arff(train, tmp / "train.arff")
            save_arff(test, tmp / "test.arff")
            theirs, wb, wc = run_weka(classes, tmp / "train.arff", tmp / "test.arff",
                                      tmp / "weka.txt", args.mode)
            t0 = time.perf_counter()
            model = registry.create(learner).fit(train)
            ours = model.predict_proba(test)
            secs = time.perf_counter() - t0
            dp = float(np.abs(ours - theirs).max()) if ours.size else 0.0
            diff = int((ours.argmax(1) != theirs.argmax(1)).sum())
            worst = max(worst, dp)
            tot_w += wb + wc
            tot_o += secs
            n_sets += 1
            print(f"{slug:<16} {train.n_instances:7d} {dp:9.2e} {diff:6d} {wb + wc:8.3f} "
                  f"{secs:8.3f} {secs / max(wb + wc, 1e-9):9.2f}", flush=True)
    print(f"{n_sets} data sets: max |Δp| {worst:.3g}; total seconds Weka {tot_w:.1f}, ours "
          f"{tot_o:.1f}, ratio ours/Weka {tot_o / max(tot_w, 1e-9):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
