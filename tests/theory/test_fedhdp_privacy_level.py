"""FedHDP's γ² as a client-level (ε, δ) guarantee (fedtheory.linear_regression.privacy_level)."""
import math

import numpy as np
import pytest

from fedtheory.linear_regression import numeric as LR
from fedtheory.linear_regression import privacy_level as P
from fedtheory.privacy import DEFAULT_ORDERS, gaussian_epsilon, gaussian_rdp, rdp_to_epsilon


@pytest.mark.parametrize("accountant", ["rdp", "pld"])
@pytest.mark.parametrize("q,rounds", [(1.0, 1), (1.0, 2), (0.05, 500)])
def test_round_trip_gamma2_eps_gamma2_and_eps_below_target(accountant, q, rounds):
    kw = dict(clip=0.5, n_clients=95, sample_rate=q, rounds=rounds, accountant=accountant)
    g = P.gamma2_for_epsilon(1.0, 1e-5, **kw)
    eps = P.epsilon_of_gamma2(g, 1e-5, **kw)
    assert 0.99 <= eps <= 1.0                       # certified <= target, and tight
    g2 = P.gamma2_for_epsilon(eps, 1e-5, **kw)
    assert g2 == pytest.approx(g, rel=2.5e-3)       # z within 0.1 % of the root, gamma2 = z^2 ...
    # more noise, less privacy loss
    assert P.epsilon_of_gamma2(2 * g, 1e-5, **kw) < eps


def test_mapping_is_the_group_average_noise():
    """γ² = (zS/(qN_g))²: an empirical check that the average of N_g client shares N(0, N_g γ²) has variance γ²
    and that the sum's std over the clip is z (q = 1)."""
    z, S, Ng = 1.3, 0.7, 40
    g = P.gamma2_of_noise_multiplier(z, S, Ng)
    assert P.noise_multiplier_of_gamma2(g, S, Ng) == pytest.approx(z, rel=1e-12)
    rng = np.random.default_rng(0)
    shares = rng.normal(0.0, math.sqrt(Ng * g), size=(200_000, Ng))
    avg_var = shares.mean(axis=1).var(ddof=1)
    se = g * math.sqrt(2 / 199_999)
    assert abs(avg_var - g) < 4 * se
    assert math.sqrt(Ng * Ng * g) / S == pytest.approx(z, rel=1e-12)


def test_one_shot_eps_is_the_gaussian_mechanism():
    """q = 1, one round: the rdp accountant's ε equals the RDP Gaussian mechanism's and pld is ≤ it and ≥ the
    exact (analytic) Gaussian ε."""
    g = 0.02
    z = P.noise_multiplier_of_gamma2(g, 1.0, 20)
    e_rdp = P.epsilon_of_gamma2(g, 1e-5, clip=1.0, n_clients=20)
    e_pld = P.epsilon_of_gamma2(g, 1e-5, clip=1.0, n_clients=20, accountant="pld")
    orders = DEFAULT_ORDERS
    assert e_rdp == pytest.approx(float(rdp_to_epsilon(orders, gaussian_rdp(orders, z), 1e-5)[0]), rel=1e-9)
    exact = gaussian_epsilon(z, 1e-5)
    assert exact - 1e-6 <= e_pld <= e_rdp
    assert e_pld == pytest.approx(exact, abs=0.02)


@pytest.mark.parametrize("N,q,z,S,printed", [(2000, 0.05, 1.5, 0.5, 3.6), (3383, 100 / 3383, 4.0, 0.5, 0.6),
                                              (3400, 100 / 3400, 1.0, 2.0, 4.1)])
def test_derived_vs_printed_paper_epsilons(N, q, z, S, printed):
    """Table 7's effective z, q ≈ 100 clients/round, 500 rounds, δ = 1e-4 → the printed ε (one decimal; the
    paper used TF Privacy's order grid, FEMNIST lands at 4.03)."""
    Np = N - round(0.05 * N)
    g = P.gamma2_of_noise_multiplier(z, S, Np, q)
    eps = P.epsilon_of_gamma2(g, 1e-4, clip=S, n_clients=Np, sample_rate=q, rounds=500)
    assert eps == pytest.approx(printed, abs=0.08)
    assert P.noise_multiplier_of_gamma2(g, S, Np, q) == pytest.approx(z, rel=1e-12)


def test_lemma7_dp_fedavg_is_stricter_and_equal_privacy_variance_is_hdp_fedavg():
    N, Np, a2, t2, g = 100, 95, 1.0, 0.1, 0.001
    lv = P.privacy_levels(g, 1e-5, clip=1.0, N=N, N_p=Np)
    assert lv.lemma7_dp_fedavg_multiplier == pytest.approx(lv.noise_multiplier * math.sqrt(N / Np), rel=1e-12)
    assert lv.lemma7_dp_fedavg_epsilon < lv.fedhdp_epsilon < lv.local_epsilon
    # Lemma 7 variances: sigma_dp^2 - sigma_hdp^2 = rho(1-rho)gamma^2 (81); equal privacy removes the gap
    rho = 1 - Np / N
    hdp = LR.server_error(1.0, N - Np, Np, a2, t2, 0.0, g)
    assert P.dp_fedavg_server_error_at_equal_privacy(N, rho, a2, t2, g) == pytest.approx(hdp, rel=1e-12)
    lemma7_dp = (a2 + t2) / N + (1 - rho) * g
    assert lemma7_dp - hdp == pytest.approx(rho * (1 - rho) * g, rel=1e-9)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="gamma2"):
        P.epsilon_of_gamma2(-1.0, 1e-5, clip=1.0, n_clients=3)
    with pytest.raises(ValueError, match="sample_rate"):
        P.gamma2_of_noise_multiplier(1.0, 1.0, 3, sample_rate=1.5)
    with pytest.raises(ValueError, match="N_p"):
        P.privacy_levels(0.1, 1e-5, clip=1.0, N=3, N_p=4)
    with pytest.raises(ValueError, match="rho_np"):
        P.lemma7_dp_fedavg_multiplier(1.0, 1.0)
