"""Benchmark: the cost of one Fig. 6 grid run at a probed setting, against the committed grid's setting, same process.

The plan of the recomputed grids (benchmarks/README.md, "Plan: Fig. 6 and Fig. 3(d) in the regime where noise
limits") needs the CPU seconds of one run.  This times, on one thread, ``run`` (training and evaluation, the data
loaded beforehand, the noise calibration included) for:

* the **reference**: the committed ``fig6-fashion`` grid's MR-MTL run (λ = 0.1, ε = 4, η = 0.1, c = 1, mask 0,
  40 silos × 500 images, T = 40, seed 0), and
* each **case**: the same run with ``--lr``, ``--clip``, ``--train-per-silo`` and the method given (IFCA's
  selections spread with ``--select-every``),

alternating reference and case ``--repeats`` times, and prints each one's CPU seconds (``time.process_time``; the
machine is shared, so CPU seconds, not wall seconds, are the number that plans a grid) and the ratio case /
reference.  Run (background, lowest priority)::

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 19 .venv/bin/python benchmarks/bench_grid_run_cost.py \\
        --lr 0.3 --clip 3 --method ifca-mrmtl --select-every 2
"""
from __future__ import annotations

import argparse
import time


def one(config) -> tuple[float, float, float]:
    from fedtrain.engine import run
    from fedtrain.sweep import load_config_data

    data = load_config_data(config)
    cpu, wall = time.process_time(), time.perf_counter()
    r = run(config, data)
    return time.process_time() - cpu, time.perf_counter() - wall, float(r.test_metric)


def main(argv=None) -> int:
    import torch

    from fedtrain.config import RunConfig, paper_defaults

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lr", type=float, default=0.3)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--train-per-silo", type=int, default=500)
    p.add_argument("--method", default="mrmtl")
    p.add_argument("--select-every", type=int, default=1)
    p.add_argument("--repeats", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    base = {**paper_defaults("rotated-masked-fashion", "ifca-mrmtl"), "dataset": "rotated-masked-fashion",
            "method": "mrmtl", "lam": 0.1, "eps": 4.0, "lr": 0.1, "rounds": 40, "seed": 0, "eval_every": 10,
            "dataset_options": {"train_per_silo": 500, "mask_ratio": 0.0}}
    base.pop("num_clusters")
    ref = RunConfig(**base)
    case_kw = {**base, "method": args.method, "lr": args.lr, "clip": args.clip,
               "dataset_options": {"train_per_silo": args.train_per_silo, "mask_ratio": 0.0}}
    if args.method in ("ifca", "ifca-mrmtl"):
        case_kw.update(num_clusters=4, select_frac=0.25, select_every=args.select_every)
    case = RunConfig(**case_kw)
    for i in range(args.repeats):
        rc, rw, ra = one(ref)
        cc, cw, ca = one(case)
        print(f"repeat {i}: reference (mrmtl, eta 0.1, c 1, 500/silo): {rc:.0f} CPU s ({rw:.0f} wall s, acc {ra:.4f}); "
              f"case ({args.method}, eta {args.lr}, c {args.clip}, {args.train_per_silo}/silo, select_every "
              f"{args.select_every}): {cc:.0f} CPU s ({cw:.0f} wall s, acc {ca:.4f}); ratio case/reference "
              f"{cc / rc:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
