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
           "IFCAMRMTLOptions", "PROX_MODES", "ClientDittoOptions", "FedHDPOptions"]

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
    select_every: int = param(1, kind="int", low=1,
                              help="rounds between IFCA's private selections, which run at rounds 0, e, 2e, ... "
                                   "(1 = the first rounds, the paper's); the last must come before the last round")

    def to_dict(self) -> dict:
        out = super().to_dict()
        if self.select_every == 1:  # the paper's schedule keeps the keys of the runs stored before the option
            out.pop("select_every")
        return out


@dataclass(frozen=True)
class IFCAMRMTLOptions(IFCAOptions, ProxOptions):
    """IFCA's options and MR-MTL's ``prox_mode`` (stage 2)."""


# ------------------------------------------------------------------------------------------------------------
# client-level methods (FedHDP and its baselines; Aldaghri et al., Algorithm 2, Table 7's non-IID MNIST column)
# ------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClientDittoOptions(MethodOptions):
    """Options of the client-level methods, all of which run Ditto next to the global model: Ditto's λ per
    privacy group, client sampling, the learning-rate schedule, the noise and adaptive clipping
    (Andrew et al. 2021), and the FC network's width.  Defaults: Table 7's non-IID MNIST column."""

    lam_private: float = param(0.005, kind="float", low=0.0, help="Ditto lambda_p of the private clients")
    lam_nonprivate: float = param(0.005, kind="float", low=0.0, help="Ditto lambda_np of the opted-out clients")
    sample_rate: float = param(0.05, kind="float", low=0.0, high=1.0, low_open=True,
                               help="q: probability that a client takes part in a round (Poisson sampling)")
    lr_personal: float = param(0.5, kind="float", low=0.0, low_open=True,
                               help="Ditto learning rate eta_p (ignored with personal_step=lemma4)")
    personal_step: str = param("fixed", kind="choice", choices=("fixed", "lemma4"),
                               help="eta_p: the fixed lr_personal, or 1/(1+lambda_j) (Lemma 4, linear regression)")
    lr_decay: float = param(0.9, kind="float", low=0.0, high=1.0, low_open=True,
                            help="eta and eta_p are multiplied by this every decay_every rounds (Table 7: 0.9)")
    decay_every: int = param(50, kind="int", low=1, help="rounds between learning-rate decays (Table 7: 50)")
    noise_multiplier: float = param(1.5, kind="float", low=0.0,
                                    help="effective noise multiplier z of a private group (Table 7: 1.5; accounted)")
    clip_lr: float = param(0.2, kind="float", low=0.0,
                           help="adaptive clipping step eta_b (Table 7: 0.2; 0 = fixed clipping norm)")
    clip_quantile: float = param(0.5, kind="float", low=0.0, high=1.0, help="target unclipped fraction kappa (0.5)")
    count_noise_per_client: float = param(0.05, kind="float", low=0.0, low_open=True,
                                          help="count-noise std z_b per expected participating client "
                                               "(Andrew et al.: 1/20)")
    denominator: str = param("realized", kind="choice", choices=("realized", "expected"),
                             help="divide a group's noisy sum by its realized count N_g^t (Algorithm 2) or by "
                                  "its expected count q*N_g (no count release)")
    hidden: int = param(50, kind="int", low=1, help="hidden width of the FC network (Table 6: 50)")


@dataclass(frozen=True)
class FedHDPOptions(ClientDittoOptions):
    """FedHDP's weight ratio ``r`` and the options every client-level method has."""

    ratio: float = param(0.01, kind="float", low=0.0, high=1.0,
                         help="FedHDP's weight ratio r = w_p/w_np of a private to a non-private client")
