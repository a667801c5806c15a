"""Federated EMNIST for FedHDP (Sec. 5.1, Table 5): the TFF HDF5 files, and a writer-style stand-in.

**The files** (``femnist``).  TensorFlow Federated ships federated EMNIST as two HDF5 files,
``fed_emnist_train.h5`` / ``fed_emnist_test.h5`` (62 classes, 3,400 writers; the paper's FEMNIST) and
``fed_emnist_digitsonly_train.h5`` / ``..._test.h5`` (10 classes, 3,383 writers; the paper's "FMNIST",
see the inventory's note).  Layout: ``examples/<writer id>/pixels`` (n, 28, 28) float and
``examples/<writer id>/label`` (n,) int; a writer's test examples sit under the same id in the test
file.  :func:`load_femnist_h5` reads them (nothing downloads: a missing file raises
:class:`~fedtrain.data.files.DatasetNotFoundError` naming the file, the folders searched and how to obtain
it).  The server test set is the union of the writers' test sets, as in the paper.

**The stand-in** (``femnist-standin``).  Writers are imitated on scikit-learn's 8×8 digits: each
client draws its label mix from ``Dirichlet(alpha·1)`` (label skew), its size from a log-normal around
``mean_samples``, its images from the digit pool (with replacement), and applies its own **style**:
a fixed brightness gain ``g ~ U(0.6, 1.4)``, an offset ``o ~ U(-0.1, 0.1)``, a shift of up to one
pixel, and a fixed per-client pixel pattern of std 0.05 (the writer's "pen").  A client's local
test images come from the held-out pool with the same label mix and style.  5 % of the clients
opt out (``info["nonprivate_clients"]``, fixed by ``seed``).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from fedtheory.validation import check_integer_at_least, check_open_interval, check_positive
from fedtrain.data.base import FederatedData
from fedtrain.data.files import DatasetCorruptError, DatasetNotFoundError, default_data_dirs
from fedtrain.data.noniid_digits import choose_nonprivate, digit_pool

__all__ = ["load_femnist_standin", "load_femnist_h5", "find_femnist_files", "FEMNIST_FILES"]

#: ``only_digits`` → (train file, test file) names of TFF's federated EMNIST.
FEMNIST_FILES = {False: ("fed_emnist_train.h5", "fed_emnist_test.h5"),
                 True: ("fed_emnist_digitsonly_train.h5", "fed_emnist_digitsonly_test.h5")}
_HOW = ("TensorFlow Federated downloads them with tff.simulation.datasets.emnist.load_data(only_digits=...) "
        "(cached under ~/.keras/datasets); copy the two .h5 files into one of these folders or pass data_dir")


def _style(x: np.ndarray, side: int, gain: float, offset: float, shift: tuple[int, int], pattern: np.ndarray):
    img = x.reshape(len(x), side, side)
    img = np.roll(img, shift, axis=(1, 2))
    out = np.clip(gain * img + offset + pattern[None], 0.0, 1.0)
    return out.reshape(len(x), -1).astype(np.float32)


def load_femnist_standin(*, num_clients: int = 340, mean_samples: int = 40, test_per_client: int = 10,
                         alpha: float = 0.5, nonprivate_fraction: float = 0.05, seed: int = 0) -> FederatedData:
    """The writer-style stand-in (module docstring): Dirichlet(``alpha``) label skew plus a per-client style."""
    num_clients = int(check_integer_at_least("num_clients", num_clients, 2))
    mean_samples = int(check_integer_at_least("mean_samples", mean_samples, 2))
    test_per_client = int(check_integer_at_least("test_per_client", test_per_client, 1))
    alpha = float(check_positive("alpha", alpha))
    check_open_interval("nonprivate_fraction", nonprivate_fraction, 0.0, 1.0)
    seed = int(check_integer_at_least("seed", seed, 0))
    tx, ty, vx, vy, pinfo = digit_pool("sklearn-digits", seed=seed)
    side = 8
    rng = np.random.default_rng([seed, 5151])
    by_train = [np.flatnonzero(ty == c) for c in range(10)]
    by_test = [np.flatnonzero(vy == c) for c in range(10)]
    trx, try_, tex, tey, majors = [], [], [], [], []
    for _ in range(num_clients):
        mix = rng.dirichlet(np.full(10, alpha))
        n = max(2, int(round(mean_samples * rng.lognormal(0.0, 0.4))))
        style = (rng.uniform(0.6, 1.4), rng.uniform(-0.1, 0.1), tuple(int(v) for v in rng.integers(-1, 2, 2)),
                 rng.normal(0.0, 0.05, (side, side)))
        labs = rng.choice(10, size=n, p=mix)
        tlabs = rng.choice(10, size=test_per_client, p=mix)
        a = np.array([rng.choice(by_train[c]) for c in labs])
        b = np.array([rng.choice(by_test[c]) for c in tlabs])
        trx.append(_style(tx[a], side, *style))
        try_.append(ty[a])
        tex.append(_style(vx[b], side, *style))
        tey.append(vy[b])
        majors.append(int(np.argmax(mix)))
    nonprivate = choose_nonprivate(np.array(majors), nonprivate_fraction, np.random.default_rng([seed, 77]))
    return FederatedData(
        name="femnist-standin", task="multiclass", train_x=trx, train_y=try_, test_x=tex, test_y=tey, real=False,
        num_classes=10, input_shape=(1, side, side),
        info={"source": "writer-style stand-in for federated EMNIST on scikit-learn's 8x8 digits "
                        "(Dirichlet label skew + per-client style), not the EMNIST data",
              "num_clients": num_clients, "mean_samples": mean_samples, "test_per_client": test_per_client,
              "alpha": alpha, "nonprivate_fraction": float(nonprivate_fraction), "seed": seed,
              "nonprivate_clients": nonprivate,
              "server_test_x": np.concatenate(tex), "server_test_y": np.concatenate(tey)})


def find_femnist_files(only_digits: bool = False, data_dir: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """Paths of the (train, test) HDF5 files; :class:`DatasetNotFoundError` says where it looked and how to get them.

    With ``data_dir`` only that folder is searched; otherwise the folders of
    :func:`fedtrain.data.files.default_data_dirs` (``$FEDBOOK_DATA_DIR``, ``<repo>/data``, ``../shared/data``),
    each also with a ``femnist/`` subfolder.
    """
    names = FEMNIST_FILES[bool(only_digits)]
    dirs = [Path(data_dir).expanduser()] if data_dir is not None else default_data_dirs()
    tried = []
    for d in dirs:
        for folder in (d, d / "femnist"):
            paths = tuple(folder / n for n in names)
            tried.append(str(folder))
            if all(p.is_file() for p in paths):
                return paths  # type: ignore[return-value]
    raise DatasetNotFoundError(f"federated EMNIST files {names[0]} and {names[1]} not found; looked in: "
                               f"{', '.join(tried)}. {_HOW}. The synthetic 'femnist-standin' has the same structure.")


#: TFF's federated EMNIST images are 28x28 grey levels.
FEMNIST_SIDE = 28


def _check_writer(path: Path, writer: str, pixels: np.ndarray, labels: np.ndarray, num_classes: int) -> None:
    """A writer's examples as the layout requires: pixels (n, 28, 28), n >= 1 integer labels in [0, num_classes)."""
    where = f"{path}: writer {writer!r}"
    if pixels.ndim != 3 or pixels.shape[1:] != (FEMNIST_SIDE, FEMNIST_SIDE):
        raise DatasetCorruptError(f"{where} has pixels of shape {pixels.shape}; federated EMNIST's are "
                                  f"(n, {FEMNIST_SIDE}, {FEMNIST_SIDE}). {_HOW}")
    if labels.ndim != 1 or len(labels) != len(pixels):
        raise DatasetCorruptError(f"{where} has {len(pixels)} images but labels of shape {labels.shape}")
    if len(pixels) < 1:
        raise DatasetCorruptError(f"{where} has no examples; every writer needs at least one")
    if labels.dtype.kind not in "iu" and not np.array_equal(labels, np.round(labels)):
        raise DatasetCorruptError(f"{where} has non-integer labels (dtype {labels.dtype})")
    bad = (labels < 0) | (labels >= num_classes)
    if bad.any():
        raise DatasetCorruptError(f"{where} has label {labels[bad][0].item()!r} outside [0, {num_classes - 1}] "
                                  f"({num_classes} classes in this file set)")
    if not np.isfinite(pixels).all():
        raise DatasetCorruptError(f"{where} has non-finite pixel values")


def load_femnist_h5(*, only_digits: bool = False, data_dir: str | os.PathLike | None = None,
                    max_clients: int | None = None, nonprivate_fraction: float = 0.05, seed: int = 0) -> FederatedData:
    """Federated EMNIST from TFF's HDF5 files (module docstring); ``max_clients`` keeps the first writers (sorted ids)."""
    import h5py

    check_open_interval("nonprivate_fraction", nonprivate_fraction, 0.0, 1.0)
    seed = int(check_integer_at_least("seed", seed, 0))
    train_path, test_path = find_femnist_files(only_digits, data_dir)
    ncls = 10 if only_digits else 62
    try:
        with h5py.File(train_path, "r") as ftr, h5py.File(test_path, "r") as fte:
            ids = sorted(ftr["examples"].keys())
            if max_clients is not None:
                ids = ids[: int(check_integer_at_least("max_clients", max_clients, 2))]
            if len(ids) < 2:
                raise DatasetCorruptError(f"{train_path}: holds {len(ids)} writer(s) under examples/; federated EMNIST "
                                          f"needs at least 2 (TFF's file has 3,400). {_HOW}")
            trx, try_, tex, tey = [], [], [], []
            for w in ids:
                if w not in fte["examples"]:
                    raise DatasetCorruptError(f"{test_path}: writer {w!r} of {train_path} has no test examples")
                for f, path, xs, ys in ((ftr, train_path, trx, try_), (fte, test_path, tex, tey)):
                    g = f["examples"][w]
                    px = np.asarray(g["pixels"], dtype=np.float32)
                    y = np.asarray(g["label"])
                    _check_writer(path, w, px, y, ncls)
                    xs.append(px.reshape(len(px), -1))
                    ys.append(y.astype(np.int64))
    except (KeyError, OSError) as exc:
        raise DatasetCorruptError(f"cannot read federated EMNIST from {train_path} / {test_path} (expected "
                                  f"examples/<writer>/pixels and .../label): {exc}") from exc
    side = FEMNIST_SIDE
    nonprivate = choose_nonprivate(np.zeros(len(ids)), nonprivate_fraction, np.random.default_rng([seed, 77]))
    return FederatedData(
        name="femnist", task="multiclass", train_x=trx, train_y=try_, test_x=tex, test_y=tey, real=True,
        num_classes=ncls, input_shape=(1, side, side),
        info={"source": "TFF federated EMNIST HDF5 files", "file": str(train_path), "test_file": str(test_path),
              "only_digits": bool(only_digits), "num_clients": len(ids), "nonprivate_fraction": float(nonprivate_fraction),
              "seed": seed, "nonprivate_clients": nonprivate, "writers": tuple(ids),
              "server_test_x": np.concatenate(tex), "server_test_y": np.concatenate(tey)})
