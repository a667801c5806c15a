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

**Training units** (:func:`advise_directions`).  Theorem E.5 assumes unit curvature: MR-MTL's estimate is
``(ŵ_k + λw̄)/(1 + λ)``.  Trained on a quadratic loss with Hessian ``H_k``, the prox term shrinks eigen-direction i
(curvature h_i) by ``λ/(h_i + λ)`` instead, so along that direction the training λ equals ``h_i`` times the
unit-curvature one: :func:`derive_direction_lambda` derives ``λ*_i = h_i·K v_i/((K − 1)V_i − v_i)`` with sympy, and
:func:`direction_errors` adds the directions' errors weighted by their curvature (the excess test loss).  A
common λ across directions has no closed form; :func:`advise_directions` minimises it numerically.  Features
scaled by c scale every h_i by c² and the parameters by 1/c, so the advised λ scales by c².
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from fedtheory.validation import as_float_array, check_choice, check_integer_at_least, check_positive
from fedtheory.mean_estimation import local_variance
from fedtheory.mean_estimation.heterogeneous import mse_heterogeneous, optimal_lambdas_heterogeneous
from fedtheory.privacy.gaussian import analytic_gaussian_sigma, gaussian_sigma, rdp_gaussian_sigma

__all__ = ["CALIBRATIONS", "DP_MODELS", "Advice", "DirectionSilo", "DirectionAdvice", "noise_std",
           "estimate_tau2_heterogeneous", "estimate_tau2_reml", "derive_direction_lambda", "direction_lambda",
           "direction_errors", "advise_directions", "sweep_weights", "prox_clip_saturation", "drifted_walk_mean_radius",
           "advise_from_variances", "advise"]

CALIBRATIONS = ("analytic", "rdp", "classic")


def noise_std(eps, delta, clip: float = 1.0, calibration: str = "analytic") -> np.ndarray:
    """Per-silo noise std ``σ_DP,k`` of one Gaussian release at ``(ε_k, δ_k)`` (0 where ε_k = ∞)."""
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
    n
        per-silo record counts (K >= 2 integers >= 1).
    eps, delta
        per-silo budgets (scalars broadcast; ε = inf is a non-private silo).
    sigma2
        per-silo data variance σ_k² (scalar broadcasts).
    clip
        clipping bound c = the L2 sensitivity of the released sum.
    tau2, releases
        the heterogeneity τ², or the K private releases to estimate it from (bootstrap
        quantiles then come with the answer).
    calibration
        how σ_DP,k meets (ε_k, δ_k): ``"analytic"``, ``"rdp"`` or ``"classic"``.
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


# --------------------------------------------------------------------------------------------------
# training units: one λ for a quadratic loss with curvature (MR-MTL's prox term, per eigen-direction)
# --------------------------------------------------------------------------------------------------

def derive_direction_lambda():
    """Sympy derivation of the per-direction optimum (App. E.5 with curvature ``h``); returns
    ``(lam_star, error)`` as sympy expressions in ``h, v, V, K, lam``.

    Along an eigen-direction of silo k's loss ``½(w − ŵ_k)ᵀH_k(w − ŵ_k)`` with curvature h, MR-MTL's objective
    ``+ (λ/2)‖w − w̄‖²`` is minimised by ``w = α ŵ_k + (1 − α) w̄``, ``α = h/(h + λ)`` (the prox term shrinks the
    direction by ``λ/(h + λ)``).  With the centre ``w̄`` the plain average of the K local estimates (App. E.5's
    structure) the silo's estimate is ``a ŵ_k + (1 − a) ŵ_{\\k}``, ``a = 1/K + (1 − 1/K)α``; its squared error
    along the direction is ``a² v + (1 − a)² V`` (v: variance of ŵ_k, V: of ``ŵ_{\\k} − w_k``, eqs. 40-43), and
    the test loss weighs it by h.  Sympy solves ``∂/∂a = 0`` and inverts ``a(λ)``:
    ``λ* = h·K v/((K − 1)V − v)``, i.e. ``h`` times Theorem E.5's λ*_k for the direction's variances.
    """
    import sympy as sp

    h, v, V, K, lam, a = sp.symbols("h v V K lambda a", positive=True)
    err = a**2 * v + (1 - a) ** 2 * V
    a_star = sp.solve(sp.diff(err, a), a)[0]
    alpha = h / (h + lam)
    lam_star = sp.solve(sp.Eq(1 / K + (1 - 1 / K) * alpha, a_star), lam)[0]
    return sp.simplify(lam_star), h * err.subs(a, 1 / K + (1 - 1 / K) * alpha)


def direction_lambda(h, v, V, K: int) -> np.ndarray:
    """Per-direction optimum ``λ* = h·K v/((K − 1)V − v)`` (:func:`derive_direction_lambda`); ``inf`` where the
    denominator is ≤ 0 (the direction is better served by FedAvg)."""
    h, v, V = np.broadcast_arrays(as_float_array("h", h), as_float_array("v", v), as_float_array("V", V))
    K = int(check_integer_at_least("K", K, 2))
    den = (K - 1) * V - v
    out = np.full(h.shape, np.inf)
    np.divide(h * K * v, den, out=out, where=den > 0)
    return out


@dataclass(frozen=True)
class DirectionSilo:
    """One silo of the curvature-aware advisor: eigenvalues ``h`` of its loss Hessian, their eigenvectors
    (columns of ``U``), the statistical variance of its local estimate along each (``stat_var``), and its
    DP-SGD noise: per-step, per-coordinate variance ``dp_step_var`` over ``steps`` steps of size ``lr``."""

    h: np.ndarray
    U: np.ndarray
    stat_var: np.ndarray
    dp_step_var: float = 0.0
    steps: int = 0


@dataclass(frozen=True)
class DirectionAdvice:
    """What :func:`advise_directions` returns."""

    common_lambda: float          # λ minimising the silos' weighted mean excess test error (training units)
    lambda_k: np.ndarray          # each silo's own minimiser (inf = FedAvg)
    grid: np.ndarray              # the λ grid of ``curve``
    curve: np.ndarray             # weighted mean predicted excess test error on ``grid``
    dp_model: str
    weights: Optional[np.ndarray] = None   # the silos' weights in the mean (sum 1; None: uniform)


DP_MODELS = ("prox", "release")


def _dp_var(silo: DirectionSilo, lam: float, lr: float, dp_model: str) -> np.ndarray:
    from fedtheory.privacy.random_walk import dp_gd_noise_variance

    if silo.dp_step_var == 0:
        return np.zeros_like(silo.h)
    h = silo.h + (lam if dp_model == "prox" else 0.0)
    return np.atleast_1d(dp_gd_noise_variance(silo.dp_step_var, lr, h, int(silo.steps)))


def direction_errors(lam: float, silos, tau2: float, lr: float = 1.0, dp_model: str = "prox") -> np.ndarray:
    """Per-silo predicted excess test error ``Σ_i h_i E_i(λ)`` at one common λ (``inf`` = FedAvg).

    Model (assumptions): quadratic loss per silo (least squares), true models ``w_k ~ N(θ, τ²I)`` (isotropic in
    parameter space), centre = plain average of the K local estimates, so that along direction i of silo k
    ``E_i = a² v_i + (1 − a)² V_i`` (:func:`derive_direction_lambda`) with ``V_i = Kτ²/(K − 1) + S_i/(K − 1)²``,
    ``S_i`` the other silos' variances projected on the direction.  DP-SGD noise (``dp_model``):

    * ``"release"``: the noise of the local run is part of ``v_i`` and shrunk with it (the variance of a local
      model released once and then combined, App. E.5's reading; it decreases like ``α²``);
    * ``"prox"`` (default): the noise enters every step of the personalised run, whose prox term contracts it at
      rate ``1 − η(h_i + λ)``: variance ``s²(1 − ρ^{2T})/(1 − ρ²)``, ``ρ = 1 − η(h_i + λ)``
      (:func:`fedtheory.privacy.random_walk.dp_gd_noise_variance`), added to the statistical error (it decreases
      only like ``1/(h_i + λ)``, so the optimum is larger).  FedAvg (λ = ∞) then has no per-silo noise left
      beyond the centre's.  Defined for stable steps, ``η(h_i + λ) < 2`` (a ``ValueError`` otherwise).
    """
    check_choice("dp_model", dp_model, DP_MODELS)
    silos = list(silos)
    K = len(silos)
    if K < 2:
        raise ValueError(f"silos must hold K >= 2 silos (got {K})")
    lam = float(lam)
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0 (got {lam!r})")
    # total variance along each direction of each silo: statistical + local DP noise (at λ for the prox model:
    # the centre averages the personalised models, whose noise the prox term has contracted; for FedAvg, λ = ∞,
    # the centre's noise is counted as the local runs' at λ = 0)
    lam_c = lam if (dp_model == "prox" and np.isfinite(lam)) else 0.0
    tot = [s.stat_var + _dp_var(s, lam_c, lr, "prox") for s in silos]
    M = sum((s.U * t) @ s.U.T for s, t in zip(silos, tot))
    out = np.empty(K)
    for k, (s, t) in enumerate(zip(silos, tot)):
        S = np.einsum("pi,pq,qi->i", s.U, M, s.U) - t
        V = K * tau2 / (K - 1) + S / (K - 1) ** 2
        alpha = s.h / (s.h + lam) if np.isfinite(lam) else np.zeros_like(s.h)
        a = 1.0 / K + (1.0 - 1.0 / K) * alpha
        if dp_model == "release":
            e = a**2 * t + (1 - a) ** 2 * V
        else:   # the silo's own noise, contracted by the prox term (none left at λ = ∞ beyond the centre's)
            e = a**2 * s.stat_var + (1 - a) ** 2 * V + (t - s.stat_var if np.isfinite(lam) else 0.0)
        out[k] = float(s.h @ e)
    return out


def sweep_weights(test_sizes) -> np.ndarray:
    """The weights with which a sweep's test metric averages the silos: ``ω_k = m_k / Σ_j m_j`` for test counts m_k.

    Derivation (MR-MTL paper App. C.4's metric): a run reports ``Σ_j (m_j/M) · (1/m_j) Σ_{i∈test_j} ℓ_ji`` — every test
    example counts once, ``M = Σ_j m_j``.  For least squares the expected test loss of silo k with model w is
    ``σ_k² + (w − w_k)ᵀ H_k (w − w_k)``: the noise ``σ_k²`` does not depend on λ, so the λ that minimises the
    expected metric minimises ``Σ_k ω_k E_k(λ)``, the test-count weighted mean of the silos' excess errors
    (:func:`direction_errors`), not their plain mean."""
    m = as_float_array("test_sizes", test_sizes).ravel()
    if m.size < 2 or (m <= 0).any() or not np.isfinite(m).all():
        raise ValueError(f"test_sizes must hold K >= 2 positive test counts (got {m.tolist()!r})")
    return m / m.sum()


def advise_directions(silos, tau2: float, lr: float = 1.0, dp_model: str = "prox",
                      grid=None, weights=None) -> DirectionAdvice:
    """One common λ (and each silo's own) in **training units** for silos with curvature
    (:func:`direction_errors`): the minimiser of the silos' mean predicted excess error weighted by ``weights``
    (one per silo, normalised to sum 1; ``None``: uniform; a sweep's metric weights by test counts,
    :func:`sweep_weights`), on a log grid over ``[1e-4, 1e5]`` (46 points) plus 0 and ∞, refined by a bounded 1-d
    search around the grid's best (there is no closed form for a common λ across directions; per direction it is
    :func:`direction_lambda`)."""
    from scipy import optimize

    tau2 = float(check_positive("tau2", tau2))
    silos = list(silos)
    if weights is None:
        w = np.full(len(silos), 1.0 / len(silos))
    else:
        w = as_float_array("weights", weights).ravel()
        if w.size != len(silos) or (w < 0).any() or not np.isfinite(w).all() or not w.sum() > 0:
            raise ValueError(f"weights must hold one finite weight >= 0 per silo ({len(silos)}), not all 0 "
                             f"(got {w.size} values)")
        w = w / w.sum()
    g = np.concatenate([[0.0], np.logspace(-4, 5, 46), [np.inf]]) if grid is None else np.asarray(grid, float)
    if dp_model == "prox" and any(s.dp_step_var > 0 for s in silos):
        # gradient steps with the prox term are stable only for η(h + λ) < 2: larger finite λ are left out
        lam_max = 2.0 / float(lr) - max(float(s.h.max()) for s in silos)
        g = g[(g < lam_max) | ~np.isfinite(g)]
    per = np.array([direction_errors(l, silos, tau2, lr, dp_model) for l in g])   # (grid, K)

    def refine(f, i):
        if i == 0 or i == len(g) - 1 or not np.isfinite(g[i]):
            return float(g[i])
        lo, hi = np.log(max(g[i - 1], 1e-6)), np.log(g[i + 1]) if np.isfinite(g[i + 1]) else np.log(g[i])
        r = optimize.minimize_scalar(lambda x: f(float(np.exp(x))), bounds=(lo, hi), method="bounded",
                                     options={"xatol": 1e-6})
        return float(np.exp(r.x)) if r.fun <= f(float(g[i])) else float(g[i])

    avg = per @ w
    common = refine(lambda l: float(direction_errors(l, silos, tau2, lr, dp_model) @ w), int(np.argmin(avg)))
    lam_k = np.array([float(g[int(np.argmin(per[:, k]))]) for k in range(len(silos))])
    return DirectionAdvice(common, lam_k, g, avg, dp_model, None if weights is None else w)


# --------------------------------------------------------------------------------------------------
# the prox term clipped together with each example's gradient: where its pull stops growing with λ
# --------------------------------------------------------------------------------------------------

def drifted_walk_mean_radius(dim: int, step_std: float, drift: float) -> float:
    """Stationary mean distance from the origin of a walk in ``dim`` dimensions that adds ``N(0, step_std²I)`` per step
    and moves ``drift`` toward the origin per step: ``dim·step_std²/(2·drift)``.

    Derivation (diffusion limit, ``drift ≪ step_std``): ``dX = −drift·X/|X| dt + step_std dW`` has the stationary
    density ``∝ exp(−2·drift·|x|/step_std²)``, so ``|X|`` has density ``∝ r^{dim−1} exp(−2·drift·r/step_std²)``, a
    Gamma(dim, step_std²/(2·drift)) law whose mean is the value returned."""
    dim = int(check_integer_at_least("dim", dim, 1))
    s = float(check_positive("step_std", step_std))
    mu = float(check_positive("drift", drift))
    return dim * s * s / (2.0 * mu)


def prox_clip_saturation(batch, dim: int, lr: float, noise_multiplier) -> np.ndarray:
    """λ above which MR-MTL's prox term, clipped together with each example's gradient, stops pulling harder:
    ``λ_sat = 2B²/(D·η·z²)`` per silo (``batch`` B: expected batch size, ``dim`` D: parameters, ``lr`` η, noise
    multiplier z; the clip norm C cancels).

    Model (assumptions: the prox term dominates each clipped vector, the data gradient is small next to it).  A
    clip-together DP-SGD step adds ``clip(g_i + λ(w − w̄))`` over the batch: once ``λ‖w − w̄‖ ≥ c`` every clipped vector
    is ``c`` times the unit vector toward the centre, so the step moves ``η·c`` toward it whatever λ is, while the
    noise adds ``N(0, s²I)``, ``s = η·c·z/B``.  The distance to the centre then settles at
    :func:`drifted_walk_mean_radius` ``d = D·s²/(2ηc) = D·η·c·z²/(2B²)``, and the pull saturates where ``λ·d = c``.
    Beyond ``λ_sat`` a larger λ adds no pull toward the centre but scales each example's data gradient down by about
    ``c/(λ·d)``: the silo learns less from its own data and the test error rises with λ.  (With the prox term added
    after the noise, ``prox_mode="post-noise"``, the pull is ``λ(w − w̄)`` at every λ and nothing saturates.)"""
    B = as_float_array("batch", batch)
    z = as_float_array("noise_multiplier", noise_multiplier)
    if (B <= 0).any() or (z <= 0).any():
        raise ValueError("batch and noise_multiplier must be > 0 (a non-private silo, z = 0, never saturates: inf)")
    dim = int(check_integer_at_least("dim", dim, 1))
    eta = float(check_positive("lr", lr))
    out = 2.0 * B**2 / (dim * eta * z**2)
    return out
