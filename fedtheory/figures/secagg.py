"""Figures for the chapter "Secure aggregation with local steps" (Heikkilä 2025, Thms 4.6-4.7).

Per-client, per-step noise multiplier z_j under the four calibrations of
:mod:`fedtheory.privacy.secagg`, against the number of local steps S and the number of clients M.
The accountant's answer depends on (S, R, q, ε, δ) only through z_total (and, for the naive
calibration, through the per-round multiplier, which does not depend on S or M); the dependence on M
is the exact factor of :func:`~fedtheory.privacy.secagg.noise_share`.  Calibrations are memoised in
memory (``functools.lru_cache``) so sliders over M are instant.
"""
from __future__ import annotations

import functools
import warnings
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from fedtheory.privacy.secagg import CALIBRATIONS, noise_share, total_noise_multiplier

__all__ = ["FMNIST", "noise_curves", "plot_noise_vs_steps", "plot_widget"]

#: The seed paper's Fashion-MNIST setting: 10 clients, 20 rounds, batch 512 of 5,600 training points
#: per client (one epoch = 11 steps), target (1, 1e-5), add/remove adjacency, sample-level DP.
FMNIST = dict(M=10, R=20, S=11, sample_rate=512 / 5600, eps=1.0, delta=1e-5)

LABELS = {"ddp": r"DDP, honest clients ($z_{total}/\sqrt{M}$)",
          "ddp_hbc": r"DDP, curious clients ($z_{total}/\sqrt{M-1}$)",
          "ldp": r"local DP only ($z_{total}$)", "naive": "naive DDP (sensitivity S·C per round)"}
COLORS = {"ddp": "tab:green", "ddp_hbc": "#7a7a00", "ldp": "tab:blue", "naive": "tab:red"}
STYLES = {"rdp": "-", "pld": "--", "prv": ":"}
MARKERS = {"rdp": "o", "pld": "s", "prv": "^"}


@functools.lru_cache(maxsize=512)
def _z(calibration: str, S: int, R: int, q: float, eps: float, delta: float, accountant: str) -> float:
    with warnings.catch_warnings():  # Opacus' PRV set-up warns about its internal order grid
        warnings.simplefilter("ignore")
        if calibration == "naive":  # per-round multiplier: independent of S (and M)
            return total_noise_multiplier(1, R, q, eps, delta, "naive", accountant)
        return total_noise_multiplier(S, R, q, eps, delta, "ddp", accountant)


def noise_curves(M: int, S_values: Sequence[int], R: int, sample_rate: float, eps: float, delta: float,
                 accountant: str = "rdp", calibrations=CALIBRATIONS) -> dict[str, np.ndarray]:
    """z_j for each calibration over ``S_values`` (equals :func:`~fedtheory.privacy.secagg.per_client_noise`)."""
    out = {}
    for c in calibrations:
        out[c] = np.array([_z(c, int(S), int(R), float(sample_rate), float(eps), float(delta), accountant)
                           * noise_share(M, int(S), c) for S in S_values])
    return out


def _panel_vs_S(ax, M, S_values, R, q, eps, delta, accountants, calibrations=CALIBRATIONS):
    for acc in accountants:
        curves = noise_curves(M, S_values, R, q, eps, delta, acc, calibrations)
        for c in calibrations:
            ax.plot(S_values, curves[c], ls=STYLES[acc], marker=MARKERS[acc], ms=3, color=COLORS[c],
                    label=f"{LABELS[c]}, {acc.upper()}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_ticks(ax.xaxis, S_values)
    _plain_log_ticks(ax.yaxis)
    ax.set_xlabel("local steps per round S")
    ax.set_ylabel(r"per-client, per-step noise multiplier $z_j$")
    ax.grid(True, which="both", alpha=0.3)


def _plain_log_ticks(axis, ticks: Sequence[float] | None = None) -> None:
    """Label a log axis with plain numbers (1, 2, 5, 10, ...) instead of powers of ten."""
    if ticks is None:
        ticks = [m * 10.0**e for e in range(-3, 4) for m in (1, 2, 5)]
    axis.set_major_locator(FixedLocator(sorted(set(float(t) for t in ticks))))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _two_legends(ax, calibrations, accountants) -> None:
    """Colour = calibration, line style = accountant: two short legends instead of one per curve."""
    colour = [Line2D([], [], color=COLORS[c], lw=2, label=LABELS[c]) for c in calibrations]
    style = [Line2D([], [], color="k", ls=STYLES[a], marker=MARKERS[a], ms=4, label=a.upper())
             for a in accountants]
    ax.figure.legend(handles=colour, fontsize=9, loc="lower center", ncol=2, title="calibration (colour)",
                     title_fontsize=9)
    ax.legend(handles=style, fontsize=9, loc="lower right", title="accountant (line style)", title_fontsize=9)


def plot_noise_vs_steps(M: int = FMNIST["M"], R: int = FMNIST["R"], sample_rate: float = FMNIST["sample_rate"],
                        eps: float = FMNIST["eps"], delta: float = FMNIST["delta"],
                        S_values: Sequence[int] = (1, 2, 4, 11, 22, 44), accountants=("rdp", "pld", "prv"),
                        prv_S_values: Sequence[int] = (1, 11)) -> plt.Figure:
    """Static figure: z_j against S for the four calibrations and the given accountants.

    PRV calibrations take seconds each, so the PRV accountant is evaluated only at ``prv_S_values``.
    """
    fig, ax = plt.subplots(figsize=(7.5, 6.2))
    for acc in accountants:
        Ss = list(prv_S_values) if acc == "prv" else list(S_values)
        _panel_vs_S(ax, M, Ss, R, sample_rate, eps, delta, (acc,))
    ax.axvline(FMNIST["S"], color="grey", lw=0.8)
    ax.annotate("1 epoch (S = 11)", (FMNIST["S"], ax.get_ylim()[0]), rotation=90, fontsize=9, va="bottom",
                ha="right", color="grey")
    ax.set_title(f"Per-client noise for ({eps:g}, {delta:g})-DP, add/remove, sample-level: "
                 f"M={M}, R={R}, q={sample_rate:.4f}", fontsize=10)
    _plain_log_ticks(ax.xaxis, sorted(set(S_values) | set(prv_S_values)))
    _two_legends(ax, CALIBRATIONS, accountants)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    return fig


def plot_widget(M: int = 10, S: int = 11, eps: float = 1.0, accountant: str = "rdp", R: int = 20,
                sample_rate: float = FMNIST["sample_rate"], delta: float = 1e-5) -> plt.Figure:
    """Two stacked panels for the sliders: z_j against S (at M, top) and against M (at S, bottom), one
    accountant; one legend under both; sized for a ~7 in text column."""
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(7, 8.5))
    S_values = sorted({1, 2, 4, 8, 16, 32, int(S)})
    _panel_vs_S(a1, M, S_values, R, sample_rate, eps, delta, (accountant,))
    a1.axvline(S, color="grey", lw=0.8)
    a1.set_title(f"M = {M} clients", fontsize=10)
    Ms = np.arange(2, 101)
    for c in CALIBRATIONS:
        z = _z(c, int(S), int(R), float(sample_rate), float(eps), float(delta), accountant)
        a2.plot(Ms, [z * noise_share(int(m), int(S), c) for m in Ms], color=COLORS[c], label=LABELS[c])
    a2.axvline(M, color="grey", lw=0.8)
    a2.set_xscale("log")
    a2.set_yscale("log")
    _plain_log_ticks(a2.xaxis, [2, 5, 10, 20, 50, 100])
    _plain_log_ticks(a2.yaxis)
    a2.set_xlabel("clients per round M")
    a2.set_ylabel(r"per-client, per-step noise multiplier $z_j$")
    a2.set_title(f"S = {S} local steps", fontsize=10)
    a2.grid(True, which="both", alpha=0.3)
    # one legend under both panels: inside a panel it would cover the curves that cross it
    fig.legend(handles=a2.get_lines()[:len(CALIBRATIONS)], fontsize=9, loc="lower center", ncol=1,
               title="calibration", title_fontsize=9)
    fig.suptitle(f"({eps:g}, {delta:g})-DP sample-level, add/remove;\nR={R}, q={sample_rate:.4f}, "
                 f"accountant {accountant.upper()}", fontsize=11)
    fig.tight_layout(rect=(0, 0.15, 1, 1))
    return fig
