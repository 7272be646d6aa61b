"""Multiple-comparison corrections, Weka's corrected resampled t-test and the Bayesian
signed-rank test: hand-computed values, and the reference libraries (statsmodels, baycomp)
on the committed PAKDD 2013 values when they are installed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workbench.errors import ConfigError
from workbench.report.options import options_from_config
from workbench.stats.bayesian import signed_rank, simplex_xy
from workbench.stats.corrections import adjust_p_values
from workbench.stats.wdl import corrected_t_outcome, corrected_t_test, metric_matrix
from workbench.store import load_results


def _pakdd13():
    return load_results("pakdd13")


def test_holm_and_bonferroni_by_hand():
    p = [0.01, 0.04, 0.03, 0.005, np.nan]
    # Bonferroni: m = 4 (NaN left out)
    np.testing.assert_allclose(adjust_p_values(p, "bonferroni")[:4], [0.04, 0.16, 0.12, 0.02])
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 -> 4·0.005, 3·0.01, 2·0.03, 1·0.04 (monotone max)
    np.testing.assert_allclose(adjust_p_values(p, "holm")[:4], [0.03, 0.06, 0.06, 0.02])
    assert np.isnan(adjust_p_values(p, "holm")[4])
    np.testing.assert_array_equal(adjust_p_values(p[:4], "none"), p[:4])
    with pytest.raises(ValueError, match="correction must be one of"):
        adjust_p_values(p, "sidak")


def test_corrections_equal_statsmodels_on_the_pakdd13_sign_tests():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    wdl = pd.read_csv(_pakdd13().run_dir / "report" / "tables" / "wdl.csv")
    for _, table in wdl.groupby(["metric", "collection"]):
        p = table["p_value"].to_numpy()
        for method in ("holm", "bonferroni"):
            np.testing.assert_allclose(adjust_p_values(p, method),
                                       multitest.multipletests(p, method=method)[1],
                                       rtol=1e-12, atol=0)


def test_corrected_resampled_t_test_by_hand():
    # d = a − b = (−1, −2, −3, −2): mean −2, var (ddof 1) = 2/3; 2-fold CV: n2/n1 = 1
    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 4.0, 6.0, 6.0])
    t, p, k = corrected_t_test(a, b, 1.0)
    expect_t = -2.0 / math.sqrt((1 / 4 + 1.0) * (2 / 3))
    assert k == 4 and t == pytest.approx(expect_t, rel=1e-12)
    from scipy import stats
    assert p == pytest.approx(2 * stats.t.sf(abs(expect_t), 3), rel=1e-12)
    # the uncorrected t (ratio 0) is larger in size: the correction makes the test honest
    assert abs(corrected_t_test(a, b, 0.0)[0]) > abs(t)
    assert corrected_t_outcome(a, b, alpha=0.2, test_train_ratio=1.0) == 1  # a lower: win
    assert corrected_t_outcome(a, b, alpha=0.01, test_train_ratio=1.0) == 0
    assert corrected_t_outcome(b, a, alpha=0.2, test_train_ratio=1.0) == -1
    same = np.array([0.5, 0.5])
    assert corrected_t_test(same, same, 1.0)[1] == 1.0  # zero variance, zero mean
    assert corrected_t_test(same, same + 0.1, 1.0)[1] == 0.0  # zero variance, mean ≠ 0
    assert corrected_t_outcome([np.nan], [1.0]) is None


def test_wekas_sd_rule_is_wekas_paired_stats_corrected():
    """With weka_sd_rule a standard deviation of the differences <= 1e-6 counts as none, as
    in Weka's PairedStatsCorrected (checked through the Weka bridge where it is installed)."""
    base = np.linspace(0.1, 0.2, 10)
    cases = [base + 1e-3 + np.arange(10) * 1e-8,  # sd 3e-8, mean 1e-3
             base + np.arange(10) * 1e-8,  # sd 3e-8, mean 4.5e-8
             base + 1e-3 + np.arange(10) * 1e-5,  # sd 3e-5: an ordinary t-test
             base.copy()]  # identical
    ours = [corrected_t_test(a, base, 1.0, weka_sd_rule=True)[1] for a in cases]
    assert ours[:2] == [0.0, 0.0] and ours[3] == 1.0
    plain = corrected_t_test(cases[0], base, 1.0)[1]
    assert 0.0 < plain < 1.0  # without the rule, a tiny spread is a spread
    try:
        from workbench.learners.weka import jvm
        jpype = jvm()
    except Exception as exc:  # noqa: BLE001 - no Java, Weka or JPype here
        pytest.skip(f"no Weka bridge: {exc}")
    tester = jpype.JClass("weka.experiment.PairedStatsCorrected")
    for a, p in zip(cases, ours):
        stats = tester(0.05, 1.0)
        for x, y in zip(a, base):
            stats.add(float(x), float(y))
        stats.calculateDerived()
        assert p == pytest.approx(float(stats.differencesProbability), rel=1e-9, abs=1e-15)


def test_bayesian_signed_rank_by_hand_and_shape():
    """One data set, z = −1 (A lower by 1): θ_A = w1² + 2 w0 w1·H(1 − 2r) + …; with a rope
    wider than the difference every mass is 'equivalent'."""
    res = signed_rank([0.0], [1.0], rope=0.0, samples=2000, seed=3, lower_is_better=True)
    assert res.p_a_better > 0.5 and res.p_b_better == 0.0
    wide = signed_rank([0.0], [1.0], rope=2.0, samples=500, seed=3, lower_is_better=True)
    assert wide.p_rope == 1.0
    np.testing.assert_allclose(wide.samples.sum(axis=1), 1.0)
    xy = simplex_xy(np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]]))
    np.testing.assert_allclose(xy, [[0, 0], [0.5, math.sqrt(3) / 2], [1, 0]])
    again = signed_rank([0.1, 0.3, 0.2], [0.2, 0.25, 0.4], rope=0.01, samples=3000, seed=9,
                         lower_is_better=True)
    same = signed_rank([0.1, 0.3, 0.2], [0.2, 0.25, 0.4], rope=0.01, samples=3000, seed=9,
                        lower_is_better=True)
    assert (again.p_a_better, again.p_rope) == (same.p_a_better, same.p_rope)  # seeded


def test_bayesian_signed_rank_equals_baycomp_on_the_pakdd13_values():
    baycomp = pytest.importorskip("baycomp")
    wide = metric_matrix(_pakdd13().summary, "zero_one_loss", ["A2DE-SW", "A1DE", "RF10"])
    for a, b, rope in (("A2DE-SW", "A1DE", 0.01), ("RF10", "A1DE", 0.0), ("A1DE", "RF10", 0.005)):
        ours = signed_rank(wide[a], wide[b], rope, samples=20000, seed=11, lower_is_better=True)
        # baycomp's scores are higher-is-better: its left (first better) = our A lower
        theirs = baycomp.SignedRankTest.probs(-wide[a].to_numpy(), -wide[b].to_numpy(), rope,
                                              nsamples=20000, random_state=11)
        if rope > 0:
            np.testing.assert_allclose((ours.p_a_better, ours.p_rope, ours.p_b_better), theirs,
                                       atol=1e-12)
        else:
            total = ours.p_a_better + ours.p_b_better
            np.testing.assert_allclose((ours.p_a_better / total, ours.p_b_better / total),
                                       theirs, atol=1e-12)


def test_statistics_options_are_checked(tmp_path):
    present = ["NB", "A1DE"]

    def opts(**report):
        return options_from_config({"report": report, "protocol": {"folds": 10}},
                                   tmp_path, present)

    assert opts(correction="holm").correction == "holm"
    with pytest.raises(ConfigError, match="report.correction: expected one of none, holm"):
        opts(correction="fdr")
    assert opts(wdl="corrected-t").test_train_ratio == pytest.approx(1 / 9)
    with pytest.raises(ConfigError, match="corrected-t needs repeated folds"):
        options_from_config({"report": {"wdl": "corrected-t"},
                             "protocol": {"type": "holdout", "fraction": 0.1}}, tmp_path, present)
    bay = opts(bayesian=True).bayesian
    assert bay["rope"] == 0.01 and bay["pairs"] == [("A1DE", "NB")]
    with pytest.raises(ConfigError, match=r"report.bayesian.pairs\[0\]: learner 'X'"):
        opts(bayesian={"pairs": [["X", "NB"]]})
    with pytest.raises(ConfigError, match="report.bayesian.rope"):
        opts(bayesian={"rope": -1})
    with pytest.raises(ConfigError, match="report.bayesian.nsamples: unknown key"):
        opts(bayesian={"nsamples": 10})
    assert opts(figure_width="lncs").figure_width == pytest.approx(12.2 / 2.54)
    assert opts(figure_width=8.5).figure_width == pytest.approx(8.5 / 2.54)
    assert opts().figure_width is None
    with pytest.raises(ConfigError, match="report.figure_width"):
        opts(figure_width="a4")
