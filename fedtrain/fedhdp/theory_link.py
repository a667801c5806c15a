"""Federated linear regression trained with client-level DP next to the closed forms r* and λ* (App. A).

The theory (:mod:`fedtheory.linear_regression.numeric`) assumes: every client holds ``n`` samples with
``FᵀF = n I`` (so its least-squares estimate is ``φ̂_j ~ N(φ_j, ξ² I)``, ``ξ² = σ²/n`` (the paper's α²)), ``φ_j ~ N(φ, τ² I)``,
one aggregation round, clipping that never binds, and private noise of variance κ² (the paper's γ²) on the private
group's *average*.  This module trains that model with the real trainer (:func:`fedtrain.clientdp.trainer.train`, the ``class_path`` of FedHDP's registry entry):

* data: :func:`fedtrain.data.gaussian.gaussian_linear_regression` (``F_jᵀF_j = n I``) with the first
  ``N_np`` clients opted out;
* training: the linear model, q = 1, one local full-batch step with η = 1 (it lands on φ̂_j exactly:
  the gradient of ½·mean((Fw − x)²) is ``w − φ̂_j``), a fixed clipping norm C, and noise ``z C`` on the
  private group's sum, so that **κ² = (z C / N_p)²** (:func:`fedtheory.linear_regression.privacy_level.gamma2_of_noise_multiplier`);
* personalization: a second round whose Ditto step with ``η_p = 1/(1+λ)`` gives ``(φ̂_j + λθ¹)/(1+λ)``
  toward the received θ¹ (eq. 43, Lemma 4).  The client's own noise stays in θ¹ (``own_noise_removed=False``).

What the theory leaves out, and the training has: clipping (C must exceed every ‖φ̂_j − θ⁰‖ for the
theory to apply, yet κ grows with C — the trade-off the clip norm sets), client sampling (q < 1), many
rounds with fresh noise and a shrinking update, adaptive clipping and its count noise, realized group
counts, and non-linear models.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedtrain.data.base import FederatedData
from fedtheory.linear_regression import numeric as nm
from fedtheory.linear_regression.privacy_level import gamma2_of_noise_multiplier
from fedtrain.data.gaussian import gaussian_linear_regression
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.methods.registry import method_spec

__all__ = ["linreg_opt_out_data", "LinRegComparison", "compare_with_theory"]


def linreg_opt_out_data(N: int, N_np: int, *, n: int = 50, dim: int = 10, tau: float = 0.5, sigma: float = 2.0,
                        seed: int = 0) -> FederatedData:
    """The theory's data (``gaussian-linreg``) with the first ``N_np`` clients opted out of DP."""
    if not 1 <= int(N_np) < int(N):
        raise ValueError(f"N_np must lie in [1, N-1] so that both privacy groups have clients (got N_np={N_np}, N={N})")
    d = gaussian_linear_regression(num_silos=int(N), n=int(n), dim=int(dim), tau=float(tau), sigma=float(sigma),
                                   seed=int(seed))
    d.info["nonprivate_clients"] = np.arange(int(N_np))
    return d


@dataclass
class LinRegComparison:
    """Measured and closed-form errors (per coordinate) of the linear-regression experiment."""

    alpha2: float
    tau2: float
    gamma2: float
    N1: int
    N2: int
    ratios: np.ndarray
    server_measured: np.ndarray      #: mean over datasets of ‖θ¹ − φ‖²/d, per ratio
    server_se: np.ndarray
    server_theory: np.ndarray        #: σ_s²(r)
    r_star: float
    lams: np.ndarray
    local_measured: dict             #: group → mean ‖v_j − φ_j‖²/d per λ (at r*)
    local_se: dict
    local_theory: dict
    lam_star: dict                   #: group → λ* (47) at r*
    max_update_norm: float           #: largest ‖φ̂_j − θ⁰‖ seen (must stay below the clipping norm)
    clip: float
    noise_multiplier: float
    reps: int


def compare_with_theory(*, N: int = 20, N_np: int = 4, n: int = 50, dim: int = 10, tau: float = 0.5,
                        sigma: float = 2.0, noise_multiplier: float = 1.0, clip: float = 8.0,
                        ratios=(0.05, 0.1, 0.2, 0.4, 0.7, 1.0), lams=(0.1, 0.3, 1.0, 3.0, 10.0), reps: int = 40,
                        seed: int = 0) -> LinRegComparison:
    """Train the module's setting on ``reps`` fresh datasets per point and return measured vs closed-form errors."""
    train = method_spec("fedhdp").cls  # the client-level trainer, loaded through the registry (imports torch)
    N1, N2 = int(N_np), int(N) - int(N_np)
    alpha2, tau2 = sigma ** 2 / n, tau ** 2
    gamma2 = gamma2_of_noise_multiplier(noise_multiplier, clip, N2, 1.0)
    r_star = float(nm.optimal_ratio(N1, N2, alpha2, tau2, 0.0, gamma2))
    base = FedHDPConfig(dataset="gaussian-linreg", method="fedhdp", model="linear", rounds=1, sample_rate=1.0,
                        local_epochs=1, batch_size=n, lr=1.0, lr_decay=1.0, clip=clip, clip_lr=0.0,
                        noise_multiplier=noise_multiplier, denominator="expected", personal_step="lemma4")
    ratios, lams = np.asarray(ratios, float), np.asarray(lams, float)
    server = np.zeros((reps, ratios.size))
    local = {g: np.zeros((reps, lams.size)) for g in ("nonprivate", "private")}
    max_norm = 0.0
    for rep in range(reps):
        data = linreg_opt_out_data(N, N_np, n=n, dim=dim, tau=tau, sigma=sigma, seed=seed + rep)
        phi, phi_j = data.info["theta"], data.info["silo_models"]
        for i, r in enumerate(ratios):
            res = train(base.replace(ratio=float(r), seed=seed + rep), data, keep_models=True)
            server[rep, i] = float(np.mean((res.global_model - phi) ** 2))
        for i, lam in enumerate(lams):
            res = train(base.replace(ratio=r_star, rounds=2, lam_private=float(lam), lam_nonprivate=float(lam),
                                     seed=seed + rep), data, keep_models=True)
            err = ((res.personal_models - phi_j) ** 2).mean(1)
            local["nonprivate"][rep, i] = err[:N1].mean()
            local["private"][rep, i] = err[N1:].mean()
        fits = np.stack([np.linalg.lstsq(x, y, rcond=None)[0] for x, y in zip(data.train_x, data.train_y)])
        max_norm = max(max_norm, float(np.linalg.norm(fits, axis=1).max()))
    groups = {"nonprivate": 1, "private": 2}
    return LinRegComparison(
        alpha2=alpha2, tau2=tau2, gamma2=gamma2, N1=N1, N2=N2, ratios=ratios,
        server_measured=server.mean(0), server_se=server.std(0, ddof=1) / np.sqrt(reps),
        server_theory=np.array([nm.server_error(r, N1, N2, alpha2, tau2, 0.0, gamma2) for r in ratios]),
        r_star=r_star, lams=lams,
        local_measured={g: v.mean(0) for g, v in local.items()},
        local_se={g: v.std(0, ddof=1) / np.sqrt(reps) for g, v in local.items()},
        local_theory={g: np.array([nm.local_error(lam, r_star, k, N1, N2, alpha2, tau2, 0.0, gamma2,
                                                  own_noise_removed=False) for lam in lams])
                      for g, k in groups.items()},
        lam_star={g: float(nm.optimal_lambda(k, N1, N2, alpha2, tau2, 0.0, gamma2)) for g, k in groups.items()},
        max_update_norm=max_norm, clip=float(clip), noise_multiplier=float(noise_multiplier), reps=int(reps))
