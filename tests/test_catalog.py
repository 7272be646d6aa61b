"""The 71-set catalog (paper Table 1), size groups, search path and loading by slug."""

from __future__ import annotations

import csv
import os
import shutil
import time

import numpy as np
import pytest

from conftest import EMBEDDED, FETCHED, SHARED_DATASETS, needs_shared
from workbench.data import catalog
from workbench.data.catalog import (
    CATALOG,
    find_dataset,
    get_entry,
    load_dataset,
    search_path,
    size_group,
)
from workbench.discretize import fit_discretizer
from workbench.errors import WorkbenchError


def test_counts_and_groups():
    assert len(CATALOG) == 71
    groups = [e.group for e in CATALOG]
    assert (groups.count("large"), groups.count("medium"), groups.count("small")) == (12, 19, 40)
    assert len({e.slug for e in CATALOG}) == 71
    assert get_entry("led").group == get_entry("german").group == "small"  # exactly 1,000
    assert all(e.group == size_group(e.instances) for e in CATALOG)
    assert size_group(10_000) == "medium" and size_group(10_001) == "large"
    assert size_group(1_000) == "small" and size_group(1_001) == "medium"


def test_paper_counts_spot_checks():
    assert (get_entry("adult").instances, get_entry("adult").attributes) == (48842, 15)
    assert get_entry("phoneme").classes == 52
    assert get_entry("optdigits").attributes == 49
    assert get_entry("poker-hand").instances == 1025010
    assert get_entry("vote").slug == "house-votes-84"  # alias
    assert get_entry("no-such-set") is None


@pytest.mark.skipif(not (SHARED_DATASETS / "manifest.csv").is_file(), reason="no manifest")
def test_slugs_and_paper_counts_match_manifest():
    with open(SHARED_DATASETS / "manifest.csv", newline="") as fh:
        rows = {r["slug"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {e.slug for e in CATALOG}
    for e in CATALOG:
        r = rows[e.slug]
        assert (e.instances, e.attributes, e.classes) == (
            int(r["paper_instances"]), int(r["paper_attributes"]), int(r["paper_classes"])
        ), e.slug


def test_search_path_order(monkeypatch, tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    monkeypatch.setenv("WORKBENCH_DATA", os.pathsep.join([str(a), "", str(b)]))
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    assert search_path([c]) == [catalog.PROJECT_DATASETS, a, b, c, tmp_path / "cache"]
    assert catalog.PROJECT_DATASETS == EMBEDDED


def test_find_and_load(monkeypatch, tmp_path):
    monkeypatch.delenv("WORKBENCH_DATA", raising=False)
    assert find_dataset("iris") == EMBEDDED / "iris.arff.gz"
    assert find_dataset("vote") == EMBEDDED / "house-votes-84.arff.gz"
    assert find_dataset("IRIS") == EMBEDDED / "iris.arff.gz"
    assert find_dataset("covtype") is None
    d = load_dataset("vote")
    assert d.name == "house-votes-84" and d.n_instances == 435
    # a plain .arff in an extra directory and in $WORKBENCH_DATA
    shutil.copy(EMBEDDED / "labor.arff.gz", tmp_path / "mine.arff.gz")
    assert find_dataset("mine") is None
    assert find_dataset("mine", [tmp_path]) == tmp_path / "mine.arff.gz"
    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path))
    assert load_dataset("mine").n_instances == 57
    # by path
    assert load_dataset(str(EMBEDDED / "iris.arff.gz")).name == "iris"
    assert load_dataset(EMBEDDED / "iris.arff.gz").n_instances == 150


def test_unknown_or_missing_dataset_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_DATA", str(tmp_path))
    with pytest.raises(WorkbenchError) as info:
        load_dataset("no-such-set")
    msg = str(info.value)
    assert "unknown data set 'no-such-set'" in msg
    assert str(EMBEDDED) in msg and str(tmp_path) in msg
    with pytest.raises(WorkbenchError, match="'covtype' .*not found"):
        load_dataset("covtype")
    with pytest.raises(WorkbenchError, match="no such data file"):
        load_dataset("missing/file.arff")


@pytest.mark.shared
@needs_shared
def test_every_shared_dataset_loads_and_discretises():
    """All 68 shared data sets: load, fit MDL and EF5 on the first half, transform the rest."""
    files = sorted(SHARED_DATASETS.glob("*/*.arff.gz"))
    assert len(files) == 68
    started = time.perf_counter()
    for path in files:
        d = catalog.load_dataset(path)
        entry = get_entry(d.name)
        assert entry is not None, path
        half = d.n_instances // 2
        train, test = d.take(np.arange(half)), d.take(np.arange(half, d.n_instances))
        for method in ("mdl", "ef:5"):
            disc = fit_discretizer(method, train)
            out = disc.transform(test)
            assert out.is_all_nominal, (path, method)
            codes = out.codes()
            assert (codes < out.cardinalities[None, :]).all(), (path, method)
            assert set(disc.cuts) == {d.attributes[j].name for j in d.numeric_indices}
    assert time.perf_counter() - started < 120
    assert FETCHED.is_dir()
