"""Fusing local steps (Heikkilä 2025, App. A.3, eqs. 20-21): clients with different numbers of local steps.

**The argument.**  Thm 4.6 needs every client to run the same number S of local steps.  A client that
runs ``m·S`` steps can be brought back to S by **fusing** each block of m consecutive steps into one
mechanism: block k releases (inside the secure sum) ``Σ_{s∈block} g^(s) + Σ_{s∈kept} ξ^(s)`` where

* (eq. 20) the block's L2 sensitivity is ``Σ_s C_s`` (a record's clipped gradients add up, triangle
  inequality, tight for aligned gradients); with clip ``C/m`` per step it is ``C``, the clip of the
  clients that run S steps;
* (eq. 21) for accounting, only the noise of the *kept* steps counts (dropping independent noise from
  the accounting can only over-state the privacy loss: the real release is a post-processing of the
  accounted one plus that noise).  The paper's example keeps the noise of every m-th step: "the client
  adds noise only on every other step" (m = 2).

So the block is a Gaussian sum query with multiplier ``√(Σ_kept σ_s²)/Σ_s C_s``
(:func:`fused_noise_multiplier`) and every client runs S (fused) steps; the previous results
(sum-dominating steps, :func:`fedtheory.privacy.secagg.heterogeneous_effective_multiplier`) apply.
As in Thm 4.6, a step's model state is an auxiliary input of the next step (Assumption 4.1: every local
mechanism is DP in its data for any auxiliary input).  Inside a fused block the intermediate states are not
released, so they are *not* auxiliary inputs: a record also moves the later steps' gradients through the
state.  Eq. 20's sensitivity ``Σ_s C_s`` then needs a **stable step** (the block's update maps non-expansive,
e.g. a convex L-smooth loss with η ≤ 2/L): the two trajectories' gap grows by at most ``η C_s`` per step.  That is
the paper's setting (a fixed number of steps, composed adaptively block by block).  For **non-convex** losses a
step can expand the gap (by up to ``1 + ηL`` per step for an L-smooth loss), so the block's sensitivity can
exceed ``Σ_s C_s`` and the fused argument does not cover it; per-step accounting (every step noisy) still does.
The exact block below (:func:`exact_block_pld`) treats the gradients as fixed vectors, the same idealisation.

**Poisson subsampling** (rate q per step): a record enters a block k ~ Binomial(m, q) times, shifting
the release by ``k·C/m``.  The argument accounts the block as a Poisson-subsampled Gaussian with rate
``1 − (1−q)^m`` and the full sensitivity C (:func:`fused_event`) — an upper bound that this module
checks numerically against the exact block (``tests/privacy/test_step_fusion.py``), not a proof; the *exact* block (1-d, aligned
gradients) is a mixture of Gaussians (:func:`exact_block_pld`), which ``dp_accounting`` accounts
exactly.  A client that runs m times as many steps over the same data usually samples at ``q/m``; then
``1 − (1−q/m)^m ≤ q`` and its records get at least the guarantee of a client running S steps at rate q.
:func:`fusion_check` compares the three accountings: the exact block, the fused argument and
(when the noise is spread evenly over the m steps) per-step composition.  Without subsampling the fused
and per-step accountings coincide when ``σ_s² ∝ C_s`` and fusing is strictly better otherwise
(:func:`fusion_identity`: a Lagrange identity derived with sympy).  Adjacency: **sample-level
add/remove**.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from fedtheory.validation import (check_integer_at_least, check_nonnegative, check_open_interval,
                                   check_positive)
from fedtheory.privacy.accountants import get_accountant
from fedtheory.privacy.events import dpsgd_event

__all__ = ["fused_sensitivity", "fused_noise_multiplier", "fused_sample_rate", "fused_event", "exact_block_pld",
           "FusionCheck", "fusion_check", "fusion_identity", "gdp_mu_fused", "gdp_mu_per_step"]


def fused_sensitivity(clips) -> float:
    """Eq. 20: L2 sensitivity ``Σ_s C_s`` of the sum of a block's clipped gradients (clip ``C/m`` → C)."""
    return float(np.sum(np.atleast_1d(check_positive("clips", clips))))


def fused_noise_multiplier(clips, noise_stds) -> float:
    """Eq. 21: ``√(Σ_s s_s²)/Σ_s C_s`` — the block's Gaussian multiplier; give 0 for steps whose noise is
    dropped from the accounting (``noise_stds`` are absolute stds, e.g. ``σ_s C_s``)."""
    C = np.atleast_1d(check_positive("clips", clips))
    s = np.atleast_1d(check_nonnegative("noise_stds", noise_stds))
    if C.shape != s.shape:
        raise ValueError(f"clips and noise_stds must have the same length (got {C.size} and {s.size})")
    return float(np.sqrt(np.sum(s**2)) / np.sum(C))


def fused_sample_rate(sample_rate: float, m: int) -> float:
    """Probability ``1 − (1−q)^m`` that a record enters at least one of m Poisson(q) steps."""
    q = float(np.asarray(sample_rate, dtype=float))
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sample_rate must lie in (0, 1] (got {sample_rate!r})")
    m = int(check_integer_at_least("m", m, 1))
    return float(-math.expm1(m * math.log1p(-q))) if q < 1 else 1.0


def fused_event(noise_multiplier: float, sample_rate: float, m: int, blocks: int):
    """The argument's accounting: ``blocks`` Poisson-subsampled Gaussian steps, rate :func:`fused_sample_rate`,
    multiplier ``noise_multiplier`` (the fused block's, :func:`fused_noise_multiplier`)."""
    return dpsgd_event(noise_multiplier, fused_sample_rate(sample_rate, m), blocks)


def exact_block_pld(noise_multiplier: float, sample_rate: float, m: int, blocks: int,
                    value_discretization_interval: float = 1e-3):
    """``dp_accounting`` PLD of ``blocks`` exact fused blocks (1-d, aligned clipped gradients, clip C/m per step).

    One block releases ``(C/m)·K + N(0, (zC)²)`` with ``K ~ Binomial(m, q)`` for the record present,
    ``N(0, (zC)²)`` without it: a mixture-of-Gaussians mechanism (pessimistic discretisation, add and
    remove directions), self-composed ``blocks`` times.  Under no subsampling (q = 1) it is the
    Gaussian with sensitivity C.
    """
    from dp_accounting.pld import privacy_loss_distribution as pld
    from scipy import stats

    z = float(check_positive("noise_multiplier", noise_multiplier))
    q = float(np.asarray(sample_rate, dtype=float))
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sample_rate must lie in (0, 1] (got {sample_rate!r})")
    m = int(check_integer_at_least("m", m, 1))
    blocks = int(check_integer_at_least("blocks", blocks, 1))
    k = np.arange(m + 1)
    probs = stats.binom.pmf(k, m, q)
    keep = probs > 0
    one = pld.from_mixture_gaussian_mechanism(z, (k[keep] / m).tolist(), probs[keep].tolist(),
                                              value_discretization_interval=value_discretization_interval)
    return one.self_compose(blocks) if blocks > 1 else one


class FusionCheck(NamedTuple):
    """ε (sample-level add/remove, at δ) of m·blocks local steps under three accountings (PLD)."""

    exact_block: float   #: the exact fused block (mixture of Gaussians), composed over blocks
    fused: float         #: the A.3 argument: subsampled Gaussian, rate 1-(1-q)^m, sensitivity C
    per_step: float      #: noise spread evenly (std zC/√m per step, clip C/m): m·blocks subsampled steps


def fusion_check(noise_multiplier: float, sample_rate: float, m: int, blocks: int, delta: float) -> FusionCheck:
    """The three accountings of :class:`FusionCheck` for fused multiplier ``noise_multiplier`` (all PLD).

    A valid argument needs ``exact_block ≤ fused``; ``exact_block ≤ per_step`` as well (the block sum is a
    post-processing of the per-step releases).
    """
    delta = float(check_open_interval("delta", delta, 0.0, 1.0))
    z = float(check_positive("noise_multiplier", noise_multiplier))
    m = int(check_integer_at_least("m", m, 1))
    blocks = int(check_integer_at_least("blocks", blocks, 1))
    pld_acc = get_accountant("pld")
    exact = float(exact_block_pld(z, sample_rate, m, blocks).get_epsilon_for_delta(delta))
    fused = float(pld_acc.epsilon(fused_event(z, sample_rate, m, blocks), delta))
    per_step = float(pld_acc.epsilon(dpsgd_event(z * math.sqrt(m), float(sample_rate), m * blocks), delta))
    return FusionCheck(exact, fused, per_step)


def gdp_mu_fused(clips, noise_stds) -> float:
    """Without subsampling: the block is a Gaussian pair with GDP ``μ = Σ C_s/√(Σ s_s²)``."""
    return 1.0 / fused_noise_multiplier(clips, noise_stds)


def gdp_mu_per_step(clips, noise_stds) -> float:
    """Without subsampling: composing the m per-step Gaussians gives ``μ = √(Σ (C_s/s_s)²)`` (∞ if a step has
    no noise)."""
    C = np.atleast_1d(check_positive("clips", clips))
    s = np.atleast_1d(check_nonnegative("noise_stds", noise_stds))
    if np.any(s == 0):
        return math.inf
    return float(np.sqrt(np.sum((C / s) ** 2)))


def fusion_identity(m: int = 2):
    """Sympy: ``μ_per_step² − μ_fused² = Σ_{s<t} (C_s s_t² − C_t s_s²)² / (s_s² s_t² Σ_u s_u²)`` for m steps.

    Returns ``(difference, lagrange_form, simplified difference − lagrange_form)``; the last is 0, so
    fusing never accounts worse than per-step composition (no subsampling), with equality iff
    ``s_s² ∝ C_s`` (e.g. clip C/m and noise variance σ²/m on every step).
    """
    import sympy as sp

    m = int(check_integer_at_least("m", m, 1))
    C = sp.symbols(f"C1:{m + 1}", positive=True)
    s = sp.symbols(f"s1:{m + 1}", positive=True)
    V = sum(x**2 for x in s)
    mu_step2 = sum((c / x) ** 2 for c, x in zip(C, s))
    mu_fused2 = sum(C) ** 2 / V
    diff = mu_step2 - mu_fused2
    lagrange = sum((C[i] * s[j]**2 - C[j] * s[i]**2) ** 2 / (s[i]**2 * s[j]**2 * V)
                   for i in range(m) for j in range(i + 1, m))
    return diff, lagrange, sp.simplify(sp.together(diff - lagrange))
