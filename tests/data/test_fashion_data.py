"""Fashion-MNIST loader and the real-image datasets built on it (fedtrain.data.fashion, rotated_masked,
noniid_fashion, cifar_hetero): search order, checksums of the decompressed content, clear errors, the
constructions' invariants (each image used once, one class per client, 5 of 10 classes per silo).

Small IDX files written here exercise the loader; the tests on the real files (Debian's
dataset-fashion-mnist, installed by tools/setup_env.sh) skip, saying why, only where those files are absent.
"""
from __future__ import annotations

import gzip
import hashlib
import struct

import numpy as np
import pytest

from fedtrain.data import fashion
from fedtrain.data.cifar_hetero import _standin_scale
from fedtrain.data.fashion import IDX_FILES, IDX_SHA256, load_fashion_mnist
from fedtrain.data.files import DatasetCorruptError, DatasetNotFoundError
from fedtrain.data.noniid_digits import SKEWED_CLASS
from fedtrain.data.noniid_fashion import make_noniid_without_replacement, nonprivate_distinct_share
from fedtrain.data.registry import (CLIENT_DATASETS, DATASET_DESCRIPTIONS, DATASETS, FILE_DATASETS, REAL_DATASETS,
                                    load_dataset)
from fedtrain.data.rotated_masked import plot_silo_examples, rotated_masked_fashion

FASHION = ("rotated-masked-fashion", "hetero-fashion", "noniid-fashion", "noniid-fashion-skewed")


def _idx(arr: np.ndarray) -> bytes:
    arr = np.asarray(arr, dtype=np.uint8)
    return struct.pack(">HBB", 0, 8, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes()


def _write_small(folder, *, n_train=40, n_test=20, gz=True, seed=0):
    """Four small IDX files (28x28, labels 0..9) in ``folder``; returns the checksums of their content."""
    rng = np.random.default_rng(seed)
    parts = {"train_images": rng.integers(0, 256, (n_train, 28, 28)), "train_labels": np.arange(n_train) % 10,
             "test_images": rng.integers(0, 256, (n_test, 28, 28)), "test_labels": np.arange(n_test) % 10}
    folder.mkdir(parents=True, exist_ok=True)
    sums = {}
    for role, stem in IDX_FILES.items():
        raw = _idx(parts[role])
        sums[stem] = hashlib.sha256(raw).hexdigest()
        if gz:
            (folder / f"{stem}.gz").write_bytes(gzip.compress(raw))
        else:
            (folder / stem).write_bytes(raw)
    return sums


@pytest.fixture(scope="module")
def real():
    """The real files (Debian's package); a clear skip where they are absent."""
    try:
        return load_fashion_mnist()
    except DatasetNotFoundError as exc:
        pytest.skip(f"Fashion-MNIST files absent (install Debian's dataset-fashion-mnist as root: "
                    f"apt-get install dataset-fashion-mnist, as tools/setup_env.sh does): {str(exc)[:200]}")


# ------------------------------------------------------------------------------------------- loader
def test_small_files_read_gz_and_plain_with_given_checksums(tmp_path):
    for gz in (True, False):
        folder = tmp_path / ("gz" if gz else "plain")
        sums = _write_small(folder, gz=gz)
        m = load_fashion_mnist(folder, checksums=sums)
        assert m.train_images.shape == (40, 1, 28, 28) and m.test_images.shape == (20, 1, 28, 28)
        assert m.train_images.dtype == np.float32 and 0.0 <= m.train_images.min() and m.train_images.max() <= 1.0
        assert list(m.train_labels[:12]) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]
        assert m.info["files"] == sums and m.info["file"] == str(folder)


def test_checksum_is_of_the_decompressed_content(tmp_path):
    """Recompressing a file (as Debian did) changes the .gz bytes, not the accepted content digest."""
    sums = _write_small(tmp_path / "a")
    stem = "train-labels-idx1-ubyte"
    raw = gzip.decompress((tmp_path / "a" / f"{stem}.gz").read_bytes())
    (tmp_path / "a" / f"{stem}.gz").write_bytes(gzip.compress(raw, compresslevel=1, mtime=12345))
    assert load_fashion_mnist(tmp_path / "a", checksums=sums).info["files"][stem] == sums[stem]


def test_wrong_content_names_the_file_and_how_to_install(tmp_path):
    _write_small(tmp_path)  # random images: not Fashion-MNIST, so the pinned digests fail
    with pytest.raises(DatasetCorruptError) as err:
        load_fashion_mnist(tmp_path)
    msg = str(err.value)
    assert "checksum mismatch" in msg and str(tmp_path) in msg and "apt-get install" in msg
    assert "dataset-fashion-mnist" in msg
    load_fashion_mnist(tmp_path, verify=False)  # structure alone is fine
    with pytest.raises(ValueError, match="64 hex digits"):
        load_fashion_mnist(tmp_path, checksums={"train-images-idx3-ubyte": "abc"})


def test_truncated_file_is_reported(tmp_path):
    sums = _write_small(tmp_path, gz=False)
    p = tmp_path / "t10k-images-idx3-ubyte"
    p.write_bytes(p.read_bytes()[:-100])
    with pytest.raises(DatasetCorruptError, match="truncated") as err:
        load_fashion_mnist(tmp_path, verify=False)
    assert str(p) in str(err.value) and "dataset-fashion-mnist" in str(err.value)
    with pytest.raises(DatasetCorruptError, match="checksum"):
        load_fashion_mnist(tmp_path, checksums=sums)


def test_missing_files_say_where_and_how(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetNotFoundError) as err:
        load_fashion_mnist(tmp_path / "empty")
    msg = str(err.value)
    assert str(tmp_path / "empty") in msg and "apt-get install" in msg and "no other location" in msg
    assert str(fashion.DEBIAN_DIR) not in msg.split("Looked in:")[1].split("The folder")[0]  # explicit: only it
    # default search: the environment's folder, the repo's folders, then Debian's location; an incomplete copy
    # is named with the files it lacks
    part = tmp_path / "part"
    _write_small(part)
    (part / "t10k-labels-idx1-ubyte.gz").unlink()
    monkeypatch.setenv("FEDBOOK_DATA_DIR", str(part))
    monkeypatch.setattr(fashion, "DEBIAN_DIR", tmp_path / "no-debian")
    monkeypatch.setattr(fashion, "default_data_dirs", lambda: [part])
    with pytest.raises(DatasetNotFoundError) as err:
        load_fashion_mnist()
    msg = str(err.value)
    assert str(tmp_path / "no-debian") in msg and "lacks t10k-labels-idx1-ubyte" in msg
    with pytest.raises(DatasetNotFoundError, match="rotated-masked-digits"):  # the registry names alternatives
        load_dataset("rotated-masked-fashion")


def test_search_order_data_folder_before_debian(tmp_path, monkeypatch):
    env, deb = tmp_path / "env", tmp_path / "deb"
    s_env, s_deb = _write_small(env / "fashion-mnist", seed=1), _write_small(deb, seed=2)
    monkeypatch.setattr(fashion, "DEBIAN_DIR", deb)
    monkeypatch.setattr(fashion, "default_data_dirs", lambda: [env])
    assert fashion.fashion_search_dirs()[-1] == deb
    assert load_fashion_mnist(checksums=s_env).info["file"] == str(env / "fashion-mnist")
    for stem in IDX_FILES.values():
        (env / "fashion-mnist" / f"{stem}.gz").unlink()
    assert load_fashion_mnist(checksums=s_deb).info["file"] == str(deb)


# --------------------------------------------------------------------------------- the real files
def test_real_files_match_the_pinned_digests(real):
    assert real.info["files"] == IDX_SHA256
    assert real.train_images.shape == (60000, 1, 28, 28) and real.test_images.shape == (10000, 1, 28, 28)
    assert np.bincount(real.train_labels).tolist() == [6000] * 10
    assert np.bincount(real.test_labels).tolist() == [1000] * 10


def test_rotated_masked_fashion(real):
    d = rotated_masked_fashion(num_silos=8, train_per_silo=30, test_per_silo=10, mask_ratio=0.25, seed=3)
    assert d.real and d.name == "rotated-masked-fashion" and d.input_shape == (1, 28, 28)
    assert d.train_sizes.tolist() == [30] * 8 and d.test_sizes.tolist() == [10] * 8
    assert d.info["rotation_degrees"] == (0, 0, 90, 90, 180, 180, 270, 270)
    assert d.info["sha256"] == real.info["sha256"]
    assert 0.1 < d.info["realized_mask_ratio"] < 0.4
    for k in range(8):  # masked pixels are white in every image of the silo
        m = d.info["masks"][k].ravel()
        assert np.all(d.train_x[k][:, m] == 1.0)
    full = load_dataset("rotated-masked-fashion", mask_ratio=0.0)
    assert full.num_silos == 40 and set(full.train_sizes) == {1500} and set(full.test_sizes) == {250}
    fig = plot_silo_examples(full, per_silo=3)
    assert len(fig.axes) == 4 * 3
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.mark.parametrize("kw, match", [({"mask_ratio": 1.5}, "mask_ratio must lie in \\[0, 1\\]"),
                                       ({"mask_ratio": -0.1}, "mask_ratio"),
                                       ({"num_groups": 4, "num_silos": 3}, "num_groups must be <= 4.*num_silos"),
                                       ({"train_per_silo": 2000}, "train_per_silo times num_silos")])
def test_rotated_masked_fashion_bad_input(kw, match, tmp_path, real):
    with pytest.raises(ValueError, match=match):
        rotated_masked_fashion(**kw)


def test_noniid_fashion_each_image_once(real):
    for skewed in (False, True):
        d = load_dataset("noniid-fashion-skewed" if skewed else "noniid-fashion")
        idx = np.concatenate(d.info["client_train_index"])
        assert idx.size == 60000 and np.unique(idx).size == 60000  # the 60,000 images exactly, each once
        assert d.num_silos == 2000 and set(d.train_sizes) == {30} and set(d.test_sizes) == {5}
        for j in (0, 7, 1999):
            assert set(d.train_y[j]) == {j % 10} and set(d.test_y[j]) == {j % 10}
        np_ = d.info["nonprivate_clients"]
        assert len(np_) == 100
        if skewed:
            assert set(d.info["client_classes"][np_]) == {SKEWED_CLASS}
        assert nonprivate_distinct_share(d) == (3000, 60000, 0.05) and d.info["nonprivate_distinct_share"] == 0.05
        assert d.info["server_test_x"].shape == (10000, 784)


def test_noniid_without_replacement_refuses_too_many_clients():
    y = np.repeat(np.arange(10), 12)
    x = np.arange(120, dtype=np.float32)[:, None]
    d = make_noniid_without_replacement(x, y, x[:60], np.arange(60) % 10, name="t", num_clients=40,
                                        samples_per_client=3,
                                        test_per_client=1, real=False)
    used = np.concatenate([t.ravel() for t in d.train_x])
    assert np.unique(used).size == used.size == 120
    with pytest.raises(ValueError, match="samples_per_client=4 .*need 16 train images but the class has 12"):
        make_noniid_without_replacement(x, y, x, y, name="t", num_clients=40, samples_per_client=4, real=False)
    with pytest.raises(ValueError, match="test_per_client"):
        make_noniid_without_replacement(x, y, x[:60], np.arange(60) % 10, name="t", num_clients=40,
                                        samples_per_client=3,
                                        test_per_client=2, real=False)


def test_hetero_fashion(real):
    d = load_dataset("hetero-fashion")
    assert d.num_silos == 30 and d.real
    for k in range(30):
        classes = set(d.train_y[k].tolist())
        assert len(classes) == 5 and set(d.test_y[k].tolist()) <= classes
        assert tuple(sorted(classes)) == d.info["silo_classes"][k]
    assert 1500 <= d.train_sizes.min() and d.train_sizes.max() <= 2500 and d.train_sizes.sum() <= 60000


def test_cifar_standin_says_toy_or_paper_scale():
    assert _standin_scale(5000, 30, 5).startswith("paper silo sizes")
    assert _standin_scale(60, 30, 5).startswith("toy: about 20 training images per silo")


def test_registry_lists_them_as_real_with_their_files():
    for name in FASHION:
        assert name in DATASETS
        assert DATASET_DESCRIPTIONS[name].startswith("real;")
        assert str(fashion.DEBIAN_DIR) in DATASET_DESCRIPTIONS[name]
    assert {"rotated-masked-fashion", "hetero-fashion"} <= set(REAL_DATASETS)
    assert {"noniid-fashion", "noniid-fashion-skewed"} <= set(CLIENT_DATASETS) & set(FILE_DATASETS)
    assert "3,000 of the 60,000 distinct training images (5.0%)" in DATASET_DESCRIPTIONS["noniid-fashion"]


def _opted_out_class_counts(d) -> np.ndarray:
    """How many opted-out clients hold each class, read from the clients' own training labels."""
    labels = [int(np.unique(d.train_y[j])[0]) for j in d.info["nonprivate_clients"]]
    return np.bincount(labels, minlength=10)


def _uniform_opt_out_p_value(counts: np.ndarray) -> float:
    """Chi-square p-value of the opted-out clients' class counts against the non-skewed design: chosen uniformly
    among clients whose classes are balanced (j mod 10), so every class is equally likely."""
    from scipy import stats

    return float(stats.chisquare(counts).pvalue)


def test_non_skewed_opt_outs_are_not_one_class_and_match_the_uniform_design():
    """The non-skewed construction draws its opted-out clients from every class (the design: uniformly among all
    clients); the skewed one from class 7 only.  Checked on the clients' labels, on synthetic images (no files)."""
    y = np.repeat(np.arange(10), 200)  # 200 images per class: 2,000 clients of one image each
    x = np.arange(y.size, dtype=np.float32)[:, None]
    for seed in range(3):
        plain = make_noniid_without_replacement(x, y, x[:2000], y[:2000], name="t", num_clients=2000,
                                                samples_per_client=1, test_per_client=1, seed=seed, real=False)
        counts = _opted_out_class_counts(plain)
        assert counts.sum() == 100 and np.count_nonzero(counts) >= 8, counts  # not one class
        assert _uniform_opt_out_p_value(counts) > 1e-3, counts  # consistent with a uniform choice over clients
        skewed = make_noniid_without_replacement(x, y, x[:2000], y[:2000], name="t", num_clients=2000,
                                                 samples_per_client=1, test_per_client=1, seed=seed, skewed=True,
                                                 real=False)
        assert np.flatnonzero(_opted_out_class_counts(skewed)).tolist() == [SKEWED_CLASS]


def test_non_skewed_noniid_fashion_opt_outs_match_the_design(real):
    counts = _opted_out_class_counts(load_dataset("noniid-fashion"))
    assert counts.sum() == 100 and np.count_nonzero(counts) >= 8, counts
    assert _uniform_opt_out_p_value(counts) > 1e-3, counts
    skewed = _opted_out_class_counts(load_dataset("noniid-fashion-skewed"))
    assert np.flatnonzero(skewed).tolist() == [SKEWED_CLASS]
