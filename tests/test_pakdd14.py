"""The PAKDD 2014 experiment files: both configs name the paper's 71 data sets in Table 1's
order (by our slugs), its two collections split at 2,000 instances, the protocols of the
paper, and the published Table 2 cells as the agreement reads them."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from workbench.data import catalog
from workbench.evaluation.protocols import KFold, RandomSampling
from workbench.experiment.config import load_config
from workbench.report.agreement import load_metric_map, load_paper_wdl

from conftest import SHARED

REPO = Path(__file__).resolve().parents[1]
CV = REPO / "configs" / "pakdd14-asaode.yaml"
BV = REPO / "configs" / "pakdd14-asaode-bv.yaml"
LEARNERS = ["AODE", "WAODE", "AODESR", "BSEAODE", "ASAODE", "A2DE"]
PUBLISHED = SHARED / "published"
needs_published = pytest.mark.skipif(not PUBLISHED.is_dir(),
                                     reason="../shared/published is not beside the checkout")


def _table1():
    with open(PUBLISHED / "pakdd14-asaode-table1-datasets.csv") as fh:
        return list(csv.DictReader(fh))


@needs_published
def test_configs_name_table_1_in_order_with_its_collections():
    rows = _table1()
    # the paper's waveform has 100,000 instances: not the catalog's waveform-5000 alias
    slugs = ["waveform-100000" if r["dataset"] == "waveform" else
             catalog.resolve_slug(r["dataset"]) for r in rows]
    cv, bv = load_config(CV), load_config(BV)
    assert list(cv.datasets) == slugs
    for s, r in zip(slugs, rows):  # every name is a known entry with the paper's size
        entry = catalog.get_entry(s)
        assert entry is not None, s
        if s not in ("hypothyroid", "splice"):  # PAKDD 2013's versions (README)
            assert entry.instances == int(r["instances"]), s
    small = [s for s, r in zip(slugs, rows) if r["size_group"] == "smallest43"]
    large = [s for s, r in zip(slugs, rows) if r["size_group"] == "largest28"]
    assert cv.report["collections"] == {"smallest43": small, "largest28": large}
    assert list(bv.datasets) == large and bv.report["collections"] == {"largest28": large}
    assert all(int(r["instances"]) >= 2000 for r in rows if r["size_group"] == "largest28")
    for c in (cv, bv):
        assert [lc.display for lc in c.learners] == LEARNERS
        assert all(lc.create().missing == "value" for lc in c.learners)
        assert c.protocol.discretize_sample == 100_000
    assert cv.protocol.plan == KFold(rounds=1, folds=10, seed=1)
    assert bv.protocol.plan == RandomSampling(n_train=1000, n_test=1000, repetitions=10, seed=1)


@needs_published
def test_paper_cells_are_table_2_and_each_run_compares_its_own():
    published = pd.read_csv(PUBLISHED / "pakdd14-asaode-table2-wdl.csv")
    for name, metrics in (("metric_map_cv.yaml", {"rmse"}),
                          ("metric_map_bv.yaml", {"bias", "variance"})):
        mm = load_metric_map(REPO / "experiments" / "pakdd14" / name)
        assert set(mm.metrics) == metrics
        cells = load_paper_wdl(mm.paper_wdl)
    assert len(cells) == len(published) == 75
    ours = cells.assign(collection=cells["collection"].replace({"all": "all71"}))
    pd.testing.assert_frame_equal(
        ours.reset_index(drop=True),
        published.rename(columns={"row_learner": "row", "col_learner": "col"})[
            list(cells.columns)].astype(ours.dtypes.to_dict()).reset_index(drop=True))
    assert set(cells["row"]) | set(cells["col"]) == set(LEARNERS)


@pytest.mark.parametrize("name", ["soybean", "musk2", "ipums.la.99", "record-linkage"])
def test_other_papers_entries_are_known_but_not_in_all(name):
    entry = catalog.get_entry(name)
    assert entry is not None and entry.slug not in {e.slug for e in catalog.CATALOG}
