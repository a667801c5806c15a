"""Figures of the mean-estimation chapter (MR-MTL paper, Sec. 6 and App. E.5).

Every number comes from :mod:`fedtheory.mean_estimation`; each function returns a matplotlib Figure
(widgets redraw them, the book shows them at the paper's defaults: K = 20, n = 200, σ = 0.4,
τ ∈ {0.03, 0.08, 0.2}, ε = 0.25, δ = 1e-5, c = 1).  DP noise uses the classic Gaussian calibration
``σ_DP = c sqrt(2 ln(1.25/δ))/ε`` (:func:`fedtheory.privacy.gaussian.gaussian_sigma`; a guarantee for
ε < 1 only).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from fedtheory.mean_estimation import (
    MonteCarloResult,
    crossover_epsilon,
    fedavg_mse,
    gap_to_fedavg,
    gap_to_local,
    gaussian_sigma,
    local_variance,
    mse,
    mse_heterogeneous,
    optimal_lambda,
    optimal_lambdas_heterogeneous,
    optimal_mse,
)

__all__ = [
    "DEFAULTS",
    "plot_error_curve",
    "plot_error_curves_by_tau",
    "plot_monte_carlo_check",
    "plot_gaps_vs_eps",
    "plot_heterogeneous",
    "gain_over_better_endpoint",
    "gain_peak_epsilon",
    "admissible_lambdas",
]

DEFAULTS = dict(K=20, n=200, sigma=0.4, eps=0.25, delta=1e-5, c=1.0)
DEFAULT_TAUS = (0.03, 0.08, 0.2)


def _sigma_loc2(n, sigma, eps, delta, c):
    return local_variance(sigma**2, n, gaussian_sigma(eps, delta, c) ** 2)


def gain_over_better_endpoint(eps, K: int = 20, n: int = 200, sigma: float = 0.4, tau: float = 0.08,
                              delta: float = 1e-5, c: float = 1.0) -> np.ndarray:
    """min(Δ_loc, Δ_fed) (Props. 6.5, 6.6) at each ε: how much optimal MR-MTL gains over the better of local
    training and FedAvg (classic Gaussian calibration of the per-silo mean)."""
    s2 = _sigma_loc2(n, sigma, np.asarray(eps, dtype=float), delta, c)
    return np.minimum(gap_to_local(s2, tau**2, K), gap_to_fedavg(s2, tau**2, K))


def gain_peak_epsilon(K: int = 20, n: int = 200, sigma: float = 0.4, tau: float = 0.08, delta: float = 1e-5,
                      c: float = 1.0, eps_min: float = 0.01, eps_max: float = 10.0, points: int = 2001) -> float:
    """The ε on a log grid of ``points`` values in [eps_min, eps_max] where :func:`gain_over_better_endpoint`
    peaks (the "bump", found numerically: the chapter compares it with the crossover ε× of Prop. 6.6)."""
    grid = np.geomspace(eps_min, eps_max, int(points))
    return float(grid[np.argmax(gain_over_better_endpoint(grid, K, n, sigma, tau, delta, c))])


def admissible_lambdas(sigma_loc2: Sequence[float], tau: float) -> tuple[np.ndarray, np.ndarray]:
    """``(λ*_k, admissible λ_k)`` of App. E.5 (Thm E.5): a silo whose λ*_k is negative falls back to FedAvg
    (λ = ∞), the best admissible choice on [0, ∞]."""
    lam_star = optimal_lambdas_heterogeneous(np.asarray(sigma_loc2, dtype=float), tau**2)
    return lam_star, np.where(lam_star < 0, np.inf, lam_star)


def _lambda_grid(lam_star: float, points: int = 300) -> np.ndarray:
    centre = lam_star if np.isfinite(lam_star) and lam_star > 0 else 1.0
    return np.geomspace(min(1e-3, centre / 100), max(1e3, centre * 100), points)


def _draw_error_curve(ax, K, n, sigma, tau, eps, delta, c, *, title=True, nonprivate=True):
    s2 = _sigma_loc2(n, sigma, eps, delta, c)
    lam_star = optimal_lambda(s2, tau**2)
    grid = _lambda_grid(lam_star)
    ax.plot(grid, mse(grid, s2, tau**2, K), color="tab:blue", lw=2, label="MR-MTL E(λ) (Lemma 6.7)")
    if nonprivate:
        s0 = local_variance(sigma**2, n, 0.0)
        ax.plot(grid, mse(grid, s0, tau**2, K), color="tab:gray", lw=1, ls=":", label="same without DP noise")
    ax.axhline(s2, color="tab:red", ls="--", lw=1.2, label=f"local training (λ = 0): {s2:.3g}")
    e_fed = fedavg_mse(s2, tau**2, K)
    ax.axhline(e_fed, color="tab:green", ls="--", lw=1.2, label=f"FedAvg (λ = ∞): {e_fed:.3g}")
    if np.isfinite(lam_star) and lam_star > 0:
        e_star = optimal_mse(s2, tau**2, K)
        ax.axvline(lam_star, color="k", lw=0.8, alpha=0.5)
        ax.plot([lam_star], [e_star], "k*", ms=12, label=f"λ* = σ²_loc/τ² = {lam_star:.3g}, E* = {e_star:.3g}")
    ax.set(xscale="log", yscale="log", xlabel="MR-MTL regularization λ (log scale)",
           ylabel="mean squared error E[(ŵ_k(λ) − w_k)²]")
    if title:
        ax.set_title(f"τ = {tau:g}, σ_loc² = {s2:.3g}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return s2, lam_star


def plot_error_curve(K: int = 20, n: int = 200, sigma: float = 0.4, tau: float = 0.08, eps: float = 0.25,
                     delta: float = 1e-5, c: float = 1.0):
    """E(λ) of MR-MTL with λ* (Theorem 6.3) and the local / FedAvg endpoints marked (one panel)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
    s2, _ = _draw_error_curve(ax, K, n, sigma, tau, eps, delta, c, title=False)
    ax.set_title(f"MR-MTL error, K = {K}, n = {n}, σ = {sigma:g}, τ = {tau:g}, "
                 f"ε = {eps:g}, δ = {delta:g}, C = {c:g}\n(σ_loc² = {s2:.3g}, classic Gaussian mechanism)",
                 fontsize=9)
    return fig


def plot_error_curves_by_tau(taus: Sequence[float] = DEFAULT_TAUS, K: int = 20, n: int = 200, sigma: float = 0.4,
                             eps: float = 0.25, delta: float = 1e-5, c: float = 1.0):
    """One E(λ) panel per heterogeneity τ (the paper's three levels by default)."""
    import matplotlib.pyplot as plt

    # one panel per row: side by side, three panels shrink to unreadable text in the book's column
    fig, axes = plt.subplots(len(taus), 1, figsize=(7.5, 3.6 * len(taus)), constrained_layout=True)
    for ax, tau in zip(np.atleast_1d(axes), taus):
        _draw_error_curve(ax, K, n, sigma, tau, eps, delta, c)
    fig.suptitle(f"MR-MTL error E(λ): K = {K}, n = {n}, σ = {sigma:g}, ε = {eps:g}, δ = {delta:g}, C = {c:g}")
    return fig


def plot_monte_carlo_check(results: Mapping[float, MonteCarloResult], K: int = 20, n: int = 200, sigma: float = 0.4,
                           eps: float = 0.25, delta: float = 1e-5, c: float = 1.0):
    """Closed form E(λ) (lines) against simulated errors (points with ±2 standard-error bars), one panel per τ.

    ``results`` maps τ to the :class:`~fedtheory.mean_estimation.MonteCarloResult` of
    :func:`~fedtheory.mean_estimation.simulate` with the same K, n, σ and ``σ_DP = gaussian_sigma(eps, delta, c)``.
    λ = 0 and λ = ∞ points are drawn at the left and right edges of the axis.
    """
    import matplotlib.pyplot as plt

    taus = list(results)
    fig, axes = plt.subplots(len(taus), 1, figsize=(7.5, 3.4 * len(taus)), constrained_layout=True, squeeze=False)
    s2 = _sigma_loc2(n, sigma, eps, delta, c)
    for ax, tau in zip(axes[:, 0], taus):
        res = results[tau]
        finite = res.lambdas[np.isfinite(res.lambdas) & (res.lambdas > 0)]
        lo, hi = finite.min() / 3, finite.max() * 3
        grid = np.geomspace(lo, hi, 300)
        ax.plot(grid, mse(grid, s2, tau**2, K), color="tab:blue", lw=1.5, label="closed form (Lemma 6.7)")
        x = np.where(res.lambdas == 0, lo, np.where(np.isinf(res.lambdas), hi, res.lambdas))
        ax.errorbar(x, res.mse, yerr=2 * res.se, fmt="o", ms=4, color="#d55e00", capsize=3,
                    label=f"Monte Carlo ±2 SE ({res.trials:,} trials)")
        for lam_end, name in ((0.0, "local"), (np.inf, "FedAvg")):
            if np.any(res.lambdas == lam_end):
                xe = lo if lam_end == 0 else hi
                ax.plot([xe], [mse(lam_end, s2, tau**2, K)], "s", mfc="none", mec="tab:blue", ms=9)
                ax.annotate(name, (xe, mse(lam_end, s2, tau**2, K)), textcoords="offset points", xytext=(0, 8),
                            ha="center", fontsize=8)
        lam_star = optimal_lambda(s2, tau**2)
        ax.axvline(lam_star, color="k", lw=0.8, alpha=0.5, label=f"λ* = {lam_star:.3g}")
        ax.set(xscale="log", yscale="log", xlabel="λ (λ = 0 and ∞ at the edges)", ylabel="mean squared error",
               title=f"τ = {tau:g}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    fig.suptitle(f"Monte Carlo of the full model vs Lemma 6.7: K = {K}, n = {n}, σ = {sigma:g}, "
                 f"ε = {eps:g}, δ = {delta:g}")
    return fig


def plot_gaps_vs_eps(K: int = 20, n: int = 200, sigma: float = 0.4, tau: float = 0.08, delta: float = 1e-5,
                     c: float = 1.0, eps_min: float = 0.01, eps_max: float = 10.0):
    """MR-MTL's advantage over local training and over FedAvg against ε (Props. 6.5 and 6.6).

    Left: the gaps Δ_loc and Δ_fed and their minimum (MR-MTL's advantage over the *better* endpoint),
    which peaks ("the bump") at the crossover ε× where σ_loc² = τ² and local = FedAvg.  Right: the three
    errors E_loc, E_fed and E* against ε.
    """
    import matplotlib.pyplot as plt

    eps = np.geomspace(eps_min, eps_max, 400)
    s2 = _sigma_loc2(n, sigma, eps, delta, c)
    dl, df = gap_to_local(s2, tau**2, K), gap_to_fedavg(s2, tau**2, K)
    best = np.minimum(dl, df)
    eps_x = crossover_epsilon(sigma**2, tau**2, n, delta, c)
    # the book's column width (6.8 in): drawn wider, its text would shrink below 10 px on the page
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(6.8, 8.8), constrained_layout=True, sharex=True)
    ax1.plot(eps, dl, color="tab:red", label="Δ_loc = E_loc − E* (Prop. 6.5)")
    ax1.plot(eps, df, color="tab:green", label="Δ_fed = E_fed − E* (Prop. 6.6)")
    ax1.plot(eps, best, color="tab:purple", lw=3, alpha=0.6,
             label="min(Δ_loc, Δ_fed): gain over the better endpoint")
    ax2.plot(eps, s2, color="tab:red", label="local training E_loc = σ_loc²")
    ax2.plot(eps, fedavg_mse(s2, tau**2, K), color="tab:green", label="FedAvg E_fed")
    ax2.plot(eps, optimal_mse(s2, tau**2, K), color="tab:blue", lw=2, label="MR-MTL at λ*, E*")
    for ax in (ax1, ax2):
        if np.isfinite(eps_x) and eps_min <= eps_x <= eps_max:
            ax.axvline(eps_x, color="k", lw=0.8, ls="--", label=f"ε× = {eps_x:.3g} (σ_loc² = τ², λ* = 1)")
        if eps_min <= 1.0 <= eps_max:
            ax.axvspan(1.0, eps_max, color="0.9", zorder=0, label="ε ≥ 1: classic calibration not a guarantee")
        ax.set_xscale("log")
        ax.set_xlabel("privacy budget ε per silo (log scale)")
        ax.xaxis.set_tick_params(labelbottom=True)
        ax.grid(True, which="both", alpha=0.3)
        # legend under the panel (not beside it) so that the panel keeps the full figure width
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    ax1.set(yscale="log", ylim=(best.max() / 1e3, None), ylabel="error gap (mean squared error, log scale)",
            title="advantage of optimal MR-MTL: the bump at ε×")
    ax2.set(yscale="log", ylabel="mean squared error", title="errors of the three estimators")
    fig.suptitle(f"K = {K}, n = {n}, σ = {sigma:g}, τ = {tau:g}, δ = {delta:g}, C = {c:g}")
    return fig


def plot_heterogeneous(sigma_loc2: Sequence[float], tau: float, result: MonteCarloResult | None = None,
                       labels: Sequence[str] | None = None):
    """Per-silo error curves E_k(λ) (App. E.5), each divided by its best admissible error, with λ*_k marked.

    A silo whose λ*_k is negative (Theorem E.5's fall-back case) has a decreasing curve: its best
    admissible choice is FedAvg (λ = ∞), marked at the right edge.  ``result`` (optional) is a
    :func:`~fedtheory.mean_estimation.simulate_heterogeneous` result drawn as points (±2 SE).
    """
    import matplotlib.pyplot as plt

    s = np.asarray(sigma_loc2, dtype=float)
    K = s.size
    lam_star, admissible = admissible_lambdas(s, tau)
    best = mse_heterogeneous(admissible, s, tau**2, per_silo=True)
    lo, hi = 1e-3, 1e3
    grid = np.geomspace(lo, hi, 300)
    curves = mse_heterogeneous(grid, s, tau**2) / best
    labels = list(labels) if labels is not None else [f"silo {k}" for k in range(K)]
    cmap = plt.get_cmap("viridis")
    # drawn at the book's column width (6.8 in) so that its 8-9 pt text stays 11-12 px tall on the page; the
    # legend goes under the axes instead of beside them
    fig, ax = plt.subplots(figsize=(6.8, 4.6 + 0.18 * ((K + 1) // 2)), constrained_layout=True)
    for k in range(K):
        # viridis from 0 to 0.6 only: its light end (yellow, 1.3:1 on white) is unreadable as a line
        color = cmap(0.6 * k / max(K - 1, 1))
        ax.plot(grid, curves[:, k], color=color, label=f"{labels[k]}: λ*_k = {lam_star[k]:.3g}"
                + (" < 0 → FedAvg" if lam_star[k] < 0 else ""))
        xk = admissible[k] if np.isfinite(admissible[k]) else hi
        ax.plot([xk], [1.0], "*", color=color, ms=11, mec="k", mew=0.5)
        if result is not None:
            lams = result.lambdas
            x = np.where(lams == 0, lo, np.where(np.isinf(lams), hi, lams))
            keep = (x >= lo) & (x <= hi)
            ax.errorbar(x[keep], result.mse[keep, k] / best[k], yerr=2 * result.se[keep, k] / best[k], fmt="o",
                        ms=3, color=color, capsize=2, alpha=0.8)
    ax.set(xscale="log", yscale="log", xlabel="common MR-MTL regularization λ (λ = ∞ at the right edge)",
           ylabel="E_k(λ) / best admissible error of silo k",
           title=f"Heterogeneous silos (App. E.5), K = {K}, τ = {tau:g}\n★ = λ*_k (Theorem E.5)"
                 + ("; points: Monte Carlo ±2 SE" if result is not None else ""))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    return fig
