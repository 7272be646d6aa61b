"""Every public source, without the internet: each recipe's original files (UCI's text
files, a .Z or tar.gz archive, OpenML's ARFF and its description) are made at test time from
the reference copy in ../shared, served by a local HTTP server, fetched and converted — the
content must be the reference's again (its content checksum). Then the failures: 404, a
truncated transfer resumed, wrong content refused in one line, a short file, an altered
OpenML file; and `datasets --verify` / `fetch --paper` / `fetch CONFIG` as a user runs them."""

from __future__ import annotations

import dataclasses
import functools
import gzip
import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from workbench.data import fetch as fetch_mod
from workbench.data import lzw
from workbench.data.arff import load_arff
from workbench.data.catalog import CATALOG, load_dataset, verify
from workbench.data.content import content_checksum
from workbench.data.recipes import NO_SOURCE, RECIPES, catalog_content
from workbench.errors import WorkbenchError

from conftest import REPO, SHARED_DATASETS, shared_file


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A local mirror (a folder served over HTTP); the cache in tmp_path."""
    root = tmp_path / "mirror"
    root.mkdir()
    handler = functools.partial(_Quiet, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setenv("WORKBENCH_FETCH_BASE", f"http://127.0.0.1:{httpd.server_port}/")
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("WORKBENCH_DATA", raising=False)
    yield root
    httpd.shutdown()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _publish(root: Path, files: dict[str, bytes]) -> None:
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(body)


def _cache_files(tmp_path) -> list[str]:
    cache = tmp_path / "cache"
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


@pytest.mark.parametrize("slug", sorted(s for s in RECIPES if s in catalog_content()))
def test_each_source_gives_the_reference_content(slug, mirror, tmp_path):
    reference = load_arff(shared_file(slug))
    recipe = RECIPES[slug]
    _publish(mirror, recipe.fixture(reference))
    path = fetch_mod.fetch(slug)
    assert path == tmp_path / "cache" / f"{slug}.arff.gz"
    got = load_dataset(slug)  # found through the cache
    assert content_checksum(got) == catalog_content()[slug]["checksum"] \
        == content_checksum(reference)
    record = json.loads((tmp_path / "cache" / f"{slug}.source.json").read_text())
    assert record["content"] == content_checksum(reference)
    assert set(record["sha256"]) == set(recipe.fixture(reference))
    assert _cache_files(tmp_path) == [f"{slug}.arff.gz", f"{slug}.source.json"]


def test_sources_without_a_reference_copy_check_their_documented_rows(mirror, tmp_path,
                                                                     monkeypatch):
    """musk2 (laid out as musk1) and soybean (OpenML's ARFF): no reference copy, so the
    rows the publisher documents are what is checked."""
    musk1 = load_arff(shared_file("musk1"))
    files = RECIPES["musk1"].fixture(musk1)
    _publish(mirror, {"musk/clean2.data.Z": files["musk/clean1.data.Z"]})
    with pytest.raises(WorkbenchError, match="gave 476 rows, the data set has 6,598: a "
                                             "short or altered file; nothing was written"):
        fetch_mod.fetch("musk2")
    assert _cache_files(tmp_path) == []
    monkeypatch.setitem(RECIPES, "musk2", dataclasses.replace(RECIPES["musk2"], rows=476))
    musk2 = load_dataset(fetch_mod.fetch("musk2"))
    assert np.array_equal(musk2.X, musk1.X) and np.array_equal(musk2.y, musk1.y)
    soy = load_arff(shared_file("audiology"))  # any nominal ARFF, served as OpenML 42
    recipe = dataclasses.replace(RECIPES["soybean"], rows=soy.n_instances)
    monkeypatch.setitem(RECIPES, "soybean", recipe)
    from workbench.data.recipes import OpenML

    _publish(mirror, OpenML(42, "soybean").fixture(
        __import__("workbench.data.tables", fromlist=["x"]).from_dataset(soy)))
    got = load_dataset(fetch_mod.fetch("soybean"))
    assert content_checksum(got.replace(name="audiology")) == content_checksum(soy)


def test_the_catalog_has_a_source_for_68_of_the_71_and_says_why_not_for_the_rest():
    slugs = {e.slug for e in CATALOG}
    sourced = {s for s in slugs if fetch_mod.has_source(s)}
    assert len(sourced) >= 68, sorted(slugs - sourced)
    assert slugs - sourced <= set(NO_SOURCE)  # every gap has its reason


@pytest.mark.shared
def test_the_catalog_facts_are_the_reference_copies():
    """content.json (rows, checksums, the text sources' headers) was computed from the
    reference copies: it still says what they hold."""
    for slug, entry in catalog_content().items():
        data = load_arff(shared_file(slug))
        assert (data.n_instances, content_checksum(data)) == (entry["rows"],
                                                               entry["checksum"]), slug
        if "header" in entry:
            assert entry["header"] == [[a.name, "numeric" if a.values is None
                                        else list(a.values)]
                                       for a in (*data.attributes, data.class_attribute)]


def test_wrong_content_is_refused_in_one_line_and_nothing_is_written(mirror, tmp_path):
    reference = load_arff(shared_file("iris"))
    files = RECIPES["iris"].fixture(reference)
    rel = next(r for r in files if r.endswith(".arff"))
    files[rel] = files[rel].replace(b"5.1,3.5,1.4,0.2", b"5.1,3.5,1.4,0.3", 1)
    desc = json.loads(files["api/v1/json/data/61"])
    desc["data_set_description"]["md5_checksum"] = __import__("hashlib").md5(
        files[rel]).hexdigest()
    files["api/v1/json/data/61"] = json.dumps(desc).encode()
    _publish(mirror, files)
    proc = subprocess.run([sys.executable, "-m", "workbench", "fetch", "iris"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    want = catalog_content()["iris"]["checksum"][3:15]
    assert "fetch iris: the content converted from https://www.openml.org/d/61 has " \
           "checksum" in errors[0] and f"the catalog's copy {want}" in errors[0] \
           and "nothing was written" in errors[0]
    assert _cache_files(tmp_path) == []  # not even the partial download


def test_an_altered_openml_file_fails_its_md5_and_a_wrong_id_its_name(mirror, tmp_path):
    files = RECIPES["labor"].fixture(load_arff(shared_file("labor")))
    rel = next(r for r in files if r.endswith(".arff"))
    files[rel] = files[rel][:-40]  # shorter than OpenML's MD5 says
    _publish(mirror, files)
    with pytest.raises(WorkbenchError, match=r"fetch labor: .*labor.arff: MD5 .* differs "
                                             "from the .* OpenML publishes"):
        fetch_mod.fetch("labor")
    desc = json.loads(files["api/v1/json/data/4"])
    desc["data_set_description"]["name"] = "something-else"
    _publish(mirror, {"api/v1/json/data/4": json.dumps(desc).encode()})
    with pytest.raises(WorkbenchError, match="OpenML data set 4 is 'something-else', "
                                             "expected 'labor'"):
        fetch_mod.fetch("labor")
    assert _cache_files(tmp_path) == []


def test_a_missing_file_is_one_line_naming_it(mirror, tmp_path):
    files = RECIPES["adult"].fixture(load_arff(shared_file("adult")))
    del files["adult/adult.test"]
    _publish(mirror, files)
    with pytest.raises(WorkbenchError, match=r"cannot download http://127\.0\.0\.1:\d+/"
                                             "adult/adult.test: HTTP 404"):
        fetch_mod.fetch("adult")
    assert _cache_files(tmp_path) == []


def test_a_damaged_compressed_file_is_one_line(mirror, tmp_path):
    files = RECIPES["musk1"].fixture(load_arff(shared_file("musk1")))
    body = bytearray(files["musk/clean1.data.Z"])
    body[len(body) // 2] ^= 0xFF
    files["musk/clean1.data.Z"] = bytes(body)
    _publish(mirror, files)
    with pytest.raises(WorkbenchError, match="fetch musk1: "):
        fetch_mod.fetch("musk1")
    assert _cache_files(tmp_path) == []


def test_poker_hand_checks_its_training_part_and_the_documented_rows(mirror, tmp_path,
                                                                      monkeypatch):
    reference = load_arff(shared_file("poker-hand"))
    train = "\n".join(",".join(reference.attributes[j].values[int(v)]
                               for j, v in enumerate(row)) + f",{reference.class_values[c]}"
                      for row, c in zip(reference.X, reference.y)) + "\n"
    test = "1,1,2,1,3,9,1,5,2,3,1\n" * 3
    _publish(mirror, {"poker/poker-hand-training-true.data": train.encode(),
                      "poker/poker-hand-testing.data": test.encode()})
    with pytest.raises(WorkbenchError, match="25,013 rows, the source has 1,025,010: "
                                             "a short or altered file; nothing was written"):
        fetch_mod.fetch("poker-hand")  # (a mirror whose testing file is short)
    assert _cache_files(tmp_path) == []
    src = fetch_mod.SOURCES["poker-hand"]
    monkeypatch.setitem(fetch_mod.SOURCES, "poker-hand", dataclasses.replace(src, rows=25013))
    path = fetch_mod.fetch("poker-hand")
    assert verify("poker-hand", path) == ("ok", "25,013 rows (its first 25,010 rows, the "
                                                "catalog's training part)")
    path.unlink()
    _publish(mirror, {"poker/poker-hand-training-true.data":
                      train.replace("9\n", "8\n", 1).encode()})
    with pytest.raises(WorkbenchError, match=r"\(its first 25,010 rows\) has checksum"):
        fetch_mod.fetch("poker-hand")


def test_lzw_reads_what_compress_writes(tmp_path):
    data = gzip.decompress(shared_file("shuttle").read_bytes())
    for maxbits in (10, 12, 16):
        assert lzw.decompress(lzw.compress(data, maxbits)) == data
    assert lzw.decompress(lzw.compress(b"")) == b""
    if shutil.which("gzip"):  # gzip reads .Z files: our writer's format is compress's
        z = tmp_path / "x.Z"
        z.write_bytes(lzw.compress(data))
        out = subprocess.run(["gzip", "-dc", str(z)], capture_output=True, timeout=60)
        assert out.returncode == 0 and out.stdout == data
    if shutil.which("compress"):  # and ours reads compress's own (with its clear codes)
        raw = np.random.default_rng(1).integers(0, 256, 300_000, dtype=np.uint8).tobytes()
        for payload in (data, raw):
            out = subprocess.run(["compress", "-c"], input=payload, capture_output=True,
                                 timeout=60)
            assert lzw.decompress(out.stdout) == payload
    with pytest.raises(WorkbenchError, match="not a compress"):
        lzw.decompress(b"plain text", "x.Z")


@pytest.mark.shared
def test_datasets_verify_says_ok_for_every_reference_copy_and_mismatch_for_another(
        tmp_path):
    dirs = [str(SHARED_DATASETS / "fetched"), str(SHARED_DATASETS / "registry")]
    env = {**__import__("os").environ, "WORKBENCH_DATA": ":".join(dirs),
           "WORKBENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "workbench", "datasets", "--verify"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "68 ok"
    assert sum(" ok " in ln for ln in lines) == 68 and "mismatch" not in proc.stdout
    # a copy of wine with one value changed, first on the path
    other = tmp_path / "mine"
    other.mkdir()
    data = load_arff(shared_file("wine"))
    X = data.X.copy()
    X[0, 0] += 0.1
    from workbench.data.arff import save_arff

    save_arff(data.replace(X=X), other / "wine.arff")
    env["WORKBENCH_DATA"] = ":".join([str(other), *dirs])
    proc = subprocess.run([sys.executable, "-m", "workbench", "datasets", "--verify"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 1
    (wine,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("wine ")]
    assert "mismatch" in wine and "the catalog's" in wine and str(other) in wine
    assert proc.stdout.splitlines()[-1] == "1 mismatch, 67 ok"


def test_fetch_a_config_gets_what_it_names_and_is_not_found(mirror, tmp_path):
    for slug in ("bupa", "zoo", "led"):
        _publish(mirror, RECIPES[slug].fixture(load_arff(shared_file(slug))))
    config = tmp_path / "mine.yaml"
    config.write_text("name: mine\ndatasets: [bupa, zoo, iris, led, chess]\n"
                      "learners: [NB]\n")
    import os

    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_DATA"}
    proc = subprocess.run([sys.executable, "-m", "workbench", "fetch", str(config)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "5 data sets: 2 fetched; 2 already found; 1 without a public source (chess)" \
        in proc.stderr  # iris and led are embedded
    assert _cache_files(tmp_path) == sorted(f"{s}.{x}" for s in ("bupa", "zoo")
                                            for x in ("arff.gz", "source.json"))


def test_the_not_found_line_names_the_fetch_command(tmp_path):
    config = tmp_path / "mine.yaml"
    config.write_text("name: mine\ndatasets: [iris, adult]\nlearners: [NB]\n"
                      "protocol: {rounds: 1, folds: 2}\n")
    import os

    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_DATA"}
    env["WORKBENCH_CACHE"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-m", "workbench", "run", "mine.yaml",
                           "--no-report"], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "not found in the search path: adult (download them: workbench fetch " \
           "mine.yaml; or add the folder holding your copies to $WORKBENCH_DATA)" \
           in proc.stderr
