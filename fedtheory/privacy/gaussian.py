"""The Gaussian mechanism: classic, analytic (exact) and RDP calibrations, and its RDP curve.

Releasing ``f(D) + N(0, σ²)`` for a query of L2 sensitivity Δ (add/remove or replace adjacency: Δ is
whatever the adjacency makes it; under replace-one a clipped *sum* has Δ = 2c, under add/remove Δ = c).

* Classic calibration (Dwork & Roth 2014, Theorem A.1): ``σ = Δ·sqrt(2 ln(1.25/δ))/ε`` is (ε, δ)-DP for
  ε ∈ (0, 1).  The MR-MTL paper (Sec. 6) uses it for every ε in its figures, including ε ≥ 1, where the
  theorem does not guarantee it; for ε ≥ 1 use the exact (analytic) calibration or RDP accounting.
* Exact privacy profile (Balle & Wang 2018, Thm 8): the mechanism is (ε, δ)-DP iff
  ``δ ≥ Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)`` (:func:`gaussian_delta`); the analytic Gaussian
  mechanism is the smallest σ meeting it (:func:`analytic_gaussian_sigma`).
* RDP: ``(α, αΔ²/(2σ²))``-RDP for every α > 1 (Mironov 2017, Prop. 7) (:func:`gaussian_rdp`, noise
  multiplier ``z = σ/Δ``), i.e. ``Δ²/(2σ²)``-zCDP.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from fedtheory.validation import (as_float_array, check_choice, check_nonnegative, check_open_interval,
                                   check_positive)
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.events import gaussian_event

__all__ = ["gaussian_sigma", "gaussian_rdp", "gaussian_delta", "gaussian_epsilon", "analytic_gaussian_sigma",
           "rdp_gaussian_sigma", "ADJACENCIES", "clip_rows", "clipped_sum_sensitivity"]

#: Adjacency relations understood by :func:`clipped_sum_sensitivity`.
ADJACENCIES = ("add_remove", "replace")


def gaussian_sigma(eps, delta, sensitivity=1.0):
    """Noise standard deviation of the classic Gaussian mechanism, σ = Δ·sqrt(2 ln(1.25/δ))/ε.

    Vectorized over numpy arrays.  Valid as an (ε, δ)-DP guarantee for 0 < ε < 1 (Dwork & Roth,
    Thm A.1); for ε ≥ 1 it is the formula the MR-MTL paper uses, not a proven guarantee.

    Raises ``ValueError`` for ε ≤ 0, δ outside (0, 1) or sensitivity ≤ 0.

    Examples
    --------
    >>> round(gaussian_sigma(0.25, 1e-5), 3)
    19.379
    >>> gaussian_sigma(0.0, 1e-5)
    Traceback (most recent call last):
    ...
    ValueError: eps must be > 0 (got 0.0)
    """
    eps = check_positive("eps", eps)
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    sensitivity = check_positive("sensitivity", sensitivity)
    out = sensitivity * np.sqrt(2.0 * np.log(1.25 / delta)) / eps
    return out.item() if np.ndim(out) == 0 else out


def gaussian_rdp(orders, noise_multiplier):
    """Exact RDP curve of the Gaussian mechanism, ``ε(α) = α / (2 z²)`` with ``z = σ/Δ`` (Mironov 2017, Prop. 7).

    Vectorised: ``orders`` (> 1) and ``noise_multiplier`` (> 0) broadcast.
    """
    orders = check_positive("orders", orders)
    if (orders <= 1).any():
        raise ValueError(f"orders must be > 1 (got {orders[orders <= 1].ravel()[0]!r})")
    z = check_positive("noise_multiplier", noise_multiplier)
    out = orders / (2.0 * z ** 2)
    return out.item() if np.ndim(out) == 0 else out


def _log_delta(eps: float, z: float) -> float:
    """log δ(ε) of the Gaussian mechanism with noise multiplier z = σ/Δ (Balle & Wang 2018, Thm 8), stable."""
    a = special.log_ndtr(1 / (2 * z) - eps * z)
    b = eps + special.log_ndtr(-1 / (2 * z) - eps * z)
    return a + math.log1p(-math.exp(b - a)) if b < a else -math.inf


def gaussian_delta(eps, sigma, sensitivity=1.0):
    """Exact δ(ε) of the Gaussian mechanism: ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)`` (Balle & Wang 2018, Thm 8).

    Vectorised; ``eps ≥ 0``, ``sigma > 0``.
    """
    eps = check_nonnegative("eps", eps)
    sigma = check_positive("sigma", sigma)
    sensitivity = check_positive("sensitivity", sensitivity)
    z = sigma / sensitivity
    out = np.vectorize(lambda e, zz: math.exp(_log_delta(float(e), float(zz))))(eps, z)
    return out.item() if np.ndim(out) == 0 else out


def gaussian_epsilon(sigma, delta, sensitivity=1.0):
    """Smallest ε with the Gaussian mechanism (ε, δ)-DP: root of :func:`gaussian_delta` in ε.  Vectorised."""
    sigma = check_positive("sigma", sigma)
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    sensitivity = check_positive("sensitivity", sensitivity)

    def one(z: float, d: float) -> float:
        ld = math.log(d)
        if _log_delta(0.0, z) <= ld:
            return 0.0
        hi = 1.0
        while _log_delta(hi, z) > ld:
            hi *= 2
        root = optimize.brentq(lambda e: _log_delta(e, z) - ld, 0.0, hi, xtol=1e-14, rtol=1e-12)
        # one-sided: return an ε whose δ(ε) is certified ≤ δ
        while _log_delta(root, z) > ld:
            root = root * (1 + 1e-12) + 1e-15
        return root

    out = np.vectorize(one)(sigma / sensitivity, delta)
    return out.item() if np.ndim(out) == 0 else out


def analytic_gaussian_sigma(eps, delta, sensitivity=1.0):
    """Analytic Gaussian mechanism (Balle & Wang 2018): the smallest σ with exact δ(ε) ≤ δ.

    Valid for every ε > 0 (unlike :func:`gaussian_sigma`).  Root-finding with ``scipy.optimize.brentq`` on
    the monotone map σ ↦ log δ(ε; σ), then a one-sided step so the returned σ is certified.  Vectorised.
    """
    eps = check_positive("eps", eps)
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    sensitivity = check_positive("sensitivity", sensitivity)

    def one(e: float, d: float) -> float:
        ld = math.log(d)
        f = lambda logz: _log_delta(e, math.exp(logz)) - ld
        lo, hi = -1.0, 1.0
        while f(hi) > 0:
            hi += 1.0
        while f(lo) <= 0:
            lo -= 1.0
        z = math.exp(optimize.brentq(f, lo, hi, xtol=1e-13, rtol=1e-13))
        while f(math.log(z)) > 0:
            z *= 1 + 1e-12
        return z

    out = sensitivity * np.vectorize(one)(eps, delta)
    return out.item() if np.ndim(out) == 0 else out


def rdp_gaussian_sigma(eps, delta, sensitivity=1.0):
    """σ of one Gaussian release calibrated by RDP over ``DEFAULT_ORDERS`` + Lemma A.2 (as MR-MTL's Fig. 7 code).

    ``σ = Δ · calibrate(GaussianDpEvent, eps, delta, "rdp")`` (:func:`fedtheory.privacy.calibration.calibrate`);
    ε guaranteed ≤ target.  Vectorised.
    """
    eps = check_positive("eps", eps)
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    sensitivity = check_positive("sensitivity", sensitivity)
    out = sensitivity * np.vectorize(lambda e, d: calibrate(gaussian_event, float(e), float(d), "rdp"))(eps, delta)
    return out.item() if np.ndim(out) == 0 else out


def clip_rows(records, clip: float) -> np.ndarray:
    """Per-record L2 clipping ``clip_c(x) = x · min(1, c/‖x‖)`` of the rows of a 2-d array (DP-SGD's clipping)."""
    x = as_float_array("records", records)
    if x.ndim != 2:
        raise ValueError(f"records must be a 2-d array (n_records, dim) (got shape {x.shape})")
    c = float(check_positive("clip", clip))
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(1.0, norms / c)


def clipped_sum_sensitivity(records, clip: float, adjacency: str = "add_remove", candidates=None) -> float:
    """Brute-force L2 sensitivity of the clipped sum ``f(x) = Σ_i clip_c(x_i)`` at the dataset ``records``.

    Enumerates every neighbour ``x'`` of ``x`` built from ``records`` (rows) and the candidate new records
    ``candidates`` (rows; default below) and returns ``max ‖f(x) − f(x')‖₂``:

    * ``"add_remove"``: remove any one record, or add any one candidate — the adjacency of Opacus,
      ``dp_accounting`` and every accountant in the book.  The answer is ≤ c, and equals c as soon as
      one record or candidate has norm ≥ c.
    * ``"replace"``: replace any one record by any candidate (MR-MTL Def. 2.1).  The answer is
      ``max_i ‖clip_c(x_i)‖ + c`` when the candidates contain the record pointing opposite to the
      largest one, hence up to 2c: the sensitivity doubles.

    Default candidates: ``±c·e_k`` for every coordinate and ``−c·x_i/‖x_i‖`` for every non-zero record
    (the worst-case replacements).  The result is a lower bound on the global sensitivity over *all*
    candidate records, and equal to it (c, resp. ``max_i ‖clip_c(x_i)‖ + c``) with these defaults.
    Cost O(n·m·d) for n records and m candidates.
    """
    check_choice("adjacency", adjacency, ADJACENCIES)
    c = float(check_positive("clip", clip))
    x = clip_rows(records, c)
    n, d = x.shape
    if candidates is None:
        eye = c * np.eye(d)
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        nz = norms[:, 0] > 0
        cand = np.vstack([eye, -eye, -c * x[nz] / norms[nz]])
    else:
        cand = clip_rows(candidates, c)
        if cand.shape[1] != d:
            raise ValueError(f"candidates must have {d} columns like records (got {cand.shape[1]})")
    if adjacency == "add_remove":
        # f(x) − f(x without x_i) = clip(x_i);  f(x with u added) − f(x) = clip(u)
        changes = np.concatenate([np.linalg.norm(x, axis=1), np.linalg.norm(cand, axis=1)])
    else:
        # f(x) − f(x with x_i replaced by u) = clip(x_i) − clip(u), every (i, u)
        if n == 0:
            raise ValueError("replace adjacency needs at least one record to replace")
        changes = np.linalg.norm(x[:, None, :] - cand[None, :, :], axis=2).ravel()
    return float(changes.max()) if changes.size else 0.0
