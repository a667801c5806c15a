"""Command line: ``fedtrain run``, ``fedtrain sweep`` and ``fedtrain datasets`` (also ``python -m fedtrain``).

Examples::

    fedtrain run --dataset school --method mrmtl --eps 6 --lam 0.3 --lr 0.01 --rounds 200 --seeds 0,1,2 --json
    fedtrain sweep --dataset vehicle-standin --method local,fedavg,mrmtl --eps 0.5,1,inf \\
        --lam 0.01,0.1,1 --lr 0.01 --seeds 0,1 --results results/

Settings not given on the command line come from the paper's per-dataset defaults (App. C.4: rounds,
batch size, clip, δ), for stand-ins those of the dataset they imitate, else from
:class:`~fedtrain.config.RunConfig`'s defaults.  ``--eps inf`` is the non-private baseline.  Privacy is
silo-specific sample-level DP under add/remove-one adjacency, certified per silo by ``--accountant``.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any, Sequence

from fedtrain.config import ACCOUNTANTS, AGGREGATIONS, METHODS, PROX_MODES, RunConfig, paper_defaults
from fedtrain.results import DEFAULT_RESULTS_DIR, ResultsStore, jsonable

__all__ = ["main", "build_parser", "configs_from_args"]

#: Methods with a regularization strength λ (the others ignore ``--lam``).
LAMBDA_METHODS = ("mrmtl", "ditto", "mocha", "ifca-mrmtl")
ADJACENCY = "add/remove-one record of the silo (silo-specific sample-level DP)"


def _list(kind, name: str):
    def parse(text: str) -> list:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{name} needs at least one value")
        out = []
        for t in items:
            try:
                out.append(kind(t))
            except ValueError:
                raise argparse.ArgumentTypeError(f"{name}: {t!r} is not a valid value") from None
        return out
    return parse


def _eps(t: str) -> float:
    return math.inf if t.lower() in ("inf", "infinity", "none") else float(t)


def _seed(t: str) -> int:
    v = int(t)
    if v < 0:
        raise ValueError
    return v


def _method(t: str) -> str:
    if t not in METHODS:
        raise argparse.ArgumentTypeError(f"method must be one of {', '.join(METHODS)} (got {t!r})")
    return t


def _option(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--dataset-option needs KEY=VALUE (got {text!r})")
    key, value = text.split("=", 1)
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return key.strip(), parsed


def _common(p: argparse.ArgumentParser, *, sweep: bool) -> None:
    from fedtrain.data.registry import DATASETS

    g = p.add_argument_group("data")
    g.add_argument("--dataset", required=True, choices=DATASETS, help="dataset name (real or stand-in)")
    g.add_argument("--data-dir", default=None, help="folder holding the real .mat files (else $FEDBOOK_DATA_DIR, "
                   "../shared/data)")
    g.add_argument("--dataset-option", "-D", action="append", type=_option, default=[], metavar="KEY=VALUE",
                   help="loader option, e.g. test_fraction=0.5 or tau=0.3 (repeatable; split seed: seed=1)")
    g = p.add_argument_group("method and privacy" + (" (comma-separated lists make a grid)" if sweep else ""))
    plural = " (comma-separated list)" if sweep else ""
    g.add_argument("--method", "--methods", dest="method", required=True,
                   type=_list(_method, "--method") if sweep else _method,
                   help=f"one of {', '.join(METHODS)}{plural}")
    g.add_argument("--eps", type=_list(_eps, "--eps") if sweep else _eps, default=[math.inf] if sweep else math.inf,
                   help=f"per-silo target epsilon, 'inf' = non-private{plural} (default inf)")
    g.add_argument("--delta", type=float, default=None, help="per-silo delta (default: the paper's for the dataset)")
    g.add_argument("--lam", "--lams", dest="lam", type=_list(float, "--lam") if sweep else float,
                   default=[0.0] if sweep else 0.0, help=f"lambda of MR-MTL/Ditto/Mocha{plural} (default 0)")
    g.add_argument("--lr", "--lrs", dest="lr", type=_list(float, "--lr") if sweep else float,
                   default=[0.01] if sweep else 0.01, help=f"client learning rate{plural} (default 0.01)")
    g.add_argument("--seeds", type=_list(_seed, "--seeds"), default=[0], help="training seeds, e.g. 0,1,2 (default 0)")
    g.add_argument("--accountant", choices=ACCOUNTANTS, default="rdp", help="privacy accountant (default rdp)")
    g = p.add_argument_group("training (defaults: the paper's settings for the dataset)")
    g.add_argument("--rounds", type=int, default=None, help="communication rounds T")
    g.add_argument("--batch-size", type=int, default=None, help="expected Poisson batch size B")
    g.add_argument("--clip", type=float, default=None, help="per-example clipping norm c")
    g.add_argument("--local-epochs", type=int, default=None, help="DP-SGD epochs per round")
    g.add_argument("--prox-mode", choices=PROX_MODES, default=None)
    g.add_argument("--aggregation", choices=AGGREGATIONS, default=None)
    g.add_argument("--finetune-frac", type=float, default=None)
    g.add_argument("--num-clusters", type=int, default=None)
    g.add_argument("--select-frac", type=float, default=None)
    g.add_argument("--eval-every", type=int, default=None, help="record the test metric every that many rounds")
    g.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    g = p.add_argument_group("output")
    g.add_argument("--results", default=None if not sweep else str(DEFAULT_RESULTS_DIR),
                   help="results store folder" + (f" (default {DEFAULT_RESULTS_DIR})" if sweep else
                                                  " (optional: store the runs there)"))
    g.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    g.add_argument("--progress", dest="progress", action="store_true", default=None, help="force progress bars")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fedtrain", description="Private, personalized cross-silo training "
                                "(silo-specific sample-level DP-SGD).",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("Examples::")[1])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train one configuration over one or more seeds")
    _common(run, sweep=False)
    sw = sub.add_parser("sweep", help="grid over methods, eps, lambda, learning rate and seeds (resumable)")
    _common(sw, sweep=True)
    sw.add_argument("--dry-run", action="store_true", help="validate the grid and print its size; train nothing")
    sw.add_argument("--chunk-size", type=int, default=32, help="runs trained (and stored) together")
    sub.add_parser("datasets", help="list the dataset names")
    from fedtrain.advise import add_advise_parser

    add_advise_parser(sub, _common)
    return p


def configs_from_args(args: argparse.Namespace) -> list[RunConfig]:
    """The validated grid a ``run``/``sweep`` command line describes (seeds vary fastest)."""
    from fedtrain.sweep import expand_grid

    try:
        base: dict[str, Any] = paper_defaults(args.dataset)
    except ValueError:
        base = {}
    base.update(dataset=args.dataset, dataset_options=dict(args.dataset_option), accountant=args.accountant,
                device=args.device)
    for name in ("delta", "rounds", "batch_size", "clip", "local_epochs", "prox_mode", "aggregation",
                 "finetune_frac", "num_clusters", "select_frac", "eval_every"):
        value = getattr(args, name)
        if value is not None:
            base[name] = value
    as_list = lambda v: v if isinstance(v, list) else [v]  # noqa: E731
    configs: list[RunConfig] = []
    for method in as_list(args.method):
        # lambda only matters for the methods that have one; the others run once (lam = 0)
        lams = as_list(args.lam) if method in LAMBDA_METHODS else [0.0]
        configs += expand_grid({**base, "method": method}, eps=as_list(args.eps), lam=lams, lr=as_list(args.lr),
                               seed=args.seeds)
    return configs


def _summary(rows: list[dict], by=("method", "eps", "lam", "lr")) -> list[dict]:
    from fedtrain.sweep import summarize

    out = []
    for entry in summarize(rows, by=by):
        group = [r for r in rows if all(r["config"].get(b) == entry[b] for b in by)]
        res = group[0]["result"]
        out.append({
            **{b: entry[b] for b in by},
            "dataset": group[0]["config"]["dataset"],
            "real_data": group[0]["dataset"].get("real"),
            "metric": entry["metric"],
            "mean": entry["mean"],
            "std": entry["std"],
            "seeds": entry["seeds"],
            "per_seed": [r["result"]["test_metric"] for r in group],
            "accountant": res.get("accountant"),
            "adjacency": ADJACENCY,
            "delta": res.get("delta"),
            "noise_multipliers": res.get("noise_multipliers"),
            "eps_spent": res.get("eps_spent"),
            "eps_spent_max": entry["eps_spent_max"],
        })
    return out


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _print_table(summary: list[dict], out) -> None:
    cols = ["method", "eps", "lam", "lr", "metric", "mean", "std", "seeds", "eps_spent_max"]
    rows = [[_fmt(s.get(c)) for c in cols] for s in summary]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)), file=out)
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)), file=out)
    if summary:
        s = summary[0]
        print(f"data: {s['dataset']} ({'real' if s['real_data'] else 'synthetic stand-in'}); accountant: "
              f"{s['accountant']}; adjacency: {ADJACENCY}", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fedtrain`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    out = sys.stdout
    if args.command == "datasets":
        from fedtrain.data.registry import DATASETS, REAL_DATASETS

        for name in DATASETS:
            print(f"{name}\t{'real (needs the .mat file)' if name in REAL_DATASETS else 'synthetic'}", file=out)
        return 0
    from fedtrain.data.files import DatasetCorruptError, DatasetNotFoundError
    from fedtrain.sweep import run_sweep

    try:
        if args.command == "advise":
            from fedtrain.advise import run_advise

            return run_advise(args, configs_from_args, out)
        configs = configs_from_args(args)
        if args.command == "sweep" and args.dry_run:
            print(json.dumps({"runs": len(configs)}) if args.json else f"{len(configs)} runs, all valid", file=out)
            return 0
        store = ResultsStore(args.results) if args.results else None
        rows = run_sweep(configs, store=store, data_dir=args.data_dir, progress=args.progress,
                         chunk_size=getattr(args, "chunk_size", 32))
    except (ValueError, DatasetNotFoundError, DatasetCorruptError) as exc:
        parser.exit(2, f"fedtrain: error: {exc}\n")
    summary = _summary(rows)
    if args.json:
        payload: Any = summary[0] if args.command == "run" else {"runs": len(rows), "results": str(args.results),
                                                                 "summary": summary}
        print(json.dumps(jsonable(payload), allow_nan=False), file=out)
    else:
        _print_table(summary, out)
    return 0
