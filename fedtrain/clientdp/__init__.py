"""Client-level DP training (privacy unit: a client), beside the cross-silo engine's config, engine and ledger.

* :mod:`fedtrain.clientdp.config` — :class:`~fedtrain.clientdp.config.FedHDPConfig`, the declared settings of one
  run of a method whose privacy unit is a client (the methods and their options are entries of
  :mod:`fedtrain.methods.registry`);
* :mod:`fedtrain.clientdp.accounting` — effective noise multiplier, per-group client-level accounting;
* :mod:`fedtrain.clientdp.trainer` — :func:`~fedtrain.clientdp.trainer.train` (FedHDP, Aldaghri et al. Alg. 2, and
  its baselines), vectorized over a round's clients (``torch.func.vmap``; the models are
  :mod:`fedtrain.models.client`'s).

The cross-silo engine (:mod:`fedtrain.engine`) runs sample-level DP-SGD inside silos (privacy unit: a record of
a silo); this package runs client-level DP on the model updates (unit: a client), a different mechanism and
adjacency.  Both are reached through the method registry, which names each method's configuration class, runner
and validator, and both are swept and stored alike (:func:`fedtrain.sweep.run_sweep`,
:class:`fedtrain.results.ResultsStore`).  The paper's experiments, tables and figures built on this trainer are
in :mod:`fedtrain.fedhdp`.
"""
