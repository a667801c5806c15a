"""Dataset loaders: real School (protocol, checksum, errors), Vehicle/GLEAM layout, stand-ins, registry."""
from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
import scipy.io

from fedtrain.data import (
    DATASETS,
    DatasetCorruptError,
    DatasetNotFoundError,
    FederatedData,
    default_data_dirs,
    gaussian_linear_regression,
    gaussian_mean_estimation,
    load_dataset,
    load_gleam,
    load_school,
    load_standin,
    load_vehicle,
    make_hierarchical_linear,
)


# ----------------------------------------------------------------------------------------- School
def test_school_structure_and_protocol(school_path):
    d = load_school(school_path)
    assert isinstance(d, FederatedData) and d.real and d.task == "regression" and d.metric == "mse"
    assert d.num_silos == 139 and d.dim == 28
    total = d.train_sizes + d.test_sizes
    assert total.sum() == 15362 and total.min() == 22 and total.max() == 251
    # sklearn's train_test_split semantics: n_test = ceil(0.2 n)
    assert np.array_equal(d.test_sizes, np.ceil(0.2 * total).astype(int))
    assert d.train_sizes.min() == 17 and d.train_sizes.max() == 200  # the paper's 80/20 split gives 17..200
    raw = scipy.io.loadmat(school_path)
    for k in (0, 57, 138):
        x = d.train_x[k]
        np.testing.assert_allclose(x.mean(axis=0), 0.0, atol=1e-12)
        std = x.std(axis=0)
        raw_std = raw["X"][0][k].astype(float).std(axis=0)
        # standardized columns have unit variance; columns constant in the school are 0 (no NaN)
        assert np.all(np.isfinite(x)) and np.all(np.isfinite(d.test_x[k]))
        assert np.all((np.abs(std - 1) < 1e-9) | (std < 1e-12))
        assert (std < 1e-12).sum() >= (raw_std == 0).sum()
    ys = np.concatenate(d.train_y + d.test_y)
    assert ys.min() >= 0.0 and ys.max() <= 1.0
    # the fixed bounds (1, 70): the raw scores are recovered exactly
    raw_scores = np.sort(np.concatenate([r.ravel() for r in raw["Y"][0]]).astype(float))
    np.testing.assert_allclose(np.sort(ys * 69 + 1), raw_scores)
    assert d.info["sha256"] == "57fb3238fdd03a9aa17276e2ce18d9bbb5d128c3261e794fe6233b58b6909068"


def test_school_split_seed_and_fraction(school_path):
    a, b, c = load_school(school_path, seed=3), load_school(school_path, seed=3), load_school(school_path, seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a.train_y, b.train_y))
    assert any(not np.array_equal(x, y) for x, y in zip(a.train_y, c.train_y))
    half = load_school(school_path, test_fraction=0.5)
    total = half.train_sizes + half.test_sizes
    assert np.array_equal(half.test_sizes, np.ceil(0.5 * total).astype(int))
    with pytest.raises(ValueError, match="test_fraction"):
        load_school(school_path, test_fraction=1.0)


def test_school_test_split_uses_training_statistics(school_path):
    """Rebuild silo k's split from the documented rule (``default_rng([seed, k])`` permutation, first
    ceil(f n) rows are test) and standardize by hand with the *training* mean and std."""
    d = load_school(school_path, seed=2)
    raw = scipy.io.loadmat(school_path)
    for k in (1, 100):
        xr = raw["X"][0][k].astype(float)
        yr = (raw["Y"][0][k].ravel().astype(float) - 1) / 69
        perm = np.random.default_rng([2, k]).permutation(len(xr))
        te, tr = perm[: math.ceil(0.2 * len(xr))], perm[math.ceil(0.2 * len(xr)):]
        mu, sd = xr[tr].mean(axis=0), xr[tr].std(axis=0)
        sd[sd == 0] = 1.0
        np.testing.assert_allclose(d.train_x[k], (xr[tr] - mu) / sd, atol=1e-12)
        np.testing.assert_allclose(d.test_x[k], (xr[te] - mu) / sd, atol=1e-12)
        np.testing.assert_allclose(d.test_y[k], yr[te])
    # the test split is not re-centred on itself (it would be exactly 0-mean otherwise)
    assert max(np.abs(x.mean(axis=0)).max() for x in d.test_x) > 1e-3


def test_school_corrupt_and_missing(school_path, tmp_path):
    bad = tmp_path / "school.mat"
    data = bytearray(school_path.read_bytes())
    data[-10] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(DatasetCorruptError, match="checksum mismatch"):
        load_school(bad)
    junk = tmp_path / "junk" / "school.mat"
    junk.parent.mkdir()
    junk.write_bytes(b"not a matlab file at all" * 10)
    with pytest.raises(DatasetCorruptError, match="unreadable"):
        load_school(junk, verify=False)
    missing = tmp_path / "nowhere"
    with pytest.raises(DatasetNotFoundError) as info:
        load_school(missing / "school.mat")
    assert str(missing / "school.mat") in str(info.value) and "private-cross-silo-fl" in str(info.value)


def test_school_search_path(school_path, tmp_path, monkeypatch):
    # FEDBOOK_DATA_DIR with the <dir>/<name>/<name>.mat layout
    (tmp_path / "school").mkdir()
    shutil.copy(school_path, tmp_path / "school" / "school.mat")
    monkeypatch.setenv("FEDBOOK_DATA_DIR", str(tmp_path))
    assert default_data_dirs()[0] == tmp_path
    d = load_school()
    assert d.info["file"] == str(tmp_path / "school" / "school.mat")
    # an explicit data_dir is the only place looked at: a folder without the file fails, naming what it tried,
    # rather than silently reading the copy in FEDBOOK_DATA_DIR
    empty = tmp_path / "empty"
    empty.mkdir()
    assert default_data_dirs(empty)[:2] == [empty, tmp_path]
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset("school", data_dir=empty)
    msg = str(info.value)
    assert str(empty / "school.mat") in msg and str(tmp_path / "school" / "school.mat") not in msg
    assert "no other location is used" in msg
    d2 = load_dataset("school", data_dir=tmp_path)
    assert d2.info["file"] == str(tmp_path / "school" / "school.mat") and d2.summary()["sha256"] == d2.info["sha256"]


def test_missing_real_file_names_paths_and_standin(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDBOOK_DATA_DIR", str(tmp_path))
    with pytest.raises(DatasetNotFoundError) as info:
        load_dataset("vehicle", data_dir=tmp_path)
    msg = str(info.value)
    assert str(tmp_path / "vehicle.mat") in msg and "vehicle-standin" in msg and "FEDBOOK_DATA_DIR" in msg


# -------------------------------------------------------------------------------- Vehicle / GLEAM
def _write_sensor_mat(path, sizes, dim, orient, labels01=False, seed=0):
    rng = np.random.default_rng(seed)
    X = np.empty(orient(len(sizes)), dtype=object)
    Y = np.empty(orient(len(sizes)), dtype=object)
    xs, ys = [], []
    for k, n in enumerate(sizes):
        x = rng.normal(size=(n, dim)) * (k + 1) + k
        y = np.where(rng.random(n) < 0.5, 1.0, (0.0 if labels01 else -1.0))
        X.flat[k], Y.flat[k] = x, y[:, None]
        xs.append(x)
        ys.append(y)
    scipy.io.savemat(path, {"X": X, "Y": Y})
    return xs, ys


@pytest.mark.parametrize("orient", [lambda k: (k, 1), lambda k: (1, k)], ids=["Kx1", "1xK"])
def test_vehicle_layout_round_trip(tmp_path, orient):
    sizes = [40, 41, 60]
    xs, ys = _write_sensor_mat(tmp_path / "vehicle.mat", sizes, 100, orient)
    d = load_vehicle(data_dir=tmp_path, expected_silos=3)
    assert d.real and d.task == "binary" and d.num_classes == 2 and d.num_silos == 3 and d.dim == 100
    assert np.array_equal(d.test_sizes, [math.ceil(0.25 * n) for n in sizes])
    for k in range(3):
        np.testing.assert_allclose(d.train_x[k].mean(axis=0), 0, atol=1e-10)
        np.testing.assert_allclose(d.train_x[k].std(axis=0), 1, atol=1e-10)
        # the labels are a permutation of the originals
        np.testing.assert_array_equal(np.sort(np.concatenate([d.train_y[k], d.test_y[k]])), np.sort(ys[k]))
    with pytest.raises(DatasetCorruptError, match="expected 23 silos"):
        load_vehicle(data_dir=tmp_path)


def test_gleam_layout_and_label_mapping(tmp_path):
    _write_sensor_mat(tmp_path / "gleam.mat", [30] * 4, 180, lambda k: (k, 1), labels01=True)
    d = load_gleam(tmp_path / "gleam.mat", expected_silos=4)
    assert d.name == "gleam" and set(np.unique(np.concatenate(d.train_y))) == {-1.0, 1.0}
    with pytest.raises(DatasetCorruptError, match="expected 100 features"):
        load_vehicle(tmp_path / "gleam.mat", expected_silos=None)
    scipy.io.savemat(tmp_path / "bad.mat", {"X": np.zeros((3, 3))})
    with pytest.raises(DatasetCorruptError):
        load_gleam(tmp_path / "bad.mat")


# ------------------------------------------------------------------------------------- stand-ins
@pytest.mark.parametrize("like,k,d,lo,hi,task", [
    ("school", 139, 28, 22, 251, "regression"),
    ("vehicle", 23, 100, 872, 1933, "binary"),
    ("gleam", 38, 180, 699, 776, "binary"),
])
def test_standin_structure(like, k, d, lo, hi, task):
    data = load_dataset(f"{like}-standin", seed=1)
    assert not data.real and data.task == task and data.num_silos == k and data.dim == d
    total = data.train_sizes + data.test_sizes
    assert total.min() >= lo and total.max() <= hi
    assert data.info["like"] == like and "tau" in data.info and data.info["silo_models"].shape == (k, d)
    if task == "binary":
        ys = np.concatenate(data.train_y)
        assert set(np.unique(ys)) == {-1.0, 1.0} and 0.2 < (ys > 0).mean() < 0.8


def test_standin_heterogeneity_knob():
    same = load_standin("vehicle", tau=0.0, num_silos=5, size_range=(50, 60))
    models = same.info["silo_models"]
    np.testing.assert_array_equal(models, np.broadcast_to(models[0], models.shape))
    spread = [np.std(load_standin("school", tau=t, seed=2).info["silo_models"], axis=0).mean() for t in (0.3, 1.2)]
    # z_k ~ N(0, I/d): the per-coordinate spread is tau / sqrt(d) up to sampling error (139 silos).
    # Measured over seeds 2..41: spread / (tau/sqrt(d)) has mean 0.9935 (the ddof=0 std's bias) and
    # standard deviation 0.0086 (seed 2: 0.9947), so rtol = 0.04 ≈ |bias| + 4 SD.
    np.testing.assert_allclose(spread, np.array([0.3, 1.2]) / np.sqrt(28), rtol=0.04)
    with pytest.raises(ValueError, match="tau"):
        load_standin("school", tau=-1)
    with pytest.raises(ValueError, match="unknown stand-in option"):
        load_standin("school", taux=1)


def test_standin_regression_recovers_silo_models():
    # noise-free, unstandardized: least squares on a silo recovers scale * w_k exactly
    d = make_hierarchical_linear(num_silos=3, dim=4, size_range=(30, 30), tau=0.7, noise=0.0, scale=2.0,
                                 intercept=0.0, standardize=False, seed=5)
    for k in range(3):
        w, *_ = np.linalg.lstsq(d.train_x[k], d.train_y[k], rcond=None)
        np.testing.assert_allclose(w, 2.0 * d.info["silo_models"][k], atol=1e-10)


def test_seeds_reproduce():
    for name in ("school-standin", "gaussian", "gaussian-linreg"):
        a, b, c = load_dataset(name, seed=11), load_dataset(name, seed=11), load_dataset(name, seed=12)
        assert all(np.array_equal(x, y) for x, y in zip(a.train_y + a.test_y, b.train_y + b.test_y))
        assert not np.array_equal(a.train_y[0], c.train_y[0])


# -------------------------------------------------------------------------------- Gaussian theory
def test_gaussian_mean_estimation_model():
    K, n, tau, sigma = 400, 50, 0.7, 2.0
    d = gaussian_mean_estimation(num_silos=K, n=n, theta=1.5, tau=tau, sigma=sigma, seed=3)
    centres = d.info["silo_models"][:, 0]
    assert d.dim == 0 and d.train_x[0].shape == (n, 0)
    # centres ~ N(1.5, tau^2): mean within 4 SE
    assert abs(centres.mean() - 1.5) < 4 * tau / np.sqrt(K)
    # per-silo sample mean - centre ~ N(0, sigma^2/n): pooled variance within 4 SE
    dev = np.array([y.mean() for y in d.train_y]) - centres
    var, se = dev.var(), (sigma**2 / n) * np.sqrt(2 / K)
    assert abs(var - sigma**2 / n) < 4 * se
    # test="centres": same training data, test targets are the true centres
    kw = dict(num_silos=K, n=n, theta=1.5, tau=tau, sigma=sigma, seed=3, n_test=2)
    c, s = gaussian_mean_estimation(test="centres", **kw), gaussian_mean_estimation(**kw)
    assert all(np.array_equal(a, b) for a, b in zip(c.train_y, s.train_y))
    np.testing.assert_array_equal(np.stack(c.test_y), np.repeat(centres[:, None], 2, axis=1))


def test_gaussian_linear_regression_design():
    d = gaussian_linear_regression(num_silos=3, n=40, dim=4, tau=0.5, sigma=0.1, seed=0)
    for k in range(3):
        f = d.train_x[k]
        np.testing.assert_allclose(f.T @ f, 40 * np.eye(4), atol=1e-9)
        w = f.T @ d.train_y[k] / 40  # OLS with F^T F = n I
        assert np.abs(w - d.info["silo_models"][k]).max() < 4 * 0.1 / np.sqrt(40) * 1.5
    with pytest.raises(ValueError, match="n must be an integer >= 4"):
        gaussian_linear_regression(n=3, dim=4)


# -------------------------------------------------------------------------------------- registry
def test_registry_names_and_errors():
    assert set(DATASETS) >= {"school", "vehicle", "gleam", "school-standin", "vehicle-standin",
                             "gleam-standin", "gaussian", "gaussian-linreg"}  # image datasets: test_fedtrain_images
    # FedHDP's client-level datasets (tests/fedhdp/test_fedhdp_training_data.py)
    assert set(DATASETS) >= {"noniid-digits", "noniid-digits-skewed", "femnist-standin", "noniid-mnist", "femnist"}
    with pytest.raises(ValueError, match="unknown dataset 'mnist'.*school-standin"):
        load_dataset("mnist")
    with pytest.raises(ValueError, match="bad option"):
        load_dataset("gaussian", bogus=1)
