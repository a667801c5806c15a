"""Private hyperparameter tuning by random repetition (Papernot & Steinke 2022; MR-MTL paper Sec. 7, App. F).

Setting (MR-MTL paper App. F, Papernot & Steinke 2022 "Hyperparameter tuning with Renyi differential
privacy", arXiv 2110.03620).  A base mechanism ``M`` (one training run with some hyperparameter, e.g. one
value of the MR-MTL knob λ) is run ``h`` times with independently drawn hyperparameters, and only the
best run (by any score that is itself computed by ``M``) is released.  With ``h`` fixed the cost can be as
large as ``h``-fold composition (Prop. F.1); with ``h`` *random* the cost is a constant or a ``log E[h]``
additive term.  Two laws for ``h`` are covered:

* truncated negative binomial ``TNB(ν, γ)`` (shape ν, argument ``eta``; the paper's η) on ``h ∈ {1, 2, ...}``, ``ν ∈ (-1, ∞)``, ``γ ∈ (0, 1)``
  (``ν = 0``: logarithmic; ``ν = 1``: geometric), RDP bound of **Theorem F.2** (= P&S Thm 2);
* ``Poisson(μ)`` on ``h ∈ {0, 1, 2, ...}`` (``h = 0`` releases a fixed default output ⊥), RDP bound
  of P&S **Theorem 6**.

**Erratum.**  The MR-MTL paper prints the condition of Theorem F.2 as "ν > 1".  The correct range is
``ν > -1`` (P&S Thm 2): for ``ν < -1`` the TNB "pmf" takes negative values (``f(2) = f(1)(1-γ)(1+ν)/2 <
0``), at ``ν = -1`` it is the point mass at ``h = 1`` (no tuning at all, ``E[h] = 1``), and the paper's
own Fig. 7 uses ``ν ∈ {-0.5, 0, 0.5}``.  :func:`tnb_pmf` raises for ``ν ≤ -1``; the chapter shows the
sign pattern and :func:`exact_tuned_rdp` checks the bound numerically at ``ν = -0.5``.

**Choice of the extra order α̂.**  Theorem F.2 holds for *every* ``α̂ ≥ 1``; its α̂-terms
``(1+ν)[(1-1/α̂) ε(α̂) + log(1/γ)/α̂]`` do not depend on the order α at which the tuned RDP is stated.
We therefore take, for all α at once, the α̂ of the order grid that minimises them (a minimum over a
finite set of valid bounds is a valid bound), then apply RDP monotonicity in the order
(``ε̃(α) ≤ min_{α' ≥ α} ε̃(α')``).  Google's ``dp_accounting`` (``RepeatAndSelectDpEvent``) does the
same, which the tests exploit.  For the Gaussian base mechanism the continuous optimum is
``α̂* = z·sqrt(2 log(1/γ))`` (:func:`gaussian_alpha_hat`), a check on the grid search.

**Accounting.**  Base mechanisms: ``"gaussian"`` — one release of a sum/mean with L2 sensitivity Δ and
noise std ``z·Δ`` (RDP ``α/(2z²)``), the one-shot mechanism of MR-MTL Sec. 6; ``"dpsgd"`` — ``steps``
Poisson-subsampled Gaussian steps at rate ``sample_rate``.  RDP curves come from
:mod:`fedtheory.privacy.rdp`; conversion to (ε, δ) uses Lemma A.2 (the "improved" conversion of
Canonne–Kamath–Steinke / Balle et al.).  Adjacency: add/remove one sample, the notion under which the
subsampled-Gaussian RDP is stated (for the one-shot Gaussian, any adjacency whose L2 sensitivity is Δ).

**Tightness: ``bound="tight"`` (default) vs ``bound="rdp"``.**  Each scheme is calibrated as tightly as its
theorem allows (:data:`BOUNDS`):

* untuned (one run): the base mechanism's *exact* privacy profile δ(ε) — Balle & Wang's analytic
  Gaussian (``fedtheory.privacy.gaussian.gaussian_epsilon``) for ``"gaussian"``, ``dp_accounting``'s
  PLD accountant (pessimistic discretisation, an upper bound) for ``"dpsgd"``;
* TNB (Thm F.2 = P&S Thm 2): the theorem takes RDP of the base mechanism, which for the Gaussian is exact
  (α/(2z²)); "tight" adds the continuous optimum α̂* = z·sqrt(2 log(1/γ)) to the order grid, so the
  α̂-terms are minimised exactly;
* Poisson (P&S Thm 6): the theorem takes *any* valid (ε̂, δ̂)-DP statement of the base mechanism with
  ε̂ ≤ log(1 + 1/(α-1)); "tight" uses the exact profile δ̂ = δ(ε̂) (:func:`base_delta`) instead of the δ̂
  implied by the RDP curve, the looser value that ``dp_accounting``'s RDP accountant (and the MR-MTL
  paper's code) uses.

``bound="rdp"`` reproduces the RDP-only computation (``dp_accounting``'s ``RepeatAndSelectDpEvent``; the
paper's Fig. 7 code).  In both modes the tuned RDP curve is converted to (ε, δ) by Lemma A.2.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy import optimize, special

from fedtheory.validation import (
    as_float_array,
    check_choice,
    check_integer_at_least,
    check_open_interval,
    check_positive,
)
from fedtheory.privacy.accountants import get_accountant
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.events import dpsgd_event, rdp_curve_event
from fedtheory.privacy.gaussian import analytic_gaussian_sigma, gaussian_delta, gaussian_epsilon
from fedtheory.privacy.rdp import DEFAULT_ORDERS, rdp_to_epsilon, subsampled_gaussian_rdp

__all__ = [
    "DISTRIBUTIONS",
    "MECHANISMS",
    "BOUNDS",
    "base_delta",
    "TUNING_ORDERS",
    "tnb_pmf",
    "tnb_mean",
    "tnb_gamma",
    "tnb_formula_values",
    "poisson_pmf",
    "sample_runs",
    "runs_pmf",
    "expected_best_of_runs",
    "expected_released_value",
    "rdp_to_delta",
    "tnb_rdp",
    "poisson_rdp",
    "tuned_rdp",
    "gaussian_alpha_hat",
    "base_rdp",
    "tuned_epsilon",
    "tuned_noise_multiplier",
    "TunedCalibration",
    "calibration_table",
    "exact_tuned_rdp",
    "finite_rdp",
    "fixed_h_lower_bound",
    "fixed_h_example",
]

#: Laws for the number of runs ``h``; ``"none"`` means a single run (no tuning, ``h ≡ 1``).
DISTRIBUTIONS = ("tnb", "poisson", "none")
#: Base mechanisms understood by :func:`base_rdp`.
MECHANISMS = ("gaussian", "dpsgd")
#: ``"tight"``: each theorem fed the tightest valid input (exact privacy profile / continuous α̂);
#: ``"rdp"``: everything from the RDP curve on the order grid (``dp_accounting``, the paper's code).
BOUNDS = ("tight", "rdp")

#: RDP orders used by default here: ``dp_accounting``'s default grid (1.1..10.9 by 0.1, 11..63,
#: 128, 256, 512, 1024) plus a geometric grid 64..8192.  Tuned one-shot Gaussians have large noise
#: multipliers (z ≈ 15-60), whose best orders lie in the hundreds, so the extra large orders matter.
#: Being a superset of ``dp_accounting``'s defaults, this grid never gives a looser ε than they do.
TUNING_ORDERS = np.unique(np.concatenate([
    1.0 + np.arange(1, 100) / 10.0,
    np.arange(11.0, 64.0),
    np.array([128.0, 256.0, 512.0, 1024.0]),
    np.round(np.geomspace(64.0, 8192.0, 57), 6),
]))


# ----------------------------------------------------------------------------------------------------
# Distributions of the number of runs
# ----------------------------------------------------------------------------------------------------

def _check_eta(eta) -> float:
    eta = float(as_float_array("eta", eta))
    if not eta > -1.0 or not math.isfinite(eta):
        raise ValueError(
            f"eta must lie in (-1, inf) (got {eta!r}): the truncated negative binomial TNB(eta, gamma) is a "
            "probability distribution only for eta > -1 (Papernot & Steinke 2022, Thm 2; the MR-MTL paper's "
            "'eta > 1' in Thm F.2 is a typo)")
    return eta


def _log_tnb_mean(eta: float, log_gamma):
    """log E[h] for TNB(ν, γ), stable for γ → 0 and γ → 1 and ν → 0 (vectorised over log γ)."""
    log_gamma = np.asarray(log_gamma, dtype=float)
    # (1-γ)/γ, computed as -expm1(log γ)/γ
    log_odds = np.log(-np.expm1(log_gamma)) - log_gamma
    if eta == 0.0:
        return log_odds - np.log(-log_gamma)
    # ν / (1 - γ^ν) = ν / (-expm1(ν log γ)) > 0 for ν in (-1, 0) ∪ (0, ∞)
    return log_odds + np.log(eta / -np.expm1(eta * log_gamma))


def tnb_mean(eta, gamma):
    """Mean of TNB(ν, γ): ``ν(1-γ)/(γ(1-γ^ν))`` for ν ≠ 0 and ``(1/γ-1)/log(1/γ)`` for ν = 0 (App. F).

    Vectorised over ``gamma`` ∈ (0, 1).  Raises ``ValueError`` for ν ≤ -1 or γ outside (0, 1).
    """
    eta = _check_eta(eta)
    gamma = check_open_interval("gamma", gamma, 0.0, 1.0)
    out = np.exp(_log_tnb_mean(eta, np.log(gamma)))
    return out.item() if out.ndim == 0 else out


def tnb_pmf(h, eta, gamma):
    """PMF of the truncated negative binomial TNB(ν, γ) at ``h`` (App. F; P&S Definition 1).

    ``f(h) = (1-γ)^h / (γ^{-ν} - 1) · ∏_{ℓ=0}^{h-1} (ℓ+ν)/(ℓ+1)`` for ν ≠ 0 and
    ``f(h) = (1-γ)^h / (h log(1/γ))`` for ν = 0, on ``h ∈ {1, 2, ...}`` (0 elsewhere).  The product is
    ``Γ(h+ν)/(Γ(ν) h!)``, evaluated in log space; for ν ∈ (-1, 0) both ``Γ(ν)`` and ``γ^{-ν}-1`` are
    negative, so ``f > 0``.  Vectorised over ``h``.
    """
    eta = _check_eta(eta)
    gamma = float(check_open_interval("gamma", gamma, 0.0, 1.0))
    h = np.asarray(h)
    hf = np.asarray(h, dtype=float)
    valid = (hf >= 1) & (hf == np.round(hf))
    hs = np.where(valid, hf, 1.0)
    log_g = math.log(gamma)
    if eta == 0.0:
        logf = hs * math.log1p(-gamma) - np.log(hs) - math.log(-log_g)
    else:
        log_norm = math.log(abs(math.expm1(-eta * log_g)))  # |γ^{-ν} - 1|
        logf = (hs * math.log1p(-gamma) + special.gammaln(hs + eta) - special.gammaln(hs + 1.0)
                - special.gammaln(eta) - log_norm)           # gammaln = log|Γ|; signs cancel for ν > -1
    out = np.where(valid, np.exp(logf), 0.0)
    return out.item() if out.ndim == 0 else out


def tnb_formula_values(h, eta: float, gamma: float) -> np.ndarray:
    """The printed TNB formula evaluated for *any* real ν ≠ 0 (no range check), for showing the erratum.

    ``(1-γ)^h / (γ^{-ν}-1) · ∏_{ℓ=0}^{h-1} (ℓ+ν)/(ℓ+1)`` by direct products (independent of the
    log-gamma route of :func:`tnb_pmf`).  For ν < -1 the values alternate in sign from h = 2 on, and
    at ν = -1 all mass sits on h = 1, so only ν > -1 gives a distribution with E[h] > 1.
    """
    h = np.atleast_1d(np.asarray(h, dtype=int))
    eta, gamma = float(eta), float(gamma)
    if eta == 0.0:
        raise ValueError("eta = 0 is the logarithmic case; use tnb_pmf")
    hmax = int(h.max())
    factors = (np.arange(hmax) + eta) / (np.arange(hmax) + 1.0)
    prods = np.cumprod(factors)  # prods[h-1] = ∏_{ℓ=0}^{h-1}
    return (1.0 - gamma) ** h / (gamma ** (-eta) - 1.0) * prods[h - 1]


def tnb_gamma(mean_runs, eta) -> float:
    """Solve ``E[h] = mean_runs`` for γ ∈ (0, 1) of TNB(ν, γ) (Brent's method, bracketing in log γ).

    ``E[h]`` decreases strictly from ∞ (γ → 0) to 1 (γ → 1), so the root is unique; ``mean_runs``
    must exceed 1.  Geometric (ν = 1) has the closed form γ = 1/E[h], which the tests use.  The
    bracket reaches γ = 1e-300 (needed as ν → -1, where γ ≈ (E[h]/abs(ν))^{-1/(1+ν)}).
    """
    eta = _check_eta(eta)
    mean_runs = float(as_float_array("mean_runs", mean_runs))
    if not mean_runs > 1.0 or not math.isfinite(mean_runs):
        raise ValueError(f"mean_runs must be > 1 for the truncated negative binomial (got {mean_runs!r})")
    target = math.log(mean_runs)
    f = lambda u: float(_log_tnb_mean(eta, u)) - target  # noqa: E731
    lo, hi = math.log(1e-300), -1e-12
    if f(lo) < 0:
        raise ValueError(f"mean_runs={mean_runs!r} is too large for eta={eta!r}: gamma would be below 1e-300")
    if f(hi) > 0:  # mean_runs within ~1e-12 of 1
        raise ValueError(f"mean_runs must be > 1 by more than rounding error (got {mean_runs!r})")
    u = optimize.brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    return math.exp(u)


def poisson_pmf(h, mean_runs):
    """PMF of Poisson(μ) on ``h ∈ {0, 1, ...}`` (P&S Sec. 3.3; ``h = 0`` releases the default ⊥)."""
    mu = float(check_positive("mean_runs", mean_runs))
    hf = np.asarray(h, dtype=float)
    valid = (hf >= 0) & (hf == np.round(hf))
    hs = np.where(valid, hf, 0.0)
    out = np.where(valid, np.exp(hs * math.log(mu) - mu - special.gammaln(hs + 1.0)), 0.0)
    return out.item() if out.ndim == 0 else out


def sample_runs(distribution: str, mean_runs: float, eta: Optional[float] = None, *, size: int = 1,
                rng: Optional[np.random.Generator] = None) -> np.ndarray:
    """Draw numbers of runs ``h``.

    Samplers independent of :func:`tnb_pmf` where possible: ν > 0 draws numpy's negative binomial
    NB(ν, γ) and rejects zeros (TNB is NB conditioned on h ≥ 1); ν = 0 draws numpy's logarithmic
    law with ``p = 1-γ``; ν ∈ (-1, 0) has no such construction and uses inverse-CDF sampling from
    :func:`tnb_pmf`.  ``"poisson"`` draws numpy's Poisson(μ).
    """
    check_choice("distribution", distribution, ("tnb", "poisson"))
    size = int(check_integer_at_least("size", size, 1))
    rng = np.random.default_rng(rng)
    if distribution == "poisson":
        return rng.poisson(float(check_positive("mean_runs", mean_runs)), size=size)
    if eta is None:
        raise ValueError("eta is required for distribution='tnb' (a float in (-1, inf))")
    eta = _check_eta(eta)
    gamma = tnb_gamma(mean_runs, eta)
    if eta > 0:
        out = np.empty(0, dtype=np.int64)
        while out.size < size:
            draw = rng.negative_binomial(eta, gamma, size=2 * (size - out.size) + 16)
            out = np.concatenate([out, draw[draw >= 1]])
        return out[:size]
    if eta == 0:
        return rng.logseries(1.0 - gamma, size=size)
    # inverse CDF on a support long enough that the tail mass is < 1e-14
    hmax = int(np.ceil(40.0 / gamma)) + 10
    support = np.arange(1, hmax + 1)
    cdf = np.cumsum(tnb_pmf(support, eta, gamma))
    return support[np.minimum(np.searchsorted(cdf, rng.random(size) * cdf[-1]), hmax - 1)]


def runs_pmf(distribution: str, mean_runs: float, eta: Optional[float] = None, *, tail: float = 1e-15) -> np.ndarray:
    """``P(h)`` on ``h = 0, 1, ..., H`` for TNB(ν, γ(E[h])) or Poisson(E[h]), with H the first h beyond which the
    remaining mass is below ``tail`` (TNB puts no mass on 0)."""
    check_choice("distribution", distribution, ("tnb", "poisson"))
    if distribution == "tnb":
        if eta is None:
            raise ValueError("eta is required for distribution='tnb' (a float in (-1, inf))")
        eta = _check_eta(eta)
        gamma = tnb_gamma(mean_runs, eta)
        hmax = int(np.ceil((40.0 + 5 * max(eta, 0.0)) / gamma)) + 10
        p = np.concatenate([[0.0], tnb_pmf(np.arange(1, hmax + 1), eta, gamma)])
    else:
        mu = float(check_positive("mean_runs", mean_runs))
        hmax = int(np.ceil(mu + 20 * math.sqrt(mu) + 40))
        p = poisson_pmf(np.arange(hmax + 1), mu)
    cut = int(np.searchsorted(np.cumsum(p), 1.0 - tail)) + 1
    return p[: max(cut, 2)]


def expected_best_of_runs(values, pmf_h, *, none_value: Optional[float] = None) -> float:
    """Expected released value of "run h candidates, release the best (smallest)", averaged over h and the draws.

    ``values``: the candidates' outcomes on an equally likely grid (e.g. the error at λ on a uniform grid in log λ:
    λ drawn log-uniform); each run draws one of them uniformly and independently, and the selection is noise-free
    (the smallest is released).  ``pmf_h[h]`` = P(h runs).  For ``h = 0`` (Poisson) the default output ⊥ is
    released, worth ``none_value`` (required when ``pmf_h[0] > 0``).  With N sorted values ``e_(1) ≤ ... ≤ e_(N)``,
    ``P(min = e_(j)) = (1 − (j−1)/N)^h − (1 − j/N)^h``.
    """
    e = np.sort(as_float_array("values", values).ravel())
    p = as_float_array("pmf_h", pmf_h).ravel()
    if e.size < 1 or not np.isfinite(e).all():
        raise ValueError("values must hold at least one finite candidate value")
    if (p < 0).any() or abs(p.sum() - 1.0) > 1e-9:
        raise ValueError(f"pmf_h must be a probability vector on h = 0, 1, ... (sum {p.sum()!r})")
    if p[0] > 0 and none_value is None:
        raise ValueError("none_value is required when pmf_h[0] > 0 (the value of the default output for h = 0)")
    N = e.size
    surv = 1.0 - np.arange(N + 1) / N                   # P(one draw is not among the j smallest), j = 0..N
    h = np.arange(p.size)[:, None]
    keep = p > 0
    w = surv[None, :-1] ** h[keep] - surv[None, 1:] ** h[keep]     # (h, N): P(min = e_(j) | h)
    out = float(p[keep][h[keep, 0] > 0] @ (w[h[keep, 0] > 0] @ e))
    return out + (float(p[0]) * float(none_value) if p[0] > 0 else 0.0)


def expected_released_value(values, distribution: str, mean_runs: float, eta: Optional[float] = None, *,
                            none_value: Optional[float] = None) -> float:
    """:func:`expected_best_of_runs` for TNB(ν, γ(E[h])) or Poisson(E[h]) through the law's probability generating
    function G: ``Σ_j e_(j)·[G(1 − (j−1)/N) − G(1 − j/N)]`` (+ ``P(h = 0)·none_value`` for Poisson), in O(N)."""
    check_choice("distribution", distribution, ("tnb", "poisson"))
    if distribution == "tnb":
        if eta is None:
            raise ValueError("eta is required for distribution='tnb' (a float in (-1, inf))")
        eta = _check_eta(eta)
    mean_runs = float(check_positive("mean_runs", mean_runs))
    e = np.sort(as_float_array("values", values).ravel())
    if e.size < 1 or not np.isfinite(e).all():
        raise ValueError("values must hold at least one finite candidate value")
    p0 = math.exp(-mean_runs) if distribution == "poisson" else 0.0
    if p0 > 0 and none_value is None:
        raise ValueError("none_value is required for distribution='poisson' (the value of the default output, h = 0)")
    G = _pgf(1.0 - np.arange(e.size + 1) / e.size, distribution, mean_runs, eta)
    return float(-np.diff(G) @ e) + (p0 * float(none_value) if p0 > 0 else 0.0)


# ----------------------------------------------------------------------------------------------------
# RDP of the tuned procedure (Theorem F.2 and P&S Theorem 6)
# ----------------------------------------------------------------------------------------------------

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
    as explained in the module docstring, γ solves ``E[h] = mean_runs`` (:func:`tnb_gamma`), and
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
    profile, e.g. the exact one of :func:`base_delta`, for the tighter bound.  ``monotone`` as in
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


# ----------------------------------------------------------------------------------------------------
# Forward (ε) and inverse (noise multiplier) calibration of the tuned procedure
# ----------------------------------------------------------------------------------------------------

def _check_mechanism(mechanism: str, sample_rate, steps):
    check_choice("mechanism", mechanism, MECHANISMS)
    if mechanism == "gaussian":
        return 1.0, 1
    if sample_rate is None or steps is None:
        raise ValueError("mechanism='dpsgd' needs sample_rate (in (0, 1]) and steps (an integer >= 1)")
    q = float(as_float_array("sample_rate", sample_rate))
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sample_rate must lie in (0, 1] (got {q!r})")
    return q, int(check_integer_at_least("steps", steps, 1))


def _default_orders(mechanism: str) -> np.ndarray:
    """:data:`TUNING_ORDERS` for the one-shot Gaussian; the book-wide ``DEFAULT_ORDERS`` for DP-SGD
    (subsampled-Gaussian curves at orders in the thousands are slow and never optimal there)."""
    if mechanism == "dpsgd":
        return np.asarray(DEFAULT_ORDERS, dtype=float)
    return TUNING_ORDERS


def base_rdp(noise_multiplier: float, *, mechanism: str = "gaussian", sample_rate: Optional[float] = None,
             steps: Optional[int] = None, orders=None) -> np.ndarray:
    """RDP curve of one run of the base mechanism on ``orders``.

    Default orders: :data:`TUNING_ORDERS` for ``"gaussian"``, :data:`fedtheory.privacy.rdp.DEFAULT_ORDERS`
    for ``"dpsgd"``.

    ``"gaussian"``: one Gaussian release with noise multiplier z (RDP α/(2z²)); ``"dpsgd"``: ``steps``
    Poisson-subsampled Gaussian steps at ``sample_rate`` (add/remove adjacency), both via
    :func:`fedtheory.privacy.rdp.subsampled_gaussian_rdp`.
    """
    z = float(check_positive("noise_multiplier", noise_multiplier))
    q, t = _check_mechanism(mechanism, sample_rate, steps)
    orders = TUNING_ORDERS if orders is None else as_float_array("orders", orders).ravel()
    # the numpy backend is fedtheory's vectorised evaluation of Opacus's formula (cross-checked against
    # Opacus in tests/privacy/test_privacy_accounting.py); ~100x faster, which the bisections below need.
    return np.asarray(subsampled_gaussian_rdp(orders, z, q, t, backend="numpy"), dtype=float)


def _dpsgd_pld(noise_multiplier: float, sample_rate: float, steps: int):
    """``dp_accounting`` PLD accountant holding ``steps`` Poisson-subsampled Gaussian steps (add/remove)."""
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant as pa

    acc = pa.PLDAccountant()
    acc.compose(dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(sample_rate, dp_event.GaussianDpEvent(noise_multiplier)), steps))
    return acc


def base_delta(eps_hat, noise_multiplier: float, *, mechanism: str = "gaussian", sample_rate: Optional[float] = None,
               steps: Optional[int] = None):
    """Privacy profile δ(ε̂) of one run of the base mechanism, as tight as known; vectorised over ``eps_hat``.

    ``"gaussian"``: exact, Balle & Wang 2018 Thm 8 (:func:`fedtheory.privacy.gaussian.gaussian_delta`).
    ``"dpsgd"``: ``dp_accounting``'s PLD accountant (pessimistic discretisation, so an upper bound on the
    exact δ; add/remove adjacency).  This is the δ̂ that P&S Thm 6 accepts (:func:`poisson_rdp`).
    """
    z = float(check_positive("noise_multiplier", noise_multiplier))
    q, t = _check_mechanism(mechanism, sample_rate, steps)
    eps_hat = as_float_array("eps_hat", eps_hat)
    if (eps_hat < 0).any():
        raise ValueError(f"eps_hat must be >= 0 (got {eps_hat.min()!r})")
    if mechanism == "gaussian":
        out = np.asarray(gaussian_delta(eps_hat, z), dtype=float)
    else:
        acc = _dpsgd_pld(z, q, t)
        out = np.vectorize(lambda e: float(acc.get_delta(float(e))))(eps_hat)
    out = np.minimum(out, 1.0)
    return out.item() if out.ndim == 0 else out


def _check_bound(bound: str) -> str:
    return check_choice("bound", bound, BOUNDS)


def _tuned_curve(noise_multiplier, distribution, mean_runs, eta, mechanism, sample_rate, steps, orders, bound):
    """(orders, tuned RDP curve) as :func:`tuned_epsilon` converts it (``bound`` as there)."""
    orders = _default_orders(mechanism) if orders is None else as_float_array("orders", orders).ravel()
    delta_hat = None
    if bound == "tight":
        if distribution == "tnb" and mechanism == "gaussian" and eta is not None:
            orders = np.unique(np.append(orders, gaussian_alpha_hat(noise_multiplier, eta, mean_runs)))
        if distribution == "poisson":
            delta_hat = lambda e: base_delta(e, noise_multiplier, mechanism=mechanism,  # noqa: E731
                                             sample_rate=sample_rate, steps=steps)
    rdp = base_rdp(noise_multiplier, mechanism=mechanism, sample_rate=sample_rate, steps=steps, orders=orders)
    return orders, tuned_rdp(orders, rdp, distribution, mean_runs, eta, delta_hat=delta_hat)


def tuned_epsilon(noise_multiplier: float, delta: float, distribution: str, mean_runs: Optional[float] = None,
                  eta: Optional[float] = None, *, mechanism: str = "gaussian", sample_rate: Optional[float] = None,
                  steps: Optional[int] = None, orders=None, bound: str = "tight") -> float:
    """ε of the whole tuned procedure (best of ``h`` runs of the base mechanism) at ``delta``.

    Parameters
    ----------
    noise_multiplier
        z of the base mechanism (noise std = z × L2 sensitivity).
    delta
        target δ ∈ (0, 1).
    distribution
        ``"tnb"`` (needs ``eta`` > -1), ``"poisson"``, or ``"none"`` (one run, no tuning).
    mean_runs
        E[h] (> 1 for TNB, > 0 for Poisson); ignored for ``"none"``.
    mechanism, sample_rate, steps, orders
        the base mechanism, see :func:`base_rdp`.
    bound
        ``"tight"`` (default) or ``"rdp"``, see the module docstring (:data:`BOUNDS`).

    Notes
    -----
    Composition: RDP of the base mechanism → Thm F.2 / P&S Thm 6 → Lemma A.2 conversion
    (:func:`fedtheory.privacy.rdp.rdp_to_epsilon`, ``conversion="improved"``).  With ``bound="tight"``
    the untuned ε is the exact one (analytic Gaussian / PLD), the Poisson δ̂ is the exact profile and,
    for the Gaussian, TNB's α̂ is the continuous optimum.
    """
    delta = float(check_open_interval("delta", delta, 0.0, 1.0))
    bound = _check_bound(bound)
    check_choice("distribution", distribution, DISTRIBUTIONS)
    if bound == "tight" and distribution == "none":
        z = float(check_positive("noise_multiplier", noise_multiplier))
        q, t = _check_mechanism(mechanism, sample_rate, steps)
        if mechanism == "gaussian":
            return float(gaussian_epsilon(z, delta))
        return float(get_accountant("pld").epsilon(dpsgd_event(z, q, t), delta))
    orders, curve = _tuned_curve(noise_multiplier, distribution, mean_runs, eta, mechanism, sample_rate, steps,
                                 orders, bound)
    finite = np.isfinite(curve)
    eps, _ = rdp_to_epsilon(orders[finite], curve[finite], delta, conversion="improved")
    return float(eps)


def tuned_noise_multiplier(target_eps: float, delta: float, distribution: str, mean_runs: Optional[float] = None,
                           eta: Optional[float] = None, *, mechanism: str = "gaussian",
                           sample_rate: Optional[float] = None, steps: Optional[int] = None, orders=None,
                           rtol: float = 1e-7, bound: str = "tight") -> float:
    """Smallest noise multiplier z (up to ``rtol``) such that the tuned procedure is (target_eps, δ)-DP.

    Same parameters as :func:`tuned_epsilon` (``bound="tight"`` by default).  ε(z) is non-increasing in z
    (every term of the bounds is), so :func:`fedtheory.privacy.calibration.calibrate` (bracketing, Brent on
    log z, one-sided stop; deterministic) on the event ``z ↦ RdpCurveDpEvent(tuned curve)`` returns a point
    at most ``rtol`` above the root whose ε is *verified* ≤ target, hence ``tuned_epsilon(result, ...) <=
    target_eps`` is guaranteed (and asserted).  Untuned with ``bound="tight"``: the analytic Gaussian
    (``"gaussian"``) or ``calibrate`` with the PLD accountant (``"dpsgd"``).  Noise std of the
    base mechanism = ``z × sensitivity`` (e.g. the clip bound c for MR-MTL's mean estimation).
    """
    target = float(check_positive("target_eps", target_eps))
    rtol = float(check_positive("rtol", rtol))
    f = lambda z: tuned_epsilon(z, delta, distribution, mean_runs, eta, mechanism=mechanism,  # noqa: E731
                                sample_rate=sample_rate, steps=steps, orders=orders, bound=bound)
    # the one calibration of the book (fedtheory.privacy.calibration.calibrate) on the tuned RDP curve
    bound = _check_bound(bound)
    check_choice("distribution", distribution, DISTRIBUTIONS)
    if bound == "tight" and distribution == "none":
        q, t = _check_mechanism(mechanism, sample_rate, steps)
        if mechanism == "gaussian":
            hi = float(analytic_gaussian_sigma(target, delta))
            while f(hi) > target:  # gaussian_epsilon's own root-finding may sit 1e-12 above: step up
                hi *= 1.0 + 1e-12
        else:
            hi = calibrate(lambda z: dpsgd_event(z, q, t), target, delta, "pld", rtol=min(rtol, 1e-3))
    else:
        event = lambda z: rdp_curve_event(*_tuned_curve(z, distribution, mean_runs, eta, mechanism,  # noqa: E731
                                                        sample_rate, steps, orders, bound))
        hi = calibrate(event, target, delta, "rdp", rtol=min(rtol, 1e-3))
    assert f(hi) <= target
    return hi


@dataclass(frozen=True)
class TunedCalibration:
    """One row of :func:`calibration_table`."""

    label: str
    distribution: str
    eta: Optional[float]
    gamma: Optional[float]
    p_one_run: Optional[float]
    noise_multiplier: float
    ratio_to_untuned: float
    epsilon: float


def calibration_table(target_eps: float, delta: float, mean_runs: float, etas=(-0.5, 0.0, 0.5, 1.0, 2.0, 5.0),
                      *, poisson: bool = True, mechanism: str = "gaussian", sample_rate: Optional[float] = None,
                      steps: Optional[int] = None, orders=None, bound: str = "tight") -> list[TunedCalibration]:
    """Noise multipliers untuned vs tuned (TNB for each ν, then Poisson), each re-checked by :func:`tuned_epsilon`
    (same ``bound`` for every row)."""
    kw = dict(mechanism=mechanism, sample_rate=sample_rate, steps=steps, orders=orders, bound=bound)
    z0 = tuned_noise_multiplier(target_eps, delta, "none", **kw)
    rows = [TunedCalibration("untuned", "none", None, None, 1.0, z0, 1.0,
                             tuned_epsilon(z0, delta, "none", **kw))]
    for eta in etas:
        z = tuned_noise_multiplier(target_eps, delta, "tnb", mean_runs, eta, **kw)
        g = tnb_gamma(mean_runs, eta)
        rows.append(TunedCalibration(f"TNB eta={eta:g}", "tnb", float(eta), g, float(tnb_pmf(1, eta, g)), z, z / z0,
                                     tuned_epsilon(z, delta, "tnb", mean_runs, eta, **kw)))
    if poisson:
        z = tuned_noise_multiplier(target_eps, delta, "poisson", mean_runs, **kw)
        rows.append(TunedCalibration(f"Poisson mu={mean_runs:g}", "poisson", None, None,
                                     float(poisson_pmf(1, mean_runs)), z, z / z0,
                                     tuned_epsilon(z, delta, "poisson", mean_runs, **kw)))
    return rows


# ----------------------------------------------------------------------------------------------------
# Exact RDP of best-of-h for a finite-output base mechanism (an independent check of the bounds)
# ----------------------------------------------------------------------------------------------------

def _pgf(x, distribution: str, mean_runs: float, eta: Optional[float]):
    """Probability generating function E[x^h] (for Poisson, of h on {0, 1, ...})."""
    x = np.asarray(x, dtype=float)
    if distribution == "poisson":
        return np.exp(mean_runs * (x - 1.0))
    gamma = tnb_gamma(mean_runs, eta)
    if eta == 0.0:
        return np.log1p(-(1.0 - gamma) * x) / math.log(gamma)
    return np.expm1(-eta * np.log1p(-(1.0 - gamma) * x)) / math.expm1(-eta * math.log(gamma))


def exact_tuned_rdp(p, q, orders, distribution: str, mean_runs: float, eta: Optional[float] = None) -> np.ndarray:
    """Exact Rényi divergences (max of both directions) between the outputs of best-of-h on two inputs.

    The base mechanism has finitely many outputs, listed from worst to best quality, with
    probabilities ``p`` (input D) and ``q`` (input D').  Best-of-h outputs the maximum of h i.i.d.
    draws, so ``P(out ≤ y) = E[F(y)^h]``, the pgf of h at the CDF F; under Poisson, ``h = 0`` yields an
    extra output ⊥ with probability ``e^{-μ}`` on both inputs.  Comparing this exact value with
    :func:`tuned_rdp` applied to the base pair's exact divergences tests Thm F.2 / Thm 6
    independently of their proofs.
    """
    check_choice("distribution", distribution, ("tnb", "poisson"))
    p = as_float_array("p", p).ravel()
    q = as_float_array("q", q).ravel()
    if p.shape != q.shape or (p <= 0).any() or (q <= 0).any():
        raise ValueError("p and q must be positive probability vectors of the same length")
    p, q = p / p.sum(), q / q.sum()
    eta = None if distribution == "poisson" else _check_eta(eta)

    def out_dist(r):
        cdf = np.concatenate([[0.0], np.cumsum(r)])
        cdf[-1] = 1.0
        g = _pgf(cdf, distribution, float(mean_runs), eta)
        probs = np.diff(g)
        if distribution == "poisson":
            probs = np.concatenate([[g[0]], probs])  # g[0] = P(h = 0) = e^{-μ}: the output ⊥
        return probs

    return finite_rdp(out_dist(p), out_dist(q), orders)


def finite_rdp(p, q, orders) -> np.ndarray:
    """max(D_α(p‖q), D_α(q‖p)) for finite distributions (D_1 = KL), vectorised over orders."""
    orders = as_float_array("orders", orders).ravel()

    def d(a, b):
        out = np.empty(orders.shape)
        for i, al in enumerate(orders):
            if al == 1.0:
                out[i] = float(np.sum(a * (np.log(a) - np.log(b))))
            else:
                out[i] = special.logsumexp(al * np.log(a) + (1 - al) * np.log(b)) / (al - 1)
        return out

    return np.maximum(d(p, q), d(q, p))


# ----------------------------------------------------------------------------------------------------
# Prop. F.1 (P&S Prop. 17): with h fixed, best-of-h can cost h-fold composition
# ----------------------------------------------------------------------------------------------------

def fixed_h_lower_bound(eps, order, h):
    """Printed Prop. F.1 lower bound ``ε̂(α) = hε − h log(1 + e^{−ε})/(α − 1)`` on the RDP of best-of-h (fixed h)."""
    eps = check_positive("eps", eps)
    order = as_float_array("order", order)
    if (order <= 1).any():
        raise ValueError(f"order must be > 1 (got {order.min()!r})")
    h = check_integer_at_least("h", h, 1)
    out = h * eps - h * np.log1p(np.exp(-eps)) / (order - 1.0)
    return out.item() if np.ndim(out) == 0 else out


def fixed_h_example(eps: float, h: int) -> tuple[np.ndarray, np.ndarray]:
    """The (ε, 0)-DP base mechanism behind Prop. F.1, and its best-of-h output laws (worst output first).

    Base M: two outputs, "bad" (0) and "good" (1), with ``P_D(0) = 1/(1+e^{−ε})``, ``P_D'(0) = e^{−ε}/(1+e^{−ε})``
    (likelihood ratios e^{±ε}: exactly ε-DP).  Best-of-h outputs 0 only if all h runs do, so
    ``P(0) = P_M(0)^h`` on each input: the ratio is e^{hε}, i.e. no better than hε-DP, and the Rényi divergence
    at order α is at least the contribution of that output, which is exactly :func:`fixed_h_lower_bound`.
    Returns ``(p, q)``: best-of-h output laws on D and D' (outputs 0, 1).
    """
    eps = float(check_positive("eps", eps))
    h = int(check_integer_at_least("h", h, 1))
    p0 = 1.0 / (1.0 + math.exp(-eps))
    q0 = math.exp(-eps) / (1.0 + math.exp(-eps))
    return np.array([p0**h, 1.0 - p0**h]), np.array([q0**h, 1.0 - q0**h])
