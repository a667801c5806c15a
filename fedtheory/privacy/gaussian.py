"""The Gaussian mechanism.

Classic calibration (Dwork & Roth 2014, Theorem A.1): releasing ``f(D) + N(0, σ²)`` with
``σ = Δ₂ · sqrt(2 ln(1.25/δ)) / ε`` is (ε, δ)-DP for ε ∈ (0, 1).  The MR-MTL paper (Sec. 6) uses it
for every ε in its figures, including ε ≥ 1, where the theorem does not guarantee it; for ε ≥ 1 use
the exact (analytic) calibration or RDP accounting instead.
"""
from __future__ import annotations

import numpy as np

from fedtheory._validation import check_open_interval, check_positive

__all__ = ["gaussian_sigma"]


def gaussian_sigma(eps, delta, sensitivity=1.0):
    """Noise standard deviation of the classic Gaussian mechanism, σ = Δ·sqrt(2 ln(1.25/δ))/ε.

    Vectorized over numpy arrays.  Valid as an (ε, δ)-DP guarantee for 0 < ε < 1 (Dwork & Roth,
    Thm A.1); for ε ≥ 1 it is the formula the MR-MTL paper uses, not a proven guarantee.

    Raises ``ValueError`` for ε ≤ 0, δ outside (0, 1) or sensitivity ≤ 0.
    """
    eps = check_positive("eps", eps)
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    sensitivity = check_positive("sensitivity", sensitivity)
    out = sensitivity * np.sqrt(2.0 * np.log(1.25 / delta)) / eps
    return out.item() if np.ndim(out) == 0 else out
