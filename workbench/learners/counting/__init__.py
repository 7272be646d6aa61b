"""The shared counting layer for count-based learners (AnDE family, KDB, plugins), one
concept a module:

* `layout` — how a block's cells are laid out (dense or sparse) and read by kernels;
* `combinations` — attribute combinations in colex order (the block order);
* `kernels` — the numba counting passes;
* `blocks` — `BlockStore`, generic additive joint-frequency tables;
* `budget` — what a layout costs and the memory budget of one model;
* `ande` — `AnDECounts`, the tables the AnDE family needs (SPEC §2).

The names below are the public API (plugins build on `AnDECounts` and `BlockStore`).
"""

from workbench.learners.counting.ande import AnDECounts
from workbench.learners.counting.blocks import BITMAP_MAX_CELLS, BlockStore
from workbench.learners.counting.budget import (
    MEMORY_BUDGET_ENV,
    estimate_block_bytes,
    layout_cells,
    memory_budget,
)
from workbench.learners.counting.combinations import colex_combinations, next_colex
from workbench.learners.counting.layout import (
    KIND_DENSE,
    KIND_EMPTY,
    KIND_SPARSE,
    code_dtype,
    lookup_k,
    lookup_sparse,
)

__all__ = ["AnDECounts", "BITMAP_MAX_CELLS", "BlockStore", "KIND_DENSE", "KIND_EMPTY",
           "KIND_SPARSE", "MEMORY_BUDGET_ENV", "code_dtype", "colex_combinations",
           "estimate_block_bytes", "layout_cells", "lookup_k", "lookup_sparse",
           "memory_budget", "next_colex"]
