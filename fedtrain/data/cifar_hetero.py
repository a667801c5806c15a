"""Heterogeneous CIFAR-10 (MR-MTL paper, App. C.1 and Fig. 3d): 30 silos, each holding 5 of the 10 classes.

The paper follows the split of pFedMe / pFedHN (using pFedHN's code): 30 clients, each with a random number of
samples from 5 randomly chosen classes; Table A1 gives 1,515 to 1,839 training images per silo and the
"standard" CIFAR-10 train/test split.  :func:`partition_by_classes` implements that partition as pFedHN's
public code does it (``gen_classes_per_node`` and ``gen_data_split``; the MR-MTL repository does not contain
it, so this is a reconstruction, stated as such):

1. every class is held by the same number of silos, ``num_silos * classes_per_silo / num_classes`` (15); each
   silo in turn picks ``classes_per_silo`` distinct classes among those with the most remaining slots;
2. each (class, silo) slot gets a weight drawn uniformly in [0.4, 0.6], normalized over the class's slots;
3. each class's shuffled training images are cut in order into ``floor(n_class * weight)`` blocks, one per
   silo holding it (a few images are left over); the test images are cut with the same weights, so a silo's
   test set has the classes and class proportions of its training set.

With CIFAR-10's 5,000 training images per class this gives about 1,670 images per silo (1,515-1,839 in
Table A1, whose exact draw is unknown).  ``cifar10-hetero`` (:func:`cifar10_hetero`) reads the real files
(:func:`fedtrain.data.images.load_cifar10`); ``cifar10-hetero-standin`` (:func:`cifar10_hetero_standin`) is
synthetic 32x32x3 data with class structure (``real=False``): at its default sizes (5,000 training images per
class) its silos have the paper's sizes; with fewer ``samples_per_class`` it is a toy, and ``info["scale"]``
says which.  ``hetero-fashion`` (:func:`hetero_fashion`) is the same partition of real Fashion-MNIST (6,000
training and 1,000 test images per class: about 2,000 training images per silo).  ``info["silo_classes"]``
lists each silo's classes.
"""
from __future__ import annotations

import os
from typing import Mapping

import numpy as np

from fedtheory.validation import check_integer_at_least, check_nonnegative
from fedtrain.data.base import FederatedData
from fedtrain.data.images import check_images, federated_from_images, load_cifar10
from fedtrain.data.fashion import load_fashion_mnist
from fedtrain.data.rotated_masked import _smooth_prototypes

__all__ = ["PAPER_NUM_SILOS", "PAPER_CLASSES_PER_SILO", "partition_by_classes", "min_images_per_class",
           "make_class_heterogeneous",
           "cifar10_hetero", "cifar10_hetero_standin", "hetero_fashion"]

#: App. C.1: 30 silos, 5 of the 10 classes each.
PAPER_NUM_SILOS = 30
PAPER_CLASSES_PER_SILO = 5
_WEIGHT_RANGE = (0.4, 0.6)  # pFedHN's low_prob, high_prob


def _check_structure(num_silos: int, classes_per_silo: int, num_classes: int) -> tuple[int, int, int]:
    num_classes = int(check_integer_at_least("num_classes", num_classes, 2))
    num_silos = int(check_integer_at_least("num_silos", num_silos, 1))
    classes_per_silo = int(check_integer_at_least("classes_per_silo", classes_per_silo, 1))
    if classes_per_silo > num_classes:
        raise ValueError(f"classes_per_silo must be <= num_classes ({num_classes}) (got {classes_per_silo})")
    if (num_silos * classes_per_silo) % num_classes:
        raise ValueError(f"num_silos * classes_per_silo must be a multiple of num_classes ({num_classes}) so that "
                         f"every class is held by equally many silos (got {num_silos} * {classes_per_silo})")
    return num_silos, classes_per_silo, num_classes


def min_images_per_class(num_silos: int = PAPER_NUM_SILOS, classes_per_silo: int = PAPER_CLASSES_PER_SILO,
                         num_classes: int = 10) -> int:
    """The fewest images per class with which :func:`partition_by_classes` gives every (class, silo) slot at least
    one image, whatever the seed: each class is cut among ``s = num_silos * classes_per_silo / num_classes`` silos
    with weights ``u / Σu``, ``u`` uniform in [0.4, 0.6], so the smallest weight is above ``0.4 / (0.4 + 0.6 (s-1))
    = 2 / (3s - 1)`` and ``ceil((3s - 1) / 2)`` images suffice.

    >>> min_images_per_class(30, 5, 10), min_images_per_class(10, 5, 10), min_images_per_class(2, 5, 10)
    (22, 7, 1)
    """
    num_silos, classes_per_silo, num_classes = _check_structure(num_silos, classes_per_silo, num_classes)
    slots = num_silos * classes_per_silo // num_classes
    return -(-(3 * slots - 1) // 2)


def partition_by_classes(
    train_labels: np.ndarray,
    test_labels: np.ndarray,
    *,
    num_silos: int = PAPER_NUM_SILOS,
    classes_per_silo: int = PAPER_CLASSES_PER_SILO,
    num_classes: int = 10,
    seed: int = 0,
) -> tuple[list[np.ndarray], list[np.ndarray], list[tuple[int, ...]]]:
    """Class-heterogeneous partition (steps in the module docstring): per-silo train and test indices and classes.

    Returns ``(train_index, test_index, silo_classes)``: ``train_index[k]`` indexes ``train_labels``,
    ``silo_classes[k]`` is the sorted tuple of silo ``k``'s classes.  Everything is a function of ``seed``.
    """
    num_silos, classes_per_silo, num_classes = _check_structure(num_silos, classes_per_silo, num_classes)
    seed = int(check_integer_at_least("seed", seed, 0))
    labels = {"train_labels": np.asarray(train_labels), "test_labels": np.asarray(test_labels)}
    for name, y in labels.items():
        if y.ndim != 1 or (y.size and not np.issubdtype(y.dtype, np.integer)):
            raise ValueError(f"{name} must be a 1-D integer array (got {y.dtype} of shape {y.shape})")
        if y.size and (y.min() < 0 or y.max() >= num_classes):
            raise ValueError(f"{name} must lie in 0..{num_classes - 1} (got range [{y.min()}, {y.max()}])")
    rng = np.random.default_rng([seed, 7727])
    slots = num_silos * classes_per_silo // num_classes
    weights = {c: list(rng.uniform(*_WEIGHT_RANGE, size=slots)) for c in range(num_classes)}
    weights = {c: [w / sum(ws) for w in ws] for c, ws in weights.items()}
    remaining = np.full(num_classes, slots)
    silo_classes: list[list[int]] = []
    silo_weights: list[list[float]] = []
    for _ in range(num_silos):
        chosen: list[int] = []
        for _ in range(classes_per_silo):
            free = np.array([c for c in range(num_classes) if c not in chosen and remaining[c] > 0])
            best = free[remaining[free] == remaining[free].max()]
            c = int(rng.choice(best))
            chosen.append(c)
            remaining[c] -= 1
        silo_classes.append(chosen)
        silo_weights.append([weights[c].pop() for c in chosen])
    out = []
    for name, y in labels.items():
        pools = {c: rng.permutation(np.flatnonzero(y == c)) for c in range(num_classes)}
        counts = {c: len(p) for c, p in pools.items()}
        index = []
        for chosen, ws in zip(silo_classes, silo_weights):
            parts = []
            for c, w in zip(chosen, ws):
                take = int(counts[c] * w)
                parts.append(pools[c][:take])
                pools[c] = pools[c][take:]
            index.append(np.sort(np.concatenate(parts)).astype(np.int64))
        out.append(index)
    return out[0], out[1], [tuple(sorted(c)) for c in silo_classes]


def make_class_heterogeneous(
    train_images: np.ndarray,
    train_labels: np.ndarray,
    test_images: np.ndarray,
    test_labels: np.ndarray,
    *,
    name: str,
    real: bool,
    num_silos: int = PAPER_NUM_SILOS,
    classes_per_silo: int = PAPER_CLASSES_PER_SILO,
    num_classes: int = 10,
    seed: int = 0,
    info: Mapping | None = None,
    size_names: tuple[str, str] = ("train images per class", "test images per class"),
) -> FederatedData:
    """Split a labelled image set into class-heterogeneous silos (:func:`partition_by_classes`).

    A silo left without training or test images (too few images per class for the number of silos holding each
    class) raises ``ValueError`` naming the option (``size_names``: what the caller calls the train and test
    images per class) and the minimum, :func:`min_images_per_class`, that gives every silo images of each of its
    classes."""
    num_silos, classes_per_silo, num_classes = _check_structure(num_silos, classes_per_silo, num_classes)
    tr_x, tr_y = check_images("train_images", train_images, train_labels, num_classes=num_classes)
    te_x, te_y = check_images("test_images", test_images, test_labels, num_classes=num_classes)
    tr_idx, te_idx, classes = partition_by_classes(tr_y, te_y, num_silos=num_silos, classes_per_silo=classes_per_silo,
                                                   num_classes=num_classes, seed=seed)
    for idx, y, option in ((tr_idx, tr_y, size_names[0]), (te_idx, te_y, size_names[1])):
        empty = [k for k, i in enumerate(idx) if i.size == 0]
        if empty:
            need = min_images_per_class(num_silos, classes_per_silo, num_classes)
            have = int(np.bincount(y, minlength=num_classes).min()) if y.size else 0
            raise ValueError(f"{option} must be >= {need} for {num_silos} silos with {classes_per_silo} of "
                             f"{num_classes} classes each (then every silo gets images of each of its classes); "
                             f"with {have}, silo(s) {empty[:5]} get none")
    meta = dict(info or {})
    meta.update({"construction": "App. C.1 heterogeneous CIFAR-10: pFedHN-style class partition",
                 "num_silos": int(num_silos), "classes_per_silo": int(classes_per_silo), "seed": int(seed),
                 "silo_classes": tuple(classes)})
    return federated_from_images(name, [tr_x[i] for i in tr_idx], [tr_y[i] for i in tr_idx],
                                 [te_x[i] for i in te_idx], [te_y[i] for i in te_idx],
                                 num_classes=num_classes, real=real, info=meta)


def cifar10_hetero(
    data_dir: str | os.PathLike | None = None,
    *,
    num_silos: int = PAPER_NUM_SILOS,
    classes_per_silo: int = PAPER_CLASSES_PER_SILO,
    seed: int = 0,
    verify: bool = True,
    checksums: Mapping[str, str] | None = None,
) -> FederatedData:
    """Heterogeneous CIFAR-10 (App. C.1, Fig. 3d) from the real files: 30 silos with 5 classes each, ``real=True``.

    Reads CIFAR-10 with :func:`fedtrain.data.images.load_cifar10` (``data_dir``, ``verify``, ``checksums``)
    and partitions train and test with :func:`partition_by_classes` (``seed``).
    """
    _check_structure(num_silos, classes_per_silo, 10)
    arrays = load_cifar10(data_dir, verify=verify, checksums=checksums)
    return make_class_heterogeneous(arrays.train_images, arrays.train_labels, arrays.test_images, arrays.test_labels,
                                    name="cifar10-hetero", real=True, num_silos=num_silos,
                                    classes_per_silo=classes_per_silo, seed=seed, info=arrays.info)


def cifar10_hetero_standin(
    *,
    num_silos: int = PAPER_NUM_SILOS,
    classes_per_silo: int = PAPER_CLASSES_PER_SILO,
    samples_per_class: int = 5000,
    test_samples_per_class: int = 1000,
    signal: float = 0.3,
    nuisance: float = 1.0,
    noise: float = 0.3,
    max_shift: int = 2,
    seed: int = 0,
    split_seed: int | None = None,
) -> FederatedData:
    """Synthetic stand-in with heterogeneous CIFAR-10's structure (32x32x3, 10 classes, 30 silos x 5 classes).

    Each class has a smooth random colour pattern ``P_c`` (blurred white noise per channel, centred); a bank of 64
    smooth class-independent background fields ``F`` plays the part of natural-image clutter.  An image of class
    ``c`` is ``0.5 + signal * shift(P_c) + nuisance * (a F_i + b F_j) + noise * eps``, clipped to [0, 1], with a
    random circular shift of up to ``max_shift`` pixels per direction, two random fields with weights
    ``a, b ~ N(0, 1)`` and pixel noise ``eps ~ N(0, 1)``.  The defaults make the classes learnable but not
    trivially: the paper's ConvNet, trained without noise, ends well above chance (0.1) and well below perfect
    accuracy (``benchmarks/README.md`` gives the accuracies that chose them).
    CIFAR-10's sizes by default (5,000 train and 1,000 test images per class: about 740 MB as float32; lower
    ``samples_per_class`` for CPU runs).  ``seed`` draws the images, ``split_seed`` (default ``seed``) the
    partition.  ``real=False``.  Sizes so small that a silo gets no training or test images raise ``ValueError``
    naming the option and its minimum (:func:`min_images_per_class`: 22 for the paper's 30 silos x 5 classes).
    """
    _check_structure(num_silos, classes_per_silo, 10)
    n_tr = int(check_integer_at_least("samples_per_class", samples_per_class, 1))
    n_te = int(check_integer_at_least("test_samples_per_class", test_samples_per_class, 1))
    signal = float(check_nonnegative("signal", signal))
    nuisance = float(check_nonnegative("nuisance", nuisance))
    noise = float(check_nonnegative("noise", noise))
    max_shift = int(check_integer_at_least("max_shift", max_shift, 0))
    seed = int(check_integer_at_least("seed", seed, 0))
    split_seed = seed if split_seed is None else int(check_integer_at_least("split_seed", split_seed, 0))
    rng = np.random.default_rng([seed, 32452843])
    patterns = _smooth_prototypes(rng, 10, 3, 32, sigma=2.5) - np.float32(0.5)
    fields = _smooth_prototypes(rng, 64, 3, 32, sigma=4.0) - np.float32(0.5)

    def draw(per_class: int) -> tuple[np.ndarray, np.ndarray]:
        labels = np.repeat(np.arange(10, dtype=np.int64), per_class)
        images = np.empty((labels.size, 3, 32, 32), dtype=np.float32)
        shifts = rng.integers(-max_shift, max_shift + 1, size=(labels.size, 2))
        which = rng.integers(0, fields.shape[0], size=(labels.size, 2))
        weights = (nuisance * rng.standard_normal((labels.size, 2))).astype(np.float32)
        for start in range(0, labels.size, 4096):  # chunks keep the temporary arrays small
            sl = slice(start, min(start + 4096, labels.size))
            for i in range(sl.start, sl.stop):
                images[i] = np.roll(patterns[labels[i]], (int(shifts[i, 0]), int(shifts[i, 1])), axis=(1, 2))
            chunk = images[sl]
            chunk *= np.float32(signal)
            chunk += np.float32(0.5)
            chunk += weights[sl, 0, None, None, None] * fields[which[sl, 0]]
            chunk += weights[sl, 1, None, None, None] * fields[which[sl, 1]]
            chunk += np.float32(noise) * rng.standard_normal(chunk.shape, dtype=np.float32)
            np.clip(chunk, 0.0, 1.0, out=chunk)
        return images, labels

    tr_x, tr_y = draw(n_tr)
    te_x, te_y = draw(n_te)
    return make_class_heterogeneous(tr_x, tr_y, te_x, te_y, name="cifar10-hetero-standin", real=False,
                                    num_silos=num_silos, classes_per_silo=classes_per_silo, seed=split_seed,
                                    size_names=("samples_per_class", "test_samples_per_class"),
                                    info={"generator": "shifted smooth class patterns + random background fields "
                                                       "+ Gaussian pixel noise",
                                          "signal": signal, "nuisance": nuisance, "noise": noise,
                                          "max_shift": max_shift, "population_seed": seed, "split_seed": split_seed,
                                          "samples_per_class": n_tr, "test_samples_per_class": n_te,
                                          "scale": _standin_scale(n_tr, num_silos, classes_per_silo)})


#: CIFAR-10's training images per class: the stand-in's default, which gives the paper's silo sizes.
CIFAR10_TRAIN_PER_CLASS = 5000


def _standin_scale(per_class: int, num_silos: int, classes_per_silo: int) -> str:
    """``"paper silo sizes"`` at CIFAR-10's 5,000 images per class, else ``"toy: ..."`` with the mean silo size."""
    mean = per_class * 10 * 1.0 / num_silos  # every image goes to some silo, up to rounding
    if per_class >= CIFAR10_TRAIN_PER_CLASS:
        return f"paper silo sizes (about {mean:,.0f} training images per silo; Table A1: 1,515-1,839)"
    return (f"toy: about {mean:,.0f} training images per silo against the paper's 1,515-1,839 "
            f"(samples_per_class={per_class} < {CIFAR10_TRAIN_PER_CLASS})")


def hetero_fashion(
    data_dir: str | os.PathLike | None = None,
    *,
    num_silos: int = PAPER_NUM_SILOS,
    classes_per_silo: int = PAPER_CLASSES_PER_SILO,
    seed: int = 0,
    verify: bool = True,
) -> FederatedData:
    """Fig. 3(d)'s class-heterogeneous construction on real Fashion-MNIST: 30 silos holding 5 of the 10 classes.

    The 60,000/10,000 images (:func:`fedtrain.data.fashion.load_fashion_mnist`) are partitioned with
    :func:`partition_by_classes` (the paper's CIFAR-10 procedure, pFedHN's split), giving about 2,000 training
    and 330 test images per silo.  ``real=True``.
    """
    _check_structure(num_silos, classes_per_silo, 10)
    arrays = load_fashion_mnist(data_dir, verify=verify)
    return make_class_heterogeneous(arrays.train_images, arrays.train_labels, arrays.test_images, arrays.test_labels,
                                    name="hetero-fashion", real=True, num_silos=num_silos,
                                    classes_per_silo=classes_per_silo, seed=seed,
                                    info={k: v for k, v in arrays.info.items() if k != "paths"})
