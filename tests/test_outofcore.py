"""Out-of-core training and evaluation, incremental discretisation and the prequential
protocol: chunked training equals in-memory training, IDA/IDAW cut points on known streams,
prequential metrics by hand, the CLI."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from workbench.data.arff import load_arff, save_arff
from workbench.data.dataset import Attribute, Dataset
from workbench.data.synthetic import bayes_network_rows, drifting_stream
from workbench.discretize import IncrementalDiscretizer, equal_frequency_cuts, fit_discretizer
from workbench.errors import WorkbenchError
from workbench.evaluation.outofcore import (evaluate_holdout, evaluate_prequential, fit_file,
                                            parse_holdout, prequential_fold)
from workbench.learners.registry import create

from conftest import EMBEDDED, REPO


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """labor (nominal + numeric, missing values) as ARFF, CSV and Parquet."""
    from test_sources import _frame
    folder = tmp_path_factory.mktemp("ooc")
    data = load_arff(EMBEDDED / "labor.arff.gz")
    _frame(data).to_parquet(folder / "labor.parquet", index=False)
    return {"arff": EMBEDDED / "labor.arff.gz", "parquet": folder / "labor.parquet"}


@pytest.mark.parametrize("learner", ["NB", "A1DE", "A2DE-SW", "KDB2", "TAN", "SKDB", "ASAODE",
                                     "BSEAODE-PE", "A2JE", "WANBIA-C-SGD"])
@pytest.mark.parametrize("rows", [1, 7, 1000])
def test_out_of_core_equals_in_memory(files, learner, rows):
    """A sample as large as the data: the same cut points and counts, so the same
    probabilities as fitting in memory (ARFF; Parquet's values in its own header order).
    KDB2 and TAN read the file in two passes, SKDB in three."""
    data = load_arff(files["arff"])
    disc = fit_discretizer(create(learner).preprocessing, data)
    ref = create(learner).fit(disc.transform(data))
    want = ref.predict_proba(disc.transform(data))
    res = fit_file(files["arff"], learner, chunk_rows=rows)
    np.testing.assert_array_equal(res.model.predict_proba(res.discretizer.transform(data)),
                                  want)
    assert res.summary["n_train"] == 57 and res.summary["chunks"] == math.ceil(57 / rows)
    passes = {"KDB2": 2, "TAN": 2, "SKDB": 3, "ASAODE": 2, "A2JE": 2,
              "WANBIA-C-SGD": 3}.get(learner, 1)
    if learner.startswith("BSE"):  # counts, one pass per elimination step, the last step
        k = len(ref.selection_["eliminated"])
        passes = 1 + k + (1 if data.n_attributes - k > 1 else 0)
    assert res.summary["passes"] == 1 + passes
    assert res.summary["replayed"] == passes - 1  # the file decoded once (`Replay`)
    assert getattr(res.model, "selected_", None) == getattr(ref, "selected_", None)
    assert str(getattr(res.model, "selection_", None)) == str(getattr(ref, "selection_", None))
    if learner in ("A2JE", "WANBIA-C-SGD"):
        return  # SPEC §6.2 reads `?` as the first declared value: Parquet's sorted values differ
    pq = fit_file(files["parquet"], learner, chunk_rows=rows)
    np.testing.assert_allclose(pq.model.predict_proba(pq.discretizer.transform(pq.header.replace(
        X=_recode(data, pq.header), y=data.y))), want, rtol=1e-12)


def _recode(data: Dataset, header: Dataset) -> np.ndarray:
    """data's values in `header`'s value order (Parquet headers sort nominal values)."""
    X = data.X.copy()
    for j, (a, b) in enumerate(zip(data.attributes, header.attributes)):
        if a.values is not None:
            order = np.array([b.values.index(v) for v in a.values], dtype=float)
            ok = ~np.isnan(X[:, j])
            X[ok, j] = order[X[ok, j].astype(int)]
    return X


def test_lr_sgd_learns_a_prequential_stream_as_one_pass_in_file_order(files):
    """On a stream LR-SGD takes its stream form: with cut points fixed on the first window,
    the model after the last window is LR-SGD's single pass over all rows in file order;
    the weighted form (counts over all rows first) is refused in one line."""
    data = load_arff(files["arff"])
    res = evaluate_prequential(files["arff"], "LR-SGD", window=10)
    assert res.summary["n_test"] == data.n_instances - 10
    whole = create("LR-SGD").fit(res.discretizer.transform(data))
    np.testing.assert_array_equal(res.model.theta_, whole.theta_)
    with pytest.raises(WorkbenchError, match="on a stream: a stream is learned by the direct"):
        evaluate_prequential(files["arff"], "WANBIA-C-SGD", window=10)


def test_holdout_rows_and_sample(files):
    every = parse_holdout("every:4")
    assert every.test_mask(0, 8, 100).tolist() == [False, False, False, True] * 2
    assert parse_holdout("last:3").test_mask(95, 5, 100).tolist() == [False, False, True,
                                                                      True, True]
    for bad in ("every:1", "last:0", "first:3", "every"):
        with pytest.raises(WorkbenchError, match="--holdout"):
            parse_holdout(bad)
    data = load_arff(files["arff"])
    res = evaluate_holdout(files["arff"], "NB", holdout=every, chunk_rows=5)
    test = np.arange(57) % 4 == 3
    disc = fit_discretizer("mdl", data.take(np.flatnonzero(~test)))
    model = create("NB").fit(disc.transform(data.take(np.flatnonzero(~test))))
    p = model.predict_proba(disc.transform(data.take(np.flatnonzero(test))))
    wrong = np.mean(p.argmax(axis=1) != data.y[test])
    assert (res.summary["n_train"], res.summary["n_test"]) == (43, 14)
    assert res.summary["zero_one_loss"] == pytest.approx(wrong, abs=1e-15)
    # a sample smaller than the training rows: cut points from a seeded reservoir
    small = fit_file(files["arff"], "NB", chunk_rows=5, sample=20, seed=3)
    again = fit_file(files["arff"], "NB", chunk_rows=11, sample=20, seed=3)
    assert small.discretizer.cuts == again.discretizer.cuts
    assert small.summary["discretize_sample"] == 20
    with pytest.raises(WorkbenchError, match="trains in memory only"):
        fit_file(files["arff"], "BayesNet")
    with pytest.raises(WorkbenchError, match="L-BFGS-B evaluates the objective"):
        fit_file(files["arff"], "WANBIA-C")
    with pytest.raises(WorkbenchError, match="several passes"):
        evaluate_prequential(files["arff"], "KDB1")
    with pytest.raises(WorkbenchError, match="several passes"):
        evaluate_prequential(files["arff"], "ASAODE")
    with pytest.raises(WorkbenchError, match="several passes"):
        fit_file(files["parquet"], "SKDB", client=object())
    if importlib.util.find_spec("vowpalwabbit") is not None:  # VW: a spool, then its passes
        with pytest.raises(WorkbenchError, match="only once it has read all its training"):
            evaluate_prequential(files["arff"], "VWLF")


def test_ida_and_idaw_cut_points_on_a_known_stream():
    x = np.arange(1, 1001, dtype=float)
    stream = Dataset("s", (Attribute("v"),), Attribute("c", ("a",)), x[:, None],
                     np.zeros(1000, dtype=np.int64))
    full = IncrementalDiscretizer(stream, bins=4, size=5000)
    window = IncrementalDiscretizer(stream, bins=4, size=100, window=True)
    sample = IncrementalDiscretizer(stream, bins=4, size=100, seed=5)
    for lo in range(0, 1000, 10):
        for ida in (full, window, sample):
            ida.update(stream.take(np.arange(lo, lo + 10)))
    # a sample larger than the stream: the batch equal-frequency cuts of every value
    assert full.cuts["v"] == equal_frequency_cuts(x, 4) == [250.5, 500.5, 750.5]
    assert window.cuts["v"] == [925.5, 950.5, 975.5]  # the last 100 values, 901..1000
    # a reservoir of 100: a uniform sample, the same whatever the chunk size
    one = IncrementalDiscretizer(stream, bins=4, size=100, seed=5)
    for lo in range(1000):
        one.update(stream.take(np.array([lo])))
    assert one.cuts == sample.cuts and len(sample.sample[0]) == 100
    assert 150 < sample.cuts["v"][0] < 350 and 650 < sample.cuts["v"][2] < 850
    coded = window.transform(stream.take(np.array([0, 924, 925, 999])))  # 1, 925, 926, 1000
    assert coded.attributes[0].values == ("q1", "q2", "q3", "q4")
    assert coded.X[:, 0].tolist() == [0.0, 0.0, 1.0, 3.0]
    assert fit_discretizer("idaw:4:100", stream).cuts == window.cuts


def test_prequential_metrics_by_hand():
    """Window 1, naive Bayes on a tiny nominal stream: row t is predicted by the model of
    rows 0..t−1 (m-estimates, m = 1) before it is learned."""
    rows = [(0, 0), (0, 0), (1, 1), (0, 1), (1, 1)]
    X = np.array([[r[0]] for r in rows], dtype=float)
    y = np.array([r[1] for r in rows])
    data = Dataset("s", (Attribute("a", ("u", "v")),), Attribute("c", ("p", "q")), X, y)
    fold = prequential_fold(data, "NB", None, window=1)
    assert fold.test_index.tolist() == [1, 2, 3, 4]

    def nb(seen, x):
        ys = [r[1] for r in seen]
        score = []
        for k in (0, 1):
            prior = (ys.count(k) + 0.5) / (len(ys) + 1)
            cond = (sum(1 for r in seen if r == (x, k)) + 0.5) / (ys.count(k) + 1)
            score.append(prior * cond)
        return np.array(score) / sum(score)

    want = np.array([nb(rows[:t], rows[t][0]) for t in range(1, 5)])
    np.testing.assert_allclose(fold.proba, want, rtol=1e-12)
    errors = np.mean(want.argmax(axis=1) != y[1:])
    from workbench.evaluation.metrics import loss_sums, pooled_metrics
    got = pooled_metrics([loss_sums(fold.proba, y[1:])], 2)
    assert got["zero_one_loss"] == pytest.approx(errors)


def test_prequential_protocol_in_a_config_equals_the_file_evaluation(tmp_path):
    stream = drifting_stream(3000, attributes=4, seed=2)
    path = tmp_path / "s.arff"
    save_arff(stream, path)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: s\ndatasets: [{path}]\nprotocol: {{type: prequential, window: 500}}\n"
                   "learners:\n  NB: NB\n  NB-IDAW: {learner: NB, preprocessing: 'idaw:5:500'}\n"
                   f"output: {tmp_path / 'out'}\n")
    proc = subprocess.run([sys.executable, "-m", "workbench", "-q", "run", str(cfg),
                           "--no-report"], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = pd.read_csv(tmp_path / "out" / "summary.csv").set_index("learner")
    direct = evaluate_prequential(path, "NB", {"preprocessing": "idaw:5:500"}, window=500)
    assert summary.loc["NB-IDAW", "zero_one_loss"] == pytest.approx(
        direct.summary["zero_one_loss"], abs=1e-12)
    assert summary.loc["NB-IDAW", "zero_one_loss"] < summary.loc["NB", "zero_one_loss"]
    assert direct.summary["n_test"] == 2500 and direct.summary["windows"] == 5


def test_cli_fit_and_evaluate(files, tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "workbench", *a],  # noqa: E731
                                    capture_output=True, text=True, cwd=REPO, timeout=600)
    out = run("fit", "--learner", "A1DE", "--data", str(files["parquet"]), "--chunk-rows",
              "10", "--save", str(tmp_path / "m.pkl"))
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["rows"] == 57 and info["chunks"] == 6 and info["model_bytes"] > 0
    assert (tmp_path / "m.pkl").is_file()
    ev = run("evaluate", "--learner", "NB", "--data", str(files["arff"]), "--prequential",
             "--window", "10", "--discretize", "ida:3:20", "--windows-out",
             str(tmp_path / "w.csv"))
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["n_test"] == 47
    assert len(pd.read_csv(tmp_path / "w.csv")) == 5
    bad = run("evaluate", "--learner", "NB", "--data", str(files["arff"]), "--holdout", "x")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--holdout" in bad.stderr


def test_synthetic_generators_are_seeded():
    a, b = drifting_stream(500, seed=4), drifting_stream(500, seed=4)
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.array_equal(a.X, drifting_stream(500, seed=5).X)
    committed = load_arff(REPO / "datasets" / "drift-stream.arff.gz")
    regenerated = drifting_stream(20000, attributes=8, classes=2, drift=0.5, seed=1)
    np.testing.assert_array_equal(committed.X, regenerated.X)
    np.testing.assert_array_equal(committed.y, regenerated.y)
    X1, y1 = bayes_network_rows(1000, seed=2)
    X2, y2 = bayes_network_rows(1000, seed=2)
    np.testing.assert_array_equal(X1, X2)
    assert X1.max() <= 3 and set(np.unique(y1)) <= {0, 1}


def test_distributed_counting_equals_one_process(files, tmp_path):
    """A Parquet file's row groups counted on two Dask worker processes and added up: the
    same model as counting in one process (labor: missing values, single-valued bins)."""
    distributed = pytest.importorskip("distributed")
    import pyarrow.parquet as pq
    path = tmp_path / "groups.parquet"
    pq.write_table(pq.read_table(files["parquet"]), path, row_group_size=10)
    assert pq.ParquetFile(path).metadata.num_row_groups == 6
    from workbench.data.sources import scan_row_group
    part = scan_row_group(str(path), 0)  # what a worker sends the client: statistics only,
    assert part.encoded == {} and part.rows == 10  # not the row group's codes
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for learner, holdout in (("A2DE-SW", None), ("NB", parse_holdout("every:3"))):
            dist = fit_file(path, learner, client=client, holdout=holdout)
            local = fit_file(path, learner, chunk_rows=7, holdout=holdout)
            data = load_arff(files["arff"])
            X = _recode(data, local.header)
            probe = local.header.replace(X=X, y=data.y)
            np.testing.assert_array_equal(
                dist.model.predict_proba(dist.discretizer.transform(probe)),
                local.model.predict_proba(local.discretizer.transform(probe)))
            assert dist.summary["partitions"] == 6
            assert dist.summary["n_train"] == local.summary["n_train"]
        # a holdout counted and scored on the workers: the metrics of one process reading
        # the same row groups as chunks
        every = parse_holdout("every:4")
        dist = evaluate_holdout(path, "A1DE", holdout=every, client=client)
        local = evaluate_holdout(path, "A1DE", holdout=every, chunk_rows=10)
        assert dist.summary["n_test"] == local.summary["n_test"] == 14
        for metric in ("zero_one_loss", "rmse", "rmse_true_class", "log_loss"):
            assert dist.summary[metric] == local.summary[metric]
    with pytest.raises(WorkbenchError, match="distributed counting reads Parquet row groups"):
        fit_file(files["arff"], "NB", client=object())


def test_prequential_memory_does_not_grow_with_the_stream(tmp_path, monkeypatch):
    """Test-then-train keeps each window's loss sums, not its predictions: the peak of
    Python-tracked memory (numpy arrays included) over a stream four times longer grows
    by far less than the 16 bytes a row its probabilities alone would take. (The header
    pass before the stream runs before the measurement: issue 37 treats it apart.)"""
    import tracemalloc

    from workbench.evaluation.outofcore import passes, prequential

    first_pass = passes.first_pass
    peaks = {}
    for n in (20_000, 80_000):
        stream = drifting_stream(n, attributes=4, seed=3)
        path = tmp_path / f"s{n}.parquet"  # read a row group at a time
        frame = pd.DataFrame(stream.X, columns=stream.attribute_names)
        frame["class"] = [stream.class_attribute.values[k] for k in stream.y]
        frame.to_parquet(path, index=False, row_group_size=2000)
        header = first_pass(path, 2000, None, None, None, 1)
        monkeypatch.setattr(prequential, "first_pass", lambda *a, **k: header)
        evaluate_prequential(path, "NB", {"preprocessing": "ida:5:1000"}, window=2000)
        tracemalloc.start()
        result = evaluate_prequential(path, "NB", {"preprocessing": "ida:5:1000"},
                                      window=2000)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert result.summary["n_test"] == n - 2000
    grown = peaks[80_000] - peaks[20_000]
    assert grown < 60_000 * 16 / 4, peaks  # a quarter of the kept probabilities' bytes


def test_a_model_over_the_budget_is_refused_before_the_pass_over_the_file(tmp_path,
                                                                          monkeypatch):
    """The count tables are estimated from the first record batch's values (a lower bound)
    before the header pass; a model that cannot fit is refused without reading on."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from workbench.errors import LearnerError
    from workbench.evaluation.outofcore import fit

    rng = np.random.default_rng(0)
    cols = {f"a{j}": pa.array([f"v{v}" for v in rng.integers(0, 30, 4000)])
            for j in range(30)}
    cols["class"] = pa.array([f"c{v}" for v in rng.integers(0, 2, 4000)])
    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table(cols), path, row_group_size=1000)
    monkeypatch.setenv("WORKBENCH_MEMORY_BUDGET", "64M")

    def no_pass(*args, **kwargs):
        raise AssertionError("the file was read before the refusal")

    monkeypatch.setattr(fit, "first_pass", no_pass)
    with pytest.raises(LearnerError, match=r"A3DE on wide: the count tables would need at "
                       r"least .* GiB .* from the values of its first 1000 rows, before "
                       "reading the rest of the file"):
        fit_file(path, "A3DE")
    with pytest.raises(AssertionError, match="read before"):  # NB fits: on to the pass
        fit_file(path, "NB")


def test_out_of_core_clocks_leave_kernel_compilation_out():
    """`CPUClock` (fit, holdout and k-fold CV summaries): a kernel compiled while it runs
    counts as compile_seconds, not as the timed CPU."""
    import numpy as np

    from workbench.evaluation.outofcore import CPUClock
    from workbench.jit import numba

    @numba.njit
    def fresh(a):  # (not cached: compiled here, under numba's compiler lock)
        return np.sort(np.unique(np.round(a * 1000.0))).sum() + np.median(a)

    clock = CPUClock()
    fresh(np.random.default_rng(0).random(100))
    assert clock.compile_seconds() > 0.05
    assert clock.cpu_seconds() < 0.5 * clock.compile_seconds()


def test_fit_file_reports_its_first_loads_apart():
    from workbench.evaluation.outofcore import fit_file

    out = fit_file(EMBEDDED / "labor.arff.gz", "NB")
    assert {"train_cpu_seconds", "compile_seconds"} <= set(out.summary)
    assert out.summary["train_cpu_seconds"] >= 0.0
