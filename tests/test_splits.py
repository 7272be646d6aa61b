"""Repeated k-fold partitions: properties, reproducibility, stratification, CSV round trip."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.errors import WorkbenchError
from workbench.evaluation.splits import (
    fold_indices,
    load_splits,
    make_splits,
    save_splits,
)


@pytest.mark.parametrize("n,folds", [(10, 2), (11, 2), (17, 3), (100, 10), (5, 5)])
def test_every_instance_once_per_round_and_balanced_sizes(n, folds):
    s = make_splits(n, rounds=7, folds=folds, seed=3)
    assert s.shape == (7, n) and s.dtype == np.int64
    for r in range(7):
        assert set(np.unique(s[r])) == set(range(folds))
        sizes = np.bincount(s[r], minlength=folds)
        assert sizes.sum() == n
        assert sizes.max() - sizes.min() <= 1
        # the folds' test sets partition 0..n-1: each instance tested exactly once
        tests = np.concatenate([fold_indices(s, r, f)[1] for f in range(folds)])
        assert np.array_equal(np.sort(tests), np.arange(n))
        for f in range(folds):
            train, test = fold_indices(s, r, f)
            assert np.intersect1d(train, test).size == 0
            assert train.size + test.size == n


def test_seed_reproducible_and_round_independent_of_round_count():
    a = make_splits(50, rounds=20, folds=2, seed=1)
    b = make_splits(50, rounds=20, folds=2, seed=1)
    assert np.array_equal(a, b)
    c = make_splits(50, rounds=3, folds=2, seed=1)
    assert np.array_equal(a[:3], c)
    d = make_splits(50, rounds=20, folds=2, seed=2)
    assert not np.array_equal(a, d)
    # rounds are fresh partitions, not copies of each other
    assert len({tuple(row) for row in a}) == 20


def test_stratified_balances_each_class_and_overall_sizes():
    rng = np.random.default_rng(0)
    labels = rng.choice(3, size=101, p=[0.6, 0.3, 0.1])
    for folds in (2, 3, 5):
        s = make_splits(101, rounds=10, folds=folds, seed=4, stratify=True, labels=labels)
        for r in range(10):
            sizes = np.bincount(s[r], minlength=folds)
            assert sizes.max() - sizes.min() <= 1
            for c in range(3):
                per = np.bincount(s[r][labels == c], minlength=folds)
                assert per.max() - per.min() <= 1
    # stratified rounds are still random partitions
    s = make_splits(101, rounds=5, folds=2, seed=4, stratify=True, labels=labels)
    assert len({tuple(row) for row in s}) == 5
    assert not np.array_equal(s, make_splits(101, 5, 2, 4))


def test_stratify_needs_labels_and_bad_arguments():
    with pytest.raises(WorkbenchError, match="labels"):
        make_splits(10, 1, 2, 1, stratify=True)
    with pytest.raises(WorkbenchError, match="labels"):
        make_splits(10, 1, 2, 1, stratify=True, labels=np.zeros(9))
    with pytest.raises(WorkbenchError, match="folds"):
        make_splits(10, 1, 1, 1)
    with pytest.raises(WorkbenchError, match="non-empty"):
        make_splits(2, 1, 3, 1)
    with pytest.raises(WorkbenchError, match="rounds"):
        make_splits(10, 0, 2, 1)


def test_csv_round_trip(tmp_path):
    s = make_splits(23, rounds=4, folds=3, seed=9)
    f = tmp_path / "folds.csv"
    save_splits(s, f)
    lines = f.read_text().splitlines()
    assert lines[0] == "round,index,fold"
    assert len(lines) == 1 + 4 * 23
    assert lines[1] == f"0,0,{s[0, 0]}"
    back = load_splits(f)
    assert np.array_equal(back, s)
    assert np.array_equal(load_splits(f, n=23, folds=3), s)
    # row order does not matter
    body = lines[1:][::-1]
    f.write_text("\n".join([lines[0]] + body) + "\n")
    assert np.array_equal(load_splits(f), s)


def _write(tmp_path, text):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    return f


@pytest.mark.parametrize(
    "text,pattern",
    [
        ("", "empty"),
        ("a,b,c\n0,0,0\n", r"bad.csv:1: expected header"),
        ("round,index,fold\n0,0,0\n0,1\n", r"bad.csv:3: expected 3 fields"),
        ("round,index,fold\n0,0,0\n0,x,1\n", r"bad.csv:3: fields must be integers"),
        ("round,index,fold\n0,0,0\n0,1,-1\n", r"bad.csv:3: negative fold"),
        ("round,index,fold\n0,0,0\n0,1,1\n0,1,0\n", r"bad.csv:4: index 1 listed twice in round 0"),
        ("round,index,fold\n0,0,0\n0,1,1\n1,0,1\n", r"round 1 has no row for index 1"),
        ("round,index,fold\n0,0,0\n0,1,1\n2,0,1\n2,1,0\n", r"round 1 is missing"),
        ("round,index,fold\n0,0,0\n0,1,0\n", r"round 0 has no instance in fold 1|at least 2 folds"),
        ("round,index,fold\n", r"no split rows"),
    ],
)
def test_bad_csv_errors_name_file_and_line(tmp_path, text, pattern):
    f = _write(tmp_path, text)
    with pytest.raises(WorkbenchError, match=pattern) as info:
        load_splits(f)
    assert "bad.csv" in str(info.value)


def test_csv_checked_against_expected_size(tmp_path):
    f = tmp_path / "folds.csv"
    save_splits(make_splits(6, 2, 2, 1), f)
    with pytest.raises(WorkbenchError, match=r"folds.csv:\d+: index 6 out of range for 6"):
        # a file for 7 instances loaded as 6
        save_splits(make_splits(7, 2, 2, 1), f)
        load_splits(f, n=6)
    save_splits(make_splits(6, 2, 2, 1), f)
    with pytest.raises(WorkbenchError, match="round 0 has no row for index 6"):
        load_splits(f, n=7)
    save_splits(make_splits(6, 2, 3, 1), f)
    with pytest.raises(WorkbenchError, match="fold 2 out of range for 2 folds"):
        load_splits(f, folds=2)
    with pytest.raises(WorkbenchError, match="cannot read"):
        load_splits(tmp_path / "nope.csv")
