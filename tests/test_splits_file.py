"""Fixed folds from a file (`protocol: {splits: FILE}`): a run's folds written by `status
--folds-out` and read back reproduce the run; OpenML's column names and Parquet; the file's
content, not its path, enters the config hash; one clear error for a file that does not
fit the data."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from workbench import store
from workbench.__main__ import main
from workbench.errors import ConfigError
from workbench.evaluation.splits import make_splits
from workbench.experiment.config import load_config
from workbench.experiment.runner import run_experiment

CONFIG = """
name: p
datasets: [iris, labor]
protocol: PROTOCOL
learners: [NB, A1DE]
"""


def _config(folder, protocol, name="config.yaml"):
    path = folder / name
    path.write_text(CONFIG.replace("PROTOCOL", protocol)
                    + f"output: {folder / ('run-' + name.split('.')[0])}\n")
    return load_config(path)


def _metrics(run):
    cols = ["dataset", "learner", "zero_one_loss", "rmse", "log_loss"]
    return store.load_summary(run).sort_values(["dataset", "learner"])[cols].reset_index(
        drop=True)


def test_a_run_on_the_folds_another_run_wrote_reproduces_it(tmp_path, capsys):
    drawn = _config(tmp_path, "{rounds: 2, folds: 3, seed: 5}", "drawn.yaml")
    run_experiment(drawn, jobs=1, stream=open("/dev/null", "w"))
    folds = tmp_path / "folds.csv"
    assert main(["status", str(drawn.output), "--folds-out", str(folds)]) == 0
    table = pd.read_csv(folds)
    assert list(table.columns) == ["dataset", "round", "index", "fold"]
    assert len(table) == 2 * (150 + 57)
    given = _config(tmp_path, "{splits: folds.csv, seed: 5}", "given.yaml")
    assert given.protocol.plan.rounds == 2 and given.protocol.plan.folds == 3
    run_experiment(given, jobs=1, stream=open("/dev/null", "w"))
    pd.testing.assert_frame_equal(_metrics(given.output), _metrics(drawn.output))
    a = store.read_summary(drawn.output, "labor", "A1DE")["per_fold"]["rmse"]
    b = store.read_summary(given.output, "labor", "A1DE")["per_fold"]["rmse"]
    assert a == b
    # the stored config names the file relative to the run and still loads
    stored = load_config(given.output / "config.yaml")
    assert stored.config_hash() == given.config_hash()
    # the hash follows the content: a copy elsewhere keeps it, an edited file changes it
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(folds, other / "folds.csv")
    assert _config(other, "{splits: folds.csv, seed: 5}", "given.yaml").config_hash() \
        == given.config_hash()
    edited = table.copy()
    swap = edited.index[(edited.dataset == "iris") & (edited["round"] == 0)][:2]
    edited.loc[swap, "fold"] = edited.loc[swap[::-1], "fold"].to_numpy()
    edited.to_csv(other / "folds.csv", index=False)
    if not edited.equals(table):
        assert _config(other, "{splits: folds.csv, seed: 5}", "given.yaml").config_hash() \
            != given.config_hash()
    # the stored config's sha256 catches a changed file
    edited.loc[swap, "fold"] = (edited.loc[swap, "fold"] + 1) % 3
    edited.to_csv(tmp_path / "folds.csv", index=False)
    with pytest.raises(ConfigError, match="has changed since the run"):
        load_config(given.output / "config.yaml")


def test_openml_columns_and_parquet(tmp_path):
    splits = make_splits(150, 1, 4, 9)
    rows = [("TEST", i, 0, int(splits[0, i])) for i in range(150)]
    rows += [("TRAIN", i, 0, f) for i in range(150) for f in range(4) if f != splits[0, i]]
    pd.DataFrame(rows, columns=["type", "rowid", "repeat", "fold"]).to_parquet(
        tmp_path / "task.parquet")
    cfg = load_config(_write(tmp_path, "{splits: task.parquet}", ["iris"]))
    plan = cfg.protocol.plan.for_dataset("iris").plan(150)
    for f in range(4):
        np.testing.assert_array_equal(plan[(0, f)].test, np.flatnonzero(splits[0] == f))


def _write(folder, protocol, datasets):
    path = folder / "c.yaml"
    path.write_text(f"name: q\ndatasets: {datasets}\nprotocol: {protocol}\n"
                    f"learners: [NB]\noutput: {folder / 'run'}\n")
    return path


def test_a_file_that_does_not_fit_is_one_clear_error(tmp_path):
    pd.DataFrame({"round": 0, "index": range(149), "fold": np.arange(149) % 2}).to_csv(
        tmp_path / "short.csv", index=False)
    cfg = load_config(_write(tmp_path, "{splits: short.csv}", ["iris"]))
    with pytest.raises(ConfigError, match=r"cannot be laid on iris .*short\.csv: splits "
                                          r"cover 149 instances, data has 150"):
        run_experiment(cfg, jobs=1, stream=open("/dev/null", "w"))
    pd.DataFrame({"round": 0, "index": [0, 1, 1], "fold": [0, 1, 0]}).to_csv(
        tmp_path / "twice.csv", index=False)
    with pytest.raises(ConfigError, match=r"protocol\.splits: .*index 1 listed twice"):
        load_config(_write(tmp_path, "{splits: twice.csv}", ["iris"]))
    with pytest.raises(ConfigError,
                       match=r"protocol\.splits: .*none\.csv: cannot read \(No such file"):
        load_config(_write(tmp_path, "{splits: none.csv}", ["iris"]))
    pd.DataFrame({"dataset": "labor", "round": 0, "index": range(57),
                  "fold": np.arange(57) % 2}).to_csv(tmp_path / "labor.csv", index=False)
    cfg = load_config(_write(tmp_path, "{splits: labor.csv}", ["iris", "labor"]))
    with pytest.raises(ConfigError, match=r"labor\.csv has no folds for data set 'iris'"):
        run_experiment(cfg, jobs=1, stream=open("/dev/null", "w"))
