"""The settings of one FedHDP-family run, declared once as data (:mod:`fedtrain.params`).

Methods (Aldaghri et al., Sec. 4-5, Algorithm 2; every one runs Ditto personalization next to the
global model, so each is the paper's "+Ditto" row):

=================  ===========================================================================================
``nonprivate``     Non-Private+Ditto: one group, no noise (``z = 0``), every client
``dp-fedavg``      DP-FedAvg+Ditto: one group, every client private at the strictest level (noise ``z``)
``hdp-fedavg``     HDP-FedAvg+Ditto: two groups, noise on the private group only, ``r = 1`` (uniform weights)
``fedhdp``         FedHDP: two groups, noise on the private group only, private weight ratio ``r`` in [0, 1]
=================  ===========================================================================================

The opted-out (non-private) clients are the dataset's ``info["nonprivate_clients"]``
(:mod:`fedtrain.data.noniid_digits`, :mod:`fedtrain.data.femnist`).  Defaults are Table 7's non-IID
MNIST column (batch 20, η = η_p = 0.5, decay 0.9 every 50 rounds, S⁰ = 0.5, η_b = 0.2, κ = 0.5,
effective noise multiplier 1.5, 500 rounds, δ = 1e-4) except ``local_epochs`` (Table 7: 25).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from fedtrain.params import param, validate_fields
from fedtrain.encoding import encode

__all__ = ["FedHDPConfig", "FEDHDP_METHODS", "METHOD_LABELS"]

#: The client-level methods, in table order.
FEDHDP_METHODS = ("nonprivate", "dp-fedavg", "hdp-fedavg", "fedhdp")
#: Row labels of the paper's tables.
METHOD_LABELS = {"nonprivate": "Non-Private+Ditto", "dp-fedavg": "DP-FedAvg+Ditto",
                 "hdp-fedavg": "HDP-FedAvg+Ditto", "fedhdp": "FedHDP"}


@dataclass(frozen=True)
class FedHDPConfig:
    """One run of a client-level method (module docstring); every field validated on construction."""

    dataset: str = param("noniid-digits", kind="str", help="dataset name (fedtrain datasets: a client-level one)")
    dataset_options: dict = param(default_factory=dict, kind="mapping",
                                  help="loader options, e.g. num_clients=200 (the population seed: seed)")
    method: str = param("fedhdp", kind="choice", choices=FEDHDP_METHODS, help="client-level method")
    ratio: float = param(0.01, kind="float", low=0.0, high=1.0,
                         help="FedHDP's weight ratio r = w_p/w_np of a private to a non-private client (hdp-fedavg: 1)")
    lam_private: float = param(0.005, kind="float", low=0.0, help="Ditto lambda_p of the private clients")
    lam_nonprivate: float = param(0.005, kind="float", low=0.0, help="Ditto lambda_np of the opted-out clients")
    rounds: int = param(500, kind="int", low=1, help="communication rounds T (paper: 500)")
    sample_rate: float = param(0.05, kind="float", low=0.0, high=1.0, low_open=True,
                               help="q: probability that a client takes part in a round (Poisson sampling)")
    local_epochs: int = param(1, kind="int", low=1, help="local epochs E per round (Table 7: 25)")
    batch_size: int = param(20, kind="int", low=1, help="local batch size (Table 7: 20)")
    lr: float = param(0.5, kind="float", low=0.0, low_open=True, help="local learning rate eta (Table 7: 0.5)")
    lr_personal: float = param(0.5, kind="float", low=0.0, low_open=True,
                               help="Ditto learning rate eta_p (ignored with personal_step=lemma4)")
    personal_step: str = param("fixed", kind="choice", choices=("fixed", "lemma4"),
                               help="eta_p: the fixed lr_personal, or 1/(1+lambda_j) (Lemma 4, linear regression)")
    lr_decay: float = param(0.9, kind="float", low=0.0, high=1.0, low_open=True,
                            help="eta and eta_p are multiplied by this every decay_every rounds (Table 7: 0.9)")
    decay_every: int = param(50, kind="int", low=1, help="rounds between learning-rate decays (Table 7: 50)")
    noise_multiplier: float = param(1.5, kind="float", low=0.0,
                                    help="effective noise multiplier z of a private group (Table 7: 1.5; accounted)")
    clip: float = param(0.5, kind="float", low=0.0, low_open=True, help="initial clipping norm S^0 (Table 7: 0.5)")
    clip_lr: float = param(0.2, kind="float", low=0.0,
                           help="adaptive clipping step eta_b (Table 7: 0.2; 0 = fixed clipping norm)")
    clip_quantile: float = param(0.5, kind="float", low=0.0, high=1.0, help="target unclipped fraction kappa (0.5)")
    count_noise_per_client: float = param(0.05, kind="float", low=0.0, low_open=True,
                                          help="count-noise std z_b per expected participating client "
                                               "(Andrew et al.: 1/20)")
    denominator: str = param("realized", kind="choice", choices=("realized", "expected"),
                             help="divide a group's noisy sum by its realized count N_g^t (Algorithm 2) or by "
                                  "its expected count q*N_g (no count release)")
    model: str = param("fc", kind="choice", choices=("fc", "linear"),
                        help="fc: Table 6's network (input, FC hidden ReLU, FC classes); linear: x -> x W (no bias), "
                             "the theory's linear regression")
    hidden: int = param(50, kind="int", low=1, help="hidden width of the FC network (Table 6: 50)")
    delta: float = param(1e-4, kind="float", low=0.0, high=1.0, low_open=True, high_open=True,
                         help="delta of the client-level guarantee (paper: 1e-4); must be < N_g^-1.1 for every "
                              "private group of N_g clients (checked when the data are known)")
    accountant: str = param("rdp", kind="choice", choices=("rdp", "pld", "prv"), help="privacy accountant")
    eval_every: int = param(0, kind="int", low=0, help="evaluate the global model every this many rounds (0: end)")
    seed: int = param(0, kind="int", low=0, help="training seed (client sampling, batches, noise, init)")

    def __post_init__(self) -> None:
        validate_fields(self)
        object.__setattr__(self, "dataset_options", dict(self.dataset_options))

    def replace(self, **changes) -> "FedHDPConfig":
        return replace(self, **changes)

    @property
    def effective_ratio(self) -> float:
        """The weight ratio the method uses: ``ratio`` for fedhdp, 1 for the baselines."""
        return float(self.ratio) if self.method == "fedhdp" else 1.0

    def to_dict(self) -> dict:
        return {k: encode(getattr(self, k)) for k in self.__dataclass_fields__}
