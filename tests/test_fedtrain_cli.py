"""The ``fedtrain`` command line (in-process via ``main(argv)``, once through ``python -m fedtrain``)."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from fedtrain.cli import build_parser, configs_from_args, main
from fedtrain.config import RunConfig
from fedtrain.results import ResultsStore

TINY = ["--dataset", "gaussian", "-D", "num_silos=4", "-D", "n=30", "--rounds", "3", "--batch-size", "10",
        "--clip", "5"]


def test_help_via_python_m():
    out = subprocess.run([sys.executable, "-m", "fedtrain", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "sweep" in out.stdout and "run" in out.stdout


def test_run_json(capsys):
    assert main(["run", *TINY, "--method", "mrmtl", "--eps", "2", "--lam", "0.5", "--lr", "0.05",
                 "--seeds", "0,1,2", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["method"] == "mrmtl" and obj["eps"] == 2.0 and obj["seeds"] == [0, 1, 2]
    assert obj["metric"] == "mse" and len(obj["per_seed"]) == 3 and obj["real_data"] is False
    vals = obj["per_seed"]
    mean = sum(vals) / 3
    assert obj["mean"] == pytest.approx(mean)
    assert obj["std"] == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in vals) / 2))
    assert obj["accountant"] == "rdp" and "add/remove" in obj["adjacency"]
    assert len(obj["noise_multipliers"]) == 4 and all(z > 0 for z in obj["noise_multipliers"])
    assert all(e <= 2.0 + 1e-9 for e in obj["eps_spent"])


def test_run_table_and_paper_defaults(capsys):
    args = build_parser().parse_args(["run", "--dataset", "school-standin", "--method", "fedavg", "--eps", "inf"])
    (cfg,) = configs_from_args(args)
    assert (cfg.rounds, cfg.batch_size, cfg.clip, cfg.delta) == (200, 32, 1.0, 1e-3)  # App. C.4, School
    assert main(["run", *TINY, "--method", "local", "--eps", "inf"]) == 0
    out = capsys.readouterr().out
    assert "local" in out and "synthetic stand-in" in out and "accountant: rdp" in out


def test_sweep_store_and_resume(tmp_path, capsys):
    argv = ["sweep", *TINY, "--method", "local,mrmtl", "--eps", "1,inf", "--lam", "0.1,1", "--lr", "0.05",
            "--seeds", "0,1", "--results", str(tmp_path), "--json"]
    assert main(argv) == 0
    obj = json.loads(capsys.readouterr().out)
    # local ignores lambda: 2 eps x 2 seeds; mrmtl: 2 eps x 2 lam x 2 seeds
    assert obj["runs"] == 12 and len(ResultsStore(tmp_path)) == 12 and len(obj["summary"]) == 6
    mtimes = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    assert main(argv) == 0  # re-run: everything is already stored
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == mtimes
    assert main(["sweep", *TINY, "--method", "fedavg", "--eps", "1,2", "--seeds", "0,1,2", "--dry-run"]) == 0
    assert "6 runs, all valid" in capsys.readouterr().out


@pytest.mark.parametrize("argv,match", [
    (["run", *TINY, "--method", "mrmtl", "--eps", "-1"], "eps must be > 0"),
    (["run", *TINY, "--method", "mrmtl", "--lr", "0"], "lr must be > 0"),
    (["sweep", *TINY, "--method", "mrmtl", "--eps", "1,2", "--delta", "0.5"], "delta must be < n_k"),
    (["run", "--dataset", "vehicle", "--method", "fedavg", "--data-dir", "/nonexistent/x"], "vehicle-standin"),
    (["run", *TINY, "--method", "fedavg", "-D", "bogus=1"], "bad option for dataset 'gaussian'"),
    pytest.param(["run", *TINY, "--method", "fedavg", "--device", "cuda"], "device='cuda'",
                 marks=pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="CUDA present")),
])
def test_errors_are_clear(argv, match, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert match in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["run", *TINY, "--method", "sgd"],
    ["run", "--dataset", "mnist", "--method", "fedavg"],
    ["sweep", *TINY, "--method", "fedavg", "--seeds", "0,-1"],
])
def test_argparse_rejects(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2 and "error" in capsys.readouterr().err


def test_datasets_listing(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "school\treal" in out and "vehicle-standin\tsynthetic" in out
