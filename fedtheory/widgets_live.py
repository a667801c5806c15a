"""Live versions of the book's closed-form widgets: the figure is recomputed in the reader's browser.

A :class:`LiveFigure` names the JavaScript functions it needs (printed from the sympy derivations by
:mod:`fedtheory.jsgen`), a short JavaScript ``compute(p, F, U)`` that evaluates them over the plotted
grid (``p``: the slider values, ``F``: the generated functions, ``U``: grid helpers of
``book/_static/fedbook_live.js``), its panels, and a Python ``reference(p, page)`` that computes the same
numbers with fedtheory's numeric functions (written independently of the sympy derivations).  The
browser test moves the sliders of the built book to random positions and requires the page's numbers
to equal ``reference``'s within 1e-9 relative.

:func:`live_html` renders a live figure for a set of ipywidgets controls (their ranges become the HTML
sliders': full range, continuous, log where the control is a ``FloatLogSlider``), see
:func:`fedtheory.widgets.figure_widget`'s ``live`` argument.  :data:`LIVE_FIGURES` lists them by name.
"""
from __future__ import annotations

import html
import json
import math
import uuid
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from fedtheory import jsgen
from fedtheory import linear_regression as lr, point_estimation as pe
from fedtheory.mean_estimation import (crossover_epsilon, fedavg_mse, gap_to_fedavg, gap_to_local, gaussian_sigma,
                                       local_variance, mse, optimal_lambda, optimal_mse)

__all__ = ["LiveFigure", "LIVE_FIGURES", "live_controls", "live_html", "reference_values", "compare_live"]

#: series colours (matplotlib's tab10, as the static figures)
_C = dict(blue="#1f77b4", orange="#ff7f0e", green="#2ca02c", red="#d62728", purple="#9467bd",
          gray="#7f7f7f", black="#222222")


@dataclass(frozen=True)
class LiveFigure:
    """A figure computed in the browser.  ``panels`` are uPlot panel specs (``xlabel``, ``ylabel``,
    ``xlog``, ``ylog``, ``series``: label/colour/dash/points); ``values`` in ``compute``'s result are
    the numbers the browser test compares with ``reference(p, page_values)``."""

    name: str
    functions: tuple[str, ...]
    compute: str
    panels: tuple[dict, ...]
    caption: str
    reference: Callable[[dict, dict], dict]


# ----------------------------------------------------------------------------------------------------
# mean estimation (MR-MTL, Sec. 6)
_ME_ERROR_JS = """
var s = F.me_sigma_loc2_dp(p.n, p.sigma * p.sigma, p.eps, p.delta, p.c);
var s0 = F.me_sigma_loc2(p.n, p.sigma * p.sigma, 0);
var t2 = p.tau * p.tau;
var ls = F.me_lambda_star(s, t2);
var centre = (isFinite(ls) && ls > 0) ? ls : 1;
var x = U.withPoints(U.geomspace(Math.min(1e-3, centre / 100), Math.max(1e3, centre * 100), 300), [ls]);
var E = x.map(function (l) { return F.me_E(l, s, t2, p.K); });
var E0 = x.map(function (l) { return F.me_E(l, s0, t2, p.K); });
var Efed = F.me_E_fed(s, t2, p.K), Estar = F.me_E_star(s, t2, p.K);
return {
  panels: [{x: x, y: [E, E0, U.constant(x, s), U.constant(x, Efed), U.marker(x, ls, Estar)],
            vlines: [{x: ls, color: "#888", dash: [2, 3]}],
            title: "K = " + p.K + ", n = " + p.n + ", σ = " + p.sigma + ", τ = " + p.tau + ", ε = " + p.eps +
                   ", δ = " + p.delta + ", c = " + p.c}],
  values: {lam: x, E: E, E_nonprivate: E0, sigma_loc2: s, lambda_star: ls, E_star: Estar, E_fed: Efed},
  readout: "σ_loc² = " + U.fmt(s) + " (classic Gaussian mechanism);  λ* = σ_loc²/τ² = " + U.fmt(ls) +
           ", E* = " + U.fmt(Estar) + ";  local training (λ = 0): " + U.fmt(s) + ";  FedAvg (λ = ∞): " + U.fmt(Efed)
};
"""


def _me_sigma_loc2(p: dict) -> float:
    return local_variance(p["sigma"] ** 2, int(p["n"]), gaussian_sigma(p["eps"], p["delta"], p["c"]) ** 2)


def _me_error_reference(p: dict, page: dict) -> dict:
    s, t2, K = _me_sigma_loc2(p), p["tau"] ** 2, int(p["K"])
    lam = np.asarray(page["lam"], dtype=float)
    return {"E": mse(lam, s, t2, K), "E_nonprivate": mse(lam, local_variance(p["sigma"] ** 2, int(p["n"])), t2, K),
            "sigma_loc2": s, "lambda_star": optimal_lambda(s, t2), "E_star": optimal_mse(s, t2, K),
            "E_fed": fedavg_mse(s, t2, K)}


_ME_GAPS_JS = """
var eps = U.geomspace(p.eps_min, p.eps_max, 400), t2 = p.tau * p.tau;
var s = eps.map(function (e) { return F.me_sigma_loc2_dp(p.n, p.sigma * p.sigma, e, p.delta, p.c); });
var dl = s.map(function (v) { return F.me_gap_local(v, t2, p.K); });
var df = s.map(function (v) { return F.me_gap_fed(v, t2, p.K); });
var best = dl.map(function (v, i) { return Math.min(v, df[i]); });
var Efed = s.map(function (v) { return F.me_E_fed(v, t2, p.K); });
var Estar = s.map(function (v) { return F.me_E_star(v, t2, p.K); });
var ex = F.me_eps_cross(p.sigma * p.sigma, t2, p.n, p.delta, p.c);
if (!(ex > 0) || !isFinite(ex)) ex = Infinity;
var lines = (isFinite(ex) && ex >= p.eps_min && ex <= p.eps_max) ? [{x: ex, color: "#222"}] : [];
var shade = (p.eps_min <= 1 && 1 <= p.eps_max) ? [1, p.eps_max] : null;
return {
  panels: [{x: eps, y: [dl, df, best], vlines: lines, shade: shade, ymin: Math.max.apply(null, best) / 1e3,
            title: "advantage of optimal MR-MTL: the bump at ε×"},
           {x: eps, y: [s, Efed, Estar], vlines: lines, shade: shade, title: "errors of the three estimators"}],
  values: {eps: eps, sigma_loc2: s, gap_local: dl, gap_fed: df, E_fed: Efed, E_star: Estar, eps_cross: ex},
  readout: "K = " + p.K + ", n = " + p.n + ", σ = " + p.sigma + ", τ = " + p.tau + ", δ = " + p.delta +
           ", c = " + p.c + ":  ε× = " + U.fmt(ex) + (isFinite(ex) ? " (σ_loc² = τ², λ* = 1)" :
           " (τ² ≤ σ²/n: FedAvg wins at every ε)") + ";  shaded: ε ≥ 1, where the classic calibration is not a guarantee"
};
"""


def _me_gaps_reference(p: dict, page: dict) -> dict:
    eps = np.asarray(page["eps"], dtype=float)
    t2, K, n = p["tau"] ** 2, int(p["K"]), int(p["n"])
    s = local_variance(p["sigma"] ** 2, n, gaussian_sigma(eps, p["delta"], p["c"]) ** 2)
    return {"sigma_loc2": s, "gap_local": gap_to_local(s, t2, K), "gap_fed": gap_to_fedavg(s, t2, K),
            "E_fed": fedavg_mse(s, t2, K), "E_star": optimal_mse(s, t2, K),
            "eps_cross": crossover_epsilon(p["sigma"] ** 2, t2, n, p["delta"], p["c"])}


# ----------------------------------------------------------------------------------------------------
# FedHDP (opt-out setting: group 1 opts out, κ_1² = 0; group 2 private, κ_2² = κ²)
_SPLIT_JS = """
var n_np = Math.min(U.roundHalfEven(p.rho_np * p.N), p.N - 1), n_p = p.N - n_np;
"""

_FEDHDP_SERVER_JS = _SPLIT_JS + """
var a = [n_np, n_p, p.alpha2, p.tau2, 0, p.gamma2];
var rs = F.lr_r_star.apply(null, a);
var x = U.withPoints(U.linspace(n_np > 0 ? 0.002 : 0.02, 1.2, 600), [rs, 1]);
var V = x.map(function (r) { return F.lr_server_error.apply(null, [r].concat(a)); });
var Vopt = F.lr_server_error_opt.apply(null, a), V1 = F.lr_server_error.apply(null, [1].concat(a));
/* DP-FedAvg: all N clients private with noise N(0, N_p κ²) each, i.e. one group with κ_2² = κ² N_p / N */
var dp = F.lr_server_error_opt(0, p.N, p.alpha2, p.tau2, 0, p.gamma2 * n_p / p.N);
return {
  panels: [{x: x, y: [V, U.marker(x, rs, Vopt), U.marker(x, 1, V1), U.constant(x, dp)],
            title: "N = " + p.N + " (" + n_np + " opt out), ξ² = " + p.alpha2 + ", τ² = " + p.tau2 + ", κ² = " + p.gamma2}],
  values: {n_np: n_np, n_p: n_p, r: x, server_error: V, r_star: rs, server_error_opt: Vopt, server_error_r1: V1,
           dp_fedavg: dp},
  readout: (n_np > 0 ? "FedHDP: r* = " + U.fmt(rs) + ", σ_s²(r*) = " + U.fmt(Vopt) + ";  HDP-FedAvg (r = 1): " + U.fmt(V1)
                      : "No client opts out at this ρ_np: every update is private, so the weight ratio r has no " +
                        "effect and r* is not defined; σ_s² = " + U.fmt(V1)) +
           ";  DP-FedAvg (everyone private): " + U.fmt(dp)
};
"""


def _split(p: dict) -> tuple[int, int]:
    from fedtheory.figures.fedhdp import split
    return split(int(p["N"]), p["rho_np"])


def _fedhdp_server_reference(p: dict, page: dict) -> dict:
    n_np, n_p = _split(p)
    args = (n_np, n_p, p["alpha2"], p["tau2"], 0.0, p["gamma2"])
    r = np.asarray(page["r"], dtype=float)
    return {"n_np": n_np, "n_p": n_p, "server_error": lr.server_error(r, *args), "r_star": lr.optimal_ratio(*args),
            "server_error_opt": lr.optimal_server_error(*args), "server_error_r1": lr.server_error(1.0, *args),
            "dp_fedavg": pe.dp_fedavg_server_error(int(p["N"]), n_np / int(p["N"]), p["alpha2"], p["tau2"],
                                                   p["gamma2"])}


_FEDHDP_LAMBDAS_JS = _SPLIT_JS + """
var g = U.geomspace(1e-3, 1e2, 300);
var lnp = g.map(function (v) { return n_np > 0 ? F.lr_lambda_star_1(n_np, n_p, p.alpha2, p.tau2, 0, v) : null; });
var lp = g.map(function (v) { return F.lr_lambda_star_2(n_np, n_p, p.alpha2, p.tau2, 0, v); });
var ldp = g.map(function (v) { return F.lr_lambda_star_2(0, p.N, p.alpha2, p.tau2, 0, v * n_p / p.N); });
return {
  panels: [{x: g, y: [lnp, lp, ldp],
            title: "N = " + p.N + " (" + n_np + " opt out), ξ² = " + p.alpha2 + ", τ² = " + p.tau2}],
  values: {n_np: n_np, n_p: n_p, gamma2: g, lambda_np: lnp, lambda_p: lp, lambda_dp_fedavg: ldp},
  readout: (n_np > 0 ? "λ*_np = ξ²/τ² = " + U.fmt(lnp[0]) + " at every κ²; " : "no client opts out at this ρ_np; ") +
           "λ*_p falls from " + U.fmt(lp[0]) + " (κ² = 0.001) to " + U.fmt(lp[lp.length - 1]) + " (κ² = 100)"
};
"""


def _fedhdp_lambdas_reference(p: dict, page: dict) -> dict:
    n_np, n_p = _split(p)
    N, a2, t2 = int(p["N"]), p["alpha2"], p["tau2"]
    g = np.asarray(page["gamma2"], dtype=float)
    out = {"n_np": n_np, "n_p": n_p, "lambda_p": lr.optimal_lambda(2, n_np, n_p, a2, t2, 0.0, g),
           "lambda_dp_fedavg": lr.optimal_lambda(2, 0, N, a2, t2, 0.0, g * n_p / N)}
    if n_np > 0:
        out["lambda_np"] = np.broadcast_to(lr.optimal_lambda(1, n_np, n_p, a2, t2, 0.0, g), g.shape)
    return out


_FEDHDP_OPT_OUT_JS = _SPLIT_JS + """
var lam0 = U.geomspace(1e-2, 1e2, 400);
var cases = [["private", 2, n_np, n_p], ["opted_out", 1, n_np + 1, n_p - 1]];
var panels = [], values = {n_np: n_np, n_p: n_p}, texts = [];
[["r1", 1.0, "HDP-FedAvg + Ditto: r = 1 for every client"], ["rstar", null, "FedHDP: r = r*"]].forEach(function (pc) {
  var info = cases.map(function (c) {
    var a = [c[2], c[3], p.alpha2, p.tau2, 0, p.gamma2];
    var r = pc[1] === null ? F.lr_r_star.apply(null, a) : pc[1];
    var best = F["lr_lambda_opt_" + c[1]].apply(null, [r].concat(a));
    if (!(best >= 0) || !isFinite(best)) best = Infinity;
    return {a: a, r: r, best: best, key: c[0], g: c[1]};
  });
  var x = U.withPoints(lam0, info.map(function (c) { return c.best; }).filter(function (b) { return b >= 1e-2 && b <= 1e2; }));
  var ys = [], marks = [], edges = [];
  info.forEach(function (c) {
    var f = F["lr_local_error_" + c.g];
    var err = x.map(function (l) { return f.apply(null, [l, c.r].concat(c.a)); });
    var eb = isFinite(c.best) ? f.apply(null, [c.best, c.r].concat(c.a)) : null;
    ys.push(err);
    marks.push(U.marker(x, c.best, eb));
    /* a best λ beyond the plotted range is not dropped: an arrow at the edge it lies beyond, with its value */
    if (!(c.best >= 1e-2 && c.best <= 1e2))
      edges.push({side: c.best > 1e2 ? 1 : -1, color: c.g === 2 ? "#d62728" : "#2ca02c",
                  text: "best λ (" + (c.g === 2 ? "private" : "opted out") + ") = " + U.fmt(c.best)});
    values[pc[0] + "_" + c.key + "_r"] = c.r;
    values[pc[0] + "_" + c.key + "_error"] = err;
    values[pc[0] + "_" + c.key + "_best_lambda"] = c.best;
    /* with nobody opted out the private client's r weighs nothing against: no r* to report */
    texts.push(c.key.replace("_", " ") + (c.g === 2 && c.a[0] === 0 ? ": nobody opts out, r has no effect"
                                                                      : " r = " + U.fmt(c.r)));
  });
  values[pc[0] + "_lam"] = x;
  panels.push({x: x, y: ys.concat(marks), edges: edges,
               title: pc[2] + (pc[1] === null ? " (" + texts.slice(-2).join("; ") + ")" : "")});
});
return {panels: panels, values: values,
  readout: "One client: N = " + p.N + " (besides this client, " + n_np + " opted out), ξ² = " + p.alpha2 +
           ", τ² = " + p.tau2 + ", κ² = " + p.gamma2 + ".  Best λ staying private: " +
           U.fmt(values.rstar_private_best_lambda) + " (FedHDP), " + U.fmt(values.r1_private_best_lambda) +
           " (r = 1); opting out: " + U.fmt(values.rstar_opted_out_best_lambda) + " (FedHDP), " +
           U.fmt(values.r1_opted_out_best_lambda) + " (r = 1)"};
"""


def _fedhdp_opt_out_reference(p: dict, page: dict) -> dict:
    n_np, n_p = _split(p)
    out: dict[str, Any] = {"n_np": n_np, "n_p": n_p}
    for key, fixed_r in (("r1", 1.0), ("rstar", None)):
        lam = np.asarray(page[f"{key}_lam"], dtype=float)
        for label, g, n1, n2 in (("private", 2, n_np, n_p), ("opted_out", 1, n_np + 1, n_p - 1)):
            args = (n1, n2, p["alpha2"], p["tau2"], 0.0, p["gamma2"])
            r = lr.optimal_ratio(*args) if fixed_r is None else fixed_r
            out[f"{key}_{label}_r"] = r
            out[f"{key}_{label}_error"] = lr.local_error(lam, r, g, *args)
            out[f"{key}_{label}_best_lambda"] = lr.optimal_lambda_for_ratio(r, g, *args)
    return out


LIVE_FIGURES: dict[str, LiveFigure] = {f.name: f for f in [
    LiveFigure(
        "mean_estimation.error_curve",
        ("me_sigma_loc2_dp", "me_sigma_loc2", "me_E", "me_E_fed", "me_lambda_star", "me_E_star"),
        _ME_ERROR_JS,
        ({"xlabel": "MR-MTL regularization λ (log scale)", "ylabel": "mean squared error", "xlog": True, "ylog": True,
          "series": [{"label": "MR-MTL E(λ) (Lemma 6.7)", "color": _C["blue"], "width": 2.5},
                     {"label": "same without DP noise", "color": _C["gray"], "dash": [2, 3]},
                     {"label": "local training (λ = 0)", "color": _C["red"], "dash": [8, 4]},
                     {"label": "FedAvg (λ = ∞)", "color": _C["green"], "dash": [8, 4]},
                     {"label": "★ λ*, E* (Thm 6.3, Cor. 6.4)", "color": _C["black"], "marker": "star", "size": 11}]},),
        "E(λ) of MR-MTL with λ* marked (vertical line) and the local and FedAvg endpoints.",
        _me_error_reference),
    LiveFigure(
        "mean_estimation.gaps_vs_eps",
        ("me_sigma_loc2_dp", "me_gap_local", "me_gap_fed", "me_E_fed", "me_E_star", "me_eps_cross"),
        _ME_GAPS_JS,
        ({"xlabel": "privacy budget ε per silo (log scale)", "ylabel": "error gap (log scale)", "xlog": True,
          "ylog": True,
          "series": [{"label": "Δ_loc = E_loc − E* (Prop. 6.5)", "color": _C["red"]},
                     {"label": "Δ_fed = E_fed − E* (Prop. 6.6)", "color": _C["green"]},
                     {"label": "min(Δ_loc, Δ_fed)", "color": "rgba(148,103,189,0.6)", "width": 5}]},
         {"xlabel": "privacy budget ε per silo (log scale)", "ylabel": "mean squared error", "xlog": True, "ylog": True,
          "series": [{"label": "local training E_loc = σ_loc²", "color": _C["red"]},
                     {"label": "FedAvg E_fed", "color": _C["green"]},
                     {"label": "MR-MTL at λ*, E*", "color": _C["blue"], "width": 2.5}]}),
        "Top: MR-MTL's advantage over local training and over FedAvg against ε; bottom: the three errors.  "
        "The dashed vertical line is the crossover ε×; the shaded region is ε ≥ 1.",
        _me_gaps_reference),
    LiveFigure(
        "fedhdp.server_error",
        ("lr_r_star", "lr_server_error", "lr_server_error_opt"),
        _FEDHDP_SERVER_JS,
        ({"xlabel": "weight ratio r of a private update to a non-private one", "ylabel": "server error σ_s²",
          "series": [{"label": "σ_s²(r)", "color": _C["blue"], "width": 2},
                     {"label": "FedHDP, r*", "color": _C["red"], "points": True},
                     {"label": "HDP-FedAvg, r = 1", "color": _C["orange"], "points": True},
                     {"label": "DP-FedAvg (everyone private)", "color": _C["gray"], "dash": [8, 4]}]},),
        "The server error σ_s²(r) against the weight ratio r, with r* (Lemma 2) and r = 1 marked.",
        _fedhdp_server_reference),
    LiveFigure(
        "fedhdp.lambdas_vs_gamma",
        ("lr_lambda_star_1", "lr_lambda_star_2"),
        _FEDHDP_LAMBDAS_JS,
        ({"xlabel": "privacy noise κ² (log scale)", "ylabel": "optimal λ (log scale)", "xlog": True, "ylog": True,
          "series": [{"label": "λ*_np = ξ²/τ² (non-private client)", "color": _C["green"]},
                     {"label": "λ*_p (private client, FedHDP)", "color": _C["red"], "width": 2},
                     {"label": "λ* of DP-FedAvg+Ditto (all private)", "color": _C["gray"], "dash": [8, 4]}]},),
        "λ*_np and λ*_p (FedHDP, r = r*, eq. 47) against the privacy noise κ², with DP-FedAvg+Ditto's λ*.",
        _fedhdp_lambdas_reference),
    LiveFigure(
        "fedhdp.opt_out",
        ("lr_r_star", "lr_local_error_1", "lr_local_error_2", "lr_lambda_opt_1", "lr_lambda_opt_2"),
        _FEDHDP_OPT_OUT_JS,
        tuple({"xlabel": "personalization parameter λ (log scale)", "ylabel": "client's squared error",
               "xlog": True, "height": 280,
               "series": [{"label": "client stays private", "color": _C["red"], "width": 2},
                          {"label": "client opts out", "color": _C["green"], "width": 2},
                          {"label": "best λ (private)", "color": _C["red"], "points": True},
                          {"label": "best λ (opted out)", "color": _C["green"], "points": True}]}
              for _ in range(2)),
        "One client's expected squared error per coordinate against λ when it stays private and when it "
        "opts out, under HDP-FedAvg+Ditto (r = 1, top) and FedHDP (r*, bottom); the dots are each curve's minimum "
        "(a minimum beyond the plotted λ range is named at that edge, with an arrow).",
        _fedhdp_opt_out_reference),
]}


# ----------------------------------------------------------------------------------------------------
def live_controls(controls: dict[str, Any]) -> tuple[list[dict], dict[str, Any]]:
    """The HTML sliders of ipywidgets ``controls`` (full range; log for a ``FloatLogSlider``) and the
    fixed values (``ipywidgets.fixed``)."""
    import ipywidgets as widgets

    out, fixed = [], {}
    for name, c in controls.items():
        if isinstance(c, widgets.fixed):
            fixed[name] = c.value
            continue
        label = getattr(c, "description", "") or name
        if isinstance(c, widgets.FloatLogSlider):
            if c.base != 10:
                raise ValueError(f"live widgets take base-10 log sliders (control {name!r} has base {c.base})")
            out.append(dict(name=name, label=label, kind="log", min=10.0 ** c.min, max=10.0 ** c.max,
                            lo=c.min, hi=c.max, value=c.value))
        elif isinstance(c, widgets.IntSlider):
            out.append(dict(name=name, label=label, kind="int", min=c.min, max=c.max, lo=c.min, hi=c.max,
                            value=c.value))
        elif isinstance(c, widgets.FloatSlider):
            out.append(dict(name=name, label=label, kind="lin", min=c.min, max=c.max, lo=c.min, hi=c.max,
                            value=c.value))
        else:
            raise TypeError(f"live widgets take Int/Float/FloatLog sliders and fixed values "
                            f"(control {name!r} is a {type(c).__name__})")
    return out, fixed


def _num(v: float) -> str:
    return repr(float(v)) if not float(v).is_integer() else str(int(v)) if abs(v) < 1e15 else repr(float(v))


def live_html(name: str, controls: dict[str, Any], sliders: tuple[list[dict], dict[str, Any]] | None = None) -> str:
    """The self-contained HTML of the live figure ``name`` with sliders for ``controls`` (or the
    ``sliders`` that :func:`live_controls` returned for them)."""
    if name not in LIVE_FIGURES:
        raise ValueError(f"name must be one of {sorted(LIVE_FIGURES)} (got {name!r})")
    fig = LIVE_FIGURES[name]
    ctls, fixed = sliders if sliders is not None else live_controls(controls)
    uid = "fedbook-live-" + uuid.uuid4().hex[:12]
    rows = []
    for c in ctls:
        step = "1" if c["kind"] == "int" else "any"
        pos = math.log10(c["value"]) if c["kind"] == "log" else c["value"]
        title = (f"{c['label']} from {_num(c['min']):s} to {_num(c['max'])}"
                 + (" (log scale)" if c["kind"] == "log" else ""))
        rows.append(
            f'<label title="{html.escape(title)}">{html.escape(c["label"])} '
            f'<input type="range" data-param="{c["name"]}" min="{_num(c["lo"])}" max="{_num(c["hi"])}" step="{step}" '
            f'value="{_num(pos)}" aria-label="{html.escape(title)}"> '
            f'<input type="number" class="fedbook-live-value" data-param="{c["name"]}" step="any" '
            f'min="{_num(c["min"])}" max="{_num(c["max"])}" value="{_num(c["value"])}" '
            f'aria-label="{html.escape(c["label"])} value"></label>'
            f'<span class="fedbook-live-msg" data-param="{c["name"]}" role="status" aria-live="polite"></span>')
    fixed_text = ", ".join(f"{k} = {v:g}" for k, v in fixed.items() if isinstance(v, (int, float)))
    spec = {"controls": [{k: c[k] for k in ("name", "kind", "min", "max", "value")} for c in ctls],
            "fixed": fixed, "panels": list(fig.panels)}
    names = ", ".join(f"{f}: {f}" for f in dict.fromkeys(fig.functions))
    script = (f"(function () {{\n{jsgen.js_library(fig.functions)}\n"
              f"var F = {{{names}}};\n"
              f"function compute(p, F, U) {{{fig.compute}}}\n"
              f"fedbookLiveStart({json.dumps(uid)}, {json.dumps(spec, separators=(',', ':'))}, F, compute);\n}})();")
    panels = "".join('<div class="fedbook-live-title"></div><div class="fedbook-live-panel"></div>'
                     for _ in fig.panels)
    note = (f"{html.escape(fig.caption)} Computed in your browser from formulas that sympy derived "
            "(JavaScript generated from fedtheory's derivations; the page source names each one's expression). "
            "Move a slider, or type a value and press Enter." + (f" Fixed here: {html.escape(fixed_text)}." if fixed_text else ""))
    return (f'<div class="fedbook-widget fedbook-live" id="{uid}" data-live="{html.escape(name)}">'
            f'<div class="fedbook-widget-controls">{"".join(rows)}</div>'
            f'{panels}<p class="fedbook-live-readout"></p>'
            f'<p class="fedbook-widget-note">{note}</p>'
            f"<script>{script.replace('</', '<' + chr(92) + '/')}</script></div>")


def reference_values(name: str, params: dict, page_values: dict) -> dict:
    """fedtheory's numbers for the live figure ``name`` at ``params`` (on the page's own x grids)."""
    if name not in LIVE_FIGURES:
        raise ValueError(f"name must be one of {sorted(LIVE_FIGURES)} (got {name!r})")
    return LIVE_FIGURES[name].reference(params, page_values)


def _decode(v: Any) -> Any:
    """A value of the page's JSON state: ±Infinity and NaN come as strings, gaps as ``None``."""
    if isinstance(v, str) and v in ("Infinity", "-Infinity", "NaN"):
        return float(v)
    if v is None:
        return math.nan
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def compare_live(name: str, params: dict, values: dict, rtol: float = 1e-9) -> list[str]:
    """Compare the numbers a live figure computed in a page (``values`` at ``params``, from the page's
    ``fedbookLive.state()``) with :func:`reference_values`; one line per quantity that differs by more
    than ``rtol`` (relative; infinities must match), none when all agree."""
    values = {k: _decode(v) for k, v in values.items()}
    params = {k: _decode(v) for k, v in params.items()}
    ref = reference_values(name, params, values)
    problems = []
    for key, expected in ref.items():
        if key not in values:
            problems.append(f"{name}: the page does not compute {key!r}")
            continue
        page = np.atleast_1d(np.asarray(values[key], dtype=float))
        want = np.broadcast_to(np.asarray(expected, dtype=float), page.shape) if np.size(expected) in (1, page.size) \
            else None
        if want is None:
            problems.append(f"{name}: {key} has {page.size} values on the page, {np.size(expected)} in fedtheory")
            continue
        same_inf = np.isinf(page) & np.isinf(want) & (np.sign(page) == np.sign(want))
        ok = same_inf | np.isclose(page, want, rtol=rtol, atol=0.0)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            problems.append(f"{name}: {key}[{i}] = {float(page[i])!r} on the page, {float(want[i])!r} in fedtheory "
                            f"({int((~ok).sum())} of {ok.size} differ by more than {rtol:g} relative) at {params}")
    return problems
