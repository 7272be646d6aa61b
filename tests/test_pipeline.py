"""One fold (preprocess on training rows only → fit → predict) and repeated CV on stand-ins."""

from __future__ import annotations

import pickle
import sys
import types

import numpy as np
import pytest

from workbench.data.dataset import Attribute, Dataset
from workbench.errors import LearnerError, WorkbenchError
from workbench.evaluation import metrics
from workbench.evaluation.metrics import is_measurement
from workbench.evaluation.cv import (
    summary_keys,
    cross_validate,
    evaluation_data,
    summarize_folds,
)
from workbench.evaluation.pipeline import (
    FoldResult,
    fold_seed,
    make_learner,
    run_fold,
)
from workbench.evaluation.splits import fold_indices, make_splits
from workbench.learners.base import Learner


# ----- stand-in learners (module level so joblib workers can unpickle them) ---------------
class PriorLearner(Learner):
    """Class prior with an m-estimate; ignores the attributes."""

    preprocessing = "none"

    def __init__(self, m: float = 1.0):
        self.m = m

    def fit(self, data):
        self._remember_header(data)
        k = data.n_classes
        counts = np.bincount(data.y, minlength=k)
        self.p_ = (counts + self.m / k) / (data.n_instances + self.m)
        return self

    def predict_proba(self, data):
        self._check_fitted(data)
        return np.tile(self.p_, (data.n_instances, 1))


class FirstAttributeLearner(Learner):
    """P(y | x_0) with add-one smoothing on the (nominal) first attribute; records its input."""

    preprocessing = "mdl"
    seen: list = []

    def __init__(self, noise: float = 0.0, seed: int = 0):
        self.noise = noise
        self.seed = seed

    def fit(self, data):
        self._remember_header(data)
        self.train_X_ = data.X.copy()
        codes = data.codes()[:, 0]
        k, v = data.n_classes, data.attributes[0].cardinality
        table = np.ones((v + 1, k))  # last row: missing value
        np.add.at(table, (codes, data.y), 1)
        self.table_ = table / table.sum(axis=1, keepdims=True)
        self.rng_ = np.random.default_rng(self.seed)
        return self

    def predict_proba(self, data):
        self._check_fitted(data)
        p = self.table_[data.codes()[:, 0]]
        if self.noise:
            p = p + self.noise * self.rng_.random(p.shape)
            p /= p.sum(axis=1, keepdims=True)
        return p


class WrongShapeLearner(PriorLearner):
    def predict_proba(self, data):
        return super().predict_proba(data)[:, :1]


# ----- a fake discretiser: median cut per numeric attribute (depends on every row) -------
class _FakeDiscretizer:
    def __init__(self, cuts):
        self.cuts = cuts

    def transform(self, data):
        X = data.X.copy()
        attrs = list(data.attributes)
        for i, a in enumerate(data.attributes):
            if a.values is None:
                cuts = np.asarray(self.cuts[a.name])
                col = X[:, i]
                ok = ~np.isnan(col)
                col[ok] = np.searchsorted(cuts, col[ok], side="left")
                attrs[i] = Attribute(a.name, tuple(f"b{j}" for j in range(cuts.size + 1)))
        return data.replace(attributes=tuple(attrs), X=X)


def _median_cuts(data):
    return {a.name: [float(np.nanmedian(data.X[:, i]))]
            for i, a in enumerate(data.attributes) if a.values is None}


@pytest.fixture
def fake_discretize(monkeypatch):
    calls = []
    mod = types.ModuleType("workbench.discretize")

    def fit_discretizer(method, train, **options):
        calls.append((method, train.X.copy(), train.y.copy()))
        return _FakeDiscretizer(_median_cuts(train))

    mod.fit_discretizer = fit_discretizer
    monkeypatch.setitem(sys.modules, "workbench.discretize", mod)
    return calls


def numeric_data(n=40, seed=0, missing_class=()):
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=n), 3)
    y = (x + 0.5 * rng.normal(size=n) > 0).astype(np.int64)
    z = rng.integers(0, 3, n).astype(float)
    y[list(missing_class)] = -1
    return Dataset(
        name="toy",
        attributes=(Attribute("x"), Attribute("z", ("a", "b", "c"))),
        class_attribute=Attribute("class", ("neg", "pos", "unused")),
        X=np.column_stack([x, z]),
        y=y,
    )


# ----- run_fold ---------------------------------------------------------------------------
def test_discretiser_sees_only_training_rows(fake_discretize):
    data = numeric_data(40)
    train_idx, test_idx = fold_indices(make_splits(40, 1, 2, seed=7), 0, 0)
    res = run_fold(data, FirstAttributeLearner, {}, train_idx, test_idx)
    # the last call is the timed fit; an earlier one may be the untimed warm-up, which
    # must see training rows only as well
    method, seen_X, seen_y = fake_discretize[-1]
    train_rows = {tuple(r) for r in data.X[train_idx]}
    for _, X_seen, _ in fake_discretize:
        assert {tuple(r) for r in X_seen} <= train_rows
    assert method == "mdl"
    assert np.array_equal(seen_X, data.X[train_idx])
    assert np.array_equal(seen_y, data.y[train_idx])
    train_only = _median_cuts(data.take(train_idx))
    assert res.cuts == train_only
    # the check above is sensitive: fitting on all rows would give other cut points
    assert _median_cuts(data) != train_only
    assert res.preprocessing == "mdl" and res.n_train == train_idx.size


def test_real_mdl_cuts_come_from_training_fold_only():
    disc = pytest.importorskip("workbench.discretize")
    if not hasattr(disc, "fit_discretizer"):
        pytest.skip("workbench.discretize not implemented yet")
    # training fold: x = 0..19, class 0 below 10 → an MDL cut near 9.5.
    # test fold: x = 10.1..13.9 all class 0 → with them the class boundary (and cut) moves.
    x_train = np.arange(20.0)
    y_train = (x_train >= 10).astype(np.int64)
    x_test = np.linspace(10.1, 13.9, 20)
    y_test = np.zeros(20, dtype=np.int64)
    data = Dataset(
        name="leak",
        attributes=(Attribute("x"),),
        class_attribute=Attribute("class", ("a", "b")),
        X=np.concatenate([x_train, x_test])[:, None],
        y=np.concatenate([y_train, y_test]),
    )
    train_idx, test_idx = np.arange(20), np.arange(20, 40)
    res = run_fold(data, FirstAttributeLearner, {}, train_idx, test_idx)
    expected = disc.fit_discretizer("mdl", data.take(train_idx)).cuts
    leaked = disc.fit_discretizer("mdl", data).cuts
    assert res.cuts == {k: list(map(float, v)) for k, v in expected.items()}
    assert {k: list(map(float, v)) for k, v in leaked.items()} != res.cuts


def test_fold_result_contents_times_and_records(fake_discretize):
    data = numeric_data(30)
    train_idx, test_idx = np.arange(0, 30, 2), np.arange(1, 30, 2)
    res = run_fold(data, FirstAttributeLearner, None, train_idx, test_idx, round=3, fold=1)
    assert (res.round, res.fold, res.n_test) == (3, 1, 15)
    assert np.array_equal(res.test_index, test_idx)
    assert res.proba.shape == (15, 3)
    assert np.allclose(res.proba.sum(axis=1), 1)
    for key in ("train_cpu_seconds", "test_cpu_seconds", "train_wall_seconds",
                "test_wall_seconds"):
        assert getattr(res, key) >= 0
    back = pickle.loads(pickle.dumps(res))
    assert np.array_equal(back.proba, res.proba) and back.cuts == res.cuts
    rec = FoldResult.from_record(res.to_record())
    assert np.array_equal(rec.proba, res.proba) and rec.cuts == res.cuts
    assert rec.train_cpu_seconds == res.train_cpu_seconds
    res2 = run_fold(data, PriorLearner, {}, test_idx, train_idx, round=0, fold=0)
    assert res2.cuts is None and res2.preprocessing == "none"
    for b in (res, res2):
        a = FoldResult.from_record(b.to_record())
        assert (a.round, a.fold, a.n_train, a.preprocessing, a.cuts) == (
            b.round, b.fold, b.n_train, b.preprocessing, b.cuts)
        assert np.array_equal(a.test_index, b.test_index)
        assert np.array_equal(a.proba, b.proba)
        assert a.test_wall_seconds == b.test_wall_seconds


def test_missing_class_rows(fake_discretize):
    data = numeric_data(20, missing_class=(0, 5))
    res = run_fold(data, PriorLearner, {}, np.arange(10), np.arange(10, 20))
    assert res.n_train == 8
    with pytest.raises(ValueError, match="missing class"):
        run_fold(data, PriorLearner, {}, np.arange(10, 20), np.arange(10))


def test_bad_prediction_shape_is_a_learner_error():
    data = numeric_data(10)
    with pytest.raises(LearnerError, match=r"shape \(5, 1\), expected \(5, 3\)"):
        run_fold(data, WrongShapeLearner, {}, np.arange(5), np.arange(5, 10))


def test_make_learner_params_seed_and_preprocessing():
    lrn = make_learner(FirstAttributeLearner, {"noise": 0.5, "preprocessing": "ef:5"}, seed=9)
    assert (lrn.noise, lrn.seed, lrn.preprocessing) == (0.5, 9, "ef:5")
    assert FirstAttributeLearner.preprocessing == "mdl"  # class attribute untouched
    assert make_learner(FirstAttributeLearner, {"seed": 3}, seed=9).seed == 3
    assert make_learner(PriorLearner, {}, seed=9).m == 1.0  # no seed parameter: ignored
    assert fold_seed(1, 0, 0) == fold_seed(1, 0, 0) != fold_seed(1, 0, 1)


def test_registered_name(fake_discretize):
    from workbench.learners import registry

    registry.register("TestPrior", PriorLearner, m=2.0)
    try:
        data = numeric_data(10)
        res = run_fold(data, "TestPrior", {}, np.arange(5), np.arange(5, 10))
        counts = np.bincount(data.y[:5], minlength=3)
        assert np.allclose(res.proba[0], (counts + 2 / 3) / (5 + 2))
        with pytest.raises(WorkbenchError, match="unknown parameter"):
            run_fold(data, "TestPrior", {"bogus": 1}, np.arange(5), np.arange(5, 10))
    finally:
        registry.unregister("TestPrior")


# ----- cross_validate / summarize ---------------------------------------------------------
def _strip_times(summary):
    return {k: v for k, v in summary.items() if not is_measurement(k)}


def test_cross_validate_summary_definitions(fake_discretize):
    data = numeric_data(41, missing_class=(3, 17))
    cv = cross_validate(data, FirstAttributeLearner, {"noise": 0.3}, rounds=5, folds=3, seed=2)
    s = cv.summary
    assert set(summary_keys()) <= set(s)
    assert {f"{m}_std" for m in ("zero_one_loss", "rmse", "rmse_true_class", "log_loss")} <= set(s)
    assert (s["n_instances"], s["rounds"], s["folds"]) == (39, 5, 3)
    assert cv.distributions.shape == (5, 39, 3) and cv.predictions.shape == (5, 39)
    assert len(cv.fold_results) == 15
    y = evaluation_data(data).y
    flat, yy = cv.distributions.reshape(-1, 3), np.tile(y, 5)
    assert s["zero_one_loss"] == pytest.approx(np.mean(np.argmax(flat, 1) != yy), abs=1e-15)
    sq = (flat - np.eye(3)[yy]) ** 2
    assert s["rmse"] == pytest.approx(np.sqrt(sq.sum() / (flat.size)), rel=1e-13)
    assert s["rmse_true_class"] == pytest.approx(
        np.sqrt(np.mean((1 - flat[np.arange(yy.size), yy]) ** 2)), rel=1e-13)
    assert s["log_loss"] == pytest.approx(metrics.log_loss(flat, yy), rel=1e-13)
    assert np.isclose(s["bias"] + s["variance"], s["zero_one_loss"], rtol=0, atol=1e-12)
    assert s["bias_weka_corrected"] != s["bias"]
    per_fold = [metrics.zero_one_loss(f.proba, y[f.test_index]) for f in cv.fold_results]
    assert s["zero_one_loss_std"] == pytest.approx(np.std(per_fold, ddof=1), rel=1e-12)
    assert s["train_cpu_seconds"] == pytest.approx(
        sum(f.train_cpu_seconds for f in cv.fold_results))
    # every instance tested exactly once per round, fold ids as the split matrix says
    assert np.array_equal(cv.splits, make_splits(39, 5, 3, 2))


def test_results_independent_of_order_and_parallelism(fake_discretize):
    data = numeric_data(30)
    params = {"noise": 0.5}  # randomised learner: per-fold seeds must not depend on order
    seq = cross_validate(data, FirstAttributeLearner, params, rounds=3, folds=2, seed=4)
    # folds processed in reverse order, by hand, summarised from the stored records
    splits = make_splits(30, 3, 2, 4)
    rev = [run_fold(data, FirstAttributeLearner, params, *fold_indices(splits, r, f),
                    round=r, fold=f, seed=fold_seed(4, r, f))
           for r in reversed(range(3)) for f in reversed(range(2))]
    s_rev = summarize_folds(rev, data.y, 3, 3, 2)
    assert _strip_times(s_rev) == _strip_times(seq.summary)
    assert _strip_times(summarize_folds(seq.fold_results[::-1], data.y, 3, 3, 2)) == \
        _strip_times(seq.summary)
    for a, b in zip(sorted(rev, key=lambda f: (f.round, f.fold)), seq.fold_results):
        assert np.array_equal(a.proba, b.proba)


def test_parallel_matches_sequential():
    data = numeric_data(30)
    seq = cross_validate(data, PriorLearner, {"m": 0.5}, rounds=3, folds=2, seed=4)
    par = cross_validate(data, PriorLearner, {"m": 0.5}, rounds=3, folds=2, seed=4, n_jobs=2)
    assert _strip_times(par.summary) == _strip_times(seq.summary)
    assert np.array_equal(par.distributions, seq.distributions)


def test_given_splits_and_stratify():
    data = numeric_data(20)
    splits = make_splits(20, 2, 4, seed=5, stratify=True, labels=data.y)
    cv = cross_validate(data, PriorLearner, splits=splits)
    assert (cv.summary["rounds"], cv.summary["folds"]) == (2, 4)
    assert np.array_equal(cv.splits, splits)
    cv2 = cross_validate(data, PriorLearner, rounds=2, folds=4, seed=5, stratify=True)
    assert np.array_equal(cv2.distributions, cv.distributions)
    with pytest.raises(WorkbenchError, match="cover 19 instances, data has 20"):
        cross_validate(data, PriorLearner, splits=splits[:, :19])


def test_summarize_folds_rejects_incomplete_sets():
    data = numeric_data(12)
    cv = cross_validate(data, PriorLearner, rounds=2, folds=2, seed=1)
    with pytest.raises(WorkbenchError, match="no fold result for round 1, fold 1"):
        summarize_folds(cv.fold_results[:3], data.y, 3, 2, 2)
    with pytest.raises(WorkbenchError, match="two fold results"):
        summarize_folds(cv.fold_results + cv.fold_results[:1], data.y, 3, 2, 2)
    bad = cv.fold_results[1]
    shifted = FoldResult(bad.round, bad.fold, cv.fold_results[0].test_index,
                         cv.fold_results[0].proba, 0, 0, 0, 0, 6)
    with pytest.raises(WorkbenchError, match="tested twice"):
        summarize_folds([cv.fold_results[0], shifted] + cv.fold_results[2:], data.y, 3, 2, 2)


class HungryLearner(PriorLearner):
    """PriorLearner that holds 64 MB while it fits (a known peak)."""

    def fit(self, data):
        import mmap
        # 64 MiB of fresh pages, touched: an anonymous map, not the allocator, which may
        # hand back memory an earlier test left resident (then no peak rises)
        area = mmap.mmap(-1, 64 << 20)
        block = np.frombuffer(area, dtype=np.float64)
        block[:] = 1.0
        self._remember_header(data)
        self.prior = np.bincount(data.y, minlength=data.n_classes) + block[0]
        return self

    def predict_proba(self, data):
        return np.tile(self.prior / self.prior.sum(), (data.n_instances, 1))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_each_fold_records_its_own_peak_memory():
    X = np.zeros((20, 1))
    y = np.array([0, 1] * 10)
    data = Dataset("d", (Attribute("a", None),), Attribute("c", ("x", "y")), X, y)
    big = run_fold(data, HungryLearner, {}, np.arange(10), np.arange(10, 20))
    small = run_fold(data, PriorLearner, {}, np.arange(10), np.arange(10, 20))
    assert big.peak_rss_bytes - small.peak_rss_bytes > 50 << 20  # reset between folds
    assert FoldResult.from_record(big.to_record()).peak_rss_bytes == big.peak_rss_bytes
    assert is_measurement("peak_rss_bytes") and is_measurement("train_cpu_seconds_std")
    assert not is_measurement("rmse")
