"""The engine's Poisson samplers (:class:`fedtrain.dpsgd_step.PoissonBatcher`): both are exactly Poisson
sampling, and engine version 5's ``geometric`` sampler gives the results of the ``sorted-keys`` sampler
of versions <= 4 in distribution.

Poisson sampling at rate q_k: every record of silo k is in a batch independently with probability q_k.
Checked on silos of unequal sizes (q = 1, q near 1, small q), over T independent batches:

* marginal: each record's inclusion frequency vs q_k, |z| <= 4.5 standard errors (SE = sqrt(q(1-q)/T));
  with ~300 records the chance that a correct sampler trips one check is about 300 * 7e-6 = 2e-3 (and
  the draws are seeded, so the outcome is fixed);
* independence: joint inclusion of neighbouring records (i, i+1) and (i, i+2) vs q_k^2 (a gap-based
  sampler that got its gaps wrong would correlate neighbours), 4.5 SE with SE = sqrt(q^2(1-q^2)/T);
* batch sizes: mean and variance vs Binomial(n_k, q_k) (n q, n q (1-q)), 4.5 SE, the SE of the sample
  variance from the binomial's fourth central moment;
* consecutive steps of one epoch are independent (correlation of their batch sizes, 4.5 SE = 4.5/sqrt(T)).

A negative control (a batcher told a 10 % larger rate) must fail the marginal check: the test can fail.

Whole runs: 48 seeds of a small private MR-MTL run with each sampler; the mean test MSE must agree within
4 SE of the difference (Welch) and the standard deviations within 4 SE of the log ratio
(SE ~ 1/sqrt(R-1)).  The two samplers consume different random streams, so seeded numbers differ.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedtrain.config import RunConfig
from fedtrain.dpsgd_step import SAMPLERS, PoissonBatcher
from fedtrain.engine import DEFAULT_SAMPLER, Trainer, run, run_many
from fedtrain.testing import tiny_federated

SE = 4.5
SIZES = [3, 9, 40, 120]
BATCH = 8  # q = min(1, B/n): 1, 0.889, 0.2, 0.0667


def _batcher(sampler, rate_factor=1.0, width=None):
    n = torch.tensor(SIZES)
    q = torch.clamp(BATCH / n.double(), max=1.0)
    nmax = max(SIZES)
    x = torch.arange(float(nmax))[None, :, None].expand(len(SIZES), nmax, 2).clone()  # column 0: record id
    b = PoissonBatcher(x, torch.zeros(len(SIZES), nmax), n, torch.clamp(q * rate_factor, max=1.0), sampler=sampler)
    if width is not None:
        b.width = width
    return b, q.numpy()


def _inclusions(batcher, draws, generators=2, epoch=1):
    """Inclusion indicators (T, K, N) over T = draws * generators * epoch independent batches, and batch sizes."""
    gens = [torch.Generator().manual_seed(100 + s) for s in range(generators)]
    nmax = max(SIZES)
    out, steps = [], []
    for _ in range(draws):
        batches = batcher.sample_epoch(gens, epoch) if epoch > 1 else [batcher.sample_batch(gens)]
        per_step = []
        for xb, _, valid, sq in batches:
            ind = np.zeros((len(gens), len(SIZES), nmax), dtype=bool)
            for u in range(len(gens)):
                for k in range(len(SIZES)):
                    ids = xb[u, k, valid[u, k], 0].long().numpy()
                    assert len(np.unique(ids)) == len(ids), "a record drawn twice in one batch"
                    assert (ids < SIZES[k]).all(), "a padding row was sampled"
                    ind[u, k, ids] = True
            torch.testing.assert_close(sq, (xb * xb).sum(-1))  # the gathered squared norms are the rows'
            per_step.append(ind)
        steps.append(np.stack(per_step, 1))  # (U, epoch, K, N)
        out.extend(per_step)
    return np.concatenate(out, 0), np.stack(steps, 0)


def _poisson_violations(ind, q):
    """Largest |z| of the marginal, neighbour and batch-size checks (list of (what, z))."""
    T = ind.shape[0]
    worst = []
    for k, n in enumerate(SIZES):
        qk = q[k]
        freq = ind[:, k, :n].mean(0)
        assert not ind[:, k, n:].any()
        if qk == 1.0:
            worst.append(("marginal q=1", 0.0 if (freq == 1).all() else math.inf))
            continue
        se = math.sqrt(qk * (1 - qk) / T)
        worst.append((f"marginal silo {k}", float(np.abs(freq - qk).max() / se)))
        for lag in (1, 2):
            if n > lag:
                joint = (ind[:, k, : n - lag] & ind[:, k, lag:n]).mean(0)
                se2 = math.sqrt(qk**2 * (1 - qk**2) / T)
                worst.append((f"pairs lag {lag} silo {k}", float(np.abs(joint - qk**2).max() / se2)))
        sizes = ind[:, k, :n].sum(1).astype(float)
        mu, var = n * qk, n * qk * (1 - qk)
        worst.append((f"size mean silo {k}", abs(sizes.mean() - mu) / math.sqrt(var / T)))
        mu4 = var * (1 + 3 * (n - 2) * qk * (1 - qk))  # fourth central moment of Binomial(n, q)
        se_var = math.sqrt((mu4 - var**2 * (T - 3) / (T - 1)) / T)
        worst.append((f"size variance silo {k}", abs(sizes.var(ddof=1) - var) / se_var))
    return worst


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_sampler_is_poisson_sampling(sampler):
    batcher, q = _batcher(sampler)
    ind, _ = _inclusions(batcher, draws=1500)
    worst = _poisson_violations(ind, q)
    bad = [(w, round(z, 2)) for w, z in worst if not z <= SE]
    assert not bad, f"{sampler}: checks beyond {SE} SE: {bad}"


def test_geometric_sampler_epoch_draws_are_independent_poisson_steps():
    """``sample_epoch`` (the engine's path): every step is Poisson, and consecutive steps are independent."""
    batcher, q = _batcher("geometric")
    ind, steps = _inclusions(batcher, draws=500, generators=1, epoch=3)
    worst = _poisson_violations(ind, q)
    bad = [(w, round(z, 2)) for w, z in worst if not z <= SE]
    assert not bad, f"checks beyond {SE} SE: {bad}"
    sizes = steps[:, 0, :, 3, :].sum(-1).astype(float)  # silo 3 (q = 1/15): (draws, epoch)
    for a, b in ((0, 1), (1, 2)):
        r = np.corrcoef(sizes[:, a], sizes[:, b])[0, 1]
        assert abs(r) <= SE / math.sqrt(sizes.shape[0]), f"steps {a} and {b} correlated: r = {r:.3f}"


def test_geometric_sampler_draws_more_when_its_width_runs_out():
    """With 2 columns per draw every batch needs the extension loop; it is still Poisson sampling."""
    batcher, q = _batcher("geometric", width=2)
    ind, _ = _inclusions(batcher, draws=1000)
    worst = _poisson_violations(ind, q)
    bad = [(w, round(z, 2)) for w, z in worst if not z <= SE]
    assert not bad, f"checks beyond {SE} SE: {bad}"


def test_a_wrong_rate_fails_the_check():
    """Negative control: sampling at 1.1 q while the check expects q is caught (the check can fail)."""
    batcher, q = _batcher("geometric", rate_factor=1.1)
    ind, _ = _inclusions(batcher, draws=1500)
    worst = dict(_poisson_violations(ind, q))
    assert worst["size mean silo 3"] > SE and worst["marginal silo 2"] > SE


def test_stream_of_a_seed_does_not_depend_on_the_stack():
    """Geometric batches of seed 0 are the same alone and stacked with seed 1 (each generator extends its own
    draws), so run_many equals run configuration by configuration."""
    data = tiny_federated("regression", num_silos=5, dim=3, n_range=(10, 90), seed=2)
    c = RunConfig(dataset="tiny", method="local", eps=math.inf, lr=0.05, rounds=2, batch_size=8, seed=0)
    alone = Trainer([c], data)
    both = Trainer([c, c.replace(seed=1)], data)
    for _ in range(5):
        a = alone.batcher.sample_epoch(alone.gens, 3)
        b = both.batcher.sample_epoch(both.gens, 3)
        for (xa, ya, va, _), (xb, yb, vb, _) in zip(a, b):
            w = xa.shape[2]
            assert torch.equal(va[0], vb[0, :, :w]) and not vb[0, :, w:].any()
            assert torch.equal(xa[0][va[0]], xb[0][vb[0]])


def test_default_sampler_and_validation():
    assert DEFAULT_SAMPLER == "geometric" and DEFAULT_SAMPLER in SAMPLERS
    data = tiny_federated("regression", num_silos=3, dim=2, n_range=(10, 20), seed=1)
    c = RunConfig(dataset="tiny", method="local", eps=math.inf, lr=0.05, rounds=1, batch_size=4)
    with pytest.raises(ValueError, match="sampler must be one of"):
        run(c, data, sampler="bernoulli")


def test_new_sampler_gives_the_old_results_in_distribution():
    """48 seeds of private MR-MTL per sampler: equal mean test MSE (4 SE, Welch) and spread (4 SE of log ratio)."""
    data = tiny_federated("regression", num_silos=8, dim=3, n_range=(20, 80), n_test=40, tau=0.5, seed=6)
    base = RunConfig(dataset="tiny", method="mrmtl", eps=3.0, delta=1e-4, lam=0.3, lr=0.1, rounds=15,
                     batch_size=10, clip=1.0)
    R = 48
    configs = [base.replace(seed=s) for s in range(R)]
    new = np.array([r.test_metric for r in run_many(configs, data, sampler="geometric")])
    old = np.array([r.test_metric for r in run_many(configs, data, sampler="sorted-keys")])
    assert not np.allclose(new, old)  # different streams, so different seeded numbers
    se = math.sqrt(new.var(ddof=1) / R + old.var(ddof=1) / R)
    assert abs(new.mean() - old.mean()) <= 4 * se, (new.mean(), old.mean(), se)
    log_ratio = math.log(new.std(ddof=1) / old.std(ddof=1))
    assert abs(log_ratio) <= 4 / math.sqrt(R - 1), (new.std(ddof=1), old.std(ddof=1))


def test_wide_data_gather_without_a_table_gives_the_same_batches():
    """Rows wider than the table limit are gathered column block by column block: the same batches."""
    a, _ = _batcher("geometric")
    b, _ = _batcher("geometric")
    b.table = None  # what the batcher does for wide rows (images)
    ga, gb = [torch.Generator().manual_seed(3)], [torch.Generator().manual_seed(3)]
    for _ in range(3):
        for xa, xb in zip(a.sample_epoch(ga, 4), b.sample_epoch(gb, 4)):
            for u, v in zip(xa, xb):
                assert torch.equal(u, v)
