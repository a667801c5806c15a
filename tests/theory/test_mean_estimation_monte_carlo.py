"""Monte Carlo of the full generative model vs the closed forms (tolerance: 4 standard errors)."""
from __future__ import annotations

import time

import numpy as np
import pytest

from fedtheory.mean_estimation import (
    MonteCarloResult,
    gaussian_sigma,
    local_variance,
    mse,
    optimal_lambda,
    simulate,
)

Z = 4.0  # tolerance in standard errors
LAMS = np.array([0.0, 0.1, 0.5, 1.0, 2.0, 5.0, 20.0, np.inf])

# (K, n, σ, τ, σ_DP): the paper's defaults (ε = 0.25, δ = 1e-5, c = 1) at three τ, no privacy, tiny silos
SDP = gaussian_sigma(0.25, 1e-5, 1.0)
PARAMS = [
    (20, 200, 0.4, 0.03, SDP),
    (20, 200, 0.4, 0.08, SDP),
    (20, 200, 0.4, 0.2, SDP),
    (20, 200, 0.4, 0.08, 0.0),  # σ_DP = 0: non-private
    (3, 5, 1.0, 0.5, 2.0),
    (2, 1, 0.3, 0.0, 0.0),  # τ = 0: no heterogeneity, FedAvg optimal
]


def _closed(K, n, sigma, tau, sigma_dp, lam):
    return mse(lam, local_variance(sigma**2, n, sigma_dp**2), tau**2, K)


@pytest.mark.parametrize("K,n,sigma,tau,sigma_dp", PARAMS)
def test_closed_form_within_4_se(K, n, sigma, tau, sigma_dp):
    res = simulate(K, n, sigma, tau, sigma_dp, LAMS, trials=40_000, seed=7)
    assert isinstance(res, MonteCarloResult) and res.mse.shape == res.se.shape == LAMS.shape
    z = (res.mse - _closed(K, n, sigma, tau, sigma_dp, LAMS)) / res.se
    assert np.all(np.abs(z) < Z), z


@pytest.mark.parametrize("K,n,sigma,tau,sigma_dp", [(20, 30, 0.4, 0.08, SDP), (4, 3, 1.0, 0.3, 1.5)])
def test_exact_data_draws_agree_with_closed_form(K, n, sigma, tau, sigma_dp):
    """exact_data=True draws all n samples per silo instead of the sum's Gaussian law."""
    res = simulate(K, n, sigma, tau, sigma_dp, LAMS, trials=20_000, seed=3, exact_data=True)
    z = (res.mse - _closed(K, n, sigma, tau, sigma_dp, LAMS)) / res.se
    assert np.all(np.abs(z) < Z), z


@pytest.mark.parametrize("tau", [0.03, 0.08, 0.2])
def test_simulated_argmin_lands_on_lambda_star(tau):
    s = local_variance(0.16, 200, SDP**2)
    lam_star = optimal_lambda(s, tau**2)
    grid = lam_star * 2.0 ** np.arange(-3, 4)  # λ*/8 ... 8λ*, λ* in the middle
    res = simulate(20, 200, 0.4, tau, SDP, np.concatenate([[0.0], grid, [np.inf]]), trials=50_000, seed=11)
    assert res.argmin() == pytest.approx(lam_star)


def test_lambda_star_equals_one_at_crossover_and_endpoints_tie():
    # σ_loc² = τ²: local and FedAvg differ by (1 - 1/K)(σ_loc² - τ²) = 0
    s = local_variance(0.16, 200, SDP**2)
    res = simulate(20, 200, 0.4, np.sqrt(s), SDP, [0.0, 1.0, np.inf], trials=50_000, seed=5)
    assert res.argmin() == 1.0
    assert abs(res.mse[0] - res.mse[2]) < Z * np.hypot(res.se[0], res.se[2])


def test_reproducible_and_seed_sensitive():
    a = simulate(5, 10, 1.0, 0.2, 1.0, LAMS, trials=1000, seed=42)
    b = simulate(5, 10, 1.0, 0.2, 1.0, LAMS, trials=1000, seed=42)
    c = simulate(5, 10, 1.0, 0.2, 1.0, LAMS, trials=1000, seed=43)
    np.testing.assert_array_equal(a.mse, b.mse)
    assert not np.array_equal(a.mse, c.mse)


def test_theta_does_not_matter():
    a = simulate(5, 10, 1.0, 0.2, 1.0, LAMS, trials=2000, seed=1, theta=0.0)
    b = simulate(5, 10, 1.0, 0.2, 1.0, LAMS, trials=2000, seed=1, theta=100.0)
    np.testing.assert_allclose(a.mse, b.mse, rtol=1e-6)


def test_1e5_trials_at_K20_in_seconds():
    t0 = time.perf_counter()
    res = simulate(20, 200, 0.4, 0.08, SDP, LAMS, trials=100_000, seed=0)
    elapsed = time.perf_counter() - t0
    assert elapsed < 30.0, elapsed  # catches a loop over trials, not a benchmark (timing: benchmarks/README.md)
    z = (res.mse - _closed(20, 200, 0.4, 0.08, SDP, LAMS)) / res.se
    assert np.all(np.abs(z) < Z), z


BAD = [
    (dict(K=1), "K"), (dict(n=0), "n"), (dict(sigma=-1.0), "sigma"), (dict(tau=-0.1), "tau"),
    (dict(sigma_dp=-1.0), "sigma_dp"), (dict(lambdas=[-1.0]), "lambdas"), (dict(trials=1), "trials"),
    (dict(seed=-3), "seed"),
]


@pytest.mark.parametrize("override,arg", BAD)
def test_bad_input_names_the_argument(override, arg):
    kwargs = dict(K=5, n=10, sigma=1.0, tau=0.1, sigma_dp=1.0, lambdas=[0.0, 1.0], trials=10, seed=0)
    kwargs.update(override)
    with pytest.raises(ValueError, match=rf"^{arg} "):
        simulate(**kwargs)
