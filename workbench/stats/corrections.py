"""Multiple-comparison corrections of the p-values of one family of tests (the pairwise sign
tests of one W/D/L table): Bonferroni, and Holm's step-down method, which controls the same
family-wise error rate and is never less powerful.

For m p-values p_(1) ≤ … ≤ p_(m) (ascending):
- Bonferroni: p̃_i = min(1, m · p_i);
- Holm: p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) · p_(j)) (monotone in the sorted order).
A test is significant when its adjusted p̃ < alpha. NaN p-values are left out of the family
and stay NaN.
"""

from __future__ import annotations

import numpy as np

METHODS = ("none", "holm", "bonferroni")


def adjust_p_values(p_values, method: str) -> np.ndarray:
    """Adjusted p-values (same order as given) under `method` (one of `METHODS`)."""
    if method not in METHODS:
        raise ValueError(f"correction must be one of {', '.join(METHODS)}, got {method!r}")
    p = np.asarray(p_values, dtype=np.float64)
    out = p.copy()
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if method == "none" or m == 0:
        return out
    q = p[ok]
    if method == "bonferroni":
        out[ok] = np.minimum(1.0, m * q)
        return out
    order = np.argsort(q, kind="mergesort")
    scaled = np.minimum(1.0, (m - np.arange(m)) * q[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    out[ok] = adjusted
    return out
