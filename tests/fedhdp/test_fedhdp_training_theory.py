"""Linear regression trained with client-level DP (the real trainer) against the closed forms r*, σ_s²(r), λ*."""
from __future__ import annotations

import numpy as np
import pytest

from fedtrain.fedhdp.theory_link import compare_with_theory, linreg_opt_out_data


@pytest.fixture(scope="module")
def comparison():
    return compare_with_theory(reps=20, ratios=(0.05, 0.2, 1.0), lams=(0.1, 0.3, 3.0))


def test_server_error_matches_closed_form(comparison):
    c = comparison
    assert c.max_update_norm < c.clip  # the theory's no-clipping assumption holds in this setting
    assert c.gamma2 == pytest.approx((c.noise_multiplier * c.clip / c.N2) ** 2)
    z = (c.server_measured - c.server_theory) / c.server_se
    assert np.all(np.abs(z) < 4), z
    assert c.server_measured[0] < c.server_measured[-1]  # r near r* beats uniform weights (HDP-FedAvg)


def test_local_error_matches_closed_form(comparison):
    c = comparison
    for g in ("nonprivate", "private"):
        z = (c.local_measured[g] - c.local_theory[g]) / c.local_se[g]
        assert np.all(np.abs(z) < 4), (g, z)
        # the best λ of the grid is the one nearest λ* (0.3 here for both groups)
        assert c.lams[int(np.argmin(c.local_measured[g]))] == 0.3 and 0.15 < c.lam_star[g] < 0.6


def test_linreg_data_opt_out_bounds():
    with pytest.raises(ValueError, match="N_np"):
        linreg_opt_out_data(10, 0)
    with pytest.raises(ValueError, match="N_np"):
        linreg_opt_out_data(10, 10)
