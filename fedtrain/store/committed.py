"""The committed results store: compact, one gzip'd JSON file per dataset, read-only; the book reads it.

``results/MANIFEST.json`` and one gzip'd JSON file per dataset (:func:`pack_rows`: per-silo privacy arrays, the
privacy ledger and data summaries stored once, per-silo metrics left out, float32 metrics written losslessly in their
shortest form, every row sealed by its digest), written atomically by :func:`fedtrain.book_results.compute_preset` (``fedtrain sweep --preset paper
--pack results``, ``make results``) from the working stores in ``results/work/``.  The empirical chapters read it
(through :func:`fedtrain.book_results.committed_store`); opening it checks the engine version and the files'
SHA-256 and fails with :class:`StaleStoreError`, naming the command that regenerates it, when the engine has changed
since.  Opening it also refuses, in one line naming the file, a manifest that lists no file, a file that is not
gzip'd JSON, a row count that disagrees with the manifest or the file, and a row key written twice; serving a row
checks its digest (:mod:`fedtrain.store.integrity`) and recomputes its privacy claim (:mod:`fedtrain.store.claims`).

The store holds rows of both privacy units: a file whose manifest entry says ``"unit": "client"`` holds client-level
runs (FedHDP's committed grids, :func:`fedtrain.book_results.pack_client_grid`), packed, checked and served the same
way (:meth:`CommittedStore.get` gives a :class:`~fedtrain.clientdp.trainer.FedHDPResult` for them; :meth:`rows`
yields one unit at a time).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from fedtrain.config import ENGINE_VERSION, OptionsConfig, RunConfig
from fedtrain.methods.registry import CLIENT, RECORD
from fedtrain.store.claims import ClaimChecker, eps_orders
from fedtrain.store.integrity import check_digest, seal
from fedtrain.store.keys import ROW_KEY_PATTERN, ResultsStoreError, check_row_key, row_key, row_kind
from fedtrain.store.layout import DEFAULT_RESULTS_DIR, FORMAT, MANIFEST, REGENERATE_COMMAND, shown_path

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.engine import RunResult

__all__ = ["CommittedStore", "StaleStoreError", "pack_rows", "unpack_row", "DROPPED_FIELDS"]

#: Fields of :class:`~fedtrain.engine.RunResult` that the committed form leaves out (per-silo metrics and test
#: sizes, weights): the figures do not read them and they would make the store ~10× larger.  The privacy ledger
#: (sample rates, steps, selections) is kept: a row's ε is recomputed from it on read.
DROPPED_FIELDS = ("silo_metrics", "test_sizes", "models")
#: The privacy block of a row, stored once per distinct value and referenced by its digest: what recomputing the
#: row's ε needs (:mod:`fedtrain.store.claims`) with the ε claimed and the order hint of the rdp accountant.
_PRIVACY_FIELDS = ("noise_multipliers", "eps_spent", "delta", "steps", "accountant", "adjacency", "ledger",
                   "eps_orders")
#: The privacy block of a client-level row (FedHDP and its baselines): its ``privacy`` (per privacy group: clients,
#: rounds released, ε; the accountant, δ, q and the noise multipliers), what :mod:`fedtrain.store.claims` recomputes.
_CLIENT_PRIVACY_FIELDS = ("privacy", "eps_orders")


#: The config fields a record-level row's privacy claim is checked against (:mod:`fedtrain.store.claims`).
_CLAIM_FIELDS = ("eps", "delta", "accountant", "batch_size", "dataset", "dataset_options", "method")


class StaleStoreError(ValueError):
    """The committed results store was written by another engine version (or is missing or corrupt): its rows
    cannot be reproduced by this checkout.  The message names the file and the command that regenerates it."""


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, allow_nan=False).encode()).hexdigest()[:16]


def _is_float32(v: Any) -> bool:
    return not isinstance(v, float) or not math.isfinite(v) or float(np.float32(v)) == v


def _short32(v: Any) -> Any:
    """A float32 value as the shortest decimal that reads back to the same float32 (lossless, ~9 characters)."""
    return float(str(np.float32(v))) if isinstance(v, float) and math.isfinite(v) else v


def _unshort32(v: Any) -> Any:
    return float(np.float32(v)) if isinstance(v, float) else v


def pack_rows(rows: "list[dict]", **header: Any) -> dict:
    """The compact committed form of results-store rows (dicts as :meth:`ResultsStore.put` writes them).

    Per-silo privacy arrays (``noise_multipliers``, ``eps_spent``, ``delta``, ``steps``, with ``accountant`` and
    ``adjacency``) and the data summaries are stored once per distinct value and referenced by digest;
    :data:`DROPPED_FIELDS` are left out; test metrics and curves, float32 numbers in the engine, are written as
    the shortest decimal of their float32 value when every one of them is a float32 (``metric_float32``), so
    reading them back gives the same bits.  ``header`` (dataset, scale, figures...) is stored as is.

    Rows of either privacy unit (:func:`~fedtrain.store.keys.row_kind`): a client-level row's privacy block is its
    ``privacy`` (:data:`_CLIENT_PRIVACY_FIELDS`), and its numbers are written as they are (``metric_float32`` is
    a record-level engine's property).
    """
    privacy: dict[str, dict] = {}
    data: dict[str, dict] = {}
    out_rows = []
    f32 = all(row_kind(r) == RECORD and _is_float32(r.get("test_metric"))
              and all(_is_float32(v) for v in (r.get("curve") or [])) for r in rows)
    seconds = 0.0
    commits, commands = set(), set()
    checker = ClaimChecker()
    orders_memo: dict = {}
    for r in rows:
        if r.get("engine_version") != ENGINE_VERSION:
            raise ValueError(f"row {r.get('key')} was written by engine version {r.get('engine_version')}, "
                             f"not {ENGINE_VERSION}")
        check_digest(r, f"{r.get('key')} (being packed)")  # a working row edited since it was written stays out
        if r.get("eps_orders") is None:
            r = {**r, "eps_orders": eps_orders(r, orders_memo)}
        checker.check(r, f"{r.get('key')} (being packed)")  # a row whose claim fails never enters the store
        fields = _CLIENT_PRIVACY_FIELDS if row_kind(r) == CLIENT else _PRIVACY_FIELDS
        p = {k: r.get(k) for k in fields}
        pd = _digest(p)
        privacy.setdefault(pd, p)
        d = r.get("data") or {}
        dd = _digest(d)
        data.setdefault(dd, d)
        row = {k: v for k, v in r.items() if k not in DROPPED_FIELDS and k not in fields and k != "data"
               and k != "digest"}
        row["privacy"], row["data"] = pd, dd
        if f32:
            row["test_metric"] = _short32(row["test_metric"])
            if row.get("curve") is not None:
                row["curve"] = [_short32(v) for v in row["curve"]]
        prov = row.get("provenance") or {}
        seconds += float(prov.get("seconds") or 0.0)
        commits.add(str(prov.get("commit")))
        commands.add(str(prov.get("command")))
        out_rows.append(seal(row))
    return {"format": FORMAT, **header, "engine_version": ENGINE_VERSION, "rows_count": len(out_rows),
            "seconds": seconds, "commits": sorted(commits), "commands": sorted(commands), "metric_float32": f32,
            "dropped_fields": list(DROPPED_FIELDS), "privacy": privacy, "data": data, "rows": out_rows}


def unpack_row(doc: dict, row: dict) -> dict:
    """A row of a packed document (:func:`pack_rows`) in the form :meth:`ResultsStore.put
    <fedtrain.results.ResultsStore.put>` wrote it, less :data:`DROPPED_FIELDS`."""
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


class CommittedStore:
    """The committed, read-only results store (``results/`` by default) that the empirical chapters read.

    Layout: ``MANIFEST.json`` (format, preset, engine version, and per file: dataset, scale, figures, rows, SHA-256,
    seconds, commits, commands; plus the wall-clock time of each computation) and one ``<name>.json.gz`` per dataset
    (:func:`pack_rows`), written by :func:`fedtrain.book_results.compute_preset`.  Opening it checks that every file
    was written by this checkout's :data:`~fedtrain.config.ENGINE_VERSION` and matches its SHA-256; otherwise
    :class:`StaleStoreError` says which file and how to regenerate it (:data:`REGENERATE_COMMAND`).  :meth:`get` and
    :meth:`select` hand back :class:`~fedtrain.engine.RunResult` objects without :data:`DROPPED_FIELDS` (set to
    ``None``); :meth:`provenance` gives a row's engine version, commit, command and seconds.  Passed as ``store`` to
    :func:`fedtrain.sweep.run_sweep`, it serves the rows it holds and refuses to train the others.
    """

    read_only = True

    def __init__(self, root: str | os.PathLike | None = None) -> None:
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
        #: recomputes every served row's privacy claim, each distinct ε once per store object
        self.claims = ClaimChecker()
        self._claims_done: set = set()
        files = self.manifest.get("files")
        if not isinstance(files, dict) or not files:
            raise StaleStoreError(f"results manifest {mpath} lists no files (\"files\": {files!r}); regenerate it "
                                  f"with {REGENERATE_COMMAND}")
        for name, info in files.items():
            doc = self._read_file(name, info, mpath)
            rows = doc["rows"]
            path = self.root / name
            regen = info.get("regenerate") or REGENERATE_COMMAND
            self.docs[name] = doc
            for i, row in enumerate(rows):
                key = row.get("key") if isinstance(row, dict) else None
                if not isinstance(key, str) or not ROW_KEY_PATTERN.fullmatch(key):
                    raise StaleStoreError(f"results store file {path}: row {i} has no row key; regenerate it with "
                                          f"{regen}")
                if key in self._index:
                    other = self._index[key][0]
                    raise StaleStoreError(f"results store file {path}: row key {key} is written twice"
                                          f"{'' if other == name else f' (also in {self.root / other})'}; "
                                          f"regenerate it with {regen}")
                self._index[key] = (name, i)
                self._by_config.setdefault(key.split("-")[0], []).append(key)

    def _read_file(self, name: str, info: dict, mpath: Path) -> dict:
        """One file of the manifest read and checked (engine version, SHA-256, gzip'd JSON of this format, the row
        count, each privacy and data block against its digest); ``StaleStoreError`` naming the file and the command
        that regenerates it otherwise."""
        path = self.root / name
        # a file of its own computation (a real-image grid) names the commands that regenerate it
        regen = info.get("regenerate") or REGENERATE_COMMAND
        version = info.get("engine_version")
        if version != ENGINE_VERSION:
            raise StaleStoreError(
                f"results store {path} was written by engine version {version}, but this checkout's engine is "
                f"version {ENGINE_VERSION} (fedtrain.config.ENGINE_VERSION): its rows no longer reproduce. "
                f"Regenerate the store with {regen}")
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise StaleStoreError(f"results store file {path} (listed in {mpath}) is missing or unreadable "
                                  f"({exc.strerror or exc}); regenerate it with {regen}") from None
        if hashlib.sha256(raw).hexdigest() != info.get("sha256"):
            raise StaleStoreError(f"results store file {path} does not match the SHA-256 in {mpath} (edited or "
                                  f"truncated); regenerate it with {regen}")
        try:
            doc = json.loads(gzip.decompress(raw).decode("utf-8"))
        except (OSError, EOFError, UnicodeDecodeError, ValueError) as exc:
            raise StaleStoreError(f"results store file {path} is not gzip'd JSON ({type(exc).__name__}); "
                                  f"regenerate it with {regen}") from None
        if not isinstance(doc, dict):
            raise StaleStoreError(f"results store file {path} is not a packed store (a JSON "
                                  f"{type(doc).__name__}); regenerate it with {regen}")
        if doc.get("format") != FORMAT:
            raise StaleStoreError(f"results store file {path} has format {doc.get('format')!r}, not {FORMAT!r}; "
                                  f"regenerate it with {regen}")
        if doc.get("engine_version") != ENGINE_VERSION:
            raise StaleStoreError(f"results store {path} was written by engine version {doc.get('engine_version')}"
                                  f", not {ENGINE_VERSION}; regenerate it with {regen}")
        rows = doc.get("rows")
        if not isinstance(rows, list) or not isinstance(doc.get("privacy"), dict) \
                or not isinstance(doc.get("data"), dict):
            raise StaleStoreError(f"results store file {path} lacks its rows, privacy or data blocks; "
                                  f"regenerate it with {regen}")
        if not len(rows) == doc.get("rows_count") == info.get("rows"):
            raise StaleStoreError(f"results store file {path} holds {len(rows)} rows, its header says "
                                  f"{doc.get('rows_count')!r} and {mpath} says {info.get('rows')!r}; regenerate "
                                  f"it with {regen}")
        for kind in ("privacy", "data"):
            for digest, block in doc[kind].items():
                if _digest(block) != digest:
                    raise StaleStoreError(f"results store file {path}: its {kind} block {digest} does not match "
                                          f"its digest (edited); regenerate it with {regen}")
        return doc

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
        if isinstance(config_or_key, str) and ROW_KEY_PATTERN.match(config_or_key):
            return config_or_key if config_or_key in self._index else None
        if isinstance(config_or_key, OptionsConfig) and identity:
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
        packed = doc["rows"][i]
        where = f"{key} of {self.root / name}"
        row = unpack_row(doc, packed)
        check_row_key(row, key, where)
        check_digest(packed, where)
        # rows of one privacy block, data and budget share one check (what ClaimChecker reads of the config: its
        # budget, accountant, batch size, dataset and method)
        c = row["config"]
        claim = (name, packed["privacy"], packed["data"], repr([c.get(f) for f in _CLAIM_FIELDS]),
                 repr((row.get("extras") or {}).get("select_eps")))
        if claim not in self._claims_done:
            self.claims.check(row, where)
            self._claims_done.add(claim)
        return row

    def get(self, config_or_key: RunConfig | str, identity: "dict | None" = None) -> "RunResult | None":
        """The stored run: a :class:`~fedtrain.engine.RunResult`, or for a client-level row a
        :class:`~fedtrain.clientdp.trainer.FedHDPResult` (both import torch)."""
        row = self.row_dict(config_or_key, identity)
        if row is None:
            return None
        if row_kind(row) == CLIENT:
            from fedtrain.clientdp.trainer import FedHDPResult

            return FedHDPResult.from_dict(row)
        from fedtrain.engine import RunResult

        for k in DROPPED_FIELDS:
            row.setdefault(k, None)
        return RunResult.from_dict(row)

    def unit_of(self, key: str) -> str:
        """The privacy unit of the rows of the file holding row ``key`` (its manifest entry's ``unit``; default
        :data:`~fedtrain.methods.registry.RECORD`)."""
        return self.manifest["files"][self._index[key][0]].get("unit", RECORD)

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
        what = (f"r={c.effective_ratio:g}" if c.spec.unit == CLIENT else f"eps={c.eps} lam={c.lam} lr={c.lr}")
        return (f"the committed results store {self.root} has no row for {len(configs)} configuration(s), e.g. "
                f"{c.method} on {c.dataset} {what} rounds={c.rounds} seed={c.seed}; "
                f"compute them with {REGENERATE_COMMAND}, or run the grid into a store of your own "
                "(fedtrain.sweep.run_sweep(configs, store='results/work/mine'))")

    def select(self, configs: "list[RunConfig]") -> "list[RunResult]":
        """The stored results of ``configs`` (in their order); ``ValueError`` naming the command if any is missing."""
        configs = list(configs)
        missing = [c for c in configs if not self.has(c)]
        if missing:
            raise ValueError(self.missing_message(missing))
        return [self.get(c) for c in configs]

    def rows(self, kind: str = RECORD, **where: Any) -> "Iterator[RunResult]":
        """Every stored run of privacy unit ``kind`` (as :meth:`ResultsStore.rows
        <fedtrain.results.ResultsStore.rows>`: the record-level runs unless ``kind="client"``), optionally filtered on
        config fields (``store.rows(method="mrmtl")``)."""
        for key in self.keys():
            if self.unit_of(key) != kind:
                continue
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
