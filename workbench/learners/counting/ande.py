"""`AnDECounts`: the count tables the AnDE family needs (SPEC §2).

Class counts, all attribute combinations of sizes 1..L (colex order, so a sorted
combination's block id is ``level_base[l] + rank(comb)``), and, for attributes that have
missing values, the "child missing" blocks ``#(y, x_s, x_c missing)`` of SPEC §2's
denominators. Class-free counts #(x_i) and #(x_i, x_j) (subsumption resolution) are the
class sums of the level-1 and level-2 blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Iterable, Sequence

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.counting.blocks import BlockStore, KeptLayouts
from workbench.learners.counting.combinations import binomial_table, colex_combinations
from workbench.learners.counting.layout import KIND_DENSE, KIND_EMPTY, code_range
from workbench.rowops import class_counts as count_classes

# ----- the AnDE-family count tables --------------------------------------------------------
TEMPLATE_BLOCKS = 1 << 14
"""Layouts of at most this many blocks are kept (the last 8, `_template`) for the
next `AnDECounts` of the same shape — the next fold or fit — to share: a small model's
layout cost its fit more than its counting (nursery A1DE: 0.2 of 1.2 ms). Larger layouts
are laid out anew: their counting dwarfs it."""
_TEMPLATES = KeptLayouts(8)


def _template(cards: np.ndarray, K: int, max_level: int, rows_hint: int | None) -> tuple:
    """(store with every combination of sizes 1..max_level and no rows counted, level
    bases, combinations per level, binomial table) for int64 cardinalities `cards`, shared
    from the last few layouts when small (`TEMPLATE_BLOCKS`). The key holds the store's
    sparse threshold (`BlockStore.sparse_threshold`), not the rows hint it comes from."""
    d = int(cards.shape[0])
    if sum(math.comb(d, l) for l in range(1, max_level + 1)) > TEMPLATE_BLOCKS:
        return _layout(cards, K, max_level, rows_hint)
    key = (cards.tobytes(), K, max_level, BlockStore.sparse_threshold(rows_hint))
    return _TEMPLATES.get(key, lambda: _layout(cards, K, max_level, rows_hint))


def _layout(cards: np.ndarray, K: int, max_level: int, rows_hint: int | None) -> tuple:
    """`_template`'s tuple, laid out now."""
    d = int(cards.shape[0])
    combos = [colex_combinations(d, l) for l in range(1, max_level + 1)]
    blocks = np.full((sum(c.shape[0] for c in combos), max_level), -1, dtype=np.int64)
    base = np.zeros(max_level + 2, dtype=np.int64)
    ncomb = np.zeros(max_level + 2, dtype=np.int64)
    at = 0
    for l, c in enumerate(combos, start=1):
        blocks[at:at + c.shape[0], :l] = c
        base[l] = at
        ncomb[l] = c.shape[0]
        at += c.shape[0]
    base[max_level + 1] = at
    store = BlockStore.template(cards, K, blocks, rows_hint)  # (it copies `cards`)
    return store, base, ncomb, binomial_table(d, max_level + 1)


@dataclass
class _Levels:
    base: np.ndarray  # level_base[l] = id of the first block of level l (l = 0 unused)
    ncomb: np.ndarray  # C(d, l)


class AnDECounts:
    """Class counts + all attribute combinations of size 1..max_level, with missing slots.

    * ``class_counts[y]`` = #y over class-known rows, ``n`` = their number (N);
    * level l (1 ≤ l ≤ max_level): block ``level_base[l] + rank(s)`` counts #(x_s, y) for the
      sorted l-combination s (colex rank, see `rank`);
    * for every attribute c that has had a missing value and every parent level l ≤
      ``parent_levels``: block ``miss_base[l, c] + rank(s)`` counts #(y, x_s, x_c missing)
      (empty when c ∈ s). These give SPEC §2's denominators #(y, x_s) − #(y, x_s, x_c missing).

    `partial_fit` is additive: chunked training gives identical counts to one call.
    """

    def __init__(
        self,
        cardinalities: Sequence[int],
        n_classes: int,
        max_level: int,
        parent_levels: int | None = None,
        rows_hint: int | None = None,
    ) -> None:
        self.cards = np.asarray(cardinalities, dtype=np.int64)
        self.d = int(self.cards.shape[0])
        self.K = int(n_classes)
        if self.K < 1:
            raise LearnerError("the class attribute declares no values")
        self.requested_levels = (int(max_level), parent_levels)
        self.max_level = min(int(max_level), self.d)
        self.parent_levels = (self.max_level - 1 if parent_levels is None
                              else min(int(parent_levels), self.max_level))
        self.class_counts = np.zeros(self.K, dtype=np.int64)
        template, base, ncomb, self.binom = _template(self.cards, self.K, self.max_level,
                                                      rows_hint)
        self.store = template.empty_copy(rows_hint)
        self.levels = _Levels(base, ncomb)
        self.miss_base = np.full((self.max_level + 1, max(self.d, 1)), -1, dtype=np.int64)
        self.has_missing = np.zeros(self.d, dtype=bool)

    # ----- construction ----------------------------------------------------------------
    @classmethod
    def from_dataset(cls, data: Dataset, max_level: int,
                     parent_levels: int | None = None) -> "AnDECounts":
        """Count an all-nominal Dataset (missing-class rows ignored) in one pass."""
        data = data.without_missing_class()
        out = cls(data.cardinalities, data.n_classes, max_level, parent_levels,
                  rows_hint=data.n_instances)
        out.partial_fit(data.codes(), data.y)
        return out

    def partial_fit(self, codes: np.ndarray, y: np.ndarray, columns: bool = False,
                    n_jobs: int = 1, ranges: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> "AnDECounts":
        """Add rows (int codes (n, d), −1 missing; rows with class −1 are ignored). With
        ``columns``, codes are (d, n) in `code_dtype` (`Dataset.column_codes`), the layout
        the kernels read, so no copy is made; `n_jobs` threads count (`BlockStore.add`).
        `ranges`: each attribute's (lowest, highest) code over these rows, when the caller
        has them (`code_range`), so they are not scanned again."""
        codes = np.asarray(codes)
        y = np.asarray(y, dtype=np.int64)
        keep = y >= 0
        if not keep.all():
            codes, y = (codes[:, keep], y[keep]) if columns else (codes[keep], y[keep])
        if y.shape[0] == 0:
            return self
        d = codes.shape[0 if columns else 1]
        if d != self.d:
            raise LearnerError(f"expected {self.d} attributes, got {d}")
        if ranges is not None and keep.all():
            lo, hi = ranges
        elif columns:
            lo, hi = code_range(np.ascontiguousarray(codes))
        else:
            lo, hi = codes.min(axis=0), codes.max(axis=0)
        bad = (hi >= self.cards) | (lo < -1)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise LearnerError(f"attribute {j + 1}: value code outside its declared values")
        self.add_missing_blocks(np.flatnonzero((lo < 0) & ~self.has_missing))
        self.class_counts += count_classes(y, self.K)
        self.store.add(codes, y, columns, n_jobs)
        return self

    def add_missing_blocks(self, columns: Sequence[int] | np.ndarray) -> None:
        """Declare that each attribute of `columns` (not yet declared) has missing values:
        its child-missing blocks, column by column and level by level, are added to the
        store in one call (one call per column copied the whole dense table each time:
        cylinder-bands' 26 such columns cost an A2DE fit 0.37 of its 0.40 s)."""
        columns = [int(c) for c in columns if not self.has_missing[int(c)]]
        if not columns or self.parent_levels < 1:
            self.has_missing[columns] = True
            return
        combos = [colex_combinations(self.d, l) for l in range(1, self.parent_levels + 1)]
        blocks, conds, empty, firsts = [], [], [], []
        start = 0
        for c in columns:
            for l, comb in enumerate(combos, start=1):
                firsts.append((l, c, start if comb.shape[0] else -1))
                start += comb.shape[0]
                blocks.append(np.pad(comb, ((0, 0), (0, self.parent_levels - l)),
                                     constant_values=-1))
                conds.append(np.full(comb.shape[0], c))
                empty.append((comb == c).any(axis=1))
        ids = self.store.add_blocks(np.concatenate(blocks), np.concatenate(conds),
                                    empty=np.concatenate(empty))
        for l, c, at in firsts:
            self.miss_base[l, c] = ids[at] if at >= 0 else -1
        self.has_missing[columns] = True

    def merge(self, other: "AnDECounts", sign: int = 1) -> "AnDECounts":
        """Add the counts of `other`, which has the same layout (counted elsewhere); with
        ``sign=-1`` subtract them (`other` counted a part of the rows counted here)."""
        if not (np.array_equal(self.cards, other.cards) and self.K == other.K
                and self.max_level == other.max_level
                and np.array_equal(self.miss_base, other.miss_base)):
            raise LearnerError("cannot merge AnDE counts with different layouts")
        self.class_counts += sign * other.class_counts
        self.store.merge(other.store, sign)
        self.has_missing |= other.has_missing
        return self

    def with_constants(self, cardinalities: Sequence[int], old_to_new: Sequence[int],
                       rows_hint: int | None = None) -> "AnDECounts":
        """These counts over a larger attribute set: old attribute i becomes attribute
        ``old_to_new[i]`` (increasing) and every other attribute is single-valued and was
        present in every row counted so far, so a block containing it holds the counts of the
        block without it (the empty block: the class counts). Used when an attribute left
        out of the counts as constant has its first missing value (`AnDE`)."""
        old_to_new = np.asarray(old_to_new, dtype=np.int64)
        cards = np.asarray(cardinalities, dtype=np.int64)
        new_to_old = np.full(cards.shape[0], -1, dtype=np.int64)
        new_to_old[old_to_new] = np.arange(self.d)
        if (np.diff(old_to_new) <= 0).any() or (cards[new_to_old < 0] != 1).any():
            raise LearnerError("with_constants: the added attributes must be single-valued "
                               "and the old ones keep their order")
        out = AnDECounts(cards, self.K, self.requested_levels[0], self.requested_levels[1],
                         rows_hint=rows_hint)
        out.add_missing_blocks(old_to_new[np.flatnonzero(self.has_missing)])
        out.class_counts = self.class_counts.copy()
        st = out.store
        if self.store.dense.dtype != st.dense.dtype:
            st.dense = st.dense.astype(self.store.dense.dtype)
        keys, vals = [], []
        for b in range(st.n_blocks):
            if st.kind[b] == KIND_EMPTY:
                continue
            old = [int(new_to_old[a]) for a in st.block_attributes(b) if new_to_old[a] >= 0]
            c = int(st.bcond[b])
            if c < 0:
                src = (self.store.block(self.block_id(old)) if old else self.class_counts)
            elif old:
                src = self.child_missing(old, int(new_to_old[c]))
            else:  # #(y, x_c missing) = #y − Σ_v #(x_c = v, y)
                src = self.class_counts - self.store.block(self.block_id([new_to_old[c]])).sum(0)
            flat = np.asarray(src, dtype=np.int64).ravel()
            if st.kind[b] == KIND_DENSE:
                st.dense[st.off[b]: st.off[b] + flat.size] = flat
            else:
                nz = np.flatnonzero(flat)
                keys.append(st.vbase[b] + nz)
                vals.append(flat[nz])
        if keys:
            st._merge_sparse(np.concatenate(keys), np.concatenate(vals))
        st.n_rows = self.store.n_rows
        return out

    # ----- reading ---------------------------------------------------------------------
    @property
    def n(self) -> int:
        """N: class-known training rows counted."""
        return int(self.class_counts.sum())

    def rank(self, attrs: Iterable[int]) -> int:
        """Colex rank of a sorted attribute combination."""
        return int(sum(self.binom[a, t + 1] for t, a in enumerate(sorted(attrs))))

    def block_id(self, attrs: Iterable[int]) -> int:
        return int(self.block_ids([tuple(int(a) for a in attrs)])[0])

    def block_ids(self, sets: Sequence[Sequence[int]]) -> np.ndarray:
        """`block_id` of each attribute set (int64), ranked a whole size at a time."""
        out = np.empty(len(sets), dtype=np.int64)
        by_size: dict[int, list[int]] = {}
        for i, s in enumerate(sets):
            by_size.setdefault(len(s), []).append(i)
        for size, at in by_size.items():
            rows = np.sort(np.array([sets[i] for i in at], dtype=np.int64)
                           .reshape(len(at), size), axis=1)
            out[at] = (int(self.levels.base[size])
                       + self.binom[rows, np.arange(1, size + 1)].sum(axis=1))
        return out

    def _attributes(self, attrs: Iterable[int], what: str) -> list[int]:
        """`attrs` sorted, each an attribute index given once (else one clear error)."""
        s = sorted(int(a) for a in attrs)
        for a in s:
            if not 0 <= a < self.d:
                raise LearnerError(f"AnDECounts.{what}: attribute {a} is out of range "
                                   f"(0 … {self.d - 1})")
        if len(set(s)) != len(s):
            raise LearnerError(f"AnDECounts.{what}: an attribute is given twice in {s}")
        return s

    def joint(self, attrs: Sequence[int]) -> np.ndarray:
        """#(x_attrs, y) as a dense array (|X_a1|, …, K) for sorted or unsorted attrs
        (1 to `max_level` distinct attributes; no attribute: the class counts)."""
        s = self._attributes(attrs, "joint")
        if not s:
            return self.class_counts.astype(np.int64)
        if len(s) > self.max_level:
            raise LearnerError(f"AnDECounts.joint: {len(s)} attributes, but combinations of at "
                               f"most {self.max_level} are counted")
        arr = self.store.block(self.block_id(s))
        order = [s.index(int(a)) for a in attrs]
        return np.transpose(arr, order + [len(s)])

    def child_missing(self, parents: Sequence[int], child: int) -> np.ndarray:
        """#(x_parents, x_child missing, y) as a dense array (|X_p1|, …, K), parents in
        increasing order: the stored block where there is one, else #(x_parents, y) −
        Σ_v #(x_parents, x_child = v, y) from the joint counts (no parent: from the class
        counts). A child among the parents, an index out of range, or a level that is
        counted neither way is an error."""
        s = self._attributes(parents, "child_missing")
        (c,) = self._attributes([child], "child_missing")
        if c in s:
            raise LearnerError(f"AnDECounts.child_missing: the child {c} is one of the "
                               f"parents {s}")
        if not self.has_missing[c]:
            return np.zeros(tuple(int(self.cards[a]) for a in s) + (self.K,), dtype=np.int64)
        if len(s) <= self.parent_levels and s and self.miss_base[len(s), c] >= 0:
            return self.store.block(int(self.miss_base[len(s), c]) + self.rank(s))
        if len(s) + 1 > self.max_level:
            raise LearnerError(f"AnDECounts.child_missing: {len(s)} parent(s) and a child "
                               f"need combinations of {len(s) + 1} attributes; at most "
                               f"{self.max_level} are counted")
        return self.joint(s) - self.joint([*s, c]).sum(axis=len(s))

    def value_counts(self, i: int) -> np.ndarray:
        """Class-free #(x_i) for every value of attribute i."""
        return self.joint([i]).sum(axis=-1)

    def pair_counts(self, i: int, j: int) -> np.ndarray:
        """Class-free #(x_i, x_j) as a (|X_i|, |X_j|) array (needs max_level ≥ 2)."""
        return self.joint([i, j]).sum(axis=-1)

    @property
    def nbytes(self) -> int:
        return self.store.nbytes + self.class_counts.nbytes

    def compact_bound_cells(self) -> int:
        """Σ over attribute combinations of size 0..max_level of Π|X_i|·K."""
        total = self.K
        for l in range(1, self.max_level + 1):
            b0, b1 = int(self.levels.base[l]), int(self.levels.base[l]) + int(self.levels.ncomb[l])
            total += int(self.store.bsize[b0:b1].sum())
        return total
