"""Command line: ``fedtrain run``, ``fedtrain sweep`` and ``fedtrain datasets`` (also ``python -m fedtrain``).

One parser for every method of the registry (:mod:`fedtrain.methods.registry`), whatever its privacy unit:
``fedtrain run --help`` lists every method with its privacy unit and its options.  A method whose unit is a
record of a silo runs on the cross-silo engine (:class:`~fedtrain.config.RunConfig`); one whose unit is a client
(FedHDP and its baselines) on the client-level trainer (:class:`~fedtrain.clientdp.config.FedHDPConfig`,
:mod:`fedtrain.fedhdp.cli`).  A flag that does not apply to the chosen method is an error naming the flag and the
methods it applies to (``--ratio`` with ``dp-fedavg``, ``--eps`` with ``fedhdp``, ``--num-clusters`` with
``fedavg``, ``--lam`` with ``local``, ``--noise-multiplier`` with ``nonprivate``).

Errors are at most three lines on stderr, the error first (``fedtrain run: error: argument --eps: ...``), then
where the flags are listed; no usage block (:class:`ErrorParser`, the class of every subcommand's parser, those
added with :func:`register_command` included; :func:`fail`).  Numbers are read as the field declares
(:mod:`fedtrain.params`): a number beyond the largest float (``--eps 1e309``) is an error, never read as
``inf``; only the word ``inf`` means infinity.  An empty item of a list (``--eps 1,,2``) is an error.

Examples::

    fedtrain run --dataset school --method mrmtl --eps 6 --lam 0.3 --lr 0.01 --rounds 200 --seeds 0,1,2 --json
    fedtrain sweep --dataset vehicle-standin --method local,fedavg,mrmtl --eps 0.5,1,inf \\
        --lam 0.01,0.1,1 --lr 0.01 --seeds 0,1 --results fedtrain-results/
    fedtrain run --dataset school-standin --method ifca --num-clusters 2 --select-eps-frac 0.05 --eps 6
    fedtrain run --dataset school --method local --eps inf --repeats 5 --json
    fedtrain sweep --dataset school --method mrmtl --eps 1,6 --lam 0.1,1 --seeds 0,1 --executor ray --num-cpus 2
    fedtrain run --dataset noniid-digits --method fedhdp --ratio 0.05 --lam-private 0.005 --lam-nonprivate 0.005 --json

Every field of :class:`~fedtrain.config.RunConfig` and every method option of the method registry
has a flag, generated with its valid range and default from the field's declaration
(:mod:`fedtrain.params`); ``fedtrain run --help`` lists them.  In ``sweep`` every flag takes a
comma-separated list and the lists make a grid (seeds vary fastest); λ is used only by the methods
that have one, and a method option only by the methods that have it.  Settings not given come from the
paper's per-dataset defaults (App. C.4: rounds, batch size, clip, δ), for stand-ins those of the dataset
they imitate, else from :class:`~fedtrain.config.RunConfig`'s defaults.  ``--eps inf`` is the
non-private baseline; negative values may be written ``--lam -1`` or ``--lam=-1`` (both are parsed,
and rejected with the valid range).  Privacy is silo-specific sample-level DP under add/remove-one
adjacency, certified per silo by ``--accountant``.  A run whose metric is not finite is reported as
diverged and left out of the mean.

Seeds and repeats.  ``--seeds 0,1,2`` is an explicit list of training seeds, all on the one data split
that the dataset options name (the spread is then the training noise alone); a bare ``--seeds N``
(one value, no comma) is rejected, pointing to ``--repeats`` (``--seed N`` runs the one seed N).
``--repeats N`` runs the paper's protocol: repeat r re-splits every silo with split seed ``s0 + 1000 r`` and
trains with seed ``t0 + 1000 r`` (the stride of the paper's code) (``s0``: the ``-D`` split seed, default 0; ``t0``: ``--seed``, default 0;
:func:`fedtrain.sweep.repeat_config`); each repeat is its own row of the results store.  The output
gives ``mean``, ``std`` (sample standard deviation, ``ddof`` = 1), ``n`` and each run's value
(``values``, with ``seeds`` and ``split_seeds``).  Ctrl-C stops a sweep: finished runs stay in ``--results`` and
re-running the same command resumes.

Sweeps beyond one machine: ``fedtrain sweep --executor ray`` runs each batch of ``--chunk-size`` runs as a
Ray task, on a local Ray started for the sweep (``--num-cpus``, default all) or on a cluster
(``--address``); a failing batch is retried ``--retries`` times, then reported after the others are stored
(exit status 1); this process alone writes ``--results`` (:mod:`fedtrain.executors`).

Other programs may add subcommands with :func:`register_command`.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import re
import sys
from typing import Any, Callable, NoReturn, Sequence

from fedtrain import advise
from fedtrain.config import RunConfig
from fedtrain.data.files import DatasetCorruptError, DatasetNotFoundError
from fedtrain.encoding import encode
from fedtrain.fedhdp import cli as fedhdp_cli
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.methods.registry import (CLIENT, CLIENT_METHODS, LAMBDA_METHODS, METHOD_REGISTRY, METHODS, RECORD_METHODS,
                                       methods_table, option_params)
from fedtrain.params import Param, add_flag, params_of
from fedtrain.presets import RESULTS_PRESETS, paper_defaults
from fedtrain.results import DEFAULT_WORK_STORE, WORK_DIR, ResultsStore
from fedtrain.book_results import compute_preset
from fedtrain.data.registry import DATASETS, DATASET_DESCRIPTIONS, REAL_DATASETS
from fedtrain.executors import SweepTaskError
from fedtrain.ledger import LedgerMismatchError, PrivacyGuaranteeError
from fedtrain.sweep import expand_grid, load_config_data, repeat_configs, run_sweep, summarize

__all__ = ["main", "build_parser", "configs_from_args", "register_command", "fail", "ErrorParser", "LAMBDA_METHODS"]

from fedtrain.ledger import ADJACENCY  # noqa: E402  (the notion every result is certified for)
#: Fields with flags of their own (the data group) rather than generated ones.
_DATA_FIELDS = ("dataset", "dataset_options")
#: Extra flag names of some fields (plural forms used by sweeps).
_ALIASES = {"method": ("--method", "--methods"), "lam": ("--lam", "--lams"), "lr": ("--lr", "--lrs"),
            "eps": ("--eps",), "seed": ("--seeds", "--seed")}
#: ``--repeats``: not a RunConfig field (each repeat is a config of its own), declared the same way.
REPEATS = Param(kind="int", low=1, high=10_000, default_note="1 (one run per seed, on one split)",
                help="repeats of the paper's protocol: repeat r re-splits every silo with split seed s0+1000r and "
                     "trains with seed t0+1000r (s0: the -D split seed, t0: --seed; both default 0)")


#: ``--chunk-size``, ``--num-cpus``, ``--retries``, ``--connect-timeout`` of ``sweep``: checked as the fields are.
_EXEC_PARAMS = {
    "chunk_size": Param(kind="int", low=1, high=1_000_000, help="chunk size"),
    "num_cpus": Param(kind="int", low=1, high=100_000, help="CPUs"),
    "retries": Param(kind="int", low=0, high=1_000, help="retries"),
    "connect_timeout": Param(kind="float", low=0.0, low_open=True, help="seconds"),
}


def _short_lines(message: str, limit: int = 3) -> list[str]:
    """``message`` in at most ``limit`` lines: indented continuation lines (a list of paths, say) joined to the
    line they continue, then whatever is left past the limit joined to the last line."""
    lines: list[str] = []
    for line in str(message).splitlines():
        if not line.strip():
            continue
        if lines and line[:1].isspace():
            lines[-1] += (" " if lines[-1].endswith(":") else ", ") + line.strip()
        else:
            lines.append(line.strip())
    if len(lines) > limit:
        lines = lines[:limit - 1] + [" ".join(lines[limit - 1:])]
    return lines or ["(no message)"]


def fail(prog: str, message: Any, status: int = 2, *, hint: str | None = None) -> "NoReturn":
    """Print ``prog: error: message`` (at most 3 lines, the error first, no usage block) and exit with ``status``.

    ``hint``: a last line (e.g. where the flags are listed) when the message leaves room for it."""
    lines = _short_lines(str(message), 2 if hint else 3)
    lines[0] = f"{prog}: error: {lines[0]}"
    if hint:
        lines.append(hint)
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
    raise SystemExit(status)


class ErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors are short: the error first, then where the flags are listed; no usage block.

    ``add_subparsers`` makes every subcommand's parser of this class too (argparse's default ``parser_class`` is the
    parent's class), so the subcommands added with :func:`register_command` report the same way."""

    def error(self, message: str) -> "NoReturn":  # type: ignore[override]
        fail(self.prog, message, 2, hint=f"({self.prog} --help lists the arguments and their valid values)")


def _configure_advise(p: argparse.ArgumentParser) -> None:
    advise.configure_advise_parser(p, _common)


def _run_advise(args: argparse.Namespace) -> int:
    try:
        return advise.run_advise(args, configs_from_args, sys.stdout)
    except (ValueError, DatasetNotFoundError, DatasetCorruptError) as exc:
        fail("fedtrain advise", exc)


#: Subcommands besides ``run``, ``sweep`` and ``datasets``: name -> (help, configure(parser), handler(args) -> exit
#: status).  The project's own are listed here; :func:`register_command` adds others.
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {
    "advise": ("predict MR-MTL's lambda* from the linear-regression theory (--check: sweep it)",
               _configure_advise, _run_advise),
    "fedhdp-claims": ("FedHDP's claims: on the non-IID digits (--scale, trained, resumable) or a real-image grid "
                      "(--grid, served from its store); tables and checks",
                      fedhdp_cli.configure_claims_parser, fedhdp_cli.run_claims),
}


def register_command(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None],
                     handler: Callable[[argparse.Namespace], int]) -> None:
    """Add a ``fedtrain <name>`` subcommand: ``configure(parser)`` adds its arguments, ``handler(args)`` runs
    it and returns the exit status.  The parser is an :class:`ErrorParser` (its argument errors are short); a
    ``ValueError`` or a missing file raised by ``handler`` is reported as ``fedtrain <name>: error: ...`` in at most
    three lines (:func:`fail`)."""
    if name in ("run", "sweep", "datasets"):
        raise ValueError(f"subcommand {name!r} is built in")
    _COMMANDS[name] = (help, configure, handler)


def _option(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--dataset-option needs KEY=VALUE (got {text!r})")
    key, value = text.split("=", 1)

    def finite(number: str) -> float:
        v = float(number)
        if not math.isfinite(v):  # "1e400" would be read as inf
            raise argparse.ArgumentTypeError(f"{key.strip()}={value}: {number} is beyond the largest "
                                             f"float {sys.float_info.max:.4g}")
        return v

    def constant(word: str) -> Any:
        raise argparse.ArgumentTypeError(f"{key.strip()}={value}: {word} is not a valid option value")

    try:
        parsed = json.loads(value, parse_float=finite, parse_constant=constant)
    except json.JSONDecodeError:
        parsed = value
    if isinstance(parsed, int) and not isinstance(parsed, bool) and abs(parsed) >= 2**53:
        raise argparse.ArgumentTypeError(f"{key.strip()}={value}: integers must be below 2^53")
    return key.strip(), parsed


def _common(p: argparse.ArgumentParser, *, sweep: bool) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--dataset", required=not sweep, choices=DATASETS,
                   help="dataset name (real or stand-in)" + ("; required unless --preset" if sweep else ""))
    g.add_argument("--data-dir", default=None, help="folder holding the real .mat files; when given, the file "
                   "must be there (no fall-back). Default: $FEDBOOK_DATA_DIR, then ../shared/data")
    g.add_argument("--dataset-option", "-D", action="append", type=_option, default=[], metavar="KEY=VALUE",
                   help="loader option, e.g. test_fraction=0.5 or tau=0.3 (repeatable; split seed: seed=1)")
    title = ("configuration (RunConfig and FedHDPConfig fields" +
             ("; comma-separated lists make a grid)" if sweep else ")"))
    g = p.add_argument_group(title)
    client = params_of(FedHDPConfig)
    for name, (prm, default) in params_of(RunConfig).items():
        if name in _DATA_FIELDS:
            continue
        extra = "; used by " + ", ".join(LAMBDA_METHODS) + " only" if name == "lam" else ""
        if name == "method":  # every registered method, whatever its privacy unit
            prm = dataclasses.replace(prm, choices=METHODS, help="federated method (see the methods above)")
        elif name in client:  # shared by both units: parsed as either declares, validated by the method's config
            cprm, cdefault = client[name]
            if prm.kind == "choice":
                prm = dataclasses.replace(prm, choices=prm.choices + tuple(c for c in cprm.choices
                                                                           if c not in prm.choices))
            extra += (f" (a method whose privacy unit is a client: {cprm.help}, {cprm.range_text()}, default "
                      f"{cdefault!r}; below: the record-level methods')")
        else:
            extra += f" [privacy unit record only: {', '.join(RECORD_METHODS)}]"
        add_flag(g, name, prm, default, as_list=sweep or name == "seed", flags=_ALIASES.get(name, ()),
                 extra_help=extra)
    add_flag(g, "repeats", REPEATS, 1, as_list=False)
    g = p.add_argument_group("method options (each used by the methods named in its help)")
    for name, (prm, default, methods) in option_params().items():
        add_flag(g, name, prm, default, as_list=sweep, extra_help=f" [{', '.join(methods)}]")
    g = p.add_argument_group("output")
    g.add_argument("--results", default=None,
                   help="results store folder, checked to be writable before training" +
                   (f" (default ./{DEFAULT_WORK_STORE}; never the committed store results/, which sweeps only "
                    f"read; with --preset, the working stores, default {WORK_DIR})"
                    if sweep else " (optional: store the runs there)"))
    g.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    g.add_argument("--progress", dest="progress", action="store_true", default=None, help="force progress bars")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars")


def _exec_type(name: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return _EXEC_PARAMS[name].parse(name, text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = ErrorParser(prog="fedtrain", description="Private, personalized cross-silo training "
                                "(silo-specific sample-level DP-SGD).",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("Examples::")[1].split("Every field")[0])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train one configuration over one or more seeds",
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         description="Train one configuration over one or more seeds. Every configuration field and "
                                     "method option has a flag below, with its valid range and default; a flag that "
                                     "does not apply to the chosen method is an error.\n\nMethods, by privacy "
                                     "unit (fedtrain.methods.registry):\n" + methods_table())
    _common(run, sweep=False)
    sw = sub.add_parser("sweep", help="grid over any fields (comma-separated lists) and seeds (resumable)")
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
    sub.add_parser("datasets", help="list the dataset names")
    sw.description = ("Sweep a grid of methods of one privacy unit: a record of a silo (" + ", ".join(RECORD_METHODS)
                      + ") or a client (" + ", ".join(CLIENT_METHODS) + "); each flag goes to the methods it applies "
                      "to.")
    for name, (help_text, configure, _) in _COMMANDS.items():
        configure(sub.add_parser(name, help=help_text))
    _preset_flags(sw)
    return p


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
                and not (n in _PRIVATE_GROUP_ONLY and "private" not in METHOD_REGISTRY[method].groups)}
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


def _bare_seed_count(argv: Sequence[str]) -> str | None:
    """The value of a ``--seeds N`` written with one integer and no comma (taken for a count), else ``None``."""
    for i, a in enumerate(argv):
        if a == "--seeds" and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith("--seeds="):
            value = a.split("=", 1)[1]
        else:
            continue
        if "," not in value and value.strip().isdigit() and int(value) < 2**53:
            return value.strip()
    return None


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


_NUMBERISH = re.compile(r"^-(\d|\.\d|inf|infinity|nan)[^=]*$", re.IGNORECASE)


def _join_negative_values(argv: list[str]) -> list[str]:
    """``--eps -inf`` → ``--eps=-inf`` (argparse would read ``-inf`` as an option), for every flag with a value."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and "=" not in a and i + 1 < len(argv) and _NUMBERISH.match(argv[i + 1]):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fedtrain`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    argv = _join_negative_values(argv)
    bare = _bare_seed_count(argv)
    if bare is not None:
        repeats = (f", or --repeats {int(bare)} for {int(bare)} repeats that re-split the data (the paper's protocol)"
                   if REPEATS.low <= int(bare) <= REPEATS.high else "")
        fail("fedtrain", f"--seeds {bare} is a list of one seed, not a count: write --seed {bare} to run that one "
                         f"seed, --seeds 0,1,... for a seed list on one split{repeats}")
    args = parser.parse_args(argv)
    out = sys.stdout
    if args.command == "datasets":
        for name in DATASETS:
            fallback = "real (needs its data file)" if name in REAL_DATASETS else "synthetic"
            print(f"{name}\t{DATASET_DESCRIPTIONS.get(name, fallback)}", file=out)
        return 0
    if args.command in _COMMANDS:
        try:
            return int(_COMMANDS[args.command][2](args))
        except (ValueError, DatasetNotFoundError, DatasetCorruptError, FileNotFoundError) as exc:
            fail(f"fedtrain {args.command}", exc)
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
            loaded: dict[str, Any] = {}
            for c in configs:  # validate against the data too (model, δ rule, cluster count), train nothing
                key = json.dumps([c.dataset, encode(dict(c.dataset_options))], sort_keys=True)
                if key not in loaded:
                    loaded[key] = load_config_data(c, args.data_dir)
                c.spec.validator(c, loaded[key])  # the privacy unit's validator (registry)
            print(json.dumps({"runs": len(configs)}) if args.json else f"{len(configs)} runs, all valid", file=out)
            return 0
        store = ResultsStore(args.results) if args.results else None
        executor, options = getattr(args, "executor", "local"), {}
        if executor == "ray":
            options = {k: v for k, v in (("address", args.address), ("num_cpus", args.num_cpus),
                                         ("retries", args.retries), ("connect_timeout", args.connect_timeout))
                       if v is not None}
        elif args.command == "sweep" and (args.address is not None or args.num_cpus is not None
                                          or args.connect_timeout is not None):
            raise ValueError("--address, --num-cpus and --connect-timeout apply to --executor ray")
        rows = run_sweep(configs, store=store, data_dir=args.data_dir, progress=args.progress,
                         chunk_size=getattr(args, "chunk_size", 32), executor=executor, executor_options=options)
    except (ValueError, ImportError, DatasetNotFoundError, DatasetCorruptError) as exc:
        fail("fedtrain", exc, 2)
    except (SweepTaskError, LedgerMismatchError, PrivacyGuaranteeError) as exc:
        fail("fedtrain", exc, 1)
    except OSError as exc:  # the file system refused something outside the store (which names its own files)
        fail("fedtrain", exc, 1)
    except KeyboardInterrupt:
        if store is not None:
            stored = store.config_keys()
            done = sum(k in stored for k in {c.key() for c in configs})
            msg = (f"fedtrain: interrupted; {done} of {len({c.key() for c in configs})} runs are saved in "
                   f"{store.root}; run the same command again to resume")
        else:
            msg = "fedtrain: interrupted; nothing was saved (pass --results DIR to keep finished runs and resume)"
        print(msg, file=sys.stderr)
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


def _preset(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str], out) -> int:
    """``fedtrain sweep --preset NAME [--results WORK] [--pack DIR] [--only NAMES] [--dry-run]``."""
    import shlex

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

from fedtrain.federate.command import install as _federate; _federate(sys.modules[__name__])  # noqa: E402,E702  `fedtrain federate`
