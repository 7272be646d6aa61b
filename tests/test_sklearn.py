"""scikit-learn in both directions: registered learners as estimators (`workbench.sklearn`,
scikit-learn's own estimator checks), and scikit-learn classifiers as comparators in a
config (learner `sklearn`, restricted to scikit-learn's public estimator registry)."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

import workbench.sklearn as wsk
from workbench.data.catalog import load_dataset
from workbench.discretize import fit_discretizer
from workbench.errors import LearnerError
from workbench.learners import registry

from conftest import REPO

CHECKED = ("NB", "A1DE", "A2DE-SW", "A3DE", "KDB2", "SKDB", "TAN", "RF10", "ASAODE",
           "WANBIA-C", "A2JE")


CANNOT_APPLY = {
    # AnJE's generative forms (A1JE…A5JE) count in one pass and run no optimiser; the
    # family's max_iter belongs to its discriminative forms (WANBIA-C, LR, …), which do
    # expose n_iter_ and pass this check.
    "A2JE": {"check_non_transformer_estimators_n_iter":
             "a generative AnJE runs no iterations; max_iter is for the weighted forms"},
}


@parametrize_with_checks([wsk.classifier(name) for name in CHECKED],
                         expected_failed_checks=lambda est: CANNOT_APPLY.get(
                             est.learner_name, {}))
def test_sklearn_estimator_checks(estimator, check):
    """Every check applies but the one listed in CANNOT_APPLY (allow_nan, string and
    categorical input tags are set: missing values and nominal columns are part of the
    learners)."""
    check(estimator)


def _iris_frame():
    data = load_dataset("iris")
    X = pd.DataFrame(data.X, columns=list(data.attribute_names))
    y = np.array(data.class_values)[data.y]
    return data, X, y


def test_same_probabilities_as_the_workbench_pipeline():
    """MDL fitted inside `fit`, then the learner: the numbers of a workbench fold."""
    data, X, y = _iris_frame()
    train, test = np.arange(0, 150, 2), np.arange(1, 150, 2)
    clf = wsk.classifier("A1DE").fit(X.iloc[train], y[train])
    disc = fit_discretizer("mdl", data.take(train))
    ref = registry.create("A1DE").fit(disc.transform(data.take(train)))
    np.testing.assert_array_equal(clf.predict_proba(X.iloc[test]),
                                  ref.predict_proba(disc.transform(data.take(test))))
    assert list(clf.classes_) == sorted(set(y))
    assert list(clf.feature_names_in_) == list(data.attribute_names)


def test_clone_grid_search_pipeline_and_cross_val_score():
    _, X, y = _iris_frame()
    clf = wsk.A2DE_SW(m=0.5)
    twin = clone(clf)
    assert type(twin) is type(clf) and twin.get_params() == clf.get_params()
    assert twin.get_params()["subsumption"] == 100 and twin.get_params()["m"] == 0.5
    grid = GridSearchCV(wsk.classifier("A1DE"), {"m": [0.1, 1.0],
                                                   "preprocessing": ["mdl", "ef:3"]},
                        cv=KFold(3, shuffle=True, random_state=0)).fit(X, y)
    assert grid.best_params_["m"] in (0.1, 1.0)
    pipe = make_pipeline(FunctionTransformer(lambda a: a * 10.0), wsk.classifier("NB"))
    scores = cross_val_score(pipe, X.to_numpy(), y, cv=KFold(5, shuffle=True, random_state=1))
    assert scores.mean() > 0.85
    restored = pickle.loads(pickle.dumps(grid.best_estimator_))
    np.testing.assert_array_equal(restored.predict_proba(X), grid.best_estimator_.predict_proba(X))
    with pytest.raises(TypeError, match="unknown parameter"):
        wsk.classifier("NB", n_trees=3)


def test_categorical_and_numeric_columns_with_missing_values():
    """Object/category columns are nominal (sorted values; unseen → missing), numbers are
    numeric and discretised; the result equals the same data as a hand-built Dataset."""
    rng = np.random.default_rng(0)
    n = 200
    colour = rng.choice(["red", "green", "blue"], n).astype(object)
    size = rng.normal(size=n)
    y = np.where((colour == "red") ^ (size > 0.3), "yes", "no")
    colour[::17] = None
    size[::13] = np.nan
    X = pd.DataFrame({"colour": pd.Categorical(colour), "size": size})
    clf = wsk.classifier("A1DE").fit(X, y)
    assert clf.learner_._header.attributes[0].values == ("blue", "green", "red")
    probe = pd.DataFrame({"colour": pd.Categorical(["red", "purple", None]),
                          "size": [1.0, 1.0, 1.0]})
    p = clf.predict_proba(probe)
    assert p.shape == (3, 2) and np.allclose(p.sum(axis=1), 1)
    np.testing.assert_array_equal(p[1], p[2])  # an unseen category reads as missing
    assert clf.score(X, y) > 0.8


# ----- the other direction: scikit-learn classifiers in a config -----------------------------
def test_sklearn_comparator_learner():
    data = load_dataset("labor")  # nominal and numeric attributes with missing values
    lr = registry.create("sklearn", estimator="sklearn.linear_model.LogisticRegression",
                         params={"C": 0.5, "max_iter": 500})
    p = lr.fit(data).predict_proba(data)
    assert p.shape == (data.n_instances, 2) and np.allclose(p.sum(axis=1), 1)
    assert (p.argmax(axis=1) == data.y).mean() > 0.85
    # by class name; random_state from the fold seed unless params set it
    rf = registry.create("sklearn", estimator="RandomForestClassifier", seed=3,
                         params={"n_estimators": 5}, encode="codes")
    np.testing.assert_array_equal(rf.fit(data).predict_proba(data),
                                  registry.create("sklearn", estimator="RandomForestClassifier",
                                                  seed=3, params={"n_estimators": 5},
                                                  encode="codes").fit(data).predict_proba(data))
    for bad in ("os.system", "sklearn.linear_model.LinearRegression", "builtins.eval"):
        with pytest.raises(LearnerError, match="parameter 'estimator' must be a classifier"):
            registry.create("sklearn", estimator=bad)
    with pytest.raises(LearnerError, match="has no parameter"):
        registry.create("sklearn", estimator="LogisticRegression",
                        params={"gamma": 1}).fit(data)


def test_sklearn_comparator_in_a_run(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "name: skc\ndatasets: [labor, iris]\nprotocol: {rounds: 1, folds: 2, seed: 1}\n"
        "learners:\n  NB: NB\n"
        "  LogReg: {learner: sklearn, estimator: sklearn.linear_model.LogisticRegression,"
        " params: {max_iter: 1000}}\n"
        f"output: {tmp_path / 'out'}\n")
    proc = subprocess.run([sys.executable, "-m", "workbench", "-q", "run", str(cfg),
                           "--no-report"], capture_output=True, text=True, cwd=REPO,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert set(summary["learner"]) == {"NB", "LogReg"}
    bad = cfg.read_text().replace("sklearn.linear_model.LogisticRegression", "os.system")
    cfg.write_text(bad)
    proc = subprocess.run([sys.executable, "-m", "workbench", "run", str(cfg)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "estimator" in proc.stderr and "os.system" in proc.stderr
