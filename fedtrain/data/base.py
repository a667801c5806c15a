"""The container every dataset loader returns and the training engine consumes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

__all__ = ["FederatedData"]


@dataclass
class FederatedData:
    """A cross-silo dataset: one train/test split per silo.

    ``train_x[k]`` is an ``(n_k, d)`` float array, ``train_y[k]`` an ``(n_k,)`` array: real targets
    for ``task="regression"``, labels in {-1, +1} for ``task="binary"`` (linear SVM), integer labels
    0..C-1 for ``task="multiclass"``.  ``real`` says whether the data are the real dataset or a
    synthetic stand-in (figures must say which).  ``info`` holds provenance (file, checksum,
    split seed, generator parameters such as the heterogeneity τ).
    """

    name: str
    task: Literal["regression", "binary", "multiclass"]
    train_x: list[np.ndarray]
    train_y: list[np.ndarray]
    test_x: list[np.ndarray]
    test_y: list[np.ndarray]
    real: bool
    num_classes: int | None = None
    info: dict = field(default_factory=dict)
    #: ``(C, H, W)`` for image data stored flattened (``d = C*H*W``, channel-major as ``x.reshape(-1, C, H, W)``
    #: reads it); ``None`` for tabular data.  Image models (``model="convnet"``) need it.
    input_shape: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        k = len(self.train_x)
        if not (len(self.train_y) == len(self.test_x) == len(self.test_y) == k):
            raise ValueError("train_x, train_y, test_x and test_y must hold one array per silo")
        if k < 1:
            raise ValueError("a federated dataset needs at least one silo")
        dims = {x.shape[1] for x in self.train_x} | {x.shape[1] for x in self.test_x}
        if len(dims) != 1:
            raise ValueError(f"all silos must share one feature dimension (got {sorted(dims)})")
        if self.input_shape is not None:
            shape = tuple(int(v) for v in self.input_shape)
            if len(shape) != 3 or min(shape) < 1 or int(np.prod(shape)) != dims.pop():
                raise ValueError(f"input_shape must be (C, H, W) with C*H*W equal to the feature dimension "
                                 f"(got {self.input_shape} for d={self.train_x[0].shape[1]})")
            self.input_shape = shape
        for name, xs, ys in (("train", self.train_x, self.train_y), ("test", self.test_x, self.test_y)):
            for i, (x, y) in enumerate(zip(xs, ys)):
                if x.shape[0] != y.shape[0]:
                    raise ValueError(f"silo {i}: {name}_x has {x.shape[0]} rows but {name}_y has {y.shape[0]}")

    @property
    def num_silos(self) -> int:
        return len(self.train_x)

    @property
    def dim(self) -> int:
        return int(self.train_x[0].shape[1])

    @property
    def train_sizes(self) -> np.ndarray:
        return np.array([x.shape[0] for x in self.train_x], dtype=np.int64)

    @property
    def test_sizes(self) -> np.ndarray:
        return np.array([x.shape[0] for x in self.test_x], dtype=np.int64)

    @property
    def metric(self) -> str:
        """The paper's test metric: mean squared error for regression, accuracy otherwise."""
        return "mse" if self.task == "regression" else "accuracy"

    def summary(self) -> dict:
        """What a result records about the data: name, real or stand-in, task, sizes, the file read and its
        SHA-256 (``None`` for generated data) and the scalar provenance of ``info`` (split seed, τ, ...)."""
        from fedtrain.encoding import encode

        info = {k: v for k, v in self.info.items()
                if isinstance(v, (str, int, float, bool, tuple)) and k not in ("file", "sha256")}
        return {"name": self.name, "real": bool(self.real), "task": self.task, "num_silos": self.num_silos,
                "dim": self.dim, "input_shape": list(self.input_shape) if self.input_shape else None, "train_size": int(self.train_sizes.sum()), "test_size": int(self.test_sizes.sum()),
                "file": self.info.get("file"), "sha256": self.info.get("sha256"), "info": encode(info)}
