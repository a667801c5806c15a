"""The settings of one client-level run, declared once as data (:mod:`fedtrain.params`).

Methods (Aldaghri et al., Sec. 4-5, Algorithm 2; every one runs Ditto personalization next to the
global model, so each is the paper's "+Ditto" row).  They are entries of the one method registry
(:mod:`fedtrain.methods.registry`) with a client as their privacy unit; the registry says which privacy
groups each forms and whether it takes the weight ratio ``r``:

=================  ===========================================================================================
``nonprivate``     Non-Private+Ditto: one group, no noise (``z = 0``), every client
``dp-fedavg``      DP-FedAvg+Ditto: one group, every client private at the strictest level (noise ``z``)
``hdp-fedavg``     HDP-FedAvg+Ditto: two groups, noise on the private group only, ``r = 1`` (uniform weights)
``fedhdp``         FedHDP: two groups, noise on the private group only, private weight ratio ``r`` in [0, 1]
=================  ===========================================================================================

A :class:`FedHDPConfig` holds the settings every client-level method has (data, rounds, local epochs, batch,
learning rate, initial clipping norm, model, δ, accountant, seed) and the method's options dataclass
(:class:`~fedtrain.methods.options.ClientDittoOptions`, or :class:`~fedtrain.methods.options.FedHDPOptions`
with ``ratio``), read as attributes (``config.sample_rate``).  An option the method does not have (``ratio``
with ``dp-fedavg``) is a ``ValueError`` naming the methods that have it.  The opted-out (non-private) clients
are the dataset's ``info["nonprivate_clients"]`` (:mod:`fedtrain.data.noniid_digits`,
:mod:`fedtrain.data.femnist`).  Defaults are Table 7's non-IID MNIST column (batch 20, η = η_p = 0.5, decay 0.9
every 50 rounds, S⁰ = 0.5, η_b = 0.2, κ = 0.5, effective noise multiplier 1.5, 500 rounds, δ = 1e-4) except
``local_epochs`` (Table 7: 25).

:meth:`FedHDPConfig.key` (shared with :class:`fedtrain.config.RunConfig` through
:class:`fedtrain.config.OptionsConfig`) is :func:`fedtrain.config.config_key` of :meth:`FedHDPConfig.to_dict`: it
holds the engine version, as the cross-silo configurations' keys do, and with the data's identity it files a run in a
results store (:func:`fedtrain.store.keys.row_key`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from fedtrain.config import OptionsConfig
from fedtrain.encoding import encode
from fedtrain.methods.options import MethodOptions
from fedtrain.methods.registry import CLIENT_METHODS, METHOD_REGISTRY, method_spec, option_params
from fedtrain.params import param, params_of, validate_fields

__all__ = ["FedHDPConfig", "FEDHDP_METHODS", "METHOD_LABELS", "method_configs"]

#: The client-level methods, in table order (the registry's methods whose privacy unit is a client).
FEDHDP_METHODS = CLIENT_METHODS
#: Row labels of the paper's tables (the registry's labels).
METHOD_LABELS = {m: METHOD_REGISTRY[m].label for m in CLIENT_METHODS}


@dataclass(frozen=True, init=False)
class FedHDPConfig(OptionsConfig):
    """One run of a client-level method (module docstring); every field and option validated on construction.

    Build it with keywords: ``FedHDPConfig(method="fedhdp", ratio=0.05, rounds=100, ...)``; the options of the
    method may also be given as ``options=`` (its options dataclass or a mapping)."""

    dataset: str = param("noniid-digits", kind="str", help="dataset name (fedtrain datasets: a client-level one)")
    dataset_options: dict = param(default_factory=dict, kind="mapping",
                                  help="loader options, e.g. num_clients=200 (the population seed: seed)")
    method: str = param("fedhdp", kind="choice", choices=CLIENT_METHODS,
                        help="client-level method (privacy unit: a client)")
    rounds: int = param(500, kind="int", low=1, help="communication rounds R (paper: 500)")
    local_epochs: int = param(1, kind="int", low=1, help="local epochs E per round (Table 7: 25)")
    batch_size: int = param(20, kind="int", low=1, help="local batch size (Table 7: 20)")
    lr: float = param(0.5, kind="float", low=0.0, low_open=True, help="local learning rate eta (Table 7: 0.5)")
    clip: float = param(0.5, kind="float", low=0.0, low_open=True, help="initial clipping norm S^0 (Table 7: 0.5)")
    model: str = param("fc", kind="choice", choices=("fc", "linear"),
                       help="fc: Table 6's network (input, FC hidden ReLU, FC classes); linear: x -> x W (no bias), "
                            "the theory's linear regression")
    delta: float = param(1e-4, kind="float", low=0.0, high=1.0, low_open=True, high_open=True,
                         help="delta of the client-level guarantee (paper: 1e-4); must be < N_g^-1.1 for every "
                              "private group of N_g clients (checked when the data are known)")
    accountant: str = param("rdp", kind="choice", choices=("rdp", "pld", "prv"), help="privacy accountant")
    eval_every: int = param(0, kind="int", low=0, help="evaluate the global model every this many rounds (0: end)")
    seed: int = param(0, kind="int", low=0, help="training seed (client sampling, batches, noise, init)")
    options: MethodOptions = None  # type: ignore[assignment]

    def __init__(self, **kwargs: Any) -> None:
        common = params_of(FedHDPConfig)
        for name, (_, default) in common.items():
            value = kwargs.pop(name, default)
            object.__setattr__(self, name, dict(value) if name == "dataset_options" and value is not None else value)
        validate_fields(self)
        spec = method_spec(self.method)
        options = kwargs.pop("options", None)
        opts = self._options_mapping(spec, options)
        opts.update(kwargs)
        mine = params_of(spec.options)
        known = option_params()
        if not spec.takes_ratio and "ratio" in opts:
            # the methods without r weigh every client alike; to_dict records that r = 1, so it may come back
            r = opts.pop("ratio")
            if r != 1.0:
                raise ValueError(f"ratio is an option of {', '.join(known['ratio'][2])}, not of {self.method!r} "
                                 f"(which weighs every client alike, r = 1; got ratio={r!r})")
        for name in opts:
            if name not in mine:
                owners = known[name][2] if name in known else ()
                raise ValueError(f"{name} is " + (f"an option of {', '.join(owners)}, " if owners else
                                                  "not a field or option of any client-level method, ")
                                 + f"not of {self.method!r} (its options: {', '.join(mine)}; fields: "
                                 f"{', '.join(common)})")
        object.__setattr__(self, "options", spec.options(**opts))

    def _missing_attribute(self, name: str) -> Any:
        raise AttributeError(f"FedHDPConfig of method {self.__dict__.get('method')!r} has no field or option {name!r}")

    @property
    def effective_ratio(self) -> float:
        """The weight ratio the method uses: its ``ratio`` option, or 1 for the methods without one."""
        return float(self.options.ratio) if self.spec.takes_ratio else 1.0

    def to_dict(self) -> dict:
        """The JSON-safe encoding, flat: the fields, the options and ``ratio`` (the weight ratio the method uses,
        1 for the methods without the option), so that rows of every client-level method carry ``r``."""
        out = {k: encode(v) for k, v in self.to_flat().items()}
        out["ratio"] = encode(self.effective_ratio)
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FedHDPConfig) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.key())


def method_configs(method: str, ratios: Sequence[float], **fields: Any) -> list[FedHDPConfig]:
    """One configuration per ratio for a method taking the weight ratio ``r`` (its registry entry), else one
    (``r = 1``); ``fields``: the other settings of every configuration."""
    if method_spec(method).takes_ratio:
        return [FedHDPConfig(method=method, ratio=r, **fields) for r in ratios]
    return [FedHDPConfig(method=method, **fields)]
