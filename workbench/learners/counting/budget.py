"""What a count layout costs and what the machine allows: the memory budget of one
model, the compact and naive layouts' cells (Salem et al., Section 3) and the bytes a
`BlockStore` would allocate, computed before allocating anything."""

from __future__ import annotations

import os
import re
from itertools import repeat
from math import comb
from typing import Sequence

import numpy as np

from workbench.errors import LearnerError
from workbench.learners.counting.combinations import colex_combinations
from workbench.learners.counting.blocks import BlockStore

# ----- sizes: what a layout costs, and what the machine allows ---------------------------------
MEMORY_FRACTION = 0.5
"""Default memory budget of one model: this share of the machine's physical memory."""
MEMORY_BUDGET_ENV = "WORKBENCH_MEMORY_BUDGET"
"""Environment variable overriding the budget: bytes, with an optional K/M/G/T suffix."""
ENUMERATE_BLOCKS = 2_000_000
"""Levels with at most this many attribute combinations are sized block by block (dense or
sparse as `BlockStore` would store them); larger ones by the all-dense bound."""
BLOCK_META_BYTES = 16
"""Bytes of `BlockStore` bookkeeping per block and per int64 field (with transient copies)."""


def memory_budget() -> int:
    """Bytes one model may allocate: ``$WORKBENCH_MEMORY_BUDGET`` if set, else
    `MEMORY_FRACTION` of physical memory."""
    text = os.environ.get(MEMORY_BUDGET_ENV, "").strip()
    if text:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?", text, flags=re.IGNORECASE)
        if not m:
            raise LearnerError(f"{MEMORY_BUDGET_ENV}={text!r}: expected bytes with an optional "
                               "K, M, G or T suffix (e.g. 8G)")
        scale = 1024 ** " KMGT".index(m.group(2).upper() or " ")
        return int(float(m.group(1)) * scale)
    try:
        return int(MEMORY_FRACTION * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # no POSIX sysconf: no limit we can read
        return 1 << 62


def elementary_symmetric(values: Sequence[int], top: int) -> list[int]:
    """[e_0, …, e_top] of the values (exact integers): e_l = Σ over l-subsets of Π values,
    the number of cells of all l-attribute combinations over `values` cardinalities.

    By Newton's identities from the power sums p_i = Σ v^i (each one pass in C; exact, the
    division by l leaves no remainder): l · e_l = Σ_{i=1..l} (−1)^(i−1) e_(l−i) p_i. (The
    product Π (1 + v·t) value by value was a Python loop of d · top steps: a tenth of
    naive Bayes' fit on musk1's 166 attributes.)"""
    vals = list(map(int, values))
    p = [0, sum(vals)] + [sum(map(pow, vals, repeat(i))) for i in range(2, top + 1)]
    e = [1]
    for l in range(1, top + 1):
        e.append(sum((-1) ** (i - 1) * e[l - i] * p[i] for i in range(1, l + 1)) // l)
    return e


def layout_cells(cardinalities: Sequence[int], n_classes: int, n: int) -> tuple[int, int]:
    """(compact, naive) cells of AnDE-of-order-n frequency tables (Salem et al., Section 3).

    Compact: one table per attribute combination of size 1..n+1, K · Σ_l e_l(|X_i|).
    Naive: the (n+1)-dimensional matrix over all V = Σ|X_i| attribute values with the
    lower-order frequencies on its diagonals, K · C(V + n, n + 1) — it also holds the
    impossible combinations of two values of one attribute. The paper's AODE example
    (|X| = 2, 3): 2-combinations 10 naive → 6 compact."""
    cards = [int(c) for c in cardinalities]
    e = elementary_symmetric(cards, n + 1)
    return n_classes * sum(e[1:]), n_classes * comb(sum(cards) + n, n + 1)


def estimate_block_bytes(cardinalities: Sequence[int], n_classes: int, levels: Sequence[int],
                         rows: int, conditioned: int = 0,
                         enumerate_blocks: int = ENUMERATE_BLOCKS) -> int:
    """Bytes a `BlockStore` of every attribute combination of each size in `levels` would
    allocate for `rows` training rows (cells and bookkeeping), `conditioned` times more for
    the "child missing" copies of the parent levels; computed before allocating anything.
    Levels of more than `enumerate_blocks` combinations are bounded as all dense (a sparse
    block's 16 bytes per row ≤ its dense cells' 4 bytes each, as it has over 16 cells per
    row): with 0, a bound of the whole store without enumerating a block."""
    cards = np.asarray(cardinalities, dtype=np.int64)
    d = int(cards.shape[0])
    sparse_min = BlockStore.sparse_threshold(int(rows))  # (as the store will decide)
    e = elementary_symmetric(cards.tolist(), max(levels, default=0))
    total = 0
    for l in levels:
        blocks = comb(d, l)
        meta = blocks * BLOCK_META_BYTES * (3 * l + 8)
        if 0 < blocks <= enumerate_blocks:
            size = np.prod(cards[colex_combinations(d, l)], axis=1) * n_classes
            cells = int(np.where(size > sparse_min, 0, size).sum()) * 4
            cells += int(np.minimum(size[size > sparse_min], rows).sum()) * 16
        else:
            cells = e[l] * n_classes * 4
        total += (1 + conditioned) * (meta + cells) if l < max(levels) else meta + cells
    return int(total)
