"""RDP of the tuned procedure: Theorem F.2 of the MR-MTL paper (= Papernot & Steinke 2022, Thm 2) for
``h ~ TNB(ν, γ)`` and P&S Theorem 6 for ``h ~ Poisson(μ)``, given the base mechanism's RDP curve.

Theorem F.2 holds for *every* extra order ``α̂ ≥ 1``; its α̂-terms ``(1+ν)[(1-1/α̂) ε(α̂) + log(1/γ)/α̂]`` do not
depend on the order α at which the tuned RDP is stated, so for all α at once we take the α̂ of the order grid
that minimises them (a minimum over a finite set of valid bounds is a valid bound), then apply RDP
monotonicity in the order (``ε̃(α) ≤ min_{α' ≥ α} ε̃(α')``), as ``dp_accounting``'s ``RepeatAndSelectDpEvent``
does.  For the Gaussian base mechanism the continuous optimum is ``α̂* = z·sqrt(2 log(1/γ))``
(:func:`gaussian_alpha_hat`).  P&S Theorem 6 takes any valid (ε̂, δ̂)-DP statement of the base mechanism
(:func:`rdp_to_delta` from its RDP curve, or an exact privacy profile passed in).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from fedtheory.validation import as_float_array, check_choice, check_positive
from fedtheory.privacy.tuning.runs import DISTRIBUTIONS, _check_eta, tnb_gamma

__all__ = ["rdp_to_delta", "tnb_rdp", "poisson_rdp", "tuned_rdp", "gaussian_alpha_hat"]


def _orders_rdp(orders, rdp):
    orders = as_float_array("orders", orders).ravel()
    rdp = as_float_array("rdp", rdp).ravel()
    if orders.shape != rdp.shape:
        raise ValueError(f"orders and rdp must have the same length (got {orders.size} and {rdp.size})")
    if (orders < 1).any():
        raise ValueError(f"orders must be >= 1 (got {orders.min()!r})")
    if (rdp < 0).any():
        raise ValueError(f"rdp must be >= 0 (got {rdp.min()!r})")
    return orders, rdp


def rdp_to_delta(orders, rdp, eps):
    """δ(ε) implied by an RDP curve: min over orders of the improved conversion (Lemma A.2 inverted),

    ``log δ ≤ (α-1)(ε(α) - ε + log(1-1/α)) - log α`` (Canonne–Kamath–Steinke 2020, Prop. 12), and the
    KL/total-variation bound ``δ ≤ sqrt(1 - exp(-ε(α)))`` (valid at every α ≥ 1 because Rényi
    divergences grow with the order).  Same bound as ``dp_accounting.rdp.compute_delta`` (cross-checked
    in the tests).  Vectorised over ``eps``.
    """
    orders, rdp = _orders_rdp(orders, rdp)
    eps = as_float_array("eps", eps)
    e = eps.reshape(-1, 1)
    with np.errstate(divide="ignore"):
        log_tv = np.where(rdp > 0, 0.5 * np.log(-np.expm1(-rdp)), -np.inf)
    a = np.where(orders > 1.01, orders, 2.0)  # the improved bound is unstable as α → 1
    improved = (a - 1) * (rdp - e + np.log1p(-1 / a)) - np.log(a)
    improved = np.where(orders > 1.01, improved, np.inf)
    log_delta = np.minimum(log_tv, improved).min(axis=1)
    out = np.minimum(np.exp(log_delta), 1.0).reshape(eps.shape)
    return out.item() if out.ndim == 0 else out


def _monotone_envelope(orders: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``min_{α' ≥ α} values(α')``: Rényi divergence is non-decreasing in the order."""
    idx = np.argsort(orders)
    env = np.minimum.accumulate(values[idx][::-1])[::-1]
    out = np.empty_like(values)
    out[idx] = env
    return out


def _tnb_constant(orders: np.ndarray, rdp: np.ndarray, eta: float, gamma: float) -> tuple[float, float]:
    """(1+ν)·min_α̂ [(1-1/α̂) ε(α̂) + log(1/γ)/α̂] over the grid, and the minimising α̂."""
    terms = (1.0 - 1.0 / orders) * rdp + math.log(1.0 / gamma) / orders
    j = int(np.argmin(terms))
    return (1.0 + eta) * float(terms[j]), float(orders[j])


def tnb_rdp(orders, rdp, eta, mean_runs, *, monotone: bool = True, return_alpha_hat: bool = False):
    """RDP curve of best-of-h with ``h ~ TNB(ν, γ)``, ``E[h] = mean_runs`` (Theorem F.2 = P&S Thm 2).

    ``ε̃(α) = ε(α) + (1+ν)(1-1/α̂) ε(α̂) + (1+ν) log(1/γ)/α̂ + log(E[h])/(α-1)`` for every α > 1 of
    ``orders`` (∞ at α = 1), where ``rdp`` is the base mechanism's RDP ``ε(·)`` on ``orders``, α̂ is chosen
    as explained in the module docstring, γ solves ``E[h] = mean_runs`` (:func:`.tnb_gamma`), and
    ``monotone`` applies RDP monotonicity afterwards.  Requires ν > -1.  With
    ``return_alpha_hat=True`` returns ``(curve, alpha_hat)``.
    """
    orders, rdp = _orders_rdp(orders, rdp)
    eta = _check_eta(eta)
    gamma = tnb_gamma(mean_runs, eta)
    const, alpha_hat = _tnb_constant(orders, rdp, eta, gamma)
    with np.errstate(divide="ignore"):
        out = np.where(orders > 1, rdp + const + math.log(float(mean_runs)) / (orders - 1), np.inf)
    if monotone:
        out = _monotone_envelope(orders, out)
    return (out, alpha_hat) if return_alpha_hat else out


def poisson_rdp(orders, rdp, mean_runs, *, monotone: bool = True, delta_hat=None):
    """RDP curve of best-of-h with ``h ~ Poisson(μ)`` (P&S Thm 6; ``dp_accounting``'s ``shape=inf``).

    ``ε̃(α) = ε(α) + μ·δ̂ + log(μ)/(α-1)`` where the base mechanism is (ε̂, δ̂)-DP at
    ``ε̂ = log(1 + 1/(α-1))`` (the largest ε̂ the theorem allows).  The theorem accepts *any* valid δ̂:
    with ``delta_hat=None`` it is obtained from the base RDP curve by :func:`rdp_to_delta` (as
    ``dp_accounting``); pass a callable ``ε̂ ↦ δ̂`` (vectorised) giving the base mechanism's privacy
    profile, e.g. the exact one of :func:`.base_delta`, for the tighter bound.  ``monotone`` as in
    :func:`tnb_rdp`.
    """
    orders, rdp = _orders_rdp(orders, rdp)
    mu = float(check_positive("mean_runs", mean_runs))
    out = np.full(orders.shape, np.inf)
    gt1 = orders > 1
    eps_hat = np.log1p(1.0 / (orders[gt1] - 1.0))
    if delta_hat is None:
        delta_hat = np.atleast_1d(rdp_to_delta(orders, rdp, eps_hat))
    else:
        delta_hat = np.broadcast_to(np.asarray(delta_hat(eps_hat), dtype=float), eps_hat.shape)
    out[gt1] = rdp[gt1] + mu * delta_hat + math.log(mu) / (orders[gt1] - 1.0)
    if monotone:
        out = _monotone_envelope(orders, out)
    return out


def tuned_rdp(orders, rdp, distribution: str, mean_runs: Optional[float] = None, eta: Optional[float] = None,
              *, monotone: bool = True, delta_hat=None):
    """Dispatch: :func:`tnb_rdp` (needs ``eta``), :func:`poisson_rdp` (``delta_hat`` passed on), or the base
    curve for ``"none"``."""
    check_choice("distribution", distribution, DISTRIBUTIONS)
    if distribution == "none":
        return _orders_rdp(orders, rdp)[1].copy()
    if mean_runs is None:
        raise ValueError(f"mean_runs is required for distribution={distribution!r}")
    if distribution == "poisson":
        return poisson_rdp(orders, rdp, mean_runs, monotone=monotone, delta_hat=delta_hat)
    if eta is None:
        raise ValueError("eta is required for distribution='tnb' (a float in (-1, inf))")
    return tnb_rdp(orders, rdp, eta, mean_runs, monotone=monotone)


def gaussian_alpha_hat(noise_multiplier, eta, mean_runs) -> float:
    """Continuous optimum of α̂ in Thm F.2 for a Gaussian base mechanism, ``α̂* = z·sqrt(2 log(1/γ))``.

    With ``ε(α̂) = α̂/(2z²)`` the α̂-terms are ``(1+ν)[(α̂-1)/(2z²) + log(1/γ)/α̂]``, minimised at α̂*
    (clipped to α̂ ≥ 1).  Used to check the grid choice.
    """
    z = float(check_positive("noise_multiplier", noise_multiplier))
    gamma = tnb_gamma(mean_runs, eta)
    return max(1.0, z * math.sqrt(2.0 * math.log(1.0 / gamma)))
