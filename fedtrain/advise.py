"""``fedtrain advise``: predict MR-MTL's λ for a real dataset from the linear-regression theory, and check it.

Prediction (:func:`predict`), in the units of the λ that training uses.  Each silo's local model is a noisy
estimate of its true linear model; MR-MTL's prox term ``(λ/2)‖w − w̄‖²`` on the quadratic loss shrinks
eigen-direction i of ``H_k = X̃_kᵀX̃_k/n_k`` (curvature h_i) toward the centre by ``λ/(h_i + λ)``, so the optimal λ
scales with the curvature (:func:`fedtheory.lambda_advisor.direction_lambda`: ``h_i`` times Theorem E.5's).  Per
direction:

* **statistical error**: least squares on ``[x, 1]`` (the engine's model), residual variance ``σ_k²``; the OLS
  variance is ``σ_k²/(n_k h_i)``, times ``(1 − (1−ηh_i)^T)²`` for gradient descent stopped after T steps from 0;
* **DP noise**: DP-SGD adds ``N(0, s_k²)`` per coordinate to every step, ``s_k = η·c·z_k/B_k`` (lr η, clip c,
  noise multiplier z_k of the run's accountant, expected batch B_k), over ``T_k`` steps; a direction with
  curvature h contracts by ``1 − ηh`` per step, so the accumulated noise has variance
  ``s²(1 − (1−ηh)^{2T})/(1 − (1−ηh)²)`` (Sec. 5 eq. (2) while ηhT is small, stationary afterwards;
  :func:`fedtheory.privacy.random_walk.dp_gd_noise_variance`).  ``dp_model="release"`` (default) shrinks this
  noise with the local model (App. E.5's release-then-combine reading); ``"prox"`` lets the prox term contract
  it during training instead (:func:`fedtheory.lambda_advisor.direction_errors`);
* τ² per parameter, assumed isotropic (``w_k ~ N(θ, τ²I)``): estimated from the spread of the silos' OLS fits
  around the pooled fit, measured in each silo's curvature, minus their statistical variances (method of moments).

With the prox term clipped together with each example's gradient (``prox_mode="clip-together"``, the default) its
pull stops growing above ``λ_sat = 2B²/(Dηz²)`` (:func:`fedtheory.lambda_advisor.prox_clip_saturation`); the report
gives ``clip_saturation_lambda`` (the silos' λ_sat averaged with the sweep's weights) and ``capped_lambda``, the
prediction capped there (with ``--check``: ``excess_at_capped``).  The model behind ``predicted_lambda`` has an
unclipped prox term: that of ``prox_mode="post-noise"``.

The advice is :func:`fedtheory.lambda_advisor.advise_directions`'s common λ, minimising the silos' predicted excess
test error averaged as a ``fedtrain sweep``'s test metric averages them, weighted by test counts
(:func:`fedtheory.lambda_advisor.sweep_weights`), which is what a sweep over one λ finds.  For comparison the unit-curvature advice
(Thm E.5 on curvature-weighted variances, :func:`fedtheory.lambda_advisor.advise_from_variances`) is reported too.
**Caveats**: the OLS fits and τ̂² use the training data without privacy (a planning tool for the data holder, or
for a public proxy); clipping bias (the prox term is clipped with the gradient), the early-stopping bias toward
the initial model and the centre's own dynamics are ignored; the test metric adds each silo's irreducible noise,
which does not depend on λ.

``--check`` runs the λ grid of ``--lam`` (with the same data, privacy and training options as ``fedtrain run``;
``--repeats N`` for the paper's re-split protocol), extended by factors of :data:`GRID_GROWTH` beyond its ends until
it brackets both the swept best and the prediction (:func:`bracket_extension`; ``grid_extended_with`` in the report
lists what was added), and reports the swept best λ next to the prediction, its
spread across repeats and the excess error at the prediction; ``--check-out FILE`` writes that report with its
provenance (:func:`write_check`).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from fedtheory.atomic_io import write_text_atomic
from fedtrain import ledger
from fedtrain.results import ResultsStore, jsonable
from fedtrain.store.provenance import git_commit
from fedtrain.sweep import load_config_data, run_sweep, summarize

if TYPE_CHECKING:  # pragma: no cover - fedtheory.lambda_advisor pulls scipy.optimize: imported where used, so that
    from fedtheory.lambda_advisor import Advice, DirectionAdvice  # importing fedtrain.cli (`fedtrain run`) stays light

__all__ = ["Prediction", "predict", "nearest_grid_error", "interpolated_error", "advise_and_check", "plot_check",
           "configure_advise_parser", "run_advise", "write_check", "load_check",
           "DEFAULT_CHECK_LAMS", "bracket_extension", "GRID_GROWTH",
           "PAPER_CHECK_LAMS"]

#: λ grid of ``--check`` when ``--lam`` is not given.
DEFAULT_CHECK_LAMS = (0.0, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
#: λ grid of the book's paper-scale check on School (200 rounds): extended until the swept best is interior.
PAPER_CHECK_LAMS = (0.0, 0.1, 0.3, 0.6, 1.0, 2.0, 3.0, 6.0, 10.0, 20.0, 30.0, 60.0, 100.0)


@dataclass(frozen=True)
class Prediction:
    """One ε's prediction: λ in training units (``directions``), the unit-curvature advice of App. E.5 on
    curvature-weighted variances (``advice``, kept for comparison), and the ingredients per silo."""

    eps: float | tuple[float, ...]  # one ε for all silos, or one per silo
    directions: DirectionAdvice
    advice: Advice
    stat_var: np.ndarray   # statistical part of σ̃_k² (curvature-weighted)
    dp_var: np.ndarray     # DP-SGD noise part of σ̃_k² (curvature-weighted, no prox)
    noise_multipliers: np.ndarray
    tau2: float
    #: per silo, the λ above which a prox term clipped with each example's gradient stops pulling harder
    #: (:func:`fedtheory.lambda_advisor.prox_clip_saturation`; inf without noise)
    clip_saturation: np.ndarray = None  # type: ignore[assignment]
    weights: np.ndarray = None  # type: ignore[assignment]

    @property
    def clip_saturation_lambda(self) -> float:
        """The silos' saturation λ averaged with the sweep's weights (inf if a silo has no noise)."""
        return float(self.clip_saturation @ self.weights)

    @property
    def predicted_lambda(self) -> float:
        """The advised common λ in the units of the λ that training uses."""
        return self.directions.common_lambda


def _design(x):
    return np.hstack([x, np.ones((x.shape[0], 1))]).astype(float)


def _silo_fits(data):
    """Per silo: eigenvalues of H_k, OLS coefficients (min-norm), residual variance σ_k², rank."""
    fits = []
    for x, y in zip(data.train_x, data.train_y):
        xt = _design(x)
        n = xt.shape[0]
        coef, _, rank, _ = np.linalg.lstsq(xt, y.astype(float), rcond=None)
        resid = y - xt @ coef
        sigma2 = float(resid @ resid) / max(n - rank, 1)
        H = xt.T @ xt / n
        h, U = np.linalg.eigh(H)
        keep = h > 1e-8 * max(h.max(), 1e-300)
        fits.append(dict(n=n, H=H, h=h[keep], U=U[:, keep], coef=coef, sigma2=sigma2, rank=int(rank)))
    return fits


def _tau2(data, fits) -> float:
    """τ̂² per unit curvature: Σ_k [d_kᵀH_k d_k − σ_k² r_k/n_k] / Σ_k tr H_k, d_k = OLS_k − pooled OLS."""
    X = np.vstack([_design(x) for x in data.train_x])
    Y = np.concatenate([np.asarray(y, dtype=float) for y in data.train_y])
    pooled = np.linalg.lstsq(X, Y, rcond=None)[0]
    num = sum(float((f["coef"] - pooled) @ f["H"] @ (f["coef"] - pooled)) - f["sigma2"] * f["rank"] / f["n"]
              for f in fits)
    return max(num / sum(float(np.trace(f["H"])) for f in fits), 1e-12)


def predict(data, config, eps_values, *, dp_model: str = "prox") -> list[Prediction]:
    """Predicted λ for every ε of ``eps_values`` (each one ε for all silos or a tuple of one ε per silo; ``config``: a :class:`fedtrain.config.RunConfig` giving lr,
    clip, batch size, rounds, local epochs, δ and accountant; its method must be ``"mrmtl"``, ``ValueError``
    otherwise: the theory and the privacy plan are MR-MTL's).

    The prediction is :func:`fedtheory.lambda_advisor.advise_directions`'s common λ minimising the silos' excess
    errors weighted as the sweep's test metric weights them (test counts, :func:`fedtheory.lambda_advisor.sweep_weights`),
    in the units of the λ that training uses: per silo the eigen-directions of ``H_k`` with their curvatures ``h_i``, statistical variance
    ``σ_k²/(n_k h_i)·(1 − ρ_i^T)²`` and DP-SGD noise (per step ``s_k² = (ηc z_k/B_k)²`` over ``T_k`` steps,
    contracted by the prox term for ``dp_model="prox"``), τ² per parameter (:func:`_tau2`, isotropic).  The
    unit-curvature advice (Thm E.5 on curvature-weighted variances ``Σ_i h_i v_i/Σ_i h_i``) comes with it as
    ``advice``: it omits the factor h of :func:`fedtheory.lambda_advisor.direction_lambda`."""
    from fedtrain.engine import resolve_budgets

    if config.method != "mrmtl":  # the theory and the privacy plan below are MR-MTL's (no extra passes, no selections)
        raise ValueError(f"config.method must be 'mrmtl': the prediction is of MR-MTL's lambda (App. E.5), on "
                         f"MR-MTL's privacy plan (got {config.method!r})")
    fits = _silo_fits(data)
    n = data.train_sizes
    K = len(fits)
    tau2 = _tau2(data, fits)
    trace = np.array([f["h"].sum() for f in fits])
    # the silos' privacy plan (MR-MTL's: local_epochs DP-SGD epochs per round, no selections), as the engine's
    plan = ledger.silo_privacy_plan(n, config.batch_size, config.rounds, config.local_epochs)
    steps = plan.dpsgd_steps
    # GD from 0 stopped after T steps keeps the fraction 1 − ρ^T of the OLS solution per direction, so the
    # statistical variance there is (1 − ρ^T)² σ²/(n h) (the early-stopping bias is common to all λ and ignored)
    stop = [(-np.expm1(int(t) * np.log1p(-config.lr * f["h"]))) ** 2 for f, t in zip(fits, steps)]
    stat_dir = [f["sigma2"] * g / (f["n"] * f["h"]) for f, g in zip(fits, stop)]
    stat = np.array([float(f["h"] @ v) for f, v in zip(fits, stat_dir)]) / trace
    from fedtheory.lambda_advisor import (DirectionSilo, advise_directions, advise_from_variances, prox_clip_saturation,
                                          sweep_weights)
    from fedtheory.privacy.random_walk import dp_gd_noise_variance  # sympy-backed: imported here, not by `fedtrain run`

    B = ledger.expected_batch_sizes(n, config.batch_size)
    weights = sweep_weights(data.test_sizes)   # the sweep's test metric weights the silos by their test counts
    out = []
    for eps in eps_values:  # one ε for all silos, or one per silo (a sequence of K values)
        if isinstance(eps, (list, tuple, np.ndarray)):
            eps = tuple(float(e) for e in eps)
        if np.all(np.isinf(np.atleast_1d(np.asarray(eps, dtype=float)))):
            z = np.zeros(K)
        else:
            e, d = resolve_budgets(config.replace(eps=eps), data)
            z = ledger.noise_multipliers(plan, e, d, plan.sample_rates, config.accountant)
        s2 = (config.lr * config.clip * z / B) ** 2
        dp = np.array([float(f["h"] @ np.atleast_1d(dp_gd_noise_variance(s2[k], config.lr, f["h"], int(steps[k]))))
                       for k, f in enumerate(fits)]) / trace
        adv = advise_from_variances(stat + dp, tau2=tau2)
        silos = [DirectionSilo(f["h"], f["U"], v, float(s2[k]), int(steps[k]))
                 for k, (f, v) in enumerate(zip(fits, stat_dir))]
        sat = np.full(K, np.inf)
        noisy = z > 0
        sat[noisy] = prox_clip_saturation(B[noisy], fits[0]["H"].shape[0], config.lr, z[noisy])
        out.append(Prediction(eps if isinstance(eps, tuple) else float(eps),
                              advise_directions(silos, tau2, config.lr, dp_model, weights=weights), adv, stat, dp, z,
                              tau2, sat, weights))
    return out


# --------------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------------

def configure_advise_parser(p: argparse.ArgumentParser, common: Callable[..., None]) -> argparse.ArgumentParser:
    """``fedtrain advise``'s arguments: ``common`` adds ``fedtrain sweep``'s data/privacy/training options."""
    common(p, sweep=True)
    for action in p._actions:  # the method is MR-MTL; --lam is the --check grid
        if action.dest == "method":
            action.required, action.default = False, ["mrmtl"]
        if action.dest == "lam":
            action.default = list(DEFAULT_CHECK_LAMS)
            action.help = "lambda grid of --check (comma-separated; default " + ",".join(map(str, DEFAULT_CHECK_LAMS)) + ")"
        if action.dest == "rounds":  # the advice is for one training length: a list is refused, not cut to its head
            def one_value(text: str, parse=action.type):
                if "," in text:
                    raise argparse.ArgumentTypeError(f"advise predicts for one number of rounds (got {text!r}); "
                                                     "run it once per value")
                return parse(text)
            action.type = one_value
    p.add_argument("--check", action="store_true", help="also sweep --lam and report the best lambda per eps")
    p.add_argument("--dp-model", choices=("release", "prox"), default="release",
                   help="how DP-SGD noise enters the prediction (fedtheory.lambda_advisor.direction_errors; default release)")
    p.add_argument("--check-out", default=None, metavar="FILE",
                   help="with --check: write the report and its provenance (command, commit, seconds, settings) "
                        "to FILE as JSON, atomically")
    return p


def _best_lambda(rows) -> tuple[float, list[tuple[float, float]]]:
    summ = summarize(rows, by=("lam",))
    curve = sorted((float(s["lam"]), float(s["mean"])) for s in summ)
    return min(curve, key=lambda t: t[1])[0], curve


def nearest_grid_error(curve, lam: float) -> float:
    """Swept error at the grid λ nearest to ``lam`` on a log scale (λ = 0 counts as 1e-3 below the grid)."""
    lams = np.array([max(l, 1e-3) if np.isfinite(l) else 1e9 for l, _ in curve])
    target = min(max(lam, 1e-3), 1e9) if np.isfinite(lam) else 1e9
    return float(curve[int(np.argmin(np.abs(np.log(lams) - np.log(target))))][1])


def interpolated_error(curve, lam: float) -> float:
    """Swept error at ``lam``, linearly interpolated in log λ between the positive grid points (below the
    smallest: linear in λ from λ = 0 if the grid has it; outside the grid: the nearest end)."""
    pts = sorted((float(l), float(m)) for l, m in curve if np.isfinite(l))
    pos = [(l, m) for l, m in pts if l > 0]
    if not np.isfinite(lam):
        return nearest_grid_error(curve, lam)
    if pos and lam >= pos[0][0]:
        x = np.log([l for l, _ in pos])
        return float(np.interp(np.log(lam), x, [m for _, m in pos]))
    if pts and pts[0][0] == 0 and pos:
        return float(np.interp(lam, [0.0, pos[0][0]], [pts[0][1], pos[0][1]]))
    return float(pts[0][1])


#: ``--check`` extends its λ grid by this factor beyond the edge (and at most this many times in all).
GRID_GROWTH = 2.0
MAX_GRID_EXTENSIONS = 12


def bracket_extension(lams, best: float, predicted: float) -> list[float]:
    """The λ values to add to the swept grid ``lams`` so that it brackets the swept best and the prediction: one
    step of :data:`GRID_GROWTH` beyond the largest λ if the best or a (finite) prediction is at or above it, and
    below the smallest positive λ if the best is that λ with nothing below it, or a positive prediction lies below
    it; ``[]`` when both are interior (λ = 0, local training, is an end the grid cannot pass; λ = ∞ is not swept)."""
    lams = sorted(float(l) for l in lams)
    pos = [l for l in lams if l > 0]
    if not pos:
        return []
    out = []
    top, low = pos[-1], pos[0]
    if best >= top or (math.isfinite(predicted) and predicted >= top):
        out.append(top * GRID_GROWTH)
    if (best == low and lams[0] == low) or (0 < predicted < low):
        out.append(low / GRID_GROWTH)
    return out


def _split_key(c) -> str:
    return repr(sorted(dict(c.dataset_options).items()))


def _quantiles(x, qs=(0.1, 0.9)) -> list[float]:
    return np.quantile(np.asarray(x, dtype=float), qs, method="inverted_cdf").tolist()


def advise_and_check(data, configs, *, check: bool = True, store=None, progress=None, data_dir=None,
                     dp_model: str = "release", bootstrap: int = 1000, seed: int = 0) -> list[dict]:
    """Prediction (and, with ``check``, the swept λ curve) for every ε among ``configs`` (MR-MTL RunConfigs that
    differ only in eps, lam, seed and the data split, e.g. the repeats of :func:`fedtrain.sweep.repeat_configs`):
    one dict per ε, as printed by ``fedtrain advise --json``.

    With several splits (the paper's protocol: re-split repeats) the prediction is made on each split and the
    median reported with its range; the swept curve is the mean over the repeats (with its standard error), the
    swept best is its minimiser, ``swept_best_per_repeat`` each repeat's own, and ``swept_best_quantiles`` the
    10 % / 90 % quantiles of the minimiser over ``bootstrap`` resamplings of the repeats.  ``data`` is used for the
    split it holds (``None``: every split is loaded, ``data_dir`` for real files).  The excess error at the
    prediction interpolates the mean curve in log λ (:func:`interpolated_error`)."""
    eps_values = list(dict.fromkeys(float(c.eps) for c in configs))
    splits: dict[str, Any] = {}
    for c in configs:
        splits.setdefault(_split_key(c), c)
    preds: dict[str, list] = {}
    split_data: dict[str, Any] = {}
    other_model = "prox" if dp_model == "release" else "release"
    for j, (key, c) in enumerate(splits.items()):
        d = data if (data is not None and len(splits) == 1) else load_config_data(c, data_dir)
        split_data[key] = d
        preds[key] = dict(model=predict(d, c, eps_values, dp_model=dp_model))
        if j == 0:   # the other noise model, for comparison, on the first split
            other = predict(d, c, eps_values, dp_model=other_model)
    report = []
    for i, eps in enumerate(eps_values):
        lam_pred = [p["model"][i].predicted_lambda for p in preds.values()]
        unit = [p["model"][i].advice.common_lambda for p in preds.values()]
        first = next(iter(preds.values()))["model"][i]
        entry: dict[str, Any] = dict(
            eps=eps, dp_model=dp_model, predicted_lambda=float(np.median(lam_pred)),
            predicted_lambda_range=[float(min(lam_pred)), float(max(lam_pred))],
            predicted_lambda_per_split=[float(v) for v in lam_pred],
            other_dp_model=other_model, other_dp_model_lambda=float(other[i].predicted_lambda),
            unit_curvature_lambda=float(np.median(unit)),
            median_lambda_k=float(np.median(first.directions.lambda_k)),
            tau2=float(np.median([p["model"][i].tau2 for p in preds.values()])),
            mean_sigma_loc2=float(first.advice.sigma_loc2.mean()),
            mean_gain_over_local=float(first.advice.gain_over_local.mean()),
            mean_gain_over_fedavg=float(first.advice.gain_over_fedavg.mean()),
            clip_saturation_lambda=float(np.median([p["model"][i].clip_saturation_lambda for p in preds.values()])))
        if check:
            sweep = lambda cs: run_sweep(cs, store=store, data=data if len(splits) == 1 else None,  # noqa: E731
                                         data_dir=data_dir, progress=progress)
            pred_of = {k: p["model"][i].predicted_lambda for k, p in preds.items()}
            entry.update(_swept_check([c for c in configs if float(c.eps) == eps], sweep, entry, pred_of,
                                      bootstrap=bootstrap, seed=seed))
        report.append(entry)
    return report


def _swept_check(mine: list, sweep: Callable, entry: dict, pred_of: dict, *, bootstrap: int, seed: int) -> dict:
    """The check of one ε's prediction (``entry``, its ``predicted_lambda``, ``unit_curvature_lambda`` and
    ``clip_saturation_lambda``) against the swept curve of its configurations ``mine`` (``sweep(configs)`` → their
    rows): the grid extended until it brackets the swept best and the prediction (:func:`bracket_extension`), the
    mean curve over the repeats with its standard error, the best λ per repeat and its bootstrap quantiles, and the
    excess errors at the prediction (``pred_of``: each split's own), at unit curvature and at the capped λ: the
    fields :func:`advise_and_check` adds with ``check``."""
    added: list[float] = []
    rows = sweep(mine)
    while True:   # extend the grid until it brackets the swept best and the prediction
        best, curve = _best_lambda(rows)
        more = bracket_extension(sorted({float(c.lam) for c in mine}), best, entry["predicted_lambda"])
        if not more or len(added) >= MAX_GRID_EXTENSIONS:
            break
        added += more
        top = max(float(c.lam) for c in mine)
        templates = [c for c in mine if float(c.lam) == top]   # one per split and seed
        new = [c.replace(lam=lam) for lam in more for c in templates]
        mine, rows = mine + new, list(rows) + list(sweep(new))
    out: dict[str, Any] = {"grid_extended_with": sorted(added)}
    lams = sorted({float(c.lam) for c in mine})
    by_split: dict[str, dict[float, float]] = {}
    for c, r in zip(mine, rows):
        by_split.setdefault(_split_key(c), {})[float(c.lam)] = float(r.test_metric)
    table = np.array([[v.get(l, np.nan) for l in lams] for v in by_split.values()])   # (repeats, λ)
    per_rep = [lams[int(np.nanargmin(row))] for row in table]
    rng = np.random.default_rng(seed)
    R = table.shape[0]
    boot = [lams[int(np.nanargmin(np.nanmean(table[rng.integers(0, R, R)], axis=0)))]
            for _ in range(int(bootstrap))] if R > 1 else [best]
    se = (np.nanstd(table, axis=0, ddof=1) / np.sqrt(R)).tolist() if R > 1 else [0.0] * len(lams)
    near = interpolated_error(curve, entry["predicted_lambda"])
    err_best = min(m for _, m in curve)
    # the same excess per repeat (interpolated on each repeat's own curve, against the mean curve's best λ)
    ib = lams.index(best)
    per_rep_excess = [interpolated_error(list(zip(lams, row)), pred_of.get(k, entry["predicted_lambda"]))
                      / row[ib] - 1.0 for k, row in zip(by_split, table)]
    out.update(repeats=R, swept_lams=lams, swept_curve=curve, swept_curve_se=se, swept_best_lambda=best,
               swept_best_per_repeat=per_rep, swept_best_quantiles=_quantiles(boot),
               swept_error_at_predicted=near, excess_at_predicted=near / err_best - 1.0,
               excess_at_predicted_per_repeat=per_rep_excess,
               excess_at_unit_curvature=(interpolated_error(curve, entry["unit_curvature_lambda"])
                                         / err_best - 1.0))
    capped = min(entry["predicted_lambda"], entry["clip_saturation_lambda"])
    out.update(capped_lambda=capped, excess_at_capped=interpolated_error(curve, capped) / err_best - 1.0)
    return out


def plot_check(report, *, title: str = ""):
    """Swept test error against λ per ε (mean over repeats ± 1 SE; λ = 0 drawn at the left edge) with the
    predicted λ marked (dashed) and the swept best's 10-90 % range across repeats (shaded)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    # viridis up to 0.6 (3:1 contrast on white); its yellow end (1.7:1 at 0.85) is unreadable as a line
    colors = plt.get_cmap("viridis")(np.linspace(0, 0.6, len(report)))
    for r, col in zip(report, colors):
        lam = np.array([l for l, _ in r["swept_curve"]])
        err = np.array([m for _, m in r["swept_curve"]])
        se = np.asarray(r.get("swept_curve_se", np.zeros_like(err)))
        x = np.where(lam > 0, lam, lam[lam > 0].min() / 3)
        label = f"ε = {r['eps']:g}" if np.isfinite(r["eps"]) else "non-private"
        ax.errorbar(x, err, yerr=se, fmt="o-", color=col, ms=4, capsize=2,
                    label=f"{label}: swept best λ = {r['swept_best_lambda']:g}, predicted {r['predicted_lambda']:.3g}")
        if np.isfinite(r["predicted_lambda"]):
            ax.axvline(r["predicted_lambda"], color=col, ls="--", lw=1.2)
        if "swept_best_quantiles" in r:
            lo, hi = r["swept_best_quantiles"]
            ax.axvspan(max(lo, x.min()), max(hi, x.min()) * 1.02, color=col, alpha=0.12)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("MR-MTL λ (leftmost point: λ = 0, local training); dashed: predicted λ")
    ax.set_ylabel("test MSE")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def write_check(report, path, *, command: str, seconds: float, settings: dict, data_summary=None,
                commit: str | None = None) -> None:
    """Write ``report`` with its provenance to ``path`` as JSON, atomically (:func:`fedtheory.atomic_io.write_text_atomic`):
    the command, the git commit of the code when the computation started (``commit``, from
    :func:`fedtrain.store.provenance.git_commit`, the one provenance of every stored result: ``+dirty`` when
    ``fedtrain/`` or ``fedtheory/`` had uncommitted changes, ``$FEDBOOK_COMMIT`` on a copied tree; taken now if not
    given) and whether the tree had uncommitted changes (``None``: not known, a copy or no git), the seconds it took
    and this process's CPU seconds, the settings, and the data's name and SHA-256."""
    commit = git_commit() if commit is None else commit
    data = None
    if data_summary is not None:
        data = {k: data_summary.get(k) for k in ("name", "real", "num_silos", "dim", "sha256")}
    known = commit != "unknown" and not commit.endswith(" (copy)")
    doc = {"command": command, "commit": commit, "uncommitted_changes": commit.endswith("+dirty") if known else None,
           "seconds": round(float(seconds), 1),
           "cpu_seconds": round(time.process_time(), 1), "settings": settings,
           "data": data, "advice": report}
    target = Path(path).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, json.dumps(jsonable(doc), indent=1, allow_nan=False) + "\n")


def load_check(path) -> dict:
    """Read a report written by :func:`write_check` (``fedtrain advise --check --check-out FILE``); a missing file
    names where it was looked for and the command that makes it."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"advisor check report not found at {os.path.abspath(path)}; make it with "
                                "`fedtrain advise --dataset school --eps 0.5,1,2 --lr 0.01 --lam "
                                + ",".join(f"{v:g}" for v in PAPER_CHECK_LAMS)
                                + " --repeats 10 --check --check-out FILE`")
    with open(path) as fh:
        doc = json.load(fh)
    for key in ("command", "settings", "advice"):
        if key not in doc:
            raise ValueError(f"{path} is not an advisor check report (no {key!r})")
    return doc


def _command_line(args: argparse.Namespace) -> str:
    """The ``fedtrain advise`` command that reproduces ``args`` (every option given; ``--data-dir`` left out, the
    data being identified by its SHA-256 in the report)."""

    def text(v):
        if isinstance(v, (list, tuple)):
            return ",".join(text(x) for x in v)
        return f"{v:g}" if isinstance(v, float) else str(v)

    parts = ["fedtrain", "advise"]
    for key, value in vars(args).items():
        if key in ("command", "method", "data_dir", "progress") or value is None or value is False:
            continue
        if key == "dataset_option":
            parts += [f"-D {shlex.quote(f'{k}={text(v)}')}" for k, v in value]
            continue
        flag = "--" + key.replace("_", "-")
        parts.append(flag if value is True else f"{flag} {shlex.quote(text(value))}")
    return " ".join(parts + ["--no-progress"] if args.progress is False else parts)


def run_advise(args: argparse.Namespace, configs_from_args: Callable, out) -> int:
    """Run ``fedtrain advise``; prints a table (or ``--json``); returns the exit status."""
    if list(args.method) != ["mrmtl"]:
        raise ValueError(f"fedtrain advise predicts MR-MTL's lambda; --method must be mrmtl (got {args.method})")
    t0 = time.time()
    commit = git_commit() if args.check_out else None   # the code that computes, not the code at write time
    configs = configs_from_args(args)
    one_split = len({_split_key(c) for c in configs}) == 1
    data = load_config_data(configs[0], args.data_dir)
    store = ResultsStore(args.results) if (args.check and args.results) else None
    report = advise_and_check(data if one_split else None, configs, check=args.check, store=store,
                              progress=args.progress, data_dir=args.data_dir, dp_model=args.dp_model)
    if args.check_out:
        if not args.check:
            raise ValueError("--check-out writes the --check report: give --check too")
        c0 = configs[0]
        settings = dict(dataset=c0.dataset, method=c0.method, rounds=c0.rounds, lr=sorted({c.lr for c in configs}),
                        batch_size=c0.batch_size, clip=c0.clip, delta=c0.delta, local_epochs=c0.local_epochs,
                        accountant=c0.accountant, prox_mode=c0.prox_mode, adjacency="add/remove one record of a silo",
                        eps=sorted({c.eps for c in configs}), lam=sorted({c.lam for c in configs}),
                        repeats=len({_split_key(c) for c in configs}), dp_model=args.dp_model)
        write_check(report, args.check_out, command=_command_line(args), seconds=time.time() - t0, settings=settings,
                    data_summary=data.summary(), commit=commit)
    if args.json:
        print(json.dumps(jsonable({"dataset": args.dataset, "real_data": bool(data.real), "advice": report}),
                         allow_nan=False), file=out)
        return 0
    print(f"{'eps':>6}  {'predicted lambda':>16}  {'unit-curvature':>14}  {'swept best':>10}  {'10-90 %':>13}  "
          f"{'excess error at predicted':>25}", file=out)
    for r in report:
        q = r.get("swept_best_quantiles", [float("nan")] * 2)
        print(f"{r['eps']:>6g}  {r['predicted_lambda']:>16.3g}  {r['unit_curvature_lambda']:>14.3g}  "
              f"{r.get('swept_best_lambda', float('nan')):>10.3g}  {q[0]:>6.3g}-{q[1]:<6.3g}  "
              f"{r.get('excess_at_predicted', float('nan')):>25.2%}", file=out)
    print(f"data: {args.dataset} ({'real' if data.real else 'synthetic stand-in'}); theory: App. E.5 per "
          f"eigen-direction (training units), DP-SGD noise model {args.dp_model!r} (see fedtrain.advise)", file=out)
    return 0
