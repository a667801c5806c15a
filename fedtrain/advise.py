"""``fedtrain advise``: predict MR-MTL's λ* for a real dataset from the linear-regression theory, and check it.

Prediction (:func:`predict`).  Each silo's private local model ŵ_k is treated as one noisy release of its
true linear model w_k (App. E.5 with a vector parameter, averaged per direction):

* **statistical error**: least squares on ``[x, 1]`` (the engine's model), residual variance ``σ_k²``; per
  non-null eigen-direction i of ``H_k = X̃_kᵀX̃_k/n_k`` the OLS variance is ``σ_k²/(n_k h_i)``, times
  ``(1 − (1−ηh_i)^T)²`` for gradient descent stopped after T steps from 0;
* **DP noise**: DP-SGD adds ``N(0, s_k²)`` per coordinate to every step, ``s_k = η·c·z_k/B_k`` (lr η, clip c,
  noise multiplier z_k of the run's accountant, expected batch B_k), over ``T_k`` steps.  On the quadratic
  loss a direction with curvature h contracts by ``1 − ηh`` per step, so the accumulated noise has variance
  ``s²(1 − (1−ηh)^{2T})/(1 − (1−ηh)²)``: the random walk of Sec. 5 eq. (2) (``T s²``) while ``ηhT`` is small,
  a stationary ``s²/(ηh(2−ηh))`` afterwards (:func:`fedtheory.privacy.random_walk.dp_gd_noise_variance`);
* ``σ̃_k²`` = the curvature-weighted average of both over the silo's directions (the excess test error per
  unit curvature); τ² is estimated from the spread of the silos' OLS fits around the pooled fit, measured
  in each silo's curvature, minus their statistical variances (method of moments).

The advice is :func:`fedtheory.advisor.advise_from_variances`'s: λ*_k (Thm E.5) and one common λ minimising
the average predicted error, which is what a ``fedtrain sweep`` over one λ finds.  **Caveats**: the OLS
fits and τ̂² use the training data without privacy (a planning tool for the data holder, or for a public
proxy); clipping bias, the finite number of rounds and the prox term's own contraction are ignored; the
test metric adds each silo's irreducible noise, which does not depend on λ.

``--check`` runs the λ grid of ``--lam`` (with the same data, privacy and training options as
``fedtrain run``) and reports the swept best λ next to the prediction.
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - fedtheory.advisor pulls scipy.optimize: imported where used, so that
    from fedtheory.advisor import Advice  # registering the subcommand keeps `fedtrain run` light

__all__ = ["Prediction", "predict", "nearest_grid_error", "advise_and_check", "plot_check", "register",
           "configure_advise_parser", "run_advise", "DEFAULT_CHECK_LAMS"]

#: λ grid of ``--check`` when ``--lam`` is not given.
DEFAULT_CHECK_LAMS = (0.0, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)


@dataclass(frozen=True)
class Prediction:
    """One ε's prediction: the advice, and the ingredients per silo."""

    eps: float
    advice: Advice
    stat_var: np.ndarray   # statistical part of σ̃_k²
    dp_var: np.ndarray     # DP-SGD noise part of σ̃_k²
    noise_multipliers: np.ndarray


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
        h = np.linalg.eigvalsh(H)
        h = h[h > 1e-8 * max(h.max(), 1e-300)]
        fits.append(dict(n=n, H=H, h=h, coef=coef, sigma2=sigma2, rank=int(rank)))
    return fits


def _tau2(data, fits) -> float:
    """τ̂² per unit curvature: Σ_k [d_kᵀH_k d_k − σ_k² r_k/n_k] / Σ_k tr H_k, d_k = OLS_k − pooled OLS."""
    X = np.vstack([_design(x) for x in data.train_x])
    Y = np.concatenate([np.asarray(y, dtype=float) for y in data.train_y])
    pooled = np.linalg.lstsq(X, Y, rcond=None)[0]
    num = sum(float((f["coef"] - pooled) @ f["H"] @ (f["coef"] - pooled)) - f["sigma2"] * f["rank"] / f["n"]
              for f in fits)
    return max(num / sum(float(np.trace(f["H"])) for f in fits), 1e-12)


def predict(data, config, eps_values) -> list[Prediction]:
    """Predicted λ* for every ε of ``eps_values`` (``config``: a :class:`fedtrain.config.RunConfig` giving lr,
    clip, batch size, rounds, local epochs, δ and accountant).

    Variances are in the metric the test error sees: per silo, the curvature-weighted average over directions
    ``Σ_i h_i v_i / Σ_i h_i`` (statistical ``v_i = σ_k²/(n_k h_i)``, DP-SGD as in the module docstring), with τ²
    per unit curvature (:func:`_tau2`), so that Thm E.5's ``σ̃_k²/τ²`` is the ratio of excess test errors."""
    from fedtrain import privacy
    from fedtrain.engine import resolve_budgets

    fits = _silo_fits(data)
    n = data.train_sizes
    K = len(fits)
    tau2 = _tau2(data, fits)
    trace = np.array([f["h"].sum() for f in fits])
    steps = privacy.silo_steps(n, config.batch_size, config.rounds, config.local_epochs)
    # GD from 0 stopped after T steps keeps the fraction 1 − ρ^T of the OLS solution per direction, so the
    # statistical variance there is (1 − ρ^T)² σ²/(n h) (the early-stopping bias is common to all λ and ignored)
    stop = [(-np.expm1(int(t) * np.log1p(-config.lr * f["h"]))) ** 2 for f, t in zip(fits, steps)]
    stat = np.array([f["sigma2"] * float(np.sum(g)) / f["n"] for f, g in zip(fits, stop)]) / trace
    from fedtheory.advisor import advise_from_variances
    from fedtheory.privacy.random_walk import dp_gd_noise_variance  # sympy-backed: imported here, not by `fedtrain run`

    B = privacy.expected_batch_sizes(n, config.batch_size)
    out = []
    for eps in eps_values:
        if math.isinf(eps):
            z = np.zeros(K)
        else:
            e, d = resolve_budgets(config.replace(eps=eps), data)
            z = privacy.noise_multipliers(e, d, n, config.batch_size, config.rounds, config.local_epochs,
                                          config.accountant)
        s2 = (config.lr * config.clip * z / B) ** 2
        dp = np.array([float(f["h"] @ np.atleast_1d(dp_gd_noise_variance(s2[k], config.lr, f["h"], int(steps[k]))))
                       for k, f in enumerate(fits)]) / trace
        adv = advise_from_variances(stat + dp, tau2=tau2)
        out.append(Prediction(float(eps), adv, stat, dp, z))
    return out


# --------------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------------

def register() -> None:
    """Add ``fedtrain advise`` to :mod:`fedtrain.cli` (``register_command``); called by ``fedtrain.cli``."""
    from fedtrain import cli

    def configure(p: argparse.ArgumentParser) -> None:
        configure_advise_parser(p, cli._common)

    def handler(args: argparse.Namespace) -> int:
        import sys

        from fedtrain.data.files import DatasetCorruptError, DatasetNotFoundError

        try:
            return run_advise(args, cli.configs_from_args, sys.stdout)
        except (ValueError, DatasetNotFoundError, DatasetCorruptError) as exc:
            raise SystemExit(f"fedtrain: error: {exc}") from None

    cli.register_command("advise", "predict MR-MTL's lambda* from the linear-regression theory (--check: sweep it)",
                         configure, handler)


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
    return p


def _best_lambda(rows) -> tuple[float, list[tuple[float, float]]]:
    from fedtrain.sweep import summarize

    summ = summarize(rows, by=("lam",))
    curve = sorted((float(s["lam"]), float(s["mean"])) for s in summ)
    return min(curve, key=lambda t: t[1])[0], curve


def nearest_grid_error(curve, lam: float) -> float:
    """Swept error at the grid λ nearest to ``lam`` on a log scale (λ = 0 counts as 1e-3 below the grid)."""
    lams = np.array([max(l, 1e-3) if np.isfinite(l) else 1e9 for l, _ in curve])
    target = min(max(lam, 1e-3), 1e9) if np.isfinite(lam) else 1e9
    return float(curve[int(np.argmin(np.abs(np.log(lams) - np.log(target))))][1])


def advise_and_check(data, configs, *, check: bool = True, store=None, progress=None) -> list[dict]:
    """Prediction (and, with ``check``, the swept λ curve) for every ε among ``configs`` (MR-MTL RunConfigs that
    differ only in eps, lam and seed): one dict per ε, as printed by ``fedtrain advise --json``."""
    from fedtrain.sweep import run_sweep

    eps_values = list(dict.fromkeys(float(c.eps) for c in configs))
    report = []
    for eps, pred in zip(eps_values, predict(data, configs[0], eps_values)):
        entry: dict[str, Any] = dict(eps=eps, predicted_lambda=pred.advice.common_lambda,
                                     median_lambda_k=float(np.median(pred.advice.lambda_star)),
                                     tau2=pred.advice.tau2, mean_sigma_loc2=float(pred.advice.sigma_loc2.mean()),
                                     mean_gain_over_local=float(pred.advice.gain_over_local.mean()),
                                     mean_gain_over_fedavg=float(pred.advice.gain_over_fedavg.mean()))
        if check:
            rows = run_sweep([c for c in configs if float(c.eps) == eps], store=store, data=data, progress=progress)
            best, curve = _best_lambda(rows)
            near = nearest_grid_error(curve, entry["predicted_lambda"])
            entry.update(swept_best_lambda=best, swept_curve=curve, swept_error_at_predicted=near,
                         excess_at_predicted=near / min(m for _, m in curve) - 1.0)
        report.append(entry)
    return report


def plot_check(report, *, title: str = ""):
    """Swept test error against λ per ε (λ = 0 drawn at the left edge) with the predicted λ marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    colors = plt.get_cmap("viridis")(np.linspace(0, 0.85, len(report)))
    for r, col in zip(report, colors):
        lam = np.array([l for l, _ in r["swept_curve"]])
        err = np.array([m for _, m in r["swept_curve"]])
        x = np.where(lam > 0, lam, lam[lam > 0].min() / 3)
        label = f"ε = {r['eps']:g}" if np.isfinite(r["eps"]) else "non-private"
        ax.plot(x, err, "o-", color=col, label=f"{label}: swept (best λ = {r['swept_best_lambda']:g})")
        if np.isfinite(r["predicted_lambda"]):
            ax.axvline(r["predicted_lambda"], color=col, ls="--", lw=1.2)
    ax.set_xscale("log")
    ax.set_xlabel("MR-MTL λ (leftmost point: λ = 0, local training); dashed: predicted λ")
    ax.set_ylabel("test MSE (scores scaled to [0, 1])")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def run_advise(args: argparse.Namespace, configs_from_args: Callable, out) -> int:
    """Run ``fedtrain advise``; prints a table (or ``--json``); returns the exit status."""
    from fedtrain.results import ResultsStore, jsonable
    from fedtrain.sweep import load_config_data

    if list(args.method) != ["mrmtl"]:
        raise ValueError(f"fedtrain advise predicts MR-MTL's lambda; --method must be mrmtl (got {args.method})")
    configs = configs_from_args(args)
    data = load_config_data(configs[0], args.data_dir)
    store = ResultsStore(args.results) if (args.check and args.results) else None
    report = advise_and_check(data, configs, check=args.check, store=store, progress=args.progress)
    if args.json:
        print(json.dumps(jsonable({"dataset": args.dataset, "real_data": bool(data.real), "advice": report}),
                         allow_nan=False), file=out)
        return 0
    print(f"{'eps':>6}  {'predicted lambda':>16}  {'median lambda_k':>15}  {'swept best':>10}  "
          f"{'excess error at predicted':>25}", file=out)
    for r in report:
        print(f"{r['eps']:>6g}  {r['predicted_lambda']:>16.3g}  {r['median_lambda_k']:>15.3g}  "
              f"{r.get('swept_best_lambda', float('nan')):>10.3g}  {r.get('excess_at_predicted', float('nan')):>25.2%}",
              file=out)
    print(f"data: {args.dataset} ({'real' if data.real else 'synthetic stand-in'}); theory: App. E.5 with DP-SGD "
          "noise as a contracted random walk (see fedtrain.advise)", file=out)
    return 0
