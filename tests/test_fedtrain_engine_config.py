"""RunConfig: validation before anything runs, paper defaults, JSON round trip and stable keys."""
from __future__ import annotations

import json
import math

import pytest

from fedtrain.config import LAMBDA_GRID, LR_GRID, PAPER_DEFAULTS, RunConfig, default_delta, paper_defaults


def test_paper_defaults_match_appendix_c4():
    s, v, g = PAPER_DEFAULTS["school"], PAPER_DEFAULTS["vehicle"], PAPER_DEFAULTS["gleam"]
    assert (s["rounds"], s["batch_size"], s["clip"], s["delta"]) == (200, 32, 1.0, 1e-3)
    assert (v["rounds"], v["batch_size"], v["clip"], v["delta"]) == (400, 64, 6.0, 1e-7)
    assert (g["rounds"], g["batch_size"], g["clip"], g["delta"]) == (200, 64, 6.0, 1e-4)
    assert all(d["local_epochs"] == 1 for d in PAPER_DEFAULTS.values())
    assert len(LAMBDA_GRID) == 10 and LAMBDA_GRID[0] == 1e-4 and LAMBDA_GRID[-1] == 10
    assert LR_GRID == (1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3)
    c = RunConfig.paper("vehicle-synthetic", "mrmtl", lam=0.1)
    assert (c.rounds, c.batch_size, c.clip, c.num_clusters) == (400, 64, 6.0, 4)
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
    (dict(method="fedprox"), r"method must be one of"),
    (dict(eps=0.0), r"eps must be > 0"),
    (dict(eps=[1.0, -1.0]), r"eps must be > 0"),
    (dict(eps="abc"), r"eps must be a number"),
    (dict(delta=1.0), r"delta must lie in the open interval \(0.0, 1.0\)"),
    (dict(lam=-0.1), r"lam must be >= 0"),
    (dict(lam=math.inf), r"lam must be finite"),
    (dict(lr=0), r"lr must be > 0"),
    (dict(rounds=0), r"rounds must be an integer >= 1"),
    (dict(rounds=2.5), r"rounds must be an integer >= 1"),
    (dict(batch_size=0), r"batch_size must be an integer >= 1"),
    (dict(clip=-1), r"clip must be > 0"),
    (dict(seed=-1), r"seed must be an integer >= 0"),
    (dict(device="tpu"), r"device must be one of 'cpu', 'cuda'"),
    (dict(accountant="gdp"), r"accountant must be one of 'rdp', 'pld', 'prv'"),
    (dict(prox_mode="both"), r"prox_mode must be one of"),
    (dict(aggregation="median"), r"aggregation must be one of"),
    (dict(finetune_frac=1.0), r"finetune_frac must lie in the open interval"),
    (dict(num_clusters=0), r"num_clusters must be an integer >= 1"),
    (dict(select_frac=0.0), r"select_frac must lie in the open interval"),
    (dict(select_eps_frac=1.0), r"select_eps_frac must lie in the open interval"),
    (dict(dataset_options={"f": object()}), r"dataset_options must hold only JSON values"),
    (dict(dataset=""), r"dataset must be a non-empty string"),
])
def test_bad_configs_raise(kw, match):
    base = dict(dataset="school", method="mrmtl")
    base.update(kw)
    with pytest.raises(ValueError, match=match):
        RunConfig(**base)


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
