"""``fedtrain federate``: ``fedtrain run``'s flags and JSON output, trained by a federation of processes on Flower.

Examples::

    fedtrain federate --dataset school --method mrmtl --eps 1 --lam 1 --rounds 3 --seed 0 --nodes 3 --json
    fedtrain federate --dataset school --method mrmtl --eps 1 --lam 1 --rounds 3 --seed 0 --nodes 3 --simulation

Without ``--simulation``: a SuperLink and ``--nodes`` SuperNodes on 127.0.0.1, insecure (no TLS; loopback only),
each SuperNode serving a block of silos; with it, Flower's simulation engine.  Every process started is stopped
at the end, on an error and on Ctrl-C.  Errors are one line naming the argument.

:func:`install` registers the command with the ``fedtrain`` CLI it is given (:mod:`fedtrain.cli` calls it with
itself), whose ``run`` flags, configuration parsing and output it reuses; the training modules (torch) load only
when the command runs.
"""
from __future__ import annotations

import argparse
import json
import sys
from types import ModuleType

from fedtrain.data.files import DatasetCorruptError, DatasetNotFoundError
from fedtrain.data.registry import load_dataset
from fedtrain.encoding import encode
from fedtrain.federate import FEDERATED_METHODS
from fedtrain.federate.launcher import FederationError, deploy, simulate
from fedtrain.ledger import PrivacyGuaranteeError, check_spent

__all__ = ["install", "configure", "handle", "federate_config"]

#: The ``fedtrain`` CLI module the command was installed into (:func:`install`).
_cli: ModuleType | None = None


def configure(p: argparse.ArgumentParser) -> None:
    """The flags of ``fedtrain run`` plus the federation's."""
    _cli._common(p, sweep=False)
    g = p.add_argument_group("federation (Flower)")
    g.add_argument("--nodes", type=int, default=2, help="SuperNodes, each serving a block of silos (1 to the number "
                   "of silos; default 2)")
    g.add_argument("--simulation", action="store_true", help="Flower's simulation engine instead of processes")
    g.add_argument("--port", type=int, default=None, help="the SuperLink's port on 127.0.0.1 (default: a free one)")
    g.add_argument("--connect-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="seconds to wait for the SuperLink to answer (default 30)")
    g.add_argument("--round-timeout", type=float, default=300.0, metavar="SECONDS",
                   help="seconds a round waits for its SuperNodes; one that does not answer is dropped (default 300)")
    g.add_argument("--timeout", type=float, default=3600.0, metavar="SECONDS", help="limit for the whole run")
    g.add_argument("--private-noise", action="store_true", help="each node seeds its noise from the OS's entropy "
                   "(a real federation; the model then differs from fedtrain run's seeded draw)")


def federate_config(config, data, args):
    """Train one configuration as a federation; the :class:`~fedtrain.engine.RunResult` the server assembled."""
    from fedtrain.engine import RunResult, resolve_budgets  # defers torch until the command runs

    k = data.num_silos
    if not 1 <= args.nodes <= k:
        raise ValueError(f"--nodes must be between 1 and the number of silos of {config.dataset} ({k}) "
                         f"(got {args.nodes})")
    spec = {"config": config.to_dict(), "round_timeout": args.round_timeout}
    if args.simulation:
        out = simulate(spec, args.nodes, data_dir=args.data_dir, timeout=args.timeout)
    else:
        options = [{"private-noise": True}] * args.nodes if args.private_noise else None
        out = deploy(spec, args.nodes, port=args.port, data_dir=args.data_dir, connect_timeout=args.connect_timeout,
                     timeout=args.timeout, node_options=options)
    if out.get("error"):
        raise FederationError(f"the server stopped: {out['error']}")
    result = RunResult.from_dict(out)
    result.config = config
    result.extras = out.get("extras", {})
    reported = result.test_sizes > 0  # a dropped silo's ledger died with its node: nothing to check
    check_spent(result.eps_spent[reported], resolve_budgets(config, data)[0][reported], config.accountant)
    return result


def handle(args: argparse.Namespace) -> int:
    """Run ``fedtrain federate``; print ``fedtrain run``'s output (table or ``--json``) plus ``federation``."""
    from fedtrain.engine import validate  # defers torch until the command runs

    try:
        if args.simulation and args.port is not None:
            raise ValueError("--port applies to a deployment, not to --simulation")
        if args.results is not None:
            raise ValueError("--results: a federated run is not stored in the results store (its key would be that "
                             "of the in-process run); use --json")
        if args.private_noise and args.simulation:
            raise ValueError("--private-noise applies to a deployment, not to --simulation")
        configs = _cli.configs_from_args(args)
        for c in configs:
            if c.method not in FEDERATED_METHODS:
                raise ValueError(f"--method must be one of {', '.join(FEDERATED_METHODS)} for fedtrain federate "
                                 f"(got {c.method!r})")
        data = load_dataset(configs[0].dataset, data_dir=args.data_dir, **dict(configs[0].dataset_options))
        rows = []
        for c in configs:
            validate(c, data)
            rows.append(federate_config(c, data, args))
    except (ValueError, FederationError, DatasetNotFoundError, DatasetCorruptError) as exc:
        print(f"fedtrain federate: error: {exc}", file=sys.stderr)
        return 2
    except PrivacyGuaranteeError as exc:
        print(f"fedtrain federate: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fedtrain federate: interrupted; every process started was stopped", file=sys.stderr)
        return 130
    by = ["method", "eps", "lam", "lr"]
    summary = _cli._summary(rows, by)[0]
    summary["federation"] = [r.extras.get("federation", {}) for r in rows]
    summary["wall_time"] = [r.wall_time for r in rows]
    if args.json:
        print(json.dumps(encode(summary), allow_nan=False))
    else:
        _cli._print_table([summary], by, sys.stdout)
        for r in rows:
            f = r.extras.get("federation", {})
            print(f"federation (seed {r.config.seed}): {f.get('nodes')} nodes, {f.get('rounds_run')} rounds, "
                  f"{r.wall_time:.1f} s, bytes per round {f.get('bytes_per_round')}, dropped {f.get('dropped')}, "
                  f"left (budget spent) {f.get('left_budget_spent')}")
    return 0


def install(cli: ModuleType) -> None:
    """Register ``fedtrain federate`` with the CLI module ``cli`` (its ``register_command``)."""
    global _cli
    _cli = cli
    cli.register_command("federate", "train one configuration as a federation of processes on Flower "
                         "(SuperLink + --nodes SuperNodes on 127.0.0.1, or --simulation)", configure, handle)
