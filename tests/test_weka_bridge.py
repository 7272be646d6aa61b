"""`learner: weka` — Weka's own classifiers through the JPype bridge, checked against the
workbench's equivalents and a hand computation (runs where Java, Weka and JPype1 are
installed; CI installs them)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import run_config
from workbench.data.catalog import load_dataset
from workbench.errors import ConfigError, LearnerError
from workbench.evaluation.pipeline import run_fold
from workbench.learners import registry
from workbench.learners import weka as bridge

try:
    import jpype  # noqa: F401
    bridge.weka_jar()
    AVAILABLE = ""
except (ImportError, LearnerError) as exc:
    AVAILABLE = str(exc) or "JPype1 is not installed"

pytestmark = pytest.mark.skipif(bool(AVAILABLE), reason=f"no Weka bridge here: {AVAILABLE}")

AODE = {"scheme": "weka.classifiers.bayes.AODE", "options": "-M -W 1", "preprocessing": "mdl"}
FOREST = {"scheme": "weka.classifiers.trees.RandomForest", "options": "-I 10 -S 1"}


def halves(name: str, seed: int = 1):
    data = load_dataset(name)
    idx = np.random.default_rng(seed).permutation(data.n_instances)
    return data, idx[: data.n_instances // 2], idx[data.n_instances // 2:]


@pytest.mark.parametrize("name", ["labor", "house-votes-84", "iris", "german", "contact-lenses"])
def test_weka_aode_with_m_estimates_is_our_a1de(name):
    data, train, test = halves(name)
    ours = run_fold(data, "A1DE", {}, train, test).proba
    weka = run_fold(data, "weka", AODE, train, test).proba
    np.testing.assert_allclose(weka, ours, rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["labor", "iris", "german"])
def test_weka_random_forest_is_our_rf10_under_weka_3_6_14(name):
    data, train, test = halves(name)
    ours = run_fold(data, "RF10", {"weka_version": "3.6.14"}, train, test).proba
    weka = run_fold(data, "weka", FOREST, train, test).proba
    np.testing.assert_allclose(weka, ours, rtol=0, atol=1e-9)


def test_weka_naive_bayes_is_laplace_estimates_with_missing_values_skipped():
    """Weka's NaiveBayes on nominal data: (count + 1) / (total + values), class prior
    (n_y + 1) / (n + K); a missing value is left out of its attribute's counts and of the
    product (house-votes-84 has missing values on both sides)."""
    data, train, test = halves("house-votes-84")
    weka = run_fold(data, "weka", {"scheme": "weka.classifiers.bayes.NaiveBayes"},
                    train, test).proba
    X, y = data.X, data.y
    K = data.n_classes
    Xtr, ytr = X[train], y[train]
    logp = np.tile(np.log((np.bincount(ytr, minlength=K) + 1.0) / (len(ytr) + K)),
                   (len(test), 1))
    for j, a in enumerate(data.attributes):
        known = ~np.isnan(Xtr[:, j])
        counts = np.zeros((a.cardinality, K))
        np.add.at(counts, (Xtr[known, j].astype(int), ytr[known]), 1.0)
        table = (counts + 1.0) / (counts.sum(axis=0) + a.cardinality)
        col = X[test, j]
        rows = ~np.isnan(col)
        logp[rows] += np.log(table[col[rows].astype(int)])
    expect = np.exp(logp - logp.max(axis=1, keepdims=True))
    expect /= expect.sum(axis=1, keepdims=True)
    assert np.isnan(X[test]).any() and np.isnan(X[train]).any()
    np.testing.assert_allclose(weka, expect, rtol=0, atol=1e-12)


def test_a_weka_learner_keeps_the_learner_contract():
    from workbench.testing import check_learner

    ran = check_learner("weka", datasets=("contact-lenses", "labor", "iris"), max_rows=200,
                        params=AODE)
    assert {"distributions", "deterministic", "pickle"} <= set(ran)


def test_a_config_runs_weka_schemes_in_worker_processes(tmp_path):
    from workbench import store

    result, out = run_config(tmp_path, """
        name: w
        datasets: [labor, iris]
        protocol: {rounds: 2, folds: 2}
        learners:
          A1DE: A1DE
          AODE-weka: {learner: weka, scheme: weka.classifiers.bayes.AODE, options: "-M -W 1",
                      preprocessing: mdl}
        output: out
        """, jobs=2)
    assert not result.failures and result.folds_run == 2 * 2 * 4
    s = store.load_summary(out).set_index(["dataset", "learner"])
    for ds in ("labor", "iris"):
        assert s.loc[(ds, "AODE-weka"), "log_loss"] == pytest.approx(
            s.loc[(ds, "A1DE"), "log_loss"], rel=1e-9)


def test_bad_schemes_are_one_clear_error(tmp_path):
    data, train, test = halves("iris")
    with pytest.raises(LearnerError, match="no class weka.classifiers.NoSuch"):
        run_fold(data, "weka", {"scheme": "weka.classifiers.NoSuch"}, train, test)
    with pytest.raises(LearnerError, match="java.lang.String is not a Weka classifier"):
        run_fold(data, "weka", {"scheme": "java.lang.String"}, train, test)
    with pytest.raises(LearnerError, match="Cannot handle numeric attributes"):
        run_fold(data, "weka", {"scheme": "weka.classifiers.bayes.AODE"}, train, test)
    with pytest.raises(LearnerError, match="parameter 'scheme'"):
        registry.create("weka", scheme="not a class")
    path = tmp_path / "c.yaml"
    path.write_text("name: c\ndatasets: [iris]\nlearners:\n  W: {learner: weka, options: 3}\n")
    with pytest.raises(ConfigError, match=r"c\.yaml:4: learners\.W\.options"):
        from workbench.experiment.config import load_config
        load_config(path)


def _alpha_estimates(parents, train, test, alpha):
    """P(y | x) of the network with attribute parents `parents` (+ the class) under Weka's
    SimpleEstimator: (N_ijk + α) / (N_ij + α·r_i), class prior (N_k + α) / (N + α·K)."""
    X, T, y, K = train.X.astype(int), test.X.astype(int), train.y, train.n_classes
    cards = [a.cardinality for a in train.attributes]
    logp = np.tile(np.log((np.bincount(y, minlength=K) + alpha) / (len(y) + alpha * K)),
                   (len(T), 1))
    for i, ps in enumerate(parents):
        key_tr, key_te = np.zeros(len(X), np.int64), np.zeros(len(T), np.int64)
        for p in ps:
            key_tr, key_te = key_tr * cards[p] + X[:, p], key_te * cards[p] + T[:, p]
        for r in range(len(T)):
            same = key_tr == key_te[r]
            for k in range(K):
                sel = same & (y == k)
                logp[r, k] += np.log(((sel & (X[:, i] == T[r, i])).sum() + alpha)
                                     / (sel.sum() + alpha * cards[i]))
    p = np.exp(logp - logp.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("name", ["german", "led", "iris"])
def test_bayesnet_differs_from_wekas_only_by_the_estimator(name):
    """Weka's BayesNet (K2 search, ≤ 5 parents, BAYES score, SimpleEstimator α = 0.5) on the
    same EF5 data is our BayesNet-K2's network with Weka's estimates: our structure and
    (N_ijk + 0.5) / (N_ij + 0.5·r_i) give Weka's probabilities per instance. Ours estimate
    by SPEC §4 instead ((N_ijk + 1/r_i) / (N_ij + 1), missing as a value), which is the
    whole difference on complete data."""
    from workbench.discretize import fit_discretizer

    data = load_dataset(name)
    data = fit_discretizer("ef:5", data).transform(data)
    assert not np.isnan(data.X).any()
    ours = registry.create("BayesNet-K2", score="bayes").fit(data)
    weka = registry.create("weka", scheme="weka.classifiers.bayes.BayesNet", options=(
        "-D -Q weka.classifiers.bayes.net.search.local.K2 -- -P 5 -S BAYES "
        "-E weka.classifiers.bayes.net.estimate.SimpleEstimator -- -A 0.5")).fit(data)
    test = data.take(np.arange(min(150, data.n_instances)))
    np.testing.assert_allclose(weka.predict_proba(test),
                               _alpha_estimates(ours.parents_, data, test, 0.5),
                               rtol=0, atol=1e-12)
