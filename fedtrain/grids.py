"""``fedtrain grid NAME``: compute (or resume) a real-image grid into a work store, one run at a time, seed 0 first.

Grids: ``fig6-fashion`` and ``fig3d-fashion`` (:data:`fedtrain.deep_grids.REAL_IMAGE_GRIDS`, through
:func:`fedtrain.deep_grids.deep_grid` and :func:`fedtrain.sweep.run_sweep` into a
:class:`fedtrain.results.ResultsStore`), ``claims-fashion`` (:data:`fedtrain.presets.FEDHDP_GRIDS`, through
:func:`fedtrain.presets.fedhdp_grid` and :func:`fedtrain.fedhdp.experiments.run_experiment`, one JSON file per
run, filed under its row key in a :class:`fedtrain.results.ResultsStore`: the config's key with the engine version
and the data's identity; a folder written before that keying: ``tools/migrate_fedhdp_keys.py``).  Every finished
run is written atomically and skipped on the next start, so the command resumes where it stopped; runs are ordered seed by seed and, within a seed, by mask ratio and ε (:func:`block`), so an interrupted grid
holds whole blocks.

Usage (background, lowest priority, one core; the store lives outside the repository, in
``$FEDBOOK_RUNS_DIR`` or ``~/.cache/fedbook-runs``)::

    cd <checkout> && PYTHONPATH=$PWD OMP_NUM_THREADS=1 setsid nohup nice -n 19 \\
        .venv/bin/fedtrain grid fig6-fashion >> ~/.cache/fedbook-runs/fig6-fashion.log 2>&1 &
    fedtrain grid fig6-fashion --status          # how far it got, and what the committed archive would restore
    fedtrain grid fig6-fashion --pack results    # commit the rows done so far

``--pack DIR`` trains nothing: it writes the grid's rows present in the work store into the committed store ``DIR``
(:func:`fedtrain.book_results.pack_grid`: ``<dataset>.json.gz`` and its ``MANIFEST.json`` entry, saying how many of
the grid's runs are in and which are missing); rerun it as the grid grows.  It also archives every row of the work
store, byte for byte, in ``DIR/raw/<grid>.jsonl.gz`` (:func:`fedtrain.store.archive.archive_rows`); a later
computing start writes the archived rows its work store lacks back into it (:func:`~fedtrain.store.archive.restore_rows`,
each checked against its key), so a fresh machine resumes the grid instead of recomputing it; ``--status`` counts those rows too
("N of M runs in the work store, K more restorable from the archive").

Tuning axes and controls (a real-image grid only; :func:`extend_grid`)::

    fedtrain grid fig6-fashion --lrs 0.03,0.3 --clips 3 --clip-only-eps 1e6 --select-every 3

runs every configuration at each η of ``--lrs``, each private one at each clip of ``--clips``, adds a clip-only
control (the same run at a finite ε >= 1e5) of each private one and spreads IFCA's private selections every E
rounds; an empty, non-finite or non-positive grid, an infinite clip-only ε or a schedule past the last round is a
one-line error naming the argument (``fedtrain grid: error: --lrs ...``).  The added runs go to the work store (``--pack`` packs the grid's own).

On a machine with many cores (a real-image grid only)::

    fedtrain grid fig6-fashion --workers 15 --stop-by 540

starts 15 processes of one thread each (``--shard i/15``: the i-th of every 15 runs of the grid, in the order above,
that are missing), and
``--stop-by S`` makes each start no run that its last run's duration says would end more than S seconds after the
process started (for a machine lent for a fixed time; what is cut off is left for the next start).
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from fedtrain.book_results import grid_configs, pack_grid
from fedtrain.data.base import identity_digest
from fedtrain.data.registry import load_dataset
from fedtrain.fedhdp.experiments import run_experiment
from fedtrain.presets import FEDHDP_GRIDS, REAL_IMAGE_GRIDS, fedhdp_grid
from fedtrain.regime import check_clip_only_eps, check_positive_grid, clip_only_control
from fedtrain.results import ResultsStore
from fedtrain.store.archive import archive_rows, restore_rows
from fedtrain.store.layout import shown_path
from fedtrain.sweep import run_sweep

__all__ = ["GRIDS", "DEFAULT_ROOT", "RAW_ARCHIVE", "configure_parser", "run", "main", "extend_grid", "block",
           "restorable"]

REPO = Path(__file__).resolve().parents[1]

#: The grids ``fedtrain grid`` computes: the real-image grids, then FedHDP's.
GRIDS = tuple(sorted(REAL_IMAGE_GRIDS)) + tuple(sorted(FEDHDP_GRIDS))


def RAW_ARCHIVE(grid: str) -> Path:  # noqa: N802 (a path constant, by grid)
    """The committed archive of a grid's work-store rows (:func:`fedtrain.store.archive.archive_rows`), written by
    ``--pack results`` and read back into an empty or partial work store before a grid computes."""
    return REPO / "results" / "raw" / f"{grid}.jsonl.gz"


#: Where the grids' work stores live: outside the repository, so that a fresh checkout can resume them.
DEFAULT_ROOT = Path(os.environ.get("FEDBOOK_RUNS_DIR") or Path.home() / ".cache" / "fedbook-runs")


def configure_parser(p: argparse.ArgumentParser) -> None:
    """The flags of ``fedtrain grid``."""
    p.description = __doc__.split("\n\n")[0].split(": ", 1)[1]
    p.add_argument("grid", choices=GRIDS)
    p.add_argument("--store", default=None, help=f"store folder (default {DEFAULT_ROOT}/<grid>)")
    p.add_argument("--status", action="store_true", help="print how many runs are done, and how many more the "
                   "committed archive would restore; train nothing")
    p.add_argument("--pack", default=None, metavar="DIR",
                   help="pack the grid's finished rows into the committed store DIR (e.g. results); train nothing")
    p.add_argument("--seeds", default=None, help="comma-separated seeds to restrict to (default: the grid's)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="compute the missing runs in N single-thread processes (a real-image grid; default: this one)")
    p.add_argument("--shard", default=None, metavar="I/N",
                   help="compute only the I-th of every N runs of the grid (0 <= I < N) that are missing; --workers sets it")
    p.add_argument("--stop-by", type=float, default=None, metavar="S",
                   help="start no run expected (from the last run's duration) to end later than S seconds after start")
    p.add_argument("--lrs", default=None, metavar="ETA,...",
                   help="run every configuration of the grid at each of these η (a tuning grid; finite, positive)")
    p.add_argument("--clips", default=None, metavar="C,...",
                   help="run every private configuration at each of these clipping norms (finite, positive)")
    p.add_argument("--clip-only-eps", default=None, metavar="EPS",
                   help="add a clip-only control of every private configuration: the same run at this finite ε "
                        "(>= 1e5: the same clipping, negligible noise)")
    p.add_argument("--select-every", default=None, metavar="E",
                   help="IFCA's private selections every E rounds from round 0 (the last before the last round)")
    p.add_argument("--first", default="", help="comma-separated methods to run first within each seed "
                   "(e.g. ifca: its cluster recovery decides whether the warm-started runs mean anything)")


def extend_grid(configs, *, lrs=None, clips=None, clip_only_eps=None, select_every=None) -> list:
    """The grid's configurations with the tuning axes and controls added: each at every η of ``lrs``, each private
    one at every clip of ``clips``, a clip-only copy (ε = ``clip_only_eps``) of each private one, IFCA's selections
    every ``select_every`` rounds.  Raises ``ValueError`` naming the argument for an empty, non-finite or
    non-positive grid, a non-finite clip-only ε, or a selection schedule past the last round.  The added runs go
    to the work store; ``--pack`` packs the grid's own (:func:`fedtrain.deep_grids.deep_grid`) until the grid names
    them."""
    out = list(configs)
    if lrs is not None:
        lrs = check_positive_grid("lrs", lrs)
        out = [c.replace(lr=lr) for c in out for lr in lrs]
    if clips is not None:
        clips = check_positive_grid("clips", clips)
        out = [c2 for c in out for c2 in ([c.replace(clip=v) for v in clips] if math.isfinite(c.eps) else [c])]
    if select_every is not None:
        out = _select_every(out, select_every)
    if clip_only_eps is not None:
        ce = check_clip_only_eps(clip_only_eps)
        out = out + [clip_only_control(c, ce) for c in out if math.isfinite(c.eps) and c.eps != ce]
    seen = set()
    return [c for c in out if not (c.key() in seen or seen.add(c.key()))]


def _select_every(configs: list, select_every) -> list:
    """``configs`` with IFCA's private selections every ``select_every`` rounds (``ValueError`` past the last round)."""
    from fedtrain.methods.ifca import max_select_every, schedule  # the IFCA method loads torch

    every = int(select_every)
    if every != select_every or every < 1:
        raise ValueError(f"select_every must be an integer >= 1 (got {select_every!r})")
    moved = []
    for c in configs:
        if c.method in ("ifca", "ifca-mrmtl"):
            last = schedule(c.select_frac, c.rounds, every)[-1]
            if last >= c.rounds:
                raise ValueError(f"select_every={every} puts IFCA's last private selection at round {last + 1}, "
                                 f"past the last round {c.rounds}: select_every must be <= {max_select_every(c)}")
            c = c.replace(select_every=every)
        moved.append(c)
    return moved


def _extension(args: argparse.Namespace) -> dict:
    """The tuning axes and controls the flags ask for, every bad value a ``ValueError`` naming its flag before
    anything runs."""
    try:
        extend = dict(lrs=None if args.lrs is None else [v for v in args.lrs.split(",") if v.strip()],
                      clips=None if args.clips is None else [v for v in args.clips.split(",") if v.strip()],
                      clip_only_eps=args.clip_only_eps,
                      select_every=None if args.select_every is None else _number(args.select_every))
        if args.grid in REAL_IMAGE_GRIDS:
            extend_grid(deep_grid_of(args.grid), **extend)
    except ValueError as exc:
        msg = str(exc)
        for name in ("lrs", "clips", "clip_only_eps", "select_every"):
            if msg.startswith(name):
                msg = "--" + name.replace("_", "-") + msg[len(name):]
        raise ValueError(msg) from None
    return extend


def run(args: argparse.Namespace) -> int:
    """Run ``fedtrain grid`` with the parsed flags ``args`` (:func:`configure_parser`); return the exit status.  A
    bad flag is a ``ValueError`` naming it, raised before anything is restored or run."""
    started = time.perf_counter()
    shard = _shard(args.shard)
    if args.workers is not None and (args.workers < 1 or args.shard is not None):
        raise ValueError(f"--workers must be an integer >= 1, without --shard (got {args.workers}, shard {args.shard})")
    if args.stop_by is not None and not args.stop_by > 0:
        raise ValueError(f"--stop-by must be a positive number of seconds (got {args.stop_by})")
    extend = _extension(args)
    store = Path(args.store or DEFAULT_ROOT / args.grid)
    seeds = None if args.seeds is None else [int(s) for s in args.seeds.split(",")]
    if args.pack is not None:
        return _pack(args.grid, store, args.pack)
    if not args.status and RAW_ARCHIVE(args.grid).exists():  # a fresh machine resumes from the committed rows
        restored = restore_rows(RAW_ARCHIVE(args.grid), store)
        print(f"{args.grid}: restored {restored} rows from {shown_path(RAW_ARCHIVE(args.grid))}", flush=True)
    if args.grid not in REAL_IMAGE_GRIDS:
        if any(v is not None for v in extend.values()):
            raise ValueError(f"--lrs, --clips, --clip-only-eps and --select-every extend the real-image grids "
                             f"({', '.join(sorted(REAL_IMAGE_GRIDS))}), not {args.grid}")
        if args.workers is not None or shard is not None or args.stop_by is not None:
            raise ValueError(f"--workers, --shard and --stop-by compute the real-image grids "
                             f"({', '.join(sorted(REAL_IMAGE_GRIDS))}), not {args.grid}")
        return _fedhdp(args.grid, store, seeds, args.status)
    if args.workers is not None and not args.status:
        return _spawn(args, store)
    stop_at = None if args.stop_by is None else started + args.stop_by
    return _deep(args.grid, store, seeds, args.status, [m for m in args.first.split(",") if m], shard, stop_at,
                 extend=extend)


def main(argv: Sequence[str] | None = None) -> int:
    """``fedtrain grid``'s flags in ``argv`` (default ``sys.argv[1:]``) parsed and run (:func:`run`)."""
    p = argparse.ArgumentParser(prog="fedtrain grid")
    configure_parser(p)
    return run(p.parse_args(argv))


def _pack(grid: str, store: Path, out: str) -> int:
    """``--pack DIR``: the grid's rows into the committed store ``DIR`` and the work store's rows into its archive."""
    if grid not in REAL_IMAGE_GRIDS:
        raise ValueError(f"--pack packs the real-image grids ({', '.join(sorted(REAL_IMAGE_GRIDS))}), not {grid}")
    entry = pack_grid(grid, work=store, out=out, command=f"fedtrain grid {grid} --pack {out}")
    print(f"{grid}: packed {entry['present']} of {entry['grid_runs']} runs into {out}/{entry['file']} "
          f"({entry['missing']} missing, {entry['left_out']} rows outside the grid left out)", flush=True)
    archive = Path(out) / "raw" / f"{grid}.jsonl.gz"
    print(f"{grid}: archived the work store's {archive_rows(store, archive)} rows, as stored, in {archive}",
          flush=True)
    return 0


def _number(text: str):
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"select_every must be an integer >= 1 (got {text!r})") from None
    return int(v) if v.is_integer() else v


def deep_grid_of(grid: str) -> list:
    """The configurations of real-image grid ``grid`` (:func:`fedtrain.book_results.grid_configs`, a tuned grid's η
    read from its tuning grid's committed rows)."""
    return grid_configs(grid, REPO / "results")


def _shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        i, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard must be I/N with integers 0 <= I < N (got {text!r})") from None
    if not 0 <= i < n:
        raise ValueError(f"--shard must be I/N with integers 0 <= I < N (got {text!r})")
    return i, n


def _worker_argv(args: argparse.Namespace, store: Path, k: int) -> list[str]:
    """The ``fedtrain grid`` command line of worker ``k`` of ``args.workers``: the same grid and flags, the store
    named, ``--shard k/N``."""
    argv = [args.grid]
    for flag in ("seeds", "stop_by", "lrs", "clips", "clip_only_eps", "select_every"):
        value = getattr(args, flag)
        if value is not None:
            argv += ["--" + flag.replace("_", "-"), f"{value:g}" if isinstance(value, float) else str(value)]
    if args.first:
        argv += ["--first", args.first]
    return argv + ["--store", str(store), "--shard", f"{k}/{args.workers}"]


def _spawn(args: argparse.Namespace, store: Path) -> int:
    """Run ``args.workers`` copies of ``fedtrain grid``, each with ``--shard i/N`` and one thread; return the worst
    status."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-m", "fedtrain", "grid", *_worker_argv(args, store, k)], env=env)
             for k in range(args.workers)]
    print(f"{args.grid}: {args.workers} workers started", flush=True)
    return max(p.wait() for p in procs)


def block(config) -> tuple[float, float]:
    """The block a run belongs to within its seed: (mask ratio, ε).  Runs are computed seed by seed and, within a
    seed, block by block, so that an interrupted grid holds whole blocks, the unit its chapter reads (Fig. 6 reads
    a mask ratio's seed, Fig. 3(d) an ε's seed)."""
    return float(config.dataset_options.get("mask_ratio") or 0.0), float(config.eps)


def restorable(grid: str, configs: list, store: ResultsStore, identity: "dict | None" = None) -> int:
    """How many of ``configs`` the work ``store`` lacks and the committed archive of ``grid`` (:func:`RAW_ARCHIVE`)
    holds: the runs a computing start restores instead of training (0 without an archive).  ``identity``: the data
    each configuration's row must be on (name → :meth:`~fedtrain.data.base.FederatedData.identity`; None: any)."""
    path = RAW_ARCHIVE(grid)
    if not path.exists():
        return 0
    keys = {json.loads(line)["key"] for line in gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()}
    prefixes = {k.split("-")[0] for k in keys}

    def archived(c) -> bool:
        if identity is None:
            return c.key() in prefixes
        return f"{c.key()}-{identity_digest(identity[c.dataset])}" in keys
    return sum(archived(c) and not store.has(c, None if identity is None else identity[c.dataset]) for c in configs)


def _count_line(grid: str, done: int, total: int, folder: Path, more: int, status_only: bool) -> str:
    """``GRID: N of M runs in the work store FOLDER`` and, for ``--status`` with the committed archive present, how
    many more a computing start would restore from it."""
    line = f"{grid}: {done} of {total} runs in the work store {folder}"
    if status_only and RAW_ARCHIVE(grid).exists():
        line += f", {more} more restorable from the archive {shown_path(RAW_ARCHIVE(grid))}"
    return line


def _deep(grid: str, folder: Path, seeds, status_only: bool, first=(), shard=None, stop_at=None, extend=None) -> int:
    configs = extend_grid(deep_grid_of(grid), **(extend or {}))
    order = sorted({c.seed for c in configs}) if seeds is None else seeds
    store = ResultsStore(folder)
    done = sum(store.has(c) for c in configs)
    more = restorable(grid, configs, store) if status_only else 0
    print(_count_line(grid, done, len(configs), folder, more, status_only), flush=True)
    if status_only:
        return 0
    todo = []
    for seed in order:
        part = [c for c in configs if c.seed == seed]
        part.sort(key=lambda c: (c.method not in first, *block(c)))  # stable: the grid's order otherwise
        todo.extend(part)
    if shard is not None:  # a share of the whole ordered grid, so that workers started at other times never overlap
        todo = todo[shard[0]::shard[1]]
    todo = [c for c in todo if not store.has(c)]
    _compute(grid, todo, store, done, len(configs), stop_at)
    return 0


def _compute(grid: str, todo: list, store: ResultsStore, done: int, total: int, stop_at: "float | None") -> None:
    """Train ``todo`` one run per call, each stored before the next starts; with ``stop_at``, start no run that the
    last run's duration says would end after it."""
    last = 0.0
    for c in todo:
        if store.has(c):
            continue
        if stop_at is not None and time.perf_counter() + last > stop_at:
            print(f"{grid}: stopping ({sum(not store.has(c) for c in todo)} runs of this share left for the next start)",
                  flush=True)
            break
        t0 = time.perf_counter()
        row = run_sweep([c], store=store, chunk_size=1, progress=False)[0]
        last = time.perf_counter() - t0
        done += 1
        print(f"[{done}/{total}] {c.method} mask={c.dataset_options.get('mask_ratio')} eps={c.eps} "
              f"lam={c.lam} seed={c.seed}: {row.test_metric:.4f} ({last:.0f} s)", flush=True)


def _fedhdp(grid: str, folder: Path, seeds, status_only: bool) -> int:
    configs = fedhdp_grid(grid, seeds=seeds)
    configs.sort(key=lambda c: c.seed)
    identity = {name: load_dataset(name).identity() for name in {c.dataset for c in configs}}
    store = ResultsStore(folder)
    done = sum(store.has(c, identity[c.dataset]) for c in configs)
    more = restorable(grid, configs, store, identity) if status_only else 0
    print(_count_line(grid, done, len(configs), folder, more, status_only) + f" (z = {configs[0].noise_multiplier})",
          flush=True)
    if status_only:
        return 0
    run_experiment(configs, store, log=lambda msg: print(msg, flush=True))
    return 0
