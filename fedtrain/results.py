"""The results store: one JSON file per finished run, keyed by :meth:`RunConfig.key`.

Layout: ``<root>/<key>.json``, one row per run: the :class:`fedtrain.engine.RunResult` encoded by
:meth:`RunResult.to_dict <fedtrain.engine.RunResult.to_dict>` (config, metrics, privacy, curve, the
data summary with file and checksum), plus ``engine_version`` and ``created``.  :meth:`ResultsStore.get`
and :meth:`ResultsStore.rows` hand back :class:`~fedtrain.engine.RunResult` objects.

Every write goes to a temporary file in the same folder, is flushed and ``fsync``-ed, then renamed
over the target with :func:`os.replace` (atomic on POSIX and Windows), and the folder is fsync-ed.
An interrupted write therefore leaves either the old row or the new one, never a truncated file;
leftover temporary files (``.<key>.json.tmp-*``) are ignored by readers.  Two processes writing the
same key write the same run and the last rename wins; rows of different keys never collide.  A
sweep skips every config whose key is already present (:meth:`ResultsStore.has`), so re-running it
resumes where it stopped.  Rows written by another :data:`~fedtrain.config.ENGINE_VERSION` have other
keys; :meth:`ResultsStore.rows` skips them.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from fedtrain.config import ENGINE_VERSION, RunConfig
from fedtrain.encoding import encode

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.engine import RunResult

__all__ = ["ResultsStore", "DEFAULT_RESULTS_DIR", "jsonable"]

#: ``results/`` at the repository root (git-ignored); the book's full-scale grids live there.
DEFAULT_RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"

#: The one JSON encoder (:func:`fedtrain.encoding.encode`), under its historical name.
jsonable = encode


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

    def check_writable(self) -> None:
        """Create the folder if needed and check that a file can be written there (before any training).

        Raises ``ValueError`` naming the folder and the reason."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".write-test-", dir=self.root)
            os.close(fd)
            os.unlink(tmp)
        except OSError as exc:
            raise ValueError(f"results folder {self.root} is not writable ({exc.strerror or exc}); "
                             "choose another folder with --results / store=") from None

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    @staticmethod
    def _key(config_or_key: RunConfig | str) -> str:
        return config_or_key if isinstance(config_or_key, str) else config_or_key.key()

    def has(self, config_or_key: RunConfig | str) -> bool:
        """Whether the run is finished (its row exists)."""
        return self._path(self._key(config_or_key)).is_file()

    def get(self, config_or_key: RunConfig | str) -> "RunResult | None":
        """The stored run, or ``None``."""
        path = self._path(self._key(config_or_key))
        if not path.is_file():
            return None
        return self._decode(path, self._read(path))

    @staticmethod
    def _read(path: Path) -> dict:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:  # cannot happen with atomic writes; say which file
            raise ValueError(f"results store row {path} is unreadable ({exc}); delete it to recompute the run") from exc

    @staticmethod
    def _decode(path: Path, row: dict) -> "RunResult":
        from fedtrain.engine import RunResult

        try:
            return RunResult.from_dict(row)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"results store row {path} cannot be read back ({exc}); delete it to recompute "
                             "the run") from exc

    def put(self, result: "RunResult") -> "RunResult":
        """Store a finished run atomically (keyed by ``result.config.key()``) and return it."""
        self.root.mkdir(parents=True, exist_ok=True)
        row = result.to_dict()
        row["engine_version"] = ENGINE_VERSION
        row["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        _atomic_write_text(self._path(result.key), json.dumps(row, sort_keys=True, allow_nan=False))
        return result

    def keys(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.json") if not p.name.startswith("."))

    def __len__(self) -> int:
        return len(self.keys())

    def __contains__(self, config_or_key: object) -> bool:
        return isinstance(config_or_key, (str, RunConfig)) and self.has(config_or_key)

    def rows(self, **where: Any) -> Iterator["RunResult"]:
        """Every stored run of this engine version, optionally filtered on config fields or method options
        (``store.rows(method="mrmtl", dataset="school")``)."""
        for key in self.keys():
            path = self._path(key)
            row = self._read(path)
            if row.get("engine_version") != ENGINE_VERSION:
                continue
            result = self._decode(path, row)
            if all(getattr(result.config, k, None) == v for k, v in where.items()):
                yield result
