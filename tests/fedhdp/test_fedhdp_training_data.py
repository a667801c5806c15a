"""FedHDP's client-level datasets: non-IID digits (plain, skewed), the FEMNIST stand-in, the HDF5 loader."""
from __future__ import annotations

import numpy as np
import pytest

from fedtrain.data.files import DatasetNotFoundError
from fedtrain.data.registry import CLIENT_DATASETS, DATASETS, load_dataset


def test_names_listed():
    for name in ("noniid-digits", "noniid-digits-skewed", "femnist-standin", "noniid-mnist", "femnist"):
        assert name in DATASETS and name in CLIENT_DATASETS


def test_noniid_digits_structure():
    d = load_dataset("noniid-digits", num_clients=200, samples_per_client=12, test_per_client=5)
    assert d.num_silos == 200 and not d.real and "scikit-learn" in d.info["source"]
    for k in range(d.num_silos):
        assert set(np.unique(d.train_y[k])) == {k % 10} and set(np.unique(d.test_y[k])) == {k % 10}
        assert d.train_x[k].shape == (12, 64) and d.test_x[k].shape == (5, 64)
    npc = d.info["nonprivate_clients"]
    assert len(npc) == 10 and len(np.unique(npc)) == 10  # 5 %
    assert len(np.unique(npc % 10)) > 1  # not one class (random)
    # fixed by the population seed, the same whatever else is asked
    again = load_dataset("noniid-digits", num_clients=200, samples_per_client=3, test_per_client=1)
    assert np.array_equal(again.info["nonprivate_clients"], npc)
    other = load_dataset("noniid-digits", num_clients=200, seed=1)
    assert not np.array_equal(other.info["nonprivate_clients"], npc)
    assert d.info["server_test_x"].shape[1] == 64 and 0 <= d.info["server_test_x"].min() <= d.info["server_test_x"].max() <= 1


def test_noniid_digits_skewed():
    d = load_dataset("noniid-digits-skewed", num_clients=200)
    npc = d.info["nonprivate_clients"]
    assert len(npc) == 10 and set(npc % 10) == {7}
    with pytest.raises(ValueError, match="class 7 has only"):
        load_dataset("noniid-digits-skewed", num_clients=200, nonprivate_fraction=0.5)


def test_femnist_standin_structure():
    d = load_dataset("femnist-standin", num_clients=60, mean_samples=20)
    sizes = d.train_sizes
    assert d.num_silos == 60 and sizes.min() >= 2 and sizes.max() > sizes.min()  # unequal sizes
    assert len(d.info["nonprivate_clients"]) == 3
    # label skew: a client's most frequent label covers far more than a tenth of its data
    share = np.mean([np.bincount(y, minlength=10).max() / len(y) for y in d.train_y])
    assert share > 0.35
    # per-client style: the mean intensity differs between clients more than between two halves of one client
    means = np.array([x.mean() for x in d.train_x])
    assert means.std() > 0.02


def _write_h5(path_train, path_test, writers, rng, side=28):
    import h5py

    for path, n in ((path_train, 5), (path_test, 2)):
        with h5py.File(path, "w") as f:
            ex = f.create_group("examples")
            for w in writers:
                g = ex.create_group(w)
                g.create_dataset("pixels", data=rng.random((n, side, side)).astype(np.float32))
                g.create_dataset("label", data=rng.integers(0, 62, n).astype(np.int32))


def test_femnist_h5_loader(tmp_path):
    rng = np.random.default_rng(0)
    writers = [f"f{i:04d}_{i:02d}" for i in range(25)]
    _write_h5(tmp_path / "fed_emnist_train.h5", tmp_path / "fed_emnist_test.h5", writers, rng)
    d = load_dataset("femnist", data_dir=tmp_path)
    assert d.real and d.num_silos == 25 and d.num_classes == 62 and d.input_shape == (1, 28, 28)
    assert d.train_x[0].shape == (5, 784) and d.test_x[3].shape == (2, 784)
    assert d.info["server_test_x"].shape == (50, 784)
    assert len(d.info["nonprivate_clients"]) == 1
    few = load_dataset("femnist", data_dir=tmp_path, max_clients=10, nonprivate_fraction=0.1)
    assert few.num_silos == 10
    with pytest.raises(DatasetNotFoundError, match="fed_emnist_digitsonly_train.h5.*looked in.*tff"):
        load_dataset("femnist", data_dir=tmp_path, only_digits=True)


def test_fedhdp_trains_on_femnist_files(tmp_path):
    from fedtrain.clientdp.config import FedHDPConfig
    from fedtrain.clientdp.trainer import train

    rng = np.random.default_rng(1)
    _write_h5(tmp_path / "fed_emnist_train.h5", tmp_path / "fed_emnist_test.h5", [f"w{i}" for i in range(20)], rng)
    data = load_dataset("femnist", data_dir=tmp_path)
    res = train(FedHDPConfig(dataset="femnist", method="fedhdp", ratio=0.1, rounds=2, sample_rate=0.5, hidden=4,
                             count_noise_per_client=0.5), data)
    assert 0 <= res.metrics["acc_g"] <= 100 and res.data["real"]


def test_fedhdp_trains_on_femnist_standin():
    from fedtrain.clientdp.config import FedHDPConfig
    from fedtrain.clientdp.trainer import train

    opts = dict(num_clients=40, mean_samples=10, test_per_client=4, nonprivate_fraction=0.1)
    res = train(FedHDPConfig(dataset="femnist-standin", dataset_options=opts, method="fedhdp", ratio=0.1, rounds=3,
                             sample_rate=0.5, hidden=8, count_noise_per_client=0.2))
    assert res.privacy["groups"]["nonprivate"]["clients"] == 4 and res.privacy["groups"]["private"]["clients"] == 36
    assert 0 <= res.metrics["acc_g"] <= 100 and not res.data["real"]


def test_noniid_mnist_without_files_names_the_alternative(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="noniid-digits"):
        load_dataset("noniid-mnist", data_dir=tmp_path)
