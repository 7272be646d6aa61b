"""Chunked data sources (ARFF, CSV, Parquet) and the reservoir sample: chunks equal the whole
file at every chunk size, headers come from the file, values not declared are errors, the
sample is a deterministic function of the seed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workbench.data.arff import load_arff
from workbench.data.sources import Reservoir, iter_chunks, load_table, scan_header, table_kind
from workbench.errors import WorkbenchError

from conftest import EMBEDDED


def _frame(data) -> pd.DataFrame:
    """A Dataset as a DataFrame of values (nominal as text, missing as None/NaN)."""
    cols = {}
    for j, a in enumerate(data.attributes):
        x = data.X[:, j]
        if a.values is None:
            cols[a.name] = x
        else:
            cols[a.name] = [None if np.isnan(v) else a.values[int(v)] for v in x]
    cols[data.class_attribute.name] = [None if k < 0 else data.class_values[k]
                                       for k in data.y]
    return pd.DataFrame(cols)


@pytest.fixture(scope="module")
def labor_files(tmp_path_factory):
    data = load_arff(EMBEDDED / "labor.arff.gz")  # nominal + numeric, missing values
    folder = tmp_path_factory.mktemp("src")
    df = _frame(data)
    df.to_csv(folder / "labor.csv", index=False)
    df.to_parquet(folder / "labor.parquet", index=False)
    return data, folder


def _decoded(data):
    frame = _frame(data).astype(object)
    return frame.where(frame.notna(), "?").astype(str).to_numpy()


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_csv_and_parquet_equal_the_arff(labor_files, kind):
    data, folder = labor_files
    table = load_table(folder / f"labor.{kind}")
    assert [a.name for a in table.attributes] == list(data.attribute_names)
    assert [a.values is None for a in table.attributes] == \
        [a.values is None for a in data.attributes]
    assert [a.has_missing for a in table.attributes] == [a.has_missing for a in data.attributes]
    np.testing.assert_array_equal(_decoded(table), _decoded(data))
    head = scan_header(folder / f"labor.{kind}")
    assert head.n_instances == 0 and head.attributes == table.attributes
    assert all(list(a.values) == sorted(a.values) for a in head.attributes if a.values)


@pytest.mark.parametrize("kind", ["arff", "csv", "parquet"])
@pytest.mark.parametrize("rows", [1, 5, 57, 1000])
def test_chunks_equal_the_whole_file(labor_files, kind, rows):
    data, folder = labor_files
    path = EMBEDDED / "labor.arff.gz" if kind == "arff" else folder / f"labor.{kind}"
    whole = load_table(path)
    parts = list(iter_chunks(path, rows))
    assert [p.n_instances for p in parts] == \
        [rows] * (57 // rows) + ([57 % rows] if 57 % rows else [])
    np.testing.assert_array_equal(np.vstack([p.X for p in parts]), whole.X)
    np.testing.assert_array_equal(np.concatenate([p.y for p in parts]), whole.y)


def test_undeclared_values_and_bad_files(labor_files, tmp_path):
    data, folder = labor_files
    header = scan_header(folder / "labor.csv")
    df = pd.read_csv(folder / "labor.csv")
    df.loc[3, "pension"] = "gold-plated"
    df.to_csv(tmp_path / "odd.csv", index=False)
    with pytest.raises(WorkbenchError, match="value 'gold-plated' of column 'pension' is not "
                                             "declared"):
        list(iter_chunks(tmp_path / "odd.csv", 10, header=header))
    with pytest.raises(WorkbenchError, match="unknown data file type"):
        table_kind("data.xlsx")
    with pytest.raises(WorkbenchError, match="no such file"):
        load_table(tmp_path / "missing.parquet")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(WorkbenchError, match="cannot read as PARQUET"):
        load_table(tmp_path / "bad.parquet")


def test_reservoir_is_uniform_deterministic_and_keeps_small_streams_whole():
    data = load_arff(EMBEDDED / "iris.arff.gz")
    res = Reservoir(500, seed=3)
    for c in iter_chunks(EMBEDDED / "iris.arff.gz", 40):
        res.add(c)
    np.testing.assert_array_equal(res.sample().X, data.X)  # fewer rows than the size
    picks = []
    for seed in (1, 1, 2):
        r = Reservoir(20, seed=seed)
        for c in iter_chunks(EMBEDDED / "iris.arff.gz", 7):
            r.add(c)
        picks.append(r.sample().X)
    np.testing.assert_array_equal(picks[0], picks[1])
    assert not np.array_equal(picks[0], picks[2])
    # uniform: over many seeds every row is kept with probability size / n
    n, size = 150, 30
    hits = np.zeros(n)
    ids = data.replace(X=np.arange(n, dtype=float)[:, None].repeat(4, axis=1))
    for seed in range(400):
        r = Reservoir(size, seed=seed)
        for lo in range(0, n, 16):
            r.add(ids.take(np.arange(lo, min(lo + 16, n))))
        hits[r.sample().X[:, 0].astype(int)] += 1
    assert abs(hits.mean() / 400 - size / n) < 1e-12
    assert hits.min() > 400 * size / n * 0.6 and hits.max() < 400 * size / n * 1.4


def test_header_from_row_groups_scanned_apart_equals_one_pass(labor_files, tmp_path):
    """A Parquet file's row groups scanned separately (as on Dask workers) and merged in
    order: the header of one pass (values, missing flags, rows)."""
    import pyarrow.parquet as pq

    path = tmp_path / "groups.parquet"
    pq.write_table(pq.read_table(labor_files[1] / "labor.parquet"), path, row_group_size=8)
    serial = lambda fn, p, groups: [fn(p, g) for g in groups]  # noqa: E731
    apart = scan_header(path, map_groups=serial)
    whole = scan_header(path)
    assert apart.attributes == whole.attributes and apart.meta["rows"] == 57
    assert apart.class_attribute == whole.class_attribute


def test_a_parquet_dictionary_may_list_values_no_row_has(tmp_path):
    """Writers (pandas categoricals, Arrow) keep every category in the dictionary; values no
    row uses are neither declared nor errors, and the used ones load as declared."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cats = pa.array(["x", "o", "b"])
    table = pa.table({"g5": pa.DictionaryArray.from_arrays(pa.array([2, 2, 2, 2]), cats),
                      "h1": pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 0]), cats),
                      "class": pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, 1]),
                                                              pa.array(["win", "loss"]))})
    pq.write_table(table, tmp_path / "c.parquet")
    data = load_table(tmp_path / "c.parquet")
    assert data.attributes[0].values == ("b",)
    assert data.X[:, 0].tolist() == [0, 0, 0, 0]
    assert [data.attributes[1].values[int(v)] for v in data.X[:, 1]] == ["x", "o", "b", "x"]


@pytest.mark.parametrize("kind", ["arff", "csv", "parquet"])
def test_loading_on_threads_equals_one_thread(labor_files, kind, monkeypatch):
    """Large tables are encoded and gathered by two threads (disjoint writes): forcing that
    path on labor (57 rows, missing values, nominal and numeric) gives the same Dataset."""
    import workbench.data.gather as gather

    data, folder = labor_files
    path = EMBEDDED / "labor.arff.gz" if kind == "arff" else folder / f"labor.{kind}"
    one = load_table(path)
    monkeypatch.setattr(gather, "PARALLEL_ROWS", 8)
    two = load_table(path)
    assert two.attributes == one.attributes and two.class_attribute == one.class_attribute
    np.testing.assert_array_equal(two.X, one.X)
    np.testing.assert_array_equal(two.y, one.y)
    assert np.isnan(one.X).any()


def test_used_codes_marks_the_codes_rows_use_and_rejects_codes_out_of_range():
    from workbench.data.gather import used_codes

    assert used_codes(np.array([2, 0, 2], dtype=np.int32), 4).tolist() == \
        [True, False, True, False]
    assert used_codes(np.array([0, 4], dtype=np.int32), 4).size == 0
    assert used_codes(np.array([-1], dtype=np.int8), 4).size == 0


def test_arrow_numpy_conversions_equal_pyarrows_own():
    """`workbench.data.arrow` (no pandas import) gives pyarrow's to_numpy / pa.array values:
    nulls filled, chunks joined, integers and decimals cast, slices honoured."""
    import decimal

    import pyarrow as pa

    from workbench.data.arrow import from_numpy, to_numpy

    floats = pa.chunked_array([[1.5, None], [], [3.25, None, -0.0]])
    assert np.array_equal(to_numpy(floats, np.nan), floats.to_numpy(), equal_nan=True)
    ints = pa.chunked_array([[1, None, 2 ** 53 + 1], [7]])
    assert np.array_equal(to_numpy(ints, np.nan, pa.float64()),
                          ints.to_numpy().astype(np.float64), equal_nan=True)
    codes = pa.array([2, None, 0, 1], type=pa.int32()).slice(1)
    got = to_numpy(codes, 3)
    assert got.dtype == np.int32 and got.tolist() == [3, 0, 1]
    dec = pa.array([decimal.Decimal("0.1"), None, decimal.Decimal("2.675")])
    assert np.array_equal(to_numpy(dec, np.nan, pa.float64()), [0.1, np.nan, 2.675],
                          equal_nan=True)
    assert to_numpy(pa.array([], type=pa.float64())).shape == (0,)
    with pytest.raises(ValueError):
        to_numpy(pa.array([1.0, None]))
    strided = np.arange(12, dtype=np.int64).reshape(3, 4)[:, 1]
    assert from_numpy(strided).equals(pa.array(strided))
    assert from_numpy(np.array([0.5, np.nan])).to_pylist()[0] == 0.5


def test_group_rows_is_a_stable_grouping_by_key():
    """`group_rows` (out-of-core CV's rows by fold): X_out, y_out = X[order], y[order] with
    order the stable argsort of the keys, and the groups' bounds — an empty group too."""
    from workbench.data.gather import group_rows

    rng = np.random.default_rng(3)
    n, d, k = 5000, 7, 6
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.1] = np.nan
    y = rng.integers(-1, 3, n)
    key = rng.choice([0, 1, 2, 4, 5], n)  # fold 3 holds no row
    Xo, yo, order = np.empty_like(X), np.empty_like(y), np.empty(n, dtype=np.int64)
    bounds = group_rows(X, y, key, k, Xo, yo, order)
    want = np.argsort(key, kind="stable")
    assert np.array_equal(order, want)
    assert np.array_equal(Xo, X[want], equal_nan=True) and np.array_equal(yo, y[want])
    assert np.array_equal(bounds, np.concatenate(([0], np.cumsum(np.bincount(key, minlength=k)))))
    assert bounds[3] == bounds[4]
