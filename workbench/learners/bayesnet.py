"""`BayesNet`: Weka's BayesNet classifier (JMLR 2016's comparator: "a hill-climbing algorithm
for adding, deleting and reversing arcs (starting with a NB structure, this hill climber
also considers arrows as part of the NB structure for deletion, that is, arcs from the class
to the attributes can be removed). It optimizes the K2 metric … The maximum number of
parents allowed for a node in the Bayes net is set to 5"), per instance as Weka 3.6 runs
``BayesNet -Q weka.classifiers.bayes.net.search.local.HillClimber -- -P 5 -R -S BAYES
-E weka.classifiers.bayes.net.estimate.SimpleEstimator -- -A 0.5`` (without ``-R`` with
``reverse: false``; ``search: k2`` is Weka's K2 search). The rules Weka follows, as here:

- **Data.** All-nominal (the workbench discretises first: EF5 for the JMLR configs). Rows
  with a missing class are dropped; every other missing value is replaced by its
  attribute's mode on the training rows (Weka's ReplaceMissingValues: the most frequent
  value, the first such in declaration order; the first value when all are missing) —
  in training and at prediction alike. A missing value is therefore not a value of its
  own (unlike the KDB family, SPEC §4).
- **Nodes.** The attributes in header order, then the class: node d (the class last, as
  the workbench writes data for Weka). Every node may have parents, the class too.
- **Score** of a node with parents π (any nodes), r its values, α per cell, over the
  parent configurations j seen in training (an unseen one adds 0):
  Σ_j [ln Γ(rα) − ln Γ(N_j + rα) + Σ_v (ln Γ(N_jv + α) − ln Γ(α))]. ``score: bayes``
  (default) is Weka's BAYES score, α = 0.5; ``score: k2`` is Cooper & Herskovits' K2
  metric, α = 1. The network's score is the sum over the nodes.
- **Hill climbing** from naive Bayes (the class a parent of every attribute). Each step
  takes the single operation that raises the score most, while one raises it (> 0):
  adding an arc tail → head (head with fewer than ``max_parents`` parents — the class
  counts as one, Weka's -P —, no cycle), deleting any arc (class arcs included), and with
  ``reverse`` reversing one (the tail then gains the head as a parent: it needs room; no
  cycle once reversed). Candidates are scanned as Weka scans them — additions by head
  then tail node, then deletions by node and its parents in the order they were added,
  then reversals likewise — and a later one replaces the best only if strictly better;
  the best is taken if its gain is > 0. The scores are Weka's to the last bit
  (`bnscore`: its running sum over every parent configuration in the parents' order and
  Cephes' ln Γ), so that steps whose gain is zero in exact arithmetic (a parent determined
  by the others on the training rows) are taken or not as in Weka.
- **K2 search** (``search: k2``): naive Bayes start; the class first in the order, then
  the attributes in header order; each attribute greedily adds the earlier attribute that
  raises its score most (strictly), while one does and it has room. The class keeps no
  parents.
- **Estimates** (Weka's SimpleEstimator, α = 0.5): P(v | j) = (N_jv + α) / (N_j + r·α),
  every node's table over its parents' configurations (the class node's too).
- **Classification**: for each class value c, log P = Σ over the nodes in order of
  log P(node's value | its parents' values), the class node taking c; then
  exp(log P − max) normalised — Weka's order of operations.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.data.dataset import Dataset
from workbench.errors import LearnerError
from workbench.learners.ande.estimates import m_estimate
from workbench.learners.base import Learner, boolean, choice, integer, number
from workbench.learners.registry import register

ADD, DELETE, REVERSE = 0, 1, 2
ESTIMATOR_ALPHA = 0.5  # Weka's SimpleEstimator -A 0.5 (parameter `alpha`: the m-estimate
# with share α and m = r·α)


SCORES = {"k2": 1.0, "bayes": 0.5}
"""Dirichlet prior per cell of each score."""


class BDScore:
    """Bayesian Dirichlet scores (prior `alpha` per cell; 1 = K2) of the nodes of coded
    data Z (n, nodes) under a parent set of nodes *in order* (the order the search added
    them: Weka sums the configurations in that radix, and its last bits decide zero-gain
    steps), cached by (node, parents) — `bnscore.node_score`."""

    def __init__(self, Z: np.ndarray, cards: np.ndarray, alpha: float = 0.5) -> None:
        self.Z = np.ascontiguousarray(Z, dtype=np.int64)
        self.cards = np.asarray(cards, dtype=np.int64)
        self.alpha = float(alpha)
        self._cache: dict[tuple[int, tuple[int, ...]], float] = {}

    def __call__(self, child: int, parents) -> float:
        key = (int(child), tuple(int(p) for p in parents))
        if key not in self._cache:
            self._cache[key] = self._score(*key)
        return self._cache[key]

    def _score(self, child: int, parents: tuple[int, ...]) -> float:
        from workbench.learners import bnscore  # numba: only when a BayesNet is fitted

        cells = int(self.cards[child]) * float(np.prod([float(self.cards[p])
                                                          for p in parents]))
        if cells <= bnscore.MAX_CELLS:
            return float(bnscore.node_score(self.Z, child, np.array(parents, np.int64),
                                            self.cards, self.alpha))
        r, a = int(self.cards[child]), self.alpha  # (the configurations seen only)
        keys = _radix_keys(self.Z, self.cards, list(parents), dense=True)
        _, n_cfg = np.unique(keys, return_counts=True)
        _, seen = np.unique(keys * r + self.Z[:, child], return_counts=True)
        lg = np.vectorize(bnscore.ln_gamma)
        return float(n_cfg.size * lg(r * a) - lg(n_cfg + r * a).sum()
                     + lg(seen + a).sum() - seen.size * lg(a))


def _reaches(parents: list[list[int]], nodes: int) -> np.ndarray:
    """reach[a, b]: a directed path a → … → b exists (arcs parent → child)."""
    children: list[list[int]] = [[] for _ in range(nodes)]
    for b, ps in enumerate(parents):
        for a in ps:
            children[a].append(b)
    reach = np.zeros((nodes, nodes), dtype=bool)
    for a in range(nodes):
        stack = list(children[a])
        while stack:
            b = stack.pop()
            if not reach[a, b]:
                reach[a, b] = True
                stack.extend(children[b])
    return reach


def naive_bayes_start(d: int) -> list[list[int]]:
    """Parents of nodes 0..d (attributes, then the class d): the class of every attribute."""
    return [[d] for _ in range(d)] + [[]]


def hill_climb(score: BDScore, parents: list[list[int]], max_parents: int,
               reverse: bool = True) -> list[list[int]]:
    """Weka's HillClimber from `parents` (changed in place and returned; see the module
    docstring for the scan order and the stopping rule)."""
    nodes = len(parents)
    current = [score(i, parents[i]) for i in range(nodes)]
    while True:
        reach = _reaches(parents, nodes)
        best, op = -math.inf, None
        for head in range(nodes):  # additions tail → head
            if len(parents[head]) >= max_parents:
                continue
            for tail in range(nodes):
                if tail == head or tail in parents[head] or reach[head, tail]:
                    continue
                delta = score(head, parents[head] + [tail]) - current[head]
                if delta > best:
                    best, op = delta, (ADD, tail, head)
        for head in range(nodes):  # deletions
            for tail in parents[head]:
                delta = score(head, [p for p in parents[head] if p != tail]) - current[head]
                if delta > best:
                    best, op = delta, (DELETE, tail, head)
        for head in range(nodes) if reverse else ():  # tail → head becomes head → tail
            for tail in parents[head]:
                if len(parents[tail]) >= max_parents or _other_path(parents, tail, head):
                    continue
                delta = (score(head, [p for p in parents[head] if p != tail]) - current[head]
                         + (score(tail, parents[tail] + [head]) - current[tail]))
                if delta > best:
                    best, op = delta, (REVERSE, tail, head)
        if op is None or not best > 0.0:  # (Weka: the best step, taken if it raises)
            return parents
        kind, tail, head = op
        if kind == ADD:
            parents[head].append(tail)
        else:
            parents[head].remove(tail)
            if kind == REVERSE:
                parents[tail].append(head)
                current[tail] = score(tail, parents[tail])
        current[head] = score(head, parents[head])


def _other_path(parents: list[list[int]], tail: int, head: int) -> bool:
    """A path tail → … → head other than the arc tail → head itself (reversing the arc
    would then close a cycle)."""
    children: dict[int, list[int]] = {}
    for b, ps in enumerate(parents):
        for a in ps:
            if (a, b) != (tail, head):
                children.setdefault(a, []).append(b)
    seen, stack = set(), list(children.get(tail, ()))
    while stack:
        b = stack.pop()
        if b == head:
            return True
        if b not in seen:
            seen.add(b)
            stack.extend(children.get(b, ()))
    return False


def k2_search(score: BDScore, parents: list[list[int]], max_parents: int
              ) -> list[list[int]]:
    """Weka's K2 search from the naive Bayes start `parents` (the class, node d, first in
    the order: it gains no parent): attributes in header order, each greedily adds the
    earlier attribute that raises its score most (strictly), while one does and it has
    room."""
    d = len(parents) - 1
    for i in range(d):
        base = score(i, parents[i])
        while len(parents[i]) < max_parents:
            best, pick = base, -1
            for j in range(i):
                if j not in parents[i]:
                    s = score(i, parents[i] + [j])
                    if s > best:
                        best, pick = s, j
            if pick < 0:
                break
            parents[i].append(pick)
            base = best
    return parents


def modes(codes: np.ndarray, cards: np.ndarray) -> np.ndarray:
    """Each column's most frequent code among its known ones (−1 marks a missing value;
    the first of equals; 0 when all are missing): Weka's ReplaceMissingValues."""
    out = np.zeros(codes.shape[1], dtype=np.int64)
    for a in range(codes.shape[1]):
        col = codes[:, a]
        counts = np.bincount(col[col >= 0], minlength=max(int(cards[a]), 1))
        out[a] = int(np.argmax(counts))
    return out


class BayesNet(Learner):
    """Weka's BayesNet: a Bayesian network over the attributes and the class, its structure
    searched from naive Bayes (see the module docstring)."""

    preprocessing = "ef:5"
    output_version = 2  # 2: Weka's BayesNet (class arcs searched, modes, SimpleEstimator)
    parameters = (
        integer("max_parents", 5, 1),
        choice("search", "hill_climber", ("hill_climber", "k2")),
        choice("score", "bayes", tuple(SCORES)),
        boolean("reverse", True),
        number("alpha", ESTIMATOR_ALPHA, 0.0, strict=True),
    )

    def _codes(self, data: Dataset) -> np.ndarray:
        """The attributes' codes with every missing value replaced by the training mode."""
        X = data.codes().astype(np.int64)
        missing = X < 0
        if missing.any():
            X = np.where(missing, self.modes_[None, :], X)
        return X

    def fit(self, data: Dataset) -> "BayesNet":
        """Replace missing values, search the structure, count every node's table."""
        name = type(self).__name__
        if not isinstance(data, Dataset):
            raise LearnerError(f"{name}: fit expects a Dataset, got {type(data).__name__}")
        if not data.is_all_nominal:
            names = ", ".join(data.attributes[i].name for i in data.numeric_indices[:5])
            raise LearnerError(f"{name}: numeric attribute(s) {names} in "
                               f"{data.source or data.name}; BayesNet needs all-nominal "
                               "data (use preprocessing 'ef:5' or 'mdl')")
        if data.n_classes < 1:
            raise LearnerError(f"{name}: the class attribute declares no values")
        self._reset()
        self._remember_header(data)
        train = data.without_missing_class()
        d, K = data.n_attributes, data.n_classes
        self.cards_ = np.append(np.maximum(data.cardinalities.astype(np.int64), 1), K)
        self.modes_ = modes(train.codes().astype(np.int64), self.cards_[:d])
        Z = np.column_stack([self._codes(train), train.y.astype(np.int64)]) \
            if train.n_instances else np.zeros((0, d + 1), dtype=np.int64)
        self.score_ = BDScore(Z, self.cards_, SCORES[self.score])
        parents = naive_bayes_start(d)
        if train.n_instances:
            if self.search == "hill_climber":
                parents = hill_climb(self.score_, parents, self.max_parents, self.reverse)
            else:
                parents = k2_search(self.score_, parents, self.max_parents)
        self.parents_ = parents
        self.tables_ = [self._table(Z, i) for i in range(d + 1)]
        return self

    def _table(self, Z: np.ndarray, node: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A node's SimpleEstimator table: the sorted keys of the parent configurations
        seen, their counts, and the (configuration, value) counts, dense per seen
        configuration."""
        r = int(self.cards_[node])
        keys = _radix_keys(Z, self.cards_, self.parents_[node])
        seen, inv = np.unique(keys, return_inverse=True)
        cells = np.zeros((seen.size, r))
        np.add.at(cells, (inv.reshape(-1), Z[:, node]), 1.0)
        return seen, cells.sum(axis=1), cells

    def predict_proba(self, data: Dataset) -> np.ndarray:
        """Weka's SimpleEstimator.distributionForInstance (module docstring)."""
        self._check_fitted(data)
        if not isinstance(data, Dataset):
            raise LearnerError(f"{type(self).__name__}: predict expects a Dataset, got "
                               f"{type(data).__name__}")
        d = data.n_attributes
        K = int(self.cards_[d])
        X = self._codes(data)
        n = X.shape[0]
        logp = np.zeros((n, K))
        Z = np.column_stack([X, np.zeros(n, dtype=np.int64)])
        for node in range(d + 1):  # (each class's sum in node order, as Weka's)
            if node != d and d not in self.parents_[node]:  # the same term for every class
                logp += self._log_factor(Z, node)[:, None]
                continue
            for c in range(K):
                Z[:, d] = c
                logp[:, c] += self._log_factor(Z, node)
        logp += 1.0  # (Weka starts each class's sum at 1: the same bits)
        p = np.exp(logp - logp.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)

    def _log_factor(self, Z: np.ndarray, node: int) -> np.ndarray:
        """log P(node's value | its parents' values) per row of Z (the class in column d)."""
        seen, n_cfg, cells = self.tables_[node]
        r, a = int(self.cards_[node]), self.alpha
        keys = _radix_keys(Z, self.cards_, self.parents_[node])
        at = np.minimum(np.searchsorted(seen, keys), max(seen.size - 1, 0))
        hit = seen[at] == keys if seen.size else np.zeros(Z.shape[0], dtype=bool)
        count = np.where(hit, cells[at, Z[:, node]] if seen.size else 0.0, 0.0)
        total = np.where(hit, n_cfg[at] if seen.size else 0.0, 0.0)
        return np.log(m_estimate.py_func(count, a, total, r * a))

    def model_bytes(self) -> int | None:
        """Bytes of every node's table (keys, configuration counts, cell counts)."""
        tables = getattr(self, "tables_", None)
        if tables is None:
            return None
        return int(sum(k.nbytes + n.nbytes + c.nbytes for k, n, c in tables))

    def network_score(self) -> float:
        """The score of the learned structure (sum over the nodes)."""
        return float(sum(self.score_(i, p) for i, p in enumerate(self.parents_)))

    def fit_report(self) -> dict | None:
        """The learned arcs by name (the class by its name too), and the attributes the
        class is still a parent of."""
        if getattr(self, "parents_", None) is None or self._header is None:
            return None
        names = [*self._header.attribute_names, self._header.class_attribute.name]
        d = len(names) - 1
        return {"arcs": [[names[p], names[c]] for c, ps in enumerate(self.parents_)
                         for p in ps if p != d and c != d],
                "class_children": [names[c] for c in range(d) if d in self.parents_[c]],
                "class_parents": [names[p] for p in self.parents_[d]]}


def _radix_keys(Z: np.ndarray, cards: np.ndarray, parents: list[int],
                dense: bool = False) -> np.ndarray:
    """Each row's parent configuration as a mixed-radix integer (in parent-set order);
    with `dense`, renumbered (order kept) whenever the radix would pass the rows, so any
    parent set fits — else refused beyond 2^62 configurations."""
    if not dense and np.prod([float(cards[p]) for p in parents]) >= 2.0 ** 62:
        raise LearnerError("BayesNet: a parent set has more than 2^62 configurations")
    key = np.zeros(Z.shape[0], dtype=np.int64)
    size = 1
    for p in parents:
        if dense and size * int(cards[p]) > max(4 * Z.shape[0], 1 << 16):
            key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
            size = int(key.max()) + 1 if key.size else 1
        key = key * int(cards[p]) + Z[:, p]
        size *= int(cards[p])
    return key


register("BayesNet", BayesNet,
         description="Weka's BayesNet: hill climbing from naive Bayes (add, delete — class "
                     "arcs too — and reverse arcs) on the BAYES score, ≤ 5 parents, "
                     "SimpleEstimator α 0.5 (JMLR 2016's comparator)")
register("BayesNet-K2", BayesNet, search="k2",
         description="Weka's BayesNet with its K2 search (class first, then header order)")
