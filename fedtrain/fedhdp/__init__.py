"""FedHDP in practice: client-level DP with privacy groups, adaptive clipping, Ditto (Aldaghri et al., Alg. 2).

* :mod:`fedtrain.fedhdp.config` — :class:`FedHDPConfig`, the declared settings of one run (the methods and
  their options are entries of :mod:`fedtrain.methods.registry` whose privacy unit is a client);
* :mod:`fedtrain.fedhdp.trainer` — :func:`train`, vectorized over a round's clients (``torch.func.vmap``; the
  models are :mod:`fedtrain.models.client`'s);
* :mod:`fedtrain.fedhdp.accounting` — effective noise multiplier, per-group client-level accounting;
* :mod:`fedtrain.fedhdp.tables` — the paper's tables from results;
* :mod:`fedtrain.fedhdp.experiments` — the claims' experiments as data, and their checks;
* :mod:`fedtrain.fedhdp.cli` — the client-level output of ``fedtrain run`` and ``fedtrain fedhdp-claims``.

The cross-silo engine (:mod:`fedtrain.engine`) runs sample-level DP-SGD inside silos (privacy unit: a record of
a silo); this package runs client-level DP on the model updates (unit: a client), a different mechanism and
adjacency, so it has its own trainer, reached through the same registry, parser and results store
(:class:`fedtrain.results.ResultsStore`, which files both kinds of runs).
"""
from fedtrain.fedhdp.config import FEDHDP_METHODS, METHOD_LABELS, FedHDPConfig

__all__ = ["FedHDPConfig", "FEDHDP_METHODS", "METHOD_LABELS", "train", "FedHDPResult"]


def __getattr__(name):
    if name in ("train", "FedHDPResult"):
        from fedtrain.fedhdp import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'fedtrain.fedhdp' has no attribute {name!r}")
