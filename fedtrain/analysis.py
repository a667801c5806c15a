"""Statistics of training results: best hyper-parameters, curves, privacy tables, theory comparisons.

Every function takes :class:`~fedtrain.engine.RunResult` objects (as returned by
:func:`fedtrain.sweep.run_sweep` or :meth:`fedtrain.results.ResultsStore.rows`) or arrays, and returns
plain numbers, arrays and dicts; the plots of :mod:`fedtrain.figures` draw them.  Runs that diverged
(:attr:`RunResult.diverged`: a non-finite metric) are left out of every mean and counted in ``diverged``.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np
from fedtrain.config import RunConfig

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.config import RunConfig
    from fedtrain.engine import RunResult

__all__ = [
    "spread_text",
    "warm_start_label",
    "co_clustering_agreement",
    "cluster_recovery",
    "cluster_recovery_table",
    "best_by_setting",
    "lower_is_better",
    "method_label",
    "group_rows",
    "seed_stats",
    "best_lambda_table",
    "best_by_label",
    "mean_gap",
    "best_lambda_by_eps",
    "lambda_curve",
    "curves_by_method",
    "privacy_table",
    "TheorySummary",
    "theory_summary",
    "paired_z",
]


def lower_is_better(metric: str) -> bool:
    """MSE (School, regression) is better when lower; accuracy when higher."""
    return metric == "mse"


def method_label(config: "RunConfig | Mapping[str, Any]") -> str:
    """Legend name of a run's method from the registry, e.g. ``IFCA (10% sel.)``, ``Finetune (50% FedAvg)``.

    ``config`` is a :class:`~fedtrain.config.RunConfig` (or a mapping of its fields and options)."""
    if not isinstance(config, RunConfig):
        config = RunConfig(**{"dataset": "-", **dict(config)})
    return config.spec.label_for(config.options)


def co_clustering_agreement(assign: Sequence[int], groups: Sequence[int]) -> float:
    """Share of silo pairs on which a clustering (e.g. IFCA's final cluster per silo) and the true groups
    (e.g. the rotation groups of ``rotated-masked-*``) agree: both put the pair together, or both apart
    (the Rand index, label-permutation invariant; 1 = the groups are recovered)."""
    a, g = np.asarray(assign), np.asarray(groups)
    if a.shape != g.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(f"assign and groups must be 1-d of the same length >= 2 (got {a.shape} and {g.shape})")
    off = ~np.eye(a.size, dtype=bool)
    return float(((a[:, None] == a[None, :]) == (g[:, None] == g[None, :]))[off].mean())


def cluster_recovery(rows: Iterable["RunResult"]) -> list[dict[str, Any]]:
    """How well IFCA's private cluster selection recovered the true groups (the rotation groups of
    ``rotated-masked-*``), from the rows whose ``extras`` record it (IFCA and the IFCA-warm-started runs:
    ``cluster_ari``, ``clusters_frozen_round``; :mod:`fedtrain.methods.ifca`).  One dict per mask ratio, ε and
    kind (``"IFCA"``, or ``"IFCA warm starts"`` for IFCA → Local / MR-MTL), sorted: ``mask``, ``eps``, ``who``,
    ``runs``, ``ari`` (mean adjusted Rand index against the groups: 1 = recovered, about 0 = chance), ``ari_min``,
    ``recovered`` (runs at ARI 1) and ``frozen`` (median round of the last selection that changed an assignment,
    counted from 0; ``None`` if not recorded).  Rows without the record are left out."""
    by: dict[tuple, list] = {}
    for r in rows:
        ex = r.extras or {}
        if ex.get("cluster_ari") is None:
            continue
        c = r.config
        key = (float(c.dataset_options.get("mask_ratio") or 0.0), float(c.eps),
               "IFCA" if c.method == "ifca" else "IFCA warm starts")
        by.setdefault(key, []).append(ex)
    out = []
    for (mask, eps, who), exs in sorted(by.items()):
        ari = [float(e["cluster_ari"]) for e in exs]
        frozen = [int(e["clusters_frozen_round"]) for e in exs if e.get("clusters_frozen_round") is not None]
        out.append({"mask": mask, "eps": eps, "who": who, "runs": len(exs), "ari": float(np.mean(ari)),
                    "ari_min": min(ari), "recovered": sum(a >= 1.0 - 1e-12 for a in ari),
                    "frozen": float(np.median(frozen)) if frozen else None})
    return out


def cluster_recovery_table(rows: Iterable["RunResult"], *, clip_only_eps: "float | None" = None) -> str:
    """:func:`cluster_recovery` as a Markdown table (``ValueError`` if no row records a cluster selection); rows at
    ε = ``clip_only_eps`` (a tuned grid's clip-only controls) are named as such."""
    rec = cluster_recovery(rows)
    if not rec:
        raise ValueError("rows must hold IFCA runs that record their cluster selection (extras['cluster_ari'])")
    lines = ["| mask ratio | privacy | runs | adjusted Rand index: mean (min) | runs that recovered the groups | "
             "last selection that changed a silo's cluster: round (median) |", "|---|---|---|---|---|---|"]
    for d in rec:
        privacy = ("no DP" if math.isinf(d["eps"]) else f"clip only (ε = {d['eps']:,.0f})"
                   if clip_only_eps is not None and d["eps"] == clip_only_eps else f"ε = {d['eps']:g}")
        frozen = "—" if d["frozen"] is None else f"{d['frozen']:g}"
        lines.append(f"| {d['mask']:g} | {privacy}, {d['who']} | {d['runs']} | {d['ari']:.2f} ({d['ari_min']:.2f}) | "
                     f"{d['recovered']} of {d['runs']} | {frozen} |")
    return "\n".join(lines)


def warm_start_label(config: "RunConfig") -> str:
    """Fig. 6 legend names: the registry label, except that IFCA-preconditioned MR-MTL (Algorithm A2) is
    named by what runs after the warm start: ``"IFCA (5% sel.) → Local"`` for λ = 0 (each silo trains alone
    from its cluster's model) and ``"IFCA (5% sel.) → MR-MTL"`` for λ > 0."""
    if config.method != "ifca-mrmtl":
        return method_label(config)
    base = method_label(config.replace(method="ifca", lam=0.0))
    return f"{base} → {'Local' if config.lam == 0 else 'MR-MTL'}"


def best_by_setting(rows: Iterable["RunResult"], setting: Callable[["RunConfig"], Any], *,
                    label: Callable[["RunConfig"], str] = method_label) -> dict[tuple, dict[str, Any]]:
    """For each ``(label(config), setting(config))``: the (λ, η) with the best mean over seeds (as
    :func:`best_lambda_table`, which is this with ``setting = ε``).  E.g. Fig. 6's table is
    ``best_by_setting(rows, lambda c: (c.eps, c.dataset_options["mask_ratio"]), label=warm_start_label)``."""
    rows = list(rows)
    if not rows:
        return {}
    lower = lower_is_better(rows[0].metric)
    by: "OrderedDict[tuple, list]" = OrderedDict()
    for r in rows:
        by.setdefault((label(r.config), setting(r.config)), []).append(r)
    best: dict[tuple, dict[str, Any]] = {}
    for (lab, key), rs in by.items():
        for (lam, lr), grp in group_rows(rs, ("lam", "lr")).items():
            mean, std, n, div = seed_stats(grp)
            cur = best.get((lab, key))
            if cur is None or _better(mean, cur["mean"], lower):
                best[(lab, key)] = dict(label=lab, method=grp[0].config.method, setting=key, lam=float(lam),
                                        lr=float(lr), mean=mean, std=std, n=n, diverged=div)
    return best


def group_rows(rows: Iterable["RunResult"], by: Sequence[str]) -> "OrderedDict[tuple, list]":
    """Results grouped by the values of config fields (or method options) ``by`` (insertion order kept)."""
    out: "OrderedDict[tuple, list]" = OrderedDict()
    for r in rows:
        out.setdefault(tuple(getattr(r.config, b) for b in by), []).append(r)
    return out


def seed_stats(rs: Sequence["RunResult"]) -> tuple[float, float, int, int]:
    """``(mean, std (ddof=1; 0 for one run), n averaged, n diverged)`` of the test metric over runs."""
    v = np.array([r.test_metric for r in rs if not r.diverged], dtype=float)
    div = len(rs) - len(v)
    if len(v) == 0:
        return math.nan, math.nan, 0, div
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0, len(v), div


def _better(a: float, b: float, lower: bool) -> bool:
    if math.isnan(b):
        return not math.isnan(a)
    return a < b if lower else a > b


def best_lambda_table(rows: Iterable["RunResult"]) -> list[dict[str, Any]]:
    """For each (method label, ε): the (λ, η) with the best mean over seeds, its mean, std, n and diverged.

    This is the paper's "method(λ*)" in Fig. 3: hyper-parameters are picked on the test metric and the
    tuning is not charged to privacy (as in the paper's Figs. 2-6; see the private-tuning chapter).
    Diverged runs never count towards a mean; a (λ, η) whose every seed diverged is never the best.
    """
    keys = ("label", "method", "eps", "lam", "lr", "mean", "std", "n", "diverged")
    return [{k: (d["setting"] if k == "eps" else d[k]) for k in keys}
            for d in best_by_setting(rows, lambda c: float(c.eps)).values()]


def best_by_label(rows: Iterable["RunResult"]) -> dict[tuple, dict[str, Any]]:
    """:func:`best_lambda_table` keyed by ``(method label, ε)`` (the lookup the empirical chapters assert on)."""
    return {(t["label"], t["eps"]): t for t in best_lambda_table(rows)}


def mean_gap(table: Mapping[tuple, Mapping[str, Any]], a: str, b: str, eps: float) -> tuple[float, float]:
    """``(mean_a − mean_b, max(std_a, std_b))`` at ``eps`` in a :func:`best_by_label` table.

    The difference of two methods' seed means and the larger of their seed standard deviations: the
    comparison the empirical chapters assert on ("a beats b by more than 2 std").
    """
    ta, tb = table[(a, eps)], table[(b, eps)]
    return ta["mean"] - tb["mean"], max(ta["std"], tb["std"])


def lambda_curve(rows: Iterable["RunResult"], eps: float, method: str = "mrmtl",
                 lr: float | None = None) -> dict[str, np.ndarray]:
    """Mean/std over seeds of ``method`` against λ at privacy level ``eps`` (best η per λ if ``lr`` is None)."""
    rs = [r for r in rows if r.config.method == method and float(r.config.eps) == float(eps)
          and (lr is None or r.config.lr == float(lr))]
    if not rs:
        raise ValueError(f"no rows for method={method!r}, eps={eps}" + ("" if lr is None else f", lr={lr}"))
    lower = lower_is_better(rs[0].metric)
    out = {}
    for lam, grp in group_rows(rs, ("lam",)).items():
        cands = [seed_stats(g) for g in group_rows(grp, ("lr",)).values()]
        best = cands[0]
        for c in cands[1:]:
            if _better(c[0], best[0], lower):
                best = c
        out[float(lam[0])] = best
    lams = np.array(sorted(out))
    return {"lam": lams, "mean": np.array([out[l][0] for l in lams]), "std": np.array([out[l][1] for l in lams]),
            "n": np.array([out[l][2] for l in lams])}


def best_lambda_by_eps(rows: Iterable["RunResult"], eps_values: Sequence[float], *,
                       method: str = "mrmtl") -> dict[float, dict[str, float]]:
    """Per ε: ``method``'s best λ on :func:`lambda_curve` (argmin of the mean error, argmax of a score) with its
    mean and std over seeds (Fig. 5's ★), as ``{eps: {"lam", "mean", "std"}}``."""
    rows = list(rows)
    out = {}
    for eps in eps_values:
        cur = lambda_curve(rows, eps, method=method)
        lower = lower_is_better(next(r for r in rows if r.config.method == method).metric)
        b = int(np.nanargmin(cur["mean"]) if lower else np.nanargmax(cur["mean"]))
        out[float(eps)] = {"lam": float(cur["lam"][b]), "mean": float(cur["mean"][b]), "std": float(cur["std"][b])}
    return out


def curves_by_method(rows: Iterable["RunResult"]) -> "OrderedDict[tuple, dict]":
    """Per (method label, ε): rounds and mean/std over seeds of the recorded test-metric curve
    (diverged runs left out; ``n`` runs averaged, ``diverged`` left out)."""
    out: "OrderedDict[tuple, dict]" = OrderedDict()
    groups: "OrderedDict[tuple, list]" = OrderedDict()
    for r in rows:
        if r.curve is None:
            raise ValueError("rows have no learning curve: run them with eval_every > 0")
        groups.setdefault((method_label(r.config), float(r.config.eps)), []).append(r)
    for key, rs in groups.items():
        ok = [r for r in rs if not r.diverged]
        curves = np.array([np.asarray(r.curve, dtype=float) for r in ok]).reshape(len(ok), -1)
        out[key] = {"rounds": np.asarray(rs[0].curve_rounds), "mean": curves.mean(0),
                    "std": curves.std(0, ddof=1) if len(ok) > 1 else np.zeros(curves.shape[1]),
                    "method": rs[0].config.method, "n": len(ok), "diverged": len(rs) - len(ok)}
    return out


def privacy_table(rows: Iterable["RunResult"]) -> list[dict[str, Any]]:
    """Per (method label, ε): the median over silos of the DP-SGD noise multiplier z_k, the number of DP-SGD
    steps of the median silo, and the largest ε_k certified by the accountant (the privacy overhead of a
    method shows as a larger z at the same ε: Ditto's second pass, IFCA's private selections)."""
    out: "OrderedDict[tuple, dict]" = OrderedDict()
    for r in rows:
        key = (method_label(r.config), float(r.config.eps))
        if key in out:
            continue
        z = np.asarray(r.noise_multipliers, dtype=float)
        spent = np.asarray(r.eps_spent, dtype=float)
        out[key] = {"label": key[0], "method": r.config.method, "eps": key[1], "z_median": float(np.median(z)),
                    "steps_median": float(np.median(r.steps)), "eps_spent_max": float(spent.max()),
                    "accountant": r.accountant}
    return list(out.values())


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


def spread_text(spread: float, digits: int) -> str:
    """A spread over seeds (sd or SE) at ``digits`` decimals, for a table or a check's numbers: one that rounds to
    zero at those digits reads ``<0.001`` (at 3 digits), never ``0.000``, which would claim more than the seeds show."""
    unit = 10.0 ** -int(digits)
    return f"{spread:.{digits}f}" if spread >= unit / 2 else f"<{unit:.{digits}f}"
