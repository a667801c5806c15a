"""Benchmark: a School sweep serial (``--executor local``) vs on Ray (this machine's cores), and an estimate of
the paper-scale sweep on N machines from the measured per-configuration cost.

Three parts, all on real School data (``load_school``):

1. **Serial vs Ray** on a stated subset of the paper's School grid (MR-MTL, the paper's 10 λ × 6 learning
   rates, ε in ``--eps`` (default 6), ``--repeats`` re-split repeats (default 2), ``--rounds`` (default 200);
   120 configurations by default) through :func:`fedtrain.sweep.run_sweep` in batches of ``--chunk-size``
   (default 30: 4 batches, i.e. 4 Ray tasks): wall seconds of the local executor and of a local Ray with
   ``--num-cpus`` CPUs (default: all cores), the ratio, Ray's start-up, and whether the rows are
   bit-identical (they should be: same batches, same machine, one thread per task).
2. **Per-configuration cost of every method** of the paper's School grid (Fig. 3: Local, FedAvg, Finetune,
   IFCA, MR-MTL, Ditto, Mocha): one batch per method as the sweep stacks them (the learning-rate grid ×
   ``--sample-lams`` λ values for the methods with λ, × 2 ε values for the others), ``--rounds`` rounds, one
   core; seconds per configuration.
3. **Paper-scale estimate**: the paper's School grid (λ grid of 10 for MR-MTL, Ditto, Mocha; 6 learning
   rates; ε ∈ {1, 2, 3, 4, 6, 8, ∞}; 5 repeats: 7140 configurations of 200 rounds) costs
   Σ_method (configurations × seconds per configuration) on one core; on N machines of C cores it takes
   that / (N·C·e), with e the parallel efficiency measured in part 1 (Ray speed-up / cores used),
   plus Ray's start-up.  Printed for N = 1, 4, 16, 64 machines of ``--cores-per-machine`` (default 16) cores.
   The number of batches bounds the useful parallelism (printed).

Run it alone (``OMP_NUM_THREADS=1 flock /tmp/fedbook-heavy.lock .venv/bin/python benchmarks/bench_sweep_ray.py``);
``--rounds 50`` for a quick look (the estimate scales the per-configuration cost to 200 rounds linearly).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time

PAPER_EPS = (1.0, 2.0, 3.0, 4.0, 6.0, 8.0, math.inf)
PAPER_REPEATS = 5
PAPER_ROUNDS = 200
METHODS = ("local", "fedavg", "finetune", "ifca", "mrmtl", "ditto", "mocha")


def rows_equal(a, b) -> bool:
    da, db = a.to_dict(), b.to_dict()
    da.pop("wall_time"), db.pop("wall_time")
    return da == db


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=PAPER_ROUNDS)
    ap.add_argument("--eps", default="6", help="comma-separated ε of part 1 (default 6)")
    ap.add_argument("--repeats", type=int, default=2, help="re-split repeats in part 1 (default 2)")
    ap.add_argument("--chunk-size", type=int, default=30, help="configurations per batch / Ray task (default 30)")
    ap.add_argument("--num-cpus", type=int, default=os.cpu_count() or 1, help="CPUs of the local Ray (default: all)")
    ap.add_argument("--sample-lams", type=int, default=2, help="λ values per method in part 2 (default 2)")
    ap.add_argument("--cores-per-machine", type=int, default=16)
    ap.add_argument("--skip-methods", action="store_true", help="skip parts 2 and 3")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    from fedtrain.config import RunConfig
    from fedtrain.executors import RayExecutor
    from fedtrain.presets import LAMBDA_GRID, LR_GRID
    from fedtrain.sweep import expand_grid, repeat_configs, run_sweep

    eps = [float(e) for e in args.eps.split(",")]
    base = RunConfig.paper("school", "mrmtl", rounds=args.rounds)
    grid = []
    for c in expand_grid(base, eps=eps, lam=LAMBDA_GRID, lr=LR_GRID):
        grid += repeat_configs(c, args.repeats)
    per_split = len(grid) // args.repeats  # one dataset (split) per repeat; run_sweep batches within a dataset
    batches = args.repeats * math.ceil(per_split / args.chunk_size)
    print(f"part 1: School MR-MTL, {len(LAMBDA_GRID)} λ × {len(LR_GRID)} η × ε {eps} × {args.repeats} repeats = "
          f"{len(grid)} configurations, {args.rounds} rounds, batches of {args.chunk_size} ({batches} batches)")

    with tempfile.TemporaryDirectory(prefix="fedbook-sweep-bench-") as tmp:
        os.environ.setdefault("FEDBOOK_CACHE_DIR", os.path.join(tmp, "cache"))
        # fill the calibration cache (one run per ε and split; both executors then read it from disk)
        run_sweep(grid[:: len(LR_GRID) * len(LAMBDA_GRID)], progress=False)
        t = time.perf_counter()
        serial = run_sweep(grid, store=os.path.join(tmp, "serial"), chunk_size=args.chunk_size, progress=False)
        t_serial = time.perf_counter() - t
        ex = RayExecutor(num_cpus=args.num_cpus)
        t = time.perf_counter()
        ex.start()
        t_ray_start = time.perf_counter() - t
        t = time.perf_counter()
        on_ray = run_sweep(grid, store=os.path.join(tmp, "ray"), chunk_size=args.chunk_size, progress=False,
                           executor=ex)
        t_ray = time.perf_counter() - t
        ex.close()
    same = sum(rows_equal(a, b) for a, b in zip(serial, on_ray))
    cores = min(args.num_cpus, batches)
    speedup = t_serial / t_ray
    eff = speedup / cores
    print(f"  serial (local executor): {t_serial:.1f} s = {t_serial / len(grid):.3f} s per configuration")
    print(f"  Ray, {args.num_cpus} CPUs: {t_ray:.1f} s (+ {t_ray_start:.1f} s to start Ray); ratio serial/Ray = "
          f"{speedup:.2f} on {cores} cores (parallel efficiency {eff:.2f})")
    print(f"  rows bit-identical: {same} of {len(grid)}")
    out = {"configs": len(grid), "rounds": args.rounds, "serial_s": t_serial, "ray_s": t_ray, "ray_start_s": t_ray_start,
           "num_cpus": args.num_cpus, "speedup": speedup, "efficiency": eff, "identical_rows": same}
    if args.skip_methods:
        print(json.dumps(out))
        return

    from fedtrain.data.school import load_school
    from fedtrain.engine import run_many
    from fedtrain.methods.registry import METHOD_REGISTRY

    data = load_school()
    print(f"\npart 2: seconds per configuration on one core (one stacked batch per method, {args.rounds} rounds)")
    per_config = {}
    lams = LAMBDA_GRID[:: max(1, len(LAMBDA_GRID) // args.sample_lams)][: args.sample_lams]
    for m in METHODS:
        b = RunConfig.paper("school", m, rounds=args.rounds, eps=6.0)
        if METHOD_REGISTRY[m].uses_lambda:
            cs = expand_grid(b, lam=lams, lr=LR_GRID)
        else:
            cs = expand_grid(b, eps=[1.0, 6.0], lr=LR_GRID)
        run_many([c for c in cs if c.lr == cs[0].lr and c.lam == cs[0].lam], data)  # calibrations, warm-up
        t = time.perf_counter()
        run_many(cs, data)
        dt = time.perf_counter() - t
        per_config[m] = dt / len(cs) * PAPER_ROUNDS / args.rounds
        print(f"  {m:9s} {len(cs):3d} configs in {dt:6.1f} s -> {per_config[m]:.3f} s per configuration at 200 rounds")

    counts = {m: len(PAPER_EPS) * len(LR_GRID) * PAPER_REPEATS * (len(LAMBDA_GRID) if METHOD_REGISTRY[m].uses_lambda else 1)
              for m in METHODS}
    total = sum(counts[m] * per_config[m] for m in METHODS)
    n_batches = sum(math.ceil(counts[m] / (len(PAPER_EPS) * PAPER_REPEATS) / 32) * len(PAPER_EPS) * PAPER_REPEATS
                    for m in METHODS)
    print(f"\npart 3: the paper's School grid = {sum(counts.values())} configurations "
          f"({', '.join(f'{m} {counts[m]}' for m in METHODS)}), 200 rounds")
    print(f"  one core: {total:.0f} s = {total / 3600:.2f} h (measured cost per configuration × count)")
    print(f"  at --chunk-size 32 the sweep has about {n_batches} batches (the most tasks that can run at once)")
    estimate = {}
    for n in (1, 4, 16, 64):
        workers = min(n * args.cores_per_machine, n_batches)
        hours = total / (workers * eff) / 3600
        estimate[n] = hours
        print(f"  {n:3d} machine(s) × {args.cores_per_machine} cores ({workers} tasks at once, efficiency {eff:.2f}): "
              f"≈ {hours * 60:.1f} min (+ Ray start-up; batches are not split further)")
    out.update(per_config=per_config, counts=counts, one_core_s=total, batches=n_batches, estimate_h=estimate)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
