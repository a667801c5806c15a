"""Skellam (discrete) noise for secure aggregation, computed rather than assumed Gaussian.

Secure aggregation sums integers in a finite ring, so the noise must be discrete.  The Skellam law
``Sk(μ) = Poisson(μ/2) − Poisson(μ/2)`` (variance μ) is closed under sums, like the Gaussian, so per-client
shares add up to the total noise.  Agarwal, Kairouz & Liu (2021, Thm 3.5; the bound the SecAgg paper's code
uses, notes A8): for an integer-valued query with L2 sensitivity Δ₂ and L1 sensitivity Δ₁, adding Sk(μ) per
coordinate is (α, ε(α))-RDP with

    ε(α) = αΔ₂²/(2μ) + min( ((2α − 1)Δ₂² + 6Δ₁)/(4μ²),  3Δ₁/(2μ) ).

Real-valued updates are scaled by ``s`` and rounded first: Δ₂ → sC, μ → s²(Cz)² for a Gaussian-equivalent
noise multiplier z, Δ₁ → s·C·min(√d, C) (the code's choice); the first term is then the Gaussian's α/(2z²) and
the rest vanish as s grows (:func:`skellam_rdp`).  :func:`skellam_exact_rdp` computes the exact Rényi divergence
of a 1-d shifted Skellam from its pmf, an independent check that the bound holds and how loose it is.
"""
from __future__ import annotations

import numpy as np
from scipy import special, stats

from fedtheory._validation import as_float_array, check_integer_at_least, check_positive

__all__ = ["skellam_rdp_integer", "skellam_rdp", "skellam_exact_rdp"]


def skellam_rdp_integer(orders, mu: float, l2_sensitivity: float, l1_sensitivity: float) -> np.ndarray:
    """Agarwal–Kairouz–Liu RDP bound of Sk(μ) noise on an integer query (formula in the module docstring)."""
    a = as_float_array("orders", orders)
    if (a <= 1).any():
        raise ValueError(f"orders must be > 1 (got {a.min()!r})")
    mu = float(check_positive("mu", mu))
    d2 = float(check_positive("l2_sensitivity", l2_sensitivity))
    d1 = float(check_positive("l1_sensitivity", l1_sensitivity))
    return a * d2**2 / (2 * mu) + np.minimum(((2 * a - 1) * d2**2 + 6 * d1) / (4 * mu**2), 3 * d1 / (2 * mu))


def skellam_rdp(orders, noise_multiplier: float, clip: float, dim: int, scale: float) -> np.ndarray:
    """RDP of the scaled-and-rounded Skellam mechanism with Gaussian-equivalent multiplier z (see module)."""
    z = float(check_positive("noise_multiplier", noise_multiplier))
    c = float(check_positive("clip", clip))
    d = int(check_integer_at_least("dim", dim, 1))
    s = float(check_positive("scale", scale))
    return skellam_rdp_integer(orders, (s * c * z) ** 2, s * c, s * c * min(np.sqrt(d), c))


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
