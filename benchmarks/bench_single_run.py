"""Benchmark: one School MR-MTL run (200 rounds, ε = 6) end to end, its parts, and the Opacus-per-silo reference.

What a user types::

    fedtrain run --dataset school --method mrmtl --eps 6 --lam 0.1 --lr 0.03 --rounds 200 --json --no-progress

1. **End to end**: that command in a fresh process (``python -m fedtrain``, the console script's module),
   with a warm calibration cache (``FEDBOOK_CACHE_DIR`` = a temporary folder filled by one untimed run
   first), ``--repeats`` times; wall seconds (best and median) and the child's CPU seconds.  The same for
   the engine of ``--base`` (default ``ac803f0``: engine version 4, before the speed change), whose
   ``fedtrain`` and ``fedtheory`` packages are extracted with ``git archive`` into a temporary folder and
   put first on ``PYTHONPATH``.  The runs alternate (which goes first alternates).
2. **Breakdown** (a fresh worker process per engine): imports (``fedtrain.cli``, the engine, the data
   loaders: what ``fedtrain run`` imports before training), data loading, noise calibration (warm disk
   cache, as in 1, and cold: cache off), set-up and training (``run`` with the calibration memoised:
   1 round and 200 rounds; ms per round = their difference / 199, set-up = the 1-round time minus one round).
   Also which heavy modules the CLI run left imported (sympy, matplotlib, opacus, dp_accounting's PLD).
3. **Opacus reference** (:func:`fedtrain.reference.reference_run`, one Opacus PrivacyEngine per silo, the
   engine's noise multipliers given so that it times training): 1 and ``1 + --ref-rounds`` rounds; its
   ms per round and the ratio reference / engine.

Everything runs on one core (``OMP_NUM_THREADS=1``, ``torch.set_num_threads(1)``).  Run it alone::

    OMP_NUM_THREADS=1 flock /tmp/fedbook-heavy.lock .venv/bin/python benchmarks/bench_single_run.py
        [--repeats 5] [--base ac803f0 | --base none] [--ref-rounds 3]
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

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
CLI_ARGS = ["run", "--dataset", "school", "--method", "mrmtl", "--eps", "6", "--lam", "0.1", "--lr", "0.03",
            "--rounds", "200", "--json", "--no-progress"]
HEAVY = ("sympy", "matplotlib", "opacus", "dp_accounting.pld", "scipy.stats", "ray")


# ---------------------------------------------------------------------------------------------- worker
def worker(args) -> None:
    """Breakdown of one run with whatever ``fedtrain`` comes first on ``sys.path``; prints one JSON line."""
    t0 = time.perf_counter()
    import fedtrain.cli  # noqa: F401  (what `fedtrain run` imports first)
    from fedtrain.config import RunConfig
    from fedtrain.engine import run
    from fedtrain.sweep import load_config_data

    t_imports = time.perf_counter() - t0
    import torch

    torch.set_num_threads(1)
    c = RunConfig.paper("school", "mrmtl", eps=6.0, lam=0.1, lr=0.03, rounds=200)
    t = time.perf_counter()
    data = load_config_data(c)
    t_data = time.perf_counter() - t

    from fedtheory.privacy import calibration
    from fedtrain import ledger
    from fedtrain.engine import Trainer
    from fedtrain.methods import get_method

    tr = Trainer([c], data)
    method = get_method("mrmtl")(tr)
    plan = method.privacy_plan()

    def calibrate(cache: bool) -> float:
        calibration._MEMO.clear()
        t = time.perf_counter()
        ledger.noise_multipliers(plan, tr.eps[0], tr.delta[0], tr.q, c.accountant, cache=cache)
        return time.perf_counter() - t

    t_calib_cold = calibrate(False)
    t_calib_warm = calibrate(True)  # the disk cache was filled by the CLI runs

    def best(cfg, k=3):
        out = float("inf")
        for _ in range(k):
            t = time.perf_counter()
            r = run(cfg, data)
            out = min(out, time.perf_counter() - t)
        return out, r

    t1, _ = best(c.replace(rounds=1))
    t200, r = best(c)
    per_round = (t200 - t1) / 199
    out = {"package": os.path.dirname(fedtrain.cli.__file__), "imports": t_imports, "data": t_data,
           "calibration_cold": t_calib_cold, "calibration_warm": t_calib_warm, "setup": t1 - per_round,
           "training": t200 - (t1 - per_round), "ms_per_round": 1e3 * per_round, "test_metric": r.test_metric}
    if args.ref_rounds > 0:
        from fedtrain.reference import reference_run

        z = r.noise_multipliers
        times = []
        for rounds in (1, 1 + args.ref_rounds):
            t = time.perf_counter()
            reference_run(c.replace(rounds=rounds), data, noise_multipliers=z, accountant_check=False)
            times.append(time.perf_counter() - t)
        out["ref_ms_per_round"] = 1e3 * (times[1] - times[0]) / args.ref_rounds
        out["ref_setup"] = times[0] - (times[1] - times[0]) / args.ref_rounds
    print(json.dumps(out))


def modules_left_imported(env) -> list[str]:
    """Heavy modules present after a CLI run (argparse, data, calibration, training): run in-process in a child."""
    code = ("import sys, runpy; sys.argv=['fedtrain'] + %r\n"
            "import io, contextlib\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        runpy.run_module('fedtrain', run_name='__main__')\n"
            "    except SystemExit:\n        pass\n"
            "print(','.join(m for m in %r if m in sys.modules))") % (CLI_ARGS, HEAVY)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=env["PYTHONPATH"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    return [m for m in line.split(",") if m]


# ---------------------------------------------------------------------------------------------- driver
def env_for(root: str, cache: str) -> dict:
    # Both engines read School from this checkout's data folder (the base engine, extracted under /tmp,
    # would look beside itself): FEDBOOK_DATA_DIR unless the caller set it.
    data = os.environ.get("FEDBOOK_DATA_DIR") or os.path.join(REPO, "..", "shared", "data")
    return dict(os.environ, PYTHONPATH=root, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", FEDBOOK_CACHE_DIR=cache,
                FEDBOOK_DATA_DIR=os.path.abspath(data))


def cli_once(env) -> tuple[float, float, dict]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "fedtrain", *CLI_ARGS], env=env, cwd=env["PYTHONPATH"], capture_output=True,
                         text=True)  # cwd: `-m` puts it first on sys.path
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"fedtrain run failed:\n{out.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(out.stdout)


def extract(commit: str, into: str, repo: str = REPO) -> str:
    short = subprocess.run(["git", "rev-parse", "--short", commit], cwd=repo, check=True, capture_output=True,
                           text=True).stdout.strip()
    archive = subprocess.run(["git", "archive", commit, "fedtrain", "fedtheory"], cwd=repo, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return short


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="timed CLI runs per engine (default 5)")
    ap.add_argument("--base", default="ac803f0", help="git commit of the engine to compare with, or 'none'")
    ap.add_argument("--ref-rounds", type=int, default=3, help="rounds of the Opacus reference to time (0: skip)")
    ap.add_argument("--git-dir", default=REPO, help="the git checkout holding --base (default: this one)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    with tempfile.TemporaryDirectory(prefix="fedbook-bench-") as tmp:
        roots = {"new": REPO}
        if args.base.lower() != "none":
            os.makedirs(os.path.join(tmp, "base"))
            roots["base"] = os.path.join(tmp, "base")
            short = extract(args.base, roots["base"], args.git_dir)
            print(f"base engine: {args.base} ({short}), fedtrain + fedtheory from git archive")
        envs = {k: env_for(root, os.path.join(tmp, f"cache-{k}")) for k, root in roots.items()}
        t = time.perf_counter()
        for _ in range(3):
            subprocess.run([sys.executable, "-c", "pass"], check=True)
        python_start = (time.perf_counter() - t) / 3
        e2e = {k: [] for k in roots}
        cpu = {k: [] for k in roots}
        metric = {}
        for k in roots:  # untimed: fills the calibration cache
            _, _, res = cli_once(envs[k])
        for i in range(args.repeats):
            order = list(roots) if i % 2 == 0 else list(roots)[::-1]
            for k in order:
                wall, c, res = cli_once(envs[k])
                e2e[k].append(wall)
                cpu[k].append(c)
                metric[k] = res
        parts = {}
        for k, root in roots.items():
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", "--ref-rounds",
                                  str(args.ref_rounds if k == "new" else 0)], env=envs[k], cwd=root,
                                 capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"worker ({k}) failed:\n{out.stderr[-3000:]}")
            parts[k] = json.loads(out.stdout.strip().splitlines()[-1])
            if os.path.realpath(parts[k]["package"]) != os.path.realpath(os.path.join(root, "fedtrain")):
                raise RuntimeError(f"worker ({k}) imported {parts[k]['package']}, expected {root}/fedtrain")
        heavy = modules_left_imported(envs["new"])

    print(f"python -c pass: {python_start:.3f} s (interpreter start, part of every end-to-end time)")
    print("\nend to end (`fedtrain run ... --rounds 200`, warm calibration cache), wall s best / median, CPU s best:")
    for k in roots:
        val = metric[k]
        mse = val.get("mean", val.get("test_metric")) if isinstance(val, dict) else None
        print(f"  {k:5s} {min(e2e[k]):6.2f} / {statistics.median(e2e[k]):6.2f}   cpu {min(cpu[k]):6.2f}"
              f"   test MSE {mse}")
    if "base" in roots:
        print(f"  ratio new/base (best wall): {min(e2e['new']) / min(e2e['base']):.2f}")
    print("\nbreakdown (s; one worker process each):")
    keys = ("imports", "data", "calibration_warm", "calibration_cold", "setup", "training", "ms_per_round")
    print("  " + " ".join(f"{k:>16s}" for k in ("engine",) + keys))
    for k in roots:
        print("  " + f"{k:>16s}" + " ".join(f"{parts[k][key]:16.3f}" for key in keys))
    if "base" in roots:
        print(f"  ms per round new/base: {parts['new']['ms_per_round'] / parts['base']['ms_per_round']:.2f}")
    if args.ref_rounds > 0:
        ref = parts["new"]["ref_ms_per_round"]
        print(f"\nOpacus per silo (fedtrain.reference): {ref:.1f} ms per round (set-up {parts['new']['ref_setup']:.2f} s),"
              f" engine {parts['new']['ms_per_round']:.2f} ms per round: ratio reference/engine = "
              f"{ref / parts['new']['ms_per_round']:.0f}x")
    print(f"\nheavy modules imported by the CLI run: {', '.join(heavy) if heavy else 'none'} (checked: {', '.join(HEAVY)})")
    print(json.dumps({"python_start": python_start, "e2e": e2e, "cpu": cpu, "parts": parts, "heavy": heavy}))


if __name__ == "__main__":
    main()
