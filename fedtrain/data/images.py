"""Raw image loaders: MNIST and CIFAR-10 from files, scikit-learn's bundled digits, and image silos.

The deep experiments of the MR-MTL paper (Liu et al., NeurIPS 2022, Sec. 4 and App. C.1: rotated & masked
MNIST, Fig. 6 and Fig. A1; heterogeneous CIFAR-10, Fig. 3d) start from these arrays.  Nothing here ever
downloads: a loader reads files that the user placed in a data folder, verifies them and says, when a file
is missing, truncated or different, which file, where it was looked for and where it is obtained.

* :func:`load_mnist`: the four IDX ``.gz`` files of LeCun et al. (``train-images-idx3-ubyte.gz``, ...) or a
  Keras-style ``mnist.npz`` (keys ``x_train``, ``y_train``, ``x_test``, ``y_test``);
* :func:`load_cifar10`: the python version of CIFAR-10, as the folder ``cifar-10-batches-py/`` or the
  archive ``cifar-10-python.tar.gz`` (read in place, never extracted);
* :func:`load_digits_images`: scikit-learn's bundled 8x8 handwritten digits (1,797 images, offline), kept
  at 8x8 or resized/padded to a model's input (the default real image dataset of the book's CPU chapters);
* :func:`federated_from_images`: per-silo image arrays -> :class:`~fedtrain.data.base.FederatedData`.

Every loader returns images as float32 arrays of shape ``(N, C, H, W)`` scaled to [0, 1] and int64 labels.

Folders searched (as for the ``.mat`` datasets, :func:`fedtrain.data.files.default_data_dirs`): an explicit
``data_dir`` only, when given; otherwise ``$FEDBOOK_DATA_DIR``, ``<repo>/data`` and ``../shared/data``.  In
each folder the files may sit directly, or in ``mnist/`` or ``MNIST/raw/`` (torchvision's layout) for MNIST,
and in ``cifar10/`` for CIFAR-10.

Checksums (:data:`PUBLISHED_CHECKSUMS`) are the published ones, copied from the source named beside each
value; they are verified by default.  ``verify=False`` skips them (structure is still checked) and
``checksums={filename: hexdigest}`` replaces entries (32 hex digits = MD5, 64 = SHA-256), which is how the
tests check small files written in the same formats.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import io
import os
import pickle
import struct
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from fedtheory.validation import check_choice, check_integer_at_least
from fedtrain.data.base import FederatedData
from fedtrain.data.files import DatasetCorruptError, DatasetNotFoundError, default_data_dirs

__all__ = [
    "ImageArrays",
    "PUBLISHED_CHECKSUMS",
    "MNIST_IDX_FILES",
    "MNIST_NPZ",
    "CIFAR10_FOLDER",
    "CIFAR10_ARCHIVE",
    "MNIST_HOW_TO_GET",
    "CIFAR10_HOW_TO_GET",
    "load_mnist",
    "load_cifar10",
    "load_digits_images",
    "check_images",
    "federated_from_images",
]

#: The four IDX files of MNIST: role -> file name.
MNIST_IDX_FILES: dict[str, str] = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
#: Keras' single-file copy of MNIST.
MNIST_NPZ = "mnist.npz"
#: The python version of CIFAR-10: folder name, archive name, batch files.
CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_ARCHIVE = "cifar-10-python.tar.gz"
_CIFAR10_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
_CIFAR10_TEST = ("test_batch",)

_TORCHVISION = "torchvision 0.29.2, torchvision/datasets/{}.py"
_KERAS = "keras 3.15.1, keras/src/datasets/{}.py"

#: Published checksums: file name -> (algorithm, hex digest, source).  A file is accepted when every
#: listed digest of it matches.  Copied from the named sources (read in their released wheels).
PUBLISHED_CHECKSUMS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "train-images-idx3-ubyte.gz": (("md5", "f68b3c2dcbeaaa9fbdd348bbdeb94873", _TORCHVISION.format("mnist")),),
    "train-labels-idx1-ubyte.gz": (("md5", "d53e105ee54ea40749a09fcbcd1e9432", _TORCHVISION.format("mnist")),),
    "t10k-images-idx3-ubyte.gz": (("md5", "9fb629c4189551a2d022fa330f9573f3", _TORCHVISION.format("mnist")),),
    "t10k-labels-idx1-ubyte.gz": (("md5", "ec29112dd5afa0611ce80d1b7f02629c", _TORCHVISION.format("mnist")),),
    "mnist.npz": (("sha256", "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1", _KERAS.format("mnist")),),
    "cifar-10-python.tar.gz": (
        ("md5", "c58f30108f718f92721af3b95e74349a", _TORCHVISION.format("cifar")),
        ("sha256", "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce", _KERAS.format("cifar10")),
    ),
    "data_batch_1": (("md5", "c99cafc152244af753f735de768cd75f", _TORCHVISION.format("cifar")),),
    "data_batch_2": (("md5", "d4bba439e000b95fd0a9bffe97cbabec", _TORCHVISION.format("cifar")),),
    "data_batch_3": (("md5", "54ebc095f3ab1f0389bbae665268c751", _TORCHVISION.format("cifar")),),
    "data_batch_4": (("md5", "634d18415352ddfa80567beed471001a", _TORCHVISION.format("cifar")),),
    "data_batch_5": (("md5", "482c414d41f54cd18b22e5b47cb7c3cb", _TORCHVISION.format("cifar")),),
    "test_batch": (("md5", "40351d587109b95175f43aff81a1287e", _TORCHVISION.format("cifar")),),
}

MNIST_HOW_TO_GET = (
    "Obtain MNIST yourself (fedbook never downloads): the four IDX files train-images-idx3-ubyte.gz, "
    "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz from "
    "https://ossci-datasets.s3.amazonaws.com/mnist/ (torchvision's mirror of http://yann.lecun.com/exdb/mnist/), "
    "or Keras' mnist.npz from https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz, "
    "and put them in your data folder (or its mnist/ subfolder). "
    "Without files, 'rotated-masked-digits' uses scikit-learn's bundled digits (real) and "
    "'rotated-masked-standin' is synthetic."
)
CIFAR10_HOW_TO_GET = (
    "Obtain CIFAR-10 yourself (fedbook never downloads): the python version "
    "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz (163 MiB), placed in your data folder as the "
    "archive or extracted (the folder cifar-10-batches-py/). "
    "Without files, 'cifar10-hetero-standin' is a synthetic stand-in with the same structure."
)


@dataclass(frozen=True)
class ImageArrays:
    """A labelled image dataset with its standard train/test split.

    Images are float32 ``(N, C, H, W)`` in [0, 1]; labels int64 in ``0..num_classes-1``; ``info`` holds the
    provenance (``file``: the file or folder read, ``sha256``: its digest, or for several files a digest of
    their digests, ``files``: ``{name: sha256}``, ``format``, ``source``).
    """

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    num_classes: int
    info: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------ checksums
def _digest(path_or_bytes: Path | bytes, algorithm: str) -> str:
    h = hashlib.new(algorithm)
    if isinstance(path_or_bytes, bytes):
        h.update(path_or_bytes)
    else:
        with open(path_or_bytes, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def _expected(name: str, checksums: Mapping[str, str] | None) -> tuple[tuple[str, str, str], ...]:
    if checksums is not None and name in checksums:
        value = str(checksums[name]).lower()
        algo = {32: "md5", 64: "sha256"}.get(len(value))
        if algo is None or any(c not in "0123456789abcdef" for c in value):
            raise ValueError(f"checksums[{name!r}] must be 32 (MD5) or 64 (SHA-256) hex digits (got {value!r})")
        return ((algo, value, "checksums argument"),)
    return PUBLISHED_CHECKSUMS.get(name, ())


def _verify(name: str, where: str, data: Path | bytes, *, verify: bool, checksums: Mapping[str, str] | None,
            how_to_get: str) -> str:
    """Check ``data`` (a file or its bytes) against the expected digests of ``name``; return its SHA-256."""
    sha = _digest(data, "sha256")
    if not verify:
        return sha
    for algo, value, source in _expected(name, checksums):
        got = sha if algo == "sha256" else _digest(data, algo)
        if got != value:
            raise DatasetCorruptError(
                f"{where}: checksum mismatch ({algo} {got}, published {value} per {source}); the file is corrupt, "
                f"truncated or a different version. {how_to_get} (verify=False skips the check.)")
    return sha


def _combined_sha(files: Mapping[str, str]) -> str:
    """One SHA-256 for several files: the digest of ``"name sha256\\n"`` lines in sorted name order."""
    return hashlib.sha256("".join(f"{k} {files[k]}\n" for k in sorted(files)).encode()).hexdigest()


def _search_dirs(data_dir: str | os.PathLike | None, subfolders: Sequence[str]) -> list[Path]:
    roots = [Path(data_dir).expanduser()] if data_dir is not None else default_data_dirs()
    return [r / s if s else r for r in roots for s in ("",) + tuple(subfolders)]


def _not_found(what: str, tried: Sequence[Path], data_dir, how_to_get: str) -> DatasetNotFoundError:
    where = "\n  ".join(str(t) for t in tried)
    scope = ("The folder given explicitly (data_dir / --data-dir) must hold the files; no other location is used. "
             if data_dir is not None else
             "Pass data_dir (or --data-dir), or set FEDBOOK_DATA_DIR to the folder holding them. ")
    return DatasetNotFoundError(f"{what} not found. Looked in:\n  {where}\n{scope}{how_to_get}")


# ---------------------------------------------------------------------------------------- MNIST
def _parse_idx(raw: bytes, where: str, ndim: int) -> np.ndarray:
    """Parse an (uncompressed) IDX file of unsigned bytes with ``ndim`` dimensions."""
    if len(raw) < 4 + 4 * ndim:
        raise DatasetCorruptError(f"{where}: only {len(raw)} bytes, too short for an IDX header. {MNIST_HOW_TO_GET}")
    zero, dtype, nd = struct.unpack(">HBB", raw[:4])
    magic = 0x800 + ndim
    if zero != 0 or dtype != 0x08 or nd != ndim:
        raise DatasetCorruptError(
            f"{where}: IDX magic number {struct.unpack('>I', raw[:4])[0]:#010x}, expected {magic:#010x} "
            f"(unsigned bytes, {ndim} dimension{'s' if ndim > 1 else ''}); not this MNIST file. {MNIST_HOW_TO_GET}")
    dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    body = raw[4 + 4 * ndim:]
    need = int(np.prod(dims, dtype=np.int64))
    if len(body) != need:
        raise DatasetCorruptError(
            f"{where}: header announces shape {tuple(dims)} ({need} bytes) but {len(body)} data bytes follow; "
            f"the file is {'truncated' if len(body) < need else 'longer than its header says'}. {MNIST_HOW_TO_GET}")
    return np.frombuffer(body, dtype=np.uint8).reshape(dims)


def _read_gzip(path: Path, how_to_get: str = MNIST_HOW_TO_GET) -> bytes:
    try:
        with gzip.open(path, "rb") as fh:
            return fh.read()
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise DatasetCorruptError(f"{path}: not a readable gzip file ({exc}); truncated or corrupt. "
                                  f"{how_to_get}") from exc


def _mnist_arrays(train_x, train_y, test_x, test_y, where: str) -> tuple[np.ndarray, ...]:
    for nm, x, y in (("train", train_x, train_y), ("test", test_x, test_y)):
        if x.ndim != 3 or x.shape[1:] != (28, 28):
            raise DatasetCorruptError(f"{where}: {nm} images have shape {x.shape}, expected (N, 28, 28). {MNIST_HOW_TO_GET}")
        if y.ndim != 1 or y.shape[0] != x.shape[0]:
            raise DatasetCorruptError(f"{where}: {x.shape[0]} {nm} images but labels of shape {y.shape}. {MNIST_HOW_TO_GET}")
        if y.size and (int(y.min()) < 0 or int(y.max()) > 9):
            raise DatasetCorruptError(f"{where}: {nm} labels outside 0..9 (min {int(y.min())}, max {int(y.max())}). "
                                      f"{MNIST_HOW_TO_GET}")
    scale = lambda x: (x.astype(np.float32) / np.float32(255.0))[:, None, :, :]  # noqa: E731
    return scale(train_x), train_y.astype(np.int64), scale(test_x), test_y.astype(np.int64)


def load_mnist(data_dir: str | os.PathLike | None = None, *, verify: bool = True,
               checksums: Mapping[str, str] | None = None) -> ImageArrays:
    """Read MNIST (60,000 train and 10,000 test images, 28x28, 10 classes) from files.

    The four IDX ``.gz`` files are used when all four are in one folder searched (see the module docstring),
    else ``mnist.npz``.  Checks: the published checksums (:data:`PUBLISHED_CHECKSUMS`; ``verify``,
    ``checksums``), the IDX magic numbers and sizes or the npz keys, shapes ``(N, 28, 28)`` and labels in 0..9.
    Returns float32 images ``(N, 1, 28, 28)`` in [0, 1] (pixel / 255) and int64 labels.

    Raises :class:`~fedtrain.data.files.DatasetNotFoundError` (where it looked, how to obtain the files) or
    :class:`~fedtrain.data.files.DatasetCorruptError` (which file, what is wrong).
    """
    dirs = _search_dirs(data_dir, ("mnist", "MNIST/raw"))
    tried: list[Path] = []
    for d in dirs:
        idx = {role: d / fn for role, fn in MNIST_IDX_FILES.items()}
        present = {role: p.is_file() for role, p in idx.items()}
        tried.append(d / "{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz")
        if all(present.values()):
            files, arrays = {}, {}
            for role, p in idx.items():
                files[p.name] = _verify(p.name, str(p), p, verify=verify, checksums=checksums, how_to_get=MNIST_HOW_TO_GET)
                arrays[role] = _parse_idx(_read_gzip(p), str(p), 3 if role.endswith("images") else 1)
            tx, ty, vx, vy = _mnist_arrays(arrays["train_images"], arrays["train_labels"], arrays["test_images"],
                                           arrays["test_labels"], str(d))
            info = {"file": str(d), "sha256": _combined_sha(files), "files": files, "format": "idx.gz",
                    "source": "MNIST (LeCun, Cortes, Burges), IDX files"}
            return ImageArrays(tx, ty, vx, vy, 10, info)
        if any(present.values()):
            missing = ", ".join(p.name for role, p in idx.items() if not present[role])
            if not (d / MNIST_NPZ).is_file():
                raise DatasetNotFoundError(f"{d}: MNIST IDX files incomplete, missing {missing}. {MNIST_HOW_TO_GET}")
        npz = d / MNIST_NPZ
        tried.append(npz)
        if npz.is_file():
            sha = _verify(MNIST_NPZ, str(npz), npz, verify=verify, checksums=checksums, how_to_get=MNIST_HOW_TO_GET)
            try:
                with np.load(npz, allow_pickle=False) as f:
                    missing = [k for k in ("x_train", "y_train", "x_test", "y_test") if k not in f.files]
                    if missing:
                        raise DatasetCorruptError(f"{npz}: arrays {missing} missing (found {sorted(f.files)}); "
                                                  f"not Keras' mnist.npz. {MNIST_HOW_TO_GET}")
                    raw = [np.asarray(f[k]) for k in ("x_train", "y_train", "x_test", "y_test")]
            except DatasetCorruptError:
                raise
            except Exception as exc:  # zipfile.BadZipFile, ValueError, EOFError on junk or truncation
                raise DatasetCorruptError(f"{npz}: unreadable as an .npz file ({exc}); truncated or corrupt. "
                                          f"{MNIST_HOW_TO_GET}") from exc
            tx, ty, vx, vy = _mnist_arrays(*raw, str(npz))
            info = {"file": str(npz), "sha256": sha, "files": {MNIST_NPZ: sha}, "format": "npz",
                    "source": "MNIST (LeCun, Cortes, Burges), Keras' mnist.npz"}
            return ImageArrays(tx, ty, vx, vy, 10, info)
    raise _not_found("MNIST (four IDX .gz files or mnist.npz)", tried, data_dir, MNIST_HOW_TO_GET)


# ------------------------------------------------------------------------------------- CIFAR-10
class _ArrayUnpickler(pickle.Unpickler):
    """Unpickle only plain containers and numpy arrays (a CIFAR batch); anything else is refused."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}

    def find_class(self, module: str, name: str):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} (a CIFAR batch holds only arrays)")
        return super().find_class(module, name)


def _cifar_batch(raw: bytes, where: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        batch = _ArrayUnpickler(io.BytesIO(raw), encoding="bytes").load()
    except Exception as exc:  # UnpicklingError, EOFError, ValueError on junk or truncation
        raise DatasetCorruptError(f"{where}: unreadable as a CIFAR-10 python batch ({exc}); truncated or corrupt. "
                                  f"{CIFAR10_HOW_TO_GET}") from exc
    if not isinstance(batch, dict):
        raise DatasetCorruptError(f"{where}: a CIFAR-10 batch is a dict, got {type(batch).__name__}. {CIFAR10_HOW_TO_GET}")
    batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    missing = [k for k in ("data", "labels") if k not in batch]
    if missing:
        raise DatasetCorruptError(f"{where}: keys {missing} missing (found {sorted(map(str, batch))}). {CIFAR10_HOW_TO_GET}")
    data = np.asarray(batch["data"])
    labels = np.asarray(batch["labels"])
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise DatasetCorruptError(f"{where}: 'data' is {data.dtype} of shape {data.shape}, expected uint8 (N, 3072). "
                                  f"{CIFAR10_HOW_TO_GET}")
    if labels.ndim != 1 or labels.shape[0] != data.shape[0] or not np.issubdtype(labels.dtype, np.integer):
        raise DatasetCorruptError(f"{where}: {data.shape[0]} images but 'labels' of shape {labels.shape} "
                                  f"({labels.dtype}). {CIFAR10_HOW_TO_GET}")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise DatasetCorruptError(f"{where}: labels outside 0..9. {CIFAR10_HOW_TO_GET}")
    return data, labels.astype(np.int64)


def load_cifar10(data_dir: str | os.PathLike | None = None, *, verify: bool = True,
                 checksums: Mapping[str, str] | None = None) -> ImageArrays:
    """Read CIFAR-10 (50,000 train and 10,000 test images, 32x32 RGB, 10 classes) from the python version.

    Looks for the folder ``cifar-10-batches-py/`` (batches ``data_batch_1..5``, ``test_batch``), else the
    archive ``cifar-10-python.tar.gz``, read in place.  Checks: the published checksums of the archive or of
    each batch (:data:`PUBLISHED_CHECKSUMS`; ``verify``, ``checksums``); each batch is a pickled dict with
    ``data`` uint8 ``(N, 3072)`` and ``labels`` in 0..9 (only arrays are unpickled).  Returns float32 images
    ``(N, 3, 32, 32)`` in [0, 1] (rows are channel-major R, G, B planes; pixel / 255) and int64 labels.
    """
    tried: list[Path] = []
    for d in _search_dirs(data_dir, ("cifar10",)):
        folder, archive = d / CIFAR10_FOLDER, d / CIFAR10_ARCHIVE
        tried += [folder, archive]
        if folder.is_dir():
            files, parts = {}, {}
            for name in _CIFAR10_TRAIN + _CIFAR10_TEST:
                p = folder / name
                if not p.is_file():
                    raise DatasetNotFoundError(f"{p}: CIFAR-10 batch missing (the folder {folder} must hold "
                                               f"{', '.join(_CIFAR10_TRAIN + _CIFAR10_TEST)}). {CIFAR10_HOW_TO_GET}")
                raw = p.read_bytes()
                files[name] = _verify(name, str(p), raw, verify=verify, checksums=checksums, how_to_get=CIFAR10_HOW_TO_GET)
                parts[name] = _cifar_batch(raw, str(p))
            info = {"file": str(folder), "sha256": _combined_sha(files), "files": files, "format": "python batches"}
            return _cifar_arrays(parts, info)
        if archive.is_file():
            sha = _verify(CIFAR10_ARCHIVE, str(archive), archive, verify=verify, checksums=checksums,
                          how_to_get=CIFAR10_HOW_TO_GET)
            parts = {}
            try:
                with tarfile.open(archive, "r:gz") as tar:
                    for name in _CIFAR10_TRAIN + _CIFAR10_TEST:
                        member = f"{CIFAR10_FOLDER}/{name}"
                        try:
                            fh = tar.extractfile(member)
                        except KeyError:
                            fh = None
                        if fh is None:
                            raise DatasetCorruptError(f"{archive}: member {member} missing from the archive. "
                                                      f"{CIFAR10_HOW_TO_GET}")
                        parts[name] = _cifar_batch(fh.read(), f"{archive}:{member}")
            except DatasetCorruptError:
                raise
            except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
                raise DatasetCorruptError(f"{archive}: unreadable as a .tar.gz archive ({exc}); truncated or corrupt. "
                                          f"{CIFAR10_HOW_TO_GET}") from exc
            info = {"file": str(archive), "sha256": sha, "files": {CIFAR10_ARCHIVE: sha}, "format": "tar.gz"}
            return _cifar_arrays(parts, info)
    raise _not_found(f"CIFAR-10 ({CIFAR10_FOLDER}/ or {CIFAR10_ARCHIVE})", tried, data_dir, CIFAR10_HOW_TO_GET)


def _cifar_arrays(parts: Mapping[str, tuple[np.ndarray, np.ndarray]], info: dict) -> ImageArrays:
    def stack(names):
        x = np.concatenate([parts[n][0] for n in names])
        y = np.concatenate([parts[n][1] for n in names])
        return (x.reshape(-1, 3, 32, 32).astype(np.float32) / np.float32(255.0)), y
    tx, ty = stack(_CIFAR10_TRAIN)
    vx, vy = stack(_CIFAR10_TEST)
    info = dict(info, source="CIFAR-10 (Krizhevsky 2009), python version")
    return ImageArrays(tx, ty, vx, vy, 10, info)


# --------------------------------------------------------------------------------------- digits
def load_digits_images(size: int | tuple[int, int] | None = None, *, method: str = "resize") -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled handwritten digits (1,797 images, 8x8, 10 classes; offline, real data).

    ``size=None`` keeps 8x8; ``size=28`` or ``(H, W)`` (each >= 8) resizes (``method="resize"``: bilinear
    interpolation of the whole frame, :func:`scipy.ndimage.zoom` with ``order=1``) or pads with black
    around the centred 8x8 digit (``method="pad"``).  Returns float32 images ``(1797, 1, H, W)`` in [0, 1]
    (grey level / 16) and int64 labels 0..9, in scikit-learn's order.
    """
    check_choice("method", method, ("resize", "pad"))
    if size is None:
        h = w = 8
    else:
        hw = (size, size) if np.ndim(size) == 0 else tuple(size)
        if len(hw) != 2:
            raise ValueError(f"size must be an integer or a pair (H, W) of integers >= 8 (got {size!r})")
        h, w = (int(v) for v in check_integer_at_least("size", list(hw), 8))
    images, labels = _digits_cached(h, w, method)
    return images.copy(), labels.copy()


@functools.lru_cache(maxsize=4)
def _digits_cached(h: int, w: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = (np.asarray(bunch.images, dtype=np.float32) / np.float32(16.0))[:, None, :, :]
    labels = np.asarray(bunch.target, dtype=np.int64)
    if (h, w) != (8, 8):
        if method == "pad":
            top, left = (h - 8) // 2, (w - 8) // 2
            out = np.zeros((images.shape[0], 1, h, w), dtype=np.float32)
            out[:, :, top:top + 8, left:left + 8] = images
            images = out
        else:
            from scipy.ndimage import zoom

            images = zoom(images, (1, 1, h / 8, w / 8), order=1, grid_mode=True, mode="nearest")
            images = np.clip(images, 0.0, 1.0).astype(np.float32)
    return np.ascontiguousarray(images), labels


# ------------------------------------------------------------------------------------ validation
def check_images(name: str, images, labels=None, *, num_classes: int | None = None,
                 channels: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Validate one image array (and its labels); return them as float32 ``(N, C, H, W)`` and int64.

    ``images`` must be a floating-point array of shape ``(N, C, H, W)`` with values in [0, 1] (integer
    pixels must be scaled first); ``labels`` a 1-D integer array of length N with values in
    ``0..num_classes-1``.  Violations raise ``ValueError`` naming ``name`` (the argument) and the valid range.
    """
    arr = np.asarray(images)
    if arr.ndim != 4 or min(arr.shape[1:], default=0) < 1:
        raise ValueError(f"{name} must be an array of shape (N, C, H, W) (got shape {arr.shape})")
    if channels is not None and arr.shape[1] != channels:
        raise ValueError(f"{name} must have {channels} channel(s) (got shape {arr.shape})")
    if not np.issubdtype(arr.dtype, np.floating):
        raise ValueError(f"{name} must hold floating-point pixels in [0, 1] (got dtype {arr.dtype}; "
                         "divide integer pixels by their maximum)")
    if arr.size and (not np.isfinite(arr).all() or arr.min() < 0.0 or arr.max() > 1.0):
        raise ValueError(f"{name} must hold finite pixels in [0, 1] (got range [{np.nanmin(arr)}, {np.nanmax(arr)}])")
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if labels is None:
        return arr, None
    lab = np.asarray(labels)
    lname = name.replace("images", "labels") if "images" in name else f"labels of {name}"
    if lab.ndim != 1 or lab.shape[0] != arr.shape[0]:
        raise ValueError(f"{lname} must be a 1-D array with one label per image ({arr.shape[0]}) (got shape {lab.shape})")
    if lab.size and not np.issubdtype(lab.dtype, np.integer):
        raise ValueError(f"{lname} must be integers (got dtype {lab.dtype})")
    if num_classes is not None and lab.size and (lab.min() < 0 or lab.max() >= num_classes):
        raise ValueError(f"{lname} must lie in 0..{num_classes - 1} (got range [{lab.min()}, {lab.max()}])")
    return arr, lab.astype(np.int64)


def federated_from_images(
    name: str,
    train_images: Sequence[np.ndarray],
    train_labels: Sequence[np.ndarray],
    test_images: Sequence[np.ndarray],
    test_labels: Sequence[np.ndarray],
    *,
    num_classes: int,
    real: bool,
    info: Mapping | None = None,
) -> FederatedData:
    """Per-silo image arrays -> :class:`~fedtrain.data.base.FederatedData` (``task="multiclass"``).

    ``train_images[k]`` is silo ``k``'s float ``(n_k, C, H, W)`` array in [0, 1] and ``train_labels[k]`` its
    labels in ``0..num_classes-1`` (validated with :func:`check_images`; every silo must share ``(C, H, W)``).
    Rows of ``x`` are the images flattened channel-major (``x.reshape(-1, C, H, W)`` reads them back), float32;
    ``input_shape=(C, H, W)``.  ``info`` is copied (provenance: file, sha256, seeds, ...).
    """
    num_classes = int(check_integer_at_least("num_classes", num_classes, 2))
    lists = {"train_images": train_images, "train_labels": train_labels,
             "test_images": test_images, "test_labels": test_labels}
    sizes = {k: len(v) for k, v in lists.items()}
    if len(set(sizes.values())) != 1 or sizes["train_images"] < 1:
        raise ValueError(f"train_images, train_labels, test_images and test_labels must hold one array per silo "
                         f"(at least one silo; got lengths {sizes})")
    out: dict[str, list[np.ndarray]] = {"train_x": [], "train_y": [], "test_x": [], "test_y": []}
    shape = None
    for split in ("train", "test"):
        for k, (x, y) in enumerate(zip(lists[f"{split}_images"], lists[f"{split}_labels"])):
            x, y = check_images(f"{split}_images[{k}]", x, y, num_classes=num_classes)
            if shape is None:
                shape = x.shape[1:]
            elif x.shape[1:] != shape:
                raise ValueError(f"{split}_images[{k}] has image shape {x.shape[1:]} but silo 0 has {shape}; "
                                 "all silos must share (C, H, W)")
            out[f"{split}_x"].append(x.reshape(x.shape[0], -1))
            out[f"{split}_y"].append(y)
    return FederatedData(name=name, task="multiclass", real=bool(real), num_classes=num_classes,
                         info=dict(info or {}), input_shape=tuple(int(v) for v in shape), **out)
