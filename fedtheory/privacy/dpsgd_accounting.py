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

Both functions are thin wrappers: the run is the event :func:`fedtheory.privacy.events.dpsgd_event`
(composed with ``extra_rdp`` as an :class:`~fedtheory.privacy.events.RdpCurveDpEvent`), ε comes from
the accountant registry (:mod:`fedtheory.privacy.accountants`) and the noise multiplier from the one
calibration routine, :func:`fedtheory.privacy.calibration.calibrate`: a σ whose ε — computed by the
same accountant — is **≤ target** and within 0.1 % in σ of the root (so ε ≥ 0.99·target), and a
function of the arguments alone (no warm start: the same bits whatever was calibrated before).
"""
from __future__ import annotations

from typing import Literal

from fedtheory.validation import (as_float_array, check_choice, check_integer_at_least,
                                   check_nonnegative, check_open_interval, check_positive)
from fedtheory.privacy.accountants import ACCOUNTANTS, get_accountant
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.events import DpEvent, compose, dpsgd_event, rdp_curve_event
from fedtheory.privacy.rdp import DEFAULT_ORDERS

__all__ = ["ACCOUNTANTS", "epsilon", "noise_multiplier", "run_event"]


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
    extra = None
    if extra_rdp is not None:
        if accountant != "rdp":
            raise ValueError(f"extra_rdp is only supported with accountant='rdp' (got accountant={accountant!r})")
        arr = check_nonnegative("extra_rdp", extra_rdp)
        if arr.shape != DEFAULT_ORDERS.shape:
            raise ValueError(f"extra_rdp must be an array over DEFAULT_ORDERS of shape {DEFAULT_ORDERS.shape} "
                             f"(got shape {arr.shape})")
        extra = rdp_curve_event(DEFAULT_ORDERS, arr)
    return delta, q, steps, extra


def run_event(noise_multiplier: float, sample_rate: float, steps: int, extra: DpEvent | None = None) -> DpEvent:
    """The DpEvent of ``steps`` DP-SGD steps, composed with ``extra`` (another event) if given."""
    event = dpsgd_event(noise_multiplier, sample_rate, steps)
    return event if extra is None else compose(event, extra)


def epsilon(noise_multiplier: float, delta: float, sample_rate: float, steps: int,
            accountant: Literal["rdp", "pld", "prv"] = "rdp", extra_rdp=None) -> float:
    """ε spent by ``steps`` DP-SGD steps (Poisson sampling at ``sample_rate``, add/remove adjacency) at ``delta``.

    ``extra_rdp`` (``accountant="rdp"`` only): an RDP curve over :data:`DEFAULT_ORDERS` added before the
    conversion, to compose DP-SGD with other mechanisms (private selections, tuning) under one budget.
    Edge cases: ``steps=0`` → 0 (plus whatever ``extra_rdp`` costs); ``noise_multiplier=inf`` → 0
    (plus ``extra_rdp``); ``noise_multiplier=0`` with ``steps ≥ 1`` → ``inf``.
    """
    sigma = float(check_nonnegative("noise_multiplier", noise_multiplier))
    delta, q, steps, extra = _check_common(delta, sample_rate, steps, accountant, extra_rdp)
    return get_accountant(accountant).epsilon(run_event(sigma, q, steps, extra), delta)


def noise_multiplier(target_eps: float, delta: float, sample_rate: float, steps: int,
                     accountant: Literal["rdp", "pld", "prv"] = "rdp", extra_rdp=None) -> float:
    """Noise multiplier σ such that ``epsilon(σ, …) ≤ target_eps``, within 0.1 % (in σ) of the smallest such σ.

    :func:`fedtheory.privacy.calibration.calibrate` on ``σ ↦ run_event(σ, q, steps, extra_rdp)``: the
    returned σ is certified by the same accountant, deterministic (no warm start), never a fit.
    ``target_eps=inf`` → 0 (no noise); ``steps=0`` → 0 when ``extra_rdp`` alone fits the budget.
    Raises ``ValueError`` for invalid arguments and for unattainable targets (e.g. ``extra_rdp`` alone
    exceeds the budget, or the target is below what the finite order grid can certify with any noise).
    """
    target = float(check_positive("target_eps", target_eps))
    delta, q, steps, extra = _check_common(delta, sample_rate, steps, accountant, extra_rdp)
    return calibrate(lambda z: run_event(z, q, steps, extra), target, delta, accountant)
