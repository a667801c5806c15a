"""Plots of the empirical chapters (MR-MTL paper, Figs. 2-5, Fig. A1's example images) and of theory meeting training.

Every plot function takes :class:`~fedtrain.engine.RunResult` objects (as returned by
:func:`fedtrain.sweep.run_sweep`) or arrays, and returns a matplotlib :class:`~matplotlib.figure.Figure`.
What is plotted is computed by :mod:`fedtrain.analysis` (best λ, curves, privacy tables, theory
summaries); method labels and colours come from the method registry (:mod:`fedtrain.methods.registry`).
Titles say which data (real or synthetic stand-in) and which settings a figure shows.
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
from fedtrain.methods.registry import method_spec

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.data.base import FederatedData
    from fedtrain.engine import RunResult

__all__ = [
    "plot_mask_ratio_sweep",
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
    from fedtrain.sweep import _split_seed

    pairs = {(r.config.seed, _split_seed(r.config)) for r in rows}
    splits = {s for _, s in pairs}
    if len(splits) > 1:
        return f"{len({p for p in pairs})} repeats"
    return f"{len({s for s, _ in pairs})} seeds (one split)"


def _settings(rows: Sequence["RunResult"]) -> str:
    c = rows[0].config
    delta = rows[0].delta
    d = f", δ={float(delta[0]):.0e}" if delta is not None and len(delta) else ""
    div = sum(r.diverged for r in rows)
    warn = f"; {div} diverged run(s) left out" if div else ""
    return f"T={c.rounds} rounds, B={c.batch_size}, c={c.clip:g}{d}, {runs_text(rows)}{warn}"


def plot_training_curves(rows: Sequence["RunResult"], *, title: str | None = None, note: str = ""):
    """Fig. 2: test metric against training round, one colour per method, solid = private, dashed = non-private.

    Bands are ±1 standard deviation (ddof = 1) over repeats (or seeds).
    """
    import matplotlib.pyplot as plt

    rows = list(rows)
    curves = curves_by_method(rows)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (label, eps), c in curves.items():
        color = method_color(c["method"])
        ls = "--" if math.isinf(eps) else "-"
        ax.plot(c["rounds"], c["mean"], ls, color=color, label=f"{label}, {_eps_text(eps)}")
        ax.fill_between(c["rounds"], c["mean"] - c["std"], c["mean"] + c["std"], color=color, alpha=0.15)
    metric = rows[0].metric
    ax.set_xlabel("training round")
    ax.set_ylabel(metric_label(metric))
    ax.set_title(title or f"{data_label(rows)}\n{_settings(rows)}{note}", fontsize=10)
    ax.legend(fontsize=8, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def eps_positions(eps_values: Sequence[float]) -> dict[float, float]:
    """x positions of Fig. 3's ε values on a log axis: finite ε at themselves, ε = ∞ (non-private) one
    slot of 2.5× to the right of the largest finite ε (1.0 if there is none)."""
    finite = sorted(float(e) for e in eps_values if math.isfinite(float(e)))
    pos = {e: e for e in finite}
    if any(math.isinf(float(e)) for e in eps_values):
        pos[math.inf] = 2.5 * finite[-1] if finite else 1.0
    return pos


def plot_privacy_utility(rows: Sequence["RunResult"], *, title: str | None = None, note: str = "",
                         ax=None, zoom_eps: float | None = None):
    """Fig. 3 / Fig. 4: test metric (mean ± sd over repeats or seeds) against per-silo ε, every method at its
    best (λ, η).

    ε is on a log axis (:func:`eps_positions`); the non-private point sits right of a dashed separator,
    joined to the curve by a dotted segment.  Error bars are ±1 standard deviation (ddof = 1) over repeats (or
    seeds); methods are offset slightly along x so that their bars do not overlap.  ``zoom_eps`` (one of the ε in
    ``rows``; only when ``ax`` is None) adds a panel that zooms in on that ε, one row per method sorted
    by the metric, so that methods within a few percent of each other can be told apart.
    """
    import matplotlib.pyplot as plt

    rows = list(rows)
    table = best_lambda_table(rows)
    eps_values = sorted({t["eps"] for t in table})
    pos = eps_positions(eps_values)
    if zoom_eps is not None and zoom_eps not in eps_values:
        raise ValueError(f"zoom_eps must be one of the ε in rows {eps_values} (got {zoom_eps!r})")
    fig = None
    zax = None
    if ax is None and zoom_eps is not None:
        fig, (ax, zax) = plt.subplots(1, 2, figsize=(9.5, 5.4), gridspec_kw={"width_ratios": [2.2, 1]})
    elif ax is None:
        fig, ax = plt.subplots(figsize=(7, 4.4))
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
    finite = [e for e in eps_values if math.isfinite(e)]
    ax.set_xscale("log")
    ax.set_xticks([pos[e] for e in eps_values])
    ax.set_xticklabels(["∞\n(non-private)" if math.isinf(e) else f"{e:g}" for e in eps_values])
    ax.minorticks_off()
    if finite and math.inf in pos:
        ax.axvline(np.sqrt(finite[-1] * pos[math.inf]), color="0.5", ls="--", lw=0.8)
    if lower_is_better(rows[0].metric):  # errors spanning multiples: log axis
        ax.set_yscale("log")
    ax.set_xlabel("per-silo privacy budget ε (log scale; δ fixed per dataset)")
    ax.set_ylabel(metric_label(rows[0].metric))
    ax.set_title(title or f"{data_label(rows)}\n{_settings(rows)}; λ, η tuned per point; mean ± sd (ddof=1){note}",
                 fontsize=10)
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
        zax.set_yticklabels(names, fontsize=8)
        zax.set_ylim(-0.6, len(at) - 0.4)
        zax.set_xlabel(metric_label(rows[0].metric), fontsize=9)
        zax.set_title("zoom: ε = ∞ (non-private)" if math.isinf(zoom_eps) else f"zoom: ε = {zoom_eps:g}",
                      fontsize=10)
        zax.tick_params(axis="x", labelsize=8)
        zax.grid(alpha=0.3)
        handles, names = ax.get_legend_handles_labels()
        fig.legend(handles, names, fontsize=8, loc="lower center", ncol=min(len(names), 5), frameon=False)
        fig.tight_layout(rect=(0, 0.08 + 0.04 * ((len(names) - 1) // 5), 1, 1))
        return fig
    if len(labels) > 4:  # many methods: the legend goes beside the axes so that it hides no data
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
        if fig is not None:
            fig.set_size_inches(8.8, 4.4)
    else:
        ax.legend(fontsize=8, loc="best", framealpha=0.85)
    ax.grid(alpha=0.3)
    if fig is not None:
        fig.tight_layout()
        return fig
    return ax.figure


def plot_lambda_sweep(rows: Sequence["RunResult"], eps_values: Sequence[float], *, method: str = "mrmtl",
                      title: str | None = None, note: str = ""):
    """Fig. 5: ``method``'s test metric against λ (log scale) for each ε, with the Local and FedAvg endpoints.

    One colour per ε; dotted/dashed horizontal lines are Local and FedAvg at that ε (best η); the
    marker ★ is the best λ.  Bands are ±1 standard deviation (ddof = 1) over repeats (or seeds).
    """
    import matplotlib.pyplot as plt

    rows = list(rows)
    table = {(t["method"], t["eps"]): t for t in best_lambda_table(r for r in rows if r.config.method
                                                                   in ("local", "fedavg"))}
    lower = lower_is_better(rows[0].metric)
    fig, ax = plt.subplots(figsize=(8.5, 4.4))
    palette = ["tab:red", "tab:orange", "tab:green", "tab:blue", "tab:purple", "tab:brown", "tab:pink", "tab:olive"]
    finite = [e for e in eps_values if not math.isinf(e)]
    for i, eps in enumerate(eps_values):
        color = "black" if math.isinf(eps) else palette[finite.index(eps) % len(palette)]
        cur = lambda_curve(rows, eps, method=method)
        ok = cur["lam"] > 0
        lam, mean, std = cur["lam"][ok], cur["mean"][ok], cur["std"][ok]
        ax.plot(lam, mean, "o-", color=color, ms=4, label=f"{method_spec(method).label}, {_eps_text(eps)}")
        ax.fill_between(lam, mean - std, mean + std, color=color, alpha=0.15)
        b = int(np.argmin(mean) if lower else np.argmax(mean))
        ax.plot(lam[b], mean[b], "*", color=color, ms=14)
        for m, ls in (("local", ":"), ("fedavg", "--")):
            t = table.get((m, float(eps)))
            if t is not None:
                ax.axhline(t["mean"], color=color, ls=ls, lw=1.2, alpha=0.8)
    ax.plot([], [], "k:", label="Local (λ=0)")
    ax.plot([], [], "k--", label="FedAvg")
    ax.set_xscale("log")
    if lower:  # errors of different privacy levels differ by multiples: a log axis keeps all visible
        ax.set_yscale("log")
    ax.set_xlabel("λ (MR-MTL regularization strength)")
    ax.set_ylabel(metric_label(rows[0].metric))
    ax.set_title(title or f"{data_label(rows)}\n{_settings(rows)}; ★ = best λ; bands ±1 sd (ddof=1){note}",
                 fontsize=10)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(alpha=0.3)
    fig.tight_layout()
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
    fig, axes = plt.subplots(len(panels), 1, figsize=(8.8, 4.6 * len(panels)), squeeze=False)
    for ax, (name, rows) in zip(axes[:, 0], panels.items()):
        plot_privacy_utility(rows, ax=ax, note=notes.get(name, ""))
    fig.tight_layout()
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
    fig, axes = plt.subplots(k, 1, figsize=(7.2, 2.9 * k + 1.6), sharex=True, squeeze=False)
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
                 f"{n_sets} synthetic datasets" + (f"\n{note}" if note else ""), fontsize=11)
    top = 0.7 + (0.25 if note else 0.0)
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
    fig, axes = plt.subplots(rows, len(silos), figsize=(1.55 * len(silos) + 0.6, 1.7 * rows + 0.9), squeeze=False)
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

    from fedtrain.analysis import best_by_setting, warm_start_label

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
