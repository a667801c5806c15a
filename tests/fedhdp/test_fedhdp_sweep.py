"""Both privacy units go through one sweep: ``fedtrain sweep`` trains client-level methods into the working store,
serves them back on the next call (training nothing), and files their rows in the record-level rows' format."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from fedtrain.cli import main  # noqa: E402
from fedtrain.clientdp import trainer  # noqa: E402
from fedtrain.methods.registry import CLIENT, METHOD_REGISTRY, RECORD, UNIT_CODE  # noqa: E402

SWEEP = ["sweep", "--dataset", "noniid-digits", "--method", "fedhdp,dp-fedavg", "--ratio", "0.05", "--rounds", "2",
         "--seed", "0", "--json"]


def test_fedtrain_sweep_trains_client_level_methods_then_serves_both_rows(tmp_path, capsys, monkeypatch):
    store = tmp_path / "runs"
    assert main(SWEEP + ["--results", str(store)]) == 0
    first = json.loads(capsys.readouterr().out)
    rows = sorted(store.glob("*.json"))
    assert first["runs"] == 2 and len(rows) == 2
    assert [(s["method"], s["r"]) for s in first["summary"]] == [("dp-fedavg", None), ("fedhdp", 0.05)]
    written = {p: p.read_bytes() for p in rows}

    def no_training(*args, **kwargs):
        raise AssertionError("the second sweep trained a stored run")

    monkeypatch.setattr(trainer, "run_many", no_training)
    monkeypatch.setattr(trainer, "train", no_training)
    assert main(SWEEP + ["--results", str(store)]) == 0
    assert json.loads(capsys.readouterr().out) == first  # the same numbers, served
    assert {p: p.read_bytes() for p in sorted(store.glob("*.json"))} == written  # nothing rewritten


def test_client_rows_have_the_record_rows_format(tmp_path, capsys):
    """One row format for both units: the same top-level fields the store adds to a record-level row."""
    from fedtrain.results import ResultsStore

    assert main(SWEEP[:-1] + ["--results", str(tmp_path)]) == 0
    capsys.readouterr()
    stored = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    added = {"key", "config_key", "engine_version", "created", "provenance", "eps_orders", "digest"}
    for row in stored:
        assert added <= set(row), sorted(added - set(row))
        assert row["eps_orders"] is None and row["config_key"] == row["key"].split("-")[0]
    assert len(list(ResultsStore(tmp_path).rows(kind=CLIENT))) == 2


def test_the_registry_names_each_units_config_runner_and_validator():
    """Every method reaches its configuration class, runner and validator through its registry entry."""
    from fedtrain.clientdp.config import FedHDPConfig
    from fedtrain.config import RunConfig
    from fedtrain.engine import run_many, validate

    assert set(UNIT_CODE) == {RECORD, CLIENT}
    for spec in METHOD_REGISTRY.values():
        if spec.unit == CLIENT:
            assert (spec.config_class, spec.runner, spec.validator, spec.cls) == (
                FedHDPConfig, trainer.run_many, trainer.validate, trainer.train)
        else:
            assert (spec.config_class, spec.runner, spec.validator) == (RunConfig, run_many, validate)


def test_a_client_level_sweep_validates_every_configuration_before_training(tmp_path, monkeypatch):
    """The client unit's validator runs on the whole grid first: a δ too large for the private group fails before
    any run trains (and the store stays empty)."""
    from fedtrain.clientdp.config import FedHDPConfig
    from fedtrain.sweep import run_sweep

    monkeypatch.setattr(trainer, "run_many", lambda *a, **k: pytest.fail("trained before validating"))
    configs = [FedHDPConfig(method="fedhdp", ratio=0.05, rounds=2),
               FedHDPConfig(method="dp-fedavg", rounds=2, delta=0.01)]
    with pytest.raises(ValueError, match="dp-fedavg r=1 seed=0 on noniid-digits: delta must be in"):
        run_sweep(configs, store=tmp_path)
    assert not list(tmp_path.glob("*.json"))
