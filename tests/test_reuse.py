"""``baselines:``: pairs copied from stored runs, and every reason a stored pair is not taken.

A small stored run (NB and A1DE on iris and labor, 2 × 2-fold CV) stands for a paper's
reproduction; a new config adds a learner and names it as a baseline.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import EMBEDDED
from workbench import store
from workbench.errors import ConfigError
from workbench.experiment import runner
from workbench.experiment.config import load_config
from workbench.learners import registry


def write_config(folder: Path, name: str, learners: str, *, baselines: str = "",
                 seed: int = 1, datasets: str = "[iris, labor]") -> Path:
    text = textwrap.dedent(f"""
        name: {name}
        datasets: {datasets}
        protocol: {{rounds: 2, folds: 2, seed: {seed}}}
        learners:
        """).lstrip() + textwrap.indent(textwrap.dedent(learners).strip() + "\n", "  ")
    if baselines:
        text += f"baselines: [{baselines}]\n"
    text += f"output: {name}\n"
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def run(path: Path) -> tuple[runner.RunResult, str]:
    out = io.StringIO()
    result = runner.run_experiment(load_config(path), stream=out)
    return result, out.getvalue()


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("baseline")
    result, _ = run(write_config(folder, "base", "NB: NB\nA1DE: A1DE"))
    assert result.folds_run == 2 * 2 * 4 and not result.failures
    return folder / "base"


def test_only_the_new_learner_runs_and_copied_pairs_equal_the_stored_ones(base, tmp_path):
    before = tree_digest(base)
    cfg = write_config(tmp_path, "new", """
        NB: NB
        AODE: {learner: A1DE, m: 1}
        A1DE-m0.5: {learner: A1DE, m: 0.5}
        """, baselines=str(base))
    result, said = run(cfg)
    # NB and A1DE (stored as 'A1DE', here called 'AODE', m given as an int) are copied
    assert result.pairs_from_baselines == 4
    assert result.folds_run == 2 * 4  # A1DE-m0.5 on two data sets, 4 folds each
    assert "recomputing" not in said
    meta = store.read_metadata(tmp_path / "new")
    last = meta["invocations"][-1]
    assert (last["pairs_from_baselines"], last["folds_run"]) == (4, 8)
    assert meta["learner_output_versions"] == {"NB": 1, "AODE": 1, "A1DE-m0.5": 1}

    new = store.load_summary(tmp_path / "new").set_index(["dataset", "learner"])
    old = store.load_summary(base).set_index(["dataset", "learner"])
    for ds in ("iris", "labor"):
        for mine, theirs in (("NB", "NB"), ("AODE", "A1DE")):
            a, b = new.loc[(ds, mine)], old.loc[(ds, theirs)]
            pd.testing.assert_series_equal(a[b.index], b, check_names=False)
            summary = json.loads(store.summary_path(tmp_path / "new", ds, mine).read_text())
            assert summary["reused_from"] == {"run": str(base), "baseline": str(base),
                                              "learner": theirs}
            p_new = store.load_predictions(tmp_path / "new", ds, mine)
            p_old = store.load_predictions(base, ds, theirs)
            pd.testing.assert_frame_equal(p_new, p_old)
            table = store._read_parquet(store.parquet_path(tmp_path / "new", ds, mine))
            assert set(table.column("learner").to_pylist()) == {mine}
            assert set(table.column("dataset").to_pylist()) == {ds}
    folds = store.load_fold_metrics(tmp_path / "new")
    assert set(folds["learner"]) == {"NB", "AODE", "A1DE-m0.5"}
    assert tree_digest(base) == before  # nothing is written into a baseline

    again, _ = run(cfg)  # resuming: everything is this run's own now
    assert (again.pairs_already_complete, again.pairs_from_baselines, again.folds_run) == \
        (6, 0, 0)


def test_a_stored_run_without_predictions_gives_its_summaries(base, tmp_path):
    """A packaged reproduction keeps summary.csv and fold_metrics.csv only."""
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.yaml", "metadata.json", "summary.csv", "fold_metrics.csv",
                 "config_hash"):
        (bare / name).write_bytes((base / name).read_bytes())
    result, _ = run(write_config(tmp_path, "new", "NB: NB", baselines=str(bare)))
    assert (result.pairs_from_baselines, result.folds_run) == (2, 0)
    new = store.load_fold_metrics(tmp_path / "new")
    old = store.load_fold_metrics(bare)
    key = ["dataset", "learner", "round", "fold", "metric"]
    merged = new.merge(old[old.learner == "NB"], on=key, suffixes=("", "_stored"))
    assert len(merged) == len(new) > 0
    np.testing.assert_array_equal(merged["value"], merged["value_stored"])


def reasons(said: str) -> list[str]:
    return [line for line in said.splitlines() if line.startswith("recomputing")]


def test_another_parameter_is_recomputed_with_its_reason(base, tmp_path):
    result, said = run(write_config(tmp_path, "new", "NB: NB\nA1DE: {learner: A1DE, m: 2}",
                                    baselines=str(base)))
    assert (result.pairs_from_baselines, result.folds_run) == (2, 8)
    assert reasons(said) == [
        f"recomputing {ds} / A1DE: baseline {base} has it from other learner parameters "
        "(m: 1.0 → 2)" for ds in ("iris", "labor")]


def test_another_seed_is_recomputed_with_its_reason(base, tmp_path):
    result, said = run(write_config(tmp_path, "new", "NB: NB", baselines=str(base), seed=2))
    assert (result.pairs_from_baselines, result.folds_run) == (0, 8)
    assert reasons(said) == [
        f"recomputing {ds} / NB: baseline {base} has it from another protocol (seed: 1 → 2)"
        for ds in ("iris", "labor")]


def test_another_data_file_is_recomputed_with_its_reason(base, tmp_path):
    text = gzip.decompress((EMBEDDED / "iris.arff.gz").read_bytes()).decode()
    text = text.replace("5.1,3.5,1.4,0.2", "5.2,3.5,1.4,0.2", 1)  # one value changed
    (tmp_path / "iris.arff").write_text(text)
    result, said = run(write_config(tmp_path, "new", "NB: NB", baselines=str(base),
                                    datasets=f"[{tmp_path / 'iris.arff'}, labor]"))
    assert (result.pairs_from_baselines, result.folds_run) == (1, 4)
    assert reasons(said) == [f"recomputing iris / NB: baseline {base} has it from another "
                             "version of the data file"]


def test_another_output_version_is_recomputed_with_its_reason(base, tmp_path, monkeypatch):
    monkeypatch.setattr(registry.get("NB").factory, "output_version", 2)
    result, said = run(write_config(tmp_path, "new", "NB: NB", baselines=str(base)))
    assert (result.pairs_from_baselines, result.folds_run) == (0, 8)
    assert reasons(said) == [f"recomputing {ds} / NB: baseline {base} has it from learner "
                             "output version 1, now 2" for ds in ("iris", "labor")]


def test_a_packaged_reproduction_is_named_and_bad_baselines_are_refused(tmp_path):
    cfg = load_config(write_config(tmp_path, "new", "NB: NB", baselines="pakdd13"))
    assert cfg.baselines[0][0] == "pakdd13"
    assert (cfg.baselines[0][1] / "PUBLISHED").is_file()
    assert cfg.config_hash() == load_config(write_config(tmp_path, "plain", "NB: NB")) \
        .config_hash()  # where pairs may come from does not change what is computed
    with pytest.raises(ConfigError, match=r"new\.yaml:\d+: baselines\.0: 'nowhere' is "
                       "neither a run directory"):
        load_config(write_config(tmp_path, "new", "NB: NB", baselines="nowhere"))
    with pytest.raises(ConfigError, match="baselines.0: is this config's own output"):
        load_config(write_config(tmp_path, "new", "NB: NB",
                                 baselines=str(tmp_path / "new")))


# ----- workbench compare ---------------------------------------------------------------------
def hand_wdl(a: pd.Series, b: pd.Series) -> str:
    return f"{int((a < b).sum())}/{int((a == b).sum())}/{int((a > b).sum())}"


def test_compare_runs_only_the_new_learner_and_tables_it_against_every_stored_one(
        base, tmp_path, capsys):
    from workbench.__main__ import main

    out = tmp_path / "mine"
    assert main(["compare", "A1DE", "--set", "m=0.5", "--baseline", str(base),
                 "--output", str(out), "--metrics", "zero_one_loss"]) == 0
    printed = capsys.readouterr().out
    meta = store.read_metadata(out)
    assert meta["invocations"][-1]["folds_run"] == 2 * 4  # iris and labor, 2 × 2 folds
    assert list(meta["learner_parameters"]) == ["A1DE[m=0.5]"]
    ours = store.load_summary(out).set_index("dataset")["zero_one_loss"]
    theirs = store.load_summary(base)
    tidy = pd.read_csv(out / "compare" / "base.csv")
    assert list(tidy.col[tidy.collection == "all"]) == ["NB", "A1DE"]
    for name in ("NB", "A1DE"):
        b = theirs[theirs.learner == name].set_index("dataset")["zero_one_loss"]
        cell = hand_wdl(ours[b.index], b)
        rec = tidy[(tidy.collection == "all") & (tidy.col == name)].iloc[0]
        assert f"{rec.wins}/{rec.draws}/{rec.losses}" == cell
        assert f"| {cell} (" in printed.split("### 0-1 loss: All data sets")[1]
    assert (out / "compare" / "base.md").read_text().strip() == printed.strip()


def test_compare_a_config_copies_what_the_baseline_has_and_compares_the_rest(base, tmp_path,
                                                                             capsys):
    from workbench.__main__ import main

    cfg = write_config(tmp_path, "cfg", "NB: NB\nA1DE-f30: {learner: A1DE, frequency_limit: 30}")
    assert main(["compare", str(cfg), "--baseline", str(base)]) == 0
    meta = store.read_metadata(tmp_path / "cfg")
    assert meta["invocations"][-1]["pairs_from_baselines"] == 2  # NB on iris and labor
    tidy = pd.read_csv(tmp_path / "cfg" / "compare" / "base.csv")
    assert set(tidy.row) == {"A1DE-f30"} and set(tidy.col) == {"NB", "A1DE"}
    capsys.readouterr()
    # a run directory is compared as it is (nothing runs)
    assert main(["compare", str(tmp_path / "cfg"), "--baseline", str(base)]) == 0
    assert "A1DE-f30 against" in capsys.readouterr().out


def test_compare_errors_are_one_line(base, tmp_path, capsys):
    from workbench.__main__ import main

    assert main(["compare", "NoSuchLearner", "--baseline", str(base)]) == 2
    assert "unknown learner 'NoSuchLearner'" in capsys.readouterr().err
    assert main(["compare", "NB", "--baseline", str(tmp_path)]) == 2
    assert "is not a run directory" in capsys.readouterr().err
    assert main(["compare", str(base), "--baseline", str(base)]) == 2
    assert "nothing new to compare" in capsys.readouterr().err


# ----- results of many runs as one table -----------------------------------------------------
def test_a_folder_of_runs_reads_as_one_table(base, tmp_path):
    import pyarrow as pa
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    import workbench

    run(write_config(tmp_path, "other", "A1DE-m2: {learner: A1DE, m: 2}"))
    runs = [base, tmp_path / "other"]
    both = workbench.load_results([str(r) for r in runs])
    assert list(both.summary.columns[:3]) == ["run", "dataset", "learner"]
    for r in runs:
        one = workbench.load_results(r)
        part = both.summary[both.summary.run == str(r)].drop(columns="run")
        pd.testing.assert_frame_equal(part.reset_index(drop=True), one.summary)
        folds = both.folds[both.folds.run == str(r)].drop(columns="run")
        pd.testing.assert_frame_equal(folds.reset_index(drop=True), one.folds)
    assert set(both.predictions().run) == {str(r) for r in runs}
    # a parent folder is searched for run directories
    found = workbench.load_results(tmp_path)
    assert set(found.summary.learner) == {"A1DE-m2"}

    # the Parquet files name their data set and learner: any Parquet reader takes a folder
    files = sorted(map(str, (tmp_path / "other").rglob("predictions.parquet")))
    schema = pa.unify_schemas([pq.read_schema(f) for f in files])
    table = pads.dataset(files, schema=schema, format="parquet").to_table(
        columns=["dataset", "learner", "round", "fold", "index", "p_0"])
    frame = table.to_pandas()
    preds = workbench.load_results(tmp_path / "other").predictions()
    key = ["dataset", "learner", "round", "fold", "index"]
    merged = frame.astype({"dataset": str, "learner": str}).merge(preds, on=key)
    assert len(merged) == len(preds) == len(frame)
    np.testing.assert_array_equal(merged["p_0_x"], merged["p_0_y"])


def test_two_registry_names_of_one_class_with_the_same_parameters_are_one_learner(base, tmp_path):
    # NB is the AnDE class at n = 0; A1DE with n: 0 is the same learner under another name
    result, said = run(write_config(tmp_path, "new", "MyNB: {learner: A1DE, n: 0}",
                                    baselines=str(base)))
    assert (result.pairs_from_baselines, result.folds_run) == (2, 0)
    # and a parameter that differs still tells them apart
    result, said = run(write_config(tmp_path, "other", "MyNB: {learner: A1DE, n: 0, m: 2}",
                                    baselines=str(base)))
    assert (result.pairs_from_baselines, result.folds_run) == (0, 8)
