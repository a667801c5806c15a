"""Command line: ``fedtrain run``, ``fedtrain sweep``, ``fedtrain datasets`` and the subcommands registered with
:func:`register_command` (also ``python -m fedtrain``).

The package holds one module a job: :mod:`fedtrain.cli.errors` (short errors), :mod:`fedtrain.cli.flags` (the flags
the training subcommands share), :mod:`fedtrain.cli.training` (``run`` and ``sweep``: configurations from the flags,
training, output, presets); this module builds the parser and dispatches.

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
import sys
from typing import Callable, Sequence

from fedtrain import advise, grids
from fedtrain.data.files import DatasetCorruptError, DatasetNotFoundError
from fedtrain.data.registry import DATASET_DESCRIPTIONS, DATASETS, REAL_DATASETS
from fedtrain.fedhdp import cli as fedhdp_cli
from fedtrain.methods.registry import LAMBDA_METHODS, methods_table
from fedtrain.cli.errors import ErrorParser, fail
from fedtrain.cli.flags import REPEATS, _bare_seed_count, _common, _join_negative_values
from fedtrain.cli.training import (  # noqa: F401  (_common, _summary, _print_table: for fedtrain.federate.command)
    _print_table, _summary, client_configs_from_args, configs_from_args, configure_run, configure_sweep, run_command)

__all__ = ["main", "build_parser", "configs_from_args", "register_command", "fail", "ErrorParser", "LAMBDA_METHODS"]


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
    "grid": ("compute (resumable, one run at a time), count (--status) or pack (--pack DIR) a real-image grid or "
             "FedHDP's claims-fashion grid", grids.configure_parser, grids.run),
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


def build_parser() -> argparse.ArgumentParser:
    """The ``fedtrain`` parser: ``run``, ``sweep``, ``datasets`` and every subcommand of :data:`_COMMANDS`."""
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
    configure_run(run)
    configure_sweep(sub.add_parser("sweep", help="grid over any fields (comma-separated lists) and seeds (resumable)"))
    sub.add_parser("datasets", help="list the dataset names")
    for name, (help_text, configure, _) in _COMMANDS.items():
        configure(sub.add_parser(name, help=help_text))
    return p


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
    return run_command(parser, args, argv, out)


from fedtrain.federate.command import install as _federate; _federate(sys.modules[__name__])  # noqa: E402,E702  `fedtrain federate`
