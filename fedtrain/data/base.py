"""The container every dataset loader returns and the training engine consumes, and the data's identity.

Identity (:func:`data_identity`, :meth:`FederatedData.identity`): what the results store keys a row's data
by, so that a row trained on one copy of a dataset is never served for another.  In order of preference:

* ``{"files": {name: sha256, ...}}``: the content of the files the loader read, from its ``info``
  (``info["files"]``, a name -> SHA-256 map, or ``info["file"]`` with ``info["sha256"]``); a loader that
  names files in ``info`` (``file``, ``test_file``) without their digests has them hashed here;
* ``{"generator": name, "options": {...}}``: synthetic data, named by the dataset and the loader options
  (stamped by :func:`fedtrain.data.registry.load_dataset` for every dataset that reads no file);
* ``{"content_sha256": ...}``: otherwise (data built in code), the SHA-256 of the arrays themselves.

Nothing here is specific to a dataset: a new loader gets its identity from what it records in ``info``.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

import numpy as np
from fedtrain.data.files import sha256_file
from fedtrain.encoding import encode

__all__ = ["FederatedData", "data_identity", "identity_digest"]


def identity_digest(identity: Mapping[str, Any]) -> str:
    """A 12-hex-digit digest of a data identity (its canonical JSON): the data part of a results-store key."""
    text = json.dumps(encode(dict(identity)), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def data_identity(summary: Mapping[str, Any]) -> dict | None:
    """The identity recorded in a data summary (:meth:`FederatedData.summary`), or, for summaries written
    before identities were recorded, the one it implies: its files' SHA-256 for real data read from a file;
    ``None`` when the summary does not determine it."""
    ident = summary.get("identity")
    if ident:
        return dict(ident)
    if summary.get("file") and summary.get("sha256"):
        return {"files": {Path(str(summary["file"])).name: str(summary["sha256"])}}
    return None


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
                for part, arr in ((f"{name}_x", x), (f"{name}_y", y)):
                    arr = np.asarray(arr)
                    if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
                        bad = int(arr.size - np.isfinite(arr).sum())
                        source = f" (read from {self.info['file']})" if self.info.get("file") else ""
                        raise ValueError(f"bad data in {self.name!r}{source}: silo {i}'s {part} holds {bad} NaN or "
                                         "infinite value(s); every feature and target must be finite (clean or drop "
                                         "them before training)")

    def identity(self) -> dict:
        """What these data are, for the results store's keys (module docstring); computed once."""
        cached = self.__dict__.get("_identity")
        if cached is not None:
            return dict(cached)
        ident = self.info.get("identity")
        if not ident:
            files = self.info.get("files")
            if isinstance(files, Mapping) and files and all(isinstance(v, str) for v in files.values()):
                ident = {"files": {str(k): str(v) for k, v in files.items()}}
            elif self.info.get("file") and self.info.get("sha256"):
                ident = {"files": {Path(str(self.info["file"])).name: str(self.info["sha256"])}}
                if self.info.get("test_file"):
                    ident["files"][Path(str(self.info["test_file"])).name] = _sha256_of(self.info["test_file"])
            elif self.info.get("file") and Path(str(self.info["file"])).is_file():
                ident = {"files": {Path(str(self.info[k])).name: _sha256_of(self.info[k])
                                   for k in ("file", "test_file") if self.info.get(k)}}
            else:
                h = hashlib.sha256()
                for arrays in (self.train_x, self.train_y, self.test_x, self.test_y):
                    for a in arrays:
                        a = np.ascontiguousarray(a)
                        h.update(f"{a.dtype.str}{a.shape}".encode())
                        h.update(a.tobytes())
                ident = {"content_sha256": h.hexdigest()}
        self.__dict__["_identity"] = dict(ident)
        return dict(ident)

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
        SHA-256 (``None`` for generated data), the scalar provenance of ``info`` (split seed, τ, ...) and the
        data's ``identity`` (:meth:`identity`)."""
        info = {k: v for k, v in self.info.items()
                if isinstance(v, (str, int, float, bool, tuple)) and k not in ("file", "sha256", "identity")}
        return {"name": self.name, "real": bool(self.real), "task": self.task, "num_silos": self.num_silos,
                "dim": self.dim, "input_shape": list(self.input_shape) if self.input_shape else None, "train_size": int(self.train_sizes.sum()), "test_size": int(self.test_sizes.sum()),
                "file": self.info.get("file"), "sha256": self.info.get("sha256"), "info": encode(info),
                "identity": encode(self.identity())}


def _sha256_of(path: Any) -> str:
    return sha256_file(str(path))
