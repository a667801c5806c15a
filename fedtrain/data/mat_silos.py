"""The one construction of a real per-silo dataset from a ``.mat`` file (School, Vehicle, GLEAM).

The file holds ``X`` and ``Y`` cell arrays, one cell per silo (:func:`fedtrain.data.files.read_mat_silos`); the
protocol is the paper's (Appendix C.1): a per-silo random train/test split and per-silo standardization with the
training statistics (:func:`fedtrain.data.split.split_and_standardize`).  The loaders differ only in the file, the
checksum, the layout they expect and how they map the raw targets.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

import numpy as np

from fedtheory.validation import check_integer_at_least, check_open_interval
from fedtrain.data.base import FederatedData
from fedtrain.data.files import find_data_file, read_mat_silos, verify_checksum
from fedtrain.data.split import split_and_standardize

__all__ = ["MAT_SILOS_PROTOCOL", "load_mat_silos"]


#: The split protocol of every per-silo ``.mat`` dataset (recorded in ``info["protocol"]``).
MAT_SILOS_PROTOCOL = "per-silo random split; per-silo standardization with training statistics"


def load_mat_silos(
    filename: str,
    *,
    name: str,
    task: Literal["regression", "binary", "multiclass"],
    how_to_get: str,
    test_fraction: float,
    seed: int,
    path: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
    sha256: str | None = None,
    check: Callable[[Path, list[np.ndarray], list[np.ndarray]], None] | None = None,
    targets: Callable[[np.ndarray, Path, int], np.ndarray] | None = None,
    num_classes: int | None = None,
    info: Mapping[str, Any] | None = None,
) -> FederatedData:
    """A real per-silo dataset from a ``.mat`` file (``X``/``Y`` cell arrays,
    :func:`~fedtrain.data.files.read_mat_silos`), with the paper's protocol: per-silo random train/test split and
    standardization with the training statistics (:func:`fedtrain.data.split.split_and_standardize`).

    The file is found by :func:`~fedtrain.data.files.find_data_file` (``path``, ``data_dir``, the default folders;
    ``how_to_get`` in the message when it is missing) and checked against ``sha256`` when given
    (:func:`~fedtrain.data.files.verify_checksum`).  ``check(file, xs, ys)`` may reject the layout (raising
    :class:`~fedtrain.data.files.DatasetCorruptError`); ``targets(y, file, k)`` maps silo ``k``'s raw targets (a
    scaling, labels to {-1, +1}).  ``info`` is added to the provenance (``file``, ``sha256``, ``test_fraction``,
    ``split_seed``, ``protocol``).  ``real=True``.
    """
    check_open_interval("test_fraction", test_fraction, 0.0, 1.0)
    seed = int(check_integer_at_least("seed", seed, 0))
    file = find_data_file(filename, path=path, data_dir=data_dir, how_to_get=how_to_get)
    digest = verify_checksum(file, sha256, how_to_get)
    xs, ys = read_mat_silos(file, how_to_get=how_to_get)
    if check is not None:
        check(file, xs, ys)
    if targets is not None:
        ys = [targets(y, file, k) for k, y in enumerate(ys)]
    trx, try_, tex, tey = split_and_standardize(xs, ys, test_fraction=test_fraction, seed=seed)
    meta = {"file": str(file), "sha256": digest, "test_fraction": float(test_fraction), "split_seed": seed,
            "protocol": MAT_SILOS_PROTOCOL}
    meta.update(info or {})
    return FederatedData(name=name, task=task, train_x=trx, train_y=try_, test_x=tex, test_y=tey, real=True,
                         num_classes=num_classes, info=meta)

