"""The plot of the privacy-audit chapter: the one-run audit's canary scores."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fedtrain.figures.style import COLUMN_WIDTH_IN

__all__ = ["plot_audit_scores"]


def plot_audit_scores(audits: Sequence[tuple[str, Any]], *, bins: int = 40):
    """The one-run audit's canary scores (:func:`fedtrain.audit.audit_one_run`): one panel per
    ``(label, AuditResult)``, histograms of the final model's weight on each canary's own dimension for
    canaries left out and put in, and the audit's ε lower bound next to the claimed ε in the panel title."""
    import matplotlib.pyplot as plt

    audits = list(audits)
    if not audits:
        raise ValueError("audits must hold at least one (label, AuditResult) pair")
    fig, axes = plt.subplots(1, len(audits), figsize=(COLUMN_WIDTH_IN, 3.0), sharey=True, squeeze=False)
    for ax, (label, a) in zip(axes[0], audits):
        s, m = np.asarray(a.details["scores"]), np.asarray(a.details["membership"], dtype=bool)
        edges = np.linspace(s.min(), s.max(), bins)
        ax.hist(s[~m], edges, alpha=0.6, color="tab:blue", label="canary out")
        ax.hist(s[m], edges, alpha=0.6, color="#d55e00", hatch="//", label="canary in")
        ax.set_title(f"{label}\nε ≥ {a.eps_lower:.2f} (claim {a.eps_claimed:.2f})", fontsize=9)
        ax.set_xlabel("weight on the canary's dimension")
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("canaries (count)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig
