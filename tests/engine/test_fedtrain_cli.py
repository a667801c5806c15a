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
    (["run", *TINY, "--method", "mrmtl", "--eps", "-1"], "eps must be a number > 0 (inf allowed) (got '-1')"),
    (["run", *TINY, "--method", "mrmtl", "--eps", "-inf"], "eps must be a number > 0 (inf allowed)"),
    (["run", *TINY, "--method", "mrmtl", "--eps=-inf"], "eps must be a number > 0 (inf allowed)"),
    (["run", *TINY, "--method", "mrmtl", "--eps", "nan"], "eps must be a number > 0"),
    (["run", *TINY, "--method", "mrmtl", "--lr", "0"], "lr must be a finite number > 0 (got '0')"),
    (["run", *TINY, "--method", "mrmtl", "--lr", "inf"], "lr must be a finite number > 0 (got 'inf')"),
    (["run", *TINY, "--method", "mrmtl", "--lam", "1e309"], "lam must be a finite number >= 0"),
    (["run", *TINY, "--method", "mrmtl", "--lam", "-1"], "lam must be a finite number >= 0 (got '-1')"),
    (["run", *TINY, "--method", "mrmtl", "--clip", "inf"], "clip must be a finite number > 0"),
    (["run", *TINY, "--method", "local", "--seeds", "0,0,1"], "--seeds lists 0 more than once"),
    (["run", *TINY, "--method", "local", "--seeds", str(2**63)], "seed must be an integer in [0, 2^53)"),
    (["run", *TINY, "--method", "fedavg", "--num-clusters", "2"], "--num-clusters is an option of ifca, ifca-mrmtl"),
    (["run", *TINY, "--method", "ifca", "--select-eps-frac", "1"], "select_eps_frac must be a finite number in (0, 1)"),
    (["run", *TINY], "--method is required"),
    (["run", *TINY, "--method", "fedavg", "--model", "convnet"], "model='convnet' needs image data"),
    (["sweep", *TINY, "--method", "fedavg", "--model", "linear,convnet", "--dry-run"], "model='convnet' needs image data"),
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
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err


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


def test_help_lists_every_field_with_range_and_default(capsys):
    """``fedtrain run --help`` lists every RunConfig field and every method option, each with its valid range and
    its default, generated from the declarations (fedtrain.params)."""
    from fedtrain.methods.registry import option_params
    from fedtrain.params import cli_param, params_of

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines (also at hyphens): compare without spaces
    for name, (p, _) in {**params_of(RunConfig), **{n: (v[0], v[1]) for n, v in option_params().items()}}.items():
        flag = "--dataset-option" if name == "dataset_options" else "--seeds" if name == "seed" else \
            "--" + name.replace("_", "-")
        assert flag in text, name
        if name not in ("dataset", "dataset_options"):
            assert "".join(f"Valid: {cli_param(p).range_text()}".split()) in text, name
    assert "Default:0.01" in text and "Default:thepaper'sforthedataset,else200" in text


def test_every_option_can_be_set_from_the_cli():
    args = build_parser().parse_args(["sweep", *TINY, "--method", "ifca,ditto,finetune", "--num-clusters", "2",
                                      "--select-eps-frac", "0.05", "--ifca-loss-clip", "2", "--select-frac", "0.5",
                                      "--ditto-personal-epochs", "2", "--finetune-frac", "0.25",
                                      "--prox-mode", "post-noise", "--aggregation", "uniform", "--eval-every", "1",
                                      "--model", "linear", "--accountant", "rdp", "--local-epochs", "2",
                                      "--clip", "2,3", "--delta", "1e-4"])
    cs = configs_from_args(args)
    ifca = [c for c in cs if c.method == "ifca"]
    assert {(c.num_clusters, c.select_eps_frac, c.ifca_loss_clip, c.select_frac) for c in ifca} == {(2, 0.05, 2.0, 0.5)}
    ditto = [c for c in cs if c.method == "ditto"]
    assert {(c.ditto_personal_epochs, c.prox_mode) for c in ditto} == {(2, "post-noise")}
    assert {c.finetune_frac for c in cs if c.method == "finetune"} == {0.25}
    assert {c.clip for c in cs} == {2.0, 3.0} and len(cs) == 6  # the clip list is a grid axis
    assert {(c.aggregation, c.eval_every, c.local_epochs, c.delta) for c in cs} == {("uniform", 1, 2, 1e-4)}


def test_diverged_runs_are_reported(capsys):
    assert main(["run", *TINY, "--method", "mrmtl", "--lam", "1e308", "--eps", "inf", "--seeds", "0,1", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["diverged"] == [0, 1] and obj["seeds"] == [] and obj["mean"] == "nan"
    assert main(["run", *TINY, "--method", "mrmtl", "--lam", "1e308", "--eps", "inf"]) == 0
    assert "diverged" in capsys.readouterr().out


def test_unwritable_results_folder_fails_before_training(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit) as info:
        main(["run", *TINY, "--method", "local", "--results", str(tmp_path / "file" / "sub")])
    assert info.value.code == 2 and "is not writable" in capsys.readouterr().err


def test_ctrl_c_prints_one_line(tmp_path, capsys, monkeypatch):
    import fedtrain.cli.training as cli  # where `fedtrain run` and `fedtrain sweep` call run_sweep

    real = cli.run_sweep

    def interrupted(configs, **kw):
        def runner(cs, d):
            if kw["store"].has(configs[0]):
                raise KeyboardInterrupt
            from fedtrain.engine import run_many
            return run_many(cs, d)
        return real(configs, runner=runner, **{**kw, "chunk_size": 1})

    monkeypatch.setattr(cli, "run_sweep", interrupted)
    code = main(["sweep", *TINY, "--method", "local", "--seeds", "0,1,2", "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 130 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"1 of 3 runs are saved in {tmp_path}" in err and "same command again to resume" in err


def test_data_dir_without_the_file_fails(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["run", "--dataset", "school", "--method", "local", "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and str(tmp_path / "school.mat") in err and "no other location is used" in err


def test_register_command(capsys):
    from fedtrain import cli

    cli.register_command("hello", "say hello", lambda p: p.add_argument("--name", default="x"),
                         lambda a: print(f"hello {a.name}") or 0)
    try:
        assert main(["hello", "--name", "y"]) == 0 and "hello y" in capsys.readouterr().out
    finally:
        cli._COMMANDS.pop("hello")


def test_api_page_lists_every_field_with_its_range():
    """The reference page's field table is the declarations' (regenerate it when a field changes)."""
    from pathlib import Path

    from fedtrain.methods.registry import option_params
    from fedtrain.params import describe_fields

    page = (Path(__file__).resolve().parents[2] / "book" / "api_fedtrain_data_cli.md").read_text()
    for name, rng, default, _ in describe_fields(RunConfig):
        assert f"| `{name}` |" in page and f"| {rng} | {default} |" in page, name
    for name, (p, _, _) in option_params().items():
        assert f"| `{name}` |" in page and f"| {p.range_text()} |" in page, name


def test_model_defaults_per_dataset():
    """The image datasets default to the paper's ConvNet (App. C.1), tabular ones to the linear model."""
    from fedtrain.presets import paper_defaults

    assert paper_defaults("rotated-masked-mnist")["model"] == "convnet"
    assert paper_defaults("cifar10-hetero-standin")["model"] == "convnet"  # the stand-in gets the real one's
    assert (paper_defaults("cifar10-hetero")["batch_size"], paper_defaults("cifar10-hetero")["clip"]) == (100, 8.0)
    assert "model" not in paper_defaults("school")
    args = build_parser().parse_args(["run", "--dataset", "school-standin", "--method", "fedavg"])
    assert configs_from_args(args)[0].model == "linear"


def test_table_of_real_data_a_package_ships(capsys):
    """Real data with no file of the project's to hash (scikit-learn's digits): the table says where it came from
    instead of failing on the missing SHA-256."""
    pytest.importorskip("sklearn")
    assert main(["run", "--dataset", "rotated-masked-digits", "--method", "local", "--eps", "4", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "data: rotated-masked-digits (real, " in out and "sha256 None" not in out
