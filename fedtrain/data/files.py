"""Finding, verifying and reading the real datasets' ``.mat`` files.

The real files are never downloaded by the code (no network at run time) and never committed to
the repository.  A loader looks for ``<name>.mat`` in, in this order:

1. an explicit ``path`` (a file) or ``data_dir`` (a folder) passed by the caller (the CLI's
   ``--data-dir``): when given, the file must be there, nothing else is searched (so a result never
   silently comes from another copy than the one asked for);
2. otherwise, the folder named by the environment variable ``FEDBOOK_DATA_DIR``;
3. ``<repo>/data`` and ``<repo>/../shared/data`` (the checkout's sibling ``shared/`` folder, present
   on developer machines and in CI).

In each folder both ``<dir>/<name>.mat`` and ``<dir>/<name>/<name>.mat`` are tried.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DATA_DIR_ENV",
    "DatasetNotFoundError",
    "DatasetCorruptError",
    "default_data_dirs",
    "find_data_file",
    "sha256_file",
    "verify_checksum",
    "read_mat_silos",
]

DATA_DIR_ENV = "FEDBOOK_DATA_DIR"
_REPO = Path(__file__).resolve().parents[2]


class DatasetNotFoundError(FileNotFoundError):
    """A real dataset file is not where it was looked for (the message says where, and how to get it)."""


class DatasetCorruptError(ValueError):
    """A dataset file exists but has the wrong checksum or cannot be read as the expected layout."""


def default_data_dirs(data_dir: str | os.PathLike | None = None) -> list[Path]:
    """The folders searched for real data files, in order (see the module docstring)."""
    dirs: list[Path] = []
    if data_dir is not None:
        dirs.append(Path(data_dir).expanduser())
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        dirs.append(Path(env).expanduser())
    dirs += [_REPO / "data", _REPO.parent / "shared" / "data"]
    out: list[Path] = []
    for d in dirs:  # keep order, drop duplicates
        if d not in out:
            out.append(d)
    return out


def find_data_file(
    filename: str,
    *,
    path: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
    how_to_get: str = "",
) -> Path:
    """Return the first existing candidate for ``filename``; raise :class:`DatasetNotFoundError` otherwise.

    An explicit ``path`` is used as is and an explicit ``data_dir`` is the only folder searched (no
    fall-back to the default locations).  The error lists every location tried.
    """
    if path is not None:
        p = Path(path).expanduser()
        if p.is_dir():
            p = p / filename
        if not p.is_file():
            raise DatasetNotFoundError(f"{filename}: no file at {p}. {how_to_get}".strip())
        return p
    stem = Path(filename).stem
    tried: list[Path] = []
    dirs = [Path(data_dir).expanduser()] if data_dir is not None else default_data_dirs()
    for d in dirs:
        for cand in (d / filename, d / stem / filename):
            tried.append(cand)
            if cand.is_file():
                return cand
    where = "\n  ".join(str(t) for t in tried)
    raise DatasetNotFoundError(
        (f"{filename} not found. Looked in:\n  {where}\n"
        + (f"The folder given explicitly (data_dir / --data-dir) must hold the file; no other location is used "
           f"(neither {DATA_DIR_ENV} nor the default folders). "
           if data_dir is not None else
           f"Pass a path or --data-dir, or set {DATA_DIR_ENV} to the folder holding it. ") + how_to_get).rstrip()
    )


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 digest of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_checksum(path: Path, expected: str | None, how_to_get: str = "") -> str:
    """Compute the file's SHA-256 and compare it with ``expected`` (skipped when ``expected`` is None)."""
    digest = sha256_file(path)
    if expected is not None and digest != expected:
        raise DatasetCorruptError(
            f"{path}: checksum mismatch (sha256 {digest}, expected {expected}); the file is corrupt or a "
            f"different version. {how_to_get}".rstrip()
        )
    return digest


def _cells(obj: Any, name: str, path: Path) -> list[np.ndarray]:
    """Flatten a MATLAB cell array stored as (1, K) or (K, 1) object array into a list of arrays."""
    arr = np.asarray(obj)
    if arr.dtype != object or arr.ndim != 2 or 1 not in arr.shape:
        raise DatasetCorruptError(
            f"{path}: variable {name!r} must be a 1-by-K or K-by-1 cell array (got dtype {arr.dtype}, shape {arr.shape})"
        )
    return [np.asarray(c) for c in arr.ravel()]


def read_mat_silos(path: Path, *, how_to_get: str = "") -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Read ``X`` and ``Y`` cell arrays (one cell per silo) from a MATLAB v5 file.

    Returns ``(xs, ys)`` with ``xs[k]`` of shape ``(n_k, d)`` (float64) and ``ys[k]`` of shape ``(n_k,)``.
    This is the layout of the authors' ``school.mat``, ``vehicle.mat`` and ``gleam.mat``
    (``mat['X'][0][k]`` / ``mat['X'][k][0]``).
    """
    import scipy.io

    try:
        mat = scipy.io.loadmat(str(path))
    except Exception as exc:  # scipy raises ValueError / TypeError / MatReadError on junk
        raise DatasetCorruptError(f"{path}: unreadable as a MATLAB file ({exc}). {how_to_get}".rstrip()) from exc
    for key in ("X", "Y"):
        if key not in mat:
            raise DatasetCorruptError(f"{path}: variable {key!r} missing (found {sorted(k for k in mat if not k.startswith('__'))})")
    xs = _cells(mat["X"], "X", path)
    ys = _cells(mat["Y"], "Y", path)
    if len(xs) != len(ys):
        raise DatasetCorruptError(f"{path}: X has {len(xs)} silos but Y has {len(ys)}")
    out_x, out_y = [], []
    for k, (x, y) in enumerate(zip(xs, ys)):
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).ravel()
        if x.ndim != 2 or x.shape[0] != y.shape[0]:
            raise DatasetCorruptError(f"{path}: silo {k} has X of shape {x.shape} and {y.shape[0]} labels")
        out_x.append(x)
        out_y.append(y)
    return out_x, out_y
