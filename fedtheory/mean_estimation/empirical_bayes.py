"""Choosing λ for free: the empirical-Bayes plug-in λ̂ from the private releases (MR-MTL Sec. 6, Thm 6.3).

Model (Sec. 6, Assumption E.1): K silos release ``ŵ_k = w_k + N(0, σ_loc²)`` with ``w_k ~ N(θ, τ²)``, where
``σ_loc² = σ²/n + σ_DP²/n²`` (eq. 5) is public (σ², n and the noise scale σ_DP are known; σ² known is an
assumption: otherwise it must itself be bounded or estimated privately).  The oracle ``λ* = σ_loc²/τ²``
(Thm 6.3) needs τ².  The releases' spread estimates it: with ``S = Σ_k (ŵ_k − w̄)²``,
``E[S] = (K−1)(τ² + σ_loc²)``, so

    τ̂² = S/(K−1) − σ_loc²,     λ̂ = σ_loc²/τ̂²   (λ̂ = ∞, i.e. FedAvg, when τ̂² ≤ 0).

Equivalently MR-MTL shrinks each release toward the average by ``B = λ/(1+λ) = σ_loc²/(σ_loc² + τ²)``
and the plug-in is ``B̂ = min(1, c·σ_loc²/S)`` with ``c = K−1`` (``method="moment"``, the estimator
above) or ``c = K−3`` (``method="efron_morris"``, the positive-part James–Stein choice, for which
``c/S`` is unbiased for ``1/(σ_loc² + τ²)``; needs K ≥ 4).

**Privacy.**  λ̂ is a function of the already-private releases and public constants only, so by
post-processing it costs no privacy: the whole MR-MTL(λ̂) output keeps each silo's (ε, δ).  This holds in
the one-shot model, where λ acts *after* the releases; see the tuning chapter for many-round training.

**Exact risk.**  For ``θ̂ = ŵ − B̂(S)(ŵ − w̄·1)`` Stein's unbiased risk estimate is a function of S only,
``SURE(S) = Kσ_loc² − 2σ_loc²[(K−1)B̂ + 2S·B̂'(S)] + S·B̂²``, and under the model
``S ~ (τ² + σ_loc²)·χ²_{K−1}``; :func:`plugin_mse` integrates it (1-d quadrature), an independent route
to the Monte Carlo of :func:`simulate_plugin`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, stats

from fedtheory.validation import as_float_array, check_choice, check_integer_at_least, check_positive

__all__ = ["PLUGIN_METHODS", "estimate_tau2", "plugin_lambda", "plugin_mse", "PluginSimulation", "simulate_plugin"]

PLUGIN_METHODS = ("moment", "efron_morris")


def _c(method: str, K: int) -> float:
    check_choice("method", method, PLUGIN_METHODS)
    if method == "efron_morris":
        if K < 4:
            raise ValueError(f"method='efron_morris' needs K >= 4 silos (got K={K})")
        return K - 3.0
    if K < 2:
        raise ValueError(f"the plug-in needs K >= 2 silos (releases on the last axis; got K={K})")
    return K - 1.0


def estimate_tau2(releases, sigma_loc2: float) -> float:
    """Moment estimate ``τ̂² = S/(K−1) − σ_loc²`` from the K private releases (may be ≤ 0).  Vectorised over
    leading axes: ``releases`` has silos on the last axis."""
    w = as_float_array("releases", releases)
    if w.shape[-1] < 2:
        raise ValueError(f"releases needs at least 2 silos on its last axis (got shape {w.shape})")
    s2 = float(check_positive("sigma_loc2", sigma_loc2))
    out = w.var(axis=-1, ddof=1) - s2
    return out.item() if out.ndim == 0 else out


def _shrinkage(S, sigma_loc2: float, c: float):
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, c * sigma_loc2 / np.asarray(S, dtype=float))


def plugin_lambda(releases, sigma_loc2: float, method: str = "moment"):
    """λ̂ from the releases (silos on the last axis): ``B̂ = min(1, c σ_loc²/S)``, ``λ̂ = B̂/(1−B̂)`` ∈ [0, ∞].

    ``method="moment"`` (c = K−1) is ``σ_loc²/τ̂²`` with the moment estimate of :func:`estimate_tau2`
    (∞ when τ̂² ≤ 0).  Post-processing of private releases: no privacy cost.
    """
    w = as_float_array("releases", releases)
    K = w.shape[-1]
    c = _c(method, K)
    s2 = float(check_positive("sigma_loc2", sigma_loc2))
    S = ((w - w.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
    B = _shrinkage(S, s2, c)
    with np.errstate(divide="ignore"):
        lam = np.where(B >= 1.0, np.inf, B / (1.0 - B))
    return lam.item() if lam.ndim == 0 else lam


def plugin_mse(sigma_loc2: float, tau2: float, K: int, method: str = "moment") -> float:
    """Exact per-silo mean squared error of MR-MTL(λ̂) under the Sec. 6 model (SURE + quadrature, see module).

    Compare :func:`fedtheory.mean_estimation.optimal_mse` (the oracle λ*, Cor. 6.4), which it exceeds.
    """
    K = int(check_integer_at_least("K", K, 2))
    c = _c(method, K)
    s2 = float(check_positive("sigma_loc2", sigma_loc2))
    t2 = float(as_float_array("tau2", tau2))
    if t2 < 0:
        raise ValueError(f"tau2 must be >= 0 (got {t2!r})")
    scale = t2 + s2
    law = stats.chi2(K - 1, scale=scale)
    cut = c * s2  # S below cut: B̂ = 1 (FedAvg); above: B̂ = c s2/S, B̂' = -c s2/S²

    def sure_hi(S):
        B = cut / S
        return K * s2 - 2 * s2 * ((K - 1) * B - 2 * B) + S * B * B

    lo_part = (K * s2 - 2 * s2 * (K - 1)) * law.cdf(cut) + scale * (K - 1) * stats.chi2(K + 1, scale=scale).cdf(cut)
    # E[S 1{S<cut}] = (K-1) scale P(chi2_{K+1} < cut/scale)
    hi_part, _ = integrate.quad(lambda S: sure_hi(S) * law.pdf(S), cut, np.inf, epsabs=0, epsrel=1e-10, limit=200)
    return float((lo_part + hi_part) / K)


@dataclass(frozen=True)
class PluginSimulation:
    """Monte Carlo of MR-MTL(λ̂): per-silo MSE ± SE, the fraction of trials with λ̂ = ∞, the median λ̂."""

    mse: float
    se: float
    frac_fedavg: float
    median_lambda: float
    trials: int


def simulate_plugin(K: int, sigma_loc2: float, tau2: float, *, method: str = "moment", trials: int = 20_000,
                    seed: int = 0, theta: float = 0.0) -> PluginSimulation:
    """Simulate releases ``ŵ_k = w_k + N(0, σ_loc²)``, ``w_k ~ N(θ, τ²)``, choose λ̂ by :func:`plugin_lambda`
    and average ``(w_k − ŵ_k(λ̂))²`` over silos (per trial) and trials; SE over trials."""
    K = int(check_integer_at_least("K", K, 2))
    trials = int(check_integer_at_least("trials", trials, 2))
    s2 = float(check_positive("sigma_loc2", sigma_loc2))
    t2 = float(as_float_array("tau2", tau2))
    rng = np.random.default_rng(seed)
    w = theta + math.sqrt(t2) * rng.standard_normal((trials, K))
    w_hat = w + math.sqrt(s2) * rng.standard_normal((trials, K))
    lam = np.atleast_1d(plugin_lambda(w_hat, s2, method))
    with np.errstate(divide="ignore"):
        B = (1.0 / (1.0 + 1.0 / lam))[:, None]  # B = λ/(1+λ), 1 at λ = ∞; MR-MTL(λ) = ŵ_k − B (ŵ_k − w̄)
    est = w_hat - B * (w_hat - w_hat.mean(axis=1, keepdims=True))
    per_trial = ((est - w) ** 2).mean(axis=1)
    return PluginSimulation(float(per_trial.mean()), float(per_trial.std(ddof=1) / math.sqrt(trials)),
                            float(np.isinf(lam).mean()), float(np.median(lam)), trials)
