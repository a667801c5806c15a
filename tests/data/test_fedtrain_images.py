"""Image data (App. C.1): MNIST / CIFAR-10 loaders on small files written in the real formats, digits,
federated image silos, rotated & masked silos and heterogeneous CIFAR-10 silos."""
from __future__ import annotations

import gzip
import hashlib
import io
import pickle
import struct
import tarfile

import numpy as np
import pytest

from fedtrain.data import DatasetCorruptError, DatasetNotFoundError, load_dataset
from fedtrain.data.cifar_hetero import cifar10_hetero, cifar10_hetero_standin, partition_by_classes
from fedtrain.data.images import (
    MNIST_IDX_FILES,
    PUBLISHED_CHECKSUMS,
    check_images,
    federated_from_images,
    load_cifar10,
    load_digits_images,
    load_mnist,
)
from fedtrain.data.registry import DATASET_DESCRIPTIONS, DATASETS, REAL_DATASETS
from fedtrain.data.rotated_masked import (
    draw_patch_masks,
    make_rotated_masked,
    rotate_quarter_turns,
    rotated_masked_digits,
    rotated_masked_mnist,
    rotated_masked_standin,
)


# ------------------------------------------------------------------------------- writing test files
def _idx(array: np.ndarray) -> bytes:
    array = np.asarray(array, dtype=np.uint8)
    return struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def _mnist_like(n_train=24, n_test=8, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8), rng.integers(0, 10, n_train).astype(np.uint8),
            rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8), rng.integers(0, 10, n_test).astype(np.uint8))


def _write_idx_files(folder, arrays):
    folder.mkdir(parents=True, exist_ok=True)
    sums = {}
    for (role, name), arr in zip(MNIST_IDX_FILES.items(), arrays):
        data = gzip.compress(_idx(arr))
        (folder / name).write_bytes(data)
        sums[name] = hashlib.md5(data).hexdigest()
    return sums


def _md5(path):
    return hashlib.md5(path.read_bytes()).hexdigest()


def _cifar_batch_bytes(n, seed):
    rng = np.random.default_rng(seed)
    batch = {b"batch_label": b"test", b"labels": [int(v) for v in rng.integers(0, 10, n)],
             b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"filenames": [b"x.png"] * n}
    return pickle.dumps(batch, protocol=2), batch


def _write_cifar_folder(root, n=6):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    sums, batches = {}, {}
    for i, name in enumerate([f"data_batch_{j}" for j in range(1, 6)] + ["test_batch"]):
        raw, batches[name] = _cifar_batch_bytes(n, i)
        (folder / name).write_bytes(raw)
        sums[name] = hashlib.md5(raw).hexdigest()
    return folder, sums, batches


# ------------------------------------------------------------------------------------------ MNIST
def test_mnist_idx_files_load_and_scale(tmp_path):
    arrays = _mnist_like()
    sums = _write_idx_files(tmp_path, arrays)
    got = load_mnist(tmp_path, checksums=sums)
    assert got.train_images.shape == (24, 1, 28, 28) and got.train_images.dtype == np.float32
    assert got.test_images.shape == (8, 1, 28, 28) and got.train_labels.dtype == np.int64
    np.testing.assert_array_equal(got.train_images[:, 0] * 255, arrays[0].astype(np.float32))
    np.testing.assert_array_equal(got.test_labels, arrays[3])
    assert got.num_classes == 10 and got.info["format"] == "idx.gz" and len(got.info["files"]) == 4
    # torchvision's layout MNIST/raw/ is found too; verify=False skips the published check only
    _write_idx_files(tmp_path / "other" / "MNIST" / "raw", arrays)
    assert load_mnist(tmp_path / "other", verify=False).train_labels.shape == (24,)


def test_mnist_npz_loads(tmp_path):
    tx, ty, vx, vy = _mnist_like()
    np.savez(tmp_path / "mnist.npz", x_train=tx, y_train=ty, x_test=vx, y_test=vy)
    got = load_mnist(tmp_path, checksums={"mnist.npz": hashlib.sha256((tmp_path / "mnist.npz").read_bytes()).hexdigest()})
    assert got.info["format"] == "npz" and got.train_images.shape == (24, 1, 28, 28)
    np.testing.assert_array_equal(got.test_images[:, 0] * 255, vx.astype(np.float32))


def test_mnist_published_checksum_rejects_a_different_file(tmp_path):
    _write_idx_files(tmp_path, _mnist_like())
    with pytest.raises(DatasetCorruptError, match=r"train-images-idx3-ubyte.gz: checksum mismatch \(md5 .*"
                                                   r"published f68b3c2dcbeaaa9fbdd348bbdeb94873 per torchvision"):
        load_mnist(tmp_path)
    tx, ty, vx, vy = _mnist_like()
    (tmp_path / "npz").mkdir()
    np.savez(tmp_path / "npz" / "mnist.npz", x_train=tx, y_train=ty, x_test=vx, y_test=vy)
    with pytest.raises(DatasetCorruptError, match="mnist.npz: checksum mismatch.*731c5ac6.*per keras"):
        load_mnist(tmp_path / "npz")
    with pytest.raises(ValueError, match=r"checksums\['mnist.npz'\] must be 32 \(MD5\) or 64"):
        load_mnist(tmp_path / "npz", checksums={"mnist.npz": "abc"})


def test_mnist_truncated_and_wrong_files(tmp_path):
    arrays = _mnist_like()
    # truncated gzip stream
    _write_idx_files(tmp_path / "a", arrays)
    p = tmp_path / "a" / "train-images-idx3-ubyte.gz"
    p.write_bytes(p.read_bytes()[:200])
    with pytest.raises(DatasetCorruptError, match=r"train-images-idx3-ubyte.gz: not a readable gzip.*ossci-datasets"):
        load_mnist(tmp_path / "a", verify=False)
    # valid gzip, IDX body shorter than its header says
    _write_idx_files(tmp_path / "b", arrays)
    (tmp_path / "b" / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(_idx(arrays[2])[:-5]))
    with pytest.raises(DatasetCorruptError, match=r"t10k-images-idx3-ubyte.gz: header announces shape \(8, 28, 28\).*truncated"):
        load_mnist(tmp_path / "b", verify=False)
    # labels file where images are expected: wrong magic number
    _write_idx_files(tmp_path / "c", arrays)
    (tmp_path / "c" / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(_idx(arrays[1])))
    with pytest.raises(DatasetCorruptError, match=r"IDX magic number 0x00000801, expected 0x00000803"):
        load_mnist(tmp_path / "c", verify=False)
    # wrong image size
    _write_idx_files(tmp_path / "d", (np.zeros((3, 8, 8)), np.zeros(3), np.zeros((2, 8, 8)), np.zeros(2)))
    with pytest.raises(DatasetCorruptError, match=r"train images have shape \(3, 8, 8\), expected \(N, 28, 28\)"):
        load_mnist(tmp_path / "d", verify=False)
    # npz: truncated, and missing keys
    (tmp_path / "e").mkdir()
    tx, ty, vx, vy = arrays
    np.savez(tmp_path / "e" / "mnist.npz", x_train=tx, y_train=ty, x_test=vx, y_test=vy)
    npz = tmp_path / "e" / "mnist.npz"
    npz.write_bytes(npz.read_bytes()[:300])
    with pytest.raises(DatasetCorruptError, match=r"mnist.npz: unreadable as an .npz file"):
        load_mnist(tmp_path / "e", verify=False)
    np.savez(npz, x_train=tx, y_train=ty)
    with pytest.raises(DatasetCorruptError, match=r"arrays \['x_test', 'y_test'\] missing"):
        load_mnist(tmp_path / "e", verify=False)


def test_mnist_missing_files_say_where_and_how(tmp_path):
    with pytest.raises(DatasetNotFoundError) as err:
        load_mnist(tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "mnist.npz") in msg and str(tmp_path / "MNIST" / "raw") in msg
    assert "ossci-datasets.s3.amazonaws.com/mnist" in msg and "never downloads" in msg
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(b"")
    with pytest.raises(DatasetNotFoundError, match="IDX files incomplete, missing train-labels-idx1-ubyte.gz"):
        load_mnist(tmp_path)


# --------------------------------------------------------------------------------------- CIFAR-10
def test_cifar_folder_and_archive_load(tmp_path):
    folder, sums, batches = _write_cifar_folder(tmp_path / "f")
    got = load_cifar10(tmp_path / "f", checksums=sums)
    assert got.train_images.shape == (30, 3, 32, 32) and got.test_images.shape == (6, 3, 32, 32)
    first = batches["data_batch_1"]
    # rows are channel-major: the first 1024 values are the red plane
    np.testing.assert_array_equal(got.train_images[0, 0].ravel() * 255, first[b"data"][0, :1024].astype(np.float32))
    np.testing.assert_array_equal(got.train_labels[:6], first[b"labels"])
    np.testing.assert_array_equal(got.test_labels, batches["test_batch"][b"labels"])
    # the real batches were pickled by Python 2 with numpy 1 (module numpy.core.multiarray): also accepted
    old_style = (folder / "test_batch").read_bytes().replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    assert b"numpy.core.multiarray" in old_style
    (folder / "test_batch").write_bytes(old_style)
    np.testing.assert_array_equal(load_cifar10(tmp_path / "f", verify=False).test_images, got.test_images)
    # the same batches as cifar-10-python.tar.gz, read in place
    archive = tmp_path / "t" / "cifar-10-python.tar.gz"
    archive.parent.mkdir()
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="cifar-10-batches-py")
    got2 = load_cifar10(archive.parent, checksums={"cifar-10-python.tar.gz": _md5(archive)})
    np.testing.assert_array_equal(got.train_images, got2.train_images)
    assert got2.info["format"] == "tar.gz"


def test_cifar_checksums_corruption_and_missing(tmp_path):
    folder, sums, _ = _write_cifar_folder(tmp_path / "f")
    with pytest.raises(DatasetCorruptError, match=r"data_batch_1: checksum mismatch .*c99cafc152244af753f735de768cd75f"):
        load_cifar10(tmp_path / "f")
    (folder / "data_batch_3").write_bytes((folder / "data_batch_3").read_bytes()[:500])
    with pytest.raises(DatasetCorruptError, match=r"data_batch_3: unreadable as a CIFAR-10 python batch"):
        load_cifar10(tmp_path / "f", verify=False)
    (folder / "data_batch_3").write_bytes(pickle.dumps({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}))
    with pytest.raises(DatasetCorruptError, match=r"data_batch_3: 'data' is uint8 of shape \(2, 100\)"):
        load_cifar10(tmp_path / "f", verify=False)
    (folder / "data_batch_3").write_bytes(pickle.dumps({b"labels": [0]}))
    with pytest.raises(DatasetCorruptError, match=r"keys \['data'\] missing"):
        load_cifar10(tmp_path / "f", verify=False)
    # a pickle that would call anything but numpy's array reconstruction is refused
    (folder / "data_batch_3").write_bytes(pickle.dumps({b"data": print}))
    with pytest.raises(DatasetCorruptError, match="refusing to load builtins.print"):
        load_cifar10(tmp_path / "f", verify=False)
    (folder / "data_batch_3").write_bytes(_cifar_batch_bytes(6, 2)[0])
    (folder / "test_batch").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"test_batch: CIFAR-10 batch missing"):
        load_cifar10(tmp_path / "f", verify=False)
    # archive: published checksum, truncation
    archive = tmp_path / "t" / "cifar-10-python.tar.gz"
    archive.parent.mkdir()
    archive.write_bytes(b"\x1f\x8b" + b"0" * 100)
    with pytest.raises(DatasetCorruptError, match="cifar-10-python.tar.gz: checksum mismatch .*c58f30108f718f92721af3b95e74349a"):
        load_cifar10(archive.parent)
    with pytest.raises(DatasetCorruptError, match="cifar-10-python.tar.gz: unreadable as a .tar.gz"):
        load_cifar10(archive.parent, verify=False)
    with pytest.raises(DatasetNotFoundError, match=r"(?s)CIFAR-10 .*not found.*cifar-10-python.tar.gz.*toronto.edu"):
        load_cifar10(tmp_path / "empty")


def test_published_checksum_table_names_its_sources():
    assert set(PUBLISHED_CHECKSUMS) >= set(MNIST_IDX_FILES.values()) | {"mnist.npz", "cifar-10-python.tar.gz", "test_batch"}
    for name, entries in PUBLISHED_CHECKSUMS.items():
        for algo, value, source in entries:
            assert {"md5": 32, "sha256": 64}[algo] == len(value) and ("torchvision" in source or "keras" in source)


# ----------------------------------------------------------------------------------------- digits
def test_digits_shapes_and_resizing():
    x8, y = load_digits_images()
    assert x8.shape == (1797, 1, 8, 8) and x8.dtype == np.float32 and y.dtype == np.int64
    assert x8.min() == 0.0 and x8.max() == 1.0 and set(np.unique(y)) == set(range(10))
    x28, _ = load_digits_images(28)
    assert x28.shape == (1797, 1, 28, 28) and 0 <= x28.min() and x28.max() <= 1
    # bilinear resizing keeps the mean grey level of each image (up to the borders)
    np.testing.assert_allclose(x28.mean(axis=(1, 2, 3)), x8.mean(axis=(1, 2, 3)), atol=0.03)
    xp, _ = load_digits_images((12, 16), method="pad")
    assert xp.shape == (1797, 1, 12, 16)
    np.testing.assert_array_equal(xp[:, :, 2:10, 4:12], x8)
    assert xp.sum() == pytest.approx(x8.sum())
    for bad, match in (((7, 28), "size must be an integer >= 8"), ((28, 28, 1), "size must be an integer or a pair")):
        with pytest.raises(ValueError, match=match):
            load_digits_images(bad)
    with pytest.raises(ValueError, match="method must be one of 'resize', 'pad'"):
        load_digits_images(28, method="crop")


# -------------------------------------------------------------------------- images -> FederatedData
def test_federated_from_images_layout_and_errors():
    rng = np.random.default_rng(0)
    imgs = [rng.random((5, 3, 4, 4), dtype=np.float32), rng.random((3, 3, 4, 4), dtype=np.float32)]
    labs = [np.array([0, 1, 2, 0, 1]), np.array([2, 2, 0])]
    d = federated_from_images("toy", imgs, labs, imgs, labs, num_classes=3, real=False, info={"seed": 1})
    assert d.task == "multiclass" and d.input_shape == (3, 4, 4) and d.dim == 48 and d.num_classes == 3
    np.testing.assert_array_equal(d.train_x[0].reshape(-1, 3, 4, 4), imgs[0])  # channel-major flattening
    assert d.summary()["info"] == {"seed": 1}
    bad = [
        (dict(train_images=[imgs[0][0]]), r"train_images\[0\] must be an array of shape \(N, C, H, W\)"),
        (dict(train_images=[(imgs[0] * 255).astype(np.uint8)]), r"train_images\[0\] must hold floating-point pixels"),
        (dict(train_images=[imgs[0] * 2]), r"train_images\[0\] must hold finite pixels in \[0, 1\]"),
        (dict(train_labels=[np.array([0, 1, 3, 0, 1])]), r"train_labels\[0\] must lie in 0..2"),
        (dict(train_labels=[np.array([0, 1])]), r"train_labels\[0\] must be a 1-D array with one label per image"),
        (dict(train_labels=[np.zeros(5)]), r"train_labels\[0\] must be integers"),
        (dict(train_images=imgs + imgs), "must hold one array per silo"),
        (dict(test_images=[imgs[0][:, :, :2, :2]]), r"test_images\[0\] has image shape"),
        (dict(num_classes=1), "num_classes must be an integer >= 2"),
    ]
    base = dict(train_images=imgs[:1], train_labels=labs[:1], test_images=imgs[:1], test_labels=labs[:1], num_classes=3)
    for change, match in bad:
        with pytest.raises(ValueError, match=match):
            federated_from_images("toy", **{**base, **change}, real=False)
    with pytest.raises(ValueError, match="images must have 1 channel"):
        check_images("images", imgs[0], channels=1)


# ------------------------------------------------------------------------------ rotated & masked
def test_rotation_of_a_known_asymmetric_image():
    img = np.zeros((1, 1, 4, 4), dtype=np.float32)
    img[0, 0, 0, 1] = 1.0  # top row, second column
    r90 = rotate_quarter_turns(img, 1)  # counter-clockwise: the top row becomes the left column
    assert r90[0, 0, 2, 0] == 1.0 and r90.sum() == 1.0
    assert rotate_quarter_turns(img, 2)[0, 0, 3, 2] == 1.0
    assert rotate_quarter_turns(img, 3)[0, 0, 1, 3] == 1.0
    np.testing.assert_array_equal(rotate_quarter_turns(img, 4), img)
    # inside a dataset: silo k's images are the pool's images rotated by its group's quarter turns
    pool = np.zeros((16, 1, 4, 4), dtype=np.float32)
    pool[:, 0, 0, 1] = 1.0
    labels = np.arange(16) % 2
    d = make_rotated_masked(pool, labels, name="toy", real=False, num_classes=2, num_silos=4, train_per_silo=3,
                            test_per_silo=1, num_groups=4, mask_ratio=0.0)
    assert d.info["rotation_group"] == (0, 1, 2, 3) and d.info["rotation_degrees"] == (0, 90, 180, 270)
    for k, where in enumerate([(0, 1), (2, 0), (3, 2), (1, 3)]):
        x = d.train_x[k].reshape(-1, 4, 4)
        assert np.all(x[:, where[0], where[1]] == 1.0) and np.all(x.sum(axis=(1, 2)) == 1.0)


def test_masks_are_2x2_patches_shared_in_a_silo_at_the_ratio():
    d = rotated_masked_standin(num_silos=8, train_per_silo=20, test_per_silo=5, mask_ratio=0.3, seed=1)
    masks = d.info["masks"]
    assert masks.shape == (8, 28, 28) and masks.dtype == bool
    # 2x2 patches on a 14x14 grid: every aligned 2x2 block is constant
    blocks = masks.reshape(8, 14, 2, 14, 2)
    assert np.all(blocks.all(axis=(2, 4)) == blocks.any(axis=(2, 4)))
    # the same mask on every train and test image of a silo: white (1.0) wherever the mask is on
    for k in range(8):
        for x in (d.train_x[k], d.test_x[k]):
            assert np.all(x.reshape(-1, 28, 28)[:, masks[k]] == 1.0)
    assert len({m.tobytes() for m in masks}) == 8  # different across silos
    # ratio: 8 x 196 independent Bernoulli(0.3) patches; within 4 standard errors
    big = draw_patch_masks(40, 28, 28, mask_ratio=0.3, seed=5)
    se = np.sqrt(0.3 * 0.7 / (40 * 196))
    assert abs(big.mean() - 0.3) < 4 * se
    assert not draw_patch_masks(2, 8, 8, mask_ratio=0.0).any() and draw_patch_masks(2, 8, 8, mask_ratio=1.0).all()


def test_rotated_masked_digits_structure_and_seeds():
    d = rotated_masked_digits(num_silos=8, mask_ratio=0.2)
    assert d.real and d.input_shape == (1, 28, 28) and d.num_classes == 10 and d.num_silos == 8
    each = 1797 // 8
    assert set(d.test_sizes) == {round(each / 7)} and set(d.train_sizes) == {each - round(each / 7)}
    assert d.info["rotation_group"] == (0, 0, 1, 1, 2, 2, 3, 3)
    a = rotated_masked_digits(num_silos=8, mask_ratio=0.2, image_size=8)
    b = rotated_masked_digits(num_silos=8, mask_ratio=0.2, image_size=8)
    c = rotated_masked_digits(num_silos=8, mask_ratio=0.2, image_size=8, seed=1)
    m = rotated_masked_digits(num_silos=8, mask_ratio=0.2, image_size=8, mask_seed=9)
    assert a.input_shape == (1, 8, 8)
    assert all(np.array_equal(x, y) for x, y in zip(a.train_x + a.test_y, b.train_x + b.test_y))
    assert not all(np.array_equal(x, y) for x, y in zip(a.train_y, c.train_y))
    assert all(np.array_equal(x, y) for x, y in zip(a.train_y, m.train_y))
    assert not np.array_equal(a.info["masks"], m.info["masks"])


def test_rotated_masked_mnist_from_small_files(tmp_path):
    arrays = _mnist_like(n_train=40, n_test=12)
    sums = _write_idx_files(tmp_path, arrays)
    d = rotated_masked_mnist(tmp_path, checksums=sums, num_silos=4, train_per_silo=10, test_per_silo=3, mask_ratio=0.0)
    assert d.real and d.name == "rotated-masked-mnist" and list(d.train_sizes) == [10] * 4 and list(d.test_sizes) == [3] * 4
    assert d.info["sha256"] and d.info["format"] == "idx.gz"
    # without masks (ratio 0) the silos hold the rotated, min-max renormalized pool images
    pool = arrays[0].astype(np.float32) / 255
    x0 = d.train_x[0].reshape(-1, 28, 28)
    lo, hi = pool.min(axis=(1, 2), keepdims=True), pool.max(axis=(1, 2), keepdims=True)
    norm = (pool - lo) / (hi - lo)
    assert all(any(np.allclose(x, p, atol=1e-6) for p in norm) for x in x0)
    with pytest.raises(ValueError, match="train_per_silo times num_silos must be <= the 40 images"):
        rotated_masked_mnist(tmp_path, checksums=sums, num_silos=4, train_per_silo=11)


def test_rotated_masked_bad_input_fails_before_reading(tmp_path):
    cases = [
        (dict(mask_ratio=1.5), r"mask_ratio must lie in \[0, 1\] \(got 1.5\)"),
        (dict(mask_ratio=-0.1), r"mask_ratio must be >= 0"),
        (dict(num_groups=5), r"num_groups must be <= 4"),
        (dict(num_silos=2, num_groups=3), r"num_groups must be <= 4 .* and <= num_silos \(2\)"),
        (dict(num_silos=0), "num_silos must be an integer >= 1"),
    ]
    for kw, match in cases:
        with pytest.raises(ValueError, match=match):  # no MNIST file exists in tmp_path: validation comes first
            rotated_masked_mnist(tmp_path, **kw)
        with pytest.raises(ValueError, match=match):
            rotated_masked_digits(**kw)
    pool = np.zeros((10, 1, 6, 6), np.float32)
    with pytest.raises(ValueError, match="patch_size must divide the image side"):
        make_rotated_masked(pool, np.zeros(10, int), real=False, num_silos=2, num_groups=2, patch_size=4)
    with pytest.raises(ValueError, match="train_images must be square"):
        make_rotated_masked(np.zeros((10, 1, 6, 8), np.float32), np.zeros(10, int), real=False, num_silos=2,
                            num_groups=2)
    with pytest.raises(ValueError, match="must fit in the 10 images"):
        make_rotated_masked(pool, np.zeros(10, int), real=False, num_silos=2, num_groups=2, train_per_silo=4,
                            test_per_silo=2)
    with pytest.raises(ValueError, match="test_images and test_labels must be given together"):
        make_rotated_masked(pool, np.zeros(10, int), pool, real=False, num_silos=2, num_groups=2)
    with pytest.raises(ValueError, match=r"train_labels must lie in 0..9"):
        make_rotated_masked(pool, np.full(10, 10), real=False, num_silos=2, num_groups=2)


# ---------------------------------------------------------------------------- heterogeneous CIFAR
def test_class_partition_matches_the_paper_structure():
    y, yt = np.repeat(np.arange(10), 5000), np.repeat(np.arange(10), 1000)
    tr, te, classes = partition_by_classes(y, yt, seed=0)
    assert len(tr) == 30 and all(len(c) == 5 for c in classes)
    for idx, tidx, c in zip(tr, te, classes):
        assert tuple(np.unique(y[idx])) == c and tuple(np.unique(yt[tidx])) == c  # exactly its 5 classes
    counts = np.bincount(np.concatenate([list(c) for c in classes]), minlength=10)
    assert np.all(counts == 15)  # every class held by 15 silos
    all_idx = np.concatenate(tr)
    assert len(np.unique(all_idx)) == len(all_idx)  # disjoint
    sizes = np.array([len(i) for i in tr])
    # shares in [0.4, 0.6] normalized over 15 slots: each class block in [5000*0.4/(0.4+14*0.6), 5000*0.6/(0.6+14*0.4)]
    assert sizes.min() >= 5 * int(5000 * 0.4 / 8.8) and sizes.max() <= 5 * int(5000 * 0.6 / 6.2) + 1
    assert 1300 < np.median(sizes) < 2000  # Table A1: 1,515..1,839
    again = partition_by_classes(y, yt, seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(tr, again[0])) and classes == again[2]
    assert partition_by_classes(y, yt, seed=1)[2] != classes
    for kw, match in ((dict(classes_per_silo=11), "classes_per_silo must be <= num_classes"),
                      (dict(num_silos=7, classes_per_silo=3), "must be a multiple of num_classes"),
                      (dict(seed=-1), "seed must be an integer >= 0")):
        with pytest.raises(ValueError, match=match):
            partition_by_classes(y, yt, **kw)
    with pytest.raises(ValueError, match=r"train_labels must lie in 0..9"):
        partition_by_classes(y + 1, yt)


def test_cifar_hetero_standin_and_files(tmp_path):
    d = cifar10_hetero_standin(samples_per_class=100, test_samples_per_class=20, num_silos=10, classes_per_silo=5)
    assert not d.real and d.input_shape == (3, 32, 32) and d.num_silos == 10
    for k, c in enumerate(d.info["silo_classes"]):
        assert tuple(np.unique(d.train_y[k])) == c and len(c) == 5
    same = cifar10_hetero_standin(samples_per_class=100, test_samples_per_class=20, num_silos=10)
    assert all(np.array_equal(a, b) for a, b in zip(d.train_x, same.train_x))
    # class structure: the nearest class mean (from the training silos) beats chance (0.1) on the ~200 pooled test
    # images by far more than sampling noise (binomial SE at chance: 0.021); a ConvNet does better (docstring)
    x, y = np.concatenate(d.train_x), np.concatenate(d.train_y)
    means = np.stack([x[y == c].mean(axis=0) for c in range(10)])
    xt, yt = np.concatenate(d.test_x), np.concatenate(d.test_y)
    acc = np.mean(np.argmin(((xt[:, None, :] - means[None]) ** 2).sum(-1), axis=1) == yt)
    assert acc > 0.25
    # real files: 30 x 5 slots over small CIFAR-format batches
    _, sums, _ = _write_cifar_folder(tmp_path, n=60)
    r = cifar10_hetero(tmp_path, checksums=sums, num_silos=4, classes_per_silo=5)
    assert r.real and r.input_shape == (3, 32, 32) and all(len(set(y)) <= 5 for y in r.train_y)
    with pytest.raises(ValueError, match="num_silos \\* classes_per_silo must be a multiple"):
        cifar10_hetero(tmp_path, num_silos=3)


# -------------------------------------------------------------------------------------- registry
def test_registry_lists_image_datasets_and_missing_files(tmp_path):
    names = {"rotated-masked-mnist", "rotated-masked-digits", "rotated-masked-standin", "cifar10-hetero",
             "cifar10-hetero-standin"}
    assert names <= set(DATASETS) and names <= set(DATASET_DESCRIPTIONS)  # others may fall back to the CLI default
    assert {"rotated-masked-mnist", "cifar10-hetero"} <= set(REAL_DATASETS)
    assert DATASET_DESCRIPTIONS["rotated-masked-digits"].startswith("real")
    assert DATASET_DESCRIPTIONS["cifar10-hetero-standin"].startswith("synthetic")
    with pytest.raises(DatasetNotFoundError, match=r"(?s)MNIST .*not found.*rotated-masked-digits"):
        load_dataset("rotated-masked-mnist", data_dir=tmp_path)
    with pytest.raises(DatasetNotFoundError, match=r"(?s)CIFAR-10 .*not found.*'cifar10-hetero-standin'"):
        load_dataset("cifar10-hetero", data_dir=tmp_path)
    d = load_dataset("rotated-masked-standin", num_silos=4, train_per_silo=5, test_per_silo=2)
    assert not d.real and d.info["rotation_group"] == (0, 1, 2, 3)
    with pytest.raises(ValueError, match="mask_ratio must lie in"):
        load_dataset("rotated-masked-digits", mask_ratio=2)


# ----------------------------------------------------------------------------------------- Fig. A1
def test_fig_a1_examples_share_the_silo_mask():
    import matplotlib

    from fedtrain.figures import plot_rotated_masked_examples

    d = rotated_masked_standin(num_silos=8, train_per_silo=3, test_per_silo=1, mask_ratio=0.4, image_size=12)
    fig = plot_rotated_masked_examples(d, per_silo=2, show_mask=True)
    assert not matplotlib.rcParams["text.usetex"]
    axes = np.array(fig.axes).reshape(3, 6)
    silos = [0, 1, 3, 4, 6, 7]  # 6 silos spread over 0..7: every rotation group shows
    for j, k in enumerate(silos):
        assert axes[0, j].get_title().startswith(f"silo {k}\n{d.info['rotation_degrees'][k]}° rotation")
        for i in range(2):
            shown = np.asarray(axes[i, j].images[0].get_array())
            np.testing.assert_array_equal(shown, d.train_x[k][i].reshape(12, 12))
            assert np.all(shown[d.info["masks"][k]] == 1.0)  # the silo's mask on each of its images
            assert axes[i, j].get_xlabel() == f"label {d.train_y[k][i]}"
        np.testing.assert_array_equal(np.asarray(axes[2, j].images[0].get_array()), d.info["masks"][k])
    assert axes[0, 0].get_ylabel() == "image 1" and "synthetic stand-in" in fig.get_suptitle()
    with pytest.raises(ValueError, match=r"silos must be a non-empty list of silo indices in 0..7"):
        plot_rotated_masked_examples(d, silos=[8])
    with pytest.raises(ValueError, match="per_silo must be an integer >= 1"):
        plot_rotated_masked_examples(d, per_silo=0)
    with pytest.raises(ValueError, match="data must be a rotated & masked image dataset"):
        plot_rotated_masked_examples(cifar10_hetero_standin(samples_per_class=2, test_samples_per_class=1,
                                                            num_silos=2))
    import matplotlib.pyplot as plt

    plt.close("all")


def test_standin_options_are_validated():
    cases = [
        (rotated_masked_standin, dict(noise=-1.0), "noise must be >= 0"),
        (rotated_masked_standin, dict(image_size=3), "image_size must be an integer >= 4"),
        (rotated_masked_standin, dict(split_seed=-1), "split_seed must be an integer >= 0"),
        (rotated_masked_standin, dict(train_per_silo=0), "train_per_silo must be an integer >= 1"),
        (rotated_masked_digits, dict(image_size=7), "image_size must be an integer >= 8"),
        (cifar10_hetero_standin, dict(samples_per_class=0), "samples_per_class must be an integer >= 1"),
        (cifar10_hetero_standin, dict(signal=-0.1), "signal must be >= 0"),
        (cifar10_hetero_standin, dict(max_shift=-1), "max_shift must be an integer >= 0"),
        (cifar10_hetero_standin, dict(num_silos=7), "must be a multiple of num_classes"),
    ]
    for fn, kw, match in cases:
        with pytest.raises(ValueError, match=match):
            fn(**kw)
    with pytest.raises(ValueError, match="patch_size must divide the image height and width"):
        draw_patch_masks(2, 28, 28, mask_ratio=0.5, patch_size=3)


def test_rotation_groups_are_clusters():
    """A classifier fitted on one rotation group's silos is accurate on that group's test images and much less so
    on the group rotated by 90 degrees (measured: 0.91 vs 0.16 on 64 test images each; 180 degrees gives 0.48, as
    0, 1 and 8 are nearly symmetric): the groups are the clusters IFCA should recover (App. C.1)."""
    from sklearn.linear_model import LogisticRegression

    d = rotated_masked_digits(num_silos=8, num_groups=4, mask_ratio=0.0, image_size=8)
    groups = np.array(d.info["rotation_group"])
    pooled = lambda xs, g: np.concatenate([x for x, gg in zip(xs, groups) if gg == g])  # noqa: E731
    clf = LogisticRegression(max_iter=500).fit(pooled(d.train_x, 0), pooled(d.train_y, 0))
    same = clf.score(pooled(d.test_x, 0), pooled(d.test_y, 0))
    other = clf.score(pooled(d.test_x, 1), pooled(d.test_y, 1))
    assert same > 0.8 and other < same - 0.4, (same, other)


def test_cifar_hetero_standin_too_few_images_per_class_names_the_option_and_minimum():
    """5 test images per class for 30 silos (15 silos per class, each cut ~1/15 of a class) leaves silos without
    test images: a ValueError naming the option and the minimum, not a crash deep in the image stacking.  At the
    minimum every silo holds images of each of its classes, whatever the seed."""
    from fedtrain.data.cifar_hetero import min_images_per_class

    need = min_images_per_class(30, 5, 10)
    # the bound against the worst case of the weights: one slot at 0.4, the other 14 at 0.6
    w_min = 0.4 / (0.4 + 0.6 * 14)
    assert int(need * w_min + 1e-12) >= 1 and int((need - 1) * w_min) == 0
    with pytest.raises(ValueError, match=rf"test_samples_per_class must be >= {need} for 30 silos.*with 5,"):
        cifar10_hetero_standin(samples_per_class=30, test_samples_per_class=5)
    with pytest.raises(ValueError, match=rf"samples_per_class must be >= {need} for 30 silos"):
        cifar10_hetero_standin(samples_per_class=5, test_samples_per_class=30)
    for seed in range(3):
        d = cifar10_hetero_standin(samples_per_class=need, test_samples_per_class=need, seed=seed)
        for k, c in enumerate(d.info["silo_classes"]):
            assert tuple(np.unique(d.train_y[k])) == c and tuple(np.unique(d.test_y[k])) == c
