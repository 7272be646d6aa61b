"""Compiled Bayesian Dirichlet scores of a network node, computed the way Weka computes its
BAYES score, operation for operation, so that the hill climber's decisions that turn on
the last bits — a deletion whose gain is zero in exact arithmetic (a parent determined by
the others on the training rows) is taken or not as the rounding falls — fall as in Weka:

- every parent configuration in mixed radix over the parents *in their order* (the order
  they were added), seen or not, each value's cell in turn: ``s += lnΓ(α + N_jv)`` and
  ``N += α + N_jv`` (skipped when α + N_jv = 0), then ``s −= lnΓ(N)`` (if N ≠ 0), then
  ``s −= r·lnΓ(α)`` and ``s += lnΓ(r·α)`` (if α ≠ 0) — one running sum;
- lnΓ by Cephes' ``lgam`` as Weka evaluates it (`ln_gamma`): the recurrence to [2, 3)
  and a rational approximation below 13, Stirling's series with a polynomial correction
  above (the published Cephes coefficients).

numba, imported only when a BayesNet is fitted."""

from __future__ import annotations

import math

import numpy as np

from workbench.jit import numba

MAX_CELLS = 1 << 26
"""Configurations × values beyond which a score is computed from the cells seen only
(`BDScore`: the same value in exact arithmetic, Weka's running sum then not reproduced to
the last bit — Weka would need the same table in memory)."""

_A = np.array([8.11614167470508450300e-4, -5.95061904284301438324e-4,
               7.93650340457716943945e-4, -2.77777777730099687205e-3,
               8.33333333333331927722e-2])
_B = np.array([-1.37825152569120859100e3, -3.88016315134637840924e4,
               -3.31612992738871184744e5, -1.16237097492762307383e6,
               -1.72173700820839662146e6, -8.53555664245765465627e5])
_C = np.array([-3.51815701436523470549e2, -1.70642106651881159223e4,
               -2.20528590553854454839e5, -1.13933444367982507207e6,
               -2.53252307177582951285e6, -2.01889141433532773231e6])
_LS2PI = 0.91893853320467274178  # ln √(2π)


@numba.njit(cache=True, nogil=True)
def ln_gamma(x: float) -> float:
    """ln Γ(x) for x > 0 (the scores' arguments), Cephes' lgam step by step."""
    if x < 13.0:
        z = 1.0
        while x >= 3.0:
            x -= 1.0
            z *= x
        while x < 2.0:
            z /= x
            x += 1.0
        if z < 0.0:
            z = -z
        if x == 2.0:
            return math.log(z)
        x -= 2.0
        num = _B[0]
        for i in range(1, 6):
            num = num * x + _B[i]
        den = x + _C[0]
        for i in range(1, 6):
            den = den * x + _C[i]
        return math.log(z) + x * num / den
    q = (x - 0.5) * math.log(x) - x + _LS2PI
    if x > 1.0e8:
        return q
    p = 1.0 / (x * x)
    if x >= 1000.0:
        return q + ((7.9365079365079365079365e-4 * p - 2.7777777777777777777778e-3) * p
                    + 0.0833333333333333333333) / x
    poly = _A[0]
    for i in range(1, 5):
        poly = poly * p + _A[i]
    return q + poly / x


@numba.njit(cache=True, nogil=True)
def node_score(Z: np.ndarray, child: int, parents: np.ndarray, cards: np.ndarray,
               alpha: float) -> float:
    """The BAYES score of node `child` of the coded rows Z (n, nodes) under `parents` (in
    their order), over all of their configurations, as Weka sums it (module docstring)."""
    r = cards[child]
    n_cfg = 1
    for p in parents:
        n_cfg *= cards[p]
    counts = np.zeros(n_cfg * r, dtype=np.int64)
    for i in range(Z.shape[0]):
        cfg = 0
        for p in parents:
            cfg = cfg * cards[p] + Z[i, p]
        counts[cfg * r + Z[i, child]] += 1
    s = 0.0
    for j in range(n_cfg):
        total = 0.0
        for v in range(r):
            a = alpha + counts[j * r + v]
            if a != 0.0:
                s += ln_gamma(a)
                total += a
        if total != 0.0:
            s -= ln_gamma(total)
        if alpha != 0.0:
            s -= r * ln_gamma(alpha)
            s += ln_gamma(r * alpha)
    return s
