"""The real Vehicle and GLEAM datasets (binary classification, linear SVM), as in the paper's code.

Neither file can be downloaded on the project's machines; the loaders read them when a user has
them.  Layout (the authors' ``vehicle.mat`` / ``gleam.mat``, also MOCHA's): MATLAB cell arrays
``X`` and ``Y`` with one cell per silo (``mat['X'][k][0]`` or ``mat['X'][0][k]``), ``X`` cells of shape
``(n_k, d)`` and ``Y`` cells of shape ``(n_k, 1)`` holding labels in {-1, +1} (labels in {0, 1} are
mapped to {-1, +1}).

* **Vehicle** (SensIT, Duarte & Hu 2004): 23 silos (road-segment sensors), 100 acoustic + seismic
  features.
* **GLEAM** (Google Glass eating and motion): 38 silos (wearers), 180 head-motion features,
  27,800 records; non-commercial licence.

Protocol of the code (Appendix C.1): per-silo random 75/25 split, per-silo standardization with the
training statistics.  Checksums are not known to the project, so only the layout is verified
(silo count, feature dimension, labels).
"""
from __future__ import annotations

import os

import numpy as np

from fedtrain.data.base import FederatedData
from fedtrain.data.files import DatasetCorruptError
from fedtrain.data.mat_silos import load_mat_silos

__all__ = ["VEHICLE_HOW_TO_GET", "GLEAM_HOW_TO_GET", "load_vehicle", "load_gleam", "load_sensor_mat"]

VEHICLE_HOW_TO_GET = (
    "vehicle.mat comes from the authors' data archive (private_silos_data.zip linked from "
    "github.com/kenziyuliu/private-cross-silo-fl) or the SensIT vehicle data (Duarte & Hu 2004, UW-Madison). "
    "Without it, use the stand-in dataset 'vehicle-standin'."
)
GLEAM_HOW_TO_GET = (
    "gleam.mat comes from the authors' data archive (private_silos_data.zip linked from "
    "github.com/kenziyuliu/private-cross-silo-fl) or healthailab.org (GLEAM, non-commercial licence). "
    "Without it, use the stand-in dataset 'gleam-standin'."
)


def _binary_labels(y: np.ndarray, path, k: int) -> np.ndarray:
    vals = set(np.unique(y).tolist())
    if vals <= {-1.0, 1.0}:
        return y.astype(np.float64)
    if vals <= {0.0, 1.0}:
        return 2.0 * y - 1.0
    raise DatasetCorruptError(f"{path}: silo {k} has labels {sorted(vals)[:5]}..., expected values in {{-1, +1}} or {{0, 1}}")


def load_sensor_mat(
    name: str,
    filename: str,
    how_to_get: str,
    *,
    expected_silos: int | None,
    expected_dim: int | None,
    path=None,
    data_dir=None,
    test_fraction: float = 0.25,
    seed: int = 0,
    sha256: str | None = None,
) -> FederatedData:
    """Shared reader for the binary-classification ``.mat`` files (layout in the module docstring;
    :func:`fedtrain.data.mat_silos.load_mat_silos` with a layout check and labels mapped to {-1, +1})."""
    def check(file, xs, ys) -> None:
        if expected_silos is not None and len(xs) != expected_silos:
            raise DatasetCorruptError(f"{file}: expected {expected_silos} silos for {name}, found {len(xs)}")
        dims = {x.shape[1] for x in xs}
        if expected_dim is not None and dims != {expected_dim}:
            raise DatasetCorruptError(f"{file}: expected {expected_dim} features for {name}, found {sorted(dims)}")

    return load_mat_silos(filename, name=name, task="binary", how_to_get=how_to_get, test_fraction=test_fraction,
                          seed=seed, path=path, data_dir=data_dir, sha256=sha256, check=check,
                          targets=_binary_labels, num_classes=2)


def load_vehicle(path=None, *, data_dir=None, test_fraction: float = 0.25, seed: int = 0,
                 expected_silos: int | None = 23, expected_dim: int | None = 100) -> FederatedData:
    """Load ``vehicle.mat`` (23 silos, 100 features, labels ±1) with a per-silo 75/25 split.

    ``expected_silos`` / ``expected_dim`` check the layout; pass ``None`` to read a file of another size.
    """
    return load_sensor_mat("vehicle", "vehicle.mat", VEHICLE_HOW_TO_GET, expected_silos=expected_silos,
                           expected_dim=expected_dim, path=path, data_dir=data_dir,
                           test_fraction=test_fraction, seed=seed)


def load_gleam(path=None, *, data_dir=None, test_fraction: float = 0.25, seed: int = 0,
               expected_silos: int | None = 38, expected_dim: int | None = 180) -> FederatedData:
    """Load ``gleam.mat`` (38 silos, 180 features, labels ±1) with a per-silo 75/25 split."""
    return load_sensor_mat("gleam", "gleam.mat", GLEAM_HOW_TO_GET, expected_silos=expected_silos,
                           expected_dim=expected_dim, path=path, data_dir=data_dir,
                           test_fraction=test_fraction, seed=seed)
