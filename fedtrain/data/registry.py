"""One entry point for every dataset: :func:`load_dataset`.

Names (``DATASETS``):

=================== ===================================================================
``school``          real School (139 silos, 28 features, regression), needs ``school.mat``
``vehicle``         real Vehicle (23 silos, 100 features, binary), needs ``vehicle.mat``
``gleam``           real GLEAM (38 silos, 180 features, binary), needs ``gleam.mat``
``school-standin``  synthetic stand-in with School's structure (:mod:`fedtrain.data.standins`)
``vehicle-standin`` synthetic stand-in with Vehicle's structure
``gleam-standin``   synthetic stand-in with GLEAM's structure
``gaussian``        the theory's mean-estimation model (:func:`~fedtrain.data.gaussian.gaussian_mean_estimation`)
``gaussian-linreg`` the theory's linear-regression model (``FᵀF = n I``)
``noniid-digits``   FedHDP's non-IID MNIST, one class per client, on scikit-learn digits (:mod:`~fedtrain.data.noniid_digits`)
``noniid-digits-skewed`` the same with all opted-out clients of one class (7)
``femnist-standin`` FedHDP's FEMNIST imitated: Dirichlet label skew + per-client style (:mod:`~fedtrain.data.femnist`)
``noniid-mnist``    non-IID MNIST from the MNIST files (needs them; also ``noniid-mnist-skewed``)
``femnist``         federated EMNIST from TFF's HDF5 files (needs them)
=================== ===================================================================

Options are passed through to the loader (e.g. ``seed``, ``test_fraction``, ``tau``).

Split seeds (:data:`SPLIT_SEED_OPTIONS`): the loader option that seeds the per-silo train/test split,
which repeats (:func:`fedtrain.sweep.repeat_config`) change from repeat to repeat: ``seed`` for the real
datasets (it seeds only the split), ``split_seed`` for the stand-ins (their ``seed`` draws the
population, ``split_seed`` re-splits it), and ``seed`` for the Gaussian models, which have no split (a
repeat draws fresh data).
"""
from __future__ import annotations

import os
from typing import Callable

from fedtrain.data.base import FederatedData
from fedtrain.data.files import DatasetNotFoundError
from fedtrain.data.gaussian import gaussian_linear_regression, gaussian_mean_estimation
from fedtrain.data.school import load_school
from fedtrain.data.sensors import load_gleam, load_vehicle
from fedtrain.data.standins import load_standin
from fedtrain.data.femnist import load_femnist_h5, load_femnist_standin
from fedtrain.data.noniid_digits import load_noniid_digits, load_noniid_mnist

__all__ = ["DATASETS", "REAL_DATASETS", "CLIENT_DATASETS", "FILE_DATASETS", "SPLIT_SEED_OPTIONS", "load_dataset", "split_seed_option"]

REAL_DATASETS = ("school", "vehicle", "gleam")
_LOADERS: dict[str, Callable[..., FederatedData]] = {
    "school": load_school,
    "vehicle": load_vehicle,
    "gleam": load_gleam,
    "school-standin": lambda **kw: load_standin("school", **kw),
    "vehicle-standin": lambda **kw: load_standin("vehicle", **kw),
    "gleam-standin": lambda **kw: load_standin("gleam", **kw),
    "gaussian": gaussian_mean_estimation,
    "gaussian-linreg": gaussian_linear_regression,
    "noniid-digits": lambda **kw: load_noniid_digits(skewed=False, **kw),
    "noniid-digits-skewed": lambda **kw: load_noniid_digits(skewed=True, **kw),
    "femnist-standin": load_femnist_standin,
    "noniid-mnist": lambda data_dir=None, **kw: load_noniid_mnist(skewed=False, data_dir=data_dir, **kw),
    "noniid-mnist-skewed": lambda data_dir=None, **kw: load_noniid_mnist(skewed=True, data_dir=data_dir, **kw),
    "femnist": lambda data_dir=None, **kw: load_femnist_h5(data_dir=data_dir, **kw),
}
DATASETS: tuple[str, ...] = tuple(_LOADERS)
#: dataset name -> the loader option holding its split seed (see the module docstring)
SPLIT_SEED_OPTIONS: dict[str, str] = {
    "school": "seed", "vehicle": "seed", "gleam": "seed",
    "school-standin": "split_seed", "vehicle-standin": "split_seed", "gleam-standin": "split_seed",
    "gaussian": "seed", "gaussian-linreg": "seed",
    "noniid-digits": "seed", "noniid-digits-skewed": "seed", "femnist-standin": "seed",
    "noniid-mnist": "seed", "noniid-mnist-skewed": "seed", "femnist": "seed",
}
#: FedHDP's client-level datasets (one entry per client; ``info["nonprivate_clients"]`` is the opt-out set) and
#: those of them that read files the user must already have (MNIST, federated EMNIST).
CLIENT_DATASETS = ("noniid-digits", "noniid-digits-skewed", "femnist-standin", "noniid-mnist",
                   "noniid-mnist-skewed", "femnist")
FILE_DATASETS = ("noniid-mnist", "noniid-mnist-skewed", "femnist")


def split_seed_option(name: str) -> str:
    """The loader option of dataset ``name`` that seeds its per-silo train/test split."""
    if name not in SPLIT_SEED_OPTIONS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")
    return SPLIT_SEED_OPTIONS[name]


def load_dataset(name: str, *, data_dir: str | os.PathLike | None = None, **options) -> FederatedData:
    """Load dataset ``name`` (see the module docstring); ``data_dir`` is used by the real datasets only.

    An unknown name raises ``ValueError`` listing the valid names; a missing real file raises
    :class:`~fedtrain.data.files.DatasetNotFoundError` saying where it looked, how to obtain the file and
    which stand-in to use instead.
    """
    if name not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")
    loader = _LOADERS[name]
    if name in FILE_DATASETS:
        try:
            return loader(data_dir=data_dir, **options)
        except TypeError as exc:
            raise ValueError(f"bad option for dataset {name!r}: {exc}") from exc
    if name in REAL_DATASETS:
        try:
            return loader(data_dir=data_dir, **options)
        except DatasetNotFoundError as exc:
            if f"{name}-standin" in str(exc):
                raise
            raise DatasetNotFoundError(f"{exc}\nThe synthetic stand-in '{name}-standin' has the same structure.") from exc
        except TypeError as exc:
            raise ValueError(f"bad option for dataset {name!r}: {exc}") from exc
    try:
        return loader(**options)
    except TypeError as exc:
        raise ValueError(f"bad option for dataset {name!r}: {exc}") from exc
