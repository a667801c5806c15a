"""Procedures of the practitioner's pipeline (book chapter *A practitioner's pipeline*): a δ rule for practice, a
validation split inside each silo's training data, and the privacy of a hyperparameter search on private data.

Privacy notion throughout: silo-specific sample-level DP (MR-MTL paper Sec. 3), add/remove-one record of a silo's
data, accounted per silo (:mod:`fedtrain.ledger`).

* :func:`practice_delta`: one δ for every silo, the largest power of ten with ``δ·n_k ≤ 1/factor`` for every silo
  (default ``factor = 10``).  Why ``δ ≪ 1/n``: the mechanism that publishes each record independently with
  probability δ is (0, δ)-DP, and on ``n_k`` records it publishes one at least with probability ``1 − (1 − δ)^{n_k}
  ≤ n_k δ``; ``δ_k ≤ 1/(10 n_k)`` keeps that catastrophe below 10 %.  One δ for all silos (the strictest one)
  avoids pairing a stricter ε with a looser δ.  The paper's ``δ_k < n_k^{-1.1}`` (App. C.4,
  :func:`fedtrain.config.default_delta`) allows ``n_k δ_k`` up to ``n_k^{-0.1}``, i.e. 0.75 at ``n_k = 17``: a floor
  for reproducing the paper, not a rule for practice.
* :func:`holdout`: split every silo's training records into a fit part and a validation part (the test split is
  left alone, to be looked at once at the end).
* :func:`search_noise_multipliers` / :func:`search_epsilons`: a grid search of ``m`` candidates on private data, each
  candidate one DP-SGD training run (``T_k`` steps at rate ``q_k``, noise ``z_k``) plus one Gaussian release of its
  silo's clipped validation loss sum (noise multiplier ``z_s``, sensitivity the loss bound).  The silo's event is the
  composition of the ``m`` candidates (sequential composition, RDP / PLD / PRV as chosen), conservative: a record
  is in the fit part or in the validation part, not both.  Releasing the best candidate's model is
  post-processing of what the search released.
* :func:`private_validation_scores`: the noisy validation score of trained linear models (the release above).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from fedtheory.privacy.accountants import get_accountant
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.events import compose, dpsgd_event, gaussian_event
from fedtheory.validation import check_integer_at_least
from fedtrain.data.base import FederatedData
from fedtrain.data.split import split_silo

__all__ = ["practice_delta", "holdout", "candidate_event", "search_noise_multipliers", "search_epsilons",
           "run_epsilons", "linear_mse", "private_validation_scores", "plot_lambda_curve"]


def practice_delta(n, factor: float = 10.0) -> float:
    """One δ for all silos: the largest power of ten with ``δ·n_k ≤ 1/factor`` for every silo (module docstring).

    ``n``: the silos' record counts (integers ≥ 1); ``factor`` ≥ 1 (10 keeps the chance that a "publish a random
    record" mechanism leaks one below 10 %)."""
    n = np.atleast_1d(check_integer_at_least("n", n, 1))
    if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor >= 1):
        raise ValueError(f"factor must be a finite number >= 1 (got {factor!r})")
    bound = 1.0 / (float(factor) * float(n.max()))
    delta = 10.0 ** math.floor(math.log10(bound))
    while delta > bound:  # guard the floating-point log10 at exact powers of ten
        delta /= 10.0
    return delta


def holdout(data: FederatedData, fraction: float = 0.25, seed: int = 0) -> FederatedData:
    """The same silos with each silo's *training* records split into a fit part (the new training split) and a
    validation part (the new test split), ``ceil(fraction·n_k)`` records validation, at least one on each side
    (silo ``k`` with ``default_rng([seed, 1000 + k])``).  Features keep the standardization of the full training
    split (a per-silo affine map that every candidate shares)."""
    if not (isinstance(fraction, float) and 0.0 < fraction < 1.0):
        raise ValueError(f"fraction must be a float in (0, 1) (got {fraction!r})")
    seed = int(check_integer_at_least("seed", seed, 0))
    fx, fy, vx, vy = [], [], [], []
    for k, (x, y) in enumerate(zip(data.train_x, data.train_y)):
        a, b, c, d = split_silo(x, y, fraction, np.random.default_rng([seed, 1000 + k]))
        fx.append(a)
        fy.append(b)
        vx.append(c)
        vy.append(d)
    info = dict(data.info, holdout={"fraction": fraction, "seed": seed, "of": "the training split"})
    info.pop("identity", None)
    return FederatedData(name=data.name, task=data.task, train_x=fx, train_y=fy, test_x=vx, test_y=vy,
                         real=data.real, num_classes=data.num_classes, info=info, input_shape=data.input_shape)


def candidate_event(noise_multiplier: float, sample_rate: float, steps: int, score_noise: float,
                    candidates: int = 1):
    """A silo's event in a search of ``candidates`` runs: each ``steps`` DP-SGD steps at ``sample_rate`` with
    ``noise_multiplier`` composed with one Gaussian score release of noise multiplier ``score_noise``."""
    check_integer_at_least("candidates", candidates, 1)
    one = compose(dpsgd_event(noise_multiplier, sample_rate, int(steps)), gaussian_event(score_noise, 1))
    return compose(*([one] * int(candidates)))


def _check_search(eps, delta, q, steps, candidates, score_noise):
    eps, delta, q = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (eps, delta, q))
    steps = np.atleast_1d(np.asarray(steps))
    k = max(eps.size, delta.size, q.size, steps.size)
    eps, delta, q, steps = (np.broadcast_to(v, (k,)) for v in (eps, delta, q, steps))
    check_integer_at_least("candidates", candidates, 1)
    if not (math.isfinite(score_noise) and score_noise > 0):
        raise ValueError(f"score_noise must be a finite number > 0 (got {score_noise!r})")
    return eps, delta, q, steps


def search_noise_multipliers(eps, delta, q, steps, candidates: int, score_noise: float,
                             accountant: str = "rdp", cache: bool = True) -> np.ndarray:
    """Per silo, the noise multiplier ``z_k`` of every candidate's DP-SGD run such that the whole search
    (:func:`candidate_event` with ``candidates`` runs) is ``(eps_k, delta_k)``-DP by ``accountant``
    (:func:`fedtheory.privacy.calibration.calibrate`: certified ≤ the target).  ``eps, delta, q, steps``: one
    value per silo or one for all; ``cache``: the calibration's on-disk cache (keyed by the event, as the engine's);
    ``ValueError`` when the score releases alone exceed a silo's ε."""
    eps, delta, q, steps = _check_search(eps, delta, q, steps, candidates, score_noise)
    out = np.empty(eps.size)
    memo: dict = {}
    for i in range(eps.size):
        key = (float(eps[i]), float(delta[i]), float(q[i]), int(steps[i]))
        if key not in memo:
            e, d, qq, t = key
            memo[key] = calibrate(lambda z, qq=qq, t=t: candidate_event(z, qq, t, score_noise, candidates), e, d,
                                  accountant, cache=cache)
        out[i] = memo[key]
    return out


def search_epsilons(z, delta, q, steps, candidates: int, score_noise: float, accountant: str = "rdp") -> np.ndarray:
    """Per silo, the ε at ``delta_k`` that ``accountant`` certifies for the whole search at noise ``z_k`` (the check
    of :func:`search_noise_multipliers`, and of the noise the engine actually used)."""
    z, delta, q, steps = _check_search(z, delta, q, steps, candidates, score_noise)
    return _silo_epsilons(z, delta, q, steps, lambda zz, qq, t: candidate_event(zz, qq, t, score_noise, candidates),
                          accountant)


def run_epsilons(z, delta, q, steps, accountant: str = "rdp") -> np.ndarray:
    """Per silo, the ε at ``delta_k`` of one DP-SGD run alone (``steps_k`` steps at rate ``q_k``, noise ``z_k``): the
    per-run target to give the engine so that it calibrates at least the search's noise (ε falls as z grows)."""
    z, delta, q, steps = _check_search(z, delta, q, steps, 1, 1.0)
    return _silo_epsilons(z, delta, q, steps, dpsgd_event, accountant)


def _silo_epsilons(z, delta, q, steps, event_of, accountant: str) -> np.ndarray:
    """``accountant``'s ε at ``delta_k`` of ``event_of(z_k, q_k, steps_k)`` per silo, each distinct silo once."""
    acc = get_accountant(accountant)
    memo: dict = {}
    out = np.empty(z.size)
    for i in range(z.size):
        key = (float(z[i]), float(delta[i]), float(q[i]), int(steps[i]))
        if key not in memo:
            memo[key] = float(acc.epsilon(event_of(key[0], key[2], key[3]), key[1]))
        out[i] = memo[key]
    return out


def _squared_errors(models, xs, ys):
    for w, x, y in zip(models, xs, ys):
        w = np.asarray(w, dtype=float).reshape(x.shape[1] + 1, -1)
        yield (x @ w[:-1, 0] + w[-1, 0] - np.asarray(y, dtype=float)) ** 2


def linear_mse(models: Sequence[np.ndarray], xs: Sequence[np.ndarray], ys: Sequence[np.ndarray]) -> float:
    """Mean squared error over all records of all silos (weights ∝ records, the engine's test metric) of silo k's
    linear model ``models[k]`` (``(d+1, 1)``, bias last) on ``xs[k], ys[k]``."""
    if not (len(models) == len(xs) == len(ys)):
        raise ValueError(f"models, xs and ys must hold one entry per silo (got {len(models)}, {len(xs)}, {len(ys)})")
    errs = list(_squared_errors(models, xs, ys))
    return float(sum(e.sum() for e in errs) / sum(e.size for e in errs))


def private_validation_scores(models: Sequence[np.ndarray], val: FederatedData, loss_bound: float,
                              score_noise: float, rng: np.random.Generator) -> tuple[float, float]:
    """The released validation score of trained linear models and its noiseless value, ``(noisy, exact)``.

    ``models[k]``: silo k's ``(d+1, 1)`` weights (bias last, :attr:`fedtrain.engine.RunResult.models`).  Each silo
    sums its records' squared errors clipped to ``[0, loss_bound]`` (sensitivity ``loss_bound`` under add/remove) and
    adds ``N(0, (score_noise·loss_bound)²)``; the score is the sum over silos divided by the (public) number of
    validation records: the Gaussian mechanism per silo, one release per candidate (:func:`candidate_event`)."""
    if not (math.isfinite(loss_bound) and loss_bound > 0):
        raise ValueError(f"loss_bound must be a finite number > 0 (got {loss_bound!r})")
    if not (math.isfinite(score_noise) and score_noise > 0):
        raise ValueError(f"score_noise must be a finite number > 0 (got {score_noise!r})")
    if len(models) != val.num_silos:
        raise ValueError(f"models must hold one weight array per silo ({val.num_silos}; got {len(models)})")
    noisy = exact = 0.0
    for err in _squared_errors(models, val.test_x, val.test_y):
        s = float(np.minimum(err, loss_bound).sum())
        exact += s
        noisy += s + float(rng.normal(0.0, score_noise * loss_bound))
    total = float(sum(len(y) for y in val.test_y))
    return noisy / total, exact / total


def plot_lambda_curve(lams, mean, se, fedavg: tuple[float, float], picks: dict, ax=None, ylabel: str = "validation MSE"):
    """Error against λ (symlog axis, λ = 0 at the left) with ± ``se`` bars, FedAvg's mean ± SE as a band, and
    each ``picks[label] = λ`` as a vertical line (``inf`` is drawn at the right edge, labelled "FedAvg")."""
    import matplotlib.pyplot as plt

    lams, mean, se = (np.asarray(v, dtype=float) for v in (lams, mean, se))
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.errorbar(lams, mean, yerr=se, marker="o", capsize=3, color="tab:blue", label="MR-MTL (mean ± SE)")
    f_mean, f_se = fedavg
    ax.axhspan(f_mean - f_se, f_mean + f_se, color="tab:green", alpha=0.25, label="FedAvg (mean ± SE)")
    ax.axhline(f_mean, color="tab:green", lw=1)
    top = float(lams.max()) * 3
    for (label, lam), style in zip(picks.items(), ("--", ":", "-.")):
        x = top if not math.isfinite(lam) else lam
        ax.axvline(x, color="tab:red", ls=style, label=f"{label}: λ = {'∞ (FedAvg)' if not math.isfinite(lam) else f'{lam:.3g}'}")
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlim(-0.02, top * 1.2)
    ax.set_xlabel("MR-MTL strength λ (dimensionless; 0 = local training)")
    ax.set_ylabel(f"{ylabel} (squared score units)")
    ax.legend(fontsize=8)
    return ax
