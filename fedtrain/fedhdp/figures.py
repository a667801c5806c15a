"""Figures of the FedHDP practice chapter (matplotlib, no usetex): accuracy vs r, and theory vs training."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from fedtheory.linear_regression import numeric as nm
from fedtrain.encoding import decode_float
from fedtrain.clientdp.config import FEDHDP_METHODS
from fedtrain.methods.registry import method_spec

__all__ = ["plot_claims_vs_ratio", "personal_accuracy", "plot_theory_link"]


def personal_accuracy(row: dict) -> float:
    """The personal models' mean accuracy over **all** clients of a stored run (%): each privacy group's mean
    (``acc_l_p``, ``acc_l_np``) weighted by its number of clients (``privacy["groups"][g]["clients"]``), so that
    methods with one group and with two are compared on the same population."""
    key = {"private": "acc_l_p", "nonprivate": "acc_l_np"}
    groups = row["privacy"]["groups"]
    total = sum(int(g["clients"]) for g in groups.values())
    return float(sum(int(g["clients"]) * decode_float(row["metrics"][key[name]]) for name, g in groups.items()) / total)


def _claims_series(rows, dataset, method, value):
    out: dict[float, list[float]] = {}
    for r in rows:
        c = r["config"]
        if c["dataset"] == dataset and c["method"] == method:
            out.setdefault(float(c["ratio"]) if method_spec(method).takes_ratio else 1.0, []).append(value(r))
    xs = sorted(out)
    return (np.array(xs), np.array([np.mean(out[x]) for x in xs]),
            np.array([np.std(out[x], ddof=1) if len(out[x]) > 1 else 0.0 for x in xs]))


def plot_claims_vs_ratio(rows: Sequence[dict], datasets: Sequence[str] = ("noniid-fashion", "noniid-fashion-skewed"),
                         *, setting: str = ""):
    """FedHDP's accuracy against its weight ratio r, global model (top) and personal models (bottom), one column per
    dataset; the three baselines as horizontal bands (mean ± sd over seeds, ``ddof=1``).

    x: r on a log axis (r = 0 cannot be placed there: its value is written in the panel, and drawn at the left
    edge when it falls inside the y range); y: ``Acc_g`` (server test set) and :func:`personal_accuracy` (all
    clients' personal models on their local test data), in %.  The y range of a row is set by the r > 0 points and
    the bands, so that the differences among them stay readable.  ``setting``: a line under the panels (the run's
    settings).
    """
    import matplotlib.pyplot as plt

    fedhdp = next(m for m in FEDHDP_METHODS if method_spec(m).takes_ratio)
    bands = sorted((m for m in FEDHDP_METHODS if not method_spec(m).takes_ratio),
                   key=lambda m: (not method_spec(m).private, m))
    panels = (("global model: Acc_g on the server test set (%)", lambda r: decode_float(r["metrics"]["acc_g"])),
              ("personal models: mean accuracy over all clients (%)", personal_accuracy))
    fig, axes = plt.subplots(2, len(datasets), figsize=(5.4 * len(datasets), 7.6), sharex=True, squeeze=False)
    for row, (ylabel, value) in enumerate(panels):
        for col, ds in enumerate(datasets):
            ax = axes[row, col]
            xs, m, s = _claims_series(rows, ds, fedhdp, value)
            pos = xs > 0
            left = xs[pos].min() / 2.5 if pos.any() else 1e-3
            right = xs[pos].max() * 2.5 if pos.any() else 1.0
            shown_lo, shown_hi = [], []
            for i, base in enumerate(bands):
                spec = method_spec(base)
                _, bm, bs = _claims_series(rows, ds, base, value)
                if not bm.size:
                    continue
                ax.axhspan(bm[0] - bs[0], bm[0] + bs[0], color=spec.color, alpha=0.18, lw=0)
                ax.axhline(bm[0], color=spec.color, ls=("--", "-.", ":")[i % 3], lw=1.2,
                           label=f"{spec.label}{' (r = 1)' if len(spec.groups) == 2 else ''}: {bm[0]:.1f} ± {bs[0]:.1f}")
                shown_lo.append(bm[0] - bs[0])
                shown_hi.append(bm[0] + bs[0])
            spec = method_spec(fedhdp)
            ax.errorbar(xs[pos], m[pos], yerr=s[pos], marker="o", capsize=3, color=spec.color,
                        label=f"{spec.label} at r (mean ± sd)")
            shown_lo += list(m[pos] - s[pos])
            shown_hi += list(m[pos] + s[pos])
            lo, hi = min(shown_lo), max(shown_hi)
            pad = max(0.5, 0.08 * (hi - lo))
            lo, hi = lo - pad, min(hi + pad, 100.1)  # accuracy stops at 100 %
            if (~pos).any():
                z_m, z_s = m[~pos][0], s[~pos][0]
                inside = lo <= z_m <= hi
                if inside:
                    ax.errorbar([left], [z_m], yerr=[z_s], marker="s", capsize=3, color=spec.color, mfc="white")
                ax.text(0.02, 0.03, f"r = 0: {z_m:.1f} ± {z_s:.1f}" + ("" if inside else " (below the axis)"),
                        transform=ax.transAxes, fontsize=8, color=spec.color)
            ax.set_ylim(lo, hi)
            ax.set_xscale("log")
            ax.set_xlim(left / 1.3, right)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="lower right")
            if row == 0:
                ax.set_title(ds)
            else:
                ax.set_xlabel("weight ratio r = w_p / w_np (log scale)")
            if col == 0:
                ax.set_ylabel(ylabel)
    if setting:
        fig.text(0.5, 0.005, setting, ha="center", va="bottom", fontsize=8, wrap=True)
        fig.tight_layout(rect=(0, 0.035, 1, 1))
    else:
        fig.tight_layout()
    return fig


def plot_theory_link(c):
    """Server error vs r and local errors vs λ: trained (mean ± 2 SE over datasets) against the closed forms."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10.4, 3.8))
    a.errorbar(c.ratios, c.server_measured, yerr=2 * c.server_se, fmt="o", capsize=3, label="trained (± 2 SE)")
    rr = np.geomspace(c.ratios.min(), c.ratios.max(), 100)
    a.plot(rr, [nm.server_error(r, c.N1, c.N2, c.alpha2, c.tau2, 0.0, c.gamma2) for r in rr], label="closed form σ_s²(r)")
    a.axvline(c.r_star, color="k", ls=":", label=f"r* = {c.r_star:.3f}")
    a.set_xscale("log")
    a.set_xlabel("weight ratio r (log scale)")
    a.set_ylabel("server error per coordinate ‖θ¹ − φ‖²/d")
    a.legend(fontsize=8)
    a.grid(alpha=0.3)
    ll = np.geomspace(c.lams.min(), c.lams.max(), 100)
    for (g, k), color in zip((("nonprivate", 1), ("private", 2)), ("#d55e00", "tab:blue")):
        b.errorbar(c.lams, c.local_measured[g], yerr=2 * c.local_se[g], fmt="o", capsize=3, color=color,
                   label=f"{g} clients, trained")
        b.plot(ll, [nm.local_error(lam, c.r_star, k, c.N1, c.N2, c.alpha2, c.tau2, 0.0, c.gamma2,
                                   own_noise_removed=False) for lam in ll], color=color, lw=1)
        b.axvline(c.lam_star[g], color=color, ls=":", label=f"λ*_{g} = {c.lam_star[g]:.3f}")
    b.set_xscale("log")
    b.set_xlabel("Ditto λ (log scale), at r = r*")
    b.set_ylabel("personal-model error ‖v_j − φ_j‖²/d")
    b.legend(fontsize=8)
    b.grid(alpha=0.3)
    fig.suptitle(f"Linear regression, N = {c.N1 + c.N2} ({c.N1} opted out), κ² = (zC/N_p)² = {c.gamma2:.3g}; "
                 f"{c.reps} datasets per point")
    fig.tight_layout()
    return fig
