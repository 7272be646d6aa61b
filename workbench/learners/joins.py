"""Joins of n attributes for the AnJE family (SPEC §6.3): the compact index of the joint
values seen in training, their class counts and m-estimates.

Part of the counting layer: one counting pass over the rows, and only the joint values seen
in training are stored (an ID-like attribute such as splice's 3,178-valued instance name
costs one slot per row, never one per declared value). A join α is a colex-ordered subset of
n distinct attributes (`counts.colex_combinations`); its declared joint values number
|X_α| = Π_{j∈α} |X_j|, and value v of α has the *virtual key* ``base[α] + mixed-radix(v)``
(bases are the running sums of |X_α|, so keys of different joins never collide and sort by
join). A *slot* is the rank of a seen key: every per-value quantity (counts, estimates,
discriminative parameters) is an array with one row per slot.

Missing values follow SPEC §6.2, not §2: a missing value reads as the attribute's first
declared value (code 0), in training and at prediction time.
"""

from __future__ import annotations

from math import comb

import numpy as np

from workbench.errors import LearnerError
from workbench.learners.counting.budget import memory_budget
from workbench.learners.counting.combinations import colex_combinations
from workbench.learners.tuples import TupleCounts

LOG_FLOOR = 1e-75
"""Estimates are used through ln(max(P̂, LOG_FLOOR)) (SPEC §6.3)."""

_DENSE_MAP_KEYS = 1 << 24  # key spaces up to this size are compacted with a dense map,
_DENSE_MAP_MAX = 1 << 27  # or up to this one when not much larger than the keys themselves


WORKING_BYTES_PER_CELL = 32
"""Peak bytes per (row, join) while indexing: keys, slots and class cells (int64 each) and
the compaction's temporaries."""
def missing_as_first_value(codes: np.ndarray) -> np.ndarray:
    """Codes with −1 (missing) read as 0, the attribute's first declared value (§6.2)."""
    return np.where(codes < 0, 0, codes).astype(np.int64)


class JoinIndex:
    """The joins of order `n` over attributes with declared `cardinalities`: their keys, the
    seen keys of the training rows and the class counts of each seen joint value."""

    def __init__(self, cardinalities: np.ndarray, n_classes: int, n: int) -> None:
        cards = np.asarray(cardinalities, dtype=np.int64)
        A = int(cards.shape[0])
        if n < 1 or A < n:
            raise LearnerError(f"a join of order {n} needs at least {n} attribute(s), "
                               f"the data have {A}")
        self.n, self.K = int(n), int(n_classes)
        self.cards = cards
        self.joins = colex_combinations(A, n)  # (S, n)
        # mixed-radix strides per join position, and the declared size |X_α| of each join
        sub = cards[self.joins]  # (S, n)
        self.sizes = np.prod(sub, axis=1, dtype=np.int64)
        strides = np.ones_like(sub)
        for t in range(n - 2, -1, -1):
            strides[:, t] = strides[:, t + 1] * sub[:, t + 1]
        self.strides = strides
        self.base = np.concatenate(([0], np.cumsum(self.sizes)[:-1])).astype(np.int64)
        self.n_keys = int(self.sizes.sum())
        self.seen_keys = np.zeros(0, dtype=np.int64)  # sorted; slot = position
        self.counts = np.zeros((0, self.K), dtype=np.int64)  # #(x_α = v, y) per slot
        self.class_counts = np.zeros(self.K, dtype=np.int64)

    @property
    def n_joins(self) -> int:
        return int(self.joins.shape[0])

    @property
    def n_slots(self) -> int:
        return int(self.seen_keys.shape[0])

    def keys(self, codes: np.ndarray) -> np.ndarray:
        """(rows, S) virtual keys of each row's joint value of every join (codes ≥ 0)."""
        codes = np.asarray(codes, dtype=np.int64)
        out = np.broadcast_to(self.base, (codes.shape[0], self.n_joins)).copy()
        for t in range(self.n):
            out += codes[:, self.joins[:, t]] * self.strides[:, t]
        return out

    def fit(self, codes: np.ndarray, y: np.ndarray, budget: int | None = None) -> np.ndarray:
        """Count the training rows (codes ≥ 0, classes 0..K−1) in one pass; returns the
        (rows, S) slot of each row's value of every join. Refuses, before allocating, when
        the index would need more than `budget` bytes (default `memory_budget()`)."""
        need = WORKING_BYTES_PER_CELL * int(codes.shape[0]) * self.n_joins
        budget = memory_budget() if budget is None else int(budget)
        if need > budget:
            raise LearnerError(
                f"joins of order {self.n}: {self.n_joins:,} attribute subsets × "
                f"{codes.shape[0]:,} rows need about {need / 2**30:.1f} GiB, over the memory "
                f"budget of {budget / 2**30:.1f} GiB; use a lower order")
        keys = self.keys(codes)
        flat = keys.ravel()
        if self.n_keys <= max(_DENSE_MAP_KEYS, min(2 * flat.size, _DENSE_MAP_MAX)):
            seen = np.zeros(self.n_keys, dtype=bool)
            seen[flat] = True
            self.seen_keys = np.flatnonzero(seen).astype(np.int64)
            rank = np.cumsum(seen, dtype=np.int64) - 1
            slots = rank[keys]
        else:
            self.seen_keys, inverse = np.unique(flat, return_inverse=True)
            slots = inverse.reshape(keys.shape).astype(np.int64)
        y = np.asarray(y, dtype=np.int64)
        self.class_counts = np.bincount(y, minlength=self.K)[: self.K].astype(np.int64)
        cells = slots * self.K + y[:, None]
        self.counts = np.bincount(cells.ravel(), minlength=self.n_slots * self.K) \
            .reshape(self.n_slots, self.K).astype(np.int64)
        return slots

    def add(self, codes: np.ndarray, y: np.ndarray) -> "JoinIndex":
        """Count a chunk of training rows (out of core; `finish` then makes the slots):
        the distinct (key, class) cells are kept, so memory follows the seen joint values,
        not the rows."""
        if getattr(self, "_pending", None) is None:
            self._pending = TupleCounts([self.n_keys, self.K])
        y = np.asarray(y, dtype=np.int64)
        keys = self.keys(codes)
        self._pending.add(np.column_stack([keys.ravel(), np.repeat(y, self.n_joins)]))
        self.class_counts = self.class_counts + np.bincount(y, minlength=self.K)[: self.K]
        return self

    def finish(self) -> "JoinIndex":
        """The seen keys and counts of the chunks added: what `fit` gives on all of them."""
        pending = getattr(self, "_pending", None)
        cells = pending.decode() if pending is not None else np.zeros((0, 2), np.int64)
        self.seen_keys, inverse = np.unique(cells[:, 0], return_inverse=True)
        self.counts = np.zeros((len(self.seen_keys), self.K), dtype=np.int64)
        if len(cells):
            self.counts[inverse.reshape(-1), cells[:, 1]] = pending.counts
        self._pending = None
        return self

    def lookup(self, codes: np.ndarray) -> np.ndarray:
        """(rows, S) slots of test rows' joint values; −1 where the value was never seen."""
        keys = self.keys(codes)
        if self.n_slots == 0:
            return np.full(keys.shape, -1, dtype=np.int64)
        pos = np.searchsorted(self.seen_keys, keys)
        pos = np.minimum(pos, self.n_slots - 1)
        return np.where(self.seen_keys[pos] == keys, pos, -1)

    def slot_join(self) -> np.ndarray:
        """The join (0..S−1) each slot belongs to."""
        return np.searchsorted(self.base, self.seen_keys, side="right") - 1

    # ----- m-estimates (SPEC §6.3, m = 1) -------------------------------------------------
    def log_prior(self) -> np.ndarray:
        """L(y) = ln max((#y + 1/K) / (N + 1), floor)."""
        N = float(self.class_counts.sum())
        return np.log(np.maximum((self.class_counts + 1.0 / self.K) / (N + 1.0), LOG_FLOOR))

    def log_conditional(self) -> np.ndarray:
        """(slots, K) L(x_α = v | y) = ln max((#(v, y) + 1/|X_α|) / (#y + 1), floor)."""
        inv = 1.0 / self.sizes[self.slot_join()].astype(np.float64)
        p = (self.counts + inv[:, None]) / (self.class_counts + 1.0)[None, :]
        return np.log(np.maximum(p, LOG_FLOOR))

    def log_unseen(self) -> np.ndarray:
        """(S, K) L of a declared joint value never seen in training (count 0)."""
        inv = 1.0 / self.sizes.astype(np.float64)
        p = inv[:, None] / (self.class_counts + 1.0)[None, :]
        return np.log(np.maximum(p, LOG_FLOOR))


def anje_exponent(n_attributes: int, n: int) -> float:
    """e_n = 1 / C(A−1, n−1) (SPEC §6.4): 1 for naive Bayes, 1/(A−1) for pairs."""
    return 1.0 / comb(n_attributes - 1, n - 1)

