"""docs/cluster.md's Slurm recipe, run as written (smaller numbers, a temporary scheduler
file) with stand-ins for Slurm's commands: `sbatch` runs the job script dask-jobqueue
writes here, in its own process group; `scancel` ends that group. The workers the jobs
start join the launcher's scheduler, and `workbench evaluate --cv --scheduler-file` on
them gives the per-fold results of one process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO

pytest.importorskip("distributed")
pytest.importorskip("dask_jobqueue")

SBATCH = """#!/bin/bash
# stand-in for Slurm's sbatch: the job script (its last argument) run here, in the background
script="${@: -1}"
id=$(( $(ls "$JOBS" | wc -l) + 1000 ))
cp "$script" "$JOBS/$id.sh"
setsid bash "$JOBS/$id.sh" > "$JOBS/$id.log" 2>&1 < /dev/null &
echo $! > "$JOBS/$id.pid"
echo "Submitted batch job $id"
"""
SCANCEL = """#!/bin/bash
for id in "$@"; do [ -f "$JOBS/$id.pid" ] && kill -- -"$(cat "$JOBS/$id.pid")" 2>/dev/null; done
exit 0
"""


def recipe(scheduler_file: Path) -> str:
    """The launcher of docs/cluster.md, with one job of two one-thread workers."""
    text = (REPO / "docs" / "cluster.md").read_text()
    code = re.search(r"```python\n(# cluster\.py.*?)```", text, re.S).group(1)
    small = (code.replace('cores=8, processes=8, memory="32GB"',
                          'cores=2, processes=2, memory="4GB"')
             .replace("cluster.scale(jobs=4)", "cluster.scale(jobs=1)")
             .replace("/shared/dask/scheduler.json", str(scheduler_file)))
    assert small.count(str(scheduler_file)) == 1 and "jobs=1" in small and "cores=2" in small
    return small


def test_the_slurm_recipe_runs_a_cross_validation_on_its_workers(tmp_path):
    jobs, bin_ = tmp_path / "jobs", tmp_path / "bin"
    jobs.mkdir()
    bin_.mkdir()
    for name, body in (("sbatch", SBATCH), ("scancel", SCANCEL), ("squeue", "#!/bin/bash\n")):
        (bin_ / name).write_text(body)
        (bin_ / name).chmod(0o755)
    sched = tmp_path / "scheduler.json"
    (tmp_path / "cluster.py").write_text(recipe(sched))
    env = dict(os.environ, PATH=f"{bin_}:{os.environ['PATH']}", JOBS=str(jobs),
               PYTHONPATH=str(REPO))
    launcher = subprocess.Popen([sys.executable, "cluster.py"], cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        from distributed import Client

        deadline = time.monotonic() + 90
        while not sched.is_file() and time.monotonic() < deadline:
            assert launcher.poll() is None, launcher.stderr.read().decode()[-2000:]
            time.sleep(0.2)
        with Client(scheduler_file=str(sched), timeout=60) as client:
            client.wait_for_workers(2, timeout=90)
        assert len(list(jobs.glob("*.sh"))) == 1  # one job, as scaled
        from test_outofcore_cv import _nominal
        from test_sources import _frame

        data = tmp_path / "nominal.parquet"
        _frame(_nominal(400)).to_parquet(data, index=False, row_group_size=50)
        cmd = [sys.executable, "-m", "workbench", "-q", "evaluate", "--learner", "A1DE",
               "--data", str(data), "--cv", "4", "--seed", "3"]
        here = subprocess.run(cmd, capture_output=True, text=True, env=env)
        there = subprocess.run(cmd + ["--scheduler-file", str(sched)], capture_output=True,
                               text=True, env=env)
        assert here.returncode == 0 and there.returncode == 0, here.stderr + there.stderr
        with Client(scheduler_file=str(sched), timeout=60) as client:  # it ran there
            done = client.run_on_scheduler(
                lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
        assert any("count_folds" in p for p in done) and any("score_folds" in p for p in done)
        a, b = json.loads(here.stdout), json.loads(there.stdout)
        assert a["n_test"] == b["n_test"] == 400 - sum(_nominal(400).y < 0)
        for key in ("zero_one_loss", "rmse", "log_loss"):
            assert b[key] == pytest.approx(a[key], rel=1e-12)
    finally:
        launcher.terminate()
        launcher.wait(timeout=30)
        for pid in jobs.glob("*.pid"):  # (the launcher's end may not reach scancel)
            subprocess.run(["bash", "-c", f'kill -- -"$(cat {pid})" 2>/dev/null'], env=env)
