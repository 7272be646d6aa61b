"""The `AnJE` learner (SPEC §6): generative AnJE, and discriminative weights (WANBIA-C,
ALR<n>), direct parameters (LR, LR<n>) or one weight per attribute (WANBIA) on top of its
single-pass estimates — one class, the model form a parameter — and the registered names."""

from __future__ import annotations

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.anje.objective import OBJECTIVES, Problem, score_rows, softmax_rows
from workbench.learners.anje.optimize import OPTIMIZERS, LbfgsSettings, lbfgs, stochastic
from workbench.learners.base import Learner, choice, integer, number
from workbench.learners.joins import JoinIndex, anje_exponent, missing_as_first_value
from workbench.learners.registry import register

MAX_JOIN = 5
MODELS = ("generative", "weighted", "direct", "tied")
INITS = (0, 1, "anje")


class AnJE(Learner):
    """Averaged n-join estimators and their discriminatively trained forms (SPEC §6).

    ``model``: ``generative`` (AnJE: s(y) = L(y) + e_n·Σ_α L(x_α | y), e_n = 1/C(A−1, n−1)),
    ``weighted`` (one weight per class and per (join, joint value, class) multiplying the
    log estimates: WANBIA-C for n = 1, ALR<n>), ``direct`` (the same entries as plain
    parameters: logistic regression LR, LR<n>) or ``tied`` (one weight per attribute in
    [0, 1], n = 1: WANBIA). The estimates are m-estimates over declared values from one
    counting pass (`joins.JoinIndex`); a missing value reads as the attribute's first
    declared value (SPEC §6.2, unlike §2). Training minimises ``objective`` (cll or mse)
    with L-BFGS-B (the reference's settings) or, for weighted/direct with cll, single-pass
    ``sgd`` / ``adagrad``; `iterations()` and `fit_report()` give the steps taken and the
    final objective.
    """

    preprocessing = "mdl"

    parameters = (
        integer("n", 1, 1, MAX_JOIN),
        choice("model", "generative", MODELS),
        choice("objective", "cll", OBJECTIVES),
        choice("optimizer", "lbfgs", OPTIMIZERS),
        choice("init", 0, INITS),
        number("l2", 0.0, 0.0),
        integer("max_iter", 10000, 0),
        number("factr", 1e7, 0.0),
        number("pgtol", 1e-33, 0.0),
        integer("history", 5, 1),
        integer("passes", 1, 1),
        number("eta", 0.01, 0.0, strict=True),
        integer("shuffle_seed", None, 0, optional=True),
    )

    def _check_combination(self) -> None:
        """Refuse option combinations the specification does not define."""
        owner = type(self).__name__
        if self.model == "tied" and self.n != 1:
            raise LearnerError(f"{owner}: model 'tied' (WANBIA) has one weight per "
                               f"attribute and needs n = 1, got n = {self.n}")
        if self.model == "tied" and self.init != 1:
            raise LearnerError(f"{owner}: model 'tied' (WANBIA) always starts at weights 1; "
                               f"parameter 'init' must be 1, got {self.init!r}")
        if self.optimizer != "lbfgs" and self.model not in ("weighted", "direct"):
            raise LearnerError(f"{owner}: optimizer '{self.optimizer}' trains the weighted "
                               f"or direct models only, not model '{self.model}'")
        if self.optimizer != "lbfgs" and self.objective != "cll":
            raise LearnerError(f"{owner}: optimizer '{self.optimizer}' minimises the cll "
                               f"objective only, got objective '{self.objective}'")
        if self.l2 > 0 and (self.model not in ("weighted", "direct") or
                            self.optimizer != "lbfgs" or self.objective != "cll"):
            raise LearnerError(f"{owner}: parameter 'l2' applies to the weighted and direct "
                               "models with optimizer 'lbfgs' and objective 'cll' only")

    def _reset(self) -> None:
        """Forget the fit; a new or re-parameterised learner checks its options here."""
        super()._reset()
        self._check_combination()
        self.index_: JoinIndex | None = None
        self.theta_: np.ndarray | None = None
        self._terms: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._report: dict | None = None

    # ----- training ----------------------------------------------------------------------
    def _fit(self, rows: Dataset) -> None:
        if not rows.is_all_nominal:
            names = ", ".join(f"'{rows.attributes[i].name}'" for i in rows.numeric_indices[:5])
            raise LearnerError(f"{type(self).__name__}: numeric attribute(s) {names} in "
                               f"{rows.source or rows.name}; AnJE needs nominal data (use "
                               "preprocessing 'mdl' or 'ef:B')")
        A = rows.n_attributes
        if A < self.n:
            raise LearnerError(f"{type(self).__name__}: a join of order n = {self.n} needs "
                               f"at least {self.n} attributes; {rows.source or rows.name} has "
                               f"{A}")
        codes = missing_as_first_value(rows.codes())
        y = np.asarray(rows.y, dtype=np.int64)
        index = JoinIndex(rows.cardinalities, rows.n_classes, self.n)
        slots = index.fit(codes, y)
        self.index_ = index
        e = anje_exponent(A, self.n)
        problem = Problem(slots, y, index.log_prior(),
                          index.log_conditional(), index.joins[index.slot_join(), 0], A,
                          "weighted" if self.model == "generative" else self.model,
                          self.objective, self.l2)
        unseen = index.log_unseen()
        if self.model == "generative":
            self._terms = (problem.log_prior, e * problem.log_cond, e * unseen)
            s = score_rows(slots, *self._terms)
            self._report = {"train_objective": _objective_of(s, y, self.objective)}
            return
        theta0 = self._initial(problem, e)
        if self.optimizer == "lbfgs":
            settings = LbfgsSettings(self.max_iter, self.factr, self.pgtol, self.history)
            out = lbfgs(problem, theta0, settings,
                        bounds=(0.0, 1.0) if self.model == "tied" else None)
        else:
            out = stochastic(problem, theta0, self.optimizer == "adagrad", self.eta,
                             self.passes, self.shuffle_seed)
        self.theta_ = out.theta
        c, per_slot = problem.effective(out.theta)
        self._terms = (c, per_slot, self._unseen_terms(out.theta, unseen, e))
        self._report = {"iterations": out.iterations, "train_objective": out.objective,
                        "evaluations": out.evaluations, "stop": out.message}

    def _initial(self, problem: Problem, e: float) -> np.ndarray:
        """θ at the start (SPEC §6.7): 0, 1, or the AnJE estimates (`anje`)."""
        if self.model == "tied" or self.init == 1:
            return np.ones(problem.size)
        if self.init == 0:
            return np.zeros(problem.size)
        if self.model == "weighted":
            return np.full(problem.size, e)
        return np.concatenate((e * problem.log_prior, (e * problem.log_cond).ravel()))

    def _unseen_terms(self, theta: np.ndarray, unseen: np.ndarray, e: float) -> np.ndarray:
        """(S, K) what a declared joint value unseen in training adds: its parameter never
        moved from the initial value (SPEC §6.6); for WANBIA the attribute's weight."""
        if self.model == "tied":
            return theta[self.index_.joins[:, 0]][:, None] * unseen
        if self.init == "anje":
            return e * unseen
        if self.model == "weighted":
            return float(self.init) * unseen
        return np.full_like(unseen, float(self.init))

    # ----- prediction --------------------------------------------------------------------
    def _joint_log_likelihood(self, data: Dataset) -> np.ndarray:
        slots = self.index_.lookup(missing_as_first_value(data.codes()))
        return score_rows(slots, *self._terms)

    # ----- reports -----------------------------------------------------------------------
    def iterations(self) -> int | None:
        return None if not self._report else self._report.get("iterations")

    def fit_report(self) -> dict | None:
        return None if self._report is None else dict(self._report)

    def model_bytes(self) -> int | None:
        if self.index_ is None:
            return None
        idx = self.index_
        tables = idx.seen_keys.nbytes + idx.counts.nbytes + sum(t.nbytes for t in self._terms)
        return int(tables + (0 if self.theta_ is None else self.theta_.nbytes))


def _objective_of(s: np.ndarray, y: np.ndarray, objective: str) -> float:
    """f (SPEC §6.6) of score rows s: CLL with the −ln K offset, or the summed MSE."""
    p, lse = softmax_rows(s)
    N, K = s.shape
    if objective == "cll":
        return float(np.sum(lse - s[np.arange(N), y]) - N * np.log(K))
    d = p.copy()
    d[np.arange(N), y] -= 1.0
    return float(np.sum(d * d))


# ----- registered names (SPEC §6.1) ------------------------------------------------------------
for _n in range(1, MAX_JOIN + 1):
    register(f"A{_n}JE", AnJE, n=_n, description=f"averaged {_n}-join estimators (generative)"
             + (" = naive Bayes under SPEC §6's missing-value rule" if _n == 1 else ""))

_FORMS = {}
for _n in range(1, MAX_JOIN + 1):
    _FORMS[("WANBIA-C",) if _n == 1 else (f"ALR{_n}",)] = (
        _n, "weighted", "NB-preconditioned weights per (join, value, class)")
    _FORMS[("LR",) if _n == 1 else (f"LR{_n}",)] = (
        _n, "direct", "logistic regression on the joins' indicators")

_ALIASES = {"WANBIA-C": ["ALR1"], "LR": ["LR1"],
            **{f"ALR{_n}": [f"WANJE{_n}"] for _n in range(2, MAX_JOIN + 1)}}
_EXTRAS = {"-init1": {"init": 1}, "-initNB": {"init": "anje"}, "-MSE": {"objective": "mse"},
           "-SGD": {"optimizer": "sgd"}, "-ADAGRAD": {"optimizer": "adagrad"}}

for (_name,), (_n, _model, _what) in _FORMS.items():
    _desc = f"{_what}, n = {_n} (L-BFGS-B, CLL)"
    register(_name, AnJE, n=_n, model=_model, description=_desc)
    for _alias in _ALIASES.get(_name, []):
        register(_alias, AnJE, n=_n, model=_model, description=f"alias of {_name}")
    for _suffix, _over in _EXTRAS.items():
        register(_name + _suffix, AnJE, n=_n, model=_model, **_over,
                 description=f"{_name} with {', '.join(f'{k}={v}' for k, v in _over.items())}")

register("WANBIA", AnJE, n=1, model="tied", init=1,
         description="naive Bayes with one weight per attribute in [0, 1] (CLL, L-BFGS-B)")
register("WANBIA-MSE", AnJE, n=1, model="tied", init=1, objective="mse",
         description="WANBIA with the MSE objective")
