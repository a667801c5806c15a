"""FedHDP's privacy-noise variance κ² as an (ε, δ) guarantee (client-level DP).

Paper: Aldaghri, Mahdavifar, Beirami, "Federated Learning with Heterogeneous Differential Privacy",
Sec. 2 (DP-FedAvg noise ``σ² = z²(C/(qN))²``; the clip norm C is the paper's S, the noise variance κ² its γ²), App. A.1 (eq. 11: ``ψ_j = φ̂_j + l_j``,
``l_j ~ N(0, N_g κ_g² I)``), Algorithm 2 (group average + ``N(0, (z C/N_g)² I)``), Lemma 7.

**The mapping.**  In the linear-regression model a private client's update is ``ψ_j = φ̂_j + l_j`` with
``l_j ~ N(0, N_g κ² I)``: the noise is written client-side so that the **average over the N_g clients of
the group carries privacy noise of variance κ² per coordinate**.  That average is exactly what
DP-FedAvg releases for the group (Algorithm 2): clipped updates (L2 norm ≤ C) averaged with the public
denominator ``n = q N_g`` (the expected number of the group's clients in a round, ``q = 1`` in the
one-shot analysis) plus ``N(0, (z C/n)² I)``.  Hence

    κ² = (z C / (q N_g))²,   z = q N_g √κ² / C,

i.e. κ is the noise std on the group average, ``z`` the noise multiplier relative to the clipped
update of one client, and each client's own share ``l_j`` has multiplier ``√(N_g) κ/C = z/√N_g``
(at ``q = 1``; the distributed-DP split, as in secure aggregation).  The paper's assumption that
clipping has negligible effect (A.1) means ``‖φ̂_j − θ⁰‖ ≤ C`` for the clients' updates, so C is in the
units of φ.  In dimensionless form ``Γ² = N_g κ²/ξ² = z² C²/(N_g ξ²)`` at ``q = 1``.

**The guarantee.**  Each private group's average is a Gaussian sum query of sensitivity C (add/remove
one *client*, with the public denominator), Poisson-subsampled at rate q when clients are sampled,
composed over ``rounds`` releases: the event ``dpsgd_event(z, q, rounds)`` accounted by the book's
registry (:mod:`fedtheory.privacy.accountants`, default ``"rdp"``) and calibrated by
:func:`fedtheory.privacy.calibration.calibrate`.  **Client-level add/remove adjacency**; the guarantee
holds against anyone who sees only the group average (server-side noise as in Algorithm 2, or secure
aggregation of the ``ψ_j``).  The server's weighting by ``r`` and the clients' personalisation are
post-processing, and the non-private group does not touch a private client's data, so FedHDP and
HDP-FedAvg (``r = 1``) give a private client the same ε.  A server that sees the individual ``ψ_j``
(the model's client-side noise without secure aggregation) only has each client's own share, multiplier
``z/√N_g``: see :func:`privacy_levels` (``local_epsilon``).

The one-shot analysis (Lemma 4) uses one release (``rounds=1``, ``q=1``); Algorithm 1 as printed sends
``ψ_j`` in both of its two rounds (``rounds=2``), the DNN experiments use ``q ≈ 100/N`` and 500 rounds.

**Lemma 7's DP-FedAvg baseline sits at a different privacy level.**  Its variance (implied by
eqs. 80-81) has *all N clients* add ``N(0, N_p κ² I)``: the sum carries noise std ``√(N N_p) κ`` for
sensitivity C, multiplier ``z √(N/N_p) = z/√(1-ρ_np)`` — more noise than the private group of FedHDP,
so a *smaller* ε.  At FedHDP's level (multiplier z on the sum of all N clients) DP-FedAvg's server
variance is ``σ_c²/N + (1-ρ_np)² κ²``, exactly HDP-FedAvg's: the gap (81) ``ρ_np(1-ρ_np)κ²`` is the
price of the stricter level, not of the aggregator.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fedtheory.validation import (check_choice, check_integer_at_least, check_nonnegative, check_open_interval,
                                   check_positive)
from fedtheory.privacy.accountants import ACCOUNTANTS, get_accountant
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.events import dpsgd_event

__all__ = [
    "ADJACENCY", "noise_multiplier_of_gamma2", "gamma2_of_noise_multiplier", "epsilon_of_gamma2",
    "gamma2_for_epsilon", "lemma7_dp_fedavg_multiplier", "dp_fedavg_server_error_at_equal_privacy",
    "PrivacyLevels", "privacy_levels",
]

#: Adjacency notion of every ε in this module.
ADJACENCY = "client-level add/remove (one client's whole data), public group size"


def _setting(clip, n_clients, sample_rate):
    S = float(check_positive("clip", clip))
    Ng = int(check_integer_at_least("n_clients", n_clients, 1))
    q = float(np.asarray(sample_rate, dtype=float))
    if not 0.0 < q <= 1.0:
        raise ValueError(f"sample_rate must lie in (0, 1] (got {sample_rate!r})")
    return S, Ng, q


def noise_multiplier_of_gamma2(gamma2: float, clip: float, n_clients: int, sample_rate: float = 1.0) -> float:
    """Noise multiplier ``z = q N_g √κ² / C`` of the group average whose privacy-noise variance is ``gamma2``."""
    g = float(check_positive("gamma2", gamma2))
    S, Ng, q = _setting(clip, n_clients, sample_rate)
    return q * Ng * np.sqrt(g) / S


def gamma2_of_noise_multiplier(noise_multiplier: float, clip: float, n_clients: int,
                               sample_rate: float = 1.0) -> float:
    """``κ² = (z C/(q N_g))²``: the variance of the privacy noise on the group average (module docstring)."""
    z = float(check_positive("noise_multiplier", noise_multiplier))
    S, Ng, q = _setting(clip, n_clients, sample_rate)
    return (z * S / (q * Ng)) ** 2


def _rho(rho_np) -> float:
    rho = float(np.asarray(rho_np, dtype=float))
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"rho_np must lie in [0, 1) (got {rho_np!r})")
    return rho


def _event(z, q, rounds):
    return dpsgd_event(z, q, rounds)


def epsilon_of_gamma2(gamma2: float, delta: float, *, clip: float, n_clients: int, sample_rate: float = 1.0,
                      rounds: int = 1, accountant: str = "rdp") -> float:
    """ε (client-level add/remove, at ``delta``) of a private group whose average carries noise variance κ².

    ``rounds`` releases of the Poisson-subsampled (rate ``sample_rate``) Gaussian sum query with
    multiplier :func:`noise_multiplier_of_gamma2`, accounted by ``accountant`` (``"rdp"``, ``"pld"``
    or ``"prv"``; :mod:`fedtheory.privacy.accountants`).
    """
    check_choice("accountant", accountant, ACCOUNTANTS)
    delta = float(check_open_interval("delta", delta, 0.0, 1.0))
    rounds = int(check_integer_at_least("rounds", rounds, 1))
    z = noise_multiplier_of_gamma2(gamma2, clip, n_clients, sample_rate)
    return float(get_accountant(accountant).epsilon(_event(z, float(sample_rate), rounds), delta))


def gamma2_for_epsilon(target_eps: float, delta: float, *, clip: float, n_clients: int, sample_rate: float = 1.0,
                       rounds: int = 1, accountant: str = "rdp") -> float:
    """Smallest κ² (within 0.2 %) whose :func:`epsilon_of_gamma2` is certified ≤ ``target_eps``.

    The noise multiplier comes from the book's one calibration,
    :func:`fedtheory.privacy.calibration.calibrate` (ε ≤ target guaranteed, z within 0.1 % of the
    root), then ``κ² = (z C/(q N_g))²``.
    """
    S, Ng, q = _setting(clip, n_clients, sample_rate)
    rounds = int(check_integer_at_least("rounds", rounds, 1))
    z = calibrate(lambda zz: _event(zz, q, rounds), target_eps, delta, accountant)
    return gamma2_of_noise_multiplier(z, S, Ng, q)


def lemma7_dp_fedavg_multiplier(noise_multiplier: float, rho_np: float) -> float:
    """Multiplier of Lemma 7's DP-FedAvg baseline (all N clients add ``N(0, N_p κ²)``): ``z/√(1-ρ_np)``."""
    z = float(check_positive("noise_multiplier", noise_multiplier))
    return z / np.sqrt(1.0 - _rho(rho_np))


def dp_fedavg_server_error_at_equal_privacy(N: int, rho_np: float, alpha2: float, tau2: float, gamma2: float):
    """Server variance of DP-FedAvg calibrated to FedHDP's private level (multiplier z on the sum of all N):
    ``σ_c²/N + (1-ρ_np)² κ²`` (= HDP-FedAvg's); Lemma 7's baseline has ``(1-ρ_np) κ²`` instead."""
    N = int(check_integer_at_least("N", N, 1))
    rho = _rho(rho_np)
    sc = float(check_positive("alpha2", alpha2)) + float(check_nonnegative("tau2", tau2))
    return sc / N + (1 - rho) ** 2 * float(check_positive("gamma2", gamma2))


class PrivacyLevels(NamedTuple):
    """ε (client-level add/remove) of the parties of the opt-out setting at one κ²."""

    noise_multiplier: float          #: z of the private group's average
    fedhdp_epsilon: float            #: a private client under FedHDP / HDP-FedAvg (any r)
    lemma7_dp_fedavg_multiplier: float
    lemma7_dp_fedavg_epsilon: float  #: every client under Lemma 7's DP-FedAvg (stricter)
    local_multiplier: float          #: one client's own share z/√N_p (no secure aggregation)
    local_epsilon: float             #: ... against a server that sees the individual ψ_j


def privacy_levels(gamma2: float, delta: float, *, clip: float, N: int, N_p: int, rounds: int = 1,
                   accountant: str = "rdp") -> PrivacyLevels:
    """The privacy levels of the one-shot (``q = 1``) opt-out model at ``gamma2`` (module docstring)."""
    N = int(check_integer_at_least("N", N, 1))
    N_p = int(check_integer_at_least("N_p", N_p, 1))
    if N_p > N:
        raise ValueError(f"N_p must be <= N (got N_p={N_p}, N={N})")
    acc = get_accountant(accountant)
    delta = float(check_open_interval("delta", delta, 0.0, 1.0))
    rounds = int(check_integer_at_least("rounds", rounds, 1))
    z = noise_multiplier_of_gamma2(gamma2, clip, N_p, 1.0)
    z7 = lemma7_dp_fedavg_multiplier(z, 1 - N_p / N)
    zl = z / np.sqrt(N_p)
    eps = [float(acc.epsilon(_event(x, 1.0, rounds), delta)) for x in (z, z7, zl)]
    return PrivacyLevels(float(z), eps[0], float(z7), eps[1], float(zl), eps[2])
