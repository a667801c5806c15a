"""Re-key a folder of client-level runs (FedHDP and its baselines) to the project's row keys.

Folders written by :func:`fedtrain.fedhdp.experiments.run_experiment` before its runs were keyed like the results
store's filed each run as ``<20 hex digits>.json``: the SHA-256 of the configuration's JSON alone, without the
engine version or the data.  They are now filed in a :class:`fedtrain.results.ResultsStore` under
:func:`fedtrain.results.row_key`: the configuration's
key (:meth:`FedHDPConfig.key <fedtrain.clientdp.config.FedHDPConfig.key>`, which holds the engine version) and the
digest of the identity of the data the run was trained on (recorded in the row).

Each old row is verified before it moves: its stored configuration must round-trip through
:class:`~fedtrain.clientdp.config.FedHDPConfig` unchanged, hash to the name it is filed under with the old key, and
record its data's identity (a row written before identities were recorded names only a file and a checksum that
the loaders no longer compute, so which data it ran on cannot be checked: it stays, to be recomputed), and its
fields must round-trip through :class:`~fedtrain.clientdp.trainer.FedHDPResult`.  A verified row is stored
atomically under its new key (its numbers untouched; ``key`` is added), read back checked, and the old file
removed; a row that fails a check is left where it is and reported (exit status 1).
Files with other names are not touched.  Run from the repository root::

    python tools/migrate_fedhdp_keys.py FOLDER [--dry-run]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

from fedtrain.data.base import data_identity
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.clientdp.trainer import FedHDPResult
from fedtrain.results import ResultsStore, row_key

OLD_KEY = re.compile(r"^[0-9a-f]{20}$")


def old_key(config_dict: dict) -> str:
    """The key a row was filed under before: 20 hex digits of the SHA-256 of the config's JSON (sorted keys)."""
    return hashlib.sha256(json.dumps(config_dict, sort_keys=True).encode()).hexdigest()[:20]


def verify(path: Path) -> tuple[FedHDPResult, str]:
    """The run stored at ``path`` and its new row key, or ``ValueError`` saying which check failed."""
    row = json.loads(path.read_text())
    config = FedHDPConfig.from_dict(row["config"])
    if config.to_dict() != row["config"]:
        raise ValueError("its config does not round-trip through FedHDPConfig")
    if old_key(row["config"]) != path.stem:
        raise ValueError(f"its config hashes to {old_key(row['config'])}, not to the name it is filed under")
    identity = (row.get("data") or {}).get("identity")
    if not identity:  # a row written before identities were recorded: which data it ran on is not known
        raise ValueError("it does not record the identity of its data (written before data identities were "
                         "recorded); recompute the run")
    result = FedHDPResult.from_dict(row)
    if result.to_dict() != row:
        raise ValueError("its fields do not round-trip through FedHDPResult")
    return result, row_key(config, data_identity(row["data"]))


def migrate(folder: str | Path, *, dry_run: bool = False, log=print) -> tuple[int, int]:
    """Re-key every old row of ``folder``; returns ``(moved, refused)``."""
    moved = refused = 0
    store = ResultsStore(folder)
    for path in sorted(Path(folder).glob("*.json")):
        if not OLD_KEY.match(path.stem):
            continue
        try:
            result, new = verify(path)
        except (OSError, KeyError, TypeError, ValueError) as exc:
            log(f"{path.name}: left in place ({exc})")
            refused += 1
            continue
        log(f"{path.name} -> {new}.json" + (" (dry run)" if dry_run else ""))
        if dry_run:
            moved += 1
            continue
        if not store.has(new):
            store.put(result)
        store.get(new)  # filed (now or before) and checked against its key
        path.unlink()
        moved += 1
    return moved, refused


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--dry-run", action="store_true", help="verify and print the new names; move nothing")
    args = p.parse_args(argv)
    moved, refused = migrate(args.folder, dry_run=args.dry_run)
    print(f"{moved} row(s) re-keyed, {refused} left in place")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
