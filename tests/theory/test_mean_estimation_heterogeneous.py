"""Heterogeneous silos (App. E.5): λ*_k, per-silo error curves, and their Monte Carlo check."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from fedtheory.mean_estimation import (
    external_variance,
    gaussian_sigma,
    local_variance,
    mse,
    mse_heterogeneous,
    optimal_lambda,
    optimal_lambdas_heterogeneous,
    posterior_variance_heterogeneous,
    simulate_heterogeneous,
)
from fedtheory.mean_estimation import symbolic as S

Z = 4.0
# K = 8 silos, own n_k and ε_k (δ = 1e-5, c = 1), σ = 0.4, τ = 0.05; silo 0 (n = 50, ε = 0.2) is very noisy
N_K = np.array([50, 80, 120, 200, 300, 500, 800, 1000])
EPS_K = np.array([0.2, 2.0, 0.5, 1.0, 0.3, 2.0, 0.8, 0.25])
SIGMA, TAU = 0.4, 0.05
SDP_K = gaussian_sigma(EPS_K, 1e-5)
S_K = local_variance(SIGMA**2, N_K, SDP_K**2)


def test_lambda_star_matches_symbolic_theorem_e5():
    f = sp.lambdify((S.s_k, S.sum_others, S.tau2, S.K), S.heterogeneous()["lambda_star"], "numpy")
    others = S_K.sum() - S_K
    np.testing.assert_allclose(optimal_lambdas_heterogeneous(S_K, TAU**2), f(S_K, others, TAU**2, 8), rtol=1e-12)


def test_reduces_to_homogeneous():
    s = np.full(6, 0.0102)
    np.testing.assert_allclose(optimal_lambdas_heterogeneous(s, 0.0064), optimal_lambda(0.0102, 0.0064))
    lam = np.array([0.0, 0.7, np.inf])
    np.testing.assert_allclose(mse_heterogeneous(lam, s, 0.0064), np.repeat(mse(lam, 0.0102, 0.0064, 6)[:, None], 6, 1))


def test_negative_lambda_star_is_returned_and_means_fedavg():
    lam_star = optimal_lambdas_heterogeneous(S_K, TAU**2)
    assert lam_star[0] < 0 and np.all(lam_star[1:] > 0)
    # the negative case is exactly σ̃_k² > Kτ² + S_k/(K-1)
    others = S_K.sum() - S_K
    np.testing.assert_array_equal(lam_star < 0, S_K > 8 * TAU**2 + others / 7)
    # then E_0(λ) decreases on [0, ∞): FedAvg is the best admissible choice
    grid = np.concatenate([[0.0], np.geomspace(1e-3, 1e4, 400), [np.inf]])
    e0 = mse_heterogeneous(grid, S_K, TAU**2)[:, 0]
    assert np.all(np.diff(e0) <= 1e-18)


def test_error_curves_minimal_at_lambda_star_and_equal_posterior_variance():
    lam_star = optimal_lambdas_heterogeneous(S_K, TAU**2)
    ok = lam_star >= 0
    at_star = mse_heterogeneous(np.where(ok, lam_star, np.inf), S_K, TAU**2, per_silo=True)
    np.testing.assert_allclose(at_star[ok], posterior_variance_heterogeneous(S_K, TAU**2)[ok], rtol=1e-12)
    grid = np.geomspace(1e-4, 1e4, 3001)
    curves = mse_heterogeneous(grid, S_K, TAU**2)
    assert curves.shape == (grid.size, 8)
    assert np.all(curves[:, ok].min(axis=0) >= at_star[ok] * (1 - 1e-12))
    # E_k matches the symbolic curve
    f = sp.lambdify((S.lam, S.s_k, S.sum_others, S.tau2, S.K), S.heterogeneous()["E_k"], "numpy")
    others = S_K.sum() - S_K
    np.testing.assert_allclose(curves[17], f(grid[17], S_K, others, TAU**2, 8), rtol=1e-12)
    # external variance V_k
    fv = sp.lambdify((S.sum_others, S.tau2, S.K), S.heterogeneous()["V_k"], "numpy")
    np.testing.assert_allclose(external_variance(S_K, TAU**2), fv(others, TAU**2, 8), rtol=1e-12)


def test_batched_leading_axes():
    batch = np.stack([S_K, S_K * 2])
    out = optimal_lambdas_heterogeneous(batch, np.array([TAU**2, 0.01]))
    assert out.shape == (2, 8)
    np.testing.assert_allclose(out[1], optimal_lambdas_heterogeneous(S_K * 2, 0.01))


def test_simulation_matches_per_silo_curves_and_argmins():
    lam_star = optimal_lambdas_heterogeneous(S_K, TAU**2)
    pos = lam_star[lam_star > 0]
    factors = 2.0 ** np.arange(-2, 3)
    grid = np.unique(np.concatenate([[0.0, np.inf], np.outer(pos, factors).ravel()]))
    res = simulate_heterogeneous(N_K, SIGMA, TAU, SDP_K, grid, trials=60_000, seed=2)
    assert res.mse.shape == (grid.size, 8)
    z = (res.mse - mse_heterogeneous(grid, S_K, TAU**2)) / res.se
    assert np.all(np.abs(z) < Z), np.abs(z).max()
    for k in range(8):
        if lam_star[k] < 0:  # fall back to FedAvg: the simulated optimum is λ = ∞
            assert res.argmin()[k] == np.inf
        else:  # over λ*_k × {1/4, 1/2, 1, 2, 4} ∪ {0, ∞}, the simulated argmin is λ*_k
            cols = [0, len(grid) - 1] + [int(np.argmin(np.abs(grid - lam_star[k] * f))) for f in factors]
            best = grid[cols][np.argmin(res.mse[cols, k])]
            assert best == pytest.approx(lam_star[k]), k


def test_exact_data_mode_heterogeneous():
    n_k = np.array([3, 10, 25])
    sdp = np.array([0.5, 1.0, 2.0])
    grid = np.array([0.0, 1.0, np.inf])
    res = simulate_heterogeneous(n_k, 1.0, 0.3, sdp, grid, trials=20_000, seed=4, exact_data=True)
    s = local_variance(1.0, n_k, sdp**2)
    z = (res.mse - mse_heterogeneous(grid, s, 0.09)) / res.se
    assert np.all(np.abs(z) < Z), z


@pytest.mark.parametrize("call,arg", [
    (lambda: optimal_lambdas_heterogeneous([0.1], 0.01), "sigma_loc2"),
    (lambda: optimal_lambdas_heterogeneous([0.1, -0.2], 0.01), "sigma_loc2"),
    (lambda: optimal_lambdas_heterogeneous([0.1, 0.2], -0.01), "tau2"),
    (lambda: mse_heterogeneous(-1.0, [0.1, 0.2], 0.01), "lam"),
    (lambda: simulate_heterogeneous([10, 0], 1.0, 0.1, 1.0, [0.0]), "n"),
    (lambda: simulate_heterogeneous([10, 20], [1.0, -1.0], 0.1, 1.0, [0.0]), "sigma"),
    (lambda: simulate_heterogeneous([10, 20], 1.0, 0.1, [1.0, 2.0, 3.0], [0.0]), "n, sigma and sigma_dp"),
    (lambda: simulate_heterogeneous([10], 1.0, 0.1, 1.0, [0.0]), "n, sigma and sigma_dp"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=rf"^{arg} "):
        call()


def test_full_bayes_posterior_vs_mrmtl_family():
    """App. E.5's λ*_k is optimal only among MR-MTL estimators; the Bayes posterior given all releases
    (precision-weighted) is better: 5-103 % in the chapter's K = 8 example, equal for identical silos.
    The closed form equals brute-force conditioning of the joint Gaussian (θ with a 1e5 prior variance)."""
    from fedtheory.mean_estimation import gaussian_sigma, local_variance
    from fedtheory.mean_estimation.heterogeneous import (full_bayes_variance, full_bayes_variance_bruteforce,
                                                         mse_heterogeneous, optimal_lambdas_heterogeneous)

    n = np.array([50, 80, 120, 200, 300, 500, 800, 1000])
    eps = np.array([0.2, 2.0, 0.5, 1.0, 0.3, 2.0, 0.8, 0.25])
    s = local_variance(0.16, n, gaussian_sigma(eps, 1e-5, 1.0) ** 2)
    t2 = 0.05**2
    fb = full_bayes_variance(s, t2)
    brute = np.array([full_bayes_variance_bruteforce(s, t2, k) for k in range(8)])
    assert np.allclose(fb, brute, rtol=1e-5)
    lam = optimal_lambdas_heterogeneous(s, t2)
    mr = mse_heterogeneous(np.where(lam < 0, np.inf, lam), s, t2, per_silo=True)
    rel = mr / fb - 1
    assert rel.min() == pytest.approx(0.0465, abs=5e-4) and rel.max() == pytest.approx(1.034, abs=5e-3)
    same = np.full(6, 0.01)
    lam6 = optimal_lambdas_heterogeneous(same, 0.004)
    assert np.allclose(mse_heterogeneous(lam6, same, 0.004, per_silo=True), full_bayes_variance(same, 0.004))
