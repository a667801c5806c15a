"""Every stored row proves what it is: its key holds the identity of the data it was trained on, reading it
checks the key, and sweeps write a working store, never the committed one."""
from __future__ import annotations

import gzip
import hashlib
import json
import shutil

import numpy as np
import pytest

from fedtrain.cli import main
from fedtrain.config import RunConfig
from fedtrain.data import load_dataset
from fedtrain.data.base import FederatedData, identity_digest
from fedtrain.data.files import sha256_file
from fedtrain.engine import run_many
from fedtrain.results import (DEFAULT_RESULTS_DIR, MANIFEST, CommittedStore, ResultsStore, ResultsStoreError, shown_path,
                              row_key)

TINY = ["--dataset", "gaussian", "-D", "num_silos=4", "-D", "n=30", "--rounds", "2", "--batch-size", "10",
        "--clip", "5", "--method", "fedavg", "--eps", "inf"]


def _vehicle_mat(path, seed: int) -> None:
    """A vehicle.mat of the published layout (23 silos, 100 features, labels +-1) with random content."""
    import scipy.io

    rng = np.random.default_rng(seed)
    xs = np.empty((1, 23), dtype=object)
    ys = np.empty((1, 23), dtype=object)
    for k in range(23):
        xs[0, k] = rng.normal(size=(16, 100))
        ys[0, k] = np.where(rng.random((16, 1)) < 0.5, -1.0, 1.0)
    path.parent.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(str(path), {"X": xs, "Y": ys})


def test_identity_names_the_files_read_or_the_generator():
    """The identity is generic: the files a loader read (their SHA-256), a generator and its options, or the
    arrays' content for data built in code."""
    g = load_dataset("gaussian", num_silos=3, n=5, seed=2)
    assert g.identity() == {"generator": "gaussian", "options": {"num_silos": 3, "n": 5, "seed": 2}}
    assert g.summary()["identity"] == g.identity()
    x = [np.ones((4, 2))]
    y = [np.zeros(4)]
    a = FederatedData("mine", "regression", x, y, x, y, real=False)
    b = FederatedData("mine", "regression", [np.full((4, 2), 2.0)], y, x, y, real=False)
    assert set(a.identity()) == {"content_sha256"} and a.identity() != b.identity()


def test_data_dir_b_never_returns_rows_of_folder_a(tmp_path, capsys):
    """Two vehicle.mat files (Vehicle has no pinned checksum): the sweep on folder B trains its own row instead of
    returning folder A's; an identical copy of A's file in folder C finds A's row."""
    a, b, c = tmp_path / "A", tmp_path / "B", tmp_path / "C"
    _vehicle_mat(a / "vehicle.mat", 0)
    _vehicle_mat(b / "vehicle.mat", 1)
    c.mkdir()
    shutil.copy(a / "vehicle.mat", c / "vehicle.mat")
    store = tmp_path / "store"
    argv = ["sweep", "--dataset", "vehicle", "--method", "local", "--eps", "inf", "--rounds", "2",
            "--results", str(store), "--json"]
    means = {}
    for folder in (a, b, c):
        assert main([*argv, "--data-dir", str(folder)]) == 0
        out = json.loads(capsys.readouterr().out)["summary"][0]
        assert out["data_sha256"] == sha256_file(folder / "vehicle.mat")
        means[folder.name] = out["mean"]
    keys = ResultsStore(store).keys()
    assert len(keys) == 2 and len({k.split("-")[0] for k in keys}) == 1  # one configuration, two data
    assert means["A"] == means["C"] != means["B"]
    for k in keys:
        row = json.loads((store / f"{k}.json").read_text())
        assert row["data"]["identity"] == {"files": {"vehicle.mat": row["data"]["sha256"]}}


def test_a_row_file_copied_over_another_is_an_error_naming_the_file(tmp_path):
    data = load_dataset("gaussian", num_silos=4, n=30)
    configs = [RunConfig(dataset="gaussian", method="fedavg", rounds=2, batch_size=10, clip=5.0,
                         dataset_options={"num_silos": 4, "n": 30}, seed=s) for s in (0, 1)]
    store = ResultsStore(tmp_path)
    for r in run_many(configs, data):
        store.put(r)
    k0, k1 = (row_key(c, data.identity()) for c in configs)
    shutil.copy(tmp_path / f"{k0}.json", tmp_path / f"{k1}.json")
    assert store.get(configs[0]).config == configs[0]
    with pytest.raises(ResultsStoreError, match=f"row {tmp_path / k1}.json is filed under key {k1} but its config "
                                                f"and data hash to {k0}"):
        store.get(configs[1])
    with pytest.raises(ResultsStoreError, match=k1):
        list(store.rows())


def _theory_only_store(tmp_path, mutate=None):
    """A copy of the committed store's theory file (and a manifest listing only it), optionally edited."""
    out = tmp_path / "committed"
    out.mkdir(parents=True)
    manifest = json.loads((DEFAULT_RESULTS_DIR / MANIFEST).read_text())
    raw = (DEFAULT_RESULTS_DIR / "theory.json.gz").read_bytes()
    if mutate is not None:
        doc = json.loads(gzip.decompress(raw))
        mutate(doc)
        raw = gzip.compress(json.dumps(doc).encode(), mtime=0)
    (out / "theory.json.gz").write_bytes(raw)
    info = dict(manifest["files"]["theory.json.gz"], sha256=hashlib.sha256(raw).hexdigest())
    manifest["files"] = {"theory.json.gz": info}
    (out / MANIFEST).write_text(json.dumps(manifest))
    return out


def test_committed_rows_are_keyed_by_their_data_and_checked(tmp_path):
    """The migrated committed store: every theory row is filed under its config and generator identity, and a
    row swapped with another (manifest checksum updated, so only the key check can catch it) is refused."""
    store = CommittedStore(_theory_only_store(tmp_path))
    for key in store.keys()[:50]:
        row = store.row_dict(key)
        c = RunConfig.from_dict(row["config"])
        assert row["data"]["identity"] == {"generator": "gaussian", "options": dict(c.dataset_options)}
        assert key == f"{c.key()}-{identity_digest(row['data']['identity'])}"

    def swap(doc):
        r0, r1 = doc["rows"][0], doc["rows"][1]
        r0["key"], r1["key"] = r1["key"], r0["key"]

    bad = CommittedStore(_theory_only_store(tmp_path / "bad", swap))  # opens: the file matches the manifest
    swapped = json.loads(gzip.decompress((tmp_path / "bad" / "committed" / "theory.json.gz").read_bytes()))
    with pytest.raises(ResultsStoreError, match=f"{swapped['rows'][0]['key']} of .*theory.json.gz is filed under "
                                                "key .* but its config and data hash to"):
        bad.get(swapped["rows"][0]["key"])


def test_sweep_default_store_is_a_working_store(tmp_path, monkeypatch, capsys):
    """``fedtrain sweep`` without ``--results`` writes ./fedtrain-results; the committed store's folder is refused
    before anything trains."""
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", *TINY, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"] == "fedtrain-results" and len(ResultsStore(tmp_path / "fedtrain-results")) == 1
    committed = _theory_only_store(tmp_path)
    before = sorted(p.name for p in committed.iterdir())
    with pytest.raises(SystemExit) as info:
        main(["sweep", *TINY, "--results", str(committed)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "holds the committed results store" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in committed.iterdir()) == before  # nothing written


def test_store_reprs_show_no_absolute_path(tmp_path):
    """A store prints its folder relative to the repository (inside it) or its name only (outside), with its rows:
    the chapters print stores, and a machine's path must not reach the page."""
    store = CommittedStore(_theory_only_store(tmp_path))  # the folder tmp_path/committed
    assert repr(store) == f"CommittedStore('committed', rows={len(store)})" and len(store) > 0
    assert str(tmp_path) not in repr(ResultsStore(tmp_path / "work"))
    assert repr(ResultsStore(tmp_path / "work")) == "ResultsStore('work', rows=0)"
    assert shown_path(DEFAULT_RESULTS_DIR) == "results"
    assert shown_path(DEFAULT_RESULTS_DIR / "deep") == "results/deep"
