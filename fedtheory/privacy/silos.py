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

**The privacy plan.**  :func:`silo_privacy_plan` is the one constructor of what every silo will run
(:class:`PrivacyPlan`: DP-SGD steps, private selections and sampling rates, from :func:`silo_steps` and
:func:`silo_sample_rates`).  The training engine's methods declare their plan with it
(:meth:`fedtrain.methods.base.Method.privacy_plan`), its ledger checks the steps run against it
(:mod:`fedtrain.ledger`), ``fedtrain advise`` calibrates with it, and :func:`silo_noise_multipliers` and
:func:`silo_epsilons` (the privacy primer's calibration) are computed on it.  :func:`silo_event` is one silo's
plan as a ``dp_accounting`` event.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from fedtheory.validation import check_choice, check_integer_at_least, check_open_interval, check_positive
from fedtheory.privacy.accountants import ACCOUNTANTS
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.dpsgd_accounting import _check_common, epsilon, run_event
from fedtheory.privacy.events import DpEvent, compose, dpsgd_event, selection_event

__all__ = ["silo_steps", "silo_sample_rates", "PrivacyPlan", "silo_privacy_plan", "silo_event", "per_silo",
           "silo_noise_multipliers", "silo_epsilons"]


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


@dataclass(frozen=True)
class PrivacyPlan:
    """What each of K silos will run: ``dpsgd_steps (K,)``, ``selections (K,)`` (private selections) and, when the
    plan was built from the silos' sizes (:func:`silo_privacy_plan`), the Poisson ``sample_rates (K,)``."""

    dpsgd_steps: np.ndarray
    selections: np.ndarray = None  # type: ignore[assignment]
    sample_rates: np.ndarray | None = None

    def __post_init__(self):
        steps = np.atleast_1d(np.asarray(check_integer_at_least("dpsgd_steps", self.dpsgd_steps, 0), dtype=np.int64))
        sel = np.zeros_like(steps) if self.selections is None else np.broadcast_to(
            np.asarray(check_integer_at_least("selections", self.selections, 0), dtype=np.int64), steps.shape).copy()
        object.__setattr__(self, "dpsgd_steps", steps)
        object.__setattr__(self, "selections", sel)
        if self.sample_rates is not None:
            q = np.broadcast_to(np.asarray(self.sample_rates, dtype=float), steps.shape).copy()
            if not ((q > 0) & (q <= 1)).all():
                raise ValueError(f"sample_rates must be in (0, 1] (got {self.sample_rates!r})")
            object.__setattr__(self, "sample_rates", q)

    def events(self, z, q=None, selection_eps=0.0) -> list[DpEvent]:
        """The plan as one DpEvent per silo (:func:`silo_event`) at noise multipliers ``z`` (and sampling rates
        ``q``, default the plan's)."""
        return _events(self.dpsgd_steps, self.selections, z, self.sample_rates if q is None else q, selection_eps)


def silo_privacy_plan(n, batch_size: int, rounds: int, local_epochs: int = 1, extra_steps=0,
                      selections=0) -> PrivacyPlan:
    """The privacy plan of silos of sizes ``n`` running DP-SGD with Poisson sampling at ``q_k = min(1, B/n_k)``:
    ``silo_steps(n, batch_size, rounds, local_epochs) + extra_steps`` DP-SGD steps and ``selections`` private
    selections per silo (``extra_steps`` and ``selections`` broadcast per silo).

    >>> plan = silo_privacy_plan([10, 64, 100], 32, rounds=5, local_epochs=2, extra_steps=1)
    >>> plan.dpsgd_steps.tolist(), plan.sample_rates.tolist()
    ([11, 21, 31], [1.0, 0.5, 0.32])
    """
    n = np.atleast_1d(check_integer_at_least("n", n, 1))
    extra = np.atleast_1d(check_integer_at_least("extra_steps", extra_steps, 0))
    try:
        shape = np.broadcast_shapes(n.shape, extra.shape)
    except ValueError as exc:
        raise ValueError(f"extra_steps must be a scalar or hold one value per silo (got {extra.shape} for "
                         f"{n.shape} silos)") from exc
    n = np.broadcast_to(n, shape)
    steps = silo_steps(n, batch_size, rounds, local_epochs) + np.broadcast_to(extra, shape)
    return PrivacyPlan(steps, np.broadcast_to(np.asarray(selections), shape), silo_sample_rates(n, batch_size))


def silo_event(noise_multiplier: float, sample_rate: float, dpsgd_steps: int, selections: int = 0,
               selection_eps: float = 0.0) -> DpEvent:
    """The DpEvent of one silo: ``dpsgd_steps`` DP-SGD steps composed with ``selections`` ε_sel-selections."""
    return compose(dpsgd_event(noise_multiplier, sample_rate, int(dpsgd_steps)),
                   selection_event(selection_eps, int(selections)))


def _events(steps, selections, z, q, selection_eps) -> list[DpEvent]:
    k = len(steps)
    z, q, se = per_silo("z", z, k), per_silo("q", q, k), per_silo("selection_eps", selection_eps, k)
    return [silo_event(z[i], q[i], steps[i], selections[i], se[i]) for i in range(k)]


def per_silo(name: str, value, k: int) -> np.ndarray:
    """``value`` (a scalar or one value per silo) as a float array of the ``k`` silos; ``ValueError`` naming
    ``name`` otherwise."""
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.size == 1:
        arr = np.full(k, arr.item())
    if arr.shape != (k,):
        raise ValueError(f"{name} must be a scalar or hold one value per silo ({k} silos; got {arr.size})")
    return arr


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
    plan = silo_privacy_plan(np.broadcast_to(n, shape), batch_size, rounds, local_epochs,
                             np.broadcast_to(extra, shape))
    return plan.sample_rates, plan.dpsgd_steps, {k: np.broadcast_to(a, shape) for k, a in arrays.items()}


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
