"""Benchmark: the engine vs the pre-change engine (git base) and vs one Opacus PrivacyEngine per silo.

School, full configuration (139 silos, 200 rounds, B=32, c=1, δ=1e-3, MR-MTL, ε=6), and a λ × learning
rate grid (the paper's 10 λ × 6 η = 60 configurations) run by ``run_many`` in one batch.

1. **This engine vs the engine at ``--base``** (default ``93ab339``, the commit before the model-agnostic
   hot path).  The base's packages (``fedtrain`` and the ``fedtheory`` it imports: every top-level package of that
   commit) are extracted with ``git archive`` into a temporary folder;
   each engine runs in its own worker process (same interpreter, same thread count), alternating
   ``--repeats`` times (which goes first alternates); each worker first runs the School config once untimed (noise
   calibration and caches warm), then times one run (best of 3) and the grid.  The minimum over repeats is
   reported, with the ratio new/base (< 1: the new engine is faster) and the largest relative
   difference of the test metrics (the same seeded numbers up to float32 rounding).
2. **vs Opacus** (``--opacus``, default on): the reference (:mod:`fedtrain.reference`) is far slower, so it
   runs ``--ref-rounds`` rounds (default 5) of ``--ref-configs`` configurations and its time is scaled
   linearly to 200 rounds and to the whole grid.

Usage::

    OMP_NUM_THREADS=1 flock /tmp/fedbook-heavy.lock python benchmarks/bench_engine.py [--rounds 200]
        [--grid paper|small] [--base 93ab339] [--repeats 2] [--no-opacus] [--device cpu|cuda]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def load_data(path: str | None = None):
    try:
        from fedtrain.data.school import load_school

        return load_school(path), f"real School (load_school({path or ''}))"
    except Exception as exc:  # noqa: BLE001 - fall back to a synthetic dataset of School's shape
        from fedtrain.testing import tiny_federated

        print(f"[School not available: {exc}; using synthetic data of School's shape]")
        return tiny_federated("regression", num_silos=139, dim=28, n_range=(17, 200), n_test=22, seed=0,
                              name="school"), "synthetic, School-shaped"


def configs(args):
    from fedtrain.config import RunConfig

    try:  # the grids moved to fedtrain.presets after the base commit
        from fedtrain.presets import LAMBDA_GRID, LR_GRID
    except ImportError:
        from fedtrain.config import LAMBDA_GRID, LR_GRID

    base = RunConfig.paper("school", "mrmtl", eps=args.eps, lam=0.1, lr=0.03, rounds=args.rounds, device=args.device)
    lams, lrs = (LAMBDA_GRID, LR_GRID) if args.grid == "paper" else (LAMBDA_GRID[::3], LR_GRID[::2])
    return base, [base.replace(lam=lam, lr=lr) for lam in lams for lr in lrs], (len(lams), len(lrs))


# ---------------------------------------------------------------------------------------------- worker
def worker(args) -> None:
    """Time one run and the grid with whatever ``fedtrain`` is first on ``sys.path``; print one JSON line."""
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    warnings.filterwarnings("ignore")
    import fedtrain
    from fedtrain.engine import run, run_many

    try:
        import fedtheory

        theory = os.path.dirname(fedtheory.__file__)
    except ImportError:  # pragma: no cover - a base without fedtheory
        theory = None

    data, what = load_data(args.school)
    base, grid, _ = configs(args)
    t = time.perf_counter()
    run(base, data)  # warm-up: noise calibration (cached in-process) and allocator
    warm = time.perf_counter() - t
    t_single = c_single = float("inf")
    for _ in range(3):  # one run is short: best of three
        t, c = time.perf_counter(), time.process_time()
        single = run(base, data)
        t_single = min(t_single, time.perf_counter() - t)
        c_single = min(c_single, time.process_time() - c)
    t, c = time.perf_counter(), time.process_time()
    results = run_many(grid, data)
    t_grid = time.perf_counter() - t
    c_grid = time.process_time() - c
    recomputed = None
    try:
        from fedtrain.models import LinearModel

        recomputed = getattr(LinearModel, "total_recomputed", None)
    except ImportError:  # pragma: no cover
        pass
    print(json.dumps({"package": os.path.dirname(fedtrain.__file__), "theory": theory, "data": what, "warm": warm, "single": t_single,
                      "grid": t_grid, "cpu_single": c_single, "cpu_grid": c_grid, "single_metric": single.test_metric,
                      "grid_metrics": [r.test_metric for r in results], "recomputed": recomputed}))


def run_worker(root: str, args) -> dict:
    env = dict(os.environ, PYTHONPATH=root, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--rounds", str(args.rounds), "--grid", args.grid,
           "--eps", str(args.eps), "--device", args.device] + (["--school", args.school] if args.school else [])
    out = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"worker for {root} failed:\n{out.stderr[-3000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if os.path.realpath(res["package"]) != os.path.realpath(os.path.join(root, "fedtrain")):
        raise RuntimeError(f"worker imported {res['package']}, expected {root}/fedtrain")
    if res.get("theory") and os.path.realpath(res["theory"]) != os.path.realpath(os.path.join(root, "fedtheory")):
        raise RuntimeError(f"worker imported {res['theory']}, expected {root}/fedtheory (the engine's own)")
    if "synthetic" in res["data"] and args.school:
        raise RuntimeError(f"worker for {root} could not load {args.school}")
    return res


def packages_at(commit: str) -> list[str]:
    """The top-level Python packages (folders with an ``__init__.py``) of ``commit``: the base engine's ``fedtrain``
    imports its own ``fedtheory`` (and whatever else it shipped with), never this checkout's."""
    top = subprocess.run(["git", "ls-tree", "-d", "--name-only", commit], cwd=REPO, check=True, capture_output=True,
                         text=True).stdout.split()
    inits = subprocess.run(["git", "ls-tree", "--name-only", commit, *[f"{d}/__init__.py" for d in top]], cwd=REPO,
                           check=True, capture_output=True, text=True).stdout.split()
    return sorted(path.split("/")[0] for path in inits)


def extract_base(commit: str, into: str) -> str:
    """``git archive`` every top-level package of ``commit`` (:func:`packages_at`: ``fedtrain``, ``fedtheory``)
    into ``into``; returns its short hash."""
    short = subprocess.run(["git", "rev-parse", "--short", commit], cwd=REPO, check=True, capture_output=True,
                           text=True).stdout.strip()
    packages = packages_at(commit)
    if "fedtrain" not in packages:
        raise SystemExit(f"--base {commit}: that commit has no fedtrain package (it has {packages})")
    archive = subprocess.run(["git", "archive", commit, *packages], cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return short


def compare_with_base(args) -> None:
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="fedbook-base-") as tmp:
        short = extract_base(args.base, tmp)
        runs = {"base": [], "new": []}
        for i in range(args.repeats):  # alternate which engine goes first
            for which in (("base", "new") if i % 2 == 0 else ("new", "base")):
                runs[which].append(run_worker(tmp if which == "base" else REPO, args))
    best = {k: {m: min(r[m] for r in v) for m in ("single", "grid", "cpu_single", "cpu_grid")}
            for k, v in runs.items()}
    b, n = runs["base"][0], runs["new"][0]
    diff_single = abs(n["single_metric"] - b["single_metric"]) / abs(b["single_metric"])
    diff_grid = max(abs(x - y) / abs(y) for x, y in zip(n["grid_metrics"], b["grid_metrics"]))
    ng = len(b["grid_metrics"])
    print(f"engine at {short} (base) vs this checkout (new), min of {args.repeats} worker processes each "
          f"(order alternating; one run: best of 3 per worker); data: {b['data']}")
    print(f"  one School run: base {best['base']['single']:.2f} s, new {best['new']['single']:.2f} s, "
          f"ratio new/base {best['new']['single'] / best['base']['single']:.3f}")
    print(f"  grid of {ng}:      base {best['base']['grid']:.2f} s, new {best['new']['grid']:.2f} s, "
          f"ratio new/base {best['new']['grid'] / best['base']['grid']:.3f}")
    print(f"  CPU time (less sensitive to other jobs on the machine): one run ratio "
          f"{best['new']['cpu_single'] / best['base']['cpu_single']:.3f} ({best['base']['cpu_single']:.2f} -> "
          f"{best['new']['cpu_single']:.2f} s), grid ratio {best['new']['cpu_grid'] / best['base']['cpu_grid']:.3f} "
          f"({best['base']['cpu_grid']:.2f} -> {best['new']['cpu_grid']:.2f} s)")
    print(f"  all runs (s): base single {[round(r['single'], 2) for r in runs['base']]}, grid "
          f"{[round(r['grid'], 2) for r in runs['base']]}; new single {[round(r['single'], 2) for r in runs['new']]}, "
          f"grid {[round(r['grid'], 2) for r in runs['new']]}")
    print(f"  same seeded numbers: max relative difference of test MSE {diff_single:.1e} (one run), "
          f"{diff_grid:.1e} (grid); examples sent through the stable-norm explicit route by the new "
          f"engine: {n['recomputed']} in the School runs and the grid")
    assert np.isfinite(diff_grid)


def compare_with_opacus(args) -> None:
    import numpy as np
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    from fedtrain.engine import run, run_many
    from fedtrain.reference import reference_run

    data, what = load_data()
    base, grid, _ = configs(args)
    t = time.perf_counter()
    zs = run(base, data).noise_multipliers  # warm-up: calibration (cached), the runs below reuse it
    print(f"warm-up run with noise calibration ({data.num_silos} silos): {time.perf_counter() - t:.1f} s; "
          f"z in [{zs.min():.3f}, {zs.max():.3f}]")
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--ref-rounds", type=int, default=5)
    ap.add_argument("--ref-configs", type=int, default=2)
    ap.add_argument("--grid", choices=("paper", "small"), default="paper")
    ap.add_argument("--eps", type=float, default=6.0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--base", default="93ab339", help="git commit of the engine to compare with")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--opacus", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--school", default=None, help=argparse.SUPPRESS)  # the file both workers read
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    sys.path.insert(0, REPO)
    warnings.filterwarnings("ignore")
    import torch

    try:  # both engines read the file this checkout finds (the base's search starts from a temp folder)
        from fedtrain.data.files import find_data_file

        args.school = str(find_data_file("school.mat"))
    except Exception:  # noqa: BLE001 - both workers fall back to the synthetic School-shaped data
        args.school = None
    _, grid, (nl, nr) = configs(args)
    print(f"config: MR-MTL, eps={args.eps}, rounds={args.rounds}, grid {nl} lambda x {nr} lr = {len(grid)} "
          f"configs; torch {torch.__version__}, threads={os.environ.get('OMP_NUM_THREADS', '1')}, device={args.device}")
    compare_with_base(args)
    if args.opacus:
        compare_with_opacus(args)


if __name__ == "__main__":
    main()
