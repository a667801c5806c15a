"""The per-silo preprocessing protocol of the paper's code (Appendix C.1).

Each silo's records are split at random into train/test (``sklearn.model_selection.train_test_split``
semantics: ``n_test = ceil(test_fraction * n_k)``), then its features are standardized with the mean
and standard deviation of *that silo's training split* (``StandardScaler`` semantics: a column with
zero training variance is only centred, i.e. its scale is taken as 1).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from fedtheory.validation import check_open_interval

__all__ = ["split_silo", "standardize", "split_and_standardize", "VALIDATION_SEED", "hold_out_validation"]


def split_silo(
    x: np.ndarray, y: np.ndarray, test_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Random split of one silo: ``n_test = ceil(test_fraction * n)``, at least one record on each side."""
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"a silo needs at least 2 records to split (got {n})")
    n_test = min(max(math.ceil(test_fraction * n), 1), n - 1)
    perm = rng.permutation(n)
    te, tr = perm[:n_test], perm[n_test:]
    return x[tr], y[tr], x[te], y[te]


def standardize(train_x: np.ndarray, test_x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Standardize both splits with the training split's column means and standard deviations.

    Columns with (near-)zero training standard deviation get scale 1 (centred only), so they become 0
    on the training split instead of NaN.  Returns ``(train_x, test_x, mean, scale)``.
    """
    mean = train_x.mean(axis=0)
    std = train_x.std(axis=0)
    scale = np.where(std > 1e-12 * np.maximum(1.0, np.abs(mean)), std, 1.0)
    return (train_x - mean) / scale, (test_x - mean) / scale, mean, scale


def split_and_standardize(
    xs: list[np.ndarray], ys: list[np.ndarray], *, test_fraction: float, seed: int, standardize_features: bool = True
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Apply :func:`split_silo` then :func:`standardize` to every silo.

    Silo ``k`` is split with ``numpy.random.default_rng([seed, k])``, so a silo's split does not
    depend on the other silos.
    """
    check_open_interval("test_fraction", test_fraction, 0.0, 1.0)
    trx, tr_y, tex, te_y = [], [], [], []
    for k, (x, y) in enumerate(zip(xs, ys)):
        a, b, c, d = split_silo(x, y, test_fraction, np.random.default_rng([int(seed), k]))
        if standardize_features:
            a, c, _, _ = standardize(a, c)
        trx.append(a)
        tr_y.append(b)
        tex.append(c)
        te_y.append(d)
    return trx, tr_y, tex, te_y


#: The seed of the validation hold-out (:func:`hold_out_validation`): silo ``k`` is split with
#: ``numpy.random.default_rng([VALIDATION_SEED, k])``, the same for every run, so that every configuration of a
#: tuning grid is scored on the same held-out records.
VALIDATION_SEED = 20_261_127


def hold_out_validation(data, fraction: float):
    """The data with each silo's **test** split replaced by a validation split held out of its **training** split.

    Silo ``k`` keeps ``n_k - ceil(fraction * n_k)`` of its training records for training and scores the run on the
    other ``ceil(fraction * n_k)`` (:func:`split_silo` with ``default_rng([VALIDATION_SEED, k])``); its test records
    are dropped, so that a learning rate or λ chosen on these scores never reads the test set.  Features already
    standardized by the loader keep that scaling (computed on the whole training split, the held-out part included).
    ``fraction`` must lie in (0, 1); ``info["validation"]`` records it.  Returns a new
    :class:`~fedtrain.data.base.FederatedData` (same identity: the run's configuration, which names the fraction,
    keys its rows apart).
    """
    check_open_interval("validation", fraction, 0.0, 1.0)
    trx, tr_y, vx, vy = split_and_standardize(data.train_x, data.train_y, test_fraction=float(fraction),
                                              seed=VALIDATION_SEED, standardize_features=False)
    info = dict(data.info, validation=float(fraction))
    out = dataclasses.replace(data, train_x=trx, train_y=tr_y, test_x=vx, test_y=vy, info=info)
    if "_identity" in data.__dict__:
        out.__dict__["_identity"] = dict(data.__dict__["_identity"])
    return out
