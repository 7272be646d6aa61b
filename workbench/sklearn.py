"""Every registered learner as a scikit-learn classifier.

    from workbench.sklearn import classifier
    clf = classifier("A2DE-SW")            # or workbench.sklearn.A2DE_SW()
    clf.fit(X, y).predict_proba(X_new)     # numpy arrays or pandas DataFrames

`fit(X, y)` takes numeric and categorical columns (a DataFrame's numeric dtypes, or a
numeric array, are numeric attributes; object, string, category and bool columns are
nominal, their values the sorted distinct training values; NaN / None is missing), fits the
learner's own preprocessing (e.g. MDL) on the training data inside `fit`, and trains the
learner; `predict_proba` gives one column per class in `classes_` order (a category unseen
in training is read as missing). The parameters are the learner's declared ones plus
``preprocessing`` (None: the learner's own), so `clone`, `GridSearchCV`, `Pipeline` and
`cross_val_score` work. One class per registered name, created on first use:
``workbench.sklearn.A1DE``, ``workbench.sklearn.A2DE_SW`` (non-identifier characters become
``_``); `classifier(name, **params)` is the same by registered name.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from workbench.data.dataset import Attribute, Dataset
from workbench.discretize import fit_discretizer
from workbench.errors import WorkbenchError
from workbench.learners import registry

__all__ = ["WorkbenchClassifier", "classifier", "estimator_class"]


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, (float, np.floating)) and np.isnan(v)) or \
        v is getattr(__import__("pandas"), "NA", object())


def _column_kinds(X: Any) -> list[bool] | None:
    """Per column: nominal? Read from a DataFrame's dtypes before validation turns it into
    an array (None: decide from the array)."""
    if not hasattr(X, "dtypes") or not hasattr(X, "columns"):
        return None
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return [is_bool_dtype(t) or not is_numeric_dtype(t) for t in X.dtypes]


def _nominal_column(col: np.ndarray) -> bool:
    """An object column is nominal unless every present value is a (non-bool) number."""
    return any(not _is_missing(v) and (isinstance(v, (bool, np.bool_)) or
                                       not isinstance(v, (int, float, np.number)))
               for v in col)


class WorkbenchClassifier(ClassifierMixin, BaseEstimator):
    """A registered learner as a scikit-learn classifier (see the module docstring)."""

    learner_name: ClassVar[str] = ""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags

    def _learner_params(self) -> dict[str, Any]:
        params = self.get_params(deep=False)
        if params.get("preprocessing") is None:
            params.pop("preprocessing", None)
        return params

    def _dataset(self, X: np.ndarray, y: np.ndarray | None) -> Dataset:
        """X as a Dataset under the header learned in `fit`."""
        cols = []
        for i, (attr, codes) in enumerate(zip(self.attributes_, self.value_codes_)):
            col = X[:, i]
            if codes is None:
                cols.append(np.array([np.nan if _is_missing(v) else float(v) for v in col])
                            if col.dtype == object else col.astype(np.float64))
            else:
                cols.append(np.array([np.nan if _is_missing(v) else codes.get(str(v), np.nan)
                                      for v in col], dtype=np.float64))
        Xf = np.column_stack(cols) if cols else np.zeros((X.shape[0], 0))
        labels = np.full(X.shape[0], -1) if y is None else y
        return Dataset("sklearn", tuple(self.attributes_),
                       Attribute("class", tuple(str(c) for c in self.classes_)), Xf, labels)

    def fit(self, X: Any, y: Any) -> "WorkbenchClassifier":
        """Learn the header (attribute kinds and values), fit the learner's preprocessing
        on X and train the learner."""
        kinds = _column_kinds(X)
        X, y = validate_data(self, X, y, dtype=None, ensure_all_finite="allow-nan")
        check_classification_targets(y)
        self.classes_, y_codes = np.unique(y, return_inverse=True)
        names = getattr(self, "feature_names_in_", None)
        attributes, value_codes = [], []
        for i in range(X.shape[1]):
            col = X[:, i]
            nominal = kinds[i] if kinds is not None else (
                X.dtype.kind == "b" or (X.dtype == object and _nominal_column(col)))
            name = str(names[i]) if names is not None else f"x{i}"
            if nominal:
                values = sorted({str(v) for v in col if not _is_missing(v)})
                attributes.append(Attribute(name, tuple(values)))
                value_codes.append({v: k for k, v in enumerate(values)})
            else:
                attributes.append(Attribute(name))
                value_codes.append(None)
        self.attributes_, self.value_codes_ = attributes, value_codes
        try:
            data = self._dataset(X, y_codes)
            learner = registry.create(self.learner_name, **self._learner_params())
            method = str(getattr(learner, "preprocessing", "none") or "none")
            self.discretizer_ = None if method == "none" else fit_discretizer(method, data)
            if self.discretizer_ is not None:
                data = self.discretizer_.transform(data)
            self.learner_ = learner.fit(data)
            iterations = learner.iterations() if hasattr(learner, "iterations") else None
            if iterations is not None:
                self.n_iter_ = int(iterations)  # optimisers: iterations run
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{type(self).__name__}: {exc}") from None
        except WorkbenchError as exc:
            raise ValueError(f"{exc} (n_samples = {X.shape[0]}, n_features = {X.shape[1]})") \
                from None
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities, one column per class in `classes_`."""
        check_is_fitted(self, "learner_")
        X = validate_data(self, X, dtype=None, ensure_all_finite="allow-nan", reset=False)
        data = self._dataset(X, None)
        if self.discretizer_ is not None:
            data = self.discretizer_.transform(data)
        from workbench.evaluation.pipeline import checked_proba  # (as every command does)

        try:
            return checked_proba(self.learner_.predict_proba(data), data.n_instances,
                                 data.n_classes, self.learner_name)
        except WorkbenchError as exc:
            raise ValueError(str(exc)) from None

    def predict(self, X: Any) -> np.ndarray:
        """The class of the first largest probability."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


_CLASSES: dict[str, type] = {}


def _class_name(name: str) -> str:
    text = "".join(ch if ch.isalnum() else "_" for ch in name)
    return text if text[:1].isalpha() else f"L_{text}"


def estimator_class(name: str) -> type:
    """The scikit-learn classifier class of registered learner `name` (created once)."""
    if name in _CLASSES:
        return _CLASSES[name]
    spec = registry.get(name)
    defaults = {**spec.parameters(), "preprocessing": None}

    def __init__(self, **params: Any) -> None:
        unknown = sorted(set(params) - set(defaults))
        if unknown:
            raise TypeError(f"{cname}: unknown parameter(s) {', '.join(unknown)} "
                            f"(parameters: {', '.join(defaults)})")
        for key, default in defaults.items():
            setattr(self, key, params.get(key, default))

    cname = _class_name(name)
    __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] +
        [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v)
         for k, v in defaults.items()])
    cls = type(cname, (WorkbenchClassifier,), {
        "__init__": __init__, "learner_name": name, "__module__": __name__,
        "__qualname__": cname,
        "__doc__": f"Registered learner '{name}' as a scikit-learn classifier"
                   f"{': ' + spec.description if spec.description else ''}."})
    _CLASSES[name] = cls
    return cls


def classifier(name: str, **params: Any) -> WorkbenchClassifier:
    """A scikit-learn classifier of registered learner `name` with `params`."""
    return estimator_class(name)(**params)


def __getattr__(attr: str) -> type:
    """``workbench.sklearn.A2DE_SW`` (also how pickle finds a class again)."""
    for name in registry.names():
        if _class_name(name) == attr:
            return estimator_class(name)
    raise AttributeError(f"module 'workbench.sklearn' has no attribute {attr!r}")
