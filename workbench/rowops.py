"""Row operations on tables of a few columns — class distributions, fold keys — compiled,
with numpy's results.

numpy reduces a row of a few classes slowly (``max(axis=1)`` and ``sum(axis=1)`` of 25,000
rows × 2 classes took 655 and 271 µs here, ten times a pass over the data), and every
classification normalises its scores and every evaluation sums its losses. These kernels
give the same bits: maxima are exact, and sums follow numpy's pairwise summation
(`pairwise_sum`) — eight accumulators from eight terms on, halves above 128 — so a
distribution or a loss is what numpy computed before, whatever the number of classes.
Exponentials and logarithms stay numpy's (its SIMD exp differs from the C library's in the
last bit for about 5 % of arguments). `row_ranks` gives numpy's stable argsort of each
short row as ranks. numba is imported only when a kernel is first used.
"""

from __future__ import annotations

import numpy as np

from workbench.jit import numba

_BLOCK = 128  # numpy's PW_BLOCKSIZE: longer runs are split in halves


@numba.njit(cache=True, nogil=True)
def pairwise_sum(a: np.ndarray, lo: int, n: int) -> float:
    """a[lo] + … + a[lo + n − 1] summed as numpy sums a contiguous run: one by one from 0
    below 8 terms, eight interleaved accumulators up to 128, else the two halves (the first
    a multiple of 8 long) summed so and added."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    if n <= _BLOCK:
        r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
        r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
        i = 8
        end = n - n % 8
        while i < end:
            j = lo + i
            r0 += a[j]
            r1 += a[j + 1]
            r2 += a[j + 2]
            r3 += a[j + 3]
            r4 += a[j + 4]
            r5 += a[j + 5]
            r6 += a[j + 6]
            r7 += a[j + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[lo + i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return pairwise_sum(a, lo, half) + pairwise_sum(a, lo + half, n - half)


@numba.njit(cache=True, nogil=True)
def _class_counts(y: np.ndarray, K: int, out: np.ndarray) -> None:
    """out[k] = rows with y = k (k < K): up to 8 classes a vectorised count per class,
    more into four histograms taken by turns (a row's increment does not wait for the
    last one of its class)."""
    n = y.shape[0]
    if K <= 8:
        for k in range(K):
            c = 0
            for i in range(n):
                c += y[i] == k
            out[k] = c
        return
    h = np.zeros((4, K), dtype=np.int64)
    for i in range(n - n % 4):
        v = y[i]
        if 0 <= v < K:
            h[i & 3, v] += 1
    for i in range(n - n % 4, n):
        v = y[i]
        if 0 <= v < K:
            h[0, v] += 1
    for k in range(K):
        out[k] = h[0, k] + h[1, k] + h[2, k] + h[3, k]


def class_counts(y: np.ndarray, K: int) -> np.ndarray:
    """Rows of each class 0 … K − 1 (int64; other codes not counted) — np.bincount(y,
    minlength=K)[:K] for valid codes, in a tenth of its time on two classes (adult's
    24,421 rows: 45 -> 4 µs; 22 -> 9 µs with 26 classes)."""
    out = np.zeros(int(K), dtype=np.int64)
    y = np.asarray(y)
    if y.size:
        _class_counts(y, int(K), out)
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _run_sum(a: np.ndarray, lo: int, n: int) -> float:
    """`pairwise_sum` of a row, its one-by-one loop (below 8 terms) inlined into the
    caller's row loop: a call per row (it recurses, so it is never inlined) cost 5 ns, as
    much as the row's divisions (magic's 9,510 × 2 distributions: 99 µs)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    return pairwise_sum(a, lo, n)


SHORT_RUN = 16
"""Runs up to this length are sorted inside the compiled loop (insertion sort); longer
ones by numpy's sort, one call each: vectorised, it sorts 115 terms 6x and 590 terms 13x
faster than a compiled quicksort (branch mispredictions), so above a few terms its call
is the cheaper part."""


@numba.njit(cache=True, nogil=True, inline="always")
def _insertion_sort(a: np.ndarray, lo: int, hi: int) -> None:
    """a[lo:hi] sorted ascending in place."""
    for i in range(lo + 1, hi):
        v = a[i]
        j = i - 1
        while j >= lo and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@numba.njit(cache=True, nogil=True)
def _segment_sums(a: np.ndarray, bounds: np.ndarray, short: int) -> np.ndarray:
    """out[s] = `pairwise_sum` of run s, sorting it first (in place) when it is no longer
    than `short` (the longer runs arrive sorted)."""
    out = np.empty(bounds.shape[0] - 1)
    for s in range(out.shape[0]):
        if bounds[s + 1] - bounds[s] <= short:
            _insertion_sort(a, bounds[s], bounds[s + 1])
        out[s] = pairwise_sum(a, bounds[s], bounds[s + 1] - bounds[s])
    return out


def sorted_segment_sums(a: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """out[s] = np.sort(a[bounds[s] : bounds[s + 1]]).sum(): each run sorted (in place, in
    `a`; long runs by numpy, short ones compiled — the same order), then summed as numpy
    sums a contiguous array (`pairwise_sum`) — a sum that depends only on the multiset of
    the run's terms."""
    bounds = np.asarray(bounds, dtype=np.int64)
    for s in np.flatnonzero(np.diff(bounds) > SHORT_RUN):
        a[bounds[s]:bounds[s + 1]].sort()
    return _segment_sums(a, bounds, SHORT_RUN)


@numba.njit(cache=True, nogil=True)
def _shift_by_row_max(L: np.ndarray, out: np.ndarray) -> None:
    """out[r] = L[r] − max(L[r]) (a NaN anywhere in the row is its maximum, as np.max)."""
    n, K = L.shape
    for r in range(n):
        m = L[r, 0]
        for k in range(1, K):
            v = L[r, k]
            if v > m or v != v:
                m = v
            if m != m:
                break
        for k in range(K):
            out[r, k] = L[r, k] - m


@numba.njit(cache=True, nogil=True)
def _divide_by_row_sums(P: np.ndarray) -> None:
    """P[r] /= its pairwise sum, row by row (P C-contiguous)."""
    n, K = P.shape
    flat = P.reshape(n * K)
    for r in range(n):
        s = _run_sum(flat, r * K, K)
        for k in range(K):
            P[r, k] /= s


def normalise_rows(logscore: np.ndarray) -> np.ndarray:
    """exp(s − max) / Σ per row — bit for bit numpy's
    ``p = exp(s − s.max(1)); p /= p.sum(1)``, in three passes instead of two slow
    reductions."""
    L = np.ascontiguousarray(logscore, dtype=np.float64)
    if L.ndim != 2 or L.shape[1] == 0:
        raise ValueError(f"log-scores must be (n, K) with K >= 1, got shape {L.shape}")
    out = np.empty_like(L)
    _shift_by_row_max(L, out)
    np.exp(out, out=out)
    _divide_by_row_sums(out)
    return out


@numba.njit(cache=True, nogil=True)
def _loss_terms(p: np.ndarray, t: np.ndarray, eps: float, sq: np.ndarray, tc: np.ndarray,
                tp: np.ndarray) -> int:
    """Per row r and class k: sq[r·K + k] = (p − [k = t_r])², tc[r] = (1 − p[r, t_r])²,
    tp[r] = p[r, t_r] clipped to [eps, 1 − eps]; returns the rows whose first maximum (a
    NaN first, as np.argmax) is not t_r."""
    n, K = p.shape
    errors = 0
    hi = 1.0 - eps
    for r in range(n):
        y = t[r]
        best = 0
        pb = p[r, 0]
        for k in range(K):
            v = p[r, k]
            if k > 0 and pb == pb and (v > pb or v != v):
                best = k
                pb = v
            d = v - 1.0 if k == y else v
            sq[r * K + k] = d * d
        errors += best != y
        q = p[r, y]
        tc[r] = (1.0 - q) * (1.0 - q)
        tp[r] = q if q != q else min(max(q, eps), hi)
    return errors


def loss_terms(p: np.ndarray, t: np.ndarray, eps: float) -> tuple[int, float, float, float]:
    """(errors, Σ squared error, Σ true-class squared error, −Σ log clipped true-class
    probability) of distributions `p` (n, K) against classes `t`, each sum numpy's
    pairwise sum of the same terms."""
    p = np.ascontiguousarray(p, dtype=np.float64)
    t = np.ascontiguousarray(t, dtype=np.int64)
    n, K = p.shape
    sq = np.empty(n * K)
    tc = np.empty(n)
    tp = np.empty(n)
    errors = _loss_terms(p, t, eps, sq, tc, tp)
    np.log(tp, out=tp)
    return (int(errors), float(pairwise_sum(sq, 0, n * K)), float(pairwise_sum(tc, 0, n)),
            -float(pairwise_sum(tp, 0, n)))


@numba.njit(cache=True, nogil=True)
def row_sums(P: np.ndarray) -> np.ndarray:
    """Each row's pairwise sum (P C-contiguous), as ``P.sum(axis=1)``."""
    n, K = P.shape
    flat = P.reshape(n * K)
    out = np.empty(n)
    for r in range(n):
        out[r] = _run_sum(flat, r * K, K)
    return out


@numba.njit(cache=True, nogil=True)
def row_ranks(keys: np.ndarray) -> np.ndarray:
    """Each key's position in its row's stable ascending order ((m, k) → (m, k) int64;
    what ``put_along_axis(out, argsort(keys, axis=1, kind="stable"), arange(k))`` gives),
    by counting the smaller keys: k² compares, for short rows (numpy's argsort does the
    longer ones; a sort here would cost seconds of compiling at first use)."""
    m, k = keys.shape
    out = np.empty((m, k), dtype=np.int64)
    for r in range(m):
        for i in range(k):
            ki = keys[r, i]
            c = 0
            for j in range(k):
                kj = keys[r, j]
                c += kj < ki or (kj == ki and j < i)
            out[r, i] = c
    return out


def warm_up() -> None:
    """Load (or compile) every kernel here for the types the evaluation passes — float64
    tables, int64 classes, uint64 fold keys — so that a timed fold never pays it."""
    p = np.full((1, 2), 0.5)
    normalise_rows(p)
    row_sums(p)
    loss_terms(p, np.zeros(1, dtype=np.int64), 1e-15)
    row_ranks(np.zeros((1, 2), dtype=np.uint64))
