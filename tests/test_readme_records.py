"""Every W/D/L record in the experiments' READMEs is tied to, and equals, its committed table
cell (`workbench.report.records`)."""

from __future__ import annotations

import pytest

from conftest import REPO
from workbench.report import records

READMES = sorted((REPO / "experiments").glob("*/README.md"))


@pytest.mark.parametrize("readme", READMES, ids=lambda p: p.parent.name)
def test_every_record_in_a_readme_is_its_tables(readme):
    assert records.check(readme) == []


def test_a_wrong_or_unmarked_record_is_found_and_fixed(tmp_path):
    tables = tmp_path / "run" / "report" / "tables"
    tables.mkdir(parents=True)
    (tables / "wdl.csv").write_text(
        "metric,collection,row,col,wins,draws,losses,p_value,significant,n\n"
        "rmse,all,B,A,5,1,2,0.45,False,8\n")
    readme = tmp_path / "README.md"
    readme.write_text("B vs A: <!--wdl run rmse B | A-->5/0/3; A vs B: <!--wdl run rmse A | B-->"
                      "2/1/5; loose 1/2/3; paper 6-0-2; <!--wdl run rmse A | C-->1/1/1\n")
    problems = records.check(readme)
    assert problems == [
        f"{readme}:1: record 1/2/3 has no <!--wdl ...--> marker naming its table cell",
        f"{readme}:1: 5/0/3 but the table says 5/1/2 (run rmse B | A)",
        f"{readme}:1: no cell rmse/all: A vs C in {tables / 'wdl.csv'}",
    ]
    assert records.fix(readme) == 1
    assert "<!--wdl run rmse B | A-->5/1/2;" in readme.read_text()


def test_a_quoted_number_is_checked_against_its_run_and_fixed(tmp_path):
    """``<!--value RUN METRIC …-->NUMBER``: a summary cell, a difference (to a learner or
    the oracle), a total — equal when it is the value rounded to the decimals written."""
    run = tmp_path / "run"
    (run / "report" / "tables").mkdir(parents=True)
    (run / "summary.csv").write_text(
        "dataset,learner,rmse,train_cpu_seconds\n"
        "d1,A,0.25,1.5\nd1,B,0.2512,2.0\nd2,A,0.5,3.25\n")
    (run / "report" / "tables" / "oracle.csv").write_text(
        "dataset,metric,learner,value\nd1,rmse,B,0.2\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "A <!--value run rmse d1 A-->0.250, A−B <!--value run rmse d1 A - B-->−0.0012, "
        "A−oracle <!--value run rmse d1 A - oracle-->+0.06, total "
        "<!--value run train_cpu_seconds total A-->4.8, <!--value run rmse d9 A-->1\n")
    problems = records.check(readme)
    assert problems == [
        f"{readme}:1: +0.06 but the table says +0.05 (run rmse d1 A - oracle)",
        f"{readme}:1: no cell rmse: d9 / A in {run}",
    ]  # (4.75 written as 4.8 and 0.25 as 0.250 agree)
    assert records.fix(readme) == 1
    assert "<!--value run rmse d1 A - oracle-->+0.05," in readme.read_text()


def test_ratios_savings_extremes_ranks_and_curve_points_are_checked(tmp_path):
    """The other quoted forms: a ratio of totals, a saving as a percentage, a minimum and
    the data set where it falls, every learner's total over two columns, an average rank
    and a learning-curve point."""
    run = tmp_path / "run"
    tables = run / "report" / "tables"
    tables.mkdir(parents=True)
    (run / "summary.csv").write_text(
        "dataset,learner,train_cpu_seconds,test_cpu_seconds\n"
        "d1,A,1.0,0.25\nd1,A-naive,4.0,1.0\nd2,A,2.0,0.5\nd2,A-naive,4.0,0.625\n")
    (tables / "ranks.csv").write_text(
        "metric,collection,learner,average_rank,n_datasets\n"
        "rmse,all,A,1.25,2\nrmse,small,A,2.0,1\n")
    (tables / "learning_curves.csv").write_text(
        "dataset,learner,n_train,metric,value\nd1,A,250,rmse,0.3\nd1,B,250,rmse,0.25\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "ratio <!--value run train_cpu_seconds total A-naive / A-->2.7×, "  # 8 / 3
        "saving <!--value run test_cpu_seconds d1 1 - A / A-naive-->75 %, "
        "least <!--value run test_cpu_seconds min 1 - A / A-naive-->20% "  # d2: 1 − 0.8
        "(<!--name run test_cpu_seconds argmin 1 - A / A-naive-->d1), "
        "all <!--value run train_cpu_seconds+test_cpu_seconds total *-->13.5 s, "
        "rank <!--value run rmse rank A-->1.3, "
        "curve <!--value run rmse d1@250 A - B-->0.05, "
        "rank rows <!--value run ranks.csv n_datasets metric=rmse collection=all,small-->3, "
        "bad <!--value run rmse d1 A /-->1\n")
    problems = records.check(readme)
    malformed = (f"{readme}:1: malformed marker 'run rmse d1 A /' (want RUN METRIC DATASET|"
                 "DATASET@N|total|mean|median|min|max|rank|argmin|argmax L [- M | / M] or "
                 "1 - L / M)")
    assert problems == [
        f"{readme}:1: 13.5 but the table says 13.4 (run train_cpu_seconds+test_cpu_seconds "
        "total *)",
        malformed,
        f"{readme}:1: d1 but the table says d2 (run test_cpu_seconds argmin 1 - A / A-naive)",
    ]
    assert records.fix(readme) == 2
    text = readme.read_text()
    assert "-->13.4 s," in text and "A-naive-->d2)" in text and records.check(readme) == [malformed]
    (run / "summary.csv").write_text("dataset,learner,peak_rss_bytes\nd1,A,685604291\n")
    records._frame.cache_clear()
    readme.write_text("<!--value run peak_rss_bytes d1 A-->0.69 GB, "
                      "<!--value run peak_rss_bytes d1 A-->686 MB, "
                      "<!--value run peak_rss_bytes d1 A-->0.68GB\n")
    assert records.check(readme) == [
        f"{readme}:1: 0.68 but the table says 0.69 (run peak_rss_bytes d1 A)"]
