"""One clear line instead of a hang, a traceback or a silent choice: Ray addresses that do not answer, repeated
grid values, a list of rounds for ``advise``, bad data (NaN features, malformed FEMNIST files)."""
from __future__ import annotations

import importlib.util
import socket

import numpy as np
import pytest

from fedtrain.cli import main
from fedtrain.data import load_dataset
from fedtrain.data.files import DatasetCorruptError

TINY = ["sweep", "--dataset", "gaussian", "-D", "num_silos=4", "-D", "n=30", "--rounds", "2", "--batch-size", "10",
        "--clip", "5", "--method", "fedavg", "--eps", "inf"]


def _fails(argv, capsys, code: int = 2) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert info.value.code == code and "Traceback" not in err, err
    assert len(err.splitlines()) <= 3 and ": error: " in err.splitlines()[0], err
    return err


def test_ray_address_that_refuses_is_reported_at_once(tmp_path, capsys):
    """Nothing listens at 127.0.0.1:1: one line, before Ray is even imported (Ray alone retries for minutes)."""
    err = _fails([*TINY, "--results", str(tmp_path), "--executor", "ray", "--address", "127.0.0.1:1",
                  "--connect-timeout", "1"], capsys)
    assert "no Ray cluster at '127.0.0.1:1' (Connection refused" in err and "ray status" in err


def test_ray_address_that_never_answers_times_out(tmp_path, capsys):
    """Something accepts the connection but never answers as a gRPC server: given up after --connect-timeout."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        err = _fails([*TINY, "--results", str(tmp_path), "--executor", "ray", "--address", f"127.0.0.1:{port}",
                      "--connect-timeout", "0.5"], capsys)
    assert f"no Ray cluster at '127.0.0.1:{port}' (timed out; waited at most 0.5 s, --connect-timeout)" in err


def test_connect_timeout_is_validated_and_only_for_ray(tmp_path, capsys):
    err = _fails([*TINY, "--results", str(tmp_path), "--executor", "ray", "--address", "127.0.0.1:1",
                  "--connect-timeout", "0"], capsys)
    assert "connect_timeout must be a finite number > 0" in err
    err = _fails([*TINY, "--results", str(tmp_path), "--connect-timeout", "3"], capsys)
    assert "apply to --executor ray" in err


@pytest.mark.skipif(importlib.util.find_spec("grpc") is not None, reason="Ray Client's grpcio is installed")
def test_ray_client_address_without_ray_client_names_the_extra(tmp_path, capsys):
    err = _fails([*TINY, "--results", str(tmp_path), "--executor", "ray", "--address", "ray://127.0.0.1:1"], capsys)
    assert "Ray Client, which needs grpcio" in err and "fedbook[ray]" in err


@pytest.mark.parametrize("flag,values,shown", [("--eps", "1,2,1", "1.0"), ("--method", "fedavg,local,fedavg", "'fedavg'"),
                                               ("--lam", "0.1,0.1", "0.1"), ("--rounds", "2,2", "2")])
def test_repeated_grid_values_are_named_without_speaking_of_seeds(flag, values, shown, tmp_path, capsys):
    argv = [a for a in TINY if a not in ("--method", "fedavg", "--eps", "inf", "--rounds", "2")]
    argv += [flag, values] + [f for f, v in (("--method", "mrmtl"), ("--eps", "inf"), ("--rounds", "2"))
                              if f != flag for f in (f, v)]
    err = _fails([*argv, "--results", str(tmp_path)], capsys)
    assert f"{flag} lists {shown} more than once" in err and "seed" not in err
    assert "same configurations twice" in err
    err = _fails([*TINY, "--seeds", "0,1,0", "--results", str(tmp_path)], capsys)
    assert "--seeds lists 0 more than once" in err and "counted twice in the mean" in err


def test_advise_refuses_a_list_of_rounds(capsys):
    err = _fails(["advise", "--dataset", "gaussian", "--rounds", "20,40", "--eps", "1"], capsys)
    assert "advise predicts for one number of rounds (got '20,40')" in err


def _vehicle_mat(path, nan_silo: int | None = None) -> None:
    import scipy.io

    rng = np.random.default_rng(0)
    xs = np.empty((1, 23), dtype=object)
    ys = np.empty((1, 23), dtype=object)
    for k in range(23):
        x = rng.normal(size=(16, 100))
        if k == nan_silo:
            x[3, 7] = np.nan
        xs[0, k] = x
        ys[0, k] = np.where(rng.random((16, 1)) < 0.5, -1.0, 1.0)
    scipy.io.savemat(str(path), {"X": xs, "Y": ys})


def test_a_silo_with_nan_features_is_bad_data_not_divergence(tmp_path, capsys):
    _vehicle_mat(tmp_path / "vehicle.mat", nan_silo=5)
    err = _fails(["run", "--dataset", "vehicle", "--data-dir", str(tmp_path), "--method", "local", "--eps", "inf",
                  "--rounds", "2"], capsys)
    assert "bad data in 'vehicle'" in err and str(tmp_path / "vehicle.mat") in err and "silo 5" in err
    assert "NaN" in err and "diverged" not in err


def _write_h5(folder, writers, *, side=28, labels_high=62, n_train=5):
    import h5py

    rng = np.random.default_rng(0)
    for name, n in (("fed_emnist_train.h5", n_train), ("fed_emnist_test.h5", 2)):
        with h5py.File(folder / name, "w") as f:
            ex = f.create_group("examples")
            for w in writers:
                g = ex.create_group(w)
                g.create_dataset("pixels", data=rng.random((n, side, side)).astype(np.float32))
                g.create_dataset("label", data=rng.integers(labels_high - 1, labels_high, n).astype(np.int32))


@pytest.mark.parametrize("case,kwargs,match", [
    ("no writers", dict(writers=[]), r"fed_emnist_train.h5: holds 0 writer\(s\)"),
    ("label 62", dict(writers=["a", "b"], labels_high=63), r"fed_emnist_train.h5: writer 'a' has label 62 outside \[0, 61\]"),
    ("20x20 images", dict(writers=["a", "b"], side=20), r"fed_emnist_train.h5: writer 'a' has pixels of shape \(5, 20, 20\)"),
    ("empty writer", dict(writers=["a", "b"], n_train=0), r"fed_emnist_train.h5: writer 'a' has pixels of shape|has no examples"),
])
def test_femnist_files_are_validated_with_the_file_named(case, kwargs, match, tmp_path):
    pytest.importorskip("h5py")
    _write_h5(tmp_path, **kwargs)
    with pytest.raises(DatasetCorruptError, match=match):
        load_dataset("femnist", data_dir=tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# Every error exit: at most 3 lines, the error first, no usage block, no traceback
# ---------------------------------------------------------------------------------------------------------------

BASE = {"run": ["run", "--dataset", "gaussian", "--method", "mrmtl"],
        "sweep": ["sweep", "--dataset", "gaussian", "--method", "mrmtl"],
        "advise": ["advise", "--dataset", "gaussian"],
        "fedhdp-claims": ["fedhdp-claims"]}
MISSING = "/nonexistent/fedbook-data"
#: A subcommand added the way another program adds one (fedtrain.cli.register_command).
EXTRA = "federate-probe"


class _WouldTrain(BaseException):
    """Raised by the trainers during these tests: an error case that reaches training is a bad case, not a pass."""


def _flag_cases() -> list[list[str]]:
    """Bad values of every flag that parses a value, in every subcommand: not a number, NaN, numbers beyond the
    largest float (which overflow to inf), not a choice."""
    from fedtrain.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    cases = []
    for name, base in BASE.items():
        for action in sub.choices[name]._actions:
            if not action.option_strings or action.nargs == 0 or (action.type is None and action.choices is None):
                continue
            flag = action.option_strings[0]
            values = ["abc"] if action.choices is not None else ["abc", "nan", "1e309", "1e400"]
            if action.type is not None and action.choices is None and action.dest != "dataset_option":
                values += ["1,,2"] if name == "sweep" else []
            cases += [[*base, flag, v] for v in values]
    return cases


SEMANTIC_CASES = [
    [], ["nosuch"], ["run"], ["sweep"], ["advise"], ["fedhdp-claims"], ["datasets", "--bogus"], [EXTRA],
    *[[*b, "--bogus"] for b in BASE.values()],
    # flags that do not apply to the method
    ["run", "--dataset", "gaussian", "--method", "local", "--lam", "0.5"],
    ["sweep", "--dataset", "gaussian", "--method", "local,fedavg", "--lam", "0.1,1"],
    ["run", "--dataset", "gaussian", "--method", "fedavg", "--num-clusters", "2"],
    ["run", "--dataset", "gaussian", "--method", "fedavg", "--ratio", "0.1"],
    ["run", "--dataset", "noniid-digits", "--method", "nonprivate", "--noise-multiplier", "3"],
    ["run", "--dataset", "noniid-digits", "--method", "nonprivate", "--delta", "1e-5"],
    ["run", "--dataset", "noniid-digits", "--method", "nonprivate", "--count-noise-per-client", "0.1"],
    ["run", "--dataset", "noniid-digits", "--method", "fedhdp", "--eps", "1"],
    ["run", "--dataset", "gaussian", "--method", "fedavg,local"],
    ["run", "--dataset", "gaussian", "--method", "fedavg,fedhdp"],
    ["advise", "--dataset", "gaussian", "--method", "fedavg"],
    ["advise", "--dataset", "gaussian", "--rounds", "20,40"],
    # overflow and empty items
    ["run", "--dataset", "gaussian", "--method", "fedavg", "--eps", "1e309"],
    ["run", "--dataset", "gaussian", "--method", "fedavg", "--eps", "-1e309"],
    ["run", "--dataset", "gaussian", "--method", "mrmtl", "--lam", "1e-400"],
    ["sweep", "--dataset", "gaussian", "--method", "fedavg", "--eps", "1,,2"],
    ["sweep", "--dataset", "gaussian", "--method", "fedavg", "--eps", "1,2,"],
    ["sweep", "--dataset", "gaussian", "--method", "fedavg", "--seeds", ","],
    ["run", "--dataset", "gaussian", "--method", "fedavg", "-D", "tau=1e400"],
    ["run", "--dataset", "gaussian", "--method", "fedavg", "-D", "tau=NaN"],
    ["run", "--dataset", "gaussian", "--method", "fedavg", "-D", "noequals"],
    ["run", "--dataset", "gaussian", "--method", "fedavg", "-D", "bogus=1"],
    # seeds, repeats
    ["run", "--dataset", "gaussian", "--method", "fedavg", "--seeds", "0"],
    ["run", "--dataset", "gaussian", "--method", "fedavg", "--seeds", "5"],
    ["run", "--dataset", "gaussian", "--method", "fedavg", "--seeds", "0,1", "--repeats", "2"],
    ["run", "--dataset", "gaussian", "--method", "fedavg", "--repeats", "0"],
    ["run", "--dataset", "gaussian", "--method", "fedavg", "--seeds", "0,0"],
    # sweep's presets and executors
    ["sweep", "--preset", "paper", "--eps", "1"],
    ["sweep", "--pack", "x"],
    ["sweep", "--dataset", "gaussian", "--method", "fedavg", "--num-cpus", "2"],
    ["sweep", "--dataset", "gaussian", "--method", "fedavg", "--chunk-size", "0"],
    ["sweep", "--dataset", "gaussian", "--method", "fedavg", "--retries", "-1"],
    # data files that are not there (each names the file, where it looked, how to get it)
    *[["run", "--dataset", ds, "--method", m, "--data-dir", MISSING] for ds, m in (
        ("school", "fedavg"), ("vehicle", "local"), ("gleam", "mrmtl"), ("rotated-masked-mnist", "fedavg"),
        ("cifar10-hetero", "fedavg"), ("noniid-fashion", "fedhdp"), ("noniid-mnist", "dp-fedavg"))],
    ["sweep", "--dataset", "school", "--method", "fedavg", "--data-dir", MISSING, "--dry-run"],
    ["sweep", "--dataset", "vehicle", "--method", "fedavg", "--data-dir", MISSING],
    ["advise", "--dataset", "school", "--data-dir", MISSING],
    # grids served from a store
    ["fedhdp-claims", "--grid", "claims-fashion"],
    ["fedhdp-claims", "--grid", "claims-fashion", "--results", "{tmp}/empty-store"],
    ["fedhdp-claims", "--scale", "claims", "--grid", "claims-fashion"],
    # a results folder that cannot be written
    ["run", "--dataset", "gaussian", "--method", "fedavg", "--results", "{tmp}/file/sub"],
    # the added subcommand: a missing argument, a bad value, an error of its handler
    [EXTRA, "--k", "abc"], [EXTRA, "--k", "1e309"], [EXTRA, "--k", "2"],
]
ERROR_CASES = _flag_cases() + SEMANTIC_CASES


def error_exit(argv: list[str], tmp_path, monkeypatch, capsys) -> tuple[int, str, str]:
    """Run ``fedtrain argv`` in this process, training forbidden; return its exit status, stderr and stdout."""
    import fedtrain.cli as cli
    import fedtrain.engine as engine
    import fedtrain.clientdp.trainer as trainer

    def would_train(*a, **k):
        raise _WouldTrain(f"fedtrain {' '.join(argv)} went on to train")

    monkeypatch.setattr(engine, "run_many", would_train)
    monkeypatch.setattr(trainer, "train", would_train)
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty-store").mkdir(exist_ok=True)

    def configure(p):
        p.add_argument("--k", type=int, required=True, help="an integer")
        p.add_argument("--float", type=float, default=1.0)

    def handler(args):
        raise ValueError(f"federate: --k {args.k} is not a square\n  tried: 1\n  tried: 4\nsee the docs")

    monkeypatch.setitem(cli._COMMANDS, EXTRA, ("a subcommand added by another program", configure, handler))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    capsys.readouterr()
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=__import__("sys").stderr)
    except _WouldTrain:
        code = 0
    captured = capsys.readouterr()
    return code, captured.err, captured.out


@pytest.mark.parametrize("argv", ERROR_CASES, ids=lambda a: " ".join(a)[:90] or "(bare)")
def test_every_error_exit_is_short_with_the_error_first(argv, tmp_path, monkeypatch, capsys):
    """Bad values of every flag of every subcommand, flags that do not apply to the method, missing data files, an
    added subcommand's errors: each exits non-zero before training with at most 3 lines on stderr, the first of
    which is ``fedtrain ...: error: ...``; no usage block, no traceback."""
    code, err, _ = error_exit(argv, tmp_path, monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code not in (0, None), f"exit status {code}: accepted (or went on to train)"
    assert 1 <= len(lines) <= 3, f"{len(lines)} lines:\n{err}"
    assert lines[0].startswith("fedtrain") and ": error: " in lines[0], err
    assert "usage:" not in err and "Traceback" not in err, err


def test_overflowing_eps_is_refused_and_only_the_word_inf_means_no_noise(capsys):
    """``--eps 1e309`` overflows a float to inf; it must not train without noise as ``--eps inf`` does."""
    from fedtrain.cli import build_parser, configs_from_args
    from fedtrain.config import RunConfig

    for text in ("1e309", "1e400", "2e308", "1" + "0" * 400):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["run", "--dataset", "gaussian", "--method", "fedavg", "--eps", text])
        err = capsys.readouterr().err
        assert "eps must be" in err and "beyond the largest float" in err and "write inf" in err, err
        with pytest.raises(ValueError, match="beyond the largest float"):
            RunConfig(dataset="gaussian", method="fedavg", eps=text)
    with pytest.raises(ValueError, match="an integer of 401 digits, beyond the largest float"):
        RunConfig(dataset="gaussian", method="fedavg", eps=10 ** 400)
    for text in ("inf", "Inf", "+inf", "infinity"):
        args = build_parser().parse_args(["run", "--dataset", "gaussian", "--method", "fedavg", "--eps", text])
        assert configs_from_args(args)[0].eps == float("inf")
    assert RunConfig(dataset="gaussian", method="fedavg", eps=1e308).eps == 1e308  # the largest finite: kept


@pytest.mark.parametrize("flag", ["--delta", "--lr", "--clip", "--lam", "--rounds", "--batch-size"])
def test_other_numeric_flags_refuse_overflow(flag, capsys):
    with pytest.raises(SystemExit):
        main(["run", "--dataset", "gaussian", "--method", "mrmtl", flag, "1e309"])
    err = capsys.readouterr().err
    assert flag in err.splitlines()[0] and flag.lstrip("-").replace("-", "_") + " must be" in err


def test_client_level_overflow_and_noise_flags(capsys):
    """z of the client-level methods: an overflowing value is refused; a method without noise refuses it."""
    for argv, text in ((["--method", "fedhdp", "--noise-multiplier", "1e309"], "beyond the largest float"),
                       (["--method", "nonprivate", "--noise-multiplier", "3"], "not to 'nonprivate'"),
                       (["--method", "dp-fedavg", "--lam-nonprivate", "0.005"], "not to 'dp-fedavg' (every client")):
        with pytest.raises(SystemExit):
            main(["run", "--dataset", "noniid-digits", *argv])
        assert text in capsys.readouterr().err


def test_seeds_zero_does_not_suggest_zero_repeats(capsys):
    for n, suggested in (("0", False), ("3", True)):
        with pytest.raises(SystemExit):
            main(["run", "--dataset", "gaussian", "--method", "fedavg", "--seeds", n])
        err = capsys.readouterr().err
        assert f"--seed {n}" in err and (f"--repeats {n}" in err) == suggested, err


def test_bare_advise_and_bare_claims_say_what_they_need(capsys):
    with pytest.raises(SystemExit):
        main(["advise"])
    assert "--dataset is required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fedhdp-claims"])
    assert "--scale --grid" in capsys.readouterr().err
