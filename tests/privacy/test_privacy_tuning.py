"""Private hyperparameter tuning (MR-MTL paper Sec. 7, App. F; Papernot & Steinke 2022).

Cross-checks: closed-form means vs pmf sums vs independent samplers; Theorem F.2 / P&S Thm 6 vs Google's
``dp_accounting`` ``RepeatAndSelectDpEvent`` (RDP accountant, same orders); the bounds vs the *exact*
Rényi divergence of best-of-h for a finite-output base mechanism; calibrations vs the notes' independently
computed regression values.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as ra

from fedtheory.privacy import tuning as T

ETAS = (-0.5, 0.0, 0.5, 1.0, 2.0, 5.0)


def _dpa_epsilon(event, delta, orders):
    acc = ra.RdpAccountant(orders=list(orders))
    acc.compose(event)
    return acc.get_epsilon(delta), np.asarray(acc._rdp, dtype=float)


# ------------------------------------------------------------------ distributions

@pytest.mark.parametrize("eta", ETAS)
def test_tnb_pmf_sums_to_one_and_mean_matches_closed_form(eta):
    gamma = T.tnb_gamma(10.0, eta)
    h = np.arange(1, int(60 / gamma) + 100)
    f = T.tnb_pmf(h, eta, gamma)
    assert (f > 0).all()
    assert f.sum() == pytest.approx(1.0, abs=1e-10)
    assert (h * f).sum() == pytest.approx(T.tnb_mean(eta, gamma), rel=1e-9)
    assert T.tnb_pmf(0, eta, gamma) == 0.0 and T.tnb_pmf(2.5, eta, gamma) == 0.0
    if eta != 0:  # the log-gamma route agrees with the printed product formula
        assert np.allclose(f[:50], T.tnb_formula_values(h[:50], eta, gamma), rtol=1e-10)


def test_tnb_special_cases():
    """η = 1 is geometric (γ = 1/E[h], f(h) = γ(1-γ)^{h-1}); η = 0 is logarithmic."""
    g = T.tnb_gamma(10.0, 1.0)
    assert g == pytest.approx(0.1, rel=1e-12)
    h = np.arange(1, 30)
    assert np.allclose(T.tnb_pmf(h, 1.0, g), g * (1 - g) ** (h - 1), rtol=1e-12)
    g0 = T.tnb_gamma(10.0, 0.0)
    assert np.allclose(T.tnb_pmf(h, 0.0, g0), (1 - g0) ** h / (h * math.log(1 / g0)), rtol=1e-12)
    # η → 0 from either side approaches the logarithmic pmf (continuity of the two branches)
    for e in (-1e-7, 1e-7):
        assert np.allclose(T.tnb_pmf(h, e, g0), T.tnb_pmf(h, 0.0, g0), rtol=1e-5)


def test_poisson_pmf():
    h = np.arange(0, 200)
    f = T.poisson_pmf(h, 10.0)
    assert f.sum() == pytest.approx(1.0, abs=1e-12)
    assert (h * f).sum() == pytest.approx(10.0, rel=1e-12)


@pytest.mark.parametrize("eta", ETAS)
def test_sampled_mean_within_4_se(eta):
    """Sampler (numpy NB with zeros rejected for η > 0, numpy logseries for η = 0) vs closed-form mean."""
    h = T.sample_runs("tnb", 10.0, eta, size=200_000, rng=np.random.default_rng(1))
    assert h.min() >= 1
    se = h.std(ddof=1) / math.sqrt(h.size)
    assert abs(h.mean() - 10.0) <= 4 * se
    # also the frequency of h = 1 against the pmf (binomial SE)
    p1 = T.tnb_pmf(1, eta, T.tnb_gamma(10.0, eta))
    assert abs((h == 1).mean() - p1) <= 4 * math.sqrt(p1 * (1 - p1) / h.size)


def test_poisson_sampler_mean():
    h = T.sample_runs("poisson", 10.0, size=100_000, rng=np.random.default_rng(2))
    assert abs(h.mean() - 10.0) <= 4 * h.std(ddof=1) / math.sqrt(h.size)


@pytest.mark.parametrize("eta", (-0.9, -0.5, 0.0, 0.3, 1.0, 2.0, 5.0, 20.0))
@pytest.mark.parametrize("mean_runs", (1.5, 10.0, 1000.0))
def test_gamma_solver_round_trip_and_dp_accounting(eta, mean_runs):
    g = T.tnb_gamma(mean_runs, eta)
    assert 0 < g < 1
    assert T.tnb_mean(eta, g) == pytest.approx(mean_runs, rel=1e-10)
    if eta >= 0:  # Google's bisection (relative accuracy 1e-9) finds the same γ
        assert g == pytest.approx(ra._gamma_truncated_negative_binomial(eta, mean_runs), rel=1e-8)


def test_eta_must_exceed_minus_one():
    """The paper prints "η > 1" in Thm F.2; the condition is η > -1 (P&S Thm 2).

    For η < -1 the printed pmf formula has f(1) > 0 and f(2) < 0 (not a distribution); at η = -1 all
    mass is at h = 1 (E[h] = 1: no tuning).  η ∈ (-1, 1] (e.g. Fig. 7's -0.5, 0, 0.5, 1) is valid.
    """
    gamma = 0.1
    v = T.tnb_formula_values(np.arange(1, 6), -1.5, gamma)
    assert v[0] > 0 and v[1] < 0
    w = T.tnb_formula_values(np.arange(1, 6), -1.0, gamma)
    assert w[0] == pytest.approx(1.0) and np.all(w[1:] == 0)
    for bad in (-1.0, -1.5, -3.0):
        with pytest.raises(ValueError, match="eta must lie in"):
            T.tnb_pmf(1, bad, gamma)
        with pytest.raises(ValueError, match="eta must lie in"):
            T.tnb_gamma(10.0, bad)
        with pytest.raises(ValueError, match="eta must lie in"):
            T.tnb_rdp([2.0, 3.0], [0.1, 0.2], bad, 10.0)
        with pytest.raises(ValueError, match="eta must lie in"):
            T.tuned_epsilon(10.0, 1e-5, "tnb", 10.0, bad)
    assert T.tnb_pmf(1, 0.5, gamma) > 0  # inside the paper's printed range's complement: valid


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="mean_runs must be > 1"):
        T.tnb_gamma(1.0, 0.5)
    with pytest.raises(ValueError, match="distribution"):
        T.tuned_epsilon(10.0, 1e-5, "binomial", 10.0)
    with pytest.raises(ValueError, match="eta is required"):
        T.tuned_epsilon(10.0, 1e-5, "tnb", 10.0)
    with pytest.raises(ValueError, match="sample_rate"):
        T.tuned_epsilon(1.0, 1e-5, "none", mechanism="dpsgd")
    with pytest.raises(ValueError, match="delta"):
        T.tuned_epsilon(10.0, 0.0, "none")
    with pytest.raises(ValueError, match="gamma"):
        T.tnb_pmf(1, 0.5, 1.0)
    with pytest.raises(ValueError, match="same length"):
        T.tnb_rdp([2.0, 3.0], [0.1], 0.5, 10.0)


# ------------------------------------------------------------------ RDP bounds vs dp_accounting

@pytest.mark.parametrize("eta", (0.0, 0.5, 1.0, 2.0, 5.0))
def test_tnb_curve_identical_to_dp_accounting(eta):
    """Same orders, same base curve: our Thm F.2 curve equals dp_accounting's (both minimise over λ̂ on
    the grid and apply monotonicity); the only difference is γ (their bisection to 1e-9 relative, with
    the conservative end), so agreement is to 1e-7 relative.  dp_accounting supports only η ≥ 0."""
    orders = T.TUNING_ORDERS
    z = 20.0
    rdp = T.base_rdp(z, orders=orders)
    ours = T.tnb_rdp(orders, rdp, eta, 10.0)
    eps_theirs, theirs = _dpa_epsilon(dp_event.RepeatAndSelectDpEvent(dp_event.GaussianDpEvent(z), 10.0, eta),
                                      1e-5, orders)
    finite = np.isfinite(theirs)
    assert np.allclose(ours[finite], theirs[finite], rtol=1e-7)
    assert T.tuned_epsilon(z, 1e-5, "tnb", 10.0, eta, bound="rdp") == pytest.approx(eps_theirs, rel=1e-7)
    assert T.tuned_epsilon(z, 1e-5, "tnb", 10.0, eta) <= eps_theirs * (1 + 1e-12)  # tight: continuous λ̂


def test_poisson_curve_vs_dp_accounting():
    """Without the monotone envelope our P&S Thm 6 curve is identical to dp_accounting's (same δ̂
    conversion, cross-checked separately); with it (valid: RDP grows with the order) it is never
    larger, so our ε is ≤ theirs."""
    orders = T.TUNING_ORDERS
    z = 25.0
    rdp = T.base_rdp(z, orders=orders)
    eps_theirs, theirs = _dpa_epsilon(dp_event.RepeatAndSelectDpEvent(dp_event.GaussianDpEvent(z), 10.0, np.inf),
                                      1e-5, orders)
    raw = T.poisson_rdp(orders, rdp, 10.0, monotone=False)
    assert np.allclose(raw, theirs, rtol=1e-10)
    env = T.poisson_rdp(orders, rdp, 10.0)
    assert (env <= raw + 1e-15).all()
    assert T.tuned_epsilon(z, 1e-5, "poisson", 10.0, bound="rdp") <= eps_theirs * (1 + 1e-12)
    assert T.tuned_epsilon(z, 1e-5, "poisson", 10.0) < T.tuned_epsilon(z, 1e-5, "poisson", 10.0, bound="rdp")


def test_dpsgd_base_vs_dp_accounting():
    """DP-SGD base mechanism (Poisson-subsampled Gaussian, T steps) inside RepeatAndSelect, geometric h.

    Integer orders only, where the fedtheory subsampled-Gaussian curve equals dp_accounting's exactly;
    agreement to 1e-6 relative."""
    orders = np.arange(2.0, 257.0)
    q, steps, z = 0.05, 200, 1.2
    eps_ours = T.tuned_epsilon(z, 1e-5, "tnb", 5.0, 1.0, mechanism="dpsgd", sample_rate=q, steps=steps,
                               orders=orders, bound="rdp")
    base = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z)), steps)
    eps_theirs, _ = _dpa_epsilon(dp_event.RepeatAndSelectDpEvent(base, 5.0, 1.0), 1e-5, orders)
    assert eps_ours == pytest.approx(eps_theirs, rel=1e-6)


def test_rdp_to_delta_matches_dp_accounting():
    orders = T.TUNING_ORDERS
    for z in (0.8, 3.0, 20.0):
        rdp = orders / (2 * z * z)
        for e in (0.01, 0.3, 1.0, 3.0):
            ours = T.rdp_to_delta(orders, rdp, e)
            theirs, _ = ra.compute_delta(orders, rdp, e)
            assert ours == pytest.approx(theirs, rel=1e-10, abs=1e-300)


def test_alpha_hat_grid_choice_near_continuous_optimum():
    """The grid λ̂ is the grid point minimising the λ̂-terms; for a Gaussian base the continuous
    optimum is z·sqrt(2 log 1/γ).  The grid's λ̂-terms are ≥ the continuous minimum (it is a minimum
    over a subset) and within 0.5 % of it."""
    orders = T.TUNING_ORDERS
    for z, eta in ((14.6, 0.0), (30.0, 1.0), (50.0, 5.0)):
        rdp = orders / (2 * z * z)
        gamma = T.tnb_gamma(10.0, eta)
        _, lam_hat = T.tnb_rdp(orders, rdp, eta, 10.0, return_alpha_hat=True)
        lstar = T.gaussian_alpha_hat(z, eta, 10.0)
        term = lambda l: (l - 1) / (2 * z * z) + math.log(1 / gamma) / l  # noqa: E731
        assert term(lstar) <= term(lam_hat) <= term(lstar) * 1.005
        assert 0.8 < lam_hat / lstar < 1.25


@pytest.mark.parametrize("dist,eta", [("tnb", -0.5), ("tnb", 0.0), ("tnb", 1.0), ("tnb", 5.0), ("poisson", None)])
def test_bounds_dominate_exact_divergence(dist, eta):
    """Exact Rényi divergence of best-of-h (finite-output base mechanism, quality = output index) vs
    the theorems applied to the base pair's exact divergences.  The η = -0.5 case checks Thm F.2 in the
    range the paper's typo ("η > 1") would exclude."""
    p = np.array([0.30, 0.20, 0.15, 0.35])
    q = np.array([0.25, 0.25, 0.20, 0.30])
    orders = np.concatenate([np.linspace(1.1, 10, 60), np.geomspace(10.5, 300, 40)])
    base = T.finite_rdp(p, q, orders)
    exact = T.exact_tuned_rdp(p, q, orders, dist, 10.0, eta)
    bound = T.tuned_rdp(orders, base, dist, 10.0, eta)
    assert (exact <= bound).all()
    # the tuned mechanism leaks more than one run at large orders (the exact check is not vacuous)
    assert exact[-1] > base[-1]


def test_exact_tuned_rdp_fixed_point_sanity():
    """Identical inputs give zero divergence; pgf at 1 is 1 (probabilities sum to one)."""
    p = np.array([0.2, 0.3, 0.5])
    assert np.allclose(T.exact_tuned_rdp(p, p, [2.0, 5.0], "tnb", 10.0, 0.5), 0.0, atol=1e-12)
    assert np.allclose(T.exact_tuned_rdp(p, p, [2.0, 5.0], "poisson", 10.0), 0.0, atol=1e-12)


# ------------------------------------------------------------------ calibration

@pytest.mark.parametrize("dist,eta", [("none", None), ("tnb", -0.5), ("tnb", 0.0), ("tnb", 2.0), ("poisson", None)])
def test_tuned_calibration_round_trip(dist, eta):
    z = T.tuned_noise_multiplier(0.25, 1e-5, dist, 10.0, eta)
    eps = T.tuned_epsilon(z, 1e-5, dist, 10.0, eta)
    assert eps <= 0.25
    assert eps >= 0.25 * (1 - 1e-5)  # and not over-noised
    assert T.tuned_epsilon(z * (1 - 1e-5), 1e-5, dist, 10.0, eta) > eps


def test_tuned_dpsgd_round_trip():
    kw = dict(mechanism="dpsgd", sample_rate=0.05, steps=100)
    z = T.tuned_noise_multiplier(2.0, 1e-5, "tnb", 10.0, 1.0, **kw)
    assert 2.0 * (1 - 1e-5) <= T.tuned_epsilon(z, 1e-5, "tnb", 10.0, 1.0, **kw) <= 2.0
    z0 = T.tuned_noise_multiplier(2.0, 1e-5, "none", **kw)
    assert z > z0


def test_untuned_matches_dpsgd_calibration():
    """h ≡ 1 on our grid vs fedtheory.privacy.dpsgd_accounting's RDP calibration of one Gaussian release (q = 1):
    ours is never above (superset-ish dense grid), and within 0.5 %."""
    from fedtheory.privacy.dpsgd_accounting import noise_multiplier

    z_ours = T.tuned_noise_multiplier(0.25, 1e-5, "none", bound="rdp")
    z_c1 = noise_multiplier(0.25, 1e-5, 1.0, 1, accountant="rdp")
    assert z_ours <= z_c1 * (1 + 1e-6)
    assert z_ours == pytest.approx(z_c1, rel=5e-3)


def test_tuning_needs_more_noise_and_more_for_larger_mean():
    z0 = T.tuned_noise_multiplier(0.25, 1e-5, "none")
    zs = [T.tuned_noise_multiplier(0.25, 1e-5, "tnb", 10.0, eta) for eta in ETAS]
    assert all(z > z0 for z in zs)
    assert all(a < b for a, b in zip(zs, zs[1:]))  # heavier-tailed (small η) is cheaper at fixed E[h]
    for dist, eta in (("tnb", 1.0), ("tnb", -0.5), ("poisson", None)):
        by_mean = [T.tuned_noise_multiplier(0.25, 1e-5, dist, m, eta) for m in (2.0, 10.0, 100.0)]
        assert z0 < by_mean[0] < by_mean[1] < by_mean[2]


def test_reproduces_fig7_noise_multipliers_with_dp_accounting_orders():
    """With dp_accounting's default order grid we recover the noise multipliers computed independently, outside
    this code, with dp_accounting's RDP accountant for Fig. 7's setting (App. F): 14.567 untuned,
    27.045 (η = 0) ... 51.779 (η = 5), 34.329 (Poisson), to 1e-3 absolute.  Our default, denser grid
    gives slightly smaller (still ε ≤ 0.25) values."""
    orders = ra.DEFAULT_RDP_ORDERS
    expected = {("none", None): 14.567, ("tnb", -0.5): 23.785, ("tnb", 0.0): 27.045, ("tnb", 0.5): 30.188,
                ("tnb", 1.0): 33.221, ("tnb", 2.0): 39.020, ("tnb", 5.0): 51.779, ("poisson", None): 34.329}
    for (dist, eta), z_ref in expected.items():
        z = T.tuned_noise_multiplier(0.25, 1e-5, dist, 10.0, eta, orders=orders, bound="rdp")
        assert z == pytest.approx(z_ref, abs=1.5e-3), (dist, eta)
        assert T.tuned_noise_multiplier(0.25, 1e-5, dist, 10.0, eta) <= z * (1 + 1e-6)


def test_calibration_table_rows():
    rows = T.calibration_table(0.25, 1e-5, 10.0, etas=(0.0, 1.0))
    assert [r.label for r in rows] == ["untuned", "TNB eta=0", "TNB eta=1", "Poisson mu=10"]
    assert rows[0].ratio_to_untuned == 1.0
    assert all(r.epsilon <= 0.25 for r in rows)
    assert rows[2].gamma == pytest.approx(0.1) and rows[2].p_one_run == pytest.approx(0.1)


# ------------------------------------------------------------------ figures of the chapter

def test_tuning_cost_figures_and_summary():
    """Closed-form curves agree with the 500-trial simulation (4 SE) and the panel reading of Fig. 7."""
    import matplotlib.pyplot as plt

    from fedtheory.figures import tuning_cost as F

    settings = F.curves(0.2, etas=(0.0, 5.0), trials=500, seed=0)
    assert [s.label for s in settings][:2] == ["Non-private", "Private (untuned)"]
    for s in settings:
        assert np.all(np.abs(s.sim.mse[1:-1] - s.error) <= 4 * s.sim.se[1:-1])
    summ = F.summary(settings)
    assert all(v > summ["local"] for v in summ["tuned_best"].values())  # panel (c)
    assert summ["nonprivate_best"] < summ["mrmtl_untuned_best"] < summ["local"]
    fig = F.plot_widget(tau=0.03, eps=0.5, mean_runs=5.0, eta=1.0)
    assert len(fig.axes) == 1 and len(fig.axes[0].lines) >= 4
    plt.close(fig)
    fig = F.plot_run_distributions(10.0, etas=(0.0, 1.0))
    plt.close(fig)


# ------------------------------------------------------------------ tight calibration

def test_tight_untuned_is_the_exact_gaussian_and_matches_pld():
    """bound='tight', no tuning: ε of one Gaussian release is the analytic-Gaussian one (Balle–Wang), cross-checked
    against dp_accounting's PLD accountant (an independent numerical route), and below the RDP conversion."""
    from dp_accounting.pld import pld_privacy_accountant as pa

    z = 13.5
    ours = T.tuned_epsilon(z, 1e-5, "none")
    acc = pa.PLDAccountant()
    acc.compose(dp_event.GaussianDpEvent(z))
    assert ours == pytest.approx(acc.get_epsilon(1e-5), rel=2e-3)
    assert ours < T.tuned_epsilon(z, 1e-5, "none", bound="rdp")
    z0 = T.tuned_noise_multiplier(0.25, 1e-5, "none")
    from fedtheory.privacy.gaussian import analytic_gaussian_sigma
    assert z0 == pytest.approx(analytic_gaussian_sigma(0.25, 1e-5), rel=1e-6)


def test_base_delta_gaussian_matches_pld():
    from dp_accounting.pld import pld_privacy_accountant as pa

    z = 27.4
    acc = pa.PLDAccountant()
    acc.compose(dp_event.GaussianDpEvent(z))
    for e in (0.01, 0.05, 0.1):
        assert T.base_delta(e, z) == pytest.approx(acc.get_delta(e), rel=2e-2)
    # the exact δ̂ is never above the RDP-implied one (what dp_accounting's RepeatAndSelect uses)
    orders = T.TUNING_ORDERS
    e = np.log1p(1.0 / (orders[orders > 1.5] - 1.0))
    assert (T.base_delta(e, z) <= T.rdp_to_delta(orders, T.base_rdp(z), e) * (1 + 1e-9)).all()


def test_tight_poisson_noise_multiplier_and_ordering():
    """Fig. 7 setting: Poisson μ=10 needs z ≈ 27.45 with the exact δ̂ (vs 33.97 from the RDP-implied δ̂); every
    tight z is ≤ its RDP z and certified ≤ 0.25."""
    z_tight = T.tuned_noise_multiplier(0.25, 1e-5, "poisson", 10.0)
    z_rdp = T.tuned_noise_multiplier(0.25, 1e-5, "poisson", 10.0, bound="rdp")
    assert z_tight == pytest.approx(27.45, abs=0.05) and z_rdp == pytest.approx(33.97, abs=0.02)
    assert T.tuned_epsilon(z_tight, 1e-5, "poisson", 10.0) <= 0.25
    for eta in (-0.5, 1.0):
        zt = T.tuned_noise_multiplier(0.25, 1e-5, "tnb", 10.0, eta)
        zr = T.tuned_noise_multiplier(0.25, 1e-5, "tnb", 10.0, eta, bound="rdp")
        assert zt <= zr * (1 + 1e-7) and zt > 0.99 * zr  # continuous λ̂ gains only a little


@pytest.mark.parametrize("mu", [2.0, 10.0])
def test_poisson_bound_with_exact_delta_hat_dominates_exact_divergence(mu):
    """P&S Thm 6 fed the base pair's exact privacy profile δ̂(ε̂) = max over directions of Σ (p − e^ε̂ q)_+ must
    still lie above the exact Rényi divergence of best-of-h (a check that fails if δ̂ were used wrongly)."""
    p = np.array([0.30, 0.20, 0.15, 0.35])
    q = np.array([0.25, 0.25, 0.20, 0.30])
    orders = np.concatenate([np.linspace(1.1, 10, 40), np.geomspace(10.5, 300, 30)])

    def profile(e):
        e = np.asarray(e)[..., None]
        return np.maximum(np.clip(p - np.exp(e) * q, 0, None).sum(-1), np.clip(q - np.exp(e) * p, 0, None).sum(-1))

    base = T.finite_rdp(p, q, orders)
    exact = T.exact_tuned_rdp(p, q, orders, "poisson", mu)
    tight = T.poisson_rdp(orders, base, mu, delta_hat=profile)
    loose = T.poisson_rdp(orders, base, mu)
    assert (exact <= tight + 1e-12).all() and (tight <= loose + 1e-12).all()


def test_tight_dpsgd_untuned_uses_pld():
    kw = dict(mechanism="dpsgd", sample_rate=0.05, steps=50)
    e_tight = T.tuned_epsilon(1.0, 1e-5, "none", **kw)
    e_rdp = T.tuned_epsilon(1.0, 1e-5, "none", bound="rdp", **kw)
    assert e_tight < e_rdp
    with pytest.raises(ValueError, match="bound"):
        T.tuned_epsilon(1.0, 1e-5, "none", bound="exact")


# ------------------------------------------------------------------ Prop. F.1 (fixed h)

@pytest.mark.parametrize("eps,h", [(0.5, 3), (1.0, 10), (0.1, 50)])
def test_prop_f1_fixed_h_lower_bound(eps, h):
    """The construction's best-of-h: pure-DP ε is exactly hε (log-likelihood ratio of output 0), its exact Rényi
    divergence is ≥ the printed ε̂(α), and the base mechanism is exactly ε-DP; random h (TNB) at E[h] = h is cheaper."""
    p1, q1 = T.fixed_h_example(eps, 1)
    assert np.log(p1 / q1).max() == pytest.approx(eps) and np.log(q1 / p1).max() == pytest.approx(eps)
    p, q = T.fixed_h_example(eps, h)
    assert np.log(p[0] / q[0]) == pytest.approx(h * eps)
    orders = np.array([1.5, 2.0, 5.0, 20.0, 100.0])
    exact = T.finite_rdp(p, q, orders)
    printed = T.fixed_h_lower_bound(eps, orders, h)
    assert (exact >= printed - 1e-9).all()
    # the lower bound is the output-0 term alone: equality up to the (positive) output-1 term
    single = (orders * np.log(p[0]) + (1 - orders) * np.log(q[0])) / (orders - 1)
    assert np.allclose(single, printed)
    if h >= 10:
        base = T.finite_rdp(p1, q1, orders)
        assert T.tuned_rdp(orders, base, "tnb", float(h), 1.0)[-1] < exact[-1]
