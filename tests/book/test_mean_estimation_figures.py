"""The mean-estimation chapter's plotting functions return labelled figures built from the library's numbers."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from fedtheory.figures import mean_estimation as F  # noqa: E402
from fedtheory.mean_estimation import (  # noqa: E402
    gap_to_fedavg,
    gap_to_local,
    gaussian_sigma,
    local_variance,
    mse,
    mse_heterogeneous,
    optimal_lambda,
    simulate,
    simulate_heterogeneous,
)


def _labelled(fig):
    axes = fig.get_axes()
    assert axes
    for ax in axes:
        assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    return axes


def test_error_curve_marks_lambda_star_and_endpoints():
    fig = F.plot_error_curve(K=20, n=200, sigma=0.4, tau=0.08, eps=0.25, delta=1e-5, c=1.0)
    (ax,) = _labelled(fig)
    s2 = local_variance(0.16, 200, gaussian_sigma(0.25, 1e-5) ** 2)
    lam_star = optimal_lambda(s2, 0.0064)
    star = [ln for ln in ax.lines if ln.get_marker() == "*"]
    assert star and star[0].get_xdata()[0] == pytest.approx(lam_star)
    assert star[0].get_ydata()[0] == pytest.approx(mse(lam_star, s2, 0.0064, 20))
    hlines = {round(float(ln.get_ydata()[0]), 12) for ln in ax.lines if ln.get_linestyle() == "--"}
    assert round(s2, 12) in hlines and round(mse(np.inf, s2, 0.0064, 20), 12) in hlines
    plt.close(fig)


def test_error_curves_by_tau_and_gaps():
    fig = F.plot_error_curves_by_tau()
    assert len(_labelled(fig)) == 3
    plt.close(fig)
    fig = F.plot_gaps_vs_eps(tau=0.08)
    assert len(_labelled(fig)) == 2
    plt.close(fig)
    fig = F.plot_gaps_vs_eps(tau=0.01)  # no crossover (τ² < σ²/n): still draws
    plt.close(fig)


def test_monte_carlo_and_heterogeneous_figures():
    sdp = gaussian_sigma(0.25, 1e-5)
    lams = np.array([0.0, 0.5, 2.0, np.inf])
    res = {0.08: simulate(20, 200, 0.4, 0.08, sdp, lams, trials=500, seed=0)}
    fig = F.plot_monte_carlo_check(res)
    (ax,) = _labelled(fig)
    plt.close(fig)
    n_k = np.array([50, 200, 800])
    sdp_k = gaussian_sigma(np.array([0.2, 1.0, 0.5]), 1e-5)
    s = local_variance(0.16, n_k, sdp_k**2)
    r = simulate_heterogeneous(n_k, 0.4, 0.05, sdp_k, lams, trials=500, seed=0)
    fig = F.plot_heterogeneous(s, 0.05, r, labels=["a", "b", "c"])
    _labelled(fig)
    plt.close(fig)


def test_gain_peak_is_the_argmax_of_the_gain_and_sits_at_the_crossover():
    from fedtheory.mean_estimation import crossover_epsilon

    kw = dict(K=20, n=200, sigma=0.4, tau=0.08, delta=1e-5, c=1.0)
    peak = F.gain_peak_epsilon(**kw)
    grid = np.geomspace(0.01, 10, 2001)
    gain = F.gain_over_better_endpoint(grid, **kw)
    assert gain[np.searchsorted(grid, peak)] == gain.max() and np.all(gain > 0)
    s2 = local_variance(0.4**2, 200, gaussian_sigma(0.3, 1e-5, 1.0) ** 2)
    assert F.gain_over_better_endpoint(0.3, **kw) == pytest.approx(
        min(gap_to_local(s2, 0.08**2, 20), gap_to_fedavg(s2, 0.08**2, 20)), rel=1e-12)
    # Prop. 6.6: at eps_x (sigma_loc^2 = tau^2) the two gaps are equal, which is where their minimum peaks
    assert abs(np.log(peak / crossover_epsilon(0.4**2, 0.08**2, 200, 1e-5, 1.0))) < 0.01


def test_admissible_lambdas_fall_back_to_fedavg_and_minimize_each_silo():
    s2 = np.array([0.5, 0.01, 0.003, 0.02])
    lam_star, adm = F.admissible_lambdas(s2, 0.1)
    assert lam_star[0] < 0 and adm[0] == np.inf and np.all(adm[1:] == lam_star[1:])
    grid = np.concatenate([np.geomspace(1e-3, 1e4, 4000), [np.inf]])
    errs = mse_heterogeneous(grid, s2, 0.1**2)  # shape (grid, K)
    best = mse_heterogeneous(adm, s2, 0.1**2, per_silo=True)
    assert np.all(best <= errs.min(axis=0) + 1e-12)
