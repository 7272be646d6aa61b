"""Counts of distinct value tuples (attribute values and the class) that add up over chunks
of rows and over partial counts, at memory proportional to the number of distinct tuples,
not of rows: what a multi-pass learner keeps between chunks when its tables are sparse
(KDB's parent configurations, SKDB's leave-one-out cells).

A tuple is packed in mixed radix into one int64 key when the product of the radices fits in
62 bits (always, in practice); otherwise into several int64 words held in a structured array,
which NumPy sorts and searches lexicographically, so the same code serves both.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["TupleCounts", "merge_sorted_counts"]

_WORD = 1 << 62
_DENSE_KEYS = 1 << 20  # key spaces up to this size are counted with bincount


def merge_sorted_counts(keys_a: np.ndarray, counts_a: np.ndarray, keys_b: np.ndarray,
                        counts_b: np.ndarray, sign: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The union of two (sorted unique keys, counts) with the counts of equal keys added
    (`sign` −1: b's subtracted, and the keys whose count falls to 0 dropped, so that a
    total less a part holds exactly the keys the rest counted)."""
    if keys_b.size == 0:
        return keys_a, counts_a
    if keys_a.size == 0 and sign > 0:
        return keys_b, counts_b.astype(np.int64)
    keys, inv = np.unique(np.concatenate([keys_a, keys_b]), return_inverse=True)
    counts = np.bincount(inv.reshape(-1), weights=np.concatenate([counts_a, sign * counts_b]),
                         minlength=len(keys)).astype(np.int64)
    if sign < 0:
        kept = counts != 0
        keys, counts = keys[kept], counts[kept]
    return keys, counts


class TupleCounts:
    """Counts of the distinct rows of an (n, m) array of codes, column c in [0, radix[c])."""

    def __init__(self, radix: Sequence[int]) -> None:
        self.radix = np.maximum(np.asarray(radix, dtype=np.int64), 1)
        self.words: list[list[int]] = [[]]
        size = 1
        for c, r in enumerate(self.radix):
            if self.words[-1] and size * int(r) > _WORD:
                self.words.append([])
                size = 1
            self.words[-1].append(c)
            size *= int(r)
        self._dtype = None if len(self.words) == 1 else np.dtype(
            [(f"w{i}", np.int64) for i in range(len(self.words))])
        self.keys = self._empty()
        self.counts = np.zeros(0, dtype=np.int64)

    def _empty(self) -> np.ndarray:
        return np.zeros(0, dtype=self._dtype or np.int64)

    def encode(self, cols: np.ndarray) -> np.ndarray:
        """The key of every row of `cols` (n, m)."""
        cols = np.asarray(cols, dtype=np.int64)
        packed = []
        for word in self.words:
            key = np.zeros(cols.shape[0], dtype=np.int64)
            for c in word:
                key = key * self.radix[c] + cols[:, c]
            packed.append(key)
        if self._dtype is None:
            return packed[0]
        out = np.empty(cols.shape[0], dtype=self._dtype)
        for i, key in enumerate(packed):
            out[f"w{i}"] = key
        return out

    def decode(self) -> np.ndarray:
        """The distinct rows counted so far (in key order), as an (n_distinct, m) array."""
        out = np.zeros((len(self.keys), len(self.radix)), dtype=np.int64)
        for i, word in enumerate(self.words):
            key = (self.keys if self._dtype is None else self.keys[f"w{i}"]).copy()
            for c in reversed(word):
                key, out[:, c] = np.divmod(key, self.radix[c])
        return out

    def add(self, cols: np.ndarray, weights: np.ndarray | None = None) -> "TupleCounts":
        """Count the rows of `cols` (each `weights` times: integer counts, e.g. of another
        count's tuples; a key space no larger than a few times the rows is counted densely
        with bincount, a larger one by sorting)."""
        if len(cols):
            q = self.encode(cols)
            space = int(np.prod(self.radix, dtype=np.float64)) if self._dtype is None else -1
            if 0 < space <= max(_DENSE_KEYS, 4 * len(q)):
                dense = np.bincount(q, weights, minlength=space)
                keys = np.flatnonzero(dense)
                counts = dense[keys].astype(np.int64)
            elif weights is None:
                keys, counts = np.unique(q, return_counts=True)
            else:
                keys, inv = np.unique(q, return_inverse=True)
                counts = np.bincount(inv.reshape(-1), weights, len(keys)).astype(np.int64)
                keys, counts = keys[counts != 0], counts[counts != 0]
            self.keys, self.counts = merge_sorted_counts(self.keys, self.counts, keys, counts)
        return self

    def merge(self, other: "TupleCounts", sign: int = 1) -> "TupleCounts":
        """Add (`sign` −1: subtract) another partial count over the same columns."""
        if not np.array_equal(self.radix, other.radix):
            raise ValueError("TupleCounts.merge: different columns")
        self.keys, self.counts = merge_sorted_counts(self.keys, self.counts, other.keys,
                                                     other.counts, sign)
        return self

    def index(self, cols: np.ndarray) -> np.ndarray:
        """Position of every row's tuple among the distinct rows (−1 when never counted)."""
        q = self.encode(cols)
        if len(self.keys) == 0:
            return np.full(len(q), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.keys, q), len(self.keys) - 1)
        return np.where(self.keys[pos] == q, pos, -1).astype(np.int64)

    @property
    def nbytes(self) -> int:
        """Bytes held by the keys and counts."""
        return int(self.keys.nbytes + self.counts.nbytes)
