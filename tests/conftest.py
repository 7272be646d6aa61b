"""Shared test fixtures: paths to the repository and to ../shared (read-only data)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SHARED_DATASETS = SHARED / "datasets"
FETCHED = SHARED_DATASETS / "fetched"
EMBEDDED = REPO / "datasets"

needs_shared = pytest.mark.skipif(
    not FETCHED.is_dir(), reason="../shared/datasets/fetched is not beside the checkout"
)


def shared_file(slug: str) -> Path:
    """Path of a data set in ../shared (registry or fetched); skips the test if absent."""
    for folder in ("registry", "fetched"):
        p = SHARED_DATASETS / folder / f"{slug}.arff.gz"
        if p.is_file():
            return p
    pytest.skip(f"{slug} not available in ../shared/datasets")


# ----- the runner tests' stand-in learner (one plugin file for the whole session: a name
# registered twice from two files would be an error) ---------------------------------------
PLUGIN = textwrap.dedent(
    """
    import os
    import time

    import numba
    import numpy as np
    from workbench.learners.base import Learner
    from workbench.learners.registry import register


    FITS = [0]


    @numba.njit(cache=False)
    def spin(n):  # a kernel that does not return to Python for n iterations (~1 ns each)
        x = 0.0
        for i in range(n):
            x = x * 0.999999 + 1.0
        return x


    class RunStandIn(Learner):
        '''Nearest-centroid with softmax scores on raw data (NaN -> 0).'''

        preprocessing = "none"

        def __init__(self, scale: float = 1.0, fail: bool = False, bad: str = "",
                     die: bool = False):
            self.scale, self.fail, self.bad, self.die = scale, fail, bad, die

        def fit(self, data):
            delay = float(os.environ.get("RUNSTANDIN_DELAY", "0") or 0)
            if delay:
                time.sleep(delay)
            if self.fail:
                raise ValueError("stand-in asked to fail")
            if self.die and data.n_instances > 32:  # (not the warm-up's fit): as the
                os._exit(9)  # kernel's OOM killer would end the process
            spin_after = os.environ.get("RUNSTANDIN_SPIN_AFTER", "")
            if spin_after and data.n_instances > 32:  # not the warm-up's fit
                FITS[0] += 1
                if FITS[0] > int(spin_after):
                    spin(10**12)  # ~20 minutes inside compiled code

            self._remember_header(data)
            X = np.nan_to_num(data.X)
            self.means = np.array([
                X[data.y == k].mean(axis=0) if (data.y == k).any() else np.zeros(X.shape[1])
                for k in range(data.n_classes)
            ])
            return self

        def predict_proba(self, data):
            self._check_fitted(data)
            X = np.nan_to_num(data.X)
            s = -self.scale * ((X[:, None, :] - self.means[None]) ** 2).sum(axis=2)
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p = p / p.sum(axis=1, keepdims=True)
            if self.bad == "nan":  # a broken learner, for the runner's output checks
                p[-1, 0] = np.nan
            elif self.bad == "negative":
                p[0] = 0.0
                p[0, 0], p[0, 1] = -0.25, 1.25
            elif self.bad == "unnormalised":
                p[1] *= 1.5
            elif self.bad == "extra":  # one column too many
                p = np.hstack([p, np.zeros((p.shape[0], 1))])
            elif self.bad == "transposed":
                p = p.T
            return p

        def measures(self):  # a named measure (Learner.measures), reaching the summary
            return {"centroid_spread": float(np.ptp(self.means))}


    register("RunStandIn", RunStandIn)
    """
)



@pytest.fixture(scope="session")
def plugin_file(tmp_path_factory) -> Path:
    """A config plugin registering ``RunStandIn`` (loaded by workers and subprocesses too);
    ``RUNSTANDIN_DELAY`` (seconds) slows every fit, so a test can stop a run midway;
    with ``RUNSTANDIN_SPIN_AFTER=N`` a process's fits after its N-th sit in a compiled
    kernel for minutes (a signal must stop the run all the same)."""
    p = tmp_path_factory.mktemp("runplugin") / "run_standin.py"
    p.write_text(PLUGIN)
    return p


@pytest.fixture(autouse=True)
def _no_delay(monkeypatch):
    monkeypatch.delenv("RUNSTANDIN_DELAY", raising=False)
    monkeypatch.delenv("RUNSTANDIN_SPIN_AFTER", raising=False)


def train_in_passes(model, data, chunk: int, restart: bool = True):
    """Train a `MultiPassLearner` by begin / learn / end_pass over chunks of `chunk` rows,
    every pass reading the rows in order; with `restart` the model is pickled and loaded
    again after every pass (a run resumed between passes). Returns (model, passes)."""
    import pickle

    import numpy as np

    model.begin(data)
    p = 0
    while model.training:
        for lo in range(0, data.n_instances, chunk):
            model.learn(p, data.take(np.arange(lo, min(lo + chunk, data.n_instances))))
        model.end_pass(p)
        if restart:
            model = pickle.loads(pickle.dumps(model))
        p += 1
    return model, p


def run_config(folder: Path, body: str, jobs: int = 1, name: str = "c"):
    """Write a config (YAML text, dedented; ``output:`` relative to `folder`) to
    folder/NAME.yaml and run it with `jobs` workers, quietly: (RunResult, run directory)."""
    import io

    from workbench.experiment import runner
    from workbench.experiment.config import load_config

    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(body))
    config = load_config(path)
    return runner.run_experiment(config, jobs=jobs, stream=io.StringIO()), Path(config.output)


# ----- the long tests: run by `pytest -m long` (.ci/run runs them after the default suite) --
LONG_TESTS = frozenset({
    "tests/test_ande_fast_path.py::test_every_class_count_through_the_row_products",
    "tests/test_ande_fast_path.py::test_three_million_training_rows",
    "tests/test_cli_predict.py::test_predict_csv",
    "tests/test_contract.py::test_every_registered_learner_keeps_the_contract",
    "tests/test_dask_cluster.py::test_a_lost_scheduler_is_one_line_and_the_run_resumes",
    "tests/test_dask_cluster.py::test_a_lost_scheduler_under_evaluate_cv_is_one_line",
    "tests/test_runner.py::test_a_task_that_kills_its_dask_worker_fails_its_pair_in_one_line",
    "tests/test_weka_bridge.py::test_bayesnet_is_wekas_on_every_data_set_of_the_jmlr_reproduction",
    "tests/test_dask_cluster.py::test_smoke_on_a_cluster_with_a_relative_data_directory",
    "tests/test_fetch.py::test_checksum_mismatch_and_failures_leave_no_file",
    "tests/test_fetch_sources.py::test_each_source_gives_the_reference_content",
    "tests/test_jit.py::test_a_kernel_first_compiled_inside_a_fold_is_kept_out_of_its_times",
    "tests/test_jit.py::test_the_compile_clock_counts_the_compiling_threads_cpu_only",
    "tests/test_jit.py::test_warm_up_leaves_nothing_to_compile_for_a_first_cv",
    "tests/test_kdb.py::test_constant_children_are_left_out_of_the_product",
    "tests/test_kdb.py::test_counts_on_the_full_parent_space_equal_the_depth_by_depth_ranking",
    "tests/test_kdb.py::test_id_like_attributes_use_sparse_pair_counts",
    "tests/test_metric_registry.py::test_higher_is_better_plugin_metric_decides_the_right_way",
    "tests/test_metric_registry.py::test_resumed_run_computes_a_metric_registered_since",
    "tests/test_outofcore_cv.py::test_k_fold_cv_on_dask_workers_equals_one_process",
    "tests/test_outofcore_cv.py::test_out_of_core_runs_on_dask_workers_as_in_one_process",
    "tests/test_packaging.py::test_quiet_and_verbose",
    "tests/test_protocols.py::test_learning_curve_report_table_and_figure",
    "tests/test_report.py::test_a_metric_declared_once_reaches_tables_and_figures",
    "tests/test_report.py::test_a_sweep_reports_each_variants_mean_over_complete_data_sets",
    "tests/test_report.py::test_compact_against_naive_layout_test_time_is_salem_fig_4b",
    "tests/test_report.py::test_figure_titles_cite_only_the_configured_papers_figures",
    "tests/test_report.py::test_no_normalised_bars_for_a_metric_the_baseline_does_not_report",
    "tests/test_report.py::test_oracle_takes_the_per_data_set_minimum_and_is_not_ranked",
    "tests/test_report.py::test_report_has_every_table",
    "tests/test_report_canvas.py::test_no_text_leaves_the_canvas",
    "tests/test_report_publication.py::test_pdf_figures_embed_truetype_fonts_never_type3",
    "tests/test_run_safety.py::test_a_signal_stops_a_run_whose_fold_sits_in_a_long_kernel",
    "tests/test_run_safety.py::test_ctrl_c_with_two_jobs_keeps_finished_folds_quietly",
    "tests/test_run_safety.py::test_degenerate_data_warns_in_run_and_report",
    "tests/test_run_safety.py::test_fault_injection_kill_term_concurrent_corrupt",
    "tests/test_selection.py::test_selection_in_passes_over_chunks_equals_fit",
    "tests/test_sklearn.py::test_sklearn_comparator_in_a_run",
    "tests/test_sklearn.py::test_sklearn_estimator_checks",
    "tests/test_slurm_recipe.py::test_the_slurm_recipe_runs_a_cross_validation_on_its_workers",
    "tests/test_stats_extra.py::test_corrections_equal_statsmodels_on_the_pakdd13_sign_tests",
    "tests/test_tutorial.py::test_tutorial_runs_end_to_end",
})
"""Test functions (every parametrisation) that took 4.5 s or more together in a full run
(pytest --durations, AMD EPYC, 2 cores): the estimator-check sweeps, the tutorial, the
report-canvas and signal sweeps, the cluster tests. They are marked ``long``: the default
suite leaves them out (`addopts` in pyproject.toml) and CI runs them after it."""


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.nodeid.split("[", 1)[0] in LONG_TESTS:
            item.add_marker(pytest.mark.long)
