"""Cross-silo datasets: real loaders (School, Vehicle, GLEAM, MNIST, CIFAR-10, digits) and synthetic stand-ins.

Use :func:`load_dataset` (``fedtrain.data.registry``) with one of :data:`DATASETS`.
"""
from fedtrain.data.base import FederatedData
from fedtrain.data.files import (
    DATA_DIR_ENV,
    DatasetCorruptError,
    DatasetNotFoundError,
    default_data_dirs,
)
from fedtrain.data.cifar_hetero import cifar10_hetero, cifar10_hetero_standin
from fedtrain.data.gaussian import gaussian_linear_regression, gaussian_mean_estimation
from fedtrain.data.images import (
    ImageArrays,
    federated_from_images,
    load_cifar10,
    load_digits_images,
    load_mnist,
)
from fedtrain.data.registry import DATASETS, REAL_DATASETS, load_dataset
from fedtrain.data.rotated_masked import rotated_masked_digits, rotated_masked_mnist, rotated_masked_standin
from fedtrain.data.school import load_school
from fedtrain.data.sensors import load_gleam, load_vehicle
from fedtrain.data.standins import STANDIN_PRESETS, load_standin, make_hierarchical_linear

__all__ = [
    "FederatedData",
    "DATASETS",
    "REAL_DATASETS",
    "DATA_DIR_ENV",
    "DatasetCorruptError",
    "DatasetNotFoundError",
    "default_data_dirs",
    "load_dataset",
    "load_school",
    "load_vehicle",
    "load_gleam",
    "load_standin",
    "make_hierarchical_linear",
    "STANDIN_PRESETS",
    "gaussian_mean_estimation",
    "gaussian_linear_regression",
    "ImageArrays",
    "load_mnist",
    "load_cifar10",
    "load_digits_images",
    "federated_from_images",
    "rotated_masked_mnist",
    "rotated_masked_digits",
    "rotated_masked_standin",
    "cifar10_hetero",
    "cifar10_hetero_standin",
]
