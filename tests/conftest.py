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

        def __init__(self, scale: float = 1.0, fail: bool = False, bad: str = ""):
            self.scale, self.fail, self.bad = scale, fail, bad

        def fit(self, data):
            delay = float(os.environ.get("RUNSTANDIN_DELAY", "0") or 0)
            if delay:
                time.sleep(delay)
            if self.fail:
                raise ValueError("stand-in asked to fail")
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
