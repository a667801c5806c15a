"""The one JSON encoding of configurations and results (used by ``RunConfig.to_dict``,
``RunResult.to_dict`` and the results store).

JSON has no infinities or NaN, so the non-finite floats are written as the strings ``"inf"``,
``"-inf"`` and ``"nan"``; tuples become lists; numpy and torch scalars and arrays become numbers and
(nested) lists; paths become strings; an object with ``to_dict()`` (a config, a result, an options
dataclass) is encoded through it.  :func:`decode_float` reads the three strings back.  Output of
:func:`encode` always passes ``json.dumps(..., allow_nan=False)``.
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np

__all__ = ["encode", "decode_float", "decode_floats", "dumps"]

_NONFINITE = {"inf": math.inf, "infinity": math.inf, "-inf": -math.inf, "-infinity": -math.inf, "nan": math.nan}


def encode(value: Any) -> Any:
    """A JSON-safe copy of ``value`` (see the module docstring); unknown types raise ``TypeError``."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return [encode(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "to_dict"):
        return encode(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    raise TypeError(f"cannot encode a value of type {type(value).__name__} as JSON")


def decode_float(value: Any) -> float:
    """``float`` of a number or of ``"inf"``/``"-inf"``/``"nan"`` (as written by :func:`encode`)."""
    if isinstance(value, str):
        key = value.strip().lower()
        if key in _NONFINITE:
            return _NONFINITE[key]
        return float(value)
    return float(value)


def decode_floats(value: Any) -> Any:
    """Nested lists with the non-finite strings turned back into floats (other values unchanged)."""
    if isinstance(value, list):
        return [decode_floats(v) for v in value]
    if isinstance(value, str) and value.strip().lower() in _NONFINITE:
        return _NONFINITE[value.strip().lower()]
    return value


def dumps(value: Any, **kw: Any) -> str:
    """``json.dumps(encode(value), allow_nan=False)`` (keyword arguments passed on)."""
    return json.dumps(encode(value), allow_nan=False, **kw)
