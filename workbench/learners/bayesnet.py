"""`BayesNet`: a Bayesian network classifier whose structure is searched with the K2 score
(the JMLR 2016 comparator, run there with Weka's BayesNet).

- **Data and estimates** as KDB's (SPEC §4, `kdb._BayesNetBase`): all-nominal, a missing
  value is one more value of its attribute, P(x_i | π_i, y) = (#(x_i, π_i, y) + 1/|X_i|) /
  (#(π_i, y) + 1), no back-off (an unseen parent configuration gives 1/|X_i|).
- **Structure**: the class is a parent of every attribute (the naive Bayes start, kept);
  arcs between attributes are searched, each attribute having at most ``max_parents``
  parents *including the class* (Weka's count), never a cycle.
- **Score**: the Bayesian Dirichlet score of attribute i with parents π (class included),
  r = |X_i|, prior α per cell, over the parent configurations j seen in training:
  Σ_j [ln Γ(rα) − ln Γ(N_j + rα) + Σ_v (ln Γ(N_jv + α) − ln Γ(α))]. ``score="k2"``
  (default; the paper's "K2 metric", Cooper & Herskovits 1992) is α = 1; ``score="bayes"``
  is Weka's BAYES score, α = 0.5. The network's score is the sum over attributes (the
  class's own term does not change).
- ``search="hill_climber"`` (default; the paper: "adding, deleting and reversing arcs"): from
  naive Bayes, apply the single arc addition, deletion or reversal that raises the score
  most, until none raises it (> 0). Ties: additions before deletions before reversals, then
  the lower head (child), then the lower tail (parent) attribute index. ``search="k2"``
  (Weka's K2 search): attributes in header order, each greedily takes the earlier attribute
  that raises its score most, while one does and it has room. Scores that differ by less
  than `TIE` relative to the network's score are equal (sums of the same log-gamma terms in
  another order differ in the last digits; the first candidate in scan order then wins).

Weka's HillClimber also lets arcs into or out of the class be added and deleted; here the
class stays a parent of every attribute, so the two agree where Weka keeps those arcs
(tests/test_bayesnet.py compares the structures with Weka 3.6 when it is installed).

Against Weka's BayesNet per instance (tests/test_weka_bridge.py, through `learner: weka`):
with the K2 search and BAYES score the networks are the same, and Weka's probabilities are
this network's under Weka's SimpleEstimator, (N_ijk + 0.5) / (N_ij + 0.5·r_i) — to 1e-15 on
complete data. The estimates here are SPEC §4's instead, and a missing value is a value of
its own where Weka replaces it by the mode: those are the differences.
"""

from __future__ import annotations

import numpy as np

from workbench.data.dataset import Dataset
from workbench.learners.base import choice, integer
from workbench.learners.kdb import _BayesNetBase
from workbench.learners.registry import register

ADD, DELETE, REVERSE = 0, 1, 2
TIE = 1e-12


SCORES = {"k2": 1.0, "bayes": 0.5}
"""Dirichlet prior per cell of each score."""


class BDScore:
    """Bayesian Dirichlet scores (prior `alpha` per cell; 1 = K2) of attributes of coded data
    under any attribute parent set (+ the class), cached by (attribute, parents)."""

    def __init__(self, X: np.ndarray, y: np.ndarray, cards: np.ndarray, K: int,
                 alpha: float = 1.0) -> None:
        self.X, self.y, self.cards, self.K = X, y, np.asarray(cards, dtype=np.int64), int(K)
        self.alpha = float(alpha)
        self._cache: dict[tuple[int, tuple[int, ...]], float] = {}

    def __call__(self, child: int, parents) -> float:
        key = (int(child), tuple(sorted(int(p) for p in parents)))
        if key not in self._cache:
            self._cache[key] = self._score(*key)
        return self._cache[key]

    def _score(self, child: int, parents: tuple[int, ...]) -> float:
        r, a = int(self.cards[child]), self.alpha
        n_rows = self.y.shape[0]
        dense = self.K * r * int(np.prod(self.cards[list(parents)], dtype=np.float64)) <= \
            max(4 * n_rows, 1 << 16)
        cfg = self.y.astype(np.int64)
        for p in parents:  # mixed radix over (class, parents); compacted when large
            cfg = cfg * self.cards[p] + self.X[:, p]
            if not dense:
                cfg = np.unique(cfg, return_inverse=True)[1].astype(np.int64)
        if dense:
            cells = np.bincount(cfg * r + self.X[:, child])
            cells = cells[cells > 0]
        else:
            cells = np.unique(cfg * r + self.X[:, child], return_counts=True)[1]
        n_cfg = np.bincount(cfg)
        n_cfg = n_cfg[n_cfg > 0]
        from scipy.special import gammaln  # not at import: every run imports this module

        return float(n_cfg.size * gammaln(r * a) - gammaln(n_cfg + r * a).sum()
                     + gammaln(cells + a).sum() - cells.size * gammaln(a))


def _reaches(parents: list[list[int]], d: int) -> np.ndarray:
    """reach[a, b]: a directed path a → … → b exists (arcs parent → child)."""
    children = [[] for _ in range(d)]
    for b, ps in enumerate(parents):
        for a in ps:
            children[a].append(b)
    reach = np.zeros((d, d), dtype=bool)
    for a in range(d):
        stack = list(children[a])
        while stack:
            b = stack.pop()
            if not reach[a, b]:
                reach[a, b] = True
                stack.extend(children[b])
    return reach


def hill_climb(score: BDScore, d: int, room: int) -> list[list[int]]:
    """Attribute parents by hill climbing from no attribute arcs (see the module
    docstring); `room` = attribute parents allowed per attribute."""
    parents: list[list[int]] = [[] for _ in range(d)]
    current = [score(i, ()) for i in range(d)]
    tol = TIE * (1.0 + abs(sum(current)))
    while True:
        reach = _reaches(parents, d)
        best, op = tol, None
        for head in range(d):  # additions tail → head
            if len(parents[head]) >= room:
                continue
            for tail in range(d):
                if tail == head or tail in parents[head] or reach[head, tail]:
                    continue
                delta = score(head, parents[head] + [tail]) - current[head]
                if delta > best + (tol if op else 0.0):
                    best, op = delta, (ADD, tail, head)
        for head in range(d):  # deletions
            for tail in parents[head]:
                delta = score(head, [p for p in parents[head] if p != tail]) - current[head]
                if delta > best + (tol if op else 0.0):
                    best, op = delta, (DELETE, tail, head)
        for head in range(d):  # reversals tail → head into head → tail
            for tail in parents[head]:
                if len(parents[tail]) >= room or _other_path(parents, tail, head):
                    continue
                delta = (score(head, [p for p in parents[head] if p != tail]) - current[head]
                         + score(tail, parents[tail] + [head]) - current[tail])
                if delta > best + (tol if op else 0.0):
                    best, op = delta, (REVERSE, tail, head)
        if op is None:
            return [sorted(p) for p in parents]
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


def k2_search(score: BDScore, d: int, room: int) -> list[list[int]]:
    """Weka's K2 search: in header order, each attribute greedily adds the earlier
    attribute that raises its score most (strictly), while one does and it has room."""
    parents: list[list[int]] = [[] for _ in range(d)]
    for i in range(d):
        base = score(i, ())
        tol = TIE * (1.0 + abs(base))
        while len(parents[i]) < room:
            best, pick = base + tol, -1
            for j in range(i):
                if j not in parents[i]:
                    s = score(i, parents[i] + [j])
                    if s > best + (tol if pick >= 0 else 0.0):
                        best, pick = s, j
            if pick < 0:
                break
            parents[i].append(pick)
            base = best
    return parents


class BayesNet(_BayesNetBase):
    """Bayesian network classifier: class → every attribute, attribute arcs searched with
    the K2 score (see the module docstring)."""

    parameters = (
        integer("max_parents", 5, 1),
        choice("search", "hill_climber", ("hill_climber", "k2")),
        choice("score", "k2", tuple(SCORES)),
    )

    def fit(self, data: Dataset) -> "BayesNet":
        """Search the structure on the training rows, then count the tables."""
        X, y = self._prepare(data)
        d = X.shape[1]
        self.score_ = BDScore(X, y, self.cards_, self.n_classes_, SCORES[self.score])
        search = hill_climb if self.search == "hill_climber" else k2_search
        self.parents_ = search(self.score_, d, self.max_parents - 1) if len(y) else \
            [[] for _ in range(d)]
        self.attributes_ = list(range(d))
        self.depth_cap_ = max([len(p) for p in self.parents_], default=0)
        self.backoff_ = False
        self._fit_tables(X, y, self.attributes_)
        return self

    def network_score(self) -> float:
        """The score of the learned structure (sum over the attributes)."""
        return float(sum(self.score_(i, p) for i, p in enumerate(self.parents_)))

    def fit_report(self) -> dict | None:
        """Arcs between attributes of the learned structure (by name)."""
        if getattr(self, "parents_", None) is None or self._header is None:
            return None
        names = self._header.attribute_names
        return {"arcs": [[names[p], names[c]] for c, ps in enumerate(self.parents_)
                         for p in ps]}


register("BayesNet", BayesNet,
         description="Bayesian network: class → all attributes, hill climbing (add, delete, "
                     "reverse arcs) on the K2 score, ≤ 5 parents (JMLR 2016's comparator)")
register("BayesNet-K2", BayesNet, search="k2",
         description="Bayesian network with Weka's K2 search (header order, K2 score)")
