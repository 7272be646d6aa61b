"""The experiment runner end to end on embedded data with a tiny stand-in learner.

The stand-in is loaded as a config plugin (a .py file), so worker processes (loky, Dask)
and `python -m workbench` subprocesses register it too. Setting ``RUNSTANDIN_DELAY``
(seconds) slows every fit down, which lets a test kill a run midway.
"""

from __future__ import annotations

import importlib.machinery
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from workbench.evaluation.metrics import is_measurement
from workbench.__main__ import main
from workbench import store
from workbench.experiment import runner
from workbench.experiment.config import load_config
from workbench.experiment.progress import Progress

REPO = Path(__file__).resolve().parents[1]

METRICS = ["zero_one_loss", "rmse", "rmse_true_class", "log_loss", "bias", "variance",
           "bias_weka_corrected"]


def make_config(tmp_path: Path, plugin: Path, *, datasets=("iris", "labor", "contact-lenses"),
                rounds: int = 2, extra_learners: str = "", name: str = "tiny") -> Path:
    text = textwrap.dedent(
        f"""
        name: {name}
        datasets: [{', '.join(datasets)}]
        plugins: [{plugin}]
        protocol: {{rounds: {rounds}, folds: 2, seed: 1}}
        learners:
          S: RunStandIn
          S-half: {{learner: RunStandIn, scale: 0.5}}
        """
    ).lstrip() + extra_learners
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def run_cli(*argv: str) -> int:
    """`workbench run` in this process, one job unless `argv` says (the command's default
    is one per core; these tests read the plan's order of folds and failures)."""
    jobs = [] if "--jobs" in argv or "-j" in argv else ["--jobs", "1"]
    return main(["run", *argv, *jobs, "--no-report"])


def metrics_frame(run_dir: Path) -> pd.DataFrame:
    df = store.load_summary(run_dir)
    return df[[c for c in df.columns if not is_measurement(c)]]


def full_disk_after(monkeypatch, folds: int, where: Path) -> None:
    """`store.write_fold` raises a full disk's OSError once `folds` folds are stored (the
    run then exits 3); `monkeypatch.undo()` or a new `setattr` restores it."""
    import errno

    real, calls = store.write_fold, []

    def full_disk(*args, **kw):
        calls.append(1)
        if len(calls) > folds:
            raise OSError(errno.ENOSPC, "No space left on device", str(where / "x.npz"))
        return real(*args, **kw)

    monkeypatch.setattr(store, "write_fold", full_disk)


def stored_fold_count(run_dir: Path) -> int:
    """Folds stored in a run directory (per-fold files and consolidated pairs)."""
    return sum(len(store.stored_folds(run_dir, p.parent.name, p.name))
               for p in (run_dir / store.PREDICTIONS).glob("*/*") if p.is_dir())


def all_probas(run_dir: Path) -> dict[str, np.ndarray]:
    out = {}
    for pair in sorted((run_dir / store.PREDICTIONS).glob("*/*")):
        for rec in store.read_folds(run_dir, pair.parent.name, pair.name):
            key = f"{pair.parent.name}/{pair.name}/{rec['round']}-{rec['fold']}"
            out[key] = (rec["test_index"], rec["proba"])
    return out


def assert_same_results(a: Path, b: Path) -> None:
    fa, fb = metrics_frame(a), metrics_frame(b)
    assert len(fa) and fa.equals(fb), (fa, fb)
    pa, pb = all_probas(a), all_probas(b)
    assert pa.keys() == pb.keys()
    for key in pa:
        assert np.array_equal(pa[key][0], pb[key][0])
        assert np.array_equal(pa[key][1], pb[key][1]), key


# ----- end to end -----------------------------------------------------------------------------
def test_tiny_run_end_to_end(tmp_path, plugin_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cfg = make_config(tmp_path, plugin_file)
    assert run_cli(str(cfg)) == 0
    run_dir = tmp_path / "results" / "tiny"  # default output, relative to the cwd
    for name in ("config.yaml", "config_hash", "metadata.json", "summary.csv"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "config_hash").read_text().strip() == load_config(cfg).config_hash()

    df = store.load_summary(run_dir)
    assert list(df.columns[:3]) == ["dataset", "learner", "n_instances"]
    for col in METRICS + ["train_cpu_seconds", "test_wall_seconds", "rounds", "folds",
                          "zero_one_loss_std", "rmse_std", "log_loss_std"]:
        assert col in df.columns, col
    assert len(df) == 6
    assert list(df["dataset"]) == ["iris"] * 2 + ["labor"] * 2 + ["contact-lenses"] * 2
    assert set(df["learner"]) == {"S", "S-half"}
    iris = df[df.dataset == "iris"].iloc[0]
    assert iris.n_instances == 150 and iris.rounds == 2 and iris.folds == 2
    assert np.isclose(iris.bias + iris.variance, iris.zero_one_loss)
    pd.testing.assert_frame_equal(
        pd.read_csv(run_dir / "summary.csv"), df, check_dtype=False
    )

    # a complete pair's folds are consolidated into one Parquet file
    pair = store.pair_dir(run_dir, "iris", "S")
    assert sorted(p.name for p in pair.iterdir()) == ["predictions.parquet", "summary.json"]
    assert store.stored_folds(run_dir, "iris", "S") == {(r, f) for r in range(2)
                                                        for f in range(2)}
    rec = store.read_folds(run_dir, "iris", "S")[0]
    assert rec["proba"].dtype == np.float64 and rec["proba"].shape[1] == 3
    assert rec["test_index"].shape == rec["y"].shape
    frame = store.load_predictions(run_dir, "iris", "S")
    assert len(frame) == 2 * 150 and list(frame.columns[:4]) == ["round", "fold", "index", "y"]

    meta = json.loads((run_dir / "metadata.json").read_text())
    for key in ("python", "packages", "cpu_count", "started", "finished", "times", "plan",
                "invocations", "wall_seconds_total"):
        assert key in meta, key
    assert set(meta["times"]["per_learner"]) == {"S", "S-half"}
    assert meta["invocations"][-1]["status"] == "complete"

    # status
    capsys.readouterr()
    assert main(["status", str(run_dir), "--all"]) == 0
    out = capsys.readouterr().out
    assert "6 done, 0 partial, 0 missing" in out and "24 of 24" in out

    # re-running skips everything and rewrites no result
    stamp = (pair / "summary.json").stat().st_mtime_ns
    assert run_cli(str(cfg)) == 0
    err = capsys.readouterr().err
    assert "6 pair(s) already complete" in err and "0 fold(s) to run" in err
    assert (pair / "summary.json").stat().st_mtime_ns == stamp
    assert len(json.loads((run_dir / "metadata.json").read_text())["invocations"]) == 2


def test_report_is_rendered_when_the_report_stage_exists(tmp_path, plugin_file, monkeypatch):
    calls = []
    fake = types.ModuleType("workbench.report.render")
    fake.__spec__ = importlib.machinery.ModuleSpec("workbench.report.render", None)
    fake.render_report = lambda run_dir: calls.append(Path(run_dir))
    monkeypatch.setitem(sys.modules, "workbench.report.render", fake)
    cfg = make_config(tmp_path, plugin_file, datasets=("contact-lenses",))
    out = tmp_path / "run"
    assert main(["run", str(cfg), "--output", str(out)]) == 0
    assert calls == [out]
    calls.clear()
    assert main(["run", str(cfg), "--output", str(out), "--no-report"]) == 0
    assert calls == []


# ----- determinism across jobs and backends ---------------------------------------------------
def test_jobs_and_dask_give_identical_results(tmp_path, plugin_file):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris", "labor", "house-votes-84"))
    one, two, dask = tmp_path / "j1", tmp_path / "j2", tmp_path / "dask"
    assert run_cli(str(cfg), "--output", str(one), "--jobs", "1") == 0
    assert run_cli(str(cfg), "--output", str(two), "--jobs", "2") == 0
    pytest.importorskip("distributed")
    assert run_cli(str(cfg), "--output", str(dask), "--jobs", "2", "--backend", "dask") == 0
    assert_same_results(one, two)
    assert_same_results(one, dask)
    assert (one / "config_hash").read_text() == (dask / "config_hash").read_text()


def test_a_task_that_kills_its_dask_worker_fails_its_pair_in_one_line(tmp_path, plugin_file):
    """A fold whose process dies (as under the OOM killer) is retried on a fresh worker a
    bounded number of times (`workers.ALLOWED_FAILURES`), then fails its pair in one line;
    the other pairs complete and the run exits 1 — no endless restarts."""
    import subprocess
    import sys

    pytest.importorskip("distributed")
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",),
                      extra_learners="  S-dies: {learner: RunStandIn, die: true}\n")
    out = subprocess.run([sys.executable, "-m", "workbench", "run", str(cfg), "--output",
                          str(tmp_path / "r"), "--jobs", "2", "--backend", "dask",
                          "--no-report"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 1, out.stderr
    failed = [line for line in out.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and "iris / S-dies" in failed[0] and "died" in failed[0], \
        out.stderr
    assert "Traceback" not in out.stderr and "distributed." not in out.stderr, out.stderr
    assert sorted(store.load_summary(tmp_path / "r")["learner"]) == ["S", "S-half"]


def _log_an_error_on_the_worker() -> str:
    import logging
    logging.getLogger("distributed.worker").error("worker-side error log")
    return "done"


def test_the_local_clusters_workers_log_nothing_below_critical(capfd):
    """A worker's own ERROR logs (e.g. its heartbeat failing while the cluster closes, with a
    traceback) stay out of the run's one-line output, and the environment variable that
    carries the level to the spawned workers is put back afterwards."""
    import os

    pytest.importorskip("distributed")
    from workbench.experiment import workers

    before = os.environ.get(workers.WORKER_LOG_VARIABLE)
    with workers.dask_session(1, None) as client:
        assert client.submit(_log_an_error_on_the_worker, pure=False).result() == "done"
    err = capfd.readouterr().err
    assert "worker-side error log" not in err and "Traceback" not in err, err
    assert os.environ.get(workers.WORKER_LOG_VARIABLE) == before


def test_a_local_cluster_left_without_workers_is_one_error_not_a_wait():
    """When every nanny of the local cluster has closed (none can restart its worker), a
    future waited on raises `WorkersLost` within seconds instead of waiting forever; Dask's
    own closing of a nanny whose worker is briefly gone is off for the session."""
    import threading

    pytest.importorskip("distributed")
    import dask
    from workbench.experiment import workers

    outcome: list[str] = []

    def body() -> None:
        try:
            with workers.dask_session(1, None) as client:
                outcome.append(dask.config.get("distributed.deploy.lost-worker-timeout"))
                for nanny in list(client.cluster.workers.values()):
                    client.cluster.sync(nanny.close)
                client.submit(abs, -1, pure=False).result()
            outcome.append("returned")
        except workers.WorkersLost as exc:
            outcome.append(str(exc))

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the session still waits on a cluster without workers"
    assert outcome[0] == "3650 days", outcome
    assert len(outcome) == 2 and "none could be restarted" in outcome[1], outcome
    assert dask.config.get("distributed.deploy.lost-worker-timeout") != "3650 days"


# ----- resume ---------------------------------------------------------------------------------
def test_sigkill_midway_then_resume_matches_uninterrupted(tmp_path, plugin_file):
    cfg = make_config(tmp_path, plugin_file, rounds=3,
                      datasets=("iris", "labor", "contact-lenses", "house-votes-84"))
    killed = tmp_path / "killed"
    total = 4 * 2 * 3 * 2
    env = dict(os.environ, RUNSTANDIN_DELAY="0.12")
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", "run", str(cfg), "--output", str(killed),
         "--no-report"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            n = stored_fold_count(killed)
            if n >= 6 or proc.poll() is not None:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    stored = stored_fold_count(killed)
    assert 0 < stored < total

    assert run_cli(str(cfg), "--output", str(killed)) == 0
    fresh = tmp_path / "fresh"
    assert run_cli(str(cfg), "--output", str(fresh)) == 0
    # every pair exactly once, every fold exactly once, nothing half-written left visible
    summaries = sorted(killed.glob("predictions/*/*/summary.json"))
    assert len(summaries) == 8
    assert stored_fold_count(killed) == total
    assert not list(killed.glob("predictions/*/*/*.npz"))  # all consolidated
    assert not [p for p in killed.rglob("*") if p.is_file() and not p.name.startswith(".")
                and p.suffix not in (".parquet", ".json", ".yaml", ".csv", "")]
    df = store.load_summary(killed)
    assert not df.duplicated(["dataset", "learner"]).any() and len(df) == 8
    assert_same_results(killed, fresh)


def test_interrupt_keeps_finished_folds_and_exits_130(tmp_path, plugin_file, monkeypatch,
                                                      capsys):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    out = tmp_path / "run"
    real = store.write_fold
    calls = {"n": 0}

    def ctrl_c_while_storing_the_sixth(*args, **kw):  # in the runner, not a worker
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(store, "write_fold", ctrl_c_while_storing_the_sixth)
    assert run_cli(str(cfg), "--output", str(out)) == 130
    err = capsys.readouterr().err
    assert "interrupted: kept 5 fold(s)" in err
    assert stored_fold_count(out) == 5
    assert len(list(out.glob("predictions/*/*/summary.json"))) == 1  # iris/S had 4 folds
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["invocations"][-1]["status"] == "interrupted"

    monkeypatch.setattr(store, "write_fold", real)
    assert run_cli(str(cfg), "--output", str(out)) == 0
    assert "1 pair(s) already complete, 1 fold(s) already stored, 3 fold(s) to run" in \
        capsys.readouterr().err
    assert len(store.load_summary(out)) == 2


def test_restricting_keeps_the_hash_and_resumes(tmp_path, plugin_file, capsys):
    cfg = make_config(tmp_path, plugin_file)
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out), "--datasets", "iris,labor",
                   "--learners", "S") == 0
    h = (out / "config_hash").read_text()
    df = store.load_summary(out)
    assert sorted(zip(df.dataset, df.learner)) == [("iris", "S"), ("labor", "S")]
    capsys.readouterr()
    assert main(["status", str(out)]) == 0
    status = capsys.readouterr().out
    assert "2 done, 0 partial, 4 missing" in status and "contact-lenses" in status

    assert run_cli(str(cfg), "--output", str(out)) == 0
    assert (out / "config_hash").read_text() == h
    assert "2 pair(s) already complete" in capsys.readouterr().err
    assert len(store.load_summary(out)) == 6

    # names outside the config are refused, before anything is written
    assert run_cli(str(cfg), "--output", str(tmp_path / "x"), "--datasets", "wine") == 2
    assert run_cli(str(cfg), "--output", str(tmp_path / "x"), "--learners", "NB9") == 2
    assert not (tmp_path / "x").exists()


def test_different_config_hash_is_refused_unless_fresh(tmp_path, plugin_file, capsys):
    cfg = make_config(tmp_path, plugin_file, datasets=("contact-lenses",))
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 0
    before = sorted(p.name for p in out.glob("predictions/*/*/*"))
    capsys.readouterr()
    assert run_cli(str(cfg), "--output", str(out), "--rounds", "3") == 2
    err = capsys.readouterr().err
    assert "different config" in err and "--fresh" in err and err.count("\n") == 1
    assert sorted(p.name for p in out.glob("predictions/*/*/*")) == before

    # --force reuses the stored rounds (a round's split does not depend on the round count)
    forced = tmp_path / "forced"
    shutil.copytree(out, forced)
    assert run_cli(str(cfg), "--output", str(forced), "--rounds", "3", "--force") == 0
    assert "8 fold(s) already stored, 4 fold(s) to run" in capsys.readouterr().err

    assert run_cli(str(cfg), "--output", str(out), "--rounds", "3", "--fresh") == 0
    df = store.load_summary(out)
    assert set(df["rounds"]) == {3}
    assert len(store.stored_folds(out, "contact-lenses", "S")) == 6
    assert_same_results(out, forced)


def test_fresh_refuses_to_wipe_a_foreign_directory(tmp_path, plugin_file):
    cfg = make_config(tmp_path, plugin_file, datasets=("contact-lenses",))
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert run_cli(str(cfg), "--output", str(foreign), "--fresh") == 2
    assert (foreign / "notes.txt").read_text() == "keep me"
    assert sorted(os.listdir(foreign)) == ["notes.txt"]


def test_a_failing_learner_does_not_lose_the_others(tmp_path, plugin_file, capsys):
    extra = "  S-bad: {learner: RunStandIn, fail: true}\n"
    cfg = make_config(tmp_path, plugin_file, datasets=("contact-lenses",),
                      extra_learners=extra)
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 1  # 1 = some pairs failed, rest kept
    err = capsys.readouterr().err
    assert "stand-in asked to fail" in err and "S-bad" in err
    df = store.load_summary(out)
    assert sorted(df["learner"]) == ["S", "S-half"]
    assert not store.is_complete(out, "contact-lenses", "S-bad")


# ----- pieces ---------------------------------------------------------------------------------
def test_progress_plain_lines_and_tty_bar():
    t = [0.0]
    buf = io.StringIO()
    p = Progress(30, stream=buf, interval=10, tty=False, clock=lambda: t[0], label="folds")
    for _ in range(30):
        t[0] += 1.0
        p.update(note="iris/NB")
    p.close()
    lines = buf.getvalue().splitlines()
    assert 2 <= len(lines) <= 5
    assert lines[-1].startswith("progress: 30/30 folds (100.0%)")
    assert "eta" in lines[0]

    buf = io.StringIO()
    p = Progress(4, stream=buf, tty=True, clock=lambda: t[0])
    t[0] += 2
    p.update()
    assert "1/4" in buf.getvalue() and "\r[" in buf.getvalue() and "eta 00:06" in buf.getvalue()
    p.close()
    assert buf.getvalue().endswith("\n")


def test_store_writes_are_atomic_and_layout_is_stable(tmp_path):
    rec = {"round": 1, "fold": 0, "test_index": np.array([3, 1]), "y": np.array([0, 1]),
           "proba": np.array([[0.25, 0.75], [1.0, 0.0]]), "train_cpu_seconds": 0.5,
           "cuts": None, "preprocessing": "mdl"}
    path = store.write_fold(tmp_path, "iris", "A2DE-SW m=0.5", rec)
    assert path == tmp_path / "predictions" / "iris" / "A2DE-SW_m=0.5" / "round-001-fold-0.npz"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left
    back = store.read_fold(path)
    assert back["round"] == 1 and back["cuts"] == "" and back["preprocessing"] == "mdl"
    assert np.array_equal(back["proba"], rec["proba"])
    assert store.stored_folds(tmp_path, "iris", "A2DE-SW m=0.5") == {(1, 0)}
    assert not store.is_complete(tmp_path, "iris", "A2DE-SW m=0.5")
    # a fold file of an earlier version (a 0-d member per scalar) reads the same
    old = {k: np.asarray("" if v is None else v) for k, v in rec.items()}
    np.savez(path, **old)
    assert store.read_fold(path).keys() == back.keys()
    for key, value in store.read_fold(path).items():
        assert np.array_equal(value, back[key]) and type(value) is type(back[key]), key


def test_real_learners_identical_across_jobs(tmp_path):
    """The PAKDD learners (MDL-discretised AnDE, raw-data RF10) through the same runner."""
    from workbench.learners import registry

    if not {"NB", "A2DE-SW", "RF10"} <= set(registry.names()):
        pytest.skip("PAKDD 2013 learners not registered yet")
    cfg = tmp_path / "real.yaml"
    cfg.write_text(textwrap.dedent(
        """
        name: real
        datasets: [labor, contact-lenses]
        protocol: {rounds: 2, folds: 2, seed: 1}
        learners: [NB, A2DE-SW, RF10]
        """
    ))
    one, two = tmp_path / "one", tmp_path / "two"
    assert run_cli(str(cfg), "--output", str(one)) == 0
    assert run_cli(str(cfg), "--output", str(two), "--jobs", "2") == 0
    assert_same_results(one, two)
    df = store.load_summary(one)
    assert len(df) == 6 and df["zero_one_loss"].between(0, 1).all()


def test_csv_text_writes_what_pandas_writes():
    """The run's summary.csv / fold_metrics.csv writer, without pandas, against pandas'
    to_csv on every kind of column a summary can hold."""
    rows = [
        {"dataset": "iris", "learner": "A1DE", "n": 150, "loss": 0.1, "bytes": 272,
         "rss": 12345678901, "flag": True, "note": 'a, "quoted"\nline', "sel": None},
        {"dataset": "labor", "learner": "NB", "n": 57, "loss": float("nan"), "bytes": 639.9,
         "rss": None, "flag": False, "note": None, "sel": 2.5, "late": "x"},
        {"dataset": "vote", "learner": "NB", "n": 435, "loss": 1 / 3, "bytes": 7,
         "rss": 5, "flag": None, "note": "plain", "sel": 3},
    ]
    columns = ["dataset", "learner", "n", "loss", "bytes", "rss", "flag", "note", "sel",
               "late", "absent"]
    for fmt in ("%.17g", "%.10g"):
        want = pd.DataFrame(rows, columns=columns).to_csv(index=False, float_format=fmt)
        assert store.csv_text(columns, rows, fmt) == want, fmt


def test_a_run_imports_no_pandas(tmp_path):
    """A run writes its folds, Parquet and CSVs without pandas (0.2 s of CPU per process);
    the results read back the same through pandas. (joblib's loky runs the worker process
    that folds run in, also with --jobs 1, so that a signal never waits for a kernel.)"""
    config = tmp_path / "c.yaml"
    config.write_text(f"name: c\ndatasets: [iris, labor]\nlearners: [NB, A1DE]\n"
                      f"protocol: {{rounds: 2, folds: 2, seed: 1}}\noutput: {tmp_path / 'out'}\n")
    code = ("import sys; from workbench.__main__ import main; "
            f"rc = main(['-q', 'run', '--no-report', {str(config)!r}]); "
            "print(rc, sorted(m for m in ('pandas',) if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, timeout=300)
    assert out.stdout.split("\n")[0] == "0 []", out.stdout + out.stderr
    summary = store.load_summary(tmp_path / "out")
    assert len(summary) == 4 and summary["zero_one_loss"].notna().all()
    assert (pd.read_csv(tmp_path / "out" / "summary.csv")["dataset"] == summary["dataset"]).all()
    folds = pd.read_csv(tmp_path / "out" / "fold_metrics.csv")
    assert len(folds) == 4 * 4 and list(folds.columns[:4]) == ["dataset", "learner", "round",
                                                                 "fold"]
