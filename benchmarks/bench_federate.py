"""Wall time and bytes per round of a federation on Flower against the in-process engine, in one run.

    python benchmarks/bench_federate.py                      # School, MR-MTL, eps=1, lam=1, 3 rounds, 3 nodes
    python benchmarks/bench_federate.py --dataset school-standin --rounds 2 --nodes 2 --out federate.json

Times, on this machine and in this process: ``fedtrain.engine.run`` (the reference), the local deployment
(SuperLink + N SuperNodes, :func:`fedtrain.federate.launcher.deploy`) and Flower's simulation engine
(:func:`~fedtrain.federate.launcher.simulate`), each from the call to the result (start-up of every process
included).  Prints each time, its ratio to the engine's, the test metric of each path and its relative
difference to the engine's, and the array bytes per round (``w̄`` to every node, every silo's update back).
``--out``: write the numbers as JSON (the chapter reads the committed copy).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtrain.config import RunConfig  # noqa: E402
from fedtrain.engine import run  # noqa: E402
from fedtrain.federate.launcher import deploy, simulate  # noqa: E402
from fedtrain.presets import paper_defaults  # noqa: E402
from fedtrain.sweep import load_config_data  # noqa: E402


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="school")
    p.add_argument("--method", default="mrmtl")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-simulation", action="store_true")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    try:
        base = paper_defaults(a.dataset, a.method)
    except ValueError:
        base = {}
    base.update(dataset=a.dataset, method=a.method, eps=1.0, lam=1.0 if a.method == "mrmtl" else 0.0,
                rounds=a.rounds, seed=a.seed)
    cfg = RunConfig(**base)
    data = load_config_data(cfg)
    run(cfg.replace(rounds=1), data)  # warm the calibration cache and the imports: time training, not first use
    t = time.perf_counter()
    ref = run(cfg, data)
    t_engine = time.perf_counter() - t
    spec = {"config": cfg.to_dict(), "round_timeout": 600}
    rows = {"engine": {"seconds": t_engine, "test_metric": ref.test_metric}}
    t = time.perf_counter()
    dep = deploy(spec, a.nodes, timeout=1800)
    rows["deployment"] = {"seconds": time.perf_counter() - t, "test_metric": dep["test_metric"],
                          "server_seconds": dep["wall_time"],
                          "round_seconds": dep["extras"]["federation"]["round_seconds"],
                          "bytes_per_round": dep["extras"]["federation"]["bytes_per_round"]}
    if not a.no_simulation:
        t = time.perf_counter()
        sim = simulate(spec, a.nodes, timeout=1800, num_cpus=os.cpu_count() or 1)
        rows["simulation"] = {"seconds": time.perf_counter() - t, "test_metric": sim["test_metric"],
                              "bytes_per_round": sim["extras"]["federation"]["bytes_per_round"]}
    d = ref.models.shape[-1] if ref.models is not None else data.dim + 1
    out = {"dataset": a.dataset, "method": a.method, "rounds": a.rounds, "nodes": a.nodes, "silos": data.num_silos,
           "params": int(d), "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
           "rows": rows}
    print(f"{a.dataset} {a.method}, {data.num_silos} silos, {a.rounds} rounds, {a.nodes} nodes, "
          f"{os.cpu_count()} cores")
    print(f"{'path':<12}{'seconds':>10}{'ratio':>10}{'test metric':>16}{'rel. diff':>12}")
    for name, r in rows.items():
        rel = abs(r["test_metric"] - ref.test_metric) / abs(ref.test_metric)
        r["ratio"] = r["seconds"] / t_engine
        r["rel_diff"] = rel
        print(f"{name:<12}{r['seconds']:>10.2f}{r['ratio']:>10.1f}{r['test_metric']:>16.9f}{rel:>12.1e}")
    print(f"bytes per round (array payload): {rows['deployment']['bytes_per_round']}; the in-process engine "
          "moves none")
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
