"""The real-image Fig. 6 grid in the committed store: packing a grid's finished rows (fedtrain.book_results.pack_grid,
``fedtrain grid GRID --pack DIR``) on fake rows, and the committed file ``results/`` holds.

``test_committed_real_image_row_reproduces`` retrains one committed row of each real-image grid chosen at random (a ConvNet
run of minutes on one core); it runs only with ``FEDBOOK_SLOW=1`` (the draw's seed is printed; set
``FEDBOOK_RESULTS_SAMPLE_SEED`` to repeat it).  The grid's rows were computed one run at a time, as the test
recomputes them, so on the machine that computed a row the numbers must agree within float32 rounding
(``rtol = 1e-5``).  A row whose provenance names another machine (another CPU, torch version and float32 kernels:
8,000 DP-SGD steps then take other rounding paths) must agree within 0.005 accuracy (50 of the 10,000 test
images) in its final accuracy, and within 0.05 at the curve's earlier evaluations.  Measured on rows of the lent
machine recomputed on the 2-core one: final accuracies 3e-4 apart (0.4280 against 0.4283, Local, ε = 4), 6e-4
and 1.1e-3 (two noiseless λ = 1 runs of Fig. 6), 4e-4 and 2e-4 (noiseless FedAvg and Finetune of Fig. 3(d)),
against seed-to-seed standard errors of 0.002-0.008; but the two noiseless Fig. 6 runs were 0.023 and 0.033
apart at round 10, where a run without noise still moves fast and amplifies rounding differences, and 0.011 at
round 20.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import random
import time

import numpy as np
import pytest

from fedtrain.book_results import committed_store, grid_file, grid_rows, grid_store_note, pack_grid, pack_store
from fedtrain.config import ENGINE_VERSION
from fedtrain.presets import REAL_IMAGE_GRIDS, deep_grid
from fedtrain.results import (DEFAULT_RESULTS_DIR, MANIFEST, CommittedStore, ResultsStore, ResultsStoreError,
                              StaleStoreError)
from fedtrain.testing import fake_result
from tests.conftest import slow

GRID = "fig6-fashion"
SEED_ENV = "FEDBOOK_RESULTS_SAMPLE_SEED"
IDENTITY = {"files": {"train-images-idx3-ubyte": "0" * 64}}


def _work(tmp_path, configs, *, identity=IDENTITY):
    store = ResultsStore(tmp_path / "work", command="fedtrain grid fig6-fashion", commit="a" * 40)
    for i, c in enumerate(configs):
        store.put(fake_result(c, float(np.float32(0.5 + 0.001 * i)), metric="accuracy", num_silos=3,
                              identity=identity, curve=[0.25, 0.5], wall_time=10.0))
    return store


def _committed_copy(tmp_path):
    """A copy of results/'s manifest without the grid's entry (the preset's files are not needed to pack a grid)."""
    out = tmp_path / "out"
    out.mkdir()
    m = json.loads((DEFAULT_RESULTS_DIR / MANIFEST).read_text())
    m["files"] = {}
    (out / MANIFEST).write_text(json.dumps(m))
    return out


def test_pack_grid_packs_the_grids_rows_counts_the_missing_and_is_idempotent(tmp_path):
    grid = deep_grid(GRID)
    done = grid[:20]
    work = _work(tmp_path, done)
    outside = done[0].replace(lam=10.0, method="mrmtl")  # a λ the grid no longer has
    work.put(fake_result(outside, 0.1, metric="accuracy", num_silos=3, identity=IDENTITY))
    out = _committed_copy(tmp_path)
    entry = pack_grid(GRID, work=work.root, out=out)
    assert entry["file"] == grid_file(GRID) == "rotated-masked-fashion.json.gz"
    assert (entry["present"], entry["missing"], entry["grid_runs"], entry["left_out"]) == (20, len(grid) - 20,
                                                                                           len(grid), 1)
    assert sum(entry["missing_by_cell"].values()) == len(grid) - 20
    assert entry["commits"] == ["a" * 40] and entry["seconds_in_runs"] == pytest.approx(200.0)
    assert entry["data_identity"] == IDENTITY and entry["engine_version"] == ENGINE_VERSION
    assert entry["pack_command"].endswith(f"{GRID} --pack out")
    raw = (out / entry["file"]).read_bytes()
    doc = json.loads(gzip.decompress(raw))
    assert doc["present"] == 20 and len(doc["missing"]) == len(grid) - 20 and doc["grid"] == GRID
    assert {(m["method"], m["eps"], m["lam"], m["seed"], m["mask_ratio"]) for m in doc["missing"]} == {
        (c.method, c.eps if math.isfinite(c.eps) else "inf", c.lam, c.seed, c.dataset_options["mask_ratio"])
        for c in grid[20:]}
    manifest = (out / MANIFEST).read_bytes()
    # the committed store reads it (engine version and SHA-256 checked) and serves the rows in the grid's order
    store = committed_store(out)
    rows = grid_rows(store, GRID)
    assert [r.config for r in rows] == done and store.grid_info(GRID)["present"] == 20
    assert store.get(outside) is None
    note = grid_store_note(store, GRID)
    assert "rotated-masked-fashion.json.gz" in note and f"20 of {len(grid)} runs of the grid" in note
    assert store.note("rotated-masked-fashion") == note
    # packing again: the same bytes; with more rows: the counts grow
    pack_grid(GRID, work=work.root, out=out)
    assert (out / entry["file"]).read_bytes() == raw and (out / MANIFEST).read_bytes() == manifest
    _work(tmp_path, grid[20:30])
    assert pack_grid(GRID, work=work.root, out=out)["present"] == 30
    # a file packed for another definition of the grid (e.g. another λ grid) is refused, naming the command
    m = json.loads((out / MANIFEST).read_text())
    m["files"][entry["file"]]["grid_digest"] = "0" * 16
    (out / MANIFEST).write_text(json.dumps(m))
    with pytest.raises(StaleStoreError, match=r"another definition of grid fig6-fashion.*--pack results"):
        grid_rows(committed_store(out), GRID)
    # a damaged grid file fails loudly and names the grid's own commands
    (out / entry["file"]).write_bytes(raw[:-5])
    with pytest.raises(StaleStoreError, match=r"does not match the SHA-256.*fedtrain grid fig6-fashion"):
        committed_store(out)


def test_pack_grid_packs_a_grid_without_mask_ratios(tmp_path):
    """fig3d-fashion's runs have no mask ratio: its missing runs are counted by ε and seed."""
    grid = deep_grid("fig3d-fashion")
    work = _work(tmp_path, grid[:9])
    entry = pack_grid("fig3d-fashion", work=work.root, out=_committed_copy(tmp_path))
    assert entry["file"] == "hetero-fashion.json.gz" and (entry["present"], entry["missing"]) == (9, len(grid) - 9)
    assert sum(entry["missing_by_cell"].values()) == len(grid) - 9
    assert all(cell.startswith("eps=") for cell in entry["missing_by_cell"])


def test_pack_store_keeps_the_grids_entry(tmp_path, monkeypatch):
    """``make results`` rewrites the manifest from the preset's working stores: the grid's file and entry stay."""
    import fedtrain.book_results as br

    name, scale, configs = br.preset_targets("reduced")[2]
    monkeypatch.setattr(br, "preset_targets", lambda preset: [(name, scale, configs[:3])])  # a three-row preset
    pre = ResultsStore(tmp_path / "pre" / name, command="fake", commit="0" * 40)
    for c in configs[:3]:
        pre.put(fake_result(c, 0.02, num_silos=3, identity={"generator": "fake"}))
    out = tmp_path / "out"
    pack_store("reduced", work=tmp_path / "pre", out=out)
    _work(tmp_path, deep_grid(GRID)[:5])
    entry = pack_grid(GRID, work=tmp_path / "work", out=out)
    pack_store("reduced", work=tmp_path / "pre", out=out)  # the preset packed again
    m = json.loads((out / MANIFEST).read_text())
    assert m["files"][entry["file"]]["sha256"] == entry["sha256"] and f"{name}.json.gz" in m["files"]
    store = CommittedStore(out)
    assert len(store) == 3 + 5 and len(grid_rows(store, GRID)) == 5


def test_pack_grid_refuses_what_it_cannot_pack(tmp_path):
    out = _committed_copy(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        pack_grid(GRID, work=tmp_path / "nothing", out=out)
    with pytest.raises(ValueError, match="grid must be one of"):
        pack_grid("fig9", work=tmp_path, out=out)
    with pytest.raises(ValueError, match=r"MANIFEST.json does not exist"):
        pack_grid(GRID, work=tmp_path, out=tmp_path / "empty")
    (tmp_path / "work").mkdir()
    with pytest.raises(ValueError, match="holds no run of grid"):
        pack_grid(GRID, work=tmp_path / "work", out=out)
    grid = deep_grid(GRID)
    _work(tmp_path, grid[:2])
    _work(tmp_path, grid[2:4], identity={"files": {"train-images-idx3-ubyte": "1" * 64}})
    with pytest.raises(ResultsStoreError, match="2 different data"):
        pack_grid(GRID, work=tmp_path / "work", out=out)
    # one run of the grid trained twice, on different data: the packer will not choose
    _work(tmp_path, grid[:1], identity={"files": {"train-images-idx3-ubyte": "1" * 64}})
    c = grid[0]
    with pytest.raises(ResultsStoreError, match=rf"holds 2 rows of {c.method} eps={c.eps} lam={c.lam} seed={c.seed} "
                                                r"mask=0.0, trained on different data"):
        pack_grid(GRID, work=tmp_path / "work", out=out)


# --------------------------------------------------------------------------------------------------
# the committed file
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def committed():
    store = committed_store()
    if grid_file(GRID) not in store.manifest["files"]:
        pytest.skip(f"results/ holds no {GRID} rows (fedtrain grid {GRID} --pack results)")
    return store


def test_committed_fig6_fashion_rows_belong_to_the_grid_and_the_counts_are_right(committed):
    grid = deep_grid(GRID)
    keys = {c.key() for c in grid}
    info = committed.grid_info(GRID)
    doc = committed.docs[info["file"]]
    stored = [committed.get(r["key"]) for r in doc["rows"]]
    assert stored and all(r.config.key() in keys for r in stored)  # every row is a run of the grid
    assert len({r.config.key() for r in stored}) == len(stored)
    present = sum(committed.has(c) for c in grid)
    assert info["present"] == doc["present"] == info["rows"] == len(stored) == present
    assert info["grid_runs"] == doc["grid_runs"] == len(grid)
    assert info["missing"] == len(doc["missing"]) == len(grid) - present == sum(info["missing_by_cell"].values())
    missing = {(m["method"], m["mask_ratio"], m["eps"], m["lam"], m["seed"]) for m in doc["missing"]}
    assert missing == {(c.method, c.dataset_options["mask_ratio"], c.eps if math.isfinite(c.eps) else "inf", c.lam,
                        c.seed) for c in grid if not committed.has(c)}
    for r in stored:  # provenance and the privacy record of each row
        prov = committed.provenance(r.config)
        assert prov["engine_version"] == ENGINE_VERSION and prov["commit"] in info["commits"] and prov["seconds"] > 0
        assert r.data["real"] and r.data["identity"] == info["data_identity"]
        if math.isfinite(r.config.eps):
            assert max(r.eps_spent) <= r.config.eps + 1e-9 and r.accountant == "rdp"
            assert "add/remove" in r.adjacency


@slow
@pytest.mark.parametrize("grid", sorted(REAL_IMAGE_GRIDS))
def test_committed_real_image_row_reproduces(committed, grid):
    """One committed row of the grid, drawn at random, retrained alone gives the stored numbers."""
    if grid_file(grid) not in committed.manifest["files"]:
        pytest.skip(f"results/ holds no {grid} rows yet")
    from fedtrain.engine import run
    from fedtrain.results import row_key
    from fedtrain.store.provenance import machine
    from fedtrain.sweep import load_config_data

    seed = int(os.environ.get(SEED_ENV, random.SystemRandom().randrange(2**31)))
    rows = grid_rows(committed, grid)
    stored = random.Random(seed).choice(rows)
    c = stored.config
    print(f"\n{grid} row sample: {SEED_ENV}={seed}: {c.method} mask={c.dataset_options.get('mask_ratio')} eps={c.eps} "
          f"lam={c.lam} seed={c.seed}")
    data = load_config_data(c)
    assert row_key(c, data.identity()) == committed._row_key(c)  # recomputed on the data it was computed on
    t0 = time.perf_counter()
    again = run(c, data)
    print(f"  stored {stored.test_metric!r}, recomputed {again.test_metric!r} ({time.perf_counter() - t0:.0f} s)")
    assert (again.curve is None) == (stored.curve is None)  # a grid without eval_every records no curve
    want = np.concatenate([[stored.test_metric], [] if stored.curve is None else np.ravel(stored.curve)])
    got = np.concatenate([[again.test_metric], [] if again.curve is None else np.ravel(again.curve)])
    elsewhere = committed.provenance(c).get("machine") not in (None, machine())  # rows before the field: this machine
    print(f"  computed on {committed.provenance(c).get('machine') or 'this machine (no machine recorded)'}")
    if elsewhere:  # the final accuracy within 0.005, the curve's earlier points within 0.05 (module docstring)
        np.testing.assert_allclose(got[0], want[0], rtol=0, atol=0.005)
        np.testing.assert_allclose(got[1:], want[1:], rtol=0, atol=0.05)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(again.noise_multipliers, stored.noise_multipliers, rtol=1e-12)
    np.testing.assert_array_equal(again.steps, stored.steps)


def _runner():
    """``fedtrain grid``'s module."""
    from fedtrain import grids

    return grids


def test_the_runner_archives_with_pack_and_a_fresh_store_resumes_from_the_archive(tmp_path, monkeypatch, capsys):
    runner = _runner()
    grid = deep_grid(GRID)
    work = _work(tmp_path, grid)  # the whole grid, fake rows: nothing is left to train
    out = _committed_copy(tmp_path)
    assert runner.main([GRID, "--store", str(work.root), "--pack", str(out)]) == 0
    archive = out / "raw" / f"{GRID}.jsonl.gz"
    assert len(gzip.decompress(archive.read_bytes()).splitlines()) == len(grid)
    # a fresh machine: an empty work store, the committed archive where the runner looks for it
    monkeypatch.setattr(runner, "RAW_ARCHIVE", lambda g: archive)
    monkeypatch.setattr(runner, "run_sweep", lambda *a, **k: pytest.fail("the runner trained a stored run"))
    fresh = tmp_path / "fresh"
    assert runner.main([GRID, "--store", str(fresh)]) == 0
    said = capsys.readouterr().out
    assert f"restored {len(grid)} rows" in said and f"{len(grid)} of {len(grid)} runs" in said
    for f in work.root.glob("*.json"):
        assert (fresh / f.name).read_bytes() == f.read_bytes()


def test_the_runners_shards_split_the_missing_runs_and_stop_by_starts_no_run_past_its_limit(tmp_path, monkeypatch,
                                                                                         capsys):
    runner = _runner()
    grid = deep_grid(GRID)
    work = _work(tmp_path, grid[:-7])  # 7 runs missing
    order = sorted(grid, key=lambda c: (c.seed, *runner.block(c)))  # the runner's order: seed, mask ratio, ε
    missing = {c.key() for c in grid[-7:]}

    def share(i, n):  # the shard's runs of the whole ordered grid that are missing
        return [c.key() for c in order[i::n] if c.key() in missing]
    monkeypatch.setattr(runner, "RAW_ARCHIVE", lambda g: tmp_path / "no-archive.jsonl.gz")
    trained = []
    clock = [0.0]

    def fake_sweep(configs, store, **kw):  # each run "takes" 100 s of the runner's clock
        clock[0] += 100.0
        trained.extend(configs)
        return [fake_result(configs[0], 0.5, metric="accuracy", num_silos=3, identity=IDENTITY)]

    monkeypatch.setattr(runner, "run_sweep", fake_sweep)
    monkeypatch.setattr(runner.time, "perf_counter", lambda: clock[0])
    assert runner.main([GRID, "--store", str(work.root), "--shard", "1/3"]) == 0
    assert [c.key() for c in trained] == share(1, 3) and share(1, 3)
    trained.clear()
    clock[0] = 0.0
    # a limit of 250 s: after two runs (200 s, the last 100 s) a third would end at 300 s
    assert len(share(0, 1)) == 7
    assert runner.main([GRID, "--store", str(work.root), "--shard", "0/1", "--stop-by", "250"]) == 0
    assert [c.key() for c in trained] == share(0, 1)[:2]
    assert "stopping" in capsys.readouterr().out
    for bad in (["--shard", "3/3"], ["--shard", "a/b"], ["--workers", "0"], ["--stop-by", "0"],
                ["--workers", "2", "--shard", "0/2"]):
        with pytest.raises(ValueError, match="--shard|--workers|--stop-by"):
            runner.main([GRID, "--store", str(work.root), *bad])
