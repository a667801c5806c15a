"""Benchmark: the vectorized engine vs one Opacus PrivacyEngine per silo (fedtrain.reference).

School, full configuration (139 silos, 200 rounds, B=32, c=1, δ=1e-3, MR-MTL, ε=6), and a λ × learning
rate grid (the paper's 10 λ × 6 η = 60 configurations) run by ``run_many`` in one batch.

The reference is far slower, so it runs ``--ref-rounds`` rounds (default 5) of ``--ref-configs``
configurations and its time is scaled linearly to 200 rounds and to the whole grid (every round of
every configuration does the same work: the same number of DP-SGD steps per silo).  Noise calibration
is excluded from both timings (done once, shared, and cached by the engine); the engine time includes
everything else in ``run_many``.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_engine.py [--rounds 200] [--ref-rounds 5] [--grid paper|small]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from fedtrain import privacy  # noqa: E402
from fedtrain.config import LAMBDA_GRID, LR_GRID, RunConfig  # noqa: E402
from fedtrain.engine import run, run_many  # noqa: E402
from fedtrain.reference import reference_run  # noqa: E402


def load_data():
    try:
        from fedtrain.data.school import load_school

        return load_school(), "real School (load_school)"
    except Exception as exc:  # noqa: BLE001 - fall back to a synthetic dataset of School's shape
        from fedtrain.testing import tiny_federated

        print(f"[School not available: {exc}; using synthetic data of School's shape]")
        return tiny_federated("regression", num_silos=139, dim=28, n_range=(17, 200), n_test=22, seed=0,
                              name="school"), "synthetic, School-shaped"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--ref-rounds", type=int, default=5)
    ap.add_argument("--ref-configs", type=int, default=2)
    ap.add_argument("--grid", choices=("paper", "small"), default="paper")
    ap.add_argument("--eps", type=float, default=6.0)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    warnings.filterwarnings("ignore")

    data, what = load_data()
    print(f"data: {what}: K={data.num_silos}, d={data.dim}, n_train {data.train_sizes.min()}-{data.train_sizes.max()}")
    base = RunConfig.paper("school", "mrmtl", eps=args.eps, lam=0.1, lr=0.03, rounds=args.rounds, device=args.device)
    lams, lrs = (LAMBDA_GRID, LR_GRID) if args.grid == "paper" else (LAMBDA_GRID[::3], LR_GRID[::2])
    grid = [base.replace(lam=lam, lr=lr) for lam in lams for lr in lrs]
    print(f"config: MR-MTL, eps={args.eps}, delta={base.delta}, rounds={args.rounds}, B={base.batch_size}, "
          f"clip={base.clip}; grid {len(lams)} lambda x {len(lrs)} lr = {len(grid)} configs; "
          f"torch threads={torch.get_num_threads()}, device={args.device}")

    t = time.perf_counter()
    zs = privacy.noise_multipliers(base.eps, base.delta, data.train_sizes, base.batch_size, base.rounds,
                                   base.local_epochs, base.accountant)  # cached: the runs below reuse it
    print(f"noise calibration ({data.num_silos} silos, fedtheory.privacy.silos, then cached): "
          f"{time.perf_counter() - t:.1f} s; z in [{zs.min():.3f}, {zs.max():.3f}]")

    t = time.perf_counter()
    single = run(base, data)
    t_single = time.perf_counter() - t
    t = time.perf_counter()
    results = run_many(grid, data)
    t_grid = time.perf_counter() - t
    best = min(results, key=lambda r: r.test_metric)
    print(f"engine: one run {t_single:.2f} s (test MSE {single.test_metric:.4f}); "
          f"grid of {len(grid)} {t_grid:.1f} s = {t_grid / len(grid):.2f} s per config "
          f"(best lam={best.config.lam}, lr={best.config.lr}, MSE {best.test_metric:.4f})")

    assert np.array_equal(zs, single.noise_multipliers)
    # reference: time 1 round and 1 + ref_rounds rounds; the difference is the per-round cost, the rest
    # is set-up (make_private for every silo), charged once per run
    per_round, setup = [], []
    for c in grid[: args.ref_configs]:
        t = time.perf_counter()
        reference_run(c.replace(rounds=1), data, noise_multipliers=zs, accountant_check=False)
        t1 = time.perf_counter() - t
        t = time.perf_counter()
        reference_run(c.replace(rounds=1 + args.ref_rounds), data, noise_multipliers=zs, accountant_check=False)
        t2 = time.perf_counter() - t
        per_round.append((t2 - t1) / args.ref_rounds)
        setup.append(max(t1 - per_round[-1], 0.0))
    ref_run = float(np.mean(setup)) + float(np.mean(per_round)) * args.rounds
    ref_grid = ref_run * len(grid)
    print(f"reference (Opacus per silo): {np.mean(per_round):.2f} s per round + {np.mean(setup):.2f} s set-up "
          f"(measured on 1 and {1 + args.ref_rounds} rounds, mean of {len(per_round)} configs); scaled linearly to "
          f"{args.rounds} rounds: {ref_run:.1f} s per run, {ref_grid:.0f} s for the grid of {len(grid)}")
    print(f"speed-up: one run {ref_run / t_single:.1f}x, grid {ref_grid / t_grid:.1f}x "
          f"(target >= 20x for the grid)")


if __name__ == "__main__":
    main()
