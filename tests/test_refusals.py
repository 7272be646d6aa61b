"""Refusals before work and output checks everywhere (issue 58): a learner's output is
checked by `predict` as by `run`; a learner that cannot run here (a missing jar or package,
an option its engine refuses, a learner that cannot train out of core) and an absurd size
are one line before any directory is made; a disk that fills mid-run exits 3; data edge
cases (a many-valued integer class, inf in a CSV, a CSV whose `class` column is not
last) get a warning or a clear error."""

from __future__ import annotations

import errno
import subprocess
import sys

import numpy as np
import pytest

from workbench import store
from workbench.__main__ import main
from workbench.data.sources import load_table
from workbench.errors import WorkbenchError

from conftest import EMBEDDED, REPO
from test_runner import make_config, run_cli, stored_fold_count


def _one_line(err: str, *parts: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@pytest.mark.parametrize("bad, what", [("nan", "non-finite probability"),
                                       ("unnormalised", "sums to"),
                                       ("extra", "returned shape (150, 4), expected (150, 3)"),
                                       ("transposed", "returned shape (3, 150)")])
def test_predict_checks_what_the_learner_returns(plugin_file, bad, what):
    iris = str(EMBEDDED / "iris.arff.gz")
    proc = subprocess.run([sys.executable, "-m", "workbench", "predict", "--plugin",
                           str(plugin_file), "--learner", "RunStandIn", "--set", f"bad='{bad}'",
                           "--train", iris, "--test", iris], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    _one_line(proc.stderr, "learner 'RunStandIn'", what)


def test_the_sklearn_wrapper_checks_what_the_learner_returns(plugin_file):
    from workbench.plugins import load_plugins
    from workbench.sklearn import classifier

    load_plugins([str(plugin_file)])
    X = np.random.default_rng(0).random((30, 3))
    y = np.array([0, 1, 2] * 10)
    good = classifier("RunStandIn").fit(X, y).predict_proba(X)
    assert np.allclose(good.sum(axis=1), 1.0)
    clf = classifier("RunStandIn")
    clf.set_params(bad="nan")
    with pytest.raises(ValueError, match="non-finite probability"):
        clf.fit(X, y).predict_proba(X)


def _refused(tmp_path, capsys, text: str, *parts: str) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    out = tmp_path / "run"
    assert main(["run", str(cfg), "--output", str(out), "--no-report"]) == 2
    _one_line(capsys.readouterr().err, *parts)
    assert not out.exists()  # refused before the run directory is made


def test_a_weka_jar_that_is_not_there_is_refused_before_any_fold(tmp_path, capsys):
    _refused(tmp_path, capsys, "name: w\ndatasets: [iris]\nprotocol: {rounds: 1, folds: 2}\n"
             "learners:\n  W: {learner: weka, jar: /nowhere/weka.jar}\n",
             "learners: W", "the 'jar' parameter names /nowhere/weka.jar, which is not a file")


@pytest.mark.skipif(not __import__("os").path.isfile("/usr/share/java/weka.jar")
                    or __import__("shutil").which("java") is None
                    or __import__("importlib").util.find_spec("jpype") is None,
                    reason="needs Java, JPype1 and Debian's weka (apt-get install weka)")
@pytest.mark.parametrize("spec, what", [
    ("{learner: weka, scheme: weka.classifiers.bayes.Nope}",
     "no class weka.classifiers.bayes.Nope in"),
    ("{learner: weka, scheme: weka.classifiers.bayes.NaiveBayes, options: '-Z 3'}",
     "Illegal options: -Z 3"),
])
def test_a_weka_class_or_option_weka_refuses_is_refused_before_the_run(tmp_path, capsys,
                                                                       spec, what):
    _refused(tmp_path, capsys, "name: w\ndatasets: [iris]\nprotocol: {rounds: 1, folds: 2}\n"
             f"learners:\n  W: {spec}\n", "learners: W", what)


def test_a_learner_that_cannot_train_out_of_core_is_refused_before_the_run(tmp_path,
                                                                          capsys):
    _refused(tmp_path, capsys, "name: o\ndatasets: [iris]\nprotocol: {rounds: 1, folds: 2}\n"
             "out_of_core: true\nlearners: [NB, RF10]\n",
             "learners: RF10", "trains in memory only")


def test_a_missing_optional_package_is_refused_before_the_run(tmp_path, capsys,
                                                             monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "vowpalwabbit" else real(name, *a))
    _refused(tmp_path, capsys, "name: v\ndatasets: [iris]\nprotocol: {rounds: 1, folds: 2}\n"
             "learners: [NB, VWLF]\n", "learners: VWLF", "needs Vowpal Wabbit")


def test_an_invalid_sklearn_parameter_is_refused_before_the_run(tmp_path, capsys):
    _refused(tmp_path, capsys, "name: s\ndatasets: [iris]\nprotocol: {rounds: 1, folds: 2}\n"
             "learners:\n  LR: {learner: sklearn, estimator: "
             "sklearn.linear_model.LogisticRegression, params: {C: -1}}\n",
             "learners: LR", "'C' parameter of LogisticRegression")


def test_absurd_rounds_are_one_line(tmp_path, capsys):
    _refused(tmp_path, capsys, "name: r\ndatasets: [iris]\n"
             "protocol: {rounds: 100000000, folds: 2}\nlearners: [NB]\n",
             "protocol.rounds: 100,000,000 is more than the 10,000 a run takes")


def test_a_disk_that_fills_mid_run_exits_3_and_keeps_what_was_stored(tmp_path, plugin_file,
                                                                     capsys, monkeypatch):
    """The store's own atomic writes (not an OSError raised past them) report a full
    disk: exit 3, the folds stored before kept, and a re-run resumes."""
    import tempfile

    from workbench import fileio

    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    out = tmp_path / "run"
    real = tempfile.mkstemp
    folds = []

    def full(*args, **kw):
        if ".npz." in kw.get("prefix", ""):
            folds.append(1)
            if len(folds) > 3:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kw)

    monkeypatch.setattr(fileio.tempfile, "mkstemp", full)
    assert run_cli(str(cfg), "--output", str(out)) == 3
    _one_line(capsys.readouterr().err, "cannot write", "No space left on device",
              "the 3 fold(s) stored before are kept")
    assert stored_fold_count(out) == 3
    monkeypatch.setattr(fileio.tempfile, "mkstemp", real)
    assert run_cli(str(cfg), "--output", str(out)) == 0  # resumes
    assert stored_fold_count(out) == 8


def test_a_many_valued_integer_class_is_warned_of(tmp_path):
    from workbench.data.checks import data_warnings

    rng = np.random.default_rng(0)
    path = tmp_path / "prices.csv"
    rows = ["x,price"] + [f"{rng.random():.3f},{v}" for v in rng.permutation(300) + 1000]
    path.write_text("\n".join(rows[:251] + rows[1:51]) + "\n")  # 250 values in 300 rows
    data = load_table(path)
    (warning,) = [w for w in data_warnings(data) if "distinct" in w]
    assert "class 'price' has 250 distinct values in 300 labelled rows" in warning
    assert not data_warnings(load_table(EMBEDDED / "iris.arff.gz"))  # 3 classes: nothing


def test_inf_in_a_csv_number_column_is_refused_as_in_arff(tmp_path):
    path = tmp_path / "inf.csv"
    path.write_text("a,b,class\n1,2,x\n3,inf,y\n5,6,x\n")
    with pytest.raises(WorkbenchError, match=r"inf.csv: column 'b' holds inf \(in 1 row"
                                             r"\(s\)\); numbers must be finite"):
        load_table(path)


def test_a_csv_column_named_class_is_the_class_wherever_it_stands(tmp_path):
    path = tmp_path / "first.csv"
    path.write_text("class,a,b\nx,1,2\ny,3,4\nx,5,6\n")
    data = load_table(path)
    assert data.class_attribute.name == "class" and data.class_values == ("x", "y")
    assert [a.name for a in data.attributes] == ["a", "b"]
    assert data.X.tolist() == [[1, 2], [3, 4], [5, 6]] and data.y.tolist() == [0, 1, 0]


def test_a_resume_recomputes_folds_of_another_learner_output_version(tmp_path, plugin_file,
                                                                     capsys, monkeypatch):
    """Folds stored by another output version of the learner (as a commit that changes
    its probabilities bumps it) are recomputed on resume, one line per pair; the summary
    then equals a fresh run's, and the metadata lists both invocations with what ran
    them."""
    import json

    from test_runner import assert_same_results, full_disk_after

    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    out = tmp_path / "run"
    real = store.write_fold
    full_disk_after(monkeypatch, 3, out)
    assert run_cli(str(cfg), "--output", str(out)) == 3
    monkeypatch.setattr(store, "write_fold", real)
    folds = sorted((out / store.PREDICTIONS).rglob("*.npz"))
    assert len(folds) == 3
    for path in folds:  # as if made by version 0 of the learner
        rec = store.read_fold(path)
        assert rec[store.VERSION_KEY] == 1 and rec[store.CODE_KEY]
        rec[store.VERSION_KEY] = 0
        pair = path.parent
        real(out, pair.parent.name, pair.name, rec)
    capsys.readouterr()
    assert run_cli(str(cfg), "--output", str(out)) == 0
    err = capsys.readouterr().err
    stale = [ln for ln in err.splitlines() if ln.startswith("stale: ")]
    assert len(stale) == len({p.parent for p in folds})  # one line per pair
    assert "computed by output version 0 of the learner, now 1" in stale[0]
    fresh = tmp_path / "fresh"
    assert run_cli(str(cfg), "--output", str(fresh)) == 0
    assert_same_results(out, fresh)
    meta = json.loads((out / "metadata.json").read_text())
    assert len(meta["invocations"]) == 2
    for inv in meta["invocations"]:
        prov = inv["provenance"]
        assert prov["workbench_version"] and prov["cpu_model"] is not None
        assert prov["memory_bytes"] is None or prov["memory_bytes"] > 0


@pytest.mark.parametrize("damage", ["deleted", "truncated", "swapped"])
def test_a_damaged_predictions_file_is_found_by_status_verify_and_by_a_resume(
        tmp_path, plugin_file, capsys, damage):
    from test_runner import assert_same_results

    cfg = make_config(tmp_path, plugin_file, datasets=("iris", "labor"))
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 0
    assert main(["status", str(out), "--verify"]) == 0
    assert "verified: 4 pair(s) match the files their summaries recorded, 0 do not" in \
        capsys.readouterr().out
    a = store.parquet_path(out, "iris", "S")
    b = store.parquet_path(out, "iris", "S-half")  # the same rows: only the checksum tells
    if damage == "deleted":
        a.unlink()
    elif damage == "truncated":
        a.write_bytes(a.read_bytes()[: a.stat().st_size // 2])
    else:
        data_a, data_b = a.read_bytes(), b.read_bytes()
        a.write_bytes(data_b)
        b.write_bytes(data_a)
    assert main(["status", str(out), "--verify"]) == 1
    text = capsys.readouterr().out
    assert "corrupt: iris / S: " in text and ("1 do not" in text or "2 do not" in text)
    capsys.readouterr()
    assert run_cli(str(cfg), "--output", str(out)) == 0  # a resume recomputes it
    err = capsys.readouterr().err
    assert f"corrupt: {a}" in err and "recomputing iris / S" in err
    fresh = tmp_path / "fresh"
    assert run_cli(str(cfg), "--output", str(fresh)) == 0
    assert_same_results(out, fresh)
    assert main(["status", str(out), "--verify"]) == 0


def test_invocations_under_other_code_are_listed_by_status_and_the_report(tmp_path,
                                                                          plugin_file):
    import json

    from workbench.experiment.provenance import describe, invocation_lines

    meta = {"invocations": [
        {"started": "2026-01-01T00:00:00", "provenance": {
            "workbench_version": "1.0", "git": {"commit": "a" * 40, "dirty": False},
            "cpu_model": "CPU one"}},
        {"started": "2026-02-01T00:00:00", "provenance": {
            "workbench_version": "1.1", "git": {"commit": "b" * 40, "dirty": True},
            "cpu_model": "CPU two"}}]}
    lines = invocation_lines(meta)
    assert lines[0] == "made by 2 invocations under 2 code versions or machines:"
    assert lines[1] == "  2026-01-01T00:00:00: workbench 1.0 (git aaaaaaaaaaaa) on CPU one"
    assert lines[2] == ("  2026-02-01T00:00:00: workbench 1.1 (git bbbbbbbbbbbb, changed) "
                        "on CPU two")
    assert lines[0] in describe(meta)
    same = {"invocations": [meta["invocations"][0], meta["invocations"][0]]}
    assert invocation_lines(same) == []
    from workbench.report.context import run_warnings

    (tmp_path / "metadata.json").write_text(json.dumps({**meta, "invocation_notes": lines}))
    (note,) = run_warnings(tmp_path)
    assert note.startswith("made by 2 invocations") and "on CPU two" in note


def test_running_out_of_memory_is_one_line(monkeypatch, capsys):
    """A cap on memory or address space (prlimit --as, a cluster's limit) met mid-way is
    one line, exit 2, not numpy's traceback."""
    from workbench.cli import cv

    def hungry(args):
        raise MemoryError("Unable to allocate 40.1 MiB for an array with shape (250000, 21)")

    monkeypatch.setattr(cv, "run", hungry)
    assert main(["cv", "--learner", "NB", "--data", "iris"]) == 2
    line = _one_line(capsys.readouterr().err, "out of memory (Unable to allocate 40.1 MiB")
    assert "chunk_rows" in line
