"""Extension seams from one plugin file: a metric, an evaluation protocol and a report
section; `workbench report RUN` in a fresh process loads the plugins the run recorded, so
the plugin's metric and section are in the report."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]

PLUGIN = textwrap.dedent('''
    """A plugin: top-2 error, a first-half/second-half protocol and a section."""
    from dataclasses import dataclass
    from typing import ClassVar

    import numpy as np

    from workbench import register_metric, register_protocol, register_section
    from workbench.evaluation.metrics import Metric
    from workbench.evaluation.protocols import FoldSpec, Protocol


    def top2_error(proba, y):
        """Share of rows whose class is not among the two most probable."""
        top = np.argsort(-proba, axis=1, kind="stable")[:, :2]
        return float(np.mean(~(top == np.asarray(y)[:, None]).any(axis=1)))


    register_metric(Metric("top2_error", "Top-2 error", "pooled", per_fold=True,
                           compute=top2_error))


    @register_protocol
    @dataclass(frozen=True)
    class EveryOther(Protocol):
        """Train on the even rows, test on the odd ones (file order)."""

        seed: int = 1
        kind: ClassVar[str] = "every_other"
        repeats: ClassVar[bool] = False

        @property
        def rounds(self):
            return 1

        def plan(self, n, labels=None):
            return {(0, 0): FoldSpec(0, 0, np.arange(0, n, 2), np.arange(1, n, 2))}

        def fold_sizes(self, n, round_):
            return (n + 1) // 2, n // 2

        def to_dict(self):
            return {"type": self.kind, "seed": self.seed}


    def section(ctx, doc):
        doc.add("## Plugin section", f"The plugin saw {len(ctx.data)} pairs.")


    register_section("plugin-section", section)
''')


def _workbench(*args, cwd):
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def test_a_plugin_metric_protocol_and_section_reach_the_run_and_its_report(tmp_path):
    (tmp_path / "plugin.py").write_text(PLUGIN)
    (tmp_path / "c.yaml").write_text(
        "name: seams\ndatasets: [iris, labor]\nplugins: [plugin.py]\n"
        "protocol: {type: every_other}\nlearners: [NB]\noutput: run\n")
    # two worker processes: a task's plugin protocol unpickles there once the plugin is
    # loaded (a worker died of it before)
    done = _workbench("run", "c.yaml", "--no-report", "-q", "--jobs", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = pd.read_csv(tmp_path / "run" / "summary.csv")
    assert list(summary["n_instances"]) == [150, 57] or set(summary["dataset"]) == {"iris",
                                                                                 "labor"}
    assert summary["top2_error"].notna().all() and set(summary["folds"]) == {1}
    # a fresh process: only the run's recorded plugins make the metric and section known
    report = _workbench("report", "run", "--no-figures", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    md = (tmp_path / "run" / "report" / "report.md").read_text()
    assert "Top-2 error" in md
    assert "## Plugin section" in md and "The plugin saw 2 pairs." in md
    # the protocol's config keys are its dataclass fields
    (tmp_path / "bad.yaml").write_text(
        "name: bad\ndatasets: [iris]\nplugins: [plugin.py]\n"
        "protocol: {type: every_other, window: 3}\nlearners: [NB]\noutput: bad\n")
    bad = _workbench("run", "bad.yaml", cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "protocol.window: unknown key for a every_other protocol (allowed: type, seed" \
        in bad.stderr
