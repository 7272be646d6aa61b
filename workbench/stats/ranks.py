"""Average ranks, the Friedman test and the Nemenyi critical difference (Demšar 2006).

Ranks are computed per data set over the learners (best value = rank 1: the lowest, or the
highest for a metric where higher is better;
tied values share the average of the ranks they span) and averaged over data sets. Only
data sets on which every learner has a value enter (complete blocks).

Nemenyi: two learners differ significantly when their average ranks differ by at least
CD = q_α · sqrt(k (k + 1) / (6 N)), with
q_α = studentized-range quantile (1 − α; k, ∞) / √2.
For k = 10, N = 71, α = 0.05: q_α = 3.164, CD ≈ 1.608.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.ranking import midranks
from workbench.stats import scipy_stats



@dataclass(frozen=True)
class FriedmanResult:
    """Friedman test over N complete data sets and k learners."""

    statistic: float  # Friedman chi-square (tie-corrected, as scipy computes it)
    p_value: float
    iman_davenport_f: float  # Iman & Davenport's F statistic
    iman_davenport_p: float
    n_datasets: int
    n_learners: int
    average_ranks: pd.Series  # learner -> average rank, in the input column order


def complete_rows(matrix: pd.DataFrame) -> pd.DataFrame:
    """Rows (data sets) of a data set × learner matrix with no missing value."""
    return matrix.dropna(axis=0, how="any")


def rank_matrix(matrix: pd.DataFrame, *, lower_is_better: bool) -> pd.DataFrame:
    """Per-row ranks (1 = best: the lowest value, or the highest with
    ``lower_is_better=False``; ties get average ranks) of complete rows."""
    full = complete_rows(matrix)
    values = full.to_numpy(dtype=np.float64)
    if not lower_is_better:
        values = -values
    if values.size == 0:
        return pd.DataFrame(columns=matrix.columns, dtype=np.float64)
    ranks = np.vstack([midranks(row) for row in values])
    return pd.DataFrame(ranks, index=full.index, columns=matrix.columns)


def average_ranks(matrix: pd.DataFrame, *, lower_is_better: bool) -> pd.Series:
    """Average rank of each learner (column) over the complete data sets (rows)."""
    ranks = rank_matrix(matrix, lower_is_better=lower_is_better)
    if ranks.empty:
        return pd.Series(np.nan, index=matrix.columns, dtype=np.float64)
    return ranks.mean(axis=0)


def friedman_test(matrix: pd.DataFrame, *, lower_is_better: bool) -> FriedmanResult:
    """Friedman test of a data set × learner matrix on complete rows (its statistic does
    not depend on the direction; the average ranks do: rank 1 = best).

    Needs k ≥ 3 learners and N ≥ 2 data sets for a p-value; otherwise statistic and p are
    NaN. Uses ``scipy.stats.friedmanchisquare`` (with its tie correction) and derives Iman
    and Davenport's F = (N−1)χ² / (N(k−1) − χ²) with (k−1, (k−1)(N−1)) degrees of
    freedom.
    """
    full = complete_rows(matrix)
    n, k = full.shape
    avg = average_ranks(matrix, lower_is_better=lower_is_better)
    nan = float("nan")
    if k < 3 or n < 2:
        return FriedmanResult(nan, nan, nan, nan, int(n), int(k), avg)
    values = full.to_numpy(dtype=np.float64)
    if np.all(values == values[:, :1]):
        # every learner equal on every data set: no evidence of any difference
        return FriedmanResult(0.0, 1.0, 0.0, 1.0, int(n), int(k), avg)
    chi2, p = scipy_stats().friedmanchisquare(*[values[:, j] for j in range(k)])
    chi2, p = float(chi2), float(p)
    denom = n * (k - 1) - chi2
    if denom <= 0:
        f, pf = math.inf, 0.0
    else:
        f = (n - 1) * chi2 / denom
        pf = float(scipy_stats().f.sf(f, k - 1, (k - 1) * (n - 1)))
    return FriedmanResult(chi2, p, float(f), pf, int(n), int(k), avg)


def nemenyi_q(k: int, alpha: float = 0.05) -> float:
    """Nemenyi q_α for k learners: studentized-range quantile(1 − α, k, ∞) / √2."""
    if k < 2:
        raise ValueError(f"nemenyi_q: need at least 2 learners, got k={k}")
    return float(scipy_stats().studentized_range.ppf(1.0 - alpha, k, math.inf)) / math.sqrt(2.0)


def nemenyi_cd(k: int, n: int, alpha: float = 0.05) -> float:
    """Nemenyi critical difference CD = q_α · sqrt(k (k + 1) / (6 N))."""
    if n < 1:
        raise ValueError(f"nemenyi_cd: need at least 1 data set, got N={n}")
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * n))


def nemenyi_cliques(avg_ranks: pd.Series, cd: float) -> list[tuple[str, ...]]:
    """Maximal groups of learners whose average ranks all lie within ``cd`` of each other.

    Learners are taken in increasing rank order; each group is a maximal run [i, j] with
    rank[j] − rank[i] < cd, of at least two learners, not contained in an earlier group.
    """
    order = avg_ranks.sort_values(kind="mergesort")
    names = list(order.index)
    values = order.to_numpy()
    groups: list[tuple[str, ...]] = []
    last_end = -1
    for i in range(len(names)):
        j = i
        while j + 1 < len(names) and values[j + 1] - values[i] < cd:
            j += 1
        if j > i and j > last_end:
            groups.append(tuple(names[i : j + 1]))
            last_end = j
    return groups
