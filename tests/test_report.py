"""Tests of workbench.report: tables, figures, paper agreement and the rendered report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from workbench.errors import ConfigError
from workbench.report import agreement as agr
from workbench.report.options import options_from_config
from workbench.report.render import TIMESTAMP_MARK, render_report
from workbench.report.tables import latex_table, markdown_table, wdl_tidy
from workbench.stats.groups import collections
from workbench.stats.wdl import sign_test

REPO = Path(__file__).resolve().parents[1]
DEFAULT_METRIC_MAP = REPO / "experiments" / "pakdd13" / "metric_map.yaml"
PAPER_LEARNERS = ["NB", "A1DE", "A1DE-S", "A1DE-W", "A1DE-SW",
                  "A2DE", "A2DE-S", "A2DE-W", "A2DE-SW", "RF10"]
METRICS = ["zero_one_loss", "rmse", "rmse_true_class", "log_loss", "bias", "variance",
           "bias_weka_corrected", "train_cpu_seconds", "test_cpu_seconds",
           "train_wall_seconds", "test_wall_seconds"]
TABLE_METRICS = ["bias", "variance", "zero_one_loss", "rmse", "rmse_true_class",
                 "train_cpu_seconds", "test_cpu_seconds"]


def synthetic_summary(learners=PAPER_LEARNERS, seed=0, counts=(12, 19, 40)) -> pd.DataFrame:
    """A results summary shaped like store.load_summary: 71 data sets of paper-like sizes."""
    rng = np.random.default_rng(seed)
    sizes = ([int(rng.integers(10_001, 60_000)) for _ in range(counts[0])]
             + [int(rng.integers(1_001, 10_000)) for _ in range(counts[1])]
             + [int(rng.integers(20, 1_000)) for _ in range(counts[2])])
    rows = []
    for i, n in enumerate(sizes):
        base = rng.uniform(0.05, 0.4)
        for j, name in enumerate(learners):
            zo = base * (1 - 0.03 * j + rng.normal(0, 0.03))
            rec = {"dataset": f"syn{i:02d}", "learner": name, "n_instances": n,
                   "zero_one_loss": zo, "rmse": np.sqrt(zo) * 0.8,
                   "rmse_true_class": np.sqrt(zo) * 0.9, "log_loss": 2 * zo,
                   "bias": 0.7 * zo, "variance": 0.3 * zo, "bias_weka_corrected": 0.69 * zo,
                   "train_cpu_seconds": n * 1e-5 * (1 + j), "test_cpu_seconds": n * 2e-5 * (1 + j),
                   "train_wall_seconds": n * 1e-5 * (1 + j), "test_wall_seconds": n * 2e-5}
            if i == 0:
                rec["zero_one_loss"] = 0.0 if j % 2 else 0.01  # zeros for the figure rule
            for m in METRICS:
                rec[f"{m}_std"] = abs(rec[m]) * 0.05
            rows.append(rec)
    return pd.DataFrame(rows)


def write_run(run_dir: Path, summary: pd.DataFrame, report: dict | None = None) -> Path:
    """A run directory as the runner leaves it: summary.csv + resolved config.yaml."""
    run_dir.mkdir(parents=True, exist_ok=True)
    summary.to_csv(run_dir / "summary.csv", index=False)
    learners = list(dict.fromkeys(summary["learner"]))
    cfg = {"name": "synthetic", "datasets": sorted(set(summary["dataset"])),
           "learners": {name: {"learner": name} for name in learners},
           "baseline": "NB", "report": report or {}}
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return run_dir


def _without_timestamp(data: bytes) -> bytes:
    return b"\n".join(line for line in data.split(b"\n") if b"<!-- timestamp" not in line)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    run = write_run(tmp_path_factory.mktemp("run"), synthetic_summary(),
                    {"collections": {"mine": ["syn00", "syn50"]},
                     "paper_agreement": str(DEFAULT_METRIC_MAP)})
    out = render_report(run)
    assert out == run / "report"
    return out


def test_no_paper_agreement_unless_configured(tmp_path):
    # every paper learner ran, but the config names no paper map: no comparison, no headline
    run = write_run(tmp_path / "run", synthetic_summary(counts=(0, 2, 3)))
    out = render_report(run, figures=False)
    assert not (out / "paper_agreement.csv").exists()
    md = (out / "report.md").read_text()
    assert "Agreement with the published" not in md and "significant cells" not in md
    # empty size collection (no large data set): left out, said once
    tidy = pd.read_csv(out / "tables" / "wdl.csv")
    assert "large" not in set(tidy["collection"])
    assert md.count("large") == 2  # the size-group rule and the one note
    assert "left out of the tables" in md
    assert "total CPU seconds over all folds" in md

# ------------------------------------------------------------------ the rendered report
def test_report_has_every_table(rendered: Path):
    tidy = pd.read_csv(rendered / "tables" / "wdl.csv")
    assert list(tidy.columns) == ["metric", "collection", "row", "col", "wins", "draws",
                                  "losses", "p_value", "significant"]
    for m in TABLE_METRICS:
        assert (rendered / "tables" / f"wdl_{m}.md").is_file()
        assert (rendered / "tables" / f"wdl_{m}.tex").is_file()
        assert (rendered / "tables" / f"per_dataset_{m}.md").is_file()
        sub = tidy[tidy["metric"] == m]
        assert sorted(set(sub["collection"])) == ["all", "large", "medium", "mine", "small"]
        assert len(sub) == 5 * 45
    for name in ("ranks.csv", "friedman.csv", "wilcoxon.csv", "paper_agreement_totals.csv"):
        assert (rendered / "tables" / name).is_file()
    per = pd.read_csv(rendered / "per_dataset_metrics.csv")
    assert set(per["learner"]) == set(PAPER_LEARNERS)
    assert {"dataset", "learner", "metric", "mean", "std"} <= set(per.columns)


def test_report_has_every_figure(rendered: Path):
    stems = ["fig1_bias_variance", "fig2_zero_one_loss", "fig3_rmse", "fig4_time",
             "cd_zero_one_loss", "cd_rmse", "scatter_zero_one_loss", "scatter_rmse"]
    md = (rendered / "report.md").read_text()
    html = (rendered / "report.html").read_text()
    for stem in stems:
        png = rendered / "figures" / f"{stem}.png"
        pdf = rendered / "figures" / f"{stem}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert pdf.read_bytes()[:5] == b"%PDF-"
        assert f"figures/{stem}.png" in md
    assert html.count("data:image/png;base64,") >= len(stems)
    assert "geometric mean" in md and "left out" in md


def test_report_markdown_layout(rendered: Path):
    md = (rendered / "tables" / "wdl_zero_one_loss.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("|  |"))
    assert header == "|  | " + " | ".join(PAPER_LEARNERS[:-1]) + " |"
    first = next(line for line in md.splitlines() if line.startswith("| A1DE |"))
    assert first.count("/") == 2  # only the NB column is filled in the first row
    assert "**" in md  # significant cells are bold
    tex = (rendered / "tables" / "wdl_zero_one_loss.tex").read_text()
    assert r"\textbf{" in tex and r"\begin{tabular}" in tex
    report = (rendered / "report.md").read_text()
    assert sum(TIMESTAMP_MARK in line for line in report.splitlines()) == 1


def test_paper_agreement_has_450_rows(rendered: Path):
    pa = pd.read_csv(rendered / "paper_agreement.csv")
    assert len(pa) == 450
    for col in ("paper_wins", "paper_draws", "paper_losses", "paper_p_value",
                "paper_significant", "our_wins", "our_draws", "our_losses", "our_p_value",
                "our_significant", "same_direction", "both_significant_same",
                "significant_reversal"):
        assert col in pa.columns
    assert set(pa["our_metric"]) == {"bias", "variance", "zero_one_loss", "rmse"}
    # by learner: every cell counts for its two learners
    by = pd.read_csv(rendered / "tables" / "paper_agreement_by_learner.csv")
    assert list(by["learner"]) == PAPER_LEARNERS and by["cells"].sum() == 2 * 450
    rf = pa[(pa["row"] == "RF10") | (pa["col"] == "RF10")]
    assert by.set_index("learner").loc["RF10", "same_direction"] == rf["same_direction"].sum()
    allmaps = pd.read_csv(rendered / "paper_agreement_all.csv")
    assert len(allmaps) == 450 + 180 + 45  # rmse -> both RMSEs, bias -> both biases
    assert set(allmaps.loc[allmaps["metric"] == "rmse", "our_metric"]) == {
        "rmse", "rmse_true_class"}
    first = pa.iloc[0]
    assert first["paper_p_value"] == pytest.approx(sign_test(first["paper_wins"],
                                                             first["paper_losses"]))
    md = (rendered / "report.md").read_text()
    assert "/450 cells same direction" in md
    assert "The paper's `rmse` agrees" in md


def test_rendering_twice_gives_byte_identical_tables(rendered: Path, tmp_path: Path):
    again = render_report(rendered.parent, tmp_path / "again", figures=False)
    files = [f for sub in ("tables", ".") for ext in ("*.csv", "*.md", "*.tex")
             for f in sorted((rendered / sub).glob(ext)) if f.name != "report.md"]
    assert len(files) > 30
    for f in files:
        assert (again / f.relative_to(rendered)).read_bytes() == f.read_bytes(), f.name


def test_report_md_and_html_identical_apart_from_timestamp(tmp_path: Path):
    run = write_run(tmp_path / "run", synthetic_summary(PAPER_LEARNERS[:3], counts=(1, 2, 3)))
    a = render_report(run, tmp_path / "a", figures=False)
    assert not (a / "paper_agreement.csv").exists()  # not all of the paper's learners ran
    b = render_report(run, tmp_path / "b", figures=False)
    for name in ("report.md", "report.html"):
        ta, tb = (a / name).read_bytes(), (b / name).read_bytes()
        assert _without_timestamp(ta) == _without_timestamp(tb)
        assert len(ta.splitlines()) - len(_without_timestamp(ta).splitlines()) == 1


def test_figures_are_byte_reproducible(tmp_path: Path):
    from workbench.report import figures as fg

    s = synthetic_summary(PAPER_LEARNERS[:3], counts=(2, 2, 3))
    colls = collections(s)
    for d in ("a", "b"):
        fig, _ = fg.normalised_bar_figure(s, ["zero_one_loss"], PAPER_LEARNERS[:3], "NB",
                                          colls, "t")
        fg.save_figure(fig, tmp_path / d / "f")
    for ext in ("png", "pdf"):
        a, b = (tmp_path / "a" / f"f.{ext}"), (tmp_path / "b" / f"f.{ext}")
        assert a.read_bytes() == b.read_bytes()
    assert b"CreationDate" not in (tmp_path / "a" / "f.pdf").read_bytes()


def test_normalised_ratios_geometric_mean_and_zero_rule():
    from workbench.report.figures import normalised_ratios

    rows = []
    for ds, (nb, a) in {"d1": (0.2, 0.1), "d2": (0.1, 0.4), "d3": (0.0, 0.0),
                        "d4": (0.0, 0.3), "d5": (0.5, 0.0)}.items():
        rows += [{"dataset": ds, "learner": "NB", "n_instances": 10, "m": nb},
                 {"dataset": ds, "learner": "A", "n_instances": 10, "m": a}]
    norm = normalised_ratios(pd.DataFrame(rows), "m", ["NB", "A"], "NB",
                             ["d1", "d2", "d3", "d4", "d5"])
    # ratios 0.5, 4 and (both zero) 1 -> geometric mean 2 ** (1/3); d4, d5 left out
    assert norm.ratio["A"] == pytest.approx(2 ** (1 / 3))
    assert (norm.used["A"], norm.skipped["A"]) == (3, 2)
    assert norm.ratio["NB"] == 1.0


def test_cli_report(tmp_path: Path, capsys):
    from workbench.__main__ import main

    run = write_run(tmp_path / "run", synthetic_summary(PAPER_LEARNERS[:3], counts=(1, 2, 3)),
                    {"paper_agreement": str(DEFAULT_METRIC_MAP.relative_to(REPO))})
    assert main(["report", str(run), "--no-figures"]) == 0
    assert (run / "report" / "report.md").is_file()
    assert (run / "report" / "report.html").is_file()
    # only three of the paper's learners: the cells among them (3 per table: 10 tables)
    pa = pd.read_csv(run / "report" / "paper_agreement.csv")
    assert len(pa) == 3 * 10
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "error:" in capsys.readouterr().err


# ------------------------------------------------------------------ units
def test_markdown_and_latex_tables_from_tidy():
    rows = []
    for ds, vals in {"d1": (1, 2, 3), "d2": (1, 2, 3), "d3": (3, 2, 1)}.items():
        for name, v in zip("ABC", vals):
            rows.append({"dataset": ds, "learner": name, "n_instances": 5, "zero_one_loss": v})
    s = pd.DataFrame(rows)
    tidy = wdl_tidy(s, ["A", "B", "C"], {"all": ["d1", "d2", "d3"]}, ["zero_one_loss"])
    md = markdown_table(tidy, ["A", "B", "C"])
    assert md.splitlines()[0] == "|  | A | B |"
    assert md.splitlines()[2] == "| B | 1/0/2 |  |"
    assert md.splitlines()[3] == "| C | 1/0/2 | 1/0/2 |"
    tex = latex_table(tidy, ["A", "B", "C"], "cap_1", "tab:x")
    assert r"\caption{cap\_1}" in tex and "B & 1/0/2 &  \\\\" in tex
    # with p-values, as PAKDD 2014's Table 2: 1 win vs 2 losses, two-tailed sign test p = 1
    md = markdown_table(tidy, ["A", "B", "C"], p_values=True)
    assert md.splitlines()[2] == "| B | 1/0/2 (1.000) |  |"
    assert "1/0/2 (1.000)" in latex_table(tidy, ["A", "B", "C"], "c", "t", p_values=True)


def test_p_value_text():
    from workbench.report.tables import p_text

    assert [p_text(v) for v in (0.0004999, 0.0005, 0.0021, 0.04099, 1.0)] == \
        ["<0.001", "0.001", "0.002", "0.041", "1.000"]


def test_agreement_flags_on_hand_made_results(tmp_path: Path):
    rows = []
    for i in range(12):
        for name, v in (("X", 0.1), ("Y", 0.2)):
            rows.append({"dataset": f"big{i}", "learner": name, "n_instances": 50_000,
                         "zero_one_loss": v})
    s = pd.DataFrame(rows)
    paper = pd.DataFrame(
        [["zero_one_loss", "large", "X", "Y", 12, 0, 0],
         ["zero_one_loss", "large", "Y", "X", 12, 0, 0],
         ["zero_one_loss", "all", "Y", "X", 3, 0, 5],
         ["zero_one_loss", "all", "X", "Z", 3, 0, 5]],
        columns=agr.PAPER_COLUMNS)
    mm = agr.MetricMap(tmp_path / "m.yaml", tmp_path / "p.csv",
                       {"zero_one_loss": ["zero_one_loss"]})
    out = agr.compare_with_paper(s, paper, mm, collections(s))
    assert len(out) == 3  # Z was not run
    same = out.iloc[0]
    assert (same.our_wins, same.our_losses, same.same_direction, same.both_significant_same,
            same.significant_reversal) == (12, 0, True, True, False)
    rev = out.iloc[1]
    assert (rev.same_direction, rev.significant_reversal) == (False, True)
    weak = out.iloc[2]
    assert (weak.paper_significant, weak.same_direction, weak.significant_reversal) == (
        False, True, False)
    assert agr.headline(out).startswith("2/3 cells same direction, 1 significant reversal")


def test_metric_map_in_experiment_folder():
    mm = agr.load_metric_map(DEFAULT_METRIC_MAP)
    assert mm.metrics["rmse"] == ["rmse", "rmse_true_class"]
    paper = agr.load_paper_wdl(mm.paper_wdl)
    assert len(paper) == 450
    shared = REPO.parent / "shared" / "pakdd13-paper-wdl.csv"
    if shared.is_file():
        assert mm.paper_wdl.read_bytes() == shared.read_bytes()


def test_report_options_errors(tmp_path: Path):
    with pytest.raises(ConfigError, match="report.baseline"):
        options_from_config({"report": {"baseline": 3}}, tmp_path, ["NB"])
    missing = options_from_config({"baseline": "ZZ"}, tmp_path, ["A", "NB"])
    assert missing.baseline == "A" and "ZZ" in missing.notes[0]
    with pytest.raises(ConfigError, match="report.draw_decimals"):
        options_from_config({"report": {"draw_decimals": -1}}, tmp_path, ["NB"])
    with pytest.raises(ConfigError, match="report.sign_test: expected one of two-tailed, "
                                          "one-tailed, got 'both'"):
        options_from_config({"report": {"sign_test": "both"}}, tmp_path, ["NB"])
    assert options_from_config({"report": {"sign_test": "one-tailed"}}, tmp_path,
                               ["NB"]).sign_test == "one-tailed"
    with pytest.raises(ConfigError, match="report.collections.x"):
        options_from_config({"report": {"collections": {"x": "iris"}}}, tmp_path, ["NB"])
    opts = options_from_config({"learners": {"B": {}, "A": {}}, "report": {"draw_decimals": 3}},
                               tmp_path, ["A", "B", "C"])
    assert opts.learners == ["B", "A", "C"] and opts.baseline == "B"
    assert opts.decimals_for("rmse") == 3


def test_a_metric_declared_once_reaches_tables_and_figures(tmp_path, monkeypatch):
    from workbench.evaluation import metrics as mx

    monkeypatch.setattr(mx, "METRICS", dict(mx.METRICS))  # leave the registry as it was
    mx.register_metric(mx.Metric("toy_cost", "Toy cost (units)", "mean", per_fold=True,
                                 log=True))
    summary = synthetic_summary(counts=(2, 3, 4))
    summary["toy_cost"] = np.arange(len(summary), dtype=float) + 1.0
    out = render_report(write_run(tmp_path / "run", summary), figures=True)
    tidy = pd.read_csv(out / "tables" / "wdl.csv")
    assert "toy_cost" in set(tidy["metric"])
    assert (out / "tables" / "wdl_toy_cost.md").read_text().count("Toy cost (units)") >= 1
    assert (out / "figures" / "fig_toy_cost.png").is_file()
    md = (out / "report.md").read_text()
    assert "figures/fig_toy_cost.png" in md and "Toy cost (units)" in md
    assert "Times are CPU seconds" not in md.split("figures/fig_toy_cost.png")[1][:1200]


def test_no_normalised_bars_for_a_metric_the_baseline_does_not_report(tmp_path):
    summary = synthetic_summary(counts=(2, 3, 4))
    summary["iterations"] = np.where(summary["learner"] == "NB", np.nan, 50.0)
    out = render_report(write_run(tmp_path / "run", summary), figures=True)
    assert not (out / "figures" / "fig_iterations.png").exists()
    assert (out / "figures" / "fig2_zero_one_loss.png").is_file()
    assert "wdl_iterations" in {p.stem for p in (out / "tables").glob("*.md")}


def test_single_round_runs_have_no_bias_variance_tables(tmp_path):
    summary = synthetic_summary(counts=(1, 2, 3))
    summary["rounds"] = 1
    out = render_report(write_run(tmp_path / "run", summary), figures=False)
    tidy = pd.read_csv(out / "tables" / "wdl.csv")
    assert not {"bias", "variance"} & set(tidy["metric"])
    assert "zero_one_loss" in set(tidy["metric"])


def test_wdl_p_values_option_is_checked(tmp_path: Path):
    from workbench.errors import ConfigError
    from workbench.report.options import options_from_config

    cfg = {"name": "x", "learners": ["A", "B"], "report": {"wdl_p_values": True}}
    assert options_from_config(cfg, tmp_path, ["A", "B"]).wdl_p_values is True
    assert options_from_config({**cfg, "report": {}}, tmp_path, ["A", "B"]).wdl_p_values is False
    with pytest.raises(ConfigError, match="report.wdl_p_values: expected true or false"):
        options_from_config({**cfg, "report": {"wdl_p_values": "yes"}}, tmp_path, ["A", "B"])


def test_figure_titles_cite_only_the_configured_papers_figures(tmp_path):
    summary = synthetic_summary(counts=(2, 3, 4))
    plain = render_report(write_run(tmp_path / "plain", summary), figures=True)
    assert "cf. the paper" not in (plain / "report.md").read_text()
    mapped = render_report(write_run(tmp_path / "mapped", summary,
                                     {"paper_agreement": str(DEFAULT_METRIC_MAP)}), figures=True)
    md = (mapped / "report.md").read_text()
    assert "Bias and variance (cf. the paper's Fig. 1)" in md
    assert "Training and classification time (cf. the paper's Fig. 4)" in md
    pakdd14 = REPO / "experiments" / "pakdd14" / "metric_map_cv.yaml"
    assert agr.load_metric_map(pakdd14).figures == {"fig4_time": "Fig. 2"}


def test_oracle_takes_the_per_data_set_minimum_and_is_not_ranked(tmp_path):
    """report.oracle (JMLR 2016's "KDB best k, a posteriori"): per data set and metric the
    lowest value among the listed learners, with that learner's per-fold values; a column of
    the W/D/L tables, not of the ranks."""
    learners = ["NB", "KDB1", "KDB2", "SKDB"]
    summary = synthetic_summary(learners, counts=(2, 3, 5))
    summary["auc"] = 1.0 - summary["rmse"]  # higher is better: the oracle takes the highest
    summary["rounds"], summary["folds"] = 2, 5
    name = "best KDB k per data set"
    run = write_run(tmp_path / "run", summary,
                    {"oracle": {"name": name, "learners": ["KDB1", "KDB2"]},
                     "scatter": [["SKDB", name]],
                     "rank_figure": {"learners": ["NB", name, "SKDB"]},
                     "time_figures": {"reference": "SKDB", "learners": ["NB", "KDB1"],
                                      "pairs": [["KDB1", "SKDB"]], "bars": ["NB", "SKDB"]}})
    out = render_report(run)
    chosen = pd.read_csv(out / "tables" / "oracle.csv")
    for (ds, m), g in chosen.groupby(["dataset", "metric"]):
        both = summary[(summary.dataset == ds) & summary.learner.isin(["KDB1", "KDB2"])]
        best = both[m].max() if m == "auc" else both[m].min()
        assert g["value"].iloc[0] == pytest.approx(best, rel=1e-12)
        pick = both[m].idxmax() if m == "auc" else both[m].idxmin()
        assert g["learner"].iloc[0] == both.loc[pick, "learner"]
    assert set(chosen["metric"]) >= {"auc", "zero_one_loss"}
    assert "the lowest value (the highest for auc)" in (out / "report.md").read_text()
    wdl = pd.read_csv(out / "tables" / "wdl.csv")
    cell = wdl[(wdl.metric == "zero_one_loss") & (wdl.collection == "all") &
               (wdl.row == name) & (wdl.col == "KDB1")].iloc[0]
    assert cell.losses == 0 and cell.wins + cell.draws == 10  # never worse than a member
    ranks = pd.read_csv(out / "tables" / "ranks.csv")
    assert name not in set(ranks["learner"])
    fig9 = pd.read_csv(out / "tables" / "rank_figure.csv")
    assert set(fig9["learner"]) == {"NB", name, "SKDB"}
    for fig in ("scatter_pairs_zero_one_loss", "rank_figure", "time_pairs", "time_per_dataset",
                "time_bars"):
        assert (out / "figures" / f"{fig}.pdf").is_file()
    bars = pd.read_csv(out / "tables" / "time_bars.csv")  # Fig. 10: seconds per fold
    assert set(bars["learner"]) == {"NB", "SKDB"}
    assert len(bars) == 2 * 2 * summary.dataset.nunique()
    for r in bars.itertuples():
        cell = summary[(summary.dataset == r.dataset) & (summary.learner == r.learner)].iloc[0]
        assert r.seconds == pytest.approx(cell[r.metric] / (cell["rounds"] * cell["folds"]))
    assert list(bars.drop_duplicates("dataset")["n_instances"]) == sorted(
        bars.drop_duplicates("dataset")["n_instances"])
    with pytest.raises(ConfigError, match="report.oracle.name: 'KDB1' is a learner"):
        options_from_config({"report": {"oracle": {"name": "KDB1", "learners": ["KDB2"]}}},
                            tmp_path, learners)
    with pytest.raises(ConfigError, match="report.rank_figure.learners: 'X'"):
        options_from_config({"report": {"rank_figure": {"learners": ["X"]}}}, tmp_path,
                            learners)


def test_report_set_overrides_report_options(tmp_path, capsys):
    from workbench.__main__ import main

    out = tmp_path / "r"
    assert main(["report", "pakdd14", "--out", str(out), "--no-figures", "--set", "alpha=0.01",
                 "--set", "sign_test=one-tailed"]) == 0
    text = (out / "report.md").read_text()
    assert "one-tailed (in the direction of the larger count" in text and "p < 0.01." in text
    html = (out / "report.html").read_text()
    assert html.count('<div class="wide"><table>') == html.count("<table>") > 0
    for item, message in (("figure_widht=lncs", "unknown report option 'figure_widht' (did "
                                                "you mean 'figure_width'?)"),
                          ("figure_width=huge", "report.figure_width: expected screen"),
                          ("alpha", "expected KEY=VALUE"),
                          ("bayesian.rope=-1", "report.bayesian")):
        capsys.readouterr()
        assert main(["report", "pakdd14", "--out", str(out), "--no-figures", "--set",
                     item]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, err


def test_a_sweep_reports_each_variants_mean_over_complete_data_sets(tmp_path):
    names = ["NB", "V[m=0.1]", "V[m=1]", "V[m=10]"]
    summary = synthetic_summary(names, counts=(1, 1, 3))
    summary = summary[~((summary.dataset == "syn04") & (summary.learner == "V[m=10]"))]
    sweep = {"V": {"parameter": "m", "learners": {"V[m=0.1]": 0.1, "V[m=1]": 1,
                                                  "V[m=10]": 10, "V[m=99]": 99}}}
    out = render_report(write_run(tmp_path / "run", summary, {"sweeps": sweep}),
                        figures=True)
    table = pd.read_csv(out / "tables" / "sweep_V.csv")
    complete = summary[summary.dataset != "syn04"]  # V[m=10] has no result there
    for name, value in [("V[m=0.1]", 0.1), ("V[m=1]", 1), ("V[m=10]", 10)]:
        row = table[(table.learner == name) & (table.metric == "rmse")].iloc[0]
        assert row["value"] == value and row["datasets"] == 4
        assert row["mean"] == pytest.approx(complete[complete.learner == name]["rmse"].mean(),
                                            rel=1e-12)
    assert "V[m=99]" not in set(table.learner)  # no results: left out
    assert (out / "figures" / "sweep_V.png").is_file()
    text = (out / "report.md").read_text()
    assert "### V: m" in text and "| 10 | V[m=10] |" in text


def test_log_time_figure_is_ln_of_mean_seconds_plus_one_per_collection(tmp_path):
    summary = synthetic_summary(["NB", "A1DE"], counts=(1, 1, 2))
    small = sorted(set(summary.dataset))[:2]
    out = render_report(write_run(tmp_path / "run", summary, {
        "log_time_figure": True, "collections": {"mine": small}}), figures=True)
    table = pd.read_csv(out / "tables" / "log_time.csv")
    assert set(table.collection) == {"all", "mine"}  # not PAKDD 2013's size groups
    for coll, members in (("all", set(summary.dataset)), ("mine", set(small))):
        for name in ("NB", "A1DE"):
            secs = summary[(summary.learner == name) & summary.dataset.isin(members)]
            row = table[(table.collection == coll) & (table.learner == name) &
                        (table.metric == "test_cpu_seconds")].iloc[0]
            assert row["log_mean_plus_1"] == pytest.approx(
                np.log(secs["test_cpu_seconds"].mean() + 1), rel=1e-12)
    assert (out / "figures" / "fig_log_time.png").is_file()
    with pytest.raises(ConfigError, match="report.log_time_figure"):
        render_report(write_run(tmp_path / "bad", summary, {"log_time_figure": "yes"}))


def test_compact_against_naive_layout_test_time_is_salem_fig_4b(tmp_path):
    """A learner and its `layout: naive` twin (same spec otherwise) are paired; the
    appendix gives 1 − compact / naive classification CPU per data set, and the figure."""
    from workbench.report.sections.appendix import layout_pairs

    assert layout_pairs({"A": {"learner": "A1DE", "preprocessing": "ef:3"},
                         "A-n": {"learner": "A1DE", "preprocessing": "ef:3",
                                 "layout": "naive"},
                         "B-n": {"learner": "A2DE", "layout": "naive"},
                         "C": {"learner": "A1DE", "m": 2}}) == [("A", "A-n")]
    summary = synthetic_summary(["NB", "A1DE", "A1DE-naive"], counts=(1, 1, 2))
    run = write_run(tmp_path / "run", summary)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["learners"]["A1DE-naive"] = {"learner": "A1DE", "layout": "naive"}
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    out = render_report(run, figures=True)
    table = pd.read_csv(out / "tables" / "layout_test_time.csv")
    for d in sorted(set(summary.dataset)):
        t = summary[summary.dataset == d].set_index("learner")["test_cpu_seconds"]
        got = table[table.dataset == d]["test_time_saved"].item()
        assert got == pytest.approx(1 - t["A1DE"] / t["A1DE-naive"], rel=1e-12)
    assert (out / "figures" / "layout_test_time.png").is_file()
    assert "## Appendix: classification time, compact against naive layout" in \
        (out / "report.md").read_text()


def test_layout_pairs_of_a_learner_list_are_none():
    from workbench.report.sections.appendix import layout_pairs
    assert layout_pairs(["NB", "A1DE"]) == [] and layout_pairs(None) == []
