"""The committed results store: its rows reproduce, an out-of-date store fails loudly, and the
compact committed form round-trips what the figures read.

``test_committed_rows_reproduce`` retrains a few rows of ``results/`` chosen at random (the seed is printed;
set ``FEDBOOK_RESULTS_SAMPLE_SEED`` to repeat a draw, ``FEDBOOK_RESULTS_SAMPLE_SIZE`` to change the count) and
compares them with the stored numbers within float32 tolerance: ``rtol = 1e-5`` (about 170 float32 ulps, room
for another CPU's rounding) with ``atol = 1e-7``, on the final test metric and on every point of the learning
curve; noise multipliers and step counts must match exactly (``rtol = 1e-12``).

The store was computed in batches (:func:`fedtrain.engine.run_many` stacks up to 64 configurations) and a
recomputation runs one configuration alone.  The two agree up to float32 rounding, which depends on the batch's
size (the kernels' summation order), and most runs amplify it only mildly: relative differences of at most
3e-7 on 36 of 40 sampled rows (``benchmarks/README.md``).  Runs near the edge of stability amplify it chaotically (MR-MTL on
the stand-ins at 200-400 rounds: 4 of those 40 rows differed by 1.6e-4 to 2.3e-3; the same configuration
trained in a batch of 2, 3 or 4 differs from itself alone by as much, or not at all, depending on the size).
For a row that misses the strict tolerance the test therefore measures how sensitive the row is to
rounding-sized perturbations: ``spread``, the largest difference over the final metric and the curve between
the row and the row retrained with η changed by ±4e-7 relative (about 3 float32 ulps, applied at every step
as a different summation order's errors are), and accepts the row within
``rtol·|stored| + atol + CHAOS_FACTOR·spread``.  A row that is not sensitive (spread near 0) keeps the strict
check.
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

from fedtrain.config import ENGINE_VERSION, RunConfig
from fedtrain.book_results import (BookStore, committed_store, compute_preset, figure_grid, figure_rows, pack_store,
                                   preset_targets, store_note, theory_rows)
from fedtrain.results import (DEFAULT_RESULTS_DIR, MANIFEST, REGENERATE_COMMAND, CommittedStore, ResultsStore,
                              StaleStoreError, row_key)
from fedtrain.sweep import run_sweep
from fedtrain.testing import fake_result

RTOL, ATOL = 1e-5, 1e-7
CHAOS_FACTOR = 10.0  # tolerance in units of a row's own sensitivity to rounding (module docstring)
ULP_STEP = 4e-7  # the relative change of η that measures it: about 3 float32 ulps
SEED_ENV, SIZE_ENV = "FEDBOOK_RESULTS_SAMPLE_SEED", "FEDBOOK_RESULTS_SAMPLE_SIZE"


# --------------------------------------------------------------------------------------------------
# the committed store itself
# --------------------------------------------------------------------------------------------------
def test_committed_store_is_current_and_complete():
    """``results/`` was written by this engine version, holds every row of its preset, and says its scale."""
    store = committed_store()  # StaleStoreError, naming `make results`, if the engine changed since
    preset = store.manifest["preset"]
    for name, scale, configs in preset_targets(preset):
        info = store.info(name)
        assert info["scale"] == scale and info["rows"] == len(configs)
        assert all(store.has(c) for c in configs), name
        note = store_note(store, name)
        assert info["file"] in note and f"engine v{ENGINE_VERSION}" in note
    assert store.manifest["wall_seconds"] > 0
    total = sum(os.path.getsize(DEFAULT_RESULTS_DIR / f) for f in store.manifest["files"])
    assert total < 8e6  # a few MB: no weights, per-silo arrays stored once


def test_committed_rows_reproduce():
    """A random sample of stored rows, retrained one by one, gives the stored numbers (float32 tolerance)."""
    from fedtrain.engine import run
    from fedtrain.sweep import load_config_data

    store = committed_store()
    seed = int(os.environ.get(SEED_ENV, random.SystemRandom().randrange(2**31)))
    size = int(os.environ.get(SIZE_ENV, 3))
    print(f"\nresults sample: {SEED_ENV}={seed} {SIZE_ENV}={size} (set them to repeat this draw)")
    rng = random.Random(seed)
    # the preset's rows (seconds each); the real-image grids' rows (minutes each) have their own, opt-in test
    # (tests/store/test_fig6_fashion_store.py), FedHDP's client-level rows theirs (tests/fedhdp/test_fedhdp_claims_*)
    grid_files = {f for f, info in store.manifest["files"].items() if info.get("grid") or info.get("unit") == "client"}
    keys = rng.sample([k for k in store.keys() if store.file_of(k) not in grid_files], size)
    t0 = time.perf_counter()
    for key in keys:
        stored = store.get(key)
        prov = store.provenance(key)
        assert prov["engine_version"] == ENGINE_VERSION and prov["command"] and prov["commit"]
        c = stored.config
        data = load_config_data(c)
        assert row_key(c, data.identity()) == key  # the row is filed under the data it is recomputed on
        again = run(c, data)
        what = (f"row {key} ({c.method} on {c.dataset} {dict(c.dataset_options)}, eps={c.eps}, lam={c.lam}, lr={c.lr}, "
                f"seed={c.seed}; computed by `{prov['command']}` at {prov['commit']}; sample seed {seed})")
        print(f"  {what}: stored {stored.test_metric!r}, recomputed {again.test_metric!r}")
        values = lambda r: np.concatenate([[r.test_metric], [] if stored.curve is None else np.ravel(r.curve)])  # noqa: E731
        got, want = values(again), values(stored)
        tol = RTOL * np.abs(want) + ATOL
        if np.any(np.abs(got - want) > tol):  # chaotic amplification of the batch's rounding? measure it
            spread = np.zeros_like(got)
            for sign in (1, -1):  # η moved by ~3 float32 ulps: the same size as a different summation order's error
                alt = values(run(c.replace(lr=c.lr * (1 + sign * ULP_STEP)), data))
                spread = np.maximum(spread, np.abs(alt - got))
            print(f"    misses rtol {RTOL:g} by {np.max(np.abs(got - want) - tol):.3g}; sensitivity of this row to "
                  f"rounding-sized perturbations: up to {spread.max():.3g}")
            tol = tol + CHAOS_FACTOR * spread.max()  # one scale per row: divergence starts at different rounds
        bad = np.abs(got - want) > tol
        assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} values (final metric and curve) differ "
                               f"beyond tolerance, e.g. stored {want[bad][0]!r} against {got[bad][0]!r}")
        np.testing.assert_allclose(again.noise_multipliers, stored.noise_multipliers, rtol=1e-12, err_msg=what)
        np.testing.assert_array_equal(again.steps, stored.steps, err_msg=what)
    print(f"  {size} rows recomputed in {time.perf_counter() - t0:.1f} s")


# --------------------------------------------------------------------------------------------------
# the committed form, on fake rows (nothing trains)
# --------------------------------------------------------------------------------------------------
def _fake_runner(cs, d):
    rng = np.random.default_rng(0)
    return [fake_result(c, float(np.float32(rng.uniform(0.01, 0.05))), num_silos=d.num_silos, metric="accuracy",
                        curve=np.float32(rng.uniform(0.5, 0.9, 3)).astype(float),
                        wall_time=0.01) for c in cs]


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    """The 'reduced' preset's gleam-standin and theory files computed with a fake runner and packed."""
    root = tmp_path_factory.mktemp("store")
    work, out = root / "work", root / "out"
    names = [n for n, _, _ in preset_targets("reduced")]
    res = compute_preset("reduced", work=work, names=names[2:], runner=_fake_runner, progress=False,
                         command="fedtrain sweep --preset reduced (test)")
    for name, _, configs in preset_targets("reduced")[:2]:  # the others: fake rows straight into the work store
        store = ResultsStore(work / name, command="fake", commit="0" * 40)
        for c in configs:  # the reduced preset's first files: School (a file) and a stand-in
            store.put(fake_result(c, 0.02, num_silos=3, identity={"files": {"school.mat": "0" * 64}}))
    pack_store("reduced", work=work, out=out)
    return work, out, res


def test_pack_round_trips_what_the_figures_read(packed):
    work, out, res = packed
    assert res["computed"] == res["rows"] > 0
    store = CommittedStore(out)
    name, scale, configs = preset_targets("reduced")[2]
    assert store.scale(name) == scale == "reduced"
    src = ResultsStore(work / name)
    for c in configs[:20]:
        a, b = src.get(c), store.get(c)
        assert b.test_metric == a.test_metric  # the same bits (float32 written as its shortest decimal)
        np.testing.assert_array_equal(b.curve, a.curve)
        for f in ("noise_multipliers", "eps_spent", "delta", "steps"):
            np.testing.assert_array_equal(getattr(b, f), getattr(a, f))
        assert b.config == a.config and b.accountant == a.accountant and b.data == a.data
        assert b.silo_metrics is None  # left out of the committed form
        assert b.ledger == a.ledger  # kept: the row's eps is recomputed from it on read
        prov = store.provenance(c)
        assert prov["engine_version"] == ENGINE_VERSION and prov["command"].startswith("fedtrain sweep --preset")
        assert prov["seconds"] == pytest.approx(0.01) and prov["commit"]
    note = store_note(store, name)
    assert "gleam-standin.json.gz" in note and f"engine v{ENGINE_VERSION}" in note and "not paper scale" in note
    assert len(figure_rows(store, "fig3", name)) == len(figure_grid(store, "fig3", name))
    book = committed_store(out)  # the chapters' view: the same rows, with the figures' reads as methods
    assert isinstance(book, BookStore) and book.note(name) == note
    assert [r.config for r in book.figure_rows("fig3", name)] == [r.config for r in figure_rows(store, "fig3", name)]
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["engine_version"] == ENGINE_VERSION and manifest["wall_seconds"] >= 0
    assert manifest["computations"] and manifest["computations"][0]["computed"] == res["computed"]
    # packing twice gives the same bytes (gzip without a time stamp)
    before = (out / "theory.json.gz").read_bytes()
    pack_store("reduced", work=work, out=out)
    assert (out / "theory.json.gz").read_bytes() == before


def test_the_committed_store_is_read_only_and_names_the_command(packed):
    _, out, _ = packed
    store = CommittedStore(out)
    missing = RunConfig(dataset="gleam-standin", method="local", rounds=3, eps=7.0)
    trained = []

    def runner(cs, d):
        trained.extend(cs)
        return []

    with pytest.raises(ValueError, match="make results"):
        run_sweep([missing], store=store, runner=runner)
    assert not trained  # refused before training anything
    with pytest.raises(ValueError, match="no row for 1 configuration"):
        store.select([missing])
    name, _, configs = preset_targets("reduced")[2]
    rows = run_sweep(configs[:5], store=store, runner=runner)  # all stored: served, nothing trained
    assert [r.key for r in rows] == [c.key() for c in configs[:5]] and not trained
    # the theory figure from stored rows
    theory = theory_rows(store)
    assert set(theory) == {1.0, 3.0, math.inf} and theory[1.0]["runs"].shape[1] == 8


def _copy(src, dst):
    dst.mkdir()
    for p in src.iterdir():
        (dst / p.name).write_bytes(p.read_bytes())
    return dst


def test_an_old_engine_store_fails_loudly(packed, tmp_path):
    _, out, _ = packed
    old = _copy(out, tmp_path / "old")
    m = json.loads((old / MANIFEST).read_text())
    for info in m["files"].values():
        info["engine_version"] = ENGINE_VERSION - 1
    (old / MANIFEST).write_text(json.dumps(m))
    with pytest.raises(StaleStoreError) as err:
        committed_store(old)
    msg = str(err.value)
    assert f"engine version {ENGINE_VERSION - 1}" in msg and f"is version {ENGINE_VERSION}" in msg
    assert REGENERATE_COMMAND in msg and "make results" in msg and ".json.gz" in msg
    # a file rewritten by an old engine (its header), with a matching checksum in the manifest
    old2 = _copy(out, tmp_path / "old2")
    doc = json.loads(gzip.decompress((old2 / "theory.json.gz").read_bytes()))
    doc["engine_version"] = ENGINE_VERSION - 1
    raw = gzip.compress(json.dumps(doc).encode())
    (old2 / "theory.json.gz").write_bytes(raw)
    m = json.loads((old2 / MANIFEST).read_text())
    import hashlib

    m["files"]["theory.json.gz"]["sha256"] = hashlib.sha256(raw).hexdigest()
    (old2 / MANIFEST).write_text(json.dumps(m))
    with pytest.raises(StaleStoreError, match="make results"):
        committed_store(old2)


def test_a_damaged_or_missing_store_fails_loudly(packed, tmp_path):
    _, out, _ = packed
    with pytest.raises(StaleStoreError, match=r"MANIFEST.json does not exist.*make results"):
        committed_store(tmp_path / "nothing")
    bad = _copy(out, tmp_path / "bad")
    raw = (bad / "theory.json.gz").read_bytes()
    (bad / "theory.json.gz").write_bytes(raw[:-10])
    with pytest.raises(StaleStoreError, match="does not match the SHA-256"):
        committed_store(bad)
    (bad / "theory.json.gz").unlink()
    with pytest.raises(StaleStoreError, match="missing or unreadable"):
        committed_store(bad)


def test_compute_preset_resumes_and_records_provenance(tmp_path):
    calls = []

    def runner(cs, d):
        calls.extend(cs)
        return _fake_runner(cs, d)

    first = compute_preset("reduced", work=tmp_path, names=["gleam-standin"], runner=runner, progress=False,
                           command="cmd")
    assert first["computed"] == first["rows"] == len(calls) == len(preset_targets("reduced")[2][2])
    again = compute_preset("reduced", work=tmp_path, names=["gleam-standin"], runner=runner, progress=False)
    assert again["computed"] == 0 and len(calls) == first["rows"]  # nothing recomputed
    row = json.loads(next((tmp_path / "gleam-standin").glob("*.json")).read_text())
    assert set(row["provenance"]) == {"engine_version", "commit", "command", "seconds", "machine"}
    assert row["provenance"]["command"] == "cmd" and row["provenance"]["engine_version"] == ENGINE_VERSION
    with pytest.raises(ValueError, match="needs every file"):
        compute_preset("reduced", work=tmp_path, names=["gleam-standin"], runner=runner, pack=tmp_path / "o")
    with pytest.raises(ValueError, match="preset must be one of"):
        compute_preset("nope", work=tmp_path)


def test_cli_preset(capsys, tmp_path):
    from fedtrain.cli import main

    assert main(["sweep", "--preset", "paper", "--dry-run"]) == 0
    out = capsys.readouterr().out
    total = sum(len(c) for _, _, c in preset_targets("paper"))
    assert out.startswith(f"{total} runs: school 7200")
    with pytest.raises(SystemExit):
        main(["sweep", "--preset", "paper", "--eps", "1", "--dry-run"])
    assert "defines the whole grid" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sweep", "--pack", str(tmp_path)])
    assert "--preset" in capsys.readouterr().err


def test_compute_preset_runs_its_batches_on_the_given_executor(tmp_path, capsys):
    """``make results`` on a cluster: compute_preset hands every batch to the executor (Ray in production; a
    recording LocalExecutor here), and the rows equal those of the default executor."""
    from fedtrain.cli import main
    from fedtrain.executors import LocalExecutor

    class Recording(LocalExecutor):
        batches = 0

        def run(self, batches, runner=None):
            Recording.batches += len(batches)
            return super().run(batches, runner)

    plain = compute_preset("reduced", work=tmp_path / "a", names=["gleam-standin"], runner=_fake_runner,
                           progress=False, command="cmd", chunk_size=8)
    rec = compute_preset("reduced", work=tmp_path / "b", names=["gleam-standin"], runner=_fake_runner,
                         progress=False, command="cmd", executor=Recording(), chunk_size=8)
    assert rec["computed"] == plain["computed"] == plain["rows"]
    assert Recording.batches >= math.ceil(plain["rows"] / 8)
    a = {p.name: json.loads(p.read_text()) for p in (tmp_path / "a" / "gleam-standin").glob("*.json")}
    b = {p.name: json.loads(p.read_text()) for p in (tmp_path / "b" / "gleam-standin").glob("*.json")}
    assert a.keys() == b.keys() and len(a) == plain["rows"]
    for k in a:
        for row in (a[k], b[k]):
            row.pop("wall_time", None), row.pop("created", None), row["provenance"].pop("seconds", None)
            row.pop("digest")  # it covers the times above
        assert a[k] == b[k]
    # the CLI accepts the executor flags with --preset, and only with --executor ray for --address/--num-cpus
    assert main(["sweep", "--preset", "reduced", "--executor", "ray", "--num-cpus", "2", "--dry-run"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["sweep", "--preset", "reduced", "--num-cpus", "2", "--dry-run"])
    assert "apply to --executor ray" in capsys.readouterr().err
