"""Figures of the empirical chapters (MR-MTL paper, Figs. 2-5) and of theory meeting training.

Every plot function takes results-store rows (dicts with ``config`` and ``result``, as returned by
:func:`fedtrain.sweep.run_sweep`) or arrays, and returns a matplotlib :class:`~matplotlib.figure.Figure`.
The helpers that pick what is plotted (:func:`method_label`, :func:`best_lambda_table`,
:func:`lambda_curve`, :func:`curves_by_method`) are plain functions, tested directly.
Titles say which data (real or synthetic stand-in) and which settings a figure shows.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

__all__ = [
    "lower_is_better",
    "method_label",
    "metric_label",
    "data_label",
    "group_rows",
    "best_lambda_table",
    "lambda_curve",
    "curves_by_method",
    "privacy_table",
    "plot_training_curves",
    "eps_positions",
    "plot_privacy_utility",
    "plot_lambda_sweep",
    "plot_theory_vs_training",
    "best_by_label",
    "best_lambda_by_eps",
    "plot_privacy_utility_panels",
    "TheorySummary",
    "theory_summary",
    "paired_z",
    "plot_theory_meets_training",
]

_COLORS = {"local": "tab:blue", "fedavg": "tab:orange", "finetune": "tab:purple", "mrmtl": "tab:red",
           "ditto": "tab:green", "mocha": "tab:brown", "ifca": "tab:gray", "ifca-mrmtl": "tab:pink"}
_NAMES = {"local": "Local", "fedavg": "FedAvg", "finetune": "Finetune", "mrmtl": "MR-MTL", "ditto": "Ditto",
          "mocha": "Mocha", "ifca": "IFCA", "ifca-mrmtl": "IFCA-MR-MTL"}


def _f(v: Any) -> float:
    return float(v) if not isinstance(v, str) else float(v.replace("infinity", "inf"))


def lower_is_better(metric: str) -> bool:
    """MSE (School, regression) is better when lower; accuracy when higher."""
    return metric == "mse"


def metric_label(metric: str) -> str:
    return {"mse": "test MSE (lower is better)", "accuracy": "test accuracy (higher is better)"}.get(metric, metric)


def method_label(config: Mapping[str, Any]) -> str:
    """Legend name of a run's method, e.g. ``IFCA (10%)``, ``Finetune (50%)``."""
    m = config["method"]
    name = _NAMES.get(m, m)
    if m in ("ifca", "ifca-mrmtl"):
        frac = _f(config.get("select_frac", 0.1))
        name += " (every round)" if frac >= 1 else f" ({100 * frac:g}% sel.)"
    if m == "finetune":
        name += f" ({100 * _f(config.get('finetune_frac', 0.5)):g}% FedAvg)"
    return name


def data_label(rows: Sequence[Mapping[str, Any]]) -> str:
    """``'School (real data)'`` or ``'vehicle-standin (synthetic stand-in, tau=0.5)'``."""
    ds = rows[0].get("dataset", {})
    name = ds.get("name", rows[0]["config"]["dataset"])
    if ds.get("real"):
        return f"{name} (real data)"
    tau = ds.get("info", {}).get("tau")
    return f"{name} (synthetic stand-in{'' if tau is None else f', τ={tau:g}'})"


def group_rows(rows: Iterable[Mapping[str, Any]], by: Sequence[str]) -> "OrderedDict[tuple, list]":
    """Rows grouped by the values of config fields ``by`` (insertion order kept)."""
    out: "OrderedDict[tuple, list]" = OrderedDict()
    for r in rows:
        out.setdefault(tuple(r["config"].get(b) for b in by), []).append(r)
    return out


def _stats(rs: Sequence[Mapping[str, Any]]) -> tuple[float, float, int]:
    v = np.array([_f(r["result"]["test_metric"]) for r in rs])
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0, len(v)


def best_lambda_table(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """For each (method label, ε): the (λ, η) with the best mean over seeds, its mean, std and n.

    This is the paper's "method(λ*)" in Fig. 3: hyper-parameters are picked on the test metric and the
    tuning is not charged to privacy (as in the paper's Figs. 2-6; see the private-tuning chapter).
    """
    rows = list(rows)
    if not rows:
        return []
    lower = lower_is_better(rows[0]["result"]["metric"])
    best: "OrderedDict[tuple, dict]" = OrderedDict()
    by_label: "OrderedDict[tuple, list]" = OrderedDict()
    for r in rows:
        by_label.setdefault((method_label(r["config"]), _f(r["config"]["eps"])), []).append(r)
    for (label, eps), rs in by_label.items():
        for (lam, lr), grp in group_rows(rs, ("lam", "lr")).items():
            mean, std, n = _stats(grp)
            cur = best.get((label, eps))
            if cur is None or (mean < cur["mean"] if lower else mean > cur["mean"]):
                best[(label, eps)] = dict(label=label, method=grp[0]["config"]["method"], eps=eps, lam=_f(lam),
                                          lr=_f(lr), mean=mean, std=std, n=n)
    return list(best.values())


def lambda_curve(rows: Iterable[Mapping[str, Any]], eps: float, method: str = "mrmtl",
                 lr: float | None = None) -> dict[str, np.ndarray]:
    """Mean/std over seeds of ``method`` against λ at privacy level ``eps`` (best η per λ if ``lr`` is None)."""
    rs = [r for r in rows if r["config"]["method"] == method and _f(r["config"]["eps"]) == float(eps)
          and (lr is None or _f(r["config"]["lr"]) == float(lr))]
    if not rs:
        raise ValueError(f"no rows for method={method!r}, eps={eps}" + ("" if lr is None else f", lr={lr}"))
    lower = lower_is_better(rs[0]["result"]["metric"])
    out = {}
    for lam, grp in group_rows(rs, ("lam",)).items():
        cands = [_stats(g) for g in group_rows(grp, ("lr",)).values()]
        out[_f(lam[0])] = min(cands, key=lambda s: s[0] if lower else -s[0])
    lams = np.array(sorted(out))
    return {"lam": lams, "mean": np.array([out[l][0] for l in lams]), "std": np.array([out[l][1] for l in lams]),
            "n": np.array([out[l][2] for l in lams])}


def curves_by_method(rows: Iterable[Mapping[str, Any]]) -> "OrderedDict[tuple, dict]":
    """Per (method label, ε): rounds and mean/std over seeds of the recorded test-metric curve."""
    out: "OrderedDict[tuple, dict]" = OrderedDict()
    groups: "OrderedDict[tuple, list]" = OrderedDict()
    for r in rows:
        if r["result"].get("curve") is None:
            raise ValueError("rows have no learning curve: run them with eval_every > 0")
        groups.setdefault((method_label(r["config"]), _f(r["config"]["eps"])), []).append(r)
    for key, rs in groups.items():
        curves = np.array([[_f(v) for v in r["result"]["curve"]] for r in rs])
        out[key] = {"rounds": np.array(rs[0]["result"]["curve_rounds"]), "mean": curves.mean(0),
                    "std": curves.std(0, ddof=1) if len(rs) > 1 else np.zeros(curves.shape[1]),
                    "method": rs[0]["config"]["method"], "n": len(rs)}
    return out


def privacy_table(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (method label, ε): the median over silos of the DP-SGD noise multiplier z_k, the number of DP-SGD
    steps of the median silo, and the largest ε_k certified by the accountant (the privacy overhead of a
    method shows as a larger z at the same ε: Ditto's second pass, IFCA's private selections)."""
    out: "OrderedDict[tuple, dict]" = OrderedDict()
    for r in rows:
        key = (method_label(r["config"]), _f(r["config"]["eps"]))
        if key in out:
            continue
        res = r["result"]
        z = np.array([_f(v) for v in res["noise_multipliers"]])
        spent = np.array([_f(v) for v in res["eps_spent"]])
        out[key] = {"label": key[0], "method": r["config"]["method"], "eps": key[1], "z_median": float(np.median(z)),
                    "steps_median": float(np.median(res["steps"])), "eps_spent_max": float(spent.max()),
                    "accountant": res.get("accountant")}
    return list(out.values())


def _eps_text(eps: float) -> str:
    return "non-private" if math.isinf(eps) else f"ε={eps:g}"


def _settings(rows: Sequence[Mapping[str, Any]]) -> str:
    c = rows[0]["config"]
    seeds = sorted({r["config"]["seed"] for r in rows})
    delta = rows[0]["result"].get("delta")
    d = f", δ={_f(delta[0]):.0e}" if delta else ""
    return f"T={c['rounds']} rounds, B={c['batch_size']}, c={c['clip']:g}{d}, {len(seeds)} seeds"


def plot_training_curves(rows: Sequence[Mapping[str, Any]], *, title: str | None = None, note: str = ""):
    """Fig. 2: test metric against training round, one colour per method, solid = private, dashed = non-private.

    Bands are ±1 standard deviation over seeds.
    """
    import matplotlib.pyplot as plt

    rows = list(rows)
    curves = curves_by_method(rows)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (label, eps), c in curves.items():
        color = _COLORS.get(c["method"], None)
        ls = "--" if math.isinf(eps) else "-"
        ax.plot(c["rounds"], c["mean"], ls, color=color, label=f"{label}, {_eps_text(eps)}")
        ax.fill_between(c["rounds"], c["mean"] - c["std"], c["mean"] + c["std"], color=color, alpha=0.15)
    metric = rows[0]["result"]["metric"]
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


def plot_privacy_utility(rows: Sequence[Mapping[str, Any]], *, title: str | None = None, note: str = "",
                         ax=None, zoom_eps: float | None = None):
    """Fig. 3 / Fig. 4: test metric (mean ± std over seeds) against per-silo ε, every method at its best (λ, η).

    ε is on a log axis (:func:`eps_positions`); the non-private point sits right of a dashed separator,
    joined to the curve by a dotted segment.  Error bars are ±1 standard deviation over seeds; methods
    are offset slightly along x so that their bars do not overlap.  ``zoom_eps`` (one of the ε in
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
        color = _COLORS.get(ts[0]["method"])
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
    if lower_is_better(rows[0]["result"]["metric"]):  # errors spanning multiples: log axis
        ax.set_yscale("log")
    ax.set_xlabel("per-silo privacy budget ε (log scale; δ fixed per dataset)")
    ax.set_ylabel(metric_label(rows[0]["result"]["metric"]))
    ax.set_title(title or f"{data_label(rows)}\n{_settings(rows)}; λ, η tuned per point; mean ± std over seeds{note}",
                 fontsize=10)
    if zax is not None:  # zoom panel: one row per method at zoom_eps; the legend goes under both panels
        at = sorted((t for t in table if t["eps"] == zoom_eps), key=lambda t: t["mean"])
        # the x range covers the methods within 25 % of the best one; a method outside it is drawn at the
        # edge (an arrow marker) with its value in its label, so that one outlier cannot squash the rest
        best_t = at[0] if lower_is_better(rows[0]["result"]["metric"]) else at[-1]
        near = [t for t in at if abs(t["mean"] - best_t["mean"]) <= 0.25 * abs(best_t["mean"])]
        lo_x = min(t["mean"] - t["std"] for t in near)
        hi_x = max(t["mean"] + t["std"] for t in near)
        pad = 0.08 * (hi_x - lo_x) if hi_x > lo_x else 0.01 * abs(best_t["mean"]) + 1e-12
        lo_x, hi_x = lo_x - pad, hi_x + pad
        names = []
        for i, t in enumerate(at):
            color = _COLORS.get(t["method"])
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
        zax.set_xlabel(metric_label(rows[0]["result"]["metric"]), fontsize=9)
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


def plot_lambda_sweep(rows: Sequence[Mapping[str, Any]], eps_values: Sequence[float], *, method: str = "mrmtl",
                      title: str | None = None, note: str = ""):
    """Fig. 5: ``method``'s test metric against λ (log scale) for each ε, with the Local and FedAvg endpoints.

    One colour per ε; dotted/dashed horizontal lines are Local and FedAvg at that ε (best η); the
    marker ★ is the best λ.  Bands are ±1 standard deviation over seeds.
    """
    import matplotlib.pyplot as plt

    rows = list(rows)
    table = {(t["method"], t["eps"]): t for t in best_lambda_table(r for r in rows if r["config"]["method"]
                                                                   in ("local", "fedavg"))}
    lower = lower_is_better(rows[0]["result"]["metric"])
    fig, ax = plt.subplots(figsize=(8.5, 4.4))
    palette = ["tab:red", "tab:orange", "tab:green", "tab:blue", "tab:purple", "tab:brown", "tab:pink", "tab:olive"]
    finite = [e for e in eps_values if not math.isinf(e)]
    for i, eps in enumerate(eps_values):
        color = "black" if math.isinf(eps) else palette[finite.index(eps) % len(palette)]
        cur = lambda_curve(rows, eps, method=method)
        ok = cur["lam"] > 0
        lam, mean, std = cur["lam"][ok], cur["mean"][ok], cur["std"][ok]
        ax.plot(lam, mean, "o-", color=color, ms=4, label=f"{_NAMES.get(method, method)}, {_eps_text(eps)}")
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
    ax.set_ylabel(metric_label(rows[0]["result"]["metric"]))
    ax.set_title(title or f"{data_label(rows)}\n{_settings(rows)}; ★ = best λ; bands ±1 std over seeds{note}",
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


def best_by_label(rows: Iterable[Mapping[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """:func:`best_lambda_table` keyed by ``(method label, ε)`` (the lookup the empirical chapters assert on)."""
    return {(t["label"], t["eps"]): t for t in best_lambda_table(rows)}


def best_lambda_by_eps(rows: Iterable[Mapping[str, Any]], eps_values: Sequence[float], *,
                       method: str = "mrmtl") -> dict[float, dict[str, float]]:
    """Per ε: ``method``'s best λ on :func:`lambda_curve` (argmin of the mean error, argmax of a score) with its
    mean and std over seeds (Fig. 5's ★), as ``{eps: {"lam", "mean", "std"}}``."""
    rows = list(rows)
    out = {}
    for eps in eps_values:
        cur = lambda_curve(rows, eps, method=method)
        lower = lower_is_better(next(r for r in rows if r["config"]["method"] == method)["result"]["metric"])
        b = int(np.argmin(cur["mean"]) if lower else np.argmax(cur["mean"]))
        out[float(eps)] = {"lam": float(cur["lam"][b]), "mean": float(cur["mean"][b]), "std": float(cur["std"][b])}
    return out


def plot_privacy_utility_panels(panels: Mapping[str, Sequence[Mapping[str, Any]]], *,
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


@dataclass(frozen=True)
class TheorySummary:
    """One privacy level of the theory-meets-training comparison.

    ``s_loc``: σ_loc², the trained local (λ = 0) error, plugged into the closed forms; ``se0``: its standard
    error; ``lam_star``: the closed form's λ* = σ_loc²/τ² (Thm 6.3); ``lam_trained``: the grid λ > 0 with the
    smallest trained error."""

    s_loc: float
    se0: float
    lam_star: float
    lam_trained: float


def theory_summary(trained: Mapping[float, Mapping[str, Any]], *, tau: float) -> dict[float, TheorySummary]:
    """Per ε of :func:`fedtrain.sweep.gaussian_lambda_sweep`'s output: σ_loc² (trained λ = 0 error), the
    closed-form λ* (:func:`fedtheory.mean_estimation.optimal_lambda`) and the best trained λ > 0."""
    from fedtheory.mean_estimation import optimal_lambda

    out = {}
    for eps, t in trained.items():
        lam = np.asarray(t["lam"], dtype=float)
        if lam[0] != 0:
            raise ValueError("trained['lam'] must start with 0 (local training gives σ_loc²)")
        s_loc = float(t["mean"][0])
        pos = lam > 0
        b = int(np.argmin(np.asarray(t["mean"])[pos]))
        out[eps] = TheorySummary(s_loc=s_loc, se0=float(t["se"][0]), lam_star=float(optimal_lambda(s_loc, tau**2)),
                                 lam_trained=float(lam[pos][b]))
    return out


def paired_z(t: Mapping[str, Any], *, num_silos: int, tau: float) -> tuple[np.ndarray, float]:
    """(trained − closed form)/SE at every λ > 0 and for FedAvg, paired per dataset: dataset s's closed form
    (Lemma 6.7, :func:`fedtheory.mean_estimation.mse` / ``fedavg_mse``) uses its own σ_loc² = ``runs[0, s]``.

    ``t`` is one ε of :func:`fedtrain.sweep.gaussian_lambda_sweep`'s output (``lam[0]`` must be 0)."""
    from fedtheory.mean_estimation import fedavg_mse, mse

    runs = np.asarray(t["runs"], dtype=float)
    if float(t["lam"][0]) != 0 or runs.shape[1] < 2:
        raise ValueError("t needs lam[0] = 0 and at least 2 datasets (runs.shape[1] >= 2)")
    diff = runs[1:] - mse(np.asarray(t["lam"][1:], dtype=float)[:, None], runs[0][None, :], tau**2, num_silos)
    fed = np.asarray(t["fedavg_runs"], dtype=float) - fedavg_mse(runs[0], tau**2, num_silos)
    n = runs.shape[1]
    return diff.mean(1) / (diff.std(1, ddof=1) / np.sqrt(n)), float(fed.mean() / (fed.std(ddof=1) / np.sqrt(n)))


def plot_theory_meets_training(trained: Mapping[float, Mapping[str, Any]], *, num_silos: int, tau: float,
                               n: int | None = None, sigma: float | None = None):
    """The theory-meets-training figure: one panel per ε (stacked, shared λ axis), each the closed-form E(λ)
    (Lemma 6.7) at that ε's trained σ_loc² next to DP-SGD-trained MR-MTL (:func:`plot_theory_vs_training`),
    with one legend for all panels.  Returns ``(fig, theory_summary(trained, tau=tau))``."""
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
                 f"{n_sets} synthetic datasets", fontsize=11)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.7 / fig.get_figheight()),
               ncol=2, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 1.0 / fig.get_figheight()))
    return fig, summary
