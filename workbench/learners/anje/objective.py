"""The discriminative models of SPEC §6.5 on fixed generative estimates, with the §6.6
objectives and their exact gradients.

A `Problem` holds the training rows as their slots (the seen joint value of every join,
see `joins.JoinIndex`) and the log estimates. The
parameterisations (θ laid out as the K class entries, then the K entries of every slot):

* ``weighted`` (W: WANBIA-C, ALR<n>): s(y) = θ_y·L(y) + Σ_α θ_{α,x_α,y}·L(x_α | y);
* ``direct`` (D: LR, LR<n>): s(y) = θ_y + Σ_α θ_{α,x_α,y};
* ``tied`` (T: WANBIA; one weight per attribute): s(y) = L(y) + Σ_j w_j·L(x_j | y).

Objectives, summed over rows: ``cll`` f = Σ_i [−ln K − ln p_{i,y_i}] (0 at θ = 0) and
``mse`` f = Σ_i Σ_y (δ_iy − p_iy)²; the optional L2 term (CLL only) penalises a parameter
once per training row in which it is active. f and ∇f come from one compiled pass over
the rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.jit import numba
import numpy as np

OBJECTIVES = ("cll", "mse")


def softmax_rows(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, log-sum-exp) of score rows, computed from the row maximum (no overflow)."""
    m = s.max(axis=1, keepdims=True)
    e = np.exp(s - m)
    tot = e.sum(axis=1, keepdims=True)
    return e / tot, (m + np.log(tot))[:, 0]


@numba.njit(cache=True, nogil=True, inline="always")
def shifted_exp(s, out):
    """out[k] = exp(s[k] − max s) for one row of scores; returns (max s, Σ out)."""
    m = s[0]
    for k in range(1, s.shape[0]):
        if s[k] > m:
            m = s[k]
    tot = 0.0
    for k in range(s.shape[0]):
        out[k] = np.exp(s[k] - m)
        tot += out[k]
    return m, tot


@numba.njit(cache=True, nogil=True)
def objective_pass(slots, y, c, E, mse, per_class, per_slot):
    """One pass over the rows: Σ_i of the row objective (CLL without the −ln K offset, or
    the squared error), and r_iy = ∂f_i/∂s_iy summed per class and per slot."""
    N, S = slots.shape
    K = c.shape[0]
    s = np.empty(K)
    r = np.empty(K)
    per_class[:] = 0.0
    per_slot[:, :] = 0.0
    f = 0.0
    for i in range(N):
        for k in range(K):
            s[k] = c[k]
        for a in range(S):
            j = slots[i, a]
            for k in range(K):
                s[k] += E[j, k]
        m, tot = shifted_exp(s, r)
        t = y[i]
        if mse:
            sd = 0.0
            for k in range(K):
                p = r[k] / tot
                d = p - (1.0 if k == t else 0.0)
                f += d * d
                sd += p * d
                r[k] = p
            for k in range(K):
                d = r[k] - (1.0 if k == t else 0.0)
                r[k] = 2.0 * r[k] * (d - sd)
        else:
            f += m + np.log(tot) - s[t]
            for k in range(K):
                r[k] = r[k] / tot - (1.0 if k == t else 0.0)
        for k in range(K):
            per_class[k] += r[k]
        for a in range(S):
            j = slots[i, a]
            for k in range(K):
                per_slot[j, k] += r[k]
    return f


@numba.njit(cache=True, nogil=True)
def _score_rows(slots, c, E, U, out):
    """s(y) = c(y) + Σ_α (E[slot] if the value was seen, else U[α]) per row."""
    N, S = slots.shape
    K = c.shape[0]
    for i in range(N):
        for k in range(K):
            out[i, k] = c[k]
        for a in range(S):
            j = slots[i, a]
            if j >= 0:
                for k in range(K):
                    out[i, k] += E[j, k]
            else:
                for k in range(K):
                    out[i, k] += U[a, k]


def score_rows(slots: np.ndarray, c: np.ndarray, E: np.ndarray, U: np.ndarray) -> np.ndarray:
    """(rows, K) scores from each row's slots (−1 = unseen: the join's `U` row instead)."""
    out = np.empty((slots.shape[0], c.shape[0]))
    _score_rows(np.ascontiguousarray(slots, dtype=np.int64), np.ascontiguousarray(c),
                np.ascontiguousarray(E), np.ascontiguousarray(U), out)
    return out


@dataclass
class Problem:
    """Training rows, estimates and the model form: f(θ) and ∇f(θ) (SPEC §6.6)."""

    slots: np.ndarray  # (N, S) int64: the slot of each row's value of every join
    y: np.ndarray  # (N,) class codes
    log_prior: np.ndarray  # (K,) L(y)
    log_cond: np.ndarray  # (J, K) L(x_α = v | y) of the seen slots
    slot_attribute: np.ndarray  # (J,) attribute of each slot (tied form; n = 1)
    n_attributes: int
    parameterisation: str = "weighted"
    objective: str = "cll"
    l2: float = 0.0
    activity: np.ndarray = field(init=False, repr=False)  # rows activating each slot

    def __post_init__(self) -> None:
        self.slots = np.ascontiguousarray(self.slots, dtype=np.int64)
        self.y = np.ascontiguousarray(self.y, dtype=np.int64)
        self.log_cond = np.ascontiguousarray(self.log_cond, dtype=np.float64)
        self.activity = np.bincount(self.slots.ravel(), minlength=self.J).astype(np.float64)

    @property
    def N(self) -> int:
        return int(self.slots.shape[0])

    @property
    def K(self) -> int:
        return int(self.log_prior.shape[0])

    @property
    def J(self) -> int:
        return int(self.log_cond.shape[0])

    @property
    def size(self) -> int:
        """Length of θ."""
        return self.n_attributes if self.parameterisation == "tied" else self.K * (1 + self.J)

    # ----- scores ---------------------------------------------------------------------------
    def split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """θ as (class entries (K,), slot entries (J, K)) for the W and D forms."""
        return theta[: self.K], theta[self.K:].reshape(self.J, self.K)

    def effective(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What θ adds to s(y): (per class (K,), per slot (J, K))."""
        if self.parameterisation == "tied":
            return self.log_prior, self.log_cond * theta[self.slot_attribute][:, None]
        tc, ts = self.split(theta)
        if self.parameterisation == "weighted":
            return tc * self.log_prior, ts * self.log_cond
        return tc, ts

    # ----- objective and gradient -------------------------------------------------------------
    def value_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """f(θ) and its exact gradient ∇f(θ)."""
        c, e = self.effective(theta)
        per_class = np.empty(self.K)
        per_slot = np.empty((self.J, self.K))
        f = objective_pass(self.slots, self.y, np.ascontiguousarray(c),
                            np.ascontiguousarray(e), self.objective == "mse", per_class,
                            per_slot)
        if self.objective == "cll":
            f -= self.N * np.log(self.K)
        if self.parameterisation == "tied":
            g = np.bincount(self.slot_attribute, weights=(per_slot * self.log_cond).sum(axis=1),
                            minlength=self.n_attributes)
            return f, g
        if self.parameterisation == "weighted":
            per_class = per_class * self.log_prior
            per_slot = per_slot * self.log_cond
        g = np.concatenate((per_class, per_slot.ravel()))
        if self.l2 > 0.0:
            tc, ts = self.split(theta)
            f += 0.5 * self.l2 * float(self.N * np.sum(tc * tc)
                                       + np.sum(self.activity[:, None] * ts * ts))
            g[: self.K] += self.l2 * self.N * tc
            g[self.K:] += self.l2 * (self.activity[:, None] * ts).ravel()
        return f, g

    def value(self, theta: np.ndarray) -> float:
        """f(θ) alone."""
        return self.value_and_gradient(theta)[0]
