"""The flags every training subcommand shares (``run``, ``sweep``, ``advise``, ``federate``): the data, every
configuration field and method option (generated from their declarations, :mod:`fedtrain.params`), the output;
and the command line's rewrites before argparse reads it (negative values, a bare ``--seeds N``)."""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
from typing import Any, Callable, Sequence

from fedtrain.config import RunConfig
from fedtrain.data.registry import DATASETS
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.methods.registry import LAMBDA_METHODS, METHODS, RECORD_METHODS, option_params
from fedtrain.params import Param, add_flag, params_of
from fedtrain.results import DEFAULT_WORK_STORE, WORK_DIR

__all__ = ["REPEATS"]

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

