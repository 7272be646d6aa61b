"""The learner protocol: `fit(Dataset) -> self`, `predict_proba(Dataset) -> (n, K)`.

Every learner declares the input it wants in the class attribute `preprocessing`:
``"mdl"`` (Fayyad–Irani, fitted on the training data), ``"ef:B"`` (equal frequency with B
bins) or ``"none"`` (raw data, e.g. the random forest). The evaluation pipeline applies it;
a learner itself only ever sees already-preprocessed data.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError


class Learner:
    """Base class: header bookkeeping, fitted-state checks and `predict` from `predict_proba`."""

    preprocessing: ClassVar[str] = "mdl"

    _header: Dataset | None = None

    # ----- to implement --------------------------------------------------------------------
    def fit(self, data: Dataset) -> "Learner":  # pragma: no cover - interface
        raise NotImplementedError

    def predict_proba(self, data: Dataset) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    # ----- optional reports (metrics `model_bytes`, `iterations`) ------------------------
    def model_bytes(self) -> int | None:
        """Bytes of the fitted model's tables; None when the learner does not say."""
        return None

    def iterations(self) -> int | None:
        """Iterations of the optimiser of the last `fit` (learners that optimise)."""
        return None

    # ----- shared helpers ------------------------------------------------------------------
    def predict(self, data: Dataset) -> np.ndarray:
        """Class codes: the first maximum of each distribution."""
        return np.argmax(self.predict_proba(data), axis=1)

    def _remember_header(self, data: Dataset) -> None:
        """Keep an empty copy of the training header to check test data against."""
        self._header = data.take(np.zeros(0, dtype=np.int64))

    def _check_fitted(self, data: Dataset) -> None:
        """Refuse to predict before fit, or on data whose header differs from training."""
        if self._header is None:
            raise LearnerError(f"{type(self).__name__}: predict called before fit")
        diff = self._header.header_difference(data)
        if diff is not None:
            raise LearnerError(
                f"{type(self).__name__}: test data header differs from training: {diff}"
            )

    def get_params(self) -> dict:
        """Constructor parameters as set on this instance (for metadata and repr)."""
        import inspect

        sig = inspect.signature(type(self).__init__)
        return {
            p: getattr(self, p)
            for p in sig.parameters
            if p != "self" and hasattr(self, p)
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
