"""Compile the kernels ahead: `workbench warm-up` (`compile_kernels`).

A learner compiles its numba kernels on first use, per class-count path (two, three, any:
`workbench.jit.by_classes`) and per scoring path (row-major for a few test rows,
parent-major for many), and caches them for the installation (`workbench.jit`). This
module runs each learner through every such path once on small synthetic data sets, so
that a later run loads every kernel from the cache: one fold per (learner, class count,
test size) through `evaluation.pipeline.run_fold` — MDL discretisation included — on data
with nominal and numeric attributes, missing values and a constant attribute, and one
more of the larger size through the parent-major scoring's rare paths (rescaling, value
slots), which data this small never takes (`parentmajor.rare_paths_everywhere`), and one
on data with one more nominal attribute of `WIDE` values: codes of 16 bits, whose counting
kernels are compiled apart from the 8-bit ones (splice's 3,178-valued name needs them); the
data kernels first, on an ARFF file large enough for every conversion (`_load_data_kernels`).
"""

from __future__ import annotations

import functools
import time
from typing import Callable, Iterable

import numpy as np

from workbench.data.dataset import Attribute, Dataset
from workbench.learners import registry

CLASS_COUNTS = (2, 3, 5)
"""One per compiled class-count path (2 and 3 have their own kernels, 5 the general one)."""

TEST_SIZES = (3, 2000)
"""A few test rows (row-major scoring) and many (parent-major scoring)."""

TRAIN_ROWS = 300
"""Training rows of each synthetic data set (its first rows; the test rows follow)."""

WIDE = 200
"""Values of the wide fold's extra attribute: more than an 8-bit code holds."""

_COMPARATOR_MODULES = ("workbench.learners.weka", "workbench.learners.vw",
                       "workbench.learners.external")
"""Learners that run other programs: nothing of ours to compile."""


def default_learners() -> list[str]:
    """Every built-in learner whose work is our own compiled code."""
    specs = [registry.get(name) for name in registry.names()]
    return [s.name for s in specs
            if s.source == "builtin" and s.factory.__module__ not in _COMPARATOR_MODULES]


def synthetic(K: int, n_train: int = TRAIN_ROWS, n_test: int = max(TEST_SIZES),
              seed: int = 0, wide: int = 0) -> Dataset:
    """A seeded data set with K classes: three nominal attributes (2, 3 and 4 values, 5 %
    missing), a constant one, and two numeric ones that depend on the class (so MDL cuts
    them), with missing values; with `wide`, a last nominal attribute of that many values
    (drawn at random)."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    y = np.arange(n) % K
    rng.shuffle(y)
    cols = []
    for card in (2, 3, 4):
        col = (y + rng.integers(0, 2, n)) % card
        cols.append(np.where(rng.random(n) < 0.05, np.nan, col))
    cols.append(np.zeros(n))
    for shift in (1.0, 2.0):
        col = y * shift + rng.normal(0.0, 1.0, n)
        cols.append(np.where(rng.random(n) < 0.05, np.nan, col))
    atts = (Attribute("a", ("0", "1")), Attribute("b", ("0", "1", "2")),
            Attribute("c", ("0", "1", "2", "3")), Attribute("const", ("only",)),
            Attribute("u"), Attribute("v"))
    if wide:
        cols.append(rng.integers(0, wide, n).astype(float))
        atts += (Attribute("w", tuple(str(v) for v in range(wide))),)
    cls = Attribute("class", tuple(f"k{k}" for k in range(K)))
    return Dataset(f"warm-up-{K}", atts, cls, np.column_stack(cols), y)


@functools.cache
def _load_data_kernels() -> None:
    """The data and evaluation kernels (once per process): the ARFF reader's (numeric and
    nominal columns, 8- and 16-bit staging), the code conversions that data of 2^16 values
    or more take instead of numpy (`Dataset.codes`, `Dataset.column_codes`), raw and
    discretised, and the row operations of evaluations past 4,096 cells (`rowops`)."""
    import tempfile
    from pathlib import Path

    from workbench.data.arff import load_arff
    from workbench.data.catalog import load_dataset
    from workbench.discretize import fit_discretizer
    from workbench.rowops import warm_up

    for name in ("iris", "labor"):
        load_dataset(name)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wide.arff"
        path.write_text(wide_arff())
        data = load_arff(path)
    for each in (data, fit_discretizer("mdl", data).transform(data)):
        each.codes()
        for dtype in (np.int8, np.int16):
            each.column_codes(dtype)
    warm_up()


def wide_arff(n: int = 10_000, d: int = 7) -> str:
    """An all-nominal ARFF of n rows: d attributes (the first of `WIDE` values, the rest
    of 3) and a two-valued class — n × d above 2^16 — written by `arff_text`."""
    from workbench.data.arff import arff_text

    rng = np.random.default_rng(0)
    cards = [WIDE] + [3] * (d - 1) + [2]
    rows = np.column_stack([rng.integers(0, c, n) for c in cards])
    atts = tuple(Attribute(f"a{j}", tuple(str(v) for v in range(c)))
                 for j, c in enumerate(cards))
    return arff_text(Dataset("wide", atts[:-1], atts[-1], rows[:, :-1].astype(float),
                             rows[:, -1]))


def compile_kernels(learners: Iterable[str],
                    say: Callable[[str], None] = lambda text: None) -> dict[str, float]:
    """Run every learner on every class count and test size once; returns the CPU seconds
    each learner spent compiling or loading kernels (`workbench.jit.compile_clock`)."""
    from workbench.evaluation.pipeline import run_fold
    from workbench.jit import compile_clock
    from workbench.learners.ande.parentmajor import rare_paths_everywhere

    clock = compile_clock()
    _load_data_kernels()
    data = {K: synthetic(K) for K in CLASS_COUNTS}
    wide = {K: synthetic(K, wide=WIDE) for K in CLASS_COUNTS}
    train = np.arange(TRAIN_ROWS)
    many = np.arange(TRAIN_ROWS, TRAIN_ROWS + max(TEST_SIZES))
    spent: dict[str, float] = {}
    for name in learners:
        before, t0 = clock.read(), time.monotonic()
        for K in CLASS_COUNTS:
            for size in TEST_SIZES:
                run_fold(data[K], name, {}, train, np.arange(TRAIN_ROWS, TRAIN_ROWS + size))
            with rare_paths_everywhere():  # (paths this small data never takes)
                run_fold(data[K], name, {}, train, many)
            run_fold(wide[K], name, {}, train, many)
        got = clock.read() - before
        spent[name] = got.cpu_seconds
        say(f"{name}: {got.compiled} kernel(s) compiled, {got.cpu_seconds:.1f} s CPU "
            f"compiling or loading ({time.monotonic() - t0:.1f} s in all)")
    return spent


def compile_in_processes(learners: list[str], jobs: int,
                         say: Callable[[str], None] = lambda text: None) -> dict[str, float]:
    """`compile_kernels` in `jobs` processes, learners of one family (factory) in one
    process, so that no two processes compile a family's shared kernels at once (the
    cache is safe for it, `workbench.jit`, but the work would be done twice)."""
    if jobs <= 1 or len(learners) <= 1:
        return compile_kernels(learners, say)
    from concurrent.futures import ProcessPoolExecutor, as_completed
    import multiprocessing

    groups: dict[str, list[str]] = {}
    for name in learners:
        groups.setdefault(registry.get(name).factory.__qualname__, []).append(name)
    spent: dict[str, float] = {}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = [pool.submit(compile_kernels, names) for names in
                   sorted(groups.values(), key=len, reverse=True)]
        for future in as_completed(futures):
            got = future.result()
            for name, seconds in got.items():
                say(f"{name}: {seconds:.1f} s CPU compiling or loading")
            spent.update(got)
    return spent
