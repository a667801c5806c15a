"""Sweeps on Ray (:mod:`fedtrain.executors`): rows equal the local executor's, resume, retries, reported failures.

One local Ray session for the module (2 CPUs, no dashboard), shut down at the end.  The rows are expected
bit-identical to the local executor's: every batch is the same ``run_many`` call on the same machine with
one torch thread (tasks set ``torch.set_num_threads(1)``; the pytest process runs with
``OMP_NUM_THREADS=1`` as the Makefile sets it, and the local executor's numbers are taken in this process).
"""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from fedtrain.config import RunConfig  # noqa: E402
from fedtrain.executors import LocalExecutor, RayExecutor, SweepTaskError, get_executor  # noqa: E402
from fedtrain.results import ResultsStore  # noqa: E402
from fedtrain.sweep import expand_grid, run_sweep  # noqa: E402
from fedtrain.testing import FlakyRunner, tiny_federated  # noqa: E402

CHUNK = 4  # 12 configurations -> 3 batches (3 Ray tasks)


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def data():
    return tiny_federated("regression", num_silos=6, dim=3, n_range=(20, 60), seed=11)


@pytest.fixture(scope="module")
def grid():
    base = RunConfig(dataset="tiny", method="mrmtl", eps=2.0, delta=1e-4, lr=0.05, rounds=3, batch_size=8)
    return expand_grid(base, eps=[2.0, math.inf], lam=[0.1, 1.0], seed=[0, 1, 2])


def _rows(store: ResultsStore, configs):
    out = {}
    for c in configs:
        d = store.get(c).to_dict()
        d.pop("wall_time")
        out[c.key()] = d
    return out


@pytest.fixture(scope="module")
def local_rows(grid, data, tmp_path_factory):
    store = ResultsStore(tmp_path_factory.mktemp("local"))
    run_sweep(grid, store=store, data=data, chunk_size=CHUNK, progress=False)
    return _rows(store, grid)


def test_ray_rows_equal_the_local_executors(grid, data, local_rows, tmp_path):
    store = ResultsStore(tmp_path / "ray")
    rows = run_sweep(grid, store=store, data=data, chunk_size=CHUNK, progress=False, executor=RayExecutor())
    assert [r.key for r in rows] == [c.key() for c in grid] and len(store) == len(grid)
    got = _rows(store, grid)
    for key, want in local_rows.items():
        assert got[key] == want, f"row {key} differs between the executors"  # bit-identical, every field
    assert ray.is_initialized()  # an executor that did not start Ray leaves it running


def test_an_interrupted_sweep_resumes_only_the_missing_runs(grid, data, local_rows, tmp_path):
    """Batches that fail for good (no retries) are reported after the others are stored and write nothing;
    the same sweep run again runs exactly the missing configurations, with the local executor's numbers."""
    store = ResultsStore(tmp_path / "store")
    opts = dict(store=store, data=data, chunk_size=CHUNK, progress=False)
    with pytest.raises(SweepTaskError, match="3 batch") as info:
        run_sweep(grid, runner=FlakyRunner(tmp_path / "a", fail_times=10), executor=RayExecutor(retries=0), **opts)
    assert len(store) == 0 and "injected fault" in str(info.value)
    failing = _batches(grid)[1]
    with pytest.raises(SweepTaskError, match="1 batch"):
        run_sweep(grid, runner=FlakyRunner(tmp_path / "b", fail_times=10, fail_keys={failing[0]}),
                  executor=RayExecutor(retries=0), **opts)
    assert len(store) == len(grid) - CHUNK and not any(store.has(k) for k in failing)  # no partial batch
    resumed = FlakyRunner(tmp_path / "c", fail_times=0)
    run_sweep(grid, runner=resumed, executor=RayExecutor(), **opts)
    assert sorted(k for call in resumed.calls() for k in call) == sorted(failing)  # exactly the missing batch
    assert _rows(store, grid) == local_rows


def _batches(grid):
    """The batches run_sweep forms (sorted by the stacking key, then cut into CHUNK)."""
    from fedtrain.sweep import _batch_order

    pending = sorted(grid, key=_batch_order)
    return [[c.key() for c in pending[i:i + CHUNK]] for i in range(0, len(pending), CHUNK)]


def _first_keys(grid):
    return [b[0] for b in _batches(grid)]


def test_a_failing_task_is_retried(grid, data, local_rows, tmp_path):
    """Every batch fails once (injected); with one retry the sweep completes with the local numbers."""
    flaky = FlakyRunner(tmp_path / "flaky", fail_times=1)
    store = ResultsStore(tmp_path / "store")
    run_sweep(grid, store=store, data=data, chunk_size=CHUNK, progress=False, runner=flaky,
              executor=RayExecutor(retries=1))
    assert _rows(store, grid) == local_rows
    per_batch = {}
    for call in flaky.calls():
        per_batch[call[0]] = per_batch.get(call[0], 0) + 1
    assert sorted(per_batch) == sorted(_first_keys(grid)) and set(per_batch.values()) == {2}  # failed, then ran


def test_the_cli_sweeps_on_ray(tmp_path, local_rows):
    """``fedtrain sweep --executor ray`` (uses the running Ray) gives the rows of ``--executor local``."""
    from fedtrain.cli import main

    args = ["sweep", "--dataset", "school-standin", "--method", "local,mrmtl", "--eps", "3", "--lam", "0.1",
            "--lr", "0.05", "--rounds", "2", "--seeds", "0,1", "--chunk-size", "2", "--json", "--no-progress"]
    assert main(args + ["--results", str(tmp_path / "a"), "--executor", "local"]) == 0
    assert main(args + ["--results", str(tmp_path / "b"), "--executor", "ray", "--retries", "1"]) == 0
    a, b = ResultsStore(tmp_path / "a"), ResultsStore(tmp_path / "b")
    assert sorted(a.keys()) == sorted(b.keys()) and len(a) == 4
    for key in a.keys():
        ra, rb = a.get(key).to_dict(), b.get(key).to_dict()
        ra.pop("wall_time"), rb.pop("wall_time")
        assert ra == rb


def test_executor_options_are_validated():
    with pytest.raises(ValueError, match="executor must be one of"):
        get_executor("dask")
    with pytest.raises(ValueError, match="retries must be"):
        RayExecutor(retries=-1)
    with pytest.raises(ValueError, match="num_cpus applies to a local Ray"):
        RayExecutor(address="auto", num_cpus=2)
    with pytest.raises(ValueError, match="takes no options"):
        get_executor("local", retries=1)
    assert isinstance(get_executor(None), LocalExecutor)


def test_missing_ray_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'fedbook\[ray\]'"):
        RayExecutor().start()


def test_local_numbers_are_unchanged_by_the_executor_layer(grid, data, local_rows):
    """The default path (no executor given) still runs run_many per batch: same rows as LocalExecutor's."""
    rows = run_sweep(grid, data=data, chunk_size=CHUNK, progress=False)
    for r in rows:
        d = r.to_dict()
        d.pop("wall_time")
        assert d == local_rows[r.key]
    assert np.isfinite([r.test_metric for r in rows]).all()
