"""The one-run audit's lower bound, recomputed from the details it reports (Steinke, Nasr & Jagielski 2023,
Theorem 3): the guesses from the canaries' scores and membership, the bound from (correct, guesses, ALL m
canaries, δ).  The theorem's m is the number of canaries, each included with probability 1/2 — not the number
that happened to be included; with fewer, the δ term shrinks and the bound moves up (the unsafe direction)."""
from __future__ import annotations

import numpy as np
import pytest

from fedtrain.audit import audit_one_run, broken_engine, one_run_epsilon_lower_bound, one_run_guesses
from fedtrain.config import RunConfig
from fedtrain.testing import tiny_federated


@pytest.fixture(scope="module")
def base():
    return tiny_federated("regression", num_silos=3, dim=4, n_range=(100, 100), seed=0)


def test_one_run_bound_is_recomputed_from_its_details(base):
    cfg = RunConfig(dataset="tiny", method="local", eps=2.0, delta=1e-5, lr=0.5, rounds=20, batch_size=4096)
    m, guesses = 1000, 100
    with broken_engine(noise_factor=0.2):  # a bound well above 0, so that the δ term shows in it
        a = audit_one_run(cfg, base, num_canaries=m, guesses=guesses)
    d = a.details
    assert d["canaries"] == m and d["membership"].size == m and d["scores"].size == m
    assert d["included"] == int(d["membership"].sum()) and 0 < d["included"] < m
    correct, r = one_run_guesses(d["scores"], d["membership"], guesses - guesses // 2, guesses // 2)
    assert (correct, r) == (d["correct"], d["guesses"])
    want = one_run_epsilon_lower_bound(correct, r, m, a.delta, a.confidence)
    assert a.eps_lower == want and want > 0
    # the wrong count gives another (larger, unsafe) bound: the comparison above can fail
    wrong = one_run_epsilon_lower_bound(correct, r, d["included"], a.delta, a.confidence)
    assert wrong > want
    assert np.isfinite(a.eps_claimed) and a.eps_claimed <= 2.0
