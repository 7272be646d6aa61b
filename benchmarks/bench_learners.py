"""Train / classify timings of the AnDE family and RF10, and count-table size vs the compact bound.

    python benchmarks/bench_learners.py [--datasets adult letter ...] [--learners NB A1DE ...]
        [--seed 1] [--data-dir DIR ...] [--export DIR] [--json FILE]

Per data set: a seeded 50/50 split, MDL fitted on the training half (RF10 gets the raw
data), then for each learner the wall and CPU seconds of `fit` and of `predict_proba` on the
test half. For count-based learners the table prints the bytes held by the count tables next
to the compact bound Σ over attribute combinations (sizes 0..n+1) of Π|X_i|·K × 4 bytes
(int32 counts); ratio < 1 means ID-like attributes were stored sparsely. Numba kernels are
compiled (or loaded from cache) on a tiny data set first, so compile time is not counted.

``--export DIR`` also writes the discretised halves as DIR/<slug>-train.arff and
DIR/<slug>-test.arff (to run other tools on the same halves).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets"
DEFAULT_DATASETS = ["adult", "letter", "magic", "nursery", "kr-vs-kp", "splice", "connect-4"]
DEFAULT_LEARNERS = ["NB", "A1DE", "A1DE-S", "A1DE-W", "A1DE-SW", "A2DE", "A2DE-S", "A2DE-W",
                    "A2DE-SW", "RF10"]


def find_file(slug: str, extra: list[str]) -> Path:
    for folder in [*map(Path, extra), SHARED / "registry", SHARED / "fetched", REPO / "datasets"]:
        for ext in (".arff.gz", ".arff"):
            p = folder / f"{slug}{ext}"
            if p.is_file():
                return p
    sys.exit(f"error: data set {slug!r} not found (use --data-dir)")


def warm_up() -> None:
    """Compile / load the numba kernels on a tiny data set."""
    from workbench.data.dataset import Attribute, Dataset
    from workbench.learners.ande import AnDE

    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (30, 4)).astype(float)
    X[0, 0] = np.nan
    atts = tuple(Attribute(f"a{i}", ("x", "y", "z")) for i in range(4))
    d = Dataset("warm", atts, Attribute("c", ("p", "q")), X, rng.integers(0, 2, 30))
    for n in (0, 1, 2):
        for kw in ({}, {"subsumption": 100, "weighting": "mi"}):
            AnDE(n=n, **kw).fit(d).predict_proba(d)


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=DEFAULT_DATASETS)
    ap.add_argument("--learners", nargs="+", default=DEFAULT_LEARNERS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data-dir", action="append", default=[])
    ap.add_argument("--export", metavar="DIR", help="write the discretised halves as ARFF")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = ap.parse_args(argv)

    from workbench.data.arff import load_arff, save_arff
    from workbench.discretize import fit_discretizer
    from workbench.learners.registry import create

    warm_up()
    results = []
    hdr = (f"{'dataset':<10} {'learner':<8} {'train_s':>8} {'test_s':>8} {'cpu_tr':>7} "
           f"{'cpu_te':>7} {'acc':>6} {'count_bytes':>12} {'compact_bound':>14} {'ratio':>6}")
    print(hdr)
    print("-" * len(hdr))
    for slug in args.datasets:
        data = load_arff(find_file(slug, args.data_dir))
        rng = np.random.default_rng(args.seed)
        perm = rng.permutation(data.n_instances)
        half = data.n_instances // 2
        raw_tr, raw_te = data.take(np.sort(perm[:half])), data.take(np.sort(perm[half:]))
        disc = fit_discretizer("mdl", raw_tr)
        tr, te = disc.transform(raw_tr), disc.transform(raw_te)
        if args.export:
            out = Path(args.export)
            out.mkdir(parents=True, exist_ok=True)
            save_arff(tr, out / f"{slug}-train.arff")
            save_arff(te, out / f"{slug}-test.arff")
        for name in args.learners:
            learner = create(name)
            a, b = (raw_tr, raw_te) if learner.preprocessing == "none" else (tr, te)
            _, tw, tc = timed(lambda: learner.fit(a))
            proba, cw, cc = timed(lambda: learner.predict_proba(b))
            known = b.y >= 0
            acc = float((proba.argmax(1)[known] == b.y[known]).mean())
            counts = getattr(learner, "counts_", None)
            nbytes = bound = None
            if counts is not None:
                nbytes = int(counts.nbytes)
                bound = int(counts.compact_bound_cells()) * 4
            row = dict(dataset=slug, learner=name, n_train=a.n_instances, n_test=b.n_instances,
                       train_wall=tw, test_wall=cw, train_cpu=tc, test_cpu=cc, accuracy=acc,
                       count_bytes=nbytes, compact_bound_bytes=bound)
            results.append(row)
            ratio = f"{nbytes / bound:6.3f}" if bound else "     -"
            print(f"{slug:<10} {name:<8} {tw:8.3f} {cw:8.3f} {tc:7.2f} {cc:7.2f} {acc:6.3f} "
                  f"{nbytes if nbytes is not None else '-':>12} "
                  f"{bound if bound is not None else '-':>14} {ratio}", flush=True)
            del learner, proba
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
