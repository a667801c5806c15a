"""The plots of the empirical chapters (MR-MTL paper, Figs. 2-5): training curves, privacy-utility curves and
MR-MTL against λ.

Every plot takes :class:`~fedtrain.engine.RunResult` objects (as returned by :func:`fedtrain.sweep.run_sweep`) and
returns a matplotlib :class:`~matplotlib.figure.Figure`; what is plotted (best λ, curves, privacy tables) is
computed by :mod:`fedtrain.analysis`.  Titles name the data (real or synthetic stand-in) only; the settings and
provenance go into the caption.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from fedtrain.analysis import best_lambda_table, curves_by_method, lambda_curve, lower_is_better
from fedtrain.figures.style import (COLUMN_WIDTH_IN, _eps_text, data_label, eps_axis, eps_positions, eps_style,
                                    method_color, metric_label, readable_log_axis)
from fedtrain.methods.registry import method_spec

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.engine import RunResult

__all__ = ["plot_training_curves", "plot_privacy_utility", "plot_privacy_utility_panels", "plot_lambda_sweep"]


def plot_training_curves(rows: Sequence["RunResult"], *, title: str | None = None, note: str = ""):
    """Fig. 2: test metric against training round, one colour per method and one line style per ε
    (:func:`~fedtrain.figures.style.eps_style`; non-private dashed), the legend under the axes.

    Bands are ±1 standard deviation (ddof = 1) over repeats (or seeds).  The title names the data;
    ``note``, if given, is appended to it (the book puts settings and provenance in the caption instead).
    """
    import matplotlib.pyplot as plt

    rows = list(rows)
    curves = curves_by_method(rows)
    eps_values = sorted({eps for _, eps in curves})
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.6))
    for (label, eps), c in curves.items():
        color = method_color(c["method"])
        style = eps_style(eps, eps_values)
        every = max(1, len(c["rounds"]) // 8)
        ax.plot(c["rounds"], c["mean"], color=color, ms=4, markevery=every, lw=1.4,
                label=f"{label}, {_eps_text(eps)}", **style)
        ax.fill_between(c["rounds"], c["mean"] - c["std"], c["mean"] + c["std"], color=color, alpha=0.12)
    metric = rows[0].metric
    ax.set_xlabel("training round")
    ax.set_ylabel(metric_label(metric))
    if lower_is_better(metric):
        ax.set_yscale("log")
        readable_log_axis(ax, "y")
    ax.set_title(title or f"{data_label(rows)}{note}")
    ax.grid(alpha=0.3, which="both")
    handles, labels = ax.get_legend_handles_labels()
    ncol = 3
    fig.legend(handles, labels, loc="lower center", ncol=ncol, frameon=False, handlelength=3.2)
    fig.tight_layout(rect=(0, 0.06 * math.ceil(len(labels) / ncol), 1, 1))
    return fig


def plot_privacy_utility(rows: Sequence["RunResult"], *, title: str | None = None, note: str = "",
                         ax=None, zoom_eps: float | None = None, empty_text: str | None = None):
    """Fig. 3 / Fig. 4: test metric (mean ± sd over repeats or seeds) against per-silo ε, every method at its
    best (λ, η).

    ε is on a log axis (:func:`~fedtrain.figures.style.eps_positions`); the non-private point sits right of a dashed separator,
    joined to the curve by a dotted segment.  Error bars are ±1 standard deviation (ddof = 1) over repeats (or
    seeds); methods are offset slightly along x so that their bars do not overlap.  ``zoom_eps`` (one of the ε in
    ``rows``; only when ``ax`` is None) adds a panel that zooms in on that ε, one row per method sorted
    by the metric, so that methods within a few percent of each other can be told apart.  With no rows, the axes
    say ``empty_text`` (a grid still being computed); without ``empty_text`` no rows raise ``ValueError``.
    """
    import matplotlib.pyplot as plt

    rows = list(rows)
    if not rows:
        if empty_text is None:
            raise ValueError("rows must hold at least one run (or pass empty_text for a figure that says why not)")
        return _empty_privacy_utility(ax, empty_text, title or note.strip())
    table = best_lambda_table(rows)
    eps_values = sorted({t["eps"] for t in table})
    pos = eps_positions(eps_values)
    if zoom_eps is not None and zoom_eps not in eps_values:
        raise ValueError(f"zoom_eps must be one of the ε in rows {eps_values} (got {zoom_eps!r})")
    fig = None
    zax = None
    if ax is None and zoom_eps is not None:
        fig, (ax, zax) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH_IN, 4.8), gridspec_kw={"width_ratios": [1.7, 1]})
    elif ax is None:
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.4))
    labels = list(OrderedDict.fromkeys(t["label"] for t in table))
    for j, label in enumerate(labels):
        ts = sorted((t for t in table if t["label"] == label), key=lambda t: t["eps"])
        x = np.array([pos[t["eps"]] for t in ts]) * 1.035 ** (j - (len(labels) - 1) / 2)
        y = np.array([t["mean"] for t in ts])
        err = np.array([t["std"] for t in ts])
        color = method_color(ts[0]["method"])
        fin = np.array([math.isfinite(t["eps"]) for t in ts])
        ax.errorbar(x[fin], y[fin], yerr=err[fin], marker="o", ms=4, capsize=3, color=color, label=label)
        if (~fin).any():
            ax.errorbar(x[~fin], y[~fin], yerr=err[~fin], marker="s", ms=5, capsize=3, color=color, ls="none")
            if fin.any():
                ax.plot([x[fin][-1], x[~fin][0]], [y[fin][-1], y[~fin][0]], ":", color=color, lw=1)
    eps_axis(ax, eps_values, pos)
    if lower_is_better(rows[0].metric):  # errors spanning multiples: log axis, every tick labelled
        ax.set_yscale("log")
        readable_log_axis(ax, "y")
    ax.set_xlabel("per-silo privacy budget ε (log scale)")
    ax.set_ylabel(metric_label(rows[0].metric))
    ax.set_title(title or f"{data_label(rows)}{note}")
    if zax is not None:  # zoom panel: one row per method at zoom_eps; the legend goes under both panels
        _zoom_panel(zax, table, rows[0].metric, zoom_eps)
        handles, names = ax.get_legend_handles_labels()
        fig.legend(handles, names, loc="lower center", ncol=min(len(names), 4), frameon=False)
        fig.tight_layout(rect=(0, 0.05 + 0.05 * ((len(names) - 1) // 4), 1, 1))
        return fig
    if fig is not None:  # the legend goes under the axes, so that it hides no data
        handles, names = ax.get_legend_handles_labels()
        fig.legend(handles, names, loc="lower center", ncol=min(len(names), 4), frameon=False)
        fig.tight_layout(rect=(0, 0.05 + 0.05 * ((len(names) - 1) // 4), 1, 1))
    else:  # a panel of a larger figure: the legend beside the axes, outside the data
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    ax.grid(alpha=0.3, which="both")
    if fig is not None:
        return fig
    return ax.figure


def _empty_privacy_utility(ax, empty_text: str, title: str):
    """:func:`plot_privacy_utility`'s axes without runs: ``empty_text`` in the middle (a grid still being computed)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.4))
    ax.text(0.5, 0.5, empty_text, transform=ax.transAxes, ha="center", va="center", color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("per-silo privacy budget ε (log scale)")
    ax.set_ylabel("test accuracy")
    ax.set_title(title)
    return ax.figure


def _zoom_panel(zax, table: list[dict], metric: str, zoom_eps: float) -> None:
    """The zoom panel of :func:`plot_privacy_utility`: one row per method at ``zoom_eps``, sorted by the metric."""
    at = sorted((t for t in table if t["eps"] == zoom_eps), key=lambda t: t["mean"])
    # the x range covers the methods within 25 % of the best one; a method outside it is drawn at the
    # edge (an arrow marker) with its value in its label, so that one outlier cannot squash the rest
    best_t = at[0] if lower_is_better(metric) else at[-1]
    near = [t for t in at if abs(t["mean"] - best_t["mean"]) <= 0.25 * abs(best_t["mean"])]
    spread = {id(t): (t["std"] if math.isfinite(t["std"]) else 0.0) for t in at}  # NaN: every seed diverged
    lo_x = min(t["mean"] - spread[id(t)] for t in near)
    hi_x = max(t["mean"] + spread[id(t)] for t in near)
    pad = 0.08 * (hi_x - lo_x) if hi_x > lo_x else 0.01 * abs(best_t["mean"]) + 1e-12
    lo_x, hi_x = lo_x - pad, hi_x + pad
    names = []
    for i, t in enumerate(at):
        color = method_color(t["method"])
        if lo_x <= t["mean"] <= hi_x:
            zax.errorbar([t["mean"]], [i], xerr=[t["std"]], marker="o", ms=5, capsize=3, color=color)
            names.append(t["label"])
        else:
            edge = hi_x if t["mean"] > hi_x else lo_x
            zax.plot([edge], [i], marker=">" if t["mean"] > hi_x else "<", ms=7, color=color, ls="none")
            names.append(f"{t['label']} ({t['mean']:.3g}, off scale)")
    zax.set_xlim(lo_x, hi_x)
    zax.set_yticks(range(len(at)))
    zax.set_yticklabels(names, fontsize=7.5)
    zax.set_ylim(-0.6, len(at) - 0.4)
    zax.set_xlabel(metric_label(metric).split(" (")[0], fontsize=8.5)
    zax.set_title("zoom: ε = ∞ (non-private)" if math.isinf(zoom_eps) else f"zoom: ε = {zoom_eps:g}",
                  fontsize=10)
    zax.tick_params(axis="x", labelsize=7.5)
    zax.grid(alpha=0.3)


def plot_lambda_sweep(rows: Sequence["RunResult"], eps_values: Sequence[float], *, method: str = "mrmtl",
                      title: str | None = None, note: str = ""):
    """Fig. 5: ``method``'s test metric against λ (log scale) for each ε, with the Local and FedAvg endpoints.

    One colour, line style and marker per ε (:func:`~fedtrain.figures.style.eps_style`); thin dotted/dashed horizontal lines are
    Local and FedAvg at that ε (best η); a star marks the best λ.  Bands are ±1 standard deviation
    (ddof = 1) over repeats (or seeds).  The legend sits under the axes.
    """
    import matplotlib.pyplot as plt

    rows = list(rows)
    table = {(t["method"], t["eps"]): t for t in best_lambda_table(r for r in rows if r.config.method
                                                                   in ("local", "fedavg"))}
    lower = lower_is_better(rows[0].metric)
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 5.0))
    palette = ["tab:red", "#d55e00", "tab:green", "tab:blue", "tab:purple", "tab:brown", "#b03c8c", "#7a7a00"]
    finite = sorted(e for e in eps_values if not math.isinf(e))
    for eps in eps_values:
        color = "black" if math.isinf(eps) else palette[finite.index(eps) % len(palette)]
        cur = lambda_curve(rows, eps, method=method)
        ok = cur["lam"] > 0
        lam, mean, std = cur["lam"][ok], cur["mean"][ok], cur["std"][ok]
        ax.plot(lam, mean, color=color, ms=4, lw=1.4, label=f"{method_spec(method).label}, {_eps_text(eps)}",
                **eps_style(eps, eps_values))
        ax.fill_between(lam, mean - std, mean + std, color=color, alpha=0.12)
        b = int(np.argmin(mean) if lower else np.argmax(mean))
        ax.plot(lam[b], mean[b], "*", color=color, ms=13, mec="white", mew=0.6, zorder=5)
        for m, ls in (("local", ":"), ("fedavg", "--")):
            t = table.get((m, float(eps)))
            if t is not None:
                ax.axhline(t["mean"], color=color, ls=ls, lw=0.9, alpha=0.7)
    ax.plot([], [], color="0.3", ls=":", lw=0.9, label="Local (λ=0), same colour")
    ax.plot([], [], color="0.3", ls="--", lw=0.9, label="FedAvg, same colour")
    ax.plot([], [], "*", color="0.3", ms=10, ls="none", label="best λ")
    ax.set_xscale("log")
    if lower:  # errors of different privacy levels differ by multiples: a log axis keeps all visible
        ax.set_yscale("log")
        readable_log_axis(ax, "y")
    ax.set_xlabel("λ (MR-MTL regularization strength, log scale)")
    ax.set_ylabel(metric_label(rows[0].metric))
    ax.set_title(title or f"{data_label(rows)}{note}")
    ax.grid(alpha=0.3, which="both")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False, handlelength=3.2)
    fig.tight_layout(rect=(0, 0.055 * math.ceil(len(labels) / 3), 1, 1))
    return fig


def plot_privacy_utility_panels(panels: Mapping[str, Sequence["RunResult"]], *,
                                notes: Mapping[str, str] | None = None):
    """Several :func:`plot_privacy_utility` panels (one per entry of ``panels``: name → rows), stacked
    vertically so that each reads at the book's column width."""
    import matplotlib.pyplot as plt

    notes = notes or {}
    fig, axes = plt.subplots(len(panels), 1, figsize=(COLUMN_WIDTH_IN, 3.6 * len(panels) + 0.8), squeeze=False)
    for ax, (name, rows) in zip(axes[:, 0], panels.items()):
        plot_privacy_utility(rows, ax=ax, note=notes.get(name, ""))
        ax.get_legend().remove()
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), frameon=False)
    fig.tight_layout(rect=(0, 0.7 * math.ceil(len(labels) / 4) / fig.get_figheight(), 1, 1))
    return fig

