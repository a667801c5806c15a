"""The per-silo privacy ledger of the training engine (silo-specific sample-level DP, MR-MTL paper Sec. 3).

Each method declares its **privacy plan** (:class:`~fedtheory.privacy.silos.PrivacyPlan`, built by
:func:`fedtheory.privacy.silos.silo_privacy_plan`, both re-exported here): how many DP-SGD steps every silo
will run, at which sampling rate, and how many private selections it will make.  The noise multipliers are calibrated for the
plan, the engine appends to the :class:`SiloLedger` as steps *actually run* (``Trainer.local_train``)
and as selections actually happen (IFCA), and ``eps_spent`` is computed from the ledger.  A silo that
runs more than its plan stops the run at once; a run whose final ledger differs from its plan stops
with :class:`LedgerMismatchError` before any result is returned.

What silo ``k`` runs, as ``dp_accounting`` events (:mod:`fedtheory.privacy.events`)::

    ComposedDpEvent([SelfComposedDpEvent(PoissonSampledDpEvent(q_k, GaussianDpEvent(z_k)), T_k),
                     ZCDpEvent(rho = S_k · ε_sel,k² / 8)])        # S_k exponential-mechanism selections

Sampling convention (the paper's released code; Opacus' Poisson sampler):

* silo ``k`` samples every record independently with probability ``q_k = min(B, n_k) / n_k``;
* one local epoch is ``m_k = max(1, floor(n_k / B))`` such steps (the released code's ``floor(n_k/B)``,
  with at least one step for silos smaller than a batch);
* the clipped-and-noised gradient sum is divided by the *expected* batch size ``q_k·n_k``.

Accountant: ``rdp`` / ``pld`` / ``prv`` (:mod:`fedtheory.privacy.accountants`); selections compose in
RDP only.  Adjacency: :data:`ADJACENCY`.  Calibration: :func:`fedtheory.privacy.calibration.calibrate`
(deterministic; each distinct silo configuration once; the on-disk cache is on, so repeated runs and
sweeps skip it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fedtheory.validation import check_integer_at_least
from fedtheory.privacy.accountants import get_accountant
from fedtheory.privacy.calibration import calibrate_many
from fedtheory.privacy.events import DpEvent, selection_event
from fedtheory.privacy.silos import (PrivacyPlan, per_silo, silo_event, silo_privacy_plan, silo_sample_rates,
                                     silo_steps)

__all__ = [
    "ADJACENCY", "PrivacyPlan", "silo_privacy_plan", "SiloLedger", "LedgerMismatchError", "PrivacyGuaranteeError",
    "check_noise_multipliers", "check_spent",
    "sample_rates", "steps_per_epoch", "expected_batch_sizes", "silo_event",
    "noise_multipliers", "spent_epsilons", "selection_epsilon",
]

#: The adjacency notion of every result of the engine.
ADJACENCY = "add/remove-one record of a silo's training set (silo-specific sample-level DP)"


class LedgerMismatchError(RuntimeError):
    """The steps or selections a run executed differ from those its noise was calibrated for."""


class PrivacyGuaranteeError(RuntimeError):
    """A run cannot certify its target ε: a private silo's noise multiplier is 0 or not finite, or the ε that
    the accountant computes from the run's ledger exceeds the silo's target.  The run returns no result."""


# --------------------------------------------------------------------------------------------------
# the sampling convention
# --------------------------------------------------------------------------------------------------
def sample_rates(n, batch_size: int) -> np.ndarray:
    """Poisson sampling rate per silo, ``q_k = min(1, B / n_k)`` (what the ledger charges;
    :func:`fedtheory.privacy.silos.silo_sample_rates`)."""
    return silo_sample_rates(n, batch_size)


def steps_per_epoch(n, batch_size: int) -> np.ndarray:
    """DP-SGD steps in one local epoch, ``m_k = max(1, floor(n_k / B))`` (:func:`fedtheory.privacy.silos.silo_steps`
    of one round of one epoch)."""
    return silo_steps(n, batch_size, 1, 1)


def expected_batch_sizes(n, batch_size: int) -> np.ndarray:
    """Expected Poisson batch size ``q_k n_k = min(B, n_k)`` (the divisor of the noisy gradient sum)."""
    n = np.atleast_1d(np.asarray(check_integer_at_least("n", n, 1), dtype=np.int64))
    return np.minimum(int(batch_size), n).astype(float)


# --------------------------------------------------------------------------------------------------
# plan and ledger
# --------------------------------------------------------------------------------------------------
@dataclass
class SiloLedger:
    """What each of K silos has actually run; checked against ``plan`` (if set) at every append."""

    num_silos: int
    plan: PrivacyPlan | None = None
    dpsgd_steps: np.ndarray = field(init=False)
    selections: np.ndarray = field(init=False)

    def __post_init__(self):
        self.dpsgd_steps = np.zeros(self.num_silos, dtype=np.int64)
        self.selections = np.zeros(self.num_silos, dtype=np.int64)

    def _check_not_over(self, what: str) -> None:
        if self.plan is None:
            return
        for name, done, planned in (("DP-SGD steps", self.dpsgd_steps, self.plan.dpsgd_steps),
                                    ("selections", self.selections, self.plan.selections)):
            over = np.flatnonzero(done > planned)
            if over.size:
                k = int(over[0])
                raise LedgerMismatchError(
                    f"privacy ledger: silo {k} ran {int(done[k])} {name} after {what} but its noise was calibrated "
                    f"for {int(planned[k])}; stopping (the run would exceed the silo's privacy budget)")

    def record_dpsgd(self, steps) -> None:
        """Append one local pass: silo k ran ``steps[k]`` DP-SGD steps."""
        self.dpsgd_steps = self.dpsgd_steps + np.asarray(steps, dtype=np.int64)
        self._check_not_over("a local pass")

    def record_gaussian_releases(self, releases) -> None:
        """Append one client-level round: row g (a privacy group of :mod:`fedtrain.clientdp`) released
        ``releases[g]`` noisy sums of its Poisson-sampled clients' clipped updates.  Each is a Poisson-subsampled
        Gaussian mechanism, the event of one DP-SGD step, so it is counted (and accounted) as one."""
        self.dpsgd_steps = self.dpsgd_steps + np.asarray(releases, dtype=np.int64)
        self._check_not_over("a client-level round")

    def record_selections(self, count=1) -> None:
        """Append private selections: silo k made ``count[k]`` (or ``count``) exponential-mechanism selections."""
        self.selections = self.selections + np.broadcast_to(np.asarray(count, dtype=np.int64), (self.num_silos,))
        self._check_not_over("a private selection")

    def check_complete(self) -> None:
        """Raise :class:`LedgerMismatchError` unless every silo ran exactly its plan."""
        if self.plan is None:
            raise LedgerMismatchError("privacy ledger: no plan was declared for this run")
        for name, done, planned in (("DP-SGD steps", self.dpsgd_steps, self.plan.dpsgd_steps),
                                    ("selections", self.selections, self.plan.selections)):
            bad = np.flatnonzero(done != planned)
            if bad.size:
                k = int(bad[0])
                raise LedgerMismatchError(
                    f"privacy ledger differs from the plan: silo {k} ran {int(done[k])} {name}, the noise was "
                    f"calibrated for {int(planned[k])} ({bad.size} silo(s) differ)")

    def events(self, z, q, selection_eps=0.0) -> list[DpEvent]:
        """What ran, as one DpEvent per silo (:func:`silo_event`) at noise multipliers ``z``."""
        return PrivacyPlan(self.dpsgd_steps, self.selections).events(z, q, selection_eps)

    def summary(self, q: np.ndarray) -> dict:
        """JSON-safe per-silo record: sampling rates charged, DP-SGD steps and selections run."""
        return {"sample_rates": [float(v) for v in q], "dpsgd_steps": [int(v) for v in self.dpsgd_steps],
                "selections": [int(v) for v in self.selections]}


# --------------------------------------------------------------------------------------------------
# events, calibration and ε spent
# --------------------------------------------------------------------------------------------------
def noise_multipliers(plan: PrivacyPlan, eps, delta, q, accountant: str, selection_eps=0.0,
                      cache: bool = True) -> np.ndarray:
    """Per-silo noise multiplier z_k whose silo event meets ``(eps_k, delta_k)``; 0 where ``eps_k = inf``.

    Each distinct ``(q_k, steps_k, selections_k, ε_sel,k, ε_k, δ_k)`` is calibrated once by
    :func:`fedtheory.privacy.calibration.calibrate_many` (deterministic; ``cache``: the on-disk cache, whose entries
    for the run are verified in one batched evaluation).
    """
    k = plan.dpsgd_steps.size
    eps, delta, q = per_silo("eps", eps, k), per_silo("delta", delta, k), per_silo("q", q, k)
    sel_eps = per_silo("selection_eps", selection_eps, k)
    out = np.zeros(k)
    keys = {}
    for i in range(k):
        if not math.isinf(eps[i]):
            keys.setdefault((float(q[i]), int(plan.dpsgd_steps[i]), int(plan.selections[i]), float(sel_eps[i]),
                             float(eps[i]), float(delta[i])), []).append(i)
    fns = [lambda z, qq=qq, t=t, s=s, se=se: silo_event(z, qq, t, s, se) for qq, t, s, se, _, _ in keys]
    zs = calibrate_many(fns, [key[4] for key in keys], [key[5] for key in keys], accountant, cache=cache)
    for silos, z in zip(keys.values(), zs):
        out[silos] = z
    return out


def selection_epsilon(selections: int, selection_eps: float, delta: float, accountant: str = "rdp") -> float:
    """ε at ``delta`` of ``selections`` private selections alone (no DP-SGD step): each an exponential
    mechanism with ``ε_sel = selection_eps``, composed as zCDP ``ρ = S·ε_sel²/8`` (bounded range, see the module
    docstring).  A silo whose target ε is at most this cannot be calibrated at any noise multiplier: IFCA
    selecting in every round of a long run (``select_frac = 1``) meets this (Fig. 4 at paper scale)."""
    check_integer_at_least("selections", selections, 0)
    if not selection_eps >= 0 or not math.isfinite(selection_eps):
        raise ValueError(f"selection_eps must be finite and >= 0 (got {selection_eps!r})")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1) (got {delta!r})")
    return float(get_accountant(accountant).epsilon(selection_event(float(selection_eps), int(selections)), delta))


def check_noise_multipliers(z, eps, plan: PrivacyPlan, accountant: str) -> None:
    """Raise :class:`PrivacyGuaranteeError` unless every private silo (finite ``eps_k``) that runs DP-SGD steps
    has a finite noise multiplier ``z_k > 0`` (checked before training: zero noise releases the data)."""
    k = plan.dpsgd_steps.size
    z, eps = per_silo("z", z, k), per_silo("eps", eps, k)
    bad = np.flatnonzero(np.isfinite(eps) & (plan.dpsgd_steps > 0) & ~(np.isfinite(z) & (z > 0)))
    if bad.size:
        i = int(bad[0])
        raise PrivacyGuaranteeError(
            f"privacy: silo {i} has target eps={eps[i]:g} but noise_multiplier={z[i]!r} (must be finite and > 0; "
            f"{bad.size} silo(s) affected, {accountant} accountant, {ADJACENCY}); stopping before training, "
            "nothing is stored")


def check_spent(spent, eps, accountant: str) -> None:
    """Raise :class:`PrivacyGuaranteeError` if a private silo's ε spent (computed by ``accountant`` from the
    ledger) exceeds its target ``eps_k``, or is not a number (checked before a result is returned or stored)."""
    spent, eps = np.asarray(spent, dtype=float), np.asarray(eps, dtype=float)
    bad = np.flatnonzero(np.isfinite(eps) & ~(spent <= eps))
    if bad.size:
        i = int(bad[0])
        raise PrivacyGuaranteeError(
            f"privacy: silo {i} spent eps={spent[i]!r} according to its ledger ({accountant} accountant, "
            f"{ADJACENCY}), above its target eps={eps[i]!r} ({bad.size} silo(s) affected); the run is discarded, "
            "nothing is stored")


def spent_epsilons(ledger: SiloLedger, z, delta, q, accountant: str, selection_eps=0.0) -> np.ndarray:
    """ε each silo spent according to the ledger (what actually ran) at noise ``z_k``; ``inf`` where z_k = 0."""
    k = ledger.num_silos
    z, delta, q = per_silo("z", z, k), per_silo("delta", delta, k), per_silo("q", q, k)
    sel_eps = per_silo("selection_eps", selection_eps, k)
    acc = get_accountant(accountant)
    out = np.full(k, math.inf)
    memo: dict = {}
    for i in range(k):
        if z[i] <= 0:
            continue
        key = (float(z[i]), float(q[i]), int(ledger.dpsgd_steps[i]), int(ledger.selections[i]), float(sel_eps[i]),
               float(delta[i]))
        if key not in memo:
            memo[key] = acc.epsilon(silo_event(*key[:5]), key[5])
        out[i] = memo[key]
    return out
