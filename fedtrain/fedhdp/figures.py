"""Figures of the FedHDP practice chapter (matplotlib, no usetex): accuracy vs r, and theory vs training."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from fedtheory.linear_regression import numeric as nm
from fedtrain.encoding import decode_float
from fedtrain.fedhdp.config import FEDHDP_METHODS
from fedtrain.methods.registry import method_spec

__all__ = ["plot_accuracy_vs_ratio", "plot_theory_link"]


def _series(rows, dataset, method, key="acc_g"):
    out: dict[float, list[float]] = {}
    for r in rows:
        c = r["config"]
        if c["dataset"] == dataset and c["method"] == method:
            ratio = float(c["ratio"]) if method_spec(method).takes_ratio else 1.0
            out.setdefault(ratio, []).append(decode_float(r["metrics"][key]))
    xs = sorted(out)
    mean = np.array([np.mean(out[x]) for x in xs])
    sd = np.array([np.std(out[x], ddof=1) if len(out[x]) > 1 else 0.0 for x in xs])
    return np.array(xs), mean, sd


def plot_accuracy_vs_ratio(rows: Sequence[dict], datasets=("noniid-digits", "noniid-digits-skewed"), *,
                           title: str = ""):
    """Global accuracy (mean ± sd over seeds) of FedHDP against r, one panel per dataset, with the baselines as lines."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(datasets), figsize=(5.2 * len(datasets), 3.8), sharey=True)
    axes = np.atleast_1d(axes)
    with_ratio = [method_spec(m) for m in FEDHDP_METHODS if method_spec(m).takes_ratio]
    # the methods without r as lines: the private ones first, then the non-private baseline
    lines = sorted((method_spec(m) for m in FEDHDP_METHODS if not method_spec(m).takes_ratio),
                   key=lambda s: not s.private)
    for ax, ds in zip(axes, datasets):
        for spec in with_ratio:
            xs, m, s = _series(rows, ds, spec.name)
            shown = np.where(xs > 0, xs, xs[xs > 0].min() / 4 if (xs > 0).any() else 1e-3)
            ax.errorbar(shown, m, yerr=s, marker="o", capsize=3, color=spec.color, label=f"{spec.label} (r on the axis)")
            if (xs == 0).any():
                ax.annotate("r = 0", (shown[0], m[0]), textcoords="offset points", xytext=(6, -4), fontsize=8)
        for spec in lines:
            bx, bm, bs = _series(rows, ds, spec.name)
            label = spec.label + (" (r = 1)" if len(spec.groups) == 2 else "")
            if bm.size:
                ax.axhline(bm[0], color=spec.color, ls="--", lw=1, label=f"{label}: {bm[0]:.1f} ± {bs[0]:.1f}")
        ax.set_xscale("log")
        ax.set_xlabel("weight ratio r = w_p / w_np (log scale; r = 0 drawn at the left)")
        ax.set_title(ds)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("global-model accuracy Acc_g (%)")
    if title:
        fig.suptitle(title)
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
    for (g, k), color in zip((("nonprivate", 1), ("private", 2)), ("tab:orange", "tab:blue")):
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
