"""FedHDP's non-IID split (Aldaghri et al., Sec. 5.1) on real Fashion-MNIST, each image used once.

``noniid-fashion``: 2,000 clients, client ``j`` holds 30 training images of the single class ``j mod 10``,
drawn **without replacement**: each class's 6,000 training images are shuffled and cut into its 200 clients'
shares, so the clients hold the 60,000 training images exactly, each once.  5 % of the clients (100, chosen
once at random from the population seed) opt out of DP.  ``noniid-fashion-skewed``: the opted-out clients are
all clients of one class (7, "Sneaker"; the paper's skewed MNIST uses digit 7).  The server test set is the
10,000 test images; a client's local test images are its class's test images, also cut without replacement
(5 per client by default: 200 clients x 5 = the 1,000 test images of each class).

Because no image is shared, the opted-out group holds exactly ``N_np x 30`` distinct training images
(3,000 of 60,000, 5.0 %), against 90.4 % in ``noniid-digits``, where clients draw with replacement from
~120 images per class; ``info["nonprivate_distinct_share"]`` records it.

Asking for more images than a class has (``clients of the class x samples_per_client`` above its count)
raises ``ValueError`` naming the argument: no silent replacement.
"""
from __future__ import annotations

import os
from typing import Mapping

import numpy as np

from fedtheory.validation import check_integer_at_least
from fedtrain.data.base import FederatedData
from fedtrain.data.noniid_digits import SKEWED_CLASS, choose_nonprivate
from fedtrain.data.fashion import load_fashion_mnist

__all__ = ["PAPER_NUM_CLIENTS", "PAPER_SAMPLES_PER_CLIENT", "make_noniid_without_replacement", "load_noniid_fashion",
           "nonprivate_distinct_share"]

PAPER_NUM_CLIENTS = 2000
PAPER_SAMPLES_PER_CLIENT = 30


def nonprivate_distinct_share(data: FederatedData) -> tuple[int, int, float]:
    """``(distinct images the opted-out clients hold, distinct training images overall, share)``.

    Counted on the images' indices in the source pool where the construction records them
    (``info["client_train_index"]``, this module), else on the images' content (identical pixel rows count once:
    ``noniid-digits``, whose clients draw with replacement).  The opted-out clients are ``info["nonprivate_clients"]``.
    """
    nonpriv = data.info["nonprivate_clients"]
    idx = data.info.get("client_train_index")
    if idx is not None:
        held = np.unique(np.concatenate([idx[j] for j in nonpriv]))
        total = np.unique(np.concatenate(list(idx)))
        return int(held.size), int(total.size), float(held.size / total.size)
    rows = lambda xs: np.ascontiguousarray(np.concatenate(xs)).view(  # noqa: E731  one void item per image
        np.dtype((np.void, np.asarray(xs[0]).dtype.itemsize * np.asarray(xs[0]).shape[1])))
    held = np.unique(rows([data.train_x[j] for j in nonpriv]))
    total = np.unique(rows(list(data.train_x)))
    return int(held.size), int(total.size), float(held.size / total.size)


def make_noniid_without_replacement(
    train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, test_y: np.ndarray, *, name: str,
    num_clients: int = PAPER_NUM_CLIENTS, samples_per_client: int = PAPER_SAMPLES_PER_CLIENT,
    test_per_client: int = 5, nonprivate_fraction: float = 0.05, skewed: bool = False, seed: int = 0,
    real: bool = True, input_shape: tuple[int, int, int] | None = None, info: Mapping | None = None,
) -> FederatedData:
    """One class per client (class ``j mod 10``), each client's images cut from its class's shuffled images
    without replacement (module docstring); ``train_x`` flat ``(N, d)``, labels in 0..9.

    Raises ``ValueError`` naming ``samples_per_client`` (or ``test_per_client``) when a class has fewer images
    than its clients need.
    """
    num_clients = int(check_integer_at_least("num_clients", num_clients, 2))
    samples_per_client = int(check_integer_at_least("samples_per_client", samples_per_client, 1))
    test_per_client = int(check_integer_at_least("test_per_client", test_per_client, 1))
    seed = int(check_integer_at_least("seed", seed, 0))
    classes = np.arange(num_clients) % 10
    nonprivate = choose_nonprivate(classes, nonprivate_fraction, np.random.default_rng([seed, 77]),
                                   skewed_class=SKEWED_CLASS if skewed else None)
    rng = np.random.default_rng([seed, 4243])
    shares = {}
    for what, y, per in (("train", train_y, samples_per_client), ("test", test_y, test_per_client)):
        arg = "samples_per_client" if what == "train" else "test_per_client"
        cut = {}
        for c in range(10):
            owners = np.flatnonzero(classes == c)
            pool = rng.permutation(np.flatnonzero(y == c))
            if owners.size * per > pool.size:
                raise ValueError(
                    f"{arg}={per} with num_clients={num_clients}: the {owners.size} clients of class {c} need "
                    f"{owners.size * per} {what} images but the class has {pool.size} (images are drawn without "
                    f"replacement; {arg} must be <= {pool.size // max(owners.size, 1)})")
            for i, j in enumerate(owners):
                cut[int(j)] = np.sort(pool[i * per:(i + 1) * per])
        shares[what] = [cut[j] for j in range(num_clients)]
    tr, te = shares["train"], shares["test"]
    n_np = len(nonprivate) * samples_per_client
    meta = dict(info or {})
    meta.update({
        "num_clients": num_clients, "samples_per_client": samples_per_client, "test_per_client": test_per_client,
        "nonprivate_fraction": float(nonprivate_fraction), "skewed": bool(skewed),
        "skewed_class": SKEWED_CLASS if skewed else -1, "seed": seed,
        "nonprivate_clients": nonprivate, "client_classes": classes, "client_train_index": tr,
        "server_test_x": test_x, "server_test_y": test_y,
        "nonprivate_distinct_images": n_np, "distinct_train_images": num_clients * samples_per_client,
        "nonprivate_distinct_share": n_np / (num_clients * samples_per_client),
        "construction": "one class per client (class = index mod 10), each class's images shuffled and cut "
                        "without replacement (every image used at most once); opt-out set chosen once from the "
                        "population seed" + (f", among the class-{SKEWED_CLASS} clients (skewed)" if skewed else ""),
    })
    return FederatedData(name=name, task="multiclass", train_x=[train_x[i] for i in tr],
                         train_y=[train_y[i] for i in tr], test_x=[test_x[i] for i in te],
                         test_y=[test_y[i] for i in te], real=real, num_classes=10, input_shape=input_shape,
                         info=meta)


def load_noniid_fashion(*, skewed: bool = False, data_dir: str | os.PathLike | None = None,
                        num_clients: int = PAPER_NUM_CLIENTS, samples_per_client: int = PAPER_SAMPLES_PER_CLIENT,
                        test_per_client: int = 5, nonprivate_fraction: float = 0.05, seed: int = 0,
                        verify: bool = True) -> FederatedData:
    """``noniid-fashion`` (``skewed=False``) or ``noniid-fashion-skewed``: the module's construction on the
    Fashion-MNIST files (:func:`fedtrain.data.fashion.load_fashion_mnist`); ``real=True``."""
    m = load_fashion_mnist(data_dir, verify=verify)
    flat = lambda a: a.reshape(len(a), -1)  # noqa: E731
    info = {k: v for k, v in m.info.items() if k != "paths"}
    info["source"] = "Fashion-MNIST files (fedtrain.data.fashion.load_fashion_mnist), each image used once"
    return make_noniid_without_replacement(
        flat(m.train_images), m.train_labels, flat(m.test_images), m.test_labels,
        name="noniid-fashion-skewed" if skewed else "noniid-fashion", num_clients=num_clients,
        samples_per_client=samples_per_client, test_per_client=test_per_client,
        nonprivate_fraction=nonprivate_fraction, skewed=skewed, seed=seed, real=True, input_shape=(1, 28, 28),
        info=info)
