"""Monte Carlo simulation of FedHDP's federated linear regression (Appendix A.1, Algorithm 1).

:func:`simulate` draws the whole generative model in ``d`` dimensions, with *real* least squares at
every client: ``F_j`` has orthogonal columns scaled so that ``F_jᵀF_j = n_s I_d``, responses
``x_j = F_jφ_j + v_j`` with ``v_j ~ N(0, β² I)``, and ``φ̂_j`` is :func:`numpy.linalg.lstsq`'s
solution (so ``φ̂_j ~ N(φ_j, ξ² I)``, ``ξ² = β²/n_s``, is not assumed but produced).  The returned
:class:`FedHDPSample` forms server aggregates for any ``r``, runs Algorithm 1's client update
(:func:`client_update`) and evaluates the local Bayes estimate of eq. 42, so tests can compare
every closed form with simulated errors (:func:`mse` gives mean and standard error).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedtheory.validation import (check_choice, check_integer_at_least, check_nonnegative,
                                   check_positive)

from .numeric import bayes_local_coefficients

__all__ = ["FedHDPSample", "simulate", "client_update", "mse"]


def client_update(theta0, phi_hat, lam, *, eta=1.0, eta_p=None, steps=1, regularize_toward="received"):
    """Algorithm 1's ClientUpdate for one round, vectorized; returns ``(θ, θ_j)``.

    Both copies start at the received global model ``θ^0``.  Each of ``steps`` iterations does the
    global step ``θ ← θ − η(θ − φ̂_j)`` and the Ditto step
    ``θ_j ← θ_j − η_p((θ_j − φ̂_j) + λ(θ_j − target))`` where ``target`` is ``θ^0`` for
    ``regularize_toward="received"`` (eq. 54, Algorithm 2: correct) or the already-updated ``θ`` for
    ``"updated"`` (Algorithms 1/3 as printed).  ``η_p`` defaults to ``1/(1+λ)`` (Lemma 4), with which
    one step of the correct version lands on eq. 43.
    """
    check_choice("regularize_toward", regularize_toward, ("received", "updated"))
    check_integer_at_least("steps", steps, 1)
    lam = np.asarray(check_nonnegative("lam", lam))
    eta_p = 1.0 / (1.0 + lam) if eta_p is None else check_positive("eta_p", eta_p)
    theta0 = np.asarray(theta0, dtype=float)
    theta, theta_j = theta0.copy(), theta0.copy()
    for _ in range(int(steps)):
        theta = theta - eta * (theta - phi_hat)
        target = theta0 if regularize_toward == "received" else theta
        theta_j = theta_j - eta_p * ((theta_j - phi_hat) + lam * (theta_j - target))
    return theta, theta_j


def mse(estimate: np.ndarray, target: np.ndarray, clients=None) -> tuple[float, float]:
    """Mean squared error per coordinate and its standard error over independent repetitions.

    Arrays are ``(reps, N, d)`` (or ``(reps, d)``); ``clients`` selects client indices.  Errors are
    averaged within a repetition first (clients of one run are dependent), then over repetitions.
    """
    err = (np.asarray(estimate) - np.asarray(target))**2
    if clients is not None:
        err = err[:, clients]
    per_rep = err.reshape(err.shape[0], -1).mean(axis=1)
    return float(per_rep.mean()), float(per_rep.std(ddof=1) / np.sqrt(per_rep.size))


@dataclass(frozen=True)
class FedHDPSample:
    """One simulated population, ``reps`` independent repetitions (arrays ``(reps, N, d)``)."""

    N1: int
    N2: int
    alpha2: float
    tau2: float
    gamma1_2: float
    gamma2_2: float
    phi: np.ndarray        # (reps, d)     server target
    phi_j: np.ndarray      # (reps, N, d)  client targets
    phi_hat: np.ndarray    # (reps, N, d)  least-squares estimates
    noise: np.ndarray      # (reps, N, d)  privacy noise l_j
    groups: np.ndarray     # (N,) 1 or 2 (group-1 clients first)

    @property
    def psi(self) -> np.ndarray:
        """The updates sent to the server, ``ψ_j = φ̂_j + l_j`` (eq. 11)."""
        return self.phi_hat + self.noise

    def _weights(self, r: float) -> np.ndarray:
        w = np.where(self.groups == 1, 1.0, r)
        return w / w.sum()

    def global_model(self, r: float) -> np.ndarray:
        """Server aggregate ``Σ_i w_i ψ_i`` with weights ``1/(N_1+N_2r)``, ``r/(N_1+N_2r)``: (reps, d)."""
        return np.einsum("i,kid->kd", self._weights(r), self.psi)

    def received_models(self, r: float, own_noise_removed: bool = True) -> np.ndarray:
        """The global model each client regularizes to, (reps, N, d); with ``own_noise_removed`` the
        client subtracts ``w_j l_j`` (eq. 44's convention)."""
        g = self.global_model(r)[:, None, :]
        if own_noise_removed:
            g = g - self._weights(r)[None, :, None] * self.noise
        return np.broadcast_to(g, self.phi_hat.shape)

    def lambdas(self, lam_group1, lam_group2) -> np.ndarray:
        """Per-client λ from one value per group."""
        return np.where(self.groups == 1, lam_group1, lam_group2)[None, :, None]

    def personalized(self, lam_group1, lam_group2, r, *, own_noise_removed=True,
                     regularize_toward="received") -> np.ndarray:
        """FedHDP's personalized models after Algorithm 1's two rounds (Lemma 4, η = 1,
        η_p = 1/(1+λ)): round 1 forms the global model, round 2 runs :func:`client_update` from it."""
        theta0 = self.received_models(r, own_noise_removed)
        lam = np.broadcast_to(self.lambdas(lam_group1, lam_group2), self.phi_hat.shape)
        return client_update(theta0, self.phi_hat, lam, regularize_toward=regularize_toward)[1]

    def bayes_local(self) -> np.ndarray:
        """The local Bayes estimate θ_j* of eq. 42 for every client, from its coefficients."""
        psi = self.psi
        s1 = psi[:, self.groups == 1].sum(axis=1, keepdims=True)
        s2 = psi[:, self.groups == 2].sum(axis=1, keepdims=True)
        out = np.empty_like(self.phi_hat)
        for g in (1, 2):
            idx = self.groups == g
            if not idx.any():
                continue
            c_own, c1, c2 = bayes_local_coefficients(g, self.N1, self.N2, self.alpha2, self.tau2,
                                                     self.gamma1_2, self.gamma2_2)
            own = psi[:, idx]                          # remove the client's own update from its group sum
            o1 = s1 - (own if g == 1 else 0.0)
            o2 = s2 - (own if g == 2 else 0.0)
            out[:, idx] = c_own * self.phi_hat[:, idx] + c1 * o1 + c2 * o2
        return out


def simulate(N1: int, N2: int, *, beta2: float, n_s: int, tau2: float, gamma1_2: float,
             gamma2_2: float, d: int = 3, reps: int = 20_000, seed: int = 0) -> FedHDPSample:
    """Draw ``reps`` independent copies of the model of Appendix A.1 (see the module docstring).

    Each client's design ``F_j`` (``n_s × d``, ``F_jᵀF_j = n_s I``) is drawn once and kept fixed over
    repetitions; the server target ``φ`` is drawn N(0, 1) per repetition (the estimators' errors do
    not depend on it, matching the flat prior).  Group-1 clients come first.
    """
    N1 = int(check_integer_at_least("N1", N1, 0))
    N2 = int(check_integer_at_least("N2", N2, 0))
    if N1 + N2 < 2:
        raise ValueError("N1 + N2 must be >= 2 to simulate a federation")
    d = int(check_integer_at_least("d", d, 1))
    n_s = int(check_integer_at_least("n_s", n_s, d))
    reps = int(check_integer_at_least("reps", reps, 2))
    beta2 = float(check_positive("beta2", beta2))
    tau2 = float(check_nonnegative("tau2", tau2))
    gamma1_2 = float(check_nonnegative("gamma1_2", gamma1_2))
    gamma2_2 = float(check_nonnegative("gamma2_2", gamma2_2))
    rng = np.random.default_rng(seed)
    N = N1 + N2
    groups = np.array([1] * N1 + [2] * N2)
    phi = rng.standard_normal((reps, d))
    phi_j = phi[:, None, :] + np.sqrt(tau2) * rng.standard_normal((reps, N, d))
    phi_hat = np.empty_like(phi_j)
    for j in range(N):
        q, _ = np.linalg.qr(rng.standard_normal((n_s, d)))
        F = np.sqrt(n_s) * q                                     # F^T F = n_s I_d
        x = F @ phi_j[:, j, :].T + np.sqrt(beta2) * rng.standard_normal((n_s, reps))
        phi_hat[:, j, :] = np.linalg.lstsq(F, x, rcond=None)[0].T
    scale = np.where(groups == 1, np.sqrt(N1 * gamma1_2), np.sqrt(N2 * gamma2_2))
    noise = scale[None, :, None] * rng.standard_normal((reps, N, d))
    return FedHDPSample(N1, N2, beta2 / n_s, tau2, gamma1_2, gamma2_2, phi, phi_j, phi_hat, noise, groups)
