"""The installable package: version, built-in configs and packaged reproductions by name,
results as DataFrames, -q/-v. (The wheel itself is built, installed in a fresh venv and run
from another directory by `.ci/wheel-smoke`.)"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import workbench
from workbench import resources
from workbench.errors import WorkbenchError

from conftest import REPO


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def test_version_single_sourced(tmp_path):
    proc = _cli("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == f"workbench {workbench.__version__}"
    text = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text and 'attr = "workbench.__version__"' in text
    assert 'name = "snb-workbench"' in text
    cff = (REPO / "CITATION.cff").read_text()
    assert f"version: {workbench.__version__}" in cff
    assert f"## {workbench.__version__}" in (REPO / "CHANGELOG.md").read_text()
    assert (REPO / "LICENSE").is_file() and (REPO / "workbench" / "py.typed").is_file()


def test_bundled_patterns_cover_what_configs_and_reports_read():
    """Every file a built-in config names (metric maps, published cells) is bundled."""
    tree = ast.parse((REPO / "setup.py").read_text())
    assert any(isinstance(n, ast.ClassDef) and n.name == "BuildWithData" for n in tree.body)
    bundled = {p for folder, pats in resources.BUNDLED_PATTERNS.items()
               for pat in pats for p in (REPO / folder).glob(pat)}
    assert set((REPO / "configs").glob("*.yaml")) <= bundled
    assert set((REPO / "datasets").glob("*.arff.gz")) <= bundled
    for run in resources.reproductions().values():
        for name in ("summary.csv", "config.yaml", "PUBLISHED"):
            assert run / name in bundled, run / name
    import yaml
    for cfg in (REPO / "configs").glob("*.yaml"):
        pa = (yaml.safe_load(cfg.read_text()).get("report") or {}).get("paper_agreement")
        if pa:
            mm = REPO / pa
            assert mm in bundled and mm.parent / yaml.safe_load(mm.read_text())["paper_wdl"] \
                in bundled, pa


def test_configs_and_reproductions_by_name(tmp_path):
    assert resources.config_path("smoke") == resources.CONFIGS / "smoke.yaml"
    assert "pakdd13" in resources.config_names()
    with pytest.raises(WorkbenchError, match="no built-in config of that name"):
        resources.config_path("nosuch")
    assert resources.run_dir_path("pakdd14-bv") == REPO / "experiments" / "pakdd14" / \
        "reproduction-bv"
    proc = _cli("report", "pakdd13", "--out", str(tmp_path / "r"), "--no-figures", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "r" / "report.md").is_file()
    proc = _cli("status", "salem-memory", cwd=tmp_path)
    assert proc.returncode == 0 and "pairs:" in proc.stdout
    proc = _cli("report", "nosuch", cwd=tmp_path)
    assert proc.returncode == 2 and "packaged reproduction" in proc.stderr


def test_quiet_and_verbose(tmp_path):
    quiet = _cli("-q", "run", "smoke", "--datasets", "iris", "--learners", "NB,A1DE",
                 "--output", str(tmp_path / "q"), cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    loud = _cli("run", "smoke", "-v", "--datasets", "iris", "--learners", "NB,A1DE,A2DE",
                "--output", str(tmp_path / "q"), "--no-report", cwd=tmp_path)
    assert loud.returncode == 0
    assert "complete: iris / A2DE (0-1 loss" in loud.stderr and "done in" in loud.stderr
    cv = _cli("cv", "-v", "--learner", "NB", "--data", "iris", "--rounds", "1", cwd=tmp_path)
    assert cv.stderr.count("round 0 fold") == 2 and cv.stdout.lstrip().startswith("{")


def test_load_results_tidy_frames(tmp_path):
    res = workbench.load_results("pakdd13")
    assert len(res.summary) == 68 * 11 and {"dataset", "learner", "zero_one_loss"} <= \
        set(res.summary.columns)
    assert list(res.folds.columns) == ["dataset", "learner", "round", "fold", "metric", "value"]
    assert res.predictions().empty and res.config["name"] == "pakdd13"
    proc = _cli("-q", "run", "smoke", "--datasets", "iris", "--learners", "NB",
                "--output", str(tmp_path / "r"), "--no-report", cwd=tmp_path)
    assert proc.returncode == 0
    own = workbench.load_results(tmp_path / "r")
    pred = own.predictions("iris", "NB")
    assert len(pred) == own.config["protocol"]["rounds"] * 150
    assert {"dataset", "learner", "round", "fold", "index", "y", "p_0", "p_2"} <= \
        set(pred.columns)
