"""MR-MTL mean estimation: the hierarchical Gaussian model of the MR-MTL paper (Sec. 6, App. E).

Liu, Hu, Wu, Smith, "On Privacy and Personalization in Cross-Silo Federated Learning", NeurIPS 2022.
Model: meta-centre θ (flat prior), silo centres ``w_k ~ N(θ, τ²)``, data ``x_{k,i} ~ N(w_k, σ²)``,
one-shot Gaussian mechanism on each silo's sum with noise ``N(0, σ_DP²)``; local variance
``σ_loc² = σ²/n + σ_DP²/n²``.

Submodules (the numeric API below is re-exported here):

* :mod:`.closed_form`: Lemma 6.1-Theorem 6.8 as vectorized numpy functions.
* :mod:`.heterogeneous`: App. E.5 (silo-specific n_k, σ_k², σ_DP,k²): λ*_k and per-silo error curves.
* :mod:`.monte_carlo`: simulation of the full generative model (``simulate``).
* :mod:`.symbolic`: the sympy derivations and the derived-vs-printed checks (imported on demand,
  since it needs sympy).
"""
from fedtheory.mean_estimation.closed_form import (
    alpha,
    crossover_epsilon,
    dp_cost,
    fedavg_mse,
    gap_to_fedavg,
    gap_to_local,
    gaussian_sigma,
    local_mse,
    local_variance,
    mrmtl_estimate,
    mse,
    optimal_lambda,
    optimal_mse,
)
from fedtheory.mean_estimation.heterogeneous import (
    external_variance,
    mse_heterogeneous,
    optimal_lambdas_heterogeneous,
    posterior_variance_heterogeneous,
)
from fedtheory.mean_estimation.monte_carlo import MonteCarloResult, simulate, simulate_heterogeneous

__all__ = [
    "local_variance",
    "alpha",
    "mrmtl_estimate",
    "optimal_lambda",
    "mse",
    "local_mse",
    "fedavg_mse",
    "optimal_mse",
    "gap_to_local",
    "gap_to_fedavg",
    "dp_cost",
    "gaussian_sigma",
    "crossover_epsilon",
    "external_variance",
    "optimal_lambdas_heterogeneous",
    "mse_heterogeneous",
    "posterior_variance_heterogeneous",
    "MonteCarloResult",
    "simulate",
    "simulate_heterogeneous",
]
