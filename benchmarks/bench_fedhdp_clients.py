"""FedHDP training vectorized over a round's clients vs a per-client loop, in the same run.

The MNIST-like setting of the paper (Table 5-7): 2,000 clients of one class each, q = 0.05 (about 100
clients per round), Table 6's FC network (input → 50 ReLU → 10), batch 20, 30 samples per client.
Inputs: scikit-learn's 8×8 digits (D = 3,760 parameters) and, with ``--side 28``, the same digits
upsampled to MNIST's 28×28 (D = 39,760, Table 6's exact network).  Both trainers run the same rounds of
FedHDP (r = 0.01, z = 1.5, adaptive clipping, Ditto); the script prints seconds per round, the ratio
loop/vectorized, and the projected time of 500 rounds at ``--epochs`` local epochs.  The trainer's default
vectorizes over chunks of at most ``CLIENT_CHUNK_ENTRIES / D`` clients (all ~100 for the 8×8 network, ~26
for MNIST's, where one call over every client is memory-bound; ``--chunks`` times other sizes).

Run under the machine-wide lock with one thread::

    flock /tmp/fedbook-heavy.lock env OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_fedhdp_clients.py
"""
from __future__ import annotations

import argparse
import math
import time

import torch

from fedtrain.data.registry import load_dataset
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.clientdp.accounting import delta_bound
from fedtrain.clientdp.trainer import privacy_groups, train

PAPER_DELTA = 1e-4


def default_delta(cfg: FedHDPConfig, data) -> float:
    """The paper's δ = 1e-4 where the rule δ < N_g^-1.1 allows it for every private group of ``data``
    (:func:`fedtrain.clientdp.accounting.delta_bound`), else the largest power of ten below the tightest bound
    (``--clients 8000``: 7,600 private clients, bound 5.4e-5, δ = 1e-5)."""
    sizes = [g.clients.size for g in privacy_groups(cfg, data) if g.private]
    bound = min((delta_bound(n) for n in sizes), default=1.0)
    if PAPER_DELTA < bound:
        return PAPER_DELTA
    exponent = math.floor(math.log10(bound))
    return 10.0 ** (exponent - 1) if 10.0 ** exponent >= bound else 10.0 ** exponent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=10, help="rounds timed per variant (default 10)")
    p.add_argument("--epochs", type=int, default=1, help="local epochs per round (Table 7: 25; default 1)")
    p.add_argument("--side", type=int, default=8, help="image side: 8 (digits) or 28 (upsampled, Table 6's D)")
    p.add_argument("--clients", type=int, default=2000)
    p.add_argument("--delta", type=float, default=None, help="client-level delta (default: the paper's 1e-4 where "
                   "delta < N_g^-1.1 allows it, else the largest power of ten below that bound)")
    p.add_argument("--chunks", default="", help="also time these client chunk sizes, e.g. 10,100 (clients per vmap "
                   "call; 100 = all of a round's clients)")
    args = p.parse_args()
    torch.set_num_threads(1)
    data = load_dataset("noniid-digits", num_clients=args.clients, image_side=args.side)
    cfg = FedHDPConfig(method="fedhdp", ratio=0.01, rounds=args.rounds, sample_rate=0.05, local_epochs=args.epochs)
    cfg = cfg.replace(delta=default_delta(cfg, data) if args.delta is None else args.delta)
    train(cfg.replace(rounds=1), data)  # warm-up (imports, first vmap trace)
    out = {}
    variants = [("vectorized (default chunks)", None), ("per-client loop", 1)]
    variants += [(f"vmap over chunks of {int(c)} clients", int(c)) for c in args.chunks.split(",") if c.strip()]
    for name, chunk in variants:
        t0 = time.perf_counter()
        res = train(cfg, data, client_chunk=chunk)
        out[name] = (time.perf_counter() - t0) / args.rounds
        print(f"{name:34s} {out[name]:.3f} s/round  (acc_g after {args.rounds} rounds: {res.metrics['acc_g']:.1f} %)")
    vec, loop = out["vectorized (default chunks)"], out["per-client loop"]
    d = sum(a * b for a, b in [(data.dim, 50), (1, 50), (50, 10), (1, 10)])
    print(f"setting: {args.clients} clients, delta = {cfg.delta:g}, q = 0.05, {args.epochs} local epoch(s), D = {d} parameters, 1 thread")
    print(f"ratio loop / vectorized: {loop / vec:.1f}x")
    print(f"projected 500 rounds: vectorized {500 * vec / 60:.1f} min, per-client loop {500 * loop / 60:.1f} min")


if __name__ == "__main__":
    main()
