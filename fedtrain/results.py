"""Results stores: the working store of sweeps (one JSON file per run) and the committed store the book reads.

**Row keys.**  A row is filed under ``<config key>-<data key>`` (:func:`row_key`): the configuration's key
(:meth:`RunConfig.key <fedtrain.config.RunConfig.key>`, which holds the engine version) and a digest of the
identity of the data it was trained on (:func:`fedtrain.data.base.data_identity`: the SHA-256 of the files a
loader read, or the generator and its options for synthetic data), so a row trained on one copy of a dataset
is never served for another (``--data-dir B`` never returns rows of folder A).  Reading a row checks that its
stored config and data identity hash to the key it is filed under; a mismatch (a row file copied over
another) raises :class:`ResultsStoreError` naming the file.  Lookups by configuration alone (the book's
figures) find the row of that configuration whatever its data and fail if the store holds it for two data.

**Working store** (:class:`ResultsStore`).  Layout: ``<root>/<row key>.json``, one row per run: the
:class:`fedtrain.engine.RunResult` encoded by :meth:`RunResult.to_dict <fedtrain.engine.RunResult.to_dict>` (config,
metrics, privacy, curve, the data summary with file and checksum), plus ``engine_version``, ``created`` and
``provenance`` (:func:`provenance`: engine version, git commit, the command that computed the row, and its
seconds).  :meth:`ResultsStore.get` and :meth:`ResultsStore.rows` hand back :class:`~fedtrain.engine.RunResult`
objects.

Every write goes to a temporary file in the same folder, is flushed and ``fsync``-ed, then renamed
over the target with :func:`os.replace` (atomic on POSIX and Windows), and the folder is fsync-ed.
An interrupted write therefore leaves either the old row or the new one, never a truncated file;
leftover temporary files (``.<key>.json.tmp-*``) are ignored by readers and removed by the next process that
writes to the store (those older than :data:`STALE_TEMP_SECONDS`).  A write that fails (disk full, a
read-only folder, a folder where the row file should be) raises :class:`ResultsStoreError`, one line naming the
file and the reason; the rows already written are untouched.  The default working store of ``fedtrain
sweep`` is :data:`DEFAULT_WORK_STORE` (``./fedtrain-results``); a folder holding a committed store
(``MANIFEST.json``) is refused as a working store.  Two processes writing the
same key write the same run and the last rename wins; rows of different keys never collide.  A
sweep skips every config whose key is already present (:meth:`ResultsStore.has`), so re-running it
resumes where it stopped.  Rows written by another :data:`~fedtrain.config.ENGINE_VERSION` have other
keys; :meth:`ResultsStore.rows` skips them, and files not named by a row key are ignored.

**Committed store** (:class:`CommittedStore`; the chapters open it with
:func:`fedtrain.book_results.committed_store`).  ``results/MANIFEST.json`` and one
gzip'd JSON file per dataset (:func:`pack_rows`: per-silo privacy arrays and data summaries stored once,
per-silo metrics and the ledger left out, float32 metrics written losslessly in their shortest form), written
atomically by :func:`fedtrain.book_results.compute_preset` (``fedtrain sweep --preset paper --pack results``,
``make results``) from the working stores in ``results/work/``.  The empirical chapters read it; opening it
checks the engine version and the files' SHA-256 and fails with :class:`StaleStoreError`, naming the command that regenerates it, when
the engine has changed since.
"""
from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from fedtrain.config import ENGINE_VERSION, RunConfig
from fedtrain.encoding import encode
from fedtrain.data.base import data_identity, identity_digest

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.engine import RunResult

__all__ = ["ResultsStore", "DEFAULT_RESULTS_DIR", "WORK_DIR", "DEFAULT_WORK_STORE", "jsonable", "git_commit",
           "provenance", "pack_rows", "CommittedStore", "StaleStoreError", "ResultsStoreError",
           "REGENERATE_COMMAND", "STORE_ENV", "DROPPED_FIELDS", "row_key", "result_row_key", "STALE_TEMP_SECONDS"]

#: ``results/`` at the repository root: the committed store (``*.json.gz`` and ``MANIFEST.json``, see
#: :class:`CommittedStore`) and, git-ignored, the working stores of sweeps.
DEFAULT_RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
#: Working stores of ``fedtrain sweep --preset`` (one JSON file per run, resumable; git-ignored).
WORK_DIR = DEFAULT_RESULTS_DIR / "work"
#: The working store of ``fedtrain sweep`` without ``--results``: ``fedtrain-results`` in the current folder
#: (never the committed store, which sweeps only read).
DEFAULT_WORK_STORE = Path("fedtrain-results")
#: Temporary files of a write older than this (seconds) are left over by a killed writer and removed.
STALE_TEMP_SECONDS = 60.0
#: The command that regenerates the committed store (what an out-of-date store's error message says).
REGENERATE_COMMAND = "make results  (= fedtrain sweep --preset paper --pack results)"
_REPO = Path(__file__).resolve().parents[1]


def shown_path(path: str | os.PathLike) -> str:
    """``path`` as a store's ``repr`` shows it: relative to the repository when it lies inside it (``results``),
    else just its folder name, so that no machine's absolute path reaches a printed page or log."""
    p = Path(path).resolve()
    try:
        return p.relative_to(_REPO).as_posix() or "."
    except ValueError:
        return p.name


def git_commit(repo: str | os.PathLike | None = None) -> str:
    """The checkout's commit (``git rev-parse HEAD``), with ``+dirty`` when ``fedtrain/`` or ``fedtheory/`` have
    uncommitted changes (then the commit alone does not reproduce the numbers); ``"unknown"`` outside git."""
    import subprocess

    repo = Path(repo) if repo is not None else _REPO
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "fedtrain", "fedtheory"], cwd=repo,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not head:
        return "unknown"
    return head + ("+dirty" if dirty else "")


def provenance(command: str | None = None, *, seconds: float | None = None, commit: str | None = None) -> dict:
    """A row's provenance: ``engine_version`` (:data:`~fedtrain.config.ENGINE_VERSION`), ``commit``
    (:func:`git_commit`), ``command`` (default: this process's command line) and ``seconds`` (the run's
    wall time; for a run trained in a batch of S by :func:`fedtrain.engine.run_many`, the batch's time / S)."""
    import shlex
    import sys

    if command is None:
        command = " ".join(shlex.quote(a) for a in [Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "python"
    return {"engine_version": ENGINE_VERSION, "commit": commit if commit is not None else git_commit(),
            "command": command, "seconds": None if seconds is None else float(seconds)}

#: The one JSON encoder (:func:`fedtrain.encoding.encode`), under its historical name.
jsonable = encode


class ResultsStoreError(ValueError):
    """A results-store row that cannot be read, written or trusted; the message (one line) names the file."""


_ROW_KEY = re.compile(r"^[0-9a-f]{16}-[0-9a-f]{12}$")
_CONFIG_KEY = re.compile(r"^[0-9a-f]{16}$")


def row_key(config: RunConfig, identity: "dict | None") -> str:
    """The key a row is filed under: ``<config.key()>-<identity_digest(identity)>`` (module docstring)."""
    if not identity:
        raise ValueError(f"a results-store row needs the identity of its data (config {config.key()}: "
                         "result.data has no 'identity'; results of fedtrain.engine.run carry it)")
    return f"{config.key()}-{identity_digest(identity)}"


def result_row_key(result: "RunResult") -> str:
    """:func:`row_key` of a finished run (its config and the identity in ``result.data``)."""
    return row_key(result.config, data_identity(result.data or {}))


def _check_row_key(row: dict, filed_as: str, where: str) -> None:
    """Raise :class:`ResultsStoreError` unless the row's stored config and data identity hash to ``filed_as``."""
    try:
        actual = row_key(RunConfig.from_dict(row["config"]), data_identity(row.get("data") or {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultsStoreError(f"results store row {where} cannot be checked ({exc}); delete it to recompute "
                                "the run") from None
    if actual != filed_as:
        raise ResultsStoreError(f"results store row {where} is filed under key {filed_as} but its config and data "
                                f"hash to {actual} (a row file copied over another?); delete it to recompute the run")


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _atomic_write_text(path: Path, text: str) -> None:
    _atomic_write_bytes(path, text.encode("utf-8"))


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file in the same folder, fsync, rename, fsync of the
    folder): a reader sees the old file or the new one, never a part."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    os.chmod(tmp, _umask_mode())  # mkstemp makes 0600 files; rows are ordinary files
    try:
        with os.fdopen(fd, "wb") as fh:
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
    except OSError:  # pragma: no cover - e.g. Windows
        pass


class ResultsStore:
    """A folder of finished runs (see the module docstring)."""

    #: Stores the sweep writes to (read-only stores, :class:`CommittedStore`, say so here).
    read_only = False

    def __init__(self, root: str | os.PathLike | None = None, *, command: str | None = None,
                 commit: str | None = None) -> None:
        self.root = Path(root) if root is not None else DEFAULT_WORK_STORE
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"results store must be a folder (got the file {self.root})")
        #: the command recorded in every row's provenance (default: this process's command line)
        self.command = command
        #: the commit recorded in every row's provenance (default: :func:`git_commit` at the first write)
        self._commit: str | None = commit
        self._swept = False  # stale temporary files removed (once per store object, at its first write)

    def __repr__(self) -> str:
        return f"ResultsStore({shown_path(self.root)!r}, rows={len(self)})"

    def check_writable(self) -> None:
        """Create the folder if needed and check that a file can be written there (before any training).

        Raises ``ValueError`` naming the folder and the reason; a folder holding a committed store
        (``MANIFEST.json``, :class:`CommittedStore`) is refused: sweeps only read it."""
        if (self.root / MANIFEST).is_file():
            raise ValueError(f"results folder {self.root} holds the committed results store ({MANIFEST}), which "
                             "sweeps only read; write to a working store instead (--results DIR, default "
                             f"./{DEFAULT_WORK_STORE})")
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

    def _candidates(self, config_or_key: RunConfig | str, identity: "dict | None" = None) -> list[Path]:
        """Row files of a row key, or of a configuration (or config key) on data ``identity`` (any data if None)."""
        if isinstance(config_or_key, str) and _ROW_KEY.match(config_or_key):
            return [self._path(config_or_key)]
        ck = config_or_key if isinstance(config_or_key, str) else config_or_key.key()
        if identity:
            return [self._path(f"{ck}-{identity_digest(identity)}")]
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob(f"{ck}-*.json") if _ROW_KEY.match(p.stem))

    def _find(self, config_or_key: RunConfig | str, identity: "dict | None" = None) -> Path | None:
        paths = [p for p in self._candidates(config_or_key, identity) if p.exists()]
        if not paths:
            return None
        if len(paths) > 1:
            raise ResultsStoreError(f"results store {self.root} holds {len(paths)} rows of this configuration, "
                                    f"trained on different data ({', '.join(p.name for p in paths)}); name the "
                                    "data (identity=, or a row key)")
        return paths[0]

    def has(self, config_or_key: RunConfig | str, identity: "dict | None" = None) -> bool:
        """Whether the run is finished (its row exists): a row key, or a configuration on data ``identity``
        (:meth:`fedtrain.data.base.FederatedData.identity`; ``None``: on any data)."""
        return any(p.exists() for p in self._candidates(config_or_key, identity))

    def get(self, config_or_key: RunConfig | str, identity: "dict | None" = None) -> "RunResult | None":
        """The stored run (checked against the key it is filed under), or ``None``."""
        path = self._find(config_or_key, identity)
        if path is None:
            return None
        return self._decode(path, self._read(path))

    @staticmethod
    def _read(path: Path) -> dict:
        try:
            row = json.loads(path.read_bytes().decode("utf-8"))
        except (OSError, ValueError) as exc:  # atomic writes never leave this; say which file
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise ResultsStoreError(f"results store row {path} is unreadable ({reason}); delete it to recompute "
                                    "the run") from None
        if not isinstance(row, dict):
            raise ResultsStoreError(f"results store row {path} is not a row (a JSON {type(row).__name__}); delete "
                                    "it to recompute the run")
        return row

    @staticmethod
    def _decode(path: Path, row: dict) -> "RunResult":
        from fedtrain.engine import RunResult

        _check_row_key(row, path.stem, str(path))
        try:
            return RunResult.from_dict(row)
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsStoreError(f"results store row {path} cannot be read back ({exc}); delete it to recompute "
                                    "the run") from None

    def _sweep_stale(self) -> None:
        """Remove temporary files left by a killed writer (older than :data:`STALE_TEMP_SECONDS`)."""
        self._swept = True
        now = time.time()
        for tmp in self.root.glob(".*.json.tmp-*"):
            try:
                if now - tmp.stat().st_mtime > STALE_TEMP_SECONDS and tmp.is_file():
                    tmp.unlink()
            except OSError:
                pass

    def put(self, result: "RunResult") -> "RunResult":
        """Store a finished run atomically under :func:`result_row_key` and return it.

        A failed write raises :class:`ResultsStoreError` naming the file; the rows already stored stay."""
        key = result_row_key(result)
        path = self._path(key)
        row = result.to_dict()
        row["key"], row["config_key"] = key, result.config.key()
        row["engine_version"] = ENGINE_VERSION
        row["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        if self._commit is None:
            self._commit = git_commit()
        row["provenance"] = provenance(self.command, seconds=result.wall_time, commit=self._commit)
        text = json.dumps(row, sort_keys=True, allow_nan=False)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if not self._swept:
                self._sweep_stale()
            if path.is_dir():
                raise IsADirectoryError(21, "a folder is where the row file should be")
            _atomic_write_text(path, text)
        except OSError as exc:
            raise ResultsStoreError(f"cannot write results row {path} ({exc.strerror or exc}); the rows already "
                                    f"stored in {self.root} are intact") from None
        return result

    def keys(self) -> list[str]:
        """The row keys (file names) of the stored rows."""
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.json") if _ROW_KEY.match(p.stem))

    def __len__(self) -> int:
        return len(self.keys())

    def config_keys(self) -> set[str]:
        """The configuration keys that have a row (on any data): one listing of the folder, for counting many."""
        return {k.split("-")[0] for k in self.keys()}

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


# --------------------------------------------------------------------------------------------------
# the committed store: compact, one gzip'd JSON file per dataset, read-only
# --------------------------------------------------------------------------------------------------
#: The committed store's format; 2: rows keyed by configuration and data identity (:func:`row_key`).
FORMAT = "fedbook-results-2"
MANIFEST = "MANIFEST.json"
#: Fields of :class:`~fedtrain.engine.RunResult` that the committed form leaves out (per-silo metrics and test
#: sizes, the per-silo ledger, weights): the figures do not read them and they would make the store ~10× larger.
DROPPED_FIELDS = ("silo_metrics", "test_sizes", "ledger", "models")
_PRIVACY_FIELDS = ("noise_multipliers", "eps_spent", "delta", "steps", "accountant", "adjacency")


class StaleStoreError(ValueError):
    """The committed results store was written by another engine version (or is missing or corrupt): its rows
    cannot be reproduced by this checkout.  The message names the file and the command that regenerates it."""


def _digest(value: Any) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(value, sort_keys=True, allow_nan=False).encode()).hexdigest()[:16]


def _is_float32(v: Any) -> bool:
    import numpy as np

    return not isinstance(v, float) or not math.isfinite(v) or float(np.float32(v)) == v


def _short32(v: Any) -> Any:
    """A float32 value as the shortest decimal that reads back to the same float32 (lossless, ~9 characters)."""
    import numpy as np

    return float(str(np.float32(v))) if isinstance(v, float) and math.isfinite(v) else v


def _unshort32(v: Any) -> Any:
    import numpy as np

    return float(np.float32(v)) if isinstance(v, float) else v


def pack_rows(rows: "list[dict]", **header: Any) -> dict:
    """The compact committed form of results-store rows (dicts as :meth:`ResultsStore.put` writes them).

    Per-silo privacy arrays (``noise_multipliers``, ``eps_spent``, ``delta``, ``steps``, with ``accountant`` and
    ``adjacency``) and the data summaries are stored once per distinct value and referenced by digest;
    :data:`DROPPED_FIELDS` are left out; test metrics and curves, float32 numbers in the engine, are written as
    the shortest decimal of their float32 value when every one of them is a float32 (``metric_float32``), so
    reading them back gives the same bits.  ``header`` (dataset, scale, figures...) is stored as is.
    """
    privacy: dict[str, dict] = {}
    data: dict[str, dict] = {}
    out_rows = []
    f32 = all(_is_float32(r.get("test_metric")) and all(_is_float32(v) for v in (r.get("curve") or [])) for r in rows)
    seconds = 0.0
    commits, commands = set(), set()
    for r in rows:
        if r.get("engine_version") != ENGINE_VERSION:
            raise ValueError(f"row {r.get('key')} was written by engine version {r.get('engine_version')}, "
                             f"not {ENGINE_VERSION}")
        p = {k: r.get(k) for k in _PRIVACY_FIELDS}
        pd = _digest(p)
        privacy.setdefault(pd, p)
        d = r.get("data") or {}
        dd = _digest(d)
        data.setdefault(dd, d)
        row = {k: v for k, v in r.items() if k not in DROPPED_FIELDS and k not in _PRIVACY_FIELDS and k != "data"}
        row["privacy"], row["data"] = pd, dd
        if f32:
            row["test_metric"] = _short32(row["test_metric"])
            if row.get("curve") is not None:
                row["curve"] = [_short32(v) for v in row["curve"]]
        prov = row.get("provenance") or {}
        seconds += float(prov.get("seconds") or 0.0)
        commits.add(str(prov.get("commit")))
        commands.add(str(prov.get("command")))
        out_rows.append(row)
    return {"format": FORMAT, **header, "engine_version": ENGINE_VERSION, "rows_count": len(out_rows),
            "seconds": seconds, "commits": sorted(commits), "commands": sorted(commands), "metric_float32": f32,
            "dropped_fields": list(DROPPED_FIELDS), "privacy": privacy, "data": data, "rows": out_rows}


def _unpack_row(doc: dict, row: dict) -> dict:
    out = dict(row)
    out.update(doc["privacy"][row["privacy"]])
    out["data"] = doc["data"][row["data"]]
    if doc.get("metric_float32"):
        out["test_metric"] = _unshort32(out["test_metric"])
        if out.get("curve") is not None:
            out["curve"] = [_unshort32(v) for v in out["curve"]]
    for k in DROPPED_FIELDS:
        out.pop(k, None)
    return out


def _write_gzip_json(path: Path, value: Any) -> None:
    import gzip

    text = json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":"))
    # mtime=0: the same rows give the same bytes (and the same SHA-256 in the manifest)
    _atomic_write_bytes(path, gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


class CommittedStore:
    """The committed, read-only results store (``results/`` by default) that the empirical chapters read.

    Layout: ``MANIFEST.json`` (format, preset, engine version, and per file: dataset, scale, figures, rows,
    SHA-256, seconds, commits, commands; plus the wall-clock time of each computation) and one
    ``<name>.json.gz`` per dataset (:func:`pack_rows`), written by :func:`fedtrain.book_results.compute_preset`.  Opening it checks
    that every file was written by this checkout's :data:`~fedtrain.config.ENGINE_VERSION` and matches its
    SHA-256; otherwise :class:`StaleStoreError` says which file and how to regenerate it
    (:data:`REGENERATE_COMMAND`).  :meth:`get` and :meth:`select` hand back
    :class:`~fedtrain.engine.RunResult` objects without :data:`DROPPED_FIELDS` (set to ``None``);
    :meth:`provenance` gives a row's engine version, commit, command and seconds.  Passed as ``store`` to
    :func:`fedtrain.sweep.run_sweep`, it serves the rows it holds and refuses to train the others.
    """

    read_only = True

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        import gzip
        import hashlib

        self.root = Path(root) if root is not None else DEFAULT_RESULTS_DIR
        mpath = self.root / MANIFEST
        if not mpath.is_file():
            raise StaleStoreError(f"no committed results store: {mpath} does not exist; compute it with "
                                  f"{REGENERATE_COMMAND}")
        try:
            self.manifest = json.loads(mpath.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise StaleStoreError(f"results manifest {mpath} is unreadable ({exc}); regenerate it with "
                                  f"{REGENERATE_COMMAND}") from exc
        if self.manifest.get("format") != FORMAT:
            raise StaleStoreError(f"results manifest {mpath} has format {self.manifest.get('format')!r}, not "
                                  f"{FORMAT!r}; regenerate it with {REGENERATE_COMMAND}")
        self.docs: dict[str, dict] = {}
        self._index: dict[str, tuple[str, int]] = {}
        self._by_config: dict[str, list[str]] = {}
        for name, info in self.manifest.get("files", {}).items():
            path = self.root / name
            version = info.get("engine_version")
            if version != ENGINE_VERSION:
                raise StaleStoreError(
                    f"results store {path} was written by engine version {version}, but this checkout's engine is "
                    f"version {ENGINE_VERSION} (fedtrain.config.ENGINE_VERSION): its rows no longer reproduce. "
                    f"Regenerate the store with {REGENERATE_COMMAND}")
            try:
                raw = path.read_bytes()
            except OSError as exc:
                raise StaleStoreError(f"results store file {path} (listed in {mpath}) is missing or unreadable "
                                      f"({exc.strerror or exc}); regenerate it with {REGENERATE_COMMAND}") from None
            if hashlib.sha256(raw).hexdigest() != info.get("sha256"):
                raise StaleStoreError(f"results store file {path} does not match the SHA-256 in {mpath} (edited or "
                                      f"truncated); regenerate it with {REGENERATE_COMMAND}")
            doc = json.loads(gzip.decompress(raw).decode("utf-8"))
            if doc.get("engine_version") != ENGINE_VERSION:
                raise StaleStoreError(f"results store {path} was written by engine version {doc.get('engine_version')}"
                                      f", not {ENGINE_VERSION}; regenerate it with {REGENERATE_COMMAND}")
            self.docs[name] = doc
            for i, row in enumerate(doc["rows"]):
                self._index[row["key"]] = (name, i)
                self._by_config.setdefault(row["key"].split("-")[0], []).append(row["key"])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({shown_path(self.root)!r}, rows={len(self)})"

    def __len__(self) -> int:
        return len(self._index)

    def keys(self) -> list[str]:
        """The row keys (:func:`row_key`) of the stored rows."""
        return sorted(self._index)

    @staticmethod
    def _key(config_or_key: RunConfig | str) -> str:
        return config_or_key if isinstance(config_or_key, str) else config_or_key.key()

    def _row_key(self, config_or_key: RunConfig | str, identity: "dict | None" = None) -> str | None:
        """The row key of a row key, or of a configuration on data ``identity`` (``None``: its one row, any data)."""
        if isinstance(config_or_key, str) and _ROW_KEY.match(config_or_key):
            return config_or_key if config_or_key in self._index else None
        if isinstance(config_or_key, RunConfig) and identity:
            key = row_key(config_or_key, identity)
            return key if key in self._index else None
        ck = self._key(config_or_key)
        found = self._by_config.get(ck, [])
        if len(found) > 1:
            raise ResultsStoreError(f"the committed store {self.root} holds {len(found)} rows of configuration {ck}, "
                                    f"trained on different data ({', '.join(found)}); name the data (identity=)")
        return found[0] if found else None

    def has(self, config_or_key: RunConfig | str, identity: "dict | None" = None) -> bool:
        """Whether a row is stored: a row key, or a configuration on data ``identity`` (``None``: on any data)."""
        return self._row_key(config_or_key, identity) is not None

    def __contains__(self, config_or_key: object) -> bool:
        return isinstance(config_or_key, (str, RunConfig)) and self.has(config_or_key)

    def row_dict(self, config_or_key: RunConfig | str, identity: "dict | None" = None) -> dict | None:
        """The stored row as a dict (as :meth:`ResultsStore.put` wrote it, less :data:`DROPPED_FIELDS`), checked
        against the key it is filed under (:class:`ResultsStoreError` naming the file otherwise)."""
        key = self._row_key(config_or_key, identity)
        if key is None:
            return None
        name, i = self._index[key]
        doc = self.docs[name]
        row = _unpack_row(doc, doc["rows"][i])
        _check_row_key(row, key, f"{key} of {self.root / name}")
        return row

    def get(self, config_or_key: RunConfig | str, identity: "dict | None" = None) -> "RunResult | None":
        from fedtrain.engine import RunResult

        row = self.row_dict(config_or_key, identity)
        if row is None:
            return None
        for k in DROPPED_FIELDS:
            row.setdefault(k, None)
        return RunResult.from_dict(row)

    def provenance(self, config_or_key: RunConfig | str) -> dict:
        """``engine_version``, ``commit``, ``command`` and ``seconds`` of a stored row."""
        key = self._row_key(config_or_key)
        if key is None:
            raise KeyError(f"no row {self._key(config_or_key)} in {self.root}")
        hit = self._index[key]
        return dict(self.docs[hit[0]]["rows"][hit[1]]["provenance"])

    def file_of(self, config_or_key: RunConfig | str) -> str:
        key = self._row_key(config_or_key)
        if key is None:
            raise KeyError(f"no row {self._key(config_or_key)} in {self.root}")
        return self._index[key][0]

    def check_writable(self) -> None:
        """Nothing to check: :func:`fedtrain.sweep.run_sweep` never writes to a read-only store."""

    def put(self, result: "RunResult") -> "RunResult":
        raise ValueError(self.missing_message([result.config]))

    def missing_message(self, configs: "list[RunConfig]") -> str:
        c = configs[0]
        return (f"the committed results store {self.root} has no row for {len(configs)} configuration(s), e.g. "
                f"{c.method} on {c.dataset} eps={c.eps} lam={c.lam} lr={c.lr} rounds={c.rounds} seed={c.seed}; "
                f"compute them with {REGENERATE_COMMAND}, or run the grid into a store of your own "
                "(fedtrain.sweep.run_sweep(configs, store='results/work/mine'))")

    def select(self, configs: "list[RunConfig]") -> "list[RunResult]":
        """The stored results of ``configs`` (in their order); ``ValueError`` naming the command if any is missing."""
        configs = list(configs)
        missing = [c for c in configs if not self.has(c)]
        if missing:
            raise ValueError(self.missing_message(missing))
        return [self.get(c) for c in configs]

    def rows(self, **where: Any) -> "Iterator[RunResult]":
        """Every stored run, optionally filtered on config fields (``store.rows(method="mrmtl")``)."""
        for key in self.keys():
            r = self.get(key)
            if all(getattr(r.config, k, None) == v for k, v in where.items()):
                yield r

    # -- what a figure read --------------------------------------------------------------------------
    def info(self, name: str) -> dict:
        """The manifest entry of the file holding dataset ``name`` (or the theory figure, ``"theory"``)."""
        for fname, info in self.manifest["files"].items():
            if info.get("name") == name:
                return {"file": fname, **info}
        raise ValueError(f"name must be one of {[i.get('name') for i in self.manifest['files'].values()]} "
                         f"(got {name!r})")

    def scale(self, name: str) -> str:
        """The scale dataset ``name``'s rows were computed at (:data:`fedtrain.presets.SCALES`)."""
        return self.info(name)["scale"]


#: Environment variable naming another committed store for the chapters to read (default ``results/``).
STORE_ENV = "FEDBOOK_RESULTS_STORE"
