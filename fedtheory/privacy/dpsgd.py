"""DP-SGD accounting: ε of a run, and the noise multiplier that meets a target ε.

A DP-SGD run is ``steps`` compositions of the Poisson-subsampled Gaussian mechanism (sample rate
``q``, noise std ``noise_multiplier × clip`` on the sum of clipped per-example gradients).  Adjacency
is **add/remove one record** throughout (the notion Opacus and ``dp_accounting`` account for); for
replace-one adjacency the sensitivity is ``2·clip``, i.e. pass half the noise multiplier.

Three accountants, all reporting a *guaranteed upper bound* on ε:

* ``"rdp"`` — RDP of the subsampled Gaussian (Mironov, Talwar & Zhang 2019; Opacus' formula, evaluated
  by :func:`fedtheory.privacy.rdp.subsampled_gaussian_rdp` with its vectorised ``numpy`` backend, which
  tests pin to Opacus) over :data:`~fedtheory.privacy.rdp.DEFAULT_ORDERS`, converted with Lemma A.2
  (the "improved" conversion).  Only this accountant accepts ``extra_rdp``.
* ``"pld"`` — Google ``dp_accounting`` 0.6 privacy-loss-distribution accountant (pessimistic
  discretisation, interval 1e-3): numerically tight.
* ``"prv"`` — Opacus 1.6 PRV accountant (Gopi et al. 2021), its reported *upper* bound
  (``eps_error = 0.01``): tight up to that additive error.

Calibration (:func:`noise_multiplier`) brackets the root of the monotone map σ ↦ ε(σ) and returns a σ
whose ε — computed by the same accountant — is **≤ target** and within ``rtol`` (0.1 %) in σ of the
root, so the achieved ε is typically within 1 % below the target.
"""
from __future__ import annotations

import functools
import math
from typing import Literal

import numpy as np
from scipy import optimize

from fedtheory._validation import (as_float_array, check_choice, check_integer_at_least,
                                   check_nonnegative, check_open_interval, check_positive)
from fedtheory.privacy.rdp import DEFAULT_ORDERS, _rdp_numpy, rdp_to_epsilon

__all__ = ["ACCOUNTANTS", "epsilon", "noise_multiplier"]

ACCOUNTANTS = ("rdp", "pld", "prv")
_RTOL = 1e-3
_SIGMA_MAX = 1e6
_SIGMA_MIN = 1e-3


# ----------------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------------
def _check_common(delta, sample_rate, steps, accountant, extra_rdp):
    delta = float(check_open_interval("delta", delta, 0.0, 1.0))
    q = float(as_float_array("sample_rate", sample_rate))
    if not 0 < q <= 1:
        raise ValueError(f"sample_rate must lie in (0, 1] (got {q!r})")
    steps = int(check_integer_at_least("steps", steps, 0))
    check_choice("accountant", accountant, ACCOUNTANTS)
    if extra_rdp is not None:
        if accountant != "rdp":
            raise ValueError(f"extra_rdp is only supported with accountant='rdp' (got accountant={accountant!r})")
        extra = check_nonnegative("extra_rdp", extra_rdp)
        if extra.shape != DEFAULT_ORDERS.shape:
            raise ValueError(f"extra_rdp must be an array over DEFAULT_ORDERS of shape {DEFAULT_ORDERS.shape} "
                             f"(got shape {extra.shape})")
        extra_rdp = tuple(float(x) for x in extra)
    return delta, q, steps, extra_rdp


# ----------------------------------------------------------------------------------------------------
# the three accountants (scalar, cached)
# ----------------------------------------------------------------------------------------------------
def _eps_rdp_orders(sigma: float, q: float, steps: int, delta: float, extra: np.ndarray | None,
                    idx: np.ndarray) -> tuple[float, int]:
    orders = DEFAULT_ORDERS[idx]
    rdp = steps * _rdp_numpy(q, sigma, orders) if steps else np.zeros(len(idx))
    if extra is not None:
        rdp = rdp + extra[idx]
    eps, order = rdp_to_epsilon(orders, rdp, delta)
    best = int(idx[np.searchsorted(orders, order)]) if np.isfinite(eps) else -1
    return eps, best


@functools.lru_cache(maxsize=65536)
def _eps_cached(sigma: float, delta: float, q: float, steps: int, accountant: str,
                extra: tuple | None) -> float:
    if steps == 0 and extra is None:
        return 0.0
    if sigma == 0 and steps > 0:
        return math.inf
    if accountant == "rdp":
        extra_arr = None if extra is None else np.asarray(extra)
        return _eps_rdp_orders(sigma, q, steps, delta, extra_arr, np.arange(len(DEFAULT_ORDERS)))[0]
    if steps == 0 or math.isinf(sigma):
        return 0.0
    if accountant == "pld":
        import dp_accounting
        from dp_accounting import dp_event
        from dp_accounting.pld import pld_privacy_accountant

        acc = pld_privacy_accountant.PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
                                                   value_discretization_interval=1e-3)
        acc.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
        return float(acc.get_epsilon(delta))
    from opacus.accountants import PRVAccountant

    acc = PRVAccountant()
    acc.history = [(sigma, q, steps)]
    return float(acc.get_epsilon(delta, eps_error=0.01))


def epsilon(noise_multiplier: float, delta: float, sample_rate: float, steps: int,
            accountant: Literal["rdp", "pld", "prv"] = "rdp", extra_rdp=None) -> float:
    """ε spent by ``steps`` DP-SGD steps (Poisson sampling at ``sample_rate``, add/remove adjacency) at ``delta``.

    ``extra_rdp`` (``accountant="rdp"`` only): an RDP curve over :data:`DEFAULT_ORDERS` added before the
    conversion, to compose DP-SGD with other mechanisms (private selections, tuning) under one budget.
    Edge cases: ``steps=0`` → 0 (plus whatever ``extra_rdp`` costs); ``noise_multiplier=inf`` → 0;
    ``noise_multiplier=0`` with ``steps ≥ 1`` → ``inf``.
    """
    sigma = float(check_nonnegative("noise_multiplier", noise_multiplier))
    delta, q, steps, extra = _check_common(delta, sample_rate, steps, accountant, extra_rdp)
    return _eps_cached(sigma, delta, q, steps, accountant, extra)


# ----------------------------------------------------------------------------------------------------
# calibration
# ----------------------------------------------------------------------------------------------------
class _RdpWindow:
    """ε(σ) on a sliding window of orders around the current optimum.

    The minimum over a subset of orders is ≥ the minimum over all of them, so a σ certified by the
    window is also certified by the full grid.  The window slides whenever the optimum sits on its edge,
    so it tracks the (in practice unimodal) optimum; the final σ is re-checked on the full grid.
    """

    def __init__(self, q, steps, delta, extra, half_width=4):
        self.q, self.steps, self.delta, self.half = q, steps, delta, half_width
        self.extra = None if extra is None else np.asarray(extra)
        self.best = None

    def __call__(self, sigma: float) -> float:
        n = len(DEFAULT_ORDERS)
        if self.best is None or self.best < 0:
            # coarse start: every 8th order plus the last
            idx = np.unique(np.r_[np.arange(0, n, 8), n - 1])
            _, self.best = _eps_rdp_orders(sigma, self.q, self.steps, self.delta, self.extra, idx)
            if self.best < 0:
                return math.inf
        while True:
            lo, hi = max(0, self.best - self.half), min(n, self.best + self.half + 1)
            eps, best = _eps_rdp_orders(sigma, self.q, self.steps, self.delta, self.extra, np.arange(lo, hi))
            if best < 0:
                return math.inf
            moved = best != self.best
            self.best = best
            if not moved or (best != lo and best != hi - 1) or best in (0, n - 1):
                return eps


def _search(eps_fn, target: float, guess: float, step: float = 2.0) -> float:
    """σ with eps_fn(σ) ≤ target within ``_RTOL`` of the root: bracket, Brent on log σ, one-sided stop."""
    hi, lo = guess, None
    e = eps_fn(hi)
    if e > target:  # walk up until certified
        while e > target:
            lo, hi = hi, hi * step
            step *= 2
            if hi > _SIGMA_MAX:
                raise ValueError(f"target eps={target!r} is not attainable with noise_multiplier <= {_SIGMA_MAX:g}")
            e = eps_fn(hi)
    else:  # walk down until not certified
        lo = hi / step
        while eps_fn(lo) <= target:
            hi, lo = lo, lo / step
            step *= 2
            if lo < _SIGMA_MIN:
                return hi
    if hi / lo - 1 <= _RTOL:
        return hi
    f = lambda s: math.log(max(eps_fn(math.exp(s)), 1e-300)) - math.log(target)
    root = math.exp(optimize.brentq(f, math.log(lo), math.log(hi), xtol=_RTOL / 4))
    sigma = min(root * (1 + _RTOL / 2), hi)
    while eps_fn(sigma) > target:  # one-sided stop: only return a σ whose ε is certified ≤ target
        sigma = min(sigma * (1 + _RTOL / 2), hi)
    return sigma


_NOISE_CACHE: dict = {}
_WARM: dict = {}  # (delta, steps-scale, accountant) -> last (q, steps, target, sigma, best order index)


def _noise_cached(target: float, delta: float, q: float, steps: int, accountant: str, extra: tuple | None) -> float:
    key = (target, delta, q, steps, accountant, extra)
    if key in _NOISE_CACHE:
        return _NOISE_CACHE[key]
    if math.isinf(target):
        return 0.0
    floor = _eps_cached(math.inf, delta, q, steps, "rdp", extra) if accountant == "rdp" else 0.0
    if steps == 0:
        if floor > target:
            raise ValueError(f"target eps={target!r} is below the {floor:.4g} already spent by extra_rdp")
        return 0.0
    if floor >= target:
        what = "extra_rdp plus the RDP-to-DP conversion over DEFAULT_ORDERS" if extra else \
            "the RDP-to-DP conversion over DEFAULT_ORDERS (infinite noise)"
        raise ValueError(f"target eps={target!r} is unattainable: {what} already gives eps={floor:.4g}")
    # first guess: the Gaussian-CLT heuristic eps ≈ q·sqrt(2 T log(1/δ))/σ, rescaled by the last solve
    # of a nearby problem (warm start: silos are calibrated one after another)
    clt = lambda qq, tt, ee: qq * math.sqrt(2 * tt * math.log(1 / delta)) / ee
    warm = _WARM.get((delta, accountant, extra))
    if warm is not None:
        wq, wt, we, wsig, wbest = warm
        guess, step = wsig * clt(q, steps, target) / clt(wq, wt, we), 1.03
    else:
        guess, step, wbest = max(clt(q, steps, target), 0.3), 2.0, None
    if accountant == "rdp":
        window = _RdpWindow(q, steps, delta, extra)
        window.best = wbest
        sigma = _search(window, target, guess, step)
        # certify on the full grid (never larger than the window's ε)
        if _eps_cached(sigma, delta, q, steps, "rdp", extra) > target:  # pragma: no cover - impossible by construction
            raise RuntimeError("calibration failed to certify eps <= target on the full order grid")
        _WARM[(delta, accountant, extra)] = (q, steps, target, sigma, window.best)
    else:
        sigma = _search(lambda s: _eps_cached(s, delta, q, steps, accountant, None), target, guess, step)
        _WARM[(delta, accountant, extra)] = (q, steps, target, sigma, None)
    _NOISE_CACHE[key] = sigma
    return sigma


def noise_multiplier(target_eps: float, delta: float, sample_rate: float, steps: int,
                     accountant: Literal["rdp", "pld", "prv"] = "rdp", extra_rdp=None) -> float:
    """Noise multiplier σ such that ``epsilon(σ, …) ≤ target_eps``, within 0.1 % (in σ) of the smallest such σ.

    Bracketing search on the monotone map σ ↦ ε(σ) with a one-sided stop: the returned σ is always
    certified by the same accountant, never a least-squares fit.  ``target_eps=inf`` → 0 (no noise);
    ``steps=0`` → 0 when ``extra_rdp`` alone fits the budget.  Raises ``ValueError`` for invalid
    arguments and for unattainable targets (e.g. ``extra_rdp`` alone exceeds the budget, or the target
    is below what the finite order grid can certify even with infinite noise).
    """
    target = float(check_positive("target_eps", target_eps))
    delta, q, steps, extra = _check_common(delta, sample_rate, steps, accountant, extra_rdp)
    return _noise_cached(target, delta, q, steps, accountant, extra)
