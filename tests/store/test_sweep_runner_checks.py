"""run_sweep checks what a runner returns before storing any of a batch: one result per configuration, each of its
own configuration, trained on the data the sweep loaded (fedtrain.sweep._check_batch_results)."""
from __future__ import annotations

import pytest

from fedtrain.config import RunConfig
from fedtrain.results import ResultsStore
from fedtrain.sweep import run_sweep
from fedtrain.testing import fake_result, tiny_federated

DATA = tiny_federated("regression", num_silos=3, dim=4, n_range=(30, 30), seed=0)
GRID = [RunConfig("tiny", "local", eps=2.0, delta=1e-5, lr=0.5, rounds=2, batch_size=4096, seed=s) for s in (0, 1)]


@pytest.mark.parametrize("runner, message", [
    (lambda cs, d: [fake_result(c, 0.5) for c in cs][:-1], "runner returned 1 results for 2 configurations"),
    (lambda cs, d: [fake_result(c.replace(seed=c.seed + 7), 0.5) for c in cs], "result of another configuration"),
    (lambda cs, d: [fake_result(c, 0.5, identity={"generator": "other"}) for c in cs], "trained on other data"),
])
def test_a_wrong_batch_is_refused_and_nothing_of_it_is_stored(tmp_path, runner, message):
    store = ResultsStore(tmp_path / "s")
    with pytest.raises(RuntimeError, match=message):
        run_sweep(GRID, store=store, data=DATA, runner=runner, progress=False)
    assert len(store) == 0


def _without_data(c):
    r = fake_result(c, 0.5)
    r.data = {}
    return r


def test_a_result_without_a_data_record_gets_the_sweeps():
    rows = run_sweep(GRID, data=DATA, runner=lambda cs, d: [_without_data(c) for c in cs], progress=False)
    assert all(r.data == DATA.summary() for r in rows)
