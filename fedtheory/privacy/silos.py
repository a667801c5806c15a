"""Silo-specific sample-level DP (MR-MTL paper, Def. 3.1): per-silo DP-SGD steps, sample rates, noise.

Silo ``k`` holds ``n_k`` records, picks its own budget ``(ε_k, δ_k)`` and runs DP-SGD on its own data
with Poisson sampling at rate ``q_k = min(1, B/n_k)``.  Everything it sends to the server is already
DP with respect to its records, so federation is post-processing and costs nothing extra: the
privacy cost depends only on the number of DP-SGD steps the silo takes.  Adjacency: **add/remove one
record of silo k's training set** (what the subsampled-Gaussian accountants cover).

Step count (follows the paper's released code, ``kenziyuliu/private-cross-silo-fl``): one local epoch
is ``max(1, ⌊n_k/B⌋)`` DP-SGD steps, so a silo takes ``max(1, ⌊n_k/B⌋) · local_epochs · rounds`` steps,
plus ``extra_steps`` (e.g. Ditto's second local pass).  The released code runs ``T+1`` rounds
(indices ``0..T``): pass ``rounds=T+1`` to reproduce its budgets.  The training engine
(:mod:`fedtrain.ledger`) records the steps each silo actually runs in a per-silo ledger and stops a
run whose ledger differs from the plan its noise was calibrated for.  Because ``q_k`` and
the step count differ across silos, silos with the same ``(ε, δ)`` but different ``n_k`` need
different noise multipliers (MR-MTL Appendix A).
"""
from __future__ import annotations

from typing import Literal

import numpy as np

from fedtheory.validation import check_choice, check_integer_at_least, check_open_interval, check_positive
from fedtheory.privacy.accountants import ACCOUNTANTS
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.dpsgd import _check_common, epsilon, run_event

__all__ = ["silo_steps", "silo_sample_rates", "silo_noise_multipliers", "silo_epsilons"]


def silo_steps(n, batch_size: int, rounds: int, local_epochs: int = 1) -> np.ndarray:
    """DP-SGD steps each silo takes: ``max(1, ⌊n_k / B⌋) · local_epochs · rounds`` (int array, one per silo)."""
    n = np.atleast_1d(check_integer_at_least("n", n, 1))
    b = int(check_integer_at_least("batch_size", batch_size, 1))
    rounds = int(check_integer_at_least("rounds", rounds, 0))
    local_epochs = int(check_integer_at_least("local_epochs", local_epochs, 1))
    return np.maximum(1, n // b) * local_epochs * rounds


def silo_sample_rates(n, batch_size: int) -> np.ndarray:
    """Poisson sampling rates ``q_k = min(1, B / n_k)`` (float array, one per silo)."""
    n = np.atleast_1d(check_integer_at_least("n", n, 1))
    b = int(check_integer_at_least("batch_size", batch_size, 1))
    return np.minimum(1.0, b / n)


def _broadcast(n, batch_size, rounds, local_epochs, extra_steps, **per_silo):
    n = np.atleast_1d(check_integer_at_least("n", n, 1))
    extra = np.atleast_1d(check_integer_at_least("extra_steps", extra_steps, 0))
    arrays = {k: np.atleast_1d(v) for k, v in per_silo.items()}
    try:
        shape = np.broadcast_shapes(n.shape, extra.shape, *(a.shape for a in arrays.values()))
    except ValueError as exc:
        raise ValueError("n, extra_steps and the per-silo arguments must broadcast to one shape "
                         f"(got n {n.shape}, extra_steps {extra.shape}, "
                         + ", ".join(f"{k} {a.shape}" for k, a in arrays.items()) + ")") from exc
    if len(shape) != 1:
        raise ValueError(f"per-silo arguments must be scalars or 1-d arrays (got broadcast shape {shape})")
    n = np.broadcast_to(n, shape)
    steps = silo_steps(n, batch_size, rounds, local_epochs) + np.broadcast_to(extra, shape)
    q = silo_sample_rates(n, batch_size)
    return q, steps, {k: np.broadcast_to(a, shape) for k, a in arrays.items()}


def silo_noise_multipliers(eps, delta, n, batch_size: int, rounds: int, local_epochs: int = 1,
                           accountant: Literal["rdp", "pld", "prv"] = "rdp", extra_steps=0,
                           extra_rdp=None, *, cache: bool = False) -> np.ndarray:
    """Per-silo DP-SGD noise multipliers meeting each silo's ``(ε_k, δ_k)`` (silo-specific sample-level DP).

    ``eps``, ``delta``, ``n`` and ``extra_steps`` broadcast per silo.  Each silo's σ_k is calibrated by
    :func:`fedtheory.privacy.calibration.calibrate` on the event of ``silo_steps(n_k) + extra_steps_k``
    DP-SGD steps at ``q_k = min(1, B/n_k)``, so its ε is guaranteed ≤ ε_k.  Silos sharing
    ``(n_k, ε_k, δ_k, extra_steps_k)`` share one search; each search is deterministic (a silo's σ does
    not depend on the other silos).  ``extra_rdp`` (rdp only): one RDP curve over ``DEFAULT_ORDERS``
    added for every silo (e.g. IFCA's cluster selections).  ``cache=True``: the on-disk calibration cache.
    """
    check_choice("accountant", accountant, ACCOUNTANTS)
    eps = check_positive("eps", eps)
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    q, steps, a = _broadcast(n, batch_size, rounds, local_epochs, extra_steps, eps=eps, delta=delta)
    configs = np.stack([a["eps"], a["delta"], q, steps.astype(float)], axis=1)
    unique, inverse = np.unique(configs, axis=0, return_inverse=True)
    extra = None if extra_rdp is None else _check_common(0.5, 1.0, 0, accountant, extra_rdp)[3]
    sig = np.array([0.0 if np.isinf(e) else
                    calibrate(lambda z, qq=float(qq), t=int(t): run_event(z, qq, t, extra), float(e), float(d),
                              accountant, cache=cache)
                    for e, d, qq, t in unique])
    return sig[np.ravel(inverse)]


def silo_epsilons(noise_multipliers, delta, n, batch_size: int, rounds: int, local_epochs: int = 1,
                  accountant: Literal["rdp", "pld", "prv"] = "rdp", extra_steps=0, extra_rdp=None) -> np.ndarray:
    """ε each silo actually spends with the given noise multipliers (same step/sampling model as above)."""
    check_choice("accountant", accountant, ACCOUNTANTS)
    sig = np.atleast_1d(np.asarray(noise_multipliers, dtype=float))
    if np.isnan(sig).any() or (sig < 0).any():
        raise ValueError(f"noise_multipliers must be >= 0 (got {noise_multipliers!r})")
    delta = check_open_interval("delta", delta, 0.0, 1.0)
    q, steps, a = _broadcast(n, batch_size, rounds, local_epochs, extra_steps, sigma=sig, delta=delta)
    return np.array([epsilon(float(s), float(d), float(qq), int(t), accountant, extra_rdp)
                     for s, d, qq, t in zip(a["sigma"], a["delta"], q, steps)])
