"""FedHDP's preset noise multiplier comes from the book's one calibration (:func:`fedtheory.privacy.calibration.calibrate`)
and is the smallest z on the 3-decimal grid whose client-level ε (rdp accountant, add/remove one client) meets the
target: checked against ``calibrate``'s own z and against an independent root-finding on
:func:`fedtrain.clientdp.accounting.group_epsilon` (scipy's Brent, the preset's former search)."""
from __future__ import annotations

import math

import pytest
from scipy.optimize import brentq

from fedtheory.privacy.calibration import calibrate
from fedtrain.clientdp.accounting import group_epsilon, group_event
from fedtrain.presets import FEDHDP_GRIDS, fedhdp_noise_for_epsilon

#: (ε, q, rounds, δ): the paper's 500 rounds, the claims grid's 200, and settings far from them.
SETTINGS = [(3.6, 0.05, 500, 1e-4), (3.6, 0.05, 200, 1e-4), (1.0, 0.01, 1000, 1e-5), (8.0, 0.2, 50, 1e-3),
            (0.5, 0.1, 10, 1e-4), (2.0, 1.0, 3, 1e-5)]


@pytest.mark.parametrize("eps, q, rounds, delta", SETTINGS)
def test_preset_noise_is_calibrates_rounded_to_the_smallest_fitting_grid_value(eps, q, rounds, delta):
    z = fedhdp_noise_for_epsilon(eps, sample_rate=q, rounds=rounds, delta=delta)
    assert z == round(z, 3)
    # the privacy guarantee, and minimality on the grid
    assert group_epsilon(z, q, rounds, delta) <= eps < group_epsilon(z - 0.001, q, rounds, delta)
    # calibrate's z (certified, at most 0.1 % above the root) lies within one grid step and its rtol of the preset's
    z_cal = calibrate(lambda s: group_event(s, q, rounds), eps, delta, "rdp")
    assert group_epsilon(z_cal, q, rounds, delta) <= eps
    assert abs(z - z_cal) <= 0.001 + 1e-3 * z_cal
    # an independent search (Brent on group_epsilon - eps, to 1e-10) rounded up gives the same number
    root = brentq(lambda s: group_epsilon(s, q, rounds, delta) - eps, 0.05, 64.0, xtol=1e-10)
    assert z == math.ceil(root * 1000 - 1e-9) / 1000


def test_the_claims_grid_keeps_its_documented_noise():
    """The values the presets' docstrings state (z = 1.503 for the paper's 500 rounds, 1.133 for the grid's 200)."""
    g = FEDHDP_GRIDS["claims-fashion"]
    assert fedhdp_noise_for_epsilon(3.6, sample_rate=0.05, rounds=500, delta=1e-4) == 1.503
    assert fedhdp_noise_for_epsilon(g["target_epsilon"], sample_rate=g["sample_rate"], rounds=g["rounds"],
                                    delta=g["delta"], accountant=g["accountant"]) == 1.133
