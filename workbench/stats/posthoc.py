"""All-pairs post hoc tests after a Friedman test: Nemenyi, Holm and Shaffer's static
procedure on the average ranks (García & Herrera 2008, "An extension on 'Statistical
comparisons of classifiers over multiple data sets' for all pairwise comparisons").

For k learners with average ranks R over N data sets, each pair (i, j) has
z = (R_i − R_j) / sqrt(k (k + 1) / (6 N)) and the two-sided normal p-value p. With the
m = k (k − 1) / 2 p-values in increasing order p_1 ≤ … ≤ p_m, the adjusted p-values are

- ``nemenyi``: P(Q ≥ √2·|z|) for Q the studentized range of k means (infinite degrees of
  freedom): the pairs it finds are those whose ranks differ by more than Nemenyi's critical
  difference (`ranks.nemenyi_cd`), the bars the report has always drawn;
- ``holm``: min(1, max_{j ≤ i} (m − j + 1) · p_j);
- ``shaffer`` (static): min(1, max_{j ≤ i} t_j · p_j), where t_j is the largest number of
  hypotheses that can be true together once j − 1 of them are false: the largest element
  ≤ m − j + 1 of Shaffer's set S(k) of possible numbers of true hypotheses,
  S(k) = ∪_{g=1..k} {C(g, 2) + s : s ∈ S(k − g)}, S(0) = S(1) = {0} (the learners fall into
  groups of equal ones; g is the size of the group holding the first learner).

A pair differs significantly when its adjusted p-value is below α.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from workbench.stats import scipy_stats

if TYPE_CHECKING:  # (pandas only where a table is made: a run's config reads METHODS)
    import pandas as pd

METHODS = ("nemenyi", "holm", "shaffer")
NAMES = {"nemenyi": "Nemenyi's test", "holm": "Holm's procedure",
         "shaffer": "Shaffer's static procedure"}


@lru_cache(maxsize=None)
def shaffer_set(k: int) -> frozenset[int]:
    """S(k): the numbers of the k(k−1)/2 pairwise hypotheses that can be true at once."""
    if k <= 1:
        return frozenset({0})
    return frozenset(math.comb(g, 2) + s for g in range(1, k + 1)
                     for s in shaffer_set(k - g))


def shaffer_multipliers(k: int) -> list[int]:
    """t_1 … t_m of Shaffer's static procedure for k learners (m = k(k−1)/2)."""
    m = math.comb(k, 2)
    possible = sorted(shaffer_set(k))
    return [max(s for s in possible if s <= m - i) for i in range(m)]


def adjust(p: np.ndarray, k: int, method: str) -> np.ndarray:
    """Holm's or Shaffer's adjusted p-values of the m = k(k−1)/2 pairwise p-values `p`
    (any order)."""
    if method not in ("holm", "shaffer"):
        raise ValueError(f"posthoc: step-down method {method!r} (holm or shaffer)")
    p = np.asarray(p, dtype=np.float64)
    m = p.size
    if m != math.comb(k, 2):
        raise ValueError(f"posthoc: {m} p-values for k = {k} learners")
    order = np.argsort(p, kind="mergesort")
    if method == "holm":
        factors = np.arange(m, 0, -1, dtype=np.float64)
    else:
        factors = np.asarray(shaffer_multipliers(k), dtype=np.float64)
    scaled = np.maximum.accumulate(factors * p[order])
    out = np.empty(m)
    out[order] = np.minimum(scaled, 1.0)
    return out


def pairwise(avg_ranks: pd.Series, n_datasets: int, method: str,
             alpha: float = 0.05) -> pd.DataFrame:
    """Every learner pair (in rank-table order): z, p, the adjusted p and whether they
    differ at `alpha`."""
    import pandas as pd

    if method not in METHODS:
        raise ValueError(f"posthoc: unknown method {method!r} (choose {', '.join(METHODS)})")
    names = list(avg_ranks.index)
    k = len(names)
    se = math.sqrt(k * (k + 1) / (6.0 * n_datasets))
    pairs = list(combinations(range(k), 2))
    z = np.array([(avg_ranks.iloc[i] - avg_ranks.iloc[j]) / se for i, j in pairs])
    p = 2.0 * scipy_stats().norm.sf(np.abs(z))
    if not pairs:
        adjusted = np.empty(0)
    elif method == "nemenyi":
        adjusted = scipy_stats().studentized_range.sf(math.sqrt(2.0) * np.abs(z), k, math.inf)
    else:
        adjusted = adjust(p, k, method)
    return pd.DataFrame({"a": [names[i] for i, _ in pairs], "b": [names[j] for _, j in pairs],
                         "z": z, "p": p, "p_adjusted": adjusted,
                         "significant": adjusted < alpha})


def groups(avg_ranks: pd.Series, table: pd.DataFrame) -> list[tuple[str, ...]]:
    """Maximal runs of learners, in rank order, no two of which differ significantly in
    `table` (`pairwise`'s): the bars of a critical-difference diagram."""
    order = list(avg_ranks.sort_values(kind="mergesort").index)
    differ = {frozenset((a, b)) for a, b, s in zip(table.a, table.b, table.significant) if s}
    out: list[tuple[str, ...]] = []
    last_end = -1
    for i in range(len(order)):
        j = i
        while j + 1 < len(order) and not any(
                frozenset((order[h], order[j + 1])) in differ for h in range(i, j + 1)):
            j += 1
        if j > i and j > last_end:
            out.append(tuple(order[i: j + 1]))
            last_end = j
    return out
