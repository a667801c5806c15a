"""Closed forms of MR-MTL mean estimation with homogeneous silos (MR-MTL paper, Sec. 6, App. E.1-E.4).

Model (Assumptions E.1 and E.2 of the paper): a meta-centre θ with a flat prior; silo centres
``w_k ~ N(θ, τ²)`` for ``k = 1..K``; data ``x_{k,i} ~ N(w_k, σ²)`` for ``i = 1..n``; every silo releases
``ŵ_k = (ζ_k + Σ_i x_{k,i}) / n`` with ``ζ_k ~ N(0, σ_DP²)`` (one-shot Gaussian mechanism on the sum,
no clipping error).  Then ``ŵ_k - w_k ~ N(0, σ_loc²)`` with ``σ_loc² = σ²/n + σ_DP²/n²`` (eq. 5).

MR-MTL with penalty ``λ/2 (w - w̄)²`` returns ``ŵ_k(λ) = a ŵ_k + (1 - a) ŵ_{\\k}`` with
``a = (K + λ) / ((1 + λ) K)`` (Lemma 6.1).  ``λ = 0`` is local training, ``λ = ∞`` (``np.inf``) is
FedAvg (``ŵ_k(∞) = w̄``).

Every function is vectorized over numpy arrays (broadcasting), validates its arguments (``ValueError``
naming the argument) and returns a Python float for scalar input, an ndarray otherwise.  The "error"
``E`` is the mean squared error ``E[(w_k - ŵ_k(λ))²]`` averaged over the sampling of the centres, the
data and the DP noise (the reading under which Lemma 6.7 holds; see the erratum on conditional vs
averaged expectations in the book's chapter).  The formulas are derived symbolically in
:mod:`fedtheory.mean_estimation.symbolic`; ``tests/theory/test_mean_estimation_closed_form.py`` checks these
numeric versions against the sympy expressions and against Monte Carlo.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from fedtheory.validation import (
    check_integer_at_least,
    check_nonnegative,
    check_open_interval,
    check_positive,
)
from fedtheory.privacy.gaussian import gaussian_sigma

__all__ = [
    "local_variance",
    "alpha",
    "mrmtl_estimate",
    "optimal_lambda",
    "mse",
    "local_mse",
    "fedavg_mse",
    "optimal_mse",
    "gap_to_local",
    "gap_to_fedavg",
    "dp_cost",
    "crossover_epsilon",
    "gaussian_sigma",
]

ArrayLike = Any


def _out(x: np.ndarray) -> float | np.ndarray:
    x = np.asarray(x, dtype=float)
    return x.item() if x.ndim == 0 else x


def _shrink(lam: np.ndarray) -> np.ndarray:
    """``1 / (1 + λ)``, exactly 0 at ``λ = ∞`` (the weight MR-MTL keeps on the local estimate)."""
    with np.errstate(divide="ignore"):
        return np.where(np.isinf(lam), 0.0, 1.0 / (1.0 + np.where(np.isinf(lam), 0.0, lam)))


def _safe_ratio(num: np.ndarray, den: np.ndarray, *, zero_over_zero: float = 0.0) -> np.ndarray:
    """``num / den`` with ``0/0 -> zero_over_zero`` (degenerate case of zero variances)."""
    num, den = np.broadcast_arrays(num, den)
    out = np.full(num.shape, zero_over_zero, dtype=float)
    ok = den != 0
    np.divide(num, den, out=out, where=ok)
    return out


def local_variance(sigma2: ArrayLike, n: ArrayLike, sigma_dp2: ArrayLike = 0.0) -> float | np.ndarray:
    """Variance of a silo's private local estimate, ``σ_loc² = σ²/n + σ_DP²/n²`` (eq. 5).

    ``sigma2`` is the per-sample data variance σ², ``n`` the silo's sample count (integer >= 1) and
    ``sigma_dp2`` the variance σ_DP² of the Gaussian noise added to the *sum* of the silo's samples
    (e.g. ``gaussian_sigma(eps, delta, c) ** 2``).  ``sigma_dp2 = 0`` is the non-private case.
    With per-silo arrays it gives App. E.5's ``σ̃_k² = σ_k²/n_k + σ_DP,k²/n_k²`` (eq. 39, with the
    paper's ``n`` corrected to ``n_k``).
    """
    sigma2 = check_nonnegative("sigma2", sigma2)
    n = check_integer_at_least("n", n, 1).astype(float)
    sigma_dp2 = check_nonnegative("sigma_dp2", sigma_dp2)
    return _out(sigma2 / n + sigma_dp2 / n**2)


def alpha(lam: ArrayLike, K: ArrayLike) -> float | np.ndarray:
    """Weight ``a`` (the paper's α) on the local estimate in Lemma 6.1, ``a = (K + λ) / ((1 + λ) K)``; ``a(0) = 1``, ``a(∞) = 1/K``."""
    lam = check_nonnegative("lam", lam)
    K = check_integer_at_least("K", K, 2).astype(float)
    w = _shrink(lam)
    return _out(1.0 / K + (1.0 - 1.0 / K) * w)


def mrmtl_estimate(w_hat: ArrayLike, lam: ArrayLike) -> np.ndarray:
    """MR-MTL personalized estimates of all silos (Lemma 6.1), ``ŵ_k(λ) = (ŵ_k + λ w̄) / (1 + λ)``.

    ``w_hat`` holds the K local (private) estimates on its last axis (``K >= 2``); ``w̄`` is their mean.
    ``lam`` is a scalar or broadcasts against ``w_hat``'s leading axes (``np.inf`` gives FedAvg, the
    mean for every silo).  This equals ``a ŵ_k + (1 - a) ŵ_{\\k}``; it is the minimizer of
    ``½(w - ŵ_k)² + λ/2 (w - w̄)²`` and of the joint objective (18) (checked in the tests by numerical
    minimization).
    """
    w_hat = np.asarray(w_hat, dtype=float)
    if w_hat.ndim == 0 or w_hat.shape[-1] < 2:
        raise ValueError(f"w_hat must hold K >= 2 silo estimates on its last axis (got shape {w_hat.shape})")
    lam = check_nonnegative("lam", lam)
    w = _shrink(lam)[..., None] if lam.ndim else _shrink(lam)
    w_bar = w_hat.mean(axis=-1, keepdims=True)
    return w * w_hat + (1.0 - w) * w_bar


def optimal_lambda(sigma_loc2: ArrayLike, tau2: ArrayLike) -> float | np.ndarray:
    """Optimal MR-MTL regularization strength, ``λ* = σ_loc² / τ²`` (Theorem 6.3).

    ``sigma_loc2`` is the local variance σ_loc² (see :func:`local_variance`), ``tau2`` the
    heterogeneity τ².  Returns ``np.inf`` (FedAvg) where ``τ² = 0 < σ_loc²`` and ``0`` (local training;
    every λ is then optimal with zero error) where ``σ_loc² = 0``.  ``λ*`` does not depend on K.

    Examples
    --------
    The paper's defaults at τ = 0.08 (σ_loc² = 0.010189, see the mean-estimation chapter):

    >>> round(optimal_lambda(0.010189, 0.08**2), 4)
    1.592
    >>> optimal_lambda([0.01, 0.02], 0.0)   # no heterogeneity: FedAvg
    array([inf, inf])
    """
    s = check_nonnegative("sigma_loc2", sigma_loc2)
    tau2 = check_nonnegative("tau2", tau2)
    s, tau2 = np.broadcast_arrays(s, tau2)
    with np.errstate(divide="ignore"):
        out = np.where(tau2 > 0, s / np.where(tau2 > 0, tau2, 1.0), np.inf)
    out = np.where(s == 0, 0.0, out)
    return _out(out)


def _common(sigma_loc2: ArrayLike, tau2: ArrayLike, K: ArrayLike):
    s = check_nonnegative("sigma_loc2", sigma_loc2)
    tau2 = check_nonnegative("tau2", tau2)
    K = check_integer_at_least("K", K, 2).astype(float)
    return s, tau2, K


def mse(lam: ArrayLike, sigma_loc2: ArrayLike, tau2: ArrayLike, K: ArrayLike) -> float | np.ndarray:
    """Mean squared error of MR-MTL, ``E(λ) = (1 - 1/K)(σ_loc² + λ²τ²)/(λ + 1)² + σ_loc²/K`` (Lemma 6.7).

    Equivalently ``a² σ_loc² + (1 - a)² (Kτ² + σ_loc²)/(K - 1)``.  ``lam >= 0``; ``lam = np.inf`` gives
    FedAvg's error ``(σ_loc² + (K - 1)τ²)/K`` and ``lam = 0`` local training's ``σ_loc²``.  The error is
    unimodal in λ with its minimum at :func:`optimal_lambda`.  It is the error averaged over centres,
    data and DP noise (the paper writes a conditional expectation; see the chapter's errata).
    """
    lam = check_nonnegative("lam", lam)
    s, tau2, K = _common(sigma_loc2, tau2, K)
    w = _shrink(lam)  # 1/(1+λ); λ/(1+λ) = 1 - w
    return _out((1.0 - 1.0 / K) * (w**2 * s + (1.0 - w) ** 2 * tau2) + s / K)


def local_mse(sigma_loc2: ArrayLike) -> float | np.ndarray:
    """Error of local training, ``E_loc = E(0) = σ_loc²`` (Prop. 6.5)."""
    return _out(check_nonnegative("sigma_loc2", sigma_loc2))


def fedavg_mse(sigma_loc2: ArrayLike, tau2: ArrayLike, K: ArrayLike) -> float | np.ndarray:
    """Error of FedAvg, ``E_fed = E(∞) = (σ_loc² + (K - 1)τ²)/K`` (proof of Prop. 6.6)."""
    s, tau2, K = _common(sigma_loc2, tau2, K)
    return _out((s + (K - 1.0) * tau2) / K)


def optimal_mse(sigma_loc2: ArrayLike, tau2: ArrayLike, K: ArrayLike) -> float | np.ndarray:
    """Error at λ*, ``E* = σ_loc²(σ_loc² + Kτ²) / (K(σ_loc² + τ²))`` (Corollary 6.4; the posterior variance σ_w²)."""
    s, tau2, K = _common(sigma_loc2, tau2, K)
    return _out(_safe_ratio(s * (s + K * tau2), K * (s + tau2)))


def gap_to_local(sigma_loc2: ArrayLike, tau2: ArrayLike, K: ArrayLike) -> float | np.ndarray:
    """Advantage of optimal MR-MTL over local training, ``Δ_loc = (1 - 1/K) σ_loc⁴/(σ_loc² + τ²)`` (Prop. 6.5)."""
    s, tau2, K = _common(sigma_loc2, tau2, K)
    return _out((1.0 - 1.0 / K) * _safe_ratio(s**2, s + tau2))


def gap_to_fedavg(sigma_loc2: ArrayLike, tau2: ArrayLike, K: ArrayLike) -> float | np.ndarray:
    """Advantage of optimal MR-MTL over FedAvg, ``Δ_fed = (1 - 1/K) τ⁴/(σ_loc² + τ²)`` (Prop. 6.6)."""
    s, tau2, K = _common(sigma_loc2, tau2, K)
    return _out((1.0 - 1.0 / K) * _safe_ratio(tau2**2, s + tau2))


def dp_cost(lam: ArrayLike, sigma_dp2: ArrayLike, n: ArrayLike, K: ArrayLike) -> float | np.ndarray:
    """Utility cost of privacy at λ, ``Δ_DP(λ) = (1 - 1/K) σ_DP²/((λ + 1)² n²) + σ_DP²/(K n²)`` (Theorem 6.8).

    It is ``E(λ)`` with ``σ_loc² = σ²/n + σ_DP²/n²`` minus ``E(λ)`` with ``σ_loc² = σ²/n``; it falls
    monotonically from ``σ_DP²/n²`` (local, ``λ = 0``) to ``σ_DP²/(K n²)`` (FedAvg, ``λ = ∞``).
    """
    lam = check_nonnegative("lam", lam)
    sigma_dp2 = check_nonnegative("sigma_dp2", sigma_dp2)
    n = check_integer_at_least("n", n, 1).astype(float)
    K = check_integer_at_least("K", K, 2).astype(float)
    w = _shrink(lam)
    return _out((1.0 - 1.0 / K) * w**2 * sigma_dp2 / n**2 + sigma_dp2 / (K * n**2))


def crossover_epsilon(sigma2: ArrayLike, tau2: ArrayLike, n: ArrayLike, delta: ArrayLike,
                      sensitivity: ArrayLike = 1.0) -> float | np.ndarray:
    """Privacy budget ε at which local training and FedAvg have equal error.

    ``E_loc - E_fed = (1 - 1/K)(σ_loc² - τ²)``, so they tie where ``σ_loc²(ε) = τ²``; with the classic
    Gaussian calibration ``σ_DP = c sqrt(2 ln(1.25/δ))/ε`` this is
    ``ε× = c sqrt(2 ln(1.25/δ)) / (n sqrt(τ² - σ²/n))`` (independent of K).  FedAvg has the smaller
    error for ``ε < ε×`` and local training for ``ε > ε×``; at ``ε×`` MR-MTL's advantage over the better
    endpoint peaks (``λ* = 1``).  Where ``τ² <= σ²/n`` FedAvg wins (or ties) at every ε and ``np.inf``
    is returned.  The classic calibration is a proven guarantee only for ε < 1 (see
    :func:`gaussian_sigma`); a returned ``ε× >= 1`` is where the paper's formula ties, not a certified ε.
    """
    sigma2 = check_nonnegative("sigma2", sigma2)
    tau2 = check_nonnegative("tau2", tau2)
    n = check_integer_at_least("n", n, 1).astype(float)
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    sensitivity = check_positive("sensitivity", sensitivity)
    excess = tau2 - sigma2 / n
    root = np.sqrt(np.where(excess > 0, excess, 1.0))
    out = np.where(excess > 0, sensitivity * np.sqrt(2.0 * np.log(1.25 / delta)) / (n * root), np.inf)
    return _out(out)
