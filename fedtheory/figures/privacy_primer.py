"""Figures and tables of the privacy-primer chapter (ε of DP-SGD under the three accountants).

All numbers come from :mod:`fedtheory.privacy.dpsgd_accounting`; PLD and PRV evaluations are costly
(``benchmarks/README.md``), so the curves use few points and rely on that module's cache (moving a slider back is free).
"""
from __future__ import annotations

import numpy as np

from fedtheory.figures.tables import markdown_table  # re-exported: the chapter imports it from here
from fedtheory.privacy.dpsgd_accounting import ACCOUNTANTS, epsilon
from fedtheory.privacy.rdp import DEFAULT_ORDERS, rdp_to_epsilon, subsampled_gaussian_rdp

__all__ = ["plot_epsilon_vs_noise_and_steps", "accountant_table", "markdown_table"]

_STYLE = {"rdp": ("tab:blue", "o", "RDP (Opacus formula, Lemma A.2)"),
          "pld": ("#d55e00", "s", "PLD (dp_accounting)"),
          "prv": ("tab:green", "^", "PRV (Opacus, upper bound)")}


def plot_epsilon_vs_noise_and_steps(sample_rate: float = 0.01, steps: int = 1000, noise_multiplier: float = 1.0,
                                    delta: float = 1e-5, accountants=ACCOUNTANTS, n_points: int = 7):
    """Two stacked panels: ε against the noise multiplier at ``steps`` (top), and ε against steps at
    ``noise_multiplier`` (bottom); one legend; sized for a ~7 in text column.

    Poisson sampling at ``sample_rate``, add/remove-one adjacency, all accountants' guaranteed upper bounds;
    points beyond an accountant's supported range (:attr:`~fedtheory.privacy.accountants.Accountant.max_epsilon`)
    are left out and its legend entry says so.
    """
    import matplotlib.pyplot as plt

    sigmas = np.geomspace(0.5, 4.0, n_points)
    step_grid = np.unique(np.geomspace(1, max(steps, 10), n_points).round().astype(int))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 8), constrained_layout=True)
    def eps(z, t, acc):  # nan where the accountant refuses (beyond its supported range; accountants module)
        try:
            return epsilon(z, delta, sample_rate, int(t), acc)
        except ValueError:
            return float("nan")

    for acc in accountants:
        color, marker, label = _STYLE[acc]
        top = [eps(s, steps, acc) for s in sigmas]
        bottom = [eps(noise_multiplier, t, acc) for t in step_grid]
        if np.isnan(top).any() or np.isnan(bottom).any():
            label += " (not shown beyond its range)"
        ax1.plot(sigmas, top, marker=marker, color=color, label=label)
        ax2.plot(step_grid, bottom, marker=marker, color=color, label=label)
    ax1.set(xscale="log", yscale="log", xlabel="noise multiplier z (noise std / clip norm C)",
            ylabel=f"ε at δ = {delta:g}")
    ax1.set_title(f"T = {steps} steps, q = {sample_rate:g}", fontsize=10)
    ax2.set(xscale="log", yscale="log", xlabel="DP-SGD steps T", ylabel=f"ε at δ = {delta:g}")
    ax2.set_title(f"z = {noise_multiplier:g}, q = {sample_rate:g}", fontsize=10)
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax1.xaxis.set_major_locator(FixedLocator([0.5, 1, 2, 4]))
    ax2.xaxis.set_major_locator(LogLocator(base=10))
    for ax in (ax1, ax2):
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(NullFormatter())
        ax.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=9, title="accountant", title_fontsize=9)
    fig.suptitle("DP-SGD privacy loss, Poisson sampling, add/remove-one adjacency", fontsize=11)
    return fig


def accountant_table(noise_multiplier: float, sample_rate: float, delta: float, steps_list=(1, 10, 100, 1000),
                     accountants=ACCOUNTANTS, classic: bool = True) -> dict[str, list[float]]:
    """ε per accountant (and, optionally, RDP with the classic conversion) for each T in ``steps_list``."""
    table = {acc: [epsilon(noise_multiplier, delta, sample_rate, int(t), acc) for t in steps_list]
             for acc in accountants}
    if classic:
        table["rdp (classic conversion)"] = [
            rdp_to_epsilon(DEFAULT_ORDERS, subsampled_gaussian_rdp(DEFAULT_ORDERS, noise_multiplier, sample_rate,
                                                                   int(t), backend="numpy"), delta, "classic")[0]
            for t in steps_list]
    return table

