"""Per-silo DP-SGD accounting for the training engine (silo-specific sample-level DP, paper Sec. 3).

Thin adapter over :mod:`fedtheory.privacy.silos` (the single source of truth for calibration): it
fixes the engine's sampling convention and caches calibrations, which are expensive (one root
search per distinct silo size) and repeated across a sweep.

Sampling convention (paper's code, notes §2.3; Opacus' Poisson sampler):

* silo ``k`` samples every record independently with probability ``q_k = min(B, n_k) / n_k``;
* one local epoch is ``m_k = max(1, floor(n_k / B))`` such steps (the released code's
  ``floor(n_k/B)``, with at least one step for silos smaller than a batch);
* a run of ``rounds`` rounds and ``local_epochs`` epochs per round is ``rounds·local_epochs·m_k``
  steps (``silo_steps``); methods with extra passes (Ditto) add ``extra_steps``;
* the clipped-and-noised gradient sum is divided by the *expected* batch size ``q_k·n_k`` (Opacus'
  ``expected_batch_size`` normalization).

Accountant: ``rdp`` / ``pld`` / ``prv`` for the Poisson-subsampled Gaussian under add/remove-one
adjacency.  IFCA's private cluster selections (exponential mechanism, ``α ε_sel²/8`` RDP per
selection, paper App. A / notes §2.2) are composed with DP-SGD in RDP and require ``rdp``.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from fedtheory.validation import check_integer_at_least

__all__ = [
    "sample_rates",
    "steps_per_epoch",
    "expected_batch_sizes",
    "silo_steps",
    "noise_multipliers",
    "spent_epsilons",
    "ifca_noise_multipliers",
    "ifca_spent_epsilons",
]


def sample_rates(n: np.ndarray, batch_size: int) -> np.ndarray:
    """Poisson sampling rate per silo, ``q_k = min(1, B / n_k)`` (:func:`fedtheory.privacy.silos.silo_sample_rates`)."""
    from fedtheory.privacy import silos

    return silos.silo_sample_rates(n, batch_size)


def steps_per_epoch(n: np.ndarray, batch_size: int) -> np.ndarray:
    """DP-SGD steps in one local epoch, ``m_k = max(1, floor(n_k / B))``."""
    n = np.asarray(check_integer_at_least("n", n, 1), dtype=np.int64)
    return np.maximum(1, n // int(batch_size))


def expected_batch_sizes(n: np.ndarray, batch_size: int) -> np.ndarray:
    """Expected Poisson batch size ``q_k n_k = min(B, n_k)`` (the divisor of the noisy gradient sum)."""
    n = np.asarray(check_integer_at_least("n", n, 1), dtype=np.int64)
    return np.minimum(batch_size, n).astype(float)


def silo_steps(n, batch_size: int, rounds: int, local_epochs: int) -> np.ndarray:
    """Total DP-SGD steps per silo over a run (:func:`fedtheory.privacy.silos.silo_steps`)."""
    from fedtheory.privacy import silos

    out = np.asarray(silos.silo_steps(n, batch_size, rounds, local_epochs), dtype=np.int64)
    mine = steps_per_epoch(n, batch_size) * int(rounds) * int(local_epochs)
    if not np.array_equal(out, mine):  # the engine runs exactly the steps the accountant charges
        raise RuntimeError("fedtheory.privacy.silos.silo_steps disagrees with the engine's sampling convention "
                           f"(floor(n/B) steps per epoch): {out[:5]} vs {mine[:5]}")
    return out


def _tuple(x) -> tuple:
    return tuple(np.atleast_1d(np.asarray(x, dtype=float)).tolist())


@lru_cache(maxsize=4096)
def _noise_cached(eps: tuple, delta: tuple, n: tuple, batch_size: int, rounds: int, local_epochs: int,
                  accountant: str, extra: tuple) -> tuple:
    n_arr = np.asarray(n, dtype=np.int64)
    eps_arr, delta_arr = np.asarray(eps), np.asarray(delta)
    extra_arr = np.asarray(extra, dtype=np.int64)
    from fedtheory.privacy import silos

    finite = np.isfinite(eps_arr)
    out = np.zeros(len(n_arr))
    if finite.any():
        idx = np.flatnonzero(finite)
        z = silos.silo_noise_multipliers(eps_arr[idx], delta_arr[idx], n_arr[idx], batch_size, rounds,
                                         local_epochs, accountant=accountant, extra_steps=extra_arr[idx])
        out[idx] = np.asarray(z, dtype=float)
    return tuple(out.tolist())


def _broadcast(name: str, value, k: int) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.size == 1:
        arr = np.full(k, arr.item())
    if arr.shape != (k,):
        raise ValueError(f"{name} must be a scalar or hold one value per silo ({k} silos; got {arr.size})")
    return arr


def noise_multipliers(eps, delta, n, batch_size: int, rounds: int, local_epochs: int, accountant: str,
                      extra_steps=0) -> np.ndarray:
    """Per-silo noise multiplier z_k with ε_k(z_k) ≤ eps_k; 0 where ``eps_k = inf`` (non-private silo)."""
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    k = n.size
    return np.asarray(_noise_cached(_tuple(_broadcast("eps", eps, k)), _tuple(_broadcast("delta", delta, k)),
                                    tuple(int(v) for v in n), int(batch_size), int(rounds), int(local_epochs),
                                    accountant, tuple(int(v) for v in _broadcast("extra_steps", extra_steps, k))))


def spent_epsilons(z, delta, n, batch_size: int, rounds: int, local_epochs: int, accountant: str,
                   extra_steps=0) -> np.ndarray:
    """ε actually spent per silo by ``silo_steps + extra_steps`` steps at noise ``z`` (inf where z = 0)."""
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    k = n.size
    z = _broadcast("z", z, k)
    delta = _broadcast("delta", delta, k)
    extra = _broadcast("extra_steps", extra_steps, k).astype(np.int64)
    out = np.full(k, math.inf)
    ok = z > 0
    if ok.any():
        from fedtheory.privacy import silos

        idx = np.flatnonzero(ok)
        out[idx] = silos.silo_epsilons(z[idx], delta[idx], n[idx], batch_size, rounds, local_epochs,
                                       accountant=accountant, extra_steps=extra[idx])
    return out


# --------------------------------------------------------------------------------------------------
# IFCA: DP-SGD composed with private cluster selections (RDP only)
# --------------------------------------------------------------------------------------------------
def _ifca_call(fn, first, delta, n, batch_size, rounds, local_epochs, selections, select_eps, skip):
    """Apply ``fn`` (silo_noise_multipliers / silo_epsilons) per group of silos sharing ε_sel."""
    from fedtheory.privacy import silos
    from fedtheory.privacy.exponential import ifca_selection_rdp

    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    k = n.size
    first, delta = _broadcast("value", first, k), _broadcast("delta", delta, k)
    select_eps = _broadcast("select_eps", select_eps, k)
    out = np.full(k, np.nan)
    todo = ~skip(first, select_eps)
    for e in np.unique(select_eps[todo]):
        idx = np.flatnonzero(todo & (select_eps == e))
        extra = ifca_selection_rdp(int(selections), float(e))
        out[idx] = getattr(silos, fn)(first[idx], delta[idx], n[idx], batch_size, rounds, local_epochs,
                                      accountant="rdp", extra_rdp=extra)
    return out


def ifca_noise_multipliers(eps, delta, n, batch_size: int, rounds: int, local_epochs: int,
                           selections: int, select_eps) -> np.ndarray:
    """DP-SGD noise z_k such that DP-SGD plus ``selections`` EM selections at ε_sel,k meets ε_k (RDP).

    Per silo: ``RDP(α) = steps_k · RDP_SG(α; q_k, z_k) + selections · α ε_sel,k² / 8`` (the exponential
    mechanism is ε²/8-zCDP, bounded-range analysis, notes §2.2; :func:`fedtheory.privacy.exponential.
    ifca_selection_rdp`), converted with Lemma A.2 by :func:`fedtheory.privacy.silos.silo_noise_multipliers`.
    0 for non-private silos (ε_k = ∞).
    """
    z = _ifca_call("silo_noise_multipliers", eps, delta, n, batch_size, rounds, local_epochs, selections,
                   select_eps, lambda e, s: ~np.isfinite(e))
    return np.nan_to_num(z, nan=0.0)


def ifca_spent_epsilons(z, delta, n, batch_size: int, rounds: int, local_epochs: int, selections: int,
                        select_eps) -> np.ndarray:
    """ε spent per silo by IFCA's DP-SGD steps and selections (RDP composition, Lemma A.2); inf if z_k = 0."""
    e = _ifca_call("silo_epsilons", z, delta, n, batch_size, rounds, local_epochs, selections, select_eps,
                   lambda zz, s: (zz <= 0) | ~np.isfinite(s))
    return np.nan_to_num(e, nan=np.inf)
