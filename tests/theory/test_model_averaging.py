"""Averaging locally private models (Heikkilä 2025, App. A.7 Table 1): fedtheory.privacy.model_averaging."""
import math

import numpy as np
import pytest

from fedtheory.privacy import model_averaging as A
from fedtheory.privacy import secagg
from fedtheory.privacy.rdp import rdp_to_epsilon, subsampled_gaussian_rdp

Q, DELTA = 0.0533, 1e-5
# an independent recomputation made outside this code (Gaussian RDP, q = 0.0533, δ = 1e-5, the paper code's
# conversion; not the paper's Table 1, whose numbers the extracted text lacks): (eps per party, local steps) ->
# ε of the average for M = 2, 5, 10, to two decimals
PRINTED = {(1.0, 1): (0.50, 0.20, 0.11), (1.0, 19): (0.58, 0.33, 0.22), (1.0, 188): (0.69, 0.43, 0.30),
           (8.0, 19): (3.79, 1.48, 0.80)}


@pytest.mark.parametrize("key", list(PRINTED))
def test_paper_code_accountant_reproduces_the_printed_rows(key):
    eps_party, steps = key
    got = [A.averaged_model_epsilon(eps_party, M, Q, steps, DELTA, "paper_code") for M in (2, 5, 10)]
    assert got == pytest.approx(PRINTED[key], abs=0.006)   # printed to two decimals


def test_rdp_accountant_gives_the_smaller_numbers_and_why():
    """Same δ, same RDP curve; the classic conversion is what makes the printed row larger."""
    rdp = [A.averaged_model_epsilon(1.0, M, Q, 1, DELTA, "rdp") for M in (2, 5, 10)]
    assert np.round(rdp, 2).tolist() == [0.46, 0.17, 0.09]
    paper = [A.averaged_model_epsilon(1.0, M, Q, 1, DELTA, "paper_code") for M in (2, 5, 10)]
    assert all(r < p for r, p in zip(rdp, paper))
    # the party's noise: classic conversion needs more (1.476 vs 1.260)
    z_paper = A.party_noise_multiplier(1.0, Q, 1, DELTA, "paper_code")
    z_rdp = A.party_noise_multiplier(1.0, Q, 1, DELTA, "rdp")
    assert z_paper == pytest.approx(1.476, abs=2e-3) and z_rdp == pytest.approx(1.260, abs=2e-3)
    # isolate the conversion: the paper's sigma and the paper's integer orders, improved conversion -> ~ rdp
    a = A.PAPER_ORDERS
    for M, p in zip((2, 5, 10), paper):
        curve = subsampled_gaussian_rdp(a, math.sqrt(M) * z_paper, Q, 1, backend="numpy")
        classic = rdp_to_epsilon(a, curve, DELTA, conversion="classic")[0]
        improved = rdp_to_epsilon(a, curve, DELTA, conversion="improved")[0]
        assert classic == pytest.approx(p, rel=1e-9)
        assert improved < classic - 0.02
    # the order grid alone changes little: rdp accountant vs improved conversion on the integer grid at rdp's sigma
    for M, r in zip((2, 5, 10), rdp):
        curve = subsampled_gaussian_rdp(a, math.sqrt(M) * z_rdp, Q, 1, backend="numpy")
        assert rdp_to_epsilon(a, curve, DELTA)[0] == pytest.approx(r, abs=0.01)


def test_paper_code_event_is_the_classic_conversion():
    for z, steps in ((0.9, 1), (2.0, 50), (5.0, 400)):
        from fedtheory.privacy.accountants import get_accountant
        got = get_accountant("rdp").epsilon(A.paper_code_event(z, Q, steps), DELTA)
        assert got == pytest.approx(secagg.paper_code_epsilon(z, Q, steps, DELTA), rel=1e-9)


@pytest.mark.parametrize("acc", ["rdp", "pld", "paper_code"])
def test_party_calibration_certified_and_averages_monotone(acc):
    z = A.party_noise_multiplier(1.0, Q, 19, DELTA, acc)
    assert 0.99 <= A._eps(z, Q, 19, DELTA, acc) <= 1.0
    eps = [A.averaged_model_epsilon(1.0, M, Q, 19, DELTA, acc) for M in (1, 2, 5, 10)]
    assert eps[0] <= 1.0 and all(b < a for a, b in zip(eps, eps[1:]))


def test_average_equals_secagg_ddp_accounting():
    """The average is Thm 4.6's DDP release with S = steps, R = 1: same ε as secagg's forward direction."""
    z = A.party_noise_multiplier(1.0, Q, 19, DELTA, "rdp")
    e = secagg.epsilon_of_per_client_noise(z, 5, 19, 1, Q, DELTA, calibration="ddp")
    assert A.averaged_model_epsilon(1.0, 5, Q, 19, DELTA, "rdp") == pytest.approx(e, rel=1e-9)


def test_bad_input():
    with pytest.raises(ValueError, match="accountant"):
        A.averaged_model_epsilon(1.0, 2, Q, 1, DELTA, "moments")
    with pytest.raises(ValueError, match="M"):
        A.averaged_model_epsilon(1.0, 0, Q, 1, DELTA)
    with pytest.raises(ValueError, match="sample_rate"):
        A.party_noise_multiplier(1.0, 0.0, 1, DELTA)
