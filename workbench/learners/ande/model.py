"""The AnDE learner: parameters, counting, derived tables (parent totals, NB denominators,
MI weights) and the registered variants NB, A1DE, A1DE-S, …, A3DE."""

from __future__ import annotations

from math import comb
from typing import Any, ClassVar

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.ande.naive import NaiveLayout, naive_cells
from workbench.learners.ande.parentmajor import (log_scores_nb, log_scores_parent_major,
                                                 parent_major_ok)
from workbench.learners.ande.predict import (a1de_fast_ok, generalisations, log_scores,
                                             log_scores_reduced)
from workbench.learners.ande.selection import (
    ELIMINATIONS,
    BSESearch,
    asaode_choose,
    asaode_select,
    bse_pass,
    bse_select,
    mi_order,
    selective_pass,
)
from workbench.learners.ande.tables import Inputs, Tables, new_work, tables_of
from workbench.learners.ande.weights import mi_weights
from workbench.learners.base import CountingLearner, MultiPassLearner, choice, integer, number
from workbench.learners.counting.ande import AnDECounts
from workbench.learners.counting.budget import (
    MEMORY_BUDGET_ENV,
    MEMORY_FRACTION,
    estimate_block_bytes,
    layout_cells,
    memory_budget,
)
from workbench.learners.counting.combinations import colex_combinations
from workbench.learners.counting.layout import code_dtype, code_range
from workbench.learners.registry import register

MAX_ORDER = 3
_BATCH_BYTES = 256 << 20
_CACHE_BYTES = 4 << 20  # a batch's workspace that stays in cache
"""Scoring workspace per model: a larger batch reads each table block for more rows (A3DE
on optdigits, 27,720 parent sets: 7 rows a batch at 64 MB, 46 ms a row; 30 rows, 33 ms)."""


class AnDE(CountingLearner, MultiPassLearner):
    """Averaged n-dependence estimators (n = 0 is naive Bayes) with optional SR and MI weights.

    Attribute selection: a subclass (or caller) may set ``parent_mask_`` / ``child_mask_``
    (boolean per attribute) after fitting; a masked attribute is in no parent set / is no
    child. The naive Bayes fallback always uses every present attribute.

    Selection (SPEC §5, needs ``missing="value"``): ``selection="loo"`` is ASAODE at n = 1
    (the MI-ranked nested parent × child models, the one with the smallest leave-one-out
    RMSE kept) and attribute-selective AnDE at n ≥ 2 (the same search; model M(r, s) has
    the n-subsets of the first r attributes as parent sets, r ≥ n); ``"bse"`` (n = 1) is
    BSEAODE (backward elimination of `elimination` = child, parent or parent_and_child,
    with Petal's `initial_candidate_sse`). `fit` runs the search after counting; the
    result is ``parent_mask_`` / ``child_mask_``. ``n_jobs`` threads share the counting
    (parts of the rows, their counts added) and the "loo" search's leave-one-out pass
    (blocks of rows, their errors added in order): the same result, bit for bit, for any
    value.

    Missing values: ``missing="skip"`` (SPEC §2: a missing value is left out of every
    estimate) or ``"value"`` (SPEC §5.1: `?` is one more declared value of each attribute
    whose `Attribute.has_missing` is set, or that has a `?` in the first training rows;
    counted, a parent value and looked up like any other).

    Single-valued attributes (MDL's one-bin attributes) that are present in every training
    row are not counted (``constant_``): a parent set s = t ∪ v with v of them has exactly
    the counts, δ, estimates and MI weight of t, and such a child's factor is
    (#(y, x_s) + m)/(#(y, x_s) + m) = 1. So order n over u present constants is
    Σ_j C(u, j) · (the level n − j sums over the counted attributes; level 0 is naive
    Bayes), with SPEC §2's fallback per order — the same probabilities (to rounding) with
    tables and work only for the informative attributes (A3DE on musk1: 87 of 166
    attributes are single-valued). That pays from order 2 on; at orders 0 and 1 they add
    only d small blocks and the direct A1DE kernel is faster than combining levels (adult:
    1.4 → 1.0 µs a row), so they are counted. Attribute selection counts every attribute."""

    preprocessing = "mdl"
    leave_out_constants: ClassVar[bool] = True
    """Leave single-valued, never-missing attributes out of the counts from order 2 on (see
    above); False counts them like any other attribute (the literal SPEC §2 computation)."""

    parameters = (
        integer("n", 1, 0, MAX_ORDER),
        number("m", 1.0, 0.0, strict=True),
        integer("frequency_limit", 1, 0),
        integer("subsumption", None, 0, optional=True),
        choice("weighting", None, (None, "mi")),
        choice("mi_estimate", "reference", ("reference", "consistent")),
        choice("missing", "skip", ("skip", "value")),
        choice("selection", None, (None, "loo", "bse")),
        choice("elimination", "child", tuple(ELIMINATIONS)),
        number("initial_candidate_sse", 1.0, 0.0),
        integer("n_jobs", 1, 1),
        choice("layout", "compact", ("compact", "naive")),
    )

    def _reset(self) -> None:
        super()._reset()
        self.counts_: AnDECounts | None = None
        self.missing_value_: np.ndarray | None = None  # per attribute: `?` is a value
        self.cards_: np.ndarray | None = None  # values per attribute as counted (`?` incl.)
        self.constant_: np.ndarray | None = None  # per attribute: left out of the counts
        self.selection_: dict | None = None  # what the search chose (and its RMSEs)
        self.parent_mask_: np.ndarray | None = None
        self.child_mask_: np.ndarray | None = None
        self._prepared: dict | None = None
        self.naive_: NaiveLayout | None = None  # layout="naive": the counts scored from

    def __getstate__(self) -> dict:
        """Pickles leave out the derived scoring tables (rebuilt on first use)."""
        state = self.__dict__.copy()
        state["_prepared"] = None
        return state

    # ----- training --------------------------------------------------------------------
    def required_level(self) -> int:
        """Largest attribute-combination size the counts must hold for this variant."""
        return max(self.n + 1, 2 if self.subsumption is not None else 1)

    def _add_counts(self, rows: Dataset) -> None:
        self._count(rows)

    def _count(self, rows: Dataset) -> np.ndarray:
        """Count the rows in one pass (AnDE needs all-nominal data); their codes as counted
        (`recode`), for a search pass that follows."""
        if not rows.is_all_nominal:
            names = ", ".join(f"'{rows.attributes[i].name}'" for i in rows.numeric_indices[:5])
            raise LearnerError(
                f"{type(self).__name__}: numeric attribute(s) {names} in "
                f"{rows.source or rows.name}; AnDE needs nominal data (use preprocessing "
                "'mdl' or 'ef:B')"
            )
        # attribute-major narrow codes, as the counting kernels read them (`?` = its code)
        codes_t = rows.column_codes(code_dtype(rows.cardinalities + 1))
        lo, hi = code_range(codes_t)
        missing = lo < 0
        if self.counts_ is None:
            self._create_counts(rows, missing, rows.n_instances)
        as_value = (self.missing_value_ if self.missing_value_ is not None
                    else np.zeros_like(missing))
        recoded = np.flatnonzero(as_value & missing)
        for j in recoded:  # `recode`, in place
            np.copyto(codes_t[j], self.cards_[j] - 1, where=codes_t[j] == -1)
        if recoded.size:  # those columns' range as counted
            lo[recoded], hi[recoded] = code_range(codes_t[recoded])
        newly = self.constant_ & missing & ~as_value
        if newly.any():
            self._count_constants(newly, rows)
        keep = ~self.constant_
        kept = codes_t[keep] if self.constant_.any() else codes_t
        self.counts_.partial_fit(kept, rows.y, columns=True, n_jobs=self.n_jobs,
                                 ranges=(lo[keep], hi[keep]))
        if self.layout == "naive":
            self._count_naive(rows, codes_t, missing)
        self._prepared = None
        return codes_t.T

    def _count_naive(self, rows: Dataset, codes_t: np.ndarray, missing: np.ndarray) -> None:
        """``layout="naive"``: also count the rows into Salem et al.'s naive layout (the
        one classification reads), a missing value a cell of attributes that declare one."""
        if self.naive_ is None:
            declared = np.array([a.has_missing for a in rows.attributes], dtype=bool) | missing
            self.naive_ = NaiveLayout(self.cards_, declared, rows.n_classes, self.n)
        elif (missing & (self.naive_.missing_slot < 0)).any():
            raise LearnerError(
                f"{type(self).__name__} (layout 'naive'): a missing value in an attribute that "
                "had none in the first rows counted; declare it in the header's "
                "Attribute.has_missing, as loading a file does")
        self.naive_.add(codes_t.T, rows.y)

    def _create_counts(self, rows: Dataset, missing: np.ndarray, rows_hint: int,
                       declare_missing: bool = False) -> None:
        """The count tables' structure for data with `rows`' header, given which attributes
        have a missing value (`missing`): values per attribute (`?` one more with
        ``missing="value"``), the single-valued attributes left out, the budget check;
        `declare_missing` also creates the missing-child blocks of those attributes now."""
        cards = rows.cardinalities
        if self.missing == "value":
            self.missing_value_ = np.array([a.has_missing for a in rows.attributes],
                                           dtype=bool) | missing
            cards = cards + self.missing_value_
            missing = missing & ~self.missing_value_
        self.cards_ = cards
        self.constant_ = (cards == 1) & ~missing & \
            bool(self.leave_out_constants and self.selection is None and self.n >= 2)
        keep = ~self.constant_
        if self.layout == "naive":  # (the larger of the two)
            self._check_naive(cards, rows, missing)
        self.check_budget(cards[keep], rows, int(missing.sum()))
        self.counts_ = AnDECounts(cards[keep], rows.n_classes, self.required_level(),
                                  parent_levels=self.n, rows_hint=rows_hint)
        if declare_missing:
            self.counts_.add_missing_blocks(np.flatnonzero(missing[keep]))

    def start(self, header: Dataset, rows_hint: int) -> "AnDE":
        """Empty counts for data with `header`, laid out from its missing-value flags
        (`Attribute.has_missing`, e.g. from a pass over the whole file) instead of from a
        first chunk, and sized for `rows_hint` rows: models that count different parts of
        one data set then share one layout and add up (`merge`)."""
        self._reset()
        self._remember_header(header)
        self._create_counts(header, np.array([a.has_missing for a in header.attributes],
                                             dtype=bool), rows_hint, declare_missing=True)
        return self

    def merge(self, other: "AnDE", sign: int = 1) -> "AnDE":
        """Add the counts of `other` (same parameters, started from the same header and row
        hint, `start`): counts are additive, so this equals counting both parts here. With
        ``sign=-1``, subtract them: `other` counted a part of the rows counted here, and
        the result equals counting the rest (k-fold CV out of core: total − fold)."""
        if other.get_params() != self.get_params() or self.counts_ is None or \
                other.counts_ is None or not np.array_equal(self.constant_, other.constant_):
            raise LearnerError("AnDE.merge: the models differ in parameters or layout "
                               "(start both from the same header)")
        self.counts_.merge(other.counts_, sign)
        if self.naive_ is not None and other.naive_ is not None:
            self.naive_.merge(other.naive_, sign)
        self._prepared = None
        return self

    def _count_constants(self, which: np.ndarray, rows: Dataset) -> None:
        """Count the left-out attributes `which` from now on (their first missing value):
        their blocks start as copies of the blocks without them (`AnDECounts.with_constants`)."""
        keep = ~(self.constant_ & ~which)
        self.check_budget(self.cards_[keep], rows, int(self.counts_.has_missing.sum()) + 1)
        old_to_new = np.cumsum(keep)[~self.constant_] - 1
        self.counts_ = self.counts_.with_constants(self.cards_[keep], old_to_new,
                                                   rows_hint=rows.n_instances)
        self.constant_ = self.constant_ & ~which

    def chunk_refusal(self) -> str | None:
        """Attribute selection (ASAODE, BSEAODE) searches over all training rows at once
        and so has no partial_fit (it trains out of core in passes instead)."""
        if self.selection is not None:
            return (f"selection '{self.selection}' needs every training row in one call "
                    "(its leave-one-out passes): use fit, not partial_fit")
        return None

    def check_budget(self, cards: np.ndarray, rows: Dataset, with_missing: int,
                     copies: int = 1) -> None:
        """Refuse, before allocating, count tables larger than the memory budget (for
        attributes of `cards` values; also called by the out-of-core readers with a lower
        bound of the cardinalities, before their pass over a file; `copies`: models held
        at once, e.g. k-fold CV's fold tables, their total and a subtraction's copy)."""
        levels = list(range(1, min(self.required_level(), len(cards)) + 1))
        sizes = (cards, rows.n_classes, levels, rows.n_instances, with_missing)
        budget = memory_budget()
        if copies * estimate_block_bytes(*sizes, enumerate_blocks=0) <= budget:
            return  # (the all-dense bound, without sizing block by block: 0.1 ms a fit)
        need = copies * estimate_block_bytes(*sizes)
        if need > budget:
            held = "" if copies == 1 else f" for {copies} models held at once"
            raise LearnerError(
                f"A{self.n}DE on {rows.name}: the count tables{held} would need about "
                f"{need / 2**30:.1f} GiB ({len(cards)} attributes, combinations of up to "
                f"{levels[-1]}), over the memory budget of {budget / 2**30:.1f} GiB "
                f"(${MEMORY_BUDGET_ENV}; default {MEMORY_FRACTION:.0%} of the machine's "
                "memory)")

    def _check_naive(self, cards: np.ndarray, rows: Dataset, missing: np.ndarray) -> None:
        """The naive layout is the plain AnDE of Salem et al.'s timing study, within the
        memory budget (checked before allocating)."""
        if (self.subsumption is not None or self.weighting is not None
                or self.selection is not None or self.missing != "skip"):
            raise LearnerError(
                f"{type(self).__name__}: layout 'naive' is the plain AnDE of Salem et al.'s "
                "timing study: no subsumption, weighting or selection, missing 'skip'")
        declared = np.array([a.has_missing for a in rows.attributes], dtype=bool) | missing
        values = int(cards.sum() + declared.sum())
        need = 8 * naive_cells(values, rows.n_classes, min(self.n + 1, len(cards)))
        budget = memory_budget()
        if need > budget:
            raise LearnerError(
                f"A{self.n}DE (layout 'naive') on {rows.name}: the naive layout would need "
                f"{need / 2**30:.1f} GiB ({values} attribute values, combinations of "
                f"{min(self.n + 1, len(cards))}), over the memory budget of "
                f"{budget / 2**30:.1f} GiB (${MEMORY_BUDGET_ENV})")

    def _check_selection(self) -> None:
        if self.selection is not None:
            orders = "n ≥ 1" if self.selection == "loo" else "n = 1"
            if (self.n < 1 or (self.selection == "bse" and self.n != 1)
                    or self.missing != "value" or self.subsumption is not None
                    or self.weighting is not None or self.m != 1.0
                    or self.frequency_limit != 1):
                raise LearnerError(
                    f"AnDE: selection '{self.selection}' is specified for {orders} with "
                    "missing 'value', m = 1, frequency_limit = 1, no subsumption and no "
                    "weighting (SPEC §5)")

    def _fit(self, rows: Dataset) -> None:
        self._check_selection()
        codes = self._count(rows)
        if self.selection is not None:
            self.select(rows, codes)

    def select(self, rows: Dataset, codes: np.ndarray | None = None) -> "AnDE":
        """Run the attribute search on the training rows `rows` (already counted; `codes`:
        their codes as counted, if at hand) and set ``parent_mask_`` / ``child_mask_``
        (one extra pass per search step)."""
        ct = self.counts_
        codes, y = self._search_input(rows, codes)
        tb = tables_of(ct)
        if self.selection == "loo":
            order = self._mi_order()
            self._chose_loo(order, *asaode_select(tb, codes, y, order, self.n, self.n_jobs))
        else:
            self._chose_bse(*bse_select(tb, codes, y, ELIMINATIONS[self.elimination],
                                        self.initial_candidate_sse))
        return self

    def _search_input(self, rows: Dataset, codes: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
        if codes is None:
            codes = self.recode(rows.codes())
        return (np.ascontiguousarray(codes, dtype=np.int64),
                np.ascontiguousarray(rows.y, dtype=np.int64))

    def _mi_order(self) -> np.ndarray:
        ct = self.counts_
        return mi_order([ct.joint([i]) for i in range(ct.d)], ct.class_counts, ct.n)

    def _chose_loo(self, order: np.ndarray, r: int, s: int, rmse: np.ndarray) -> None:
        d = self.counts_.d
        self.parent_mask_ = np.isin(np.arange(d), order[:r])
        self.child_mask_ = np.isin(np.arange(d), order[:s])
        self.selection_ = {"order": order.tolist(), "parents": r, "children": s,
                           "rmse": rmse}
        self._prepared = None

    def _chose_bse(self, parents: np.ndarray, children: np.ndarray, gone: list) -> None:
        self.parent_mask_, self.child_mask_ = parents, children
        self.selection_ = {"eliminated": gone, "parents": int(parents.sum()),
                           "children": int(children.sum())}
        self._prepared = None

    # ----- training in passes (out of core) -------------------------------------------------
    def n_passes(self) -> int:
        """1 (counting); ASAODE 2 (counts, then the leave-one-out pass); BSEAODE at most
        1 + d (a pass per elimination step; the search ends when no step helps)."""
        if self.selection is None:
            return 1
        if self.selection == "loo":
            return 2
        return 1 + (len(self._header.attributes) if self._header is not None else 1)

    def _begin(self, header: Dataset) -> None:
        self._check_selection()
        self._search = self._acc = self._order = None

    def _learn(self, pass_no: int, rows: Dataset) -> None:
        if pass_no == 0:
            if rows.n_instances:
                self._add_counts(rows)
            return
        codes, y = self._search_input(rows)
        if (codes < 0).any():
            raise LearnerError(
                f"{type(self).__name__}: a missing value in an attribute whose `?` is not a "
                "value of the counts (it was missing in no row of the first chunk): declare "
                "it in the header's Attribute.has_missing, as loading a file does")
        n, tb = float(self.counts_.n), tables_of(self.counts_)
        if self.selection == "loo":
            selective_pass(tb, codes, y, self._order, self.n, self.counts_.n, self._acc,
                           self.n_jobs)
        else:
            s = self._search
            bse_pass(tb, codes, y, n, s.parents, s.children, s.mode, *self._acc)

    def _end_pass(self, pass_no: int) -> bool:
        if pass_no == 0:
            if self.counts_ is None:
                raise LearnerError(f"{type(self).__name__}: no training rows with a class")
            if self.selection is None:
                return False
            d = self.counts_.d
            if self.selection == "loo":
                self._order, self._acc = self._mi_order(), np.zeros((d, d))
                return True
            self._search = BSESearch(d, self.counts_.n, ELIMINATIONS[self.elimination],
                                     self.initial_candidate_sse)
        elif self.selection == "loo":
            self._chose_loo(self._order, *asaode_choose(self._acc, self.counts_.n, self.n))
            self._acc = None
            return False
        else:
            self._search.step(*self._acc)
        if self._search.done:
            s = self._search
            self._chose_bse(s.parents, s.children, s.eliminated)
            self._search = self._acc = None
            return False
        self._acc = self._search.new_pass()
        return True

    def recode(self, codes: np.ndarray) -> np.ndarray:
        """Value codes as the counts see them: with ``missing="value"``, a `?` (−1) of an
        attribute that declares it becomes its last code; any other `?` stays missing."""
        if self.missing_value_ is None or not self.missing_value_.any():
            return codes
        last = self.cards_ - 1  # the declared values, then `?`
        return np.where((codes < 0) & self.missing_value_[None, :], last[None, :],
                        codes).astype(codes.dtype, copy=False)

    def derive(self, **params) -> "AnDE":
        """A fitted variant with other parameters sharing this model's counts (no re-count),
        e.g. ``a2de.derive(subsumption=100, weighting="mi")``."""
        if self.counts_ is None:
            raise LearnerError(f"{type(self).__name__}: derive called before fit")
        merged = {**self.get_params(), **params}
        other = type(self)(**merged)
        ct = self.counts_
        if (other.required_level() > ct.max_level and ct.max_level < ct.d) or \
                (other.n > ct.parent_levels and other.n < ct.d):
            raise LearnerError(
                f"AnDE: these counts hold parent sets up to size {ct.parent_levels} and "
                f"combinations up to size {ct.max_level}; {other!r} needs more")
        if other.missing != self.missing:
            raise LearnerError("AnDE: derive cannot change 'missing' (the counts depend on it)")
        if other.selection is not None and self.constant_.any():
            raise LearnerError("AnDE: derive cannot add attribute selection to counts that "
                               "leave single-valued attributes out (selection counts them)")
        other._header = self._header
        other.counts_ = self.counts_
        other.missing_value_ = self.missing_value_
        other.cards_ = self.cards_
        other.constant_ = self.constant_
        if other.layout == "naive" and self.naive_ is None:
            raise LearnerError("AnDE: derive cannot add the naive layout (count it: fit)")
        other.naive_ = self.naive_ if other.layout == "naive" else None
        return other

    def fit_report(self) -> dict | None:
        """The count layout's size, compact against naive (Salem et al., Section 3: cells
        over the values as counted, a missing value counting as one more value), and the
        attribute search's result: selected parents and children (by name), and the
        eliminated attributes in order for BSEAODE."""
        if self.counts_ is None or self._header is None:
            return None
        ct = self.counts_
        missing = np.zeros(len(self.cards_), dtype=bool)
        missing[~self.constant_] = ct.has_missing & (self.missing != "value")
        cards = self.cards_ + missing
        out: dict = {} if self.layout == "naive" else {  # (naive: nothing saved)
            "layout_cells": list(layout_cells(cards, ct.K, min(self.n, len(cards) - 1)))}
        if self.selection_ is None:
            return out or None
        names = self._header.attribute_names
        out["parents"] = [names[i] for i in np.flatnonzero(self.parent_mask_)]
        out["children"] = [names[i] for i in np.flatnonzero(self.child_mask_)]
        if "eliminated" in self.selection_:
            out["eliminated"] = [names[i] for i in self.selection_["eliminated"]]
        return out

    def model_bytes(self) -> int | None:
        """Bytes of the count tables (those of the naive layout when it is the one read)."""
        if self.naive_ is not None:
            return self.naive_.nbytes
        return None if self.counts_ is None else int(self.counts_.nbytes)

    # ----- derived tables --------------------------------------------------------------
    def _top(self) -> int:
        return min(self.n, self.counts_.max_level)

    def _prepare(self) -> dict:
        """Tables and inputs of the kernels, computed once per fitted model."""
        if self._prepared is not None:
            return self._prepared
        ct = self.counts_
        assert ct is not None
        st = ct.store
        top = self._top()
        parent_ids = np.arange(int(ct.levels.base[1]) if top >= 1 else 0,
                               int(ct.levels.base[top + 1]) if top >= 1 else 0, dtype=np.int64)
        ptot = st.block_totals(parent_ids)
        d, K = ct.d, ct.K
        nb_den = np.zeros((max(d, 1), K), dtype=np.int64)
        if ct.max_level >= 1 and d:  # #(y, x_a present): attribute a's block by class
            singles = np.arange(int(ct.levels.base[1]), int(ct.levels.base[1]) + d)
            nb_den[:d] = st.class_totals(singles)[singles]
        tb = tables_of(ct)
        parents = st.attribute_sets(parent_ids)
        chosen = self.parent_weights(parents)
        wts = np.ones(st.n_blocks, dtype=np.float64)
        if chosen is not None:
            wts[:] = 0.0
            wts[parent_ids] = self._checked_weights(chosen, len(parents))
        full = [np.ones(len(self.cards_), dtype=np.bool_) if mk is None else
                np.asarray(mk, dtype=np.bool_) for mk in (self.parent_mask_, self.child_mask_)]
        keep = ~self.constant_
        masks = [np.ascontiguousarray(mk[keep]) if d else np.ones(1, dtype=np.bool_)
                 for mk in full]
        est = Inputs(self.m, int(self.frequency_limit), ptot, wts, *masks, float(ct.n),
                     ct.class_counts, nb_den)
        gen = generalisations(tb, None if self.subsumption is None else int(self.subsumption))
        self._prepared = {"tb": tb, "est": est, "constant_parents": full[0] & self.constant_,
                          "generalisations": gen, "weighted": chosen is not None}
        return self._prepared

    def parent_weights(self, parents: list[tuple[int, ...]]) -> np.ndarray | None:
        """The weight of each parent set in SPEC §2's weighted average (the public hook for
        weighting schemes): `parents` are the attribute tuples of `counts_` (levels 1..n,
        colex order; `counts_.joint(s)` gives a set's counts). Return one finite weight per
        set, or None for the unweighted average (the paper's AnDE); a set weighing ≤ 0
        takes no part (SPEC §2's MI estimate, built from m-estimates, can be slightly
        negative for a set nearly independent of the class: connect-4 has −8.6e-6). The
        built-in user is ``weighting='mi'``: each set's mutual information with the class
        (SPEC §2). A subclass overrides this for its own scheme."""
        if self.weighting != "mi":
            return None
        ct = self.counts_
        st = ct.store
        ids = ct.block_ids(parents)
        out = np.zeros(st.n_blocks, dtype=np.float64)
        if ids.size:
            mi_weights(ids, st.blen, st.battrs, tables_of(ct), self.m, st.block_totals(ids),
                       ct.class_counts, float(ct.n),
                       self.mi_estimate == "reference" and self.n == 1, out)
        return out[ids]

    def _checked_weights(self, weights: Any, n: int) -> np.ndarray:
        """`parent_weights`' answer as floats, or one error saying what is wrong."""
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if w.shape != (n,) or not np.isfinite(w).all():
            raise LearnerError(
                f"{type(self).__name__}: parent_weights must give {n} finite weights "
                f"(one per parent set), got {np.asarray(weights).shape} values"
                + ("" if w.shape != (n,) else " with a non-finite one"))
        return w

    def weights(self, level: int | None = None) -> np.ndarray:
        """Weights of the parent sets of one level (colex order over all attributes), as
        used in scoring (`parent_weights`; 1 when unweighted): a set with left-out
        single-valued attributes weighs as the set of its counted attributes (their MI is
        the same), a set of only those weighs 0 when weighted."""
        ct = self.counts_
        if ct is None:
            raise LearnerError(f"{type(self).__name__}: weights requested before fit")
        level = self.n if level is None else level
        w = self._prepare()["est"].wts
        combos = colex_combinations(len(self.cards_), level)
        counted = ~self.constant_[combos]
        index = (np.cumsum(~self.constant_) - 1)[combos]  # among the counted attributes
        t = np.cumsum(counted, axis=1)  # 1 + position among the set's counted attributes
        rank = np.where(counted, ct.binom[np.where(counted, index, 0), t], 0).sum(axis=1)
        size = counted.sum(axis=1)
        ids = ct.levels.base[np.minimum(size, ct.max_level)] + rank
        alone = 0.0 if self._prepare()["weighted"] else 1.0
        return np.where(size > 0, w[np.minimum(ids, len(w) - 1)] if len(w) else 0.0, alone)

    # ----- classification --------------------------------------------------------------
    def _joint_log_likelihood(self, data: Dataset) -> np.ndarray:
        """log P̂(y, x) per row and class (SPEC §2), up to a constant per row."""
        if self.layout == "naive":
            return self.naive_.log_scores(data.codes(), self.m, int(self.frequency_limit))
        ct = self.counts_
        prep = self._prepare()
        tb: Tables = prep["tb"]
        est: Inputs = prep["est"]
        codes = self.recode(data.codes())
        top = self._top()
        sr = self.subsumption is not None
        crit = int(self.subsumption) if sr else 0
        gen = prep["generalisations"]
        # the kernels read the int32 codes as they are (a copy to int64 cost a tenth of
        # A1DE's classification)
        codes = np.ascontiguousarray(codes, dtype=np.int32)
        if top == 0 and not self.constant_.any():  # (left-out constants can be parents)
            return log_scores_nb(codes, tb, est, sr, crit, gen)
        const = self.constant_
        order = min(self.n, len(const))
        X = np.ascontiguousarray(codes[:, ~const]) if const.any() else codes
        # left-out single-valued attributes: present per row, may be parents, indices
        left_out = (np.ascontiguousarray(codes[:, const] >= 0),
                    prep["constant_parents"][const], np.flatnonzero(~const),
                    np.flatnonzero(const))
        if parent_major_ok(tb, est, top, X):
            return log_scores_parent_major(X, *left_out, order, top, tb, est,
                                           prep["weighted"], sr, crit, gen)
        # few rows: the row-major kernels (no factor tables to build)
        n_sets = max((comb(ct.d, lev) for lev in range(1, top + 1)), default=1)
        ws = new_work(n_sets, self._batch_size(codes.shape[0], n_sets), ct.K)
        fast1 = a1de_fast_ok(tb, est, top)
        if not const.any():
            return log_scores(X, top, tb, est, ws, sr, crit, gen, fast1)
        return log_scores_reduced(X, *left_out, order, top, tb, est, ws, sr, crit, gen, fast1,
                                  prep["weighted"])

    def _batch_size(self, n_test: int, n_sets: int) -> int:
        """Test instances scored together (block-major): as many as a cache-sized workspace
        holds (each block's fixed costs are shared by the batch), 64 to 1,024, within
        `_BATCH_BYTES`."""
        per = max(1, n_sets * self.counts_.K * 8 * 4)
        return int(max(1, min(max(64, min(1024, _CACHE_BYTES // per)), max(n_test, 1),
                              _BATCH_BYTES // per)))


# ----- registered variants ---------------------------------------------------------------
register("NB", AnDE, n=0, description="naive Bayes (A0DE) with m-estimates")
register("A1DE", AnDE, n=1, description="AODE with m-estimates")
register("A1DE-S", AnDE, n=1, subsumption=100, description="A1DE + subsumption resolution")
register("A1DE-W", AnDE, n=1, weighting="mi", description="A1DE + MI weights")
register("A1DE-SW", AnDE, n=1, subsumption=100, weighting="mi",
         description="A1DE + subsumption resolution + MI weights")
register("A2DE", AnDE, n=2, description="A2DE with m-estimates")
register("A2DE-S", AnDE, n=2, subsumption=100, description="A2DE + subsumption resolution")
register("A2DE-W", AnDE, n=2, weighting="mi", description="A2DE + MI weights")
register("A2DE-SW", AnDE, n=2, subsumption=100, weighting="mi",
         description="A2DE + subsumption resolution + MI weights")
register("A3DE", AnDE, n=3, description="A3DE with m-estimates")
register("ASAODE", AnDE, n=1, missing="value", selection="loo",
         description="attribute-selective AODE: MI-ranked parents × children, LOO RMSE "
                     "(PAKDD 2014, SPEC §5.3)")
for _n in (2, 3):
    register(f"ASA{_n}DE", AnDE, n=_n, missing="value", selection="loo",
             description=f"attribute-selective A{_n}DE: parent {_n}-sets of the first r "
                         "MI-ranked attributes × the first s children, LOO RMSE (ASAODE's "
                         "search at n = {_n})".replace("{_n}", str(_n)))
for _name, _elim in (("BSEAODE", "child"), ("BSEAODE-PE", "parent"),
                     ("BSEAODE-PACE", "parent_and_child")):
    for _suffix, _s0 in (("", 1.0), ("-I0", 0.0)):
        register(_name + _suffix, AnDE, n=1, missing="value", selection="bse",
                 elimination=_elim, initial_candidate_sse=_s0,
                 description=f"AODE with backward elimination ({_elim.replace('_', ' ')}s) "
                             f"by LOO RMSE, first-step SSE offset {_s0:g} (SPEC §5.4)")
