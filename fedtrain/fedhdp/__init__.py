"""FedHDP's experiments (Aldaghri et al.): the paper's claims, tables, figures and the link to its theory.

* :mod:`fedtrain.fedhdp.tables` — the paper's tables from results;
* :mod:`fedtrain.fedhdp.experiments` — the claims' experiments as data, and their checks;
* :mod:`fedtrain.fedhdp.figures` — the chapter's plots of them;
* :mod:`fedtrain.fedhdp.theory_link` — federated linear regression trained next to the closed forms r* and λ*;
* :mod:`fedtrain.fedhdp.cli` — the client-level output of ``fedtrain run`` and ``fedtrain fedhdp-claims``.

The training itself (configuration, trainer, client-level accounting) sits beside the cross-silo engine in
:mod:`fedtrain.clientdp`.
"""
