"""docs/adding-a-learner.md, executed end to end outside the package (issue: plugins).

Every ```bash block is run and every ```LANG file=NAME block is written, in document order,
in a temporary directory; then the report tables must show the plugin learner.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from conftest import REPO

TUTORIAL = REPO / "docs" / "adding-a-learner.md"
BLOCK = re.compile(r"^```(\w+)(?:[ \t]+file=(\S+))?[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def tutorial_script() -> str:
    """The tutorial as one bash script: file blocks become here-documents."""
    parts = []
    for lang, name, body in BLOCK.findall(TUTORIAL.read_text(encoding="utf-8")):
        if name:
            parts.append(f"cat > {name} <<'WORKBENCH_TUTORIAL_EOF'\n{body}WORKBENCH_TUTORIAL_EOF")
        elif lang == "bash":
            parts.append(body)
    return "\n".join(parts)


def _env() -> dict:
    env = dict(os.environ, WORKBENCH_REPO=str(REPO))
    env.pop("WORKBENCH_DATA", None)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def test_tutorial_runs_end_to_end(tmp_path):
    script = tutorial_script()
    assert "file=" not in script and "laplace_nb.py" in script and "my-smoke.yaml" in script
    assert "check_learner" in script and "register_metric" in script
    assert "register_protocol" in script and "register_section" in script
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = tmp_path / "my-experiment" / "results" / "my-smoke"
    assert not str(run_dir.resolve()).startswith(str(REPO))  # outside the package
    assert "LaplaceNB" in proc.stdout
    assert "2 passed" in proc.stdout  # the contract suite, run by the reader's own pytest

    wdl = pd.read_csv(run_dir / "report" / "tables" / "wdl.csv")
    ours = wdl[(wdl["row"] == "LaplaceNB") | (wdl["col"] == "LaplaceNB")]
    assert {"NB", "A1DE", "A1DE-m0.5", "A2DE", "LaplaceNB-0.1"} <= set(ours["row"]) | set(
        ours["col"])
    assert set(wdl["metric"]) >= {"zero_one_loss", "rmse", "bias", "variance",
                                  "balanced_accuracy"}
    # 4 data sets per comparison on the 'all' collection
    all_rows = ours[(ours["collection"] == "all") & (ours["metric"] == "zero_one_loss")]
    assert ((all_rows["wins"] + all_rows["draws"] + all_rows["losses"]) == 4).all()
    report = (run_dir / "report" / "report.md").read_text()
    assert "LaplaceNB-0.1" in report
    assert "Higher is better for" in report and "Balanced accuracy" in report
    summary = pd.read_csv(run_dir / "summary.csv")
    assert summary["balanced_accuracy"].between(0, 1).all()

    # section 8: against PAKDD 2013's learners, only LaplaceNB computed
    vs = pd.read_csv(tmp_path / "my-experiment" / "results" / "vs-pakdd13" / "compare" /
                     "pakdd13.csv")
    assert set(vs["row"]) == {"LaplaceNB"} and len(set(vs["col"])) == 11
    assert ((vs["wins"] + vs["draws"] + vs["losses"])[vs["collection"] == "all"] == 4).all()
    assert "| LaplaceNB | " in proc.stdout
    mine = tmp_path / "my-experiment" / "results" / "my-pakdd13"
    last = json.loads((mine / "metadata.json").read_text())["invocations"][-1]
    assert last["pairs_from_baselines"] == 3 * 4  # NB, AODE, A2DE-SW on four data sets
    assert last["folds_run"] == 4 * 4 * 40  # LaplaceNB and its three variants
    assert "12 pair(s) copied from baselines" in proc.stdout
    report = (mine / "report" / "report.md").read_text()
    assert "### LaplaceNB-alpha: alpha" in report
    # section 9: a plugin protocol and a plugin section, the report re-rendered by `report`
    extras = tmp_path / "my-experiment" / "results" / "my-extras"
    assert set(pd.read_csv(extras / "summary.csv")["folds"]) == {1}
    assert "## Lowest 0-1 loss per data set" in (extras / "report" / "report.md").read_text()
    assert "- iris: " in proc.stdout


@pytest.mark.parametrize("plugin_text, expected", [
    ("raise ImportError('no such thing')\n", "failed to import"),
    ("from workbench import Learner, register\n"
     "@register('NB')\nclass Clash(Learner):\n    pass\n", "registered twice"),
])
def test_bad_plugin_stops_before_anything_is_written(tmp_path, plugin_text, expected):
    (tmp_path / "bad.py").write_text(plugin_text)
    (tmp_path / "c.yaml").write_text(
        "name: bad\ndatasets: [iris]\nprotocol: {rounds: 1, folds: 2}\n"
        "plugins: [bad.py]\nlearners: [NB]\noutput: out\n")
    proc = subprocess.run([sys.executable, "-m", "workbench", "run", "c.yaml"], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "bad.py" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
