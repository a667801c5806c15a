"""Datasets drawn from the theory's hierarchical Gaussian models (paper §6, Appendix E).

They put :mod:`fedtheory`'s closed forms and DP-SGD training side by side.

* **Mean estimation** (§6, E.1–E.3): silo centres ``w_k ~ N(θ, τ²)``, records ``x_{k,i} ~ N(w_k, σ²)``,
  ``i = 1..n``.  As a training task it is least squares with *no features*: the linear model's
  intercept ``b`` is the estimate, and minimizing ``½ Σ_i (b - x_{k,i})²`` gives the silo mean.  So
  ``train_x[k]`` has shape ``(n, 0)`` and ``train_y[k]`` holds the records.
* **Linear regression** (E.4): ``w_k ~ N(θ, τ² I_d)``, design ``F_k`` with ``F_kᵀF_k = n I_d`` (orthogonal
  columns scaled by √n, so the per-silo least-squares estimate has covariance ``σ²/n I``), targets
  ``y = F_k w_k + σ ε``.

Features are *not* standardized (that would change the model).  Test sets: ``test="samples"`` draws
``n_test`` fresh records from each silo's distribution (test MSE = σ² + estimation error);
``test="centres"`` (mean estimation only) makes silo k's test set ``n_test`` copies of its true centre
``w_k``, so the test MSE *is* the estimation error ``E[(ŵ_k - w_k)²]`` of the theory.  ``info`` holds the true silo models (``silo_models``, shape
``(K, d)``) so parameter errors can be measured directly.
"""
from __future__ import annotations

import numpy as np

from fedtheory.validation import (
    as_float_array,
    check_choice,
    check_integer_at_least,
    check_nonnegative,
    check_positive,
)
from fedtrain.data.base import FederatedData

__all__ = ["gaussian_mean_estimation", "gaussian_linear_regression"]


def _orthogonal_design(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(n, d)))
    q = q * np.sign(np.diag(r))[None, :]
    return np.sqrt(n) * q


def gaussian_mean_estimation(
    *, num_silos: int = 10, n: int = 100, theta: float = 0.0, tau: float = 0.5, sigma: float = 1.0,
    n_test: int | None = None, test: str = "samples", seed: int = 0,
) -> FederatedData:
    """Mean estimation under the hierarchical Gaussian model (see the module docstring)."""
    check_choice("test", test, ("samples", "centres"))
    num_silos = int(check_integer_at_least("num_silos", num_silos, 1))
    n = int(check_integer_at_least("n", n, 1))
    n_test = n if n_test is None else int(check_integer_at_least("n_test", n_test, 1))
    theta = float(as_float_array("theta", theta))
    tau = float(check_nonnegative("tau", tau))
    sigma = float(check_positive("sigma", sigma))
    seed = int(check_integer_at_least("seed", seed, 0))
    rng = np.random.default_rng([seed, 104729])
    centres = theta + tau * rng.normal(size=num_silos)
    trx, try_, tex, tey = [], [], [], []
    for k in range(num_silos):
        trx.append(np.zeros((n, 0)))
        try_.append(centres[k] + sigma * rng.normal(size=n))
        tex.append(np.zeros((n_test, 0)))
        fresh = centres[k] + sigma * rng.normal(size=n_test)  # drawn in both modes: same training data
        tey.append(fresh if test == "samples" else np.full(n_test, centres[k]))
    return FederatedData(
        name="gaussian", task="regression", train_x=trx, train_y=try_, test_x=tex, test_y=tey, real=False,
        info={"generator": "mean estimation: w_k ~ N(theta, tau^2), x ~ N(w_k, sigma^2); no features (intercept)",
              "test": test, "theta": theta, "tau": tau, "sigma": sigma, "n": n, "n_test": n_test, "seed": seed,
              "silo_models": centres[:, None]},
    )


def gaussian_linear_regression(
    *, num_silos: int = 10, n: int = 100, dim: int = 5, theta: float | np.ndarray = 0.0, tau: float = 0.5,
    sigma: float = 1.0, n_test: int | None = None, seed: int = 0,
) -> FederatedData:
    """Linear regression under the hierarchical Gaussian model with ``F_kᵀF_k = n I`` (module docstring)."""
    num_silos = int(check_integer_at_least("num_silos", num_silos, 1))
    dim = int(check_integer_at_least("dim", dim, 1))
    n = int(check_integer_at_least("n", n, dim))
    n_test = n if n_test is None else int(check_integer_at_least("n_test", n_test, dim))
    theta_vec = np.broadcast_to(as_float_array("theta", theta), (dim,)).astype(float)
    tau = float(check_nonnegative("tau", tau))
    sigma = float(check_positive("sigma", sigma))
    seed = int(check_integer_at_least("seed", seed, 0))
    rng = np.random.default_rng([seed, 130363])
    models = theta_vec[None, :] + tau * rng.normal(size=(num_silos, dim))
    trx, try_, tex, tey = [], [], [], []
    for k in range(num_silos):
        f = _orthogonal_design(rng, n, dim)
        trx.append(f)
        try_.append(f @ models[k] + sigma * rng.normal(size=n))
        g = _orthogonal_design(rng, n_test, dim)
        tex.append(g)
        tey.append(g @ models[k] + sigma * rng.normal(size=n_test))
    return FederatedData(
        name="gaussian-linreg", task="regression", train_x=trx, train_y=try_, test_x=tex, test_y=tey,
        real=False,
        info={"generator": "linear regression: w_k ~ N(theta, tau^2 I), y = F w_k + sigma eps, F^T F = n I",
              "theta": theta_vec, "tau": tau, "sigma": sigma, "n": n, "n_test": n_test, "dim": dim,
              "seed": seed, "silo_models": models},
    )
