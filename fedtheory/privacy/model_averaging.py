"""Averaging locally private models: the (ε, δ) of the average of M independently trained DP models.

Heikkilä, "On Using Secure Aggregation in DP Federated Learning with Multiple Local Steps" (TMLR 2025),
App. A.7, Table 1.  **Setting.**  M parties with disjoint data each run ``steps`` DP-SGD steps from a
common start, with a common learning rate, clip C, Poisson rate q and per-step noise multiplier z
calibrated so that *one party alone* meets ``(eps_party, δ)`` (local DP).  Averaging the M final models
is FedAvg with one round: ``θ̄ = θ⁰ − (η/M) Σ_s Σ_j (g_j^(s) + ξ_j^(s))``, so by Thm 4.6 (each step's
sum over parties is dominated by one subsampled Gaussian of sensitivity C and noise std ``√M z C``)
the average is accounted as ``steps`` Poisson-subsampled Gaussian steps with multiplier ``√M z``,
against anyone who sees only the average.  **Sample-level add/remove adjacency** (one record of one
party).

**Accountants.**  ``"rdp"``, ``"pld"``, ``"prv"`` (the registry, :mod:`fedtheory.privacy.accountants`)
and ``"paper_code"``: the accountant of the paper's released code (App. A.5), Gaussian subsampled RDP
at the integer orders 2..255 with Mironov's *classic* conversion ``ε = min_α ε(α) + log(1/δ)/(α−1)``
(:func:`fedtheory.privacy.secagg.paper_code_epsilon`).  All four calibrate z through the one
calibration :func:`fedtheory.privacy.calibration.calibrate`; ``paper_code`` does so exactly by handing
the ``rdp`` accountant the curve ``ε(α) + log α/(α−1) − log(1 − 1/α)`` on the integer grid, whose
improved conversion *is* the classic conversion of ``ε(α)`` (:func:`paper_code_event`).

**Why the numbers differ** (the table in ``secagg-and-pets.md`` prints 0.50 / 0.20 / 0.11 for M = 2 / 5 /
10 at one step, q = 0.0533, δ = 1e-5; the ``rdp`` accountant gives 0.46 / 0.17 / 0.09): the same δ, the
same RDP curve of the subsampled Gaussian, a different **RDP→DP conversion**.  The classic conversion
is looser by ``log α/(α−1) − log(1 − 1/α)`` at the optimal order, which (i) makes the one-party z
larger (1.476 vs 1.260 for ε = 1) and (ii) adds a larger constant to the averaged model's ε.
``paper_code`` reproduces the printed rows.  The order grid matters too where the optimal order falls in a
gap of the grid: at M = 10, one step, the ``rdp`` accountant's grid (…, 64, 80, 96, …) gives 0.0882 at order
80, while order 91 gives 0.0802 (integer orders 2..255, the same improved conversion).
"""
from __future__ import annotations

import math

import numpy as np

from fedtheory.validation import check_choice, check_integer_at_least, check_open_interval, check_positive
from fedtheory.privacy.accountants import get_accountant
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.events import dpsgd_event, rdp_curve_event
from fedtheory.privacy.rdp import subsampled_gaussian_rdp

__all__ = ["ACCOUNTANTS", "PAPER_ORDERS", "paper_code_event", "party_noise_multiplier", "averaged_model_epsilon",
           "averaged_model_epsilon_table"]

ACCOUNTANTS = ("rdp", "pld", "prv", "paper_code")
#: Orders of the paper's code accountant (integers 2..255).
PAPER_ORDERS = np.arange(2.0, 256.0)


def _check(sample_rate, steps, delta, accountant):
    q = float(np.asarray(sample_rate, dtype=float))
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sample_rate must lie in (0, 1] (got {sample_rate!r})")
    steps = int(check_integer_at_least("steps", steps, 1))
    delta = float(check_open_interval("delta", delta, 0.0, 1.0))
    check_choice("accountant", accountant, ACCOUNTANTS)
    return q, steps, delta


def paper_code_event(noise_multiplier: float, sample_rate: float, steps: int):
    """An ``RdpCurveDpEvent`` whose ``rdp``-accountant ε equals :func:`~fedtheory.privacy.secagg.paper_code_epsilon`.

    The improved conversion of ``c(α)`` is ``c(α) + log(1/(αδ))/(α−1) + log(1−1/α)``; with
    ``c(α) = ε(α) + log α/(α−1) − log(1−1/α)`` this is ``ε(α) + log(1/δ)/(α−1)``, the classic one.
    """
    z = float(check_positive("noise_multiplier", noise_multiplier))
    q, steps, _ = _check(sample_rate, steps, 0.5, "rdp")
    a = PAPER_ORDERS
    rdp = subsampled_gaussian_rdp(a, z, q, steps, backend="numpy")
    return rdp_curve_event(a, rdp + np.log(a) / (a - 1) - np.log1p(-1 / a))


def _event(z, q, steps, accountant):
    return paper_code_event(z, q, steps) if accountant == "paper_code" else dpsgd_event(z, q, steps)


def _eps(z, q, steps, delta, accountant):
    acc = "rdp" if accountant == "paper_code" else accountant
    return float(get_accountant(acc).epsilon(_event(z, q, steps, accountant), delta))


def party_noise_multiplier(eps_party: float, sample_rate: float, steps: int, delta: float,
                           accountant: str = "rdp") -> float:
    """Per-step noise multiplier z of one party that meets ``(eps_party, δ)`` alone (certified ≤ target)."""
    q, steps, delta = _check(sample_rate, steps, delta, accountant)
    acc = "rdp" if accountant == "paper_code" else accountant
    return float(calibrate(lambda z: _event(z, q, steps, accountant), eps_party, delta, acc))


def averaged_model_epsilon(eps_party: float, M: int, sample_rate: float, steps: int, delta: float,
                           accountant: str = "rdp") -> float:
    """ε of the average of ``M`` models, each trained to ``(eps_party, δ)`` local DP (module docstring).

    The same ``accountant`` calibrates the party's z and accounts the average (multiplier ``√M z``).
    ``M = 1`` returns the party's own (certified ≤ ``eps_party``) ε.
    """
    M = int(check_integer_at_least("M", M, 1))
    q, steps, delta = _check(sample_rate, steps, delta, accountant)
    sigma = party_noise_multiplier(eps_party, q, steps, delta, accountant)
    return _eps(math.sqrt(M) * sigma, q, steps, delta, accountant)


def averaged_model_epsilon_table(eps_party: float, M_values, sample_rate: float, steps: int, delta: float,
                                 accountants=("paper_code", "rdp", "pld")) -> dict[str, np.ndarray]:
    """``{accountant: [ε of the average for M in M_values]}`` (Table 1 of A.7, one row per accountant)."""
    Ms = np.atleast_1d(check_integer_at_least("M_values", M_values, 1))
    return {a: np.array([averaged_model_epsilon(eps_party, int(M), sample_rate, steps, delta, a) for M in Ms])
            for a in accountants}
