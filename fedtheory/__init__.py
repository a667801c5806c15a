"""fedtheory: sympy-backed theory of private, personalized cross-silo federated learning.

Each submodule derives closed forms from a generative model with sympy, compares them with the
paper's printed forms (:mod:`fedtheory.checks`), checks them by Monte Carlo and exposes fast,
validated numeric functions.  Submodules are imported on demand, e.g.
``from fedtheory import mean_estimation``.
"""
__version__ = "0.1.0"
