"""Re-key the committed results store (``results/``) from configuration keys to row keys.

A row of format ``fedbook-results-1`` is filed under its configuration's key alone.  Format 2 files it under
:func:`fedtrain.results.row_key`: the configuration's key and the identity of the data it was trained on.  The
committed rows' data are known: School rows record the file they read and its SHA-256 (checked here against the
published checksum), and every other row was trained on generated data (a stand-in or the Gaussian model), whose
identity is the generator and its options, read from the row's own configuration.  The rows' numbers are not
touched (the test metric and curve keep their bits); only ``data`` gains ``identity``, ``key`` becomes the row key
and ``config_key`` is added.  Run from the repository root::

    python tools/migrate_results_keys.py [results]

then ``pytest tests/store/test_results_store.py`` recomputes a random sample of the re-keyed rows.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import sys
import time
from pathlib import Path

from fedtrain.config import RunConfig
from fedtrain.data.registry import generator_identity
from fedtrain.data.school import SCHOOL_SHA256
from fedtheory.atomic_io import write_json_gz_atomic, write_text_atomic
from fedtrain.results import FORMAT, MANIFEST, pack_rows, row_key, unpack_row

OLD_FORMAT = "fedbook-results-1"


def identity_of(row: dict) -> dict:
    """The identity of a committed row's data (module docstring)."""
    config = RunConfig.from_dict(row["config"])
    data = row["data"]
    if data.get("file"):
        if data.get("sha256") != SCHOOL_SHA256 or config.dataset != "school":
            raise ValueError(f"row {row['key']}: data file {data.get('file')} with an unexpected checksum")
        return {"files": {Path(data["file"]).name: data["sha256"]}}
    identity = generator_identity(config.dataset, dict(config.dataset_options))
    if identity is None or data.get("real"):
        raise ValueError(f"row {row['key']}: generated data expected for dataset {config.dataset}")
    return identity


def migrate(root: Path) -> dict:
    manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    if manifest["format"] != OLD_FORMAT:
        raise SystemExit(f"{root / MANIFEST} has format {manifest['format']!r}; this migrates {OLD_FORMAT!r}")
    counts = {}
    for fname, info in manifest["files"].items():
        raw = (root / fname).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == info["sha256"], fname
        doc = json.loads(gzip.decompress(raw).decode("utf-8"))
        rows = []
        for packed in doc["rows"]:
            row = unpack_row(doc, packed)
            config = RunConfig.from_dict(row["config"])
            assert row["key"] == config.key(), (fname, row["key"])
            identity = identity_of(row)
            row["data"] = {**row["data"], "identity": identity}
            row["config_key"], row["key"] = config.key(), row_key(config, identity)
            rows.append(row)
        header = {k: doc[k] for k in ("name", "dataset", "scale", "figures", "preset")}
        new = pack_rows(rows, **header)
        assert new["metric_float32"] == doc["metric_float32"] and new["rows_count"] == doc["rows_count"]
        for a, b in zip(doc["rows"], new["rows"]):  # the numbers keep their bits
            assert a["test_metric"] == b["test_metric"] and a["curve"] == b["curve"], a["key"]
            assert doc["privacy"][a["privacy"]] == new["privacy"][b["privacy"]], a["key"]
        write_json_gz_atomic(root / fname, new)
        raw = (root / fname).read_bytes()
        info.update(bytes=len(raw), sha256=hashlib.sha256(raw).hexdigest())
        counts[fname] = len(rows)
    manifest["format"] = FORMAT
    manifest["key_migration"] = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()), "from_format": OLD_FORMAT, "to_format": FORMAT,
        "command": "python tools/migrate_results_keys.py",
        "what": "rows re-keyed by configuration and data identity (School: the file's SHA-256; stand-ins and the "
                "Gaussian model: generator and options); numbers unchanged; a random sample recomputed by "
                "tests/store/test_results_store.py"}
    write_text_atomic(root / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True, allow_nan=False) + "\n")
    return counts


if __name__ == "__main__":
    print(migrate(Path(sys.argv[1] if len(sys.argv) > 1 else "results")))
