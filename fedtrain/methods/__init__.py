"""The federated methods: those of the MR-MTL paper, each a small class driving :class:`fedtrain.engine.Trainer`
(privacy unit: a record of a silo), and FedHDP with its baselines, run by :func:`fedtrain.clientdp.trainer.train`
(privacy unit: a client).

Their metadata (name, label, colour, privacy unit, whether they use λ, options, code) lives in one registry,
:mod:`fedtrain.methods.registry`, re-exported here.  Privacy unit: a record of a silo:

==============  ==========================================================  =====================
name            paper                                                       module
==============  ==========================================================  =====================
``local``       local training (Sec. 3, App. D baselines)                   :mod:`.baselines`
``fedavg``      FedAvg (McMahan et al.; App. D)                             :mod:`.baselines`
``finetune``    FedAvg then local finetuning (Sec. 4, Fig. 2)               :mod:`.baselines`
``mrmtl``       mean-regularized MTL, Algorithm A1 (Sec. 5)                 :mod:`.mrmtl`
``ditto``       Ditto (Li et al. 2021; App. D), 2 passes per round          :mod:`.ditto`
``mocha``       Mocha in primal form (Smith et al. 2017; App. D)            :mod:`.mocha`
``ifca``        IFCA with private selection (Ghosh et al.; App. D, Fig. 3)  :mod:`.ifca`
``ifca-mrmtl``  IFCA-preconditioned MR-MTL, Algorithm A2 (Fig. 6)           :mod:`.ifca`
==============  ==========================================================  =====================

Privacy unit: a client (Aldaghri et al.; every one runs Ditto next to the global model):
``nonprivate``, ``dp-fedavg``, ``hdp-fedavg``, ``fedhdp`` (:mod:`fedtrain.clientdp`).

The classes (``Method``, ``Local``, ``FedAvg``, ...) are imported on first access, so that the
registry (and configuration validation) does not import torch.
"""
from __future__ import annotations

import importlib

from fedtrain.methods.registry import (
    CLIENT_METHODS,
    LAMBDA_METHODS,
    RECORD_METHODS,
    METHOD_REGISTRY,
    METHODS,
    MethodSpec,
    get_method,
    method_spec,
    option_params,
    register_method,
)

__all__ = ["Method", "METHOD_CLASSES", "METHOD_REGISTRY", "METHODS", "LAMBDA_METHODS", "RECORD_METHODS",
           "CLIENT_METHODS", "MethodSpec", "get_method",
           "method_spec", "option_params", "register_method"]

_LAZY = {"Method": "fedtrain.methods.base", "Local": "fedtrain.methods.baselines",
         "FedAvg": "fedtrain.methods.baselines", "Finetune": "fedtrain.methods.baselines",
         "MRMTL": "fedtrain.methods.mrmtl", "Ditto": "fedtrain.methods.ditto", "Mocha": "fedtrain.methods.mocha",
         "IFCA": "fedtrain.methods.ifca", "IFCAMRMTL": "fedtrain.methods.ifca"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "METHOD_CLASSES":  # name -> class of the cross-silo engine's methods, from the registry
        return {m: METHOD_REGISTRY[m].cls for m in RECORD_METHODS}
    raise AttributeError(f"module 'fedtrain.methods' has no attribute {name!r}")
