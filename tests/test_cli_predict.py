"""`python -m workbench predict` and `python -m workbench learners`."""

from __future__ import annotations

import csv
import io
import subprocess
import sys

import numpy as np
import pytest

from workbench.__main__ import main

NUMERIC = """@relation num
@attribute x numeric
@attribute colour {red,green}
@attribute class {yes,no,maybe}
@data
{rows}
"""

NOMINAL = """@relation nom
@attribute a {p,q}
@attribute b {u,v,w}
@attribute class {yes,no}
@data
p,u,yes
p,v,yes
q,w,no
q,v,no
p,?,yes
q,u,no
?,w,no
"""


def numeric_rows(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        c = i % 2
        x = c * 2.0 + rng.normal(0, 0.5)
        col = "red" if (c == 0) ^ (rng.random() < 0.2) else "green"
        out.append(f"{x:.4f},{col if i % 9 else '?'},{('yes', 'no')[c]}")
    return "\n".join(out)


@pytest.fixture
def files(tmp_path):
    tr = tmp_path / "train.arff"
    te = tmp_path / "test.arff"
    tr.write_text(NUMERIC.replace("{rows}", numeric_rows(60, 0)))
    te.write_text(NUMERIC.replace("{rows}", numeric_rows(15, 1)))
    nom = tmp_path / "nom.arff"
    nom.write_text(NOMINAL)
    bad = tmp_path / "bad.arff"
    two_class = NUMERIC.replace("{yes,no,maybe}", "{yes,no}")
    bad.write_text(two_class.replace("{rows}", numeric_rows(5, 2)))
    return {"train": str(tr), "test": str(te), "nom": str(nom), "bad": str(bad),
            "dir": tmp_path}


def run_cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def parse(text):
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("learner", ["NB", "A1DE", "A2DE-SW", "RF10"])
def test_predict_csv(capsys, files, learner):
    code, out, err = run_cli(capsys, "predict", "--learner", learner, "--train", files["train"],
                             "--test", files["test"])
    assert code == 0, err
    rows = parse(out)
    assert rows[0] == ["index", "actual", "predicted", "yes", "no", "maybe"]
    assert len(rows) == 16
    for i, r in enumerate(rows[1:]):
        assert int(r[0]) == i
        assert r[1] in ("yes", "no") and r[2] in ("yes", "no", "maybe")
        p = [float(v) for v in r[3:]]
        assert abs(sum(p) - 1) < 1e-12
        assert r[2] == ("yes", "no", "maybe")[int(np.argmax(p))]
        assert all(repr(float(v)) == v for v in r[3:])


def test_predict_matches_library_and_set(capsys, files):
    from workbench.cli.predict import predict_rows
    from workbench.data.arff import load_arff

    tr, te = load_arff(files["train"]), load_arff(files["test"])
    _, _, want = predict_rows("A1DE", tr, te, params={"m": 0.5})
    code, out, _ = run_cli(capsys, "predict", "--learner", "A1DE", "--train", files["train"],
                           "--test", files["test"], "--set", "m=0.5")
    assert code == 0
    got = np.array([[float(v) for v in r[3:]] for r in parse(out)[1:]])
    np.testing.assert_array_equal(got, want)
    _, _, default = predict_rows("A1DE", tr, te)
    assert not np.allclose(default, want)


def test_predict_nominal_no_discretisation_and_out_file(capsys, files):
    out_file = files["dir"] / "p.csv"
    code, out, err = run_cli(capsys, "predict", "--learner", "A1DE-S", "--train", files["nom"],
                             "--test", files["nom"], "--discretize", "none", "--out",
                             str(out_file))
    assert code == 0 and out == ""
    rows = parse(out_file.read_text())
    assert rows[0] == ["index", "actual", "predicted", "yes", "no"] and len(rows) == 8


@pytest.mark.parametrize("extra, pattern", [
    (["--learner", "A9DE"], "unknown learner 'A9DE'"),
    (["--learner", "A1DE", "--set", "m=abc"], "parameter 'm' must be float"),
    (["--learner", "A1DE", "--set", "k=2"], "unknown parameter 'k'"),
    (["--learner", "A1DE", "--set", "m"], "expected KEY=VALUE"),
    (["--learner", "A1DE", "--discretize", "none"], "numeric attribute"),
    (["--learner", "A1DE", "--discretize", "ef:x"], "unknown discretisation method"),
])
def test_errors_are_one_line(capsys, files, extra, pattern):
    code, out, err = run_cli(capsys, "predict", "--train", files["train"], "--test",
                             files["test"], *extra)
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1 and pattern in err
    assert "Traceback" not in err


def test_header_mismatch(capsys, files):
    for learner in ("A1DE", "RF10"):
        code, _, err = run_cli(capsys, "predict", "--learner", learner, "--train",
                               files["train"], "--test", files["bad"])
        assert code == 2 and "header differs" in err and err.count("\n") == 1


def test_subprocess_error_has_no_traceback(files):
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "predict", "--learner", "NB", "--train",
         files["train"], "--test", files["bad"]],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


def test_learners_listing(capsys):
    code, out, _ = run_cli(capsys, "learners")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["name", "preprocessing", "source"]
    names = {ln.split()[0] for ln in lines[1:]}
    assert {"NB", "A1DE", "A1DE-S", "A1DE-W", "A1DE-SW", "A2DE", "A2DE-S", "A2DE-W", "A2DE-SW",
            "A3DE", "RF10"} <= names
    a2sw = next(ln for ln in lines if ln.startswith("A2DE-SW "))
    assert "mdl" in a2sw and "subsumption=100" in a2sw and "weighting='mi'" in a2sw
    rf = next(ln for ln in lines if ln.startswith("RF10 "))
    assert " none " in rf and "n_trees=10" in rf and "weka_version" in rf
    code, out, _ = run_cli(capsys, "learners", "--format", "csv")
    rows = parse(out)
    assert rows[0] == ["name", "parameters", "preprocessing", "source", "description"]
