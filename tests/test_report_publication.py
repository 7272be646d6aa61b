"""Publication-ready output: TrueType (Type 42) fonts in every PDF, figures drawn at a
paper's width with no text under 7 pt, an HTML table of contents, and the statistics
options (Holm/Bonferroni, corrected resampled t-test, Bayesian signed-rank) in the report."""

from __future__ import annotations

import re

import matplotlib.text
import numpy as np
import pandas as pd
import pytest

from workbench.report import figures as fg
from workbench.report.render import render_report
from workbench.stats.groups import collections
from workbench.stats.bayesian import signed_rank

from test_report import synthetic_summary, write_run

LEARNERS = ["NB", "A1DE", "A2DE-SW", "RF10"]


def _fonts(pdf: bytes) -> set[str]:
    return set(re.findall(rb"/Subtype\s*/(Type3|Type1|TrueType|Type0|CIDFontType2)", pdf))


@pytest.fixture(scope="module")
def paper_report(tmp_path_factory):
    summary = synthetic_summary(LEARNERS, counts=(3, 4, 6))
    run = write_run(tmp_path_factory.mktemp("pub"), summary,
                    {"figure_width": "lncs", "correction": "holm",
                     "bayesian": {"rope": 0.01, "metrics": ["zero_one_loss"], "samples": 2000}})
    return render_report(run)


def test_pdf_figures_embed_truetype_fonts_never_type3(paper_report):
    pdfs = sorted((paper_report / "figures").glob("*.pdf"))
    assert len(pdfs) >= 8
    for pdf in pdfs:
        kinds = _fonts(pdf.read_bytes())
        # TrueType outlines: simple (TrueType) or, beyond 8-bit codes, CID-keyed (Type0 +
        # CIDFontType2); never Type 3 bitmaps/procedures
        assert b"Type3" not in kinds and kinds & {b"TrueType", b"CIDFontType2"}, (pdf.name, kinds)


@pytest.mark.parametrize("width", ["column", "lncs", "page"])
def test_figures_at_a_paper_width_keep_text_at_7_points(width):
    from workbench.report.options import PAPER_WIDTHS_CM
    inches = PAPER_WIDTHS_CM[width] / 2.54
    summary = synthetic_summary(LEARNERS, counts=(3, 4, 6))
    colls = collections(summary, {})
    ranks = pd.Series({"NB": 3.2, "A1DE": 2.4, "A2DE-SW": 1.9, "RF10": 2.5})
    wide = summary.pivot(index="dataset", columns="learner", values="zero_one_loss")
    bay = [(a, "NB", signed_rank(wide[a], wide["NB"], 0.01, samples=500, lower_is_better=True))
           for a in LEARNERS[1:]]
    with fg.paper_width(inches):
        figs = [fg.normalised_bar_figure(summary, ["bias", "variance"], LEARNERS, "NB", colls,
                                         "Bias and variance")[0],
                fg.normalised_bar_figure(summary, ["train_cpu_seconds"], LEARNERS, "NB",
                                         colls, "Training time")[0],
                fg.cd_diagram(ranks, 1.2, [["A2DE-SW", "A1DE"]], "0-1 loss"),
                fg.scatter_figure(summary, "zero_one_loss", [(a, "NB") for a in LEARNERS[1:]],
                                  {}),
                fg.bayes_simplex_figure(bay, "zero_one_loss")]
    for fig in figs:
        assert fig.get_size_inches()[0] == pytest.approx(inches)
        sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
                 if t.get_visible() and t.get_text().strip()]
        assert sizes and min(sizes) >= 7.0, min(sizes)
    # outside the context: the screen layout (the bar figure takes the width it needs)
    screen = fg.normalised_bar_figure(summary, ["bias"], LEARNERS, "NB", colls, "Bias")[0]
    assert screen.get_size_inches()[0] > inches or width == "page"


def test_html_report_has_a_table_of_contents(paper_report):
    html = (paper_report / "report.html").read_text()
    nav = html[html.index('<nav class="toc">'):html.index("</nav>")]
    for anchor in re.findall(r'href="#([^"]+)"', nav):
        assert f'id="{anchor}"' in html
    assert 'href="#win-draw-loss-tables"' in nav and 'href="#bayesian-signed-rank-tests"' in nav


def test_holm_adjusted_wdl_and_bayesian_section(paper_report):
    wdl = pd.read_csv(paper_report / "tables" / "wdl.csv")
    assert "p_adjusted" in wdl.columns
    assert (wdl["p_adjusted"] >= wdl["p_value"] - 1e-15).all()
    assert (wdl["significant"] == (wdl["p_adjusted"] < 0.05)).all()
    md = (paper_report / "report.md").read_text()
    assert "Holm-adjusted over the pairs of each table" in md
    bay = pd.read_csv(paper_report / "tables" / "bayesian.csv")
    assert list(bay["a"]) == ["A1DE", "A2DE-SW", "RF10"] and set(bay["b"]) == {"NB"}
    np.testing.assert_allclose(bay[["p_a_better", "p_rope", "p_b_better"]].sum(axis=1), 1.0)
    assert (paper_report / "figures" / "bayes_zero_one_loss.pdf").is_file()


def test_corrected_t_wdl_from_fold_values(tmp_path):
    """Per-fold values where A is lower on every fold of one data set by a wide margin and
    equal on the other: a win and a draw under the corrected t-test (2-fold CV, ratio 1)."""
    rows = []
    for ds, gap in (("d1", 0.2), ("d2", 0.0)):
        for r in range(10):
            for f in range(2):
                noise = 0.01 * ((r * 2 + f) % 3)
                rows.append((ds, "A", r, f, "zero_one_loss", 0.3 - gap + noise))
                rows.append((ds, "B", r, f, "zero_one_loss", 0.3 + noise))
    fm = pd.DataFrame(rows, columns=["dataset", "learner", "round", "fold", "metric", "value"])
    summary = (fm.groupby(["dataset", "learner"])["value"].mean().rename("zero_one_loss")
               .reset_index().assign(n_instances=100))
    run = write_run(tmp_path / "run", summary, {"wdl": "corrected-t"})
    cfg = __import__("yaml").safe_load((run / "config.yaml").read_text())
    cfg["protocol"] = {"rounds": 10, "folds": 2, "seed": 1}
    (run / "config.yaml").write_text(__import__("yaml").safe_dump(cfg))
    out = render_report(run, figures=False, fold_metrics=fm)
    wdl = pd.read_csv(out / "tables" / "wdl.csv")
    row = wdl[(wdl["metric"] == "zero_one_loss") & (wdl["collection"] == "all")].iloc[0]
    assert (row["row"], row["col"]) == ("B", "A")
    assert (row["wins"], row["draws"], row["losses"]) == (0, 1, 1)
    assert "corrected resampled t-test" in (out / "report.md").read_text()
