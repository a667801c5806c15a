"""Each method's options: one frozen dataclass per method, its fields declared with constraints as data.

The fields carry a :class:`fedtrain.params.Param` (range, choices, help), from which validation
messages and the command-line flags are generated.  A :class:`~fedtrain.config.RunConfig` holds
the options of its method in ``config.options``; the option names are also accepted as keywords of
``RunConfig(...)`` and read as attributes (``config.num_clusters``), see :mod:`fedtrain.config`.
"""
from __future__ import annotations

from dataclasses import dataclass

from fedtrain.params import param, validate_fields
from fedtrain.encoding import encode

__all__ = ["MethodOptions", "NoOptions", "FinetuneOptions", "ProxOptions", "DittoOptions", "IFCAOptions",
           "IFCAMRMTLOptions", "PROX_MODES"]

#: ``clip-together``: the proximal gradient λ(w_k − w̄) is added to every example's gradient before
#: per-example clipping (the paper's released code).  ``post-noise``: it is added after clipping and
#: noising (Sec. 5's written update; free post-processing).
PROX_MODES = ("clip-together", "post-noise")


@dataclass(frozen=True)
class MethodOptions:
    """Base of the option dataclasses: validates every field on construction."""

    def __post_init__(self) -> None:
        validate_fields(self)

    def to_dict(self) -> dict:
        return {name: encode(getattr(self, name)) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class NoOptions(MethodOptions):
    """Local training and FedAvg have no options of their own."""


@dataclass(frozen=True)
class FinetuneOptions(MethodOptions):
    finetune_frac: float = param(0.5, kind="float", low=0.0, high=1.0, low_open=True, high_open=True,
                                 help="fraction of the rounds run as FedAvg before local finetuning (paper: 0.5)")


@dataclass(frozen=True)
class ProxOptions(MethodOptions):
    prox_mode: str = param("clip-together", kind="choice", choices=PROX_MODES,
                           help="where the proximal gradient enters DP-SGD: clipped with each example's gradient "
                                "(the released code) or added after the noise (Sec. 5's update)")


@dataclass(frozen=True)
class DittoOptions(ProxOptions):
    ditto_personal_epochs: int = param(1, kind="int", low=1,
                                       help="epochs of Ditto's personal-model DP-SGD pass per round (paper: 1)")


@dataclass(frozen=True)
class IFCAOptions(MethodOptions):
    num_clusters: int = param(3, kind="int", low=1, default_note="the paper's for the dataset, else 3",
                              help="IFCA's number of cluster models G (<= the number of silos)")
    select_frac: float = param(0.1, kind="float", low=0.0, high=1.0, low_open=True,
                               help="fraction of the rounds with private cluster selection (paper: 0.1; 1 = every round)")
    select_eps_frac: float = param(0.03, kind="float", low=0.0, high=1.0, low_open=True, high_open=True,
                                   help="per-selection epsilon as a fraction of the silo's total epsilon (paper: 0.03)")
    ifca_loss_clip: float = param(1.0, kind="float", low=0.0, low_open=True,
                                  help="regression IFCA: per-example loss clipped to [0, L] before scoring selections")


@dataclass(frozen=True)
class IFCAMRMTLOptions(IFCAOptions, ProxOptions):
    """IFCA's options and MR-MTL's ``prox_mode`` (stage 2)."""
