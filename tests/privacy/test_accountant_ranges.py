"""Each accountant's supported range: large targets are refused at once with a message naming the range
(before: ``--accountant prv`` at ε ≥ 100 raised a traceback, ``--accountant pld`` at ε = 1000 ran for
minutes); inside the range a calibration certifies its target.  Add/remove-one adjacency throughout."""
from __future__ import annotations

import contextlib
import io

import pytest

from fedtheory.privacy import accountants as A
from fedtheory.privacy.calibration import calibrate
from fedtheory.privacy.events import dpsgd_event
from fedtrain.cli import main


@pytest.mark.parametrize("accountant,target,limit", [("prv", 100.0, 50), ("prv", 50.01, 50), ("pld", 1000.0, 100),
                                                     ("pld", 100.5, 100)])
def test_calibration_refuses_targets_above_the_range(accountant, target, limit):
    with pytest.raises(ValueError, match=rf"target_eps={target!r} is outside.*the {accountant} accountant.*"
                                         rf"target eps in \(0, {limit}\].*accountant='rdp'"):
        calibrate(lambda z: dpsgd_event(z, 0.2, 800), target, 1e-3, accountant)


def test_rdp_has_no_range_and_certifies_large_targets():
    assert A.get_accountant("rdp").max_epsilon == float("inf")
    z = calibrate(lambda z: dpsgd_event(z, 1.0, 10), 1000.0, 1e-5, "rdp")
    eps = A.get_accountant("rdp").epsilon(dpsgd_event(z, 1.0, 10), 1e-5)
    assert 990 <= eps <= 1000


@pytest.mark.parametrize("accountant", ["pld", "prv"])
def test_evaluation_refuses_events_far_outside_the_range(accountant):
    """ε of an event whose RDP ε exceeds 2 × max_epsilon is refused (an RDP ε of ~2,000 here), not computed."""
    acc = A.get_accountant(accountant)
    event = dpsgd_event(0.2, 1.0, 200)
    rdp = A.get_accountant("rdp").epsilon(event, 1e-3)
    assert rdp > 2 * acc.max_epsilon
    with pytest.raises(ValueError, match=rf"out of range for the {accountant} accountant: its RDP eps is"):
        acc.epsilon(event, 1e-3)


def test_a_calibration_at_the_edge_of_the_range_crosses_the_refused_region():
    """PLD at its largest target, for an event whose ε at z = 1 is far outside the range (the search's first
    probes): the search treats those as "> target" and certifies the target."""
    event = lambda z: dpsgd_event(z, 1.0, 2000)  # noqa: E731
    assert A.get_accountant("rdp").epsilon(event(1.0), 1e-5) > 200
    z = calibrate(event, 100.0, 1e-5, "pld")
    eps = A.get_accountant("pld").epsilon(event(z), 1e-5)
    assert 99 <= eps <= 100


@pytest.mark.parametrize("accountant,eps", [("prv", "100"), ("pld", "1000")])
def test_cli_gives_one_line_naming_the_range(accountant, eps):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as ex:
        main(["run", "--dataset", "school-standin", "-D", "num_silos=4", "--method", "local", "--eps", eps,
              "--accountant", accountant, "--rounds", "1", "--no-progress"])
    assert ex.value.code == 2
    msg = err.getvalue()
    assert msg.count("\n") == 1 and "outside the supported range" in msg and f"the {accountant} accountant" in msg


def test_fedhdp_refuses_before_training():
    """Client-level runs give their noise multiplier: an ε out of the accountant's range is refused before round 1."""
    from fedtrain.data.registry import load_dataset
    from fedtrain.clientdp.config import FedHDPConfig
    from fedtrain.clientdp.trainer import train

    opts = dict(num_clients=20, samples_per_client=4, test_per_client=2, nonprivate_fraction=0.1)
    data = load_dataset("noniid-digits", **opts)
    cfg = FedHDPConfig(dataset="noniid-digits", dataset_options=opts, method="dp-fedavg", rounds=200, sample_rate=1.0,
                       noise_multiplier=0.2, accountant="pld", clip_lr=0.0, delta=1e-3, hidden=2)
    with pytest.raises(ValueError, match="out of range for the pld accountant"):
        train(cfg, data)
