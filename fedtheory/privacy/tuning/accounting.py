"""ε of a privately tuned procedure (forward) and the noise multiplier that meets a target ε (inverse).

Composition: the base mechanism's RDP (:mod:`~fedtheory.privacy.tuning.base`) → Thm F.2 / P&S Thm 6
(:mod:`~fedtheory.privacy.tuning.bounds`) → Lemma A.2 conversion to (ε, δ).  ``bound="tight"`` (default) feeds
each theorem the tightest valid input (exact untuned profile, exact Poisson δ̂, continuous α̂ for TNB over a
Gaussian); ``bound="rdp"`` everything from the RDP curve on the order grid (``dp_accounting``, the paper's code)
(:data:`BOUNDS`).  The inverse goes through the book's one calibration,
:func:`fedtheory.privacy.calibration.calibrate`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from fedtheory.validation import as_float_array, check_choice, check_open_interval, check_positive
from fedtheory.privacy.accountants import get_accountant
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.events import dpsgd_event, rdp_curve_event
from fedtheory.privacy.gaussian import analytic_gaussian_sigma, gaussian_epsilon
from fedtheory.privacy.rdp import rdp_to_epsilon
from fedtheory.privacy.tuning.base import _check_mechanism, _default_orders, base_delta, base_rdp
from fedtheory.privacy.tuning.bounds import gaussian_alpha_hat, tuned_rdp
from fedtheory.privacy.tuning.runs import DISTRIBUTIONS, poisson_pmf, tnb_gamma, tnb_pmf

__all__ = ["BOUNDS", "tuned_epsilon", "tuned_noise_multiplier", "TunedCalibration", "calibration_table"]

#: ``"tight"``: each theorem fed the tightest valid input (exact privacy profile / continuous α̂);
#: ``"rdp"``: everything from the RDP curve on the order grid (``dp_accounting``, the paper's code).
BOUNDS = ("tight", "rdp")


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
        the base mechanism, see :func:`.base_rdp`.
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
