"""All-pairs post hoc tests (`stats.posthoc`): Shaffer's sets against a brute-force
enumeration of every partition of the learners, Holm and Shaffer by hand and against
statsmodels, Nemenyi's pairs against the critical difference, and the report option."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from workbench.errors import ConfigError
from workbench.report.options import options_from_config
from workbench.stats import posthoc
from workbench.stats.ranks import nemenyi_cd


def _partitions(items):
    """Every set partition of `items` (a reference enumeration, Bell(k) of them)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _partitions(rest):
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1:]
        yield [[first]] + part


@pytest.mark.parametrize("k", range(1, 9))
def test_shaffer_sets_are_the_true_hypothesis_counts_of_every_partition(k):
    # learners equal within a block, different across: C(|block|, 2) pairs are true nulls
    brute = {sum(math.comb(len(b), 2) for b in p) for p in _partitions(list(range(k)))}
    assert posthoc.shaffer_set(k) == brute


def test_shaffer_multipliers_and_adjusted_p_by_hand():
    assert sorted(posthoc.shaffer_set(4)) == [0, 1, 2, 3, 6]
    assert posthoc.shaffer_multipliers(4) == [6, 3, 3, 3, 2, 1]
    assert posthoc.shaffer_multipliers(3) == [3, 1, 1]
    p = np.array([0.04, 0.001, 0.02, 0.3, 0.011, 0.009])  # k = 4, m = 6
    # sorted 0.001, 0.009, 0.011, 0.02, 0.04, 0.3; Shaffer 6·, 3·, 3·, 3·, 2·, 1·
    # (running max)
    shaffer = [0.08, 0.006, 0.06, 0.3, 0.033, 0.027]
    holm = [0.08, 0.006, 0.06, 0.3, 0.045, 0.045]  # 6·, 5·, 4·, 3·, 2·, 1· (running max)
    np.testing.assert_allclose(posthoc.adjust(p, 4, "shaffer"), shaffer, rtol=1e-12)
    np.testing.assert_allclose(posthoc.adjust(p, 4, "holm"), holm, rtol=1e-12)
    assert np.all(posthoc.adjust(p, 4, "shaffer") <= posthoc.adjust(p, 4, "holm"))
    with pytest.raises(ValueError, match="6 p-values for k = 5"):
        posthoc.adjust(p, 5, "holm")


def test_holm_equals_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(3).uniform(0, 0.2, 28)
    np.testing.assert_allclose(posthoc.adjust(p, 8, "holm"),
                               multitest.multipletests(p, method="holm")[1], rtol=1e-12)


def test_pairwise_z_and_nemenyi_agree_with_the_critical_difference():
    ranks = pd.Series({"A": 1.4, "B": 2.1, "C": 2.9, "D": 3.6})
    n = 30
    table = posthoc.pairwise(ranks, n, "nemenyi")
    se = math.sqrt(4 * 5 / (6 * n))
    ab = table[(table.a == "A") & (table.b == "B")].iloc[0]
    assert ab.z == pytest.approx(-0.7 / se, rel=1e-12)
    from scipy import stats
    assert ab.p == pytest.approx(2 * stats.norm.sf(0.7 / se), rel=1e-12)
    cd = nemenyi_cd(4, n)
    for row in table.itertuples():
        assert row.significant == (abs(ranks[row.a] - ranks[row.b]) >= cd)
    # Shaffer finds every difference Holm finds (at least as powerful)
    holm = posthoc.pairwise(ranks, n, "holm")
    shaffer = posthoc.pairwise(ranks, n, "shaffer")
    assert (shaffer.p_adjusted <= holm.p_adjusted + 1e-15).all()
    assert set(shaffer.index[shaffer.significant]) >= set(holm.index[holm.significant])


def test_groups_are_maximal_runs_without_a_significant_pair():
    ranks = pd.Series({"A": 1.0, "B": 2.0, "C": 3.0, "D": 4.0})
    table = pd.DataFrame({"a": ["A", "A", "A", "B", "B", "C"],
                          "b": ["B", "C", "D", "C", "D", "D"],
                          "significant": [False, True, True, False, True, False]})
    assert posthoc.groups(ranks, table) == [("A", "B"), ("B", "C"), ("C", "D")]


def test_report_posthoc_option_is_checked_and_named(tmp_path):
    cfg = {"name": "x", "learners": ["A", "B"], "report": {"posthoc": "shaffer"}}
    assert options_from_config(cfg, tmp_path, ["A", "B"]).posthoc == "shaffer"
    assert options_from_config({**cfg, "report": {}}, tmp_path, ["A", "B"]).posthoc == "nemenyi"
    with pytest.raises(ConfigError, match="report.posthoc: expected one of nemenyi, holm"):
        options_from_config({**cfg, "report": {"posthoc": "bergmann"}}, tmp_path, ["A", "B"])


def test_a_report_with_shaffer_names_it_and_tables_its_p_values(tmp_path):
    from test_report import synthetic_summary, write_run
    from workbench.report import render_report

    run = write_run(tmp_path / "run", synthetic_summary(), {"posthoc": "shaffer"})
    out = render_report(run, figures=False)
    md = (out / "report.md").read_text()
    assert "Shaffer's static procedure" in md
    table = pd.read_csv(out / "tables" / "posthoc.csv")
    assert set(table.method) == {"shaffer"}
    k = pd.read_csv(run / "summary.csv").learner.nunique()
    one = table[(table.metric == "zero_one_loss") & (table.collection == "all")]
    assert len(one) == math.comb(k, 2)
    np.testing.assert_allclose(one.p_adjusted, posthoc.adjust(one.p.to_numpy(), k, "shaffer"))
