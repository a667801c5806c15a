"""Cross-checks of the DP accounting in fedtheory.privacy (rdp, dpsgd, gaussian)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, stats

from fedtheory.privacy import (DEFAULT_ORDERS, analytic_gaussian_sigma, epsilon, gaussian_delta, gaussian_epsilon,
                               gaussian_rdp, gaussian_sigma, noise_multiplier, rdp_gaussian_sigma, rdp_to_epsilon,
                               rdp_to_zcdp, subsampled_gaussian_rdp, zcdp_epsilon, zcdp_rho, zcdp_to_rdp)

TABLE = [(0.7, 0.01, 1000), (1.0, 0.064, 100), (2.0, 0.2, 50), (0.9, 0.5, 10), (5.0, 0.02, 5000), (1.2, 1.0, 3)]
INT_ORDERS = DEFAULT_ORDERS[DEFAULT_ORDERS == np.round(DEFAULT_ORDERS)]


@pytest.mark.parametrize("sigma,q,steps", TABLE)
def test_numpy_backend_matches_opacus(sigma, q, steps):
    a = subsampled_gaussian_rdp(DEFAULT_ORDERS, sigma, q, steps, backend="opacus")
    b = subsampled_gaussian_rdp(DEFAULT_ORDERS, sigma, q, steps, backend="numpy")
    np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("sigma,q,steps", TABLE)
def test_opacus_matches_dp_accounting_at_integer_orders(sigma, q, steps):
    a = subsampled_gaussian_rdp(INT_ORDERS, sigma, q, steps, backend="opacus")
    b = subsampled_gaussian_rdp(INT_ORDERS, sigma, q, steps, backend="dp_accounting")
    np.testing.assert_allclose(a, b, rtol=1e-6)


def _rdp_by_quadrature(q, sigma, alpha):
    """D_α((1-q)N(0,σ²)+qN(1,σ²) ‖ N(0,σ²)) by direct numerical integration (independent of both libraries)."""
    def integrand(z):
        log_ratio = np.logaddexp(np.log1p(-q), np.log(q) + (2 * z - 1) / (2 * sigma ** 2))
        return np.exp(stats.norm.logpdf(z, 0, sigma) + alpha * log_ratio)
    val = integrate.quad(integrand, -40 * sigma, 40 * sigma + alpha, epsabs=0, epsrel=1e-12, limit=1000,
                         points=[0.0, 0.5, 1.0])[0]
    return math.log(val) / (alpha - 1)


@pytest.mark.parametrize("sigma,q", [(1.0, 0.01), (0.8, 0.064), (0.6, 0.3), (1.0, 0.9)])
def test_fractional_orders_against_quadrature(sigma, q):
    orders = np.array([1.1, 1.5, 1.75, 2.5, 3.3])
    exact = np.array([_rdp_by_quadrature(q, sigma, a) for a in orders])
    np.testing.assert_allclose(subsampled_gaussian_rdp(orders, sigma, q, backend="opacus"), exact, rtol=1e-7)
    np.testing.assert_allclose(subsampled_gaussian_rdp(orders, sigma, q, backend="numpy"), exact, rtol=1e-7)
    # dp_accounting 0.6 sums |terms| of the series: a valid but looser upper bound (or inf) there
    dpa = subsampled_gaussian_rdp(orders, sigma, q, backend="dp_accounting")
    assert np.all(dpa >= exact * (1 - 1e-9))


def test_full_sampling_is_plain_gaussian():
    np.testing.assert_allclose(subsampled_gaussian_rdp(DEFAULT_ORDERS, 1.3, 1.0, 7), 7 * gaussian_rdp(DEFAULT_ORDERS, 1.3))


@pytest.mark.parametrize("sigma,q,steps", TABLE[:4])
def test_epsilon_rdp_matches_opacus_accountant_and_dominates_pld(sigma, q, steps):
    from opacus.accountants import RDPAccountant

    acc = RDPAccountant()
    acc.history = [(sigma, q, steps)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = acc.get_epsilon(1e-5, alphas=list(DEFAULT_ORDERS))
    eps_rdp = epsilon(sigma, 1e-5, q, steps, "rdp")
    assert eps_rdp == pytest.approx(ref, rel=1e-9)
    # RDP is a looser bound than the numerically tight PLD
    assert epsilon(sigma, 1e-5, q, steps, "pld") <= eps_rdp


def test_epsilon_rdp_matches_dp_accounting_rdp_accountant():
    import dp_accounting
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant as ra

    orders = list(INT_ORDERS)  # where both libraries evaluate the same series
    for sigma, q, steps in TABLE:
        acc = ra.RdpAccountant(orders, dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
        acc.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
        ours = rdp_to_epsilon(INT_ORDERS, subsampled_gaussian_rdp(INT_ORDERS, sigma, q, steps, backend="numpy"), 1e-5)
        # dp_accounting may tighten further with monotonicity of the RDP curve; never looser than ours
        assert acc.get_epsilon(1e-5) <= ours[0] * (1 + 1e-9)
        assert acc.get_epsilon(1e-5) == pytest.approx(ours[0], rel=1e-3)


def test_conversion_ordering_and_classic_formula():
    rdp = subsampled_gaussian_rdp(DEFAULT_ORDERS, 1.0, 0.05, 500, backend="numpy")
    e_imp, a_imp = rdp_to_epsilon(DEFAULT_ORDERS, rdp, 1e-5, "improved")
    e_cls, a_cls = rdp_to_epsilon(DEFAULT_ORDERS, rdp, 1e-5, "classic")
    assert e_imp < e_cls
    i = list(DEFAULT_ORDERS).index(a_cls)
    assert e_cls == pytest.approx(rdp[i] + math.log(1e5) / (a_cls - 1))
    assert e_cls == pytest.approx(np.min(rdp + np.log(1e5) / (DEFAULT_ORDERS - 1)))


def test_gaussian_mechanism_calibrations_agree_in_order():
    # classic ≥ RDP ≥ analytic (exact), and the analytic σ matches dp_accounting's exact calibration
    from dp_accounting.gaussian_mechanism import get_epsilon_gaussian, get_sigma_gaussian

    for eps, delta in [(0.25, 1e-5), (0.9, 1e-6), (3.0, 1e-5)]:
        s_cls, s_rdp, s_ana = gaussian_sigma(eps, delta), rdp_gaussian_sigma(eps, delta), analytic_gaussian_sigma(eps, delta)
        assert s_rdp <= s_ana * 1.2 and s_ana < s_rdp
        if eps < 1:
            assert s_rdp < s_cls
            assert gaussian_delta(eps, s_cls) <= delta  # classic (ε<1) is a valid guarantee
        assert gaussian_delta(eps, s_ana) <= delta
        assert gaussian_delta(eps, s_ana * (1 - 1e-6)) > delta  # and it is the smallest such σ
        assert s_ana == pytest.approx(get_sigma_gaussian(eps, delta), rel=1e-6)
        assert gaussian_epsilon(s_rdp, delta) <= eps  # the RDP-calibrated release is also exactly (ε, δ)-DP
        assert gaussian_epsilon(2.0, delta) == pytest.approx(get_epsilon_gaussian(2.0, delta), rel=1e-8)
    # MR-MTL Fig. 7: classic 19.379 vs RDP-calibrated ≈14.57 at ε=0.25, δ=1e-5
    assert gaussian_sigma(0.25, 1e-5) == pytest.approx(19.379, abs=1e-3)
    assert rdp_gaussian_sigma(0.25, 1e-5) == pytest.approx(14.567, rel=2e-3)


def test_gaussian_delta_by_monte_carlo():
    # δ(ε) = E_{x~N(0,σ²)}[(1 - e^{ε - L(x)})_+] with privacy loss L(x) = log p0(x)/p1(x) = (1 - 2x)/(2σ²)
    rng = np.random.default_rng(0)
    sigma, eps = 1.5, 0.5
    x = rng.normal(0, sigma, 400_000)
    loss = (1 - 2 * x) / (2 * sigma ** 2)
    vals = np.maximum(0.0, 1 - np.exp(eps - loss))
    mean, se = vals.mean(), vals.std() / np.sqrt(len(vals))
    assert abs(mean - gaussian_delta(eps, sigma)) < 4 * se


def test_zcdp_conversions():
    rho = 0.05
    assert np.allclose(zcdp_to_rdp(rho, DEFAULT_ORDERS), rho * DEFAULT_ORDERS)
    assert rdp_to_zcdp(DEFAULT_ORDERS, zcdp_to_rdp(rho, DEFAULT_ORDERS)) == pytest.approx(rho)
    assert rdp_to_zcdp(DEFAULT_ORDERS, gaussian_rdp(DEFAULT_ORDERS, 2.0)) == pytest.approx(1 / 8)
    e = zcdp_epsilon(rho, 1e-5)
    assert zcdp_rho(e, 1e-5) == pytest.approx(rho)
    # the (classic) RDP conversion over a fine grid approaches ρ + 2 sqrt(ρ log 1/δ) from above
    e_cls, _ = rdp_to_epsilon(DEFAULT_ORDERS, zcdp_to_rdp(rho, DEFAULT_ORDERS), 1e-5, "classic")
    assert e <= e_cls <= e * 1.01
    assert rdp_to_epsilon(DEFAULT_ORDERS, zcdp_to_rdp(rho, DEFAULT_ORDERS), 1e-5)[0] < e


@pytest.mark.parametrize("target", [0.5, 2.0, 8.0])
def test_calibration_round_trip_rdp(target):
    for q, steps in [(0.064, 6250), (0.01, 100), (1.0, 1), (0.3, 20)]:
        sigma = noise_multiplier(target, 1e-5, q, steps)
        eps = epsilon(sigma, 1e-5, q, steps)
        assert 0.99 * target <= eps <= target
        assert epsilon(sigma * 0.995, 1e-5, q, steps) > target  # the σ is not needlessly large


@pytest.mark.parametrize("accountant", ["pld", "prv"])
def test_calibration_round_trip_tight_accountants(accountant):
    sigma = noise_multiplier(2.0, 1e-5, 0.05, 200, accountant)
    eps = epsilon(sigma, 1e-5, 0.05, 200, accountant)
    assert 0.99 * 2.0 <= eps <= 2.0
    # tight accountants need less noise than RDP for the same guarantee
    assert sigma < noise_multiplier(2.0, 1e-5, 0.05, 200, "rdp")


def test_extra_rdp_composition():
    extra = 10 * DEFAULT_ORDERS * 0.05 ** 2 / 8
    s0 = noise_multiplier(1.0, 1e-5, 0.1, 300)
    s1 = noise_multiplier(1.0, 1e-5, 0.1, 300, extra_rdp=extra)
    assert s1 > s0
    assert epsilon(s1, 1e-5, 0.1, 300, extra_rdp=extra) <= 1.0
    assert epsilon(s1, 1e-5, 0.1, 300) < epsilon(s1, 1e-5, 0.1, 300, extra_rdp=extra)
    with pytest.raises(ValueError, match="unattainable"):
        noise_multiplier(0.3, 1e-5, 0.1, 300, extra_rdp=100 * DEFAULT_ORDERS * 0.2 ** 2 / 8)


def test_edge_cases():
    assert epsilon(1.0, 1e-5, 0.1, 0) == 0.0
    assert epsilon(np.inf, 1e-5, 0.1, 100, "pld") == 0.0
    assert epsilon(0.0, 1e-5, 0.1, 1) == math.inf
    assert noise_multiplier(np.inf, 1e-5, 0.1, 100) == 0.0
    assert noise_multiplier(1.0, 1e-5, 0.1, 0) == 0.0
    with pytest.raises(ValueError, match="unattainable"):
        noise_multiplier(1e-4, 1e-5, 0.1, 10)  # below the finite-grid floor


@pytest.mark.parametrize("call,arg", [
    (lambda: epsilon(-1.0, 1e-5, 0.1, 10), "noise_multiplier"),
    (lambda: epsilon(1.0, 1.5, 0.1, 10), "delta"),
    (lambda: epsilon(1.0, 1e-5, 0.0, 10), "sample_rate"),
    (lambda: epsilon(1.0, 1e-5, 0.1, 2.5), "steps"),
    (lambda: epsilon(1.0, 1e-5, 0.1, 10, "gdp"), "accountant"),
    (lambda: epsilon(1.0, 1e-5, 0.1, 10, "pld", extra_rdp=np.zeros_like(DEFAULT_ORDERS)), "extra_rdp"),
    (lambda: epsilon(1.0, 1e-5, 0.1, 10, extra_rdp=np.zeros(3)), "extra_rdp"),
    (lambda: noise_multiplier(0.0, 1e-5, 0.1, 10), "target_eps"),
    (lambda: rdp_to_epsilon([0.5, 2], [1, 1], 1e-5), "orders"),
    (lambda: rdp_to_epsilon([2, 3], [1, 1], 1e-5, "tight"), "conversion"),
    (lambda: subsampled_gaussian_rdp([2.0], 1.0, 0.1, backend="tf"), "backend"),
    (lambda: gaussian_rdp([2.0], 0.0), "noise_multiplier"),
    (lambda: analytic_gaussian_sigma(1.0, 0.0), "delta"),
])
def test_bad_input_names_argument(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


def test_primer_figure_and_table():
    import matplotlib

    matplotlib.use("Agg")
    from fedtheory.figures.privacy_primer import accountant_table, markdown_table, plot_epsilon_vs_noise_and_steps

    fig = plot_epsilon_vs_noise_and_steps(sample_rate=0.05, steps=30, noise_multiplier=1.0, accountants=("rdp", "pld"),
                                          n_points=4)
    ax1, ax2 = fig.axes[:2]
    y = ax1.lines[0].get_ydata()
    assert len(ax1.lines) == 2 and np.all(np.diff(y) < 0)  # ε decreases with noise
    assert np.all(np.diff(ax2.lines[0].get_ydata()) > 0)  # and grows with steps
    assert np.all(ax1.lines[1].get_ydata() <= y)  # PLD ≤ RDP pointwise
    tab = accountant_table(1.0, 0.05, 1e-5, (1, 10), accountants=("rdp", "pld"))
    assert all(c > r for c, r in zip(tab["rdp (classic conversion)"], tab["rdp"]))
    md = markdown_table(["a", "b"], [[1, 0.5]])
    assert md.splitlines()[2] == "| 1 | 0.5 |"


def test_clipped_sum_sensitivity_brute_force_against_explicit_neighbours():
    """The vectorized enumeration equals an explicit loop that builds each neighbouring dataset and
    recomputes the clipped sum; replace-one doubles the add/remove sensitivity (2c vs c)."""
    from fedtheory.privacy.gaussian import clip_rows, clipped_sum_sensitivity

    rng = np.random.default_rng(3)
    c = 1.3
    x = rng.normal(size=(7, 3)) * np.array([[0.2], [0.5], [1.0], [2.0], [0.1], [3.0], [0.4]])
    cand = rng.normal(size=(5, 3))
    f = lambda data: clip_rows(data, c).sum(0) if len(data) else np.zeros(3)
    addrm, repl = 0.0, 0.0
    for i in range(len(x)):
        addrm = max(addrm, np.linalg.norm(f(x) - f(np.delete(x, i, 0))))
        for u in cand:
            y = x.copy(); y[i] = u
            repl = max(repl, np.linalg.norm(f(x) - f(y)))
    for u in cand:
        addrm = max(addrm, np.linalg.norm(f(np.vstack([x, u])) - f(x)))
    assert clipped_sum_sensitivity(x, c, "add_remove", cand) == pytest.approx(addrm, rel=1e-12)
    assert clipped_sum_sensitivity(x, c, "replace", cand) == pytest.approx(repl, rel=1e-12)
    # default candidates reach the closed forms: c, and max_i ||clip(x_i)|| + c (= 2c with a clipped record)
    assert clipped_sum_sensitivity(x, c, "add_remove") == pytest.approx(c, rel=1e-12)
    assert clipped_sum_sensitivity(x, c, "replace") == pytest.approx(2 * c, rel=1e-12)
    small = 0.1 * x[:2] / np.linalg.norm(x[:2], axis=1, keepdims=True)  # norms 0.1 < c
    assert clipped_sum_sensitivity(small, c, "replace") == pytest.approx(0.1 + c, rel=1e-12)
    assert clipped_sum_sensitivity(small, c, "add_remove", candidates=small) == pytest.approx(0.1, rel=1e-12)
    with pytest.raises(ValueError, match="adjacency"):
        clipped_sum_sensitivity(x, c, "swap")
    with pytest.raises(ValueError, match="clip"):
        clipped_sum_sensitivity(x, 0.0)
    with pytest.raises(ValueError, match="records must be a 2-d"):
        clipped_sum_sensitivity(x[0], c)
