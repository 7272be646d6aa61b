"""AnDE family (SPEC §2): NB = A0DE, A1DE, A2DE, A3DE with subsumption resolution ("-S")
and mutual-information weighting ("-W").

For a test instance x, with the set A of its non-missing attribute values (minus values
deleted by subsumption resolution), AnDE of order n scores

    score(y) = Σ_{used s ⊆ A, |s| = n} w_s · P(y, x_s) · Π_{c ∈ A∖s} P(x_c | y, x_s)

where s is *used* iff #(x_s) (over all classes) ≥ F (the frequency limit, δ). If no s of
size n is used, A(n−1)DE is tried with the same A, SR and weighting, down to NB.

The package follows the computation:
- `tables`: the count tables and model inputs as the kernels see them (`Tables`, `Inputs`);
- `estimates`: each m-estimate once, as inlined helpers (linear space with log rescaling);
- `scoring`: one level for a batch of instances (parent pass, child pass, combination);
- `predict`: which values take part (subsumption resolution), fallback, the A1DE fast path;
- `weights`: MI weights of parent sets;
- `model`: the `AnDE` learner and its registered variants.
Counts come from `workbench.learners.counting.AnDECounts` (one pass, additive).
"""

from workbench.learners.ande.model import MAX_ORDER, AnDE

__all__ = ["AnDE", "MAX_ORDER"]
