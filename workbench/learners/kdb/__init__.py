"""KDB, selective KDB (SKDB) and TAN as specified in SPEC §4 (Martínez et al., JMLR 2016).

Shared machinery (all-nominal data, missing values as a distinct value):

* **Value codes** — an attribute with any missing training value gets one extra value ``?``
  (code = number of declared values); a missing test value of an attribute that had none in
  training is *invalid* (code −1): the attribute is left out as a child, and as a parent its
  configuration counts as unseen.
* **Structure** — MI(X_i; Y) and CMI(X_i; X_j | Y) from raw relative frequencies (log2,
  zero-count terms skipped). Each MI / CMI is the sum of its terms *sorted*, so that two
  attributes with the same count table up to a relabelling of values get bit-identical
  scores and exact ties are resolved by the SPEC rules (header order / order in L).
* **Counts** — for every attribute and every prefix depth j of its parent list, the parent
  configurations seen in training get compact ids (the rank of the mixed-radix index of
  the parent values among the seen ones). Depth ids are made global per attribute by an
  offset, and two sorted tables hold #(π, y) and #(π, x_i, y). When the full parent-value
  space is small the counts are taken on it directly (one increment per row, the shallower
  depths summed from the deepest); otherwise each depth ranks its keys by marking a dense
  array or sorting. Memory is O(N · depths) per attribute whatever the cardinalities.
* **Estimates** (m = 1 by default, parameter `m`; the AnDE family's `estimates` helpers) —
  P(y) = (#y + m/K)/(N + m); P(x_i | π, y) = (#(x_i, π, y) + m/|X_i|) / (#(π, y) + m); SKDB's
  leave-one-out the same with the held-out row's counts taken out. Classification multiplies the
  factors (no logarithms), lifting a row's product by an exact power of two before it could
  underflow, and normalises once. A factor is read from a direct table (indexed by the row's
  parent values), a table of the attribute's seen configurations × child values, or computed
  from the counts.

SKDB evaluates every candidate (attribute prefix l, k) with incremental leave-one-out: per
attribute (in MI order) every training row's count cell at each depth comes with the
tables; a numba kernel then subtracts the row's own counts, extends the running normalised
class distribution of every k by one factor and adds the loss, so the losses of all (l, k)
come out of one pass costing O(n · d · (k_max+1) · K).

The package follows the computation:
- `structure`: MI / CMI, the MI order, KDB parents and TAN's tree;
- `tables`: an attribute's count tables along its parent list and the LOO step of SKDB;
- `scoring`: classification — the tables as flat arrays, factor and direct tables, the
  compiled products;
- `model`: the learners (`KDB`, `TAN`, `SKDB`) and their registered variants.
"""

from workbench.learners.kdb.model import KDB, SKDB, TAN, BayesNetBase
from workbench.learners.kdb.structure import (
    conditional_mutual_information,
    kdb_parents,
    mi_order,
    mutual_information,
    tan_parents,
)

__all__ = [
    "KDB",
    "SKDB",
    "TAN",
    "BayesNetBase",
    "mutual_information",
    "conditional_mutual_information",
    "mi_order",
    "kdb_parents",
    "tan_parents",
]
