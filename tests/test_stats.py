"""Tests of workbench.stats: sign test, W/D/L tables, Wilcoxon, Friedman/Nemenyi, collections."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workbench.errors import ConfigError
from workbench.stats.groups import collections, dataset_groups
from workbench.stats.ranks import (
    average_ranks,
    friedman_test,
    nemenyi_cd,
    nemenyi_cliques,
    nemenyi_q,
    rank_matrix,
)
from workbench.stats.wdl import (
    WDL_COLUMNS,
    lower_triangle,
    sign_test,
    wdl_table,
    wilcoxon_table,
    wilcoxon_test,
    win_draw_loss,
)


# ------------------------------------------------------------------ sign test
@pytest.mark.parametrize(
    "wins, draws, losses, expected",
    [(12, 0, 0, 0.000488), (7, 5, 0, 0.0156), (23, 34, 14, 0.1877)],
)
def test_sign_test_published_values(wins, draws, losses, expected):
    assert sign_test(wins, losses) == pytest.approx(expected, abs=5e-5)


def test_sign_test_exact_and_edge_cases():
    assert sign_test(12, 0) == 2 * 0.5**12
    assert sign_test(0, 12) == sign_test(12, 0)
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 5) == 1.0  # doubled tail > 1 is capped
    assert sign_test(1, 0) == 1.0
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def test_sign_test_matches_scipy_binomtest():
    from scipy.stats import binomtest

    for w, l in [(3, 9), (20, 31), (40, 30), (0, 6)]:
        assert sign_test(w, l) == pytest.approx(binomtest(w, w + l, 0.5).pvalue, rel=1e-12)


# ------------------------------------------------------------------ W/D/L records
def test_win_draw_loss_counts_lower_is_better_and_ignores_nan():
    a = [0.1, 0.2, 0.3, 0.4, np.nan, 0.5]
    b = [0.2, 0.2, 0.1, 0.5, 0.3, np.nan]
    rec = win_draw_loss(a, b, lower_is_better=True)
    assert (rec.wins, rec.draws, rec.losses) == (2, 1, 1)
    assert rec.n == 4
    assert rec.p_value == sign_test(2, 1)
    assert rec.significant is False
    assert rec.cell() == "2/1/1"


def test_win_draw_loss_rounding_makes_draws():
    a = [0.12341, 0.5, 0.70004]
    b = [0.12344, 0.4, 0.70001]
    exact = win_draw_loss(a, b, lower_is_better=True)
    assert (exact.wins, exact.draws, exact.losses) == (1, 0, 2)
    rounded = win_draw_loss(a, b, decimals=4, lower_is_better=True)
    assert (rounded.wins, rounded.draws, rounded.losses) == (0, 2, 1)
    coarse = win_draw_loss(a, b, decimals=0, lower_is_better=True)
    assert (coarse.wins, coarse.draws, coarse.losses) == (0, 3, 0)
    assert coarse.p_value == 1.0


def test_win_draw_loss_is_mirror_symmetric():
    rng = np.random.default_rng(3)
    a, b = rng.random(40), rng.random(40)
    b[:5] = a[:5]
    ab, ba = (win_draw_loss(a, b, lower_is_better=True),
              win_draw_loss(b, a, lower_is_better=True))
    assert ba == ab.mirrored()
    assert (ab.wins, ab.losses) == (ba.losses, ba.wins)
    assert ab.draws == ba.draws == 5
    assert ab.p_value == ba.p_value


def test_win_draw_loss_significance_threshold():
    a = np.arange(12) * 0.0
    b = a + 1
    assert win_draw_loss(a, b, lower_is_better=True).significant is True
    assert win_draw_loss(a, b, alpha=0.0001, lower_is_better=True).significant is False


def _hand_table() -> pd.DataFrame:
    # metric zero_one_loss on 5 data sets for 3 learners (A is best everywhere but d4)
    values = {
        "A": [0.10, 0.20, 0.30, 0.40, 0.05],
        "B": [0.20, 0.20, 0.35, 0.30, 0.10],
        "C": [0.30, 0.25, 0.40, 0.50, 0.10],
    }
    rows = []
    for learner, vals in values.items():
        for i, v in enumerate(vals):
            rows.append({"dataset": f"d{i}", "learner": learner, "n_instances": 100 * (i + 1),
                         "zero_one_loss": v})
    return pd.DataFrame(rows)


def test_wdl_table_hand_made_lower_triangle_in_config_order():
    t = wdl_table(_hand_table(), "zero_one_loss", ["A", "B", "C"])
    assert list(t.columns) == WDL_COLUMNS
    assert list(zip(t["row"], t["col"])) == [("B", "A"), ("C", "A"), ("C", "B")]
    rec = {(r.row, r.col): (r.wins, r.draws, r.losses) for r in t.itertuples()}
    assert rec[("B", "A")] == (1, 1, 3)
    assert rec[("C", "A")] == (0, 0, 5)
    assert rec[("C", "B")] == (0, 1, 4)
    assert t.loc[(t.row == "C") & (t.col == "A"), "p_value"].item() == pytest.approx(0.0625)
    # a different config order gives the other triangle, mirrored
    u = wdl_table(_hand_table(), "zero_one_loss", ["C", "B", "A"])
    rec_u = {(r.row, r.col): (r.wins, r.draws, r.losses) for r in u.itertuples()}
    assert rec_u[("A", "C")] == (5, 0, 0)
    assert rec_u[("B", "C")] == (4, 1, 0)


def test_wdl_table_all_pairs_is_symmetric():
    t = wdl_table(_hand_table(), "zero_one_loss", ["A", "B", "C"], pairs="all")
    assert len(t) == 6
    rec = {(r.row, r.col): r for r in t.itertuples()}
    for (r, c), x in rec.items():
        y = rec[(c, r)]
        assert (x.wins, x.draws, x.losses) == (y.losses, y.draws, y.wins)
        assert x.p_value == y.p_value and x.significant == y.significant


def test_wdl_table_subset_of_datasets_and_missing_learner():
    t = wdl_table(_hand_table(), "zero_one_loss", ["A", "B", "Z"], datasets=["d0", "d1"])
    rec = {(r.row, r.col): (r.wins, r.draws, r.losses) for r in t.itertuples()}
    assert rec[("B", "A")] == (0, 1, 1)
    assert rec[("Z", "A")] == (0, 0, 0)
    assert t.loc[t.row == "Z", "p_value"].tolist() == [1.0, 1.0]


def test_lower_triangle_order():
    assert lower_triangle(["a", "b", "c", "d"]) == [
        ("b", "a"), ("c", "a"), ("c", "b"), ("d", "a"), ("d", "b"), ("d", "c")]


# ------------------------------------------------------------------ Wilcoxon
def test_wilcoxon_matches_scipy_and_handles_degenerate_input():
    from scipy.stats import wilcoxon

    rng = np.random.default_rng(0)
    a = rng.random(20)
    b = a + rng.normal(0.05, 0.05, 20)
    stat, p, n = wilcoxon_test(a, b)
    ref = wilcoxon(a, b)
    assert (stat, p, n) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue), 20)
    stat, p, n = wilcoxon_test([1.0, 2.0], [1.0, 2.0])
    assert math.isnan(stat) and p == 1.0 and n == 2


def test_wilcoxon_table_shape():
    t = wilcoxon_table(_hand_table(), "zero_one_loss", ["A", "B", "C"])
    assert list(zip(t["row"], t["col"])) == [("B", "A"), ("C", "A"), ("C", "B")]
    assert (t["median_diff"] > 0).all()


# ------------------------------------------------------------------ ranks / Friedman / Nemenyi
def test_nemenyi_critical_difference_k10_n71():
    assert nemenyi_q(10, 0.05) == pytest.approx(3.164, abs=5e-4)
    assert nemenyi_cd(10, 71, 0.05) == pytest.approx(1.608, abs=5e-4)


def test_nemenyi_q_matches_demsar_table():
    # Demšar (2006) Table 5(a), alpha = 0.05
    for k, q in [(2, 1.960), (3, 2.343), (4, 2.569), (5, 2.728), (6, 2.850)]:
        assert nemenyi_q(k) == pytest.approx(q, abs=1e-3)


def test_average_ranks_with_ties_lower_is_better():
    m = pd.DataFrame({"A": [0.1, 0.2, 0.3], "B": [0.2, 0.2, 0.1], "C": [0.3, 0.1, 0.2]},
                     index=["x", "y", "z"])
    r = rank_matrix(m, lower_is_better=True)
    assert r.loc["x"].tolist() == [1.0, 2.0, 3.0]
    assert r.loc["y"].tolist() == [2.5, 2.5, 1.0]
    assert average_ranks(m, lower_is_better=True).tolist() == pytest.approx(
        [(1 + 2.5 + 3) / 3, (2 + 2.5 + 1) / 3, (3 + 1 + 2) / 3])


def test_average_ranks_skip_incomplete_datasets():
    m = pd.DataFrame({"A": [0.1, np.nan], "B": [0.2, 0.1]})
    assert average_ranks(m, lower_is_better=True).tolist() == [1.0, 2.0]


def test_friedman_matches_scipy_and_iman_davenport():
    from scipy.stats import friedmanchisquare

    rng = np.random.default_rng(1)
    m = pd.DataFrame(rng.random((15, 4)) + np.array([0.0, 0.1, 0.2, 0.3]),
                     columns=list("ABCD"))
    fr = friedman_test(m, lower_is_better=True)
    ref = friedmanchisquare(*[m[c] for c in m])
    assert fr.statistic == pytest.approx(ref.statistic)
    assert fr.p_value == pytest.approx(ref.pvalue)
    n, k = 15, 4
    f = (n - 1) * fr.statistic / (n * (k - 1) - fr.statistic)
    assert fr.iman_davenport_f == pytest.approx(f)
    assert (fr.n_datasets, fr.n_learners) == (15, 4)
    assert list(fr.average_ranks.index) == list("ABCD")


def test_friedman_degenerate():
    same = pd.DataFrame({"A": [1.0, 2.0], "B": [1.0, 2.0], "C": [1.0, 2.0]})
    assert friedman_test(same, lower_is_better=True).p_value == 1.0
    two = pd.DataFrame({"A": [1.0, 2.0], "B": [2.0, 3.0]})
    assert math.isnan(friedman_test(two, lower_is_better=True).p_value)


def test_nemenyi_cliques():
    avg = pd.Series({"A": 1.0, "B": 1.5, "C": 3.0, "D": 3.2})
    assert nemenyi_cliques(avg, 1.0) == [("A", "B"), ("C", "D")]
    assert nemenyi_cliques(avg, 2.5) == [("A", "B", "C", "D")]
    assert nemenyi_cliques(avg, 0.1) == []


# ------------------------------------------------------------------ collections
def _sized_summary(sizes: dict[str, int]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"dataset": d, "learner": "NB", "n_instances": n} for d, n in sizes.items()]
    )


def test_collections_by_size_with_paper_boundaries():
    s = _sized_summary({"x_big": 10_001, "x_ten_k": 10_000, "x_mid": 1_001,
                        "x_thousand": 1_000, "x_tiny": 24})
    c = collections(s)
    assert list(c) == ["all", "large", "medium", "small"]
    assert c["large"] == ["x_big"]
    assert c["medium"] == ["x_mid", "x_ten_k"]
    assert c["small"] == ["x_thousand", "x_tiny"]
    assert c["all"] == sorted(s["dataset"])


def test_collections_use_catalog_group_and_custom_groups():
    catalog = pytest.importorskip("workbench.data.catalog")
    entry = next(e for e in catalog.CATALOG if e.group == "large")
    # a wrong stored size does not move a catalog data set out of its paper group
    s = _sized_summary({entry.slug: 10, "mine1": 50, "mine2": 20_000})
    assert dataset_groups(s)[entry.slug] == "large"
    c = collections(s, {"mine": ["mine1", "mine2", "not-run"]})
    assert c["large"] == sorted([entry.slug, "mine2"])
    assert c["mine"] == ["mine1", "mine2"]


def test_custom_collection_errors():
    s = _sized_summary({"a": 10})
    with pytest.raises(ConfigError, match="report.collections.all"):
        collections(s, {"all": ["a"]})
    with pytest.raises(ConfigError, match="report.collections.x"):
        collections(s, {"x": "a"})


def test_wilcoxon_ties_and_zeros_are_deterministic():
    a = np.array([0.1, 0.2, 0.3, 0.3, 0.5, 0.7])
    b = np.array([0.1, 0.3, 0.2, 0.4, 0.6, 0.6])  # one zero difference, tied |d|
    first = wilcoxon_test(a, b)
    assert all(wilcoxon_test(a, b) == first for _ in range(3))
    assert first[2] == 6 and 0 < first[1] <= 1


def test_one_tailed_sign_test_reproduces_salem_et_als_printed_p_values():
    from workbench.stats.wdl import sign_test
    # Tables 2-3 of Salem et al. (one-tailed): W/L → printed p
    for w, l, printed in ((34, 21, 0.052), (40, 17, 0.002), (17, 39, 0.002), (6, 1, 0.063),
                          (7, 0, 0.008), (2, 5, 0.227), (1, 6, 0.063)):
        assert sign_test(w, l, tails=1) == pytest.approx(printed, abs=5.01e-4)  # 3 decimals, half up
        assert sign_test(w, l) == pytest.approx(min(1.0, 2 * sign_test(w, l, tails=1)))
    assert sign_test(43, 15, tails=1) < 0.0005  # printed "<0.001"
    with pytest.raises(ValueError, match="tails must be 1 or 2"):
        sign_test(1, 2, tails=3)


def test_exact_wilcoxon_with_ties_is_the_permutation_distribution_of_the_midranks():
    import itertools

    from scipy.stats import wilcoxon

    from workbench.ranking import midranks

    def brute(d):
        ranks = midranks(np.abs(d))
        t = ranks[d > 0].sum()
        sums = np.array([sum(r for r, s in zip(ranks, signs) if s)
                         for signs in itertools.product([0, 1], repeat=len(d))])
        return min(1.0, 2 * min(np.mean(sums <= t + 1e-9), np.mean(sums >= t - 1e-9)))

    rng = np.random.default_rng(3)
    for n in (5, 8, 11):
        for _ in range(5):  # with ties: differences on a coarse grid
            d = rng.integers(-3, 4, n).astype(float)
            d[d == 0] = 1.0
            stat, p, m = wilcoxon_test(d, np.zeros(n))
            assert m == n and p == pytest.approx(brute(d), rel=1e-12)
        d = rng.normal(0.3, 1.0, n)  # without ties: scipy's exact test
        ref = wilcoxon(d, np.zeros(n), method="exact")
        assert wilcoxon_test(d, np.zeros(n))[:2] == (pytest.approx(ref.statistic),
                                                     pytest.approx(ref.pvalue, rel=1e-12))
    # five pairs, one sign, tied |differences|: the normal approximation says 0.041; no
    # exact test goes below 2/32
    assert wilcoxon_test([0.1, 0.1, 0.2, 0.2, 0.3], [0.0] * 5)[1] == pytest.approx(0.0625)


def test_effect_sizes_by_hand():
    from workbench.stats.wdl import effect_sizes

    a = np.array([0.1, 0.2, 0.4, np.nan])
    b = np.array([0.2, 0.2, 0.1, 0.3])
    mean, low, high, rb, cliff = effect_sizes(a, b)
    d = np.array([-0.1, 0.0, 0.3])
    assert mean == pytest.approx(d.mean(), rel=1e-12)
    from scipy import stats
    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    assert (low, high) == (pytest.approx(d.mean() - half), pytest.approx(d.mean() + half))
    # non-zero differences -0.1, 0.3: ranks 1 and 2; (T+ - T-) / (T+ + T-) = (2 - 1) / 3
    assert rb == pytest.approx(1 / 3)
    # a = (0.1, 0.2, 0.4) against b = (0.2, 0.2, 0.1): of 9 pairs, 4 greater (0.2 > 0.1,
    # 0.4 > all three), 2 smaller (0.1 < 0.2 twice)
    assert cliff == pytest.approx((4 - 2) / 9)
    t = wilcoxon_table(_hand_table(), "zero_one_loss", ["A", "B"])
    assert {"mean_diff", "mean_diff_ci_low", "mean_diff_ci_high", "rank_biserial",
            "cliffs_delta"} <= set(t.columns)
