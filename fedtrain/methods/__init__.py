"""The federated methods of the MR-MTL paper, each a small class driving :class:`fedtrain.engine.Trainer`.

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
"""
from __future__ import annotations

from fedtrain.methods.base import Method
from fedtrain.methods.baselines import FedAvg, Finetune, Local
from fedtrain.methods.ditto import Ditto
from fedtrain.methods.ifca import IFCA, IFCAMRMTL
from fedtrain.methods.mocha import Mocha
from fedtrain.methods.mrmtl import MRMTL

__all__ = ["Method", "METHOD_CLASSES", "get_method"]

METHOD_CLASSES: dict[str, type[Method]] = {
    "local": Local, "fedavg": FedAvg, "finetune": Finetune, "mrmtl": MRMTL, "ditto": Ditto,
    "mocha": Mocha, "ifca": IFCA, "ifca-mrmtl": IFCAMRMTL,
}


def get_method(name: str) -> type[Method]:
    """The class implementing method ``name`` (one of :data:`fedtrain.config.METHODS`)."""
    try:
        return METHOD_CLASSES[name]
    except KeyError:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHOD_CLASSES))} (got {name!r})") from None
