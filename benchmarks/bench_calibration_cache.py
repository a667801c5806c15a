"""Benchmark: a second ``fedtrain run`` of the same configuration skips noise calibration (on-disk cache).

Runs the same CLI command twice in fresh subprocesses that share one empty calibration cache folder
(``FEDBOOK_CACHE_DIR``, see :mod:`fedtheory.privacy.calibration`): the first run calibrates every
distinct silo (School: 139 silos) and writes the cache, the second reads it.  Prints both wall times,
their ratio, the number of cache entries, and checks that both runs report bit-identical noise
multipliers and ε spent.  A third run with the cache switched off (``FEDBOOK_CACHE_DIR=off``) is the
reference for the cold time.  Few rounds by default, so that calibration is a visible share of a run.

**The warm run against ``import torch``** (``--repeats N``, default 5): ``python -c "import torch"`` and the warm
run, each in a fresh process, interleaved N times; prints the ratio warm run / ``import torch`` of each pair, wall
and CPU (the child's user + system seconds, less sensitive to other jobs on a shared machine), min, median and max.
Every cached noise multiplier is verified on reading (:mod:`fedtheory.privacy.calibration`: all of a run's entries in
one batched evaluation), so the warm run pays that check, and the in-process timing says how much.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_calibration_cache.py [--dataset school] [--method mrmtl]
        [--eps 1.0] [--rounds 5] [--repeats 5]
    OMP_NUM_THREADS=1 python benchmarks/bench_calibration_cache.py --eps 6 --rounds 200   # the School run of
        # bench_single_run.py
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _child(cmd: list[str], env: dict) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run ``cmd``; (wall seconds, its CPU seconds: user + system, the completed process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1])
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


def cli_run(argv: list[str], cache: str, with_cpu: bool = False):
    env = dict(os.environ, FEDBOOK_CACHE_DIR=cache, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    wall, cpu, out = _child([sys.executable, "-m", "fedtrain", "run", *argv, "--json", "--no-progress"], env)
    if out.returncode != 0:
        raise SystemExit(f"fedtrain run failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return (wall, cpu, json.loads(out.stdout)) if with_cpu else (wall, json.loads(out.stdout))


def against_import_torch(argv: list[str], cache: str, repeats: int) -> None:
    """The warm run / ``import torch`` ratio, interleaved pairs of fresh processes (module docstring)."""
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    ratios: dict[str, list[float]] = {"wall": [], "cpu": []}
    pairs = []
    for _ in range(repeats):
        tw, tc, out = _child([sys.executable, "-c", "import torch"], env)
        if out.returncode != 0:
            raise SystemExit(f"import torch failed:\n{out.stderr[-2000:]}")
        rw, rc, _ = cli_run(argv, cache, with_cpu=True)
        ratios["wall"].append(rw / tw)
        ratios["cpu"].append(rc / tc)
        pairs.append(f"{rw:.2f}/{tw:.2f} s")
    print(f"warm run / import torch, {repeats} interleaved pairs (fresh processes; load average "
          f"{os.getloadavg()[0]:.1f}): run/torch wall {', '.join(pairs)}")
    for kind, r in ratios.items():
        print(f"  ratio ({kind}): min {min(r):.2f}, median {statistics.median(r):.2f}, max {max(r):.2f}")


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
        t, c = time.perf_counter(), time.process_time()
        method.noise_multipliers(0)
        times.append((time.perf_counter() - t, time.process_time() - c))
    return times[0], times[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="school")
    ap.add_argument("--method", default="mrmtl")
    ap.add_argument("--eps", default="1.0")
    ap.add_argument("--rounds", default="5")
    ap.add_argument("--repeats", type=int, default=5, help="pairs (import torch, warm run) timed (default 5)")
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
        against_import_torch(argv, cache, args.repeats)
        t_calib, t_cached = calibration_only(args, cache)
    for key in ("noise_multipliers", "eps_spent"):
        if cold.get(key) is None or not (cold.get(key) == warm.get(key) == off.get(key)):
            raise SystemExit(f"{key} differ between cached and uncached runs")
    print(f"cache off (reference): {t_off:.2f} s")
    print(f"first run (calibrates, writes {entries} cache entries): {t_cold:.2f} s")
    print(f"second run (reads the cache): {t_warm:.2f} s")
    print(f"ratio first/second: {t_cold / t_warm:.2f}x; saved {t_cold - t_warm:.2f} s per run; "
          "noise multipliers and eps spent bit-identical in all three runs")
    print(f"calibration alone (in process, {len(cold['noise_multipliers'])} silos, {entries} distinct): "
          f"{t_calib[0]:.2f} s uncached ({t_calib[1]:.2f} s CPU), {t_cached[0]:.3f} s from the disk cache, every "
          f"entry verified ({t_cached[1]:.3f} s CPU; ratio {t_calib[1] / t_cached[1]:.0f}x)")


if __name__ == "__main__":
    main()
