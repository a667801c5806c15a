"""``fedtrain grid`` (:mod:`fedtrain.grids`): the tuning axes and controls (--lrs, --clips, --clip-only-eps,
--select-every), what they add to a grid and their one-line errors naming the argument; ``--status`` counting the runs
the committed archive will restore."""
from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fedtrain import grids
from fedtrain.presets import deep_grid
from fedtrain.regime import clip_only_control
from fedtrain.results import ResultsStore
from fedtrain.testing import fake_result

ROOT = Path(__file__).resolve().parents[2]
IDENTITY = {"files": {"train-images-idx3-ubyte": "0" * 64}}


@pytest.fixture(scope="module")
def runner():
    return grids


def test_extend_adds_the_eta_grid_clips_clip_only_controls_and_the_schedule(runner):
    grid = deep_grid("fig6-fashion")
    private = [c for c in grid if math.isfinite(c.eps)]
    assert runner.extend_grid(grid) == grid  # nothing asked, nothing added
    lr = runner.extend_grid(grid, lrs=["0.03", 0.3])
    assert len(lr) == 2 * len(grid) and {c.lr for c in lr} == {0.03, 0.3}
    cl = runner.extend_grid(grid, clips=[1, 3, 8])
    assert len(cl) == len(grid) + 2 * len(private)
    assert {c.clip for c in cl if not math.isfinite(c.eps)} == {1.0}  # no DP clips nothing: left as it is
    co = runner.extend_grid(grid, clip_only_eps=1e6)
    added = co[len(grid):]
    assert len(added) == len(private) and all(c.eps == 1e6 for c in added)
    assert added == [clip_only_control(c, 1e6) for c in private]  # the same runs but for ε (and IFCA's selection ε)
    assert [c.replace(eps=4.0) for c in added if c.method not in ("ifca", "ifca-mrmtl")] == [
        c for c in private if c.method not in ("ifca", "ifca-mrmtl")]
    se = runner.extend_grid(grid, select_every=3)
    assert {c.select_every for c in se if c.method in ("ifca", "ifca-mrmtl")} == {3}
    assert [c for c in se if c.method not in ("ifca", "ifca-mrmtl")] == [
        c for c in grid if c.method not in ("ifca", "ifca-mrmtl")]


@pytest.mark.parametrize("argv, start", [
    (["--lrs", ""], "--lrs must be a non-empty list"),
    (["--lrs", "0.1,nan"], "--lrs must hold finite positive numbers only (got nan)"),
    (["--clips", "1,-8"], "--clips must hold finite positive numbers only (got -8.0)"),
    (["--clips", "1,inf"], "--clips must hold finite positive numbers only (got inf)"),
    (["--clip-only-eps", "inf"], "--clip-only-eps must be finite"),
    (["--select-every", "5"], "--select-every=5 puts IFCA's last private selection at round 46, past the last round 40"),
    (["--select-every", "0"], "--select-every must be an integer >= 1"),
])
def test_bad_axes_are_one_line_errors_naming_the_argument(argv, start, tmp_path, capsys):
    # in process (the command's error path prints the one line and exits 2); the process itself is run once, below
    from fedtrain.cli import main

    try:
        code = main(["grid", "fig6-fashion", "--store", str(tmp_path / "s"), *argv])
    except SystemExit as exc:
        code = exc.code
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("fedtrain grid: error: " + start), lines
    assert not (tmp_path / "s").exists()  # refused before anything was restored or run


def test_a_bad_axis_is_one_line_on_the_commands_stderr(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "fedtrain", "grid", "fig6-fashion", "--store", str(tmp_path / "s"),
                          "--lrs", ""], capture_output=True, text=True, env=env)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith("fedtrain grid: error: --lrs must be a non-empty list"), out.stderr
    assert not (tmp_path / "s").exists()


def _archive(path: Path, rows: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode("utf-8"), mtime=0))


def test_status_counts_the_runs_the_archive_will_restore(tmp_path, monkeypatch, capsys):
    """--status says "N of M runs in the work store, K more restorable from the archive", and K is what a computing
    start then restores: every grid run the archive holds and the work store lacks (a row outside the grid, or one
    the store has already, is not counted)."""
    grid = deep_grid("fig6-fashion")
    source = ResultsStore(tmp_path / "source", command="fedtrain grid fig6-fashion", commit="a" * 40)
    for c in grid[:10]:  # the archive: 10 grid runs and one run outside the grid
        source.put(fake_result(c, 0.5, metric="accuracy", num_silos=3, identity=IDENTITY))
    source.put(fake_result(grid[0].replace(lr=0.777), 0.5, metric="accuracy", num_silos=3, identity=IDENTITY))
    archive = tmp_path / "raw" / "fig6-fashion.jsonl.gz"
    _archive(archive, [f.read_text().strip() for f in sorted(source.root.glob("*.json"))])
    monkeypatch.setattr(grids, "RAW_ARCHIVE", lambda g: archive)
    work = ResultsStore(tmp_path / "work", command="fedtrain grid fig6-fashion", commit="a" * 40)
    for c in grid[:3] + grid[-2:]:  # the work store has 3 of the archived runs and 2 others
        work.put(fake_result(c, 0.5, metric="accuracy", num_silos=3, identity=IDENTITY))
    assert grids.main(["fig6-fashion", "--store", str(work.root), "--status"]) == 0
    said = capsys.readouterr().out
    assert f"5 of {len(grid)} runs in the work store" in said and "7 more restorable from the archive" in said, said
    assert grids.restorable("fig6-fashion", grid, work) == 7
    # a computing start restores exactly those (nothing left to train is not asked: train nothing at all)
    monkeypatch.setattr(grids, "run_sweep", lambda *a, **k: pytest.fail("--status or a restore trained a run"))
    from fedtrain.store.archive import restore_rows

    restore_rows(archive, work.root)
    assert sum(work.has(c) for c in grid) == 5 + 7 and grids.restorable("fig6-fashion", grid, work) == 0
    # without an archive nothing is restorable and the line says nothing of one
    monkeypatch.setattr(grids, "RAW_ARCHIVE", lambda g: tmp_path / "none.jsonl.gz")
    assert grids.main(["fig6-fashion", "--store", str(work.root), "--status"]) == 0
    said = capsys.readouterr().out
    assert f"12 of {len(grid)} runs in the work store" in said and "restorable" not in said


def test_the_committed_archives_restore_what_status_counts():
    """On the committed archives (results/raw): --status's count is the number of grid runs the archive holds."""
    for name in ("fig6-fashion", "fig3d-fashion"):
        path = grids.RAW_ARCHIVE(name)
        if not path.exists():
            pytest.skip(f"no committed archive {path.name}")
        configs = grids.deep_grid_of(name)
        keys = {json.loads(line)["key"].split("-")[0] for line in gzip.decompress(path.read_bytes()).splitlines()}
        empty = ResultsStore(Path("/nonexistent-fedbook-work-store"))
        assert grids.restorable(name, configs, empty) == sum(c.key() in keys for c in configs) > 0


def test_workers_start_the_same_command_per_shard(tmp_path):
    """--workers N: each worker is `fedtrain grid` with the same flags, the store named and its own --shard k/N."""
    import argparse

    p = argparse.ArgumentParser()
    grids.configure_parser(p)
    args = p.parse_args(["fig6-fashion", "--workers", "3", "--stop-by", "540", "--lrs", "0.03,0.3", "--first", "ifca",
                         "--seeds", "0"])
    argv = grids._worker_argv(args, tmp_path, 2)
    assert argv == ["fig6-fashion", "--seeds", "0", "--stop-by", "540", "--lrs", "0.03,0.3", "--first", "ifca",
                    "--store", str(tmp_path), "--shard", "2/3"]
    again = p.parse_args(argv)
    assert (again.shard, again.stop_by, again.lrs, again.workers) == ("2/3", 540.0, "0.03,0.3", None)
