"""The noise of DP gradient descent as a random walk (MR-MTL paper Sec. 5, eq. (2)), derived and simulated.

Silo k runs ``w^{(t+1)} = w^{(t)} − (η/n_k)(z^{(t)} + Σ_i g_{k,i}^{(t)})`` with ``z^{(t)} ~ N(0, σ²I)``.  Unrolled,
the noise part of ``w^{(T)}`` is ``Z^{(T)} = −(η/n_k) Σ_t z^{(t)}``: a Gaussian random walk with per-coordinate
variance ``T η² σ²/n_k²`` (:func:`random_walk_variance`; with the Abadi et al. calibration
``σ² = O(c²T log(1/δ)/ε²)`` this is the paper's ``O(η²c²T² log(1/δ)/(n_k²ε²))``).  Walks of different silos are
independent, so the average of K silos' walks has variance ``1/K`` of one (:func:`averaged_walk_variance`):
MR-MTL's and FedAvg's averaging removes noise, which is Sec. 5's intuition.

Eq. (2) ignores that the gradients themselves react to the noise.  On a quadratic loss with curvature h
along a direction (least squares: an eigenvalue of ``XᵀX/n``), the error obeys
``e^{(t+1)} = (1 − ηh) e^{(t)} + ξ^{(t)}`` with ``ξ ~ N(0, s²)``, ``s = ησ/n_k`` (or ``η c z/B`` for DP-SGD), so
``Var e^{(T)} = s² (1 − ρ^{2T})/(1 − ρ²)``, ``ρ = 1 − ηh`` (:func:`dp_gd_noise_variance`): ``T s²`` (eq. 2) as
``ηh → 0``, the stationary ``s²/(ηh(2 − ηh))`` once ``ηhT ≫ 1``.  Both are derived with sympy in
:func:`derive` and checked by simulation in the tests.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from fedtheory.validation import as_float_array, check_integer_at_least, check_nonnegative, check_positive

__all__ = ["random_walk_variance", "averaged_walk_variance", "dp_gd_noise_variance", "simulate_walk", "derive"]


def random_walk_variance(lr, sigma, n, T):
    """Eq. (2): per-coordinate variance of ``Z^{(T)} = −(η/n) Σ_{t<T} z^{(t)}``, ``T η² σ²/n²``."""
    lr, sigma, n = check_positive("lr", lr), check_nonnegative("sigma", sigma), check_positive("n", n)
    T = check_integer_at_least("T", T, 0)
    out = T * lr**2 * sigma**2 / n**2
    return out.item() if np.ndim(out) == 0 else out


def averaged_walk_variance(walk_variances):
    """Variance of the average of K independent silos' walks: ``Σ_k v_k / K²`` (``v/K`` for equal silos)."""
    v = check_nonnegative("walk_variances", walk_variances)
    return float(v.sum() / v.size**2)


def dp_gd_noise_variance(step_noise_var, lr, curvature, T):
    """Variance after T steps of ``e ← (1 − ηh)e + N(0, s²)`` from e = 0: ``s²(1 − ρ^{2T})/(1 − ρ²)``, ρ = 1 − ηh.

    Vectorised over ``curvature`` (h ≥ 0; h = 0 gives eq. (2)'s ``T s²``).  Requires ``0 ≤ ηh < 2`` (stable GD).
    """
    s2 = float(check_nonnegative("step_noise_var", step_noise_var))
    lr = float(check_positive("lr", lr))
    h = check_nonnegative("curvature", curvature)
    T = int(check_integer_at_least("T", T, 0))
    if (lr * h >= 2).any():
        raise ValueError(f"lr * curvature must be < 2 for stable gradient descent (got max {float((lr * h).max())!r})")
    rho2 = (1.0 - lr * h) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(lr * h > 1e-12, s2 * -np.expm1(T * np.log(rho2)) / (1.0 - rho2), T * s2)
    return out.item() if np.ndim(out) == 0 else out


def simulate_walk(step_noise_var: float, lr: float, curvature: float, T: int, *, trials: int = 20_000,
                  seed: int = 0) -> np.ndarray:
    """``trials`` independent final errors of ``e ← (1 − ηh)e + N(0, s²)`` after T steps (Monte Carlo)."""
    rng = np.random.default_rng(seed)
    e = np.zeros(int(trials))
    rho = 1.0 - float(lr) * float(curvature)
    for _ in range(int(T)):
        e = rho * e + np.sqrt(step_noise_var) * rng.standard_normal(e.size)
    return e


def derive() -> dict[str, sp.Expr]:
    """sympy: eq. (2)'s variance from the unrolled sum, and the contracted walk's closed form (geometric sum)."""
    eta, sig, n, T, rho, s = sp.symbols("eta sigma n T rho s", positive=True)
    t = sp.symbols("t", integer=True, nonnegative=True)
    walk = sp.simplify(sp.Sum((eta / n) ** 2 * sig**2, (t, 0, T - 1)).doit())
    contracted = sp.simplify(sp.Sum(s**2 * rho ** (2 * t), (t, 0, T - 1)).doit())
    printed_order = eta**2 * T * sig**2 / n**2  # the paper's (η/n_k)² T σ²
    closed = s**2 * (1 - rho ** (2 * T)) / (1 - rho**2)
    return {"walk": walk, "printed": printed_order, "contracted": contracted, "contracted_closed": closed}
