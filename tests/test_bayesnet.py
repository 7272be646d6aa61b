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

from workbench.data.arff import save_arff
from workbench.data.catalog import load_dataset
from workbench.data.dataset import Attribute, Dataset
from workbench.discretize import fit_discretizer
from workbench.learners import registry
from workbench.learners.bayesnet import BDScore

WEKA_JAR = Path("/usr/share/java/weka.jar")


def _data(rows, cards, K=2):
    X = np.array([r[:-1] for r in rows], dtype=float)
    atts = tuple(Attribute(f"a{i}", tuple(f"v{j}" for j in range(c))) for i, c in enumerate(cards))
    return Dataset("toy", atts, Attribute("c", tuple(f"k{j}" for j in range(K))), X,
                   np.array([r[-1] for r in rows]))


def test_k2_score_by_hand():
    # child a1 (2 values) with parents (class, a0); rows (a0, a1, y)
    rows = [(0, 0, 0), (0, 0, 0), (0, 1, 0), (1, 1, 0), (1, 1, 1), (0, 0, 1)]
    X = np.array([r[:2] for r in rows])
    y = np.array([r[2] for r in rows])
    s = BDScore(X, y, np.array([2, 2]), 2, alpha=1.0)
    # configurations (y, a0): (0,0): a1 counts [2, 1]; (0,1): [0, 1]; (1,1): [0, 1]; (1,0): [1, 0]
    lg = math.lgamma
    want = sum(lg(2) - lg(n + 2) + sum(lg(c + 1) for c in cs)
               for n, cs in ((3, (2, 1)), (1, (1,)), (1, (1,)), (1, (1,))))
    assert s(1, [0]) == pytest.approx(want, rel=1e-14)
    # class only: y = 0: [2, 2], y = 1: [1, 1]
    assert s(1, []) == pytest.approx(lg(2) - lg(6) + 2 * lg(3) + lg(2) - lg(4) + 2 * lg(2),
                                     rel=1e-14)
    # Weka's BAYES score, alpha = 0.5 per cell
    half = BDScore(X, y, np.array([2, 2]), 2, alpha=0.5)
    assert half(1, []) == pytest.approx(
        lg(1) - lg(5) + 2 * (lg(2.5) - lg(0.5)) + lg(1) - lg(3) + 2 * (lg(1.5) - lg(0.5)),
        rel=1e-14)


def test_search_finds_the_known_best_structure():
    """a1 copies a0, a2 is noise: the best network (brute force over every DAG of three
    attributes with the class a parent of each) links a0 and a1 and leaves a2 alone; both
    searches find it, and it classifies like the data say."""
    rng = np.random.default_rng(0)
    a0 = rng.integers(0, 3, 300)
    y = (a0 == 2).astype(int) ^ (rng.random(300) < 0.1)
    rows = np.column_stack([a0, a0, rng.integers(0, 2, 300), y])
    data = _data(rows.tolist(), [3, 3, 2])
    X, yy = rows[:, :3], rows[:, 3]
    score = BDScore(X, yy, np.array([3, 3, 2]), 2)
    best = max(
        (sum(score(i, ps[i]) for i in range(3)), ps)
        for ps in itertools.product(*[[p for r in range(3) for p in itertools.combinations(
            [j for j in range(3) if j != i], r)] for i in range(3)])
        if _acyclic(ps))
    for search in ("hill_climber", "k2"):
        model = registry.create("BayesNet", search=search).fit(data)
        assert model.network_score() == pytest.approx(best[0], rel=1e-12)
        assert {frozenset((i, p)) for i, ps in enumerate(model.parents_) for p in ps} == \
            {frozenset((0, 1))}
    # the tie between a0 → a1 and a1 → a0: the hill climber's first addition in scan order
    assert registry.create("BayesNet").fit(data).parents_ == [[1], [], []]
    assert registry.create("BayesNet-K2").fit(data).parents_ == [[], [0], []]
    assert registry.create("BayesNet", max_parents=1).fit(data).parents_ == [[], [], []]


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


def test_bayesnet_estimates_and_missing_values_as_kdb():
    """With no attribute arcs BayesNet is KDB0 (naive Bayes, JMLR 2016 estimates)."""
    data = load_dataset("labor")
    disc = fit_discretizer("ef:5", data).transform(data)
    bn = registry.create("BayesNet", max_parents=1).fit(disc)
    np.testing.assert_allclose(bn.predict_proba(disc),
                               registry.create("KDB0").fit(disc).predict_proba(disc),
                               rtol=1e-13)
    full = registry.create("BayesNet").fit(disc)
    assert full.fit_report()["arcs"] and np.allclose(full.predict_proba(disc).sum(axis=1), 1)


def _weka_structure(path: Path, search: str, opts: list[str]) -> dict[str, list[str]]:
    out = subprocess.run(
        ["java", "-cp", str(WEKA_JAR), "weka.classifiers.bayes.BayesNet", "-t", str(path),
         "-no-cv", "-Q", f"weka.classifiers.bayes.net.search.local.{search}", "--", *opts],
        capture_output=True, text=True, timeout=300).stdout
    block = out.split("Network structure (nodes followed by parents)\n")[1].split("LogScore")[0]
    return {re.sub(r"\(\d+\)$", "", name.strip()): rest.split()
            for name, rest in (line.split(":", 1) for line in block.strip().splitlines())}


@pytest.mark.skipif(shutil.which("java") is None or not WEKA_JAR.is_file(),
                    reason="needs java and Weka 3.6 (Debian package weka)")
@pytest.mark.parametrize("slug,searches", [
    ("iris", ("HillClimber", "K2")), ("pima", ("HillClimber", "K2")),
    ("glass", ("HillClimber", "K2")), ("led", ("HillClimber", "K2")), ("german", ("K2",))])
def test_structures_equal_weka(slug, searches, tmp_path):
    """Weka 3.6's BayesNet with its BAYES score (alpha 0.5) on the same EF5 data: the K2
    search, and the hill climber with arc reversal, give the same arcs between attributes.
    (Weka's hill climber may also delete class arcs, which ours keeps; on german and
    kr-vs-kp that changes its attribute arcs, so those are compared under K2 only.)"""
    data = load_dataset(slug)
    if not data.is_all_nominal:
        data = fit_discretizer("ef:5", data).transform(data)
    path = tmp_path / f"{slug}.arff"
    save_arff(data, path)
    cls = data.class_attribute.name
    names = data.attribute_names
    for search in searches:
        ours = registry.create("BayesNet" if search == "HillClimber" else "BayesNet-K2",
                               score="bayes").fit(data)
        weka = _weka_structure(path, search,
                               ["-P", "5", "-S", "BAYES"] + (["-R"] if search == "HillClimber"
                                                             else []))
        assert {n: sorted(names[p] for p in ps) for n, ps in zip(names, ours.parents_)} == \
            {n: sorted(p for p in weka[n] if p != cls) for n in names}, search
