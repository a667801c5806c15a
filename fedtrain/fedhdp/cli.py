"""The client-level part of the one ``fedtrain`` command: the output of ``fedtrain run`` for a method whose privacy
unit is a client, and ``fedtrain fedhdp-claims``.

``fedtrain run`` parses every method's flags with one parser (:mod:`fedtrain.cli`; ``fedtrain run --help`` lists
every method with its privacy unit and its options) and hands the client-level configurations
(:class:`~fedtrain.clientdp.config.FedHDPConfig`) to :func:`run_configs`; with ``--results DIR`` each finished run
is stored in that results store (:class:`~fedtrain.results.ResultsStore`, which holds both kinds of runs) and
served from it on the next call.  Examples::

    fedtrain run --dataset noniid-digits --method fedhdp --ratio 0.05 --lam-private 0.005 --lam-nonprivate 0.005 \\
        --rounds 100 --local-epochs 2 --noise-multiplier 5 --seeds 0,1,2 --json
    fedtrain run --dataset noniid-digits-skewed --method dp-fedavg --rounds 100 -D num_clients=400
    fedtrain fedhdp-claims --scale claims --results ~/.cache/fedbook-runs/fedhdp-claims --pack results
    fedtrain fedhdp-claims --grid claims-fashion --results ~/.cache/fedbook-runs/claims-fashion --pack results

``--scale`` (:data:`fedtrain.client_presets.FEDHDP_SCALES`) trains the runs the store lacks, through
:func:`fedtrain.sweep.run_sweep`.  ``--grid`` (a real-image grid of :data:`fedtrain.client_presets.FEDHDP_GRIDS`) serves
every run from the store given with ``--results`` and trains nothing (the grid is computed by
``benchmarks/run_real_image_grids.py``); it refuses an incomplete grid unless ``--partial`` is given.  ``--pack DIR``
packs the complete grid into the committed results store ``DIR`` (:func:`fedtrain.book_results.pack_client_grid`:
``results/fedhdp-claims-digits.json.gz`` or ``results/fedhdp-claims-fashion.json.gz`` under its manifest, a real-image
grid with its provenance, :func:`~fedtrain.fedhdp.experiments.grid_provenance`), which the chapter reads.

Privacy is client-level (add/remove one client of the private group), accounted per group; ``--json`` prints the
mean, sample standard deviation and values over seeds of every metric, ε per group, and the settings.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence, TextIO

import numpy as np

from fedtrain.encoding import encode
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.book_results import pack_client_grid
from fedtrain.fedhdp.experiments import check_claims, grid_provenance, grid_rows, run_experiment
from fedtrain.fedhdp.tables import format_table, table_rows
from fedtrain.presets import (FEDHDP_COMMITTED, FEDHDP_GRIDS, FEDHDP_SCALES, fedhdp_grid,
                              fedhdp_scale_configs)
from fedtrain.methods.registry import CLIENT
from fedtrain.results import ResultsStore
from fedtrain.sweep import run_sweep

__all__ = ["run_configs", "print_sweep", "configure_claims_parser", "run_claims"]

_PRIVACY_KEYS = ("adjacency", "unaccounted", "accountant", "delta", "sample_rate", "effective_noise_multiplier",
                 "update_noise_multiplier", "count_noise", "groups", "epsilon")


def run_configs(configs: Sequence[FedHDPConfig], data_dir: str | None, as_json: bool, out: TextIO,
                store: ResultsStore | None = None) -> int:
    """Train ``configs`` (one setting over seeds, on one dataset) and print the table or the JSON summary.

    ``store``: a results store (``--results DIR``); the runs go through :func:`fedtrain.sweep.run_sweep`, so a run
    it holds for this data is served from it, and each run trained is stored there before the next starts."""
    c0 = configs[0]
    results = run_sweep(configs, store=store, data_dir=data_dir, chunk_size=1, progress=False)
    summary = {"method": c0.method, "unit": c0.spec.unit, "ratio": c0.effective_ratio, "dataset": c0.dataset,
               "real_data": results[0].data.get("real"), "seeds": [c.seed for c in configs],
               "settings": {k: v for k, v in c0.to_dict().items() if k != "seed"},
               "privacy": {k: results[0].privacy[k] for k in _PRIVACY_KEYS}, "metrics": {}}
    for key in results[0].metrics:
        vals = [r.metrics[key] for r in results]
        if not all(isinstance(v, float) for v in vals):
            continue
        arr = np.array(vals, dtype=float)
        summary["metrics"][key] = {"mean": float(arr.mean()),
                                   "std": float(arr.std(ddof=1)) if len(arr) > 1 else None,
                                   "ddof": 1, "n": len(arr), "values": [float(v) for v in arr]}
    if as_json:
        print(json.dumps(encode(summary)), file=out)
        return 0
    print(format_table(table_rows(results)), file=out)
    eps = ", ".join(f"{k}: {v['epsilon']:.4g}" for k, v in summary["privacy"]["groups"].items())
    print(f"data: {c0.dataset} ({'real' if summary['real_data'] else 'synthetic stand-in'}); epsilon per group "
          f"({summary['privacy']['accountant']}, delta={c0.delta:g}): {eps}; adjacency: {summary['privacy']['adjacency']}",
          file=out)
    return 0


def print_sweep(rows: Sequence, as_json: bool, out: TextIO, results: str | None = None) -> int:
    """The output of ``fedtrain sweep`` over client-level methods: one row per (method, r) with the mean over seeds
    of the paper's columns (:func:`fedtrain.fedhdp.tables.table_rows`) and the largest ε of the private group with
    its accountant, δ and adjacency; as a table, or as one JSON object (``--json``)."""
    table = table_rows(rows)
    eps = [r.privacy["groups"]["private"]["epsilon"] for r in rows if "private" in r.privacy["groups"]]
    privacy = {"adjacency": rows[0].privacy["adjacency"], "accountant": rows[0].privacy["accountant"],
               "delta": rows[0].privacy["delta"], "epsilon_private_max": max(eps) if eps else None}
    if as_json:
        print(json.dumps(encode({"runs": len(rows), "results": results, "unit": CLIENT, "summary": table,
                                 "privacy": privacy}), allow_nan=False), file=out)
        return 0
    print(format_table(table), file=out)
    print(f"privacy ({privacy['accountant']}, delta={privacy['delta']:g}): largest epsilon of a private group "
          f"{'-' if privacy['epsilon_private_max'] is None else format(privacy['epsilon_private_max'], '.4g')}; "
          f"adjacency: {privacy['adjacency']}", file=out)
    return 0


def configure_claims_parser(p: argparse.ArgumentParser) -> None:
    """``fedtrain fedhdp-claims``'s arguments."""
    which = p.add_mutually_exclusive_group(required=True)  # one of them: bare, it would train for minutes unasked
    which.add_argument("--scale", choices=tuple(FEDHDP_SCALES), default=None,
                       help="experiment scale on the non-IID digits, trained where the store lacks a run "
                            "(claims: minutes to hours; chapter: seconds per run); each run's result is printed "
                            "as it finishes")
    which.add_argument("--grid", choices=tuple(FEDHDP_GRIDS), default=None,
                       help="a real-image grid, served from --results (trains nothing)")
    p.add_argument("--results", default=None, help="folder storing each finished run (resumable); required "
                   "with --grid")
    p.add_argument("--partial", action="store_true", help="with --grid: use the runs present when some are "
                   "missing (the saved file records how many)")
    p.add_argument("--rows-commit", default=None, help="with --grid --pack: the commit(s) of the code that "
                   "computed the rows, recorded in the file's provenance (default: the commits the rows name)")
    p.add_argument("--json", action="store_true", help="print the tables' rows and the checks as JSON")
    p.add_argument("--pack", default=None, metavar="DIR", help="also pack the complete grid into the committed "
                   "results store DIR (e.g. results; the chapter reads it from there)")


def _grid_command(args: argparse.Namespace) -> str:
    """The command line that regenerates the grid's file (a store under the home folder written with ``~``)."""
    store = str(args.results)
    home = str(Path.home())
    if store == home or store.startswith(home + "/"):
        store = "~" + store[len(home):]
    parts = ["fedtrain fedhdp-claims", f"--grid {args.grid}", f"--results {store}"]
    parts += ["--partial"] if args.partial else []
    return " ".join(parts + ([f"--pack {args.pack}"] if args.pack else []))


def _committed_name(args: argparse.Namespace) -> str:
    """The committed FedHDP grid (:data:`fedtrain.client_presets.FEDHDP_COMMITTED`) a ``--pack`` of these arguments writes."""
    for name, spec in FEDHDP_COMMITTED.items():
        if (args.grid is not None and spec.get("grid") == args.grid) or \
                (args.grid is None and spec.get("scale") == (args.scale or "claims")):
            return name
    raise ValueError(f"--pack takes the committed grids ({', '.join(FEDHDP_COMMITTED)}); scale {args.scale!r} is "
                     "not one of them")


def run_claims(args: argparse.Namespace) -> int:
    """``fedtrain fedhdp-claims``: the claims' experiment, its tables and checks; returns the exit status."""
    if args.grid is not None:
        if args.results is None:
            print(f"fedtrain fedhdp-claims: error: --grid {args.grid} needs --results DIR, the store the grid was computed "
                  f"into (python benchmarks/run_real_image_grids.py {args.grid})", file=sys.stderr)
            return 2
        configs = fedhdp_grid(args.grid)
        rows, missing = grid_rows(configs, args.results)
        if missing and not args.partial:
            print(f"fedtrain fedhdp-claims: error: the store {args.results} holds {len(rows)} of the {len(configs)} runs of "
                  f"grid {args.grid}; refusing to use an incomplete grid. Compute the rest with "
                  f"'python benchmarks/run_real_image_grids.py {args.grid} --store {args.results}', or pass "
                  f"--partial to use the runs present.", file=sys.stderr)
            return 2
        if not rows:
            print(f"fedtrain fedhdp-claims: error: the store {args.results} holds none of the {len(configs)} runs of grid "
                  f"{args.grid} (compute them with 'python benchmarks/run_real_image_grids.py {args.grid} --store "
                  f"{args.results}')", file=sys.stderr)
            return 2
        datasets = tuple(FEDHDP_GRIDS[args.grid]["datasets"])
        label, target = f"grid {args.grid}", FEDHDP_GRIDS[args.grid]["target_epsilon"]
        if args.pack:
            if missing:
                raise ValueError(f"--pack takes a complete grid: the store {args.results} holds {len(rows)} of the "
                                 f"{len(configs)} runs of grid {args.grid}")
            prov = grid_provenance(rows, args.grid, target_epsilon=target, command=_grid_command(args),
                                   rows_commit=args.rows_commit, missing=len(missing))
            pack_client_grid(_committed_name(args), work=args.results, out=args.pack, command=_grid_command(args),
                             header={"grid": args.grid, "command": _grid_command(args), "provenance": prov})
    else:
        scale = args.scale or "claims"
        datasets = ("noniid-digits", "noniid-digits-skewed")
        if args.pack and args.results is None:
            raise ValueError("--pack needs --results DIR, the working store the runs are kept in")
        name = _committed_name(args) if args.pack else None
        configs = [c for ds in datasets for c in fedhdp_scale_configs(scale, ds)]
        kept = (f"each finished run is stored in {args.results} (run again to resume)" if args.results else
                "nothing is kept (pass --results DIR to store each run and resume)")
        print(f"fedtrain fedhdp-claims: scale {scale}: {len(configs)} runs on {', '.join(datasets)}, trained where "
              f"the store lacks them; {kept}", file=sys.stderr, flush=True)
        done = iter(range(1, len(configs) + 1))
        rows = run_experiment(configs, args.results,
                              log=lambda s: print(f"[{next(done)} trained of at most {len(configs)}] {s}",
                                                  file=sys.stderr, flush=True))
        label, target = f"scale {scale}", None
        if name is not None:
            command = f"fedtrain fedhdp-claims --scale {scale} --results {args.results} --pack {args.pack}"
            pack_client_grid(name, work=args.results, out=args.pack, command=command,
                             header={"scale": scale, "command": f"fedtrain fedhdp-claims --scale {scale}"})
    checks = check_claims(rows, plain=datasets[0], skewed=datasets[1], epsilon_target=target)
    tables = {ds: table_rows([r for r in rows if r["config"]["dataset"] == ds]) for ds in datasets}
    if args.json:
        print(json.dumps(encode({("grid" if args.grid else "scale"): args.grid or args.scale or "claims",
                                 "tables": tables, "checks": [c.__dict__ for c in checks]})))
        return 0
    for ds, t in tables.items():
        print(format_table(t, title=f"{ds} ({label})"), end="\n\n")
    for c in checks:
        print(f"[{c.verdict if c.holds else c.verdict.upper()}] claim {c.claim}: {c.detail}")
    return 0
