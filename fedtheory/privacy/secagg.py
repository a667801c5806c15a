"""Per-client noise for DP federated learning with secure aggregation and S local steps.

Heikkilä, "On Using Secure Aggregation in Differentially Private Federated Learning with Multiple Local
Steps" (TMLR 2025, arXiv 2407.19286), Theorems 4.6 and 4.7 and Appendix A.3.

**Setting.**  M clients (silos) with disjoint data; in each of R rounds every client runs S local DP-SGD
steps: Poisson-sample a batch at rate q, clip per-sample gradients to norm C, sum, add Gaussian noise
``N(0, (z_j C)² I)`` (z_j: the client's per-step noise multiplier, the paper's σ_j), step.  The client's update (the sum
of its S noisy steps) leaves only through secure aggregation, idealised as a trusted aggregator 𝒯 that
reveals only the sum over clients.

**Adjacency and unit.**  Sample-level DP under **add/remove one sample** (the paper's experiments; the
subsampled-Gaussian RDP/PLD curves are for this relation).  The guarantee is for the union dataset
``D = ∪_j D_j`` against anyone who sees only 𝒯's outputs (the server, outsiders).

**Trust models → calibrations** (:data:`CALIBRATIONS`):

* ``"ddp"`` — Thm 4.6 + 4.7, honest-but-curious server, **fully honest clients**: each local step of
  the M clients is dominated by one central subsampled Gaussian with noise multiplier
  ``z_total = sqrt(Σ_j z_j²)`` ("sum-dominating"), and the released sum of S steps is post-processing of
  releasing every step (Lemma 4.5), so the whole run is accounted as **R·S** compositions of the central
  mechanism.  Infinite divisibility splits z_total into ``z_j = z_total/√M``.
* ``"ddp_hbc"`` — honest-but-curious, non-colluding **clients**: a client can subtract its own noise from
  the aggregate, so the other M-1 clients' noise must reach z_total: ``z_j = z_total/√(M-1)``.
* ``"ldp"`` — no trust in aggregation (local DP): every client's own noise must meet the target,
  ``z_j = z_total`` (same q, R·S steps).  Also the level needed when a silo's *personalised* model is
  released (MR-MTL), which never passes through 𝒯.
* ``"naive"`` — the per-round update is treated as one Gaussian release: sensitivity ``S·C`` (triangle
  inequality over the S steps), noise ``sqrt(M S) z_j C``, R-fold composition without subsampling
  amplification.  Its per-client z_j grows like √S.

Accountants: ``"rdp"`` (Opacus/fedtheory RDP + Lemma A.2 conversion), ``"pld"`` (Google
``dp_accounting``), ``"prv"`` (Opacus PRV), via :mod:`fedtheory.privacy.dpsgd_accounting`.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from fedtheory.validation import (as_float_array, check_choice, check_integer_at_least, check_nonnegative,
                                   check_positive)
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.dpsgd_accounting import epsilon
from fedtheory.privacy.events import dpsgd_event
from fedtheory.privacy.rdp import rdp_to_epsilon, subsampled_gaussian_rdp

__all__ = [
    "CALIBRATIONS",
    "ACCOUNTANTS",
    "noise_share",
    "total_noise_multiplier",
    "per_client_noise",
    "per_client_noise_table",
    "epsilon_of_per_client_noise",
    "heterogeneous_effective_multiplier",
    "heterogeneous_client_noise",
    "simulate_aggregate_noise",
    "simulate_summed_release",
    "estimate_gdp_mu",
    "paper_code_epsilon",
]

CALIBRATIONS = ("ddp", "ddp_hbc", "ldp", "naive")
ACCOUNTANTS = ("rdp", "pld", "prv")


def _check_sample_rate(sample_rate) -> float:
    q = float(as_float_array("sample_rate", sample_rate))
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sample_rate must lie in (0, 1] (got {q!r})")
    return q


def _check_common(M, S, R, sample_rate, calibration, accountant):
    M = int(check_integer_at_least("M", M, 1))
    S = int(check_integer_at_least("S", S, 1))
    R = int(check_integer_at_least("R", R, 1))
    q = _check_sample_rate(sample_rate)
    check_choice("calibration", calibration, CALIBRATIONS)
    check_choice("accountant", accountant, ACCOUNTANTS)
    if calibration == "ddp_hbc" and M < 2:
        raise ValueError(f"calibration='ddp_hbc' needs M >= 2 clients (got M={M})")
    return M, S, R, q


def noise_share(M: int, S: int, calibration: str) -> float:
    """Factor f with ``z_j = f · z`` where z is the multiplier the accountant solves for.

    ``ddp``: 1/√M (Thm 4.7); ``ddp_hbc``: 1/√(M-1); ``ldp``: 1; ``naive``: √S/√M (a round releases
    S·C-sensitive sums with noise variance M S z_j² C², i.e. multiplier ``z_j √M/√S``).

    Examples
    --------
    >>> round(noise_share(10, 11, "ddp"), 4)      # 1/√10, whatever the number of local steps
    0.3162
    >>> round(noise_share(10, 11, "ddp_hbc"), 4)  # 1/√9: one client may subtract its own noise
    0.3333
    """
    M = int(check_integer_at_least("M", M, 1))
    S = int(check_integer_at_least("S", S, 1))
    check_choice("calibration", calibration, CALIBRATIONS)
    if calibration == "ddp":
        return 1.0 / math.sqrt(M)
    if calibration == "ddp_hbc":
        if M < 2:
            raise ValueError(f"calibration='ddp_hbc' needs M >= 2 clients (got M={M})")
        return 1.0 / math.sqrt(M - 1)
    if calibration == "ldp":
        return 1.0
    return math.sqrt(S) / math.sqrt(M)


def _accounted_mechanism(S: int, R: int, q: float, calibration: str) -> tuple[float, int]:
    """(sample rate, number of compositions) of the mechanism the accountant sees."""
    if calibration == "naive":
        return 1.0, R            # one unamplified Gaussian release per round
    return q, R * S              # R·S subsampled-Gaussian steps (Thm 4.6)


def total_noise_multiplier(S: int, R: int, sample_rate: float, target_eps: float, delta: float,
                           calibration: str = "ddp", accountant: str = "rdp") -> float:
    """The multiplier z of the accounted mechanism that meets (target_eps, δ) (before splitting).

    For ``ddp``/``ddp_hbc``/``ldp`` this is z_total of R·S Poisson-subsampled Gaussian steps; for
    ``naive`` it is the multiplier of the per-round Gaussian (sensitivity S·C) composed R times.
    """
    _, S, R, q = _check_common(2, S, R, sample_rate, calibration, accountant)
    qq, steps = _accounted_mechanism(S, R, q, calibration)
    return float(calibrate(lambda z: dpsgd_event(z, qq, steps), target_eps, delta, accountant))


def per_client_noise(M: int, S: int, R: int, sample_rate: float, target_eps: float, delta: float,
                     calibration: str = "ddp", accountant: str = "rdp") -> float:
    """Per-client, per-local-step noise multiplier z_j (noise std z_j·C) for a target (ε, δ).

    Parameters
    ----------
    M
        clients aggregated per round (all participate).
    S
        local steps per round.
    R
        rounds.
    sample_rate
        Poisson sampling rate q of each local step (expected batch / client dataset size).
    target_eps, delta
        the sample-level (ε, δ) target, add/remove adjacency.
    calibration
        one of :data:`CALIBRATIONS` (trust models in the module docstring).
    accountant
        ``"rdp"``, ``"pld"`` or ``"prv"``.

    Notes
    -----
    Guarantee: the accountant's ε at the returned noise is ≤ target_eps (the calibration in
    :mod:`fedtheory.privacy.dpsgd_accounting` brackets from above), for the adversary of the chosen trust model.
    """
    M, S, R, q = _check_common(M, S, R, sample_rate, calibration, accountant)
    z = total_noise_multiplier(S, R, q, target_eps, delta, calibration, accountant)
    return z * noise_share(M, S, calibration)


def epsilon_of_per_client_noise(sigma_client: float, M: int, S: int, R: int, sample_rate: float, delta: float,
                                calibration: str = "ddp", accountant: str = "rdp") -> float:
    """Forward direction: ε reached when each client adds per-step multiplier ``sigma_client``.

    E.g. ``calibration="ldp"`` answers "what ε would one client's own noise give it alone?" (the
    DDP-over-LDP gain that secure aggregation buys).
    """
    M, S, R, q = _check_common(M, S, R, sample_rate, calibration, accountant)
    s = float(check_positive("sigma_client", sigma_client))
    qq, steps = _accounted_mechanism(S, R, q, calibration)
    return float(epsilon(s / noise_share(M, S, calibration), delta, qq, steps, accountant=accountant))


def per_client_noise_table(M: int, S_values, R: int, sample_rate: float, target_eps: float, delta: float,
                           calibrations=CALIBRATIONS, accountant: str = "rdp") -> dict[str, np.ndarray]:
    """z_j for every calibration (rows) and S in ``S_values`` (columns), as ``{calibration: array}``."""
    S_values = np.atleast_1d(check_integer_at_least("S_values", S_values, 1))
    return {c: np.array([per_client_noise(M, int(S), R, sample_rate, target_eps, delta, c, accountant)
                         for S in S_values]) for c in calibrations}


# ----------------------------------------------------------------------------------------------------
# Appendix A.3: client-specific learning rates, clips and noise
# ----------------------------------------------------------------------------------------------------

def heterogeneous_effective_multiplier(lr_scales, clips, noise_stds) -> float:
    """Noise multiplier of the sum-dominating Gaussian for client-specific lr, clip and noise (App. A.3).

    Client j steps with learning rate ``c_j η``, clips to ``C_j`` and adds noise of std ``s_j``
    (absolute).  One step of the aggregate is ``η Σ_j c_j (g_j + ζ_j)``: a Gaussian mechanism with L2
    sensitivity ``max_j c_j C_j`` (a sample lives in one client) and noise std ``sqrt(Σ_j c_j² s_j²)``,
    so its multiplier is ``sqrt(Σ_j c_j² s_j²) / max_j c_j C_j`` (eqs. 16-19).  With ``c_j = 1``,
    ``C_j = C`` and ``s_j = z C/√M`` this is z.
    """
    c = np.atleast_1d(check_positive("lr_scales", lr_scales))
    C = np.atleast_1d(check_positive("clips", clips))
    s = np.atleast_1d(check_nonnegative("noise_stds", noise_stds))
    c, C, s = np.broadcast_arrays(c, C, s)
    return float(np.sqrt(np.sum(c**2 * s**2)) / np.max(c * C))


def heterogeneous_client_noise(lr_scales, clips, total_multiplier: float) -> np.ndarray:
    """Noise stds ``s_j = z C_j`` (each client's noise proportional to its own clip, common multiplier z) such that
    :func:`heterogeneous_effective_multiplier` equals ``total_multiplier`` = z_total:
    ``z = z_total · max_j c_j C_j / sqrt(Σ_j c_j² C_j²)``.  Equal clients give ``z = z_total/√M``.
    """
    c = np.atleast_1d(check_positive("lr_scales", lr_scales))
    C = np.atleast_1d(check_positive("clips", clips))
    c, C = np.broadcast_arrays(c, C)
    z = float(check_positive("total_multiplier", total_multiplier))
    sigma = z * np.max(c * C) / np.sqrt(np.sum(c**2 * C**2))
    return sigma * C


# ----------------------------------------------------------------------------------------------------
# Monte Carlo illustrations of the sum-dominating argument
# ----------------------------------------------------------------------------------------------------

def simulate_aggregate_noise(M: int, sigma_client: float, clip: float = 1.0, dim: int = 1, trials: int = 100_000,
                             seed: Optional[int] = 0) -> np.ndarray:
    """Draw the securely aggregated noise ``Σ_j ζ_j`` of one step, ``ζ_j ~ N(0, (z_j C)² I_dim)``.

    Returns an array of shape ``(trials, dim)``; its variance per coordinate should be
    ``M z_j² C²`` = ``(z_total C)²`` (Thm 4.7's split is exact for the Gaussian).
    """
    M = int(check_integer_at_least("M", M, 1))
    s = float(check_positive("sigma_client", sigma_client))
    C = float(check_positive("clip", clip))
    dim = int(check_integer_at_least("dim", dim, 1))
    trials = int(check_integer_at_least("trials", trials, 2))
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((trials, M, dim)) * s * C).sum(axis=1)


def simulate_summed_release(M: int, S: int, sigma_client: float, clip: float = 1.0, present: bool = True,
                            trials: int = 100_000, seed: Optional[int] = 0) -> np.ndarray:
    """One round's securely aggregated update (1-d), worst case without subsampling.

    Client 0 holds the differing sample, whose clipped gradient is ``+C`` at every one of the S steps
    (aligned worst case); all other gradients are fixed and taken as 0.  Returns ``trials`` draws of
    ``Σ_s Σ_j (g_j^(s) + ζ_j^(s))``.  Under ``present=True`` it is ``N(S C, S M z_j² C²)``, else
    ``N(0, S M z_j² C²)``: a Gaussian pair with GDP parameter ``√S/z_total`` — the same as the S-fold
    composition of the per-step central mechanism, so Lemma 4.5 loses nothing here.
    """
    M = int(check_integer_at_least("M", M, 1))
    S = int(check_integer_at_least("S", S, 1))
    s = float(check_positive("sigma_client", sigma_client))
    C = float(check_positive("clip", clip))
    trials = int(check_integer_at_least("trials", trials, 2))
    rng = np.random.default_rng(seed)
    noise = (rng.standard_normal((trials, S, M)) * s * C).sum(axis=(1, 2))
    return noise + (S * C if present else 0.0)


def estimate_gdp_mu(present, absent) -> float:
    """Estimate the Gaussian-DP parameter μ from samples of a mechanism on two neighbouring datasets.

    ``present`` and ``absent`` are independent draws of a 1-d release on the neighbours (e.g. from
    :func:`simulate_summed_release` with ``present=True`` / ``False``).  Returns
    ``μ̂ = (mean(present) − mean(absent)) / sqrt((var(present) + var(absent)) / 2)``
    (unbiased sample variances, ``ddof=1``).

    **What it estimates.**  If the two release distributions are ``N(m₁, s²)`` and ``N(m₀, s²)`` (equal
    variance), the pair is exactly μ-GDP with ``μ = |m₁ − m₀|/s`` (Dong, Roth & Su 2022, trade-off
    function ``G_μ``), and μ̂ is a consistent estimator of the signed ``(m₁ − m₀)/s``.  For the summed
    secure-aggregation release without subsampling the truth is ``√S/z_total``.

    **Assumptions.**  Both samples Gaussian with a common variance; the estimate says nothing about
    non-Gaussian or subsampled mechanisms (there the trade-off curve is not a ``G_μ``).  Sampling error
    (delta method, Gaussian samples of sizes n₁, n₀: the mean difference has variance
    ``s²(1/n₁ + 1/n₀)``, the pooled sd relative variance ``(1/n₁ + 1/n₀)/8``):
    ``SE(μ̂) ≈ sqrt((1/n₁ + 1/n₀)(1 + μ²/8))``; use 4 SE as the tolerance of a check.
    """
    x = np.asarray(as_float_array("present", present), dtype=float).ravel()
    y = np.asarray(as_float_array("absent", absent), dtype=float).ravel()
    if x.size < 2 or y.size < 2:
        raise ValueError(f"present and absent need at least 2 samples each (got {x.size} and {y.size})")
    sd = math.sqrt(0.5 * (x.var(ddof=1) + y.var(ddof=1)))
    if not sd > 0:
        raise ValueError("present and absent have zero variance: μ is unbounded (no noise)")
    return float((x.mean() - y.mean()) / sd)


def paper_code_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """ε as the seed paper's released accountant computes it (App. A.5 / ``dp_accounting.py`` of its code).

    Gaussian subsampled RDP (32-bit Skellam's bound is within 1e-7 of it, :mod:`fedtheory.privacy.skellam`) at
    integer orders 2..255, composed over ``steps = R·S``, converted with Mironov's *classic* bound
    ``ε = min_α ε(α) + log(1/δ)/(α-1)``.  Looser than the ``"rdp"`` accountant here (improved conversion,
    fractional orders), which is why the paper's noise levels are larger than :func:`per_client_noise`
    returns; used to reproduce its configurations.
    """
    orders = np.arange(2.0, 256.0)
    steps = int(check_integer_at_least("steps", steps, 1))
    rdp = subsampled_gaussian_rdp(orders, float(check_positive("noise_multiplier", noise_multiplier)),
                                  _check_sample_rate(sample_rate), steps, backend="numpy")
    return float(rdp_to_epsilon(orders, rdp, delta, conversion="classic")[0])
