"""Keep the privacy ledger in the committed results store (format 3) and seal every row with its digest.

Format 2 (``fedbook-results-2``) dropped each row's ledger (per-silo sampling rates, DP-SGD steps, selections), so
a committed row's ε could not be recomputed on read.  Format 3 keeps it in the row's privacy block, with the rdp
order hint (:func:`fedtrain.store.claims.eps_orders`), and seals every row (:mod:`fedtrain.store.integrity`).  The
ledger of a committed row is rebuilt from what determined it when it ran:

* sampling rates ``q_k = min(1, B/n_k)`` (:func:`fedtrain.ledger.sample_rates`) of the silo sizes of the row's data,
  loaded again (the data's identity is checked against the row's), or read from the row archive of a real-image
  grid (``results/raw/<grid>.jsonl.gz``, which holds the rows as they were stored, ledger included);
* DP-SGD steps: the row's ``steps``; selections: IFCA's ``extras.selections`` per silo, else 0.

A rebuilt ledger is accepted only if the accountant, given it, gives back **exactly** (the same float) the
``eps_spent`` the engine stored for every private silo.  The numbers the book reads are not touched: every test
metric and curve keeps its bits (asserted).  The row archives get the same hint and seal.  Run from the repository
root::

    python tools/migrate_results_ledger.py [results]
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from fedtheory.atomic_io import write_bytes_atomic, write_json_gz_atomic, write_text_atomic
from fedtheory.privacy.accountants import get_accountant
from fedtheory.privacy.silos import silo_event
from fedtrain.config import RunConfig
from fedtrain.data.base import data_identity, identity_digest
from fedtrain.encoding import decode_floats
from fedtrain.ledger import sample_rates
from fedtrain.results import MANIFEST, pack_rows, unpack_row
from fedtrain.store.claims import eps_orders
from fedtrain.store.integrity import seal

OLD_FORMAT, NEW_FORMAT = "fedbook-results-2", "fedbook-results-3"
_SIZES: dict[str, np.ndarray] = {}
_EPS: dict[tuple, float] = {}
_ORDERS: dict = {}


def silo_sizes(row: dict) -> np.ndarray:
    from fedtrain.sweep import load_config_data

    ident = identity_digest(data_identity(row["data"]))
    if ident not in _SIZES:
        config = RunConfig.from_dict(row["config"])
        data = load_config_data(config)
        if identity_digest(data.identity()) != ident:
            raise SystemExit(f"row {row['key']}: the data loaded again are not the data it was trained on")
        _SIZES[ident] = np.asarray(data.train_sizes)
    return _SIZES[ident]


def check_exact(row: dict) -> int:
    """Assert that the ledger gives back the stored eps_spent exactly; return the number of private silos."""
    z = np.asarray(decode_floats(row["noise_multipliers"]), dtype=float)
    spent = np.asarray(decode_floats(row["eps_spent"]), dtype=float)
    delta = np.asarray(decode_floats(row["delta"]), dtype=float)
    led = row["ledger"]
    se = (row.get("extras") or {}).get("select_eps") or [0.0] * z.size
    n = 0
    for i in range(z.size):
        if not z[i] > 0:
            continue
        key = (float(z[i]), float(led["sample_rates"][i]), int(led["dpsgd_steps"][i]), int(led["selections"][i]),
               float(se[i]), float(delta[i]), row["accountant"])
        if key not in _EPS:
            _EPS[key] = get_accountant(key[6]).epsilon(silo_event(*key[:5]), key[5])
        if _EPS[key] != spent[i]:
            raise SystemExit(f"row {row['key']} silo {i}: the rebuilt ledger gives eps={_EPS[key]!r}, the row "
                             f"stored {spent[i]!r}")
        n += 1
    return n


def read_archive(path: Path) -> dict[str, dict]:
    if not path.is_file():
        return {}
    return {r["key"]: r for r in map(json.loads, gzip.decompress(path.read_bytes()).decode().splitlines())}


def migrate_archive(path: Path) -> int:
    """Add the rdp order hint and the digest to every line of a row archive (numbers untouched)."""
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()
    out = []
    for line in lines:
        row = json.loads(line)
        old = json.loads(line)
        row.pop("digest", None)
        check_exact(row)
        row["eps_orders"] = eps_orders(row, _ORDERS)
        seal(row)
        assert {k: v for k, v in row.items() if k not in ("eps_orders", "digest")} == old, row["key"]
        out.append(json.dumps(row, sort_keys=True, allow_nan=False))
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        gz.write(("\n".join(out) + "\n").encode("utf-8"))
    write_bytes_atomic(path, buf.getvalue())
    return len(out)


def migrate(root: Path) -> dict:
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    if manifest["format"] != OLD_FORMAT:
        raise SystemExit(f"{root / MANIFEST} has format {manifest['format']!r}; this migrates {OLD_FORMAT!r}")
    archived: dict[str, dict] = {}
    for path in sorted((root / "raw").glob("*.jsonl.gz")):
        archived.update(read_archive(path))
    report = {}
    for fname, info in manifest["files"].items():
        t0 = time.perf_counter()
        raw = (root / fname).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == info["sha256"], fname
        doc = json.loads(gzip.decompress(raw).decode("utf-8"))
        rows, silos, from_archive = [], 0, 0
        for packed in doc["rows"]:
            row = unpack_row(doc, packed)
            z = decode_floats(row["noise_multipliers"])
            if row["key"] in archived:
                led = archived[row["key"]]["ledger"]
                assert archived[row["key"]]["test_metric"] == row["test_metric"], row["key"]
                from_archive += 1
            else:
                config = RunConfig.from_dict(row["config"])
                q = sample_rates(silo_sizes(row), config.batch_size)
                sel = int((row.get("extras") or {}).get("selections", 0))
                led = {"sample_rates": [float(v) for v in q], "dpsgd_steps": [int(v) for v in row["steps"]],
                       "selections": [sel] * len(z)}
            row["ledger"] = led
            silos += check_exact(row)
            row["eps_orders"] = eps_orders(row, _ORDERS)
            rows.append(seal(row))  # checked exactly above; pack_rows takes sealed rows only
        header = {k: v for k, v in doc.items() if k not in (
            "format", "engine_version", "rows_count", "seconds", "commits", "commands", "metric_float32",
            "dropped_fields", "privacy", "data", "rows")}
        new = pack_rows(rows, **header)
        assert new["metric_float32"] == doc["metric_float32"] and new["rows_count"] == doc["rows_count"]
        assert new["seconds"] == doc["seconds"] and new["commits"] == doc["commits"], fname
        for a, b in zip(doc["rows"], new["rows"]):  # the numbers keep their bits
            assert a["key"] == b["key"] and a["test_metric"] == b["test_metric"] and a["curve"] == b["curve"], a["key"]
            assert a["config"] == b["config"] and a.get("extras") == b.get("extras"), a["key"]
            pa, pb = doc["privacy"][a["privacy"]], new["privacy"][b["privacy"]]
            assert all(pa[k] == pb[k] for k in pa), a["key"]
        write_json_gz_atomic(root / fname, new)
        raw = (root / fname).read_bytes()
        info.update(bytes=len(raw), sha256=hashlib.sha256(raw).hexdigest())
        report[fname] = {"rows": len(rows), "private silos checked exactly": silos, "ledgers from archive":
                         from_archive, "seconds": round(time.perf_counter() - t0, 1)}
        print(fname, report[fname], flush=True)
    for path in sorted((root / "raw").glob("*.jsonl.gz")):
        report[f"raw/{path.name}"] = {"rows": migrate_archive(path)}
    manifest["format"] = NEW_FORMAT
    manifest["ledger_migration"] = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()), "from_format": OLD_FORMAT, "to_format": NEW_FORMAT,
        "command": "python tools/migrate_results_ledger.py",
        "what": "each row's privacy ledger (sampling rates from its data's silo sizes, or from the row archive; "
                "steps; selections) kept so its eps is recomputed on read, the rdp order hint added, every row "
                "sealed by its digest; each rebuilt ledger gives back the stored eps_spent exactly; test metrics "
                "and curves unchanged"}
    write_text_atomic(root / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True, allow_nan=False) + "\n")
    return report


if __name__ == "__main__":
    print(migrate(Path(sys.argv[1] if len(sys.argv) > 1 else "results")))
