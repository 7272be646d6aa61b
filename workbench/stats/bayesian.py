"""The Bayesian signed-rank test with a region of practical equivalence (rope), after
Benavoli, Corani, Mangili, Zaffalon & Ruggeri (ICML 2014) and Benavoli, Corani, Demšar &
Zaffalon (JMLR 2017, "Time for a change"): a comparison of two learners over data sets that
says how probable it is that A is practically better, that they are practically equivalent,
or that B is better — instead of a p-value.

With z_i = a_i − b_i (i = 1..n, data sets; lower is better — values of a metric where
higher is better are negated first) and a pseudo-observation z_0 = 0
of prior weight s (default 0.5), the Dirichlet-process posterior gives weights
w ~ Dirichlet(s, 1, …, 1) over z_0 … z_n. For each posterior sample,

    θ_A    = Σ_ij w_i w_j H(−(z_i + z_j) − 2r)     (A lower by more than the rope r)
    θ_B    = Σ_ij w_i w_j H(z_i + z_j − 2r)        (B lower by more than r)
    θ_rope = 1 − θ_A − θ_B,

with H the Heaviside step (H(0) = ½). The reported probabilities are the shares of the
samples in which each of θ_A, θ_rope, θ_B is the largest. Samples are drawn with
`numpy.random.RandomState(seed).dirichlet`, so a result is reproducible from its seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PRIOR = 0.5
SAMPLES = 50_000


@dataclass(frozen=True)
class SignedRank:
    """Posterior of one comparison: P(A better), P(equivalent), P(B better) and the samples
    of (θ_A, θ_rope, θ_B), one row per posterior sample."""

    p_a_better: float
    p_rope: float
    p_b_better: float
    samples: np.ndarray
    n: int
    rope: float


def signed_rank(a, b, rope: float = 0.0, *, prior: float = PRIOR, samples: int = SAMPLES,
                seed: int = 1, chunk: int = 5_000, lower_is_better: bool) -> SignedRank:
    """Bayesian signed-rank comparison of paired values `a` and `b` (data sets; NaN pairs
    left out) with rope half-width `rope` in the metric's units. ``p_a_better`` is the
    probability that A is better: lower, or higher with ``lower_is_better=False``."""
    sign = 1.0 if lower_is_better else -1.0
    x = sign * np.asarray(a, dtype=np.float64)
    y = sign * np.asarray(b, dtype=np.float64)
    keep = ~(np.isnan(x) | np.isnan(y))
    z = np.concatenate(([0.0], x[keep] - y[keep]))
    if rope < 0 or samples < 1 or prior <= 0:
        raise ValueError("signed_rank: rope >= 0, samples >= 1 and prior > 0 required")
    pair = z[:, None] + z[None, :]
    lower = np.where(-pair > 2 * rope, 1.0, np.where(-pair == 2 * rope, 0.5, 0.0))
    higher = np.where(pair > 2 * rope, 1.0, np.where(pair == 2 * rope, 0.5, 0.0))
    alpha = np.ones(z.size)
    alpha[0] = prior
    rng = np.random.RandomState(seed)
    theta = np.empty((samples, 3))
    for lo in range(0, samples, chunk):
        w = rng.dirichlet(alpha, min(chunk, samples - lo))
        theta[lo:lo + w.shape[0], 0] = np.einsum("si,ij,sj->s", w, lower, w)
        theta[lo:lo + w.shape[0], 2] = np.einsum("si,ij,sj->s", w, higher, w)
    theta[:, 1] = 1.0 - theta[:, 0] - theta[:, 2]
    winner = np.bincount(np.argmax(theta, axis=1), minlength=3) / samples
    return SignedRank(float(winner[0]), float(winner[1]), float(winner[2]), theta,
                      int(keep.sum()), float(rope))


def simplex_xy(theta: np.ndarray) -> np.ndarray:
    """Barycentric (θ_A, θ_rope, θ_B) → plane: A at (0, 0), B at (1, 0), rope at the top."""
    return np.column_stack([theta[:, 2] + 0.5 * theta[:, 1], theta[:, 1] * np.sqrt(3) / 2])
