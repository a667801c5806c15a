"""The book's figure style and the helpers every chapter's plots share.

Figures are drawn for the book's text column (:data:`COLUMN_WIDTH_IN` inches wide, shown at twice the pixel
density, :func:`use_book_style`).  Each privacy level ε has its own line style and marker (:func:`eps_style`), ε
axes place the non-private point one slot right of the largest budget (:func:`eps_positions`, :func:`eps_axis`), log
axes label their minor ticks (:func:`readable_log_axis`), and method colours come from the method registry
(:mod:`fedtrain.methods.registry`).  The caption texts (:func:`settings_text`, :func:`runs_text`) state the settings
of the runs a figure plots.
"""
from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Sequence

import numpy as np

from fedtrain.methods.registry import method_spec
from fedtrain.sweep import _split_seed

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.engine import RunResult

__all__ = ["COLUMN_WIDTH_IN", "use_book_style", "eps_style", "readable_log_axis", "method_color", "metric_label",
           "data_label", "runs_text", "settings_text", "eps_positions", "eps_axis"]

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



def _foot(fig, text: str, fontsize: float = 8.0) -> str:
    """``text`` wrapped to the figure's width at ``fontsize`` (about 0.5 em a character), for a foot line."""
    per_line = max(40, int(fig.get_size_inches()[0] * 72 / (0.5 * fontsize)) - 8)
    return textwrap.fill(text, per_line)

