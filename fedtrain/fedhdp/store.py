"""Client-level runs in a results folder, keyed as the cross-silo runs are (:mod:`fedtrain.results`).

A finished run (:meth:`FedHDPResult.to_dict <fedtrain.fedhdp.trainer.FedHDPResult.to_dict>`) is filed as
``<folder>/<row key>.json`` with the row key of :func:`fedtrain.results.row_key`: the configuration's key
(:meth:`FedHDPConfig.key <fedtrain.fedhdp.config.FedHDPConfig.key>`, which holds
:data:`~fedtrain.config.ENGINE_VERSION`) and the digest of the identity of the data it was trained on.  So a change
of the engine gives every run a new key (old rows are not served), and a run on one copy of a dataset is never
served for another.  Reading a row checks that its stored config and data identity hash to the key it is filed
under (:func:`check_row`); writes are atomic (a reader sees the old file or the new one).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from fedtrain.data.base import data_identity
from fedtrain.fedhdp.config import FedHDPConfig
from fedtheory.atomic_io import write_text_atomic
from fedtrain.results import ResultsStoreError, row_key

__all__ = ["ROW_KEY", "run_key", "row_path", "check_row", "read_row", "write_row", "stored_rows"]

#: The names of row files (``<16 hex>-<12 hex>``); other files in a folder are not rows (:func:`stored_rows`).
ROW_KEY = re.compile(r"^[0-9a-f]{16}-[0-9a-f]{12}$")


def run_key(config: FedHDPConfig, identity: dict) -> str:
    """``<config.key()>-<data digest>``: :func:`fedtrain.results.row_key` of a client-level configuration."""
    return row_key(config, identity)


def row_path(folder: str | Path, config: FedHDPConfig, identity: dict) -> Path:
    """Where the run of ``config`` on data ``identity`` is filed in ``folder``."""
    return Path(folder) / f"{run_key(config, identity)}.json"


def check_row(row: dict, filed_as: str, where: str) -> None:
    """Raise :class:`~fedtrain.results.ResultsStoreError` naming ``where`` unless the row's config and data identity
    hash to ``filed_as``."""
    try:
        actual = run_key(FedHDPConfig.from_dict(row["config"]), data_identity(row.get("data") or {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultsStoreError(f"client-level row {where} cannot be checked ({exc}); delete it to recompute the "
                                "run") from None
    if actual != filed_as:
        raise ResultsStoreError(f"client-level row {where} is filed under key {filed_as} but its config and data hash "
                                f"to {actual} (a row of another engine version, or copied over another?); delete it "
                                "to recompute the run")


def read_row(path: str | Path) -> dict:
    """The row stored at ``path``, checked against the key it is filed under."""
    path = Path(path)
    try:
        row = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ResultsStoreError(f"client-level row {path} is unreadable ({type(exc).__name__}); delete it to "
                                "recompute the run") from None
    check_row(row, path.stem, str(path))
    return row


def write_row(folder: str | Path, row: dict) -> Path:
    """File ``row`` (a :meth:`FedHDPResult.to_dict`) atomically under its key; returns the path."""
    config = FedHDPConfig.from_dict(row["config"])
    identity = data_identity(row.get("data") or {})
    path = row_path(folder, config, identity)
    write_text_atomic(path, json.dumps({**row, "key": path.stem}, allow_nan=True))
    return path


def stored_rows(folder: str | Path) -> list[dict]:
    """Every row filed in ``folder`` under a row key (each checked against it), in key order; files with other
    names (rows of an older keying, ``tools/migrate_fedhdp_keys.py``) are not read."""
    return [read_row(p) for p in sorted(Path(folder).glob("*.json")) if ROW_KEY.match(p.stem)]
