"""One entry point for every dataset: :func:`load_dataset`.

Names (``DATASETS``):

========================== ===================================================================
``school``                 real School (139 silos, 28 features, regression), needs ``school.mat``
``vehicle``                real Vehicle (23 silos, 100 features, binary), needs ``vehicle.mat``
``gleam``                  real GLEAM (38 silos, 180 features, binary), needs ``gleam.mat``
``school-standin``         synthetic stand-in with School's structure (:mod:`fedtrain.data.standins`)
``vehicle-standin``        synthetic stand-in with Vehicle's structure
``gleam-standin``          synthetic stand-in with GLEAM's structure
``gaussian``               the theory's mean-estimation model (:func:`~fedtrain.data.gaussian.gaussian_mean_estimation`)
``gaussian-linreg``        the theory's linear-regression model (``FᵀF = n I``)
``noniid-digits``          FedHDP's non-IID MNIST, one class per client, on scikit-learn digits (:mod:`~fedtrain.data.noniid_digits`)
``noniid-digits-skewed``   the same with all opted-out clients of one class (7)
``femnist-standin``        FedHDP's FEMNIST imitated: Dirichlet label skew + per-client style (:mod:`~fedtrain.data.femnist`)
``noniid-mnist``           non-IID MNIST from the MNIST files (needs them; also ``noniid-mnist-skewed``)
``femnist``                federated EMNIST from TFF's HDF5 files (needs them)
``noniid-fashion``         FedHDP's non-IID Fashion-MNIST, no replacement (:mod:`~fedtrain.data.noniid_fashion`)
``noniid-fashion-skewed``  the same with all opted-out clients of one class (7)
========================== ===================================================================

Image datasets (App. C.1; :mod:`fedtrain.data.rotated_masked`, :mod:`fedtrain.data.cifar_hetero`):

========================== ==============================================================
``rotated-masked-mnist``   real MNIST files, 40 silos x (1,500 + 250), 4 rotation groups
``rotated-masked-digits``  real, scikit-learn's bundled digits (offline), 20 silos, 4 groups
``rotated-masked-standin`` synthetic stand-in with rotated & masked MNIST's structure
``cifar10-hetero``         real CIFAR-10 files, 30 silos holding 5 of the 10 classes each
``cifar10-hetero-standin`` synthetic 32x32x3 stand-in with the same structure
``rotated-masked-fashion`` real Fashion-MNIST files (Debian's package), 40 silos x (1,500 + 250), 4 groups
``hetero-fashion``         real Fashion-MNIST files, 30 silos holding 5 of the 10 classes each
========================== ==============================================================

:data:`DATASET_DESCRIPTIONS` says for each name whether it is real or a stand-in and which files it reads
(``fedtrain datasets`` prints it).

Options are passed through to the loader (e.g. ``seed``, ``test_fraction``, ``tau``), except ``validation``:
a fraction in (0, 1) of every silo's training records held out and scored in place of its test records
(:func:`fedtrain.data.split.hold_out_validation`), for choosing η or λ without reading the test set.

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
from fedtrain.data.cifar_hetero import cifar10_hetero, cifar10_hetero_standin
from fedtrain.data.rotated_masked import rotated_masked_digits, rotated_masked_mnist, rotated_masked_standin
from fedtrain.data.school import load_school
from fedtrain.data.sensors import load_gleam, load_vehicle
from fedtrain.data.split import hold_out_validation
from fedtrain.data.standins import load_standin
from fedtrain.data.femnist import load_femnist_h5, load_femnist_standin
from fedtrain.data.noniid_digits import load_noniid_digits, load_noniid_mnist
from fedtrain.data.cifar_hetero import hetero_fashion
from fedtrain.data.fashion import DEBIAN_DIR
from fedtrain.data.noniid_fashion import load_noniid_fashion
from fedtrain.data.rotated_masked import rotated_masked_fashion
from fedtrain.encoding import encode

__all__ = ["DATASETS", "REAL_DATASETS", "DATASET_DESCRIPTIONS", "CLIENT_DATASETS", "FILE_DATASETS",
           "SPLIT_SEED_OPTIONS", "load_dataset", "split_seed_option", "reads_files", "generator_identity"]

#: The datasets read from files (they take ``data_dir``; a missing file names an alternative).
REAL_DATASETS = ("school", "vehicle", "gleam", "rotated-masked-mnist", "cifar10-hetero")
_LOADERS: dict[str, Callable[..., FederatedData]] = {
    "school": load_school,
    "vehicle": load_vehicle,
    "gleam": load_gleam,
    "school-standin": lambda **kw: load_standin("school", **kw),
    "vehicle-standin": lambda **kw: load_standin("vehicle", **kw),
    "gleam-standin": lambda **kw: load_standin("gleam", **kw),
    "gaussian": gaussian_mean_estimation,
    "gaussian-linreg": gaussian_linear_regression,
    "rotated-masked-mnist": rotated_masked_mnist,
    "rotated-masked-digits": rotated_masked_digits,
    "rotated-masked-standin": rotated_masked_standin,
    "cifar10-hetero": cifar10_hetero,
    "cifar10-hetero-standin": cifar10_hetero_standin,
    "noniid-digits": lambda **kw: load_noniid_digits(skewed=False, **kw),
    "noniid-digits-skewed": lambda **kw: load_noniid_digits(skewed=True, **kw),
    "femnist-standin": load_femnist_standin,
    "noniid-mnist": lambda data_dir=None, **kw: load_noniid_mnist(skewed=False, data_dir=data_dir, **kw),
    "noniid-mnist-skewed": lambda data_dir=None, **kw: load_noniid_mnist(skewed=True, data_dir=data_dir, **kw),
    "femnist": lambda data_dir=None, **kw: load_femnist_h5(data_dir=data_dir, **kw),
    "rotated-masked-fashion": rotated_masked_fashion,
    "hetero-fashion": hetero_fashion,
    "noniid-fashion": lambda data_dir=None, **kw: load_noniid_fashion(skewed=False, data_dir=data_dir, **kw),
    "noniid-fashion-skewed": lambda data_dir=None, **kw: load_noniid_fashion(skewed=True, data_dir=data_dir, **kw),
}
DATASETS: tuple[str, ...] = tuple(_LOADERS)
#: dataset name -> the loader option holding its split seed (see the module docstring)
SPLIT_SEED_OPTIONS: dict[str, str] = {
    "school": "seed", "vehicle": "seed", "gleam": "seed",
    "school-standin": "split_seed", "vehicle-standin": "split_seed", "gleam-standin": "split_seed",
    "gaussian": "seed", "gaussian-linreg": "seed",
    "noniid-digits": "seed", "noniid-digits-skewed": "seed", "femnist-standin": "seed",
    "noniid-mnist": "seed", "noniid-mnist-skewed": "seed", "femnist": "seed",
    "rotated-masked-mnist": "seed", "rotated-masked-digits": "seed", "rotated-masked-standin": "split_seed",
    "cifar10-hetero": "seed", "cifar10-hetero-standin": "split_seed",
    "rotated-masked-fashion": "seed", "hetero-fashion": "seed", "noniid-fashion": "seed",
    "noniid-fashion-skewed": "seed",
}
#: FedHDP's client-level datasets (one entry per client; ``info["nonprivate_clients"]`` is the opt-out set) and
#: those of them that read files the user must already have (MNIST, federated EMNIST).
CLIENT_DATASETS = ("noniid-digits", "noniid-digits-skewed", "femnist-standin", "noniid-mnist",
                   "noniid-mnist-skewed", "femnist")
FILE_DATASETS = ("noniid-mnist", "noniid-mnist-skewed", "femnist")
_FOLDERS = "in --data-dir, else $FEDBOOK_DATA_DIR, <repo>/data or ../shared/data"
_FASHION_FOLDERS = (f"in --data-dir, else $FEDBOOK_DATA_DIR, <repo>/data, ../shared/data or {DEBIAN_DIR} "
                    "(Debian's dataset-fashion-mnist)")
#: dataset name -> one line: real or stand-in, and which files it reads from where (``fedtrain datasets``).
DATASET_DESCRIPTIONS: dict[str, str] = {
    "school": f"real; reads school.mat {_FOLDERS} (or a school/ subfolder)",
    "vehicle": f"real; reads vehicle.mat {_FOLDERS} (or a vehicle/ subfolder)",
    "gleam": f"real; reads gleam.mat {_FOLDERS} (or a gleam/ subfolder)",
    "school-standin": "synthetic stand-in with School's structure",
    "vehicle-standin": "synthetic stand-in with Vehicle's structure",
    "gleam-standin": "synthetic stand-in with GLEAM's structure",
    "gaussian": "synthetic: the theory's Gaussian mean-estimation model",
    "gaussian-linreg": "synthetic: the theory's Gaussian linear-regression model",
    "rotated-masked-mnist": ("real; reads MNIST (train-/t10k-images-idx3-ubyte.gz and -labels-idx1-ubyte.gz, or "
                             f"mnist.npz) {_FOLDERS} (or a mnist/ subfolder)"),
    "rotated-masked-digits": "real; scikit-learn's bundled 8x8 digits (no file needed), resized to 28x28",
    "rotated-masked-standin": "synthetic stand-in with rotated & masked MNIST's structure",
    "cifar10-hetero": ("real; reads CIFAR-10 (cifar-10-batches-py/ or cifar-10-python.tar.gz) "
                       f"{_FOLDERS} (or a cifar10/ subfolder)"),
    "cifar10-hetero-standin": "synthetic 32x32x3 stand-in with heterogeneous CIFAR-10's structure",
    "noniid-digits": "synthetic stand-in for FedHDP's non-IID MNIST: scikit-learn digits, one class per client, "
                     "5% opted out (client-level; fedtrain run --method fedhdp)",
    "noniid-digits-skewed": "the same, all opted-out clients hold digit 7 (client-level)",
    "femnist-standin": "synthetic stand-in for federated EMNIST: Dirichlet label skew + per-client style (client-level)",
    "noniid-mnist": f"real; FedHDP's non-IID MNIST from the MNIST files {_FOLDERS} (client-level)",
    "noniid-mnist-skewed": f"real; the skewed variant from the MNIST files {_FOLDERS} (client-level)",
    "femnist": (f"real; reads TFF's fed_emnist_train.h5 and fed_emnist_test.h5 {_FOLDERS} (or a femnist/ "
                "subfolder) (client-level)"),
    "rotated-masked-fashion": (f"real; reads Fashion-MNIST (train-/t10k-images-idx3-ubyte.gz and "
                               f"-labels-idx1-ubyte.gz) {_FASHION_FOLDERS}; 40 silos x (1,500 + 250), 4 rotation "
                               "groups, per-silo 2x2 masks (App. C.1)"),
    "hetero-fashion": (f"real; reads Fashion-MNIST {_FASHION_FOLDERS}; 30 silos x 5 of the 10 classes "
                       "(the paper's CIFAR-10 split, about 2,000 training images per silo)"),
    "noniid-fashion": (f"real; FedHDP's non-IID split of Fashion-MNIST {_FASHION_FOLDERS}: 2,000 clients x 30 "
                       "images of one class, without replacement (the 60,000 exactly), 5% opted out, who hold "
                       "3,000 of the 60,000 distinct training images (5.0%) (client-level)"),
    "noniid-fashion-skewed": (f"real; the same, all opted-out clients of class 7 (Sneaker) {_FASHION_FOLDERS}; "
                              "they hold 3,000 of the 60,000 distinct training images (5.0%) (client-level)"),
}
#: file-backed dataset -> the datasets to use without its files (named in the not-found message)
_ALTERNATIVES = {"rotated-masked-mnist": ("rotated-masked-digits", "rotated-masked-standin"),
                 "noniid-mnist": ("noniid-digits",), "femnist": ("femnist-standin",)}
# Real Fashion-MNIST (Debian's dataset-fashion-mnist, offline): the image datasets and FedHDP's client-level
# split read from its files (fedtrain.data.fashion).
REAL_DATASETS += ("rotated-masked-fashion", "hetero-fashion")
CLIENT_DATASETS += ("noniid-fashion", "noniid-fashion-skewed")
FILE_DATASETS += ("noniid-fashion", "noniid-fashion-skewed")
_ALTERNATIVES.update({"rotated-masked-fashion": ("rotated-masked-digits", "rotated-masked-standin"),
                      "hetero-fashion": ("cifar10-hetero-standin",), "noniid-fashion": ("noniid-digits",),
                      "noniid-fashion-skewed": ("noniid-digits-skewed",)})


def split_seed_option(name: str) -> str:
    """The loader option of dataset ``name`` that seeds its per-silo train/test split."""
    if name not in SPLIT_SEED_OPTIONS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")
    return SPLIT_SEED_OPTIONS[name]


def reads_files(name: str) -> bool:
    """Whether dataset ``name`` is read from files (it takes ``data_dir``): its identity is then the content of
    the files its loader read (:meth:`~fedtrain.data.base.FederatedData.identity`), known only once loaded."""
    return name in REAL_DATASETS or name in FILE_DATASETS


def generator_identity(name: str, options: dict | None = None) -> dict | None:
    """The identity of a dataset that reads no file: its name (the generator) and its loader options, known
    without loading it; ``None`` for a dataset read from files (:func:`reads_files`)."""
    if name not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")
    if reads_files(name):
        return None
    return {"generator": name, "options": encode(dict(options or {}))}


def load_dataset(name: str, *, data_dir: str | os.PathLike | None = None, **options) -> FederatedData:
    """Load dataset ``name`` (see the module docstring); ``data_dir`` is used by the real datasets only.

    Data that read no file get ``info["identity"]`` = :func:`generator_identity` (the results store's key);
    data read from files are identified by the files' content.
    An unknown name raises ``ValueError`` listing the valid names; a missing real file raises
    :class:`~fedtrain.data.files.DatasetNotFoundError` saying where it looked, how to obtain the file and
    which stand-in to use instead.
    """
    if name not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")
    validation = options.pop("validation", None)
    data = _load(name, data_dir, options)
    if validation is not None:
        data = hold_out_validation(data, validation)
    return data


def _load(name: str, data_dir, options: dict) -> FederatedData:
    loader = _LOADERS[name]
    if name in REAL_DATASETS or name in FILE_DATASETS:
        try:
            return loader(data_dir=data_dir, **options)
        except DatasetNotFoundError as exc:
            alternatives = _ALTERNATIVES.get(name, (f"{name}-standin",))
            if all(a in str(exc) for a in alternatives):
                raise
            raise DatasetNotFoundError(f"{exc}\nWithout the files, use {' or '.join(map(repr, alternatives))} "
                                       "(same structure).") from exc
        except TypeError as exc:
            raise ValueError(f"bad option for dataset {name!r}: {exc}") from exc
    try:
        data = loader(**options)
    except TypeError as exc:
        raise ValueError(f"bad option for dataset {name!r}: {exc}") from exc
    data.info["identity"] = generator_identity(name, options)
    return data
