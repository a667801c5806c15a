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
    return err.splitlines()[-1]


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
    assert "connect_timeout must be a finite number of seconds > 0" in err
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
