"""The reduced PETs setting: the contact-network stand-in and the node-level conversion (fedtrain.pets)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from fedtrain.data.contacts import contact_network_standin
from fedtrain.pets import node_level_guarantee, pooled_average_precision


def test_node_level_guarantee_is_group_privacy():
    assert node_level_guarantee(0.5, 1e-6, 1) == (0.5, 1e-6)
    eps, delta = node_level_guarantee(0.5, 1e-6, 4)
    assert eps == 2.0 and math.isclose(delta, 4 * math.exp(1.5) * 1e-6)
    assert node_level_guarantee(8.0, 1e-5, 6)[1] == 1.0  # capped: no guarantee left
    with pytest.raises(ValueError, match="group_size"):
        node_level_guarantee(1.0, 1e-5, 0)
    with pytest.raises(ValueError, match="delta"):
        node_level_guarantee(1.0, 1.5, 2)


def test_contact_standin_has_the_settings_structure():
    d = contact_network_standin(seed=3)
    sizes = [len(a) + len(b) for a, b in zip(d.train_x, d.test_x)]
    assert sizes == [150, 300, 600, 1200, 2400] and max(sizes) / min(sizes) > 10
    y = np.concatenate(d.train_y + d.test_y)
    # about 5 % positives: the baseline is fitted to the expected share; 4,650 people give an SE of ~0.3 %
    assert abs(y.mean() - 0.05) < 4 * math.sqrt(0.05 * 0.95 / y.size)
    assert d.task == "multiclass" and d.num_classes == 2 and not d.real and d.train_x[0].shape[1] == 10
    assert d.info["rows_per_person"] == 6
    again = contact_network_standin(seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(d.train_x, again.train_x))
    with pytest.raises(ValueError, match="sizes"):
        contact_network_standin(sizes=(5, 100), contacts=5)
    with pytest.raises(ValueError, match="positive_rate"):
        contact_network_standin(positive_rate=0.0)


def test_pooled_average_precision_scores_each_silo_with_its_own_model():
    d = contact_network_standin(sizes=(60, 80), seed=1)
    dim = d.train_x[0].shape[1]
    # a model that scores by the last feature (infected share of contacts) vs one that scores by its negative
    w = np.zeros((2, dim + 1, 2))
    w[:, dim - 1, 1] = 1.0
    good = pooled_average_precision(SimpleNamespace(models=w), d)
    bad = pooled_average_precision(SimpleNamespace(models=-w), d)
    assert 0.0 < bad < good <= 1.0
    with pytest.raises(ValueError, match="keep_models"):
        pooled_average_precision(SimpleNamespace(models=None), d)
