"""A reduced, synthetic stand-in for the PETs Prize pandemic-forecasting setting (Liu et al. 2023).

The challenge data (a simulated outbreak over 7.7 million people) were released to participants only, so the
book's PETs chapter runs on this generator instead.  It keeps the three features that make the setting a
cross-silo problem:

* **silos of very different sizes** (regions; the largest more than 10× the smallest);
* **rare positives** (a few per cent of people are infected in the prediction window);
* **a contact graph**: each person's row holds their own features and the mean features of a *deterministic
  sample* of ``contacts`` of their contacts (a one-hop, non-parametric graph convolution), so one person's
  data enter their own row and ``contacts`` rows of other people.

Model, per silo ``k`` with ``n_k`` people: own features ``x_i ~ N(0, I_4)`` and an earlier infection
``s_i ~ Bernoulli(p_prev)``; contacts: for ``r = 1..contacts`` a random derangement ``π_r`` of the silo gives
person ``i`` the contact ``π_r(i)``, so every person is sampled as a contact by exactly ``contacts`` others;
the label (infected in the next week) is ``Bernoulli(sigmoid(b_k + β_kᵀx_i + γ·f_i + 0.8 s_i))`` where ``f_i``
is the infected fraction of ``i``'s sampled contacts, ``b_k = b + τ u_k`` and ``β_k = β + τ v_k`` (silo
heterogeneity ``τ``), and ``b`` is set so that about ``positive_rate`` of people are positive.

The row is ``[x_i, s_i, mean_r x_{π_r(i)}, f_i]`` (10 features); the task is two-class logistic regression
(``task="multiclass"``, 2 classes).  ``info["rows_per_person"]`` is ``1 + contacts``: how many rows one
person's data can change (the group size for node-level privacy, :func:`fedtrain.pets.node_level_guarantee`).
"""
from __future__ import annotations

import numpy as np

from fedtheory.validation import check_integer_at_least, check_nonnegative, check_open_interval
from fedtrain.data.base import FederatedData

__all__ = ["contact_network_standin"]

_BETA = np.array([1.2, -0.6, 1.0, 0.4])


def _derangement(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly shuffled cycle: a permutation of ``range(n)`` without fixed points (n >= 2)."""
    order = rng.permutation(n)
    out = np.empty(n, dtype=int)
    out[order] = np.roll(order, -1)
    return out


def contact_network_standin(*, sizes=(150, 300, 600, 1200, 2400), contacts: int = 5, positive_rate: float = 0.05,
                            tau: float = 0.5, prev_rate: float = 0.1, contact_effect: float = 3.0,
                            test_fraction: float = 0.3, seed: int = 0) -> FederatedData:
    """Draw the contact-network stand-in (model in the module docstring): one silo per entry of ``sizes``.

    Everything is a function of ``seed``.  Raises ``ValueError`` naming the argument for a silo of fewer than
    ``contacts + 2`` people, a rate outside (0, 1) or a negative ``tau``.
    """
    contacts = int(check_integer_at_least("contacts", contacts, 1))
    sizes = [int(v) for v in np.atleast_1d(check_integer_at_least("sizes", sizes, contacts + 2))]
    check_open_interval("positive_rate", positive_rate, 0.0, 0.5)
    check_open_interval("prev_rate", prev_rate, 0.0, 1.0)
    check_open_interval("test_fraction", test_fraction, 0.0, 1.0)
    check_nonnegative("tau", tau)
    check_nonnegative("contact_effect", contact_effect)
    seed = int(check_integer_at_least("seed", seed, 0))
    rng = np.random.default_rng([seed, 2023])
    K = len(sizes)
    u, v = rng.normal(size=K), rng.normal(size=(K, _BETA.size)) / 2
    raw = []
    for k, n in enumerate(sizes):
        x = rng.normal(size=(n, _BETA.size))
        s = (rng.random(n) < prev_rate).astype(float)
        nbr = np.stack([_derangement(n, rng) for _ in range(contacts)], axis=1)  # (n, contacts)
        frac = s[nbr].mean(axis=1)
        logit = tau * u[k] + x @ (_BETA + tau * v[k]) + contact_effect * frac + 0.8 * s
        rows = np.hstack([x, s[:, None], x[nbr].mean(axis=1), frac[:, None]])
        raw.append((rows, logit, rng.random(n)))
    # the common baseline b that makes the expected positive share equal positive_rate (bisection; monotone in b)
    lo, hi = -20.0, 5.0
    for _ in range(60):
        b = (lo + hi) / 2
        share = np.mean(np.concatenate([1 / (1 + np.exp(-(lg + b))) for _, lg, _ in raw]))
        lo, hi = (b, hi) if share < positive_rate else (lo, b)
    train_x, train_y, test_x, test_y = [], [], [], []
    for rows, logit, unif in raw:
        y = (unif < 1 / (1 + np.exp(-(logit + b)))).astype(np.int64)
        n = rows.shape[0]
        perm = rng.permutation(n)
        n_test = max(1, int(round(test_fraction * n)))
        te, tr = perm[:n_test], perm[n_test:]
        train_x.append(rows[tr].astype(np.float32))
        train_y.append(y[tr])
        test_x.append(rows[te].astype(np.float32))
        test_y.append(y[te])
    info = {"sizes": sizes, "contacts": contacts, "rows_per_person": 1 + contacts, "positive_rate": positive_rate,
            "tau": tau, "baseline": float(b), "seed": seed,
            "features": ["x1", "x2", "x3", "x4", "earlier infection", "contacts' mean x1..x4 (4)",
                         "infected share of sampled contacts"]}
    return FederatedData("contacts-standin", "multiclass", train_x, train_y, test_x, test_y, real=False,
                         num_classes=2, info=info)
