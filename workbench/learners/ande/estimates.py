"""SPEC §2's m-estimate as inlined numba helpers: every AnDE-family kernel estimates
through these (the forms differ only in where a running product or an inverted
denominator is folded in, which the exactness tests pin to the last bit).

Scores are products kept per (parent set, instance, class) in linear space; a product that
falls below `RESCALE` moves into a log accumulator, so 100+ attributes never underflow.

* child factor  P(x_c | y, x_s) = (#(y, x_s, x_c) + m/|X_c|) / (#(y, x_s) − #(y, x_s, x_c ?) + m)
* parent joint  P(y, x_s) = (#(y, x_s) + m/(K·Π|X_s|)) / (N − miss(s) + m)
* naive Bayes   P(y) Π_c P(x_c | y) with P(y) = (#y + m/K) / (N + m)
"""

from __future__ import annotations

from workbench.jit import numba
import numpy as np

RESCALE = 1e-280


@numba.njit(cache=True, nogil=True, inline="always")
def m_estimate(count, share, total, m):
    """(count + share) / (total + m): the m-estimate, share = m / (values of what is
    estimated), e.g. P(y) = m_estimate(#y, m/K, N, m)."""
    return (count + share) / (total + m)


@numba.njit(cache=True, nogil=True, inline="always")
def inverse_total(total, m):
    """1 / (total + m): an m-estimate's denominator, inverted once for a hot loop."""
    return 1.0 / (total + m)


@numba.njit(cache=True, nogil=True, inline="always")
def m_estimate_inv(count, share, inv):
    """`m_estimate` given its inverted denominator `inv` = `inverse_total(total, m)`."""
    return (count + share) * inv


@numba.njit(cache=True, nogil=True, inline="always")
def times_m_estimate(p, count, share, total, m):
    """A running product p times an m-estimate, folded as p · (count + share) / (total + m)."""
    return p * (count + share) / (total + m)


@numba.njit(cache=True, nogil=True, inline="always")
def times_m_estimate_inv(p, count, share, inv):
    """A running product times an m-estimate with its inverted denominator, folded as
    p · (count + share) · inv."""
    return p * (count + share) * inv


@numba.njit(cache=True, nogil=True, inline="always")
def times_child_missing(prod, lacc, cnt, q, r, cc, mc, madd, m, K):
    """The child factor when the child has missing training values (its denominator drops
    the rows where it is missing, mc[y] = #(y, x_s, x_c ?)); rescales at once, True if so."""
    small = False
    for y in range(K):
        pv = times_m_estimate(prod[q, r, y], cc[y], madd, cnt[q, r, y] - mc[y], m)
        if pv < RESCALE:
            lacc[q, r, y] += np.log(pv)
            pv = 1.0
            small = True
        prod[q, r, y] = pv
    return small


@numba.njit(cache=True, nogil=True, inline="always")
def rescale(prod, lacc, q, r, K):
    """Move parent set q's tiny products for instance r into the log accumulator."""
    for y in range(K):
        pv = prod[q, r, y]
        if pv < RESCALE:
            lacc[q, r, y] += np.log(pv)
            prod[q, r, y] = 1.0


@numba.njit(cache=True, nogil=True, inline="always")
def joint_term(cnt_y, prod_y, m, K, n_values, w, ptot_b):
    """w · P(y, x_s) · Π child factors, in linear space."""
    return m_estimate_inv(cnt_y, m / (K * n_values), w / (ptot_b + m)) * prod_y


@numba.njit(cache=True, nogil=True, inline="always")
def log_joint_term(cnt_y, prod_y, lacc_y, m, K, n_values, lw, ptot_b):
    """log of `joint_term` when the product was rescaled (lw = log w)."""
    return lw + lacc_y + np.log(m_estimate(cnt_y, m / (K * n_values), ptot_b, m) * prod_y)


@numba.njit(cache=True, nogil=True, inline="always")
def add_log(mx, acc, v):
    """Streaming log-sum-exp: fold v into (running max mx, scaled sum acc); returns the new
    pair. (Scalars in and out: an inlined helper taking arrays pays reference counts.) The
    first term (mx = −∞) costs no exp: exp(−∞ − v) is 0.0, so acc · 0.0 + 1.0 is the same
    bits."""
    if v > mx:
        if mx == -np.inf:
            return v, acc * 0.0 + 1.0
        return v, acc * np.exp(mx - v) + 1.0
    return mx, acc + np.exp(v - mx)
