"""Win/draw/loss records with the two-tailed binomial sign test, and Wilcoxon signed-rank.

Conventions (SPEC §3): for learner A (row) against B (column) on a metric where *lower is
better* (every function takes ``lower_is_better=False`` for one where higher is: AUC, kappa), a win for A is a data set on which A's value is lower, a draw one on which the two
values are equal (optionally after rounding both to ``decimals`` places), a loss one on
which A's value is higher. Data sets where either value is missing (NaN) are left out.
The sign test ignores draws: p = 2 · P(X ≥ max(w, l) | X ~ Bin(w + l, ½)), capped at 1
(p = 1 when w + l = 0); a record is significant when p < alpha (default 0.05).

Per-fold mode (the JMLR 2016 protocol, `fold_wdl_table`): each data set's outcome is
decided by a two-sided Wilcoxon signed-rank test over the paired per-fold values of the two
learners (paired by (round, fold)): a win for A if p < alpha and A's values are lower (the
rank sum of the folds where A is lower exceeds the other), a loss if p < alpha and A's are
higher, otherwise a draw. The sign test is then applied to those wins and losses as above.
Or by Weka's corrected resampled t-test (`corrected_t_outcome`, Nadeau & Bengio 2003):
over the k paired per-fold differences d, t = mean(d) / sqrt((1/k + n_test/n_train) ·
var(d)) with k − 1 degrees of freedom (var with k − 1 in the denominator), two-sided; a
zero variance gives p = 1 for a zero mean and p = 0 otherwise.

The table functions take the tidy per-(data set, learner) summary (columns ``dataset``,
``learner`` and the metric columns) and return tidy tables with one row per learner pair,
in the given learner order, lower triangle: row learner ``learners[i]`` against column
learner ``learners[j]`` for every j < i.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from workbench.ranking import midranks
from workbench.stats import scipy_stats


ALPHA = 0.05

WDL_COLUMNS = ["row", "col", "wins", "draws", "losses", "n", "p_value", "significant"]
WILCOXON_COLUMNS = ["row", "col", "n", "statistic", "p_value", "significant", "median_diff",
                    "mean_diff", "mean_diff_ci_low", "mean_diff_ci_high", "rank_biserial",
                    "cliffs_delta"]


@dataclass(frozen=True)
class WDL:
    """One win/draw/loss record of a row learner against a column learner."""

    wins: int
    draws: int
    losses: int
    p_value: float
    significant: bool

    @property
    def n(self) -> int:
        """Number of data sets compared (wins + draws + losses)."""
        return self.wins + self.draws + self.losses

    def mirrored(self) -> "WDL":
        """The same record seen from the column learner's side."""
        return WDL(self.losses, self.draws, self.wins, self.p_value, self.significant)

    def cell(self) -> str:
        """The paper's cell text, ``"w/d/l"``."""
        return f"{self.wins}/{self.draws}/{self.losses}"


def sign_test(wins: int, losses: int, tails: int = 2) -> float:
    """Binomial sign test p-value of ``wins`` against ``losses`` (draws excluded).

    Two-tailed (``tails=2``, default): p = 2 · P(X ≥ max(w, l)) for X ~ Bin(w + l, ½),
    capped at 1; one-tailed (``tails=1``, in the direction of the larger count, as Salem et
    al. print it): p = P(X ≥ max(w, l)). 1 when w + l = 0.
    """
    if tails not in (1, 2):
        raise ValueError(f"sign_test: tails must be 1 or 2, got {tails!r}")
    wins, losses = int(wins), int(losses)
    if wins < 0 or losses < 0:
        raise ValueError(f"sign_test: wins and losses must be >= 0, got {wins}, {losses}")
    n = wins + losses
    if n == 0:
        return 1.0
    upper = max(wins, losses)
    p = tails * float(scipy_stats().binom.sf(upper - 1, n, 0.5))
    return min(1.0, p)


def as_loss(values: np.ndarray, *, lower_is_better: bool) -> np.ndarray:
    """Values oriented so that lower is better: themselves, or negated for a metric
    where higher is better (AUC, kappa); every decision below compares these."""
    values = np.asarray(values, dtype=np.float64)
    return values if lower_is_better else -values


def _rounded(values: np.ndarray, decimals: int | None) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return values if decimals is None else np.round(values, int(decimals))


def win_draw_loss(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    decimals: int | None = None,
    alpha: float = ALPHA,
    tails: int = 2,
    *,
    lower_is_better: bool,
) -> WDL:
    """W/D/L of values ``a`` (row learner) against paired values ``b``: a win is a
    lower value (a higher one with ``lower_is_better=False``).

    ``decimals``: round both to this many decimals before comparing (None = exact).
    Pairs with a NaN on either side are ignored. ``tails``: the sign test's (`sign_test`).
    """
    x = as_loss(_rounded(np.asarray(a, dtype=np.float64), decimals),
                lower_is_better=lower_is_better)
    y = as_loss(_rounded(np.asarray(b, dtype=np.float64), decimals),
                lower_is_better=lower_is_better)
    if x.shape != y.shape:
        raise ValueError(f"win_draw_loss: shapes differ ({x.shape} vs {y.shape})")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    wins = int(np.sum(x < y))
    losses = int(np.sum(x > y))
    draws = int(x.size - wins - losses)
    p = sign_test(wins, losses, tails)
    return WDL(wins, draws, losses, p, bool(p < alpha))


def metric_matrix(
    summary: pd.DataFrame,
    metric: str,
    learners: Sequence[str] | None = None,
    datasets: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Wide table of one metric: index = data set (sorted), columns = learners (in order).

    Learners or data sets absent from ``summary`` give all-NaN columns / are skipped.
    """
    if metric not in summary.columns:
        raise KeyError(f"metric {metric!r} is not a column of the results summary")
    frame = summary[["dataset", "learner", metric]].copy()
    frame["dataset"] = frame["dataset"].astype(str)
    frame["learner"] = frame["learner"].astype(str)
    if datasets is not None:
        wanted = {str(d) for d in datasets}
        frame = frame[frame["dataset"].isin(wanted)]
    frame[metric] = pd.to_numeric(frame[metric], errors="coerce").astype(np.float64)
    wide = frame.groupby(["dataset", "learner"], sort=True)[metric].mean().unstack("learner")
    wide = wide.astype(np.float64)
    if learners is None:
        learners = list(dict.fromkeys(frame["learner"]))
    wide = wide.reindex(columns=list(learners))
    wide = wide.sort_index()
    wide.columns.name = None
    wide.index.name = "dataset"
    return wide


def lower_triangle(learners: Sequence[str]) -> list[tuple[str, str]]:
    """(row, col) pairs of the lower triangle in learner order: (l[i], l[j]) for j < i."""
    return [(learners[i], learners[j]) for i in range(1, len(learners)) for j in range(i)]


def wdl_table(summary: pd.DataFrame, metric: str, learners: Sequence[str],
              datasets: Iterable[str] | None = None, **options: Any) -> pd.DataFrame:
    """Tidy W/D/L table of ``metric`` for learner pairs (columns ``WDL_COLUMNS``) over
    ``datasets`` (default all); ``options`` as `wdl_from_matrix` takes them.

    ``pairs="lower"`` gives the paper's lower triangle in config order; ``"all"`` every
    ordered pair (row != col), so A vs B and B vs A both appear (mirrored records); or a
    list of (row, col) pairs (``workbench compare``: each new learner against each baseline).
    """
    from workbench.evaluation.metrics import lower_is_better

    wide = metric_matrix(summary, metric, list(learners), datasets)
    options.setdefault("lower_is_better", lower_is_better(metric))  # the metric's own
    return wdl_from_matrix(wide, learners, **options)


def wdl_from_matrix(
    wide: pd.DataFrame,
    learners: Sequence[str],
    decimals: int | None = None,
    alpha: float = ALPHA,
    pairs: Any = "lower",
    tails: int = 2,
    *,
    lower_is_better: bool,
) -> pd.DataFrame:
    """`wdl_table` from a data set × learner matrix (as made by `metric_matrix`)."""
    learners = list(learners)
    pair_list = _pair_list(learners, pairs)
    cols = {name: wide[name].to_numpy() if name in wide.columns
            else np.full(len(wide), np.nan) for name in learners}
    rows = []
    for r, c in pair_list:
        rec = win_draw_loss(cols[r], cols[c], decimals, alpha, tails,
                            lower_is_better=lower_is_better)
        rows.append([r, c, rec.wins, rec.draws, rec.losses, rec.n, rec.p_value, rec.significant])
    out = pd.DataFrame(rows, columns=WDL_COLUMNS)
    return out.astype(
        {"row": object, "col": object, "wins": np.int64, "draws": np.int64,
         "losses": np.int64, "n": np.int64, "p_value": np.float64, "significant": bool}
    )


def wilcoxon_test(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray
) -> tuple[float, float, int]:
    """Two-sided Wilcoxon signed-rank test of paired values (per fold or per data set).

    Returns ``(statistic, p_value, n_pairs)``: the statistic is min(T+, T−), the smaller
    signed-rank sum; NaN pairs are dropped. Zero differences are dropped
    (``zero_method="wilcox"``); with no non-zero difference the result is ``(nan, 1.0, n)``.
    Up to `EXACT_MAX` non-zero differences the p-value is exact, ties or not: the
    permutation distribution of T+ over the 2^n sign assignments of the observed ranks
    (midranks where |differences| tie; `exact_signed_rank_p`) — with five pairs no p-value
    goes below 1/16, whatever ties there are. Above, the normal approximation with tie
    correction (scipy). Never a random permutation, so results are reproducible.
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"wilcoxon_test: shapes differ ({x.shape} vs {y.shape})")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    d = x - y
    if d.size == 0 or not np.any(d != 0):
        return float("nan"), 1.0, int(d.size)
    nonzero = d != 0
    if np.count_nonzero(nonzero) <= EXACT_MAX:
        stat, p = exact_signed_rank_p(d[nonzero])
        return stat, p, int(d.size)
    res = scipy_stats().wilcoxon(x[nonzero], y[nonzero], zero_method="wilcox",
                                 alternative="two-sided", method="approx")
    return float(res.statistic), float(res.pvalue), int(d.size)


EXACT_MAX = 50
"""Up to this many non-zero differences the Wilcoxon p-value is exact (2^50 sign
assignments counted exactly in doubles)."""


def exact_signed_rank_p(d: np.ndarray) -> tuple[float, float]:
    """(min(T+, T−), two-sided p) of non-zero differences `d` under the exact permutation
    distribution: every sign assignment of the observed ranks of |d| (midranks for ties)
    equally likely; p = min(1, 2 · min(P(T+ ≤ t), P(T+ ≥ t))). Ranks are multiples of ½, so
    the distribution of 2·T+ is counted on integers."""
    d = np.asarray(d, dtype=np.float64)
    twice = np.rint(2.0 * midranks(np.abs(d))).astype(np.int64)
    counts = np.zeros(int(twice.sum()) + 1)
    counts[0] = 1.0
    for r in twice:  # add one rank: with its sign + (shifted by r) or − (in place)
        counts[r:] += counts[:-r].copy()
    t2 = int(twice[d > 0].sum())
    total = counts.sum()
    low, high = counts[:t2 + 1].sum() / total, counts[t2:].sum() / total
    t_plus = t2 / 2.0
    return min(t_plus, twice.sum() / 2.0 - t_plus), float(min(1.0, 2.0 * min(low, high)))


def wilcoxon_table(
    summary: pd.DataFrame,
    metric: str,
    learners: Sequence[str],
    datasets: Iterable[str] | None = None,
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """Tidy Wilcoxon signed-rank table over data sets for the lower triangle of learners.

    ``median_diff`` is the median of row − column (negative = row learner lower/better);
    the effect sizes (`effect_sizes`): ``mean_diff`` with its 95 % t-interval over the data
    sets, the matched-pairs ``rank_biserial`` correlation (T+ − T−)/(T+ + T−) of the
    signed-rank test, and ``cliffs_delta`` P(row > col) − P(row < col) over all pairs of the
    two learners' values.
    """
    wide = metric_matrix(summary, metric, list(learners), datasets)
    return wilcoxon_from_matrix(wide, learners, alpha)


def wilcoxon_from_matrix(
    wide: pd.DataFrame, learners: Sequence[str], alpha: float = ALPHA
) -> pd.DataFrame:
    """`wilcoxon_table` from a data set × learner matrix (as made by `metric_matrix`)."""
    learners = list(learners)
    rows = []
    for r, c in lower_triangle(learners):
        x, y = wide[r].to_numpy(), wide[c].to_numpy()
        stat, p, n = wilcoxon_test(x, y)
        keep = ~(np.isnan(x) | np.isnan(y))
        med = float(np.median(x[keep] - y[keep])) if keep.any() else float("nan")
        rows.append([r, c, n, stat, p, bool(p < alpha), med, *effect_sizes(x, y)])
    return pd.DataFrame(rows, columns=WILCOXON_COLUMNS).astype(
        {"row": object, "col": object, "n": np.int64, "statistic": np.float64,
         "p_value": np.float64, "significant": bool, "median_diff": np.float64}
    )


def effect_sizes(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray
                 ) -> tuple[float, float, float, float, float]:
    """(mean difference a − b, its 95 % t-interval low and high, the matched-pairs
    rank-biserial correlation, Cliff's delta) over the pairs where both are known (NaN
    where undefined: fewer than two pairs for the interval, no non-zero difference for the
    rank-biserial)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    nan = float("nan")
    if x.size == 0:
        return nan, nan, nan, nan, nan
    d = x - y
    mean = float(d.mean())
    if d.size >= 2:
        half = float(scipy_stats().t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
        low, high = mean - half, mean + half
    else:
        low = high = nan
    nz = d[d != 0]
    if nz.size:
        ranks = midranks(np.abs(nz))
        rb = float((ranks[nz > 0].sum() - ranks[nz < 0].sum()) / ranks.sum())
    else:
        rb = nan
    cliff = float(np.sign(x[:, None] - y[None, :]).mean())
    return mean, low, high, rb, cliff


# ----- W/D/L decided per data set by a Wilcoxon test over folds (JMLR 2016) ---------------
FOLD_KEYS = ("round", "fold")


def wilcoxon_fold_outcome(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, alpha: float = ALPHA
) -> int | None:
    """One data set's outcome for A against B from paired per-fold values (lower is better).

    ``+1`` = win (Wilcoxon signed-rank p < alpha and A lower), ``-1`` = loss (p < alpha and
    A higher), ``0`` = draw (not significant); None when no fold has both values. Uses
    `wilcoxon_test` (exact or normal approximation, never random), so it is deterministic.
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    _, p, n = wilcoxon_test(x, y)
    if n == 0:
        return None
    if not p < alpha:
        return 0
    keep = ~(np.isnan(x) | np.isnan(y))
    d = x[keep] - y[keep]
    d = d[d != 0]
    ranks = scipy_stats().rankdata(np.abs(d))
    lower, higher = float(ranks[d < 0].sum()), float(ranks[d > 0].sum())
    if lower == higher:  # cannot be significant; kept for safety
        return 0
    return 1 if lower > higher else -1


WEKA_SMALL = 1e-6
"""Weka's ``Utils.SMALL``: its t-tester takes a standard deviation of the differences at or
below it for zero (`corrected_t_test`'s ``weka_sd_rule``)."""


def corrected_t_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                     test_train_ratio: float, weka_sd_rule: bool = False
                     ) -> tuple[float, float, int]:
    """Weka's corrected resampled t-test of paired per-fold values (see the module
    docstring); returns ``(t, p_value, k)`` (NaN pairs dropped; k < 2: ``(nan, 1.0, k)``).

    ``weka_sd_rule``: as Weka's ``PairedStatsCorrected``, a standard deviation of the
    differences ≤ 1e-6 counts as none: p = 0 (t = ±inf) unless the mean difference is 0
    (p = 1). Without it only an exactly constant difference is treated so."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    keep = ~(np.isnan(x) | np.isnan(y))
    d = x[keep] - y[keep]
    k = int(d.size)
    if k < 2:
        return float("nan"), 1.0, k
    mean, var = float(d.mean()), float(d.var(ddof=1))
    if var == 0.0 or (weka_sd_rule and np.sqrt(var) <= WEKA_SMALL):
        return (float("nan"), 1.0, k) if mean == 0.0 else (float(np.copysign(np.inf, mean)),
                                                            0.0, k)
    t = mean / np.sqrt((1.0 / k + test_train_ratio) * var)
    return float(t), float(2.0 * scipy_stats().t.sf(abs(t), k - 1)), k


def corrected_t_outcome(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                        alpha: float = ALPHA, test_train_ratio: float = 1.0,
                        weka_sd_rule: bool = False) -> int | None:
    """One data set's outcome (+1 win, −1 loss, 0 draw, None: no paired fold) for A against
    B by the corrected resampled t-test at `alpha` (lower is better)."""
    t, p, k = corrected_t_test(a, b, test_train_ratio, weka_sd_rule)
    if k == 0:
        return None
    if not p < alpha:
        return 0
    return 1 if t < 0 else -1


def fold_outcomes(
    fold_metrics: pd.DataFrame,
    metric: str,
    learners: Sequence[str],
    alpha: float = ALPHA,
    pairs: str = "lower",
    outcome=wilcoxon_fold_outcome,
    *,
    lower_is_better: bool,
) -> dict[tuple[str, str], pd.Series]:
    """Per-data-set outcomes (+1/0/-1) per pair, by `outcome(a, b, alpha)` over the paired
    per-fold values (default: `wilcoxon_fold_outcome`; `corrected_t_outcome` with its
    test/train ratio bound is the other), oriented by `as_loss`.

    ``fold_metrics`` is long format (``dataset, learner, round, fold, metric, value``, as
    `store.load_fold_metrics` gives). Returns ``{(row, col): Series indexed by data set}``;
    data sets where the two learners share no fold value are absent from that Series.
    """
    learners = list(learners)
    pair_list = _pair_list(learners, pairs)
    sub = fold_metrics[fold_metrics["metric"] == metric]
    wide = (sub.astype({"dataset": str, "learner": str})
            .groupby(["dataset", *FOLD_KEYS, "learner"], sort=True)["value"].first()
            .astype(np.float64).unstack("learner"))
    out: dict[tuple[str, str], dict[str, int]] = {pair: {} for pair in pair_list}
    for ds, block in wide.groupby(level="dataset", sort=True):
        for r, c in pair_list:
            if r not in block.columns or c not in block.columns:
                continue
            res = outcome(as_loss(block[r].to_numpy(), lower_is_better=lower_is_better),
                          as_loss(block[c].to_numpy(), lower_is_better=lower_is_better),
                          alpha)
            if res is not None:
                out[(r, c)][str(ds)] = res
    return {pair: pd.Series(v, dtype=np.int64) for pair, v in out.items()}


def wdl_from_outcomes(
    outcomes: dict[tuple[str, str], pd.Series],
    learners: Sequence[str],
    datasets: Iterable[str] | None = None,
    alpha: float = ALPHA,
    pairs: str = "lower",
    tails: int = 2,
) -> pd.DataFrame:
    """W/D/L table (``WDL_COLUMNS``) counting per-data-set outcomes over ``datasets``."""
    wanted = None if datasets is None else {str(d) for d in datasets}
    rows = []
    for r, c in _pair_list(list(learners), pairs):
        s = outcomes.get((r, c))
        if s is None:
            mirrored = outcomes.get((c, r))
            s = -mirrored if mirrored is not None else pd.Series([], dtype=np.int64)
        if wanted is not None:
            s = s[s.index.isin(wanted)]
        w, l = int((s > 0).sum()), int((s < 0).sum())
        d = int(s.size) - w - l
        p = sign_test(w, l, tails)
        rows.append([r, c, w, d, l, w + d + l, p, bool(p < alpha)])
    return pd.DataFrame(rows, columns=WDL_COLUMNS).astype(
        {"row": object, "col": object, "wins": np.int64, "draws": np.int64,
         "losses": np.int64, "n": np.int64, "p_value": np.float64, "significant": bool}
    )


def fold_wdl_table(
    fold_metrics: pd.DataFrame,
    metric: str,
    learners: Sequence[str],
    datasets: Iterable[str] | None = None,
    alpha: float = ALPHA,
    pairs: str = "lower",
    tails: int = 2,
) -> pd.DataFrame:
    """Tidy W/D/L table where each data set is decided by a Wilcoxon test over its folds.

    Same columns as `wdl_table`; ``alpha`` is used both for the per-data-set Wilcoxon
    tests and for the sign test over the resulting wins and losses; the metric's direction
    is the registry's.
    """
    from workbench.evaluation.metrics import lower_is_better

    outcomes = fold_outcomes(fold_metrics, metric, learners, alpha, pairs,
                             lower_is_better=lower_is_better(metric))
    return wdl_from_outcomes(outcomes, learners, datasets, alpha, pairs, tails)


def _pair_list(learners: list[str], pairs: Any) -> list[tuple[str, str]]:
    """``lower``, ``all`` or an explicit list of (row, col) pairs."""
    if pairs == "lower":
        return lower_triangle(learners)
    if pairs == "all":
        return [(r, c) for r in learners for c in learners if r != c]
    if isinstance(pairs, (list, tuple)) and all(len(p) == 2 for p in pairs):
        return [(str(r), str(c)) for r, c in pairs]
    raise ValueError(f"pairs must be 'lower', 'all' or a list of (row, col), got {pairs!r}")
