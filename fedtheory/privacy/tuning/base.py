"""The base mechanism that a tuned procedure repeats: its RDP curve and its privacy profile δ(ε̂).

Two base mechanisms (:data:`MECHANISMS`): ``"gaussian"``, one release of a sum/mean with L2 sensitivity Δ and
noise std ``z·Δ`` (RDP ``α/(2z²)``; the one-shot mechanism of MR-MTL Sec. 6), and ``"dpsgd"``, ``steps``
Poisson-subsampled Gaussian steps at rate ``sample_rate``.  Adjacency: add/remove one sample (for the one-shot
Gaussian, any adjacency whose L2 sensitivity is Δ).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from fedtheory.validation import as_float_array, check_choice, check_integer_at_least, check_positive
from fedtheory.privacy.gaussian import gaussian_delta
from fedtheory.privacy.rdp import DEFAULT_ORDERS, subsampled_gaussian_rdp

__all__ = ["MECHANISMS", "TUNING_ORDERS", "base_rdp", "base_delta"]

#: Base mechanisms understood by :func:`base_rdp`.
MECHANISMS = ("gaussian", "dpsgd")

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
    exact δ; add/remove adjacency).  This is the δ̂ that P&S Thm 6 accepts (:func:`.poisson_rdp`).
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
