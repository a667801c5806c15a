"""FedHDP's committed rows live in the committed results store ``results/`` under its manifest and get its checks:
a stale engine version, an edited file, an edited row and a row whose ε no longer recomputes are each refused, in
one line naming the file; the book reads them through the same reader as every other chapter."""
from __future__ import annotations

import gzip
import hashlib
import json
import shutil

import pytest

from fedtrain.book_results import committed_store
from fedtrain.config import ENGINE_VERSION
from fedtrain.presets import FEDHDP_COMMITTED, fedhdp_committed_configs
from fedtrain.results import DEFAULT_RESULTS_DIR, MANIFEST, ResultsStoreError, StaleStoreError

NAME = "fedhdp-claims-digits"
FILE = f"{NAME}.json.gz"


def _copy(tmp_path):
    """``results/`` with only FedHDP's digit file in its manifest (the large files left out)."""
    out = tmp_path / "results"
    out.mkdir()
    m = json.loads((DEFAULT_RESULTS_DIR / MANIFEST).read_text())
    m["files"] = {FILE: m["files"][FILE]}
    (out / MANIFEST).write_text(json.dumps(m))
    shutil.copy(DEFAULT_RESULTS_DIR / FILE, out / FILE)
    return out


def _rewrite(out, edit):
    """Edit the packed document of the digit file and reseal the manifest's SHA-256 (so only the row check is left)."""
    doc = json.loads(gzip.decompress((out / FILE).read_bytes()))
    edit(doc)
    raw = gzip.compress(json.dumps(doc).encode())
    (out / FILE).write_bytes(raw)
    m = json.loads((out / MANIFEST).read_text())
    m["files"][FILE]["sha256"] = hashlib.sha256(raw).hexdigest()
    (out / MANIFEST).write_text(json.dumps(m))


def test_every_committed_fedhdp_grid_is_in_the_manifest_complete_and_current():
    store = committed_store()
    for name in FEDHDP_COMMITTED:
        info = store.manifest["files"][f"{name}.json.gz"]
        assert info["unit"] == "client" and info["engine_version"] == ENGINE_VERSION
        rows = store.client_rows(name)
        assert [r["config_key"] for r in rows] == [c.key() for c in fedhdp_committed_configs(name)]
        assert info["rows"] == len(rows) == info["grid_runs"] and info["missing"] == 0
    assert not list((DEFAULT_RESULTS_DIR.parent / "book" / "data").glob("fedhdp_claims*.json"))


def test_a_stale_engine_version_is_refused(tmp_path):
    out = _copy(tmp_path)
    m = json.loads((out / MANIFEST).read_text())
    m["files"][FILE]["engine_version"] = ENGINE_VERSION - 1
    (out / MANIFEST).write_text(json.dumps(m))
    with pytest.raises(StaleStoreError, match=f"{FILE} was written by engine version {ENGINE_VERSION - 1}"):
        committed_store(out)


def test_an_edited_file_is_refused(tmp_path):
    out = _copy(tmp_path)
    (out / FILE).write_bytes((out / FILE).read_bytes()[:-10])
    with pytest.raises(StaleStoreError, match="does not match the SHA-256"):
        committed_store(out)


def test_an_edited_metric_is_refused_by_the_rows_digest(tmp_path):
    out = _copy(tmp_path)
    _rewrite(out, lambda doc: doc["rows"][3]["metrics"].update(acc_g=99.0))
    store = committed_store(out)
    with pytest.raises(ResultsStoreError, match=f"{FILE} does not match its digest"):
        store.client_rows(NAME)


def test_an_edited_epsilon_is_refused_by_its_recomputation(tmp_path):
    """The privacy block (shared by digest) halved ε of the private group: the digest of the block is resealed, so
    only the recomputed claim can catch it."""
    out = _copy(tmp_path)

    def halve(doc):
        from fedtrain.store.committed import _digest

        blocks = {}
        for d, block in doc["privacy"].items():
            groups = block["privacy"]["groups"]
            if "private" in groups and isinstance(groups["private"]["epsilon"], float):
                groups["private"]["epsilon"] /= 2
                block["privacy"]["epsilon"] = groups["private"]["epsilon"]
            blocks[d] = (_digest(block), block)
        doc["privacy"] = {new: block for new, block in blocks.values()}
        for row in doc["rows"]:
            row["privacy"] = blocks[row["privacy"]][0]
        from fedtrain.store.integrity import seal

        doc["rows"] = [seal({k: v for k, v in row.items() if k != "digest"}) for row in doc["rows"]]

    _rewrite(out, halve)
    store = committed_store(out)
    with pytest.raises(ResultsStoreError, match=f"{FILE}.*private group 'private' claims eps="):
        store.client_rows(NAME)
