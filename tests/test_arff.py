"""ARFF loading/saving: values, missing, class selection, and malformed-file errors that
name the file and the real line."""

from __future__ import annotations

import gzip
import time

import numpy as np
import pytest

from conftest import EMBEDDED
from workbench.data.arff import dataset_stem, iter_arff_chunks, load_arff, save_arff
from workbench.data.dataset import Attribute, Dataset
from workbench.errors import ArffError, WorkbenchError

GOOD = """% a comment
@relation weather

@attribute outlook {sunny, overcast, 'light rain'}
@attribute temperature numeric
@attribute humid real
@attribute windy {TRUE, FALSE}
@attribute count integer
@attribute play {yes, no}

@data
sunny,85,85,FALSE,1,no
% comment inside data
overcast,?,86,TRUE,2,yes
'light rain', 70.5 ,?,?,3,?
"""


def write(tmp_path, text, name="t.arff"):
    p = tmp_path / name
    if name.endswith(".gz"):
        p.write_bytes(gzip.compress(text.encode()))
    else:
        p.write_text(text)
    return p


def test_load_values_missing_and_header(tmp_path):
    d = load_arff(write(tmp_path, GOOD, "weather.arff"))
    assert d.name == "weather" and d.meta["relation"] == "weather"
    assert d.attribute_names == ("outlook", "temperature", "humid", "windy", "count")
    assert d.attributes[0].values == ("sunny", "overcast", "light rain")
    assert d.attributes[1].values is None and d.attributes[4].values is None
    assert d.class_attribute == Attribute("play", ("yes", "no"))
    np.testing.assert_array_equal(
        d.X,
        [[0, 85, 85, 1, 1], [1, np.nan, 86, 0, 2], [2, 70.5, np.nan, np.nan, 3]],
    )
    np.testing.assert_array_equal(d.y, [1, 0, -1])
    assert d.source.endswith("weather.arff")


def test_gz_name_and_class_selection(tmp_path):
    p = write(tmp_path, GOOD, "weather.arff.gz")
    assert dataset_stem(p) == "weather"
    assert load_arff(p).name == "weather"
    assert load_arff(p, name="w").name == "w"
    by_name = load_arff(p, class_attribute="windy")
    assert by_name.class_attribute.name == "windy"
    assert by_name.attribute_names[-1] == "play"
    np.testing.assert_array_equal(by_name.y, [1, 0, -1])
    assert load_arff(p, class_attribute=1).class_attribute.name == "outlook"
    assert load_arff(p, class_attribute="4").class_attribute.name == "windy"
    with pytest.raises(ArffError, match="out of range"):
        load_arff(p, class_attribute=9)
    with pytest.raises(ArffError, match="no attribute named 'nope'"):
        load_arff(p, class_attribute="nope")


def test_sparse_rows(tmp_path):
    text = "@relation s\n@attribute a numeric\n@attribute b {x,y}\n@attribute c {p,q}\n@data\n"
    text += "{0 3, 2 q}\n{1 y}\n"
    d = load_arff(write(tmp_path, text))
    np.testing.assert_array_equal(d.X, [[3, 0], [0, 1]])
    np.testing.assert_array_equal(d.y, [1, 0])


def test_embedded_iris():
    d = load_arff(EMBEDDED / "iris.arff.gz")
    assert (d.name, d.n_instances, d.n_attributes, d.n_classes) == ("iris", 150, 4, 3)


def test_save_roundtrip(tmp_path):
    attrs = (Attribute("it's x"), Attribute("n", ("(-inf-5.55]", "a b", "?q", "c,d")))
    X = np.array([[1.5, 0], [np.nan, 1], [-2e-7, np.nan], [3, 3]])
    d = Dataset("rt", attrs, Attribute("cls", ("p", "q r")), X, np.array([0, -1, 1, 1]))
    for name in ("rt.arff", "rt.arff.gz"):
        p = tmp_path / name
        save_arff(d, p)
        back = load_arff(p)
        assert back.header_difference(d) is None
        np.testing.assert_array_equal(back.X, d.X)
        np.testing.assert_array_equal(back.y, d.y)
    assert (tmp_path / "rt.arff.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rt.arff", "rt.arff.gz"]


# ----- malformed files: one ArffError naming the file and the line ------------------------
HEAD = "% header\n@relation r\n\n@attribute a numeric\n@attribute b {x, y}\n@attribute c {p, q}\n"
# lines:  1          2           3  4                   5                    6


@pytest.mark.parametrize(
    "text, line, pattern",
    [
        (HEAD + "@data\n1,x,p\n1,x\n", 9, "expected 3 values, found 2"),
        (HEAD + "@data\n1,x,p\n\n% c\n1,x,p,q\n", 11, "expected 3 values, found 4"),
        (HEAD + "@data\n1,z,p\n", 8, "value 'z' is not declared for nominal attribute 'b'"),
        (HEAD + "@data\n1,x,p\n2,y,maybe\n", 9, "not declared for nominal attribute 'c'"),
        (HEAD + "@data\nabc,x,p\n", 8, "numeric attribute 'a' is not a number"),
        ("\n\n" + HEAD + "@data\n1,x,p\n1,x\n", 11, "expected 3 values"),
        (HEAD.replace("@attribute b {x, y}", "@attribute b"), 5, "bad @attribute"),
        (HEAD.replace("{x, y}", "{x, y"), 5, "no closing"),
        (HEAD.replace("{x, y}", "string") + "@data\n", 5, "type 'string'.*not support"),
        (HEAD.replace("{x, y}", 'date "yyyy-MM-dd"') + "@data\n", 5, "type 'date'.*not support"),
        (HEAD.replace("{x, y}", "numbr") + "@data\n", 5, "unknown type 'numbr'"),
        (HEAD + "@data\n", 6, None),  # placeholder replaced below (valid file)
        (HEAD, 6, "no @data"),
        ("", 1, "empty file"),
        ("% only\n% comments\n", 2, "empty file"),
        ("@relation r\n@data\n", 2, "no @attribute"),
        (HEAD + "garbage here\n@data\n", 7, "unexpected text"),
        (HEAD.replace("{p, q}", "numeric") + "@data\n", 6, "class attribute 'c' is numeric"),
        (HEAD.replace("{p, q}", "{p, p}") + "@data\n", 6, "repeated value"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, text, line, pattern):
    p = write(tmp_path, text, "bad.arff")
    if pattern is None:
        assert load_arff(p).n_instances == 0  # a header with no rows is valid
        return
    with pytest.raises(ArffError) as info:
        load_arff(p)
    message = str(info.value)
    assert message.startswith(f"{p}, line {line}: "), message
    assert "\n" not in message
    assert __import__("re").search(pattern, message), message


def test_malformed_gz_line_numbers(tmp_path):
    p = write(tmp_path, HEAD + "@data\n1,x,p\n1,x,p\n1,y,r\n", "bad.arff.gz")
    with pytest.raises(ArffError, match=r"bad\.arff\.gz, line 10: value 'r'"):
        load_arff(p)


def test_missing_file_and_not_gzip(tmp_path):
    with pytest.raises(ArffError, match="no such file"):
        load_arff(tmp_path / "nope.arff")
    bad = tmp_path / "x.arff.gz"
    bad.write_bytes(b"\x1f\x8b\x08garbage")
    with pytest.raises(ArffError, match="cannot read"):
        load_arff(bad)
    assert issubclass(ArffError, WorkbenchError)


def test_load_speed_connect4():
    t = time.perf_counter()
    d = load_arff(EMBEDDED / "connect-4.arff.gz")
    assert d.n_instances == 67557
    assert time.perf_counter() - t < 6.0


def test_integer_values_not_truncated_and_tabs_in_header(tmp_path):
    text = "@relation r\n@attribute\tk\tINTEGER\n  @attribute c {x,y}\n@data\n1.7,x\n?,y\n"
    d = load_arff(write(tmp_path, text))
    assert d.attributes[0] == Attribute("k")
    np.testing.assert_array_equal(d.X[:, 0], [1.7, np.nan])


# ----- the fast (pyarrow) data path and chunked reading --------------------------------------
@pytest.fixture
def fast_path(monkeypatch):
    """pyarrow parses even the shortest data section (these files are a few lines)."""
    from workbench.data import arff as mod
    monkeypatch.setattr(mod, "FAST_MIN_BYTES", 0)


def _careful(path, monkeypatch):
    """The same file through liac-arff only (the fast path switched off)."""
    from workbench.data import arff as mod
    with monkeypatch.context() as m:
        m.setattr(mod, "_load_fast", lambda *a: None)
        return load_arff(path)


def _same(a: Dataset, b: Dataset) -> bool:
    return (np.array_equal(a.X, b.X, equal_nan=True) and np.array_equal(a.y, b.y)
            and a.attributes == b.attributes and a.class_attribute == b.class_attribute
            and [x.has_missing for x in a.attributes] == [x.has_missing for x in b.attributes]
            and a.meta == b.meta)


@pytest.mark.parametrize("data, fast", [
    ("1,x,p\n2.5e1,'y',q\n?,?,p\n", True),           # quotes, exponent, missing
    ("1, x,p\n", False),                           # a space before a nominal value
    ("1,x,p\r\n-0.25,y,q\r\n", True),               # CRLF
    ("1,'x',p\n\n\n3,y,q\n", True),                 # blank lines
    ("% comment\n1,x,p\n", False),                 # a comment line: careful path
    ("{0 1,1 y}\n", False),                        # a sparse row: careful path
    ('1,"x",p\n', False),                          # double quotes: careful path
])
def test_fast_path_equals_liac_arff(tmp_path, monkeypatch, fast_path, data, fast):
    from workbench.data import arff as mod
    p = write(tmp_path, HEAD + "@data\n" + data, "f.arff")
    assert (mod._load_fast(p, p.read_bytes(), None, None) is not None) == fast
    assert _same(load_arff(p), _careful(p, monkeypatch))


def test_a_short_data_section_is_read_without_pyarrow(tmp_path):
    """Importing pyarrow costs more than liac-arff parsing a short file (iris)."""
    import subprocess
    import sys
    code = ("import sys; from workbench.data.arff import load_arff; "
            f"d = load_arff({str(EMBEDDED / 'iris.arff.gz')!r}); "
            "print(d.n_instances, 'pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["150", "False"]


@pytest.mark.parametrize("text, pattern", [
    (HEAD + "@data\n1,x,p\n1,z,p\n", "line 9: value 'z' is not declared"),
    (HEAD + "@data\n1,x,p\ninf,x,p\n", "line 9: value 'inf' of numeric attribute 'a' is not "
                                       "finite"),
    (HEAD + "@data\n1,x,p\n1,x\n", "line 9: expected 3 values, found 2"),
])
def test_fast_path_errors_are_the_careful_paths(tmp_path, fast_path, text, pattern):
    p = write(tmp_path, text, "e.arff")
    with pytest.raises(ArffError, match=pattern):
        load_arff(p)


@pytest.mark.parametrize("rows", [1, 2, 7, 10_000])
def test_chunks_equal_the_whole_file(tmp_path, rows):
    from workbench.data.arff import iter_arff_chunks
    for path in (EMBEDDED / "labor.arff.gz", EMBEDDED / "iris.arff.gz"):
        whole = load_arff(path)
        parts = list(iter_arff_chunks(path, rows))
        assert [c.n_instances for c in parts[:-1]] == [rows] * (len(parts) - 1)
        assert sum(c.n_instances for c in parts) == whole.n_instances
        np.testing.assert_array_equal(np.vstack([c.X for c in parts]), whole.X)
        np.testing.assert_array_equal(np.concatenate([c.y for c in parts]), whole.y)
        assert all(c.attributes == whole.attributes for c in parts)
    with pytest.raises(WorkbenchError, match="chunk size"):
        next(iter_arff_chunks(EMBEDDED / "iris.arff.gz", 0))


def test_arrow_reads_only_arrow_owned_input(monkeypatch, fast_path):
    """Arrow's CSV reader gets Arrow-owned input (never a Python bytes object or file):
    its pool threads release that input, and one taking the GIL to release a Python object
    while the interpreter exits aborts the process (apache/arrow#34314: a refused `run`
    exited -6 instead of 2 so). Whole files and chunks read the same rows."""
    import pyarrow as pa
    from workbench.data import arff

    sources = []
    for name in ("read_csv", "open_csv"):
        real = getattr(arff.pcsv, name)

        def spy(source, *a, _real=real, **kw):
            sources.append(source)
            return _real(source, *a, **kw)
        monkeypatch.setattr(arff.pcsv, name, spy)
    path = EMBEDDED / "iris.arff.gz"
    whole = load_arff(path)
    chunks = list(iter_arff_chunks(path, 40))
    assert len(sources) == 2
    for source in sources:
        assert isinstance(source, pa.NativeFile) and not isinstance(source, pa.PythonFile)
    np.testing.assert_array_equal(np.concatenate([c.X for c in chunks]), whole.X)
    np.testing.assert_array_equal(np.concatenate([c.y for c in chunks]), whole.y)
