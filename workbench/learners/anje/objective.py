"""The discriminative models of SPEC §6.5 on fixed generative estimates, with the §6.6
objectives and their exact gradients.

A `Problem` holds the training rows as a sparse 0/1 matrix X (rows × slots; row i has a 1
at the slot of its value of every join, see `joins.JoinIndex`) and the log estimates. The
parameterisations (θ laid out as the K class entries, then the K entries of every slot):

* ``weighted`` (W: WANBIA-C, ALR<n>): s(y) = θ_y·L(y) + Σ_α θ_{α,x_α,y}·L(x_α | y);
* ``direct`` (D: LR, LR<n>): s(y) = θ_y + Σ_α θ_{α,x_α,y};
* ``tied`` (T: WANBIA; one weight per attribute): s(y) = L(y) + Σ_j w_j·L(x_j | y).

Objectives, summed over rows: ``cll`` f = Σ_i [−ln K − ln p_{i,y_i}] (0 at θ = 0) and
``mse`` f = Σ_i Σ_y (δ_iy − p_iy)²; the optional L2 term (CLL only) penalises a parameter
once per training row in which it is active. Everything is vectorised (sparse products).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

PARAMETERISATIONS = ("weighted", "direct", "tied")
OBJECTIVES = ("cll", "mse")


def indicator(slots: np.ndarray, n_slots: int) -> sp.csr_matrix:
    """The (rows, slots) 0/1 matrix of a (rows, S) slot array (entries −1 are left out)."""
    rows, S = slots.shape
    flat = slots.ravel()
    keep = flat >= 0
    indptr = np.concatenate(([0], np.cumsum((slots >= 0).sum(axis=1)))).astype(np.int64)
    data = np.ones(int(keep.sum()), dtype=np.float64)
    return sp.csr_matrix((data, flat[keep], indptr), shape=(rows, n_slots))


def softmax_rows(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, log-sum-exp) of score rows, computed from the row maximum (no overflow)."""
    m = s.max(axis=1, keepdims=True)
    e = np.exp(s - m)
    tot = e.sum(axis=1, keepdims=True)
    return e / tot, (m + np.log(tot))[:, 0]


@dataclass
class Problem:
    """Training rows, estimates and the model form: f(θ) and ∇f(θ) (SPEC §6.6)."""

    X: sp.csr_matrix  # (N, J) slot indicators
    y: np.ndarray  # (N,) class codes
    log_prior: np.ndarray  # (K,) L(y)
    log_cond: np.ndarray  # (J, K) L(x_α = v | y) of the seen slots
    slot_attribute: np.ndarray  # (J,) attribute of each slot (tied form; n = 1)
    n_attributes: int
    parameterisation: str = "weighted"
    objective: str = "cll"
    l2: float = 0.0
    XT: sp.csr_matrix = field(init=False, repr=False)
    activity: np.ndarray = field(init=False, repr=False)  # rows activating each slot
    onehot: np.ndarray = field(init=False, repr=False)  # (N, K) δ_iy

    def __post_init__(self) -> None:
        self.XT = self.X.T.tocsr()
        self.activity = np.asarray(self.X.sum(axis=0)).ravel()
        self.onehot = np.zeros((self.N, self.K))
        self.onehot[np.arange(self.N), self.y] = 1.0

    @property
    def N(self) -> int:
        return int(self.X.shape[0])

    @property
    def K(self) -> int:
        return int(self.log_prior.shape[0])

    @property
    def J(self) -> int:
        return int(self.X.shape[1])

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

    def scores(self, theta: np.ndarray) -> np.ndarray:
        """(N, K) s(y) of every training row."""
        c, e = self.effective(theta)
        return np.asarray(self.X @ e) + c[None, :]

    # ----- objective and gradient -------------------------------------------------------------
    def value_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """f(θ) and its exact gradient ∇f(θ)."""
        s = self.scores(theta)
        p, lse = softmax_rows(s)
        if self.objective == "cll":
            f = float(np.sum(lse - s[np.arange(self.N), self.y]) - self.N * np.log(self.K))
            r = p - self.onehot
        else:
            d = p - self.onehot
            f = float(np.sum(d * d))
            r = 2.0 * p * (d - np.sum(p * d, axis=1, keepdims=True))
        per_class = r.sum(axis=0)
        per_slot = np.asarray(self.XT @ r)
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
