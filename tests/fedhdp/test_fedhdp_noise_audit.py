"""FedHDP's server, measured round by round (client-level DP, add/remove one client of the private group).

Each test watches every round of a real ``train`` through a spy on :func:`fedtrain.clientdp.trainer.server_aggregate`
(the noise it drew, the step it returned) and, with zero local updates (the clients' local training replaced by
a function that returns zeros and counts its clients), compares what the server did with what Algorithm 2 and
Andrew et al. (2021) prescribe, computed here from the configuration alone:

* the realized divisor: each round's global step is the group's noise sum divided by that round's number of
  sampled clients (not the group's size, not its expected count);
* the update noise under adaptive clipping is drawn at the compensated ``z_Δ = (z⁻² − (2 z_b)⁻²)^(-1/2)``,
  not at the effective z (every other noise-scale test runs with adaptive clipping off);
* Poisson client sampling: the number of sampled clients varies across rounds with the binomial variance.

Monte Carlo tolerances are stated in standard errors.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedtrain.data.registry import load_dataset
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.clientdp.trainer import train
from fedtrain.clientdp import trainer as T

SE = 4.0
OPTS = dict(num_clients=40, samples_per_client=6, test_per_client=4, nonprivate_fraction=0.1)


@pytest.fixture(scope="module")
def small():
    return load_dataset("noniid-digits", **OPTS)


def _cfg(**kw):
    base = dict(dataset="noniid-digits", dataset_options=OPTS, method="dp-fedavg", rounds=6, sample_rate=0.5,
                batch_size=3, hidden=8, noise_multiplier=1.5, clip=0.8)
    base.update(kw)
    return FedHDPConfig(**base)


@pytest.fixture
def watch(monkeypatch):
    """Zero local updates (counting the clients trained per round) and a record of every server aggregation."""
    log = {"trained": [], "rounds": []}

    def zero_update(model, loss, theta, personal, *a, **k):
        log["trained"][-1] += personal.shape[0]
        return torch.zeros(personal.shape[0], theta.numel()), personal

    orig = T.server_aggregate

    def spy(clipped, member, ratios, noise_std, expected_counts=None, gen=None):
        step, det = orig(clipped, member, ratios, noise_std, expected_counts, gen)
        log["rounds"].append(dict(member=member.clone(), step=step.clone(), noise=det["noise"].clone()))
        log["trained"].append(0)  # the next round's clients
        return step, det

    monkeypatch.setattr(T, "local_update", zero_update)
    monkeypatch.setattr(T, "server_aggregate", spy)
    log["trained"].append(0)
    return log


def test_global_step_is_the_noise_sum_over_the_realized_count(small, watch):
    c = _cfg(denominator="realized", clip_lr=0.0, rounds=8)
    t0 = T.FCNet(small.dim, c.hidden, 10).init(torch.Generator().manual_seed(c.seed))
    res = train(c, small, keep_models=True)
    rounds = watch["rounds"]
    assert len(rounds) == c.rounds
    total = torch.zeros_like(t0)
    sizes = set()
    for t, r in enumerate(rounds):
        realized = watch["trained"][t]  # clients that trained this round, counted outside the server
        assert int(r["member"].sum()) == realized
        sizes.add(realized)
        want = r["noise"][0] / realized if realized else torch.zeros_like(r["step"])
        torch.testing.assert_close(r["step"], want, rtol=1e-6, atol=0.0)
        assert float(r["noise"][0].abs().max()) > 0  # the noise was drawn (a vacuous check otherwise)
        total += r["step"]
    assert len(sizes) > 1 and small.num_silos not in sizes  # the realized count is not the group's size
    np.testing.assert_allclose(res.global_model, (t0 + total).numpy(), rtol=0, atol=1e-5)  # the steps applied


def test_update_noise_is_drawn_at_the_compensated_multiplier_under_adaptive_clipping(small, watch):
    c = _cfg(clip_lr=0.2, count_noise_per_client=0.05, rounds=6)
    n_contacted = small.num_silos  # dp-fedavg: every client is private and contacted
    z_b = c.count_noise_per_client * c.sample_rate * n_contacted
    z = c.noise_multiplier
    z_update = (z ** -2 - (2 * z_b) ** -2) ** -0.5  # Andrew et al., Thm. 1, solved for the update noise
    assert z_update > 1.4 * z  # the two readings differ widely here
    res = train(c, small)
    clips = np.r_[c.clip, res.clip_history[:-1]]  # S^t in force in round t
    assert np.ptp(clips) > 0  # adaptive clipping did move the norm
    normalized = torch.cat([r["noise"][0] / float(s) for r, s in zip(watch["rounds"], clips)]).double()
    n = normalized.numel()
    sd = float(normalized.std())
    se = z_update / math.sqrt(2 * n)
    assert abs(sd - z_update) < SE * se, (sd, z_update, z, se)
    assert abs(float(normalized.mean())) < SE * z_update / math.sqrt(n)
    assert res.privacy["update_noise_multiplier"] == pytest.approx(z_update, rel=1e-12)


def test_client_sampling_is_poisson(small, watch):
    c = _cfg(clip_lr=0.0, rounds=200, sample_rate=0.5)
    train(c, small)
    counts = np.array([r["member"].shape[1] for r in watch["rounds"]], dtype=float)
    N, q, T_ = small.num_silos, c.sample_rate, counts.size
    mean, var = N * q, N * q * (1 - q)
    assert abs(counts.mean() - mean) < SE * math.sqrt(var / T_), counts.mean()
    # the sample variance of T binomial counts: standard error ≈ var·sqrt(2/(T-1)) (normal approximation)
    assert abs(counts.var(ddof=1) - var) < SE * var * math.sqrt(2 / (T_ - 1)), counts.var(ddof=1)
