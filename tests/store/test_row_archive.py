"""A working store's rows archived byte for byte and restored on a fresh store (fedtrain.store.archive)."""
from __future__ import annotations

import gzip
import json

import pytest

from fedtrain.config import RunConfig
from fedtrain.results import ResultsStore, ResultsStoreError
from fedtrain.store.archive import archive_rows, restore_rows
from fedtrain.testing import fake_result


def _store(folder, n=3):
    store = ResultsStore(folder, command="grid", commit="a" * 40)
    for i in range(n):
        store.put(fake_result(RunConfig(dataset="school", method="mrmtl", lam=0.1 * (i + 1)), 0.2 + i / 10,
                              identity={"generator": "test", "seed": 0}))
    return store


def test_archive_restores_every_row_byte_for_byte(tmp_path):
    _store(tmp_path / "a")
    archive = tmp_path / "out" / "grid.jsonl.gz"
    assert archive_rows(tmp_path / "a", archive) == 3
    first = archive.read_bytes()
    assert archive_rows(tmp_path / "a", archive) == 3 and archive.read_bytes() == first  # no time stamp
    assert restore_rows(archive, tmp_path / "b") == 3
    for f in (tmp_path / "a").glob("*.json"):
        assert (tmp_path / "b" / f.name).read_bytes() == f.read_bytes()
    fresh = ResultsStore(tmp_path / "b")
    assert sorted(fresh.keys()) == sorted(ResultsStore(tmp_path / "a").keys())
    assert [r.test_metric for r in fresh.rows()] == [r.test_metric for r in ResultsStore(tmp_path / "a").rows()]


def test_restore_keeps_rows_the_store_has_and_fills_the_rest(tmp_path):
    _store(tmp_path / "a")
    archive = tmp_path / "grid.jsonl.gz"
    archive_rows(tmp_path / "a", archive)
    _store(tmp_path / "b", n=1)
    kept = {f.name: f.read_bytes() for f in (tmp_path / "b").glob("*.json")}
    assert restore_rows(archive, tmp_path / "b") == 2
    assert all((tmp_path / "b" / name).read_bytes() == data for name, data in kept.items())
    assert restore_rows(archive, tmp_path / "b") == 0  # idempotent


def test_a_tampered_row_in_the_archive_is_refused(tmp_path):
    _store(tmp_path / "a", n=1)
    archive = tmp_path / "grid.jsonl.gz"
    archive_rows(tmp_path / "a", archive)
    row = json.loads(gzip.decompress(archive.read_bytes()))
    row["config"]["lam"] = 0.5  # no longer hashes to the key it carries
    archive.write_bytes(gzip.compress((json.dumps(row) + "\n").encode()))
    with pytest.raises(ResultsStoreError, match="line 1.*filed under key"):
        restore_rows(archive, tmp_path / "b")
    assert not (tmp_path / "b").exists() or not list((tmp_path / "b").glob("*.json"))


def test_missing_or_damaged_archive_names_the_file(tmp_path):
    with pytest.raises(ResultsStoreError, match="no row archive at .*nope.jsonl.gz"):
        restore_rows(tmp_path / "nope.jsonl.gz", tmp_path / "b")
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(ResultsStoreError, match="bad.jsonl.gz is damaged"):
        restore_rows(bad, tmp_path / "b")
    with pytest.raises(ResultsStoreError, match="no working store"):
        archive_rows(tmp_path / "none", tmp_path / "x.jsonl.gz")
