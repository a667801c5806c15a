"""Rotated & masked image silos (MR-MTL paper, App. C.1 "Rotated & Masked MNIST", Fig. 6 and Fig. A1).

Construction (App. C.1; details of the authors' ``data_utils/rotated_mnist.py`` in the notes, [CODE]):

1. shuffle the image pool(s) and split them evenly into ``num_silos`` silos (MNIST: 40 silos of 1,500 train
   images from the 60k training set and 250 test images from the 10k test set; labels roughly uniform);
2. split the silos into ``num_groups`` contiguous rotation groups (40 silos, 4 groups: silos 0-9 are
   rotated by 0 degrees, 10-19 by 90, 20-29 by 180, 30-39 by 270; ``np.rot90`` counter-clockwise), which
   makes ``num_groups`` clusters;
3. give each silo its own random mask: the image is cut into non-overlapping ``patch_size`` x ``patch_size``
   patches (2x2: a 14x14 grid on 28x28 images) and each patch is white independently with probability
   ``mask_ratio`` (the released code's ``noise_level``, default 0.5); the same mask is applied to every train
   and test image of the silo (``max(image, mask)``), then each image is min-max renormalized.

The mask is drawn after the rotation, in the silo's own frame.  ``info["rotation_group"]`` holds each silo's
group (IFCA's cluster recovery is scored against it), ``info["rotation_degrees"]`` the angles and
``info["masks"]`` the ``(K, H, W)`` boolean masks.

Three sources (:data:`fedtrain.data.registry.DATASETS`):

* ``rotated-masked-mnist`` (:func:`rotated_masked_mnist`): real MNIST files, the paper's 40 x (1,500 + 250);
* ``rotated-masked-fashion`` (:func:`rotated_masked_fashion`): real Fashion-MNIST files (Debian's
  ``dataset-fashion-mnist``, offline), the paper's 40 x (1,500 + 250) on real 28x28 images;
* ``rotated-masked-digits`` (:func:`rotated_masked_digits`): scikit-learn's bundled digits (real, offline),
  resized to 28x28 by default, the same structure scaled down (20 silos in 4 groups; 1,797 images pooled and
  split 6:1 into train and test as 1,500:250);
* ``rotated-masked-standin`` (:func:`rotated_masked_standin`): synthetic 10-class 28x28 images (one smooth
  random prototype per class plus noise), the paper's structure, ``real=False``.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Mapping

import numpy as np

from fedtheory.validation import check_integer_at_least, check_nonnegative
from fedtrain.data.base import FederatedData
from fedtrain.data.images import check_images, federated_from_images, load_digits_images, load_mnist
from fedtrain.data.fashion import load_fashion_mnist

__all__ = [
    "PAPER_NUM_SILOS",
    "PAPER_TRAIN_PER_SILO",
    "PAPER_TEST_PER_SILO",
    "rotate_quarter_turns",
    "draw_patch_masks",
    "make_rotated_masked",
    "rotated_masked_mnist",
    "rotated_masked_fashion",
    "rotated_masked_digits",
    "plot_silo_examples",
    "rotated_masked_standin",
]

#: App. C.1 / Table A1: 40 silos, 1,500 train and 250 test images each.
PAPER_NUM_SILOS = 40
PAPER_TRAIN_PER_SILO = 1500
PAPER_TEST_PER_SILO = 250
_MAX_GROUPS = 4  # rotations by multiples of 90 degrees


def rotate_quarter_turns(images: np.ndarray, turns: int) -> np.ndarray:
    """Rotate ``(..., H, W)`` images counter-clockwise by ``90 * turns`` degrees (``np.rot90`` on the last two axes)."""
    return np.ascontiguousarray(np.rot90(images, k=int(turns), axes=(-2, -1)))


def draw_patch_masks(num_silos: int, height: int, width: int, *, mask_ratio: float, patch_size: int = 2,
                     seed: int = 0) -> np.ndarray:
    """One random patch mask per silo: ``(num_silos, height, width)`` booleans (True = white).

    The ``height x width`` frame is tiled by non-overlapping ``patch_size`` squares (both sides must be
    multiples of ``patch_size``); each patch is on independently with probability ``mask_ratio``.  Silo ``k``'s
    mask is drawn from ``numpy.random.default_rng([seed, k])``, so it does not depend on the other silos.
    """
    num_silos = int(check_integer_at_least("num_silos", num_silos, 1))
    mask_ratio = _check_ratio(mask_ratio)
    patch_size = int(check_integer_at_least("patch_size", patch_size, 1))
    seed = int(check_integer_at_least("seed", seed, 0))
    if height % patch_size or width % patch_size:
        raise ValueError(f"patch_size must divide the image height and width (got patch_size={patch_size} "
                         f"for {height}x{width} images)")
    gh, gw = height // patch_size, width // patch_size
    grids = np.stack([np.random.default_rng([seed, k]).random((gh, gw)) < mask_ratio for k in range(num_silos)])
    return np.kron(grids, np.ones((patch_size, patch_size), dtype=bool)).astype(bool)


def _check_ratio(mask_ratio: float) -> float:
    value = float(check_nonnegative("mask_ratio", mask_ratio))
    if value > 1.0:
        raise ValueError(f"mask_ratio must lie in [0, 1] (got {value!r})")
    return value


def _apply_mask(images: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``max(image, mask)`` then per-image min-max renormalization (the released code's order)."""
    out = np.maximum(images, mask.astype(images.dtype))
    lo = out.min(axis=(1, 2, 3), keepdims=True)
    hi = out.max(axis=(1, 2, 3), keepdims=True)
    span = hi - lo
    return np.where(span > 0, (out - lo) / np.where(span > 0, span, 1), out).astype(np.float32)


def make_rotated_masked(
    train_images: np.ndarray,
    train_labels: np.ndarray,
    test_images: np.ndarray | None = None,
    test_labels: np.ndarray | None = None,
    *,
    name: str = "rotated-masked",
    real: bool,
    num_classes: int = 10,
    num_silos: int = PAPER_NUM_SILOS,
    train_per_silo: int | None = None,
    test_per_silo: int | None = None,
    num_groups: int = 4,
    mask_ratio: float = 0.5,
    patch_size: int = 2,
    seed: int = 0,
    mask_seed: int | None = None,
    info: Mapping | None = None,
) -> FederatedData:
    """Build rotated & masked silos from an image pool (construction in the module docstring).

    With separate ``test_images``/``test_labels`` (MNIST's 60k/10k), silo ``k`` takes its train images from the
    shuffled train pool and its test images from the shuffled test pool.  Without them, the one pool is shuffled
    and each silo takes ``train_per_silo + test_per_silo`` images from it.  ``None`` sizes use as much of the
    pool as divides evenly (one pool: test share 1/7, as 250 / (1,500 + 250)).

    ``seed`` shuffles and splits; ``mask_seed`` (default ``seed``) draws the masks (:func:`draw_patch_masks`).
    ``mask_ratio`` in [0, 1]; ``1 <= num_groups <= min(4, num_silos)``; ``patch_size`` must divide H and W.
    Violations raise ``ValueError`` naming the argument before any work.
    """
    num_silos = int(check_integer_at_least("num_silos", num_silos, 1))
    num_groups = int(check_integer_at_least("num_groups", num_groups, 1))
    if num_groups > min(_MAX_GROUPS, num_silos):
        raise ValueError(f"num_groups must be <= {_MAX_GROUPS} (rotations by 0, 90, 180, 270 degrees) and <= num_silos "
                         f"({num_silos}) (got {num_groups})")
    mask_ratio = _check_ratio(mask_ratio)
    patch_size = int(check_integer_at_least("patch_size", patch_size, 1))
    seed = int(check_integer_at_least("seed", seed, 0))
    mask_seed = seed if mask_seed is None else int(check_integer_at_least("mask_seed", mask_seed, 0))
    tr_x, tr_y = check_images("train_images", train_images, train_labels, num_classes=num_classes)
    if (test_images is None) != (test_labels is None):
        raise ValueError("test_images and test_labels must be given together (or both left out)")
    h, w = tr_x.shape[2:]
    if h != w:
        raise ValueError(f"train_images must be square to be rotated by 90 degrees (got {h}x{w})")
    if h % patch_size:
        raise ValueError(f"patch_size must divide the image side (got patch_size={patch_size} for {h}x{w} images)")
    rng = np.random.default_rng([seed, 104729])
    test = None
    if test_images is not None:
        test = check_images("test_images", test_images, test_labels, num_classes=num_classes)
        if test[0].shape[1:] != tr_x.shape[1:]:
            raise ValueError(f"test_images must have the shape of train_images' images {tr_x.shape[1:]} "
                             f"(got {test[0].shape[1:]})")
    pools = _silo_pools(rng, (tr_x, tr_y), test, train_per_silo, test_per_silo, num_silos)
    groups = np.array([k * num_groups // num_silos for k in range(num_silos)], dtype=np.int64)
    masks = draw_patch_masks(num_silos, h, w, mask_ratio=mask_ratio, patch_size=patch_size, seed=mask_seed)
    out: list[list[np.ndarray]] = [[], [], [], []]
    for k in range(num_silos):
        for j, (px, py, idx) in enumerate(pools):
            x = rotate_quarter_turns(px[idx[k]], int(groups[k]))
            out[2 * j].append(_apply_mask(x, masks[k][None, None]))
            out[2 * j + 1].append(py[idx[k]])
    meta = dict(info or {})
    meta.update({
        "construction": "App. C.1 rotated & masked: contiguous rotation groups, per-silo 2x2 white-patch masks",
        "rotation_group": tuple(int(g) for g in groups),
        "rotation_degrees": tuple(int(90 * g) for g in groups),
        "num_groups": num_groups, "mask_ratio": mask_ratio, "patch_size": patch_size,
        "seed": seed, "mask_seed": mask_seed, "masks": masks,
        "realized_mask_ratio": float(masks.mean()),
    })
    return federated_from_images(name, out[0], out[1], out[2], out[3], num_classes=num_classes, real=real, info=meta)


def _silo_pools(rng: np.random.Generator, train: tuple[np.ndarray, np.ndarray],
                test: tuple[np.ndarray, np.ndarray] | None, train_per_silo: int | None, test_per_silo: int | None,
                num_silos: int) -> tuple[tuple, tuple]:
    """``((x, y, train indices per silo), (x, y, test indices per silo))``: with a separate ``test`` pool each silo
    takes a slice of the shuffled train pool and one of the shuffled test pool; without it, consecutive slices of
    ``train_per_silo + test_per_silo`` images of the one shuffled pool (``None`` sizes: as much of the pool as
    divides evenly, test share 1/7)."""
    tr_x, tr_y = train
    if test is not None:
        te_x, te_y = test
        n_tr = _per_silo("train_per_silo", train_per_silo, tr_x.shape[0], num_silos)
        n_te = _per_silo("test_per_silo", test_per_silo, te_x.shape[0], num_silos)
        ptr, pte = rng.permutation(tr_x.shape[0]), rng.permutation(te_x.shape[0])
        tr_idx = [ptr[k * n_tr:(k + 1) * n_tr] for k in range(num_silos)]
        te_idx = [pte[k * n_te:(k + 1) * n_te] for k in range(num_silos)]
        return (tr_x, tr_y, tr_idx), (te_x, te_y, te_idx)
    total = tr_x.shape[0]
    if train_per_silo is None and test_per_silo is None:
        each = total // num_silos
        n_te = max(1, round(each / 7))
        n_tr = each - n_te
    else:
        n_tr = _per_silo("train_per_silo", train_per_silo, total, num_silos)
        n_te = _per_silo("test_per_silo", test_per_silo, total, num_silos)
    if n_tr < 1 or num_silos * (n_tr + n_te) > total:
        raise ValueError(f"train_per_silo + test_per_silo times num_silos must fit in the {total} images "
                         f"(got {n_tr} + {n_te} per silo for {num_silos} silos)")
    perm = rng.permutation(total)
    step = n_tr + n_te
    tr_idx = [perm[k * step:k * step + n_tr] for k in range(num_silos)]
    te_idx = [perm[k * step + n_tr:(k + 1) * step] for k in range(num_silos)]
    return (tr_x, tr_y, tr_idx), (tr_x, tr_y, te_idx)


def _per_silo(name: str, value: int | None, pool: int, num_silos: int) -> int:
    if value is None:
        return pool // num_silos
    value = int(check_integer_at_least(name, value, 1))
    if value * num_silos > pool:
        raise ValueError(f"{name} times num_silos must be <= the {pool} images available "
                         f"(got {value} x {num_silos} = {value * num_silos})")
    return value


def rotated_masked_mnist(
    data_dir: str | os.PathLike | None = None,
    *,
    num_silos: int = PAPER_NUM_SILOS,
    train_per_silo: int = PAPER_TRAIN_PER_SILO,
    test_per_silo: int = PAPER_TEST_PER_SILO,
    num_groups: int = 4,
    mask_ratio: float = 0.5,
    seed: int = 0,
    mask_seed: int | None = None,
    verify: bool = True,
    checksums: Mapping[str, str] | None = None,
) -> FederatedData:
    """Rotated & masked MNIST (App. C.1): 40 silos x (1,500 train + 250 test), 4 rotation groups, 2x2 masks.

    Reads the MNIST files with :func:`fedtrain.data.images.load_mnist` (``data_dir``, ``verify``,
    ``checksums``) and builds the silos with :func:`make_rotated_masked` (options there).  ``real=True``.
    """
    return _rotated_masked_from_files("rotated-masked-mnist", load_mnist, data_dir, verify, checksums, (),
                                      num_silos=num_silos, train_per_silo=train_per_silo, test_per_silo=test_per_silo,
                                      num_groups=num_groups, mask_ratio=mask_ratio, seed=seed, mask_seed=mask_seed)


def _rotated_masked_from_files(name: str, load: Callable[..., Any], data_dir, verify: bool,
                               checksums: Mapping[str, str] | None, drop_info: tuple[str, ...],
                               **options: Any) -> FederatedData:
    """The real-file rotated & masked datasets: check the options, read the four IDX files with ``load``, build
    the silos with :func:`make_rotated_masked`; the loader's info (files, checksums) less ``drop_info``."""
    _validate_common(options["num_silos"], options["num_groups"], options["mask_ratio"])  # before any file is read
    arrays = load(data_dir, verify=verify, checksums=checksums)
    return make_rotated_masked(
        arrays.train_images, arrays.train_labels, arrays.test_images, arrays.test_labels, name=name, real=True,
        info={k: v for k, v in arrays.info.items() if k not in drop_info}, **options)


def rotated_masked_fashion(
    data_dir: str | os.PathLike | None = None,
    *,
    num_silos: int = PAPER_NUM_SILOS,
    train_per_silo: int = PAPER_TRAIN_PER_SILO,
    test_per_silo: int = PAPER_TEST_PER_SILO,
    num_groups: int = 4,
    mask_ratio: float = 0.5,
    seed: int = 0,
    mask_seed: int | None = None,
    verify: bool = True,
    checksums: Mapping[str, str] | None = None,
) -> FederatedData:
    """App. C.1's rotated & masked construction on real Fashion-MNIST: 40 silos x (1,500 train + 250 test).

    The 60,000 training and 10,000 test images (:func:`fedtrain.data.fashion.load_fashion_mnist`: ``data_dir``,
    ``verify``, ``checksums``) are shuffled and split evenly over the silos; 4 rotation groups of 10 silos
    (0, 90, 180, 270 degrees); per-silo masks of non-overlapping 2x2 white patches at ``mask_ratio``, applied
    as ``max(image, mask)`` followed by per-image min-max rescaling (:func:`make_rotated_masked`).
    ``train_per_silo`` may be lowered (each silo then holds a random part of its share).  ``real=True``.
    """
    return _rotated_masked_from_files("rotated-masked-fashion", load_fashion_mnist, data_dir, verify, checksums,
                                      ("paths",), num_silos=num_silos, train_per_silo=train_per_silo,
                                      test_per_silo=test_per_silo, num_groups=num_groups, mask_ratio=mask_ratio,
                                      seed=seed, mask_seed=mask_seed)


def plot_silo_examples(data: FederatedData, silos=None, *, per_silo: int = 4, ax_size: float = 1.1):
    """Fig. A1's picture: ``per_silo`` training images of each silo in ``silos`` (one row per silo), titled
    with the silo's rotation and mask ratio.  ``silos`` defaults to the first silo of each rotation group.
    Returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    if data.input_shape is None:
        raise ValueError(f"data must be an image dataset (input_shape set; got {data.name!r} without one)")
    per_silo = int(check_integer_at_least("per_silo", per_silo, 1))
    groups = data.info.get("rotation_group")
    if silos is None:
        silos = ([groups.index(g) for g in sorted(set(groups))] if groups else [0])
    silos = [int(k) for k in silos]
    for k in silos:
        if not 0 <= k < data.num_silos:
            raise ValueError(f"silos must lie in 0..{data.num_silos - 1} (got {k})")
    fig, axes = plt.subplots(len(silos), per_silo, figsize=(ax_size * per_silo, ax_size * len(silos) + 0.3),
                             squeeze=False)
    c, h, w = data.input_shape
    for row, k in zip(axes, silos):
        imgs = data.train_x[k][:per_silo].reshape(-1, c, h, w)
        for j, ax in enumerate(row):
            ax.set_xticks([])
            ax.set_yticks([])
            if j < len(imgs):
                ax.imshow(imgs[j].transpose(1, 2, 0).squeeze(-1) if c == 1 else imgs[j].transpose(1, 2, 0),
                          cmap="gray", vmin=0.0, vmax=1.0)
        label = f"silo {k}"
        if groups:
            label += f"\n{data.info['rotation_degrees'][k]}°"
        row[0].set_ylabel(label, fontsize=8)
    ratio = data.info.get("mask_ratio")
    fig.suptitle(f"{data.name}" + (f", mask ratio {ratio:g}" if ratio is not None else ""), fontsize=9)
    fig.tight_layout()
    return fig


def rotated_masked_digits(
    *,
    num_silos: int = 20,
    train_per_silo: int | None = None,
    test_per_silo: int | None = None,
    num_groups: int = 4,
    mask_ratio: float = 0.5,
    image_size: int = 28,
    patch_size: int = 2,
    seed: int = 0,
    mask_seed: int | None = None,
) -> FederatedData:
    """Rotated & masked digits: App. C.1's construction on scikit-learn's bundled digits (real, offline).

    The 1,797 8x8 digits are resized to ``image_size`` (default 28, the paper's ConvNet input; 8 keeps them
    native, :func:`fedtrain.data.images.load_digits_images`), pooled, and split into ``num_silos`` silos
    (default 20 in 4 rotation groups: 76 train + 13 test images each, the paper's 6:1 ratio), with per-silo
    ``patch_size`` masks (:func:`make_rotated_masked`).  ``real=True``.
    """
    _validate_common(num_silos, num_groups, mask_ratio)
    images, labels = load_digits_images(int(check_integer_at_least("image_size", image_size, 8)))
    return make_rotated_masked(
        images, labels, name="rotated-masked-digits", real=True, num_silos=num_silos, train_per_silo=train_per_silo,
        test_per_silo=test_per_silo, num_groups=num_groups, mask_ratio=mask_ratio, patch_size=patch_size,
        seed=seed, mask_seed=mask_seed,
        info={"source": "scikit-learn load_digits (UCI optical recognition of handwritten digits, test set)",
              "image_size": int(image_size), "resize": "bilinear (scipy.ndimage.zoom, order=1)" if image_size != 8 else "none"})


def rotated_masked_standin(
    *,
    num_silos: int = PAPER_NUM_SILOS,
    train_per_silo: int = PAPER_TRAIN_PER_SILO,
    test_per_silo: int = PAPER_TEST_PER_SILO,
    num_groups: int = 4,
    mask_ratio: float = 0.5,
    image_size: int = 28,
    noise: float = 0.15,
    seed: int = 0,
    split_seed: int | None = None,
    mask_seed: int | None = None,
) -> FederatedData:
    """Synthetic stand-in with rotated & masked MNIST's structure (``real=False``).

    Ten classes, each a smooth random ``image_size``-square prototype (white noise blurred and scaled to
    [0, 1], not rotation-symmetric); an image is its class prototype plus Gaussian pixel noise of standard
    deviation ``noise``, clipped to [0, 1].  ``seed`` draws the prototypes and images (an MNIST-sized pool of
    ``num_silos * (train_per_silo + test_per_silo)``), ``split_seed`` (default ``seed``) the shuffle and split,
    ``mask_seed`` (default ``split_seed``) the masks; the rest is :func:`make_rotated_masked`.
    """
    _validate_common(num_silos, num_groups, mask_ratio)
    image_size = int(check_integer_at_least("image_size", image_size, 4))
    noise = float(check_nonnegative("noise", noise))
    seed = int(check_integer_at_least("seed", seed, 0))
    split_seed = seed if split_seed is None else int(check_integer_at_least("split_seed", split_seed, 0))
    n_tr = int(check_integer_at_least("train_per_silo", train_per_silo, 1))
    n_te = int(check_integer_at_least("test_per_silo", test_per_silo, 1))
    rng = np.random.default_rng([seed, 15485863])
    protos = _smooth_prototypes(rng, 10, 1, image_size)
    total = num_silos * (n_tr + n_te)
    labels = rng.integers(0, 10, size=total)
    images = np.clip(protos[labels] + noise * rng.standard_normal((total, 1, image_size, image_size)), 0, 1)
    return make_rotated_masked(
        images.astype(np.float32), labels, name="rotated-masked-standin", real=False, num_silos=num_silos,
        train_per_silo=n_tr, test_per_silo=n_te, num_groups=num_groups, mask_ratio=mask_ratio,
        seed=split_seed, mask_seed=mask_seed,
        info={"generator": "class prototypes (blurred white noise) + Gaussian pixel noise", "noise": noise,
              "population_seed": seed, "split_seed": split_seed, "image_size": image_size})


def _smooth_prototypes(rng: np.random.Generator, num_classes: int, channels: int, size: int,
                       sigma: float | None = None) -> np.ndarray:
    """``num_classes`` smooth random images ``(num_classes, channels, size, size)``, each scaled to [0, 1]."""
    from scipy.ndimage import gaussian_filter

    sigma = size / 10 if sigma is None else sigma
    raw = rng.standard_normal((num_classes, channels, size, size))
    smooth = gaussian_filter(raw, sigma=(0, 0, sigma, sigma), mode="wrap")
    lo = smooth.min(axis=(1, 2, 3), keepdims=True)
    hi = smooth.max(axis=(1, 2, 3), keepdims=True)
    return ((smooth - lo) / (hi - lo)).astype(np.float32)


def _validate_common(num_silos: int, num_groups: int, mask_ratio: float) -> None:
    num_silos = int(check_integer_at_least("num_silos", num_silos, 1))
    num_groups = int(check_integer_at_least("num_groups", num_groups, 1))
    if num_groups > min(_MAX_GROUPS, num_silos):
        raise ValueError(f"num_groups must be <= {_MAX_GROUPS} (rotations by 0, 90, 180, 270 degrees) and <= num_silos "
                         f"({num_silos}) (got {num_groups})")
    _check_ratio(mask_ratio)
