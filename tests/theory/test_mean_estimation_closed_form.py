"""Numeric closed forms of MR-MTL mean estimation (fedtheory.mean_estimation) vs sympy and vs each other."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.optimize import minimize

import fedtheory.privacy.gaussian as gaussian_module
from fedtheory.mean_estimation import (
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
from fedtheory.mean_estimation import symbolic as S

RNG = np.random.default_rng(12345)
# random parameter points: σ_loc², τ², λ, K
PTS = dict(s=RNG.uniform(1e-4, 0.05, 25), t=RNG.uniform(1e-4, 0.05, 25), lam=RNG.uniform(0, 30, 25),
           K=RNG.integers(2, 60, 25))


def _f(expr, *syms):
    return sp.lambdify(syms, expr, "numpy")


def test_mse_matches_symbolic_lemma_6_7():
    E = _f(S.error_curve()["E"], S.lam, S.s, S.tau2, S.K)
    np.testing.assert_allclose(mse(PTS["lam"], PTS["s"], PTS["t"], PTS["K"]),
                               E(PTS["lam"], PTS["s"], PTS["t"], PTS["K"]), rtol=1e-12)


def test_optimal_lambda_and_mse_match_symbolic():
    lam_star = _f(S.theorem_6_3()["by_minimizing"], S.s, S.tau2)
    E_star = _f(S.corollary_6_4()["E_star"], S.s, S.tau2, S.K)
    np.testing.assert_allclose(optimal_lambda(PTS["s"], PTS["t"]), lam_star(PTS["s"], PTS["t"]), rtol=1e-12)
    np.testing.assert_allclose(optimal_mse(PTS["s"], PTS["t"], PTS["K"]), E_star(PTS["s"], PTS["t"], PTS["K"]),
                               rtol=1e-12)
    # E(λ*) = E*, and λ* is a minimum on a fine grid
    np.testing.assert_allclose(mse(optimal_lambda(PTS["s"], PTS["t"]), PTS["s"], PTS["t"], PTS["K"]),
                               optimal_mse(PTS["s"], PTS["t"], PTS["K"]), rtol=1e-12)
    grid = np.concatenate([[0.0], np.geomspace(1e-4, 1e4, 2001), [np.inf]])
    for s_, t_, k_ in zip(PTS["s"], PTS["t"], PTS["K"]):
        assert mse(grid, s_, t_, k_).min() >= optimal_mse(s_, t_, k_) * (1 - 1e-12)


def test_gaps_and_endpoints_match_symbolic():
    s, t, K = PTS["s"], PTS["t"], PTS["K"]
    gl = _f(S.proposition_6_5()["gap_local"], S.s, S.tau2, S.K)
    gf = _f(S.proposition_6_6()["gap_fed"], S.s, S.tau2, S.K)
    np.testing.assert_allclose(gap_to_local(s, t, K), gl(s, t, K), rtol=1e-12)
    np.testing.assert_allclose(gap_to_fedavg(s, t, K), gf(s, t, K), rtol=1e-12)
    np.testing.assert_allclose(mse(0.0, s, t, K), local_mse(s), rtol=1e-14)
    np.testing.assert_allclose(mse(np.inf, s, t, K), fedavg_mse(s, t, K), rtol=1e-14)
    np.testing.assert_allclose(mse(1e12, s, t, K), fedavg_mse(s, t, K), rtol=1e-9)
    np.testing.assert_allclose(local_mse(s) - optimal_mse(s, t, K), gap_to_local(s, t, K), rtol=1e-10)
    np.testing.assert_allclose(fedavg_mse(s, t, K) - optimal_mse(s, t, K), gap_to_fedavg(s, t, K), rtol=1e-10)


def test_dp_cost_matches_symbolic_and_is_difference_of_errors():
    n = RNG.integers(1, 1000, 25)
    sdp2 = RNG.uniform(0, 500, 25)
    sigma2 = RNG.uniform(0.01, 1, 25)
    d = _f(S.theorem_6_8()["dp_cost"], S.lam, S.sdp2, S.n, S.K)
    np.testing.assert_allclose(dp_cost(PTS["lam"], sdp2, n, PTS["K"]), d(PTS["lam"], sdp2, n, PTS["K"]), rtol=1e-12)
    diff = (mse(PTS["lam"], local_variance(sigma2, n, sdp2), 0.01, PTS["K"])
            - mse(PTS["lam"], local_variance(sigma2, n, 0.0), 0.01, PTS["K"]))
    np.testing.assert_allclose(dp_cost(PTS["lam"], sdp2, n, PTS["K"]), diff, rtol=1e-8, atol=1e-15)
    np.testing.assert_allclose(dp_cost(0, 4.0, 10, 5) / dp_cost(np.inf, 4.0, 10, 5), 5.0)


def test_local_variance_matches_eq_5():
    f = _f(S.local_variance()["homogeneous"], S.sigma2, S.n, S.sdp2)
    n = np.array([1, 7, 200]); np.testing.assert_allclose(local_variance(0.16, n, 3.0), f(0.16, n, 3.0))
    assert local_variance(0.16, 200) == pytest.approx(0.16 / 200)


def test_alpha_and_mrmtl_estimate():
    assert alpha(0, 7) == 1.0 and alpha(np.inf, 7) == pytest.approx(1 / 7)
    a = _f(S.lemma_6_1()["alpha"], S.lam, S.K)
    np.testing.assert_allclose(alpha(PTS["lam"], PTS["K"]), a(PTS["lam"], PTS["K"]), rtol=1e-12)
    w_hat = RNG.normal(size=6)
    for lam_ in (0.0, 0.3, 4.0, np.inf):
        est = mrmtl_estimate(w_hat, lam_)
        ext = (w_hat.sum() - w_hat) / 5
        np.testing.assert_allclose(est, alpha(lam_, 6) * w_hat + (1 - alpha(lam_, 6)) * ext, rtol=1e-12)
    np.testing.assert_allclose(mrmtl_estimate(w_hat, np.inf), np.full(6, w_hat.mean()))


@pytest.mark.parametrize("lam_", [0.0, 0.5, 3.0])
def test_mrmtl_estimate_minimizes_joint_objective_18(lam_):
    """Lemma 6.1 numerically: minimize (1/K) Σ_k [½(w_k - ŵ_k)² + λ/2 (w_k - w̄)²] with scipy."""
    w_hat = RNG.normal(size=5)

    def obj(w):
        return np.mean(0.5 * (w - w_hat) ** 2 + lam_ / 2 * (w - w.mean()) ** 2)

    res = minimize(obj, np.zeros(5), method="BFGS", options={"gtol": 1e-12})
    np.testing.assert_allclose(res.x, mrmtl_estimate(w_hat, lam_), atol=1e-6)


def test_crossover_epsilon():
    sigma2, tau2, n, delta = 0.16, 0.0064, 200, 1e-5
    eps_x = crossover_epsilon(sigma2, tau2, n, delta)
    f = _f(S.crossover()["epsilon_cross"], S.c, S.delta, S.sigma2, S.tau2, S.n)
    assert eps_x == pytest.approx(float(f(1.0, delta, sigma2, tau2, n)), rel=1e-12)
    s_x = local_variance(sigma2, n, gaussian_sigma(eps_x, delta) ** 2)
    assert s_x == pytest.approx(tau2, rel=1e-12)
    assert mse(0, s_x, tau2, 20) == pytest.approx(mse(np.inf, s_x, tau2, 20), rel=1e-12)
    assert optimal_lambda(s_x, tau2) == pytest.approx(1.0)
    # below ε× FedAvg wins, above local wins
    for e, fed_wins in ((eps_x / 2, True), (eps_x * 2, False)):
        s_e = local_variance(sigma2, n, gaussian_sigma(e, delta) ** 2)
        assert (fedavg_mse(s_e, tau2, 20) < local_mse(s_e)) == fed_wins
    # no crossover when τ² <= σ²/n: FedAvg wins at every ε
    assert crossover_epsilon(0.16, 0.0008, 200, 1e-5) == np.inf
    np.testing.assert_allclose(crossover_epsilon(0.16, [0.0064, 0.0001], 200, 1e-5), [eps_x, np.inf])


def test_gaussian_sigma_is_reexported_not_duplicated():
    assert gaussian_sigma is gaussian_module.gaussian_sigma
    assert gaussian_sigma(0.25, 1e-5, 1.0) == pytest.approx(19.379221, rel=1e-6)


def test_degenerate_variances():
    assert optimal_lambda(0.01, 0.0) == np.inf
    assert optimal_lambda(0.0, 0.0) == 0.0 and optimal_lambda(0.0, 0.3) == 0.0
    assert optimal_mse(0.0, 0.0, 5) == 0.0
    assert gap_to_local(0.0, 0.0, 5) == 0.0 and gap_to_fedavg(0.0, 0.0, 5) == 0.0
    assert optimal_mse(0.01, 0.0, 5) == pytest.approx(fedavg_mse(0.01, 0.0, 5))


def test_vectorized_broadcasting():
    lam = np.array([0.0, 1.0, np.inf])[:, None]
    tau2 = np.array([0.0009, 0.0064, 0.04])[None, :]
    out = mse(lam, 0.0102, tau2, 20)
    assert out.shape == (3, 3)
    assert isinstance(mse(1.0, 0.01, 0.01, 20), float)
    np.testing.assert_allclose(out[0], 0.0102)


BAD_CALLS = [
    (lambda: local_variance(-1.0, 10, 0.0), "sigma2"),
    (lambda: local_variance(1.0, 0, 0.0), "n"),
    (lambda: local_variance(1.0, 2.5, 0.0), "n"),
    (lambda: local_variance(1.0, 10, -0.1), "sigma_dp2"),
    (lambda: optimal_lambda(-0.1, 1.0), "sigma_loc2"),
    (lambda: optimal_lambda(0.1, -1.0), "tau2"),
    (lambda: mse(-1.0, 0.1, 0.1, 5), "lam"),
    (lambda: mse(1.0, 0.1, 0.1, 1), "K"),
    (lambda: mse(1.0, [0.1, -0.2], 0.1, 5), "sigma_loc2"),
    (lambda: optimal_mse(0.1, 0.1, 1), "K"),
    (lambda: gap_to_local(0.1, -0.1, 5), "tau2"),
    (lambda: gap_to_fedavg(0.1, 0.1, 0), "K"),
    (lambda: dp_cost(1.0, 1.0, 0, 5), "n"),
    (lambda: dp_cost(1.0, -1.0, 10, 5), "sigma_dp2"),
    (lambda: gaussian_sigma(0.0, 1e-5), "eps"),
    (lambda: gaussian_sigma(1.0, 1.0), "delta"),
    (lambda: crossover_epsilon(0.16, 0.01, 200, 0.0), "delta"),
    (lambda: crossover_epsilon(0.16, 0.01, 200, 1e-5, sensitivity=0), "sensitivity"),
    (lambda: crossover_epsilon(0.16, 0.01, 0, 1e-5), "n"),
    (lambda: mse(1.0, float("nan"), 0.1, 5), "sigma_loc2"),
    (lambda: mrmtl_estimate([1.0], 1.0), "w_hat"),
    (lambda: alpha(1.0, 1), "K"),
]


@pytest.mark.parametrize("call,arg", BAD_CALLS)
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises(ValueError, match=rf"^{arg} "):
        call()
