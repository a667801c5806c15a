"""The three privacy accountants of the book, in one registry: ``rdp``, ``pld``, ``prv``.

Each takes a ``dp_accounting`` ``DpEvent`` (:mod:`fedtheory.privacy.events`) and a δ and returns a
*guaranteed upper bound* on ε, for **add/remove-one** adjacency:

* ``"rdp"`` — Rényi DP: the Poisson-subsampled Gaussian curve of Mironov, Talwar & Zhang 2019
  (Opacus' formula, evaluated by :func:`fedtheory.privacy.rdp._rdp_numpy`, which tests pin to Opacus
  and ``dp_accounting``), the Gaussian ``α/(2z²)``, zCDP events ``ξ + ρα`` and explicit RDP curves,
  summed over :data:`~fedtheory.privacy.rdp.DEFAULT_ORDERS` (composition) and converted once with
  Lemma A.2 of the MR-MTL paper (the "improved" conversion).  The only accountant that composes
  zCDP events (IFCA's exponential-mechanism selections) and RDP curves.
* ``"pld"`` — Google ``dp_accounting`` 0.6 privacy-loss-distribution accountant (pessimistic
  discretisation, interval 1e-3): numerically tight.
* ``"prv"`` — Opacus 1.6 PRV accountant (Gopi et al. 2021), its reported *upper* bound
  (``eps_error = 0.01``): tight up to that additive error.

**Supported range** (:attr:`Accountant.max_epsilon`).  ``rdp`` accounts any ε (closed-form curves).  The
tight accountants' cost grows with the privacy loss they represent: PLD's discretised privacy-loss
distribution and PRV's domain both widen as the noise shrinks, so above ε ≈ 100 one PLD evaluation takes
seconds and a calibration minutes, and Opacus' PRV loses precision (it returns ∞) or fails.  Hence:
``pld`` calibrates targets ε ≤ 100 and ``prv`` targets ε ≤ 50 (:func:`fedtheory.privacy.calibration.calibrate`
refuses larger ones with a ``ValueError`` naming the range); :meth:`Accountant.epsilon` first computes
the event's RDP ε (cheap, an upper bound, within ~10 % of the tight value in this range) and refuses an
event whose RDP ε exceeds ``2 × max_epsilon`` (``ValueError`` naming the range), so every evaluation
takes bounded time (seconds).  Use ``rdp`` for larger ε.

Degenerate events are simplified first, identically for every accountant: infinite noise, zero
steps or a zero sampling rate release nothing about the data (ε = 0 exactly); zero noise releases
the data (ε = ∞).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from fedtheory.validation import check_choice, check_open_interval
from fedtheory.privacy.events import (ComposedDpEvent, DpEvent, GaussianDpEvent, NoOpDpEvent, PoissonSampledDpEvent,
                                      RdpCurveDpEvent, SelfComposedDpEvent, ZCDpEvent, event_key, flatten)
from fedtheory.privacy.rdp import DEFAULT_ORDERS, _rdp_numpy, rdp_many, rdp_to_epsilon
from fedtheory.privacy.events import NonPrivateDpEvent

__all__ = ["ACCOUNTANTS", "Accountant", "get_accountant", "simplify"]

#: Names of the accountants, in the registry's order.
ACCOUNTANTS = ("rdp", "pld", "prv")


def _nonprivate():
    return NonPrivateDpEvent()


def _is_nonprivate(e) -> bool:
    return isinstance(e, NonPrivateDpEvent)


def simplify(event: DpEvent) -> DpEvent:
    """``event`` with degenerate parts resolved: infinite noise / zero count / zero rate → ``NoOpDpEvent``,
    zero noise → ``NonPrivateDpEvent``; compositions keep their other parts."""
    if not isinstance(event, DpEvent):
        raise ValueError(f"event must be a dp_accounting DpEvent (got {type(event).__name__})")
    if isinstance(event, GaussianDpEvent):
        z = float(event.noise_multiplier)
        if math.isnan(z) or z < 0:
            raise ValueError(f"noise_multiplier must be >= 0 (got {z!r})")
        return NoOpDpEvent() if math.isinf(z) else (_nonprivate() if z == 0 else event)
    if isinstance(event, PoissonSampledDpEvent):
        q = float(event.sampling_probability)
        if not 0 <= q <= 1:
            raise ValueError(f"sampling_probability must lie in [0, 1] (got {q!r})")
        inner = simplify(event.event)
        if q == 0 or isinstance(inner, NoOpDpEvent):
            return NoOpDpEvent()
        if _is_nonprivate(inner):
            return inner
        return inner if q == 1 else PoissonSampledDpEvent(q, inner)
    if isinstance(event, SelfComposedDpEvent):
        inner = simplify(event.event)
        if int(event.count) == 0 or isinstance(inner, NoOpDpEvent):
            return NoOpDpEvent()
        return inner if (_is_nonprivate(inner) or int(event.count) == 1) else SelfComposedDpEvent(inner, event.count)
    if isinstance(event, ComposedDpEvent):
        parts = [simplify(e) for e in event.events]
        if any(_is_nonprivate(p) for p in parts):
            return _nonprivate()
        parts = [p for p in parts if not isinstance(p, NoOpDpEvent)]
        if not parts:
            return NoOpDpEvent()
        return parts[0] if len(parts) == 1 else ComposedDpEvent(parts)
    if isinstance(event, ZCDpEvent):
        return NoOpDpEvent() if (event.rho == 0 and event.xi == 0) else event
    if isinstance(event, RdpCurveDpEvent):
        return NoOpDpEvent() if not any(event.rdp) else event
    return event


@dataclass(frozen=True)
class Accountant:
    """One accountant: ``epsilon(event, delta)`` and, for calibration, ``eps_function(event_of_noise, delta)``."""

    name: str
    description: str
    _epsilon: Callable[[DpEvent, float], float]
    _eps_function: Callable | None = None
    #: Largest target ε this accountant calibrates (module docstring, "Supported range"); events whose RDP ε
    #: exceeds twice this are refused by :meth:`epsilon`.
    max_epsilon: float = math.inf

    adjacency = "add/remove-one record"

    def range_note(self) -> str:
        """The supported range in words (for error messages)."""
        if math.isinf(self.max_epsilon):
            return f"the {self.name} accountant ({self.description}) supports any eps"
        return (f"the {self.name} accountant ({self.description}) supports target eps in (0, {self.max_epsilon:g}] "
                f"and events whose RDP eps is at most {2 * self.max_epsilon:g}; use accountant='rdp' for larger eps")

    def _out_of_range(self, event: DpEvent, delta: float) -> float | None:
        """The event's RDP ε when it exceeds ``2 × max_epsilon`` (out of range), else ``None``."""
        if math.isinf(self.max_epsilon):
            return None
        try:
            bound = _rdp_epsilon(event, delta)
        except ValueError:  # an event RDP cannot account: no cheap pre-check
            return None
        return bound if bound > 2 * self.max_epsilon else None

    def epsilon(self, event: DpEvent, delta: float) -> float:
        """Guaranteed upper bound on ε of ``event`` at ``delta`` (add/remove-one adjacency)."""
        delta = float(check_open_interval("delta", delta, 0.0, 1.0))
        event = simplify(event)
        if isinstance(event, NoOpDpEvent):
            return 0.0
        if _is_nonprivate(event):
            return math.inf
        key = (event_key(event), delta)
        memo = _MEMO.setdefault(self.name, {})
        if key not in memo:
            rdp_eps = self._out_of_range(event, delta)
            if rdp_eps is not None:
                raise ValueError(f"eps of this event is out of range for the {self.name} accountant: its RDP eps is "
                                 f"{rdp_eps:.4g} > {2 * self.max_epsilon:g}; {self.range_note()}")
            if len(memo) > 200_000:
                memo.clear()
            memo[key] = float(self._epsilon(event, delta))
        return memo[key]

    def epsilons(self, events, delta) -> list[float]:
        """:meth:`epsilon` of every event of ``events`` (``delta``: one value, or one per event), bit for bit the same
        numbers (and memoised alike).  The rdp accountant evaluates them in one batch (:func:`_rdp_epsilons`): every
        subsampled-Gaussian curve of every event at once, its series' coefficients shared; the others one by one."""
        events = list(events)
        deltas = [float(check_open_interval("delta", d, 0.0, 1.0)) for d in
                  (delta if np.ndim(delta) else [delta] * len(events))]
        if len(deltas) != len(events):
            raise ValueError(f"delta must be one value or one per event ({len(events)}; got {len(deltas)})")
        out: list = [None] * len(events)
        memo = _MEMO.setdefault(self.name, {})
        batch = []
        for i, (event, d) in enumerate(zip(events, deltas)):
            event = simplify(event)
            key = (event_key(event), d)
            if isinstance(event, (NoOpDpEvent, NonPrivateDpEvent)) or key in memo or self.name != "rdp":
                out[i] = self.epsilon(event, d)
            else:
                batch.append((i, event, d, key))
        if batch:
            for (i, event, d, key), eps in zip(batch, _rdp_epsilons([b[1] for b in batch], [b[2] for b in batch])):
                if eps is None:  # not batched (another grid of orders, an all-zero curve): one by one
                    out[i] = self.epsilon(event, d)
                else:
                    if len(memo) > 200_000:
                        memo.clear()
                    memo[key] = eps
                    out[i] = eps
        return out

    def eps_function(self, event_of_noise: Callable[[float], DpEvent], delta: float) -> Callable[[float], float]:
        """``z ↦`` an upper bound on ε of ``event_of_noise(z)`` that may be cheaper than :meth:`epsilon`
        (rdp: a sliding window of orders; never below the full-grid ε).  A fresh state per call."""
        if self._eps_function is not None:
            return self._eps_function(self, event_of_noise, delta)

        def eps(z: float) -> float:
            event = simplify(event_of_noise(z))
            if self._out_of_range(event, delta) is not None:
                return math.inf  # beyond the supported range: an upper bound that the search treats as "> target"
            return self.epsilon(event, delta)

        return eps


_MEMO: dict[str, dict] = {}


# ----------------------------------------------------------------------------------------------------
# rdp
# ----------------------------------------------------------------------------------------------------
def orders_of(event: DpEvent) -> np.ndarray:
    """The grid of Rényi orders the ``rdp`` accountant evaluates ``event`` at: the grid its
    ``RdpCurveDpEvent`` leaves share, else :data:`DEFAULT_ORDERS`."""
    grids = {e.orders for e, _ in flatten(event) if isinstance(e, RdpCurveDpEvent)}
    if len(grids) > 1:
        raise ValueError("RdpCurveDpEvents composed together must share one grid of orders")
    return np.asarray(grids.pop(), dtype=float) if grids else DEFAULT_ORDERS


def rdp_curve(event: DpEvent, orders: np.ndarray) -> np.ndarray:
    """RDP curve of a (simplified) event at ``orders``: the sum over its leaves of ``count × leaf curve``."""
    total = np.zeros(len(orders))
    for leaf, count in flatten(event):
        if count == 0 or isinstance(leaf, NoOpDpEvent):
            continue
        if _is_nonprivate(leaf):
            return np.full(len(orders), math.inf)
        if isinstance(leaf, GaussianDpEvent):
            curve = orders / (2 * float(leaf.noise_multiplier) ** 2)
        elif isinstance(leaf, PoissonSampledDpEvent) and isinstance(leaf.event, GaussianDpEvent):
            # rounding can make the series a few ulps negative for tiny q or huge z: RDP is >= 0
            curve = np.maximum(_rdp_numpy(float(leaf.sampling_probability), float(leaf.event.noise_multiplier),
                                          orders), 0.0)
        elif isinstance(leaf, ZCDpEvent):
            curve = float(leaf.xi) + float(leaf.rho) * orders
        elif isinstance(leaf, RdpCurveDpEvent):
            lookup = dict(zip(leaf.orders, leaf.rdp))
            curve = np.array([lookup[float(a)] for a in orders])
        else:
            raise ValueError(f"the rdp accountant cannot account for {type(leaf).__name__}: supported are "
                             "GaussianDpEvent, PoissonSampledDpEvent(GaussianDpEvent), ZCDpEvent, RdpCurveDpEvent "
                             "and their (self-)compositions")
        total = total + count * curve
    return total


def _rdp_eps_at(event: DpEvent, delta: float, orders: np.ndarray) -> tuple[float, float]:
    curve = rdp_curve(event, orders)
    if not curve.any():
        return 0.0, float("nan")
    return rdp_to_epsilon(orders, curve, delta)


def _rdp_epsilon(event: DpEvent, delta: float) -> float:
    return _rdp_eps_at(event, delta, orders_of(event))[0]


def _rdp_epsilons(events, deltas) -> list[float | None]:
    """:func:`_rdp_epsilon` of many simplified events at once, bit for bit (``None`` for an event left to the caller).

    1. Every distinct Poisson-subsampled Gaussian ``(q, z)`` among the events' leaves is evaluated at the integer
       orders of :data:`~fedtheory.privacy.rdp.DEFAULT_ORDERS` in one call (:func:`fedtheory.privacy.rdp.rdp_many`),
       each event's curve summed over its leaves as :func:`rdp_curve` sums it, and converted (Lemma A.2) at those
       orders: ``ε_int``, an upper bound on the event's ε.
    2. A fractional order α can only be the minimiser if its conversion term alone, ``(log(1/δ) − log α)/(α − 1)
       + log(1 − 1/α)`` — a lower bound on ε(α) in floating point too, since the curve is ≥ 0 and rounding is
       monotone — is at most ``ε_int``; only those orders are evaluated (all pairs in one call), the others are
       provably above the minimum.  The minimum, and the order :func:`rdp_to_epsilon` picks, are therefore those of
       the full grid (``tests/privacy/test_calibration_cache.py`` compares them bit for bit).
    """
    orders = DEFAULT_ORDERS
    is_int = orders == np.round(orders)
    out: list = [None] * len(events)
    pairs: dict = {}
    plans = []
    for k, event in enumerate(events):
        leaves = flatten(event)
        if any(isinstance(e, RdpCurveDpEvent) for e, _ in leaves):
            continue  # own grid of orders: one by one
        if any(_is_nonprivate(e) for e, c in leaves if c):
            continue
        parts = []
        for leaf, count in leaves:
            if count == 0 or isinstance(leaf, NoOpDpEvent):
                continue
            if isinstance(leaf, PoissonSampledDpEvent) and isinstance(leaf.event, GaussianDpEvent):
                pq = (float(leaf.sampling_probability), float(leaf.event.noise_multiplier))
                parts.append(("pair", pairs.setdefault(pq, len(pairs)), count))
            else:
                parts.append(("leaf", leaf, count))
        plans.append((k, parts))
    if not pairs:
        return out
    qs, zs = zip(*pairs)
    int_curves = np.maximum(rdp_many(qs, zs, orders[is_int]), 0.0)   # (pairs, integer orders)

    def total(parts, sel, curves):
        t = np.zeros(int(sel.sum()))
        for kind, ref, count in parts:
            t = t + count * (curves[ref] if kind == "pair" else rdp_curve(ref, orders[sel]))
        return t

    need, plans_ok = np.zeros((len(pairs), len(orders)), dtype=bool), []
    for k, parts in plans:
        d = deltas[k]
        x, y = (np.log(1 / d) - np.log(orders)) / (orders - 1), np.log1p(-1 / orders)   # as rdp_to_epsilon forms them
        low = x + y
        curve_int = total(parts, is_int, int_curves)
        if not curve_int.any():
            continue  # an all-zero curve is ε = 0 by rdp_to_epsilon's caller: one by one
        eps_int = curve_int + x[is_int] + y[is_int]   # rdp_to_epsilon's sums, in its order, at the integer orders
        eps_int = float(np.min(np.where(np.isfinite(eps_int), eps_int, np.inf)))
        frac = ~is_int & ~(low > eps_int)
        for kind, ref, _ in parts:
            if kind == "pair":
                need[ref] |= frac
        plans_ok.append((k, parts, frac))
    frac_curves = np.full((len(pairs), len(orders)), np.nan)   # nan: not evaluated
    if need.any():
        frac_curves[:, ~is_int] = np.maximum(rdp_many(qs, zs, orders[~is_int], frac_mask=need[:, ~is_int]), 0.0)
    for k, parts, frac in plans_ok:
        curve = np.full(len(orders), np.inf)   # orders provably above the minimum: not evaluated
        curve[is_int] = total(parts, is_int, int_curves)
        if frac.any():
            curve[frac] = total(parts, frac, frac_curves[:, frac])
        out[k] = rdp_to_epsilon(orders, curve, deltas[k])[0]
    return out


def _rdp_window(acc: Accountant, event_of_noise, delta: float, half_width: int = 4):
    """ε(z) on a sliding window of orders around the current optimum (a fresh window per calibration).

    The minimum over a subset of orders is ≥ the minimum over all of them, so a z certified by the
    window is also certified by the full grid; the window slides while the optimum sits on its edge
    (the curve at a given z is computed once per order).
    """
    state = {"best": None}

    def eps(z: float) -> float:
        event = simplify(event_of_noise(z))
        if isinstance(event, NoOpDpEvent):
            return 0.0
        if _is_nonprivate(event):
            return math.inf
        orders = orders_of(event)
        n = len(orders)
        curve = np.full(n, np.nan)

        def on(idx):
            missing = idx[np.isnan(curve[idx])]
            if missing.size:
                curve[missing] = rdp_curve(event, orders[missing])
            if not curve[idx].any():
                return 0.0, -1
            e, order = rdp_to_epsilon(orders[idx], curve[idx], delta)
            best = int(idx[np.searchsorted(orders[idx], order)]) if np.isfinite(e) and e > 0 else -1
            return e, best

        if state["best"] is None or state["best"] < 0:
            e, state["best"] = on(np.unique(np.r_[np.arange(0, n, 8), n - 1]))
            if state["best"] < 0:
                return e
        center, last = state["best"], None
        while True:
            lo, hi = max(0, center - half_width), min(n, center + half_width + 1)
            e, best = on(np.arange(lo, hi))
            if best < 0:
                return e
            state["best"] = best
            if (best != lo and best != hi - 1) or best in (0, n - 1) or best == last:
                return e
            # the optimum sits on the window's edge: move the window on, past it (orders already
            # computed at this z are reused)
            last = best
            center = min(max(best + (half_width if best == hi - 1 else -half_width), 0), n - 1)

    return eps


# ----------------------------------------------------------------------------------------------------
# pld and prv
# ----------------------------------------------------------------------------------------------------
def _pld_epsilon(event: DpEvent, delta: float) -> float:
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
                                               value_discretization_interval=1e-3)
    if not acc.supports(event):
        raise ValueError(f"the pld accountant cannot account for {event!r}; use accountant='rdp'")
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def _prv_epsilon(event: DpEvent, delta: float) -> float:
    from opacus.accountants import PRVAccountant

    history = []
    for leaf, count in flatten(event):
        if isinstance(leaf, GaussianDpEvent):
            history.append((float(leaf.noise_multiplier), 1.0, int(count)))
        elif isinstance(leaf, PoissonSampledDpEvent) and isinstance(leaf.event, GaussianDpEvent):
            history.append((float(leaf.event.noise_multiplier), float(leaf.sampling_probability), int(count)))
        else:
            raise ValueError(f"the prv accountant cannot account for {type(leaf).__name__}; use accountant='rdp'")
    acc = PRVAccountant()
    acc.history = history
    # at q = 1 Opacus' PRV domain evaluates log(0) for the (empty) non-sampled branch, and its domain
    # sizing (an RDP bound) may warn that its optimal order is the largest: both harmless, silenced
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", message="Optimal order is the (largest|smallest) alpha", category=UserWarning)
        try:
            eps = float(acc.get_epsilon(delta, eps_error=0.01))
        except (ArithmeticError, ValueError, IndexError, MemoryError, RuntimeError) as exc:
            raise ValueError(f"the prv accountant (Opacus PRV) failed on this event ({type(exc).__name__}: {exc}); "
                             f"{_REGISTRY['prv'].range_note()}") from exc
    if math.isnan(eps):
        raise ValueError("the prv accountant (Opacus PRV) returned nan for this event; "
                         f"{_REGISTRY['prv'].range_note()}")
    return eps


_REGISTRY: dict[str, Accountant] = {
    "rdp": Accountant("rdp", "RDP of the subsampled Gaussian over DEFAULT_ORDERS, Lemma A.2 conversion",
                      _rdp_epsilon, _rdp_window),
    "pld": Accountant("pld", "dp_accounting PLD accountant (pessimistic, discretisation 1e-3)", _pld_epsilon,
                      max_epsilon=100.0),
    "prv": Accountant("prv", "Opacus PRV accountant, upper bound with eps_error=0.01", _prv_epsilon,
                      max_epsilon=50.0),
}
assert tuple(_REGISTRY) == ACCOUNTANTS


def get_accountant(name: str) -> Accountant:
    """The accountant called ``name`` (one of :data:`ACCOUNTANTS`)."""
    check_choice("accountant", name, ACCOUNTANTS)
    return _REGISTRY[name]
