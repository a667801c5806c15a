"""Skellam (discrete) noise for secure aggregation, computed rather than assumed Gaussian.

Secure aggregation sums integers in a finite ring, so the noise must be discrete.  The Skellam law
``Sk(μ) = Poisson(μ/2) − Poisson(μ/2)`` (variance μ) is closed under sums, like the Gaussian, so per-client
shares add up to the total noise.  Agarwal, Kairouz & Liu (2021, Thm 3.5; the bound the SecAgg paper's code
uses, notes A8): for an integer-valued query with L2 sensitivity Δ₂ and L1 sensitivity Δ₁, adding Sk(μ) per
coordinate is (α, ε(α))-RDP with

    ε(α) = αΔ₂²/(2μ) + min( ((2α − 1)Δ₂² + 6Δ₁)/(4μ²),  3Δ₁/(2μ) ).

Real-valued updates (L2 norm ≤ C) are scaled by ``s`` and rounded to integers first, with noise variance
``μ = s²(Cz)²`` for a Gaussian-equivalent noise multiplier z.  The sensitivities of the integer query
(:func:`skellam_rdp`):

* **Δ₂**: rounding inflates the scaled norm ``c = sC``.  Conditional randomized rounding (Kairouz, Liu & Steinke
  2021, the rounding of the Skellam paper) resamples until ``‖x̃‖₂ ≤ c̃`` with
  ``c̃² = min(c² + d/4 + √(2 ln(1/β))·(c + √d/2), (c + √d)²)`` (:func:`rounded_l2_bound`; β = e^{−0.5} as in their
  code, the chance that one rounding attempt exceeds it), so Δ₂ = c̃ (relative inflation about
  ``√(2 ln(1/β))/(2c)``: 5e-8 at c = 10⁷ with d = 10250).  ``rounding="none"`` keeps Δ₂ = c (an integer query).
* **Δ₁**: an integer vector with ``‖v‖₂ ≤ Δ₂`` has ``‖v‖₁ ≤ Δ₂·min(√d, Δ₂)`` (Cauchy–Schwarz, and ``|v_i| ≤ v_i²`` for
  integers; :func:`integer_l1_bound`).  The paper's code uses ``sC·min(√d, C)``, which understates it for s > 1
  (the min must be taken in the scaled, integer domain).

The first term of ε(α) is then the Gaussian's α/(2z²) times ``(c̃/c)²``, and the rest vanish as s grows.
:func:`skellam_exact_rdp` computes the exact Rényi divergence of a 1-d shifted Skellam from its pmf, an
independent check that the bound holds and how loose it is.
"""
from __future__ import annotations

import numpy as np
from scipy import special, stats

from fedtheory.validation import as_float_array, check_integer_at_least, check_positive
from fedtheory.validation import check_choice

__all__ = ["ROUNDINGS", "skellam_rdp_integer", "rounded_l2_bound", "integer_l1_bound", "skellam_rdp",
           "skellam_exact_rdp"]

ROUNDINGS = ("conditional", "none")
#: β of conditional randomized rounding in the Skellam / distributed discrete Gaussian code.
DEFAULT_BETA = float(np.exp(-0.5))


def skellam_rdp_integer(orders, mu: float, l2_sensitivity: float, l1_sensitivity: float) -> np.ndarray:
    """Agarwal–Kairouz–Liu RDP bound of Sk(μ) noise on an integer query (formula in the module docstring)."""
    a = as_float_array("orders", orders)
    if (a <= 1).any():
        raise ValueError(f"orders must be > 1 (got {a.min()!r})")
    mu = float(check_positive("mu", mu))
    d2 = float(check_positive("l2_sensitivity", l2_sensitivity))
    d1 = float(check_positive("l1_sensitivity", l1_sensitivity))
    return a * d2**2 / (2 * mu) + np.minimum(((2 * a - 1) * d2**2 + 6 * d1) / (4 * mu**2), 3 * d1 / (2 * mu))


def rounded_l2_bound(l2: float, dim: int, beta: float = DEFAULT_BETA) -> float:
    """``c̃ = sqrt(min(c² + d/4 + √(2 ln(1/β))(c + √d/2), (c + √d)²))``: the L2 norm that conditional randomized
    rounding of a vector with ``‖x‖₂ ≤ c`` in ``d`` dimensions guarantees (it resamples above it)."""
    c = float(check_positive("l2", l2))
    d = int(check_integer_at_least("dim", dim, 1))
    beta = float(beta)
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must lie in (0, 1) (got {beta!r})")
    return float(np.sqrt(min(c * c + d / 4 + np.sqrt(2 * np.log(1 / beta)) * (c + np.sqrt(d) / 2),
                             (c + np.sqrt(d)) ** 2)))


def integer_l1_bound(l2: float, dim: int) -> float:
    """Largest ``‖v‖₁`` of an integer vector with ``‖v‖₂ ≤ l2`` in ``dim`` dimensions, bounded by
    ``l2·min(√dim, l2)`` (Cauchy–Schwarz; ``|v_i| ≤ v_i²`` for integers)."""
    c = float(check_positive("l2", l2))
    d = int(check_integer_at_least("dim", dim, 1))
    return c * min(np.sqrt(d), c)


def skellam_rdp(orders, noise_multiplier: float, clip: float, dim: int, scale: float, *,
                rounding: str = "conditional", beta: float = DEFAULT_BETA) -> np.ndarray:
    """RDP of the scaled-and-rounded Skellam mechanism with Gaussian-equivalent multiplier z: noise variance
    ``μ = (s·C·z)²``, Δ₂ = :func:`rounded_l2_bound` of ``sC`` (``rounding="none"``: ``sC``), Δ₁ =
    :func:`integer_l1_bound` of Δ₂ (module docstring)."""
    z = float(check_positive("noise_multiplier", noise_multiplier))
    c = float(check_positive("clip", clip))
    d = int(check_integer_at_least("dim", dim, 1))
    s = float(check_positive("scale", scale))
    check_choice("rounding", rounding, ROUNDINGS)
    d2 = rounded_l2_bound(s * c, d, beta) if rounding == "conditional" else s * c
    return skellam_rdp_integer(orders, (s * c * z) ** 2, d2, integer_l1_bound(d2, d))


def skellam_exact_rdp(orders, mu: float, shift: int, *, width: float = 60.0) -> np.ndarray:
    """Exact D_α(Sk(μ) + shift ‖ Sk(μ)) from the pmf on ±(width·√μ + shift) (the tails beyond carry < 1e-300)."""
    a = as_float_array("orders", orders)
    mu = float(check_positive("mu", mu))
    shift = int(check_integer_at_least("shift", shift, 1))
    half = int(np.ceil(width * np.sqrt(mu) + width + shift))
    k = np.arange(-half, half + 1)
    law = stats.skellam(mu / 2, mu / 2)
    lp = law.logpmf(k - shift)
    lq = law.logpmf(k)
    ok = np.isfinite(lp) & np.isfinite(lq)
    return np.array([special.logsumexp(al * lp[ok] + (1 - al) * lq[ok]) / (al - 1) for al in a.ravel()])
