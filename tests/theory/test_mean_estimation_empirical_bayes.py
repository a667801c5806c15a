"""Empirical-Bayes plug-in λ̂: exact risk (SURE + quadrature) vs Monte Carlo, limits, failure modes."""
import numpy as np
import pytest

from fedtheory.mean_estimation import fedavg_mse, local_variance, optimal_mse
from fedtheory.mean_estimation.empirical_bayes import (estimate_tau2, plugin_lambda, plugin_mse,
                                                       simulate_plugin)

S2 = float(local_variance(0.16, 200, 13.286**2))  # Fig. 7 setting, untuned analytic-Gaussian noise


@pytest.mark.parametrize("K,tau,method", [(3, 0.08, "moment"), (8, 0.03, "moment"), (20, 0.08, "moment"),
                                          (20, 0.01, "efron_morris"), (8, 0.2, "efron_morris")])
def test_plugin_mse_quadrature_matches_monte_carlo_within_4_se(K, tau, method):
    exact = plugin_mse(S2, tau**2, K, method)
    sim = simulate_plugin(K, S2, tau**2, method=method, trials=20_000, seed=K)
    assert abs(sim.mse - exact) <= 4 * sim.se


def test_plugin_is_between_oracle_and_worse_endpoint_and_consistent():
    for K, tau in [(5, 0.08), (20, 0.03), (20, 0.2)]:
        t2 = tau**2
        assert optimal_mse(S2, t2, K) < plugin_mse(S2, t2, K)
        assert plugin_mse(S2, t2, K) < max(S2, fedavg_mse(S2, t2, K))
    # large K: the plug-in approaches the oracle (τ̂² is consistent)
    rel = [plugin_mse(S2, 0.08**2, K) / optimal_mse(S2, 0.08**2, K) - 1 for K in (10, 100, 1000)]
    assert rel[0] > rel[1] > rel[2] and rel[2] < 0.01


def test_plugin_fails_when_tau_small():
    """τ → 0 with K = 20: the plug-in is worse than plain FedAvg (it sometimes personalizes on pure noise)."""
    assert plugin_mse(S2, 0.01**2, 20) > fedavg_mse(S2, 0.01**2, 20)
    assert plugin_mse(S2, 0.01**2, 20) / optimal_mse(S2, 0.01**2, 20) > 1.3


def test_plugin_lambda_formula_and_fedavg_fallback():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(5, 6))
    t2 = np.asarray(estimate_tau2(w, 0.3))
    lam = np.asarray(plugin_lambda(w, 0.3))
    pos = t2 > 0
    assert np.allclose(lam[pos], 0.3 / t2[pos]) and np.all(np.isinf(lam[~pos]))
    assert plugin_lambda([0.0, 0.001, -0.001], 1.0) == np.inf



def test_bad_inputs():
    with pytest.raises(ValueError, match="method"):
        plugin_mse(S2, 0.01, 20, "median")
    with pytest.raises(ValueError, match="K >= 4"):
        plugin_mse(S2, 0.01, 3, "efron_morris")
    with pytest.raises(ValueError, match="releases"):
        plugin_lambda([1.0], 0.1)
    with pytest.raises(ValueError, match="sigma_loc2"):
        plugin_lambda([1.0, 2.0], -0.1)
