"""Monte Carlo of the full FedHDP linear-regression model (real least squares) vs the closed forms.

Tolerance: 4 standard errors of the simulated mean (paired differences use the SE of the paired
difference, computed per repetition with common random numbers).
"""
import numpy as np
import pytest

from fedtheory import linear_regression as lr
from fedtheory.linear_regression.simulation import client_update, mse, simulate

P = dict(N1=3, N2=7, alpha2=0.5, tau2=0.3, gamma1_2=0.0, gamma2_2=0.2)
P2 = dict(N1=4, N2=5, alpha2=0.5, tau2=0.3, gamma1_2=0.05, gamma2_2=0.6)


def _sample(p, seed):
    # α² = β²/n_s = 2/4 = 0.5
    return simulate(p["N1"], p["N2"], beta2=2.0, n_s=4, tau2=p["tau2"], gamma1_2=p["gamma1_2"],
                    gamma2_2=p["gamma2_2"], d=3, reps=20_000, seed=seed)


@pytest.fixture(scope="module", params=[(P, 1), (P2, 2)], ids=["opt-out", "two-levels"])
def case(request):
    p, seed = request.param
    return p, _sample(p, seed)


def _paired(a, b):
    """Mean and SE of per-repetition differences of squared errors."""
    d = a.reshape(a.shape[0], -1).mean(1) - b.reshape(b.shape[0], -1).mean(1)
    return d.mean(), d.std(ddof=1) / np.sqrt(d.size)


def test_least_squares_noise_is_alpha2(case):
    p, s = case
    m, se = mse(s.phi_hat, s.phi_j)
    assert abs(m - p["alpha2"]) < 4 * se


def test_server_error_and_r_star(case):
    p, s = case
    rs = lr.optimal_ratio(**p)
    m, se = mse(s.global_model(rs), s.phi)
    assert abs(m - lr.optimal_server_error(**p)) < 4 * se
    e_star = (s.global_model(rs) - s.phi)**2
    for r in (rs / 4, rs / 2, 2 * rs, 4 * rs, 1.0):
        e = (s.global_model(r) - s.phi)**2
        m, se = mse(s.global_model(r), s.phi)
        assert abs(m - lr.server_error(r, **p)) < 4 * se
        diff, dse = _paired(e, e_star)
        theory = lr.server_error(r, **p) - lr.optimal_server_error(**p)
        assert abs(diff - theory) < 4 * dse
        if theory > 4 * dse:          # r* beats every r that the simulation can resolve
            assert diff > 0


@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("own_noise_removed", [True, False])
def test_local_error_any_lambda_any_r(case, group, own_noise_removed):
    p, s = case
    idx = s.groups == group
    for r in (lr.optimal_ratio(**p), 1.0):
        for lam in (0.2, 1.0, 5.0):
            est = s.personalized(lam, lam, r, own_noise_removed=own_noise_removed)
            m, se = mse(est, s.phi_j, idx)
            theory = lr.local_error(lam, r, group, **p, own_noise_removed=own_noise_removed)
            assert abs(m - theory) < 4 * se


@pytest.mark.parametrize("group", [1, 2])
def test_lambda_star_minimizes_simulated_error(case, group):
    p, s = case
    idx = s.groups == group
    rs = lr.optimal_ratio(**p)
    l1, l2 = lr.optimal_lambda(1, **p), lr.optimal_lambda(2, **p)
    best = (s.personalized(l1, l2, rs) - s.phi_j)[:, idx]**2
    m, se = mse(s.personalized(l1, l2, rs), s.phi_j, idx)
    assert abs(m - lr.bayes_local_error(group, **p)) < 4 * se
    ls = (l1, l2)[group - 1]
    for factor in (0.25, 0.5, 2.0, 4.0):
        lam = ls * factor
        other = (s.personalized(lam, lam, rs) - s.phi_j)[:, idx]**2
        diff, dse = _paired(other, best)
        theory = lr.local_error(lam, rs, group, **p) - lr.bayes_local_error(group, **p)
        assert abs(diff - theory) < 4 * dse
        if theory > 4 * dse:
            assert diff > 0


def test_fedhdp_equals_local_bayes_sample_by_sample(case):
    p, s = case
    rs = lr.optimal_ratio(**p)
    est = s.personalized(lr.optimal_lambda(1, **p), lr.optimal_lambda(2, **p), rs)
    bayes = s.bayes_local()
    np.testing.assert_allclose(est, bayes, rtol=0, atol=1e-12 * np.abs(bayes).max())
    # with the raw global model (own noise kept) the private clients' estimates differ
    raw = s.personalized(lr.optimal_lambda(1, **p), lr.optimal_lambda(2, **p), rs, own_noise_removed=False)
    assert np.abs(raw - bayes)[:, s.groups == 2].max() > 1e-3


def test_algorithm_as_printed_does_not_personalize(case):
    p, s = case
    rs = lr.optimal_ratio(**p)
    est = s.personalized(1.0, 1.0, rs, regularize_toward="updated")
    np.testing.assert_allclose(est, s.phi_hat, atol=1e-12)      # pure local model, whatever λ
    # and iterating the printed step converges to φ̂_j too, the corrected one to eq. 43
    theta0 = s.received_models(rs)[:50]
    ph = s.phi_hat[:50]
    _, printed = client_update(theta0, ph, 2.0, eta_p=0.1, steps=400, regularize_toward="updated")
    _, fixed = client_update(theta0, ph, 2.0, eta_p=0.1, steps=400, regularize_toward="received")
    np.testing.assert_allclose(printed, ph, atol=1e-10)
    np.testing.assert_allclose(fixed, (ph + 2.0 * theta0) / 3.0, atol=1e-10)


def test_simulate_validates():
    with pytest.raises(ValueError, match="n_s"):
        simulate(2, 2, beta2=1.0, n_s=2, tau2=0.1, gamma1_2=0, gamma2_2=0.1, d=3, reps=10)
    with pytest.raises(ValueError, match="beta2"):
        simulate(2, 2, beta2=0.0, n_s=5, tau2=0.1, gamma1_2=0, gamma2_2=0.1, d=3, reps=10)
    with pytest.raises(ValueError, match="regularize_toward"):
        client_update(0.0, 1.0, 1.0, regularize_toward="later")


def test_simulation_is_reproducible():
    a = simulate(2, 3, beta2=1.0, n_s=5, tau2=0.1, gamma1_2=0, gamma2_2=0.1, d=2, reps=50, seed=7)
    b = simulate(2, 3, beta2=1.0, n_s=5, tau2=0.1, gamma1_2=0, gamma2_2=0.1, d=2, reps=50, seed=7)
    np.testing.assert_array_equal(a.psi, b.psi)
