"""BayesNet (JMLR 2016's comparator): the Bayesian Dirichlet / K2 score by hand, the search on
data with a known best structure, and the structures Weka 3.6 learns (skipped without it)."""

from __future__ import annotations

import itertools
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from workbench.data.arff import load_arff, save_arff
from workbench.data.catalog import load_dataset
from workbench.data.dataset import Attribute, Dataset
from workbench.discretize import fit_discretizer
from workbench.learners import registry
from workbench.learners.bayesnet import BDScore

from conftest import shared_file

WEKA_JAR = Path("/usr/share/java/weka.jar")


def _data(rows, cards, K=2):
    X = np.array([r[:-1] for r in rows], dtype=float)
    atts = tuple(Attribute(f"a{i}", tuple(f"v{j}" for j in range(c))) for i, c in enumerate(cards))
    return Dataset("toy", atts, Attribute("c", tuple(f"k{j}" for j in range(K))), X,
                   np.array([r[-1] for r in rows]))


def test_k2_score_by_hand():
    # child a1 (node 1, 2 values) with parents (class = node 2, a0); rows (a0, a1, y)
    rows = [(0, 0, 0), (0, 0, 0), (0, 1, 0), (1, 1, 0), (1, 1, 1), (0, 0, 1)]
    Z = np.array(rows)
    s = BDScore(Z, np.array([2, 2, 2]), alpha=1.0)
    # configurations (y, a0): (0,0): a1 counts [2, 1]; (0,1): [0, 1]; (1,1): [0, 1]; (1,0): [1, 0]
    lg = math.lgamma
    want = sum(lg(2) - lg(n + 2) + sum(lg(c + 1) for c in cs)
               for n, cs in ((3, (2, 1)), (1, (1,)), (1, (1,)), (1, (1,))))
    assert s(1, [2, 0]) == pytest.approx(want, rel=1e-14)
    # class only: y = 0: [2, 2], y = 1: [1, 1]
    assert s(1, [2]) == pytest.approx(lg(2) - lg(6) + 2 * lg(3) + lg(2) - lg(4) + 2 * lg(2),
                                      rel=1e-14)
    # no parent at all (a class arc deleted): a1 counts [3, 3]
    assert s(1, []) == pytest.approx(lg(2) - lg(8) + 2 * lg(4), rel=1e-14)
    # Weka's BAYES score, alpha = 0.5 per cell
    half = BDScore(Z, np.array([2, 2, 2]), alpha=0.5)
    assert half(1, [2]) == pytest.approx(
        lg(1) - lg(5) + 2 * (lg(2.5) - lg(0.5)) + lg(1) - lg(3) + 2 * (lg(1.5) - lg(0.5)),
        rel=1e-14)


def test_search_finds_the_known_best_structure():
    """a1 copies a0, a2 is noise: the best network (brute force over every DAG of the three
    attributes and the class, ≤ 2 parents each, from which the hill climber's moves lead)
    links a0 and a1 and leaves a2 apart from the class; the hill climber reaches the
    brute-force optimum, K2 (the class a parent of each, attributes in order) its own."""
    rng = np.random.default_rng(0)
    a0 = rng.integers(0, 3, 300)
    y = (a0 == 2).astype(int) ^ (rng.random(300) < 0.1)
    rows = np.column_stack([a0, a0, rng.integers(0, 2, 300), y])
    data = _data(rows.tolist(), [3, 3, 2])
    score = BDScore(rows, np.array([3, 3, 2, 2]), alpha=0.5)
    best = max(
        (sum(score(i, ps[i]) for i in range(4)), ps)
        for ps in itertools.product(*[[p for r in range(3) for p in itertools.combinations(
            [j for j in range(4) if j != i], r)] for i in range(4)])
        if _acyclic(ps))
    model = registry.create("BayesNet", max_parents=2).fit(data)
    assert model.network_score() == pytest.approx(best[0], rel=1e-12)
    assert {frozenset((i, p)) for i, ps in enumerate(model.parents_) for p in ps
            if 3 not in (i, p)} == {frozenset((0, 1))}
    k2 = registry.create("BayesNet-K2").fit(data)
    assert k2.parents_ == [[3], [3, 0], [3], []]  # (the class node 3 kept, first in order)
    # one parent each: the class arcs may only be deleted, the weakest (to a2) goes
    assert registry.create("BayesNet", max_parents=1).fit(data).parents_[2] == []


def _acyclic(parents) -> bool:
    order, seen = [], set()
    pending = {i: set(ps) for i, ps in enumerate(parents)}
    while pending:
        free = [i for i, ps in pending.items() if ps <= seen]
        if not free:
            return False
        for i in free:
            seen.add(i)
            order.append(i)
            del pending[i]
    return True


def test_missing_values_are_the_training_mode_and_estimates_weka_s():
    """Missing values become the training rows' mode (the first of equals), in training
    and at prediction; each node's table is (N_jv + 0.5) / (N_j + 0.5·r) — checked by hand
    on naive Bayes (one parent each: nothing to add; deleting a class arc that the data
    support lowers the score)."""
    rows = [(0, 1, 0), (0, 1, 0), (1, 0, 1), (1, 0, 1), (0, 1, 0), (1, 0, 1), (1, 0, 1)]
    data = _data(rows, [2, 2])
    X = data.X.copy()
    X[6, 0] = np.nan  # a0 known: 0, 0, 1, 1, 0, 1 — a tie: the mode is value 0, the first
    data = data.replace(X=X)
    model = registry.create("BayesNet", max_parents=1, reverse=False).fit(data)
    assert model.modes_.tolist() == [0, 0] and model.parents_ == [[2], [2], []]
    test = data.replace(X=np.array([[np.nan, 1.0]]), y=np.array([0]))
    # classes [3, 4]; a0 | y=0: [3, 0], | y=1: [1, 3] (row 6 as the mode 0); a1 | y=0:
    # [0, 3], | y=1: [4, 0]; the test row: a0 = 0 (the mode), a1 = 1
    p0 = (3.5 / 8) * (3.5 / 4) * (3.5 / 4)
    p1 = (4.5 / 8) * (1.5 / 5) * (0.5 / 5)
    np.testing.assert_allclose(model.predict_proba(test), [[p0 / (p0 + p1), p1 / (p0 + p1)]],
                               rtol=1e-14)
    # Weka's -A: alpha = 1 gives (N_jv + 1) / (N_j + r) on the same structure
    one = registry.create("BayesNet", max_parents=1, reverse=False, alpha=1.0).fit(data)
    assert one.parents_ == model.parents_
    p0, p1 = (4 / 9) * (4 / 5) * (4 / 5), (5 / 9) * (2 / 6) * (1 / 6)
    np.testing.assert_allclose(one.predict_proba(test), [[p0 / (p0 + p1), p1 / (p0 + p1)]],
                               rtol=1e-14)
    with pytest.raises(Exception, match="alpha"):
        registry.create("BayesNet", alpha=0)
    with pytest.raises(Exception, match="reverse.*true or false"):
        registry.create("BayesNet", reverse=1)


def _weka_structure(path: Path, search: str, opts: list[str]) -> dict[str, list[str]]:
    out = subprocess.run(
        ["java", "-cp", str(WEKA_JAR), "weka.classifiers.bayes.BayesNet", "-t", str(path),
         "-no-cv", "-Q", f"weka.classifiers.bayes.net.search.local.{search}", "--", *opts],
        capture_output=True, text=True, timeout=300).stdout
    block = out.split("Network structure (nodes followed by parents)\n")[1].split("LogScore")[0]
    return {re.sub(r"\(\d+\)$", "", name.strip()): rest.split()
            for name, rest in (line.split(":", 1) for line in block.strip().splitlines())}


SEARCHES = {"BayesNet": ("HillClimber", ["-P", "5", "-R", "-S", "BAYES"]),
            "BayesNet-noreverse": ("HillClimber", ["-P", "5", "-S", "BAYES"]),
            "BayesNet-K2": ("K2", ["-P", "5", "-S", "BAYES"])}


@pytest.mark.skipif(shutil.which("java") is None or not WEKA_JAR.is_file(),
                    reason="needs java and Weka 3.6 (Debian package weka)")
@pytest.mark.parametrize("slug", ["iris", "pima", "glass", "led", "german", "labor",
                                  "kr-vs-kp", "house-votes-84"])
def test_structures_equal_weka(slug, tmp_path):
    """Weka 3.6's BayesNet with its BAYES score (alpha 0.5) on the same EF5 data: the hill
    climber with and without arc reversal — class arcs deleted and added as Weka does —
    and the K2 search give the same network, every node's parents the class's included
    (labor, house-votes-84: missing values replaced by the mode first)."""
    data = shared_file(slug) if slug == "kr-vs-kp" else None
    data = load_arff(data) if data is not None else load_dataset(slug)
    if not data.is_all_nominal:
        data = fit_discretizer("ef:5", data).transform(data)
    path = tmp_path / f"{slug}.arff"
    save_arff(data, path)
    names = [*data.attribute_names, data.class_attribute.name]
    for variant, (search, opts) in SEARCHES.items():
        ours = registry.create("BayesNet", reverse=variant != "BayesNet-noreverse",
                               search="k2" if search == "K2" else "hill_climber").fit(data)
        weka = _weka_structure(path, search, opts)
        assert {n: sorted(names[p] for p in ps) for n, ps in zip(names, ours.parents_)} == \
            {n: sorted(weka[n]) for n in names}, variant
