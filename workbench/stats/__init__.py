"""Statistics of experiment results (win/draw/loss, ranks, comparisons).

The names of the tests live here, free of pandas and scipy, so that a run can check its
config's report options without importing either."""

WDL_SIGN = "sign"
WDL_WILCOXON_FOLDS = "wilcoxon-folds"
WDL_CORRECTED_T = "corrected-t"
WDL_METHODS = (WDL_SIGN, WDL_WILCOXON_FOLDS, WDL_CORRECTED_T)
"""How a win/draw/loss cell is called significant: sign test over data sets, or a test
over the folds of each data set."""

TAILS = {"two-tailed": 2, "one-tailed": 1}
"""Sign-test conventions by name: PAKDD 2013/2014 print two-tailed p, Salem et al. one-tailed."""


def scipy_stats():
    """scipy.stats, imported on first use: it costs ~0.5 s, which a run that only trains and
    scores (the runner imports this package) should not pay."""
    from scipy import stats

    return stats
