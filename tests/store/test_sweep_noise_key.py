"""A stored row is served only if its noise is the noise the calibration gives its plan now.

The calibration cache answers with any z it certifies (private, and minimal within rtol), so a cache entry a little
above the search's z passes its check; a sweep that trained with it stored a model that an uncached run would not
train under the same key.  :func:`fedtrain.sweep.run_sweep` compares each stored row's noise multipliers with
:func:`fedtrain.store.claims.calibrated_noise` and retrains (and replaces) a row whose noise is not current.
"""
from __future__ import annotations

import json
import shutil

import numpy as np

from fedtheory.privacy import calibration
from fedtrain.results import ResultsStore
from fedtrain.sweep import expand_grid, run_sweep


def _grid():
    base = dict(dataset="vehicle-standin", method="mrmtl", rounds=6, batch_size=64, lr=0.01, clip=1.0)
    return expand_grid(base, eps=[1.0, 4.0], lam=[1.0], seed=[0])


def _bits(rows):
    return [(r.config.key(), np.float32(r.test_metric).tobytes(), np.asarray(r.noise_multipliers).tobytes())
            for r in rows]


def _new_process():
    """Forget this process's calibrations (each sweep below stands for a run in a process of its own)."""
    calibration._MEMO.clear()


def _poison(folder, factor):
    files = sorted(folder.glob("*.json"))
    assert files, "the sweep wrote no calibration cache entries"
    for f in files:
        obj = json.loads(f.read_text())
        obj["noise_multiplier"] = obj["noise_multiplier"] * factor
        f.write_text(json.dumps(obj, sort_keys=True))


def test_a_row_trained_with_a_certified_but_other_cached_z_is_retrained(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("FEDBOOK_CACHE_DIR", str(cache))
    configs = _grid()
    clean = run_sweep(configs, store=tmp_path / "clean", progress=False)  # the search's z (the cache is empty)
    # z·(1 + 1e-5): still private and minimal within rtol = 1e-3, so the cache's check accepts it
    _poison(cache, 1 + 1e-5)
    _new_process()
    poisoned = run_sweep(configs, store=tmp_path / "work", progress=False)
    assert all(not np.array_equal(p.noise_multipliers, c.noise_multipliers) for p, c in zip(poisoned, clean))
    _new_process()
    # served as they are while the cache still answers with their noise
    assert _bits(run_sweep(configs, store=tmp_path / "work", progress=False)) == _bits(poisoned)
    shutil.rmtree(cache)  # an uncached run: the search's z again, so the stored rows are not this computation
    _new_process()
    again = run_sweep(configs, store=tmp_path / "work", progress=False)
    assert _bits(again) == _bits(clean)
    assert _bits([ResultsStore(tmp_path / "work").get(c) for c in configs]) == _bits(clean)  # replaced in the store
