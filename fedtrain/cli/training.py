"""``fedtrain run`` and ``fedtrain sweep``: their flags beyond the common ones, the configurations a command line
describes (:func:`fedtrain.cli.configs_from_args`, ``client_configs_from_args``), the training, the table or JSON printed, and
``sweep --preset`` (the book's results store)."""
from __future__ import annotations

import argparse
import itertools
import json
import shlex
import sys
from typing import Any, Sequence

from fedtrain.book_results import compute_preset
from fedtrain.config import RunConfig
from fedtrain.data.files import DatasetCorruptError, DatasetNotFoundError
from fedtrain.encoding import encode
from fedtrain.executors import SweepTaskError
from fedtrain.fedhdp import cli as fedhdp_cli
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.ledger import ADJACENCY, LedgerMismatchError, PrivacyGuaranteeError
from fedtrain.methods.registry import (CLIENT, CLIENT_METHODS, LAMBDA_METHODS, METHOD_REGISTRY, RECORD_METHODS,
                                       option_params)
from fedtrain.params import params_of
from fedtrain.presets import RESULTS_PRESETS, paper_defaults
from fedtrain.results import DEFAULT_WORK_STORE, WORK_DIR, ResultsStore
from fedtrain.sweep import expand_grid, load_config_data, repeat_configs, run_sweep, summarize
from fedtrain.cli.errors import fail
from fedtrain.cli.flags import _ALIASES, _DATA_FIELDS, _common, _exec_type

__all__ = ["configure_run", "configure_sweep", "configs_from_args", "client_configs_from_args", "run_command"]


def configure_run(run: argparse.ArgumentParser) -> None:
    """``fedtrain run``'s flags: the common ones (:mod:`fedtrain.cli.flags`)."""
    _common(run, sweep=False)


def configure_sweep(sw: argparse.ArgumentParser) -> None:
    """``fedtrain sweep``'s flags: the common ones as lists, the dry run, the executor and the presets."""
    _common(sw, sweep=True)
    sw.add_argument("--dry-run", action="store_true", help="validate the grid and print its size; train nothing")
    sw.add_argument("--chunk-size", type=_exec_type("chunk_size"), default=32, help="runs trained (and stored) together: one run_many "
                    "call, one Ray task with --executor ray")
    g = sw.add_argument_group("execution (fedtrain.executors; only this process writes --results)")
    g.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local: the batches one after another here (default); ray: each batch a Ray task")
    g.add_argument("--address", default=None, help="ray: an existing cluster (auto, its GCS address host:6379, or "
                   "ray://host:10001 through Ray Client, part of fedbook[ray]); default: start a local Ray for this "
                   "sweep")
    g.add_argument("--connect-timeout", type=_exec_type("connect_timeout"), default=None, metavar="SECONDS",
                   help="ray: seconds to wait for the cluster at --address before giving up with a message "
                        "(default 20)")
    g.add_argument("--num-cpus", type=_exec_type("num_cpus"), default=None, help="ray: CPUs of the local Ray (default: all)")
    g.add_argument("--retries", type=_exec_type("retries"), default=2, help="ray: re-runs of a failing batch before it is reported "
                   "(default 2)")
    sw.description = ("Sweep a grid of methods of one privacy unit: a record of a silo (" + ", ".join(RECORD_METHODS)
                      + ") or a client (" + ", ".join(CLIENT_METHODS) + "); each flag goes to the methods it applies "
                      "to.")
    _preset_flags(sw)


def _preset_flags(sw: argparse.ArgumentParser) -> None:
    g = sw.add_argument_group("presets (the book's results store; make results)")
    g.add_argument("--preset", default=None, choices=sorted(RESULTS_PRESETS),
                   help="compute every figure of the empirical chapters at the preset's scale "
                        "(fedtrain.presets.RESULTS_PRESETS: 'paper' is the committed store) into --results "
                        f"(default {WORK_DIR}); takes no grid flags; resumable")
    g.add_argument("--pack", default=None, metavar="DIR",
                   help="with --preset: then write the committed store (MANIFEST.json and one .json.gz per "
                        "dataset) to DIR, e.g. results")
    g.add_argument("--only", default=None, metavar="NAMES",
                   help="with --preset: compute only these files (comma-separated: datasets or 'theory')")


def _distinct(name: str, values: list) -> list:
    seen = set()
    for v in values:
        k = repr(v)
        if k in seen:
            flag = _ALIASES.get(name, ("--" + name.replace("_", "-"),))[0]
            why = ("a repeated seed would be counted twice in the mean" if name == "seed" else
                   "the grid would hold the same configurations twice")
            raise ValueError(f"{flag} lists {v!r} more than once; give each value once ({why})")
        seen.add(k)
    return values


def _check_one_unit(methods: list[str]) -> str:
    units = {METHOD_REGISTRY[m].unit for m in methods}
    if len(units) > 1:
        raise ValueError(f"--method mixes privacy units ({', '.join(f'{m}: {METHOD_REGISTRY[m].unit}' for m in methods)}); "
                         "a run or sweep trains methods of one unit (record of a silo, or client)")
    return units.pop()


#: Flags of the client-level methods that mean something only where a group of clients is private.
_PRIVATE_GROUP_ONLY = ("noise_multiplier", "count_noise_per_client", "lam_private", "delta", "accountant")
#: ... and where a group of clients is not private.
_NONPRIVATE_GROUP_ONLY = ("lam_nonprivate",)


def client_configs_from_args(args: argparse.Namespace) -> list[FedHDPConfig]:
    """The validated configurations of a ``run`` or ``sweep`` command line naming methods whose privacy unit is a
    client: per method, the grid of the flags that apply to it (comma-separated lists in ``sweep``), seeds varying
    fastest.  A flag that applies to none of the methods given (a flag of the record-level methods only, an option
    of another method, a private group's flag with no private group) is a ``ValueError`` naming the flag and the
    methods it applies to; in a grid of several methods each flag goes to the methods it applies to."""
    as_list = lambda v: v if isinstance(v, list) else [v]  # noqa: E731
    methods = _distinct("method", as_list(args.method))
    client = params_of(FedHDPConfig)
    options = option_params()
    private = [m for m in CLIENT_METHODS if "private" in METHOD_REGISTRY[m].groups]
    nonprivate = [m for m in CLIENT_METHODS if "nonprivate" in METHOD_REGISTRY[m].groups]
    given: dict[str, list] = {}
    for name in list(params_of(RunConfig)) + list(options) + ["repeats"]:
        if name in _DATA_FIELDS or name in ("method", "seed"):
            continue
        value = getattr(args, name, None)
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        named = ", ".join(map(repr, methods))
        if name in _PRIVATE_GROUP_ONLY and not set(private) & set(methods):
            raise ValueError(f"{flag} applies to the methods with a private group ({', '.join(private)}), not to "
                             f"{named} (no private client, no noise)")
        if name in _NONPRIVATE_GROUP_ONLY and not set(nonprivate) & set(methods):
            raise ValueError(f"{flag} applies to the methods with a non-private group ({', '.join(nonprivate)}), not "
                             f"to {named} (every client private)")
        if name not in client and not (name in options and set(options[name][2]) & set(methods)):
            owners = options[name][2] if name in options else RECORD_METHODS
            unit = "" if name in options else " (privacy unit: a record of a silo)"
            raise ValueError(f"{flag} applies to {', '.join(owners)}{unit}, not to {named} (privacy unit: a client)")
        given[name] = _distinct(name, as_list(value))
    seeds = _distinct("seed", [0] if args.seed is None else as_list(args.seed))
    configs = []
    for method in methods:
        mine = {n: v for n, v in given.items()
                if (n in client or method in options[n][2])
                and not (n in _PRIVATE_GROUP_ONLY and "private" not in METHOD_REGISTRY[method].groups)
                and not (n in _NONPRIVATE_GROUP_ONLY and "nonprivate" not in METHOD_REGISTRY[method].groups)}
        for combo in itertools.product(*mine.values(), seeds):
            fields = dict(zip(mine, combo[:-1]))
            configs.append(FedHDPConfig(dataset=args.dataset, dataset_options=dict(args.dataset_option),
                                        method=method, seed=combo[-1], **fields))
    return configs


def configs_from_args(args: argparse.Namespace) -> list[RunConfig]:
    """The validated grid a ``run``/``sweep`` command line describes (seeds vary fastest), for methods whose privacy
    unit is a record of a silo (:func:`client_configs_from_args`: a client)."""
    if getattr(args, "dataset", None) is None:
        raise ValueError("--dataset is required (fedtrain datasets lists the names)")
    if getattr(args, "method", None) is None:
        raise ValueError("--method is required (one of " + ", ".join(METHOD_REGISTRY) + ")")
    as_list = lambda v: v if isinstance(v, list) else [v]  # noqa: E731
    methods = _distinct("method", as_list(args.method))
    if _check_one_unit(methods) == CLIENT:
        if getattr(args, "command", None) == "sweep":
            return client_configs_from_args(args)  # type: ignore[return-value]
        raise ValueError(f"--method {','.join(methods)}: the privacy unit of these methods is a client; "
                         f"`fedtrain run` and `fedtrain sweep` train them ({', '.join(CLIENT_METHODS)}), "
                         "`fedtrain advise` takes the methods whose unit is a record of a silo "
                         f"({', '.join(RECORD_METHODS)})")
    given: dict[str, list] = {}
    for name in list(params_of(RunConfig)) + list(option_params()):
        if name in _DATA_FIELDS or name == "method":
            continue
        value = getattr(args, name, None)
        if value is not None:
            given[name] = _distinct(name, as_list(value))
    options = option_params()
    if "lam" in given and not set(LAMBDA_METHODS) & set(methods):
        raise ValueError(f"--lam applies to the methods with a lambda ({', '.join(LAMBDA_METHODS)}), not to "
                         f"{', '.join(methods)}; drop --lam")
    for name in given:
        if name in options and not set(options[name][2]) & set(methods):
            raise ValueError(f"--{name.replace('_', '-')} is an option of {', '.join(options[name][2])}, "
                             f"not of the method(s) given ({', '.join(methods)})")
    if "model" in given and set(given["model"]) - set(params_of(RunConfig)["model"][0].choices):
        bad = sorted(set(given["model"]) - set(params_of(RunConfig)["model"][0].choices))
        raise ValueError(f"--model {','.join(bad)} is a model of the client-level methods ({', '.join(CLIENT_METHODS)}); "
                         f"model must be one of {', '.join(map(repr, params_of(RunConfig)['model'][0].choices))} "
                         f"for {', '.join(methods)}")
    configs: list[RunConfig] = []
    for method in methods:
        try:
            base: dict[str, Any] = paper_defaults(args.dataset, method)
        except ValueError:
            base = {}
        mine = set(METHOD_REGISTRY[method].options.__dataclass_fields__)
        base.update(dataset=args.dataset, dataset_options=dict(args.dataset_option), method=method)
        axes = {n: v for n, v in given.items() if n not in options or n in mine}
        if "lam" in axes and not METHOD_REGISTRY[method].uses_lambda:
            axes["lam"] = [0.0]  # lambda only matters for the methods that have one; the others run once
        seeds = axes.pop("seed", [0])
        configs += expand_grid(base, **axes, seed=seeds)
    repeats = getattr(args, "repeats", None)
    if repeats is not None:
        if len(given.get("seed", [])) > 1:
            raise ValueError("--repeats N takes one base seed (--seed T0; repeat r trains with seed T0+1000r), "
                             f"not a seed list (got --seeds {','.join(map(str, given['seed']))})")
        configs = [rc for c in configs for rc in repeat_configs(c, repeats)]
    return configs



def _summary(rows: list, by: Sequence[str]) -> list[dict]:
    out = []
    for entry in summarize(rows, by=by):
        group = [r for r in rows if all(repr(getattr(r.config, b)) == repr(entry[b]) for b in by)]
        res = group[0]
        out.append({
            **{b: entry[b] for b in by},
            "dataset": res.config.dataset,
            "real_data": res.data.get("real"),
            "data_file": res.data.get("file"),
            "data_sha256": res.data.get("sha256"),
            "metric": entry["metric"],
            "mean": entry["mean"],
            "std": entry["std"],
            "ddof": entry["ddof"],
            "n": entry["n"],
            "values": entry["values"],
            "seeds": entry["seeds"],
            "split_seeds": entry["split_seeds"],
            "diverged": entry["diverged"],
            "per_seed": [r.test_metric for r in group],
            "accountant": res.accountant,
            "adjacency": ADJACENCY,
            "delta": res.delta,
            "noise_multipliers": res.noise_multipliers,
            "eps_spent": res.eps_spent,
            "eps_spent_max": entry["eps_spent_max"],
        })
    return out


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list) and not v:
        return "-"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


def _print_table(summary: list[dict], by: Sequence[str], out) -> None:
    cols = [*by, "metric", "mean", "std", "n", "values", "seeds", "split_seeds", "diverged", "eps_spent_max"]
    rows = [[_fmt(s.get(c)) for c in cols] for s in summary]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)), file=out)
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)), file=out)
    if summary:
        s = summary[0]
        if not s["real_data"]:
            src = "synthetic stand-in"
        elif s.get("data_sha256"):  # read from a file: the file and its content's hash
            src = f"real, {s['data_file']}, sha256 {s['data_sha256'][:12]}…"
        else:  # real data a package ships (no file of ours to hash)
            src = f"real, {s.get('data_file') or 'from an installed package'}"
        print(f"data: {s['dataset']} ({src}); accountant: {s['accountant']}; adjacency: {ADJACENCY}", file=out)
        print(f"std: sample standard deviation (ddof={s['ddof']}) over the n runs listed under values", file=out)
    div = sum(len(s["diverged"]) for s in summary)
    if div:
        print(f"warning: {div} run(s) diverged (non-finite metric); they are listed under 'diverged' and left out "
              "of mean and std", file=out)


def run_command(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str], out) -> int:
    """Run ``fedtrain run`` or ``fedtrain sweep`` (``args`` parsed by ``parser`` from ``argv``); print the table or JSON
    to ``out`` and return the exit status (130 on Ctrl-C, the finished runs kept in ``--results``)."""
    if args.command == "sweep" and (args.preset is not None or args.pack is not None or args.only is not None):
        return _preset(parser, args, argv, out)
    if args.command == "sweep" and args.dataset is None:
        parser.error("sweep needs --dataset (or --preset NAME)")
    if args.command == "sweep" and args.results is None:
        args.results = str(DEFAULT_WORK_STORE)
    if args.command == "run" and args.method is not None and METHOD_REGISTRY[args.method].unit == CLIENT:
        try:
            store = ResultsStore(args.results) if args.results is not None else None
            return fedhdp_cli.run_configs(client_configs_from_args(args), args.data_dir, args.json, out, store)
        except (ValueError, DatasetNotFoundError, DatasetCorruptError, FileNotFoundError) as exc:
            fail("fedtrain", exc, 2)
    store = None
    configs: list[RunConfig] = []
    try:
        configs = configs_from_args(args)
        if args.command == "sweep" and args.dry_run:
            return _dry_run(configs, args, out)
        store = ResultsStore(args.results) if args.results else None
        executor, options = _executor(args)
        rows = run_sweep(configs, store=store, data_dir=args.data_dir, progress=args.progress,
                         chunk_size=getattr(args, "chunk_size", 32), executor=executor, executor_options=options)
    except (ValueError, ImportError, DatasetNotFoundError, DatasetCorruptError) as exc:
        fail("fedtrain", exc, 2)
    except (SweepTaskError, LedgerMismatchError, PrivacyGuaranteeError) as exc:
        fail("fedtrain", exc, 1)
    except OSError as exc:  # the file system refused something outside the store (which names its own files)
        fail("fedtrain", exc, 1)
    except KeyboardInterrupt:
        print(_interrupted(store, configs), file=sys.stderr)
        return 130
    if configs and configs[0].spec.unit == CLIENT:
        return fedhdp_cli.print_sweep(rows, args.json, out, args.results)
    by = ["method", "eps", "lam", "lr"]
    by += [n for n in list(params_of(RunConfig)) + list(option_params())
           if n not in by and n not in ("seed", *_DATA_FIELDS)
           and len({repr(getattr(c, n)) for c in configs}) > 1]
    summary = _summary(rows, by)
    if args.json:
        payload: Any = summary[0] if args.command == "run" else {"runs": len(rows), "results": str(args.results),
                                                                 "summary": summary}
        print(json.dumps(encode(payload), allow_nan=False), file=out)
    else:
        _print_table(summary, by, out)
    return 0


def _dry_run(configs: list[RunConfig], args: argparse.Namespace, out) -> int:
    """``sweep --dry-run``: validate every configuration against its data too (model, δ rule, cluster count); train
    nothing."""
    loaded: dict[str, Any] = {}
    for c in configs:
        key = json.dumps([c.dataset, encode(dict(c.dataset_options))], sort_keys=True)
        if key not in loaded:
            loaded[key] = load_config_data(c, args.data_dir)
        c.spec.validator(c, loaded[key])  # the privacy unit's validator (registry)
    print(json.dumps({"runs": len(configs)}) if args.json else f"{len(configs)} runs, all valid", file=out)
    return 0


def _executor(args: argparse.Namespace) -> tuple[str, dict]:
    """The executor a command line names and its options (``--address`` etc. only with ``--executor ray``)."""
    executor, options = getattr(args, "executor", "local"), {}
    if executor == "ray":
        options = {k: v for k, v in (("address", args.address), ("num_cpus", args.num_cpus),
                                     ("retries", args.retries), ("connect_timeout", args.connect_timeout))
                   if v is not None}
    elif args.command == "sweep" and (args.address is not None or args.num_cpus is not None
                                      or args.connect_timeout is not None):
        raise ValueError("--address, --num-cpus and --connect-timeout apply to --executor ray")
    return executor, options


def _interrupted(store: "ResultsStore | None", configs: list[RunConfig]) -> str:
    """The one line printed on Ctrl-C: how many runs are saved where, or that nothing was."""
    if store is None:
        return "fedtrain: interrupted; nothing was saved (pass --results DIR to keep finished runs and resume)"
    stored = store.config_keys()
    done = sum(k in stored for k in {c.key() for c in configs})
    return (f"fedtrain: interrupted; {done} of {len({c.key() for c in configs})} runs are saved in "
            f"{store.root}; run the same command again to resume")


def _preset(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str], out) -> int:
    """``fedtrain sweep --preset NAME [--results WORK] [--pack DIR] [--only NAMES] [--dry-run]``."""
    if args.preset is None:
        parser.error("--pack and --only go with --preset NAME")
    grid_flags = [a.split("=")[0] for a in argv if a.startswith("--") and a.split("=")[0] not in (
        "--preset", "--pack", "--only", "--results", "--dry-run", "--json", "--progress", "--no-progress",
        "--chunk-size", "--executor", "--address", "--num-cpus", "--retries", "--connect-timeout")]
    if grid_flags or args.dataset_option:
        parser.error(f"--preset {args.preset} defines the whole grid (fedtrain.presets.RESULTS_PRESETS); drop "
                     f"{', '.join(grid_flags) or '-D'}")
    names = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    command = "fedtrain " + " ".join(shlex.quote(a) for a in argv)
    options = {k: v for k, v in (("address", args.address), ("num_cpus", args.num_cpus),
                                 ("connect_timeout", args.connect_timeout)) if v is not None}
    if options and args.executor != "ray":
        parser.error("--address, --num-cpus and --connect-timeout apply to --executor ray")
    if args.executor == "ray" and args.retries is not None:
        options["retries"] = args.retries
    try:
        res = compute_preset(args.preset, work=args.results or WORK_DIR, pack=args.pack, names=names,
                             command=command, progress=args.progress, chunk_size=max(int(args.chunk_size), 1),
                             dry_run=args.dry_run, executor=args.executor, executor_options=options or None)
    except (ValueError, ImportError) as exc:
        fail("fedtrain", exc, 2)
    except (SweepTaskError, LedgerMismatchError, PrivacyGuaranteeError) as exc:
        fail("fedtrain", exc, 1)
    except KeyboardInterrupt:
        print(f"fedtrain: interrupted; finished runs are saved in {args.results or WORK_DIR}; run the same command "
              "again to resume", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(encode(res), allow_nan=False), file=out)
    elif args.dry_run:
        print(f"{res['rows']} runs: " + ", ".join(f"{k} {v}" for k, v in res["files"].items()), file=out)
    else:
        print(f"{res['rows']} runs ({res['computed']} computed now, {res['seconds']:.0f} s)" +
              (f"; committed store written to {args.pack}: " + ", ".join(
                  f"{k} ({v['rows']} rows, {v['bytes'] / 1e6:.2f} MB)" for k, v in res["files"].items())
               if res["files"] else ""), file=out)
    return 0

