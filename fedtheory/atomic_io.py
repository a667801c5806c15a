"""Atomic file writes: a reader sees the old file or the new one, never a part of either.

Every write goes to a temporary file in the target's folder (``.<name>.tmp-<random>``), is flushed and
``fsync``-ed, then renamed over the target with :func:`os.replace` (atomic on POSIX and Windows), and the folder
is ``fsync``-ed so that the rename survives a crash.  A write interrupted at any point (an exception, Ctrl-C)
removes its temporary file and leaves the target as it was; a process killed outright leaves the temporary file,
which readers ignore (it does not have the target's name) and :func:`remove_stale_temps` removes once it is older
than :data:`STALE_TEMP_SECONDS`.  Files are created with the mode an ordinary ``open(path, "w")`` would give
(``0o666`` less the process's umask), not the ``0o600`` of :func:`tempfile.mkstemp`.  Two processes writing the
same path write whole files and the last rename wins.

The temporary file is made by :func:`tempfile.mkstemp` (looked up at call time, so that tests may simulate a
read-only file system there); failures raise :class:`OSError` unchanged, for the caller to word.

Used by the calibration cache (:mod:`fedtheory.privacy.calibration`), the results stores
(:mod:`fedtrain.results`) and the writers of the committed results and of FedHDP's runs.
"""
from __future__ import annotations

import gzip
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["write_bytes_atomic", "write_text_atomic", "write_json_gz_atomic", "remove_stale_temps", "file_mode",
           "STALE_TEMP_SECONDS"]

#: Temporary files of a write older than this (seconds) are left over by a killed writer (:func:`remove_stale_temps`).
STALE_TEMP_SECONDS = 60.0


def file_mode() -> int:
    """The mode of a newly created ordinary file: ``0o666`` less the process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (module docstring); the folder must exist."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.chmod(tmp, file_mode())  # mkstemp makes 0600 files; these are ordinary files
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # pragma: no cover - e.g. Windows, where a folder cannot be opened
        pass


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`write_bytes_atomic`)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_gz_atomic(path: str | os.PathLike, value: Any) -> None:
    """Write ``value`` as compact, key-sorted JSON (no NaN or infinity), gzip'd, to ``path`` atomically.

    The gzip header's time stamp is 0, so the same value always gives the same bytes (and the same SHA-256).

    >>> import tempfile, gzip, json, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.json.gz"
    >>> write_json_gz_atomic(p, {"b": 1, "a": [1.5]}); a = p.read_bytes()
    >>> write_json_gz_atomic(p, {"a": [1.5], "b": 1}); a == p.read_bytes()
    True
    >>> json.loads(gzip.decompress(a))
    {'a': [1.5], 'b': 1}
    """
    text = json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":"))
    write_bytes_atomic(path, gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


def remove_stale_temps(folder: str | os.PathLike, pattern: str = ".*.tmp-*", *,
                       older_than: float = STALE_TEMP_SECONDS) -> int:
    """Remove the temporary files matching ``pattern`` in ``folder`` that are older than ``older_than`` seconds
    (left by a killed writer; younger ones may belong to a write in progress).  Returns how many were removed;
    files that vanish or cannot be removed meanwhile are skipped."""
    now = time.time()
    removed = 0
    for tmp in Path(folder).glob(pattern):
        try:
            if now - tmp.stat().st_mtime > older_than and tmp.is_file():
                tmp.unlink()
                removed += 1
        except OSError:
            pass
    return removed
