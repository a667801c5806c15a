"""One privacy plan of a silo (:func:`fedtheory.privacy.silos.silo_privacy_plan`): the training engine's methods,
its ledger, ``fedtrain advise`` and the privacy primer's calibration all count steps and sampling rates with it."""
from __future__ import annotations

import numpy as np
import pytest

from fedtheory.privacy.silos import (PrivacyPlan, silo_noise_multipliers, silo_privacy_plan, silo_sample_rates,
                                     silo_steps)
from fedtrain import ledger
from fedtrain.advise import predict
from fedtrain.engine import run
from tests.privacy.test_fedtrain_ledger import cfg, data  # noqa: F401  (the ledger tests' tiny silos and config)


def test_the_plan_counts_steps_and_rates_as_the_paper_code():
    n = np.array([5, 8, 9, 40, 100])
    plan = silo_privacy_plan(n, 8, rounds=3, local_epochs=2, extra_steps=[0, 1, 0, 0, 2], selections=4)
    assert plan.dpsgd_steps.tolist() == [6, 7, 6, 30, 74]  # max(1, n//B)·epochs·rounds + extra
    assert plan.sample_rates.tolist() == [1.0, 1.0, 8 / 9, 0.2, 0.08]
    assert plan.selections.tolist() == [4] * 5
    assert np.array_equal(plan.dpsgd_steps - [0, 1, 0, 0, 2], silo_steps(n, 8, 3, 2))
    assert np.array_equal(plan.sample_rates, silo_sample_rates(n, 8))
    # the ledger's names are the same functions' values
    assert np.array_equal(ledger.sample_rates(n, 8), plan.sample_rates)
    assert np.array_equal(ledger.steps_per_epoch(n, 8) * 3 * 2, silo_steps(n, 8, 3, 2))
    assert ledger.PrivacyPlan is PrivacyPlan and ledger.silo_privacy_plan is silo_privacy_plan


@pytest.mark.parametrize("call, name", [
    (lambda: silo_privacy_plan([0, 4], 2, 1), "n"),
    (lambda: silo_privacy_plan([4], 0, 1), "batch_size"),
    (lambda: silo_privacy_plan([4, 5], 2, 1, extra_steps=[1, 2, 3]), "extra_steps"),
    (lambda: silo_privacy_plan([4], 2, 1, selections=-1), "selections"),
    (lambda: PrivacyPlan([3, 4], None, [0.5, 1.5]), "sample_rates"),
])
def test_bad_plans_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("method, extra_epochs", [("mrmtl", 0), ("ditto", 1)])
def test_the_engine_runs_the_plan(data, method, extra_epochs):
    r = run(cfg(method), data)
    plan = silo_privacy_plan(data.train_sizes, 8, rounds=4, local_epochs=1 + extra_epochs)
    assert r.ledger["dpsgd_steps"] == plan.dpsgd_steps.tolist()
    assert r.ledger["sample_rates"] == plan.sample_rates.tolist()
    # the primer's calibration (fedtheory alone) gives the engine's noise multipliers
    z = silo_noise_multipliers(2.0, 1e-4, data.train_sizes, 8, rounds=4, local_epochs=1 + extra_epochs)
    np.testing.assert_allclose(r.noise_multipliers, z, rtol=1e-9)


def test_the_advisor_calibrates_on_the_engine_plan(data):
    c = cfg("mrmtl")
    (p,) = predict(data, c, [2.0])
    np.testing.assert_allclose(p.noise_multipliers, run(c, data).noise_multipliers, rtol=1e-9)
