"""λ* advisor: from silo sizes and privacy budgets to MR-MTL's silo-specific λ*_k and the predicted gains.

Model: the heterogeneous mean-estimation model of the MR-MTL paper, App. E.5.  Silo k holds ``n_k`` records
with data variance ``σ_k²`` and releases its clipped mean once with the Gaussian mechanism at its own budget
``(ε_k, δ_k)``: noise std ``σ_DP,k = c·z_k`` on the sum, so its local variance is
``σ̃_k² = σ_k²/n_k + σ_DP,k²/n_k²`` (eq. 39 with ``n_k``).  Centres ``w_k ~ N(θ, τ²)``.  Then

* ``λ*_k`` is Theorem E.5's (:func:`fedtheory.mean_estimation.optimal_lambdas_heterogeneous`; a negative
  value means "FedAvg", reported as ``inf``);
* the predicted errors are ``E_k(λ) = α²σ̃_k² + (1−α)²V_k`` at λ = 0 (local), ∞ (FedAvg) and λ*_k, and
  the gains are their differences (Props 6.5/6.6 generalised to E.5).

**Calibration ("paper defaults").**  ``calibration="analytic"`` (default): the smallest noise with the exact
Gaussian profile (Balle & Wang); ``"rdp"``: RDP + Lemma A.2 (the paper's Fig. 7 code); ``"classic"``:
``sqrt(2 ln(1.25/δ))/ε`` (the paper's Sec. 6 text, valid for ε < 1).  All three are valid (ε_k, δ_k)-DP
for add/remove-one adjacency with L2 sensitivity c.

**τ².**  Either given, or estimated from the silos' private releases ``ŵ_k`` (post-processing, no privacy
cost).  Default ``tau2_method="reml"``: restricted maximum likelihood under ``ŵ_k ~ N(θ, τ² + σ̃_k²)`` (θ
profiled out by precision weighting), which weights each release by its precision; ``"moment"``: the
unweighted method of moments ``τ̂² = [S − (1 − 1/K)Σ_k σ̃_k²]/(K − 1)``, ``S = Σ_k (ŵ_k − w̄)²`` (unbiased, but
one very noisy silo dominates it).  Both are clipped at 0 (λ* = ∞).  The uncertainty of everything derived from
τ̂² is a parametric bootstrap: releases are redrawn from the fitted model and the whole estimate redone;
the report gives 10 % and 90 % quantiles.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from fedtheory._validation import as_float_array, check_choice, check_integer_at_least, check_positive
from fedtheory.mean_estimation import local_variance
from fedtheory.mean_estimation.heterogeneous import mse_heterogeneous, optimal_lambdas_heterogeneous

__all__ = ["CALIBRATIONS", "Advice", "noise_std", "estimate_tau2_heterogeneous", "estimate_tau2_reml",
           "advise_from_variances", "advise"]

CALIBRATIONS = ("analytic", "rdp", "classic")


def noise_std(eps, delta, clip: float = 1.0, calibration: str = "analytic") -> np.ndarray:
    """Per-silo noise std ``σ_DP,k`` of one Gaussian release at ``(ε_k, δ_k)`` (0 where ε_k = ∞)."""
    from fedtheory.privacy.gaussian import analytic_gaussian_sigma, gaussian_sigma, rdp_gaussian_sigma

    check_choice("calibration", calibration, CALIBRATIONS)
    eps = as_float_array("eps", eps)
    if (eps <= 0).any() or np.isnan(eps).any():
        raise ValueError(f"eps must be > 0 per silo (inf = non-private; got {eps.min()!r})")
    delta = np.broadcast_to(as_float_array("delta", delta), eps.shape)
    c = float(check_positive("clip", clip))
    fn = {"analytic": analytic_gaussian_sigma, "rdp": rdp_gaussian_sigma, "classic": gaussian_sigma}[calibration]
    out = np.zeros(eps.shape)
    for i in np.ndindex(eps.shape):
        if np.isfinite(eps[i]):
            out[i] = float(fn(float(eps[i]), float(delta[i]), c))
    return out


def estimate_tau2_heterogeneous(releases, sigma_loc2):
    """Unbiased method-of-moments τ̂² from releases with known per-silo variances (silos on the last axis);
    may be negative (callers clip)."""
    w = as_float_array("releases", releases)
    s = np.broadcast_to(as_float_array("sigma_loc2", sigma_loc2), w.shape)
    K = w.shape[-1]
    if K < 2:
        raise ValueError(f"releases needs K >= 2 silos on its last axis (got {K})")
    S = ((w - w.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
    out = (S - (1.0 - 1.0 / K) * s.sum(axis=-1)) / (K - 1)
    return out.item() if np.ndim(out) == 0 else out


def estimate_tau2_reml(releases, sigma_loc2) -> float:
    """REML estimate of τ² from releases ``ŵ_k ~ N(θ, τ² + σ̃_k²)`` (1-d bounded search; ≥ 0)."""
    from scipy import optimize

    w = as_float_array("releases", releases).ravel()
    s = np.broadcast_to(as_float_array("sigma_loc2", sigma_loc2), w.shape).astype(float)
    if w.size < 2:
        raise ValueError(f"releases needs K >= 2 silos (got {w.size})")

    def neg(t2):
        v = t2 + s
        p = 1.0 / v
        th = float((p * w).sum() / p.sum())
        return 0.5 * (np.log(v).sum() + np.log(p.sum()) + (p * (w - th) ** 2).sum())

    hi = max(float(np.var(w, ddof=1)) * 10.0, float(s.max()), 1e-12)
    res = optimize.minimize_scalar(neg, bounds=(0.0, hi), method="bounded", options={"xatol": hi * 1e-10})
    return float(res.x) if neg(res.x) < neg(0.0) else 0.0


@dataclass(frozen=True)
class Advice:
    """What :func:`advise` returns (per-silo arrays have one entry per silo)."""

    lambda_star: np.ndarray       # λ*_k (Thm E.5), inf = FedAvg
    common_lambda: float          # one λ for all silos minimising the average error (grid search)
    sigma_loc2: np.ndarray        # σ̃_k²
    tau2: float                   # given or estimated (clipped at 0)
    mse_local: np.ndarray
    mse_fedavg: np.ndarray
    mse_mrmtl: np.ndarray         # at λ*_k
    gain_over_local: np.ndarray   # mse_local − mse_mrmtl
    gain_over_fedavg: np.ndarray  # mse_fedavg − mse_mrmtl
    tau2_estimated: bool
    quantiles: Optional[dict] = None  # bootstrap 10 % / 90 % of tau2, common_lambda, mean gains

    def table(self) -> list[tuple]:
        """Rows (silo, σ̃², λ*, local, FedAvg, MR-MTL(λ*)) for display."""
        return [(k, self.sigma_loc2[k], self.lambda_star[k], self.mse_local[k], self.mse_fedavg[k], self.mse_mrmtl[k])
                for k in range(self.sigma_loc2.size)]


_GRID = np.concatenate([[0.0], np.logspace(-4, 4, 161), [np.inf]])


def _core(s: np.ndarray, tau2: float):
    lam = optimal_lambdas_heterogeneous(s, tau2)
    lam = np.where(lam < 0, np.inf, lam)
    loc = np.asarray(mse_heterogeneous(0.0, s, tau2)).reshape(-1)   # = σ̃_k²
    fed = np.asarray(mse_heterogeneous(np.inf, s, tau2)).reshape(-1)
    opt = mse_heterogeneous(lam, s, tau2, per_silo=True)
    avg = mse_heterogeneous(_GRID, s, tau2).mean(axis=-1)
    return lam, float(_GRID[int(np.argmin(avg))]), np.asarray(loc).reshape(-1), fed, opt


def advise_from_variances(sigma_loc2, tau2: Optional[float] = None, releases=None, *, bootstrap: int = 200,
                          seed: int = 0, tau2_method: str = "reml") -> Advice:
    """The advice for known local variances ``σ̃_k²`` and either ``tau2`` or the private ``releases`` ŵ_k
    (τ² then estimated by ``tau2_method``: ``"reml"`` or ``"moment"``)."""
    check_choice("tau2_method", tau2_method, ("reml", "moment"))
    est = (estimate_tau2_reml if tau2_method == "reml"
           else lambda w_, s_: float(estimate_tau2_heterogeneous(w_, s_)))
    s = as_float_array("sigma_loc2", sigma_loc2).ravel()
    if s.size < 2 or (s <= 0).any():
        raise ValueError("sigma_loc2 must hold K >= 2 positive local variances (one per silo)")
    if (tau2 is None) == (releases is None):
        raise ValueError("give exactly one of tau2 (a number >= 0) or releases (the K private silo estimates)")
    estimated = tau2 is None
    if estimated:
        w = as_float_array("releases", releases).ravel()
        if w.shape != s.shape:
            raise ValueError(f"releases must hold one value per silo ({s.size}; got {w.size})")
        tau2 = max(0.0, est(w, s))
    else:
        tau2 = float(as_float_array("tau2", tau2))
        if tau2 < 0:
            raise ValueError(f"tau2 must be >= 0 (got {tau2!r})")
    t2 = max(tau2, 1e-300)
    lam, common, loc, fed, opt = _core(s, t2)
    quant = None
    if estimated and bootstrap:
        bootstrap = int(check_integer_at_least("bootstrap", bootstrap, 10))
        rng = np.random.default_rng(seed)
        w_b = np.sqrt(t2) * rng.standard_normal((bootstrap, s.size)) + np.sqrt(s) * rng.standard_normal((bootstrap, s.size))
        t_b = np.maximum(np.array([est(row, s) for row in w_b]), 1e-300)
        res = [_core(s, float(t)) for t in t_b]
        # realised gains under the *true* (fitted) model when λ is chosen from a re-estimated τ²
        g_loc = [float(np.mean(loc - mse_heterogeneous(r[0], s, t2, per_silo=True))) for r in res]
        g_fed = [float(np.mean(fed - mse_heterogeneous(r[0], s, t2, per_silo=True))) for r in res]
        q = lambda x: tuple(np.quantile(np.asarray(x, dtype=float), [0.1, 0.9], method="inverted_cdf").tolist())  # noqa: E731
        quant = {"tau2": q(t_b), "common_lambda": q([r[1] for r in res]), "mean_gain_over_local": q(g_loc),
                 "mean_gain_over_fedavg": q(g_fed)}
    return Advice(lam, common, s, tau2, loc, fed, opt, loc - opt, fed - opt, estimated, quant)


def advise(n, eps, delta, *, sigma2=1.0, clip: float = 1.0, tau2: Optional[float] = None, releases=None,
           calibration: str = "analytic", bootstrap: int = 200, seed: int = 0, tau2_method: str = "reml") -> Advice:
    """λ*_k (App. E.5) and predicted gains for silos of sizes ``n_k`` with budgets ``(ε_k, δ_k)``.

    Parameters
    ----------
    n : per-silo record counts (K >= 2 integers >= 1).
    eps, delta : per-silo budgets (scalars broadcast; ε = inf is a non-private silo).
    sigma2 : per-silo data variance σ_k² (scalar broadcasts).
    clip : clipping bound c = the L2 sensitivity of the released sum.
    tau2 / releases : the heterogeneity τ², or the K private releases to estimate it from (bootstrap
        quantiles then come with the answer).
    calibration : how σ_DP,k meets (ε_k, δ_k): ``"analytic"``, ``"rdp"`` or ``"classic"``.
    """
    n = check_integer_at_least("n", n, 1).astype(float).ravel()
    K = n.size
    eps = np.broadcast_to(as_float_array("eps", eps), (K,))
    delta = np.broadcast_to(as_float_array("delta", delta), (K,))
    if ((delta <= 0) | (delta >= 1)).any():
        raise ValueError("delta must lie in (0, 1) per silo")
    sigma2 = np.broadcast_to(check_positive("sigma2", sigma2), (K,))
    sdp = noise_std(eps, delta, clip, calibration)
    s = np.asarray(local_variance(sigma2, n, sdp**2), dtype=float)
    return advise_from_variances(s, tau2, releases, bootstrap=bootstrap, seed=seed, tau2_method=tau2_method)
