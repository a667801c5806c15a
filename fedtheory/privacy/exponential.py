"""Exponential mechanism for private cluster selection (IFCA) and its budget split with DP-SGD.

MR-MTL paper, Appendix A (§2.2 of the notes):

* The exponential mechanism with score ``s`` (lower is better) and sensitivity Δ picks ``g`` with
  probability ∝ ``exp(−ε·s(x, g) / (2Δ))``; it is ε-DP and, by the bounded-range analysis
  (Rogers & Steinke; Cesar & Rogers 2021), ``ε²/8``-zCDP, i.e. ``(α, αε²/8)``-RDP for every α.
* "Report noisy min" with Gumbel noise of scale ``2Δ/ε`` samples exactly that distribution
  (the Gumbel-max trick).
* The error-rate score ``s(x, g) = 1 − acc`` of a fixed model ``g`` on a local set of ``n`` records has
  sensitivity ≤ ``1/(n−1)`` (eq. (15), with the erratum ``s(x,g) − s(x',g)``): the exact worst case for
  neighbouring sets whose larger one has ``m`` records is ``1/m`` (add/remove one record, or replace
  one), so ``1/(n−1)`` covers every neighbouring pair with ``m ≥ n−1`` — including a neighbour that has
  one record fewer than the silo's nominal ``n``.
* IFCA's budget split: a fixed per-selection ε, selections in the first 10 % of rounds
  (``num_selections = int(rounds · 0.1)`` in the released code, with ``rounds = T+1``), and the DP-SGD
  noise re-solved so that DP-SGD + selections meet the total budget (composition in RDP).
"""
from __future__ import annotations

from typing import Literal

import numpy as np

from fedtheory.validation import (as_float_array, check_integer_at_least, check_nonnegative,
                                   check_open_interval, check_positive)
from fedtheory.privacy.accountants import get_accountant
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.events import compose, dpsgd_event, selection_event
from fedtheory.privacy.rdp import DEFAULT_ORDERS, _check_orders
from fedtheory.privacy.accountants import rdp_curve, simplify

__all__ = [
    "private_argmin",
    "exponential_mechanism_rdp",
    "error_rate_sensitivity",
    "ifca_selection_rdp",
    "ifca_budget_split",
]


def private_argmin(scores, eps: float, sensitivity: float, rng=None):
    """Report-noisy-min: ``argmin_g (s_g − Gumbel(scale = 2Δ/ε))`` along the last axis.

    Samples the exponential mechanism ``P(g) ∝ exp(−ε s_g / (2Δ))`` exactly; ε-DP for scores of
    sensitivity Δ.  ``rng``: a ``numpy.random.Generator`` or a seed.  ``eps=np.inf`` gives the plain argmin.
    Returns an int (1-d scores) or an int array (batched scores).
    """
    scores = as_float_array("scores", scores)
    if scores.ndim == 0 or scores.shape[-1] == 0:
        raise ValueError(f"scores must have at least one candidate along the last axis (got shape {scores.shape})")
    eps = float(check_positive("eps", eps))
    sensitivity = float(check_positive("sensitivity", sensitivity))
    rng = np.random.default_rng(rng)
    if np.isinf(eps):
        out = np.argmin(scores, axis=-1)
    else:
        out = np.argmin(scores - rng.gumbel(scale=2 * sensitivity / eps, size=scores.shape), axis=-1)
    return int(out) if np.ndim(out) == 0 else out


def exponential_mechanism_rdp(orders, eps):
    """RDP curve of one ε-DP exponential-mechanism selection: ``α ε² / 8`` (bounded range ⇒ ε²/8-zCDP).

    Evaluated from :func:`fedtheory.privacy.events.selection_event` (the one place a selection becomes
    an RDP term) by the ``rdp`` accountant's curve.
    """
    orders = _check_orders(orders)
    eps = float(check_nonnegative("eps", eps))
    return rdp_curve(simplify(selection_event(eps)), orders)


def error_rate_sensitivity(n):
    """Sensitivity bound ``1/(n−1)`` of the error-rate score on ``n`` local records (eq. (15)).  Vectorised; n ≥ 2."""
    n = check_integer_at_least("n", n, 2)
    out = 1.0 / (n - 1)
    return out.item() if np.ndim(out) == 0 else out


def ifca_selection_rdp(num_selections: int, selection_eps: float, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP of ``num_selections`` composed ε_sel exponential-mechanism selections: ``num_selections·α·ε_sel²/8``."""
    k = int(check_integer_at_least("num_selections", num_selections, 0))
    return k * exponential_mechanism_rdp(orders, selection_eps)


def ifca_budget_split(eps: float, delta: float, sample_rate: float, steps: int, num_selections: int,
                      selection_eps: float | None = None,
                      accountant: Literal["rdp"] = "rdp") -> tuple[float, float]:
    """DP-SGD noise multiplier so that DP-SGD plus IFCA's private selections meet a total ``(eps, delta)``.

    ``selection_eps`` defaults to the released code's ``0.03·eps`` per selection.  Composition is in RDP
    over :data:`DEFAULT_ORDERS` (the event ``dpsgd_event ∘ selection_event``, calibrated by
    :func:`fedtheory.privacy.calibration.calibrate`), converted with Lemma A.2;
    add/remove-one adjacency.  Returns ``(noise_multiplier, total_eps_spent)`` with ``total ≤ eps``.
    Raises ``ValueError`` if the selections alone exhaust the budget.
    """
    eps = float(check_positive("eps", eps))
    check_open_interval("delta", delta, 0.0, 1.0)
    if accountant != "rdp":
        raise ValueError(f"accountant must be 'rdp' (composition with selections needs RDP; got {accountant!r})")
    sel = 0.03 * eps if selection_eps is None else float(check_positive("selection_eps", selection_eps))
    k = int(check_integer_at_least("num_selections", num_selections, 0))
    acc = get_accountant("rdp")
    event = lambda z: compose(dpsgd_event(z, sample_rate, steps), selection_event(sel, k))  # noqa: E731
    sigma = calibrate(event, eps, delta, "rdp")
    return sigma, acc.epsilon(event(sigma), delta)
