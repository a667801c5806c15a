"""The number of runs ``h`` of a privately tuned procedure, and the value it releases (MR-MTL paper App. F;
Papernot & Steinke 2022).

Two laws for ``h`` (:data:`DISTRIBUTIONS`): the truncated negative binomial ``TNB(ν, γ)`` on ``h ∈ {1, 2, ...}``
(``ν ∈ (-1, ∞)``, ``γ ∈ (0, 1)``; ν = 0 logarithmic, ν = 1 geometric; the MR-MTL paper's "ν > 1" is a typo for
ν > -1, see :func:`tnb_formula_values`) and ``Poisson(μ)`` on ``h ∈ {0, 1, ...}`` (``h = 0`` releases a fixed
default output ⊥): their pmfs, means, samplers and probability generating functions, and the expected value of
"run h candidates, release the best" under each law.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
from scipy import optimize, special

from fedtheory.validation import (as_float_array, check_choice, check_integer_at_least, check_open_interval,
                                  check_positive)

__all__ = [
    "DISTRIBUTIONS",
    "tnb_pmf",
    "tnb_mean",
    "tnb_gamma",
    "tnb_formula_values",
    "poisson_pmf",
    "sample_runs",
    "runs_pmf",
    "expected_best_of_runs",
    "expected_released_value",
]

#: Laws for the number of runs ``h``; ``"none"`` means a single run (no tuning, ``h ≡ 1``).
DISTRIBUTIONS = ("tnb", "poisson", "none")


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


def _pgf(x, distribution: str, mean_runs: float, eta: Optional[float]):
    """Probability generating function E[x^h] (for Poisson, of h on {0, 1, ...})."""
    x = np.asarray(x, dtype=float)
    if distribution == "poisson":
        return np.exp(mean_runs * (x - 1.0))
    gamma = tnb_gamma(mean_runs, eta)
    if eta == 0.0:
        return np.log1p(-(1.0 - gamma) * x) / math.log(gamma)
    return np.expm1(-eta * np.log1p(-(1.0 - gamma) * x)) / math.expm1(-eta * math.log(gamma))
