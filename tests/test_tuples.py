"""Additive counts kept between chunks by multi-pass learners: distinct-tuple counts
(one or several key words) and KDB's structure counts, merged = counted at once."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.learners.kdb import conditional_mutual_information, mutual_information
from workbench.learners.kdb.structure import StructureCounts
from workbench.learners.tuples import TupleCounts, merge_sorted_counts


@pytest.mark.parametrize("radix", [[3, 4, 2], [2**40, 2**30, 5, 3]])
def test_tuple_counts_in_chunks_equal_np_unique(radix):
    rng = np.random.default_rng(0)
    cols = np.stack([rng.integers(0, min(r, 6), 1000) for r in radix], axis=1)
    if radix[0] > 10:
        cols[:, 0] *= 2**35  # large codes: the key needs two words
    a = TupleCounts(radix).add(cols[:300]).add(cols[300:])
    b = TupleCounts(radix).add(cols[:10]).merge(TupleCounts(radix).add(cols[10:]))
    assert len(a.words) == (1 if radix[0] < 10 else 2)
    rows, counts = np.unique(cols, axis=0, return_counts=True)
    for t in (a, b):
        np.testing.assert_array_equal(t.decode(), rows)
        np.testing.assert_array_equal(t.counts, counts)
    np.testing.assert_array_equal(a.index(rows), np.arange(len(rows)))
    assert a.index(np.ones((1, len(radix)), dtype=np.int64) * 7)[0] == -1


def test_merge_sorted_counts():
    k, c = merge_sorted_counts(np.array([1, 5]), np.array([2, 3]), np.array([0, 5, 9]),
                               np.array([1, 1, 4]))
    assert k.tolist() == [0, 1, 5, 9] and c.tolist() == [1, 2, 4, 4]


def test_structure_counts_merged_equal_the_in_memory_bits():
    """MI and CMI from chunks counted apart and merged (with a spare `?` code per attribute
    and one pair over the dense limit) are the in-memory functions' bits."""
    rng = np.random.default_rng(3)
    n, K = 2000, 3
    y = rng.integers(0, K, n)
    X = np.stack([(y + rng.integers(0, 2, n)) % 4, rng.integers(0, 4, n),
                  rng.integers(0, 400, n), rng.integers(0, 300, n)], axis=1)
    cards = np.array([4, 4, 400, 300])
    parts = [StructureCounts(cards + 1, K).add(X[lo:lo + 333], y[lo:lo + 333])
             for lo in range(0, n, 333)]
    sc = parts[0]
    for p in parts[1:]:
        sc.merge(p)
    assert (2, 3) in sc.sparse and sc.n == n
    np.testing.assert_array_equal(sc.mutual_information(), mutual_information(X, y, cards, K))
    np.testing.assert_array_equal(sc.conditional_mutual_information(),
                                  conditional_mutual_information(X, y, cards, K))
