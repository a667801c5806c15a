"""FedHDP in the one fedtrain: registry methods with a privacy unit, one parser, keys with the engine version,
no global random state touched, and the re-keying of folders written before."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from fedtrain.cli import main
from fedtrain.data.registry import load_dataset
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.clientdp.trainer import train
from fedtrain.fedhdp.experiments import load_results, run_experiment
from fedtrain.methods.registry import CLIENT, METHOD_REGISTRY, PRIVACY_UNITS, RECORD, method_spec

SMALL = dict(num_clients=40, samples_per_client=6, test_per_client=4, nonprivate_fraction=0.1)


def cfg(**kw):
    base = dict(dataset="noniid-digits", dataset_options=SMALL, rounds=3, sample_rate=0.5, local_epochs=1,
                batch_size=3, hidden=8, count_noise_per_client=0.2)
    base.update(kw)
    return FedHDPConfig(**base)


# ------------------------------------------------------------------------------------------ registry
def test_every_method_has_a_privacy_unit():
    units = {m: s.unit for m, s in METHOD_REGISTRY.items()}
    assert set(units.values()) == set(PRIVACY_UNITS) == {RECORD, CLIENT}
    assert {m for m, u in units.items() if u == CLIENT} == {"nonprivate", "dp-fedavg", "hdp-fedavg", "fedhdp"}
    assert method_spec("fedhdp").takes_ratio and not method_spec("hdp-fedavg").takes_ratio
    assert method_spec("nonprivate").private is False and method_spec("dp-fedavg").private is True
    assert method_spec("mrmtl").private is None  # record-level: private iff eps is finite


def test_run_help_lists_every_method_with_its_unit(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    for name, spec in METHOD_REGISTRY.items():
        line = next((l for l in out.splitlines() if l.split()[:1] == [name]), None)
        assert line is not None, name
        assert f"unit: {spec.unit};" in line, line
        for opt in spec.options.__dataclass_fields__:
            assert "--" + opt.replace("_", "-") in line, (name, opt)
    for text in PRIVACY_UNITS.values():
        assert text in out


@pytest.mark.parametrize("argv, message", [
    (["--method", "dp-fedavg", "--ratio", "0.5"], "--ratio applies to fedhdp, not to 'dp-fedavg'"),
    (["--method", "hdp-fedavg", "--ratio", "0.5"], "--ratio applies to fedhdp, not to 'hdp-fedavg'"),
    (["--method", "fedhdp", "--eps", "2"], "--eps applies to local, fedavg"),
    (["--method", "fedhdp", "--lam", "0.1"], "(privacy unit: a record of a silo), not to 'fedhdp'"),
    (["--method", "fedhdp", "--num-clusters", "2"], "--num-clusters applies to ifca, ifca-mrmtl, not to 'fedhdp'"),
    (["--method", "fedhdp", "--repeats", "2"], "--repeats applies to local"),
    (["--method", "mrmtl", "--ratio", "0.2"], "--ratio is an option of fedhdp, not of the method(s) given (mrmtl)"),
    (["--method", "fedavg", "--model", "fc"], "--model fc is a model of the client-level methods"),
    (["--method", "fedhdp", "--model", "mlp"], "model must be one of 'fc', 'linear'"),
])
def test_an_inapplicable_flag_is_an_error(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--dataset", "noniid-digits", *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_the_config_refuses_an_option_of_another_method():
    with pytest.raises(ValueError, match="ratio is an option of fedhdp, not of 'dp-fedavg'"):
        FedHDPConfig(method="dp-fedavg", ratio=0.5)
    assert FedHDPConfig(method="dp-fedavg", ratio=1.0).effective_ratio == 1.0  # what to_dict records comes back
    with pytest.raises(ValueError, match="num_clusters is an option of ifca"):
        FedHDPConfig(method="fedhdp", num_clusters=2)
    c = cfg(method="fedhdp", ratio=0.2)
    assert FedHDPConfig.from_dict(c.to_dict()) == c and c.replace(method="hdp-fedavg").to_dict()["ratio"] == 1.0


# ------------------------------------------------------------------------------------------ keys
def test_row_key_changes_with_the_engine_version(monkeypatch):
    import fedtrain.config as config_module
    from fedtrain.results import row_key as run_key

    c = cfg(method="fedhdp", ratio=0.2)
    ident = load_dataset("noniid-digits", **SMALL).identity()
    before, key = c.key(), run_key(c, ident)
    assert key.startswith(before + "-")
    monkeypatch.setattr(config_module, "ENGINE_VERSION", config_module.ENGINE_VERSION + 1)
    assert c.key() != before and run_key(c, ident) != key
    assert run_key(c, ident).split("-")[1] == key.split("-")[1]  # the data part is the data's


def test_stored_runs_are_served_checked_and_migrated(tmp_path, monkeypatch):
    """A run is filed under its row key and served back; a row of the old keying is re-keyed by the migration tool
    after its checks, and a row copied over another's name is refused."""
    import importlib.util
    import hashlib
    from pathlib import Path

    from fedtrain.results import ResultsStoreError

    configs = [cfg(method="fedhdp", ratio=0.2), cfg(method="dp-fedavg")]
    rows = run_experiment(configs, tmp_path / "new")
    files = sorted((tmp_path / "new").glob("*.json"))
    assert len(files) == 2 and all(f.stem.startswith(c.key()) for f, c in
                                   zip(files, sorted(configs, key=lambda c: c.key())))
    monkeypatch.setattr("fedtrain.clientdp.trainer.train", lambda *a, **k: pytest.fail("a stored run was retrained"))
    again = run_experiment(configs, tmp_path / "new")
    assert [r["metrics"] for r in again] == [r["metrics"] for r in rows]
    monkeypatch.undo()
    # the old keying: 20 hex digits of the config's JSON
    old = tmp_path / "old"
    old.mkdir()
    for r in rows:
        name = hashlib.sha256(json.dumps(r["config"], sort_keys=True).encode()).hexdigest()[:20]
        (old / f"{name}.json").write_text(json.dumps({k: v for k, v in r.items() if k != "key"}))
    (old / f"{'0' * 20}.json").write_text(json.dumps(rows[0]))  # filed under a name it does not hash to
    spec = importlib.util.spec_from_file_location("migrate", Path(__file__).resolve().parents[2] / "tools" /
                                                  "migrate_fedhdp_keys.py")
    migrate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migrate)
    assert migrate.migrate(old, log=lambda s: None) == (2, 1)
    assert sorted(p.name for p in old.glob("*-*.json")) == [f.name for f in files]
    assert [r["metrics"] for r in load_results(old)] == [r["metrics"] for r in load_results(tmp_path / "new")]
    victim = files[0]
    victim.write_text(files[1].read_text())
    with pytest.raises(ResultsStoreError, match="is filed under key"):
        load_results(tmp_path / "new")


# ------------------------------------------------------------------------------------------ random state
def test_a_run_leaves_the_global_random_state_alone():
    torch_state, np_state = torch.random.get_rng_state().clone(), np.random.get_state()
    res = train(cfg(method="fedhdp", ratio=0.5, rounds=2))
    assert np.isfinite(res.metrics["acc_g"])
    assert torch.equal(torch.random.get_rng_state(), torch_state)
    after = np.random.get_state()
    assert after[0] == np_state[0] and np.array_equal(after[1], np_state[1]) and after[2:] == np_state[2:]


def test_replace_with_options_replaces_every_option():
    """``replace(options=...)`` replaces the options (the old flat option values do not override them), in
    both configuration classes (fedtrain.config.OptionsConfig)."""
    from fedtrain.config import RunConfig
    from fedtrain.clientdp.config import FedHDPConfig
    from fedtrain.methods.options import FedHDPOptions

    c = FedHDPConfig(method="fedhdp", ratio=0.2, rounds=3)
    d = c.replace(options=FedHDPOptions(ratio=0.7))
    assert d.ratio == 0.7 and d.rounds == 3 and c.ratio == 0.2
    assert c.replace(rounds=4).key() != c.key() and c.replace(rounds=3).key() == c.key()
    assert FedHDPConfig.from_dict(c.to_dict()) == c
    r = RunConfig(dataset="school", method="mrmtl", lam=0.5)
    assert r.replace(method="local").to_flat()["method"] == "local" and RunConfig.from_dict(r.to_dict()) == r
    with pytest.raises(ValueError, match="options must be FedHDPOptions for method 'fedhdp'"):
        FedHDPConfig(method="fedhdp", options=r.options)


def test_options_read_as_attributes_and_unknown_names_refused():
    """Both configuration classes read the method's options as attributes (fedtrain.config.OptionsConfig);
    a RunConfig gives another method's option its default, a FedHDPConfig refuses it, and an unknown name is
    an AttributeError naming it in both."""
    from fedtrain.config import RunConfig
    from fedtrain.methods.registry import option_params

    r = RunConfig(dataset="school", method="mrmtl", lam=0.5)
    assert r.lam == 0.5
    assert r.num_clusters == option_params()["num_clusters"][1]  # IFCA's option: its default
    c = FedHDPConfig(method="fedhdp", ratio=0.2, rounds=3)
    assert c.ratio == 0.2
    for obj, cls in ((r, "RunConfig"), (c, "FedHDPConfig")):
        with pytest.raises(AttributeError, match=f"{cls}.*'no_such_name'"):
            obj.no_such_name
    with pytest.raises(AttributeError, match="'lam'"):
        c.lam
    assert not hasattr(r, "__no_dunder__")
