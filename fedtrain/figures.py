"""Plots of the empirical chapters (MR-MTL paper, Figs. 2-5, Fig. A1's example images) and of theory meeting training.

Every plot function takes :class:`~fedtrain.engine.RunResult` objects (as returned by
:func:`fedtrain.sweep.run_sweep`) or arrays, and returns a matplotlib :class:`~matplotlib.figure.Figure`.
What is plotted is computed by :mod:`fedtrain.analysis` (best λ, curves, privacy tables, theory
summaries); method labels and colours come from the method registry (:mod:`fedtrain.methods.registry`).
Figures are drawn for the book's text column (:data:`COLUMN_WIDTH_IN` inches wide, shown at twice the
pixel density, :func:`use_book_style`); titles name the data (real or synthetic stand-in) only, and
the settings and provenance go into the figure's caption (:func:`settings_text`, :func:`book_figure`).
Each privacy level ε has its own line style and marker (:func:`eps_style`), legends sit outside the
axes, and log axes label their minor ticks (:func:`readable_log_axis`).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from fedtrain.analysis import (  # noqa: F401  (re-exported for older imports)
    TheorySummary,
    best_by_label,
    best_lambda_by_eps,
    best_lambda_table,
    curves_by_method,
    group_rows,
    lambda_curve,
    lower_is_better,
    method_label,
    paired_z,
    privacy_table,
    theory_summary,
)
from fedtrain.book_results import committed_store, figure_rows, store_note, theory_rows
from fedtrain.methods.registry import method_spec
from fedtrain.analysis import best_by_setting, seed_stats, warm_start_label
from fedtrain.fig6_checks import KINDS, fig6_table
from fedtrain.config import RunConfig
from fedtrain.presets import THEORY_SETUP
from fedtrain.sweep import _split_seed
from fedtrain.testing import tiny_federated

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.data.base import FederatedData
    from fedtrain.engine import RunResult

__all__ = [
    "COLUMN_WIDTH_IN",
    "use_book_style",
    "eps_style",
    "readable_log_axis",
    "settings_text",
    "BookFigure",
    "BOOK_FIGURES",
    "book_figure",
    "plot_audit_scores",
    "plot_mask_ratio_sweep",
    "plot_fig6",
    "plot_fig6_lambda_profile",
    "fig6_setting_text",
    "method_color",
    "metric_label",
    "data_label",
    "runs_text",
    "eps_positions",
    "plot_training_curves",
    "plot_privacy_utility",
    "plot_privacy_utility_panels",
    "plot_lambda_sweep",
    "plot_theory_vs_training",
    "plot_theory_meets_training",
    "plot_rotated_masked_examples",
]

#: The book's text column in inches (about 680 CSS pixels at 100 px per inch); figures are drawn this wide.
COLUMN_WIDTH_IN = 6.8

#: Line style and marker of each finite privacy level, in increasing ε; the non-private curve is dashed.
_EPS_STYLES = [("-", "o"), ("-.", "s"), (":", "^"), ((0, (5, 1, 1, 1, 1, 1)), "D"), ((0, (1, 1)), "v"),
               ((0, (8, 2)), "P"), ((0, (3, 1, 1, 1)), "X"), ((0, (2, 2)), "h")]


def use_book_style() -> None:
    """Set matplotlib for the book: figures :data:`COLUMN_WIDTH_IN` wide, 9-point text, and (inside IPython)
    PNG outputs at twice the pixel density, displayed at column width (``retina`` format)."""
    import matplotlib as mpl

    mpl.rcParams.update({"figure.figsize": (COLUMN_WIDTH_IN, 4.0), "figure.dpi": 100, "font.size": 9,
                         "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8.5,
                         "xtick.labelsize": 8.5, "ytick.labelsize": 8.5, "savefig.bbox": "tight"})
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # pragma: no cover - plain Python: nothing to configure
        return
    if get_ipython() is not None:
        set_matplotlib_formats("retina")


def eps_style(eps: float, eps_values: Sequence[float]) -> dict:
    """Line style and marker of privacy level ``eps`` among ``eps_values`` (distinct for every finite ε;
    dashed with squares for ε = ∞), as keyword arguments of ``Axes.plot``."""
    finite = sorted(float(e) for e in eps_values if math.isfinite(float(e)))
    if math.isinf(float(eps)):
        return {"linestyle": "--", "marker": "s"}
    ls, marker = _EPS_STYLES[finite.index(float(eps)) % len(_EPS_STYLES)]
    return {"linestyle": ls, "marker": marker}


def readable_log_axis(ax, axis: str = "y") -> None:
    """Label a log axis in plain decimals (``0.02``, ``0.03``) instead of matplotlib's sparse ``3×10⁻²``: at
    every multiple of a power of ten when it spans at most one decade, at 1, 2, 3 and 5 times each power up to
    two decades, fewer beyond.  Call it after the data are plotted (it reads the axis limits)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    a = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = (ax.get_ylim() if axis == "y" else ax.get_xlim())
    decades = math.log10(hi / lo) if lo > 0 and hi > 0 else 99.0
    subs = (np.arange(1.0, 10.0) if decades <= 1.0 else (1.0, 2.0, 3.0, 5.0) if decades <= 2 else (1.0, 3.0)
            if decades <= 3 else (1.0,))
    a.set_major_locator(LogLocator(base=10, subs=subs))
    a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    a.set_minor_locator(LogLocator(base=10, subs=np.arange(1.0, 10.0)))
    a.set_minor_formatter(NullFormatter())


def method_color(method: str) -> str:
    """The method's plot colour (from the registry)."""
    return method_spec(method).color


def metric_label(metric: str) -> str:
    return {"mse": "test MSE (lower is better)", "accuracy": "test accuracy (higher is better)"}.get(metric, metric)


def data_label(rows: Sequence["RunResult"]) -> str:
    """``'School (real data)'`` or ``'vehicle-standin (synthetic stand-in, τ=0.5)'``."""
    ds = rows[0].data or {}
    name = ds.get("name", rows[0].config.dataset)
    if ds.get("real"):
        return f"{name} (real data)"
    tau = (ds.get("info") or {}).get("tau")
    return f"{name} (synthetic stand-in{'' if tau is None else f', τ={tau:g}'})"


def _eps_text(eps: float) -> str:
    return "non-private" if math.isinf(eps) else f"ε={eps:g}"


def runs_text(rows: Sequence["RunResult"]) -> str:
    """``'5 repeats'`` when the runs re-split the silos (the paper's protocol, :func:`fedtrain.sweep.repeat_config`),
    ``'2 seeds (one split)'`` when they share one split."""
    pairs = {(r.config.seed, _split_seed(r.config)) for r in rows}
    splits = {s for _, s in pairs}
    if len(splits) > 1:
        return f"{len({p for p in pairs})} repeats"
    return f"{len({s for s, _ in pairs})} seeds (one split)"


def settings_text(rows: Sequence["RunResult"]) -> str:
    """The settings of ``rows`` for a caption: ``'R=200 rounds, B=32, C=1, δ=1e-03, 5 repeats'`` (R rounds,
    batch B, clip norm C; the book's notation page), plus the number of diverged runs left out, if any."""
    c = rows[0].config
    delta = rows[0].delta
    d = f", δ={float(delta[0]):.0e}" if delta is not None and len(delta) else ""
    div = sum(r.diverged for r in rows)
    warn = f"; {div} diverged run(s) left out" if div else ""
    return f"R={c.rounds} rounds, B={c.batch_size}, C={c.clip:g}{d}, {runs_text(rows)}{warn}"


_settings = settings_text  # the plots of the deep-models chapter still put the settings in their titles


def plot_training_curves(rows: Sequence["RunResult"], *, title: str | None = None, note: str = ""):
    """Fig. 2: test metric against training round, one colour per method and one line style per ε
    (:func:`eps_style`; non-private dashed), the legend under the axes.

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


def eps_positions(eps_values: Sequence[float]) -> dict[float, float]:
    """x positions of Fig. 3's ε values on a log axis: finite ε at themselves, ε = ∞ (non-private) one
    slot of 2.5× to the right of the largest finite ε (1.0 if there is none)."""
    finite = sorted(float(e) for e in eps_values if math.isfinite(float(e)))
    pos = {e: e for e in finite}
    if any(math.isinf(float(e)) for e in eps_values):
        pos[math.inf] = 2.5 * finite[-1] if finite else 1.0
    return pos



def eps_axis(ax, eps_values: Sequence[float], pos: dict[float, float]) -> None:
    """A log ε axis with a tick at each budget, ∞ drawn at ``pos[inf]`` and labelled "non-private", and a
    dashed line between the finite budgets and ∞ (positions from :func:`eps_positions`)."""
    finite = [e for e in eps_values if math.isfinite(e)]
    ax.set_xscale("log")
    ax.set_xticks([pos[e] for e in eps_values])
    ax.set_xticklabels(["∞\n(non-private)" if math.isinf(e) else f"{e:g}" for e in eps_values])
    ax.minorticks_off()
    if finite and math.inf in pos:
        ax.axvline(math.sqrt(finite[-1] * pos[math.inf]), color="0.5", ls="--", lw=0.8)

def plot_privacy_utility(rows: Sequence["RunResult"], *, title: str | None = None, note: str = "",
                         ax=None, zoom_eps: float | None = None, empty_text: str | None = None):
    """Fig. 3 / Fig. 4: test metric (mean ± sd over repeats or seeds) against per-silo ε, every method at its
    best (λ, η).

    ε is on a log axis (:func:`eps_positions`); the non-private point sits right of a dashed separator,
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
        if ax is None:
            _, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.4))
        ax.text(0.5, 0.5, empty_text, transform=ax.transAxes, ha="center", va="center", color="0.4")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel("per-silo privacy budget ε (log scale)")
        ax.set_ylabel("test accuracy")
        ax.set_title(title or note.strip())
        return ax.figure
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
        at = sorted((t for t in table if t["eps"] == zoom_eps), key=lambda t: t["mean"])
        # the x range covers the methods within 25 % of the best one; a method outside it is drawn at the
        # edge (an arrow marker) with its value in its label, so that one outlier cannot squash the rest
        best_t = at[0] if lower_is_better(rows[0].metric) else at[-1]
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
        zax.set_xlabel(metric_label(rows[0].metric).split(" (")[0], fontsize=8.5)
        zax.set_title("zoom: ε = ∞ (non-private)" if math.isinf(zoom_eps) else f"zoom: ε = {zoom_eps:g}",
                      fontsize=10)
        zax.tick_params(axis="x", labelsize=7.5)
        zax.grid(alpha=0.3)
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


def plot_lambda_sweep(rows: Sequence["RunResult"], eps_values: Sequence[float], *, method: str = "mrmtl",
                      title: str | None = None, note: str = ""):
    """Fig. 5: ``method``'s test metric against λ (log scale) for each ε, with the Local and FedAvg endpoints.

    One colour, line style and marker per ε (:func:`eps_style`); thin dotted/dashed horizontal lines are
    Local and FedAvg at that ε (best η); a star marks the best λ.  Bands are ±1 standard deviation
    (ddof = 1) over repeats (or seeds).  The legend sits under the axes.
    """
    import matplotlib.pyplot as plt

    rows = list(rows)
    table = {(t["method"], t["eps"]): t for t in best_lambda_table(r for r in rows if r.config.method
                                                                   in ("local", "fedavg"))}
    lower = lower_is_better(rows[0].metric)
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 5.0))
    palette = ["tab:red", "tab:orange", "tab:green", "tab:blue", "tab:purple", "tab:brown", "tab:pink", "tab:olive"]
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
        ax.axhspan(fedavg[0] - 2 * fedavg[1], fedavg[0] + 2 * fedavg[1], color="tab:orange", alpha=0.18,
                   label="trained FedAvg ± 2 SE")
    if theory_fedavg is not None:
        ax.axhline(theory_fedavg, color="tab:orange", ls="--", lw=1, label="closed-form FedAvg")
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


def plot_rotated_masked_examples(data: "FederatedData", *, silos: Sequence[int] | None = None, per_silo: int = 2,
                                 show_mask: bool = False, title: str | None = None):
    """Fig. A1 (MR-MTL paper, App. C.1): example images of rotated & masked silos, one column per silo.

    ``data`` is a rotated & masked dataset (:mod:`fedtrain.data.rotated_masked`; its ``info`` holds the rotation
    groups and masks).  Each column shows ``per_silo`` training images of one silo, which share the silo's
    mask and rotation; the column title gives the silo, its rotation and its share of masked pixels, each image
    its label.  ``silos`` defaults to 6 silos spread over the index range (so every rotation group shows);
    ``show_mask`` adds a bottom row with the silo's mask (white = masked).
    """
    import matplotlib.pyplot as plt

    info = data.info or {}
    if data.input_shape is None or "rotation_degrees" not in info or "masks" not in info:
        raise ValueError("data must be a rotated & masked image dataset (input_shape set, info with "
                         "'rotation_degrees' and 'masks'; see fedtrain.data.rotated_masked)")
    k_all = data.num_silos
    if silos is None:
        silos = sorted({int(round(v)) for v in np.linspace(0, k_all - 1, min(6, k_all))})
    silos = [int(s) for s in silos]
    if not silos or any(s < 0 or s >= k_all for s in silos):
        raise ValueError(f"silos must be a non-empty list of silo indices in 0..{k_all - 1} (got {silos})")
    if isinstance(per_silo, bool) or not isinstance(per_silo, (int, np.integer)) or per_silo < 1:
        raise ValueError(f"per_silo must be an integer >= 1 (got {per_silo!r})")
    c, h, w = data.input_shape
    rows = int(per_silo) + int(bool(show_mask))
    # at most the book's column wide (COLUMN_WIDTH_IN), so that its 8-9 pt labels are drawn 11-12 px tall on the
    # page rather than shrunk with a wider figure; square image panels
    width = min(COLUMN_WIDTH_IN, 1.1 * len(silos) + 0.6)
    panel = (width - 0.6) / len(silos)
    fig, axes = plt.subplots(rows, len(silos), figsize=(width, panel * rows + 1.9), squeeze=False)
    for j, k in enumerate(silos):
        images = data.train_x[k].reshape(-1, c, h, w)
        mask = np.asarray(info["masks"][k])
        for i in range(rows):
            ax = axes[i, j]
            ax.set_xticks([])
            ax.set_yticks([])
            if i < per_silo:
                if i >= images.shape[0]:
                    ax.axis("off")
                    continue
                img = images[i]
                ax.imshow(img[0] if c == 1 else np.transpose(img, (1, 2, 0)), cmap="gray" if c == 1 else None,
                          vmin=0.0, vmax=1.0, interpolation="nearest")
                ax.set_xlabel(f"label {int(data.train_y[k][i])}", fontsize=8, labelpad=2)
            else:
                ax.imshow(mask, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
                ax.set_xlabel("silo mask", fontsize=8, labelpad=2)
            if j == 0:
                ax.set_ylabel("mask" if i >= per_silo else f"image {i + 1}", fontsize=8)
        axes[0, j].set_title(f"silo {k}\n{info['rotation_degrees'][k]}° rotation\n{mask.mean():.0%} masked",
                             fontsize=8)
    kind = "real data" if data.real else "synthetic stand-in"
    ratio = info.get("mask_ratio")
    patch = info.get("patch_size", 2)
    fig.suptitle(title or f"Rotated & masked silos (Fig. A1): {data.name} ({kind}), {h}×{w} images,\n"
                 f"{patch}×{patch} white patches, mask ratio {ratio:g} (patch probability); "
                 "images in a column share the silo's mask", fontsize=9)
    fig.tight_layout()
    return fig


def plot_mask_ratio_sweep(rows: Sequence["RunResult"], eps: float, *, note: str = "", ax=None):
    """Fig. 6 (MR-MTL paper): test accuracy (mean ± std over seeds) against the silos' mask ratio at one privacy
    level ``eps``, for Local, FedAvg, IFCA, MR-MTL and the IFCA-warm-started variants (each at its best (λ, η),
    :func:`fedtrain.analysis.best_by_setting` with :func:`fedtrain.analysis.warm_start_label`).

    ``rows``: runs of a rotated & masked dataset whose ``dataset_options`` hold ``mask_ratio``.  Warm-started
    variants are dashed, in their base method's colour.  The title names the data (real or stand-in), the
    settings and ``note``.
    """
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r.config.eps == eps]
    if not rows:
        raise ValueError(f"eps must be a privacy level of rows (got {eps!r})")
    table = best_by_setting(rows, lambda c: float(c.dataset_options["mask_ratio"]), label=warm_start_label)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(8.6, 4.4))
    labels = list(OrderedDict.fromkeys(t["label"] for t in table.values()))
    for j, lab in enumerate(labels):
        ts = sorted((t for t in table.values() if t["label"] == lab), key=lambda t: t["setting"])
        x = np.array([t["setting"] for t in ts]) + 0.006 * (j - (len(labels) - 1) / 2)
        warm = "→" in lab
        color = method_color("mrmtl" if lab.endswith("MR-MTL") else "local") if warm else method_color(ts[0]["method"])
        ax.errorbar(x, [t["mean"] for t in ts], yerr=[t["std"] for t in ts], marker="o", ms=4, capsize=3,
                    color=color, ls="--" if warm else "-", label=lab)
    ratios = sorted({t["setting"] for t in table.values()})
    ax.set_xticks(ratios)
    ax.set_xlabel("mask ratio (probability that a 2×2 patch of a silo's mask is white)")
    ax.set_ylabel(metric_label(rows[0].metric))
    ax.set_title(f"{data_label(rows)}, {_eps_text(eps)}\n{_settings(rows)}; λ, η tuned per point; "
                 f"mean ± std over seeds{note}", fontsize=10)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(alpha=0.3)
    if fig is not None:
        fig.tight_layout()
        return fig
    return ax.figure


def _foot(fig, text: str, fontsize: float = 8.0) -> str:
    """``text`` wrapped to the figure's width at ``fontsize`` (about 0.5 em a character), for a foot line."""
    import textwrap

    per_line = max(40, int(fig.get_size_inches()[0] * 72 / (0.5 * fontsize)) - 8)
    return textwrap.fill(text, per_line)


def _setting_foot(fig, rows: Sequence["RunResult"], note: str) -> None:
    """The Fig. 6 figures' foot line below the legend: the setting of ``rows`` (:func:`fig6_setting_text`) and
    ``note``, wrapped to the figure's width."""
    # 8 pt: at the column's width that is 11 px on the page (7 pt read about 6-9 px, too small)
    fig.text(0.5, -0.17, _foot(fig, (fig6_setting_text(rows) if rows else "no runs") + note), ha="center", va="top",
             fontsize=8)


def fig6_setting_text(rows: Sequence["RunResult"]) -> str:
    """The setting of Fig. 6 runs, for the figure and its caption: data (real or stand-in), silos, training images
    per silo, rotation groups, T, η, B, C, δ, the ε values, the accountant and the adjacency (from the stored
    rows' privacy records), and the seeds present."""
    rows = list(rows)
    if not rows:
        raise ValueError("rows must hold at least one run")
    c, d = rows[0].config, rows[0].data or {}
    silos = d.get("num_silos")
    per = c.dataset_options.get("train_per_silo") or (d.get("train_size") // silos if silos else None)
    groups = (d.get("info") or {}).get("num_groups")
    eps = sorted({float(r.config.eps) for r in rows})
    accountants = sorted({str(r.accountant) for r in rows if r.accountant and math.isfinite(r.config.eps)})
    adjacency = sorted({str(r.adjacency) for r in rows if r.adjacency and math.isfinite(r.config.eps)})
    deltas = sorted({float(r.config.delta) for r in rows})
    seeds = sorted({int(r.config.seed) for r in rows})
    eps_text = ", ".join("∞ (no DP)" if math.isinf(e) else f"{e:g}" for e in eps)
    return (f"{data_label(rows)}: {silos} silos{f' in {groups} rotation groups' if groups else ''}, "
            f"{per} training images per silo; T={c.rounds} rounds, η={c.lr:g}, B={c.batch_size}, C={c.clip:g}, "
            f"δ={'/'.join(f'{x:.0e}' for x in deltas)}, ε per silo ∈ {{{eps_text}}}"
            + (f", {'/'.join(accountants).upper()} accountant, adjacency: {'; '.join(adjacency)}"
               if accountants else "")
            + f"; seeds present: {', '.join(map(str, seeds))}")


#: Fig. 6's kinds of runs (:data:`fedtrain.fig6_checks.KINDS`): colour (the base method's) and line style (dashed:
#: IFCA-warm-started).
_FIG6_STYLE = {"Local": ("local", "-"), "FedAvg": ("fedavg", "-"), "IFCA": ("ifca", "-"), "MR-MTL": ("mrmtl", "-"),
               "IFCA → Local": ("local", "--"), "IFCA → MR-MTL": ("mrmtl", "--")}


def _eps_panels(rows: Sequence["RunResult"], eps_values: "Sequence[float] | None") -> list[float]:
    """The panels' privacy levels: ``eps_values``, else those of ``rows`` (which must then hold a run)."""
    present = sorted({float(r.config.eps) for r in rows})
    eps_values = present if eps_values is None else [float(e) for e in eps_values]
    if not eps_values:
        raise ValueError("rows must hold at least one run (or name the panels with eps_values)")
    return eps_values


def _seed_count_text(ns: "Sequence[int]") -> str:
    ns = sorted(set(ns))
    if not ns:
        return "no runs"
    return (f"{ns[0]} seed{'s' if ns[0] > 1 else ''} per point" if len(ns) == 1
            else f"{ns[0]}–{ns[-1]} seeds per point")


def plot_fig6(rows: Sequence["RunResult"], *, eps_values: "Sequence[float] | None" = None, note: str = "",
              empty_text: str = "no runs yet"):
    """Fig. 6 (MR-MTL paper, Sec. 6): test accuracy against the silos' mask ratio, one panel per privacy level
    (``eps_values``, default those of ``rows``; ``math.inf``: without DP), a line per kind of run
    (:data:`fedtrain.fig6_checks.KINDS`: Local, FedAvg, IFCA, MR-MTL, IFCA → Local = ``ifca-mrmtl`` at λ = 0,
    IFCA → MR-MTL), each point at its best λ (:func:`fedtrain.fig6_checks.fig6_table`; the best λ of MR-MTL and of
    IFCA → MR-MTL is written next to its point).

    A point is the mean over the seeds present, with ± 1 sd over seeds as its error bar when it has two or more;
    a point of one seed is drawn as an open marker without error bar, and every panel's title says how many seeds
    its points have.  A panel with no run says so (``empty_text``).  The figure's foot states the setting
    (:func:`fig6_setting_text`) and ``note``.  ``rows`` should hold whole seeds of the grid
    (:func:`fedtrain.fig6_checks.complete_blocks`), so that each best λ is chosen on the whole λ grid.
    """
    import matplotlib.pyplot as plt


    rows = list(rows)
    eps_values = _eps_panels(rows, eps_values)
    fig, axes = plt.subplots(1, len(eps_values), figsize=(COLUMN_WIDTH_IN, 3.5), sharey=True, squeeze=False)
    ratios_all = sorted({float(r.config.dataset_options.get("mask_ratio", 0.0)) for r in rows}) or [0.0]
    for ax, eps in zip(axes[0], eps_values):
        at = [r for r in rows if r.config.eps == eps]
        ax.set_title(_eps_text(eps).replace("ε=", "ε = ") + (" per silo" if math.isfinite(eps) else ""))
        ax.set_xlabel("mask ratio (fraction of 2×2 patches whitened)")
        ax.grid(alpha=0.3)
        if not at:
            ax.text(0.5, 0.5, empty_text, transform=ax.transAxes, ha="center", va="center", color="0.4")
            ax.set_xticks(ratios_all)
            ax.set_xlim(min(ratios_all) - 0.08, max(ratios_all) + 0.12)
            continue
        table = fig6_table(at, eps)
        ns = []
        kinds = [k for k in KINDS if any(key[0] == k for key in table)]
        for j, kind in enumerate(kinds):
            cells = sorted((cell for (k, _), cell in table.items() if k == kind), key=lambda t: t["setting"])
            method, ls = _FIG6_STYLE[kind]
            color = method_color(method)
            x = np.array([t["setting"] for t in cells]) + 0.005 * (j - (len(kinds) - 1) / 2)
            y = np.array([t["mean"] for t in cells])
            ax.plot(x, y, ls=ls, color=color, label=kind, lw=1.4)
            for xi, t in zip(x, cells):
                ns.append(t["n"])
                filled = t["n"] >= 2
                ax.errorbar([xi], [t["mean"]], yerr=[t["std"]] if filled else None, fmt="o", ms=4.5, capsize=2.5,
                            color=color, mfc=color if filled else "white", mec=color)
                if kind in ("MR-MTL", "IFCA → MR-MTL"):
                    ax.annotate(f"λ={t['lam']:g}", (xi, t["mean"]), textcoords="offset points",
                                xytext=(5, 4 if kind == "MR-MTL" else -10), fontsize=8, color=color)
        ax.set_title(ax.get_title() + f"\n{_seed_count_text(ns)}", fontsize=9)
        ax.set_xticks(ratios_all)
        ax.set_xlim(min(ratios_all) - 0.08, max(ratios_all) + 0.12)
    axes[0, 0].set_ylabel("test accuracy (fraction correct, mean over silos)")
    from matplotlib.lines import Line2D

    handles, labels = [], []
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h), labels.append(lab)
    handles += [Line2D([], [], marker="o", ls="", color="0.3"), Line2D([], [], marker="o", ls="", color="0.3",
                                                                        mfc="white")]
    labels += ["mean ± sd over seeds", "one seed"]
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, frameon=False, fontsize=8)
    _setting_foot(fig, rows, note)
    fig.tight_layout()
    return fig


def plot_fig6_lambda_profile(rows: Sequence["RunResult"], *, eps_values: "Sequence[float] | None" = None,
                             note: str = "", empty_text: str = "no runs yet"):
    """Test accuracy against λ for MR-MTL (solid, with Local as its λ = 0) and IFCA-warm-started MR-MTL (dashed,
    with IFCA → Local as its λ = 0), a line per mask ratio, one panel per privacy level: whether the best λ
    (starred) is located, Fig. 6's check (d) (:func:`fedtrain.fig6_checks.locate_lambda`).  λ is on a log axis,
    λ = 0 to the left of it; each panel's ticks are the λ it has, on one x range shared by the panels.

    Points are means over the seeds present, an error bar of ± 1 sd where a point has two or more; each panel's
    title says how many seeds its points have.  The figure's foot states the setting (:func:`fig6_setting_text`)."""
    import matplotlib.pyplot as plt


    rows = [r for r in rows if r.config.method in ("local", "mrmtl", "ifca-mrmtl")]
    eps_values = _eps_panels(rows, eps_values)
    lams = sorted({float(r.config.lam) for r in rows if r.config.lam > 0})
    if not lams and rows:
        raise ValueError("rows must hold MR-MTL or IFCA-warm-started MR-MTL runs at some λ > 0")
    lams = lams or [1.0]
    zero = math.log10(lams[0]) - 0.8  # where λ = 0 sits on the log axis
    pos = lambda lam: math.log10(lam) if lam > 0 else zero  # noqa: E731
    ratios = sorted({float(r.config.dataset_options.get("mask_ratio", 0.0)) for r in rows})
    cmap = plt.get_cmap("viridis")
    # viridis up to 0.6 (3:1 contrast on white); its yellow end is unreadable as a line
    shade = {r: cmap(0.6 * i / max(1, len(ratios) - 1)) for i, r in enumerate(ratios)}
    fig, axes = plt.subplots(1, len(eps_values), figsize=(COLUMN_WIDTH_IN, 3.5), sharey=False, squeeze=False)
    for ax, eps in zip(axes[0], eps_values):
        ns = []
        ax.set_title(_eps_text(eps).replace("ε=", "ε = ") + (" per silo" if math.isfinite(eps) else ""))
        for ratio in ratios:
            at = [r for r in rows if r.config.eps == eps
                  and float(r.config.dataset_options.get("mask_ratio", 0.0)) == ratio]
            for family, zero_method, ls in (("mrmtl", "local", "-"), ("ifca-mrmtl", "ifca-mrmtl", "--")):
                pts = {}
                for r in at:
                    m, lam = r.config.method, float(r.config.lam)
                    if m == family or (lam == 0 and m == zero_method):
                        pts.setdefault(lam, []).append(r)
                pts = {lam: rs for lam, rs in pts.items() if lam > 0 or rs[0].config.method == zero_method}
                if not pts:
                    continue
                xs = sorted(pts)
                stats = [seed_stats(pts[lam]) for lam in xs]
                ns += [s[2] for s in stats]
                y = np.array([s[0] for s in stats])
                err = [s[1] if s[2] >= 2 else 0.0 for s in stats]
                ax.errorbar([pos(lam) for lam in xs], y, yerr=err, ls=ls, marker="o", ms=3.5, capsize=2,
                            color=shade[ratio], lw=1.2)
                best = int(np.nanargmax(y))
                ax.plot([pos(xs[best])], [y[best]], marker="*", ms=11, color=shade[ratio], mec="black", mew=0.5,
                        ls="")
        if not ns:
            ax.text(0.5, 0.5, empty_text, transform=ax.transAxes, ha="center", va="center", color="0.4")
        # ticks at the λ this panel has (a cell's further λ only where it was run), one x range for all panels
        here = sorted({float(r.config.lam) for r in rows if r.config.eps == eps and r.config.lam > 0}) or lams
        ax.set_xticks([zero] + [math.log10(lam) for lam in here], ["0"] + [f"{lam:g}" for lam in here])
        ax.set_xlim(zero - 0.35, math.log10(lams[-1]) + 0.35)
        ax.axvline((zero + math.log10(lams[0])) / 2, color="0.6", lw=0.8, ls=":")
        ax.set_xlabel("λ (log scale; 0: Local / IFCA → Local)")
        ax.grid(alpha=0.3)
        ax.set_title(ax.get_title() + f"\n{_seed_count_text(ns)}", fontsize=9)
    axes[0, 0].set_ylabel("test accuracy (fraction correct, mean over silos)")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=shade[r], lw=2) for r in ratios]
    labels = [f"mask ratio {r:g}" for r in ratios]
    handles += [Line2D([], [], color="0.3", ls="-"), Line2D([], [], color="0.3", ls="--"),
                Line2D([], [], marker="*", ms=10, color="0.3", mec="black", ls="")]
    labels += ["MR-MTL (λ = 0: Local)", "IFCA → MR-MTL (λ = 0: IFCA → Local)", "best λ of the line"]
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, frameon=False, fontsize=8)
    _setting_foot(fig, rows, note)
    fig.tight_layout()
    return fig


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
        ax.hist(s[m], edges, alpha=0.6, color="tab:orange", hatch="//", label="canary in")
        ax.set_title(f"{label}\nε ≥ {a.eps_lower:.2f} (claim {a.eps_claimed:.2f})", fontsize=9)
        ax.set_xlabel("weight on the canary's dimension")
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("canaries (count)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig


# --------------------------------------------------------------------------------------------------
# the book's figures, by name: one call regenerates a figure from the committed results store
# --------------------------------------------------------------------------------------------------
class BookFigure:
    """A figure of the book: the matplotlib ``figure``, the ``rows`` it plots, its ``provenance`` (which
    store file, engine version, commit and scale it read; for the caption's footnote), the ``settings``
    of the runs (for the caption) and ``extra`` (what the plot function computed, e.g. a summary)."""

    def __init__(self, figure, rows, provenance: str, settings: str, extra: Any = None):
        self.figure, self.rows, self.provenance, self.settings, self.extra = figure, rows, provenance, settings, extra

    def savefig(self, path, **kw) -> None:
        """Write the figure (``Figure.savefig`` at twice the screen density unless ``dpi`` is given)."""
        kw.setdefault("dpi", 200)
        kw.setdefault("bbox_inches", "tight")
        self.figure.savefig(path, **kw)


def _store_figure(store, fig_name: str, dataset: str):
    rows = figure_rows(store, fig_name, dataset)
    return rows, "; ".join(store_note(store, dataset).split("\n"))


def _fig_local_fedavg(store):
    rows, prov = _store_figure(store, "fig2", "school")
    return BookFigure(plot_training_curves(rows), rows, prov, settings_text(rows))


def _fig_lambda(store, dataset):
    rows, prov = _store_figure(store, "fig5" if dataset == "school" else "fig3", dataset)
    eps_values = sorted({r.config.eps for r in rows})
    return BookFigure(plot_lambda_sweep(rows, eps_values), rows, prov, settings_text(rows))


def _fig_privacy_utility_school(store):
    rows, prov = _store_figure(store, "fig3", "school")
    zoom = max(e for e in {r.config.eps for r in rows} if math.isfinite(e))
    return BookFigure(plot_privacy_utility(rows, zoom_eps=zoom), rows, prov, settings_text(rows))


def _fig_privacy_utility_standins(store):
    panels = {name: figure_rows(store, "fig3", name) for name in ("vehicle-standin", "gleam-standin")}
    prov = " / ".join("; ".join(store_note(store, name).split("\n")) for name in panels)
    settings = "; ".join(f"{name}: {settings_text(rows)}" for name, rows in panels.items())
    return BookFigure(plot_privacy_utility_panels(panels), panels, prov, settings)


def _fig_overhead(store):
    rows, prov = _store_figure(store, "fig4", "vehicle-standin")
    return BookFigure(plot_privacy_utility(rows), rows, prov, settings_text(rows))


def _fig_theory(store):
    trained = theory_rows(store)
    fig, summary = plot_theory_meets_training(trained, num_silos=THEORY_SETUP["num_silos"], tau=THEORY_SETUP["tau"],
                                              n=THEORY_SETUP["n"], sigma=THEORY_SETUP["sigma"])
    return BookFigure(fig, trained, "; ".join(store_note(store, "theory").split("\n")),
                      f"K={THEORY_SETUP['num_silos']} silos, n={THEORY_SETUP['n']}", extra=summary)


def _fig_audit_scores(_store=None):
    from fedtrain import audit
    # the privacy-audit chapter's setting: 3 silos of 100 records, 4 features, full batches, claimed ε = 2
    base = tiny_federated("regression", num_silos=3, dim=4, n_range=(100, 100), seed=0)
    cfg = RunConfig("tiny", "local", eps=2.0, delta=1e-5, lam=1.0, lr=0.5, rounds=20, batch_size=4096)
    honest = audit.audit_one_run(cfg, base, num_canaries=1000)
    with audit.broken_engine(noise_factor=0.2):
        broken = audit.audit_one_run(cfg, base, num_canaries=1000)
    fig = plot_audit_scores([("engine as built", honest), ("noise × 0.2 (broken)", broken)])
    return BookFigure(fig, None, "computed when drawn: fedtrain.testing.tiny_federated (synthetic), no stored results",
                      "R=20 rounds, full batches, C=1, δ=1e-05, 1,000 canaries", extra={"honest": honest, "broken": broken})


#: The book's figures drawn by :func:`book_figure` (all but ``audit-scores`` from the committed results store):
#: name → (chapter, what it shows).
BOOK_FIGURES: dict[str, tuple[str, str]] = {
    "local-vs-fedavg": ("empirical_local_vs_fedavg", "Fig. 2: Local, FedAvg and finetuning on School"),
    "lambda-school": ("empirical_local_vs_fedavg", "Fig. 5: MR-MTL against λ on School"),
    "privacy-utility-school": ("empirical_privacy_utility", "Fig. 3 (b): every method against ε on School"),
    "privacy-utility-standins": ("empirical_privacy_utility", "Fig. 3 (a, c): the Vehicle and GLEAM stand-ins"),
    "lambda-vehicle-standin": ("empirical_privacy_utility", "Fig. 5 on the Vehicle stand-in"),
    "lambda-gleam-standin": ("empirical_privacy_utility", "Fig. 5 on the GLEAM stand-in"),
    "overhead": ("empirical_privacy_utility", "Fig. 4: the privacy overhead of Ditto and IFCA"),
    "theory-meets-training": ("theory_meets_training", "closed-form E(λ) next to trained MR-MTL"),
    "audit-scores": ("privacy_audit", "the one-run audit's canary scores, engine as built and broken"),
}

_BOOK_FIGURE_MAKERS: dict[str, Callable[[Any], BookFigure]] = {
    "local-vs-fedavg": _fig_local_fedavg,
    "lambda-school": lambda st: _fig_lambda(st, "school"),
    "privacy-utility-school": _fig_privacy_utility_school,
    "privacy-utility-standins": _fig_privacy_utility_standins,
    "lambda-vehicle-standin": lambda st: _fig_lambda(st, "vehicle-standin"),
    "lambda-gleam-standin": lambda st: _fig_lambda(st, "gleam-standin"),
    "overhead": _fig_overhead,
    "theory-meets-training": _fig_theory,
    "audit-scores": _fig_audit_scores,
}
_NEEDS_NO_STORE = {"audit-scores"}


def book_figure(name: str, store=None) -> BookFigure:
    """Draw the book's figure ``name`` (a key of :data:`BOOK_FIGURES`) from the committed results store
    (``store``, default :func:`fedtrain.book_results.committed_store`), as the chapter shows it.

    Example (the command under each figure of the book): ``python -m fedtrain.figures local-vs-fedavg``
    writes ``local-vs-fedavg.png``.
    """
    if name not in _BOOK_FIGURE_MAKERS:
        raise ValueError(f"name must be one of {sorted(_BOOK_FIGURE_MAKERS)} (got {name!r})")
    if store is None and name not in _NEEDS_NO_STORE:
        store = committed_store()
    return _BOOK_FIGURE_MAKERS[name](store)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fedtrain.figures NAME [-o FILE]``: write the book's figure NAME as a PNG (default NAME.png)."""
    import argparse

    import matplotlib

    matplotlib.use("Agg")
    p = argparse.ArgumentParser(prog="python -m fedtrain.figures", description=main.__doc__)
    p.add_argument("name", choices=sorted(BOOK_FIGURES))
    p.add_argument("-o", "--output", default=None, help="output file (default: NAME.png)")
    args = p.parse_args(argv)
    use_book_style()
    out = args.output or f"{args.name}.png"
    book_figure(args.name).savefig(out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
