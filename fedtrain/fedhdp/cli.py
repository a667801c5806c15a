"""Command line of the client-level methods: ``fedtrain run --method fedhdp|hdp-fedavg|dp-fedavg|nonprivate``
and ``fedtrain fedhdp-claims``.

Examples::

    fedtrain run --dataset noniid-digits --method fedhdp --ratio 0.05 --lam-private 0.005 --lam-nonprivate 0.005 \\
        --rounds 100 --local-epochs 2 --noise-multiplier 5 --seeds 0,1,2 --json
    fedtrain run --dataset noniid-digits-skewed --method dp-fedavg --rounds 100 -D num_clients=400
    fedtrain fedhdp-claims --scale claims --results results/fedhdp-claims

Every field of :class:`~fedtrain.fedhdp.config.FedHDPConfig` has a flag generated from its declaration
(range, default, help; :mod:`fedtrain.params`).  Privacy is client-level (add/remove one client of the
private group), accounted per group; ``--json`` prints the mean, sample standard deviation and values
over seeds of every metric, ε per group, and the settings.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

import numpy as np

from fedtrain.fedhdp.config import FEDHDP_METHODS, FedHDPConfig
from fedtrain.params import add_flag, params_of
from fedtrain.data.registry import FILE_DATASETS, load_dataset
from fedtrain.encoding import encode
from fedtrain.fedhdp.experiments import SCALES, check_claims, experiment_configs, run_experiment, save_results
from fedtrain.fedhdp.tables import format_table, table_rows

__all__ = ["wants_client_level", "run_main", "configure_claims_parser", "run_claims"]


def wants_client_level(argv: Sequence[str]) -> bool:
    """True when ``argv`` is ``run ... --method M`` with M one of the client-level methods."""
    if not argv or argv[0] != "run":
        return False
    for i, a in enumerate(argv):
        value = argv[i + 1] if a in ("--method", "--methods") and i + 1 < len(argv) else (
            a.split("=", 1)[1] if a.startswith(("--method=", "--methods=")) else None)
        if value is not None:
            return value.strip() in FEDHDP_METHODS
    return False


def _option(text: str):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--dataset-option needs KEY=VALUE (got {text!r})")
    key, value = text.split("=", 1)
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fedtrain run", description="Client-level DP training with privacy groups "
                                "(FedHDP, Aldaghri et al. Algorithm 2) and its baselines, all with Ditto.",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("Examples::")[1].split("Every field")[0])
    g = p.add_argument_group("settings (FedHDPConfig fields)")
    for name, (prm, default) in params_of(FedHDPConfig).items():
        if name in ("dataset_options", "seed"):
            continue
        add_flag(g, name, prm, default, as_list=False)
    g.add_argument("--dataset-option", "-D", action="append", type=_option, default=[], metavar="KEY=VALUE",
                   help="loader option, e.g. num_clients=400 (repeatable)")
    g.add_argument("--seeds", "--seed", dest="seeds", default="0", help="comma-separated training seeds (default 0)")
    g.add_argument("--data-dir", default=None, help="folder of the MNIST / federated EMNIST files (file datasets)")
    g.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    return p


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers >= 0 (got {text!r})") from None
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds must be distinct integers >= 0 (got {text!r})")
    return seeds


def run_main(argv: Sequence[str]) -> int:
    """``fedtrain run`` for the client-level methods (``argv`` without the leading ``run``)."""
    from fedtrain.fedhdp.trainer import train

    parser = build_parser()
    args = parser.parse_args(list(argv))
    try:
        fields = {n: getattr(args, n) for n in params_of(FedHDPConfig) if getattr(args, n, None) is not None}
        fields["dataset_options"] = dict(args.dataset_option)
        configs = [FedHDPConfig(seed=s, **fields) for s in _seeds(args.seeds)]
        c0 = configs[0]
        opts = dict(c0.dataset_options)
        if c0.dataset in FILE_DATASETS:
            opts["data_dir"] = args.data_dir
        data = load_dataset(c0.dataset, **opts)
        results = [train(c, data) for c in configs]
    except (ValueError, FileNotFoundError) as exc:
        parser.exit(2, f"fedtrain: error: {exc}\n")
    summary = {"method": c0.method, "ratio": c0.effective_ratio, "dataset": c0.dataset,
               "real_data": results[0].data.get("real"), "seeds": [c.seed for c in configs],
               "settings": {**{k: v for k, v in c0.to_dict().items() if k != "seed"}, "ratio": c0.effective_ratio},
               "privacy": {k: results[0].privacy[k] for k in ("adjacency", "unaccounted", "accountant", "delta",
                                                               "sample_rate", "effective_noise_multiplier",
                                                               "update_noise_multiplier", "count_noise", "groups",
                                                               "epsilon")},
               "metrics": {}}
    for key in results[0].metrics:
        vals = [r.metrics[key] for r in results]
        if not all(isinstance(v, float) for v in vals):
            continue
        arr = np.array(vals, dtype=float)
        summary["metrics"][key] = {"mean": float(arr.mean()),
                                   "std": float(arr.std(ddof=1)) if len(arr) > 1 else None,
                                   "ddof": 1, "n": len(arr), "values": [float(v) for v in arr]}
    if args.json:
        print(json.dumps(encode(summary)), file=sys.stdout)
        return 0
    print(format_table(table_rows(results)))
    eps = ", ".join(f"{k}: {v['epsilon']:.4g}" for k, v in summary["privacy"]["groups"].items())
    print(f"data: {c0.dataset} ({'real' if summary['real_data'] else 'synthetic stand-in'}); epsilon per group "
          f"({summary['privacy']['accountant']}, delta={c0.delta:g}): {eps}; adjacency: {summary['privacy']['adjacency']}")
    return 0


def configure_claims_parser(p: argparse.ArgumentParser) -> None:
    """``fedtrain fedhdp-claims``'s arguments."""
    p.add_argument("--scale", choices=tuple(SCALES), default="claims", help="experiment scale (default claims)")
    p.add_argument("--results", default=None, help="folder storing each finished run (resumable)")
    p.add_argument("--json", action="store_true", help="print the tables' rows and the checks as JSON")
    p.add_argument("--save", default=None, help="also write all runs to this JSON file (the chapter reads "
                   "book/data/fedhdp_claims.json)")


def run_claims(args: argparse.Namespace) -> int:
    """``fedtrain fedhdp-claims``: the claims' experiment, its tables and checks; returns the exit status."""
    configs = experiment_configs(args.scale, "noniid-digits") + experiment_configs(args.scale, "noniid-digits-skewed")
    rows = run_experiment(configs, args.results, log=lambda s: print(s, file=sys.stderr, flush=True))
    if args.save:
        save_results(rows, args.save, scale=args.scale, command=f"fedtrain fedhdp-claims --scale {args.scale}")
    checks = check_claims(rows)
    tables = {ds: table_rows([r for r in rows if r["config"]["dataset"] == ds])
              for ds in ("noniid-digits", "noniid-digits-skewed")}
    if args.json:
        print(json.dumps(encode({"scale": args.scale, "tables": tables,
                                 "checks": [c.__dict__ for c in checks]})))
        return 0
    for ds, t in tables.items():
        print(format_table(t, title=f"{ds} (scale {args.scale})"), end="\n\n")
    for c in checks:
        print(f"[{'holds' if c.holds else 'FAILS'}] claim {c.claim}: {c.detail}")
    return 0

