"""`python -m workbench cv`: JSON summary, fold and prediction files, errors."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from workbench.__main__ import main
from workbench.data.dataset import Attribute, Dataset
from workbench.evaluation.splits import load_splits, make_splits, save_splits
from workbench.learners import registry
from workbench.learners.base import Learner

from conftest import shared_file


class CountingNB(Learner):
    """Tiny add-one naive Bayes over nominal attributes (a stand-in for the real NB)."""

    preprocessing = "none"

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha

    def fit(self, data):
        self._remember_header(data)
        k = data.n_classes
        codes = data.codes()
        self.prior_ = np.log(np.bincount(data.y, minlength=k) + self.alpha)
        self.tables_ = []
        for i, a in enumerate(data.attributes):
            t = np.full((a.cardinality, k), self.alpha)
            ok = codes[:, i] >= 0
            np.add.at(t, (codes[ok, i], data.y[ok]), 1)
            self.tables_.append(np.log(t / t.sum(axis=0)))
        return self

    def predict_proba(self, data):
        self._check_fitted(data)
        codes = data.codes()
        s = np.tile(self.prior_, (data.n_instances, 1))
        for i, t in enumerate(self.tables_):
            ok = codes[:, i] >= 0
            s[ok] += t[codes[ok, i]]
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        return p / p.sum(axis=1, keepdims=True)


def toy():
    rng = np.random.default_rng(1)
    n = 60
    y = rng.integers(0, 3, n)
    a = np.where(rng.random(n) < 0.7, y, rng.integers(0, 3, n)).astype(float)
    b = rng.integers(0, 2, n).astype(float)
    b[:4] = np.nan
    y[5] = -1
    return Dataset(
        name="toy",
        attributes=(Attribute("a", ("x", "y", "z")), Attribute("b", ("u", "v"))),
        class_attribute=Attribute("class", ("one", "two", "three")),
        X=np.column_stack([a, b]),
        y=y,
    )


@pytest.fixture
def stub(monkeypatch):
    import workbench.cli.cv as cli_cv

    monkeypatch.setattr(cli_cv, "load_data", lambda spec: toy())
    registry.register("TestCountingNB", CountingNB)
    yield
    registry.unregister("TestCountingNB")


def run_cli(capsys, *args):
    rc = main(["cv", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cv_prints_json_summary_and_writes_files(stub, capsys, tmp_path):
    folds, preds = tmp_path / "folds.csv", tmp_path / "pred.csv"
    rc, out, err = run_cli(capsys, "--learner", "TestCountingNB", "--data", "toy",
                           "--rounds", "3", "--folds", "2", "--seed", "7",
                           "--set", "alpha=0.5", "--folds-out", str(folds),
                           "--predictions-out", str(preds))
    assert rc == 0, err
    s = json.loads(out)
    assert (s["n_instances"], s["rounds"], s["folds"]) == (59, 3, 2)
    assert s["params"] == {"alpha": 0.5} and s["learner"] == "TestCountingNB"
    for key in ("zero_one_loss", "rmse", "rmse_true_class", "log_loss", "bias", "variance",
                "bias_weka_corrected", "train_cpu_seconds", "test_cpu_seconds",
                "train_wall_seconds", "test_wall_seconds", "zero_one_loss_std"):
        assert isinstance(s[key], float), key
    assert 0 <= s["zero_one_loss"] < 0.5
    assert math.isclose(s["bias"] + s["variance"], s["zero_one_loss"], abs_tol=1e-12)

    splits = load_splits(folds, n=59)
    assert np.array_equal(splits, make_splits(59, 3, 2, 7))

    with open(preds, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["round", "fold", "index", "actual", "predicted", "one", "two", "three"]
    assert len(rows) == 1 + 3 * 59
    data = toy().without_missing_class()
    wrong = 0
    for r in rows[1:]:
        rnd, fold, idx = int(r[0]), int(r[1]), int(r[2])
        assert splits[rnd, idx] == fold
        assert r[3] == data.class_values[data.y[idx]]
        p = np.array([float(v) for v in r[5:]])
        assert abs(p.sum() - 1) < 1e-12
        assert r[4] == data.class_values[int(np.argmax(p))]
        wrong += r[3] != r[4]
    assert wrong / (len(rows) - 1) == pytest.approx(s["zero_one_loss"], abs=1e-15)


def test_folds_in_reproduces_results(stub, capsys, tmp_path):
    f = tmp_path / "folds.csv"
    save_splits(make_splits(59, 2, 3, 11, stratify=False), f)
    rc, out, _ = run_cli(capsys, "--learner", "TestCountingNB", "--data", "toy",
                         "--folds-in", str(f))
    a = json.loads(out)
    rc2, out2, _ = run_cli(capsys, "--learner", "TestCountingNB", "--data", "toy",
                           "--rounds", "2", "--folds", "3", "--seed", "11", "--jobs", "2")
    b = json.loads(out2)
    assert rc == rc2 == 0
    assert (a["rounds"], a["folds"]) == (2, 3)
    for key in ("zero_one_loss", "rmse", "rmse_true_class", "log_loss", "bias", "variance"):
        assert a[key] == b[key]


@pytest.mark.parametrize(
    "extra,pattern",
    [
        (["--learner", "NoSuchLearner"], "unknown learner 'NoSuchLearner'"),
        (["--set", "alpha"], "expected KEY=VALUE"),
        (["--set", "nope=1"], "unknown parameter 'nope'"),
        (["--set", "alpha=fast"], "parameter 'alpha' must be float"),
        (["--folds", "1"], "folds must be >= 2"),
    ],
)
def test_errors_are_one_line(stub, capsys, extra, pattern):
    args = ["--learner", "TestCountingNB", "--data", "toy", "--rounds", "1"] + extra
    rc, out, err = run_cli(capsys, *args)
    assert rc == 2
    assert err.startswith("error: ") and pattern in err and err.count("\n") == 1


def test_bad_folds_in_file(stub, capsys, tmp_path):
    f = tmp_path / "folds.csv"
    save_splits(make_splits(58, 1, 2, 1), f)  # one instance short
    rc, _, err = run_cli(capsys, "--learner", "TestCountingNB", "--data", "toy",
                         "--folds-in", str(f))
    assert rc == 2 and "folds.csv" in err and "no row for index 58" in err
    save_splits(make_splits(59, 2, 2, 1), f)
    rc, _, err = run_cli(capsys, "--learner", "TestCountingNB", "--data", "toy",
                         "--folds-in", str(f), "--rounds", "3")
    assert rc == 2 and "--rounds 3 contradicts" in err
    rc, _, err = run_cli(capsys, "--learner", "TestCountingNB", "--data", "toy",
                         "--folds-in", str(f), "--stratify")
    assert rc == 2 and "--stratify cannot be combined" in err


def test_parse_value():
    from workbench.cli import parse_overrides

    def parse_value(text):
        return parse_overrides([f"k={text}"])["k"]

    assert parse_value("5") == 5 and parse_value("0.5") == 0.5
    assert parse_value("true") is True and parse_value("False") is False
    assert parse_value("null") is None and parse_value("ef:5") == "ef:5"
    assert parse_value("mi") == "mi"


def test_nb_on_house_votes(capsys):
    """Acceptance (small): the real NB on house-votes-84 (needs the data layer + learners)."""
    path = shared_file("house-votes-84")
    try:
        registry.get("NB")
    except Exception:
        pytest.skip("NB not registered yet")
    rc, out, err = run_cli(capsys, "--learner", "NB", "--data", str(path), "--rounds", "2")
    assert rc == 0, err
    s = json.loads(out)
    assert s["n_instances"] == 435 and (s["rounds"], s["folds"]) == (2, 2)
    assert 0.05 < s["zero_one_loss"] < 0.15  # NB on house-votes: about 10% error
    assert s["rmse"] == pytest.approx(s["rmse_true_class"], rel=1e-9)  # two classes


def test_cv_on_a_small_arff_file_imports_no_pyarrow_or_download_code():
    """A small run's process pays only for what it uses (about 0.2 s of CPU of imports
    otherwise): liac-arff reads iris, and the data catalog reaches the download code only
    to suggest `fetch` for a missing data set."""
    import subprocess
    import sys
    code = ("import sys; from workbench.__main__ import main; "
            "rc = main(['cv', '--learner', 'NB', '--data', 'iris', '--rounds', '1']); "
            "print(rc, sorted(m for m in ('pyarrow', 'pandas', 'workbench.data.fetch', "
            "'urllib.request') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.strip().split("\n")[-1] == "0 []", out.stdout + out.stderr
