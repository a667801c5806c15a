"""MR-MTL mean estimation with heterogeneous silos (MR-MTL paper, App. E.5).

Silo k has its own sample count n_k, data variance σ_k² and DP noise σ_DP,k² (e.g. from its own
(ε_k, δ_k)), hence its own local variance ``σ̃_k² = σ_k²/n_k + σ_DP,k²/n_k²`` (eq. 39 with the paper's
``n`` corrected to ``n_k``; compute it with :func:`fedtheory.mean_estimation.local_variance`).  The
centres still satisfy ``w_k ~ N(θ, τ²)`` and MR-MTL still shrinks towards the *unweighted* mean of the
other silos, ``ŵ_k(λ) = a ŵ_k + (1 - a) ŵ_{\\k}`` with ``a = (K + λ)/((1 + λ)K)``.

The external average is ``ŵ_{\\k} = w_k + N(0, V_k)``,
``V_k = Kτ²/(K - 1) + Σ_{j≠k} σ̃_j²/(K - 1)²`` (eqs. 40-43).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from fedtheory.validation import check_nonnegative
from fedtheory.mean_estimation.closed_form import _out, _shrink

__all__ = [
    "external_variance",
    "optimal_lambdas_heterogeneous",
    "mse_heterogeneous",
    "posterior_variance_heterogeneous",
    "full_bayes_variance",
    "full_bayes_variance_bruteforce",
]

ArrayLike = Any


def _silos(sigma_loc2: ArrayLike) -> np.ndarray:
    s = check_nonnegative("sigma_loc2", sigma_loc2)
    if s.ndim == 0 or s.shape[-1] < 2:
        raise ValueError("sigma_loc2 must hold one local variance per silo on its last axis, "
                         f"with K >= 2 silos (got shape {s.shape})")
    return s


def external_variance(sigma_loc2: ArrayLike, tau2: ArrayLike) -> np.ndarray:
    """``V_k = Kτ²/(K-1) + Σ_{j≠k} σ̃_j²/(K-1)²``: variance of ``ŵ_{\\k} - w_k`` for every silo (eqs. 40-43).

    ``sigma_loc2`` has shape ``(..., K)`` (one local variance per silo on the last axis); ``tau2``
    broadcasts against its leading axes.  Returns an array of shape ``(..., K)``.
    """
    s = _silos(sigma_loc2)
    tau2 = check_nonnegative("tau2", tau2)[..., None]
    K = s.shape[-1]
    S = s.sum(axis=-1, keepdims=True) - s
    return K * tau2 / (K - 1) + S / (K - 1) ** 2


def optimal_lambdas_heterogeneous(sigma_loc2: ArrayLike, tau2: ArrayLike) -> np.ndarray:
    """Silo-specific optimal λ (Theorem E.5): ``λ*_k = K(K-1)σ̃_k² / (K(K-1)τ² + Σ_{j≠k} σ̃_j² - (K-1)σ̃_k²)``.

    ``sigma_loc2`` holds one local variance σ̃_k² per silo on its last axis (shape ``(..., K)``, K >= 2);
    ``tau2`` is τ² (broadcasts against the leading axes).  Returns λ*_k with the shape of
    ``sigma_loc2``.  It reduces to Theorem 6.3's ``σ_loc²/τ²`` when all silos are alike.

    **Negative values are returned, not hidden.**  λ*_k < 0 happens when
    ``σ̃_k² > Kτ² + Σ_{j≠k} σ̃_j²/(K-1)``: the posterior-mean weight ``σ̄_k²/σ̃_k²`` on the silo's own estimate is
    then below ``1/K``, which no λ >= 0 reaches (a >= 1/K).  Because the silo's error
    ``E_k(λ)`` (:func:`mse_heterogeneous`) is then decreasing on all of [0, ∞), the best admissible
    choice is FedAvg (λ = ∞): callers should read a negative λ*_k as "fall back to FedAvg", e.g.
    ``np.where(lam < 0, np.inf, lam)``.  A zero denominator (weight exactly 1/K) gives ``np.inf``.
    """
    s = _silos(sigma_loc2)
    tau2 = check_nonnegative("tau2", tau2)[..., None]
    K = s.shape[-1]
    S = s.sum(axis=-1, keepdims=True) - s
    num = K * (K - 1) * s
    den = K * (K - 1) * tau2 + S - (K - 1) * s
    num, den = np.broadcast_arrays(num, den)
    out = np.where(num == 0, 0.0, np.inf)
    np.divide(num, den, out=out, where=den != 0)
    return out


def posterior_variance_heterogeneous(sigma_loc2: ArrayLike, tau2: ArrayLike) -> np.ndarray:
    """``σ̄_k² = (1/σ̃_k² + 1/V_k)⁻¹`` (Lemma E.4): the error E_k(λ*_k) where ``λ*_k >= 0``.

    It is the smallest error any weighting of ``ŵ_k`` and ``ŵ_{\\k}`` can reach; where λ*_k < 0 MR-MTL
    cannot reach it and its best error is FedAvg's ``E_k(∞)``.
    """
    s = _silos(sigma_loc2)
    V = external_variance(s, tau2)
    num = s * V
    den = s + V
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den != 0)
    return out


def mse_heterogeneous(lam: ArrayLike, sigma_loc2: ArrayLike, tau2: ArrayLike, *,
                      per_silo: bool = False) -> np.ndarray:
    """Per-silo error curves ``E_k(λ) = a² σ̃_k² + (1 - a)² V_k`` (App. E.5; not printed in the paper).

    ``sigma_loc2`` holds σ̃_k² on its last axis (shape ``(..., K)``), ``tau2`` is τ².  ``lam >= 0``
    (``np.inf`` = FedAvg).

    * ``per_silo=False`` (default): ``lam`` is a grid of common λ values; the result has shape
      ``lam.shape + sigma_loc2.shape`` (silo k's error at every λ of the grid).
    * ``per_silo=True``: ``lam`` broadcasts against ``sigma_loc2`` and silo k is evaluated at its own
      ``lam[..., k]`` (e.g. at :func:`optimal_lambdas_heterogeneous` after mapping negatives to ∞).

    The error is averaged over the centres, the data and the DP noise, as Lemma 6.7's.
    """
    lam = check_nonnegative("lam", lam)
    s = _silos(sigma_loc2)
    V = external_variance(s, tau2)
    K = s.shape[-1]
    w = _shrink(lam)
    if not per_silo:
        w = w.reshape(w.shape + (1,) * s.ndim)
    a = 1.0 / K + (1.0 - 1.0 / K) * w
    return np.asarray(a**2 * s + (1.0 - a) ** 2 * V)


def full_bayes_variance(sigma_loc2: ArrayLike, tau2: ArrayLike) -> np.ndarray:
    """Posterior variance of ``w_k`` given *all* K releases (flat prior on θ): ``(1/σ̃_k² + 1/(τ² + 1/P_k))⁻¹``.

    ``P_k = Σ_{j≠k} 1/(τ² + σ̃_j²)``: the others are combined by precision weighting (their GLS mean estimates θ
    with variance ``1/P_k``), not by the unweighted mean ``ŵ_{\\k}`` that MR-MTL uses.  So App. E.5's λ*_k is
    optimal only *within the MR-MTL family*; this is the error of the Bayes estimator itself.  Equal silos: the
    two coincide.  (Derivation: ``ŵ_j = θ + N(0, τ² + σ̃_j²)`` for j ≠ k, independent of
    ``w_k = θ + N(0, τ²)`` and ``ŵ_k = w_k + N(0, σ̃_k²)``; checked against brute-force conditioning of the joint
    Gaussian in the tests.)
    """
    s = _silos(sigma_loc2)
    tau2 = check_nonnegative("tau2", tau2)[..., None]
    prec = 1.0 / (tau2 + s)
    P = prec.sum(axis=-1, keepdims=True) - prec
    return 1.0 / (1.0 / s + 1.0 / (tau2 + 1.0 / P))


def full_bayes_variance_bruteforce(sigma_loc2, tau2: float, k: int, prior_var: float = 1e5) -> float:
    """Var(w_k | all releases) by conditioning the joint Gaussian of (w_k, ŵ_1..ŵ_K) with θ ~ N(0, prior_var)
    (prior_var → ∞ is the flat prior).  An independent route to :func:`full_bayes_variance`."""
    s = np.asarray(sigma_loc2, dtype=float)
    K = s.size
    # w = θ1 + u, ŵ = w + e: Cov(ŵ) = A 11ᵀ + τ² I + diag(s); Cov(w_k, ŵ) = A 1ᵀ + τ² e_kᵀ
    A = float(prior_var)
    C = A * np.ones((K, K)) + tau2 * np.eye(K) + np.diag(s)
    c = A * np.ones(K) + tau2 * np.eye(K)[k]
    return float(A + tau2 - c @ np.linalg.solve(C, c))
