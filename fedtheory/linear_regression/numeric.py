"""Closed forms of the FedHDP linear-regression analysis as fast, validated numpy functions.

Paper: Aldaghri, Mahdavifar, Beirami, "Federated Learning with Heterogeneous Differential Privacy",
Appendix A.  Model (A.1): ``N_1`` clients in group 1 (privacy noise ``κ_1²``, less private; ``κ_1² = 0``
for the clients that opt out) and ``N_2`` in group 2 (``κ_2²``); client ``j`` sends
``ψ_j = φ̂_j + l_j`` with ``φ̂_j ~ N(φ_j, ξ² I)``, ``φ_j ~ N(φ, τ² I)``, ``l_j ~ N(0, N_g κ_g² I)``.
``κ_g²`` and ``ξ²`` are the paper's ``γ_g²`` and ``α²`` (the arguments keep the names ``gamma1_2``, ``gamma2_2``,
``alpha2``).  Every function returns a per-coordinate quantity (the covariances are multiples of ``I_d``).

All functions broadcast over numpy arrays; the group sizes must be integers.  Each formula here is
checked against the sympy derivation of :mod:`fedtheory.linear_regression.symbolic` in
``tests/theory/test_fedhdp_numeric.py`` and by Monte Carlo in ``tests/theory/test_fedhdp_montecarlo.py``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fedtheory.validation import (check_choice, check_integer_at_least,
                                   check_nonnegative, check_positive)

__all__ = [
    "optimal_ratio", "server_error", "optimal_server_error", "optimal_lambda", "local_error",
    "optimal_lambda_for_ratio", "bayes_local_error", "bayes_local_coefficients", "OptOut",
    "opt_out_effect", "optimal_weights", "optimal_lambdas",
]


def _out(x):
    x = np.asarray(x, dtype=float)
    return x.item() if x.ndim == 0 else x


def _params(N1, N2, alpha2, tau2, gamma1_2, gamma2_2, group=None):
    N1 = check_integer_at_least("N1", N1, 0).astype(float)
    N2 = check_integer_at_least("N2", N2, 0).astype(float)
    if np.any(N1 + N2 < 1):
        raise ValueError("N1 + N2 must be >= 1 (at least one client)")
    if group is not None:
        check_choice("group", group, (1, 2))
        Ng = N1 if group == 1 else N2
        if np.any(Ng < 1):
            raise ValueError(f"N{group} must be >= 1 for a client of group {group} (got 0)")
    alpha2 = check_positive("alpha2", alpha2)
    tau2 = check_nonnegative("tau2", tau2)
    gamma1_2 = check_nonnegative("gamma1_2", gamma1_2)
    gamma2_2 = check_nonnegative("gamma2_2", gamma2_2)
    sc = alpha2 + tau2
    return N1, N2, alpha2, tau2, gamma1_2, gamma2_2, sc + N1 * gamma1_2, sc + N2 * gamma2_2


def optimal_ratio(N1, N2, alpha2, tau2, gamma1_2, gamma2_2):
    """Bayes-optimal server weight ratio ``r* = σ_{p1}²/σ_{p2}² = (σ_c² + N_1κ_1²)/(σ_c² + N_2κ_2²)``.

    Lemma 2, eqs. 28/55.  A group-2 client's update counts ``r*`` times a group-1 client's; ``r* ≤ 1``
    exactly when ``N_1κ_1² ≤ N_2κ_2²`` (group 2 is noisier).

    Examples
    --------
    Two clients opt out of privacy, 18 stay private (κ² = 0.5 on their average):

    >>> round(optimal_ratio(2, 18, alpha2=1.0, tau2=0.5, gamma1_2=0.0, gamma2_2=0.5), 4)
    0.1429
    """
    *_, s1, s2 = _params(N1, N2, alpha2, tau2, gamma1_2, gamma2_2)
    return _out(s1 / s2)


def server_error(r, N1, N2, alpha2, tau2, gamma1_2, gamma2_2):
    """Per-coordinate variance ``σ_s²(r)`` of the server estimate with weights ``1/(N_1+N_2r)``
    (group 1) and ``r/(N_1+N_2r)`` (group 2):
    ``σ_s²(r) = (N_1σ_{p1}² + N_2 r² σ_{p2}²)/(N_1 + N_2 r)²`` (derived; minimised at r*, eq. 28).

    ``r = 1`` is HDP-FedAvg (uniform average, noise only where clients ask for it).
    """
    r = check_nonnegative("r", r)
    N1, N2, *_, s1, s2 = _params(N1, N2, alpha2, tau2, gamma1_2, gamma2_2)
    W = N1 + N2 * r
    if np.any(W == 0):
        raise ValueError("r must be > 0 when N1 = 0 (all weights would vanish)")
    return _out((N1 * s1 + N2 * r**2 * s2) / W**2)


def optimal_server_error(N1, N2, alpha2, tau2, gamma1_2, gamma2_2):
    """``Σ_s,opt`` per coordinate (Lemma 2, eq. 29): ``1/(N_1/σ_{p1}² + N_2/σ_{p2}²)``, the posterior
    variance of φ given all updates, equal to ``server_error(r*)``."""
    N1, N2, *_, s1, s2 = _params(N1, N2, alpha2, tau2, gamma1_2, gamma2_2)
    return _out(1.0 / (N1 / s1 + N2 / s2))


def optimal_lambda(group, N1, N2, alpha2, tau2, gamma1_2, gamma2_2):
    """Bayes-optimal Ditto parameter ``λ*_j`` for a client of ``group`` (1 or 2) at r = r* (eq. 47/58).

    Computed in the equivalent compact form ``λ*_g = ξ²Ω/(τ²Ω + N_gκ_g²/σ_{pg}²)`` with
    ``Ω = N_1/σ_{p1}² + N_2/σ_{p2}²``.  A non-private client (κ_g = 0) gets ``ξ²/τ² = 1/Υ²``;
    ``np.inf`` (use the global model) when ``τ² = 0`` and ``κ_g² = 0``.
    """
    N1, N2, a2, t2, g1, g2, s1, s2 = _params(N1, N2, alpha2, tau2, gamma1_2, gamma2_2, group)
    T = N1 / s1 + N2 / s2
    own = N1 * g1 / s1 if group == 1 else N2 * g2 / s2
    den = t2 * T + own
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(den > 0, a2 * T / np.where(den > 0, den, 1.0), np.inf)
    return _out(lam)


def _var_B(r, group, N1, N2, a2, t2, g1, g2, s1, s2, own_noise_removed):
    """Variance of (global model − φ_j) seen by a client of ``group`` and its weight w_g."""
    W = N1 + N2 * r
    w1, w2 = 1.0 / W, r / W
    if group == 1:
        wg, own_noise, other_g, other_h = w1, N1 * g1, (N1 - 1) * w1**2 * s1, N2 * w2**2 * s2
    else:
        wg, own_noise, other_g, other_h = w2, N2 * g2, (N2 - 1) * w2**2 * s2, N1 * w1**2 * s1
    kappa = 0.0 if own_noise_removed else 1.0
    vb = (1 - wg)**2 * t2 + wg**2 * (a2 + kappa * own_noise) + other_g + other_h
    return vb, wg


def _client_terms(r, group, N1, N2, alpha2, tau2, gamma1_2, gamma2_2, own_noise_removed):
    """Validate ``r`` and the model, and return ``(V_B, w_g, ξ²)`` for a client of ``group``."""
    r = check_nonnegative("r", r)
    p = _params(N1, N2, alpha2, tau2, gamma1_2, gamma2_2, group)
    if np.any(p[0] + p[1] * r == 0):
        raise ValueError("r must be > 0 when N1 = 0 (all weights would vanish)")
    vb, wg = _var_B(r, group, *p, own_noise_removed)
    return vb, wg, p[2]


def local_error(lam, r, group, N1, N2, alpha2, tau2, gamma1_2, gamma2_2, *, own_noise_removed=True):
    """Expected squared error per coordinate of a client's FedHDP estimate, any λ and any r.

    ``θ̂_j(λ) = (φ̂_j + λθ̂*)/(1+λ)`` (eq. 43) against the client's own target ``φ_j``.  The client's
    update is part of θ̂*, so ``φ̂_j`` and θ̂* are correlated; derived from the model:
    ``E = (ξ² + 2λ w_g ξ² + λ² V_B)/(1+λ)²`` with ``w_g`` the client's server weight and
    ``V_B = (1-w_g)²τ² + w_g²(ξ² + o·N_gκ_g²) + (N_g-1)w_g²σ_{pg}² + N_h w_h² σ_{ph}²`` the variance of
    ``θ̂* − φ_j``.  ``own_noise_removed=True`` (o = 0) is eq. 44's convention: the client subtracts
    its own known noise ``w_g l_j`` from the received global model; ``False`` (o = 1) uses it raw.
    At ``r = r*`` and ``λ = λ*`` (o = 0) this equals the Bayes error of eq. 41.  ``lam = np.inf``
    means "use the global model".
    """
    lam = check_nonnegative("lam", lam)
    vb, wg, a2 = _client_terms(r, group, N1, N2, alpha2, tau2, gamma1_2, gamma2_2, own_noise_removed)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = (a2 + 2 * lam * wg * a2 + lam**2 * vb) / (1 + lam)**2
    return _out(np.where(np.isinf(lam), vb, finite))


def optimal_lambda_for_ratio(r, group, N1, N2, alpha2, tau2, gamma1_2, gamma2_2, *, own_noise_removed=True):
    """The λ minimising :func:`local_error` for a given (possibly suboptimal) r (derived):
    ``λ_opt(r) = ξ²(1-w_g)/(V_B - w_g ξ²)``.  Equals :func:`optimal_lambda` at r = r*
    (with ``own_noise_removed=True``); at ``r = 1`` it is the best Ditto λ under HDP-FedAvg.
    """
    vb, wg, a2 = _client_terms(r, group, N1, N2, alpha2, tau2, gamma1_2, gamma2_2, own_noise_removed)
    den = vb - wg * a2
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(den > 0, a2 * (1 - wg) / np.where(den > 0, den, 1.0), np.inf)
    return _out(lam)


def _counts(group, N1, N2):
    return (N1 - 1, N2) if group == 1 else (N1, N2 - 1)


def bayes_local_error(group, N1, N2, alpha2, tau2, gamma1_2, gamma2_2):
    """Posterior variance of ``φ_j`` for a client of ``group`` given ``φ̂_j`` and the other updates
    (eq. 41): ``ξ²(σ_{p1}²σ_{p2}² + τ²K)/(σ_c²K + σ_{p1}²σ_{p2}²)``, ``K = nσ_{p1}² + mσ_{p2}²`` with
    ``m``/``n`` the other clients of groups 1/2.  The best any estimator can do (Bayes risk)."""
    N1, N2, a2, t2, g1, g2, s1, s2 = _params(N1, N2, alpha2, tau2, gamma1_2, gamma2_2, group)
    m, n = _counts(group, N1, N2)
    K = n * s1 + m * s2
    return _out(a2 * (s1 * s2 + t2 * K) / ((a2 + t2) * K + s1 * s2))


def bayes_local_coefficients(group, N1, N2, alpha2, tau2, gamma1_2, gamma2_2):
    """Coefficients of the local Bayes estimate (eq. 42) for a client of ``group``:
    ``(c_own, c_1, c_2)`` so that ``θ_j* = c_own φ̂_j + c_1 Σ_{other C1} ψ_i + c_2 Σ_{other C2} ψ_i``."""
    N1, N2, a2, t2, g1, g2, s1, s2 = _params(N1, N2, alpha2, tau2, gamma1_2, gamma2_2, group)
    m, n = _counts(group, N1, N2)
    K = n * s1 + m * s2
    D = (a2 + t2) * K + s1 * s2
    return _out((s1 * s2 + t2 * K) / D), _out(s2 * a2 / D), _out(s1 * a2 / D)


class OptOut(NamedTuple):
    """One client's error at its best λ when it stays private and when it opts out (A.5)."""

    private: float | np.ndarray
    opted_out: float | np.ndarray
    lam_private: float | np.ndarray
    lam_opted_out: float | np.ndarray

    @property
    def gain(self):
        """Reduction in the client's error from opting out (``private − opted_out``)."""
        return self.private - self.opted_out


def opt_out_effect(N_np, N_p, alpha2, tau2, gamma2, r=None, *, own_noise_removed=True) -> OptOut:
    """A.5's privacy-utility trade-off for one client (opt-out setting, κ_1² = 0, κ_2² = κ²).

    Staying private: the client is one of ``N_p`` private clients among ``N_np + N_p``.  Opting out:
    the populations become ``(N_np + 1, N_p − 1)``, which also changes the other private clients'
    noise calibration ``N_pκ²``.  ``r=None`` uses each population's r* (FedHDP); a number (e.g.
    ``r=1``, HDP-FedAvg+Ditto) is used in both.  Each error is at the client's best λ for that r.
    """
    N_np = check_integer_at_least("N_np", N_np, 0)
    N_p = check_integer_at_least("N_p", N_p, 1)
    if r is not None:
        r = check_nonnegative("r", r)
    res = []
    for g, n1, n2 in ((2, N_np, N_p), (1, N_np + 1, N_p - 1)):
        rr = optimal_ratio(n1, n2, alpha2, tau2, 0.0, gamma2) if r is None else r
        lam = optimal_lambda_for_ratio(rr, g, n1, n2, alpha2, tau2, 0.0, gamma2,
                                       own_noise_removed=own_noise_removed)
        err = local_error(lam, rr, g, n1, n2, alpha2, tau2, 0.0, gamma2, own_noise_removed=own_noise_removed)
        res.append((err, lam))
    return OptOut(res[0][0], res[1][0], res[0][1], res[1][1])


# ---------------------------------------------------------------------------------------------
# A.6: l privacy levels (last axis = levels)
def _levels(N, alpha2, tau2, gamma2):
    N = check_integer_at_least("N", N, 1).astype(float)
    gamma2 = check_nonnegative("gamma2", gamma2)
    if N.ndim == 0 or gamma2.ndim == 0:
        raise ValueError("N and gamma2 must be sequences with one entry per privacy level")
    alpha2 = check_positive("alpha2", alpha2)
    tau2 = check_nonnegative("tau2", tau2)
    N, gamma2 = np.broadcast_arrays(N, gamma2)
    sp_ = (alpha2 + tau2)[..., None] + N * gamma2
    return N, gamma2, alpha2, tau2, sp_


def optimal_weights(N, alpha2, tau2, gamma2, *, normalize=False):
    """A.6, eq. 64: ``r_i* = σ_{p1}²/σ_{pi}²`` for each privacy level (last axis), relative to the
    first level (so ``r_1* = 1``), with ``σ_{pi}² = ξ² + τ² + N_iκ_i²``.

    ``normalize=True`` returns the per-client weights ``w_i = r_i*/Σ_k N_k r_k*`` instead
    (``Σ_i N_i w_i = 1``, eq. 63).
    """
    N, gamma2, alpha2, tau2, sp_ = _levels(N, alpha2, tau2, gamma2)
    r = sp_[..., :1] / sp_
    if normalize:
        r = r / np.sum(N * r, axis=-1, keepdims=True)
    return _out(r)


def optimal_lambdas(N, alpha2, tau2, gamma2):
    """A.6: Bayes-optimal λ_i* for a client of each privacy level (last axis), in the compact form
    ``λ_i* = ξ²Ω/(τ²Ω + N_iκ_i²/σ_{pi}²)``, ``Ω = Σ_k N_k/σ_{pk}²`` (derived; the paper stops at
    "the closed form is involved").  Reduces to eq. 47 for two levels."""
    N, gamma2, alpha2, tau2, sp_ = _levels(N, alpha2, tau2, gamma2)
    T = np.sum(N / sp_, axis=-1, keepdims=True)
    den = tau2[..., None] * T + N * gamma2 / sp_
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(den > 0, alpha2[..., None] * T / np.where(den > 0, den, 1.0), np.inf)
    return _out(lam)

