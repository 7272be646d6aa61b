"""The learner contract, for built-in and plugin learners alike: `check_learner`.

One call fits a learner (a registered name, or a class / factory) on a few small data
sets, through its declared preprocessing, and checks what every part of the workbench
relies on:

* ``distributions`` — `predict_proba` gives (n, K) finite, non-negative rows summing to 1,
  and `predict` is their first maximum;
* ``deterministic`` — a second fit with the same seed gives the same distributions;
* ``row order`` — fitting on the rows in another order gives the same distributions, for
  learners that declare themselves order-free (`Learner.order_free`; the SGD forms and
  the bagged forests do not);
* ``pickle`` — a pickled and restored model predicts the same (workers, stored models);
* ``chunks`` — for a `CountingLearner` that accepts its parameters (`chunk_refusal`),
  `partial_fit` over chunks equals `fit`;
* ``passes`` — for a `MultiPassLearner` that accepts its parameters, training in passes
  over chunks (what out-of-core training does) equals `fit`;
* ``scikit-learn`` — for a registered name, the `workbench.sklearn` wrapper clones, fits
  a data frame and gives sound distributions (scikit-learn's own estimator checks run
  on a selection of learners in the test suite).

A broken contract raises `ContractError` naming the learner, the check and the data set.
Plugin authors run ``check_learner(MyLearner)`` in their own tests.
"""

from __future__ import annotations

import pickle
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from workbench.data.catalog import load_dataset
from workbench.data.dataset import Dataset
from workbench.discretize import fit_discretizer
from workbench.errors import WorkbenchError
from workbench.evaluation.pipeline import make_learner, probability_problem
from workbench.learners.base import CountingLearner, MultiPassLearner

CONTRACT_DATASETS = ("contact-lenses", "labor", "iris")
"""Small embedded data sets: all nominal (24 rows), mixed with missing values (57), all
numeric with three classes (150)."""

TOLERANCE = 1e-9
"""Largest difference allowed between distributions that must agree (summation order
may differ between a fit and a refit in chunks or on reordered rows)."""

OPTIMISER_TOLERANCE = 1e-6
"""The same for a learner that optimises (it reports `iterations`) refitted on reordered
rows: its optimiser stops where its tolerance says, and sums taken in another order move
that point by about this much."""


class ContractError(AssertionError):
    """A learner breaks the contract: the message names learner, check and data set."""


def check_learner(learner: str | Callable[..., Any], params: Mapping[str, Any] | None = None,
                  *, datasets: Sequence[str | Dataset] = CONTRACT_DATASETS, seed: int = 1,
                  max_rows: int | None = None) -> list[str]:
    """Run the contract on `learner` (see the module docstring); returns the names of the
    checks that ran (those that apply), raises `ContractError` on the first broken one.
    ``max_rows``: train on at most that many rows of each data set (slow learners)."""
    name = learner if isinstance(learner, str) else getattr(learner, "__name__", repr(learner))
    ran: list[str] = []
    for ref in datasets:
        data = ref if isinstance(ref, Dataset) else load_dataset(ref)
        data = data.without_missing_class()
        if max_rows is not None and data.n_instances > max_rows:
            data = data.take(np.arange(max_rows))
        where = f"learner {name!r} on {data.name or 'data'} ({data.n_instances} rows)"
        base = None  # (model, distributions, prepared data) of one fit, shared by the checks
        for check in _CHECKS:
            what = check.__doc__.split(":")[0]
            try:
                if base is None:  # fitted inside the first check's try: its errors name it
                    base = _fitted_proba(learner, params, data, seed)
                done = check(learner, params, data, seed, base)
                if done:
                    ran.append(done if isinstance(done, str) else what)
            except ContractError as exc:
                raise ContractError(f"{where}: {exc}") from None
            except (WorkbenchError, ValueError, TypeError, AttributeError) as exc:
                raise ContractError(f"{where}: {what}: {type(exc).__name__}: {exc}") from None
    return list(dict.fromkeys(ran))


# ----- helpers -------------------------------------------------------------------------------
def _prepared(model: Any, data: Dataset) -> tuple[Dataset, Any]:
    """The data as the learner sees it: its declared preprocessing fitted on `data`."""
    method = str(getattr(model, "preprocessing", "none") or "none")
    if method == "none" or data.is_all_nominal:
        return data, None
    disc = fit_discretizer(method, data)
    return disc.transform(data), disc


def _fitted_proba(learner: Any, params: Any, data: Dataset, seed: int,
                  train: Callable[[Any, Dataset], Any] | None = None
                  ) -> tuple[Any, np.ndarray, Dataset]:
    model = make_learner(learner, params, seed)
    prepared, _ = _prepared(model, data)
    (train or (lambda m, d: m.fit(d)))(model, prepared)
    return model, np.asarray(model.predict_proba(prepared), dtype=np.float64), prepared


def _same(a: np.ndarray, b: np.ndarray, what: str, tolerance: float = TOLERANCE) -> None:
    if a.shape != b.shape:
        raise ContractError(f"{what}: shapes {a.shape} and {b.shape} differ")
    worst = float(np.max(np.abs(a - b))) if a.size else 0.0
    if not worst <= tolerance:
        row = int(np.unravel_index(np.argmax(np.abs(a - b)), a.shape)[0])
        raise ContractError(f"{what}: distributions differ by {worst:.3g} (row {row}: "
                            f"{np.round(a[row], 6).tolist()} vs {np.round(b[row], 6).tolist()})")


def _chunks(data: Dataset, parts: int = 3) -> list[Dataset]:
    return [data.take(idx) for idx in np.array_split(np.arange(data.n_instances), parts)
            if idx.size]


# ----- the checks (each returns whether it applied) ---------------------------------------------
def _distributions(learner, params, data, seed, base) -> bool:
    """distributions: finite, non-negative rows summing to 1; predict = first maximum"""
    model, proba, prepared = base
    if proba.shape != (data.n_instances, data.n_classes):
        raise ContractError(f"distributions: predict_proba gave shape {proba.shape}, "
                            f"expected ({data.n_instances}, {data.n_classes})")
    problem = probability_problem(proba)
    if problem:
        raise ContractError(f"distributions: predict_proba {problem}")
    if hasattr(model, "predict"):
        pred = np.asarray(model.predict(prepared))
        if not np.array_equal(pred, np.argmax(proba, axis=1)):
            raise ContractError("distributions: predict is not the first maximum of "
                                "predict_proba")
    return True


def _deterministic(learner, params, data, seed, base) -> bool:
    """deterministic: the same seed gives the same distributions"""
    a = base[1]
    _, b, _ = _fitted_proba(learner, params, data, seed)
    _same(a, b, "deterministic: a second fit with the same seed")
    return True


def _row_order(learner, params, data, seed, base) -> bool:
    """row order: reordered training rows give the same model (order-free learners)"""
    first, a, prepared = base
    if not _order_free(first):
        return False
    order = np.random.RandomState(seed).permutation(data.n_instances)
    other = make_learner(learner, params, seed)
    shuffled, _ = _prepared(other, data.take(order))
    other.fit(shuffled)
    optimises = getattr(first, "iterations", lambda: None)() is not None
    _same(a, np.asarray(other.predict_proba(prepared), dtype=np.float64),
          "row order: the same rows in another order (the learner says it is order-free, "
          "Learner.order_free)", OPTIMISER_TOLERANCE if optimises else TOLERANCE)
    return True


def _order_free(model: Any) -> bool:
    flag = getattr(model, "order_free", False)
    return bool(flag() if callable(flag) else flag)


def _pickle(learner, params, data, seed, base) -> bool:
    """pickle: a restored model predicts the same"""
    model, proba, prepared = base
    restored = pickle.loads(pickle.dumps(model))
    _same(proba, np.asarray(restored.predict_proba(prepared), dtype=np.float64),
          "pickle: the model after pickle.dumps / loads")
    return True


def _in_parts(learner, params, data, seed, base) -> str | None:
    """training in parts: partial_fit over chunks (a `CountingLearner`) or passes over
    chunks (a `MultiPassLearner`) equals fit; returns 'chunks' / 'passes', None if
    neither applies (a learner may refuse its parameters: `chunk_refusal`,
    `pass_refusal`)."""
    model = make_learner(learner, params, seed)
    if isinstance(model, CountingLearner) and not model.chunk_refusal():
        kind, how = "chunks", "partial_fit over three chunks"
    elif isinstance(model, MultiPassLearner) and not model.pass_refusal():
        kind, how = "passes", "passes over three chunks"
    else:
        return None
    _, whole, prepared = base
    parts = _chunks(prepared)
    if kind == "chunks":
        for part in parts:
            model.partial_fit(part)
    else:
        model.begin(prepared)
        p = 0
        while model.training:
            for part in parts:
                model.learn(p, part)
            model.end_pass(p)
            p += 1
    _same(whole, np.asarray(model.predict_proba(prepared), dtype=np.float64),
          f"{kind}: {how} against fit")
    return kind


def _scikit_learn(learner, params, data, seed, base) -> bool:
    """scikit-learn: the wrapper clones and fits a data frame to sound distributions"""
    if not isinstance(learner, str):
        return False
    import pandas as pd
    from sklearn.base import clone

    from workbench import sklearn as wsk

    est = clone(wsk.classifier(learner, **dict(params or {}), **_seed_of(learner, seed)))
    columns = {}
    for j, a in enumerate(data.attributes):
        col = data.X[:, j]
        columns[a.name] = col if not a.is_nominal else np.array(
            [None if np.isnan(v) else a.values[int(v)] for v in col], dtype=object)
    frame = pd.DataFrame(columns)
    labels = np.asarray(data.class_attribute.values, dtype=object)[data.y]
    est.fit(frame, labels)
    got = np.asarray(est.predict_proba(frame), dtype=np.float64)
    if got.shape != (data.n_instances, len(est.classes_)):
        raise ContractError(f"scikit-learn: predict_proba gave shape {got.shape}, expected "
                            f"({data.n_instances}, {len(est.classes_)})")
    problem = probability_problem(got)
    if problem:
        raise ContractError(f"scikit-learn: the wrapper's predict_proba {problem}")
    if not np.array_equal(est.predict(frame), est.classes_[np.argmax(got, axis=1)]):
        raise ContractError("scikit-learn: predict is not the first maximum")
    return True


def _seed_of(learner: str, seed: int) -> dict[str, int]:
    from workbench.learners import registry

    names = registry.get(learner).parameters()
    return {k: seed for k in ("seed", "random_state") if k in names}


_CHECKS = (_distributions, _deterministic, _row_order, _pickle, _in_parts, _scikit_learn)
