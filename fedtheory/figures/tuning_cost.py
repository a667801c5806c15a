"""Figures for the chapter "The privacy cost of tuning λ" (MR-MTL paper Sec. 7, App. F, Fig. 7).

Mean estimation (Sec. 6): K silos of n points, data noise σ, heterogeneity τ, each silo releases its
clipped sum once with the Gaussian mechanism, noise std ``σ_DP = c·z`` (clip c, noise multiplier z).
*Untuned*: z meets (ε, δ) for one release.  *Tuned*: z meets (ε, δ) for the whole random-repetition
tuning procedure (h ~ TNB(ν, γ) or Poisson with E[h] runs), recalibrated by
:func:`fedtheory.privacy.tuning.accounting.tuned_noise_multiplier`.  The error of MR-MTL(λ) is Lemma 6.7
(:func:`fedtheory.mean_estimation.mse`); the simulation is :func:`fedtheory.mean_estimation.simulate`
(no clipping, Assumption E.2; the paper's simulator clips at c = 1, a ~1 % bias).

Calibration: ``bound="tight"`` (default) calibrates every scheme as tightly as its theorem allows (untuned:
exact analytic-Gaussian profile; TNB: Thm F.2 with the Gaussian's exact RDP and continuous α̂ (the extra RDP order); Poisson: P&S
Thm 6 with the exact δ̂), ``bound="rdp"`` everything from RDP as the paper's code; see
:mod:`fedtheory.privacy.tuning`.  The empirical-Bayes plug-in λ̂ (:mod:`fedtheory.mean_estimation.empirical_bayes`)
is post-processing of the untuned releases, so it uses the untuned noise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import matplotlib.pyplot as plt
import numpy as np

from fedtheory.mean_estimation import local_variance, mse, optimal_lambda, simulate
from fedtheory.mean_estimation.empirical_bayes import plugin_mse, simulate_plugin
from fedtheory.privacy.tuning import tuned_noise_multiplier
from fedtheory.privacy.tuning import expected_released_value, poisson_pmf, tnb_gamma, tnb_pmf

__all__ = ["PAPER", "Setting", "pretty_label", "curves", "summary", "released", "plugin", "plot_panel", "plot_fig7",
           "plot_widget", "plot_run_distributions"]

#: Fig. 7 settings (MR-MTL paper App. F and its released code).
PAPER = dict(K=20, n=200, sigma=0.4, eps=0.25, delta=1e-5, clip=1.0, mean_runs=10.0,
             etas=(-0.5, 0.0, 0.5, 1.0, 2.0, 5.0), taus=(0.03, 0.08, 0.2))

LAMBDAS = np.logspace(-3, 2, 100)


@dataclass
class Setting:
    """One curve: a label, the noise multiplier z (None = non-private) and the error curve over λ."""

    label: str
    z: Optional[float]
    lambdas: np.ndarray
    error: np.ndarray
    local: float
    fedavg: float
    sim: Optional[object] = field(default=None, repr=False)

    @property
    def best(self) -> float:
        """Lowest error over the λ grid (what perfect tuning would find)."""
        return float(self.error.min())


def pretty_label(label: str) -> str:
    """Reader-facing form of a setting's key: ``"Tuned, TNB eta=0"`` → ``"Tuned, TNB ν=0"``.

    Keys (``Setting.label``, :func:`fedtheory.privacy.tuning.accounting.calibration_table` labels) stay ASCII so that
    code can index by them; legends and tables show this form.
    """
    return label.replace("eta=", "ν=").replace("mu=", "μ=")


def _settings_for(etas, poisson, eps, delta, mean_runs):
    out = [("Private (untuned)", "none", None)]
    out += [(f"Tuned, TNB eta={e:g}", "tnb", float(e)) for e in etas]
    if poisson:
        out.append((f"Tuned, Poisson mu={mean_runs:g}", "poisson", None))
    return out


def curves(tau: float, *, eps: float = 0.25, delta: float = 1e-5, mean_runs: float = 10.0,
           etas: Sequence[float] = PAPER["etas"], poisson: bool = True, K: int = 20, n: int = 200,
           sigma: float = 0.4, clip: float = 1.0, lambdas=LAMBDAS, trials: int = 0, seed: int = 0,
           bound: str = "tight") -> list[Setting]:
    """Error curves (closed form, and a simulation if ``trials`` > 0) for non-private, untuned and tuned.

    First entry is non-private (σ_DP = 0), second the untuned private run, then one per ν and Poisson.
    ``bound`` selects the calibration (``"tight"`` or ``"rdp"``, see the module docstring).
    """
    lambdas = np.asarray(lambdas, dtype=float)
    tau2 = float(tau) ** 2
    out = []
    specs = [("Non-private", None, None)] + _settings_for(etas, poisson, eps, delta, mean_runs)
    for k, (label, dist, eta) in enumerate(specs):
        if dist is None:
            z, sdp = None, 0.0
        else:
            z = tuned_noise_multiplier(eps, delta, dist, mean_runs, eta, bound=bound)
            sdp = clip * z
        s2 = local_variance(sigma**2, n, sdp**2)
        err = mse(lambdas, s2, tau2, K)
        sim = None
        if trials:
            sim = simulate(K, n, sigma, tau, sdp, np.concatenate([[0.0], lambdas, [np.inf]]), trials=trials,
                           seed=seed + k)
        out.append(Setting(label, z, lambdas, np.asarray(err), float(mse(0.0, s2, tau2, K)),
                           float(mse(np.inf, s2, tau2, K)), sim))
    return out


def summary(settings: list[Setting], untuned: Optional[Setting] = None) -> dict:
    """Reading of a panel: private untuned local / FedAvg / MR-MTL(λ*) errors and, per tuned curve,
    its best error and whether it still beats the better untuned endpoint.

    ``untuned`` replaces the panel's own untuned curve as the baseline, e.g. the RDP-calibrated one of
    ``curves(..., bound="rdp")`` to see how the reading depends on the baseline's calibration."""
    untuned = settings[1] if untuned is None else untuned
    best_endpoint = min(untuned.local, untuned.fedavg)
    tuned = {s.label: s.best for s in settings[2:]}
    return {
        "local": untuned.local,
        "fedavg": untuned.fedavg,
        "mrmtl_untuned_best": untuned.best,
        "nonprivate_best": settings[0].best,
        "tuned_best": tuned,
        "tuned_beats_endpoints": {k: v < best_endpoint for k, v in tuned.items()},
    }


def _law(label: str) -> tuple[str, Optional[float]]:
    if "TNB" in label:
        return "tnb", float(label.split("eta=")[1])
    return "poisson", None


def released(settings: list[Setting], tau: float, *, mean_runs: float = 10.0, K: int = 20, n: int = 200,
             sigma: float = 0.4, clip: float = 1.0, lam_range=(1e-3, 1e2), points: int = 20_001) -> dict:
    """Expected error of the **released** model per tuned curve: h runs with h ~ the curve's law (E[h] =
    ``mean_runs``), each with λ drawn log-uniform over ``lam_range`` (the figure's range), noise-free selection of
    the best (:func:`fedtheory.privacy.tuning.runs.expected_best_of_runs`); for Poisson, h = 0 releases ⊥, counted at
    the untuned private FedAvg error (P(h = 0) = e^{-E[h]}).  Computed through the laws' generating functions
    (:func:`fedtheory.privacy.tuning.runs.expected_released_value`).  The lowest point of a tuned curve (the paper's
    reading) is what a tuner gets only when h is large; this averages over the random h and the draws."""
    lam = np.logspace(np.log10(lam_range[0]), np.log10(lam_range[1]), int(points))
    out = {}
    for s in settings[2:]:
        dist, eta = _law(s.label)
        err = np.asarray(mse(lam, local_variance(sigma**2, n, (clip * s.z) ** 2), float(tau) ** 2, K))
        p_one = float(tnb_pmf(1, eta, tnb_gamma(mean_runs, eta))) if dist == "tnb" else mean_runs * np.exp(-mean_runs)
        out[s.label] = dict(expected=expected_released_value(err, dist, mean_runs, eta, none_value=settings[1].fedavg),
                            p_one=float(p_one), p_zero=0.0 if dist == "tnb" else float(np.exp(-mean_runs)))
    return out


@dataclass(frozen=True)
class Plugin:
    """MR-MTL with the empirical-Bayes λ̂ (free: post-processing of the untuned releases)."""

    exact: float        # SURE + quadrature (plugin_mse)
    mc: float           # Monte Carlo mean
    se: float           # its standard error
    frac_fedavg: float  # share of trials where λ̂ = ∞
    trials: int


def plugin(settings: list[Setting], tau: float, *, K: int = 20, n: int = 200, sigma: float = 0.4, clip: float = 1.0,
           method: str = "moment", trials: int = 20_000, seed: int = 0) -> Plugin:
    """Error of MR-MTL(λ̂) at the untuned noise of ``settings`` (exact and Monte Carlo)."""
    z = settings[1].z
    s2 = float(local_variance(sigma**2, n, (clip * z) ** 2))
    sim = simulate_plugin(K, s2, tau**2, method=method, trials=trials, seed=seed)
    return Plugin(plugin_mse(s2, tau**2, K, method), sim.mse, sim.se, sim.frac_fedavg, trials)


def plot_panel(ax, settings: list[Setting], tau: float, *, show_sim: bool = True, legend: bool = True,
               plugin_error: Optional[float] = None, released_errors: Optional[dict] = None) -> None:
    """Draw one Fig. 7 panel into ``ax`` (with ``plugin_error``: a grey line at the plug-in λ̂'s error; with
    ``released_errors`` (:func:`released`): a diamond per tuned curve at its expected released error, drawn
    right of the λ range)."""
    cmap = plt.get_cmap("viridis")
    tuned = settings[2:]
    for k, s in enumerate(settings):
        if k == 0:
            style = dict(color="black", lw=2)
        elif k == 1:
            style = dict(color="tab:red", lw=2.5)
        else:
            # viridis up to 0.6 (3:1 on white); beyond it the yellow-greens fade into the page
            style = dict(color=cmap(0.6 * (k - 2) / max(len(tuned) - 1, 1)), lw=1.3,
                         ls="--" if "Poisson" in s.label else "-")
        ax.plot(s.lambdas, s.error, label=pretty_label(s.label), **style)
        if released_errors is not None and s.label in released_errors:
            ax.plot([s.lambdas[-1] * 2.2], [released_errors[s.label]["expected"]], "D", ms=6, color=style["color"],
                    mec="black", mew=0.6, clip_on=False)
        if show_sim and s.sim is not None:
            lam = s.sim.lambdas[1:-1]
            idx = np.unique(np.linspace(0, lam.size - 1, 9).round().astype(int))
            ax.errorbar(lam[idx], s.sim.mse[1:-1][idx], yerr=2 * s.sim.se[1:-1][idx], fmt="o", ms=3,
                        color=style["color"], capsize=2, alpha=0.8)
    u = settings[1]
    # the endpoint levels are named in the legend, not by text on the axes: annotations overprinted the
    # curves and each other where the two levels (or a curve) come close
    ax.axhline(u.local, color="tab:red", ls=":", lw=1, label="private local (λ=0)")
    ax.axhline(u.fedavg, color="tab:red", ls="-.", lw=1, label="private FedAvg (λ=∞)")
    if plugin_error is not None:
        ax.axhline(plugin_error, color="tab:gray", ls="--", lw=1.5, label="empirical-Bayes λ̂ (no tuning cost)")
    if released_errors:
        ax.plot([], [], "D", ms=6, color="white", mec="black", mew=0.6,
                label="expected released error (right edge)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("MR-MTL regularization λ")
    ax.set_ylabel("mean squared error of ŵ_k(λ)")
    ax.set_title(f"τ = {tau:g}")
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(fontsize=8, loc="best")


def plot_fig7(taus: Sequence[float] = PAPER["taus"], *, trials: int = 500, seed: int = 0, **kw) -> plt.Figure:
    """Static Fig. 7: one panel per τ, closed form (lines) and simulation (markers ± 2 SE)."""
    # one panel per row (side by side they shrink to unreadable text); one legend, right of the top panel
    # one panel per row, one legend under the last panel: beside the panels it would squeeze them
    fig, axes = plt.subplots(len(taus), 1, figsize=(8, 3.4 * len(taus) + 1.2), squeeze=False)
    for ax, tau in zip(axes[:, 0], taus):
        settings = curves(tau, trials=trials, seed=seed, **kw)
        pk = {k: kw[k] for k in ("K", "n", "sigma", "clip") if k in kw}
        rel = released(settings, tau, mean_runs=kw.get("mean_runs", PAPER["mean_runs"]), **pk)
        plot_panel(ax, settings, tau, legend=False, plugin_error=plugin(settings, tau, **pk).exact, released_errors=rel)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=9, loc="lower center", ncol=3)
    eps = kw.get("eps", PAPER["eps"])
    m = kw.get("mean_runs", PAPER["mean_runs"])
    fig.suptitle(f"Cost of private tuning of λ: K=20, n=200, σ=0.4, (ε, δ)=({eps:g}, 1e-5), C=1, E[h]={m:g}\n"
                 f"lines: Lemma 6.7, markers: {trials}-trial simulation ± 2 SE; "
                 f"calibration: {kw.get('bound', 'tight')}", fontsize=10)
    fig.tight_layout(rect=(0, 1.1 / (3.4 * len(taus) + 1.2), 1, 1))
    return fig


def plot_widget(tau: float = 0.08, eps: float = 0.25, mean_runs: float = 10.0, eta: float = 0.0) -> plt.Figure:
    """One panel for the sliders: non-private, untuned, TNB(ν) and Poisson at the same E[h] (closed form)."""
    settings = curves(tau, eps=eps, mean_runs=mean_runs, etas=(eta,))
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    s2 = float(local_variance(0.16, 200, (settings[1].z or 0.0) ** 2))
    plot_panel(ax, settings, tau, show_sim=False, plugin_error=plugin_mse(s2, tau**2, 20))
    lam_star = optimal_lambda(s2, tau**2)
    ax.axvline(lam_star, color="tab:red", lw=0.8, alpha=0.5)
    ax.set_title(f"τ={tau:g}, ε={eps:g}, E[h]={mean_runs:g}, ν={eta:g}: "
                 f"z untuned {settings[1].z:.1f}, TNB {settings[2].z:.1f}, Poisson {settings[3].z:.1f}", fontsize=9)
    fig.tight_layout()
    return fig


def plot_run_distributions(mean_runs: float = 10.0, etas: Sequence[float] = PAPER["etas"], hmax: int = 40) -> plt.Figure:
    """PMFs of the number of runs h: TNB(ν, γ) for each ν (γ solved for E[h]) and Poisson(E[h])."""
    h = np.arange(0, hmax + 1)
    fig, ax = plt.subplots(figsize=(7, 4))
    cmap = plt.get_cmap("viridis")
    for k, eta in enumerate(etas):
        g = tnb_gamma(mean_runs, eta)
        ax.plot(h, tnb_pmf(h, eta, g), "o-", ms=3, color=cmap(0.6 * k / max(len(etas) - 1, 1)),
                label=f"TNB ν={eta:g} (γ={g:.3g})")
    ax.plot(h, poisson_pmf(h, mean_runs), "s--", ms=3, color="#d55e00", label=f"Poisson μ={mean_runs:g}")
    ax.set_yscale("log")
    ax.set_ylim(1e-5, 1)
    ax.set_xlabel("number of runs h")
    ax.set_ylabel("probability P(h)")
    ax.set_title(f"Laws of the number of tuning runs, all with E[h] = {mean_runs:g}")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig
