"""Statistics of experiment results (win/draw/loss, ranks, comparisons)."""


def scipy_stats():
    """scipy.stats, imported on first use: it costs ~0.5 s, which a run that only trains and
    scores (the runner imports this package) should not pay."""
    from scipy import stats

    return stats
