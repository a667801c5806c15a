"""The working results store of sweeps: one JSON file per run, written atomically, resumable.

Layout: ``<root>/<row key>.json`` (:func:`~fedtrain.results.row_key`), one row per run: the
:class:`fedtrain.engine.RunResult` encoded by :meth:`RunResult.to_dict <fedtrain.engine.RunResult.to_dict>` (config,
metrics, privacy, curve, the data summary with file and checksum), plus ``engine_version``, ``created`` and
``provenance`` (:func:`~fedtrain.results.provenance`: engine version, git commit, the command that computed
the row, and its seconds).  :meth:`ResultsStore.get` and :meth:`ResultsStore.rows` hand back
:class:`~fedtrain.engine.RunResult` objects; reading a row checks that its stored config and data identity hash to
the key it is filed under (:func:`~fedtrain.results.check_row_key`), against its digest (every row is sealed when
written, :mod:`fedtrain.store.integrity`) and recomputes its privacy claim (:mod:`fedtrain.store.claims`; each
distinct ε once per store object): a row edited by hand, or whose ε exceeds its budget, is refused in one line
naming the file.  A record-level row also records ``eps_orders``, the rdp order at which each silo's ε is attained
(the hint that keeps that check cheap).  Lookups by configuration alone (the book's
figures) find the row of that configuration whatever its data and fail if the store holds it for two data.

Every write is atomic (:func:`fedtheory.atomic_io.write_text_atomic`): an interrupted write leaves either the old
row or the new one, never a truncated file; leftover temporary files (``.<key>.json.tmp-*``) are ignored by readers
and removed by the next process that writes to the store (those older than :data:`STALE_TEMP_SECONDS`).  A write
that fails (disk full, a read-only folder, a folder where the row file should be) raises
:class:`~fedtrain.results.ResultsStoreError`, one line naming the file and the reason; the rows already written
are untouched.  The default working store of ``fedtrain sweep`` is
:data:`~fedtrain.results.DEFAULT_WORK_STORE` (``./fedtrain-results``); a folder holding a committed store
(``MANIFEST.json``) is refused as a working store.  Two processes writing the same key write the same run and the
last rename wins; rows of different keys never collide.  A sweep skips every config whose key is already present
(:meth:`ResultsStore.has`), so re-running it resumes where it stopped.  Rows written by another
:data:`~fedtrain.config.ENGINE_VERSION` have other keys; :meth:`ResultsStore.rows` skips them, and files not named by
a row key are ignored.

The store holds both kinds of runs (:func:`~fedtrain.store.keys.row_kind`, from the stored config's method and its
privacy unit in the method registry): the cross-silo runs above and the client-level runs (FedHDP and its
baselines: :class:`~fedtrain.clientdp.config.FedHDPConfig` → :class:`~fedtrain.clientdp.trainer.FedHDPResult`), keyed
and written alike, in **one row format**: the result's ``to_dict()`` plus ``key``, ``config_key``,
``engine_version``, ``created``, ``provenance`` and ``eps_orders`` (``None`` for a client-level row, whose claim is
checked per privacy group), sealed, sorted keys, non-finite floats as the strings of
:func:`fedtrain.encoding.encode`.  A client-level row read back from a store and put again keeps its provenance.
Client-level rows written before they recorded an engine version are read unchanged (their engine version is in
their key).  ``get``, ``has`` and ``put`` take either kind; :meth:`ResultsStore.rows` yields the record-level
runs unless asked for the other kind (``kind="client"``).
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from fedtheory.atomic_io import STALE_TEMP_SECONDS, remove_stale_temps, write_text_atomic
from fedtrain.config import ENGINE_VERSION, RunConfig
from fedtrain.data.base import identity_digest
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.methods.registry import CLIENT, PRIVACY_UNITS, RECORD
from fedtrain.store.claims import ClaimChecker, eps_orders
from fedtrain.store.integrity import check_digest, seal
from fedtrain.store.keys import ROW_KEY_PATTERN, ResultsStoreError, check_row_key, result_row_key, row_kind
from fedtrain.store.layout import DEFAULT_WORK_STORE, MANIFEST, shown_path
from fedtrain.store.provenance import git_commit, provenance

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.engine import RunResult
    from fedtrain.clientdp.trainer import FedHDPResult

__all__ = ["ResultsStore", "STALE_TEMP_SECONDS"]


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
        #: recomputes every served row's privacy claim, each distinct ε once per store object
        self.claims = ClaimChecker()

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

    def _candidates(self, config_or_key: "RunConfig | FedHDPConfig | str", identity: "dict | None" = None) -> list[Path]:
        """Row files of a row key, or of a configuration (or config key) on data ``identity`` (any data if None)."""
        if isinstance(config_or_key, str) and ROW_KEY_PATTERN.match(config_or_key):
            return [self._path(config_or_key)]
        ck = config_or_key if isinstance(config_or_key, str) else config_or_key.key()
        if identity:
            return [self._path(f"{ck}-{identity_digest(identity)}")]
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob(f"{ck}-*.json") if ROW_KEY_PATTERN.match(p.stem))

    def _find(self, config_or_key: "RunConfig | FedHDPConfig | str", identity: "dict | None" = None) -> Path | None:
        paths = [p for p in self._candidates(config_or_key, identity) if p.exists()]
        if not paths:
            return None
        if len(paths) > 1:
            raise ResultsStoreError(f"results store {self.root} holds {len(paths)} rows of this configuration, "
                                    f"trained on different data ({', '.join(p.name for p in paths)}); name the "
                                    "data (identity=, or a row key)")
        return paths[0]

    def has(self, config_or_key: "RunConfig | FedHDPConfig | str", identity: "dict | None" = None) -> bool:
        """Whether the run is finished (its row exists): a row key, or a configuration on data ``identity``
        (:meth:`fedtrain.data.base.FederatedData.identity`; ``None``: on any data)."""
        return any(p.exists() for p in self._candidates(config_or_key, identity))

    def get(self, config_or_key: "RunConfig | FedHDPConfig | str",
            identity: "dict | None" = None) -> "RunResult | FedHDPResult | None":
        """The stored run (checked against the key it is filed under), or ``None``: a
        :class:`~fedtrain.engine.RunResult` or, for a client-level row, a
        :class:`~fedtrain.clientdp.trainer.FedHDPResult` (without the per-client arrays a row does not keep)."""
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

    def _decode(self, path: Path, row: dict) -> "RunResult | FedHDPResult":
        check_row_key(row, path.stem, str(path))
        check_digest(row, str(path))
        self.claims.check(row, str(path))
        try:
            if row_kind(row) == CLIENT:
                from fedtrain.clientdp.trainer import FedHDPResult  # torch: loaded when a client-level row is read

                return FedHDPResult.from_dict(row)
            from fedtrain.engine import RunResult

            return RunResult.from_dict(row)
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsStoreError(f"results store row {path} cannot be read back ({exc}); delete it to recompute "
                                    "the run") from None

    def _sweep_stale(self) -> None:
        """Remove temporary files left by a killed writer (older than :data:`STALE_TEMP_SECONDS`)."""
        self._swept = True
        remove_stale_temps(self.root, ".*.json.tmp-*", older_than=STALE_TEMP_SECONDS)

    def put(self, result: "RunResult | FedHDPResult") -> "RunResult | FedHDPResult":
        """Store a finished run of either kind atomically under :func:`result_row_key` and return it.

        A failed write raises :class:`ResultsStoreError` naming the file; the rows already stored stay."""
        key = result_row_key(result)
        path = self._path(key)
        if self._commit is None:
            self._commit = git_commit()
        row_provenance = provenance(self.command, seconds=result.wall_time, commit=self._commit)
        row = result.to_dict()  # one row format for both privacy units (module docstring)
        row.pop("digest", None)
        row["key"], row["config_key"] = key, result.config.key()
        row["engine_version"] = ENGINE_VERSION
        row["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        if row_kind(row) == RECORD or "provenance" not in row:  # a client-level row read back keeps where it came from
            row["provenance"] = row_provenance
        row["eps_orders"] = eps_orders(row)  # the hint that keeps the claim's check cheap on read (None: client)
        text = json.dumps(seal(row), sort_keys=True, allow_nan=False)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if not self._swept:
                self._sweep_stale()
            if path.is_dir():
                raise IsADirectoryError(21, "a folder is where the row file should be")
            write_text_atomic(path, text)
        except OSError as exc:
            raise ResultsStoreError(f"cannot write results row {path} ({exc.strerror or exc}); the rows already "
                                    f"stored in {self.root} are intact") from None
        return result

    def keys(self) -> list[str]:
        """The row keys (file names) of the stored rows."""
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.json") if ROW_KEY_PATTERN.match(p.stem))

    def __len__(self) -> int:
        return len(self.keys())

    def config_keys(self) -> set[str]:
        """The configuration keys that have a row (on any data): one listing of the folder, for counting many."""
        return {k.split("-")[0] for k in self.keys()}

    def __contains__(self, config_or_key: object) -> bool:
        return isinstance(config_or_key, (str, RunConfig, FedHDPConfig)) and self.has(config_or_key)

    def rows(self, kind: str = RECORD, **where: Any) -> "Iterator[RunResult | FedHDPResult]":
        """Every stored run of this engine version and of ``kind`` (the privacy unit of its method: ``"record"``,
        the cross-silo runs, or ``"client"``), optionally filtered on config fields or method options
        (``store.rows(method="mrmtl", dataset="school")``).

        A row records its engine version and rows of another are skipped; a client-level row written before rows
        recorded it has its engine version in its key only, and one that does not hash to its key (another engine
        version, or a file copied over another) raises :class:`ResultsStoreError` naming the file."""
        if kind not in PRIVACY_UNITS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, PRIVACY_UNITS))} (got {kind!r})")
        for key in self.keys():
            path = self._path(key)
            row = self._read(path)
            if row_kind(row) != kind or row.get("engine_version", None if kind == RECORD else ENGINE_VERSION) \
                    != ENGINE_VERSION:
                continue
            result = self._decode(path, row)
            if all(getattr(result.config, k, None) == v for k, v in where.items()):
                yield result
