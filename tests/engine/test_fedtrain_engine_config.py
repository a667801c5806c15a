"""RunConfig: validation before anything runs, paper defaults, JSON round trip and stable keys."""
from __future__ import annotations

import json
import math

import pytest

from fedtrain.config import RunConfig, default_delta, paper_defaults
from fedtrain.params import describe_fields, params_of
from fedtrain.presets import LAMBDA_GRID, LR_GRID, PAPER_DEFAULTS


def test_paper_defaults_match_appendix_c4():
    s, v, g = PAPER_DEFAULTS["school"], PAPER_DEFAULTS["vehicle"], PAPER_DEFAULTS["gleam"]
    assert (s["rounds"], s["batch_size"], s["clip"], s["delta"]) == (200, 32, 1.0, 1e-3)
    assert (v["rounds"], v["batch_size"], v["clip"], v["delta"]) == (400, 64, 6.0, 1e-7)
    assert (g["rounds"], g["batch_size"], g["clip"], g["delta"]) == (200, 64, 6.0, 1e-4)
    assert all(d["local_epochs"] == 1 for d in PAPER_DEFAULTS.values())
    assert len(LAMBDA_GRID) == 10 and LAMBDA_GRID[0] == 1e-4 and LAMBDA_GRID[-1] == 10
    assert LR_GRID == (1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3)
    c = RunConfig.paper("vehicle-synthetic", "ifca-mrmtl", lam=0.1)
    assert (c.rounds, c.batch_size, c.clip, c.num_clusters) == (400, 64, 6.0, 4)
    assert RunConfig.paper("vehicle", "mrmtl") == RunConfig.paper("vehicle", "mrmtl", num_clusters=4)
    with pytest.raises(ValueError, match="dataset must be one of"):
        paper_defaults("cifar")


@pytest.mark.parametrize("n", [15, 17, 100, 200, 1000, 1933])
def test_default_delta_obeys_paper_rule(n):
    d = default_delta(n)
    assert d < n ** -1.1 and d * 10 >= n ** -1.1 / 10  # a power of ten at most two decades below


def test_round_trip_and_key():
    c = RunConfig.paper("school", "ifca", eps=[1.0, 2.0, math.inf], lam=0.3, seed=7, dataset_options={"split": 0.2})
    d = json.loads(json.dumps(c.to_dict(), allow_nan=False))  # strictly JSON
    assert d["eps"] == [1.0, 2.0, "inf"]
    c2 = RunConfig.from_dict(d)
    assert c2 == c and c2.key() == c.key() and hash(c2) == hash(c)
    assert c.replace(lam=0.31).key() != c.key()
    assert c.replace(dataset_options={"split": 0.5}).key() != c.key()
    assert RunConfig("school", "local").eps == math.inf and not RunConfig("school", "local").private
    assert RunConfig("school", "local", eps="inf").eps == math.inf


@pytest.mark.parametrize("kw, match", [
    (dict(method="fedprox"), r"method must be one of 'local', 'fedavg'"),
    (dict(eps=0.0), r"eps must be a number > 0 \(inf allowed\), or one such number per silo \(got 0.0\)"),
    (dict(eps=[1.0, -1.0]), r"eps must be a number > 0"),
    (dict(eps="abc"), r"eps must be a number > 0"),
    (dict(eps=math.nan), r"eps must be a number > 0"),
    (dict(eps=-math.inf), r"eps must be a number > 0"),
    (dict(delta=1.0), r"delta must be a finite number in \(0, 1\)"),
    (dict(lam=-0.1), r"lam must be a finite number >= 0 \(got -0.1\)"),
    (dict(lam=math.inf), r"lam must be a finite number >= 0 \(got inf\)"),
    (dict(lr=0), r"lr must be a finite number > 0 \(got 0\)"),
    (dict(lr=math.inf), r"lr must be a finite number > 0 \(got inf\)"),
    (dict(lr=math.nan), r"lr must be a finite number > 0 \(got nan\)"),
    (dict(clip=math.inf), r"clip must be a finite number > 0"),
    (dict(rounds=0), r"rounds must be an integer >= 1"),
    (dict(rounds=2.5), r"rounds must be an integer >= 1"),
    (dict(batch_size=0), r"batch_size must be an integer >= 1"),
    (dict(clip=-1), r"clip must be a finite number > 0"),
    (dict(seed=-1), r"seed must be an integer in \[0, 2\^53\)"),
    (dict(seed=2**53), r"seed must be an integer in \[0, 2\^53\)"),
    (dict(seed=2**63), r"seed must be an integer in \[0, 2\^53\) \(got 9223372036854775808\)"),
    (dict(device="tpu"), r"device must be one of 'cpu', 'cuda'"),
    (dict(accountant="gdp"), r"accountant must be one of 'rdp', 'pld', 'prv'"),
    (dict(prox_mode="both"), r"prox_mode must be one of 'clip-together', 'post-noise'"),
    (dict(aggregation="median"), r"aggregation must be one of"),
    (dict(method="finetune", finetune_frac=1.0), r"finetune_frac must be a finite number in \(0, 1\)"),
    (dict(method="ifca", num_clusters=0), r"num_clusters must be an integer >= 1"),
    (dict(method="ifca", select_frac=0.0), r"select_frac must be a finite number in \(0, 1\]"),
    (dict(method="ifca", select_eps_frac=1.0), r"select_eps_frac must be a finite number in \(0, 1\)"),
    (dict(method="ifca", ifca_loss_clip=math.inf), r"ifca_loss_clip must be a finite number > 0"),
    (dict(method="ditto", ditto_personal_epochs=0), r"ditto_personal_epochs must be an integer >= 1"),
    (dict(num_clusters=0), r"num_clusters must be an integer >= 1"),  # another method's option: still checked
    (dict(dataset_options={"f": object()}), r"dataset_options must hold only JSON values"),
    (dict(dataset=""), r"dataset must be a non-empty string"),
    (dict(dataset="noniid-digits"), r"dataset 'noniid-digits' is one of the client-level datasets .*privacy unit is a client"),
    (dict(lamda=1.0), r"unknown RunConfig field\(s\) \['lamda'\]"),
])
def test_bad_configs_raise(kw, match):
    base = dict(dataset="school", method="mrmtl")
    base.update(kw)
    with pytest.raises(ValueError, match=match):
        RunConfig(**base)


def _bad_value(p):
    """A value outside the declared range of ``p`` (from the declaration itself)."""
    if p.kind == "choice":
        return "no-such-choice"
    if p.kind in ("str",):
        return ""
    if p.kind == "mapping":
        return 3
    if p.low is not None:
        return p.low - 1 if not p.low_open else p.low
    return math.nan


def _all_params():
    from fedtrain.methods.registry import METHOD_REGISTRY

    out = [("mrmtl", name, p) for name, (p, _) in params_of(RunConfig).items()]
    for m, spec in METHOD_REGISTRY.items():
        out += [(m, name, p) for name, (p, _) in params_of(spec.options).items()]
    return out


@pytest.mark.parametrize("method, name, p", _all_params(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_field_has_a_generated_message(method, name, p):
    """Every RunConfig field and method option rejects an out-of-range value with the message generated from its
    declaration: it names the field and states the valid range."""
    import re

    from fedtrain.clientdp.config import FedHDPConfig
    from fedtrain.methods.registry import CLIENT, method_spec

    client = method_spec(method).unit == CLIENT  # configured by FedHDPConfig, the record-level ones by RunConfig
    make = FedHDPConfig if client else RunConfig
    kw = dict(dataset="noniid-digits" if client else "school", method=method)
    kw[name] = _bad_value(p)
    with pytest.raises(ValueError) as info:
        make(**kw)
    msg = str(info.value)
    assert msg.startswith(f"{name} must be ") and p.range_text() in msg, msg
    # and also non-finite floats where finite ones are required
    if p.kind == "float":
        kw[name] = math.inf
        with pytest.raises(ValueError, match=re.escape(f"{name} must be {p.range_text()}")):
            make(**kw)


def test_field_table_lists_ranges_and_defaults():
    rows = {r[0]: r for r in describe_fields(RunConfig)}
    assert rows["lr"][1:3] == ("a finite number > 0", "0.01")
    assert rows["seed"][1] == "an integer in [0, 2^53)"
    assert "paper" in rows["rounds"][2]


def test_options_live_with_their_method():
    from fedtrain.methods.options import IFCAOptions, NoOptions

    c = RunConfig(dataset="school", method="ifca", num_clusters=2, select_eps_frac=0.05)
    assert c.options == IFCAOptions(num_clusters=2, select_eps_frac=0.05) and c.num_clusters == 2
    assert RunConfig(dataset="school", method="ifca", options=IFCAOptions(num_clusters=2)) == \
        RunConfig(dataset="school", method="ifca", options={"num_clusters": 2}) == c.replace(select_eps_frac=0.03)
    # another method's options are checked and ignored: same config, same key
    f = RunConfig(dataset="school", method="fedavg", num_clusters=5)
    assert f == RunConfig(dataset="school", method="fedavg") and isinstance(f.options, NoOptions)
    assert f.key() == RunConfig(dataset="school", method="fedavg").key()
    # changing the method drops options the new one does not have
    assert c.replace(method="mrmtl").options.__class__.__name__ == "ProxOptions"
    with pytest.raises(ValueError, match="options must be IFCAOptions"):
        RunConfig(dataset="school", method="ifca", options=NoOptions())


def test_integers_are_exact():
    """Seeds above 2^53 are rejected: rounded through float64 they would collide on one key."""
    a = RunConfig(dataset="school", method="local", seed=2**53 - 1)
    assert a.seed == 2**53 - 1 and RunConfig.from_dict(a.to_dict()) == a
    assert a.key() != a.replace(seed=2**53 - 2).key()
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\^53\)"):
        RunConfig(dataset="school", method="local", seed=2**53 + 1)


def test_from_dict_rejects_unknown_fields():
    with pytest.raises(ValueError, match=r"unknown RunConfig field\(s\) \['lamda'\]"):
        RunConfig.from_dict({"dataset": "school", "method": "mrmtl", "lamda": 1.0})


def test_validate_checks_config_against_data_without_training():
    from fedtrain.data import load_dataset
    from fedtrain.engine import validate
    from fedtrain.sweep import run_sweep

    data = load_dataset("gaussian", num_silos=4, n=30)
    ok = RunConfig(dataset="gaussian", method="ifca", num_clusters=4, eps=1.0, rounds=2)
    assert validate(ok, data) is None
    with pytest.raises(ValueError, match="num_clusters must be <= the number of silos 4"):
        validate(ok.replace(num_clusters=5), data)
    with pytest.raises(ValueError, match="accountant must be 'rdp'"):
        validate(ok.replace(accountant="pld"), data)
    with pytest.raises(ValueError, match="delta"):
        validate(ok.replace(delta=0.5), data)
    # the sweep uses it on every configuration before anything trains
    with pytest.raises(ValueError, match="num_clusters"):
        run_sweep([ok, ok.replace(num_clusters=5)], data=data, runner=lambda cs, d: pytest.fail("trained"),
                  progress=False)
