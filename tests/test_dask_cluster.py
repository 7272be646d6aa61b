"""The runner on a Dask cluster whose workers are separate processes started elsewhere (a
scheduler file, as on a real cluster): the smoke config with its data directory given
relatively gives the same results as the local run, and a data file the workers cannot
see is refused before anything is computed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EMBEDDED, REPO
from test_runner import assert_same_results

pytest.importorskip("distributed")

SMOKE = """name: dask-smoke
datasets: [iris, labor]
protocol: {rounds: 2, folds: 2, seed: 1}
learners: [NB, A1DE-SW, A2DE, RF10]
output: out
"""


@pytest.fixture
def cluster(tmp_path):
    """`dask scheduler` + two `dask worker` processes, started in their own directory."""
    sched, procs = start_cluster(tmp_path / "cluster")
    yield sched
    stop(procs)


def stop(procs) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=30)


def start_cluster(home: Path, env: dict | None = None):
    """A scheduler (its file in `home`) and two one-thread workers: (scheduler file, procs)."""
    home.mkdir(parents=True, exist_ok=True)
    sched = home / "scheduler.json"
    sched.unlink(missing_ok=True)
    env = dict(env or os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                               "--scheduler-file", str(sched), "--port", "0",
                               "--dashboard-address", ":0", "--no-show"],
                              cwd=home, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    deadline = time.monotonic() + 60
    while not sched.is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    for _ in range(2):
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
             str(sched), "--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
            cwd=home, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    from distributed import Client
    with Client(scheduler_file=str(sched), timeout=60) as client:
        client.wait_for_workers(2, timeout=60)
    return sched, procs


def test_smoke_on_a_cluster_with_a_relative_data_directory(tmp_path, cluster, monkeypatch):
    work = tmp_path / "work"
    (work / "mydata").mkdir(parents=True)
    for slug in ("iris", "labor"):
        shutil.copy(EMBEDDED / f"{slug}.arff.gz", work / "mydata" / f"{slug}.arff.gz")
    (work / "smoke.yaml").write_text(SMOKE)
    env = dict(os.environ, WORKBENCH_DATA="mydata")  # relative to the runner's directory
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "workbench", "-q", "run", "smoke.yaml", "--no-report", *a],
        cwd=work, env=env, capture_output=True, text=True, timeout=900)
    local = run("--output", "local")
    assert local.returncode == 0, local.stderr
    remote = run("--output", "remote", "--backend", "dask", "--scheduler-file", str(cluster))
    assert remote.returncode == 0, remote.stderr
    assert_same_results(work / "local", work / "remote")
    # a data file the workers cannot see is refused up front (the check is handed one
    # path that exists nowhere, as a file on the runner's disk only would)
    (work / "elsewhere").mkdir()
    shutil.copy(EMBEDDED / "iris.arff.gz", work / "elsewhere" / "flowers.arff.gz")
    cfg = work / "hidden.yaml"
    cfg.write_text(SMOKE.replace("[iris, labor]", "[elsewhere/flowers.arff.gz]")
                   .replace("output: out", "output: hidden"))
    for hidden, said in (("{'path': '/no/such/file.arff'}",
                          "data file /no/such/file.arff is not visible on Dask worker"),
                         ("{'run_dir': '/no/such/run', 'out_of_core': (1, 1, True)}",
                          "run directory /no/such/run is not visible on Dask worker")):
        # (an out-of-core run's workers stream predictions into its run directory)
        proc = subprocess.run(
            [sys.executable, "-c", "import sys; sys.argv = ['workbench'] + sys.argv[1:];"
             "import workbench.experiment.workers as w; orig = w._check_visible;"
             f"w._check_visible = lambda c, t: orig(c, [type('T', (), {hidden})()] + list(t));"
             "from workbench.__main__ import main; sys.exit(main())",
             "run", str(cfg), "--backend", "dask", "--scheduler-file", str(cluster)],
            cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert said in proc.stderr
        assert not (work / "hidden" / "predictions").exists()


def test_a_lost_scheduler_is_one_line_and_the_run_resumes(tmp_path, plugin_file):
    """The scheduler killed mid-run: one error line, exit 2, the finished folds kept; the
    same command on a new cluster finishes the run, equal to a local run."""
    import signal

    work = tmp_path / "work"
    work.mkdir()
    (work / "c.yaml").write_text(
        f"name: lost\ndatasets: [iris, labor]\nplugins: [{plugin_file}]\n"
        "protocol: {rounds: 4, folds: 2, seed: 1}\nlearners: [RunStandIn]\noutput: out\n")
    slow = dict(os.environ, RUNSTANDIN_DELAY="0.7")
    sched, procs = start_cluster(tmp_path / "one", slow)
    cmd = [sys.executable, "-m", "workbench", "run", "c.yaml", "--no-report", "--backend",
           "dask", "--scheduler-file", str(sched)]
    run = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        deadline = time.monotonic() + 120
        while not list((work / "out").rglob("round-*.npz")) and time.monotonic() < deadline:
            time.sleep(0.2)
        procs[0].send_signal(signal.SIGKILL)  # the scheduler
        _, err = run.communicate(timeout=180)
    finally:
        stop(procs)
    assert run.returncode == 2, err
    assert "Traceback" not in err and "ERROR" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "the Dask scheduler (--scheduler-file" in lines[0] and \
        "was lost" in lines[0] and "re-run the same command to resume" in lines[0], err
    assert list((work / "out").rglob("round-*.npz")) or list((work / "out").rglob("*.parquet"))
    sched, procs = start_cluster(tmp_path / "two")
    try:
        again = subprocess.run(cmd[:-1] + [str(sched)], cwd=work, capture_output=True,
                               text=True, timeout=600)
    finally:
        stop(procs)
    assert again.returncode == 0, again.stderr
    local = subprocess.run(cmd[:5] + ["--output", "local"], cwd=work, capture_output=True,
                           text=True, timeout=600)
    assert local.returncode == 0, local.stderr
    assert_same_results(work / "local", work / "out")


def test_a_lost_scheduler_under_evaluate_cv_is_one_line(tmp_path):
    """`evaluate --cv --scheduler-file` with the scheduler killed mid-run: one error line
    naming the scheduler, exit 2, no traceback, no predictions file left behind."""
    import signal

    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(3)
    n = 40_000
    frame = pd.DataFrame({f"a{j}": pd.Categorical(rng.integers(0, 4, n).astype(str))
                          for j in range(8)})
    frame["class"] = pd.Categorical(rng.integers(0, 2, n).astype(str))
    data = tmp_path / "groups.parquet"
    frame.to_parquet(data, index=False, row_group_size=200)
    sched, procs = start_cluster(tmp_path / "c")
    out = tmp_path / "p.parquet"
    run = subprocess.Popen(
        [sys.executable, "-m", "workbench", "evaluate", "--learner", "A1DE", "--data",
         str(data), "--cv", "5", "--rounds", "50", "--scheduler-file", str(sched),
         "--predictions-out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(8)
        assert run.poll() is None, run.communicate()
        procs[0].send_signal(signal.SIGKILL)  # the scheduler
        _, err = run.communicate(timeout=180)
    finally:
        stop(procs)
    assert run.returncode == 2, err
    # (a cold kernel cache adds the "compiling numba kernels" notices: not errors)
    lines = [line for line in err.strip().splitlines()
             if line.strip() and not line.startswith("compiling numba kernels")]
    assert "Traceback" not in err and len(lines) == 1, err
    assert "the Dask scheduler (--scheduler-file" in lines[0] and "was lost" in lines[0]
    assert not out.exists() and not list(tmp_path.glob(".p.parquet*"))
