"""RF10 (SPEC §2): seeded scikit-learn forest on raw data, all declared classes returned."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.data.dataset import Attribute, Dataset
from workbench.errors import LearnerError
from workbench.learners import registry
from workbench.learners.forest import RandomForest, weka_max_features


def mixed(n=200, seed=0, K=3, missing=0.1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K - 1, n)  # the last declared class never occurs
    num = y + rng.normal(0, 0.4, n)
    nom = (y + (rng.random(n) < 0.2)) % 3
    X = np.column_stack([num, nom, rng.normal(size=n)]).astype(float)
    X[rng.random(X.shape) < missing] = np.nan
    atts = (Attribute("x"), Attribute("colour", ("r", "g", "b")), Attribute("noise"))
    return Dataset("mixed", atts, Attribute("c", tuple(f"k{i}" for i in range(K))), X, y)


def test_weka_max_features():
    # int(log2(a) + 1)
    assert [weka_max_features(a) for a in (1, 2, 3, 4, 8, 60, 166)] == [1, 2, 2, 3, 4, 6, 8]


def test_rf10_registered_and_raw_input():
    rf = registry.create("RF10")
    assert isinstance(rf, RandomForest) and rf.n_estimators == 10 and rf.preprocessing == "none"


def test_predict_proba_all_declared_classes_with_missing_values():
    train, test = mixed(seed=0), mixed(seed=1)
    p = RandomForest().fit(train).predict_proba(test)
    assert p.shape == (test.n_instances, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert np.all(p[:, 2] == 0)  # class never seen in training
    assert (p.argmax(1) == test.y).mean() > 0.7


def test_seeded_and_deterministic():
    train, test = mixed(seed=0), mixed(seed=1)
    a = RandomForest(seed=3).fit(train).predict_proba(test)
    b = RandomForest(seed=3).fit(train).predict_proba(test)
    c = RandomForest(seed=4).fit(train).predict_proba(test)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_missing_class_rows_ignored_and_degenerate_training():
    d = mixed(seed=2)
    y = d.y.copy()
    y[:50] = -1
    p = RandomForest().fit(d.replace(y=y)).predict_proba(d)
    assert p.shape == (d.n_instances, 3)
    one = d.replace(y=np.zeros(d.n_instances, dtype=int))  # a single class present
    np.testing.assert_array_equal(RandomForest().fit(one).predict_proba(d)[:, 0], 1.0)


def test_errors():
    with pytest.raises(LearnerError, match="before fit"):
        RandomForest().predict_proba(mixed())
    other = mixed().replace(attributes=(Attribute("y"),) + mixed().attributes[1:])
    with pytest.raises(LearnerError, match="header differs"):
        RandomForest().fit(mixed()).predict_proba(other)
    with pytest.raises(LearnerError, match="n_estimators"):
        registry.create("RF10", n_estimators="ten")
    with pytest.raises(LearnerError, match="max_features"):
        RandomForest(max_features=0)
