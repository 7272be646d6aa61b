"""What a Dataset keeps of itself once made (it never changes): its column codes per type,
its rows of known class, its empty header — each made once however many learners ask."""

import pickle

import numpy as np

from workbench.data.dataset import Attribute, Dataset
from workbench.learners.registry import create


def _data(n: int, seed: int, missing_class: bool = False) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, (n, 4)).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = rng.integers(0, 2, n)
    if missing_class:
        y[::5] = -1
    return Dataset("c", tuple(Attribute(f"a{j}", ("u", "v", "w")) for j in range(4)),
                   Attribute("class", ("p", "q")), X, y)


def test_column_codes_are_made_once_and_each_caller_gets_its_own_copy(monkeypatch):
    """A Dataset keeps its column codes per type: the values are converted once however
    many learners read them, every call returns a writable copy of its own (KDB fills in
    missing codes in place), a pickled Dataset travels without them, and a derived one
    (`take`, `replace`) converts its own values."""
    import workbench.data.gather as gather

    data = _data(3_000, 4)
    X = data.X
    made = []
    real = gather.column_codes
    monkeypatch.setattr(gather, "column_codes", lambda *a: made.append(1) or real(*a))
    first, second = data.column_codes(np.int8), data.column_codes(np.int8)
    assert len(made) == 1 and first is not second and second.flags.writeable
    first[:] = 9  # (a caller's writes stay its own)
    np.testing.assert_array_equal(data.column_codes(np.int8), data.codes().T)
    assert data.column_codes(np.int16).dtype == np.int16 and len(made) == 2
    again = pickle.loads(pickle.dumps(data))
    assert "_kept_codes" not in again.__dict__
    np.testing.assert_array_equal(again.column_codes(np.int8), data.codes().T)
    part = data.take(np.arange(0, 3_000, 2))
    np.testing.assert_array_equal(part.column_codes(np.int8), data.codes()[::2].T)
    other = data.replace(X=np.where(np.isnan(X), np.nan, 2 - np.nan_to_num(X)))
    np.testing.assert_array_equal(other.column_codes(np.int8), other.codes().T)
    assert len(made) == 5


def test_rows_of_known_class_and_the_empty_header_are_made_once():
    data, gaps = _data(500, 5), _data(500, 6, missing_class=True)
    assert data.without_missing_class() is data
    known = gaps.without_missing_class()
    assert known is gaps.without_missing_class() and known.n_instances == 400
    np.testing.assert_array_equal(known.y, gaps.y[gaps.y >= 0])
    np.testing.assert_array_equal(known.X, gaps.X[gaps.y >= 0])
    empty = data.empty
    assert empty is data.empty and empty.n_instances == 0 and empty.same_header(data)
    # a fitted learner keeps it to check test data against
    model = create("KDB1").fit(data)
    assert model._header is empty
    again = pickle.loads(pickle.dumps(gaps))
    assert not {"_known_classes", "empty", "_kept_codes"} & set(again.__dict__)
    assert again.without_missing_class().n_instances == 400


def test_what_is_kept_makes_no_reference_cycle():
    """A Dataset whose kept parts are made is freed as soon as the last reference goes (a
    stream's chunks must not wait for a garbage collection: a reference to itself among
    them piled chunks up in test-then-train runs)."""
    import gc
    import weakref

    gc.disable()
    try:
        for gaps in (False, True):
            data = _data(500, 5, missing_class=gaps)
            data.without_missing_class(), data.empty, data.column_codes(np.int8)
            ref = weakref.ref(data)
            del data
            assert ref() is None
    finally:
        gc.enable()


def test_column_codes_of_views_read_rows_in_place():
    """A loaded file's X is a view of wider rows (the class beside them): its codes are
    read from the rows where they lie (`gather.row_runs`), values between rows converted
    and dropped; rows far apart or another order are copied first. Every case gives the
    transposed codes, a value no int8 holds reported as −2."""
    from workbench.data.gather import row_runs

    rng = np.random.default_rng(8)
    wide = rng.integers(0, 3, (9_001, 7)).astype(float)
    wide[rng.random(wide.shape) < 0.1] = np.nan
    wide[:, 6] = 1e300  # (between the rows: never a code)
    wide[4, 1], wide[3, 2] = 300.0, 7.0
    cases = {"class beside": (wide[:, :6], 7), "every other row": (wide[::2, :6], 14),
             "rows far apart": (wide[::5, :6], 6),
             "Fortran order": (np.asfortranarray(wide[:, :6]), 6),
             "C order": (wide[:, :6].copy(), 6)}
    for name, (X, stride) in cases.items():
        data = Dataset("v", tuple(Attribute(f"a{j}", ("u", "v", "w")) for j in range(6)),
                       Attribute("class", ("p", "q")), X, np.zeros(len(X), dtype=int))
        flat, s = row_runs(data.X)
        assert s == stride and not flat.flags.writeable, name
        want = np.where(np.isnan(X), -1, np.where(X > 127, -2, X)).T
        np.testing.assert_array_equal(data.column_codes(np.int8), want, err_msg=name)
