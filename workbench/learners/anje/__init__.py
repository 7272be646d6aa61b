"""AnJE family (SPEC §6, AOARD 2015): averaged n-join estimators and discriminative
weighting on their single-pass generative estimates.

- `objective`: the weighted / direct / tied models, CLL and MSE, exact gradients;
- `optimize`: L-BFGS-B with the reference's settings, single-pass SGD and AdaGrad;
- `model`: the `AnJE` learner and its registered names (A1JE…A5JE, WANBIA-C = ALR1,
  ALR2…ALR5 = WANJE2…5, LR…LR5, WANBIA and their -init1/-initNB/-MSE/-SGD/-ADAGRAD forms);
- `bnc`: `WANBIA-bnc`, bnclassify's prediction rule.
Counts and estimates come from `workbench.learners.joins.JoinIndex` (one pass; only the
joint values seen in training are stored).
"""

from workbench.learners.anje import bnc  # noqa: F401  (registers WANBIA-bnc)
from workbench.learners.anje.model import MAX_JOIN, AnJE

__all__ = ["AnJE", "MAX_JOIN"]
