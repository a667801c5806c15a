"""FedHDP's δ obeys the rule of the sample-level runs, counted in its privacy unit: δ < N_g^{-1.1} for a private
group of N_g clients (client-level DP, add/remove one client).  Before, ``--delta 0.999`` ran and reported ε = 0."""
from __future__ import annotations

import contextlib
import io

import pytest

from fedtrain.cli import main
from fedtrain.data.registry import load_dataset
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.clientdp.trainer import train
from fedtrain.clientdp.accounting import check_group_delta, delta_bound

OPTS = dict(num_clients=40, samples_per_client=6, test_per_client=4, nonprivate_fraction=0.1)


@pytest.fixture(scope="module")
def small():
    return load_dataset("noniid-digits", **OPTS)


def _cfg(**kw):
    base = dict(dataset="noniid-digits", dataset_options=OPTS, rounds=1, sample_rate=0.5, batch_size=3, hidden=4)
    base.update(kw)
    return FedHDPConfig(**base)


def test_bound_is_the_sample_level_rule_in_clients():
    assert delta_bound(1900) == 1900 ** -1.1 and 2.4e-4 < delta_bound(1900) < 2.5e-4
    check_group_delta(2.4e-4, 1900)
    for bad in (2.5e-4, 0.5, 0.999, 0.0, -1e-5):
        with pytest.raises(ValueError, match=r"delta must be in \(0, N_g\^-1.1\).*N_g=1900.*< 0.000247"):
            check_group_delta(bad, 1900)
    with pytest.raises(ValueError, match="num_clients"):
        delta_bound(0)


@pytest.mark.parametrize("method,private_clients", [("fedhdp", 36), ("hdp-fedavg", 36), ("dp-fedavg", 40)])
def test_train_refuses_a_delta_above_the_bound_of_the_private_group(small, method, private_clients):
    bound = private_clients ** -1.1
    with pytest.raises(ValueError, match=rf"delta must be.*'private' has N_g={private_clients} clients"):
        train(_cfg(method=method, delta=bound * 1.001), small)
    res = train(_cfg(method=method, delta=bound * 0.999), small)  # just below: runs and is accounted
    assert 0 < res.privacy["epsilon"] < float("inf") and res.privacy["delta"] == pytest.approx(bound * 0.999)


def test_nonprivate_baseline_has_no_delta_to_check(small):
    """The non-private method has no private group, hence no guarantee and no δ rule (ε = ∞)."""
    res = train(_cfg(method="nonprivate", delta=0.5), small)
    assert res.privacy["epsilon"] == float("inf")


def test_cli_reproduction_gives_a_one_line_error():
    """``fedtrain run --dataset noniid-digits --method fedhdp --delta 0.999`` (a reported command, at 2 rounds)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), \
            pytest.raises(SystemExit) as exc:
        main(["run", "--dataset", "noniid-digits", "--method", "fedhdp", "--delta", "0.999", "--rounds", "2"])
    assert exc.value.code == 2
    msg = err.getvalue()
    # one line; the run goes through the sweep, which names the configuration first, as for the record-level methods
    assert msg.count("\n") == 1 and msg.startswith("fedtrain: error: configuration fedhdp r=")
    assert ": delta must be in (0, N_g^-1.1)" in msg
    assert "N_g=1900" in msg and "< 0.000247" in msg and "(got 0.999)" in msg
