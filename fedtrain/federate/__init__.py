"""Federations of real processes on Flower: ``fedtrain federate``.

Local, FedAvg and MR-MTL with silo-specific sample-level DP-SGD, each silo's budget, accountant and ledger on its
own SuperNode (:mod:`.silos`, trained by the engine's :meth:`fedtrain.engine.Trainer.local_train`), the server
holding only the shared model (:mod:`.server_app`), the ClientApp (:mod:`.client_app`), a local deployment or
Flower's simulation engine (:mod:`.launcher`, :mod:`.simulation`) and the command (:mod:`.command`).
"""

#: Methods whose server side runs over Flower messages: silos train, the server averages (or not).
FEDERATED_METHODS = ("local", "fedavg", "mrmtl")
