"""What a silo (or a client, or one release) runs, described as Google ``dp_accounting`` ``DpEvent`` objects.

Every accountant of the book (:mod:`fedtheory.privacy.accountants`) and the one calibration routine
(:func:`fedtheory.privacy.calibration.calibrate`) take such an event, so a mechanism is described
once and accounted the same way everywhere.  The building blocks:

* one DP-SGD step: ``PoissonSampledDpEvent(q, GaussianDpEvent(z))`` — Poisson sampling at rate ``q``,
  Gaussian noise of standard deviation ``z·c`` on the sum of gradients clipped to norm ``c``;
* ``T`` steps: ``SelfComposedDpEvent(step, T)``; several mechanisms: ``ComposedDpEvent([...])``;
* one Gaussian release of sensitivity Δ with noise ``z·Δ``: ``GaussianDpEvent(z)``;
* one private selection with the ε-DP exponential mechanism (IFCA's cluster choice, "report noisy
  min" with Gumbel noise of scale ``2Δ/ε``): ``ZCDpEvent(rho=ε²/8)`` — bounded range ⇒ ε²/8-zCDP
  (Cesar & Rogers 2021; MR-MTL paper App. A).  This is the only place the book turns a selection
  into an RDP term (:func:`selection_event`);
* an arbitrary RDP curve on a grid of orders (e.g. a hyperparameter-tuning bound):
  :class:`RdpCurveDpEvent`, understood by the ``rdp`` accountant only.

Adjacency is **add/remove one record** for every event (the notion of the subsampled-Gaussian
accountants of Opacus and ``dp_accounting``); for a silo it is one record of *that silo's* training
set (silo-specific sample-level DP, MR-MTL paper Def. 3.1).
"""
from __future__ import annotations

from typing import Sequence

import importlib.util
import os
import sys

import attr
import numpy as np


def _dp_event_module():
    """``dp_accounting.dp_event`` (the event classes), without running ``dp_accounting/__init__.py``.

    The package's ``__init__`` imports all its accountants (PLD, RDP, mechanism calibration, with
    ``scipy.stats`` and ``scipy.signal``: a slow import), which a run that only builds events and reads the
    calibration cache never uses.  The module file itself imports only ``attr`` and the standard
    library, so it is loaded from the installed package under its own name and registered in
    ``sys.modules``: a later ``import dp_accounting`` (the ``pld`` accountant) finds it there and uses
    the same classes (``isinstance`` and pickling work across both routes).
    """
    name = "dp_accounting.dp_event"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec("dp_accounting")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - dp_accounting is a dependency
        raise ImportError("dp_accounting is not installed (it is a dependency of fedbook: pip install -e .)")
    path = os.path.join(list(spec.submodule_search_locations)[0], "dp_event.py")
    sub = importlib.util.spec_from_file_location(name, path)
    if sub is None or sub.loader is None or "dp_accounting" in sys.modules:  # pragma: no cover
        import dp_accounting.dp_event as module  # the package is there anyway: the ordinary route

        return module
    module = importlib.util.module_from_spec(sub)
    sys.modules[name] = module
    try:
        sub.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


_dp_event = _dp_event_module()
ComposedDpEvent = _dp_event.ComposedDpEvent
DpEvent = _dp_event.DpEvent
GaussianDpEvent = _dp_event.GaussianDpEvent
NoOpDpEvent = _dp_event.NoOpDpEvent
NonPrivateDpEvent = _dp_event.NonPrivateDpEvent
PoissonSampledDpEvent = _dp_event.PoissonSampledDpEvent
SelfComposedDpEvent = _dp_event.SelfComposedDpEvent
ZCDpEvent = _dp_event.ZCDpEvent

from fedtheory.validation import as_float_array, check_integer_at_least, check_nonnegative

__all__ = [
    "DpEvent", "GaussianDpEvent", "PoissonSampledDpEvent", "SelfComposedDpEvent", "ComposedDpEvent",
    "NoOpDpEvent", "ZCDpEvent", "RdpCurveDpEvent",
    "ADJACENCY", "dpsgd_event", "gaussian_event", "selection_event", "rdp_curve_event", "compose", "event_key",
]

#: The adjacency notion of every event built here.
ADJACENCY = "add/remove-one record"


@attr.s(frozen=True, slots=True, auto_attribs=True)
class RdpCurveDpEvent(DpEvent):
    """A mechanism known only through its RDP curve ``rdp[i]`` at ``orders[i]`` (``inf`` allowed).

    Only the ``rdp`` accountant understands it; it must be composed with other events on the same
    orders (the accountant then evaluates every other event on these orders).
    """

    orders: tuple
    rdp: tuple


def _count(name: str, value) -> int:
    return int(check_integer_at_least(name, value, 0))


def dpsgd_event(noise_multiplier: float, sample_rate: float, steps: int) -> DpEvent:
    """``steps`` DP-SGD steps: ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), steps)``.

    ``steps=0`` → ``NoOpDpEvent``; ``sample_rate=1`` is a plain Gaussian per step.
    """
    z = float(check_nonnegative("noise_multiplier", noise_multiplier))
    q = float(as_float_array("sample_rate", sample_rate))
    if not 0 < q <= 1:
        raise ValueError(f"sample_rate must lie in (0, 1] (got {q!r})")
    steps = _count("steps", steps)
    if steps == 0:
        return NoOpDpEvent()
    step = GaussianDpEvent(z) if q == 1 else PoissonSampledDpEvent(q, GaussianDpEvent(z))
    return step if steps == 1 else SelfComposedDpEvent(step, steps)


def gaussian_event(noise_multiplier: float, count: int = 1) -> DpEvent:
    """``count`` Gaussian releases with noise multiplier ``z = σ/Δ`` (``count=0`` → ``NoOpDpEvent``)."""
    z = float(check_nonnegative("noise_multiplier", noise_multiplier))
    count = _count("count", count)
    if count == 0:
        return NoOpDpEvent()
    return GaussianDpEvent(z) if count == 1 else SelfComposedDpEvent(GaussianDpEvent(z), count)


def selection_event(eps: float, count: int = 1) -> DpEvent:
    """``count`` ε-DP exponential-mechanism selections as ``ZCDpEvent(rho = count·ε²/8)``.

    The exponential mechanism has bounded range, hence is ε²/8-zCDP, i.e. (α, αε²/8)-RDP for every
    α (Cesar & Rogers 2021; MR-MTL paper App. A), and zCDP composes additively.  ``eps=inf`` or
    ``count=0`` with ``eps=0`` are degenerate: ``count=0`` → ``NoOpDpEvent``.
    """
    eps = float(check_nonnegative("eps", eps))
    count = _count("count", count)
    if count == 0 or eps == 0:
        return NoOpDpEvent()
    return ZCDpEvent(rho=count * eps ** 2 / 8)


def rdp_curve_event(orders, rdp) -> RdpCurveDpEvent:
    """:class:`RdpCurveDpEvent` from arrays (``orders`` > 1, ``rdp`` ≥ 0 or ``inf``, same length)."""
    orders = np.atleast_1d(as_float_array("orders", orders)).ravel()
    rdp = np.broadcast_to(np.atleast_1d(as_float_array("rdp", rdp)), orders.shape).ravel()
    if (orders <= 1).any() or np.isnan(rdp).any() or (rdp < 0).any():
        raise ValueError("orders must be > 1 and rdp >= 0 (inf allowed)")
    return RdpCurveDpEvent(tuple(float(a) for a in orders), tuple(float(r) for r in rdp))


def compose(*events: DpEvent) -> DpEvent:
    """Composition of ``events``, dropping ``NoOpDpEvent``s: one event stays itself, none is a ``NoOpDpEvent``."""
    kept = [e for e in events if not isinstance(e, NoOpDpEvent)]
    for e in kept:
        if not isinstance(e, DpEvent):
            raise ValueError(f"events must be dp_accounting DpEvent objects (got {type(e).__name__})")
    if not kept:
        return NoOpDpEvent()
    return kept[0] if len(kept) == 1 else ComposedDpEvent(kept)


def event_key(event: DpEvent) -> str:
    """A canonical string of ``event`` (class names and the exact ``repr`` of every float), the key of caches."""
    return repr(event)


def flatten(event: DpEvent, count: int = 1) -> list[tuple[DpEvent, int]]:
    """``event`` as a list of ``(leaf event, count)``: composition and self-composition unrolled."""
    if isinstance(event, SelfComposedDpEvent):
        return flatten(event.event, count * int(event.count))
    if isinstance(event, ComposedDpEvent):
        out: list[tuple[DpEvent, int]] = []
        for e in event.events:
            out.extend(flatten(e, count))
        return out
    return [(event, count)]
