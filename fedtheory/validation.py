"""Argument validation shared by the numeric APIs of :mod:`fedtheory` and :mod:`fedtrain` (public).

Every public numeric function validates its inputs with these helpers so that bad input raises a
:class:`ValueError` that names the argument and states the valid range, e.g.
``ValueError: tau2 must be >= 0 (got -1.0)``.  All helpers accept scalars or array-likes and return
a float64 :class:`numpy.ndarray` (0-d for scalars) so callers can broadcast freely.

Integers (counts, seeds) must lie below :data:`MAX_EXACT_INT` = 2^53, the largest range in which every
integer is exact in float64 and in JSON readers: larger values would silently round (two seeds
colliding on one key) or overflow int64 (K >= 2^63 turning negative).
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "as_float_array",
    "check_nonnegative",
    "check_positive",
    "check_open_interval",
    "check_integer_at_least",
    "check_choice",
    "MAX_EXACT_INT",
]

#: Exclusive upper bound of every integer argument (2^53: exact in float64 and int64, and in JSON readers).
MAX_EXACT_INT = 2**53


def _describe(value: Any) -> str:
    arr = np.asarray(value)
    if arr.ndim == 0:
        return repr(arr.item())
    return f"array of shape {arr.shape}"


def as_float_array(name: str, value: Any) -> np.ndarray:
    """Convert ``value`` to a float64 array; NaN or non-numeric input raises ``ValueError``."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:  # e.g. a string
        raise ValueError(f"{name} must be a real number or an array of real numbers (got {value!r})") from exc
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN (got {_describe(value)})")
    if np.isinf(arr).any() and _overflowed_text(value):
        raise ValueError(f"{name} must be a finite number or the word inf (got {value!r}, which overflows a float)")
    return arr


def _overflowed_text(value: Any) -> bool:
    """Whether ``value`` holds a string such as ``"1e309"`` that a float reads as infinite though it does not say
    ``inf`` (only the word ``inf`` means infinity)."""
    items = [value] if isinstance(value, (str, bytes)) else (value if isinstance(value, (list, tuple)) else [])
    for v in items:
        if isinstance(v, (str, bytes)):
            text = v.decode() if isinstance(v, bytes) else v
            word = text.strip().lower().lstrip("+-")
            if word not in ("inf", "infinity") and np.isinf(float(text)):
                return True
    return False


def check_nonnegative(name: str, value: Any) -> np.ndarray:
    """``value >= 0`` elementwise (variances, noise scales)."""
    arr = as_float_array(name, value)
    if (arr < 0).any():
        bad = float(arr[arr < 0].ravel()[0])
        raise ValueError(f"{name} must be >= 0 (got {bad!r})")
    return arr


def check_positive(name: str, value: Any) -> np.ndarray:
    """``value > 0`` elementwise (privacy budgets, sensitivities, learning rates)."""
    arr = as_float_array(name, value)
    if (arr <= 0).any():
        bad = float(arr[arr <= 0].ravel()[0])
        raise ValueError(f"{name} must be > 0 (got {bad!r})")
    return arr


def check_open_interval(name: str, value: Any, low: float, high: float) -> np.ndarray:
    """``low < value < high`` elementwise (e.g. ``delta`` in (0, 1))."""
    arr = as_float_array(name, value)
    bad_mask = (arr <= low) | (arr >= high)
    if bad_mask.any():
        bad = float(arr[bad_mask].ravel()[0])
        raise ValueError(f"{name} must lie in the open interval ({low}, {high}) (got {bad!r})")
    return arr


def check_integer_at_least(name: str, value: Any, minimum: int) -> np.ndarray:
    """Integer-valued, ``>= minimum`` and ``< 2^53`` elementwise (silo counts, sample sizes, steps, seeds).

    Python integers are compared exactly (no rounding through float64), so ``2**63`` or ``2**53 + 1``
    are rejected rather than wrapped or rounded.
    """
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer in [{minimum}, 2^53) (got {value!r})")
    items = value if isinstance(value, (list, tuple)) else [value]
    for v in items:  # exact check of Python ints before any float conversion
        if isinstance(v, int) and not isinstance(v, bool) and v >= MAX_EXACT_INT:
            raise ValueError(f"{name} must be an integer in [{minimum}, 2^53) (got {v})")
    arr = as_float_array(name, value)
    if (arr != np.round(arr)).any() or not np.isfinite(arr).all():
        raise ValueError(f"{name} must be an integer >= {minimum} (got {_describe(value)})")
    if (arr < minimum).any():
        bad = arr[arr < minimum].ravel()[0]
        raise ValueError(f"{name} must be an integer >= {minimum} (got {int(bad)})")
    if (arr >= MAX_EXACT_INT).any():
        bad = arr[arr >= MAX_EXACT_INT].ravel()[0]
        raise ValueError(f"{name} must be an integer in [{minimum}, 2^53) (got {bad:.6g})")
    return arr.astype(np.int64)


def check_choice(name: str, value: Any, choices: tuple[Any, ...] | list[Any]) -> Any:
    """``value`` must be one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))} (got {value!r})")
    return value
