"""The presets of the methods whose privacy unit is a client (FedHDP and its baselines): their grids, as data.

* :data:`FEDHDP_GRIDS` (:func:`fedhdp_grid`): FedHDP's claims on real images, the noise calibrated to the paper's ε
  for the rounds run (:func:`fedhdp_noise_for_epsilon`, the book's one calibration);
* :data:`FEDHDP_SCALES` (:func:`fedhdp_scale_configs`): its claims on the digit stand-in;
* :data:`FEDHDP_COMMITTED` (:func:`fedhdp_committed_configs`): the grids whose rows the committed results store
  ``results/`` holds (:func:`fedtrain.book_results.pack_client_grid`).

Every name is re-exported by :mod:`fedtrain.presets`, the book's one front for presets; the grids run through
:func:`fedtrain.sweep.run_sweep` like every other grid.
"""
from __future__ import annotations

import math
from typing import Any

from fedtheory.privacy.calibration import calibrate
from fedtheory.validation import check_integer_at_least, check_positive
from fedtrain.clientdp.accounting import group_epsilon, group_event
from fedtrain.clientdp.config import FedHDPConfig, method_configs
from fedtrain.methods.registry import CLIENT_METHODS

__all__ = ["FEDHDP_GRIDS", "fedhdp_noise_for_epsilon", "fedhdp_grid", "FEDHDP_SCALES", "fedhdp_scale_configs",
           "FEDHDP_COMMITTED", "fedhdp_committed_configs"]


# --------------------------------------------------------------------------------------------------
# FedHDP's claims on real images (noniid-fashion, noniid-fashion-skewed; Table 6's FC network)
# --------------------------------------------------------------------------------------------------
#: FedHDP's claims grid on Fashion-MNIST's non-IID split (2,000 clients x 30 images of one class, each image once, 5
#: % opted out).  Table 6's FC network (784 → 50 ReLU → 10, D = 39,760) and Table 7's optimizer, clipping and Ditto
#: settings (the :class:`~fedtrain.clientdp.config.FedHDPConfig` defaults), q = 0.05 (~100 clients a round), but T =
#: 200 rounds of E = 5 local epochs instead of 500 of 25 (the CPU budget of the 60 runs: ``benchmarks/README.md``),
#: so the effective noise multiplier is calibrated to the paper's ε = 3.6 at δ = 1e-4 (RDP accountant, client-level
#: add/remove adjacency) for the 200 rounds run: z = :func:`fedhdp_noise_for_epsilon` (1.133 against the paper's 1.5
#: for 500 rounds).  FedHDP over the r grid; DP-FedAvg+Ditto, HDP-FedAvg+Ditto and non-private+Ditto once each; 3
#: seeds; both datasets.
FEDHDP_GRIDS: dict[str, dict[str, Any]] = {
    "claims-fashion": dict(datasets=("noniid-fashion", "noniid-fashion-skewed"), rounds=200, local_epochs=5,
                           sample_rate=0.05, target_epsilon=3.6, delta=1e-4, accountant="rdp",
                           ratios=(0.0, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5), seeds=(0, 1, 2),
                           methods=("nonprivate", "dp-fedavg", "hdp-fedavg", "fedhdp"), dataset_options={}),
}


def fedhdp_noise_for_epsilon(epsilon: float, *, sample_rate: float, rounds: int, delta: float,
                             accountant: str = "rdp") -> float:
    """The effective noise multiplier z at which ``rounds`` Poisson-sampled Gaussian releases at rate ``sample_rate``
    cost ``epsilon`` at ``delta`` (:func:`fedtrain.clientdp.accounting.group_event`, client-level add/remove
    adjacency, the named accountant): the smallest z on the grid of 3 decimals whose ε is ≤ the target.

    Found by the book's one calibration, :func:`fedtheory.privacy.calibration.calibrate` (z certified ≤ target, at
    most 0.1 % above the root), rounded up to 3 decimals and then lowered by 0.001 while the lower value still meets
    the target.  With the paper's q = 0.05 and δ = 1e-4, 500 rounds give z = 1.503 (the paper's z = 1.5 gives
    ε = 3.608, printed 3.6)."""
    epsilon = float(check_positive("epsilon", epsilon))
    rounds = int(check_integer_at_least("rounds", rounds, 1))
    if not 0.0 < float(sample_rate) <= 1.0:
        raise ValueError(f"sample_rate must lie in (0, 1] (got {sample_rate!r})")
    if not 0.0 < float(delta) < 1.0:
        raise ValueError(f"delta must lie in (0, 1) (got {delta!r})")
    z = calibrate(lambda z: group_event(z, float(sample_rate), rounds), epsilon, float(delta), accountant)
    z = math.ceil(z * 1000 - 1e-9) / 1000
    fits = lambda z: group_epsilon(z, sample_rate, rounds, delta, accountant) <= epsilon  # noqa: E731
    while z > 0.001 and fits(round(z - 0.001, 3)):
        z = round(z - 0.001, 3)
    assert fits(z)
    return z


def fedhdp_grid(name: str = "claims-fashion", *, datasets=None, seeds=None) -> list:
    """The :class:`~fedtrain.clientdp.config.FedHDPConfig` list of :data:`FEDHDP_GRIDS` ``[name]`` (baselines once per
    seed, FedHDP at every ratio; z calibrated with :func:`fedhdp_noise_for_epsilon`), for
    :func:`fedtrain.sweep.run_sweep`; ``datasets`` / ``seeds`` restrict it."""
    if name not in FEDHDP_GRIDS:
        raise ValueError(f"name must be one of {', '.join(map(repr, FEDHDP_GRIDS))} (got {name!r})")
    g = FEDHDP_GRIDS[name]
    z = fedhdp_noise_for_epsilon(g["target_epsilon"], sample_rate=g["sample_rate"], rounds=g["rounds"],
                                 delta=g["delta"], accountant=g["accountant"])
    out: list[FedHDPConfig] = []
    for dataset in (g["datasets"] if datasets is None else datasets):
        for method in g["methods"]:  # the methods with the weight ratio r (registry) at every ratio, the others once
            for c in method_configs(method, g["ratios"], dataset=dataset, dataset_options=dict(g["dataset_options"]),
                                    rounds=g["rounds"], local_epochs=g["local_epochs"], sample_rate=g["sample_rate"],
                                    noise_multiplier=z, delta=g["delta"], accountant=g["accountant"]):
                out += [c.replace(seed=int(seed)) for seed in (g["seeds"] if seeds is None else seeds)]
    return out


# --------------------------------------------------------------------------------------------------
# FedHDP's claims on the digit stand-in, and FedHDP's committed grids
# --------------------------------------------------------------------------------------------------
#: FedHDP's experiment scales on the non-IID digits (:func:`fedhdp_scale_configs`; the claims they test:
#: :mod:`fedtrain.fedhdp.experiments`).  ``"claims"``: the structure of non-IID MNIST (2,000 clients, one class each, 30
#: samples, q = 0.05, ~100 clients per round, 5 % opt-outs, Table 6's FC network, Table 7's learning rates and adaptive
#: clipping) on scikit-learn's 8×8 digits, 100 rounds of 2 local epochs instead of 500 of 25, z = 5 (the paper's ratio
#: of the noise norm on the private average to the clipping norm, ``z √D / (q N_p)`` = 3.2); ``"chapter"``: 400
#: clients, q = 0.1, 30 rounds of 1 epoch, z = 2 (the same ratio): seconds per run.
FEDHDP_SCALES: dict[str, dict] = {
    "claims": {
        "data": dict(num_clients=2000, samples_per_client=30, test_per_client=10),
        "train": dict(rounds=100, sample_rate=0.05, local_epochs=2, noise_multiplier=5.0, lam_private=0.005,
                      lam_nonprivate=0.005),
        "ratios": (0.0, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5),
        "seeds": (0, 1, 2),
    },
    "chapter": {
        "data": dict(num_clients=400, samples_per_client=30, test_per_client=10),
        "train": dict(rounds=30, sample_rate=0.1, local_epochs=1, noise_multiplier=2.0, lam_private=0.005,
                      lam_nonprivate=0.005),
        "ratios": (0.0, 0.05, 0.2),
        "seeds": (0, 1, 2),
    },
}


def fedhdp_scale_configs(scale: str, dataset: str = "noniid-digits", *, seeds=None, ratios=None,
                         methods=CLIENT_METHODS) -> list[FedHDPConfig]:
    """The configurations of :data:`FEDHDP_SCALES` ``[scale]`` on one dataset: the methods without the weight ratio r
    once, those with it at every ratio (registry); × seeds.  ``seeds`` / ``ratios`` / ``methods`` restrict it."""
    if scale not in FEDHDP_SCALES:
        raise ValueError(f"scale must be one of {', '.join(map(repr, FEDHDP_SCALES))} (got {scale!r})")
    s = FEDHDP_SCALES[scale]
    seeds = s["seeds"] if seeds is None else seeds
    ratios = s["ratios"] if ratios is None else ratios
    out: list[FedHDPConfig] = []
    for method in methods:
        for c in method_configs(method, ratios, dataset=dataset, dataset_options=dict(s["data"]), **s["train"]):
            out += [c.replace(seed=int(seed)) for seed in seeds]
    return out


#: FedHDP's grids whose rows the committed results store ``results/`` holds, one file ``<name>.json.gz`` each
#: (:func:`fedtrain.book_results.pack_client_grid`): the claims at scale ``"claims"`` on both digit datasets, and the
#: real-image grid ``claims-fashion`` (:data:`FEDHDP_GRIDS`).  ``compute``: the command that computes the rows into a
#: working store; ``pack``: the one that packs them into ``results/``.
FEDHDP_COMMITTED: dict[str, dict[str, Any]] = {
    "fedhdp-claims-digits": dict(scale="claims", datasets=("noniid-digits", "noniid-digits-skewed"),
                                 compute="fedtrain fedhdp-claims --scale claims --results STORE",
                                 pack="fedtrain fedhdp-claims --scale claims --results STORE --pack results"),
    "fedhdp-claims-fashion": dict(grid="claims-fashion", datasets=FEDHDP_GRIDS["claims-fashion"]["datasets"],
                                  compute="python benchmarks/run_real_image_grids.py claims-fashion --store STORE",
                                  pack="fedtrain fedhdp-claims --grid claims-fashion --results STORE --pack results"),
}


def fedhdp_committed_configs(name: str) -> list[FedHDPConfig]:
    """The configurations of committed FedHDP grid ``name`` (:data:`FEDHDP_COMMITTED`), in the order its file holds
    them: :func:`fedhdp_scale_configs` of its scale on each dataset, or :func:`fedhdp_grid` of its grid."""
    if name not in FEDHDP_COMMITTED:
        raise ValueError(f"name must be one of {', '.join(map(repr, FEDHDP_COMMITTED))} (got {name!r})")
    spec = FEDHDP_COMMITTED[name]
    if "grid" in spec:
        return fedhdp_grid(spec["grid"])
    return [c for ds in spec["datasets"] for c in fedhdp_scale_configs(spec["scale"], ds)]
