"""A resumed sweep gives every row the bits an uninterrupted sweep of the same grid gives it.

The engine stacks a chunk's configurations and a stacked computation's float32 rounding depends on its batch-mates,
so a sweep interrupted while a chunk's rows were being written (or with some of a grid's rows deleted) used to
re-cut the missing rows into other chunks and train them with other batch-mates: 1-2 ulps apart from the
uninterrupted sweep's rows.  The chunks are now cut from the whole grid (:func:`fedtrain.sweep.run_sweep`).
"""
from __future__ import annotations

import numpy as np
import pytest

from fedtrain.results import ResultsStore
from fedtrain.sweep import expand_grid, run_sweep


def _grid():
    base = dict(dataset="vehicle-standin", method="mrmtl", rounds=20, batch_size=64, lr=0.01, clip=1.0, eval_every=5)
    return expand_grid(base, eps=[1.0, 4.0], lam=[0.1, 1.0, 10.0], seed=[0, 1])


class _Killed(Exception):
    pass


class _DiesWhileWriting(ResultsStore):
    """A store whose process dies after writing ``after`` rows (as a SIGKILL inside a chunk's writes would)."""

    def __init__(self, root, after: int):
        super().__init__(root)
        self.left = after

    def put(self, result):
        if self.left == 0:
            raise _Killed
        self.left -= 1
        return super().put(result)


def _bits(rows):
    return [(r.config.key(), np.float32(r.test_metric).tobytes(), np.asarray(r.curve, np.float32).tobytes(),
             np.asarray(r.noise_multipliers).tobytes()) for r in rows]


AFTER = 5


def test_a_sweep_killed_while_writing_a_chunk_resumes_bit_for_bit(tmp_path):
    configs = _grid()
    whole = run_sweep(configs, store=tmp_path / "whole", chunk_size=8, progress=False)
    with pytest.raises(_Killed):  # 3 rows of the first chunk written
        run_sweep(configs, store=_DiesWhileWriting(tmp_path / "resumed", after=AFTER), chunk_size=8, progress=False)
    assert len(ResultsStore(tmp_path / "resumed")) == AFTER
    resumed = run_sweep(configs, store=tmp_path / "resumed", chunk_size=8, progress=False)
    assert _bits(resumed) == _bits(whole)
    again = ResultsStore(tmp_path / "resumed")  # and what the store serves
    assert _bits([again.get(c) for c in configs]) == _bits(whole)


def test_a_grid_with_rows_deleted_recomputes_them_bit_for_bit(tmp_path):
    configs = _grid()
    whole = run_sweep(configs, store=tmp_path / "s", chunk_size=12, progress=False)
    store = ResultsStore(tmp_path / "s")
    for c in configs[::2]:  # rows removed here and there
        for key in store.keys():
            if key.startswith(c.key()):
                (store.root / f"{key}.json").unlink()
    calls = []

    def runner(cs, data):
        from fedtrain.engine import run_many

        calls.append(len(cs))
        return run_many(cs, data)

    again = run_sweep(configs, store=tmp_path / "s", chunk_size=12, progress=False, runner=runner)
    assert _bits(again) == _bits(whole)
    assert calls == [12]  # the whole chunk ran again (its stored rows were not rewritten)
