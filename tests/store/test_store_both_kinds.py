"""One results store for both kinds of runs: a record-level run (:class:`~fedtrain.config.RunConfig` →
:class:`~fedtrain.engine.RunResult`) and a client-level run (:class:`~fedtrain.clientdp.config.FedHDPConfig` →
:class:`~fedtrain.clientdp.trainer.FedHDPResult`) filed in one folder, served, listed and checked by
:class:`~fedtrain.results.ResultsStore`; a client-level row keeps the format of the client-level folders."""
from __future__ import annotations

import json
import math

import pytest

from fedtrain.cli import main
from fedtrain.config import ENGINE_VERSION, RunConfig
from fedtrain.data.base import data_identity
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.clientdp.trainer import FedHDPResult, train
from fedtrain.results import ResultsStore, ResultsStoreError, git_commit, row_key
from fedtrain.testing import fake_result

SMALL = dict(num_clients=40, samples_per_client=6, test_per_client=4, nonprivate_fraction=0.1)
CLIENT_FLAGS = ["--dataset", "noniid-digits", "--method", "fedhdp", "--ratio", "0.2", "--rounds", "2",
                "--sample-rate", "0.5", "--batch-size", "3", "--hidden", "8", "--seeds", "0,1"]
CLIENT_FLAGS += [a for k, v in SMALL.items() for a in ("-D", f"{k}={v}")]


@pytest.fixture(scope="module")
def client_result() -> FedHDPResult:
    return train(FedHDPConfig(dataset="noniid-digits", dataset_options=SMALL, method="fedhdp", ratio=0.2, rounds=2,
                              sample_rate=0.5, batch_size=3, hidden=8))


def test_one_folder_files_and_serves_both_kinds(tmp_path, client_result):
    store = ResultsStore(tmp_path)
    record = fake_result(RunConfig(dataset="school", method="mrmtl", lam=0.1), 0.25,
                         identity={"generator": "test", "seed": 0})
    store.put(record)
    store.put(client_result)
    c = client_result.config
    key = row_key(c, data_identity(client_result.data))
    assert len(store) == 2 and key in store.keys() and c in store and record.config in store
    assert store.has(c) and store.has(c, client_result.data["identity"]) and store.has(key)
    served = store.get(c)
    assert isinstance(served, FedHDPResult) and served.config == c
    assert served.metrics.keys() == client_result.metrics.keys()
    assert all(served.metrics[k] == v or (math.isnan(v) and math.isnan(served.metrics[k]))
               for k, v in client_result.metrics.items())
    assert served.privacy["groups"]["nonprivate"]["epsilon"] == math.inf  # ε of the unprotected group
    # served back: the run as trained, plus where the store says it came from (the commit of this checkout)
    assert served.provenance["commit"] == git_commit() and served.provenance["engine_version"] == ENGINE_VERSION
    assert {k: v for k, v in served.to_dict().items() if k != "provenance"} == client_result.to_dict()
    assert served.clip_final == client_result.clip_final
    store.put(served)  # filed again (e.g. copied to another store): it keeps its provenance
    assert store.get(c).provenance == served.provenance
    # the cross-silo paths see what they saw: rows() yields the record-level runs unless asked for the others
    assert [r.config for r in store.rows()] == [record.config]
    assert [r.config for r in store.rows(kind="client")] == [c]
    assert [r.config for r in store.rows(kind="client", method="fedhdp")] == [c]
    assert list(store.rows(kind="client", method="dp-fedavg")) == []
    with pytest.raises(ValueError, match="kind must be one of"):
        list(store.rows(kind="silo"))


def test_a_client_level_row_has_the_one_row_format_and_is_checked(tmp_path, client_result):
    store = ResultsStore(tmp_path)
    store.put(client_result)
    (path,) = tmp_path.glob("*.json")
    # one row format for both units: the result's to_dict plus the fields the store adds to every row, keys sorted
    written = json.loads(path.read_text())
    added = ("key", "config_key", "engine_version", "created", "provenance", "eps_orders", "digest")
    assert sorted(written) == sorted([*client_result.to_dict(), *added])
    assert path.read_text() == json.dumps({**client_result.to_dict(), **{k: written[k] for k in added}},
                                          sort_keys=True, allow_nan=False)
    assert written["config_key"] == client_result.config.key() and written["eps_orders"] is None
    assert set(written["provenance"]) == {"engine_version", "commit", "command", "seconds", "machine"}
    assert written["provenance"]["seconds"] == client_result.wall_time
    row = json.loads(path.read_text())
    row["config"]["rounds"] = 3  # a row whose config no longer hashes to the key it is filed under
    path.write_text(json.dumps(row))
    with pytest.raises(ResultsStoreError, match=f"{path.name}.*is filed under key"):
        store.get(path.stem)
    with pytest.raises(ResultsStoreError, match="is filed under key"):
        list(store.rows(kind="client"))
    assert list(store.rows()) == []  # a record-level reader does not read the client-level rows


def test_fedtrain_run_stores_client_level_runs_and_serves_them(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "runs"
    assert main(["run", *CLIENT_FLAGS, "--results", str(folder), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert len(ResultsStore(folder)) == 2 and len(list(ResultsStore(folder).rows(kind="client"))) == 2
    monkeypatch.setattr("fedtrain.clientdp.trainer.train", lambda *a, **k: pytest.fail("a stored run was retrained"))
    assert main(["run", *CLIENT_FLAGS, "--results", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert main(["run", *CLIENT_FLAGS, "--results", str(folder)]) == 0  # the table and ε per group, from the store
    assert "private: " in capsys.readouterr().out
