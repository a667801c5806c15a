"""Compatibility shim: the engine's accounting lives in :mod:`fedtrain.ledger`.

Kept for callers of the earlier API (``sample_rates``, ``steps_per_epoch``, ``expected_batch_sizes``,
``silo_steps``, ``noise_multipliers``, ``spent_epsilons`` for plain DP-SGD); new code uses
:mod:`fedtrain.ledger` (privacy plans, the per-silo ledger, events).
"""
from __future__ import annotations

import numpy as np

from fedtrain.ledger import (PrivacyPlan, SiloLedger, expected_batch_sizes, sample_rates, spent_epsilons as _spent,
                             steps_per_epoch)
from fedtrain.ledger import noise_multipliers as _noise

__all__ = ["sample_rates", "steps_per_epoch", "expected_batch_sizes", "silo_steps", "noise_multipliers",
           "spent_epsilons"]


def silo_steps(n, batch_size: int, rounds: int, local_epochs: int) -> np.ndarray:
    """Total DP-SGD steps per silo over a run, ``rounds·local_epochs·m_k``."""
    return steps_per_epoch(n, batch_size) * int(rounds) * int(local_epochs)


def noise_multipliers(eps, delta, n, batch_size: int, rounds: int, local_epochs: int, accountant: str,
                      extra_steps=0) -> np.ndarray:
    """Per-silo z_k for plain DP-SGD (``silo_steps + extra_steps`` steps); 0 where ``eps_k = inf``."""
    plan = PrivacyPlan(silo_steps(n, batch_size, rounds, local_epochs) + np.asarray(extra_steps, dtype=np.int64))
    return _noise(plan, eps, delta, sample_rates(n, batch_size), accountant)


def spent_epsilons(z, delta, n, batch_size: int, rounds: int, local_epochs: int, accountant: str,
                   extra_steps=0) -> np.ndarray:
    """ε spent per silo by ``silo_steps + extra_steps`` DP-SGD steps at noise ``z`` (inf where z = 0)."""
    led = SiloLedger(len(np.atleast_1d(n)))
    led.record_dpsgd(silo_steps(n, batch_size, rounds, local_epochs) + np.asarray(extra_steps, dtype=np.int64))
    return _spent(led, z, delta, sample_rates(n, batch_size), accountant)
