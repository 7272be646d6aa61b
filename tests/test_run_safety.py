"""Run safety (issue 12): published results, data identity, clean stops, pre-flight checks,
corrupt store files, numbers, degenerate data, ETA, exit codes, report honesty.

The fault-injection test drives real ``python -m workbench run`` processes with two local
workers and kills them (SIGKILL, SIGTERM) at random moments drawn from a seeded generator.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from workbench.__main__ import main
from workbench.errors import ConfigError
from workbench import store
from workbench.experiment import rundir
from workbench.experiment.config import load_config
from workbench.experiment.datasets import resolve_datasets
from workbench.experiment.cost import COEFFICIENTS, FOLD_OVERHEAD, CostModel, Dims, fold_cost

from test_runner import (assert_same_results, make_config, metrics_frame, run_cli,
                         stored_fold_count)

REPO = Path(__file__).resolve().parents[1]


def _stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None when
    the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def _live_in_session(sid: int) -> list[int]:
    """PIDs of live (not zombie) processes of session `sid`."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat(entry)
        if fields is not None and fields[0] != "Z" and int(fields[3]) == sid:
            out.append(int(entry))
    return out


def _wait_no_process(sid: int, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (alive := _live_in_session(sid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def _start(cfg: Path, out: Path, cwd: Path, jobs: int = 2, delay: float = 0.15
           ) -> subprocess.Popen:
    env = dict(os.environ, RUNSTANDIN_DELAY=str(delay))
    return subprocess.Popen(
        [sys.executable, "-m", "workbench", "run", str(cfg), "--output", str(out),
         "--no-report", "--jobs", str(jobs)],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=_as_from_a_terminal)


def _as_from_a_terminal() -> None:
    """In the child before exec: the signal state a shell gives a command. An earlier
    in-process test (Dask's LocalCluster) can leave SIGINT blocked or ignored in this
    process, and both are inherited — the run would then never see the Ctrl-C."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _n_folds(out: Path) -> int:
    return stored_fold_count(out)


def _wait_folds(proc: subprocess.Popen, out: Path, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while _n_folds(out) < n and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)


# ----- acceptance: fault injection ----------------------------------------------------------
def test_fault_injection_kill_term_concurrent_corrupt(tmp_path, plugin_file):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris", "labor", "contact-lenses"))
    total = 3 * 2 * 2 * 2
    reference = tmp_path / "reference"
    assert run_cli(str(cfg), "--output", str(reference)) == 0

    out = tmp_path / "run"
    rng = random.Random(12)
    stderr_all = []
    # 1. SIGKILL at three random moments; no worker may survive its runner
    for _ in range(3):
        before = _n_folds(out)
        proc = _start(cfg, out, tmp_path)
        _wait_folds(proc, out, before + 1)
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        stderr_all.append(proc.stderr.read())
        assert proc.returncode == -signal.SIGKILL, "the run finished before it was killed"
        assert _wait_no_process(proc.pid) == [], "worker processes outlived the runner"
    assert 0 < _n_folds(out) < total
    # status tells the dead run from a live one
    res = subprocess.run([sys.executable, "-m", "workbench", "status", str(out)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0 and "interrupted (its process is gone)" in res.stdout

    # 2. SIGTERM: handled like Ctrl-C, exit 143, status interrupted
    before = _n_folds(out)
    proc = _start(cfg, out, tmp_path, delay=1.0)  # slow: it must outlive the second run
    _wait_folds(proc, out, before + 1)
    # 3. a second run on the same directory refuses, naming the PID of the first
    second = subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(cfg), "--output", str(out),
         "--no-report"], capture_output=True, text=True, cwd=tmp_path)
    assert second.returncode == 2
    assert f"process {proc.pid}" in second.stderr and second.stderr.count("\n") == 1
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    err = proc.stderr.read()
    stderr_all += [err, second.stderr]
    assert proc.returncode == 143, err
    assert "interrupted: kept" in err and "terminated" in err
    assert _wait_no_process(proc.pid) == []
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["invocations"][-1]["status"] == "interrupted"

    # 4. a corrupt fold file, a corrupt summary and a corrupt consolidated pair (a partial
    # pair's stored predictions of a larger protocol: --force with more rounds)
    folds = sorted(out.glob("predictions/*/*/*.npz"))
    if not folds:  # every pair finished before the stops: make one a partial pair again
        pq = [p for p in sorted(out.glob(f"predictions/*/*/{store.PAIR_PARQUET}"))
              if p.parent.parent.name != "iris"][0]
        ds, learner = pq.parent.parent.name, pq.parent.name
        first = next(iter(store.parquet_folds(pq).values()))
        store.remove_pair(out, ds, learner)
        store.write_fold(out, ds, learner, first)
        folds = sorted(out.glob("predictions/*/*/*.npz"))
    folds[0].write_bytes(b"")
    summaries = sorted(out.glob("predictions/*/*/summary.json"))
    if not summaries:  # make one: finish a pair, then truncate it
        assert run_cli(str(cfg), "--output", str(out), "--datasets", "iris",
                       "--learners", "S") == 0
        summaries = sorted(out.glob("predictions/*/*/summary.json"))
    # (after that helper run, which would clear it away)
    (folds[0].parent / ".round-009-fold-0.npz.abc.tmp").write_bytes(b"half")
    text = summaries[0].read_text()
    summaries[0].write_text(text[: len(text) // 2])
    parquet = summaries[0].parent / store.PAIR_PARQUET
    parquet.write_bytes(parquet.read_bytes()[:100])
    res = subprocess.run([sys.executable, "-m", "workbench", "status", str(out)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0 and "corrupt" in res.stdout
    stderr_all.append(res.stderr)

    # 5. resume to the end: identical to the uninterrupted run, nothing lost or duplicated
    final = subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(cfg), "--output", str(out),
         "--no-report", "--jobs", "2"], capture_output=True, text=True, cwd=tmp_path)
    stderr_all.append(final.stderr)
    assert final.returncode == 0, final.stderr
    assert f"corrupt: {folds[0]}" in final.stderr, final.stderr
    assert f"corrupt: {summaries[0]}" in final.stderr
    assert f"corrupt: {parquet}" in final.stderr
    assert "temporary file(s) left by an interrupted run" in final.stderr
    assert _n_folds(out) == total
    assert not list(out.rglob("*.tmp")) and not list(out.rglob("*.npz"))
    assert len(list(out.glob("predictions/*/*/summary.json"))) == 6
    df = store.load_summary(out)
    assert len(df) == 6 and not df.duplicated(["dataset", "learner"]).any()
    assert_same_results(out, reference)
    assert not [e for e in stderr_all if "Traceback" in e or "Warning" in e], stderr_all


# ----- 1. published results, ownership, summary-only ----------------------------------------
def test_published_directory_is_never_written(tmp_path, plugin_file, capsys):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    pub = tmp_path / "pub"
    pub.mkdir()
    (pub / rundir.PUBLISHED).write_text("published\n")
    before = sorted(p.name for p in pub.iterdir())
    for extra in ((), ("--force",), ("--fresh",)):
        assert run_cli(str(cfg), "--output", str(pub / "sub"), *extra) == 2
        assert "published results" in capsys.readouterr().err
    assert sorted(p.name for p in pub.iterdir()) == before
    # report re-renders the committed reproduction only elsewhere
    repro = REPO / "experiments" / "pakdd13" / "reproduction"
    assert rundir.is_published(repro)
    assert main(["report", str(repro), "--no-figures"]) == 2
    assert "--out DIR" in capsys.readouterr().err


def test_results_directory_is_git_ignored_and_configs_write_there():
    ignored = subprocess.run(["git", "check-ignore", "-q", "results/pakdd13/summary.csv"],
                             cwd=REPO)
    assert ignored.returncode == 0
    for name in ("pakdd13", "smoke", "jmlr16-skdb"):
        out = load_config(REPO / "configs" / f"{name}.yaml").output
        assert out.parts[0] == "results" and not rundir.is_published(REPO / out)


def test_foreign_or_other_config_directory_is_refused(tmp_path, plugin_file, capsys):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert run_cli(str(cfg), "--output", str(foreign)) == 2
    err = capsys.readouterr().err
    assert str(foreign) in err and "--output" in err and "--force" in err
    assert err.count("\n") == 1
    afile = tmp_path / "afile"
    afile.write_text("x")
    for target in (afile, afile / "below"):
        assert run_cli(str(cfg), "--output", str(target)) == 2
        err = capsys.readouterr().err
        assert "output:" in err and err.count("\n") == 1 and "Traceback" not in err


def test_summary_only_results_are_complete(tmp_path, plugin_file, capsys):
    cfg = make_config(tmp_path, plugin_file)
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 0
    full = store.load_summary(out)
    fm = store.load_fold_metrics(out)
    shutil.rmtree(out / "predictions")  # what a committed reproduction looks like
    capsys.readouterr()
    assert main(["status", str(out)]) == 0
    status = capsys.readouterr().out
    assert "pairs: 6 done, 0 partial, 0 missing" in status
    assert run_cli(str(cfg), "--output", str(out)) == 0
    assert "6 pair(s) already complete" in capsys.readouterr().err
    assert not (out / "predictions").exists() or not _n_folds(out)
    assert store.load_summary(out).equals(full)
    assert store.load_fold_metrics(out).equals(fm)
    # one more learner: the old pairs stay summary-only, the new ones are computed, and the
    # regenerated summary.csv holds both
    cfg2 = make_config(tmp_path, plugin_file, extra_learners="  S-2: {learner: RunStandIn, "
                       "scale: 2.0}\n")
    assert run_cli(str(cfg2), "--output", str(out), "--force") == 0
    df = store.load_summary(out)
    assert len(df) == 9 and set(df["learner"]) == {"S", "S-half", "S-2"}
    assert len(store.load_fold_metrics(out)) == len(fm) * 3 // 2


def test_summary_csv_row_never_completes_a_pair_being_recomputed(tmp_path, plugin_file,
                                                                   capsys):
    """summary.csv describes pairs that have no directory of their own; a pair directory
    without summary.json is partial whatever an older summary.csv says, and removing a pair
    (stale or corrupt) removes its rows too, so a stop before it is recomputed loses nothing."""
    cfg = make_config(tmp_path, plugin_file)
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 0
    before = (out / "summary.csv").read_text().splitlines()
    full = metrics_frame(out)
    # a complete pair turned back into a partial one (one stored fold, no summary.json)
    pq = store.parquet_path(out, "labor", "S")
    first = next(iter(store.parquet_folds(pq).values()))
    store.summary_path(out, "labor", "S").unlink()
    pq.unlink()
    store.write_fold(out, "labor", "S", first)
    assert store.read_summary(out, "labor", "S") is None
    assert not store.is_complete(out, "labor", "S")
    states = {(s.dataset, s.learner): s.state for s in store.pair_statuses(out)}
    assert states[("labor", "S")] == "partial" and states[("iris", "S")] == "done"
    # removing a pair drops exactly its rows from both CSV files
    store.remove_pair(out, "contact-lenses", "S-half")
    after = (out / "summary.csv").read_text().splitlines()
    assert [l for l in before if not l.startswith("contact-lenses,S-half,")] == after
    assert len(after) == len(before) - 1
    fm = store.load_fold_metrics(out)
    assert not ((fm["dataset"] == "contact-lenses") & (fm["learner"] == "S-half")).any()
    assert store.read_summary(out, "contact-lenses", "S-half") is None
    capsys.readouterr()
    assert run_cli(str(cfg), "--output", str(out)) == 0
    err = capsys.readouterr().err
    assert "4 pair(s) already complete" in err and "1 fold(s) already stored" in err, err
    pd.testing.assert_frame_equal(metrics_frame(out), full)


# ----- 2. data identity -----------------------------------------------------------------------
def _copy_dataset(src_slug: str, dst: Path) -> Path:
    src = REPO / "datasets" / f"{src_slug}.arff.gz"
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(gzip.decompress(src.read_bytes()))
    return dst


def test_changed_data_file_makes_its_pairs_stale(tmp_path, plugin_file, capsys):
    data = _copy_dataset("iris", tmp_path / "data" / "flowers.arff")
    cfg = make_config(tmp_path, plugin_file, datasets=(str(data), "labor"))
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 0
    row = store.read_summary(out, "flowers", "S")
    assert row[store.DATA_HASH_KEY] and len(row[store.DATA_HASH_KEY]) == 64
    capsys.readouterr()
    # unchanged: everything reused
    assert run_cli(str(cfg), "--output", str(out)) == 0
    assert "4 pair(s) already complete" in capsys.readouterr().err
    # one value changed: both flowers pairs are recomputed, labor's reused
    text = data.read_text()
    data.write_text(text.replace("5.1,3.5,1.4,0.2", "5.2,3.5,1.4,0.2", 1))
    assert run_cli(str(cfg), "--output", str(out)) == 0
    err = capsys.readouterr().err
    assert err.count("stale: flowers") == 2 and "stale: labor" not in err
    assert "2 pair(s) already complete, 0 fold(s) already stored, 8 fold(s) to run" in err
    assert store.read_summary(out, "flowers", "S")[store.DATA_HASH_KEY] != \
        row[store.DATA_HASH_KEY]


def test_two_data_sets_with_one_name_are_a_config_error(tmp_path, plugin_file):
    mine = _copy_dataset("iris", tmp_path / "mine" / "iris.arff")
    cfg = load_config(make_config(tmp_path, plugin_file, datasets=("iris", str(mine))))
    with pytest.raises(ConfigError) as exc:
        resolve_datasets(cfg)
    assert "iris.arff.gz" in str(exc.value) and str(mine) in str(exc.value)
    a = _copy_dataset("labor", tmp_path / "a" / "x.arff")
    b = _copy_dataset("labor", tmp_path / "b" / "x.arff")
    cfg = load_config(make_config(tmp_path, plugin_file, datasets=(str(a), str(b))))
    with pytest.raises(ConfigError, match="two data sets are named 'x'"):
        resolve_datasets(cfg)


# ----- 3. clean stops (in-process pieces) ------------------------------------------------------
def test_lock_is_exclusive_and_released(tmp_path):
    with rundir.RunLock(tmp_path):
        assert rundir.lock_holder(tmp_path) == os.getpid()
        with pytest.raises(rundir.RunDirError, match=f"process {os.getpid()}"):
            with rundir.RunLock(tmp_path):
                pass
    assert rundir.lock_holder(tmp_path) is None


# ----- 4. fail before computing ----------------------------------------------------------------
def test_malformed_data_file_fails_before_any_fold(tmp_path, plugin_file, capsys):
    bad = tmp_path / "bad.arff"
    bad.write_text("@relation b\n@attribute a numeric\n@attribute c {x,y}\n@data\n1,x\n"
                   "oops,y\n")
    cfg = make_config(tmp_path, plugin_file, datasets=("labor", str(bad)))
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 2
    err = capsys.readouterr().err
    assert err.count("bad.arff, line 6") == 1 and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize("report, message", [
    ("{alhpa: 0.1}", "report.alhpa: unknown option (did you mean 'alpha'?"),
    ("{alpha: 1.5}", "report.alpha: expected a number in (0, 1)"),
    ("{scatter: [[S, NB]]}", "learner 'NB' has no results"),
    ("{paper_agreement: nowhere.yaml}", "report.paper_agreement: metric map"),
])
def test_report_options_are_checked_before_the_run(tmp_path, plugin_file, capsys, report,
                                                   message):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    cfg.write_text(cfg.read_text() + f"report: {report}\n")
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_empty_learner_list_is_a_config_error(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: c\ndatasets: [iris]\nlearners: []\n")
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "learners" in err and "non-empty" in err and "Traceback" not in err


# ----- 6. numbers ---------------------------------------------------------------------------
def test_every_float_spelling_is_a_number_and_non_finite_is_refused(tmp_path, capsys):
    for text, value in (("1e-3", 1e-3), ("1E5", 1e5), (".5", 0.5), ("2.", 2.0)):
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"name: c\ndatasets: [iris]\nlearners: {{X: {{learner: NB, m: {text}}}}}\n")
        assert load_config(cfg).learner("X").params["m"] == value
    for text in (".inf", "-inf", "nan"):
        cfg.write_text(f"name: c\ndatasets: [iris]\nlearners: {{X: {{learner: NB, m: {text}}}}}\n")
        with pytest.raises(ConfigError, match="finite"):
            load_config(cfg)
    capsys.readouterr()
    assert main(["cv", "--learner", "NB", "--data", "iris", "--rounds", "1", "--set",
                 "m=1E-3"]) == 0
    assert json.loads(capsys.readouterr().out)["zero_one_loss"] >= 0
    assert main(["cv", "--learner", "NB", "--data", "iris", "--set", "m=.inf"]) == 2
    assert "finite" in capsys.readouterr().err


def test_cv_and_predict_help_say_the_same_about_values(capsys):
    texts = []
    for cmd in ("cv", "predict"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        texts.append(" ".join(capsys.readouterr().out.split()))
    assert "1e-3" in texts[0] and "1e-3" in texts[1]
    phrase = "VALUE is read as YAML: numbers in any spelling"
    assert phrase in texts[0] and phrase in texts[1]


# ----- 7. degenerate data ------------------------------------------------------------------------
def test_no_labelled_training_rows_is_an_error(tmp_path, capsys):
    f = tmp_path / "nolabel.arff"
    f.write_text("@relation t\n@attribute a {p,q}\n@attribute c {x,y}\n@data\np,?\nq,?\n")
    assert main(["predict", "--learner", "NB", "--train", str(f), "--test", str(f)]) == 2
    assert "no training rows with a known class" in capsys.readouterr().err


def test_degenerate_data_warns_in_run_and_report(tmp_path, capsys):
    f = tmp_path / "odd.arff"
    rows = "\n".join(f"{'p' if i % 2 else 'q'},?,x" for i in range(12))
    f.write_text("@relation odd\n@attribute a {p,q}\n@attribute b {u,v}\n"
                 f"@attribute c {{x,y}}\n@data\n{rows}\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: c\ndatasets: [{f}]\nprotocol: {{rounds: 1, folds: 2}}\n"
                   "learners: [NB, KDB3]\n")
    out = tmp_path / "run"
    assert main(["run", str(cfg), "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: odd: every labelled row has class 'x' (single-class data)" in err
    assert "warning: odd: 1 attribute(s) with every value missing ('b')" in err
    assert "warning: KDB3: k = 3 is larger than the number of attributes of odd" in err
    md = (out / "report" / "report.md").read_text()
    assert "single-class data" in md and "every value missing" in md and "k = 3" in md


# ----- 8. ETA -----------------------------------------------------------------------------------
def test_cost_model_orders_and_refines():
    dims = Dims(n=1000, d=20, k=3)
    nb, a1, a2 = (fold_cost({"n": n}, dims, 500, 500) for n in (0, 1, 2))
    a2s = fold_cost({"n": 2, "subsumption": 100}, dims, 500, 500)
    rf = fold_cost({"n_trees": 10}, dims, 500, 500)
    assert nb < a1 < a2 and a2s < a2 and rf > nb
    # hand value: AnDE n = 1: a·(500·C(20,2) + 500·20·20·3) + b·1000·20·log2(1000) + c
    a, b, c = COEFFICIENTS["ande"]
    want = a * (500 * 190 + 500 * 20 * 20 * 3) + b * 1000 * 20 * np.log2(1000) + c \
        + FOLD_OVERHEAD
    assert a1 == pytest.approx(want, rel=1e-12)
    m = CostModel()
    for i in range(4):
        m.add(("A", i), "A", 1.0)
        m.add(("B", i), "B", 1.0)
    assert m.eta(10.0) is None
    # A's folds take 3x what B's take: once both are measured, B's remaining work counts less
    for i in range(2):
        m.observe(("A", i), 3.0)
        m.observe(("B", i), 1.0)
    # done work = 2·1.5 + 2·0.5 = 4 refined units in 8 s; remaining = 2·1.5 + 2·0.5 = 4
    assert m.remaining() == pytest.approx(4.0)
    assert m.eta(8.0) == pytest.approx(8.0)
    # 6 of 14 elapsed seconds went to compiling kernels: the rate is from the other 8
    assert m.eta(14.0, compiling=6.0) == pytest.approx(8.0)


# ----- 9. exit codes are documented ------------------------------------------------------------
def test_exit_codes_in_help_and_readme(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for code in ("1 some", "2 usage", "130", "143"):
        assert code in text
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "1 some (data set, learner) pairs failed" in readme and "143" in readme


def test_stale_tmp_files_are_removed(tmp_path):
    (tmp_path / "predictions" / "a" / "b").mkdir(parents=True)
    stale = tmp_path / "predictions" / "a" / "b" / ".summary.json.x1.tmp"
    stale.write_text("{")
    keep = tmp_path / "predictions" / "a" / "b" / "round-000-fold-0.npz"
    keep.write_bytes(b"x")
    assert rundir.remove_stale_tmp(tmp_path) == [stale]
    assert keep.exists() and not stale.exists()


def test_corrupt_files_raise_store_corrupt_naming_the_path(tmp_path):
    p = tmp_path / "f.npz"
    p.write_bytes(b"")
    with pytest.raises(store.StoreCorrupt, match=str(p)):
        store.read_fold(p)
    (tmp_path / "metadata.json").write_text('{"name": ')
    with pytest.raises(store.StoreCorrupt, match="metadata.json"):
        store.read_metadata(tmp_path)


def test_ctrl_c_with_two_jobs_keeps_finished_folds_quietly(tmp_path, plugin_file):
    # Ctrl-C in a terminal signals the whole foreground process group, workers included
    cfg = make_config(tmp_path, plugin_file)
    out = tmp_path / "run"
    proc = _start(cfg, out, tmp_path, delay=0.3)
    _wait_folds(proc, out, 3)
    assert proc.poll() is None, "the run ended before three folds were seen"
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # say what the run was doing, then fail
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the run did not stop within 30 s of Ctrl-C; it said:\n"
                    + proc.communicate()[1][-3000:])
    err = proc.stderr.read()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Warning" not in err and "joblib" not in err
    kept = int(err.split("interrupted: kept ")[1].split()[0])
    assert kept == _n_folds(out) >= 3
    assert _wait_no_process(proc.pid) == []
    assert json.loads((out / "metadata.json").read_text())["invocations"][-1]["status"] == \
        "interrupted"


def test_a_signal_during_a_fold_write_waits_until_the_fold_is_counted():
    """Ctrl-C between storing a fold and counting it made "kept 3" beside 4 stored folds
    (CI once): the store write and the count finish first, then the interrupt is raised."""
    from workbench.experiment.runner import _signals_held

    done = []
    # Python's own Ctrl-C handler (an imported module may have put its own in place:
    # dask_jobqueue's runner does)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with _signals_held():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler has run by now
                done.append("written")
                done.append("counted")
        assert done == ["written", "counted"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def test_an_interrupt_stops_the_pool_even_when_loky_fails_its_own_shutdown(monkeypatch):
    """loky's manager thread dies (InvalidStateError, as CI once saw) before killing the
    workers: the interrupted iteration still ends within seconds, no worker left alive,
    and the folds finished before the interrupt come back."""
    from concurrent.futures import InvalidStateError
    from joblib.externals.loky import process_executor
    from workbench.experiment import workers

    def dies(self):
        raise InvalidStateError("CANCELLED")
    monkeypatch.setattr(process_executor._ExecutorManagerThread,
                        "flag_executor_shutting_down", dies)
    monkeypatch.setattr(process_executor.threading, "excepthook", lambda args: None)
    gen = workers._iterate_local([0.0, 0.0] + [30.0] * 4, _pid_after, 2)
    pids = {next(gen)[1]}
    started = time.monotonic()
    with pytest.raises(workers.StoppedEarly) as stop:
        gen.throw(KeyboardInterrupt())
    assert time.monotonic() - started < workers.KILL_WAIT + 5
    pids |= {pid for _, pid in stop.value.finished}
    assert pids and all((_stat(pid) or ["Z"])[0] == "Z" for pid in pids)  # gone or dead


@pytest.mark.parametrize("jobs,sig,times", [
    (1, signal.SIGINT, 1), (1, signal.SIGTERM, 1), (2, signal.SIGINT, 1),
    (2, signal.SIGTERM, 1), (1, signal.SIGINT, 2)])
def test_a_signal_stops_a_run_whose_fold_sits_in_a_long_kernel(tmp_path, plugin_file, jobs,
                                                                sig, times, monkeypatch):
    """Issue 34: a fold inside compiled code for minutes; Ctrl-C (to the terminal's whole
    process group) or SIGTERM (to the runner) stops the run within seconds, keeps every
    finished fold, marks nothing failed, and a resume equals an uninterrupted run. A
    second Ctrl-C during the clean-up quits at once, still losing nothing stored."""
    cfg = make_config(tmp_path, plugin_file)
    reference = tmp_path / "reference"
    assert run_cli(str(cfg), "--output", str(reference)) == 0
    out = tmp_path / "run"
    monkeypatch.setenv("RUNSTANDIN_SPIN_AFTER", "2")  # iris folds: a worker's 3rd one spins
    proc = _start(cfg, out, tmp_path, jobs=jobs, delay=0.0)
    try:
        _wait_folds(proc, out, 2 * jobs)
        time.sleep(1.0)  # the next fold is in the kernel now
        assert proc.poll() is None, "the run ended before the signal"
        before = _n_folds(out)
        sent = time.monotonic()
        for i in range(times):
            if i:
                time.sleep(0.02)
            if sig == signal.SIGINT:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        proc.wait(timeout=60)
        took = time.monotonic() - sent
    finally:  # a run that did not stop must not spin on after the test
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = proc.stderr.read()
    expected = {130 if sig == signal.SIGINT else 143}
    if times == 2:  # the second ^C may find the interpreter exiting, with the default
        expected.add(-sig)  # action restored: killed by SIGINT, which a shell shows as 130
    assert proc.returncode in expected, err
    assert took < 5.0, f"the run took {took:.1f} s to stop"
    assert "Traceback" not in err and "failed" not in err and "Warning" not in err, err
    if times == 1 or "interrupted: kept " in err:  # (a second ^C may cut the last line)
        kept = int(err.split("interrupted: kept ")[1].split()[0])
        assert kept == _n_folds(out) >= before
        inv = json.loads((out / "metadata.json").read_text())["invocations"][-1]
        assert inv["status"] == "interrupted" and inv["failures"] == []
    assert _n_folds(out) >= before
    assert _wait_no_process(proc.pid) == []
    monkeypatch.delenv("RUNSTANDIN_SPIN_AFTER")
    assert run_cli(str(cfg), "--output", str(out)) == 0
    assert_same_results(out, reference)


def test_the_forked_worker_does_not_hold_the_run_lock(tmp_path, plugin_file):
    """The --jobs 1 worker is forked from the runner: killing the runner must free the
    directory at once, not when the worker notices its parent is gone."""
    cfg = make_config(tmp_path, plugin_file)
    out = tmp_path / "run"
    proc = _start(cfg, out, tmp_path, jobs=1, delay=0.3)
    _wait_folds(proc, out, 1)
    assert rundir.lock_holder(out) == proc.pid
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert rundir.lock_holder(out) is None
    assert _wait_no_process(proc.pid) == []


def test_a_worker_killed_from_outside_is_one_line_and_keeps_the_folds(tmp_path, plugin_file):
    """The --jobs 1 worker killed (as the kernel's out-of-memory killer would): the run
    says so in one line, exits 2 and keeps what it stored; a resume completes it."""
    cfg = make_config(tmp_path, plugin_file)
    out = tmp_path / "run"
    proc = _start(cfg, out, tmp_path, jobs=1, delay=0.3)
    _wait_folds(proc, out, 2)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    assert children, "no worker process"
    os.kill(int(children[0]), signal.SIGKILL)
    proc.wait(timeout=60)
    err = proc.stderr.read()
    assert proc.returncode == 2 and "Traceback" not in err, err
    _one_line_error(err, "a worker process died", "are kept in")
    kept = _n_folds(out)
    assert kept >= 2
    assert run_cli(str(cfg), "--output", str(out)) == 0
    assert _n_folds(out) == 24


def test_store_schema_version_recorded_and_newer_refused(tmp_path, plugin_file, capsys):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["schema_version"] == store.SCHEMA_VERSION
    meta["schema_version"] = store.SCHEMA_VERSION + 1
    (out / "metadata.json").write_text(json.dumps(meta))
    capsys.readouterr()
    assert main(["status", str(out)]) == 2
    assert "newer workbench" in capsys.readouterr().err


def test_corrupt_predictions_of_a_complete_pair_are_recomputed(tmp_path, plugin_file, capsys):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 0
    before = store.load_predictions(out, "iris", "S")
    parquet = store.parquet_path(out, "iris", "S")
    parquet.write_bytes(b"")
    capsys.readouterr()
    assert main(["status", str(out)]) == 0
    assert "1 corrupt" in capsys.readouterr().out
    assert run_cli(str(cfg), "--output", str(out)) == 0
    err = capsys.readouterr().err
    assert f"corrupt: {parquet}" in err and "1 pair(s) already complete" in err
    assert store.load_predictions(out, "iris", "S").equals(before)


def test_corrupt_metadata_is_reported_and_replaced(tmp_path, plugin_file, capsys):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 0
    (out / "metadata.json").write_text('{"name": ')
    capsys.readouterr()
    assert main(["status", str(out)]) == 2
    assert "metadata.json: corrupt stored result" in capsys.readouterr().err
    assert run_cli(str(cfg), "--output", str(out)) == 0
    err = capsys.readouterr().err
    assert "corrupt:" in err and "metadata.json" in err and "2 pair(s) already complete" in err
    assert json.loads((out / "metadata.json").read_text())["invocations"][-1]["status"] == \
        "complete"


# ----- issue 34: the last silent inputs --------------------------------------------------------
def _one_line_error(err: str, *parts: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in lines[0], (part, lines[0])


@pytest.mark.parametrize("bad, what", [
    ("nan", "non-finite probability"),
    ("negative", "negative probability"),
    ("unnormalised", "sums to"),
])
def test_a_learner_returning_impossible_probabilities_fails_its_pair(tmp_path, plugin_file,
                                                                      capsys, bad, what):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",),
                      extra_learners=f"  Broken: {{learner: RunStandIn, bad: '{bad}'}}\n")
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 1
    err = capsys.readouterr().err
    failed = [ln for ln in err.splitlines() if ln.startswith("failed: ")]
    assert len(failed) == 1, err
    assert "iris / Broken (round 0, fold 0): learner 'RunStandIn'" in failed[0]
    assert what in failed[0]
    assert not store.stored_folds(out, "iris", "Broken")  # nothing stored of the pair
    assert len(store.stored_folds(out, "iris", "S")) == 4  # the others are kept


def test_probability_problem_accepts_rounding_only():
    from workbench.evaluation.pipeline import probability_problem

    ok = np.array([[0.2, 0.8], [1.0 - 1e-9, 1e-9], [0.5, 0.5 + 5e-7]])
    assert probability_problem(ok) == ""
    assert "row 1" in probability_problem(np.array([[0.5, 0.5], [0.5, 0.6]]))
    assert "non-finite" in probability_problem(np.array([[np.inf, 0.0]]))
    # Weka's trees subtract fractional weights: RF10 on labor gives -2.25e-17 for a 0
    assert probability_problem(np.array([[-2.2534958159417487e-17, 1.0]])) == ""
    assert "negative" in probability_problem(np.array([[-1e-9, 1.0 + 1e-9]]))


def test_weka_forest_rounding_below_zero_does_not_fail_the_fold():
    from workbench.evaluation.cv import cross_validate
    from workbench.data.catalog import load_dataset

    cv = cross_validate(load_dataset("labor"), "RF10", rounds=2, folds=5, seed=1)
    assert cv.distributions.min() < 0  # Weka's own output, kept bit for bit
    assert cv.summary["zero_one_loss"] < 0.3


def _csv_config(tmp_path: Path, text: str | bytes, name: str = "d.csv") -> Path:
    f = tmp_path / name
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: c\ndatasets: [{f}]\nprotocol: {{rounds: 1, folds: 2}}\n"
                   "learners: [NB]\n")
    return cfg


@pytest.mark.parametrize("text, parts", [
    ("a,b,class\n" + "".join(f"{i},{i % 3},{i / 4}\n" for i in range(20)),
     ("class column 'class' is numeric with values such as 0.25", "discretise")),
    ("a,a,class\n" + "".join(f"{i},{i % 3},{'xy'[i % 2]}\n" for i in range(20)),
     ("column name 'a' appears more than once",)),
    (b"a,b,class\n" + b"".join(b"%d,\xe9t\xe9,%s\n" % (i, b"xy"[i % 2:i % 2 + 1])
                               for i in range(20)),
     ("column 'b' holds bytes that are not UTF-8", "iconv")),
])
def test_csv_inputs_that_would_mislead_are_refused(tmp_path, capsys, text, parts):
    cfg = _csv_config(tmp_path, text)
    out = tmp_path / "run"
    assert main(["run", str(cfg), "--output", str(out)]) == 2
    _one_line_error(capsys.readouterr().err, "d.csv", *parts)
    assert not out.exists()


def test_whole_number_class_labels_in_csv_are_nominal(tmp_path):
    from workbench.data.sources import load_table

    f = tmp_path / "d.csv"
    f.write_text("a,class\n" + "".join(f"{i},{i % 2}\n" for i in range(10)))
    data = load_table(f)
    assert data.class_attribute.values == ("0", "1") and data.y.tolist() == [0, 1] * 5


def test_impossible_protocol_sizes_are_refused_before_the_first_fold(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    for protocol, parts in (
            ("{rounds: 1, folds: 30}", ("cannot make 30 non-empty folds from 24",)),
            ("{type: learning_curve, sizes: [10, 20], n_test: 10}", ("learning curve",))):
        cfg.write_text(f"name: c\ndatasets: [contact-lenses]\nprotocol: {protocol}\n"
                       "learners: [NB]\n")
        out = tmp_path / "run"
        assert main(["run", str(cfg), "--output", str(out)]) == 2
        _one_line_error(capsys.readouterr().err, f"{cfg}: protocol: cannot be laid on "
                        "contact-lenses (24 rows with a class)", *parts)
        assert not out.exists()


def test_duplicated_yaml_keys_are_refused_with_file_and_line(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: c\ndatasets: [iris]\nlearners: [NB]\nprotocol:\n  rounds: 1\n"
                   "  rounds: 2\n")
    assert main(["run", str(cfg), "--output", str(tmp_path / "run")]) == 2
    _one_line_error(capsys.readouterr().err, f"{cfg}:6:", "duplicate key 'rounds'",
                    "first given on line 5")
    assert not (tmp_path / "run").exists()


def test_cv_and_predict_warn_on_single_class_data(tmp_path, capsys):
    f = tmp_path / "one.arff"
    f.write_text("@relation one\n@attribute a {x,y}\n@attribute c {p,q}\n@data\n" +
                 "x,p\ny,p\n" * 4)
    assert main(["cv", "--learner", "NB", "--data", str(f), "--rounds", "1"]) == 0
    assert "warning: one: every labelled row has class 'p' (single-class data)" in \
        capsys.readouterr().err
    assert main(["predict", "--learner", "NB", "--train", str(f), "--test", str(f)]) == 0
    assert "warning: training data: one: every labelled row has class 'p'" in \
        capsys.readouterr().err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("argv, parts", [
    (["run", "CFG", "--output", "/proc/x"], ("output: cannot write in /proc",)),
    (["cv", "--learner", "NB", "--data", "iris", "--predictions-out", "/proc/x/p.csv"],
     ("--predictions-out /proc/x/p.csv: folder /proc/x does not exist",)),
    (["cv", "--learner", "NB", "--data", "iris", "--folds-out", "/proc/p.csv"],
     ("--folds-out /proc/p.csv: cannot write in /proc",)),
    (["report", "RUN", "--out", "/proc/x"], ("--out: cannot write in /proc",)),
])
def test_unwritable_outputs_are_one_line_before_any_work(tmp_path, plugin_file, capsys,
                                                         argv, parts):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    if "RUN" in argv:
        assert run_cli(str(cfg), "--output", str(tmp_path / "r")) == 0
        capsys.readouterr()
    argv = [str(cfg) if a == "CFG" else str(tmp_path / "r") if a == "RUN" else a
            for a in argv]
    assert main(argv) == 2
    _one_line_error(capsys.readouterr().err, *parts)


def test_a_write_failure_mid_run_exits_3_and_keeps_what_was_stored(tmp_path, plugin_file,
                                                                   capsys, monkeypatch):
    from test_runner import full_disk_after

    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    out = tmp_path / "run"
    real = store.write_fold
    full_disk_after(monkeypatch, 3, out)
    assert run_cli(str(cfg), "--output", str(out)) == 3
    err = capsys.readouterr().err
    _one_line_error(err, "cannot write", "No space left on device",
                    "the 3 fold(s) stored before are kept")
    assert stored_fold_count(out) == 3
    monkeypatch.setattr(store, "write_fold", real)
    assert run_cli(str(cfg), "--output", str(out)) == 0  # resumes
    assert stored_fold_count(out) == 8


def test_output_in_a_config_is_relative_to_the_config_file(tmp_path, plugin_file, capsys,
                                                           monkeypatch):
    sub = tmp_path / "cfg"
    sub.mkdir()
    cfg = make_config(sub, plugin_file, datasets=("iris",))
    cfg.write_text(cfg.read_text() + "output: runs/tiny\n")
    cwd = tmp_path / "elsewhere"
    (cwd / "runs" / "tiny").mkdir(parents=True)
    (cwd / "runs" / "tiny" / store.CONFIG_HASH).write_text("an earlier run\n")
    monkeypatch.chdir(cwd)
    assert main(["run", str(cfg), "--no-report"]) == 0
    err = capsys.readouterr().err
    assert (sub / "runs" / "tiny" / "summary.csv").is_file()
    assert f"so this run writes to {sub / 'runs' / 'tiny'}" in err
    assert "resume it with --output runs/tiny" in err
    assert (cwd / "runs" / "tiny" / store.CONFIG_HASH).read_text() == "an earlier run\n"


def test_a_platform_without_file_locks_is_refused_in_one_line(tmp_path, plugin_file, capsys,
                                                             monkeypatch):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    monkeypatch.setattr(rundir, "fcntl", None)
    monkeypatch.setattr(rundir, "msvcrt", None)
    assert run_cli(str(cfg), "--output", str(tmp_path / "run")) == 2
    _one_line_error(capsys.readouterr().err, "no file lock (neither fcntl nor msvcrt)")


def test_metadata_and_status_say_what_produced_the_run(tmp_path, plugin_file):
    cfg = make_config(tmp_path, plugin_file, datasets=("iris",))
    out = tmp_path / "run"
    assert run_cli(str(cfg), "--output", str(out)) == 0
    prov = json.loads((out / "metadata.json").read_text())["provenance"]
    from workbench import __version__

    assert prov["workbench_version"] == __version__
    for name in ("numpy", "numba", "scipy", "pyarrow"):
        assert prov["packages"][name]
    assert prov["python_build"]["implementation"] and prov["python"] == sys.version.split()[0]
    if (REPO / ".git").exists():  # a checkout: its commit, and whether it was clean
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        assert prov["git"]["commit"] == head and isinstance(prov["git"]["dirty"], bool)
    res = subprocess.run([sys.executable, "-m", "workbench", "status", str(out)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0
    produced = [ln for ln in res.stdout.splitlines() if ln.startswith("produced by: ")]
    assert produced and f"workbench {__version__}" in produced[0]
    assert f"numba {prov['packages']['numba']}" in produced[0]
    if prov["git"]:
        assert f"git {prov['git']['commit'][:12]}" in produced[0]
    assert any(ln.startswith("python: ") for ln in res.stdout.splitlines())


def test_git_state_is_none_outside_a_checkout(tmp_path):
    from workbench.experiment.provenance import git_state

    assert git_state(tmp_path) is None


def test_the_prequential_protocol_checks_distributions_too():
    """Out-of-core and prequential folds go through the same check as run_fold."""
    from workbench.data.catalog import load_dataset
    from workbench.errors import LearnerError
    from workbench.evaluation.outofcore import prequential_loop

    class NaNStream:
        preprocessing = "none"
        _header = None

        def partial_fit(self, data):
            self._header = data
            return self

        def predict_proba(self, data):
            return np.full((data.n_instances, data.n_classes), np.nan)

    data = load_dataset("iris")
    windows = [(lo, data.take(np.arange(lo, lo + 50))) for lo in (0, 50, 100)]
    with pytest.raises(LearnerError, match="learner 'NaNStream': predict_proba returned a "
                                           "non-finite probability"):
        prequential_loop(windows, NaNStream(), data)
