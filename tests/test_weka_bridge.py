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


WEKA_BAYESNET = {
    "BayesNet": "-Q weka.classifiers.bayes.net.search.local.HillClimber -- -P 5 -R -S BAYES",
    "BayesNet-noreverse": "-Q weka.classifiers.bayes.net.search.local.HillClimber -- -P 5 "
                          "-S BAYES",
    "BayesNet-K2": "-Q weka.classifiers.bayes.net.search.local.K2 -- -P 5 -S BAYES"}


@pytest.mark.parametrize("name", ["german", "kr-vs-kp", "labor", "led"])
def test_bayesnet_is_wekas_bayesnet_fold_by_fold(name):
    """Our BayesNet, its variant without arc reversal and the K2 search against Weka's
    BayesNet with the same options (SimpleEstimator α = 0.5) on 5-fold CV of the same EF5
    data: the same probabilities per instance on every test fold (labor: missing values,
    replaced by the training fold's mode on both sides)."""
    from workbench.discretize import fit_discretizer
    from workbench.evaluation.splits import make_splits

    from conftest import shared_file
    from workbench.data.arff import load_arff

    data = load_arff(shared_file(name)) if name == "kr-vs-kp" else load_dataset(name)
    if not data.is_all_nominal:
        data = fit_discretizer("ef:5", data).transform(data)
    folds = make_splits(data.n_instances, 1, 5, 3)[0]
    for variant, options in WEKA_BAYESNET.items():
        for f in range(5):
            train = data.take(np.flatnonzero(folds != f))
            test = data.take(np.flatnonzero(folds == f))
            ours = registry.create("BayesNet", reverse=variant != "BayesNet-noreverse",
                                   search="k2" if variant.endswith("K2") else
                                   "hill_climber").fit(train)
            weka = registry.create("weka", scheme="weka.classifiers.bayes.BayesNet",
                                   options="-D " + options + " -E weka.classifiers.bayes."
                                   "net.estimate.SimpleEstimator -- -A 0.5").fit(train)
            np.testing.assert_allclose(ours.predict_proba(test), weka.predict_proba(test),
                                       rtol=0, atol=1e-12, err_msg=f"{variant} fold {f}")


def test_the_scores_ln_gamma_is_wekas_to_the_last_bit():
    """`bnscore.ln_gamma` (Cephes' lgam as Weka evaluates it) equals Weka's
    Statistics.lnGamma on the arguments a BAYES score takes — α + a count (half-integers)
    and r·α — bit for bit but where the two platforms' logarithms differ in the last bit
    (within one ulp there)."""
    from jpype import JClass

    from workbench.learners import bnscore

    bridge.jvm()
    weka = JClass("weka.core.Statistics")
    xs = np.arange(0.5, 20_000, 0.5)
    ours = np.array([bnscore.ln_gamma(x) for x in xs])
    theirs = np.array([float(weka.lnGamma(float(x))) for x in xs])
    differ = np.flatnonzero(ours != theirs)
    # (Java's Math.log and the C library's may differ in the last bit: 1 of 40,000 here)
    assert differ.size <= 2, xs[differ]
    assert (np.abs(ours - theirs) <= np.spacing(np.abs(theirs))).all()


def test_bayesnet_is_wekas_on_every_data_set_of_the_jmlr_reproduction():
    """Every data set of `experiments/jmlr16/reproduction` (its metadata's plan):
    BayesNet on the first training fold of a 10-fold CV, EF5 fitted on it, classifies the
    test fold as Weka's BayesNet does, per instance."""
    import json

    from workbench.data.arff import load_arff
    from workbench.data.catalog import find_dataset
    from workbench.discretize import fit_discretizer
    from workbench.evaluation.splits import make_splits

    from conftest import FETCHED, REPO, SHARED_DATASETS

    meta = json.loads((REPO / "experiments/jmlr16/reproduction/metadata.json").read_text())
    names = meta["plan"]["datasets"]
    assert len(names) == 9
    for name in names:
        path = find_dataset(name, [SHARED_DATASETS / "registry", FETCHED])
        if path is None:
            pytest.skip(f"{name} is not beside the checkout (../shared/datasets)")
        data = load_arff(path).without_missing_class()
        folds = make_splits(data.n_instances, 1, 10, 1)[0]
        train = data.take(np.flatnonzero(folds != 0))
        test = data.take(np.flatnonzero(folds == 0))
        if not train.is_all_nominal:
            disc = fit_discretizer("ef:5", train)
            train, test = disc.transform(train), disc.transform(test)
        ours = registry.create("BayesNet").fit(train).predict_proba(test)
        weka = registry.create("weka", scheme="weka.classifiers.bayes.BayesNet",
                               options="-D " + WEKA_BAYESNET["BayesNet"] + " -E weka."
                               "classifiers.bayes.net.estimate.SimpleEstimator -- -A 0.5")
        np.testing.assert_allclose(ours, weka.fit(train).predict_proba(test), rtol=0,
                                   atol=1e-12, err_msg=name)
