"""The book's paper-scale path (``make book FULL=1``): the FULL grids expand to the paper's settings, and an
interrupted paper-scale sweep resumes from the results store.  Nothing here trains (fake runners)."""
from __future__ import annotations

import math

import pytest

from fedtrain.data import load_dataset
from fedtrain.data.registry import split_seed_option
from fedtrain.presets import LAMBDA_GRID, LR_GRID, PAPER_DEFAULTS, REDUCED, REDUCED_EPS, book_grid, full_scale
from fedtrain.results import ResultsStore
from fedtrain.sweep import run_sweep
from fedtrain.testing import fake_result

DATASETS = ("school", "vehicle-standin", "gleam-standin")


def _paper(ds):
    return PAPER_DEFAULTS[ds.split("-")[0]]


@pytest.mark.parametrize("ds", DATASETS)
@pytest.mark.parametrize("fig", ("fig2", "fig3", "fig4", "fig5"))
def test_full_grids_have_the_papers_settings(fig, ds):
    grid = book_grid(fig, ds, full=True)
    paper = _paper(ds)
    # 5 repeats (App. C.4), each re-splitting the silos as the paper's code does (seeds s + 1000 r)
    assert {c.seed for c in grid} == {0, 1000, 2000, 3000, 4000}
    split = split_seed_option(ds)
    assert {(c.seed, c.dataset_options[split]) for c in grid} == {(1000 * r, 1000 * r) for r in range(5)}
    assert {c.rounds for c in grid} == {paper["rounds"]}
    assert {(c.batch_size, c.clip, c.delta) for c in grid} == {(paper["batch_size"], paper["clip"], paper["delta"])}
    assert {c.local_epochs for c in grid} == {1}
    lrs = {c.lr for c in grid}
    assert lrs <= set(LR_GRID)
    if fig == "fig2" or (fig == "fig5" and ds == "school"):
        assert lrs == {0.01}  # Figs. 2 and A2 fix eta = 0.01; School's lambda panels use it too
    else:
        assert lrs == set(LR_GRID)  # the paper's learning-rate grid
    for m in ("mrmtl", "ditto", "mocha"):
        lams = {c.lam for c in grid if c.method == m}
        if lams:
            assert lams == set(LAMBDA_GRID)  # the paper's lambda grid for MR-MTL, Ditto, Mocha
    eps = {c.eps for c in grid}
    assert math.inf in eps
    if ds == "school" and fig != "fig2":
        assert {1.0, 2.0, 3.0, 4.0, 6.0, 8.0} <= eps  # Fig. A4's levels
    if fig == "fig3":
        methods = {c.method for c in grid}
        assert methods == {"local", "fedavg", "finetune", "mrmtl", "ditto", "mocha", "ifca"}
        assert {c.select_frac for c in grid if c.method == "ifca"} == {0.1}  # "IFCA (10%)"
    if fig == "fig4":
        assert {c.select_frac for c in grid if c.method == "ifca"} == {1.0}  # selection every round
    assert len({c.key() for c in grid}) == len(grid)


def test_reduced_grids_and_environment(monkeypatch):
    for ds in DATASETS:
        for fig in ("fig2", "fig3", "fig4", "fig5"):
            grid = book_grid(fig, ds, full=False)
            red = REDUCED[ds]
            assert {c.rounds for c in grid} == {red["rounds"]} and {c.lr for c in grid} == {red["lr"]}
            assert {c.seed for c in grid} == {1000 * r for r in range(red["repeats"])}
            five = book_grid(fig, ds, scale="reduced-5")
            assert {c.seed for c in five} == {1000 * r for r in range(5)}
            assert {c.replace(seed=0, dataset_options={}) for c in five} == \
                {c.replace(seed=0, dataset_options={}) for c in grid}  # the same grid, 5 repeats
        if ds in REDUCED_EPS:
            assert {c.eps for c in book_grid("fig5", ds, full=False)} == set(REDUCED_EPS[ds])
    monkeypatch.setenv("FEDBOOK_FULL", "1")
    assert full_scale() and book_grid("fig5", "school") == book_grid("fig5", "school", full=True)
    monkeypatch.setenv("FEDBOOK_FULL", "0")
    assert not full_scale() and book_grid("fig5", "school") == book_grid("fig5", "school", full=False)


def test_interrupted_full_sweep_resumes_from_the_store(tmp_path):
    grid = [c for c in book_grid("fig5", "vehicle-standin", full=True) if c.seed == 0]  # one repeat: one split
    data = load_dataset("vehicle-standin")
    assert len(grid) > 400
    done: list[str] = []

    def interrupted(cs, d):
        if len(done) >= 100:
            raise KeyboardInterrupt("stopped mid-sweep")
        done.extend(c.key() for c in cs)
        return [fake_result(c, 0.5, metric="accuracy") for c in cs]

    store = ResultsStore(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(grid, store=store, data=data, runner=interrupted, chunk_size=50, progress=False)
    assert len(done) == 100 and sorted(k.split("-")[0] for k in store.keys()) == sorted(done)  # both chunks stored

    rest: list[str] = []

    def resumed(cs, d):
        rest.extend(c.key() for c in cs)
        return [fake_result(c, 0.5, metric="accuracy") for c in cs]

    rows = run_sweep(grid, store=store, data=data, runner=resumed, chunk_size=50, progress=False)
    assert set(rest) == {c.key() for c in grid} - set(done) and len(rest) == len(grid) - 100  # nothing redone
    assert [r.key for r in rows] == [c.key() for c in grid] and len(store) == len(grid)


def test_grid_note_names_the_grid():
    from fedtrain.presets import REDUCED, grid_note

    assert grid_note("school", full=True).startswith("paper-scale grid") and "5 repeats" in grid_note("school", full=True)
    r = REDUCED["school"]
    assert grid_note("school", full=False) == f"reduced grid: {r['rounds']} rounds, η={r['lr']}, 2 repeats"
    assert grid_note("school", scale="reduced-5") == f"reduced grid: {r['rounds']} rounds, η={r['lr']}, 5 repeats"
    with pytest.raises(ValueError, match="scale must be one of"):
        grid_note("school", scale="huge")
    with pytest.raises(ValueError, match="dataset must be one of"):
        grid_note("nope", full=False)


def test_gaussian_lambda_sweep_reports_the_privacy_it_ran_with():
    from fedtrain.config import default_delta
    from fedtrain.sweep import gaussian_lambda_sweep

    out = gaussian_lambda_sweep(eps_values=(2.0, math.inf), lams=(0.0, 1.0), num_silos=3, n=20, data_seeds=(0, 1),
                                rounds=2)
    assert out[2.0]["delta"] == default_delta(20) and out[2.0]["accountant"] == "rdp"
    assert out[math.inf]["delta"] is None and out[math.inf]["accountant"] is None
    assert out[2.0]["runs"].shape == (2, 2) and out[2.0]["mean"] == pytest.approx(out[2.0]["runs"].mean(1))
