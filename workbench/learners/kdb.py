"""KDB, selective KDB (SKDB) and TAN as specified in SPEC §4 (Martínez et al., JMLR 2016).

Shared machinery (all-nominal data, missing values as a distinct value):

* **Value codes** — an attribute with any missing training value gets one extra value ``?``
  (code = number of declared values); a missing test value of an attribute that had none in
  training is *invalid* (code −1): the attribute is left out as a child, and as a parent its
  configuration counts as unseen.
* **Structure** — MI(X_i; Y) and CMI(X_i; X_j | Y) from raw relative frequencies (log2,
  zero-count terms skipped). Each MI / CMI is the sum of its terms *sorted*, so that two
  attributes with the same count table up to a relabelling of values get bit-identical
  scores and exact ties are resolved by the SPEC rules (header order / order in L).
* **Counts** — for every attribute and every prefix depth j of its parent list, the parent
  configurations seen in training get compact ids (mixed radix of the previous depth's id and
  the next parent's value, made compact with ``np.unique``). Depth ids are made global per
  attribute by an offset, and two sparse sorted tables hold #(π, y) and #(π, x_i, y).
  Lookups are ``np.searchsorted`` on those keys, so memory is O(N · depths) per attribute
  whatever the cardinalities.
* **Estimates** (m = 1) — P(y) = (#y + 1/K)/(N + 1); P(x_i | π, y) = (#(x_i, π, y) + 1/|X_i|) /
  (#(π, y) + 1). Scores are summed in log space and normalised once.

SKDB evaluates every candidate (attribute prefix l, k) with incremental leave-one-out: per
attribute (in MI order) and depth, every training row's count cells are found with
``np.unique`` (vectorised over rows); a numba kernel then subtracts the row's own counts,
extends the running normalised class distribution of every k by one factor and adds the
loss, so the losses of all (l, k) come out of one pass costing O(n · d · (k_max+1) · K).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.ande import AnDE
from workbench.learners.base import Learner, choice, integer
from workbench.learners.registry import register

__all__ = [
    "KDB",
    "SKDB",
    "TAN",
    "mutual_information",
    "conditional_mutual_information",
    "mi_order",
    "kdb_parents",
    "tan_parents",
]

# A dense (v, w, y) table per attribute pair is used when it has at most this many cells
# (or 4 cells per training row); otherwise the pair is counted sparsely with np.unique.
_DENSE_PAIR_CELLS = 1 << 16


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


def _map_codes(codes: np.ndarray, missing_code: np.ndarray) -> np.ndarray:
    """int64 codes with missing (−1) replaced by each attribute's `?` code (or kept at −1)."""
    out = codes.astype(np.int64)
    miss = out < 0
    if miss.any():
        out = np.where(miss, missing_code[None, :], out)
    return out


# ================================================================================================
# MI / CMI, order and parent selection (public for tests and for other learners)
# ================================================================================================
def _sorted_sum(terms: np.ndarray) -> float:
    """Sum in a canonical (sorted) order: equal multisets of terms give identical sums."""
    if terms.size == 0:
        return 0.0
    return float(np.sort(terms).sum())


def mutual_information(X: np.ndarray, y: np.ndarray, cards: np.ndarray, K: int) -> np.ndarray:
    """MI(X_i; Y) in bits for every column of int codes X (all values valid, < cards)."""
    n, d = X.shape
    out = np.zeros(d)
    if n == 0:
        return out
    ny = np.bincount(y, minlength=K).astype(np.float64)
    N = float(n)
    for i in range(d):
        c = np.bincount(X[:, i] * K + y, minlength=int(cards[i]) * K).reshape(-1, K)
        a = c.sum(axis=1)
        v, yy = np.nonzero(c)
        cv = c[v, yy].astype(np.float64)
        out[i] = _sorted_sum((cv / N) * np.log2((N * cv) / (a[v].astype(np.float64) * ny[yy])))
    return out


def _class_value_tables(X: np.ndarray, y: np.ndarray, cards: np.ndarray, K: int) -> list:
    return [
        np.bincount(X[:, i] * K + y, minlength=int(cards[i]) * K).reshape(-1, K).astype(
            np.float64
        )
        for i in range(X.shape[1])
    ]


@numba.njit(cache=True, nogil=True)
def _count_pairs(X, y, K, cards, pair_i, pair_j, pair_off, out):
    """out[pair_off[p] + (x_i·|X_j| + x_j)·K + y] += 1 for every row and listed pair (i, j)."""
    n = X.shape[0]
    for r in range(n):
        yr = y[r]
        for p in range(pair_i.shape[0]):
            i = pair_i[p]
            j = pair_j[p]
            out[pair_off[p] + (X[r, i] * cards[j] + X[r, j]) * K + yr] += 1


_PAIR_BATCH_CELLS = 1 << 23  # dense pair cells counted per kernel call (32 MB of int32)


def conditional_mutual_information(
    X: np.ndarray, y: np.ndarray, cards: np.ndarray, K: int
) -> np.ndarray:
    """Symmetric (d, d) matrix of CMI(X_i; X_j | Y) in bits (diagonal 0).

    Pair tables are counted densely in one pass over the rows per batch of pairs (numba);
    a pair whose table would be much larger than the data (ID-like attributes) is counted
    sparsely with np.unique instead.
    """
    n, d = X.shape
    cmi = np.zeros((d, d))
    if n == 0 or d < 2:
        return cmi
    N = float(n)
    X = np.ascontiguousarray(X, dtype=np.int64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    cards = np.asarray(cards, dtype=np.int64)
    ny = np.bincount(y, minlength=K).astype(np.float64)
    tabs = _class_value_tables(X, y, cards, K)
    dense_limit = max(_DENSE_PAIR_CELLS, 4 * n)

    def finish(i: int, j: int, idx: np.ndarray, c: np.ndarray) -> None:
        cj = int(cards[j])
        yy = idx % K
        vw = idx // K
        terms = (c / N) * np.log2((ny[yy] * c) / (tabs[i][vw // cj, yy] * tabs[j][vw % cj, yy]))
        cmi[i, j] = cmi[j, i] = _sorted_sum(terms)

    dense: list[tuple[int, int, int]] = []
    for i in range(d - 1):
        for j in range(i + 1, d):
            cells = int(cards[i]) * int(cards[j]) * K
            if cells <= dense_limit:
                dense.append((i, j, cells))
            else:
                key = (X[:, i] * int(cards[j]) + X[:, j]) * K + y
                idx, cnt = np.unique(key, return_counts=True)
                finish(i, j, idx, cnt.astype(np.float64))
    start = 0
    while start < len(dense):
        stop, total = start, 0
        while stop < len(dense) and (stop == start or total + dense[stop][2] <= _PAIR_BATCH_CELLS):
            total += dense[stop][2]
            stop += 1
        batch = dense[start:stop]
        sizes = np.array([b[2] for b in batch], dtype=np.int64)
        offs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        out = np.zeros(int(sizes.sum()), dtype=np.int32)
        _count_pairs(
            X, y, K, cards,
            np.array([b[0] for b in batch], dtype=np.int64),
            np.array([b[1] for b in batch], dtype=np.int64),
            offs, out,
        )
        for (i, j, cells), off in zip(batch, offs):
            block = out[off: off + cells]
            idx = np.flatnonzero(block)
            finish(i, j, idx, block[idx].astype(np.float64))
        start = stop
    return cmi


def mi_order(mi: np.ndarray) -> np.ndarray:
    """Attribute indices by decreasing MI; exact ties keep header order (stable sort)."""
    return np.argsort(-np.asarray(mi, dtype=np.float64), kind="stable")


def kdb_parents(order: np.ndarray, cmi: np.ndarray, k: int) -> list[list[int]]:
    """KDB parent lists (indexed by attribute): for L_i the min(i−1, k) earlier attributes of
    L with the largest CMI(L_i; L_j | Y), ties → earlier in L, listed in that order."""
    d = len(order)
    parents: list[list[int]] = [[] for _ in range(d)]
    for pos in range(1, d):
        a = int(order[pos])
        cands = np.asarray(order[:pos], dtype=np.int64)
        vals = cmi[a, cands]
        pick = np.argsort(-vals, kind="stable")[: min(pos, k)]
        parents[a] = [int(p) for p in cands[pick]]
    return parents


def tan_parents(cmi: np.ndarray) -> list[list[int]]:
    """TAN tree by Prim's maximum spanning tree on CMI, rooted at attribute 0 (SPEC §4)."""
    d = cmi.shape[0]
    parents: list[list[int]] = [[] for _ in range(d)]
    if d < 2:
        return parents
    in_tree = np.zeros(d, dtype=bool)
    in_tree[0] = True
    w = cmi[0].astype(np.float64).copy()
    par = np.zeros(d, dtype=np.int64)
    for _ in range(d - 1):
        remaining = np.flatnonzero(~in_tree)
        new = int(remaining[np.argmax(w[remaining])])  # first maximum = lowest index
        in_tree[new] = True
        parents[new] = [int(par[new])]
        for a in np.flatnonzero(~in_tree):
            if cmi[new, a] > w[a]:
                w[a] = cmi[new, a]
                par[a] = new
    return parents


# ================================================================================================
# Count tables of one attribute along its parent list
# ================================================================================================
def _lookup(keys: np.ndarray, counts: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Counts of the sorted `keys` at queries `q` (0 where absent)."""
    if keys.size == 0:
        return np.zeros(q.shape, dtype=np.float64)
    idx = np.searchsorted(keys, q)
    np.minimum(idx, keys.size - 1, out=idx)
    found = keys[idx] == q
    return np.where(found, counts[idx], 0).astype(np.float64)


@dataclass
class _AttributeTable:
    """Counts of one child attribute for every prefix of its parent list (see module doc)."""

    child: int
    parents: list[int]
    card: int  # |X_i| (declared + 1 if `?` was added)
    pair_keys: list[np.ndarray]  # depth j ≥ 1: sorted keys local_id(j−1) * |X_pj| + x_pj
    offsets: np.ndarray  # global config id of depth j = offsets[j] + local id
    cfg_keys: np.ndarray  # sorted gid * K + y
    cfg_counts: np.ndarray
    cell_keys: np.ndarray  # sorted (gid * card + x) * K + y
    cell_counts: np.ndarray


def _build_table(
    X: np.ndarray,
    y: np.ndarray,
    child: int,
    parents: list[int],
    cards: np.ndarray,
    K: int,
    loo: bool = False,
):
    """Count tables of `child` (+ the per-row arrays of the LOO pass if `loo`).

    With `loo`, also returns ``(cell_ids, cell_cfg, cell_counts, cfg_counts, depth)``:
    cell_ids (m+1, n) = each training row's row in cell_counts (#(π_j, x_i, y), shape
    (cells of all depths, K)) at every depth j; cell_cfg (cells,) = the row of each cell's
    parent configuration in cfg_counts (#(π_j, y), shape (configs of all depths, K)); depth
    (n,) = the deepest prefix whose count of the row's child value with those parents (all
    classes) is ≥ 2 (≥ 1 after removing the row).
    """
    n = X.shape[0]
    card = int(cards[child])
    x = X[:, child]
    local = np.zeros(n, dtype=np.int64)
    n_cfg = 1
    offset = 0
    pair_keys: list[np.ndarray] = []
    offsets = []
    cfg_k, cfg_c, cell_k, cell_c = [], [], [], []
    cell_ids, cell_cfg, cell_mats, cfg_mats = [], [], [], []
    cell_base = 0
    ok_prev = np.ones(n, dtype=bool)
    depth = np.zeros(n, dtype=np.int64)
    for j in range(len(parents) + 1):
        if j > 0:
            p = parents[j - 1]
            uq, local = np.unique(local * int(cards[p]) + X[:, p], return_inverse=True)
            local = local.reshape(-1).astype(np.int64)
            pair_keys.append(uq)
            n_cfg = len(uq)
        offsets.append(offset)
        ccount = np.bincount(local * K + y, minlength=n_cfg * K)
        nz = np.flatnonzero(ccount)
        cfg_k.append(nz + offset * K)
        cfg_c.append(ccount[nz])
        ucell, cinv = np.unique(local * card + x, return_inverse=True)
        cinv = cinv.reshape(-1).astype(np.int64)
        cellcount = np.bincount(cinv * K + y, minlength=len(ucell) * K)
        nz = np.flatnonzero(cellcount)
        cell_k.append((ucell[nz // K] + offset * card) * K + nz % K)
        cell_c.append(cellcount[nz])
        if loo:
            cell_ids.append(cinv + cell_base)
            cell_cfg.append(ucell // card + offset)
            cell_mats.append(cellcount.reshape(-1, K))
            cfg_mats.append(ccount.reshape(-1, K))
            cell_base += len(ucell)
            if j > 0:
                tot = np.bincount(cinv, minlength=len(ucell))[cinv]
                ok_prev = ok_prev & (tot >= 2)
                depth[ok_prev] = j
        offset += n_cfg
    table = _AttributeTable(
        child=child,
        parents=list(parents),
        card=card,
        pair_keys=pair_keys,
        offsets=np.asarray(offsets, dtype=np.int64),
        cfg_keys=np.concatenate(cfg_k).astype(np.int64),
        cfg_counts=np.concatenate(cfg_c).astype(np.int64),
        cell_keys=np.concatenate(cell_k).astype(np.int64),
        cell_counts=np.concatenate(cell_c).astype(np.int64),
    )
    if loo:
        return (
            table,
            np.stack(cell_ids),
            np.concatenate(cell_cfg).astype(np.int64),
            np.concatenate(cell_mats).astype(np.float64),
            np.concatenate(cfg_mats).astype(np.float64),
            depth,
        )
    return table


@numba.njit(cache=True, nogil=True)
def _loo_step(S, y, card, depth, cell_ids, cell_cfg, F, cell_counts, cfg_counts, zero_one, out):
    """Extend every candidate k's LOO class distributions by one attribute, add the losses.

    S (k_max+1, n, K) holds normalised distributions; for row r and candidate k the factor
    is P_loo(x_i | π at depth min(k, depth[r]), y): F[c, y] = (#cell + 1/|X_i|)/(#cfg + 1)
    for the other classes and, for the row's own class, the same with the row removed. The
    loss of each k (Σ (1 − P(y*|x))² or the number of errors) is written to out[k].
    """
    n_k, n, K = S.shape
    inv_card = 1.0 / card
    for k in range(n_k):
        acc = 0.0
        for r in range(n):
            ys = y[r]
            j = depth[r]
            if k < j:
                j = k
            c = cell_ids[j, r]
            own = (cell_counts[c, ys] - 1.0 + inv_card) / (cfg_counts[cell_cfg[c], ys] - 1.0 + 1.0)
            tot = 0.0
            for cls in range(K):
                if cls == ys:
                    v = S[k, r, cls] * own
                else:
                    v = S[k, r, cls] * F[c, cls]
                S[k, r, cls] = v
                tot += v
            inv = 1.0 / tot
            best = 0
            for cls in range(K):
                S[k, r, cls] *= inv
                if S[k, r, cls] > S[k, r, best]:
                    best = cls
            if zero_one:
                if best != ys:
                    acc += 1.0
            else:
                e = 1.0 - S[k, r, ys]
                acc += e * e
        out[k] = acc


def _table_log_probs(
    t: _AttributeTable, Xt: np.ndarray, cards: np.ndarray, K: int, cap: int, backoff: bool
) -> np.ndarray:
    """log P(x_i | π, y) for test rows (n, K); 0 where the child value is invalid."""
    n = Xt.shape[0]
    x = Xt[:, t.child]
    cap = min(cap, len(t.parents))
    local = np.zeros(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    gid = np.zeros(n, dtype=np.int64)  # depth-0 configuration
    for j in range(1, cap + 1):
        p = t.parents[j - 1]
        xp = Xt[:, p]
        keys = t.pair_keys[j - 1]
        q = local * int(cards[p]) + xp
        if keys.size:
            idx = np.searchsorted(keys, q)
            np.minimum(idx, keys.size - 1, out=idx)
            found = alive & (xp >= 0) & (keys[idx] == q)
        else:
            idx = np.zeros(n, dtype=np.int64)
            found = np.zeros(n, dtype=bool)
        local = np.where(found, idx, 0)
        alive = found
        if backoff:
            gid = np.where(found, t.offsets[j] + idx, gid)
        else:
            gid = np.where(found, t.offsets[j] + idx, -1)
    valid = x >= 0
    ks = np.arange(K, dtype=np.int64)
    seen = gid >= 0
    A = _lookup(t.cell_keys, t.cell_counts, ((gid * t.card + x) * K)[:, None] + ks)
    B = _lookup(t.cfg_keys, t.cfg_counts, (gid * K)[:, None] + ks)
    unusable = ~(seen & valid)
    if unusable.any():
        A[unusable] = 0.0
        B[unusable] = 0.0
    out = np.log((A + 1.0 / t.card) / (B + 1.0))
    out[~valid] = 0.0
    return out


# ================================================================================================
# Learners
# ================================================================================================
class _BayesNetBase(Learner):
    """Common fit/predict for KDB-like models: structure + per-attribute count tables."""

    preprocessing = "ef:5"

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
        """Validate, drop missing-class rows, set value codes; returns (X codes, y)."""
        name = type(self).__name__
        if not isinstance(data, Dataset):
            raise LearnerError(f"{name}: fit expects a Dataset, got {type(data).__name__}")
        _check_nominal(name, data)
        self._remember_header(data)
        train = data.without_missing_class()
        codes = train.codes()
        declared = data.cardinalities.astype(np.int64)
        has_missing = (codes < 0).any(axis=0) if codes.shape[0] else np.zeros(
            codes.shape[1], dtype=bool
        )
        self.cards_ = np.maximum(declared + has_missing.astype(np.int64), 1)
        self.missing_code_ = np.where(has_missing, declared, -1).astype(np.int64)
        self.n_classes_ = data.n_classes
        if self.n_classes_ < 1:
            raise LearnerError(f"{name}: the class attribute declares no values")
        X = _map_codes(codes, self.missing_code_)
        y = train.y.astype(np.int64)
        self.n_train_ = int(len(y))
        self.class_counts_ = np.bincount(y, minlength=self.n_classes_).astype(np.float64)
        return X, y

    def _fit_tables(self, X: np.ndarray, y: np.ndarray, attributes: list[int]) -> None:
        self.tables_ = {
            a: _build_table(X, y, a, self.parents_[a], self.cards_, self.n_classes_)
            for a in attributes
        }

    def model_bytes(self) -> int | None:
        """Bytes of the class counts and every attribute's count tables."""
        tables = getattr(self, "tables_", None)
        if tables is None:
            return None
        total = int(self.class_counts_.nbytes)
        for t in tables.values():
            total += sum(int(k.nbytes) for k in t.pair_keys)
            total += sum(int(getattr(t, f).nbytes) for f in (
                "offsets", "cfg_keys", "cfg_counts", "cell_keys", "cell_counts"))
        return total

    def _log_prior(self) -> np.ndarray:
        K = self.n_classes_
        return np.log((self.class_counts_ + 1.0 / K) / (self.n_train_ + 1.0))

    def _joint_log_likelihood(self, data: Dataset) -> np.ndarray:
        """log P(y) + Σ_i log P(x_i | π_i, y) per row and class (normalised by the base)."""
        Xt = _map_codes(data.codes(), self.missing_code_)
        K = self.n_classes_
        logscore = np.tile(self._log_prior(), (Xt.shape[0], 1))
        for a in self.attributes_:
            logscore += _table_log_probs(
                self.tables_[a], Xt, self.cards_, K, self.depth_cap_, self.backoff_
            )
        return logscore

    def _check_fitted(self, data: Dataset) -> None:
        if not isinstance(data, Dataset):
            raise LearnerError(
                f"{type(self).__name__}: predict expects a Dataset, got {type(data).__name__}"
            )
        super()._check_fitted(data)

    def _learn_mi_cmi(self, X: np.ndarray, y: np.ndarray, need_cmi: bool = True) -> None:
        K = self.n_classes_
        self.mi_ = mutual_information(X, y, self.cards_, K)
        self.cmi_ = (
            conditional_mutual_information(X, y, self.cards_, K)
            if need_cmi
            else np.zeros((X.shape[1], X.shape[1]))
        )
        self.order_ = mi_order(self.mi_)


class KDB(_BayesNetBase):
    """k-dependence Bayesian classifier (Sahami 1996) with the JMLR 2016 semantics."""

    parameters = (integer("k", 1, 0),)

    def fit(self, data: Dataset) -> "KDB":
        """Order by MI, pick ≤ k parents per attribute by CMI, count."""
        X, y = self._prepare(data)
        d = X.shape[1]
        k = min(self.k, max(d - 1, 0))
        self._learn_mi_cmi(X, y, need_cmi=k > 0)
        self.parents_ = kdb_parents(self.order_, self.cmi_, k)
        self.attributes_ = [int(a) for a in self.order_]
        self.depth_cap_ = k
        self.backoff_ = True
        self._fit_tables(X, y, self.attributes_)
        return self


class TAN(_BayesNetBase):
    """Tree-augmented naive Bayes: Prim's maximum spanning tree on CMI, no back-off."""

    def fit(self, data: Dataset) -> "TAN":
        """Build the tree rooted at the first attribute, then count."""
        X, y = self._prepare(data)
        self._learn_mi_cmi(X, y)
        self.parents_ = tan_parents(self.cmi_)
        self.attributes_ = list(range(X.shape[1]))
        self.depth_cap_ = 1
        self.backoff_ = False
        self._fit_tables(X, y, self.attributes_)
        return self


class SKDB(_BayesNetBase):
    """Selective KDB: KDB(k_max) structure, then (attribute prefix, k) chosen by LOO-CV.

    `select` = "both" (l = 0..d × k = 0..k_max), "k" (l = d), "attributes" (k = k_max);
    `loss` = "rmse" (Σ (1 − P(y*|x))²) or "zero_one".
    """

    parameters = (
        integer("k_max", 5, 0),
        choice("select", "both", ("both", "k", "attributes")),
        choice("loss", "rmse", ("rmse", "zero_one")),
    )

    def fit(self, data: Dataset) -> "SKDB":
        """Learn the KDB(k_max) structure, evaluate all candidates by LOO, keep the best."""
        X, y = self._prepare(data)
        n, d = X.shape
        K = self.n_classes_
        kmax = min(self.k_max, max(d - 1, 0))
        self._learn_mi_cmi(X, y, need_cmi=kmax > 0)
        self.parents_ = kdb_parents(self.order_, self.cmi_, kmax)
        order = [int(a) for a in self.order_]

        # ---- leave-one-out losses of every (l, k) --------------------------------------------
        losses = np.zeros((d + 1, kmax + 1))
        self.tables_ = {}
        zero_one = self.loss == "zero_one"
        if n > 0:
            onehot = np.arange(K)[None, :] == y[:, None]
            prior = (self.class_counts_[None, :] - onehot + 1.0 / K) / n
            prior /= prior.sum(axis=1, keepdims=True)
            losses[0, :] = self._loss(prior, y)
            S = np.ascontiguousarray(np.repeat(prior[None], kmax + 1, axis=0))
        for l, a in enumerate(order, start=1):
            if n == 0:
                self.tables_[a] = _build_table(X, y, a, self.parents_[a], self.cards_, K)
                continue
            table, cell_ids, cell_cfg, cell_counts, cfg_counts, depth = _build_table(
                X, y, a, self.parents_[a], self.cards_, K, loo=True
            )
            self.tables_[a] = table
            F = (cell_counts + 1.0 / table.card) / (cfg_counts[cell_cfg] + 1.0)
            _loo_step(
                S, y, float(table.card), depth, cell_ids, cell_cfg, F, cell_counts,
                cfg_counts, zero_one, losses[l],
            )
        self.losses_ = losses

        # ---- candidate scan (strictly lower replaces) ---------------------------------------
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
        return self

    def _loss(self, p: np.ndarray, y: np.ndarray) -> float:
        """Loss of normalised distributions p (n, K) against the true classes y."""
        if self.loss == "zero_one":
            return float(np.count_nonzero(np.argmax(p, axis=1) != y))
        e = 1.0 - p[np.arange(len(y)), y]
        return float(np.sum(e * e))

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
