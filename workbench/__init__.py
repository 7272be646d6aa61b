"""workbench — experiment workbench for semi-naive Bayesian classifiers.

Public API for learner authors (stable): `Dataset`, `Attribute`, `Learner`, `register`,
`create`, `WorkbenchError`. Further names are added by the modules that own them.
"""

from workbench.data.dataset import Attribute, Dataset
from workbench.errors import WorkbenchError
from workbench.learners.base import Learner
from workbench.learners.registry import create, register

__version__ = "0.1.0"

__all__ = ["Attribute", "Dataset", "Learner", "WorkbenchError", "create", "register"]
