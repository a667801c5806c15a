"""The results store: one JSON file per finished run, keyed by :meth:`RunConfig.key`.

Layout: ``<root>/<key>.json``, one *row* per run::

    {"key": ..., "config": RunConfig.to_dict(), "result": {metrics, privacy, history, ...},
     "dataset": {"name", "real", "num_silos", ...}, "created": ISO time, "wall_s": ...}

Every write goes to a temporary file in the same folder, is flushed and ``fsync``-ed, then renamed
over the target with :func:`os.replace` (atomic on POSIX and Windows), and the folder is fsync-ed.
An interrupted write therefore leaves either the old row or the new one, never a truncated file;
leftover temporary files (``.<key>.json.tmp-*``) are ignored by readers.  Two processes writing the
same key write the same run and the last rename wins; rows of different keys never collide.  A
sweep skips every config whose key is already present (:meth:`ResultsStore.has`), so re-running it
resumes where it stopped.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator, Mapping

from fedtrain.config import RunConfig

__all__ = ["ResultsStore", "DEFAULT_RESULTS_DIR", "jsonable"]

#: ``results/`` at the repository root (git-ignored); the book's full-scale grids live there.
DEFAULT_RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


def jsonable(value: Any) -> Any:
    """Convert numpy/torch scalars and arrays, tuples and infinities to JSON values (``inf`` -> ``"inf"``)."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        np = None
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch tensor
        value = value.detach().cpu().numpy()
    if np is not None:
        if isinstance(value, np.ndarray):
            return [jsonable(v) for v in value.tolist()]
        if isinstance(value, np.generic):
            value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if hasattr(value, "to_dict"):
        return jsonable(value.to_dict())
    raise TypeError(f"cannot store a value of type {type(value).__name__} in the results store")


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
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
    except OSError:  # pragma: no cover - e.g. Windows
        pass


class ResultsStore:
    """A folder of finished runs (see the module docstring)."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else DEFAULT_RESULTS_DIR
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"results store must be a folder (got the file {self.root})")

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.root)!r}, rows={len(self)})"

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    @staticmethod
    def _key(config_or_key: RunConfig | str) -> str:
        return config_or_key if isinstance(config_or_key, str) else config_or_key.key()

    def has(self, config_or_key: RunConfig | str) -> bool:
        """Whether the run is finished (its row exists)."""
        return self._path(self._key(config_or_key)).is_file()

    def get(self, config_or_key: RunConfig | str) -> dict | None:
        """The stored row, or ``None``."""
        path = self._path(self._key(config_or_key))
        if not path.is_file():
            return None
        return self._read(path)

    @staticmethod
    def _read(path: Path) -> dict:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:  # cannot happen with atomic writes; say which file
            raise ValueError(f"results store row {path} is unreadable ({exc}); delete it to recompute the run") from exc

    def put(self, config: RunConfig, result: Any, *, dataset: Mapping[str, Any] | None = None,
            wall_s: float | None = None) -> dict:
        """Store a finished run atomically and return the row."""
        self.root.mkdir(parents=True, exist_ok=True)
        key = config.key()
        row = {
            "key": key,
            "config": config.to_dict(),
            "result": jsonable(result),
            "dataset": jsonable(dict(dataset or {})),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "wall_s": wall_s,
        }
        _atomic_write_text(self._path(key), json.dumps(row, sort_keys=True, allow_nan=False))
        return row

    def keys(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.json") if not p.name.startswith("."))

    def __len__(self) -> int:
        return len(self.keys())

    def __contains__(self, config_or_key: object) -> bool:
        return isinstance(config_or_key, (str, RunConfig)) and self.has(config_or_key)

    def rows(self, **where: Any) -> Iterator[dict]:
        """All rows, optionally filtered on config fields (``store.rows(method="mrmtl", dataset="school")``)."""
        for key in self.keys():
            row = self._read(self._path(key))
            cfg = row.get("config", {})
            if all(cfg.get(k) == jsonable(v) for k, v in where.items()):
                yield row
