"""The KDB-family learners: KDB, TAN and selective KDB (SKDB), with their registered
variants (SPEC §4)."""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.jit import numba
from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.ande import AnDE
from workbench.learners.counting import code_dtype
from workbench.learners.ande.estimates import m_estimate
from workbench.learners.base import Learner, MultiPassLearner, choice, integer, number
from workbench.learners.kdb.structure import (
    StructureCounts,
    kdb_parents,
    mi_and_cmi,
    mi_order,
    tan_parents,
)
from workbench.learners.kdb.scoring import M_MIN, Scorer
from workbench.learners.kdb.tables import (
    build_table,
    build_tables,
    loo_factors,
    loo_step,
)
from workbench.learners.registry import register
from workbench.learners.tuples import TupleCounts
from workbench.rowops import class_counts

# ================================================================================================
# Input preparation
# ================================================================================================
def _check_nominal(learner: str, data: Dataset) -> None:
    if not data.is_all_nominal:
        names = ", ".join(data.attributes[i].name for i in data.numeric_indices[:5])
        raise LearnerError(
            f"{learner}: numeric attribute(s) {names} in {data.source or data.name}; "
            "KDB/SKDB/TAN need all-nominal data (use preprocessing 'ef:5' or 'mdl')"
        )


def _with_missing(codes_t: np.ndarray, missing_code: np.ndarray) -> np.ndarray:
    """Attribute-major codes (d, n) with each missing value (−1) replaced, in place, by its
    attribute's `?` code (kept at −1 where the attribute has none, code −1); returned."""
    _fill_missing(codes_t, np.asarray(missing_code, dtype=np.int64))
    return codes_t


@numba.njit(cache=True, nogil=True)
def _fill_missing(codes_t, missing_code):
    """`_with_missing` compiled: one pass over each attribute with a `?` code, a select per
    value (a mask and a masked store per attribute cost 30 µs each on adult's rows)."""
    for a in range(codes_t.shape[0]):
        m = missing_code[a]
        if m >= 0:
            col = codes_t[a]
            for r in range(col.shape[0]):
                col[r] = m if col[r] < 0 else col[r]


# ================================================================================================
# Learners
# ================================================================================================
class BayesNetBase(Learner):
    """Common fit/predict for KDB-like models: structure + per-attribute count tables,
    estimated with the m-estimate's `m` (SPEC §4: m = 1; at least `scoring.M_MIN`)."""

    preprocessing = "ef:5"
    parameters = (number("m", 1.0, M_MIN),)

    # set by _prepare
    n_classes_: int
    cards_: np.ndarray
    missing_code_: np.ndarray
    class_counts_: np.ndarray
    n_train_: int
    # model
    attributes_: list[int]  # attributes in the product, in model order
    parents_: list[list[int]]  # per attribute index (full list, before any cut)
    depth_cap_: int  # maximum parent depth used at classification
    backoff_: bool = True
    tables_: dict

    def _prepare(self, data: Dataset) -> tuple[np.ndarray, np.ndarray]:
        """Validate, drop missing-class rows, set value codes; returns (X codes, y), X in
        Fortran order (the tables and structure counts read whole columns) and in the
        narrowest integer type holding every code and `?` (`code_dtype`: adult's int8 is
        an eighth of int64's bytes to write and stream)."""
        name = type(self).__name__
        if not isinstance(data, Dataset):
            raise LearnerError(f"{name}: fit expects a Dataset, got {type(data).__name__}")
        _check_nominal(name, data)
        self._reset()
        self._remember_header(data)
        train = data.without_missing_class()
        declared = data.cardinalities.astype(np.int64)
        codes_t = train.column_codes(code_dtype(declared + 1))  # (d, n): X is its F view
        has_missing = codes_t.min(axis=1) < 0 if codes_t.shape[1] else np.zeros(
            codes_t.shape[0], dtype=bool
        )
        self.cards_ = np.maximum(declared + has_missing.astype(np.int64), 1)
        self.missing_code_ = np.where(has_missing, declared, -1).astype(np.int64)
        self.n_classes_ = data.n_classes
        if self.n_classes_ < 1:
            raise LearnerError(f"{name}: the class attribute declares no values")
        X = _with_missing(codes_t, self.missing_code_).T
        y = train.y.astype(np.int64)
        self.n_train_ = int(len(y))
        self.class_counts_ = class_counts(y, self.n_classes_).astype(np.float64)
        return X, y

    def _fit_tables(self, X: np.ndarray, y: np.ndarray, attributes: list[int]) -> None:
        X = np.asfortranarray(X)  # (each table reads whole columns)
        self.tables_ = build_tables(X, y, attributes, self.parents_, self.cards_,
                                    self.n_classes_)

    def model_bytes(self) -> int | None:
        """Bytes of the class counts and every attribute's count tables."""
        tables = getattr(self, "tables_", None)
        if tables is None:
            return None
        total = int(self.class_counts_.nbytes)
        for t in tables.values():
            total += sum(int(k.nbytes) for k in t.pair_keys)
            total += sum(int(k.nbytes) for k in t.pair_pos if k is not None)
            total += sum(int(getattr(t, f).nbytes) for f in (
                "offsets", "cfg_keys", "cfg_counts", "cell_keys", "cell_counts")
                if getattr(t, f) is not None)
        return total

    def _prior(self) -> np.ndarray:
        K = self.n_classes_
        return m_estimate.py_func(self.class_counts_, self.m / K, self.n_train_, self.m)

    def _products(self, data: Dataset, normalise: bool = False) -> np.ndarray:
        """P(y) · Π_i P(x_i | π_i, y) per row and class, times a power of two per row (or
        divided by the row's sum with `normalise`)."""
        tables = [self.tables_[a] for a in self.attributes_]
        made = getattr(self, "_scorer", None)  # (built once per fitted structure)
        if made is None or len(made.tables) != len(tables) or \
                made.backoff != bool(self.backoff_) or made.cap != self.depth_cap_ or \
                made.m != self.m or \
                any(u is not v for u, v in zip(made.tables, tables)):
            self._scorer = Scorer(tables, self.cards_, self.n_classes_, self.depth_cap_,
                                  self.backoff_, data.n_instances, self.m,
                                  float(self.class_counts_.sum()))
        return self._scorer.products(data.column_codes(code_dtype(self.cards_)),
                                     self.missing_code_,
                                     self._prior(), normalise)

    def _joint_log_likelihood(self, data: Dataset) -> np.ndarray:
        """log P(y) + Σ_i log P(x_i | π_i, y) per row and class, up to a constant per row."""
        with np.errstate(divide="ignore"):
            return np.log(self._products(data))

    def predict_proba(self, data: Dataset) -> np.ndarray:
        """The products (`_products`) normalised per row: no logarithms."""
        self._check_fitted(data)
        return self._products(data, normalise=True)

    def _check_fitted(self, data: Dataset) -> None:
        if not isinstance(data, Dataset):
            raise LearnerError(
                f"{type(self).__name__}: predict expects a Dataset, got {type(data).__name__}"
            )
        super()._check_fitted(data)

    def _learn_mi_cmi(self, X: np.ndarray, y: np.ndarray, need_cmi: bool = True) -> None:
        K = self.n_classes_
        if need_cmi:  # (the (value, class) tables from the pair tables: one count)
            self.mi_, self.cmi_ = mi_and_cmi(X, y, self.cards_, K,
                                             class_counts=self.class_counts_)
        else:
            self.mi_ = StructureCounts(self.cards_, K, pairs=False).add(X, y).mutual_information()
            self.cmi_ = np.zeros((X.shape[1], X.shape[1]))
        self.order_ = mi_order(self.mi_)


class _PassTrained(BayesNetBase, MultiPassLearner):
    """KDB-like learners trained in passes over chunks of rows (`MultiPassLearner`), as the
    JMLR 2016 paper sells them for data larger than memory:

    1. the structure counts (`StructureCounts`: class, (value, class) and pair tables, with
       a provisional `?` code for every attribute); at its end the `?` codes are fixed from
       the training rows, MI / CMI computed and the structure chosen (`_choose_structure`);
    2. every attribute's family (parents, value, class) counted as distinct tuples
       (`TupleCounts`), from which the tables are built with the tuples' counts as weights —
       the same tables as in memory;
    3. (SKDB) the leave-one-out losses, row by row in file order with the sums carried from
       chunk to chunk, so that they are the in-memory sums to the last bit.

    In memory, `fit` runs the same steps on the whole array at once."""

    def n_passes(self) -> int:
        return 2

    def _needs_cmi(self) -> bool:
        return True

    def _choose_structure(self) -> None:  # pragma: no cover - interface
        """Set parents_, attributes_, depth_cap_ and backoff_ from mi_, cmi_ and order_."""
        raise NotImplementedError

    def fit(self, data: Dataset) -> "_PassTrained":
        """Learn MI / CMI, choose the structure, count (all in memory)."""
        X, y = self._prepare(data)
        self._learn_mi_cmi(X, y, need_cmi=self._needs_cmi())
        self._choose_structure()
        self._fit_tables(X, y, self.attributes_)
        return self

    # ---- passes ------------------------------------------------------------------------------
    def _begin(self, header: Dataset) -> None:
        _check_nominal(type(self).__name__, header)
        self.n_classes_ = header.n_classes
        if self.n_classes_ < 1:
            raise LearnerError(f"{type(self).__name__}: the class attribute declares no values")
        self._declared = header.cardinalities.astype(np.int64)
        self._stage: object = StructureCounts(self._declared + 1, self.n_classes_,
                                              pairs=self._needs_cmi())

    def _learn(self, pass_no: int, rows: Dataset) -> None:
        y = rows.y.astype(np.int64)
        codes_t = rows.column_codes(np.int64)  # (X below: its Fortran-order view)
        if pass_no == 0:  # (a provisional `?` code for every attribute)
            self._stage.add(_with_missing(codes_t, self._declared).T, y)
            return
        X = _with_missing(codes_t, self.missing_code_).T
        if (X < 0).any():
            raise LearnerError(f"{type(self).__name__}: pass {pass_no + 1} reads a missing "
                               "value pass 1 did not see: every pass must read the same rows")
        if pass_no == 1:
            for a, counts in self._stage.items():
                counts.add(np.column_stack([X[:, self.parents_[a] + [a]], y]))
        else:
            self._learn_loo(X, y)

    def _end_pass(self, pass_no: int) -> None:
        if pass_no == 0:
            sc: StructureCounts = self._stage
            if sc.n == 0:
                raise LearnerError(f"{type(self).__name__}: no training rows with a class")
            has_missing = np.array([v[d].sum() > 0 for v, d in zip(sc.values, self._declared)],
                                   dtype=bool)
            self.cards_ = np.maximum(self._declared + has_missing.astype(np.int64), 1)
            self.missing_code_ = np.where(has_missing, self._declared, -1).astype(np.int64)
            self.n_train_ = int(sc.n)
            self.class_counts_ = sc.class_counts.astype(np.float64)
            self.mi_ = sc.mutual_information()
            d = len(self._declared)
            self.cmi_ = sc.conditional_mutual_information() if self._needs_cmi() \
                else np.zeros((d, d))
            self.order_ = mi_order(self.mi_)
            self._choose_structure()
            K = self.n_classes_
            self._stage = {a: TupleCounts(np.append(self.cards_[self.parents_[a] + [a]], K))
                           for a in self.attributes_}
        elif pass_no == 1:
            self._finish_tables(self._stage)
            self._stage = None
        else:
            self._finish_loo()

    def additive_pass(self, pass_no: int) -> bool:
        """The structure counts and the family counts add up over rows (SKDB's
        leave-one-out losses do not: they depend on the model's own tables)."""
        return pass_no < 2

    def pass_key(self, pass_no: int) -> Any:
        if pass_no == 0:
            return tuple(self._declared)
        return (tuple(int(c) for c in self.cards_), tuple(self.attributes_),
                tuple(tuple(self.parents_[a]) for a in self.attributes_))

    def merge_pass(self, pass_no: int, other: MultiPassLearner, sign: int = 1
                   ) -> "_PassTrained":
        self._expect_pass(f"merge_pass({pass_no})", pass_no)
        if not self.additive_pass(pass_no) or self.pass_key(pass_no) != other.pass_key(pass_no):
            raise LearnerError(f"{type(self).__name__}: pass {pass_no + 1} counts of another "
                               "structure cannot be merged")
        if pass_no == 0:
            self._stage.merge(other._stage, sign)
        else:
            for a, counts in self._stage.items():
                counts.merge(other._stage[a], sign)
        return self

    def family_columns(self, pass_no: int) -> dict[int, list[int]] | None:
        """Pass 2 counts, per attribute, the distinct tuples of its family's codes (parents,
        then the attribute; a missing value coded as the attribute's declared cardinality)
        and the class: k-fold CV may count them for all folds at once and hand each model
        its own (`set_family_counts`). None in other passes."""
        if pass_no != 1 or self._pass != 1:
            return None
        return {a: list(self.parents_[a]) + [a] for a in self.attributes_}

    def set_family_counts(self, a: int, rows: np.ndarray, counts: np.ndarray) -> None:
        """Add `counts` of the tuples `rows` (family codes, then the class) to attribute
        `a`'s pass-2 counts — what `learn` would count from the rows themselves."""
        self._expect_pass("set_family_counts", 1)
        self._stage[a].add(rows, counts)

    def _family_table(self, a: int, counts: TupleCounts, loo: bool = False):
        """`build_table` of attribute `a` on its family's distinct tuples, weighted."""
        rows = counts.decode()
        f = rows.shape[1] - 1  # parents..., child, class
        out = build_table(np.asfortranarray(rows[:, :f]), rows[:, f], f - 1,
                           list(range(f - 1)),
                           self.cards_[self.parents_[a] + [a]], self.n_classes_, loo=loo,
                           weights=counts.counts.astype(np.float64))
        table = out[0] if loo else out
        table.child, table.parents = a, list(self.parents_[a])
        return out

    def _finish_tables(self, stage: dict) -> None:
        self.tables_ = {a: self._family_table(a, stage[a]) for a in self.attributes_}

    def _learn_loo(self, X: np.ndarray, y: np.ndarray) -> None:  # pragma: no cover
        raise NotImplementedError

    def _finish_loo(self) -> None:  # pragma: no cover
        raise NotImplementedError


class KDB(_PassTrained):
    """k-dependence Bayesian classifier (Sahami 1996) with the JMLR 2016 semantics."""

    parameters = (integer("k", 1, 0), *BayesNetBase.parameters)

    def _k(self) -> int:
        return min(self.k, max(len(self._header.attributes) - 1, 0))

    def _needs_cmi(self) -> bool:
        return self._k() > 0

    def _choose_structure(self) -> None:
        """≤ k parents per attribute by CMI among the earlier attributes in MI order."""
        k = self._k()
        self.parents_ = kdb_parents(self.order_, self.cmi_, k)
        self.attributes_ = [int(a) for a in self.order_]
        self.depth_cap_ = k
        self.backoff_ = True


class TAN(_PassTrained):
    """Tree-augmented naive Bayes: Prim's maximum spanning tree on CMI, no back-off."""

    def _choose_structure(self) -> None:
        """The tree rooted at the first attribute."""
        self.parents_ = tan_parents(self.cmi_)
        self.attributes_ = list(range(len(self.order_)))
        self.depth_cap_ = 1
        self.backoff_ = False


class SKDB(_PassTrained):
    """Selective KDB: KDB(k_max) structure, then (attribute prefix, k) chosen by LOO-CV.

    `select` = "both" (l = 0..d × k = 0..k_max), "k" (l = d), "attributes" (k = k_max);
    `loss` = "rmse" (Σ (1 − P(y*|x))²) or "zero_one".
    """

    parameters = (
        integer("k_max", 5, 0),
        choice("select", "both", ("both", "k", "attributes")),
        choice("loss", "rmse", ("rmse", "zero_one")),
        *BayesNetBase.parameters,
    )

    def n_passes(self) -> int:
        return 3

    def _kmax(self) -> int:
        return min(self.k_max, max(len(self._header.attributes) - 1, 0))

    def _needs_cmi(self) -> bool:
        return self._kmax() > 0

    def _choose_structure(self) -> None:
        """The KDB(k_max) structure over all attributes in MI order (selection follows)."""
        self.parents_ = kdb_parents(self.order_, self.cmi_, self._kmax())
        self.attributes_ = [int(a) for a in self.order_]
        self.depth_cap_ = self._kmax()
        self.backoff_ = True

    def fit(self, data: Dataset) -> "SKDB":
        """Learn the KDB(k_max) structure, evaluate all candidates by LOO, keep the best."""
        X, y = self._prepare(data)
        n, d = X.shape
        K = self.n_classes_
        kmax = self._kmax()
        self._learn_mi_cmi(X, y, need_cmi=kmax > 0)
        self._choose_structure()
        order = list(self.attributes_)

        # ---- leave-one-out losses of every (l, k) --------------------------------------------
        losses = np.zeros((d + 1, kmax + 1))
        X = np.asfortranarray(X)  # (each table reads whole columns)
        self.tables_ = {}
        if n > 0:
            S = self._prior_losses(y, losses)
        for l, a in enumerate(order, start=1):
            if n == 0:
                self.tables_[a] = build_table(X, y, a, self.parents_[a], self.cards_, K)
                continue
            table, cell_ids, cell_cfg, cell_counts, cfg_counts, depth = build_table(
                X, y, a, self.parents_[a], self.cards_, K, loo=True
            )
            self.tables_[a] = table
            F, own = loo_factors(table.card, cell_cfg, cell_counts, cfg_counts, self.m)
            loo_step(S, y, depth, cell_ids, F, own, self.loss == "zero_one", losses[l])
        self._select(losses)
        return self

    def _prior_losses(self, y: np.ndarray, losses: np.ndarray) -> np.ndarray:
        """Add the rows' LOO class-prior losses to losses[0, :] (row by row, in order) and
        return the rows' LOO priors repeated for every k: (n, k_max+1, K)."""
        K = self.n_classes_
        onehot = np.arange(K)[None, :] == y[:, None]
        prior = m_estimate.py_func(self.class_counts_[None, :] - onehot, self.m / K,
                                   self.n_train_ - 1.0, self.m)
        prior /= prior.sum(axis=1, keepdims=True)
        if self.loss == "zero_one":
            add = float(np.count_nonzero(np.argmax(prior, axis=1) != y))
            losses[0, :] += add
        else:
            e = 1.0 - prior[np.arange(len(y)), y]
            losses[0, :] = np.cumsum(np.concatenate([[losses[0, 0]], e * e]))[-1]
        return np.ascontiguousarray(np.repeat(prior[:, None, :], losses.shape[1], axis=1))

    def _select(self, losses: np.ndarray) -> None:
        """Scan the candidates (strictly lower replaces) and keep the best (l, k)."""
        self.losses_ = losses
        d, kmax = losses.shape[0] - 1, losses.shape[1] - 1
        order = [int(a) for a in self.order_]
        if self.select == "both":
            cands = [(0, 0)] + [(l, k) for l in range(1, d + 1) for k in range(kmax + 1)]
        elif self.select == "k":
            cands = [(d, k) for k in range(kmax + 1)]
        else:
            cands = [(0, kmax)] + [(l, kmax) for l in range(1, d + 1)]
        best, best_loss = cands[0], losses[cands[0]]
        for c in cands[1:]:
            if losses[c] < best_loss:
                best, best_loss = c, losses[c]
        l_best, k_best = best
        self.selected_ = (int(l_best), int(k_best))
        self.attributes_ = order[:l_best]
        self.depth_cap_ = int(k_best)
        self.backoff_ = True
        self.tables_ = {a: self.tables_[a] for a in self.attributes_}

    # ---- the third pass ----------------------------------------------------------------------
    def _finish_tables(self, stage: dict) -> None:
        self.tables_, self._loo = {}, {}
        for a in self.attributes_:
            table, cell_ids, cell_cfg, cell_counts, cfg_counts, depth = self._family_table(
                a, stage[a], loo=True)
            self.tables_[a] = table
            self._loo[a] = (stage[a], cell_ids, depth,
                            *loo_factors(table.card, cell_cfg, cell_counts, cfg_counts, self.m))
        self._losses = np.zeros((len(self.attributes_) + 1, self._kmax() + 1))

    def _learn_loo(self, X: np.ndarray, y: np.ndarray) -> None:
        if len(y) == 0:
            return
        S = self._prior_losses(y, self._losses)
        for l, a in enumerate(self.attributes_, start=1):
            counts, cell_ids, depth, F, own = self._loo[a]
            idx = counts.index(np.column_stack([X[:, self.parents_[a] + [a]], y]))
            if (idx < 0).any():
                raise LearnerError("SKDB: pass 3 reads a row pass 2 did not count: every "
                                   "pass must read the same rows")
            loo_step(S, y, depth[idx], np.ascontiguousarray(cell_ids[:, idx]), F, own,
                      self.loss == "zero_one", self._losses[l])

    def _finish_loo(self) -> None:
        self._loo = None
        self._select(self._losses)

    @property
    def selected_attributes_(self) -> list[int]:
        """Attribute indices kept by the selection (first l of the MI order)."""
        return list(self.attributes_)

    def fit_report(self) -> dict | None:
        """The selection (the JMLR paper's Table 8 rows): the attributes kept, by name in MI
        order, and the k chosen."""
        if getattr(self, "selected_", None) is None or self._header is None:
            return None
        names = self._header.attribute_names
        return {"attributes": [names[a] for a in self.attributes_], "k": int(self.depth_cap_)}


# ================================================================================================
# Registered variants
# ================================================================================================
register(
    "KDB0", KDB, k=0,
    description="KDB with k = 0: naive Bayes with the JMLR 2016 estimates (missing = a value)",
)
for _k in range(1, 6):
    register(f"KDB{_k}", KDB, k=_k, description=f"KDB with k = {_k} (JMLR 2016 semantics)")
register("KDB", KDB, description="KDB with k a parameter (default 1; e.g. k: [1, 2, 3] with "
         "tune: chosen per training fold)")
register("SKDB", SKDB, k_max=5, description="Selective KDB: attributes and k by LOO-CV")
register("SKDB-k", SKDB, k_max=5, select="k", description="Selective KDB selecting only k")
register(
    "SKDB-atts", SKDB, k_max=5, select="attributes",
    description="Selective KDB selecting only the attributes (k = 5)",
)
for _k in range(1, 6):  # the paper's SKDB_sub (k = 1..5), Tables 2-3
    register(f"SKDB-k{_k}", SKDB, k_max=_k, select="attributes",
             description=f"Selective KDB selecting only the attributes at fixed k = {_k}")
register("TAN", TAN, description="Tree-augmented naive Bayes (Prim's tree on CMI)")


# `AODE` = the A1DE variant of the AnDE family with the JMLR 2016 input (EF5)
register("AODE", AnDE, n=1, preprocessing="ef:5",
         description="AODE (A1DE) on EF5-discretised data, as in the JMLR 2016 experiments")
