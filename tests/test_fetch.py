"""`workbench fetch` against a local HTTP server serving fixture files in the sources'
formats: converted to the catalog's layout, found by the search path afterwards, checksums
recorded and (when pinned) enforced, failures leave no file."""

from __future__ import annotations

import dataclasses
import functools
import gzip
import hashlib
import http.server
import json
import subprocess
import sys
import threading

import numpy as np
import pytest

from workbench.data import fetch as fetch_mod
from workbench.data.catalog import load_dataset
from workbench.errors import WorkbenchError

from conftest import REPO

POKER_TRAIN = "1,10,1,11,1,13,1,12,1,1,9\n2,11,2,13,2,10,2,12,2,1,9\n1,2,2,3,3,4,4,5,1,7,0\n"
POKER_TEST = "4,1,4,13,4,12,4,11,4,10,9\n1,1,2,1,3,9,1,5,2,3,1\n"


@pytest.fixture(autouse=True)
def few_rows(monkeypatch):
    """These fixtures are a few rows each: the sources' pinned row counts and the catalog's
    content checks are lifted here (tests/test_fetch_sources.py checks them)."""
    for slug, src in list(fetch_mod.SOURCES.items()):
        monkeypatch.setitem(fetch_mod.SOURCES, slug, dataclasses.replace(src, rows=None))
    monkeypatch.setattr(fetch_mod, "expected_content", lambda slug: None)


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A local mirror of the UCI paths: poker-hand's two files and localization's."""
    root = tmp_path / "mirror"
    (root / "poker").mkdir(parents=True)
    (root / "poker" / "poker-hand-training-true.data").write_text(POKER_TRAIN)
    (root / "poker" / "poker-hand-testing.data").write_text(POKER_TEST)
    (root / "00196").mkdir()
    (root / "00196" / "ConfLongDemo_JSI.txt").write_text(
        "A01,010-000-024-033,633790226051280329,27.05.2009 14:03:25:127,4.06,1.89,0.50,"
        "walking\nA01,020-000-033-111,633790226051820913,27.05.2009 14:03:25:183,4.21,"
        "1.54,0.79,lying\nB02,010-000-024-033,633790226052091205,27.05.2009 14:03:25:210,"
        "3.51,1.77,0.46,walking\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("WORKBENCH_FETCH_BASE", f"http://127.0.0.1:{httpd.server_port}/")
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("WORKBENCH_DATA", raising=False)
    yield root
    httpd.shutdown()


def test_fetch_converts_and_the_search_path_finds_it(server, tmp_path):
    path = fetch_mod.fetch("poker-hand")
    assert path == tmp_path / "cache" / "poker-hand.arff.gz"
    data = load_dataset("poker-hand")  # found through the cache
    assert data.n_instances == 5 and data.n_attributes == 10
    assert data.attributes[0].values == ("1", "2", "3", "4")
    assert data.attributes[1].values == tuple(str(v) for v in range(1, 14))
    assert data.class_values == tuple(str(v) for v in range(10))
    np.testing.assert_array_equal(data.y, [9, 9, 0, 9, 1])
    assert data.X[2].tolist() == [0, 1, 1, 2, 2, 3, 3, 4, 0, 6]  # codes of "1,2,2,3,..."
    info = json.loads((tmp_path / "cache" / "poker-hand.source.json").read_text())
    assert info["rows"] == 5 and info["sha256"]["poker/poker-hand-testing.data"] == \
        hashlib.sha256(POKER_TEST.encode()).hexdigest()
    loc = load_dataset(fetch_mod.fetch("localization"))
    assert [a.name for a in loc.attributes] == ["sequence", "tag", "timestamp", "x", "y", "z"]
    assert loc.class_values == ("lying", "walking") and loc.X[:, 3].tolist() == [4.06, 4.21,
                                                                                3.51]


def test_checksum_mismatch_and_failures_leave_no_file(server, tmp_path, monkeypatch):
    src = fetch_mod.SOURCES["poker-hand"]
    pinned = dataclasses.replace(src, sha256={src.files[0]: "0" * 64})
    monkeypatch.setitem(fetch_mod.SOURCES, "poker-hand", pinned)
    with pytest.raises(WorkbenchError, match="checksum mismatch for .*poker-hand-training-"
                                             "true.data: expected sha256 0000"):
        fetch_mod.fetch("poker-hand")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    (server / "poker" / "poker-hand-testing.data").unlink()  # HTTP 404
    monkeypatch.setitem(fetch_mod.SOURCES, "poker-hand", src)
    with pytest.raises(WorkbenchError, match="cannot download .*testing.data: HTTP 404"):
        fetch_mod.fetch("poker-hand")
    (server / "poker" / "poker-hand-testing.data").write_text("1,2,3\n")  # malformed
    with pytest.raises(WorkbenchError, match="fetch poker-hand: poker-hand-testing.data: "
                                             "not in the expected format .*Expected 11 "
                                             "columns, got 3"):
        fetch_mod.fetch("poker-hand")
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    with pytest.raises(WorkbenchError, match="no public source recorded for 'chess' "
                                             r"\(the only copy found is integer-coded"):
        fetch_mod.fetch("chess")
    monkeypatch.setenv("WORKBENCH_FETCH_BASE", "http://127.0.0.1:9/")  # nothing listens
    proc = subprocess.run([sys.executable, "-m", "workbench", "-q", "fetch", "covtype"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: cannot download http://127.0.0.1:9/covtype/")


def test_converters_of_the_other_sources(tmp_path):
    """covtype and census-income streamed from their (gzipped) files to ARFF."""
    row = ",".join(["2596", "51", "3", "258", "0", "510", "221", "232", "148", "6279"]
                   + ["1", "0", "0", "0"] + ["0"] * 28 + ["1"] + ["0"] * 11 + ["5"])
    gz = tmp_path / "covtype__covtype.data.gz"
    gz.write_bytes(gzip.compress((row + "\n" + row + "\n").encode()))
    out = tmp_path / "covtype.arff.gz"
    assert fetch_mod.SOURCES["covtype"].stream([gz], out, None) == 2
    cov = load_dataset(out)
    assert cov.n_attributes == 54 and cov.class_values == tuple("1234567")
    assert cov.X[0, :3].tolist() == [2596, 51, 3] and cov.y.tolist() == [4, 4]
    fields = []
    for name, numeric in fetch_mod._CENSUS:
        fields.append("3" if numeric else (" - 50000." if name == "income" else " x"))
    line = ",".join(fields) + "\n"
    data, test = tmp_path / "census.data.gz", tmp_path / "census.test.gz"
    data.write_bytes(gzip.compress(line.encode()))
    test.write_bytes(gzip.compress(line.encode()))
    out = tmp_path / "census-income.arff.gz"
    assert fetch_mod.SOURCES["census-income"].stream([data, test], out, None) == 2
    census = load_dataset(out)
    assert census.n_instances == 2 and census.n_attributes == 40
    assert "instance weight" not in census.attribute_names
    assert census.class_values == ("- 50000.",)
    with pytest.raises(WorkbenchError, match="census.data.gz: 2 rows, the source has 3: a "
                                             "short or altered file; nothing was written"):
        fetch_mod.SOURCES["census-income"].stream([data, test], tmp_path / "x.arff.gz", 3)
    assert not (tmp_path / "x.arff.gz").exists()


# ----- issue 34: broken transfers ------------------------------------------------------------
class _Flaky(http.server.BaseHTTPRequestHandler):
    """Serves `files`; each request takes the next behaviour of `plan` ("cut": send half
    of what it announces, then close; "ok"), and honours a byte range."""

    files: dict[str, bytes] = {}
    plan: list[str] = []
    ranges: list[str | None] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        asked = self.headers.get("Range")
        self.ranges.append(asked)
        start = int(asked[len("bytes="):].rstrip("-")) if asked else 0
        mode = self.plan.pop(0) if self.plan else "ok"
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        part = body[start:]
        self.wfile.write(part[: len(part) // 2] if mode == "cut" else part)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture
def flaky(tmp_path, monkeypatch):
    _Flaky.files, _Flaky.plan, _Flaky.ranges = {}, [], []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("WORKBENCH_FETCH_BASE", f"http://127.0.0.1:{httpd.server_port}/")
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fetch_mod, "BACKOFF", 0.01)
    yield _Flaky
    httpd.shutdown()


def _cache_is_empty(tmp_path) -> bool:
    return not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_cut_transfer_is_resumed_with_a_range_request(flaky, tmp_path, capsys):
    body = ("".join(f"{i % 4 + 1},{i % 13 + 1}," * 5 + f"{i % 10}\n" for i in range(400))
            ).encode()
    flaky.files = {"/poker/poker-hand-training-true.data": body,
                   "/poker/poker-hand-testing.data": POKER_TEST.encode()}
    flaky.plan = ["cut", "cut"]
    data = load_dataset(fetch_mod.fetch("poker-hand"))
    assert data.n_instances == 402
    half = len(body) // 2
    assert flaky.ranges[:3] == [None, f"bytes={half}-",
                                f"bytes={half + (len(body) - half) // 2}-"]
    err = capsys.readouterr().err
    assert "broke (the connection closed after" in err or "broke (received" in err
    assert "publishes no checksum" in err


def test_a_transfer_that_keeps_breaking_is_kept_and_resumed_by_the_next_fetch(flaky,
                                                                              tmp_path):
    body = POKER_TRAIN.encode() * 50
    flaky.files = {"/poker/poker-hand-training-true.data": body,
                   "/poker/poker-hand-testing.data": POKER_TEST.encode()}
    flaky.plan = ["cut"] * fetch_mod.RETRIES
    with pytest.raises(WorkbenchError, match=r"cannot download .*training-true.data: .* "
                                             rf"\({fetch_mod.RETRIES} attempts.*the next "
                                             "fetch resumes them"):
        fetch_mod.fetch("poker-hand")
    cache = tmp_path / "cache"
    assert [p.name for p in cache.iterdir()] == [fetch_mod.PARTIAL]  # no data set written
    kept = (cache / fetch_mod.PARTIAL / "poker-hand" / "poker__poker-hand-training-true.data"
            ).stat().st_size
    assert 0 < kept < len(body)
    flaky.ranges.clear()
    data = load_dataset(fetch_mod.fetch("poker-hand"))  # a new fetch: resumed, not redone
    assert flaky.ranges[0] == f"bytes={kept}-" and data.n_instances == 3 * 50 + 2
    assert sorted(p.name for p in cache.iterdir()) == ["poker-hand.arff.gz",
                                                       "poker-hand.source.json"]


@pytest.mark.parametrize("damage", ["truncated", "changed byte"])
def test_a_damaged_gzip_download_is_one_line_and_leaves_no_file(flaky, tmp_path, damage):
    row = ",".join(["2596", "51", "3", "258", "0", "510", "221", "232", "148", "6279"]
                   + ["1", "0", "0", "0"] + ["0"] * 40 + ["5"]) + "\n"
    good = gzip.compress((row * 200).encode())
    bad = good[: len(good) // 2] if damage == "truncated" else \
        good[:len(good) // 2] + bytes([good[len(good) // 2] ^ 0xFF]) + good[len(good) // 2 + 1:]
    flaky.files = {"/covtype/covtype.data.gz": bad}
    proc = subprocess.run([sys.executable, "-m", "workbench", "fetch", "covtype"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    error = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(error) == 1 and "not a whole gzip stream" in error[0], proc.stderr
    assert _cache_is_empty(tmp_path)
    flaky.files = {"/covtype/covtype.data.gz": good}
    assert load_dataset(fetch_mod.fetch("covtype")).n_instances == 200


def _zip(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_jmlr16_sources_kddcup_msd_and_linkage_over_http(tmp_path, monkeypatch):
    """The JMLR 2016 sets with a public UCI source, served locally in their formats: KDD
    Cup 99 (two gzipped files, 'label.'), YearPredictionMSD (a zipped CSV, year first) and
    record linkage (a zip of zipped CSV blocks with a header, '?' missing)."""
    root = tmp_path / "mirror"
    kdd = "0,tcp,http,SF,181,5450" + ",0" * 35 + ",normal.\n"
    kdd2 = "2,udp,private,SF,105,146" + ",1" * 35 + ",snmpgetattack.\n"
    (root / "kddcup99-mld").mkdir(parents=True)
    (root / "kddcup99-mld" / "kddcup.data.gz").write_bytes(gzip.compress((kdd * 2).encode()))
    (root / "kddcup99-mld" / "corrected.gz").write_bytes(gzip.compress(kdd2.encode()))
    msd = "2001," + ",".join(["0.5"] * 90) + "\n1922," + ",".join(["-1.25"] * 90) + "\n"
    (root / "00203").mkdir()
    (root / "00203" / "YearPredictionMSD.txt.zip").write_bytes(
        _zip({"YearPredictionMSD.txt": msd.encode()}))
    head = '"id_1","id_2","cmp_fname_c1","cmp_fname_c2","cmp_lname_c1","cmp_lname_c2",' \
        '"cmp_sex","cmp_bd","cmp_bm","cmp_by","cmp_plz","is_match"\n'
    block = {f"block_{i}.zip": _zip({f"block_{i}.csv": (
        head + f"{i},2,1,?,1,?,1,1,1,1,0,TRUE\n3,{i},0.25,?,0,?,1,0,1,0,?,FALSE\n").encode()})
        for i in (1, 2, 10)}
    (root / "00210").mkdir()
    (root / "00210" / "donation.zip").write_bytes(_zip(block))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setenv("WORKBENCH_FETCH_BASE", f"http://127.0.0.1:{httpd.server_port}/")
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    try:
        k = load_dataset(fetch_mod.fetch("kddcup"))
        assert k.n_instances == 3 and k.n_attributes == 41
        assert k.class_values == ("normal", "snmpgetattack") and k.y.tolist() == [0, 0, 1]
        assert k.attributes[1].values == ("tcp", "udp") and k.X[2, 0] == 2
        assert k.attributes[4].values is None and k.X[0, 4] == 181
        m = load_dataset(fetch_mod.fetch("msdyearprediction"))
        assert m.n_attributes == 90 and m.class_values == ("1922", "2001")
        assert m.y.tolist() == [1, 0] and m.X[1, 89] == -1.25
        link = load_dataset(fetch_mod.fetch("record-linkage"))
        assert link.n_instances == 6 and link.n_attributes == 11
        assert link.class_values == ("FALSE", "TRUE") and link.y.tolist() == [1, 0] * 3
        assert link.X[0, 0] == 1 and link.X[4, 0] == 10  # blocks in numeric order
        assert np.isnan(link.X[0, 3]) and link.attributes[3].has_missing
        line = "8.38 0 104 " + " ".join(["1.5"] * 50) + " NaN\n"
        (root / "00231").mkdir()
        (root / "00231" / "PAMAP2_Dataset.zip").write_bytes(_zip({
            "PAMAP2_Dataset/Protocol/subject101.dat": (line + line.replace(" 0 104", " 24 NaN",
                                                                           1)).encode(),
            "PAMAP2_Dataset/Optional/subject101.dat": line.replace(" 0 ", " 9 ").encode()}))
        pam = load_dataset(fetch_mod.fetch("pamap2"))
        assert pam.n_instances == 3 and pam.n_attributes == 53
        assert pam.class_values == ("0", "9", "24") and pam.y.tolist() == [0, 2, 1]
        assert np.isnan(pam.X[1, 1]) and pam.X[0, 1] == 104 and np.isnan(pam.X[0, 52])
        (root / "00210" / "donation.zip").write_bytes(b"not a zip")
        with pytest.raises(WorkbenchError, match="donation.zip: not a readable zip"):
            fetch_mod.fetch("record-linkage", force=True)
    finally:
        httpd.shutdown()


def _libsvm_digits(n: int, seed: int = 2) -> tuple[bytes, np.ndarray, np.ndarray]:
    """LIBSVM lines of n 784-pixel digits (sparse: absent pixels are 0) and their dense
    pixels and labels."""
    rng = np.random.default_rng(seed)
    dense = np.zeros((n, 784), dtype=np.uint8)
    labels = rng.integers(0, 10, n)
    lines = []
    for r in range(n):
        cols = np.sort(rng.choice(784, size=rng.integers(0, 40), replace=False))
        dense[r, cols] = rng.integers(1, 256, cols.size)
        lines.append(" ".join([str(labels[r])] + [f"{c + 1}:{dense[r, c]}" for c in cols]))
    return ("\n".join(lines) + "\n").encode(), dense, labels


def test_mnist8m_is_streamed_from_libsvm_bzip2_to_parquet(flaky, tmp_path, monkeypatch,
                                                          capsys):
    """mnist8m (LIBSVM's bzip2 file, 8.1 M rows in truth) is downloaded to disk, resumed
    after a cut, decompressed and parsed a block at a time into a Parquet file of 784
    uint8 pixel columns and the digit, which the search path then finds."""
    import bz2

    import pyarrow.parquet as pq

    text, dense, labels = _libsvm_digits(300)
    flaky.files = {"/multiclass/mnist8m.bz2": bz2.compress(text)}
    flaky.plan = ["cut"]
    monkeypatch.setattr(fetch_mod, "BLOCK_BYTES", 9000)  # several blocks, row groups
    path = fetch_mod.fetch("mnist8m")
    assert path == tmp_path / "cache" / "mnist8m.parquet"
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [
        "mnist8m.parquet", "mnist8m.source.json"]  # the download and temporary file gone
    assert flaky.ranges[1] is not None  # the cut transfer was resumed, on disk
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == 300 and meta.num_row_groups > 3
    data = load_dataset("mnist8m")  # found as <slug>.parquet on the search path
    assert data.n_attributes == 784 and data.attributes[0].name == "pixel1"
    assert data.attributes[783].values is None  # numeric, as in the paper (EF5 bins)
    np.testing.assert_array_equal(data.X, dense.astype(float))
    assert [int(data.class_values[c]) for c in data.y] == labels.tolist()
    info = json.loads((tmp_path / "cache" / "mnist8m.source.json").read_text())
    assert info["rows"] == 300 and info["files"] == ["multiclass/mnist8m.bz2"]
    assert "publishes no checksum" in capsys.readouterr().err


@pytest.mark.parametrize("damage", ["pixel 300", "label 12", "truncated"])
def test_a_bad_mnist8m_file_is_one_line_and_leaves_no_file(flaky, tmp_path, damage):
    import bz2

    text, _, _ = _libsvm_digits(50)
    if damage == "pixel 300":
        body = bz2.compress(text + b"3 5:300\n")
    elif damage == "label 12":
        body = bz2.compress(b"12 1:3\n" + text)
    else:
        body = bz2.compress(text)[:-40]
    flaky.files = {"/multiclass/mnist8m.bz2": body}
    want = {"pixel 300": "not a pixel value", "label 12": "label 12 is not one of",
            "truncated": "not a whole bzip2 stream"}[damage]
    with pytest.raises(WorkbenchError, match=f"fetch mnist8m: .*{want}"):
        fetch_mod.fetch("mnist8m")
    assert not [p for p in (tmp_path / "cache").iterdir()]  # nothing half-written
