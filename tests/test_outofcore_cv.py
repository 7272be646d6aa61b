"""k-fold CV out of core (`evaluation.outofcore.kfold`) = k-fold CV in memory on the same
folds (``assignment: rows``), fold by fold and row by row."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.data.arff import load_arff, save_arff
from workbench.data.dataset import Attribute, Dataset
from workbench.errors import WorkbenchError
from workbench.evaluation.cv import evaluate
from workbench.evaluation.metrics import loss_sums, pooled_metrics
from workbench.evaluation.outofcore import evaluate_kfold
from workbench.evaluation.protocols import KFold
from workbench.evaluation.splits import make_splits, row_folds

from conftest import EMBEDDED


def _in_memory(data, learner, folds, rounds, seed):
    return evaluate(data, learner, None, KFold(rounds=rounds, folds=folds, seed=seed,
                                               assignment="rows"))


def _out_of_core(path, learner, folds, rounds, seed, chunk_rows):
    got = {}

    def keep(r, folds, idx, proba, y):  # a chunk's rows in file order, each with its fold
        assert (np.diff(idx) > 0).all()
        for f in np.unique(folds):
            mine = folds == f
            got.setdefault((r, int(f)), []).append((idx[mine], proba[mine]))

    res = evaluate_kfold(path, learner, folds=folds, rounds=rounds, seed=seed,
                         chunk_rows=chunk_rows, keep=keep)
    return res, {key: (np.concatenate([i for i, _ in parts]),
                       np.vstack([p for _, p in parts])) for key, parts in got.items()}


def test_row_folds_are_balanced_seeded_and_independent_of_chunking():
    whole = row_folds(0, 1003, 10, 7, 2)
    assert sorted(np.bincount(whole).tolist()) == [100] * 7 + [101] * 3
    pieces = np.concatenate([row_folds(s, min(13, 1003 - s), 10, 7, 2)
                             for s in range(0, 1003, 13)])
    np.testing.assert_array_equal(pieces, whole)
    for b in range(100):  # each block of k consecutive rows: one row per fold
        assert sorted(whole[10 * b: 10 * b + 10]) == list(range(10))
    assert (row_folds(0, 1003, 10, 8, 2) != whole).mean() > 0.8  # another seed, other folds
    assert (row_folds(0, 1003, 10, 7, 3) != whole).mean() > 0.8  # another round
    np.testing.assert_array_equal(make_splits(1003, 3, 10, 7, assignment="rows")[2], whole)
    with pytest.raises(WorkbenchError, match="cannot stratify"):
        KFold(folds=3, stratify=True, assignment="rows")


@pytest.mark.parametrize("learner", ["NB", "A1DE", "A2DE-SW", "KDB2", "SKDB", "ASAODE",
                                     "WANBIA-C-SGD", "VWLF"])
def test_out_of_core_cv_equals_in_memory_cv(learner, tmp_path):
    """labor (numeric attributes discretised per training fold, missing values): the same
    folds, cut points and probabilities (1e-12) as in memory, chunk by chunk of 7 rows
    (VW: its examples spooled to disk in the pass, its passes in the in-memory shuffle)."""
    if learner == "VWLF":
        pytest.importorskip("vowpalwabbit")
    data = load_arff(EMBEDDED / "labor.arff.gz")
    mem = _in_memory(data, learner, 5, 2, 3)
    res, got = _out_of_core(EMBEDDED / "labor.arff.gz", learner, 5, 2, 3, 7)
    assert res.summary["subtraction"] is False  # per-fold cut points: side by side
    for fr in mem.fold_results:
        idx, proba = got[(fr.round, fr.fold)]
        np.testing.assert_array_equal(idx, fr.test_index)
        np.testing.assert_allclose(proba, fr.proba, rtol=0, atol=1e-12)
        fold = res.folds[fr.round * 5 + fr.fold]
        assert fold.cuts == fr.cuts and fold.n_train == fr.n_train
    want = pooled_metrics([loss_sums(fr.proba, mem.y[fr.test_index])
                           for fr in mem.fold_results], data.n_classes)
    for key, value in want.items():
        assert res.summary[key] == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("learner", ["NB", "A1DE", "A2DE", "A1DE-SW"])
def test_count_subtraction_on_nominal_data_equals_in_memory_cv(learner, tmp_path):
    """All-nominal data (with missing values and missing classes): one counting pass,
    fold f's training table = total − fold f's table; the same probabilities as counting
    the other folds' rows in memory."""
    data = _nominal(400)
    path = tmp_path / "nominal.arff"
    save_arff(data, path)
    mem = _in_memory(data, learner, 10, 1, 5)
    res, got = _out_of_core(path, learner, 10, 1, 5, 50)
    assert res.summary["subtraction"] is True and res.summary["passes"] == 3
    for fr in mem.fold_results:
        idx, proba = got[(fr.round, fr.fold)]
        np.testing.assert_array_equal(idx, fr.test_index)
        np.testing.assert_allclose(proba, fr.proba, rtol=0, atol=1e-12)
        assert res.folds[fr.fold].n_train == fr.n_train


@pytest.mark.parametrize("route", ["families", "structures"])
@pytest.mark.parametrize("learner", ["KDB2", "TAN", "SKDB"])
def test_shared_additive_passes_equal_in_memory_cv(learner, route, tmp_path, monkeypatch):
    """KDB-family passes shared between folds: the structure counts by subtraction, the
    family counts from one joint count of the folds' parents (``families``) or, without it,
    by subtraction among folds of one structure (``structures``) — the same probabilities
    as counting each fold's training rows in memory, also for a fold whose structure no
    other fold has (a missing value only in its own test rows: no `?` code in its model),
    with joint counts split (a tiny `FAMILY_SPACE`), and for a holdout (one model)."""
    from workbench.evaluation.outofcore import side_by_side, subtraction

    if route == "structures":
        monkeypatch.setattr(side_by_side, "shares_families", lambda *a: False)
    else:
        monkeypatch.setattr(subtraction, "FAMILY_SPACE", 1)
    data = _nominal(400)
    X = data.X.copy()
    X[np.isnan(X[:, 2]), 2] = 0.0
    X[17, 2] = np.nan  # one row's missing value: its fold's model has no `?` code
    data = data.replace(X=X)
    path = tmp_path / "nominal.arff"
    save_arff(data, path)
    mem = _in_memory(data, learner, 10, 1, 5)
    res, got = _out_of_core(path, learner, 10, 1, 5, 50)
    assert res.summary["subtraction"] is True
    for fr in mem.fold_results:
        idx, proba = got[(fr.round, fr.fold)]
        np.testing.assert_array_equal(idx, fr.test_index)
        np.testing.assert_allclose(proba, fr.proba, rtol=0, atol=1e-12)
        assert res.folds[fr.fold].n_train == fr.n_train
    test = np.arange(0, 380, 4)
    hold = evaluate_kfold(path, learner, test=test, chunk_rows=50)
    assert hold.summary["subtraction"] is False and len(hold.folds) == 1


def test_the_family_pass_codes_numeric_rows_with_the_folds_shared_cut_points(monkeypatch):
    """labor (numeric attributes): when every fold has the same cut points (here forced:
    the first fold's for all), the family counts come from one joint count of the rows as
    those cut points code them — the probabilities of the route that shares the counts
    only among folds of one structure."""
    from workbench.evaluation.outofcore import kfold, side_by_side

    real = kfold.fold_discretizers

    def same_cuts(method, res, scored):
        discs = real(method, res, scored)
        return [discs[scored[0]] if d is not None else None for d in discs]

    monkeypatch.setattr(kfold, "fold_discretizers", same_cuts)
    got = {}
    for route in ("families", "structures"):
        if route == "structures":
            monkeypatch.setattr(side_by_side, "shares_families", lambda *a: False)
        res, got[route] = _out_of_core(EMBEDDED / "labor.arff.gz", "KDB2", 5, 1, 3, 7)
        assert res.summary["subtraction"] is True  # (the other route: by structure)
    for key, (idx, proba) in got["families"].items():
        np.testing.assert_array_equal(idx, got["structures"][key][0])
        np.testing.assert_allclose(proba, got["structures"][key][1], rtol=0, atol=1e-12)


def _nominal(n):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, n)
    X = np.stack([(y + rng.integers(0, 2, n)) % 3, rng.integers(0, 4, n),
                  rng.integers(0, 2, n)], 1).astype(float)
    X[rng.random(X.shape) < 0.05] = np.nan
    y[rng.random(n) < 0.02] = -1
    atts = tuple(Attribute(f"a{i}", tuple(f"v{j}" for j in range(c)))
                 for i, c in enumerate((3, 4, 2)))
    return Dataset("nominal", atts, Attribute("class", ("p", "q", "r")), X, y)


def test_a_discretisation_sample_smaller_than_the_training_fold():
    """⌈sample / (k − 1)⌉ rows of each fold's reservoir: cut points from about `sample`
    rows of each training fold, seeded (the same twice), not those of all rows."""
    path = EMBEDDED / "labor.arff.gz"
    a = evaluate_kfold(path, "NB", folds=3, seed=1, sample=10)
    b = evaluate_kfold(path, "NB", folds=3, seed=1, sample=10)
    full = evaluate_kfold(path, "NB", folds=3, seed=1)
    assert [f.cuts for f in a.folds] == [f.cuts for f in b.folds]
    assert [f.cuts for f in a.folds] != [f.cuts for f in full.folds]
    assert a.summary["discretize_sample"] == 10


def test_k_fold_cv_on_dask_workers_equals_one_process(tmp_path):
    """Row groups' fold tables counted on two worker processes, summed in a tree, scored
    there: the per-fold loss sums of one process — with count subtraction (nominal data)
    and with per-fold cut points (labor: each row group counted into k − 1 fold models)."""
    distributed = pytest.importorskip("distributed")
    import pyarrow.parquet as pq
    from test_sources import _frame

    nominal, numeric = tmp_path / "nominal.parquet", tmp_path / "labor.parquet"
    _frame(_nominal(300)).to_parquet(nominal, index=False, row_group_size=40)
    _frame(load_arff(EMBEDDED / "labor.arff.gz")).to_parquet(numeric, index=False,
                                                             row_group_size=10)
    assert pq.ParquetFile(nominal).metadata.num_row_groups == 8
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for path, learner, subtracts in ((nominal, "A2DE", True), (numeric, "A1DE", False)):
            dist = evaluate_kfold(path, learner, folds=5, rounds=2, seed=4, client=client)
            local = evaluate_kfold(path, learner, folds=5, rounds=2, seed=4, chunk_rows=9)
            assert dist.summary["subtraction"] is local.summary["subtraction"] is subtracts
            for a, b in zip(dist.folds, local.folds):
                assert (a.round, a.fold, a.n_train, a.sums.n, a.sums.errors) == \
                    (b.round, b.fold, b.n_train, b.sums.n, b.sums.errors)
                np.testing.assert_allclose(a.sums, b.sums, rtol=1e-12)
        with pytest.raises(WorkbenchError, match="several passes"):
            evaluate_kfold(nominal, "KDB2", folds=3, client=client)


def test_cli_cross_validation_writes_folds_and_streams_predictions(tmp_path):
    """`evaluate --cv`: the JSON summary, the per-fold CSV and the streamed predictions (a
    row per tested row, probabilities those of the in-memory CV); bad options are one
    error line and leave no file behind."""
    import subprocess
    import sys

    import pandas as pd

    folds_csv, preds = tmp_path / "folds.csv", tmp_path / "p.parquet"
    cmd = [sys.executable, "-m", "workbench", "-q", "evaluate", "--learner", "A1DE", "--data",
           str(EMBEDDED / "labor.arff.gz"), "--cv", "3", "--rounds", "2", "--seed", "2"]
    out = subprocess.run(cmd + ["--folds-out", str(folds_csv), "--predictions-out",
                                str(preds)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    folds = pd.read_csv(folds_csv)
    assert folds[["round", "fold"]].values.tolist() == [[r, f] for r in (0, 1)
                                                        for f in (0, 1, 2)]
    assert folds["n_test"].sum() == 2 * 57
    p = pd.read_parquet(preds).sort_values(["round", "index"])
    assert len(p) == 2 * 57 and list(p.columns[:5]) == ["round", "fold", "index", "y",
                                                         "predicted"]
    mem = _in_memory(load_arff(EMBEDDED / "labor.arff.gz"), "A1DE", 3, 2, 2)
    np.testing.assert_allclose(p[["p_bad", "p_good"]].to_numpy(),
                               mem.distributions.reshape(-1, 2), rtol=0, atol=1e-12)
    bad = subprocess.run(cmd[:-4] + ["--cv", "1"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--cv: expected K >= 2 folds" in bad.stderr
    before = sorted(tmp_path.iterdir())
    cmd[cmd.index("A1DE")] = "NoSuchLearner"  # fails after the predictions file is opened
    bad = subprocess.run(cmd + ["--predictions-out", str(tmp_path / "no.parquet")],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "NoSuchLearner" in bad.stderr
    assert "Traceback" not in bad.stderr and sorted(tmp_path.iterdir()) == before


def _run_configs(tmp_path, body: str, variants: dict[str, str], *args: str) -> None:
    """Write `body` + each variant's extra lines as <name>.yaml (output <name>/) and run
    them in turn."""
    from workbench.__main__ import main

    for name, extra in variants.items():
        (tmp_path / f"{name}.yaml").write_text(body + extra + f"output: {tmp_path / name}\n")
        assert main(["-q", "run", str(tmp_path / f"{name}.yaml"), "--no-report", *args]) == 0


def test_a_config_run_out_of_core_equals_the_run_in_memory(tmp_path, monkeypatch):
    """`out_of_core: true`: each data file read in chunks, a task per round; the stored
    folds, predictions (1e-12) and summaries (bias/variance included) of the same config
    in memory with `assignment: rows`; a rerun resumes; bad combinations name the field."""
    from workbench import store
    from workbench.__main__ import main
    from workbench.errors import ConfigError
    from workbench.experiment.config import parse_config

    nominal = tmp_path / "nominal.arff"
    save_arff(_nominal(200), nominal)
    body = f"""
name: ooc
datasets: [{EMBEDDED / 'labor.arff.gz'}, {nominal}]
protocol: {{rounds: 3, folds: 4, seed: 2, assignment: rows}}
learners: [NB, A1DE, KDB2]
"""
    _run_configs(tmp_path, body, {"mem": "", "ooc": "out_of_core: {chunk_rows: 16}\n"})
    a, b = store.load_summary(tmp_path / "mem"), store.load_summary(tmp_path / "ooc")
    for metric in ("zero_one_loss", "rmse", "log_loss", "bias", "variance"):
        np.testing.assert_allclose(a[metric], b[metric], rtol=1e-12)
    for ds in ("labor", "nominal"):
        for learner in ("NB", "A1DE", "KDB2"):
            fa = {(r["round"], r["fold"]): r for r in
                  store.read_folds(tmp_path / "mem", ds, learner)}
            fb = {(r["round"], r["fold"]): r for r in
                  store.read_folds(tmp_path / "ooc", ds, learner)}
            assert fa.keys() == fb.keys() and len(fa) == 12
            for key in fa:
                np.testing.assert_array_equal(fa[key]["test_index"], fb[key]["test_index"])
                np.testing.assert_allclose(fa[key]["proba"], fb[key]["proba"], atol=1e-12)
    assert main(["-q", "run", str(tmp_path / "ooc.yaml"), "--no-report"]) == 0  # resumes
    for bad, field in (("out_of_core: {chunk: 5}\n", "out_of_core.chunk"),
                       ("out_of_core: true\nprotocol: {folds: 3, assignment: shuffle}\n",
                        "protocol.assignment")):
        with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
            parse_config("name: x\ndatasets: [iris]\nlearners: [NB]\n" + bad)


@pytest.mark.parametrize("fold_in_memory", [None, 0])
def test_streamed_predictions_give_the_in_memory_summary_for_every_metric(
        tmp_path, monkeypatch, fold_in_memory):
    """Out of core, each round's predictions are streamed to a file as they are scored;
    the summary — bias/variance by a lockstep pass over the rounds' files, Brier and kappa
    from sufficient statistics, AUC by a bucketed external sort (per fold too, with
    `FOLD_IN_MEMORY` 0) — equals the in-memory run's for every metric, per fold too
    (1e-12), and the pair keeps one predictions file equal to the in-memory one."""
    from workbench import store
    from workbench.evaluation import summary

    if fold_in_memory is not None:
        monkeypatch.setattr(summary, "FOLD_IN_MEMORY", fold_in_memory)

    nominal = tmp_path / "nominal.arff"
    save_arff(_nominal(300), nominal)
    body = f"""
name: ooc
datasets: [{nominal}]
protocol: {{rounds: 3, folds: 5, seed: 2, assignment: rows}}
learners: [NB, KDB2]
"""
    _run_configs(tmp_path, body, {"mem": "", "ooc": "out_of_core: {chunk_rows: 37}\n"})
    a = store.load_summary(tmp_path / "mem").set_index("learner")
    b = store.load_summary(tmp_path / "ooc").set_index("learner")
    metrics = ["zero_one_loss", "rmse", "rmse_true_class", "log_loss", "brier", "auc", "kappa",
               "f1_macro", "mcc", "ece", "bias", "variance", "bias_weka_corrected"]
    for m in metrics:
        np.testing.assert_allclose(a[m], b[m], rtol=1e-12, err_msg=m)
    fa, fb = (store.load_fold_metrics(tmp_path / w) for w in ("mem", "ooc"))
    key = ["learner", "round", "fold", "metric"]
    fa, fb = (f[f["metric"].isin(metrics)].sort_values(key).reset_index(drop=True)
              for f in (fa, fb))
    assert len(fa) == len(fb) == 2 * 15 * 10  # (10 of them per fold)
    np.testing.assert_allclose(fa["value"], fb["value"], rtol=1e-12)
    for key in ("confusion", "calibration"):  # the report's per-class and calibration input
        ma, mb = (store.load_pair_arrays(tmp_path / w, key) for w in ("mem", "ooc"))
        assert set(ma) == set(mb) == {("nominal", "NB"), ("nominal", "KDB2")}
        for pair in ma:
            np.testing.assert_allclose(ma[pair], mb[pair], rtol=1e-12, err_msg=key)
    for learner in ("NB", "KDB2"):
        pair = store.pair_dir(tmp_path / "ooc", "nominal", learner)
        assert sorted(p.name for p in pair.iterdir()) == ["predictions.parquet",
                                                         "summary.json"]
        pm = store.load_predictions(tmp_path / "mem", "nominal", learner)
        po = store.load_predictions(tmp_path / "ooc", "nominal", learner)
        key = ["round", "fold", "index"]
        pm, po = (p.sort_values(key).reset_index(drop=True) for p in (pm, po))
        assert pm[key + ["y"]].equals(po[key + ["y"]])
        np.testing.assert_allclose(pm.filter(like="p_"), po.filter(like="p_"), atol=1e-12)


@pytest.mark.parametrize("protocol", [
    "{type: sampled, n_train: 60, n_test: 50, repetitions: 3, seed: 4}",
    "{type: learning_curve, sizes: [20, 60, 120], n_test: 50, seed: 4}"])
def test_sampled_and_learning_curve_protocols_out_of_core_equal_in_memory(protocol, tmp_path):
    """Their folds' rows gathered from the file in one pass (`gather_rows`): the same
    rows in the same order as in memory, so the same folds, predictions and summaries —
    bias/variance of the sampled protocol included — bit for bit."""
    from workbench import store

    data = tmp_path / "nominal.arff"
    save_arff(_nominal(400), data)
    body = f"name: s\ndatasets: [{data}, {EMBEDDED / 'labor.arff.gz'}]\n" \
        f"protocol: {protocol}\nlearners: [NB, A1DE]\n"
    if "learning_curve" in protocol:  # labor has 57 rows
        body = body.replace(f", {EMBEDDED / 'labor.arff.gz'}", "")
    else:
        body = body.replace("n_train: 60, n_test: 50", "n_train: 30, n_test: 20")
    _run_configs(tmp_path, body, {"mem": "", "ooc": "out_of_core: {chunk_rows: 25}\n"})
    a, b = store.load_summary(tmp_path / "mem"), store.load_summary(tmp_path / "ooc")
    cols = [c for c in ("zero_one_loss", "rmse", "log_loss", "bias", "variance")
            if c in a.columns]
    pd_eq = a[cols].to_numpy() == b[cols].to_numpy()
    assert pd_eq.all() and len(a) == len(b) > 0
    for ds in sorted(set(a.dataset)):
        for learner in ("NB", "A1DE"):
            fa = store.read_folds(tmp_path / "mem", ds, learner)
            fb = store.read_folds(tmp_path / "ooc", ds, learner)
            assert len(fa) == len(fb) == 3
            for ra, rb in zip(sorted(fa, key=lambda r: r["round"]),
                              sorted(fb, key=lambda r: r["round"])):
                np.testing.assert_array_equal(ra["test_index"], rb["test_index"])
                np.testing.assert_array_equal(ra["proba"], rb["proba"])
                assert ra["n_train"] == rb["n_train"]


def test_out_of_core_without_predictions_stores_loss_sums_only(tmp_path):
    """`out_of_core: {predictions: false}`: each fold stores its loss sums, not its rows'
    predictions; the pair's losses, per-fold values and times are those of the run with
    predictions, without bias/variance (which need them)."""
    from workbench import store
    from workbench.__main__ import main
    from workbench.errors import ConfigError
    from workbench.experiment.config import parse_config

    nominal = tmp_path / "nominal.arff"
    save_arff(_nominal(300), nominal)
    body = f"name: ooc\ndatasets: [{nominal}, {EMBEDDED / 'labor.arff.gz'}]\n" \
        "protocol: {rounds: 2, folds: 5, seed: 3}\nlearners: [NB, A2DE, KDB1]\n"
    _run_configs(tmp_path, body, {
        "with": "out_of_core: true\n",
        "sums": "out_of_core: {predictions: false, chunk_rows: 40}\n"})
    a = store.load_summary(tmp_path / "with")
    b = store.load_summary(tmp_path / "sums")
    for metric in ("zero_one_loss", "rmse", "rmse_true_class", "log_loss",
                   "zero_one_loss_std", "rmse_std"):
        np.testing.assert_allclose(a[metric], b[metric], rtol=1e-12)
    assert a["bias"].notna().all() and ("bias" not in b or b["bias"].isna().all())
    folds = store.read_folds(tmp_path / "sums", "nominal", "A2DE")
    assert len(folds) == 10 and all(f["proba"].shape == (0, 3) for f in folds)
    ra = store.read_summary(tmp_path / "with", "labor", "KDB1")["per_fold"]
    rb = store.read_summary(tmp_path / "sums", "labor", "KDB1")["per_fold"]
    np.testing.assert_allclose(ra["rmse"], rb["rmse"], rtol=1e-12)
    assert main(["-q", "run", str(tmp_path / "sums.yaml"), "--no-report"]) == 0  # complete
    with pytest.raises(ConfigError, match=r"out_of_core\.predictions: false applies to k-fold"):
        parse_config("name: x\ndatasets: [iris]\nlearners: [NB]\nprotocol: {type: sampled}\n"
                     "out_of_core: {predictions: false}\n")


@pytest.mark.parametrize("learner", ["A1DE", "KDB2", "WANBIA-C-SGD"])
def test_a_holdout_out_of_core_equals_in_memory(learner, tmp_path):
    """protocol holdout with out_of_core: the plan's test rows score, every other row
    trains, read in chunks (counting passes, a scoring pass): the in-memory predictions
    (1e-12) when the discretisation sample holds every training row; with predictions
    false, the same losses."""
    from workbench import store

    body = f"name: h\ndatasets: [{EMBEDDED / 'labor.arff.gz'}]\n" \
        f"protocol: {{type: holdout, fraction: 0.3, seed: 5}}\nlearners: [{learner}]\n"
    _run_configs(tmp_path, body, {
        "mem": "", "ooc": "out_of_core: {chunk_rows: 8}\n",
        "sums": "out_of_core: {chunk_rows: 8, predictions: false}\n"})
    (a,), (b,) = (store.read_folds(tmp_path / n, "labor", learner) for n in ("mem", "ooc"))
    np.testing.assert_array_equal(a["test_index"], b["test_index"])
    np.testing.assert_allclose(a["proba"], b["proba"], rtol=0, atol=1e-12)
    assert a["n_train"] == b["n_train"] == 57 - 17
    sa, sc = (store.load_summary(tmp_path / n) for n in ("mem", "sums"))
    for metric in ("zero_one_loss", "rmse", "log_loss"):
        np.testing.assert_allclose(sa[metric], sc[metric], rtol=1e-12)


@pytest.mark.parametrize("predictions", [True, False])
def test_a_prequential_stream_out_of_core_equals_in_memory(predictions, tmp_path):
    """protocol prequential with out_of_core: the file's rows with a class in the windows
    they have in memory (a missing class in the file included): the same predictions, or
    with predictions false the same losses."""
    from workbench import store

    data = tmp_path / "nominal.arff"
    save_arff(_nominal(230), data)
    body = f"name: p\ndatasets: [{data}]\nprotocol: {{type: prequential, window: 30}}\n" \
        "learners: [NB, A1DE]\n"
    ooc = "out_of_core: {chunk_rows: 17" + ("" if predictions else ", predictions: false") \
        + "}\n"
    _run_configs(tmp_path, body, {"mem": "", "ooc": ooc})
    sa, sb = (store.load_summary(tmp_path / n) for n in ("mem", "ooc"))
    for metric in ("zero_one_loss", "rmse", "log_loss"):
        np.testing.assert_allclose(sa[metric], sb[metric], rtol=1e-12)
    if predictions:
        (a,), (b,) = (store.read_folds(tmp_path / n, "nominal", "A1DE") for n in ("mem", "ooc"))
        np.testing.assert_array_equal(a["test_index"], b["test_index"])
        np.testing.assert_array_equal(a["y"], b["y"])
        np.testing.assert_allclose(a["proba"], b["proba"], rtol=0, atol=1e-12)


def test_out_of_core_runs_on_dask_workers_as_in_one_process(tmp_path):
    """`run --backend dask` with out_of_core: a one-pass learner on a Parquet file is
    counted row group by row group on the workers (tree reduction) and scored there, its
    predictions streamed back in order; any other round (KDB1; an ARFF file) runs whole on
    a worker. The stored predictions and summaries equal those of the run in one process."""
    distributed = pytest.importorskip("distributed")
    from test_sources import _frame

    from workbench import store

    data = tmp_path / "nominal.arff"
    save_arff(_nominal(200), data)
    parquet = tmp_path / "groups.parquet"
    _frame(_nominal(300)).to_parquet(parquet, index=False, row_group_size=40)
    body = f"name: d\ndatasets: [{data}, {parquet}, {EMBEDDED / 'labor.arff.gz'}]\n" \
        "protocol: {rounds: 2, folds: 3, seed: 8}\nout_of_core: {chunk_rows: 30}\n" \
        "learners: [A1DE, KDB1]\n"
    _run_configs(tmp_path, body, {"one": ""})
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        _run_configs(tmp_path, body, {"dask": ""}, "--backend", "dask", "--scheduler",
                     cluster.scheduler_address)
        ran = client.run_on_scheduler(lambda dask_scheduler: sorted(
            dask_scheduler.task_prefixes))
    assert {"count_folds", "merge_folds", "score_folds", "run_task"} <= set(ran), ran
    a, b = store.load_summary(tmp_path / "one"), store.load_summary(tmp_path / "dask")
    for metric in ("zero_one_loss", "rmse", "log_loss", "bias", "variance"):
        np.testing.assert_array_equal(a[metric], b[metric])
    for ds in ("groups", "nominal"):
        pa, pb = (store.load_predictions(tmp_path / n, ds, "A1DE") for n in ("one", "dask"))
        assert len(pa) == 2 * int((_nominal(300 if ds == "groups" else 200).y >= 0).sum())
        cols = ["round", "fold", "index", "y"]
        assert pa[cols].equals(pb[cols])  # (the probabilities: a row group's batch, 1 ulp)
        np.testing.assert_allclose(pa.drop(columns=cols), pb.drop(columns=cols), rtol=0,
                                   atol=1e-12)


def test_the_memory_budget_counts_every_fold_table_before_reading_the_file(tmp_path,
                                                                          monkeypatch):
    """k-fold CV holds k fold tables, their total and a copy: a budget that one model fits
    but twelve do not is refused from the first record batch, naming the twelve."""
    from workbench.errors import LearnerError
    from workbench.learners.counting.budget import estimate_block_bytes

    from test_sources import _frame

    path = tmp_path / "nominal.parquet"  # (its first record batch gives the bound)
    _frame(_nominal(300)).to_parquet(path, index=False)
    one = estimate_block_bytes([3, 4, 2], 3, [1, 2, 3], 300)
    monkeypatch.setenv("WORKBENCH_MEMORY_BUDGET", str(3 * one))
    with pytest.raises(LearnerError, match="for 12 models held at once would need at least"):
        evaluate_kfold(path, "A2DE", folds=10)
    monkeypatch.setenv("WORKBENCH_MEMORY_BUDGET", str(13 * one))
    assert evaluate_kfold(path, "A2DE", folds=10).summary["n_test"] == \
        int((_nominal(300).y >= 0).sum())  # (the rows with a class)
