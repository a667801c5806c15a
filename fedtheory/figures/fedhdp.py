"""Figures of the FedHDP theory chapter (``book/fedhdp_theory.ipynb``), opt-out setting.

Every function takes the slider values (``N`` clients, fraction ``rho_np`` opting out of privacy,
``alpha2`` = ξ² (the paper's α²), ``tau2`` = τ², ``gamma2`` = κ², the paper's γ²) and returns a matplotlib Figure.  The counts are
``N_np = round(ρ_np N)`` and ``N_p = N − N_np``.  All curves come from
:mod:`fedtheory.linear_regression` closed forms.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from fedtheory import linear_regression as lr
from fedtheory import point_estimation as pe
from fedtheory.validation import check_integer_at_least

__all__ = ["split", "plot_server_error", "plot_opt_out", "plot_lambdas_vs_gamma"]


def split(N: int, rho_np: float) -> tuple[int, int]:
    """``(N_np, N_p)`` with ``N_np = round(ρ_np N)``; at least one private client is kept."""
    N = int(check_integer_at_least("N", N, 2))
    if not 0 <= rho_np <= 1:
        raise ValueError(f"rho_np must lie in [0, 1] (got {rho_np!r})")
    n_np = min(int(round(rho_np * N)), N - 1)
    return n_np, N - n_np


def plot_server_error(N: int = 20, rho_np: float = 0.1, alpha2: float = 1.0, tau2: float = 0.5,
                      gamma2: float = 0.5):
    """σ_s²(r) against r with r* (FedHDP) and r = 1 (HDP-FedAvg) marked, and the DP-FedAvg level."""
    n_np, n_p = split(N, rho_np)
    args = (n_np, n_p, alpha2, tau2, 0.0, gamma2)
    r = np.linspace(0.002 if n_np > 0 else 0.02, 1.2, 600)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(r, lr.server_error(r, *args), color="C0", label=r"$\sigma_s^2(r)$")
    rs = lr.optimal_ratio(*args)
    ax.plot([rs], [lr.optimal_server_error(*args)], "o", color="C3", label=f"FedHDP, r* = {rs:.3g}")
    ax.plot([1.0], [lr.server_error(1.0, *args)], "s", color="#d55e00", label="HDP-FedAvg, r = 1")
    ax.axhline(pe.dp_fedavg_server_error(N, n_np / N, alpha2, tau2, gamma2), color="C7", ls="--",
               label="DP-FedAvg (everyone private)")
    ax.set_xlabel("weight ratio r of a private update to a non-private one")
    ax.set_ylabel(r"server error $\sigma_s^2$ per coordinate")
    ax.set_title(f"N = {N} ({n_np} opt out), ξ² = {alpha2:g}, τ² = {tau2:g}, κ² = {gamma2:g}", fontsize=10)
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def plot_opt_out(N: int = 10, rho_np: float = 0.1, alpha2: float = 1.0, tau2: float = 0.2,
                 gamma2: float = 2.0, own_noise_removed: bool = True):
    """Analogue of the paper's Figure 1: one client's error against λ when it stays private and
    when it opts out, under HDP-FedAvg+Ditto (r = 1, top) and FedHDP (r*, bottom).

    Staying private the client is one of ``N_p`` private clients; opting out moves it to the
    non-private group (``N_np + 1``, ``N_p − 1``).  The markers are each curve's minimum.  Panels are
    stacked (sized for a ~7 in text column) with one figure legend; each panel's title gives its r.
    """
    from matplotlib.lines import Line2D

    n_np, n_p = split(N, rho_np)
    lam = np.logspace(-2, 2, 400)
    cases = {"stays private": (2, n_np, n_p, "C3"), "opts out": (1, n_np + 1, n_p - 1, "C2")}
    fig, axes = plt.subplots(2, 1, figsize=(7, 8), sharex=True, sharey=True)
    for ax, (title, fixed_r) in zip(axes, (("HDP-FedAvg + Ditto", 1.0), ("FedHDP", None))):
        rs = []
        for label, (g, n1, n2, color) in cases.items():
            if n2 == 0 and g == 2:
                continue
            args = (n1, n2, alpha2, tau2, 0.0, gamma2)
            r = lr.optimal_ratio(*args) if fixed_r is None else fixed_r
            err = lr.local_error(lam, r, g, *args, own_noise_removed=own_noise_removed)
            best = lr.optimal_lambda_for_ratio(r, g, *args, own_noise_removed=own_noise_removed)
            ax.plot(lam, err, color=color, label=label)
            ax.plot([best], [lr.local_error(best, r, g, *args, own_noise_removed=own_noise_removed)],
                    "o", color=color)
            rs.append(f"{label} r = {r:.3g}")
        ax.set_xscale("log")
        ax.set_ylabel("client's expected squared\nerror per coordinate")
        ax.set_title(f"{title}: r = 1 for every client" if fixed_r is not None else
                     f"{title}: r = r* ({'; '.join(rs)})", fontsize=10)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel(r"personalization parameter $\lambda$")
    handles = [Line2D([], [], color=cases[k][3], label=f"client {k}") for k in cases]
    handles.append(Line2D([], [], color="k", marker="o", ls="", label="best λ of each curve"))
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=9)
    fig.suptitle(f"One client: N = {N} (besides this client, {n_np} opted out),\n"
                 f"ξ² = {alpha2:g}, τ² = {tau2:g}, κ² = {gamma2:g}", fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def plot_lambdas_vs_gamma(N: int = 20, rho_np: float = 0.1, alpha2: float = 1.0, tau2: float = 0.5):
    """λ*_np and λ*_p (FedHDP, r*) against the privacy-noise level κ², with DP-FedAvg+Ditto's λ*."""
    n_np, n_p = split(N, rho_np)
    g = np.logspace(-3, 2, 300)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    if n_np > 0:
        ax.plot(g, np.broadcast_to(lr.optimal_lambda(1, n_np, n_p, alpha2, tau2, 0.0, g), g.shape),
                color="C2", label=r"$\lambda^*_{np}$ = ξ²/τ² (non-private client)")
    ax.plot(g, lr.optimal_lambda(2, n_np, n_p, alpha2, tau2, 0.0, g), color="C3",
            label=r"$\lambda^*_{p}$ (private client, FedHDP)")
    ax.plot(g, lr.optimal_lambda(2, 0, N, alpha2, tau2, 0.0, g * n_p / N), color="C7", ls="--",
            label=r"$\lambda^*$ of DP-FedAvg+Ditto (all private)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"privacy noise $\gamma^2$ (variance on the private group's average)")
    ax.set_ylabel(r"optimal $\lambda$")
    ax.set_title(f"N = {N} ({n_np} opt out), ξ² = {alpha2:g}, τ² = {tau2:g}", fontsize=10)
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig
