"""Figures of the deep chapter beyond Fig. 6 and Fig. 3(d) themselves: what DP costs each method, split into
clipping and noise (:func:`plot_dp_costs`, from :mod:`fedtrain.dp_costs`), and two models side by side
(:func:`plot_two_models`).  Matplotlib only, no TeX; every axis labelled with its unit."""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from fedtrain.dp_costs import DPCosts

__all__ = ["COLUMN_WIDTH_IN", "plot_dp_costs", "plot_two_models", "panel_order_text"]

#: The book's column width in inches (the same as the other chapters' figures).
COLUMN_WIDTH_IN = 6.8
_STAGES = (("no DP", "nodp", "0.55"), ("clip only", "clip_only", "#d55e00"), ("private", "private", "tab:red"))


def plot_dp_costs(costs: Sequence[DPCosts], *, title: str = ""):
    """One row per :class:`~fedtrain.dp_costs.DPCosts` (method and cell): its test accuracy without DP, with clipping
    only and privately, as three bars, and the limiting cost written at the row's end ("clipping-bound" or
    "noise-bound" with the two costs).  Rows top to bottom in the order given."""
    import matplotlib.pyplot as plt

    costs = list(costs)
    if not costs:
        raise ValueError("costs must hold at least one DPCosts")
    n = len(costs)
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 0.55 * n + 1.4))
    y = np.arange(n)[::-1].astype(float)
    h = 0.26
    for j, (name, attr, color) in enumerate(_STAGES):
        ax.barh(y + (1 - j) * h, [getattr(c, attr) for c in costs], height=h, color=color, label=name)
    for yi, c in zip(y, costs):
        ax.text(1.01, yi, f"{c.limit}-bound:\nclipping {c.clip_cost:+.3f}\nnoise {c.noise_cost:+.3f}",
                transform=ax.get_yaxis_transform(), va="center", fontsize=8)
    ax.set_yticks(y, [f"{c.label}\n{c.setting}" + ("" if c.seeds > 1 else " (1 seed)") for c in costs], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("test accuracy (fraction correct, mean over silos)")
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.5 / max(1, n) - 0.12), ncol=3, frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def panel_order_text(eps_values: Sequence[float]) -> str:
    """The panels of :func:`plot_two_models` left to right in words, e.g. ``"left: without privacy, right: ε = 8 per
    silo"`` (for a caption glued from the figure's own order)."""
    names = ["without privacy" if math.isinf(e) else f"ε = {e:g} per silo" for e in eps_values]
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"left: {names[0]}, right: {names[1]}"
    return ", ".join(f"panel {i + 1}: {n}" for i, n in enumerate(names))


def plot_two_models(first: Mapping[tuple[str, float], float], second: Mapping[tuple[str, float], float], *,
                    labels: Sequence[str], eps_values: Sequence[float], names: tuple[str, str],
                    colors: tuple[str, str] = ("tab:blue", "#d55e00")):
    """Two models' test accuracy (``first``, ``second``: ``{(method label, ε): accuracy}``) per method (``labels``),
    one panel per privacy level in the order of ``eps_values`` (left to right, :func:`panel_order_text`), bars of
    ``first`` left of ``second``'s; ``names`` the two models' legend names.  A method missing from ``second`` at a
    level has no second bar."""
    import matplotlib.pyplot as plt

    eps_values = list(eps_values)
    if not eps_values or not labels:
        raise ValueError("labels and eps_values must each hold at least one value")
    fig, axes = plt.subplots(1, len(eps_values), figsize=(COLUMN_WIDTH_IN * 1.45, 3.4), sharey=True, squeeze=False)
    xs = np.arange(len(labels))
    for ax, e in zip(axes[0], eps_values):
        ax.bar(xs - 0.2, [first[(lab, e)] for lab in labels], 0.4, label=names[0], color=colors[0])
        have = [i for i, lab in enumerate(labels) if (lab, e) in second]
        ax.bar(xs[have] + 0.2, [second[(labels[i], e)] for i in have], 0.4, label=names[1], color=colors[1])
        ax.set_xticks(xs, [lab.replace(" → ", "→\n") for lab in labels], fontsize=8)
        ax.set_title("without privacy" if math.isinf(e) else f"ε = {e:g} per silo")
        ax.set_ylim(0, 1)
        ax.set_xlabel("method")
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].set_ylabel("test accuracy (fraction correct, mean over silos)")
    axes[0, -1].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig
