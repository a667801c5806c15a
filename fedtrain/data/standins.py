"""Synthetic cross-silo stand-ins with the structure of the paper's convex datasets.

Vehicle and GLEAM cannot be downloaded here, so every figure can also be drawn on a *hierarchical
linear* stand-in: silo models are drawn around one shared model,

    w_k = θ + τ z_k,    θ, z_k ~ N(0, I_d / d)   (so ||θ|| ≈ 1 and τ is the relative spread),

features ``x ~ N(0, I_d)`` and

* regression (School-like): ``y = scale * w_kᵀx + intercept + noise * ε``, ε ~ N(0, 1);
* binary (Vehicle/GLEAM-like): ``y = sign(w_kᵀx + noise * ε)`` in {-1, +1}.

``tau = 0`` gives identical silo models (FedAvg's ideal); a large τ makes local training win.
Silo sizes (records before the split) are drawn uniformly in the real dataset's range
(Table A1; for School the real file's 22..251 records per school, for GLEAM 699..776 records per
wearer, for Vehicle 872..1933, which the table lists without saying whether they are totals).
The split and standardization follow the real data's protocol (:mod:`fedtrain.data.split`).
``FederatedData.real`` is False and ``info`` records every generator parameter and the true silo models.
"""
from __future__ import annotations

import numpy as np

from fedtheory.validation import (
    check_choice,
    check_integer_at_least,
    check_nonnegative,
    check_open_interval,
    check_positive,
)
from fedtrain.data.base import FederatedData
from fedtrain.data.split import split_and_standardize
from fedtrain.paper import STANDIN_PRESETS

__all__ = ["STANDIN_PRESETS", "make_hierarchical_linear", "load_standin"]

def make_hierarchical_linear(
    *,
    name: str = "hierarchical-linear",
    task: str = "regression",
    num_silos: int = 10,
    dim: int = 5,
    size_range: tuple[int, int] = (50, 100),
    tau: float = 0.5,
    noise: float = 0.1,
    scale: float = 1.0,
    intercept: float = 0.0,
    test_fraction: float = 0.25,
    seed: int = 0,
    standardize: bool = True,
    split_seed: int | None = None,
) -> FederatedData:
    """Draw a hierarchical linear cross-silo dataset (model in the module docstring).

    Everything (θ, silo models, sizes, features, noise) is a function of ``seed``; the per-silo
    train/test split is a function of ``split_seed`` (``None``: ``seed``), so that repeats can re-split
    one population (:func:`fedtrain.sweep.repeat_config`).
    """
    check_choice("task", task, ("regression", "binary"))
    num_silos = int(check_integer_at_least("num_silos", num_silos, 1))
    dim = int(check_integer_at_least("dim", dim, 1))
    lo, hi = (int(v) for v in check_integer_at_least("size_range", size_range, 2))
    if lo > hi:
        raise ValueError(f"size_range must be (low, high) with low <= high (got {size_range})")
    check_nonnegative("tau", tau)
    check_nonnegative("noise", noise)
    check_positive("scale", scale)
    check_open_interval("test_fraction", test_fraction, 0.0, 1.0)
    seed = int(check_integer_at_least("seed", seed, 0))
    split_seed = seed if split_seed is None else int(check_integer_at_least("split_seed", split_seed, 0))

    rng = np.random.default_rng([seed, 7919])
    theta = rng.normal(size=dim) / np.sqrt(dim)
    z = rng.normal(size=(num_silos, dim)) / np.sqrt(dim)
    models = theta[None, :] + float(tau) * z
    sizes = rng.integers(lo, hi + 1, size=num_silos)
    xs, ys = [], []
    for k in range(num_silos):
        x = rng.normal(size=(int(sizes[k]), dim))
        eps = rng.normal(size=int(sizes[k]))
        if task == "regression":
            y = float(scale) * (x @ models[k]) + float(intercept) + float(noise) * eps
        else:
            y = np.where(x @ models[k] + float(noise) * eps >= 0, 1.0, -1.0)
        xs.append(x)
        ys.append(y)
    trx, try_, tex, tey = split_and_standardize(xs, ys, test_fraction=test_fraction, seed=split_seed,
                                                standardize_features=standardize)
    return FederatedData(
        name=name,
        task=task,  # type: ignore[arg-type]
        train_x=trx,
        train_y=try_,
        test_x=tex,
        test_y=tey,
        real=False,
        num_classes=2 if task == "binary" else None,
        info={
            "generator": "hierarchical-linear (w_k = theta + tau z_k; theta, z_k ~ N(0, I/d); x ~ N(0, I))",
            "tau": float(tau),
            "noise": float(noise),
            "scale": float(scale),
            "intercept": float(intercept),
            "size_range": (lo, hi),
            "test_fraction": float(test_fraction),
            "seed": seed,
            "split_seed": split_seed,
            "standardize": bool(standardize),
            "theta": theta,
            "silo_models": models,
        },
    )


def load_standin(like: str, *, seed: int = 0, **overrides) -> FederatedData:
    """The stand-in for ``like`` in {'school', 'vehicle', 'gleam'} (presets, and the log of how they were tuned, in
    :data:`fedtrain.presets.STANDIN_PRESETS`).

    Keyword ``overrides`` replace preset values (e.g. ``tau=0.0``, ``num_silos=10``, ``test_fraction=0.5``);
    ``split_seed`` re-splits the population drawn with ``seed`` (default: ``seed``).
    """
    check_choice("like", like, tuple(STANDIN_PRESETS))
    params = dict(STANDIN_PRESETS[like])
    unknown = set(overrides) - set(params) - {"split_seed"}
    if unknown:
        raise ValueError(f"unknown stand-in option(s) {sorted(unknown)}; valid: {sorted(params)}")
    params.update(overrides)
    data = make_hierarchical_linear(name=f"{like}-standin", seed=seed, **params)
    data.info["like"] = like
    return data
