"""fedtheory.atomic_io, the one atomic writer of the calibration cache and the results stores: whole files or the
old ones, ordinary file modes, and a killed writer's temporary files removed once they are stale."""
from __future__ import annotations

import gzip
import json
import os
import time

import pytest

from fedtheory import atomic_io as io_


def test_a_write_leaves_the_file_with_an_ordinary_mode_and_no_temporary(tmp_path):
    path = tmp_path / "row.json"
    io_.write_text_atomic(path, "é")
    assert path.read_text(encoding="utf-8") == "é"
    assert os.stat(path).st_mode & 0o777 == io_.file_mode()  # not mkstemp's 0600
    assert [p.name for p in tmp_path.iterdir()] == ["row.json"]


def test_an_interrupted_write_keeps_the_old_file_and_removes_its_temporary(tmp_path, monkeypatch):
    path = tmp_path / "row.json"
    io_.write_text_atomic(path, "old")

    def interrupted(*a, **k):  # between writing the temporary file and renaming it
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        io_.write_text_atomic(path, "new")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["row.json"]


def test_gzip_json_is_deterministic_and_refuses_nan(tmp_path, monkeypatch):
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    io_.write_json_gz_atomic(a, {"x": [1.5, 2], "y": None})
    later = time.time() + 1000
    monkeypatch.setattr(time, "time", lambda: later)  # a time stamp in the gzip header would differ now
    io_.write_json_gz_atomic(b, {"y": None, "x": [1.5, 2]})
    monkeypatch.undo()
    assert a.read_bytes() == b.read_bytes()
    assert json.loads(gzip.decompress(a.read_bytes())) == {"x": [1.5, 2], "y": None}
    with pytest.raises(ValueError):
        io_.write_json_gz_atomic(a, {"x": float("nan")})
    assert json.loads(gzip.decompress(a.read_bytes())) == {"x": [1.5, 2], "y": None}  # untouched


def test_only_stale_temporaries_are_removed(tmp_path):
    old, live, row = tmp_path / ".k.json.tmp-killed", tmp_path / ".k.json.tmp-live", tmp_path / "k.json"
    for p in (old, live, row):
        p.write_text("x")
    past = time.time() - io_.STALE_TEMP_SECONDS - 5
    os.utime(old, (past, past))
    os.utime(row, (past, past))
    assert io_.remove_stale_temps(tmp_path, ".*.json.tmp-*") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, row.name])


def test_the_calibration_cache_writes_through_it_and_sweeps_stale_temporaries(tmp_path, monkeypatch):
    from fedtheory.privacy import calibration as C
    from fedtheory.privacy.events import dpsgd_event

    folder = tmp_path / "calibration"
    folder.mkdir()
    stale = folder / ".0123.json.tmp-killed"
    stale.write_text("{trunc")
    past = time.time() - io_.STALE_TEMP_SECONDS - 5
    os.utime(stale, (past, past))
    monkeypatch.setenv("FEDBOOK_CACHE_DIR", str(folder))
    C._MEMO.clear()
    C._WARNED_FOLDERS.clear()
    z = C.calibrate(lambda s: dpsgd_event(s, 0.1, 50), 2.0, 1e-5, "rdp", cache=True)
    (entry,) = folder.iterdir()
    assert entry.suffix == ".json" and json.loads(entry.read_text())["noise_multiplier"] == z
    assert os.stat(entry).st_mode & 0o777 == io_.file_mode()
    C._MEMO.clear()
