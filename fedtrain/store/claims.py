"""The privacy claim of a stored row, recomputed on read: every row a store serves proves its ε.

A row claims, per silo (record-level runs, :class:`~fedtrain.engine.RunResult`) or per privacy group (client-level
runs, :class:`~fedtrain.clientdp.trainer.FedHDPResult`), an ε at a δ for the add/remove adjacency its method names.
The claim is a number written in a file, so on read it is recomputed from what the row says ran, with the
accountant the row names (:func:`fedtheory.privacy.accountants.get_accountant`), and must meet the budget:

* **record-level rows** (MR-MTL paper Sec. 3, silo-specific sample-level DP): silo ``k`` ran ``T_k`` DP-SGD steps
  Poisson-sampled at rate ``q_k`` with noise multiplier ``z_k``, composed with ``S_k`` exponential-mechanism
  selections of ``ε_sel,k`` each (IFCA), the event :func:`fedtheory.privacy.silos.silo_event`.  Its ε at ``δ_k``
  must not exceed the claimed ``eps_spent[k]`` (relative :data:`CLAIM_RTOL`, the rounding of one ε evaluated at
  other orders) nor the silo's budget ``ε_k`` of the row's configuration (exactly); ``δ_k`` must be the config's (or
  the dataset's paper δ, else the engine's default for the silo's size, :func:`fedtrain.config.default_delta`).  ``q_k`` is checked against the data: ``q_k = min(1, B/n_k)`` (
  :func:`fedtrain.ledger.sample_rates`) with ``Σ n_k`` the data's training size, and the ledger's steps must be the row's ``steps``;
* **client-level rows** (FedHDP, Aldaghri et al. Alg. 2; Andrew et al. 2021): a private group released
  ``rounds_released`` noisy sums at effective noise multiplier ``z`` (the config's ``noise_multiplier``), sampling
  rate ``q`` (the config's ``sample_rate``), at the config's δ: :func:`fedtrain.clientdp.accounting.group_epsilon`
  must not exceed the group's claimed ε (relative :data:`CLAIM_RTOL`), no group may release more rounds than the
  config runs, the non-private group claims ε = ∞, and the run's ε is the largest private group's.

**Cheap.**  The rdp accountant's ε is a minimum over orders α of a conversion of the RDP curve (Lemma A.2); the ε
at any one order is an upper bound on it.  A row records, per silo, the order at which its ε was attained
(``eps_orders``, written by the store; a hint, never trusted): the check evaluates the curve at that order alone,
a certified upper bound, and falls back to the full grid (:meth:`Accountant.epsilon
<fedtheory.privacy.accountants.Accountant.epsilon>`) when the hint is missing or does not certify the claim.  Every
distinct ``(z, q, T, S, ε_sel, δ, accountant)`` is evaluated once per :class:`ClaimChecker` (rows of a grid share
them), so reading the committed store evaluates a few thousand single orders.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from fedtheory.privacy.accountants import orders_of, get_accountant, rdp_curve, simplify
from fedtheory.privacy.rdp import rdp_to_epsilon
from fedtheory.privacy.silos import silo_event
from fedtrain import ledger as _ledger
from fedtrain.config import RunConfig, default_delta, paper_defaults
from fedtrain.encoding import decode_floats
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.methods.registry import CLIENT, get_method
from fedtrain.store.keys import row_kind

if TYPE_CHECKING:
    from fedtrain.engine import RunResult

from fedtrain.store.keys import ResultsStoreError

__all__ = ["ClaimChecker", "check_claims", "eps_orders", "CLAIM_RTOL"]

#: Relative tolerance between a claimed ε and the one recomputed (an ε at one order and the minimum over the grid
#: are the same float up to the rounding of a sum evaluated over a different set of orders).
CLAIM_RTOL = 1e-9


def _floats(name: str, value: Any, k: int, where: str) -> np.ndarray:

    try:
        try:  # numbers, and the encoder's "inf"/"nan" strings, which numpy reads as such
            arr = np.atleast_1d(np.asarray(value, dtype=float))
        except (TypeError, ValueError):
            arr = np.atleast_1d(np.asarray(decode_floats(value) if isinstance(value, (list, str)) else value,
                                           dtype=float))
    except (TypeError, ValueError):
        raise ResultsStoreError(f"results store row {where}: {name} is not a list of numbers; delete it to "
                                "recompute the run") from None
    if arr.size == 1 and k > 1:
        arr = np.full(k, float(arr[0]))
    if arr.shape != (k,):
        raise ResultsStoreError(f"results store row {where}: {name} holds {arr.size} values for {k} silos; delete "
                                "it to recompute the run")
    return arr


def _event(z: float, q: float, steps: int, selections: int, sel_eps: float):

    return simplify(silo_event(z, q, steps, selections, sel_eps))


def eps_orders(result_dict: dict, memo: dict | None = None) -> "list[float | None] | None":
    """Per silo, the RDP order at which the rdp accountant attains a record-level row's ε (``None`` for a silo
    without noise); ``None`` for another accountant or a client-level row.  Stored with the row as the hint
    :class:`ClaimChecker` evaluates first (module docstring)."""

    if result_dict.get("accountant") != "rdp" or not isinstance(result_dict.get("ledger"), dict):
        return None
    led = result_dict["ledger"]
    z = np.asarray(_decode(result_dict["noise_multipliers"]), dtype=float)
    k = z.size
    q = np.asarray(led["sample_rates"], dtype=float)
    steps, sels = np.asarray(led["dpsgd_steps"]), np.asarray(led["selections"])
    delta = np.broadcast_to(np.asarray(_decode(result_dict["delta"]), dtype=float), (k,))
    se = _select_eps(result_dict, k)
    out: list = []
    memo = {} if memo is None else memo
    for i in range(k):
        if not (z[i] > 0 and math.isfinite(z[i])):
            out.append(None)
            continue
        key = (float(z[i]), float(q[i]), int(steps[i]), int(sels[i]), float(se[i]), float(delta[i]))
        if key not in memo:
            event = _event(*key[:5])
            orders = orders_of(event)
            curve = rdp_curve(event, orders)
            memo[key] = float(rdp_to_epsilon(orders, curve, key[5])[1]) if curve.any() else None
        out.append(None if memo[key] is None or math.isnan(memo[key]) else memo[key])
    return out


def _decode(value):

    return decode_floats(value) if isinstance(value, (list, str)) else value


def _select_eps(row: dict, k: int) -> np.ndarray:
    se = (row.get("extras") or {}).get("select_eps")
    if se is None:
        return np.zeros(k)
    arr = np.atleast_1d(np.asarray(_decode(se), dtype=float))
    return np.full(k, float(arr[0])) if arr.size == 1 else arr


class ClaimChecker:
    """Checks the privacy claims of many rows, each distinct ε evaluated once (module docstring).

    :meth:`check` one row (a dict as the working store writes it, or a committed row unpacked); ``where`` names the
    file (and key) in the one-line :class:`ResultsStoreError` a broken claim raises."""

    def __init__(self) -> None:
        self._eps: dict[tuple, float] = {}
        #: (accountant, z, q, steps, selections, ε_sel, δ, order) -> ε at that one order
        self._at_order: dict[tuple, float] = {}
        self._blocks: dict[tuple, np.ndarray] = {}
        self.evaluations = 0

    # -- ε, certified ----------------------------------------------------------------------------------
    def _full(self, acc: str, key: tuple) -> float:

        full = (acc,) + key
        if full not in self._eps:
            self.evaluations += 1
            self._eps[full] = float(get_accountant(acc).epsilon(_event(*key[:5]), key[5]))
        return self._eps[full]

    def _one_order(self, key: tuple, order: float) -> float:

        full = key + (order,)
        if full not in self._at_order:
            self.evaluations += 1
            orders = np.array([float(order)])
            curve = rdp_curve(_event(*key[:5]), orders)
            self._at_order[full] = float(rdp_to_epsilon(orders, curve, key[5])[0]) if curve.any() else 0.0
        return self._at_order[full]

    def certified(self, acc: str, key: tuple, bound: float, order: "float | None" = None) -> float:
        """An ε of event ``key`` = ``(z, q, steps, selections, ε_sel, δ)`` certified by accountant ``acc``: the ε at
        ``order`` (rdp) when that is ≤ ``bound``, else the accountant's ε over its whole grid."""
        if acc == "rdp" and order is not None and math.isfinite(order) and order > 1:
            e = self._one_order(key, float(order))
            if e <= bound:
                return e
        return self._full(acc, key)

    # -- one row -----------------------------------------------------------------------------------------
    def check(self, row: dict, where: str) -> None:

        try:
            if row_kind(row) == CLIENT:
                self._check_client(row, where)
            else:
                self._check_record(row, where)
        except ResultsStoreError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ResultsStoreError(f"results store row {where}: its privacy claim cannot be checked "
                                    f"({type(exc).__name__}: {exc}); delete it to recompute the run") from None

    def _fail(self, where: str, what: str) -> None:
        raise ResultsStoreError(f"results store row {where}: {what}; the row is not served (delete it to recompute "
                                "the run)")

    def _check_record(self, row: dict, where: str) -> None:

        config = RunConfig.from_dict(row["config"])
        acc = row.get("accountant")
        if acc != config.accountant:
            self._fail(where, f"accountant {acc!r} is not its config's {config.accountant!r}")
        led = row.get("ledger")
        if not isinstance(led, dict):
            self._fail(where, "no privacy ledger (sample rates, steps, selections), so its eps cannot be recomputed")
        z = _decode(row["noise_multipliers"])
        k = len(z)
        z = _floats("noise_multipliers", z, k, where)
        claimed = _floats("eps_spent", row["eps_spent"], k, where)
        delta = _floats("delta", row["delta"], k, where)
        steps = _floats("steps", row["steps"], k, where)
        q = _floats("ledger sample_rates", led["sample_rates"], k, where)
        t = _floats("ledger dpsgd_steps", led["dpsgd_steps"], k, where)
        s = _floats("ledger selections", led["selections"], k, where)
        se = _select_eps(row, k)
        target = _floats("config eps", config.eps, k, where)
        orders = row.get("eps_orders")
        orders = [None] * k if not isinstance(orders, list) or len(orders) != k else orders
        if not np.array_equal(t, steps):
            self._fail(where, "its ledger's DP-SGD steps differ from its steps")
        self._check_rates(q, config.batch_size, (row.get("data") or {}).get("train_size"), where)
        self._check_plan(config, q, t, s, se, target, where)
        if config.delta is not None:
            want = _floats("config delta", config.delta, k, where)
        else:
            try:
                want = np.full(k, float(paper_defaults(config.dataset)["delta"]))
            except ValueError:
                want = None
        private = np.isfinite(target)
        if want is None:  # the engine's default: default_delta(n_k) of each silo's size n_k = B/q_k
            want = np.array([default_delta(int(round(config.batch_size / qk))) if qk < 1 else
                             (d if d in {default_delta(n) for n in range(1, config.batch_size + 1)} else math.nan)
                             for qk, d in zip(q, delta)])
        if not np.array_equal(delta[private], want[private]):
            self._fail(where, f"delta {float(delta[private][0])!r} is not its budget's {float(want[private][0])!r}")
        if not ((delta[private] > 0) & (delta[private] < 1)).all():
            self._fail(where, "a private silo's delta is not in (0, 1)")
        eps = self._silo_epsilons(acc, private, z, q, t, s, se, delta, claimed, orders, target, where)
        over = np.flatnonzero(private & ~(eps <= target))
        if over.size:
            i = int(over[0])
            self._fail(where, f"silo {i} spends eps={float(eps[i])!r} ({acc} accountant), above its budget "
                              f"eps={float(target[i])!r}")

    def _silo_epsilons(self, acc, private, z, q, t, s, se, delta, claimed, orders, target, where) -> np.ndarray:
        """ε of every private silo, certified, and each within :data:`CLAIM_RTOL` of its claim; rows with the same
        privacy block (a grid's λ × η cells) share one evaluation."""
        block = (acc, private.tobytes(), z.tobytes(), q.tobytes(), t.tobytes(), s.tobytes(), se.tobytes(),
                 delta.tobytes(), claimed.tobytes(), tuple(orders))
        if block in self._blocks:
            eps = self._blocks[block]
        else:
            eps = np.zeros(z.size)
            for i in np.flatnonzero(private):
                if t[i] == 0 and s[i] == 0:
                    continue
                if not (z[i] > 0 and math.isfinite(z[i])):
                    self._fail(where, f"silo {i} has budget eps={target[i]:g} but noise multiplier {float(z[i])!r}")
                key = (float(z[i]), float(q[i]), int(t[i]), int(s[i]), float(se[i]), float(delta[i]))
                eps[i] = e = self.certified(acc, key, float(claimed[i]) * (1 + CLAIM_RTOL), orders[i])
                if not e <= claimed[i] * (1 + CLAIM_RTOL):
                    self._fail(where, f"silo {i} claims eps={float(claimed[i])!r} but its noise (z={float(z[i])!r}, "
                                      f"q={float(q[i])!r}, {int(t[i])} steps, {acc} accountant) gives eps={e!r}")
            self._blocks[block] = eps
        over = np.flatnonzero(private & ~(eps <= target))
        if over.size:  # an ε at one order may sit an ulp above the grid's: the accountant's own ε decides
            eps = eps.copy()
            for i in over:
                eps[i] = self._full(acc, (float(z[i]), float(q[i]), int(t[i]), int(s[i]), float(se[i]),
                                          float(delta[i])))
        return eps

    def _check_plan(self, config, q, t, s, se, target, where) -> None:
        """The steps, selections and selection budgets the row's method plans for its config (what the engine
        calibrated for and its ledger must match): ``T_k = rounds·(local_epochs + extra epochs)·m_k`` with
        ``m_k = max(1, floor(n_k/B))``, ``n_k = B/q_k`` (:class:`fedtrain.methods.base.Method.privacy_plan`); IFCA's
        selections and ``ε_sel,k = select_eps_frac·ε_k``."""

        cls = get_method(config.method)
        method = cls.__new__(cls)  # only its plan's arithmetic is read, from the config: no trainer
        method.cfg = config
        epochs = config.local_epochs + int(method.extra_epochs_per_round)
        b = config.batch_size
        m = np.where(q < 1, np.maximum(1, np.floor(np.round(b / np.where(q < 1, q, 1.0)) / b)), 1.0)
        planned = config.rounds * epochs * m
        if not np.array_equal(t, planned):
            i = int(np.flatnonzero(t != planned)[0])
            self._fail(where, f"silo {i} ran {int(t[i])} DP-SGD steps but {config.method} with {config.rounds} rounds "
                              f"plans {int(planned[i])}")
        selections = int(getattr(method, "selections", 0))
        if not (s == selections).all():
            self._fail(where, f"its ledger holds {int(s.max())} selections, {config.method} plans {selections}")
        if selections:
            private = np.isfinite(target)
            want = float(config.select_eps_frac) * target
            if not np.array_equal(se[private], want[private]):
                self._fail(where, f"its selections' eps is not select_eps_frac x eps ({config.select_eps_frac!r})")

    def _check_rates(self, q: np.ndarray, batch_size: int, train_size: Any, where: str) -> None:
        """``q_k = min(1, B/n_k)`` for silo sizes ``n_k`` that add up to the data's training size."""
        if not ((q > 0) & (q <= 1)).all():
            self._fail(where, "a sample rate is not in (0, 1]")
        if train_size is None:
            return
        part = q < 1
        n = batch_size / q[part]
        whole = np.round(n)
        if not (np.abs(n - whole) <= 1e-6 * whole).all():
            self._fail(where, f"sample rates are not batch_size / n_k for whole silo sizes n_k (batch size "
                              f"{batch_size})")
        rest = int(train_size) - int(whole.sum())
        full = int((~part).sum())
        if not full <= rest <= full * batch_size:
            self._fail(where, f"sample rates imply silo sizes that do not add up to the training size {train_size}")

    def _check_client(self, row: dict, where: str) -> None:

        config = FedHDPConfig.from_dict(row["config"])
        p = row["privacy"]
        acc = p.get("accountant")
        if acc != config.accountant:
            self._fail(where, f"accountant {acc!r} is not its config's {config.accountant!r}")
        if _decode(p.get("delta")) != config.delta:
            self._fail(where, f"delta {p.get('delta')!r} is not its config's {config.delta!r}")
        q = float(_decode(p["sample_rate"]))
        if q != float(config.sample_rate):
            self._fail(where, f"sample rate {q!r} is not its config's {config.sample_rate!r}")
        z = float(_decode(p["effective_noise_multiplier"]))
        want_z = float(config.noise_multiplier) if config.spec.private else 0.0
        if z != want_z:
            self._fail(where, f"effective noise multiplier {z!r} is not its config's {want_z!r}")
        largest = -math.inf
        groups = p["groups"]
        if not isinstance(groups, dict) or not groups:
            self._fail(where, "no privacy groups")
        for name, g in groups.items():
            claimed = float(_decode(g["epsilon"]))
            rounds = int(g["rounds_released"])
            if not 0 <= rounds <= config.rounds:
                self._fail(where, f"group {name!r} released {rounds} sums in a run of {config.rounds} rounds")
            if not g["private"]:
                if claimed != math.inf:
                    self._fail(where, f"the non-private group {name!r} claims eps={claimed!r} (it has no guarantee)")
                continue
            if rounds:
                if not (z > 0 and math.isfinite(z)):
                    self._fail(where, f"private group {name!r} released {rounds} sums with noise multiplier {z!r}")
                eps = self.certified(acc, (z, q, rounds, 0, 0.0, float(config.delta)), claimed)
            else:
                eps = 0.0
            if not eps <= claimed * (1 + CLAIM_RTOL):
                self._fail(where, f"private group {name!r} claims eps={claimed!r} but its noise (z={z!r}, q={q!r}, "
                                  f"{rounds} rounds, {acc} accountant) gives eps={eps!r}")
            largest = max(largest, claimed)
        total = float(_decode(p["epsilon"]))
        if total != (largest if largest > -math.inf else math.inf):
            self._fail(where, f"claims eps={total!r} for the run but its private groups claim at most {largest!r}")


def check_claims(rows: Iterable[tuple[dict, str]], checker: ClaimChecker | None = None) -> ClaimChecker:
    """Check every ``(row, where)`` with one :class:`ClaimChecker` (each distinct ε evaluated once); return it."""
    checker = checker if checker is not None else ClaimChecker()
    for row, where in rows:
        checker.check(row, where)
    return checker


def calibrated_noise(rows: Sequence["RunResult"]) -> list[np.ndarray]:
    """The noise multipliers this machine's calibration gives each record-level row's own privacy plan now.

    A row is trained with the z that :func:`fedtrain.ledger.noise_multipliers` returns for its plan (its ledger's
    DP-SGD steps and selections, sample rates, selection ε), its budgets (ε_k of its config, δ_k) and its accountant;
    the calibration cache answers with any z that it certifies, so a row trained with one cache may carry another z
    than an uncached search picks.  A sweep compares a stored row's z with this one and retrains a row whose noise
    is not the one it would use now (:func:`fedtrain.sweep.run_sweep`): a row is, in effect, keyed by its noise.
    Rows that share a plan share one calibration (one batched cache verification)."""

    out: list[np.ndarray] = []
    memo: dict[tuple, np.ndarray] = {}
    for r in rows:
        led = r.ledger or {}
        k = len(r.noise_multipliers)
        q = np.asarray(_decode(led["sample_rates"]), dtype=float).reshape(k)
        t = np.asarray(_decode(led["dpsgd_steps"]), dtype=np.int64).reshape(k)
        s = np.asarray(_decode(led["selections"]), dtype=np.int64).reshape(k)
        se = _select_eps({"extras": r.extras}, k)
        eps = np.broadcast_to(np.asarray(r.config.eps, dtype=float), (k,))
        delta = np.asarray(r.delta, dtype=float).reshape(k)
        key = (r.config.accountant, q.tobytes(), t.tobytes(), s.tobytes(), se.tobytes(), eps.tobytes(),
               delta.tobytes())
        if key not in memo:
            memo[key] = _ledger.noise_multipliers(_ledger.PrivacyPlan(t, s), eps, delta, q, r.config.accountant, se)
        out.append(memo[key])
    return out
