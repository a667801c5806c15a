"""Faults of the results store give one line and lose nothing: disk full, a store made read-only mid-sweep,
a folder where a row file should be, a row file of random bytes; a complete read-only store is readable; the
temporary files of a killed writer are removed by the next write.

The tests run as root, whom ``chmod`` does not stop, and the interpreter lives in root's home, which no other
user can execute, so a real read-only folder cannot be made here.  A read-only file system is simulated instead
at the lowest level the store uses: ``tempfile.mkstemp`` in the store's folder raises ``OSError(EROFS)``, as the
kernel does for every file created on a read-only mount (both the writability check and every row write create
their file that way).  Disk full is real: ``RLIMIT_FSIZE`` (``ulimit -f``) set in a subprocess makes the kernel
refuse the row's bytes with ``EFBIG``.
"""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from fedtrain.cli import main
from fedtrain.config import RunConfig
from fedtrain.data.registry import generator_identity
from fedtrain.results import ResultsStore, ResultsStoreError, row_key

REPO = Path(__file__).resolve().parents[2]
OPTS = {"num_silos": 4, "n": 30}
TINY = ["sweep", "--dataset", "gaussian", "-D", "num_silos=4", "-D", "n=30", "--rounds", "2", "--batch-size", "10",
        "--clip", "5", "--method", "fedavg", "--eps", "inf", "--chunk-size", "1", "--no-progress"]


def _key(seed: int) -> str:
    c = RunConfig(dataset="gaussian", method="fedavg", rounds=2, batch_size=10, clip=5.0, eps=float("inf"),
                  dataset_options=OPTS, seed=seed)
    return row_key(c, generator_identity("gaussian", OPTS))


def _snapshot(store: Path) -> dict:
    return {p.name: p.read_bytes() for p in store.iterdir()}


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def _read_only(monkeypatch, store: Path, after: int = 0) -> None:
    """Files created in ``store`` fail with EROFS after the first ``after`` ones (module docstring)."""
    real = tempfile.mkstemp
    made = [0]

    def mkstemp(*args, dir=None, **kw):
        if dir is not None and Path(dir).resolve() == store.resolve():
            if made[0] >= after:
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dir))
            made[0] += 1
        return real(*args, dir=dir, **kw)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


def test_disk_full_is_one_line_and_keeps_the_finished_rows(tmp_path):
    store = tmp_path / "store"
    assert main([*TINY, "--seeds", "0,1", "--results", str(store)]) == 0
    before = _snapshot(store)
    limit = min(len(b) for b in before.values()) // 2  # a row no longer fits: EFBIG at its first write

    def small_files():
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = dict(os.environ, PYTHONPATH=str(REPO), FEDBOOK_CACHE_DIR="off")
    out = subprocess.run([sys.executable, "-m", "fedtrain", *TINY, "--seeds", "0,1,2,3", "--results", str(store)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, preexec_fn=small_files, timeout=300)
    err = out.stderr.strip()
    assert out.returncode != 0 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert f"cannot write results row {store}" in err and "File too large" in err
    assert _snapshot(store) == before  # the finished rows intact, no temporary file left


def test_store_made_read_only_mid_sweep(tmp_path, monkeypatch, capsys):
    store = tmp_path / "store"
    _read_only(monkeypatch, store, after=3)  # the writability check and two rows, then read-only
    with pytest.raises(SystemExit) as info:
        main([*TINY, "--seeds", "0,1,2,3,4", "--results", str(store)])
    err = _error_line(capsys)
    assert info.value.code != 0 and "Read-only file system" in err and f"cannot write results row {store}" in err
    rows = ResultsStore(store)
    assert sorted(rows.keys()) == sorted(_key(s) for s in (0, 1))  # the two finished rows, whole and readable
    assert [r.config.seed for r in rows.rows()] == sorted([0, 1], key=lambda s: _key(s))


def test_complete_read_only_store_is_readable(tmp_path, monkeypatch, capsys):
    store = tmp_path / "store"
    assert main([*TINY, "--seeds", "0,1", "--results", str(store), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    _read_only(monkeypatch, store)
    assert main([*TINY, "--seeds", "0,1", "--results", str(store), "--json"]) == 0  # nothing to write
    assert json.loads(capsys.readouterr().out) == first
    with pytest.raises(SystemExit) as info:  # a missing row: refused before training, one line
        main([*TINY, "--seeds", "0,1,2", "--results", str(store)])
    err = _error_line(capsys)
    assert info.value.code == 2 and f"results folder {store} is not writable (Read-only file system)" in err


def test_a_folder_where_a_row_file_should_be(tmp_path, capsys):
    from fedtrain.engine import RunResult

    store = tmp_path / "store"
    assert main([*TINY, "--seed", "0", "--results", str(store)]) == 0
    capsys.readouterr()
    folder = store / f"{_key(1)}.json"
    folder.mkdir()
    row0 = (store / f"{_key(0)}.json").read_bytes()
    with pytest.raises(SystemExit) as info:
        main([*TINY, "--seeds", "0,1,2", "--results", str(store)])
    err = _error_line(capsys)
    assert info.value.code != 0 and f"results store row {folder} is unreadable" in err
    assert (store / f"{_key(0)}.json").read_bytes() == row0
    row = json.loads(row0)  # writing the row there: one line naming the path, nothing else touched
    result = RunResult.from_dict({**row, "config": {**row["config"], "seed": 1}})
    with pytest.raises(ResultsStoreError, match=f"cannot write results row {folder} .*folder is where the row file"):
        ResultsStore(store).put(result)
    assert (store / f"{_key(0)}.json").read_bytes() == row0 and folder.is_dir()


def test_a_row_file_of_random_bytes_is_named(tmp_path, capsys):
    store = tmp_path / "store"
    assert main([*TINY, "--seeds", "0,1", "--results", str(store)]) == 0
    capsys.readouterr()
    bad = store / f"{_key(1)}.json"
    bad.write_bytes(os.urandom(300))
    row0 = (store / f"{_key(0)}.json").read_bytes()
    with pytest.raises(SystemExit) as info:
        main([*TINY, "--seeds", "0,1", "--results", str(store)])
    err = _error_line(capsys)
    assert info.value.code != 0 and f"results store row {bad} is unreadable" in err and "delete it" in err
    assert (store / f"{_key(0)}.json").read_bytes() == row0
    with pytest.raises(ResultsStoreError, match=str(bad)):
        ResultsStore(store).get(_key(1))


def test_stale_temporary_files_are_removed_by_the_next_write(tmp_path):
    store = tmp_path / "store"
    assert main([*TINY, "--seed", "0", "--results", str(store)]) == 0
    stale = store / f".{_key(1)}.json.tmp-killed"  # what a writer killed between mkstemp and rename leaves
    stale.write_text('{"trunc')
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fresh = store / f".{_key(2)}.json.tmp-live"  # another process's write in progress: left alone
    fresh.write_text("{")
    assert len(ResultsStore(store)) == 1  # readers ignore both
    assert main([*TINY, "--seeds", "0,1", "--results", str(store)]) == 0
    assert not stale.exists() and fresh.exists() and len(ResultsStore(store)) == 2
