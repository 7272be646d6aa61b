"""The paired benchmarks' common input: a seeded 50/50 split of a catalog data set with MDL
fitted on the training half (imported by the scripts beside it)."""

from __future__ import annotations

import numpy as np


def discretised_halves(slug: str, seed: int = 1, raw: bool = False):
    """(train, test) of data set `slug` found along the catalog search path, both
    discretised by the MDL cuts of the training half (with ``raw``, also the undiscretised
    halves: (train, test, raw_train, raw_test)); None if the data set is not found."""
    from workbench.data.catalog import find_dataset, load_dataset
    from workbench.discretize import fit_discretizer

    path = find_dataset(slug)
    if path is None:
        return None
    data = load_dataset(path).without_missing_class()
    perm = np.random.default_rng(seed).permutation(data.n_instances)
    half = data.n_instances // 2
    raw_tr, raw_te = data.take(np.sort(perm[:half])), data.take(np.sort(perm[half:]))
    disc = fit_discretizer("mdl", raw_tr)
    out = (disc.transform(raw_tr), disc.transform(raw_te))
    return out + (raw_tr, raw_te) if raw else out


def each_split(slugs: list[str], seed: int = 1, width: int = 10):
    """(slug, train, test) for each data set found (`discretised_halves`); a line for each
    one that is not (its name padded to `width`, as the table's first column)."""
    for slug in slugs:
        halves = discretised_halves(slug, seed)
        if halves is None:
            print(f"{slug:<{width}} (not found along the search path: skipped)", flush=True)
            continue
        yield slug, *halves
