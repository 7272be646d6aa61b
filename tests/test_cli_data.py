"""`python -m workbench datasets` and `python -m workbench discretize`, run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import EMBEDDED, REPO
from workbench.data.arff import load_arff

IRIS = EMBEDDED / "iris.arff.gz"


def wb(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.pop("WORKBENCH_DATA", None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "workbench", *map(str, args)],
        capture_output=True, text=True, cwd=REPO, env=full_env, timeout=300,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    assert proc.returncode == 2, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_datasets_lists_the_catalog(tmp_path):
    proc = wb("datasets", "--data-dir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 + 71 + 1
    assert lines[-1] == "71 catalog entries, 14 found, 57 missing"
    iris = next(line for line in lines if line.startswith("iris "))
    assert "embedded" in iris and "150" in iris
    glass = next(line for line in lines if line.startswith("glass "))
    assert "7 (6 used)" in glass and "classes 7 vs 3" in glass
    covtype = next(line for line in lines if line.startswith("covtype "))
    assert "missing" in covtype


def test_datasets_no_load_with_env_dir(tmp_path):
    (tmp_path / "adult.arff").write_text("@relation a\n@attribute c {x}\n@data\nx\n")
    proc = wb("datasets", "--no-load", env={"WORKBENCH_DATA": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    adult = next(line for line in proc.stdout.splitlines() if line.startswith("adult "))
    assert str(tmp_path) in adult
    assert proc.stdout.strip().splitlines()[-1] == "71 catalog entries, 15 found, 56 missing"


def test_discretize_prints_cuts_json():
    proc = wb("discretize", "--train", IRIS, "--method", "mdl")
    assert proc.returncode == 0, proc.stderr
    cuts = json.loads(proc.stdout)
    assert cuts["sepallength"] == [5.55, 6.15]
    assert cuts["petalwidth"] == [0.8, 1.75]
    assert list(cuts) == ["sepallength", "sepalwidth", "petallength", "petalwidth"]


def test_discretize_writes_outputs(tmp_path):
    out_train, out_test, cuts = tmp_path / "tr.arff", tmp_path / "te.arff.gz", tmp_path / "c.json"
    proc = wb("discretize", "--train", IRIS, "--test", IRIS, "--method", "ef:3",
              "--cuts-json", cuts, "--out-train", out_train, "--out-test", out_test)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    data = json.loads(cuts.read_text())
    assert all(len(v) == 2 for v in data.values())
    tr, te = load_arff(out_train), load_arff(out_test)
    assert tr.is_all_nominal and te.is_all_nominal and tr.n_instances == 150
    assert tr.attributes == te.attributes
    assert len(tr.attributes[0].values) == 3


def test_discretize_bad_method_one_line():
    assert_one_line_error(wb("discretize", "--train", IRIS, "--method", "ef:0"), "--method")


def test_discretize_malformed_train_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.arff"
    bad.write_text("@relation r\n@attribute a numeric\n@attribute c {x,y}\n@data\n1,x\n2\n")
    out = tmp_path / "out.arff"
    proc = wb("discretize", "--train", bad, "--out-train", out)
    assert_one_line_error(proc, str(bad), "line 6", "expected 2 values, found 1")
    assert not out.exists()


def test_discretize_header_mismatch_writes_nothing(tmp_path):
    out_train, out_test = tmp_path / "tr.arff", tmp_path / "te.arff"
    proc = wb("discretize", "--train", IRIS, "--test", EMBEDDED / "pima.arff.gz",
              "--out-train", out_train, "--out-test", out_test)
    assert_one_line_error(proc, "header differs")
    assert list(tmp_path.iterdir()) == []


def test_discretize_missing_file_and_out_test_without_test(tmp_path):
    assert_one_line_error(wb("discretize", "--train", tmp_path / "nope.arff"), "no such file")
    assert_one_line_error(
        wb("discretize", "--train", IRIS, "--out-test", tmp_path / "x.arff"), "--test"
    )


@pytest.mark.parametrize("cmd", ["datasets", "discretize"])
def test_help(cmd):
    proc = wb(cmd, "--help")
    assert proc.returncode == 0 and "usage" in proc.stdout


def test_datasets_finds_a_parquet_file_and_reads_only_its_footer(tmp_path):
    """A data set converted to Parquet (`fetch`'s streamed sources, or by hand) is found by
    its slug and listed from the file's metadata: rows and columns, classes not counted."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1.0, 2.0, 3.0], "class": ["x", "y", "x"]}),
                   tmp_path / "covtype.parquet")
    proc = wb("datasets", "--data-dir", tmp_path)
    assert proc.returncode == 0, proc.stderr
    covtype = next(line for line in proc.stdout.splitlines() if line.startswith("covtype "))
    assert str(tmp_path) in covtype and "instances 3 vs 581012" in covtype
    assert "attributes 2 vs 55" in covtype
