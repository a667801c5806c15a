"""Run configuration: one frozen, hashable, JSON-round-trippable description of a training run.

A :class:`RunConfig` names everything a run of :func:`fedtrain.engine.run` needs besides the data:
the dataset (name and loader options, so that the results store can key on them), the method, the
per-silo privacy budget, the optimization hyper-parameters and the method's own options.

Constraints are data.  Every field is declared with a :class:`fedtrain.params.Param` (kind, range,
choices, help); the validation, its ``ValueError`` messages (``lr must be a finite number > 0 (got
inf)``), the ``fedtrain`` command-line flags and their ``--help`` text are all generated from it
(:func:`fedtrain.params.describe_fields` lists them).

Method options.  Options that only one method (or a few) has live in that method's options
dataclass (:mod:`fedtrain.methods.options`, listed in :mod:`fedtrain.methods.registry`), held in
``config.options``.  For simple user code they are also accepted as keywords and read as
attributes::

    c = RunConfig(dataset="school", method="ifca", num_clusters=2, eps=6.0)
    c.options            # IFCAOptions(num_clusters=2, select_frac=0.1, ...)
    c.num_clusters       # 2

The option keywords of *other* methods are validated and then ignored (they are not stored and do
not change the key: ``RunConfig(method="fedavg", num_clusters=2)`` equals ``RunConfig(method="fedavg")``),
so that one set of keywords can build configs of several methods; an unknown keyword raises
``ValueError`` listing the valid ones.  Reading an option the method does not have gives that
option's default (it has no effect on the method).

Paper defaults (App. C.4) and the book's grids live in :mod:`fedtrain.presets`;
:meth:`RunConfig.paper` builds a config from them.

Privacy notion: *silo-specific sample-level DP* (paper Sec. 3 / Def. 2.1).  Silo ``k`` guarantees
``(eps_k, delta_k)``-DP for its own records with respect to everything it releases; the
accountant (``rdp`` | ``pld`` | ``prv``) certifies the Poisson-subsampled Gaussian mechanism under
add/remove-one adjacency (Opacus' and dp_accounting's convention).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Mapping

from fedtheory.validation import check_integer_at_least
from fedtrain.encoding import encode
from fedtrain.methods.options import PROX_MODES, MethodOptions
from fedtrain.methods.registry import CLIENT, CLIENT_METHODS, RECORD_METHODS, method_spec, methods_of_unit, option_params
from fedtrain.params import params_of, param, validate_fields
from fedtrain.paper import PAPER_DEFAULTS
from fedtrain.data.registry import CLIENT_DATASETS

__all__ = [
    "METHODS",
    "ACCOUNTANTS",
    "PROX_MODES",
    "AGGREGATIONS",
    "MODELS",
    "DEVICES",
    "ENGINE_VERSION",
    "config_key",
    "RunConfig",
    "OptionsConfig",
    "paper_defaults",
    "default_delta",
]

#: Bumped whenever a change of the engine changes the numbers a config produces or its key (part of
#: ``key()``).  2: method options nested under ``options``; rows record the data file and checksum.
#: 3: deterministic noise calibration (the privacy ledger) changes the noise multipliers slightly.
#: 4: clip-together clipping takes the norm of the summed vector, computed stably (no cancellation).
#: 5: the geometric Poisson sampler (:class:`fedtrain.dpsgd_step.PoissonBatcher`; same distribution, other
#: seeded batches) and batched matrix products in the linear model (float32 summation order).
ENGINE_VERSION = 5

#: The methods a :class:`RunConfig` runs: those whose privacy unit is a record of a silo
#: (:data:`fedtrain.methods.registry.RECORD_METHODS`; the client-level ones run with
#: :class:`fedtrain.clientdp.config.FedHDPConfig`).
METHODS = RECORD_METHODS


def config_key(config: Mapping[str, Any]) -> str:
    """The key of a configuration's JSON-safe encoding: 16 hex digits of the SHA-256 of its canonical JSON together
    with :data:`ENGINE_VERSION`, so that a change of the engine gives every configuration a new key.  Every
    configuration class keys its runs with it (:meth:`RunConfig.key`,
    :meth:`fedtrain.clientdp.config.FedHDPConfig.key`)."""
    payload = json.dumps({"engine_version": ENGINE_VERSION, **config}, sort_keys=True, separators=(",", ":"),
                         allow_nan=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]

from fedtheory.privacy.accountants import ACCOUNTANTS  # noqa: E402  (the one registry of accountants)
#: Server aggregation: weights n_k / Σn (the released code) or 1/K.
AGGREGATIONS = ("weighted", "uniform")
#: Models (:func:`fedtrain.models.build_model`): the paper's convex learners, a small MLP, the paper's ConvNet.
MODELS = ("linear", "mlp", "convnet")
DEVICES = ("cpu", "cuda")


def paper_defaults(dataset: str, method: str | None = None) -> dict[str, Any]:
    """The App. C.4 settings for ``dataset``; with ``method``, only the options that method has.

    An exact name is looked up first, then the name without a ``-standin`` suffix (``cifar10-hetero-standin``
    gets ``cifar10-hetero``'s), then the part before the first ``-`` or ``_`` (so that a synthetic
    stand-in named e.g. ``"vehicle-synthetic"`` gets Vehicle's settings).  The image datasets' entries
    name ``model="convnet"`` (the paper's learner for them); the others leave ``model`` to
    :class:`~fedtrain.config.RunConfig`'s default ``linear``.
    """
    name = dataset.lower()
    if name not in PAPER_DEFAULTS and name.endswith("-standin"):
        name = name[: -len("-standin")]
    if name not in PAPER_DEFAULTS:
        name = name.replace("_", "-").split("-")[0]
    if name not in PAPER_DEFAULTS:
        raise ValueError(f"dataset must be one of {', '.join(map(repr, PAPER_DEFAULTS))} "
                         f"(or start with one of them) to use paper defaults (got {dataset!r})")
    out = dict(PAPER_DEFAULTS[name])
    if method is not None:
        mine = set(method_spec(method).options.__dataclass_fields__)
        out = {k: v for k, v in out.items() if k not in option_params() or k in mine}
    return out


def default_delta(n: int) -> float:
    """The largest power of ten strictly below ``n ** -1.1`` (the paper's rule δ_k < n_k^{-1.1}, App. C.4)."""
    n = int(check_integer_at_least("n", n, 1))
    bound = float(n) ** -1.1
    exp = math.floor(math.log10(bound))
    delta = 10.0 ** exp
    if delta >= bound:
        delta = 10.0 ** (exp - 1)
    return min(delta, 0.1)


class OptionsConfig:
    """What :class:`RunConfig` and :class:`fedtrain.clientdp.config.FedHDPConfig` share: fields declared with
    :func:`fedtrain.params.param` and the method's options dataclass in ``options`` (read as attributes); the flat
    form, ``replace``, the round trip through ``to_dict`` (each class' own) and the key."""

    @staticmethod
    def _options_mapping(spec: Any, options: Any) -> dict[str, Any]:
        """``options`` (the method's options dataclass, a mapping or ``None``) as a dict of option values."""
        if isinstance(options, MethodOptions):
            if not isinstance(options, spec.options):
                raise ValueError(f"options must be {spec.options.__name__} for method {spec.name!r} "
                                 f"(got {type(options).__name__})")
            return options.to_dict()
        if isinstance(options, Mapping):
            return dict(options)
        if options is not None:
            raise ValueError(f"options must be a {spec.options.__name__} or a mapping (got {options!r})")
        return {}

    def __getattr__(self, name: str) -> Any:
        # the method's options read as attributes (only called when normal lookup fails)
        if name.startswith("__") or name == "options":
            raise AttributeError(name)
        opts = self.__dict__.get("options")
        if opts is not None and name in opts.__dataclass_fields__:
            return getattr(opts, name)
        return self._missing_attribute(name)

    def _missing_attribute(self, name: str) -> Any:
        """What reading ``name``, neither a field nor an option of the method, gives (each class its own)."""
        raise AttributeError(f"{type(self).__name__} has no field or method option {name!r}")

    @property
    def spec(self):
        """The method's registry entry (:class:`fedtrain.methods.registry.MethodSpec`)."""
        return method_spec(self.method)

    def to_flat(self) -> dict[str, Any]:
        """The fields and the method's options in one flat dict of Python values."""
        out = {name: getattr(self, name) for name in params_of(type(self))}
        out.update({name: getattr(self.options, name) for name in self.options.__dataclass_fields__})
        return out

    def replace(self, **changes: Any):
        """A copy with some fields or options changed (validated again).  When the method changes, the old
        method's options that the new one does not have are dropped; ``options=`` replaces all the options."""
        flat = self.to_flat()
        if "method" in changes and changes["method"] != self.method:
            valid = set(params_of(method_spec(changes["method"]).options))
            flat = {k: v for k, v in flat.items() if k in params_of(type(self)) or k in valid}
        if "options" in changes:
            for name in self.options.__dataclass_fields__:
                flat.pop(name, None)
        flat.update(changes)
        return type(self)(**flat)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]):
        """Inverse of ``to_dict`` (unknown keys raise ``ValueError``)."""
        return cls(**dict(d))

    def key(self) -> str:
        """Stable 16-hex-digit hash (:func:`config_key`) of the canonical JSON of ``to_dict``, which holds
        :data:`ENGINE_VERSION`."""
        return config_key(self.to_dict())


@dataclass(frozen=True, init=False)
class RunConfig(OptionsConfig):
    """Everything one training run needs besides the data (validated on construction).

    Build it with keywords: ``RunConfig(dataset=..., method=..., eps=..., lam=..., <method options>)``
    (``dataset`` and ``method`` may also be given positionally).  Fields, valid ranges and defaults:
    ``fedtrain run --help`` or :func:`fedtrain.params.describe_fields(RunConfig) <fedtrain.params.describe_fields>`.

    Privacy
        eps: per-silo target ε (one float for all silos or one per silo); ``inf`` trains without
        clipping or noise (non-private baseline).
        delta: per-silo δ; ``None`` uses the paper's δ of the dataset (:data:`fedtrain.presets.PAPER_DEFAULTS`)
        when known, else :func:`default_delta` of each silo's n_k.  Every δ_k must satisfy the
        paper's rule δ_k < n_k^{-1.1} (checked when the data are known).
        accountant: ``rdp`` (Opacus RDP, the paper's), ``pld`` (dp_accounting PLD), ``prv`` (Opacus PRV).
        clip: per-example L2 clip norm C.

    Optimization
        lr: client learning rate η; rounds: communication rounds R; local_epochs: DP-SGD epochs per
        round (Poisson-sampled batches at rate q_k = min(B, n_k)/n_k); batch_size: expected batch B.

    Method
        method: a name of :data:`fedtrain.methods.registry.METHODS`; lam: λ of the methods that have one
        (:data:`~fedtrain.methods.registry.LAMBDA_METHODS`; the others ignore it); aggregation;
        options: the method's options dataclass (see the module docstring).

    Reproducibility and reporting
        seed (all sampling, noise and initialization; an integer in [0, 2^53)), device, eval_every
        (record the test metric every that many rounds; 0 = final round only), model.

    Data
        dataset: the dataset's name; dataset_options: the loader's options (JSON values).
    """

    dataset: str = param(kind="str", help="dataset name (real or stand-in; see `fedtrain datasets`)")
    method: str = param(kind="choice", choices=RECORD_METHODS,
                        help="federated method (privacy unit: a record of a silo; fedtrain.methods.registry)")
    eps: float | tuple[float, ...] = param(math.inf, kind="budget", low=0.0, low_open=True, allow_inf=True,
                                           per_silo=True, help="per-silo target epsilon; inf = non-private")
    delta: float | tuple[float, ...] | None = param(
        None, kind="budget", low=0.0, high=1.0, low_open=True, high_open=True, allow_none=True, per_silo=True,
        default_note="the paper's for the dataset, else the largest power of 10 below n_k^-1.1",
        help="per-silo delta (must be < n_k^-1.1)")
    lam: float = param(0.0, kind="float", low=0.0,
                       help="regularization strength lambda of MR-MTL / Ditto / Mocha / IFCA-MR-MTL")
    lr: float = param(0.01, kind="float", low=0.0, low_open=True, help="client learning rate")
    rounds: int = param(200, kind="int", low=1, default_note="the paper's for the dataset, else 200",
                        help="communication rounds R")
    local_epochs: int = param(1, kind="int", low=1, default_note="the paper's for the dataset, else 1",
                              help="DP-SGD epochs per round")
    batch_size: int = param(32, kind="int", low=1, default_note="the paper's for the dataset, else 32",
                            help="expected Poisson batch size B")
    clip: float = param(1.0, kind="float", low=0.0, low_open=True,
                        default_note="the paper's for the dataset, else 1.0", help="per-example clip norm C")
    seed: int = param(0, kind="int", low=0, high=2**53, high_open=True, flags=("--seeds", "--seed"),
                      help="training seed (sampling, noise, initialization)")
    device: str = param("cpu", kind="choice", choices=DEVICES, help="torch device")
    accountant: str = param("rdp", kind="choice", choices=ACCOUNTANTS, help="privacy accountant")
    aggregation: str = param("weighted", kind="choice", choices=AGGREGATIONS,
                             help="server aggregation weights: n_k/sum(n) or 1/K")
    model: str = param("linear", kind="choice", choices=MODELS,
                       default_note="the dataset's: 'convnet' for the image datasets (paper App. C.1), else 'linear'",
                       help="model: 'linear' (closed-form gradients), 'mlp' (one tanh hidden layer of 32, torch.func) "
                            "or 'convnet' (the paper's ConvNet, image data only)")
    eval_every: int = param(0, kind="int", low=0, help="record the test metric every that many rounds (0 = final only)")
    dataset_options: Mapping[str, Any] = param(default_factory=dict, kind="mapping",
                                               help="the dataset loader's options")
    options: MethodOptions = dataclasses.field(default=None)  # type: ignore[assignment]

    # ------------------------------------------------------------------ construction and validation
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        common = params_of(RunConfig)
        names = list(common)
        if len(args) > len(names):
            raise TypeError(f"RunConfig takes at most {len(names)} positional arguments")
        for name, value in zip(names, args):
            if name in kwargs:
                raise TypeError(f"RunConfig got multiple values for {name!r}")
            kwargs[name] = value
        for name in ("dataset", "method"):
            if name not in kwargs:
                raise ValueError(f"RunConfig needs {name!r}")
        if kwargs["method"] in CLIENT_METHODS:
            raise ValueError(f"method {kwargs['method']!r} has a client as its privacy unit: configure it with "
                             "fedtrain.clientdp.config.FedHDPConfig (RunConfig runs the methods whose unit is a record "
                             f"of a silo: {', '.join(RECORD_METHODS)})")
        options = kwargs.pop("options", None)
        for name, (_, default) in common.items():
            value = kwargs.pop(name, default)
            object.__setattr__(self, name, {} if value is None and name == "dataset_options" else value)
        validate_fields(self)
        spec = method_spec(self.method)
        if self.dataset in CLIENT_DATASETS:
            raise ValueError(f"dataset {self.dataset!r} is one of the client-level datasets {list(CLIENT_DATASETS)}: "
                             f"train it with a method whose privacy unit is a client "
                             f"({', '.join(methods_of_unit(CLIENT))}; fedtrain.fedhdp), not the cross-silo engine "
                             "(sample-level DP per silo)")
        opts = self._options_mapping(spec, options)
        opts.update(kwargs)
        valid = set(params_of(spec.options))
        known = option_params()
        unknown = sorted(set(opts) - valid - set(known))
        if unknown:
            raise ValueError(f"unknown RunConfig field(s) {unknown}; valid fields: {sorted(common)} and the method "
                             f"options {sorted(known)} (those of {self.method!r}: {sorted(valid) or 'none'})")
        for name in sorted(set(opts) - valid):  # another method's option: checked, then ignored
            known[name][0].check(name, opts.pop(name))
        object.__setattr__(self, "options", spec.options(**opts))
        try:
            json.dumps(encode(self.dataset_options), sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"dataset_options must hold only JSON values (got {self.dataset_options!r})") from exc

    def _missing_attribute(self, name: str) -> Any:
        known = option_params()
        if name in known:
            return known[name][1]  # an option of another method: its default (no effect here)
        raise AttributeError(f"RunConfig has no field or method option {name!r}")

    # ------------------------------------------------------------------ helpers
    @property
    def private(self) -> bool:
        """Whether any silo trains with a finite ε."""
        eps = self.eps if isinstance(self.eps, tuple) else (self.eps,)
        return any(math.isfinite(e) for e in eps)

    @classmethod
    def paper(cls, dataset: str, method: str, **overrides: Any) -> "RunConfig":
        """A config with the App. C.4 settings of ``dataset`` (:func:`fedtrain.presets.paper_defaults`), then ``overrides``."""
        kw = paper_defaults(dataset, method)
        kw.update(overrides)
        return cls(dataset=dataset, method=method, **kw)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-safe encoding (:func:`fedtrain.encoding.encode`): common fields, then ``options``."""
        out = {name: encode(getattr(self, name)) for name in params_of(RunConfig)}
        out["options"] = self.options.to_dict()
        return out

    def __hash__(self) -> int:  # dataset_options is a dict: hash the canonical form instead
        return hash(self.key())
