"""FedHDP's non-IID digit datasets (Aldaghri et al., Sec. 5.1, Table 5): one class per client, 5 % opt out.

The paper's **non-IID MNIST** has 2,000 clients; each holds samples of a single digit; about 100 clients
take part per round; 5 % of the clients (chosen once at random, kept fixed) opt out of DP.  Its
**skewed** variant draws the opted-out clients from the clients of one digit (7), so that the
non-private group alone has seen one class only.

Sources (nothing downloads):

* ``noniid-digits`` / ``noniid-digits-skewed``: scikit-learn's bundled 8×8 digits (1,797 images, values
  scaled to [0, 1]).  A stratified third is the **server test set**; the rest is the training pool.
  Scaled down with the structure kept: the pool has ~120 images per class against MNIST's ~6,000, so
  a client's ``samples_per_client`` training images are drawn **with replacement** from its class's
  pool (clients of one class share images; the paper's MNIST split uses each image once), and its
  local test images from its class's share of the server test set.  ``FederatedData.real`` is False
  and ``info["source"]`` says so.
* ``noniid-mnist`` / ``noniid-mnist-skewed``: the same construction on the MNIST files, through
  :func:`fedtrain.data.images.load_mnist` when that loader and its files are present.

Every client's data, the opt-out set and the split are functions of ``seed`` alone (the population);
training seeds do not change them.  ``info`` holds ``nonprivate_clients`` (sorted indices),
``client_classes``, the server test set (``server_test_x``, ``server_test_y``) and the generator
parameters.  ``nonprivate_fraction`` must lie in (0, 1) and leave both groups non-empty.
"""
from __future__ import annotations

import numpy as np

from fedtheory.validation import check_integer_at_least, check_open_interval
from fedtrain.data.base import FederatedData
from fedtrain.data.images import load_digits_images, load_mnist

__all__ = ["digit_pool", "make_noniid_digits", "load_noniid_digits", "load_noniid_mnist", "choose_nonprivate"]

#: Class whose clients form the non-private group of the skewed variant (the paper's digit 7).
SKEWED_CLASS = 7


def digit_pool(source: str = "sklearn-digits", *, seed: int = 0, data_dir=None, image_side: int = 8):
    """``(train_x, train_y, test_x, test_y, info)`` of a labelled digit source, pixels in [0, 1], flattened.

    ``source="sklearn-digits"``: :func:`sklearn.datasets.load_digits` (bundled), stratified 2/3 : 1/3
    split with ``seed``.  ``source="mnist"``: :func:`fedtrain.data.images.load_mnist` (its own train/test
    split); raises the loader's error (which file, where it looked, how to obtain it) when absent.
    Both go through :mod:`fedtrain.data.images` (:func:`~fedtrain.data.images.load_digits_images`,
    :func:`~fedtrain.data.images.load_mnist`).
    ``image_side`` (sklearn digits only): 8 keeps the 8×8 images; 28 upsamples them bilinearly to MNIST's size,
    so that Table 6's network (784 → 50 → 10) and its parameter count are the paper's.
    """
    if source == "sklearn-digits":
        side = int(check_integer_at_least("image_side", image_side, 8))
        imgs, y = load_digits_images(None if side == 8 else side)
        x = imgs.reshape(len(imgs), -1)
        rng = np.random.default_rng([int(seed), 31])
        test = np.zeros(len(y), dtype=bool)
        for c in range(10):
            idx = np.flatnonzero(y == c)
            test[rng.choice(idx, size=len(idx) // 3, replace=False)] = True
        info = {"source": "scikit-learn bundled 8x8 digits (1,797 images), a stand-in for MNIST, scaled down"
                          + (f", upsampled to {side}x{side}" if side != 8 else ""),
                "input_shape": (1, side, side)}
        return x[~test], y[~test], x[test], y[test], info
    if source == "mnist":
        m = load_mnist(data_dir=data_dir)
        tx, ty, vx, vy = _mnist_arrays(m)
        info = {"source": "MNIST files (fedtrain.data.images.load_mnist)", "input_shape": (1, 28, 28)}
        return tx, ty, vx, vy, info
    raise ValueError(f"source must be 'sklearn-digits' or 'mnist' (got {source!r})")


def _mnist_arrays(m):
    """:class:`fedtrain.data.images.ImageArrays` ``(N, 1, 28, 28)`` in [0, 1] as four flat arrays."""
    tx = np.asarray(m.train_images, dtype=np.float32).reshape(len(m.train_images), -1)
    vx = np.asarray(m.test_images, dtype=np.float32).reshape(len(m.test_images), -1)
    return tx, np.asarray(m.train_labels, dtype=np.int64), vx, np.asarray(m.test_labels, dtype=np.int64)


def choose_nonprivate(client_classes: np.ndarray, fraction: float, rng: np.random.Generator, *,
                      skewed_class: int | None = None) -> np.ndarray:
    """Sorted indices of the opted-out clients: ``round(fraction·N)`` (at least 1, at most N − 1) chosen at
    random, among the clients of ``skewed_class`` only when given (the skewed variant)."""
    n = len(client_classes)
    fraction = float(check_open_interval("nonprivate_fraction", fraction, 0.0, 1.0))
    k = int(round(fraction * n))
    if k < 1 or k > n - 1:
        raise ValueError(f"nonprivate_fraction={fraction} of {n} clients gives {k} non-private clients; both privacy "
                         "groups need at least one client (nonprivate_fraction must lie in (0, 1) with "
                         f"1 <= round(fraction*N) <= N-1)")
    pool = np.arange(n) if skewed_class is None else np.flatnonzero(client_classes == skewed_class)
    if k > len(pool):
        raise ValueError(f"nonprivate_fraction={fraction}: {k} non-private clients requested but class {skewed_class} "
                         f"has only {len(pool)} clients")
    return np.sort(rng.choice(pool, size=k, replace=False))


def make_noniid_digits(pool, *, name: str, num_clients: int = 2000, samples_per_client: int = 30,
                       test_per_client: int = 10, nonprivate_fraction: float = 0.05, skewed: bool = False,
                       seed: int = 0, real: bool = False) -> FederatedData:
    """One class per client from ``pool = (train_x, train_y, test_x, test_y, info)`` (module docstring).

    Client ``j`` holds class ``j mod 10`` (so every class has ``N/10`` clients), ``samples_per_client``
    training images drawn with replacement from that class's training pool and ``test_per_client`` local
    test images drawn from that class's server-test images.
    """
    num_clients = int(check_integer_at_least("num_clients", num_clients, 2))
    samples_per_client = int(check_integer_at_least("samples_per_client", samples_per_client, 1))
    test_per_client = int(check_integer_at_least("test_per_client", test_per_client, 1))
    seed = int(check_integer_at_least("seed", seed, 0))
    tx, ty, vx, vy, pinfo = pool
    classes = np.arange(num_clients) % 10
    rng = np.random.default_rng([seed, 4242])
    nonprivate = choose_nonprivate(classes, nonprivate_fraction, np.random.default_rng([seed, 77]),
                                   skewed_class=SKEWED_CLASS if skewed else None)
    by_train = [np.flatnonzero(ty == c) for c in range(10)]
    by_test = [np.flatnonzero(vy == c) for c in range(10)]
    trx, try_, tex, tey = [], [], [], []
    for j in range(num_clients):
        c = classes[j]
        a = rng.choice(by_train[c], size=samples_per_client, replace=True)
        b = rng.choice(by_test[c], size=test_per_client, replace=len(by_test[c]) < test_per_client)
        trx.append(tx[a])
        try_.append(ty[a])
        tex.append(vx[b])
        tey.append(vy[b])
    shape = pinfo.get("input_shape")
    return FederatedData(
        name=name, task="multiclass", train_x=trx, train_y=try_, test_x=tex, test_y=tey, real=real, num_classes=10,
        input_shape=shape,
        info={"source": pinfo["source"], "num_clients": num_clients, "samples_per_client": samples_per_client,
              "test_per_client": test_per_client, "nonprivate_fraction": float(nonprivate_fraction),
              "skewed": bool(skewed), "skewed_class": SKEWED_CLASS if skewed else -1, "seed": seed,
              "nonprivate_clients": nonprivate, "client_classes": classes,
              "server_test_x": vx, "server_test_y": vy,
              "construction": "one class per client (class = index mod 10), training images drawn with "
                              "replacement from the class's pool; opt-out set chosen once from the population "
                              "seed" + (f", among the class-{SKEWED_CLASS} clients (skewed)" if skewed else "")})


def load_noniid_digits(*, skewed: bool = False, num_clients: int = 2000, samples_per_client: int = 30,
                       test_per_client: int = 10, nonprivate_fraction: float = 0.05, seed: int = 0,
                       image_side: int = 8) -> FederatedData:
    """``noniid-digits`` (``skewed=False``) or ``noniid-digits-skewed`` from scikit-learn's digits
    (``image_side=28``: upsampled to MNIST's size, see :func:`digit_pool`)."""
    pool = digit_pool("sklearn-digits", seed=seed, image_side=image_side)
    return make_noniid_digits(pool, name="noniid-digits-skewed" if skewed else "noniid-digits",
                              num_clients=num_clients, samples_per_client=samples_per_client,
                              test_per_client=test_per_client, nonprivate_fraction=nonprivate_fraction,
                              skewed=skewed, seed=seed)


def load_noniid_mnist(*, skewed: bool = False, data_dir=None, num_clients: int = 2000, samples_per_client: int = 30,
                      test_per_client: int = 10, nonprivate_fraction: float = 0.05, seed: int = 0) -> FederatedData:
    """``noniid-mnist``: the same construction on the MNIST files (needs :func:`fedtrain.data.images.load_mnist`)."""
    pool = digit_pool("mnist", seed=seed, data_dir=data_dir)
    return make_noniid_digits(pool, name="noniid-mnist-skewed" if skewed else "noniid-mnist",
                              num_clients=num_clients, samples_per_client=samples_per_client,
                              test_per_client=test_per_client, nonprivate_fraction=nonprivate_fraction,
                              skewed=skewed, seed=seed, real=True)
