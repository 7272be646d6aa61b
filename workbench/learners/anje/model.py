"""The `AnJE` learner (SPEC §6): generative AnJE, and discriminative weights (WANBIA-C,
ALR<n>), direct parameters (LR, LR<n>) or one weight per attribute (WANBIA) on top of its
single-pass estimates — one class, the model form a parameter — and the registered names."""

from __future__ import annotations

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.anje.objective import (
    OBJECTIVES,
    Problem,
    objective_pass,
    score_rows,
    softmax_rows,
)
from workbench.learners.anje.optimize import (
    OPTIMIZERS,
    LbfgsSettings,
    Outcome,
    sgd_pass,
    lbfgs,
    stochastic,
    stochastic_outcome,
)
from workbench.learners.base import CountingLearner, MultiPassLearner, choice, integer, number
from workbench.learners.joins import JoinIndex, anje_exponent, missing_as_first_value
from workbench.learners.registry import register

MAX_JOIN = 5
MODELS = ("generative", "weighted", "direct", "tied")
INITS = (0, 1, "anje")


class AnJE(MultiPassLearner):
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

    Out of core (`MultiPassLearner`): the generative model and the SGD / AdaGrad forms in
    file order train in passes — counting, the `passes` SGD passes, and one pass for the
    final objective — giving the same parameters as `fit`; L-BFGS-B (one pass per
    objective evaluation) and shuffled SGD train in memory only.
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
    def _check_input(self, rows: Dataset) -> None:
        if not rows.is_all_nominal:
            names = ", ".join(f"'{rows.attributes[i].name}'" for i in rows.numeric_indices[:5])
            raise LearnerError(f"{type(self).__name__}: numeric attribute(s) {names} in "
                               f"{rows.source or rows.name}; AnJE needs nominal data (use "
                               "preprocessing 'mdl' or 'ef:B')")
        if rows.n_attributes < self.n:
            raise LearnerError(f"{type(self).__name__}: a join of order n = {self.n} needs "
                               f"at least {self.n} attributes; {rows.source or rows.name} has "
                               f"{rows.n_attributes}")

    def _problem(self, slots: np.ndarray, y: np.ndarray) -> Problem:
        """The objective's inputs from the fitted index (rows: `slots`, `y`; none out of
        core, where the passes bring them)."""
        index = self.index_
        return Problem(slots, y, index.log_prior(), index.log_conditional(),
                       index.joins[index.slot_join(), 0], len(index.cards),
                       "weighted" if self.model == "generative" else self.model,
                       self.objective, self.l2)

    def _fit(self, rows: Dataset) -> None:
        self._check_input(rows)
        A = rows.n_attributes
        codes = missing_as_first_value(rows.codes())
        y = np.asarray(rows.y, dtype=np.int64)
        index = JoinIndex(rows.cardinalities, rows.n_classes, self.n)
        slots = index.fit(codes, y)
        self.index_ = index
        e = anje_exponent(A, self.n)
        problem = self._problem(slots, y)
        if self.model == "generative":
            self._set_terms(problem, e)
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
        self._set_terms(problem, e, out.theta)
        self._report_outcome(out)

    def _set_terms(self, problem: Problem, e: float, theta: np.ndarray | None = None) -> None:
        """The score terms of the fitted model: AnJE's estimates (`theta` None), or what θ
        makes of them."""
        unseen = self.index_.log_unseen()
        if theta is None:
            self._terms = (problem.log_prior, e * problem.log_cond, e * unseen)
        else:
            c, per_slot = problem.effective(theta)
            self._terms = (c, per_slot, self._unseen_terms(theta, unseen, e))

    def _report_outcome(self, out: Outcome) -> None:
        self._report = {"iterations": out.iterations, "train_objective": out.objective,
                        "evaluations": out.evaluations, "stop": out.message}

    # ----- training in passes (out of core) ---------------------------------------------
    def pass_refusal(self) -> str | None:
        if self.model == "generative":
            return None
        if self.optimizer == "lbfgs":
            return ("L-BFGS-B evaluates the objective over all rows at every step; out of "
                    "core train the -SGD / -ADAGRAD forms (or train in memory)")
        if self.shuffle_seed is not None:
            return "shuffled SGD reorders all rows each pass; out of core rows go in file order"
        return None

    def n_passes(self) -> int:
        """Counting, the SGD passes (none for the generative model), the final objective."""
        return 2 + (0 if self.model == "generative" else self.passes)

    def _begin(self, header: Dataset) -> None:
        self._check_input(header)
        self.index_ = JoinIndex(header.cardinalities, header.n_classes, self.n)
        self._objective, self._rows = 0.0, 0

    def _learn(self, pass_no: int, rows: Dataset) -> None:
        codes = missing_as_first_value(rows.codes())
        y = np.asarray(rows.y, dtype=np.int64)
        if pass_no == 0:
            self.index_.add(codes, y)
            return
        slots = self.index_.lookup(codes)
        if (slots < 0).any():
            raise LearnerError(f"{type(self).__name__}: pass {pass_no + 1} reads a joint "
                               "value pass 1 did not count: every pass must read the same rows")
        problem = self._empty_problem
        if pass_no < self.n_passes() - 1:  # an SGD pass, θ updated in place
            tc, ts = problem.split(self.theta_)
            sgd_pass(slots, y, np.arange(len(y), dtype=np.int64), problem.log_prior,
                      problem.log_cond, tc, ts, *self._adagrad, problem.parameterisation ==
                      "weighted", self.optimizer == "adagrad", self.eta)
        elif self.model == "generative":
            self._objective += _objective_of(score_rows(slots, *self._terms), y, self.objective)
        else:
            c, e = self._terms[:2]
            self._objective += objective_pass(slots, y, np.ascontiguousarray(c),
                                               np.ascontiguousarray(e), False, *self._scratch)
        self._rows += len(y)

    def _end_pass(self, pass_no: int) -> None:
        last = self.n_passes() - 1
        e = anje_exponent(len(self.index_.cards), self.n)
        if pass_no == 0:
            self.index_.finish()
            if self.index_.class_counts.sum() == 0:
                raise LearnerError(f"{type(self).__name__}: no training rows with a class")
            problem = self._problem(np.zeros((0, self.index_.n_joins), np.int64),
                                    np.zeros(0, np.int64))
            self._empty_problem = problem
            if self.model == "generative":
                self._set_terms(problem, e)
            else:
                self.theta_ = self._initial(problem, e)
                tc, ts = problem.split(self.theta_)
                self._adagrad = (np.zeros_like(tc), np.zeros_like(ts))
        if pass_no == last - 1:  # the objective pass follows
            if self.model != "generative":
                self._set_terms(self._empty_problem, e, self.theta_)
                K = self.index_.K
                self._scratch = (np.empty(K), np.empty((self._empty_problem.J, K)))
                self._adagrad = None
            self._objective, self._rows = 0.0, 0
        if pass_no == last:
            if self.model == "generative":
                self._report = {"train_objective": self._objective}
            else:
                self._report_outcome(stochastic_outcome(
                    self.theta_, self._objective - self._rows * np.log(self.index_.K),
                    self.passes, self._rows, self.optimizer == "adagrad"))
            self._empty_problem = self._scratch = None

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

    def stream(self) -> "AnJEStream":
        """The same learner learning a stream chunk by chunk (`AnJEStream`; the prequential
        protocol asks for it)."""
        form = AnJEStream(**self.get_params())
        if "preprocessing" in self.__dict__:  # a per-instance choice (config, --set)
            form.preprocessing = self.preprocessing
        return form

    # ----- prediction --------------------------------------------------------------------
    def _joint_log_likelihood(self, data: Dataset) -> np.ndarray:
        slots = self.index_.lookup(missing_as_first_value(data.codes()))
        return score_rows(slots, *self._terms)

    # ----- reports -----------------------------------------------------------------------
    @property
    def order_free(self) -> bool:
        """Counting and convex L-BFGS training do not depend on the row order (up to the
        optimiser's tolerance); SGD / AdaGrad visit the rows in order, and the non-convex
        mse objective can settle elsewhere when sums are taken in another order."""
        return self.optimizer == "lbfgs" and (self.model == "generative"
                                              or self.objective == "cll")

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


class AnJEStream(CountingLearner, AnJE):
    """The direct form (logistic regression: LR-SGD, LR-ADAGRAD, LR<n>-…) learning a stream:
    each chunk's rows make one SGD / AdaGrad update each, in order, with the parameters the
    earlier chunks left (SPEC §6.8's pass, continued chunk after chunk), so that on a fixed
    discretisation the model after the last chunk is LR-SGD's single pass in file order
    over all of them (`fit`: the rows as one chunk). A joint value gets its parameters
    (at `init`) when a chunk first shows it: no counting pass comes first. Under IDA / IDAW
    the cut points move between chunks and a value code keeps its quantile's parameters
    (the AOARD report's §6 streams). The weighted forms multiply estimates from a counting
    pass over all rows and are not streams."""

    def n_passes(self) -> int:
        return 1

    def chunk_refusal(self) -> str | None:
        if self.model != "direct" or self.optimizer == "lbfgs":
            return ("a stream is learned by the direct form with SGD or AdaGrad (LR-SGD, "
                    "LR-ADAGRAD): the others need every row before the first update")
        if self.init == "anje" or self.passes != 1 or self.shuffle_seed is not None:
            return ("a stream is read once, in order, from parameters at 0 or 1: init "
                    "'anje', passes > 1 and shuffle_seed need all rows first")
        return None

    def _fit(self, rows: Dataset) -> None:
        why = self.chunk_refusal()
        if why:
            raise LearnerError(f"{type(self).__name__}: {why}")
        self._add_counts(rows)

    def _add_counts(self, rows: Dataset) -> None:
        codes = missing_as_first_value(rows.codes())
        y = np.asarray(rows.y, dtype=np.int64)
        if self.index_ is None:
            self._check_input(rows)
            self.index_ = JoinIndex(rows.cardinalities, rows.n_classes, self.n)
            K = rows.n_classes
            self._tc, self._ts = np.full(K, float(self.init)), np.zeros((0, K))
            self._adagrad = (np.zeros(K), np.zeros((0, K)))
            self._rows = 0
        index = self.index_
        keys = index.keys(codes)
        new = np.setdiff1d(keys, index.seen_keys)  # sorted, distinct
        if len(new):  # parameters for the joint values seen for the first time
            at = np.searchsorted(index.seen_keys, new)
            index.seen_keys = np.insert(index.seen_keys, at, new)
            self._ts = np.insert(self._ts, at, float(self.init), axis=0)
            self._adagrad = (self._adagrad[0], np.insert(self._adagrad[1], at, 0.0, axis=0))
        slots = np.searchsorted(index.seen_keys, keys)
        K = index.K
        sgd_pass(slots, y, np.arange(len(y), dtype=np.int64), np.zeros(K),
                 np.zeros((0, K)), self._tc, self._ts, *self._adagrad, False,
                 self.optimizer == "adagrad", self.eta)
        self._rows += len(y)
        self.theta_ = np.concatenate((self._tc, self._ts.ravel()))
        self._terms = (self._tc, self._ts, np.full((index.n_joins, K), float(self.init)))
        self._report = {"iterations": 1, "evaluations": self._rows,
                        "stop": f"one pass of {'AdaGrad' if self.optimizer == 'adagrad' else 'SGD'}"
                                " over a stream"}


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
