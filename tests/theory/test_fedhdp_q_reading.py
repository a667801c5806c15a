"""The numbers the FedHDP chapter quotes for FEMNIST's sampling rate: PLD at q = 0.03 and q = 100/3400, and the
RDP ε of q = 100/3400 on the accountant's order grid against integer orders (the reading depends on the grid)."""
import numpy as np
import pytest

from fedtheory.privacy.rdp import rdp_to_epsilon, subsampled_gaussian_rdp
from fedtrain.clientdp.accounting import PAPER_PRIVACY, group_epsilon


def test_femnist_sampling_rate_readings():
    q, z, rounds, delta, printed = PAPER_PRIVACY["FEMNIST"]
    assert (q, z, rounds, delta, printed) == (0.03, 1.0, 500, 1e-4, 4.1)
    pld = {name: group_epsilon(zz, qq, rr, dd, "pld") for name, (qq, zz, rr, dd, _) in PAPER_PRIVACY.items()}
    assert [round(v, 2) for v in pld.values()] == [3.24, 0.51, 3.63]
    q2 = 100 / 3400
    assert group_epsilon(z, q2, rounds, delta, "pld") == pytest.approx(3.55, abs=5e-3)
    assert round(group_epsilon(z, q2, rounds, delta, "rdp"), 2) == 4.03          # prints 4.0 on the grid
    ints = np.arange(2.0, 256.0)
    eps_int, _ = rdp_to_epsilon(ints, subsampled_gaussian_rdp(ints, z, q2, rounds), delta)
    assert round(eps_int, 2) == 4.08 and round(eps_int, 1) == printed           # prints 4.1 on integer orders
