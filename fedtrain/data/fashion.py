"""Fashion-MNIST from files (Xiao, Rasul & Vollgraf 2017): 70,000 real 28x28 grey images, 10 classes, offline.

Fashion-MNIST has MNIST's format and size (four IDX files, 60,000 training and 10,000 test images of 28x28
unsigned bytes, labels 0..9), so it stands in for MNIST in the image experiments of the MR-MTL paper (App. C.1)
and FedHDP (Sec. 5.1) on machines where MNIST cannot be had.  Debian ships it as the package
``dataset-fashion-mnist`` (the four ``.gz`` files in :data:`DEBIAN_DIR`); ``tools/setup_env.sh`` installs it.

Folders searched (:func:`fashion_search_dirs`): an explicit ``data_dir`` only, when given (the CLI's
``--data-dir``; no fall-back, so a result never silently comes from another copy); otherwise
``$FEDBOOK_DATA_DIR``, ``<repo>/data``, ``../shared/data`` and then Debian's :data:`DEBIAN_DIR`.  In each data
folder the files may sit directly or in ``fashion-mnist/``, ``fashion_mnist/`` or ``FashionMNIST/raw/``
(torchvision's layout).  Each file may be gzip-compressed (``.gz``, as Debian and the upstream repository ship
it) or plain (the same name without ``.gz``).

Checksums: Debian's ``.gz`` files are recompressed, so the upstream MD5 sums of the compressed files (in the
package's README) do not match them.  :data:`IDX_SHA256` pins the SHA-256 of the **decompressed** IDX content,
which is the same for Debian's files and for an upstream download (Debian repackages the upstream content
unchanged; a file whose decompressed content matches is accepted whatever its compression).  ``verify=False``
skips the check (the IDX structure is still checked) and ``checksums={filename: sha256}`` replaces entries,
which is how the tests read small files written in the same format.
"""
from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Mapping

import numpy as np

from fedtrain.data.files import DatasetCorruptError, DatasetNotFoundError, default_data_dirs
from fedtrain.data.images import MNIST_HOW_TO_GET, ImageArrays, _combined_sha, _parse_idx, _read_gzip

__all__ = ["DEBIAN_DIR", "DEBIAN_PACKAGE", "IDX_FILES", "IDX_SHA256", "HOW_TO_GET", "CLASS_NAMES",
           "fashion_search_dirs", "load_fashion_mnist"]

#: Where Debian's package ``dataset-fashion-mnist`` puts the four files.
DEBIAN_DIR = Path("/usr/share/datasets/fashion-mnist")
DEBIAN_PACKAGE = "dataset-fashion-mnist"
#: role -> file name (the upstream names; ``.gz`` optional).
IDX_FILES: dict[str, str] = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
#: SHA-256 of the decompressed IDX content of each file, computed from Debian's dataset-fashion-mnist
#: 0.0~git20200523.55506a9-1 (upstream commit 55506a9 of zalandoresearch/fashion-mnist).
IDX_SHA256: dict[str, str] = {
    "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}
#: The ten classes, in label order (upstream README).
CLASS_NAMES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot")
HOW_TO_GET = (
    f"Install Debian's package as root: apt-get install -y {DEBIAN_PACKAGE} (it puts the four files in "
    f"{DEBIAN_DIR}/; tools/setup_env.sh does this), or download train-images-idx3-ubyte.gz, "
    "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz from "
    "https://github.com/zalandoresearch/fashion-mnist (data/fashion/) into your data folder or its "
    "fashion-mnist/ subfolder. fedbook never downloads."
)
_SUBFOLDERS = ("", "fashion-mnist", "fashion_mnist", "FashionMNIST/raw")


def fashion_search_dirs(data_dir: str | os.PathLike | None = None) -> list[Path]:
    """The folders searched, in order (module docstring): ``data_dir`` alone when given, else
    ``$FEDBOOK_DATA_DIR``, ``<repo>/data``, ``../shared/data`` (each with its subfolders), then :data:`DEBIAN_DIR`."""
    roots = [Path(data_dir).expanduser()] if data_dir is not None else default_data_dirs()
    dirs = [r / s if s else r for r in roots for s in _SUBFOLDERS]
    if data_dir is None:
        dirs.append(DEBIAN_DIR)
    return dirs


def _find(folder: Path, stem: str) -> Path | None:
    for name in (stem + ".gz", stem):
        if (folder / name).is_file():
            return folder / name
    return None


def _read(path: Path) -> bytes:
    if path.suffix != ".gz":
        return path.read_bytes()
    return _read_gzip(path, HOW_TO_GET)


def _check_sha(stem: str, path: Path, raw: bytes, verify: bool, checksums: Mapping[str, str] | None) -> str:
    sha = hashlib.sha256(raw).hexdigest()
    if not verify:
        return sha
    expected = IDX_SHA256[stem]
    for key in (stem, stem + ".gz"):
        if checksums is not None and key in checksums:
            expected = str(checksums[key]).lower()
            if len(expected) != 64 or any(c not in "0123456789abcdef" for c in expected):
                raise ValueError(f"checksums[{key!r}] must be 64 hex digits (SHA-256 of the decompressed file; "
                                 f"got {expected!r})")
    if sha != expected:
        raise DatasetCorruptError(
            f"{path}: checksum mismatch (SHA-256 of the decompressed content {sha}, expected {expected}, "
            f"Fashion-MNIST as Debian's {DEBIAN_PACKAGE} and upstream ship it); the file is corrupt, truncated or "
            f"not Fashion-MNIST (MNIST has the same format). {HOW_TO_GET} (verify=False skips the check.)")
    return sha


@functools.lru_cache(maxsize=2)
def _load_raw(folder: str, stamps: tuple, verify: bool, checksums: tuple) -> tuple[dict, dict, dict]:
    """Parsed uint8 arrays of the four files in ``folder`` (cached on the files' sizes and mtimes)."""
    given = dict(checksums) if checksums else None
    arrays, shas, paths = {}, {}, {}
    for role, stem in IDX_FILES.items():
        path = _find(Path(folder), stem)
        raw = _read(path)
        shas[stem] = _check_sha(stem, path, raw, verify, given)
        try:
            arrays[role] = _parse_idx(raw, str(path), 3 if role.endswith("images") else 1)
        except DatasetCorruptError as exc:
            raise DatasetCorruptError(str(exc).replace(MNIST_HOW_TO_GET, HOW_TO_GET)) from None
        paths[stem] = str(path)
    return arrays, shas, paths


def load_fashion_mnist(data_dir: str | os.PathLike | None = None, *, verify: bool = True,
                       checksums: Mapping[str, str] | None = None) -> ImageArrays:
    """Read Fashion-MNIST (60,000 train and 10,000 test images, 28x28, 10 classes) from its four IDX files.

    The first folder of :func:`fashion_search_dirs` holding all four files is read.  Checks: the SHA-256 of each
    decompressed file (:data:`IDX_SHA256`; ``verify``, ``checksums``), the IDX magic numbers and sizes, shapes
    ``(N, 28, 28)`` and labels in 0..9.  Returns float32 images ``(N, 1, 28, 28)`` in [0, 1] (pixel / 255) and
    int64 labels; ``info`` names the folder, the files and their digests.

    Raises :class:`~fedtrain.data.files.DatasetNotFoundError` (every folder looked in, which files were missing,
    how to install them) or :class:`~fedtrain.data.files.DatasetCorruptError` (which file, what is wrong).
    """
    tried: list[str] = []
    partial: list[str] = []
    for d in fashion_search_dirs(data_dir):
        found = {stem: _find(d, stem) for stem in IDX_FILES.values()}
        tried.append(str(d / "{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]"))
        if all(found.values()):
            stamps = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in found.values())
            arrays, shas, paths = _load_raw(str(d), stamps, bool(verify),
                                            tuple(sorted((checksums or {}).items())))
            tx, ty, vx, vy = (arrays[r] for r in ("train_images", "train_labels", "test_images", "test_labels"))
            for nm, x, y in (("train", tx, ty), ("test", vx, vy)):
                if x.shape[1:] != (28, 28) or y.shape[0] != x.shape[0] or (y.size and int(y.max()) > 9):
                    raise DatasetCorruptError(f"{d}: {nm} images of shape {x.shape} with {y.shape[0]} labels "
                                              f"(max {int(y.max()) if y.size else None}); expected (N, 28, 28) and "
                                              f"N labels in 0..9. {HOW_TO_GET}")
            scale = lambda x: (x.astype(np.float32) / np.float32(255.0))[:, None, :, :]  # noqa: E731
            info = {"file": str(d), "sha256": _combined_sha(shas), "files": dict(shas), "paths": paths,
                    "format": "idx (sha256 of the decompressed content)",
                    "source": "Fashion-MNIST (Xiao, Rasul, Vollgraf 2017), IDX files"}
            return ImageArrays(scale(tx), ty.astype(np.int64), scale(vx), vy.astype(np.int64), 10, info)
        if any(found.values()):
            partial.append(f"{d}: has {', '.join(p.name for p in found.values() if p)} but lacks "
                           f"{', '.join(s for s, p in found.items() if p is None)}")
    where = "\n  ".join(tried)
    scope = ("The folder given explicitly (data_dir / --data-dir) must hold the files; no other location is used. "
             if data_dir is not None else
             "Pass data_dir (or --data-dir), or set FEDBOOK_DATA_DIR to the folder holding them. ")
    incomplete = ("\nIncomplete copies: " + "; ".join(partial)) if partial else ""
    raise DatasetNotFoundError(f"Fashion-MNIST (four IDX files) not found. Looked in:\n  {where}{incomplete}\n"
                               f"{scope}{HOW_TO_GET}")
