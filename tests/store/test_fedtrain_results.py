"""Results store and sweeps: atomic rows, skip finished runs, resume after an interruption."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fedtrain.config import RunConfig
from fedtrain.data.base import identity_digest
from fedtrain.data import load_dataset
from fedtrain.engine import run_many
from fedtrain.engine import RunResult
from fedtrain.results import ResultsStore, jsonable
from fedtrain.testing import fake_result
from fedtrain.sweep import expand_grid, run_sweep, summarize

BASE = dict(dataset="gaussian", method="mrmtl", rounds=3, batch_size=10, lr=0.05, clip=5.0,
            dataset_options={"num_silos": 4, "n": 30})


FAKE_DATA = {"generator": "gaussian", "options": BASE["dataset_options"]}


def _grid():
    return expand_grid(BASE, eps=[2.0, math.inf], lam=[0.1, 1.0], seed=[0, 1])


def test_expand_grid_and_validation():
    grid = _grid()
    assert len(grid) == 8 and len({c.key() for c in grid}) == 8
    assert [c.seed for c in grid[:2]] == [0, 1]  # the last axis varies fastest
    with pytest.raises(ValueError, match=r"invalid configuration in the grid \(eps=-1.*eps must be a number > 0"):
        expand_grid(BASE, eps=[1.0, -1.0])
    with pytest.raises(ValueError, match="unknown RunConfig field 'epsilon'"):
        expand_grid(BASE, epsilon=[1.0])
    with pytest.raises(ValueError, match="no values"):
        expand_grid(BASE, lam=[])


def test_store_round_trip_is_atomic_json(tmp_path):
    store = ResultsStore(tmp_path / "res")
    cfg = RunConfig(**BASE)
    data = load_dataset("gaussian", num_silos=4, n=30)
    result = run_many([cfg], data)[0]
    assert result.data["name"] == "gaussian" and result.data["file"] is None  # generated data: no file
    assert store.put(result) is result
    assert store.has(cfg) and cfg in store and len(store) == 1
    (key,) = store.keys()  # the config's key and the data's: generated data are named by generator and options
    assert key == f"{cfg.key()}-{identity_digest({'generator': 'gaussian', 'options': {'num_silos': 4, 'n': 30}})}"
    on_disk = json.loads((tmp_path / "res" / f"{key}.json").read_text())
    assert RunConfig.from_dict(on_disk["config"]) == cfg and on_disk["key"] == key and on_disk["config_key"] == cfg.key()
    assert on_disk["test_metric"] == pytest.approx(result.test_metric)
    assert on_disk["accountant"] == "rdp" and on_disk["eps_spent"][0] == "inf"
    back = store.get(cfg.key())
    assert isinstance(back, RunResult) and back.config == cfg and back.test_metric == result.test_metric
    np.testing.assert_array_equal(back.noise_multipliers, result.noise_multipliers)
    np.testing.assert_array_equal(back.steps, result.steps)
    assert back.data == result.data
    # no temporary files are left behind; a stray one is ignored by readers
    assert [p.name for p in (tmp_path / "res").iterdir()] == [f"{key}.json"]
    (tmp_path / "res" / f".{key}.json.tmp-x").write_text("{trunc")
    assert len(list(store.rows())) == 1 and list(store.rows(method="fedavg")) == []
    assert [r.key for r in store.rows(method="mrmtl", lam=0.0)] == [cfg.key()]
    # a row of another engine version is skipped by rows()
    (tmp_path / "res" / "0123456789abcdef-0123456789ab.json").write_text(json.dumps({"engine_version": 1, "config": {}}))
    assert len(list(store.rows())) == 1


def test_results_of_real_data_record_the_file_and_checksum(tmp_path):
    from fedtrain.data.files import sha256_file

    try:
        data = load_dataset("school")
    except FileNotFoundError:
        pytest.skip("school.mat not available")
    (r,) = run_sweep([RunConfig(dataset="school", method="local", rounds=1)], data=data, store=tmp_path,
                     progress=False)
    back = ResultsStore(tmp_path).get(r.config)
    assert back.data["real"] and back.data["file"].endswith("school.mat")
    assert back.data["sha256"] == sha256_file(back.data["file"])


def test_atomic_write_failure_keeps_old_row(tmp_path, monkeypatch):
    store = ResultsStore(tmp_path)
    cfg = RunConfig(**BASE)
    store.put(fake_result(cfg, 1.0, identity=FAKE_DATA))
    import os

    def boom(*a, **k):  # interrupted between writing the temporary file and renaming it
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        store.put(fake_result(cfg, 2.0, identity=FAKE_DATA))
    assert store.get(cfg).test_metric == 1.0
    assert [p.name for p in tmp_path.iterdir()] == [f"{store.keys()[0]}.json"]


def test_unwritable_results_folder_fails_before_training(tmp_path):
    import os

    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="results folder .*sub is not writable"):  # cannot be created below a file
        run_sweep([RunConfig(**BASE)], store=tmp_path / "file" / "sub", runner=lambda cs, d: pytest.fail("trained"),
                  progress=False)
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        with pytest.raises(ValueError, match=f"results folder {ro} is not writable"):
            run_sweep([RunConfig(**BASE)], store=ro, runner=lambda cs, d: pytest.fail("trained"), progress=False)
    finally:
        os.chmod(ro, 0o700)


def test_sweep_interrupt_and_resume(tmp_path):
    grid = _grid()
    data = load_dataset("gaussian", num_silos=4, n=30)
    calls: list[str] = []

    def runner(cs, d):
        out = []
        for c in cs:
            if len(calls) == 3:
                raise KeyboardInterrupt("interrupted after 3 runs")
            calls.append(c.key())
            out.extend(run_many([c], d))
        return out

    store = ResultsStore(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(grid, store=store, data=data, runner=runner, chunk_size=1, progress=False)
    assert sorted(k.split("-")[0] for k in store.keys()) == sorted(calls) and len(calls) == 3
    stamps = {k: (tmp_path / f"{k}.json").stat().st_mtime_ns for k in store.keys()}

    calls2: list[str] = []

    def runner2(cs, d):
        calls2.extend(c.key() for c in cs)
        return run_many(cs, d)

    rows = run_sweep(grid, store=store, data=data, runner=runner2, chunk_size=4, progress=False)
    # every missing row trained; a chunk (cut from the whole grid, so that resumed rows keep their bits) that also
    # holds stored rows runs whole, but its stored rows are not rewritten (their files' times below)
    assert set(calls2) - set(calls) == set(c.key() for c in grid) - set(calls) and len(calls2) == len(set(calls2))
    assert len(store) == 8 and [r.key for r in rows] == [c.key() for c in grid]  # nothing lost or duplicated
    assert all((tmp_path / f"{k}.json").stat().st_mtime_ns == t for k, t in stamps.items())
    # a third run trains nothing
    run_sweep(grid, store=store, data=data, runner=lambda cs, d: pytest.fail("recomputed"), progress=False)


def test_sweep_rows_match_engine_and_summary(tmp_path):
    grid = _grid()
    data = load_dataset("gaussian", num_silos=4, n=30)
    rows = run_sweep(grid, store=None, data=data, progress=False)
    direct = run_many(grid, data)
    np.testing.assert_allclose([r.test_metric for r in rows], [r.test_metric for r in direct], rtol=1e-6)
    summary = summarize(rows, by=("eps", "lam"))
    assert len(summary) == 4 and all(s["n"] == 2 and s["seeds"] == [0, 1] and s["diverged"] == [] for s in summary)
    first = [r.test_metric for r in rows[:2]]
    assert summary[0]["mean"] == pytest.approx(np.mean(first)) and summary[0]["std"] == pytest.approx(np.std(first, ddof=1))
    assert summary[0]["eps_spent_max"] <= 2.0 + 1e-9 and summary[2]["eps_spent_max"] == math.inf
    # the same run listed twice counts once
    assert summarize(rows + rows[:1], by=("eps", "lam"))[0]["n"] == 2


def test_diverged_runs_are_reported_not_averaged():
    cfgs = expand_grid(BASE, seed=[0, 1, 2])
    rows = [fake_result(cfgs[0], 0.5), fake_result(cfgs[1], math.nan), fake_result(cfgs[2], 0.7)]
    assert rows[1].diverged and not rows[0].diverged
    (s,) = summarize(rows, by=("method",))
    assert s["n"] == 2 and s["seeds"] == [0, 2] and s["diverged"] == [1] and s["mean"] == pytest.approx(0.6)
    (s,) = summarize(rows[1:2], by=("method",))
    assert math.isnan(s["mean"]) and s["n"] == 0 and s["diverged"] == [1]
    # a diverged run survives the JSON round trip as NaN
    back = RunResult.from_dict(json.loads(json.dumps(rows[1].to_dict(), allow_nan=False)))
    assert back.diverged and math.isnan(back.test_metric)


def test_a_huge_lambda_diverges_and_is_reported():
    """λ = 1e308 is finite, so it is accepted; training overflows and the run is reported as diverged."""
    data = load_dataset("gaussian", num_silos=4, n=30)
    (r,) = run_many([RunConfig(**{**BASE, "lam": 1e308, "eps": math.inf})], data)
    assert r.diverged
    (s,) = summarize([r], by=("lam",))
    assert s["diverged"] == [0] and s["n"] == 0


def test_sweep_validates_whole_grid_before_training(tmp_path):
    # delta = 0.05 breaks the paper's rule delta < n^-1.1 for n = 30 training records (private runs only)
    grid = _grid() + [RunConfig(**{**BASE, "eps": 1.0, "delta": 0.05})]
    data = load_dataset("gaussian", num_silos=4, n=30)
    with pytest.raises(ValueError, match="delta must be < n_k"):
        run_sweep(grid, store=tmp_path, data=data, runner=lambda cs, d: pytest.fail("trained"), progress=False)
    assert len(ResultsStore(tmp_path)) == 0


def test_sweep_loads_data_from_config_options():
    cfg = RunConfig(**BASE)
    rows = run_sweep([cfg, cfg], progress=False)  # duplicates run once
    assert len(rows) == 2 and rows[0] is rows[1]
    assert rows[0].data["num_silos"] == 4 and rows[0].data["real"] is False


def test_jsonable():
    from fedtrain.encoding import encode

    assert jsonable is encode  # one encoder
    assert jsonable({"a": np.float32(1.5), "b": np.arange(2), "c": (math.inf, -math.inf, math.nan)}) == \
        {"a": 1.5, "b": [0, 1], "c": ["inf", "-inf", "nan"]}
    with pytest.raises(TypeError, match="cannot encode"):
        jsonable(object())
    with pytest.raises(ValueError, match="must be a folder"):
        ResultsStore(__file__)


def test_progress_only_on_a_terminal(monkeypatch):
    from fedtrain.sweep import _progress_enabled

    class Tty:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

    monkeypatch.setattr("sys.stdout", Tty(False))
    assert _progress_enabled(None) is False and _progress_enabled(True) is True
    monkeypatch.setattr("sys.stdout", Tty(True))
    assert _progress_enabled(None) is True and _progress_enabled(False) is False
