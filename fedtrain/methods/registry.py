"""The method registry: every federated method declares its metadata here, once.

Each :class:`MethodSpec` names the method, its legend label and plot colour, whether it has a
regularization strength λ, its options dataclass (:mod:`fedtrain.methods.options`, validated,
turned into CLI flags) and the class running its rounds (and owning its privacy accounting).  The
configuration (:mod:`fedtrain.config`), the engine's checks, the CLI, the sweeps and the figures all
read this registry; adding a method means adding one entry (and its class).

Classes are imported on first use (:attr:`MethodSpec.cls`), so that validating a configuration or
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
)
from fedtrain.params import Param, params_of

__all__ = ["MethodSpec", "METHOD_REGISTRY", "METHODS", "LAMBDA_METHODS", "method_spec", "get_method",
           "option_params", "register_method"]


def _ifca_detail(o: IFCAOptions) -> str:
    return " (every round)" if o.select_frac >= 1 else f" ({100 * o.select_frac:g}% sel.)"


def _finetune_detail(o: FinetuneOptions) -> str:
    return f" ({100 * o.finetune_frac:g}% FedAvg)"


@dataclass(frozen=True)
class MethodSpec:
    """One method: ``name`` (config value), ``label``/``color`` (figures), ``uses_lambda``, ``options``
    (its options dataclass), ``class_path`` (``module:Class`` of its round logic), ``summary`` (paper
    reference) and ``detail`` (options → label suffix, e.g. ``" (10% sel.)"``)."""

    name: str
    label: str
    color: str
    uses_lambda: bool
    options: type[MethodOptions]
    class_path: str
    summary: str
    detail: Callable[[Any], str] | None = None

    @property
    def cls(self) -> type:
        """The :class:`fedtrain.methods.base.Method` subclass (imported on first use)."""
        module, name = self.class_path.split(":")
        return getattr(importlib.import_module(module), name)

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
    MethodSpec("fedavg", "FedAvg", "tab:orange", False, NoOptions, "fedtrain.methods.baselines:FedAvg",
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
    MethodSpec("ifca-mrmtl", "IFCA-MR-MTL", "tab:pink", True, IFCAMRMTLOptions, "fedtrain.methods.ifca:IFCAMRMTL",
               "IFCA-preconditioned MR-MTL, Algorithm A2 (Fig. 6)", _ifca_detail),
):
    register_method(_spec)

#: Method names, in registry order.
METHODS: tuple[str, ...] = tuple(METHOD_REGISTRY)
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
