"""The plots of the theory-meets-training chapter: the closed-form error E(λ) of Gaussian mean estimation next to
DP-SGD-trained MR-MTL."""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np

from fedtrain.analysis import theory_summary
from fedtrain.figures.style import COLUMN_WIDTH_IN, readable_log_axis

__all__ = ["plot_theory_vs_training", "plot_theory_meets_training"]


def plot_theory_vs_training(lams: np.ndarray, trained_mean: np.ndarray, trained_se: np.ndarray,
                            theory: Callable[[np.ndarray], np.ndarray], *, lam_star_theory: float,
                            label: str = "", fedavg: tuple[float, float] | None = None,
                            theory_fedavg: float | None = None, title: str = "", ax=None):
    """Theory meets training: the closed-form E(λ) (line) next to DP-SGD-trained MR-MTL (points ± 2 SE).

    ``theory(lam_grid)`` evaluates the closed form; ``lam_star_theory`` is its minimizer (vertical line);
    ``fedavg = (mean, se)`` of trained FedAvg and ``theory_fedavg`` its closed form (dashed lines).
    """
    import matplotlib.pyplot as plt

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
    lams = np.asarray(lams, dtype=float)
    pos = lams > 0
    grid = np.geomspace(lams[pos].min() / 2, lams[pos].max() * 2, 200)
    line, = ax.plot(grid, theory(grid), "-", label=f"closed form E(λ){label}")
    color = line.get_color()
    ax.errorbar(lams[pos], trained_mean[pos], yerr=2 * trained_se[pos], fmt="o", color=color, capsize=3,
                label=f"trained MR-MTL (DP-SGD) ± 2 SE{label}")
    ax.axvline(lam_star_theory, color=color, ls=":", lw=1, label="closed-form λ* = σ_loc²/τ²")
    if fedavg is not None:
        ax.axhspan(fedavg[0] - 2 * fedavg[1], fedavg[0] + 2 * fedavg[1], color="#d55e00", alpha=0.18,
                   label="trained FedAvg ± 2 SE")
    if theory_fedavg is not None:
        ax.axhline(theory_fedavg, color="#d55e00", ls="--", lw=1, label="closed-form FedAvg")
    ax.set_xscale("log")
    ax.set_yscale("log")
    readable_log_axis(ax, "y")
    ax.set_xlabel("λ (MR-MTL regularization strength, log scale)")
    ax.set_ylabel("estimation error E[(ŵ_k(λ) − w_k)²]")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    if fig is not None:
        fig.tight_layout()
        return fig
    return ax.figure


def plot_theory_meets_training(trained: Mapping[float, Mapping[str, Any]], *, num_silos: int, tau: float,
                               n: int | None = None, sigma: float | None = None, note: str = ""):
    """The theory-meets-training figure: one panel per ε (stacked, shared λ axis), each the closed-form E(λ)
    (Lemma 6.7) at that ε's trained σ_loc² next to DP-SGD-trained MR-MTL (:func:`plot_theory_vs_training`),
    with one legend for all panels; ``note`` (e.g. which results store the runs came from) goes under the
    title.  Returns ``(fig, theory_summary(trained, tau=tau))``."""
    import matplotlib.pyplot as plt

    from fedtheory.mean_estimation import fedavg_mse, mse

    summary = theory_summary(trained, tau=tau)
    k = len(trained)
    fig, axes = plt.subplots(k, 1, figsize=(COLUMN_WIDTH_IN, 2.6 * k + 1.6), sharex=True, squeeze=False)
    n_sets = 0
    for ax, (eps, t) in zip(axes[:, 0], trained.items()):
        s = summary[eps]
        n_sets = np.asarray(t["runs"]).shape[1]
        if math.isinf(eps):
            head = "non-private"
        else:
            delta = t.get("delta")
            acc = t.get("accountant")
            head = f"ε={eps:g}" + (f", δ={delta:g}" if delta is not None else "") + (f" ({acc.upper()})" if acc else "")
        plot_theory_vs_training(t["lam"], t["mean"], t["se"], lambda lam, s2=s.s_loc: mse(lam, s2, tau**2, num_silos),
                                lam_star_theory=s.lam_star, fedavg=(t["fedavg_mean"], t["fedavg_se"]),
                                theory_fedavg=fedavg_mse(s.s_loc, tau**2, num_silos),
                                title=f"{head}:  σ_loc²={s.s_loc:.4f},  λ*={s.lam_star:.2f}", ax=ax)
        ax.get_legend().remove()
        ax.set_ylabel("error E[(ŵ_k − w_k)²]", fontsize=10)
        ax.set_title(ax.get_title(), fontsize=10.5)
        if ax is not axes[-1, 0]:
            ax.set_xlabel("")
    axes[-1, 0].set_xlabel("λ (MR-MTL regularization strength, log scale)", fontsize=10)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    labels = [lab.replace("trained MR-MTL (DP-SGD) ± 2 SE", "MR-MTL trained with DP-SGD ± 2 SE") for lab in labels]
    settings = f"K={num_silos}" + (f", n={n}" if n is not None else "") + f", τ={tau:g}" + \
        (f", σ={sigma:g}" if sigma is not None else "")
    fig.suptitle(f"Closed form (Lemma 6.7) vs trained MR-MTL\nGaussian mean estimation, {settings}; "
                 f"{n_sets} synthetic datasets" + (f"\n{note}" if note else ""), fontsize=10)
    top = 0.7 + (0.25 * (note.count("\n") + 1) if note else 0.0)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 1 - top / fig.get_figheight()),
               ncol=2, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - (top + 0.3) / fig.get_figheight()))
    return fig, summary

