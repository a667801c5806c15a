"""benchmarks/run_real_image_grids.py's tuning axes and controls (--lrs, --clips, --clip-only-eps, --select-every):
what they add to a grid, and their one-line errors naming the argument."""
from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

from fedtrain.presets import deep_grid

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "run_real_image_grids.py"


@pytest.fixture(scope="module")
def runner():
    spec = importlib.util.spec_from_file_location("run_real_image_grids", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    assert [c.replace(eps=4.0) for c in added] == private  # the same runs but for ε
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
def test_bad_axes_are_one_line_errors_naming_the_argument(argv, start, tmp_path, runner, capsys):
    # in process (the script's main raises SystemExit with the message, which Python prints as the one line on
    # stderr); the process itself is run once, below, for one of them
    with pytest.raises(SystemExit) as exit_:
        runner.main(["fig6-fashion", "--store", str(tmp_path / "s"), *argv])
    lines = str(exit_.value.code).strip().splitlines()
    assert exit_.value.code not in (0, None) and len(lines) == 1 and lines[0].startswith(start), exit_.value.code
    assert not capsys.readouterr().err.strip()  # nothing else on stderr
    assert not (tmp_path / "s").exists()  # refused before anything was restored or run


def test_a_bad_axis_is_one_line_on_the_commands_stderr(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), "fig6-fashion", "--store", str(tmp_path / "s"), "--lrs", ""],
                         capture_output=True, text=True)
    lines = out.stderr.strip().splitlines()
    assert out.returncode != 0 and len(lines) == 1 and lines[0].startswith("--lrs must be a non-empty list"), out.stderr
    assert not (tmp_path / "s").exists()
