"""Move FedHDP's committed claim runs from ``book/data/fedhdp_claims*.json`` into the committed results store.

Before, the FedHDP chapter read its runs from two JSON files beside the book (``book/data/fedhdp_claims.json``: the
claims at scale ``claims`` on the digit stand-in; ``book/data/fedhdp_claims_fashion.json``: grid ``claims-fashion`` on
Fashion-MNIST), read with no staleness or integrity check.  This script files each run in a working
:class:`fedtrain.results.ResultsStore` (the one row format of both privacy units, under its row key: the
configuration's key, which holds the engine version, and the data's identity the run records) and packs them with
:func:`fedtrain.book_results.pack_client_grid` into ``results/<name>.json.gz`` under ``results/MANIFEST.json``, where
:class:`fedtrain.results.CommittedStore` checks them as it checks every committed file: the engine version, the
file's SHA-256, each row's key and digest, and each row's privacy claim recomputed on reading.

The numbers are untouched: each run's fields go through :class:`~fedtrain.clientdp.trainer.FedHDPResult` unchanged
(checked: the packed rows, read back, equal the file's runs field by field).  Each row gets the provenance the file
knew: the commit(s) that computed it (the fashion file's ``rows_commit``; "not recorded" for the digit runs), the
command that computed it, its seconds (its ``wall_time``); the file's header is kept as the packed file's
``header`` with ``migrated_from``.  Run from the repository root::

    python tools/migrate_fedhdp_claims.py [--out results] [--remove]

``--remove`` deletes the two JSON files once their runs are packed and verified.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from fedtrain.book_results import client_grid_rows, committed_store, pack_client_grid
from fedtrain.clientdp.trainer import FedHDPResult
from fedtrain.config import ENGINE_VERSION
from fedtrain.results import ResultsStore

#: committed name -> (the old file, the command that computed its runs)
SOURCES = {
    "fedhdp-claims-digits": ("book/data/fedhdp_claims.json", "fedtrain fedhdp-claims --scale claims"),
    "fedhdp-claims-fashion": ("book/data/fedhdp_claims_fashion.json",
                              "python benchmarks/run_real_image_grids.py claims-fashion"),
}
#: The fields of a run in the old files (FedHDPResult.to_dict without the curves, which they did not keep).
FIELDS = ("config", "label", "metrics", "privacy", "wall_time", "never_sampled", "data", "clip_final")


def migrate(name: str, out: Path) -> int:
    """Pack the runs of ``name``'s old file into ``out`` and check them against the file; returns the run count."""
    path, command = SOURCES[name]
    old = json.loads(Path(path).read_text(encoding="utf-8"))
    header = {k: v for k, v in old.items() if k != "runs"}
    commit = (header.get("provenance") or {}).get("rows_commit") or "not recorded"
    with tempfile.TemporaryDirectory() as tmp:
        work = ResultsStore(tmp, command=command)
        for run in old["runs"]:
            row = {k: v for k, v in run.items() if k != "key"}
            row["provenance"] = {"engine_version": ENGINE_VERSION, "commit": commit, "command": command,
                                 "seconds": float(run["wall_time"]), "machine": "not recorded"}
            work.put(FedHDPResult.from_dict(row))
            if "key" in run and not work.has(run["key"]):
                raise SystemExit(f"{path}: run filed under {run['key']} has another row key now")
        pack_client_grid(name, work=tmp, out=out, header={**header, "migrated_from": path},
                         command=f"python tools/migrate_fedhdp_claims.py --out {out}")
    packed = client_grid_rows(committed_store(out), name)
    if len(packed) != len(old["runs"]):
        raise SystemExit(f"{name}: packed {len(packed)} rows, the file holds {len(old['runs'])}")
    for run, row in zip(old["runs"], packed):
        for f in FIELDS:
            if run[f] != row[f]:
                raise SystemExit(f"{name}: field {f} of {row['key']} differs from {path}")
    return len(packed)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="results", help="the committed results store (default results)")
    p.add_argument("--remove", action="store_true", help="delete the old files once packed and verified")
    args = p.parse_args(argv)
    for name in SOURCES:
        n = migrate(name, Path(args.out))
        print(f"{name}: {n} runs packed into {args.out}/{name}.json.gz, each equal to {SOURCES[name][0]}'s")
    if args.remove:
        for path, _ in SOURCES.values():
            Path(path).unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
