"""Classification against a plain compiled loop over ready-made factor tables: how close the
AnDE classifiers come to the arithmetic the classification needs.

Usage: ``python benchmarks/bench_limit.py [--sets adult,letter,connect-4] [--reps N]``

Per data set (MDL-discretised, the first half of a seeded permutation to train, the other
half to classify) and order n = 1, 2:

- **ours**: `predict_proba` of the trained A1DE / A2DE on the test half (minimum CPU of
  `--reps` calls after one untimed call, interleaved with the plain loop's): it reads the
  counts, forms the m-estimates, and multiplies, sums and normalises.
- **plain loop**: a numba loop (compiled before timing) over factor tables built before
  the clock starts — for every parent value (n = 1) or value pair (n = 2) its joint term
  and, per child value, the conditional factor, for every class — that, per test row and
  parent set of present values, multiplies the row's children's factors into the joint
  term and sums over the parent sets, parent set by parent set (the set's factors stay in
  cache over the rows; faster than row by row on all six shapes here). No estimation, no
  subsumption resolution, no rescaling against underflow, no normalisation: the
  multiply-adds alone. Written plainly (a class loop of run-time length), not tuned.

Printed: multiply-adds per row (parent sets × children × classes, over the present values),
G multiply-adds per second of each, and the plain loop's time / ours (≥ 1: ours is
faster than a plain loop doing only the arithmetic). CPU seconds of the process (every
thread); missing values and constant attributes are in the data as they come (adult has
both).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from workbench.data.catalog import load_dataset
from workbench.discretize import fit_discretizer
from workbench.jit import numba
from workbench.learners.registry import create


@numba.njit(cache=True, nogil=True)
def _value_ids(X, off):
    """Each present value's row in the tables (off[c] + x_c), −1 where missing."""
    n, d = X.shape
    V = np.empty((n, d), dtype=np.int64)
    for r in range(n):
        for c in range(d):
            V[r, c] = off[c] + X[r, c] if X[r, c] >= 0 else -1
    return V


@numba.njit(cache=True, nogil=True)
def _plain_a1de(X, off, P1, F1, K, out):
    """out[r, y] = Σ_p P1[v_p, y] Π_{c ≠ p} F1[v_p, v_c, y] over the present values,
    parent by parent (one parent's factors stay in cache over the rows)."""
    n, d = X.shape
    V = _value_ids(X, off)
    acc = np.empty(K)
    out[:, :] = 0.0
    for p in range(d):
        for r in range(n):
            vp = V[r, p]
            if vp < 0:
                continue
            for y in range(K):
                acc[y] = P1[vp, y]
            for c in range(d):
                vc = V[r, c]
                if c == p or vc < 0:
                    continue
                for y in range(K):
                    acc[y] *= F1[vp, vc, y]
            for y in range(K):
                out[r, y] += acc[y]


@numba.njit(cache=True, nogil=True)
def _plain_a2de(X, off, base, cards, P2, F2, K, out):
    """As `_plain_a1de` over value pairs, pair by pair: pair (p, q), p < q, has its block at
    base[p, q] (rows x_p · |X_q| + x_q); F2[row, v_c, y]."""
    n, d = X.shape
    V = _value_ids(X, off)
    acc = np.empty(K)
    out[:, :] = 0.0
    for p in range(d):
        for q in range(p + 1, d):
            for r in range(n):
                if V[r, p] < 0 or V[r, q] < 0:
                    continue
                row = base[p, q] + X[r, p] * cards[q] + X[r, q]
                for y in range(K):
                    acc[y] = P2[row, y]
                for c in range(d):
                    vc = V[r, c]
                    if c == p or c == q or vc < 0:
                        continue
                    for y in range(K):
                        acc[y] *= F2[row, vc, y]
                for y in range(K):
                    out[r, y] += acc[y]


def _codes(data) -> np.ndarray:
    """The attributes as int64 codes, −1 for a missing value."""
    X = np.asarray(data.X, dtype=np.float64)
    return np.where(np.isnan(X), -1, X).astype(np.int64)


def _tables(cards, K, order):
    """Factor tables from the training codes (Laplace-style estimates: the values do not
    matter to the timing, only the shapes and the reads)."""
    d = len(cards)
    off = np.concatenate([[0], np.cumsum(cards)]).astype(np.int64)
    V = int(off[-1])
    rng = np.random.default_rng(0)
    if order == 1:
        return off, rng.uniform(0.01, 1, (V, K)), rng.uniform(0.01, 1, (V, V, K))
    base = np.zeros((d, d), dtype=np.int64)
    rows = 0
    for p in range(d):
        for q in range(p + 1, d):
            base[p, q] = rows
            rows += cards[p] * cards[q]
    return off, base, rng.uniform(0.01, 1, (rows, K)), rng.uniform(0.01, 1, (rows, V, K))


def _madds(X, order, K) -> float:
    """Multiply-adds of the classification: per row, parent sets × children × classes."""
    a = (X >= 0).sum(axis=1).astype(np.float64)
    sets = a if order == 1 else a * (a - 1) / 2
    return float((sets * (a - order) * K).sum())


def _min_cpu(fns, reps: int) -> list[float]:
    """The minimum CPU time of each of fns over `reps` interleaved rounds (one untimed call
    of each first): a slow phase of the machine then costs both sides alike."""
    for fn in fns:
        fn()
    best = [math.inf] * len(fns)
    for _ in range(reps):
        for i, fn in enumerate(fns):
            t = time.process_time()
            fn()
            best[i] = min(best[i], time.process_time() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="adult,letter,connect-4")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args(argv)
    print("| data set | learner | multiply-adds / row | ours G/s | plain loop G/s | "
          "ours / plain |")
    print("|---|---|---:|---:|---:|---:|")
    for name in args.sets.split(","):
        ds = load_dataset(name).without_missing_class()
        idx = np.random.default_rng(0).permutation(ds.n_instances)
        half = ds.n_instances // 2
        train, test = ds.take(np.sort(idx[:half])), ds.take(np.sort(idx[half:]))
        disc = fit_discretizer("mdl", train)
        train, test = disc.transform(train), disc.transform(test)
        cards = np.array([max(a.cardinality, 1) for a in train.attributes], dtype=np.int64)
        K = train.n_classes
        Xte = _codes(test)
        for order in (1, 2):
            model = create(f"A{order}DE")
            model.fit(train)
            out = np.empty((Xte.shape[0], K))
            if order == 1:
                off, P1, F1 = _tables(cards, K, 1)
                args1 = (Xte, off, P1, F1, K, out)
                plain_loop = lambda: _plain_a1de(*args1)  # noqa: E731
            else:
                off, base, P2, F2 = _tables(cards, K, 2)
                args2 = (Xte, off, base, cards, P2, F2, K, out)
                plain_loop = lambda: _plain_a2de(*args2)  # noqa: E731
            ours, plain = _min_cpu([lambda: model.predict_proba(test), plain_loop],
                                   args.reps)
            m = _madds(Xte, order, K)
            print(f"| {name} | A{order}DE | {m / Xte.shape[0]:,.0f} | {m / ours / 1e9:.2f} | "
                  f"{m / plain / 1e9:.2f} | {plain / ours:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
