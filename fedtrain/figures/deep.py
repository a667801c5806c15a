"""The plots of the deep-models chapter (MR-MTL paper, Fig. 6 and App. C.1's Fig. A1): rotated & masked silos,
accuracy against the mask ratio, and MR-MTL against λ on the real-image grid.

Fig. 6's cells (each kind of run at its best λ) come from :mod:`fedtrain.fig6_checks`; each figure's foot line
states the setting of the runs it plots (:func:`fig6_setting_text`).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from typing import TYPE_CHECKING, Sequence

import numpy as np

from fedtrain.analysis import best_by_setting, seed_stats, warm_start_label
from fedtrain.fig6_checks import KINDS, fig6_table
from fedtrain.figures.style import (COLUMN_WIDTH_IN, _eps_text, _foot, _settings, data_label, method_color,
                                    metric_label)

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.data.base import FederatedData
    from fedtrain.engine import RunResult

__all__ = ["plot_rotated_masked_examples", "plot_mask_ratio_sweep", "fig6_setting_text", "plot_fig6",
           "plot_fig6_lambda_profile"]


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


