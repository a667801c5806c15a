"""Private hyperparameter tuning by random repetition (Papernot & Steinke 2022; MR-MTL paper Sec. 7, App. F).

Setting (MR-MTL paper App. F, Papernot & Steinke 2022 "Hyperparameter tuning with Renyi differential
privacy", arXiv 2110.03620).  A base mechanism ``M`` (one training run with some hyperparameter, e.g. one
value of the MR-MTL knob λ) is run ``h`` times with independently drawn hyperparameters, and only the
best run (by any score that is itself computed by ``M``) is released.  With ``h`` fixed the cost can be as
large as ``h``-fold composition (Prop. F.1); with ``h`` *random* the cost is a constant or a ``log E[h]``
additive term.  Two laws for ``h`` are covered:

* truncated negative binomial ``TNB(ν, γ)`` (shape ν, argument ``eta``; the paper's η) on ``h ∈ {1, 2, ...}``, ``ν ∈ (-1, ∞)``, ``γ ∈ (0, 1)``
  (``ν = 0``: logarithmic; ``ν = 1``: geometric), RDP bound of **Theorem F.2** (= P&S Thm 2);
* ``Poisson(μ)`` on ``h ∈ {0, 1, 2, ...}`` (``h = 0`` releases a fixed default output ⊥), RDP bound
  of P&S **Theorem 6**.

**Erratum.**  The MR-MTL paper prints the condition of Theorem F.2 as "ν > 1".  The correct range is
``ν > -1`` (P&S Thm 2): for ``ν < -1`` the TNB "pmf" takes negative values (``f(2) = f(1)(1-γ)(1+ν)/2 <
0``), at ``ν = -1`` it is the point mass at ``h = 1`` (no tuning at all, ``E[h] = 1``), and the paper's
own Fig. 7 uses ``ν ∈ {-0.5, 0, 0.5}``.  :func:`.tnb_pmf` raises for ``ν ≤ -1``; the chapter shows the
sign pattern and :func:`.exact_tuned_rdp` checks the bound numerically at ``ν = -0.5``.

**Choice of the extra order α̂.**  Theorem F.2 holds for *every* ``α̂ ≥ 1``; its α̂-terms
``(1+ν)[(1-1/α̂) ε(α̂) + log(1/γ)/α̂]`` do not depend on the order α at which the tuned RDP is stated.
We therefore take, for all α at once, the α̂ of the order grid that minimises them (a minimum over a
finite set of valid bounds is a valid bound), then apply RDP monotonicity in the order
(``ε̃(α) ≤ min_{α' ≥ α} ε̃(α')``).  Google's ``dp_accounting`` (``RepeatAndSelectDpEvent``) does the
same, which the tests exploit.  For the Gaussian base mechanism the continuous optimum is
``α̂* = z·sqrt(2 log(1/γ))`` (:func:`.gaussian_alpha_hat`), a check on the grid search.

**Accounting.**  Base mechanisms: ``"gaussian"`` — one release of a sum/mean with L2 sensitivity Δ and
noise std ``z·Δ`` (RDP ``α/(2z²)``), the one-shot mechanism of MR-MTL Sec. 6; ``"dpsgd"`` — ``steps``
Poisson-subsampled Gaussian steps at rate ``sample_rate``.  RDP curves come from
:mod:`fedtheory.privacy.rdp`; conversion to (ε, δ) uses Lemma A.2 (the "improved" conversion of
Canonne–Kamath–Steinke / Balle et al.).  Adjacency: add/remove one sample, the notion under which the
subsampled-Gaussian RDP is stated (for the one-shot Gaussian, any adjacency whose L2 sensitivity is Δ).

**Tightness: ``bound="tight"`` (default) vs ``bound="rdp"``.**  Each scheme is calibrated as tightly as its
theorem allows (:data:`.BOUNDS`):

* untuned (one run): the base mechanism's *exact* privacy profile δ(ε) — Balle & Wang's analytic
  Gaussian (``fedtheory.privacy.gaussian.gaussian_epsilon``) for ``"gaussian"``, ``dp_accounting``'s
  PLD accountant (pessimistic discretisation, an upper bound) for ``"dpsgd"``;
* TNB (Thm F.2 = P&S Thm 2): the theorem takes RDP of the base mechanism, which for the Gaussian is exact
  (α/(2z²)); "tight" adds the continuous optimum α̂* = z·sqrt(2 log(1/γ)) to the order grid, so the
  α̂-terms are minimised exactly;
* Poisson (P&S Thm 6): the theorem takes *any* valid (ε̂, δ̂)-DP statement of the base mechanism with
  ε̂ ≤ log(1 + 1/(α-1)); "tight" uses the exact profile δ̂ = δ(ε̂) (:func:`.base_delta`) instead of the δ̂
  implied by the RDP curve, the looser value that ``dp_accounting``'s RDP accountant (and the MR-MTL
  paper's code) uses.

``bound="rdp"`` reproduces the RDP-only computation (``dp_accounting``'s ``RepeatAndSelectDpEvent``; the
paper's Fig. 7 code).  In both modes the tuned RDP curve is converted to (ε, δ) by Lemma A.2.

**Modules.**  :mod:`~fedtheory.privacy.tuning.runs` (the laws of ``h``: pmfs, samplers, the expected released
value), :mod:`~fedtheory.privacy.tuning.base` (the base mechanism's RDP curve and privacy profile),
:mod:`~fedtheory.privacy.tuning.bounds` (Thm F.2 and P&S Thm 6: the tuned RDP curve),
:mod:`~fedtheory.privacy.tuning.accounting` (ε of the tuned procedure and its noise calibration),
:mod:`~fedtheory.privacy.tuning.exact` (exact best-of-h divergences for finite mechanisms, Prop. F.1).  Every
public name is importable from this package.
"""
from __future__ import annotations

from fedtheory.privacy.tuning.runs import (DISTRIBUTIONS, expected_best_of_runs, expected_released_value, poisson_pmf,
                                           runs_pmf, sample_runs, tnb_formula_values, tnb_gamma, tnb_mean, tnb_pmf)
from fedtheory.privacy.tuning.base import MECHANISMS, TUNING_ORDERS, base_delta, base_rdp
from fedtheory.privacy.tuning.bounds import gaussian_alpha_hat, poisson_rdp, rdp_to_delta, tnb_rdp, tuned_rdp
from fedtheory.privacy.tuning.accounting import (BOUNDS, TunedCalibration, calibration_table, tuned_epsilon,
                                                 tuned_noise_multiplier)
from fedtheory.privacy.tuning.exact import exact_tuned_rdp, finite_rdp, fixed_h_example, fixed_h_lower_bound

__all__ = [
    "DISTRIBUTIONS",
    "MECHANISMS",
    "BOUNDS",
    "base_delta",
    "TUNING_ORDERS",
    "tnb_pmf",
    "tnb_mean",
    "tnb_gamma",
    "tnb_formula_values",
    "poisson_pmf",
    "sample_runs",
    "runs_pmf",
    "expected_best_of_runs",
    "expected_released_value",
    "rdp_to_delta",
    "tnb_rdp",
    "poisson_rdp",
    "tuned_rdp",
    "gaussian_alpha_hat",
    "base_rdp",
    "tuned_epsilon",
    "tuned_noise_multiplier",
    "TunedCalibration",
    "calibration_table",
    "exact_tuned_rdp",
    "finite_rdp",
    "fixed_h_lower_bound",
    "fixed_h_example",
]
