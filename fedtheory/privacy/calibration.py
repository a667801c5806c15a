"""One calibration for every caller: the noise multiplier that meets a target ε, and its on-disk cache.

:func:`calibrate` ``(event_of_noise, target_eps, delta, accountant)`` takes a map ``z ↦ DpEvent``
(:mod:`fedtheory.privacy.events`; ε must be non-increasing in z) and returns the z, within ``rtol``
(default 0.1 %) above the smallest one, whose ε — computed by the named accountant
(:mod:`fedtheory.privacy.accountants`) — is **certified ≤ target**; in practice ε ≥ 0.99·target.
DP-SGD, per-silo DP-SGD, IFCA (DP-SGD + selections), hyperparameter tuning, secure aggregation and
the Gaussian mechanism all calibrate through it.

**Deterministic.**  The search starts from the same point for the same inputs (no warm start from an
earlier calibration), so the result is a function of its arguments alone: the same bits in a fresh
process, after other calibrations, inside a sweep or alone.  Results are memoised in the process
(a pure cache) and, with ``cache=True``, on disk:

**On-disk cache** (``cache=True``; fedtrain's runs use it).  One JSON file per calibration in
``$FEDBOOK_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/fedbook/calibration``, else
``~/.cache/fedbook/calibration``; ``FEDBOOK_CACHE_DIR=off`` disables it.  The key holds every input
of the calibration: the accountant (its name, its settings — :attr:`Accountant.description
<fedtheory.privacy.accountants.Accountant.description>` — and the versions of the code that computes
its ε), the target ε, δ, ``rtol`` and the events at two probe noise values (z = 1 and z = 3), which
pin down the map z ↦ event for every caller here (noise parameters proportional to z, or a fixed
family of curves).  Files are written atomically (:mod:`fedtheory.atomic_io`: concurrent writers of
one key write the same bits, the last rename wins; a killed writer's temporary file is removed by a
later write).  A cached value is the float the search returned (JSON keeps float64 exactly), so
cached and uncached runs are bit-identical.

**A cached z is a hint, never a fact.**  The file is outside the code's control (anyone who can write
the folder can edit it), so on reading, the accountant recomputes ε of the event at the cached z
(one evaluation, far cheaper than the search) and the entry is used only if z is finite, > 0 (or 0
for an event that does not depend on the noise), its ε is ≤ the target, and it is minimal within ``rtol``:
ε at ``z·(1−rtol)`` exceeds the target (a second evaluation).  A larger z would be private but would
train another run than an uncached calibration; a z that passes both checks is as tight as the search's.
:func:`calibrate_many` (a run's silos) makes the same two checks for every cached entry of its calibrations in one
batched evaluation (:meth:`Accountant.epsilons <fedtheory.privacy.accountants.Accountant.epsilons>`: the rdp
accountant's ε, bit for bit, of all the entries' events at z and at ``z·(1−rtol)``); the full grid of orders at
``z·(1−rtol)`` gives an ε no larger than the search's window, so an entry it finds minimal is minimal by the
search's own ε too, and any entry it does not accept goes through :func:`calibrate`'s own check.
Otherwise — and for an unreadable, corrupt or mismatched file — the entry is discarded with one warning
line, the search runs and the file is rewritten.  Nothing else is read from the file: the ε a result reports is
computed by the accountant from what ran (:func:`fedtrain.ledger.spent_epsilons`), never taken from
the cache.  A folder that cannot be written gives one warning per process, not one per calibration.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Callable

import numpy as np

from fedtheory.atomic_io import remove_stale_temps, write_text_atomic
from fedtheory.validation import check_open_interval, check_positive
from fedtheory.privacy.accountants import ACCOUNTANTS, get_accountant
from fedtheory.privacy.events import DpEvent, event_key

__all__ = ["calibrate", "calibrate_many", "cache_dir", "CALIBRATION_VERSION", "Z_MAX"]

#: Bumped whenever the search or the accountants change the numbers they return (invalidates the disk cache).
CALIBRATION_VERSION = 1
#: Largest noise multiplier the search tries; a target that needs more is reported unattainable.
Z_MAX = 1e6
_Z_MIN = 1e-3
_MEMO: dict[tuple, float] = {}


# ----------------------------------------------------------------------------------------------------
# the search
# ----------------------------------------------------------------------------------------------------
def _search(eps_fn: Callable[[float], float], target: float, rtol: float) -> float:
    """z with eps_fn(z) ≤ target, at most ``rtol`` (relative) above the root of eps_fn(z) = target.

    Deterministic: secant steps on (log z, log ε) from z = 1 (ε is close to a power of z), then the
    tightest certified bracket of the points evaluated so far, widened if needed and refined by
    Brent's method on log z, with a one-sided stop (only a z whose ε is certified ≤ target is returned).
    """
    seen: dict[float, float] = {}

    def f(z: float) -> float:
        if z not in seen:
            seen[z] = eps_fn(z)
        return seen[z]

    def bracket():
        lo = max((z for z, e in seen.items() if e > target), default=None)
        hi = min((z for z, e in seen.items() if e <= target), default=None)
        return lo, hi

    lt = math.log(target)
    z, e, zp, ep = 1.0, f(1.0), None, None
    for _ in range(8):  # secant steps in log-log
        if not 0 < e < math.inf:
            break
        slope = -1.0 if zp is None else (math.log(e) - math.log(ep)) / (math.log(z) - math.log(zp))
        if not slope < 0:
            break
        log_step = min(max((lt - math.log(e)) / slope, -math.log(100)), math.log(100))
        znew = min(max(z * math.exp(log_step), _Z_MIN), Z_MAX)
        zp, ep, z = z, e, znew
        e = f(z)
        if abs(math.log(z / zp)) < rtol / 4:
            break
    # probe a bracket of relative width rtol just above the secant's estimate
    lo, hi = bracket()
    if lo is None or hi is None or hi / lo - 1 > rtol:
        top = z * (1 + rtol / 3)
        if f(top) <= target:
            f(top / (1 + rtol))
    lo, hi = bracket()
    d = 4 * rtol
    while hi is None:  # walk up until certified
        z = min(lo * (1 + d), Z_MAX)
        d *= 2
        if f(z) > target and z >= Z_MAX:
            raise ValueError(f"target eps={target!r} is unattainable: even noise_multiplier={Z_MAX:g} gives "
                             f"eps={f(Z_MAX):.4g} (the finite RDP order grid, or the parts of the mechanism that "
                             "do not depend on the noise, already cost more)")
        lo, hi = bracket()
    while lo is None:  # walk down until not certified
        z = hi / (1 + d)
        d *= 2
        if z < _Z_MIN:
            return hi
        f(z)
        lo, hi = bracket()
    if hi <= lo or hi / lo - 1 <= rtol:  # (hi <= lo only if eps_fn were not monotone: hi is certified anyway)
        return hi
    g = lambda s: math.log(max(f(math.exp(s)), 1e-300)) - lt  # noqa: E731
    from scipy import optimize  # here, not at import: a run whose calibrations are cached never needs it

    root = math.exp(optimize.brentq(g, math.log(lo), math.log(hi), xtol=rtol / 4))
    z = min(root * (1 + rtol / 2), hi)
    while f(z) > target:  # one-sided stop
        z = min(z * (1 + rtol / 2), hi)
    return z


def _solve(event_of_noise, target: float, delta: float, accountant: str, rtol: float) -> float:
    acc = get_accountant(accountant)
    e1, e3 = event_of_noise(1.0), event_of_noise(3.0)
    if e1 == e3:  # the event does not depend on the noise (e.g. zero DP-SGD steps)
        spent = acc.epsilon(e1, delta)
        if spent > target:
            raise ValueError(f"target eps={target!r} is below the eps={spent:.4g} that the noise-free part of the "
                             "mechanism already spends")
        return 0.0
    z = _search(acc.eps_function(event_of_noise, delta), target, rtol)
    full = acc.epsilon(event_of_noise(z), delta)
    if full > target:  # pragma: no cover - impossible by construction (window ε ≥ full-grid ε)
        raise RuntimeError(f"calibration failed to certify eps <= target ({full!r} > {target!r})")
    return z


# ----------------------------------------------------------------------------------------------------
# the disk cache
# ----------------------------------------------------------------------------------------------------
def cache_dir() -> Path | None:
    """Folder of the calibration cache (see the module docstring), or ``None`` when disabled."""
    env = os.environ.get("FEDBOOK_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "none") else Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fedbook" / "calibration"


def _versions(accountant: str) -> dict:
    out = {"calibration": CALIBRATION_VERSION}
    for pkg in {"pld": ("dp-accounting",), "prv": ("opacus",)}.get(accountant, ()):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:  # pragma: no cover
            out[pkg] = "unknown"
    return out


def _key(event_of_noise, target, delta, accountant, rtol) -> dict:
    """Every input of the calibration (module docstring): the accountant's identity, target, δ, rtol, the event."""
    acc = get_accountant(accountant)
    return {"versions": _versions(accountant), "accountant": accountant,
            "accountant_settings": acc.description, "target_eps": repr(target),
            "delta": repr(delta), "rtol": repr(rtol),
            "event_at_z1": event_key(event_of_noise(1.0)), "event_at_z3": event_key(event_of_noise(3.0))}


def _path(folder: Path, key: dict) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
    return folder / f"{digest[:40]}.json"


def _read(path: Path, key: dict) -> tuple[float | None, str | None]:
    """``(z, None)`` from a cache file whose key matches, else ``(None, why)`` (``why`` None: no file)."""
    try:
        obj = json.loads(path.read_text())
    except OSError:
        return None, None  # missing or unreadable: calibrate (and the write reports a folder it cannot use)
    except ValueError as exc:
        return None, f"corrupt ({type(exc).__name__})"
    if not isinstance(obj, dict) or obj.get("key") != key:
        return None, "its key does not match its file name"
    z = obj.get("noise_multiplier")
    if not isinstance(z, float):
        return None, f"noise_multiplier is not a float ({z!r})"
    return z, None


def _verify(z: float, event_of_noise, target: float, delta: float, accountant: str, rtol: float) -> str | None:
    """``None`` if the cached ``z`` is what a search would return, else the reason: it meets the target (the
    accountant recomputes ε at z) and it is minimal within ``rtol`` (ε at ``z·(1−rtol)``, by the search's own
    ε function, exceeds the target; skipped below the search's smallest z)."""
    if not math.isfinite(z) or z < 0:
        return f"noise_multiplier={z!r} is not finite and >= 0"
    acc = get_accountant(accountant)
    try:
        if z == 0 and event_of_noise(1.0) != event_of_noise(3.0):
            return f"noise_multiplier=0 gives eps=inf > target {target!r}"
        eps = acc.epsilon(event_of_noise(z), delta)
        below = z * (1 - rtol)
        eps_below = acc.eps_function(event_of_noise, delta)(below) if below >= _Z_MIN else math.inf
    except (ValueError, ArithmeticError) as exc:
        return f"noise_multiplier={z!r} cannot be accounted ({exc})"
    if not eps <= target:
        return f"noise_multiplier={z!r} gives eps={eps!r} > target {target!r} ({accountant} accountant)"
    if not eps_below > target:
        return (f"noise_multiplier={z!r} is larger than needed: {below!r} (rtol={rtol!r} less) already gives "
                f"eps={eps_below!r} <= target {target!r} ({accountant} accountant)")
    return None


_WARNED_FOLDERS: set = set()  # (kind, folder) pairs already warned about (or swept) in this process


def _write(path: Path, key: dict, z: float) -> None:
    """Write a cache entry atomically (:func:`fedtheory.atomic_io.write_text_atomic`); a folder that cannot be
    written gives one warning per folder and process."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if ("swept", str(path.parent)) not in _WARNED_FOLDERS:  # a killed writer's leftovers, once per process
            _WARNED_FOLDERS.add(("swept", str(path.parent)))
            remove_stale_temps(path.parent, ".*.json.tmp-*")
        write_text_atomic(path, json.dumps({"key": key, "noise_multiplier": z}, sort_keys=True))
    except OSError as exc:
        folder = ("unwritable", str(path.parent))
        if folder in _WARNED_FOLDERS:  # one warning per folder and process, not one per calibration
            return
        _WARNED_FOLDERS.add(folder)
        warnings.warn(f"calibration cache: could not write {path} ({exc}); continuing without caching "
                      "(set FEDBOOK_CACHE_DIR to a writable folder, or FEDBOOK_CACHE_DIR=off)", RuntimeWarning,
                      stacklevel=3)


# ----------------------------------------------------------------------------------------------------
# public entry point
# ----------------------------------------------------------------------------------------------------
def calibrate(event_of_noise: Callable[[float], DpEvent], target_eps: float, delta: float,
              accountant: str = "rdp", *, rtol: float = 1e-3, cache: bool = False) -> float:
    """Noise multiplier z with ``accountant``'s ε of ``event_of_noise(z)`` at ``delta`` certified ≤ ``target_eps``.

    ``event_of_noise``: ``z ↦ DpEvent`` whose ε is non-increasing in z (more noise, less privacy
    loss).  The returned z is at most ``rtol`` (relative) above the smallest such z, found by a
    bracketing search and Brent's method on log z with a one-sided stop (never a fit): the same inputs
    give the same bits whatever ran before.  ``target_eps=inf`` → 0 (no noise); an event that does not
    depend on z → 0 if its ε fits the target.  ``cache=True`` reads and writes the on-disk cache
    (module docstring).  Raises ``ValueError`` for invalid arguments, unattainable targets and targets
    above the accountant's :attr:`~fedtheory.privacy.accountants.Accountant.max_epsilon` (``pld``: 100,
    ``prv``: 50, ``rdp``: none; the message names the range).
    Adjacency: add/remove-one record (that of the events).
    """
    if not callable(event_of_noise):
        raise ValueError(f"event_of_noise must be a callable z -> DpEvent (got {type(event_of_noise).__name__})")
    target = float(check_positive("target_eps", target_eps))
    delta = float(check_open_interval("delta", delta, 0.0, 1.0))
    rtol = float(check_positive("rtol", rtol))
    if rtol > 1e-3:
        raise ValueError(f"rtol must be <= 1e-3 so that the certified eps stays >= 0.99*target (got {rtol!r})")
    acc = get_accountant(accountant)
    if math.isinf(target):
        return 0.0
    if target > acc.max_epsilon:
        raise ValueError(f"target_eps={target!r} is outside the supported range: {acc.range_note()}")
    key = _key(event_of_noise, target, delta, accountant, rtol)
    memo_key = json.dumps(key, sort_keys=True)
    if memo_key in _MEMO:
        return _MEMO[memo_key]
    folder = cache_dir() if cache else None
    path = _path(folder, key) if folder is not None else None
    z, why = _read(path, key) if path is not None else (None, None)
    if z is not None:
        why = _verify(z, event_of_noise, target, delta, accountant, rtol)
        if why is not None:
            z = None
    if why is not None and ("discarded", str(folder)) not in _WARNED_FOLDERS:
        _WARNED_FOLDERS.add(("discarded", str(folder)))  # one line per folder and process
        warnings.warn(f"calibration cache: discarded {path}: {why}; recalibrating and rewriting it (and any other "
                      f"entry of {folder} that fails the same check)", RuntimeWarning, stacklevel=2)
    if z is None:
        z = float(_solve(event_of_noise, target, delta, accountant, rtol))
        if path is not None:
            _write(path, key, z)
    if len(_MEMO) > 100_000:
        _MEMO.clear()
    _MEMO[memo_key] = z
    return z


def calibrate_many(event_of_noises, target_eps, delta, accountant: str = "rdp", *, rtol: float = 1e-3,
                   cache: bool = False) -> list[float]:
    """:func:`calibrate` of every map of ``event_of_noises`` (``target_eps``, ``delta``: one value, or one per map):
    the same noise multipliers, bit for bit, and the same checks of a cached value; the cached entries of the
    ``rdp`` accountant are verified in one batched evaluation (module docstring), so that a run whose calibrations
    are all cached pays one vectorized ε evaluation instead of two per entry."""
    fns = list(event_of_noises)
    n = len(fns)
    targets = list(target_eps) if np.ndim(target_eps) else [target_eps] * n
    deltas = list(delta) if np.ndim(delta) else [delta] * n
    if len(targets) != n or len(deltas) != n:
        raise ValueError(f"target_eps and delta must be one value or one per map ({n}; got {len(targets)} and "
                         f"{len(deltas)})")
    folder = cache_dir() if cache else None
    if folder is not None and accountant == "rdp" and n:
        _verify_cached(fns, targets, deltas, rtol, folder)
    return [calibrate(f, t, d, accountant, rtol=rtol, cache=cache) for f, t, d in zip(fns, targets, deltas)]


def _verify_cached(fns, targets, deltas, rtol, folder: Path) -> None:
    """Memoise every cached rdp entry among ``fns`` that passes :func:`_verify`'s two checks, evaluated in one batch:
    ε at z ≤ target and ε at ``z·(1−rtol)`` (full grid: ≤ the search's window ε) > target.  Entries it does not
    accept (and anything unusual: invalid arguments, z = 0, z near the search's floor) are left to :func:`calibrate`,
    which checks them one by one, warns and recalibrates."""
    acc = get_accountant("rdp")
    todo = []
    for f, t, d in zip(fns, targets, deltas):
        try:
            t, d, r = float(t), float(d), float(rtol)
            if not (callable(f) and 0 < t < math.inf and 0 < d < 1 and 0 < r <= 1e-3):
                continue
            key = _key(f, t, d, "rdp", r)
        except (ValueError, TypeError, ArithmeticError):
            continue
        memo_key = json.dumps(key, sort_keys=True)
        if memo_key in _MEMO:
            continue
        z, _ = _read(_path(folder, key), key)
        if z is None or not (math.isfinite(z) and z * (1 - r) >= _Z_MIN):
            continue
        try:
            todo.append((memo_key, z, t, d, f(z), f(z * (1 - r))))
        except (ValueError, ArithmeticError):
            continue
    if not todo:
        return
    try:
        eps = acc.epsilons([e for item in todo for e in item[4:]], [item[3] for item in todo for _ in (0, 1)])
    except (ValueError, ArithmeticError):
        return  # one by one, each with its own reason
    for j, (memo_key, z, t, _, _, _) in enumerate(todo):
        if eps[2 * j] <= t < eps[2 * j + 1]:
            if len(_MEMO) > 100_000:
                _MEMO.clear()
            _MEMO[memo_key] = z


assert ACCOUNTANTS == ("rdp", "pld", "prv")
