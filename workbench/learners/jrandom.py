"""`java.util.Random`, exactly (SPEC §2 RF-1), and Java's `String.hashCode`.

Weka's RandomForest draws everything from Java's 48-bit linear congruential generator, so
reproducing its forests bit for bit starts here. The generator's state is one int64 in a
1-element array, so numba kernels (the tree growers) draw from it in compiled code; the
`JavaRandom` class wraps the same functions for Python callers and tests.
"""

from __future__ import annotations

from workbench.jit import numba
import numpy as np

MULTIPLIER = 0x5DEECE66D
ADDEND = 0xB
MASK48 = (1 << 48) - 1
DOUBLE_UNIT = 1.0 / (1 << 53)


def seed_state(seed: int) -> int:
    """The 48-bit state after ``setSeed(seed)`` (seed: a signed 64-bit integer)."""
    return (int(seed) ^ MULTIPLIER) & MASK48


@numba.njit(cache=True, nogil=True)
def next_bits(state: np.ndarray, bits: int) -> int:
    """Java's ``next(bits)``: advance the state, return its top `bits` bits as a signed int."""
    s = (state[0] * MULTIPLIER + ADDEND) & MASK48  # int64 wraps: low 48 bits are exact
    state[0] = s
    v = s >> (48 - bits)
    if bits == 32 and v >= 2147483648:
        v -= 4294967296
    return v


@numba.njit(cache=True, nogil=True)
def next_int(state: np.ndarray) -> int:
    """``nextInt()``: a signed 32-bit integer."""
    return next_bits(state, 32)


@numba.njit(cache=True, nogil=True)
def next_int_bound(state: np.ndarray, m: int) -> int:
    """``nextInt(m)``, m > 0: uniform in 0..m−1 with Java's rejection rule."""
    if (m & -m) == m:
        return (m * next_bits(state, 31)) >> 31
    while True:
        b = next_bits(state, 31)
        v = b % m
        if b - v + (m - 1) < 2147483648:  # Java: no int overflow
            return v


@numba.njit(cache=True, nogil=True)
def next_double(state: np.ndarray) -> float:
    """``nextDouble()``: (next(26)·2^27 + next(27))·2^−53."""
    hi = next_bits(state, 26)
    lo = next_bits(state, 27)
    return ((hi << 27) + lo) * DOUBLE_UNIT


class JavaRandom:
    """``new java.util.Random(seed)`` for Python callers (same functions as the kernels)."""

    def __init__(self, seed: int) -> None:
        self.state = np.array([seed_state(seed)], dtype=np.int64)

    def set_seed(self, seed: int) -> None:
        self.state[0] = seed_state(seed)

    def next_int(self, m: int | None = None) -> int:
        if m is None:
            return int(next_int(self.state))
        if m <= 0:
            raise ValueError("bound must be positive")
        return int(next_int_bound(self.state, m))

    def next_double(self) -> float:
        return float(next_double(self.state))


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: h = 31·h + c over UTF-16 code units, signed 32-bit."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h
