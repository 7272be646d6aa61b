"""workbench — experiment workbench for semi-naive Bayesian classifiers.

The public API for learner authors (stable; see docs/adding-a-learner.md):

* `Dataset`, `Attribute` — the immutable data type every stage passes on;
* `Learner` — the base class (`fit`, `predict_proba`, declared `preprocessing`);
* `register`, `create` — the learner registry (names → parameter sets);
* `AnDECounts`, `BlockStore` — the shared counting layer of the count-based learners, so a
  new variant reuses the counts instead of copying them;
* `load_plugins` — import plugin modules / files that register learners;
* `register_metric`, `register_protocol`, `register_section` — a plugin's own metric,
  evaluation protocol (``protocol: {type: ...}``) and report section;
* `load_results` — a run directory's results as tidy pandas DataFrames;
* `WorkbenchError` — the one user-facing error type.
"""

import importlib
from typing import TYPE_CHECKING

from workbench.errors import WorkbenchError

__version__ = "0.2.0"

__all__ = [
    "AnDECounts",
    "Attribute",
    "BlockStore",
    "Dataset",
    "Learner",
    "WorkbenchError",
    "create",
    "load_plugins",
    "load_results",
    "register",
    "register_metric",
    "register_protocol",
    "register_section",
]

if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors
    from workbench.data.dataset import Attribute, Dataset
    from workbench.learners.base import Learner
    from workbench.learners.counting import AnDECounts, BlockStore
    from workbench.learners.registry import create, register
    from workbench.plugins import load_plugins
    from workbench.store import load_results
    from workbench.evaluation.metrics import register_metric
    from workbench.evaluation.protocols import register_protocol
    from workbench.report.render import register_section

_LAZY = {
    "Attribute": "workbench.data.dataset",
    "Dataset": "workbench.data.dataset",
    "Learner": "workbench.learners.base",
    "create": "workbench.learners.registry",
    "register": "workbench.learners.registry",
    "AnDECounts": "workbench.learners.counting",
    "BlockStore": "workbench.learners.counting",
    "load_plugins": "workbench.plugins",
    "load_results": "workbench.store",
    "register_metric": "workbench.evaluation.metrics",
    "register_protocol": "workbench.evaluation.protocols",
    "register_section": "workbench.report.render",
}


def __getattr__(name: str):
    """Import the parts (pyarrow, numba kernels) only when they are used, so that a
    command that needs none of them (``--version``, ``--help``) starts in milliseconds."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later lookups are plain attribute reads
        return value
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")
