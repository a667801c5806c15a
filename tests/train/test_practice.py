"""fedtrain.practice: the practitioner chapter's δ rule, validation split and search accounting."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fedtheory.privacy.accountants import get_accountant
from fedtheory.privacy.events import dpsgd_event
from fedtrain import practice


def test_practice_delta_meets_the_rule_and_is_the_largest_power_of_ten():
    n = np.array([17, 82, 200])
    d = practice.practice_delta(n)
    assert d == 1e-4 and np.all(d * n <= 0.1) and not np.all(10 * d * n <= 0.1)
    assert practice.practice_delta([100], factor=10) == 1e-3  # exactly 1/(10 n) is allowed
    with pytest.raises(ValueError, match="factor"):
        practice.practice_delta(n, factor=0.5)


def test_search_calibration_is_within_budget_and_grows_with_candidates():
    eps, delta, q, steps = np.array([3.0, 6.0]), 1e-4, np.array([0.5, 0.25]), np.array([100, 300])
    z1 = practice.search_noise_multipliers(eps, delta, q, steps, 1, 10.0)
    z9 = practice.search_noise_multipliers(eps, delta, q, steps, 9, 10.0)
    assert np.all(z9 > 2 * z1)  # about sqrt(9) = 3 times, less the fixed score term
    spent = practice.search_epsilons(z9, delta, q, steps, 9, 10.0)
    assert np.all(spent <= eps) and np.all(spent > 0.98 * eps)
    # the per-run target the engine gets: a single run at z9 is the independent RDP accountant's number
    acc = get_accountant("rdp")
    assert math.isclose(practice.run_epsilons(z9, delta, q, steps)[0],
                        acc.epsilon(dpsgd_event(z9[0], 0.5, 100), delta), rel_tol=1e-12)


def test_private_scores_match_the_mse_and_have_the_stated_noise():
    rng = np.random.default_rng(0)
    from fedtrain.data.base import FederatedData
    xs = [rng.normal(size=(20, 2)) for _ in range(3)]
    ys = [rng.uniform(size=20) for _ in range(3)]
    data = FederatedData("toy", "regression", xs, ys, xs, ys, real=False)
    models = [rng.normal(scale=0.1, size=(3, 1)) for _ in range(3)]
    mse = float(np.mean(np.concatenate([(x @ w[:2, 0] + w[2, 0] - y) ** 2 for w, x, y in zip(models, xs, ys)])))
    assert math.isclose(practice.linear_mse(models, xs, ys), mse, rel_tol=1e-12)
    noisy = [practice.private_validation_scores(models, data, 1e9, 2.0, np.random.default_rng(s))[0] for s in range(4000)]
    # noise sd = score_noise * loss_bound * sqrt(K) / total records; 1e9 bound: sd = 2e9*sqrt(3)/60
    sd = 2e9 * math.sqrt(3) / 60
    assert abs(np.std(noisy) / sd - 1) < 4 * math.sqrt(1 / (2 * 4000))  # 4 standard errors of a sample sd


def test_holdout_splits_the_training_records_only():
    rng = np.random.default_rng(1)
    from fedtrain.data.base import FederatedData
    xs = [rng.normal(size=(n, 2)) for n in (8, 12)]
    ys = [rng.uniform(size=n) for n in (8, 12)]
    data = FederatedData("toy", "regression", xs, ys, xs, ys, real=False)
    h = practice.holdout(data, 0.25, seed=0)
    assert list(h.train_sizes) == [6, 9] and [len(y) for y in h.test_y] == [2, 3]
    with pytest.raises(ValueError, match="fraction"):
        practice.holdout(data, 1.5)
