"""Declarative parameter constraints: one :class:`Param` per configuration field, as data.

Every field of :class:`fedtrain.config.RunConfig` and of the methods' option dataclasses
(:mod:`fedtrain.methods.options`) carries a :class:`Param` in its dataclass ``metadata`` (use
:func:`param`).  From that one description come

* the validation and its ``ValueError`` message, which names the field and its valid range, e.g.
  ``lr must be a finite number > 0 (got inf)`` (:meth:`Param.check`);
* the command-line flag, its parser, its help text with range and default (:func:`add_flag`);
* the documentation table of :func:`describe_fields`.

Kinds: ``"float"`` (finite unless ``allow_inf``; NaN never), ``"int"`` (exact integers in
``[low, 2^53)``), ``"choice"`` (one of ``choices``), ``"str"`` (non-empty text), ``"budget"`` (a float,
or one float per silo; ``eps`` may be ``inf``, ``delta`` may be ``None``) and ``"mapping"`` (JSON object).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import numbers
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from fedtheory.validation import MAX_EXACT_INT

__all__ = ["Param", "param", "params_of", "describe_fields", "add_flag", "cli_param", "flag_name",
           "parse_list", "validate_fields"]


#: The words that mean infinity as text (``float()`` accepts them, any case, with a sign): only these may mean
#: inf (e.g. ``--eps inf``, the non-private baseline); a number that overflows a float is an error.
_INF_WORDS = ("inf", "infinity")
_NONZERO_DIGIT = re.compile(r"[1-9]")
_TINY = 5e-324


def _num(v: float) -> str:
    if v == MAX_EXACT_INT:
        return "2^53"
    if math.isinf(v):
        return "inf"
    return f"{v:g}"


@dataclass(frozen=True)
class Param:
    """The constraints and documentation of one configuration field (see the module docstring)."""

    kind: str
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[Any, ...] | None = None
    allow_inf: bool = False
    allow_none: bool = False
    per_silo: bool = False
    #: command-line flag names (default ``--field-name``) and the metavar
    flags: tuple[str, ...] = ()
    #: text for the default in ``--help`` when it is not the dataclass default (e.g. paper defaults)
    default_note: str = ""

    # ----------------------------------------------------------------------------------- text
    def range_text(self) -> str:
        """The valid range in words, e.g. ``"a finite number in (0, 1)"``, ``"an integer >= 1"``."""
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices or ())
        if self.kind == "str":
            return "a non-empty string"
        if self.kind == "mapping":
            return "a mapping of JSON values"
        if self.kind == "int":
            lo = int(self.low if self.low is not None else 0)
            hi = self.high if self.high is not None else MAX_EXACT_INT
            if hi == MAX_EXACT_INT:
                return f"an integer >= {lo}" if self.low is not None and lo > 0 else f"an integer in [{lo}, 2^53)"
            return f"an integer in [{lo}, {_num(hi)}{')' if self.high_open else ']'}"
        what = "a number" if self.allow_inf else "a finite number"
        if self.low is not None and self.high is not None:
            rng = f"in {'(' if self.low_open else '['}{_num(self.low)}, {_num(self.high)}{')' if self.high_open else ']'}"
        elif self.low is not None:
            rng = f"{'>' if self.low_open else '>='} {_num(self.low)}"
        elif self.high is not None:
            rng = f"{'<' if self.high_open else '<='} {_num(self.high)}"
        else:
            rng = ""
        text = f"{what} {rng}".strip()
        if self.allow_inf:
            text += " (inf allowed)"
        if self.per_silo:
            text += ", or one such number per silo"
        if self.allow_none:
            text += ", or None"
        return text

    def error(self, name: str, value: Any) -> ValueError:
        return ValueError(f"{name} must be {self.range_text()} (got {value!r})")

    def _overflow(self, name: str, value: Any) -> ValueError:
        """A number beyond the largest float: an error, never read as inf (which may mean "no noise")."""
        if isinstance(value, str):
            text = value
        elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
            text = f"an integer of {len(str(abs(int(value))))} digits" if value.bit_length() < 14_000 else \
                f"an integer of {value.bit_length()} bits"
        else:
            text = repr(value)[:40]
        inf = "; write inf for infinity" if self.allow_inf else ""
        return ValueError(f"{name} must be {self.range_text()} (got {text if not isinstance(value, str) else repr(text)}, beyond the largest float "
                          f"{sys.float_info.max:.4g}{inf})")

    # ----------------------------------------------------------------------------------- checks
    def check(self, name: str, value: Any) -> Any:
        """Validate and normalize ``value`` (float, int, tuple of floats, ...); raise the generated error."""
        if self.kind == "choice":
            if value not in (self.choices or ()):
                raise self.error(name, value)
            return value
        if self.kind == "str":
            if not isinstance(value, str) or not value:
                raise self.error(name, value)
            return value
        if self.kind == "mapping":
            if not isinstance(value, Mapping):
                raise self.error(name, value)
            return dict(value)
        if self.kind == "int":
            return self._int(name, value)
        if self.kind == "float":
            return self._float(name, value)
        if self.kind == "budget":
            if value is None:
                if self.allow_none:
                    return None
                raise self.error(name, value)
            if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
                return self._float(name, value)
            items = tuple(self._float(name, v) for v in list(value))
            if not items:
                raise ValueError(f"{name} must not be an empty sequence; it must be {self.range_text()}")
            return items
        raise TypeError(f"unknown parameter kind {self.kind!r}")  # pragma: no cover

    def _int(self, name: str, value: Any) -> int:
        if isinstance(value, bool):
            raise self.error(name, value)
        if isinstance(value, numbers.Integral):
            v = int(value)
        elif isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
            v = int(value)
        elif isinstance(value, str):
            try:
                v = int(value.strip())
            except ValueError:
                raise self.error(name, value) from None
        else:
            raise self.error(name, value)
        lo = int(self.low) if self.low is not None else 0
        hi = self.high if self.high is not None else MAX_EXACT_INT
        if v < lo or v > hi or (v == hi and (self.high_open or hi == MAX_EXACT_INT)):
            raise self.error(name, value)
        return v

    def _float(self, name: str, value: Any) -> float:
        if isinstance(value, bool):
            raise self.error(name, value)
        try:
            v = float(value.strip()) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise self.error(name, value) from None
        except OverflowError:  # an int or Fraction beyond the largest float (1.8e308)
            raise self._overflow(name, value) from None
        if math.isnan(v):
            raise self.error(name, value)
        if math.isinf(v):
            if isinstance(value, str) and value.strip().lower().lstrip("+-") not in _INF_WORDS:
                raise self._overflow(name, value)  # "1e309" overflows to inf: it does not mean "inf"
            if not (self.allow_inf and v > 0):
                raise self.error(name, value)
            return v
        if v == 0.0 and isinstance(value, str) and _NONZERO_DIGIT.search(value.split("e")[0].split("E")[0]):
            raise ValueError(f"{name} must be {self.range_text()} (got {value!r}, which underflows to 0: "
                             f"a float's smallest positive value is {_TINY:g})")
        if self.low is not None and (v < self.low or (self.low_open and v == self.low)):
            raise self.error(name, value)
        if self.high is not None and (v > self.high or (self.high_open and v == self.high)):
            raise self.error(name, value)
        return v

    # ----------------------------------------------------------------------------------- CLI
    def parse(self, name: str, text: str) -> Any:
        """Parse one command-line value (``"inf"``, ``"none"`` understood where allowed) and check it."""
        t = text.strip()
        if self.kind == "budget" and self.allow_none and t.lower() == "none":
            return None
        if self.kind == "choice":
            # choices may be non-strings (rare); match on their text
            for c in self.choices or ():
                if str(c) == t:
                    return c
        return self.check(name, t)


def param(default: Any = dataclasses.MISSING, *, default_factory: Any = dataclasses.MISSING, **spec: Any):
    """A dataclass ``field`` carrying a :class:`Param` (``spec`` are :class:`Param`'s fields)."""
    kw: dict[str, Any] = {"metadata": {"param": Param(**spec)}}
    if default_factory is not dataclasses.MISSING:
        kw["default_factory"] = default_factory
    else:
        kw["default"] = default
    return dataclasses.field(**kw)


_PARAMS_CACHE: dict[type, dict[str, tuple[Param, Any]]] = {}


def params_of(cls: type) -> dict[str, tuple[Param, Any]]:
    """``{field name: (Param, default)}`` of a dataclass whose fields were made with :func:`param` (cached;
    treat as read-only)."""
    if cls in _PARAMS_CACHE:
        return _PARAMS_CACHE[cls]
    out = {}
    for f in dataclasses.fields(cls):
        p = f.metadata.get("param")
        if p is None:
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        else:
            default = dataclasses.MISSING
        out[f.name] = (p, default)
    _PARAMS_CACHE[cls] = out
    return out


def validate_fields(obj: Any) -> None:
    """Check and normalize every :func:`param` field of a (frozen) dataclass instance in place."""
    for name, (p, _) in params_of(type(obj)).items():
        object.__setattr__(obj, name, p.check(name, getattr(obj, name)))


def _default_text(p: Param, default: Any) -> str:
    if p.default_note:
        return p.default_note
    if default is dataclasses.MISSING:
        return "required"
    if isinstance(default, float) and math.isinf(default):
        return "inf"
    return repr(default) if isinstance(default, str) else str(default)


def describe_fields(cls: type) -> list[tuple[str, str, str, str]]:
    """``(field, valid range, default, help)`` rows for the documentation of a dataclass of :func:`param` fields."""
    return [(name, p.range_text(), _default_text(p, d), p.help) for name, (p, d) in params_of(cls).items()]


def flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def parse_list(p: Param, name: str) -> Callable[[str], list]:
    """argparse ``type`` for a comma-separated list of values of ``p`` (each checked)."""
    def parse(text: str) -> list:
        items = [s.strip() for s in text.split(",")]
        if not any(items):
            raise argparse.ArgumentTypeError(f"{name} needs at least one value (got {text!r})")
        if not all(items):  # "1,,2" or "1,2,": a value left out is a typo, not a smaller grid
            raise argparse.ArgumentTypeError(f"{name} has an empty item in {text!r}; write the values separated "
                                             "by single commas, e.g. 1,2")
        try:
            return [p.parse(name, t) for t in items]
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def _scalar(p: Param, name: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return p.parse(name, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def cli_param(p: Param) -> Param:
    """The declaration as the command line applies it (no per-silo sequences: one number per flag value)."""
    return dataclasses.replace(p, per_silo=False) if p.per_silo else p


def add_flag(group: Any, name: str, p: Param, default: Any, *, as_list: bool, extra_help: str = "",
             flags: Iterable[str] = ()) -> None:
    """Add the flag of field ``name`` to an argparse group: help = description, valid range and default.

    The parsed value is ``None`` when the flag is not given (the caller fills in the default), a list
    when ``as_list`` (comma-separated values, e.g. a sweep axis).
    """
    names = list(flags) or list(p.flags) or [flag_name(name)]
    p = cli_param(p)  # one number per flag value on the command line (per-silo budgets: the Python API)
    help_text = f"{p.help}{extra_help}. Valid: {p.range_text()}{'; comma-separated list' if as_list else ''}. " \
                f"Default: {_default_text(p, default)}"
    kw: dict[str, Any] = dict(dest=name, default=None, help=help_text.replace("%", "%%"),
                              type=parse_list(p, name) if as_list else _scalar(p, name))
    if p.kind == "choice":
        kw["metavar"] = "{" + ",".join(str(c) for c in p.choices or ()) + "}"
    else:
        kw["metavar"] = name.upper()
    group.add_argument(*names, **kw)
