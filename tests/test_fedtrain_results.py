"""Results store and sweeps: atomic rows, skip finished runs, resume after an interruption."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fedtrain.config import RunConfig
from fedtrain.data import load_dataset
from fedtrain.engine import run_many
from fedtrain.results import ResultsStore, jsonable
from fedtrain.sweep import expand_grid, run_sweep, summarize

BASE = dict(dataset="gaussian", method="mrmtl", rounds=3, batch_size=10, lr=0.05, clip=5.0,
            dataset_options={"num_silos": 4, "n": 30})


def _grid():
    return expand_grid(BASE, eps=[2.0, math.inf], lam=[0.1, 1.0], seed=[0, 1])


def test_expand_grid_and_validation():
    grid = _grid()
    assert len(grid) == 8 and len({c.key() for c in grid}) == 8
    assert [c.seed for c in grid[:2]] == [0, 1]  # the last axis varies fastest
    with pytest.raises(ValueError, match=r"invalid configuration in the grid \(eps=-1.*eps must be > 0"):
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
    row = store.put(cfg, result, dataset={"name": "gaussian", "real": False}, wall_s=0.1)
    assert store.has(cfg) and cfg in store and len(store) == 1
    on_disk = json.loads((tmp_path / "res" / f"{cfg.key()}.json").read_text())
    assert on_disk == row == store.get(cfg.key())
    assert RunConfig.from_dict(on_disk["config"]) == cfg
    assert on_disk["result"]["test_metric"] == pytest.approx(result.test_metric)
    assert on_disk["result"]["accountant"] == "rdp" and on_disk["result"]["eps_spent"][0] == "inf"
    # no temporary files are left behind; a stray one is ignored by readers
    assert [p.name for p in (tmp_path / "res").iterdir()] == [f"{cfg.key()}.json"]
    (tmp_path / "res" / f".{cfg.key()}.json.tmp-x").write_text("{trunc")
    assert len(list(store.rows())) == 1 and list(store.rows(method="fedavg")) == []


def test_atomic_write_failure_keeps_old_row(tmp_path, monkeypatch):
    store = ResultsStore(tmp_path)
    cfg = RunConfig(**BASE)
    store.put(cfg, {"test_metric": 1.0})
    import fedtrain.results as results

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(results.os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        store.put(cfg, {"test_metric": 2.0})
    assert store.get(cfg)["result"]["test_metric"] == 1.0
    assert [p.name for p in tmp_path.iterdir()] == [f"{cfg.key()}.json"]


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
    assert sorted(store.keys()) == sorted(calls) and len(calls) == 3
    stamps = {k: (tmp_path / f"{k}.json").stat().st_mtime_ns for k in calls}

    calls2: list[str] = []

    def runner2(cs, d):
        calls2.extend(c.key() for c in cs)
        return run_many(cs, d)

    rows = run_sweep(grid, store=store, data=data, runner=runner2, chunk_size=4, progress=False)
    assert sorted(calls2) == sorted(set(c.key() for c in grid) - set(calls))  # nothing recomputed
    assert len(store) == 8 and [r["key"] for r in rows] == [c.key() for c in grid]  # nothing lost or duplicated
    assert all((tmp_path / f"{k}.json").stat().st_mtime_ns == t for k, t in stamps.items())
    # a third run trains nothing
    run_sweep(grid, store=store, data=data, runner=lambda cs, d: pytest.fail("recomputed"), progress=False)


def test_sweep_rows_match_engine_and_summary(tmp_path):
    grid = _grid()
    data = load_dataset("gaussian", num_silos=4, n=30)
    rows = run_sweep(grid, store=None, data=data, progress=False)
    direct = run_many(grid, data)
    np.testing.assert_allclose([r["result"]["test_metric"] for r in rows], [r.test_metric for r in direct], rtol=1e-6)
    summary = summarize(rows, by=("eps", "lam"))
    assert len(summary) == 4 and all(s["n"] == 2 and s["seeds"] == [0, 1] for s in summary)
    first = [r["result"]["test_metric"] for r in rows[:2]]
    assert summary[0]["mean"] == pytest.approx(np.mean(first)) and summary[0]["std"] == pytest.approx(np.std(first, ddof=1))
    assert summary[0]["eps_spent_max"] <= 2.0 + 1e-9 and summary[2]["eps_spent_max"] == math.inf


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
    assert rows[0]["dataset"]["num_silos"] == 4 and rows[0]["dataset"]["real"] is False


def test_jsonable():
    assert jsonable({"a": np.float32(1.5), "b": np.arange(2), "c": (math.inf, -math.inf)}) == \
        {"a": 1.5, "b": [0, 1], "c": ["inf", "-inf"]}
    with pytest.raises(TypeError, match="cannot store"):
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
