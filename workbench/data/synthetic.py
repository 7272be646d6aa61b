"""Seeded synthetic data from a known Bayesian network: streams with drift (tests and the
stream experiment) and large files (benchmarks), so that error is checkable.

`drifting_stream`: the class y takes K values with fixed prior; attribute i given y is
Normal(level(t) + μ_{i,y}, 1), with μ_{i,y} drawn once from Normal(0, separation²) and a
common level that drifts: level(t) = drift · t / 1000 (every value inflates with time, as
incomes do). Without drift (drift = 0) naive Bayes is the true model. With drift a cut
point fitted at the start of the stream goes stale — every later value lands in its top
bin — while quantile cut points that follow the stream (IDA, IDAW) keep a bin's meaning.
The same arguments always give the same rows (numpy's generator seeded with `seed`).
"""

from __future__ import annotations

import numpy as np

from workbench.data.dataset import Attribute, Dataset

__all__ = ["drifting_stream", "bayes_network_rows"]


def drifting_stream(n: int, attributes: int = 8, classes: int = 2, drift: float = 0.5,
                    separation: float = 1.0, seed: int = 1, name: str = "drift-stream"
                    ) -> Dataset:
    """`n` rows of the stream described in the module docstring."""
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, separation, size=(classes, attributes))
    prior = rng.dirichlet(np.full(classes, 4.0))
    y = rng.choice(classes, size=n, p=prior)
    level = drift * np.arange(n) / 1000.0
    X = level[:, None] + means[y] + rng.normal(size=(n, attributes))
    atts = tuple(Attribute(f"x{i + 1}") for i in range(attributes))
    cls = Attribute("class", tuple(f"c{k}" for k in range(classes)))
    return Dataset(name, atts, cls, np.round(X, 6), y, meta={
        "relation": f"{name}(n={n}, attributes={attributes}, classes={classes}, "
                    f"drift={drift}, separation={separation}, seed={seed})"})


def bayes_network_rows(n: int, attributes: int = 20, values: int = 4, classes: int = 2,
                       seed: int = 1, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows start .. start+n−1 of a nominal data set from a fixed naive-Bayes network
    (class → each attribute, `values` values each; conditional tables from `seed`), as
    (X codes int8 (n, attributes), y int8): a large file can be written block by block,
    each block drawn from its own generator seeded with (seed, start)."""
    tables = np.random.default_rng(seed)
    prior = tables.dirichlet(np.full(classes, 4.0))
    cpt = tables.dirichlet(np.full(values, 0.6), size=(classes, attributes))
    rng = np.random.default_rng([seed, start])
    y = rng.choice(classes, size=n, p=prior)
    u = rng.random((n, attributes))
    cum = np.cumsum(cpt[y], axis=2)  # (n, attributes, values)
    X = (u[:, :, None] > cum).sum(axis=2).clip(0, values - 1)
    return X.astype(np.int8), y.astype(np.int8)
