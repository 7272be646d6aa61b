"""Damage the file format does not catch, and where a reader's error points: a Parquet file
the workbench wrote carries page checksums, so 64 altered bytes inside a data page are one
line naming the file (a data file, a run's predictions); a CSV cell that does not convert
is named by its line and its column; a data set named by its bare file name beside the
config is found."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench.data.sources import iter_chunks, load_table
from workbench.errors import WorkbenchError
from workbench.fileio import PARQUET_OPTIONS

from conftest import EMBEDDED, REPO


def _flip_inside_a_page(path, n=64):
    """`n` bytes inverted in the middle of the file's first column chunk's data."""
    meta = pq.ParquetFile(path).metadata.row_group(0).column(0)
    first = meta.dictionary_page_offset or meta.data_page_offset
    end = first + meta.total_compressed_size
    start = (meta.data_page_offset + end) // 2 - n // 2
    raw = bytearray(path.read_bytes())
    for i in range(start, start + n):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def _table(rows=20_000):
    rng = np.random.default_rng(3)
    return pa.table({"a": rng.random(rows), "b": rng.integers(0, 50, rows).astype(float),
                     "class": pa.array(rng.choice(["x", "y"], rows)).dictionary_encode()})


@pytest.mark.parametrize("reader", ["whole", "chunks"])
def test_a_page_altered_in_a_parquet_file_the_workbench_wrote_is_one_line(tmp_path,
                                                                           reader):
    path = tmp_path / "data.parquet"
    pq.write_table(_table(), path, compression="zstd", **PARQUET_OPTIONS)
    assert load_table(path).n_instances == 20_000  # intact: reads as before
    plain = tmp_path / "plain.parquet"
    pq.write_table(_table(), plain, compression="zstd")  # written elsewhere: no checksums
    _flip_inside_a_page(path)
    with pytest.raises(WorkbenchError, match=r"data.parquet: damaged: a page's checksum "
                                             "does not match its content"):
        if reader == "whole":
            load_table(path)
        else:
            for _ in iter_chunks(path, 5000):
                pass
    assert load_table(plain).n_instances == 20_000


def test_the_cli_says_a_damaged_data_file_in_one_line_and_computes_nothing(tmp_path):
    path = tmp_path / "data.parquet"
    pq.write_table(_table(), path, compression="zstd", **PARQUET_OPTIONS)
    _flip_inside_a_page(path)
    out = tmp_path / "folds.csv"
    proc = subprocess.run([sys.executable, "-m", "workbench", "evaluate", "--learner", "NB",
                           "--data", str(path), "--cv", "2", "--folds-out", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and "damaged: a page's checksum" in errors[0], proc.stderr
    assert not out.exists()


def test_a_damaged_predictions_file_of_a_run_is_one_line(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(f"name: c\ndatasets: [{EMBEDDED / 'labor.arff.gz'}]\n"
                      "learners: [NB]\nprotocol: {rounds: 2, folds: 2}\n")
    run = subprocess.run([sys.executable, "-m", "workbench", "-q", "run", str(config),
                          "--no-report", "--output", str(tmp_path / "run")],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stderr
    (pred,) = (tmp_path / "run").rglob("predictions.parquet")
    import workbench

    before = workbench.load_results(tmp_path / "run").predictions("labor", "NB")
    assert len(before) == 2 * 57
    _flip_inside_a_page(pred, 16)
    with pytest.raises(WorkbenchError) as err:
        workbench.load_results(tmp_path / "run").predictions("labor", "NB")
    assert "predictions.parquet: corrupt stored result" in str(err.value)
    assert "\n" not in str(err.value)


def test_a_csv_cell_that_does_not_convert_is_named_by_line_and_column(tmp_path):
    path = tmp_path / "big.csv"
    lines = ["x,weight,class"] + [f"{i % 7},{i * 0.5},{'ab'[i % 2]}" for i in range(600_000)]
    lines[550_001] = "3,heavy,a"  # line 550,002: past the first block the types come from
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(WorkbenchError) as err:
        for _ in iter_chunks(path, 50_000):
            pass
    assert str(err.value) == (f"{path}, line 550002: column 'weight' holds 'heavy' where its "
                              "other rows are numbers (double); fix the cell, or write the "
                              "column as text throughout")


def test_a_bare_file_name_beside_the_config_is_found(tmp_path):
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "mydata.arff.gz").write_bytes((EMBEDDED / "iris.arff.gz").read_bytes())
    (folder / "c.yaml").write_text("name: c\ndatasets: [mydata]\nlearners: [NB]\n"
                                   "protocol: {rounds: 1, folds: 2}\n")
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_DATA"}
    proc = subprocess.run([sys.executable, "-m", "workbench", "-q", "run",
                           str(folder / "c.yaml"), "--no-report", "--output",
                           str(tmp_path / "out")], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "summary.csv").is_file()
    assert "mydata" in (tmp_path / "out" / "summary.csv").read_text()


ABSOLUTE = re.compile(r'(?<![:/\w.~-])/(?:[\w.@+-]+/)+[\w.@+-]*')
"""An absolute POSIX path (a URL's path after its host is not one: it follows ``//host``)."""


def test_a_run_stores_no_absolute_path_and_its_config_resolves_from_the_run(tmp_path):
    """The resolved config.yaml names data directories, plugins and the output relative to
    the run directory, metadata.json the data files relative to it and the interpreter by
    version only: moved with its data, a run still resolves; nothing names this machine's
    directories."""
    import yaml

    from workbench.__main__ import main
    from workbench.experiment.config import load_config

    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(EMBEDDED / "iris.arff.gz", data / "flowers.arff.gz")
    cfg = tmp_path / "c.yaml"
    shutil.copy(EMBEDDED / "labor.arff.gz", data / "work.arff.gz")
    cfg.write_text("name: p\ndatasets: [flowers, data/work.arff.gz]\ndata_dirs: [data]\n"
                   "protocol: {rounds: 1, folds: 2}\nlearners: [NB]\noutput: out\n")
    assert main(["-q", "run", str(cfg), "--no-report"]) == 0
    run = tmp_path / "out"
    for name in ("config.yaml", "metadata.json"):
        text = (run / name).read_text()
        assert not ABSOLUTE.findall(text), (name, ABSOLUTE.findall(text))
    stored = yaml.safe_load((run / "config.yaml").read_text())
    assert stored["data_dirs"] == ["../data"] and stored["output"] == "."
    assert stored["datasets"] == ["flowers", "../data/work.arff.gz"]  # a file: relative too
    again = load_config(run / "config.yaml")
    assert again.data_dirs == ((tmp_path / "data").resolve(),)
    assert again.datasets[1] == str((data / "work.arff.gz").resolve())
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["plan"]["dataset_files"] == {"flowers": "../data/flowers.arff.gz",
                                             "work": "../data/work.arff.gz"}


def test_committed_reproductions_name_no_absolute_path():
    """Every text file of `experiments/` (configs, metadata, READMEs, tables) is free of
    absolute paths: a committed reproduction does not carry the machine it was made on."""
    found = {}
    for path in (REPO / "experiments").rglob("*"):
        if path.is_file() and path.suffix in (".yaml", ".json", ".md", ".csv", ".tex"):
            hits = ABSOLUTE.findall(path.read_text(encoding="utf-8", errors="replace"))
            if hits:
                found[str(path.relative_to(REPO))] = sorted(set(hits))[:3]
    assert not found, found
