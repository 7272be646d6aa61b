"""Mutual-information weights of parent sets (SPEC §2 "MI weighting")."""

from __future__ import annotations

from workbench.jit import numba
import numpy as np

from workbench.learners.ande.estimates import m_estimate
from workbench.learners.ande.tables import read

MI_THRESHOLD = 1e-6


@numba.njit(cache=True, nogil=True, error_model="numpy")
def mi_weights(ids, blen, battrs, tb, m, ptot, class_counts, N, single_px_n, out):
    """out[b] = MI(X_s; Y) with m-estimates for each block b in ids.

    P(x_s) is estimated over D_s = N − miss(s) rows, or over all N rows for a single-attribute
    s when ``single_px_n`` (the paper's A1DE code, ``mi_estimate='reference'``). Terms with
    P(x_s, y) or P(x_s)P(y) below 1e-6 are skipped."""
    K = tb.K
    py = np.empty(K)
    for y in range(K):
        py[y] = m_estimate(class_counts[y], m / K, N, m)
    cnt = np.empty(K, dtype=np.int64)
    for q in range(ids.shape[0]):
        b = ids[q]
        l = blen[b]
        vs = 1
        for t in range(l):
            vs *= tb.cards[battrs[b, t]]
        px_total = N if (single_px_n and l == 1) else ptot[b]
        mi = 0.0
        for v in range(vs):
            read(tb, b, v, cnt)
            px = m_estimate(cnt.sum(), m / vs, px_total, m)
            for y in range(K):
                pxy = m_estimate(cnt[y], m / (K * vs), ptot[b], m)
                pp = px * py[y]
                if pxy < MI_THRESHOLD or pp < MI_THRESHOLD:
                    continue
                mi += pxy * np.log2(pxy / pp)
        out[b] = mi
    return out
