"""Benchmark: a second ``fedtrain run`` of the same configuration skips noise calibration (on-disk cache).

Runs the same CLI command twice in fresh subprocesses that share one empty calibration cache folder
(``FEDBOOK_CACHE_DIR``, see :mod:`fedtheory.privacy.calibration`): the first run calibrates every
distinct silo (School: 139 silos) and writes the cache, the second reads it.  Prints both wall times,
their ratio, the number of cache entries, and checks that both runs report bit-identical noise
multipliers and ε spent.  A third run with the cache switched off (``FEDBOOK_CACHE_DIR=off``) is the
reference for the cold time.  Few rounds by default, so that calibration is a visible share of a run.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_calibration_cache.py [--dataset school] [--method mrmtl]
        [--eps 1.0] [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cli_run(argv: list[str], cache: str) -> tuple[float, dict]:
    env = dict(os.environ, FEDBOOK_CACHE_DIR=cache, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "fedtrain", "run", *argv, "--json", "--no-progress"],
                         capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1])
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"fedtrain run failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return wall, json.loads(out.stdout)


def calibration_only(args, cache: str) -> tuple[float, float]:
    """In-process time of the run's per-silo calibration: uncached (memo and disk off), then from ``cache``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from fedtheory.privacy import accountants, calibration
    from fedtrain.cli import main as _  # noqa: F401  (import cost outside the timings)
    from fedtrain.config import RunConfig
    from fedtrain.engine import Trainer
    from fedtrain.methods import get_method
    from fedtrain.sweep import load_config_data

    c = RunConfig.paper(args.dataset, args.method, eps=float(args.eps), rounds=int(args.rounds), lam=0.1, lr=0.03)
    tr = Trainer([c], load_config_data(c))
    method = get_method(c.method)(tr)
    tr.ledger.plan = method.privacy_plan()
    times = []
    for folder in ("off", cache):
        os.environ["FEDBOOK_CACHE_DIR"] = folder
        calibration._MEMO.clear()
        accountants._MEMO.clear()
        t = time.perf_counter()
        method.noise_multipliers(0)
        times.append(time.perf_counter() - t)
    return times[0], times[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="school")
    ap.add_argument("--method", default="mrmtl")
    ap.add_argument("--eps", default="1.0")
    ap.add_argument("--rounds", default="5")
    args = ap.parse_args()
    argv = ["--dataset", args.dataset, "--method", args.method, "--eps", args.eps, "--rounds", args.rounds,
            "--lam", "0.1", "--lr", "0.03"]
    print(f"command: fedtrain run {' '.join(argv)} --json")
    with tempfile.TemporaryDirectory(prefix="fedbook-bench-cache-") as cache:
        cli_run(argv, "off")  # warm-up: the first process pays for cold file-system caches (torch import)
        t_off, off = cli_run(argv, "off")
        t_cold, cold = cli_run(argv, cache)
        entries = len(list(Path(cache).glob("*.json")))
        t_warm, warm = cli_run(argv, cache)
        t_calib, t_cached = calibration_only(args, cache)
    for key in ("noise_multipliers", "eps_spent"):
        if cold.get(key) is None or not (cold.get(key) == warm.get(key) == off.get(key)):
            raise SystemExit(f"{key} differ between cached and uncached runs")
    print(f"cache off (reference): {t_off:.2f} s")
    print(f"first run (calibrates, writes {entries} cache entries): {t_cold:.2f} s")
    print(f"second run (reads the cache): {t_warm:.2f} s")
    print(f"ratio first/second: {t_cold / t_warm:.2f}x; saved {t_cold - t_warm:.2f} s per run; "
          "noise multipliers and eps spent bit-identical in all three runs")
    print(f"calibration alone (in process, {len(cold['noise_multipliers'])} silos): {t_calib:.2f} s uncached, "
          f"{t_cached:.3f} s from the disk cache (ratio {t_calib / t_cached:.0f}x)")


if __name__ == "__main__":
    main()
