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


def _a6_simulate(N, alpha2, tau2, gamma2, lam_by_level, trials=100_000, seed=0):
    """A.6 with l levels, d = 1: per-level error of θ̂_j(λ) = (φ̂_j + λ θ̂_{own noise removed})/(1+λ) for the first
    client of each level, the server using the optimal weights r_i* (eq. 64)."""
    from fedtheory.linear_regression.numeric import optimal_weights

    N = np.asarray(N)
    level = np.repeat(np.arange(N.size), N)
    rng = np.random.default_rng(seed)
    phi = np.sqrt(tau2) * rng.standard_normal((trials, level.size))
    phi_hat = phi + np.sqrt(alpha2) * rng.standard_normal(phi.shape)
    psi = phi_hat + np.sqrt(N[level] * np.asarray(gamma2)[level]) * rng.standard_normal(phi.shape)
    w = np.asarray(optimal_weights(N, alpha2, tau2, gamma2, normalize=True))[level]
    out = []
    for i in range(N.size):
        j = int(np.flatnonzero(level == i)[0])
        glob = psi @ w - w[j] * psi[:, j] + w[j] * phi_hat[:, j]
        errs = []
        for lam in np.atleast_1d(lam_by_level[i]):
            est = (phi_hat[:, j] + lam * glob) / (1 + lam)
            errs.append((est - phi[:, j]) ** 2)
        out.append(np.array(errs))
    return out


def test_a6_three_levels_monte_carlo_matches_printed_bayes_variance_and_lambda_star():
    """A.6 (more than two privacy levels): at the derived λ_i* the simulated error equals the printed Bayes
    variance (75) within 4 SE, and perturbing λ_i* by ×0.5 or ×2 is worse (paired differences, 4 SE)."""
    from fedtheory.linear_regression.numeric import optimal_lambdas

    N, alpha2, tau2, gamma2 = (3, 4, 5), 1.0, 0.5, (0.0, 0.3, 1.0)
    lam = np.asarray(optimal_lambdas(N, alpha2, tau2, gamma2))
    sims = _a6_simulate(N, alpha2, tau2, gamma2, [[l, 0.5 * l, 2 * l] for l in lam], seed=4)
    sp = alpha2 + tau2 + np.asarray(N) * np.asarray(gamma2)
    for i, e in enumerate(sims):
        M = np.asarray(N) - (np.arange(3) == i)
        printed = 1.0 / (1.0 / (tau2 + 1.0 / np.sum(M / sp)) + 1.0 / alpha2)   # eq. (75), σ_c² − τ² = α²
        mean, se = e[0].mean(), e[0].std(ddof=1) / np.sqrt(e.shape[1])
        assert abs(mean - printed) <= 4 * se, (i, mean, printed)
        for k in (1, 2):
            d = e[k] - e[0]
            assert d.mean() > -4 * d.std(ddof=1) / np.sqrt(d.size)
            assert d.mean() > 0


def test_lemma3_corner_cases():
    """After Lemma 3: α² → 0 (clients know their data exactly) gives λ* → 0 (pure local); r* → 1 (equal total
    noise per group, N1γ1² = N2γ2²) makes both groups' λ* coincide; with no privacy noise at all r* = 1 and
    λ* = 1/Υ² = α²/τ² (Lemma 3 with Γ1 = Γ2 = 0)."""
    from fedtheory.linear_regression import numeric as L

    for a2 in (1e-2, 1e-4, 1e-6):
        assert L.optimal_lambda(1, 5, 7, a2, 0.5, 0.0, 0.3) < 50 * a2
        assert L.optimal_lambda(2, 5, 7, a2, 0.5, 0.0, 0.3) < 50 * a2
    assert L.optimal_ratio(5, 7, 1.0, 0.5, 0.0, 0.0) == 1.0
    assert L.optimal_lambda(1, 5, 7, 1.0, 0.5, 0.0, 0.0) == pytest.approx(1.0 / 0.5, rel=1e-12)
    # equal noise per group total (N1γ1² = N2γ2²): r* = 1, and both groups get the same λ*
    assert L.optimal_ratio(4, 8, 1.0, 0.5, 0.2, 0.1) == pytest.approx(1.0)
    assert L.optimal_lambda(1, 4, 8, 1.0, 0.5, 0.2, 0.1) == pytest.approx(L.optimal_lambda(2, 4, 8, 1.0, 0.5, 0.2, 0.1),
                                                                        rel=1e-12)
