"""The method registry: every federated method declares its metadata here, once.

Each :class:`MethodSpec` names the method, its legend label and plot colour, its **privacy unit**
(:data:`PRIVACY_UNITS`: a record of a silo, for the cross-silo methods of the MR-MTL paper that run
DP-SGD inside each silo; or a client, for FedHDP and its baselines, which add noise to the clients'
model updates), whether it has a regularization strength λ, its options dataclass
(:mod:`fedtrain.methods.options`, validated, turned into CLI flags), the privacy groups a client-level
method forms, and the code running it: ``class_path``, a :class:`~fedtrain.methods.base.Method` of the
cross-silo engine or the client-level trainer :func:`fedtrain.clientdp.trainer.train`.  The privacy unit is
a registry entry too (:data:`UNIT_CODE`): each unit names its **configuration class**
(:class:`fedtrain.config.RunConfig`, :class:`fedtrain.clientdp.config.FedHDPConfig`), its **runner**
(``runner(configs, data) -> results``: :func:`fedtrain.engine.run_many`, :func:`fedtrain.clientdp.trainer.run_many`)
and its **validator** (``validator(config, data)``, raising ``ValueError`` before anything trains:
:func:`fedtrain.engine.validate`, :func:`fedtrain.clientdp.trainer.validate`), and every method reaches them
through its spec (:attr:`MethodSpec.config_class`, :attr:`MethodSpec.runner`, :attr:`MethodSpec.validator`).
The configurations, the engines' checks, the CLI, the sweeps (:func:`fedtrain.sweep.run_sweep` runs a grid of
either unit through its runner), the tables and the figures all read this registry; adding a method means adding
one entry (and its code).

Code is imported on first use (:attr:`MethodSpec.cls` and the three above), so that validating a configuration or
printing ``fedtrain --help`` does not import torch.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from fedtrain.methods.options import (
    DittoOptions,
    FinetuneOptions,
    IFCAMRMTLOptions,
    IFCAOptions,
    MethodOptions,
    NoOptions,
    ProxOptions,
    ClientDittoOptions,
    FedHDPOptions,
)
from fedtrain.params import Param, params_of

__all__ = ["MethodSpec", "METHOD_REGISTRY", "METHODS", "LAMBDA_METHODS", "RECORD", "CLIENT", "PRIVACY_UNITS",
           "GROUPS", "RECORD_METHODS", "CLIENT_METHODS", "method_spec", "get_method", "option_params",
           "register_method", "methods_of_unit", "methods_table", "UNIT_CODE", "UnitCode"]

#: The privacy units: what one adjacent dataset adds or removes.
RECORD = "record"
CLIENT = "client"
PRIVACY_UNITS = {
    RECORD: "a record of a silo (sample-level DP: add/remove one record; DP-SGD inside every silo, each silo "
            "certified for its own records)",
    CLIENT: "a client (client-level DP: add/remove one client with all of its data; noise on the sum of the "
            "clients' clipped updates, certified per privacy group)",
}


@dataclass(frozen=True)
class UnitCode:
    """The code of one privacy unit, as ``module:name`` paths imported on first use: ``config`` (the configuration
    class of its methods), ``runner`` (``runner(configs, data) -> results``, trains a batch on one dataset) and
    ``validator`` (``validator(config, data)``: every check before training, ``ValueError`` on a failure)."""

    config: str
    runner: str
    validator: str


#: The code of each privacy unit (:class:`UnitCode`).
UNIT_CODE = {
    RECORD: UnitCode("fedtrain.config:RunConfig", "fedtrain.engine:run_many", "fedtrain.engine:validate"),
    CLIENT: UnitCode("fedtrain.clientdp.config:FedHDPConfig", "fedtrain.clientdp.trainer:run_many",
                     "fedtrain.clientdp.trainer:validate"),
}


def _load(path: str) -> Any:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


#: The privacy groups a client-level method may form: the opted-out clients (no noise, no guarantee) and the
#: private clients (noise, client-level guarantee).
GROUPS = ("nonprivate", "private")


def _ifca_detail(o: IFCAOptions) -> str:
    return " (every round)" if o.select_frac >= 1 else f" ({100 * o.select_frac:g}% sel.)"


def _finetune_detail(o: FinetuneOptions) -> str:
    return f" ({100 * o.finetune_frac:g}% FedAvg)"


@dataclass(frozen=True)
class MethodSpec:
    """One method: ``name`` (config value), ``label``/``color`` (figures and tables), ``uses_lambda``,
    ``options`` (its options dataclass), ``class_path`` (``module:name`` of its code), ``summary`` (paper
    reference), ``detail`` (options → label suffix, e.g. ``" (10% sel.)"``), ``unit`` (its privacy unit,
    :data:`PRIVACY_UNITS`) and, for a client-level method, ``groups``: the privacy groups it forms
    (:data:`GROUPS`; one group holding every client, or the opted-out and the private clients)."""

    name: str
    label: str
    color: str
    uses_lambda: bool
    options: type[MethodOptions]
    class_path: str
    summary: str
    detail: Callable[[Any], str] | None = None
    unit: str = RECORD
    groups: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.unit not in PRIVACY_UNITS:
            raise ValueError(f"unit must be one of {', '.join(map(repr, PRIVACY_UNITS))} (got {self.unit!r})")
        if (self.unit == CLIENT) != bool(self.groups) or not set(self.groups) <= set(GROUPS):
            raise ValueError(f"groups must be a non-empty subset of {GROUPS} for a client-level method and empty "
                             f"otherwise (method {self.name!r}: unit {self.unit!r}, groups {self.groups!r})")

    @property
    def cls(self) -> Any:
        """The code running the method, imported on first use: a :class:`fedtrain.methods.base.Method`
        subclass (privacy unit: a record), or :func:`fedtrain.clientdp.trainer.train` (a client)."""
        return _load(self.class_path)

    @property
    def config_class(self) -> type:
        """The configuration class of the method's privacy unit (:data:`UNIT_CODE`), imported on first use."""
        return _load(UNIT_CODE[self.unit].config)

    @property
    def runner(self) -> Callable[..., Any]:
        """``runner(configs, data) -> results`` of the method's privacy unit (:data:`UNIT_CODE`): trains a batch
        of configurations on one dataset (imports torch on first use)."""
        return _load(UNIT_CODE[self.unit].runner)

    @property
    def validator(self) -> Callable[..., None]:
        """``validator(config, data)`` of the method's privacy unit (:data:`UNIT_CODE`): every check before
        training, ``ValueError`` on a failure."""
        return _load(UNIT_CODE[self.unit].validator)

    @property
    def unit_text(self) -> str:
        """The privacy unit in words (:data:`PRIVACY_UNITS`)."""
        return PRIVACY_UNITS[self.unit]

    @property
    def private(self) -> bool | None:
        """Client-level: whether some group is private (adds noise); ``None`` for a record-level method, whose
        privacy is set per run by ε (``eps=inf`` is its non-private baseline)."""
        return None if self.unit != CLIENT else "private" in self.groups

    @property
    def takes_ratio(self) -> bool:
        """Whether the method has the weight ratio ``r`` of a private to a non-private client as an option (the
        other two-group methods weigh every client alike, ``r = 1``)."""
        return "ratio" in self.options.__dataclass_fields__

    def label_for(self, options: MethodOptions | None = None) -> str:
        """Legend label, with the options that change what is plotted (IFCA's selection share, ...)."""
        if options is None or self.detail is None:
            return self.label
        return self.label + self.detail(options)


METHOD_REGISTRY: dict[str, MethodSpec] = {}
_OPTIONS: dict[str, tuple[Param, Any, tuple[str, ...]]] = {}  # cache of option_params()


def register_method(spec: MethodSpec) -> MethodSpec:
    """Add a method to the registry (its option names must not clash with another method's differently)."""
    if spec.name in METHOD_REGISTRY:
        raise ValueError(f"method {spec.name!r} is already registered")
    for name, (p, _) in params_of(spec.options).items():
        for other in METHOD_REGISTRY.values():
            q = params_of(other.options).get(name)
            if q is not None and q[0] != p:
                raise ValueError(f"option {name!r} of {spec.name!r} differs from {other.name!r}'s")
    METHOD_REGISTRY[spec.name] = spec
    _OPTIONS.clear()
    return spec


for _spec in (
    MethodSpec("local", "Local", "tab:blue", False, NoOptions, "fedtrain.methods.baselines:Local",
               "local training (Sec. 3, App. D)"),
    MethodSpec("fedavg", "FedAvg", "#d55e00", False, NoOptions, "fedtrain.methods.baselines:FedAvg",
               "FedAvg (McMahan et al.; App. D)"),
    MethodSpec("finetune", "Finetune", "tab:purple", False, FinetuneOptions, "fedtrain.methods.baselines:Finetune",
               "FedAvg then local finetuning (Sec. 4, Fig. 2)", _finetune_detail),
    MethodSpec("mrmtl", "MR-MTL", "tab:red", True, ProxOptions, "fedtrain.methods.mrmtl:MRMTL",
               "mean-regularized MTL, Algorithm A1 (Sec. 5)"),
    MethodSpec("ditto", "Ditto", "tab:green", True, DittoOptions, "fedtrain.methods.ditto:Ditto",
               "Ditto (Li et al. 2021; App. D), two DP-SGD passes per round"),
    MethodSpec("mocha", "Mocha", "tab:brown", True, ProxOptions, "fedtrain.methods.mocha:Mocha",
               "Mocha in primal form (Smith et al. 2017; App. D)"),
    MethodSpec("ifca", "IFCA", "tab:gray", False, IFCAOptions, "fedtrain.methods.ifca:IFCA",
               "IFCA with private cluster selection (Ghosh et al.; App. D, Fig. 3)", _ifca_detail),
    MethodSpec("ifca-mrmtl", "IFCA-MR-MTL", "#b03c8c", True, IFCAMRMTLOptions, "fedtrain.methods.ifca:IFCAMRMTL",
               "IFCA-preconditioned MR-MTL, Algorithm A2 (Fig. 6)", _ifca_detail),
    MethodSpec("nonprivate", "Non-Private+Ditto", "gray", False, ClientDittoOptions, "fedtrain.clientdp.trainer:train",
               "Non-Private+Ditto (Aldaghri et al. Sec. 5): one group, every client, no noise",
               unit=CLIENT, groups=("nonprivate",)),
    MethodSpec("dp-fedavg", "DP-FedAvg+Ditto", "tab:blue", False, ClientDittoOptions, "fedtrain.clientdp.trainer:train",
               "DP-FedAvg+Ditto (Aldaghri et al. Sec. 5): one group, every client private",
               unit=CLIENT, groups=("private",)),
    MethodSpec("hdp-fedavg", "HDP-FedAvg+Ditto", "tab:green", False, ClientDittoOptions,
               "fedtrain.clientdp.trainer:train",
               "HDP-FedAvg+Ditto (Aldaghri et al. Sec. 5): opted-out and private groups, noise on the private one, "
               "r = 1", unit=CLIENT, groups=("nonprivate", "private")),
    MethodSpec("fedhdp", "FedHDP", "tab:red", False, FedHDPOptions, "fedtrain.clientdp.trainer:train",
               "FedHDP (Aldaghri et al. Algorithm 2): opted-out and private groups, private weight ratio r",
               unit=CLIENT, groups=("nonprivate", "private")),
):
    register_method(_spec)

#: Method names, in registry order.
METHODS: tuple[str, ...] = tuple(METHOD_REGISTRY)
#: The methods whose privacy unit is a record of a silo (the cross-silo engine, :class:`fedtrain.config.RunConfig`).
RECORD_METHODS: tuple[str, ...] = tuple(m for m, s in METHOD_REGISTRY.items() if s.unit == RECORD)
#: The methods whose privacy unit is a client (:class:`fedtrain.clientdp.config.FedHDPConfig`), in table order.
CLIENT_METHODS: tuple[str, ...] = tuple(m for m, s in METHOD_REGISTRY.items() if s.unit == CLIENT)
#: Methods with a regularization strength λ (the others ignore it).
LAMBDA_METHODS: tuple[str, ...] = tuple(m for m, s in METHOD_REGISTRY.items() if s.uses_lambda)


def method_spec(name: str) -> MethodSpec:
    """The registry entry of ``name``; an unknown name raises ``ValueError`` listing the valid ones."""
    try:
        return METHOD_REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"method must be one of {', '.join(map(repr, METHOD_REGISTRY))} (got {name!r})") from None


def get_method(name: str) -> type:
    """The class implementing method ``name``."""
    return method_spec(name).cls


def option_params() -> dict[str, tuple[Param, Any, tuple[str, ...]]]:
    """Every option of every registered method: ``{name: (Param, default, methods having it)}`` (a cached
    read-only view; do not modify)."""
    if not _OPTIONS:
        for m, spec in METHOD_REGISTRY.items():
            for name, (p, d) in params_of(spec.options).items():
                prev = _OPTIONS.get(name)
                _OPTIONS[name] = (p, d, (prev[2] if prev else ()) + (m,))
    return _OPTIONS


def methods_of_unit(unit: str) -> tuple[str, ...]:
    """The registered methods whose privacy unit is ``unit`` (:data:`PRIVACY_UNITS`), in registry order."""
    if unit not in PRIVACY_UNITS:
        raise ValueError(f"unit must be one of {', '.join(map(repr, PRIVACY_UNITS))} (got {unit!r})")
    return tuple(m for m, s in METHOD_REGISTRY.items() if s.unit == unit)


def methods_table() -> str:
    """Every registered method with its privacy unit and options, one line each (``fedtrain run --help``)."""
    width = max(map(len, METHOD_REGISTRY))
    lines = []
    for unit, text in PRIVACY_UNITS.items():
        lines.append(f"privacy unit: {text}")
        for m, s in METHOD_REGISTRY.items():
            if s.unit != unit:
                continue
            opts = ", ".join("--" + n.replace("_", "-") for n in params_of(s.options)) or "none"
            lam = "; --lam" if s.uses_lambda else ""
            lines.append(f"  {m.ljust(width)}  unit: {unit}; {s.summary}. Options: {opts}{lam}")
    return "\n".join(lines)
