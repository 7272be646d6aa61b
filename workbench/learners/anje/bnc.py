"""`WANBIA-bnc`: WANBIA as R's bnclassify 0.4.8 computes it (SPEC §6.9 b) — Laplace
estimates, each attribute's weighted table renormalised per class, weights fitted by
L-BFGS-B (m = 5, 100 iterations) with the un-renormalised model's gradient. Kept for
comparison with that package: only its prediction rule is a checked reference."""

from __future__ import annotations

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.anje.objective import softmax_rows
from workbench.learners.base import Learner, Param, is_number, integer
from workbench.learners.joins import missing_as_first_value
from workbench.learners.registry import register


def _weight_list(v: object) -> bool:
    return v is None or (isinstance(v, (list, tuple)) and
                         all(is_number(w) and 0.0 <= float(w) <= 1.0 for w in v))


class WanbiaBnc(Learner):
    """bnclassify's WANBIA: P(y | x) ∝ P̂(y)·Π_j θ_{x_j|y}^{w_j} / Σ_u θ_{u|y}^{w_j}.

    ``weights`` (one per attribute, in [0, 1]) skips the fit and predicts with the given
    weights, e.g. those bnclassify returned. A missing value reads as the attribute's first
    declared value, as in the rest of SPEC §6 (bnclassify itself refuses incomplete rows)."""

    preprocessing = "mdl"
    output_version = 2  # 2: rows sorted before the weights are fitted (order-free)

    parameters = (
        Param("weights", None, "null or a list of numbers in [0, 1]", _weight_list,
              lambda v: None if v is None else [float(w) for w in v]),
        integer("max_iter", 100, 0),
    )

    def _reset(self) -> None:
        super()._reset()
        self.weights_: np.ndarray | None = None
        self._log_prior: np.ndarray | None = None
        self._log_tables: list[np.ndarray] = []
        self._report: dict | None = None

    def _fit(self, rows: Dataset) -> None:
        if not rows.is_all_nominal:
            raise LearnerError(f"{type(self).__name__}: {rows.source or rows.name} has numeric "
                               "attributes; use preprocessing 'mdl' or 'ef:B'")
        codes = missing_as_first_value(rows.codes())
        y = np.asarray(rows.y, dtype=np.int64)
        K, N = rows.n_classes, rows.n_instances
        cy = np.bincount(y, minlength=K)[:K].astype(np.float64)
        self._log_prior = np.log((cy + 1.0) / (N + K))
        self._log_tables = []
        for j, card in enumerate(rows.cardinalities):
            c = np.bincount(codes[:, j] * K + y, minlength=int(card) * K).reshape(-1, K)
            self._log_tables.append(np.log((c + 1.0) / (cy + card)[None, :]))
        A = len(self._log_tables)
        if self.weights is not None:
            if len(self.weights) != A:
                raise LearnerError(f"{type(self).__name__}: parameter 'weights' has "
                                   f"{len(self.weights)} value(s), the data have {A} "
                                   "attributes")
            self.weights_ = np.array(self.weights, dtype=np.float64)
            return
        # the rows in one canonical order (sorted by class and values): the objective's sums,
        # and so the optimiser's path, are then the same bits whatever order rows came in
        order = np.lexsort(np.column_stack([codes, y]).T)
        codes, y = codes[order], y[order]
        # (N, A, K) ln θ_{x_ij|y} of the training rows
        logs = np.stack([t[codes[:, j]] for j, t in enumerate(self._log_tables)], axis=1)

        def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
            s = self._scores_from(logs, w)
            _, lse = softmax_rows(s)
            f = float(np.sum(lse - s[np.arange(N), y]))
            raw = self._log_prior[None, :] + np.einsum("iak,a->ik", logs, w)
            p, _ = softmax_rows(raw)  # the gradient bnclassify supplies (JMLR's formula)
            g = -(logs[np.arange(N), :, y] - np.einsum("iak,ik->ia", logs, p)).sum(axis=0)
            return f, g

        from scipy.optimize import minimize  # 0.4 s to import: only when a BNC is fitted

        res = minimize(fun, np.ones(A), jac=True, method="L-BFGS-B", bounds=[(0.0, 1.0)] * A,
                       options={"maxcor": 5, "ftol": 1e7 * np.finfo(float).eps, "gtol": 0.0,
                                "maxiter": self.max_iter, "maxfun": 10 ** 9, "maxls": 20})
        self.weights_ = np.asarray(res.x, dtype=np.float64)
        self._report = {"iterations": int(res.nit), "train_objective": float(res.fun),
                        "stop": str(res.message)}

    def _normalisers(self, w: np.ndarray) -> np.ndarray:
        """(A, K) ln Σ_u θ_{u|y}^{w_j}."""
        from scipy.special import logsumexp  # not at import: every run imports this module

        return np.stack([logsumexp(w[j] * t, axis=0) for j, t in enumerate(self._log_tables)])

    def _scores_from(self, logs: np.ndarray, w: np.ndarray) -> np.ndarray:
        return (self._log_prior[None, :] + np.einsum("iak,a->ik", logs, w)
                - self._normalisers(w).sum(axis=0)[None, :])

    def _joint_log_likelihood(self, data: Dataset) -> np.ndarray:
        codes = missing_as_first_value(data.codes())
        logs = np.stack([t[codes[:, j]] for j, t in enumerate(self._log_tables)], axis=1)
        return self._scores_from(logs, self.weights_)

    def iterations(self) -> int | None:
        return None if not self._report else self._report["iterations"]

    def fit_report(self) -> dict | None:
        return None if self._report is None else dict(self._report)


register("WANBIA-bnc", WanbiaBnc,
         description="WANBIA as bnclassify 0.4.8 computes it (renormalised weighted tables)")
