"""The book's committed results: which stored rows each figure reads, and computing and packing the presets.

The experiments layer above :mod:`fedtrain.results` (which stores and reads rows only):

* :func:`figure_grid`, :func:`figure_rows`, :func:`theory_rows` and :func:`store_note`: the rows of a
  :class:`~fedtrain.results.CommittedStore` behind one of the book's figures, on the grid
  (:func:`fedtrain.presets.book_grid`, :func:`fedtrain.presets.theory_grid`) at the scale the store holds, and
  the caption text naming the store; the same as methods of :class:`BookStore` (:func:`committed_store`), the
  committed store as the chapters read it;
* :func:`preset_targets`, :func:`compute_preset` and :func:`pack_store`: ``make results`` (``fedtrain sweep
  --preset paper --pack results``): every row of a preset (:data:`fedtrain.presets.RESULTS_PRESETS`) into
  resumable working stores, then the committed store written atomically from them;
* :func:`pack_grid`, :func:`grid_rows` and :func:`grid_store_note`: a real-image grid
  (:data:`fedtrain.deep_grids.REAL_IMAGE_GRIDS`, computed in the background into a working store of its own) packed
  next to the preset's files, complete or not: the file's header and its manifest entry say how many of the grid's
  runs it holds and which are missing, and packing again with more rows replaces it;
* :func:`pack_client_grid`, :func:`client_grid_rows` and :func:`client_grid_header`: FedHDP's committed grids
  (:data:`fedtrain.client_presets.FEDHDP_COMMITTED`, privacy unit: a client) packed into the same store, under the same
  manifest, with the same checks on reading (engine version, SHA-256, each row's digest and recomputed privacy
  claim, :class:`~fedtrain.results.CommittedStore`) and read through :class:`BookStore` like every other chapter's
  rows.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedtheory.atomic_io import write_json_gz_atomic, write_text_atomic
from fedtrain.config import ENGINE_VERSION, RunConfig
from fedtrain.data.base import data_identity
from fedtrain.methods.registry import CLIENT
from fedtrain.presets import (DATASET_FIGURES, FEDHDP_COMMITTED, LR_COMPUTE_ORDER, REAL_IMAGE_GRIDS, RESULTS_PRESETS,
                              SCALES, THEORY_GRIDS, book_grid, deep_grid, deep_grid_note, fedhdp_committed_configs,
                              grid_note, theory_grid)
from fedtrain.results import (DEFAULT_RESULTS_DIR, FORMAT, MANIFEST, REGENERATE_COMMAND, STORE_ENV, WORK_DIR,
                              CommittedStore, ResultsStore, ResultsStoreError, StaleStoreError, check_row_key,
                              git_commit, pack_rows, provenance, shown_path)
from fedtrain.sweep import gaussian_lambda_configs, gaussian_lambda_sweep, run_sweep

if TYPE_CHECKING:
    from fedtrain.engine import RunResult

__all__ = ["figure_grid", "figure_rows", "theory_rows", "store_note", "BookStore", "committed_store",
           "preset_targets", "compute_preset", "pack_store", "GRID_SCALE", "grid_file", "grid_configs", "grid_digest",
           "pack_grid",
           "grid_rows", "grid_store_note", "client_grid_digest", "pack_client_grid", "client_grid_rows",
           "client_grid_header"]


# --------------------------------------------------------------------------------------------------
# what a figure reads
# --------------------------------------------------------------------------------------------------
def figure_grid(store: CommittedStore, figure: str, dataset: str) -> list[RunConfig]:
    """:func:`fedtrain.presets.book_grid` of ``figure`` on ``dataset`` at the scale ``store`` holds."""
    return book_grid(figure, dataset, scale=store.scale(dataset))


def figure_rows(store: CommittedStore, figure: str, dataset: str) -> "list[RunResult]":
    """The stored rows behind ``figure`` on ``dataset`` (:func:`figure_grid`, :meth:`CommittedStore.select`)."""
    return store.select(figure_grid(store, figure, dataset))


def theory_rows(store: CommittedStore) -> dict:
    """The theory-meets-training sweep (:func:`fedtrain.sweep.gaussian_lambda_sweep`) from the stored rows,
    on the grid ``store`` holds (:func:`fedtrain.presets.theory_grid`)."""
    return gaussian_lambda_sweep(**theory_grid(store.info("theory")["scale"]), store=store)


def store_note(store: CommittedStore, name: str) -> str:
    """Caption text (two lines) saying which store a figure read: file, engine version, commit; scale, repeats."""
    info = store.info(name)
    if info.get("grid"):
        return grid_store_note(store, info["grid"])
    if info.get("unit") == CLIENT:
        commits = ", ".join(c[:7] if len(c) == 40 else c for c in info.get("commits", []))
        return (f"store {store.root.name}/{info['file']}, engine v{info['engine_version']}, commits {commits}\n"
                f"FedHDP {name}: {info['rows']} client-level runs on {', '.join(info['datasets'])}")
    commits = ", ".join(c[:7] + ("+dirty" if c.endswith("+dirty") else "") for c in info.get("commits", []))
    if name == "theory":
        g = THEORY_GRIDS[info["scale"]]
        grid = f"{info['scale']} grid: {g['datasets']} datasets"
    else:
        grid = grid_note(name, scale=info["scale"])
        if SCALES[info["scale"]]["grid"] != "full":
            grid += " (not paper scale)"
    return f"store {store.root.name}/{info['file']}, engine v{info['engine_version']}, commit {commits}\n{grid}"


class BookStore(CommittedStore):
    """A :class:`~fedtrain.results.CommittedStore` with the rows of the book's figures as methods."""

    def grid(self, figure: str, dataset: str) -> list[RunConfig]:
        """:func:`figure_grid`."""
        return figure_grid(self, figure, dataset)

    def figure_rows(self, figure: str, dataset: str) -> "list[RunResult]":
        """:func:`figure_rows`."""
        return figure_rows(self, figure, dataset)

    def theory(self) -> dict:
        """:func:`theory_rows`."""
        return theory_rows(self)

    def note(self, name: str) -> str:
        """:func:`store_note`."""
        return store_note(self, name)

    def grid_rows(self, grid: str) -> "list[RunResult]":
        """:func:`grid_rows`."""
        return grid_rows(self, grid)

    def grid_info(self, grid: str) -> dict:
        """The manifest entry of real-image grid ``grid``'s file (:func:`pack_grid`), with ``file``."""
        return _grid_info(self, grid)

    def client_rows(self, name: str) -> list[dict]:
        """:func:`client_grid_rows`."""
        return client_grid_rows(self, name)

    def client_header(self, name: str) -> dict:
        """:func:`client_grid_header`."""
        return client_grid_header(self, name)


def committed_store(root: str | os.PathLike | None = None) -> BookStore:
    """The committed results store as the chapters read it (:class:`BookStore`, checked on opening): ``root``, else
    the folder named by the environment variable ``FEDBOOK_RESULTS_STORE`` (e.g. a store packed with ``fedtrain
    sweep --preset ... --pack DIR``), else ``results/``."""
    if root is None:
        root = os.environ.get(STORE_ENV) or None
    return BookStore(root)


# --------------------------------------------------------------------------------------------------
# computing a preset (``make results``)
# --------------------------------------------------------------------------------------------------
def _stages(configs: "list[RunConfig]") -> "list[list[RunConfig]]":
    """``configs`` cut into consecutive runs of one method (the order a preset computes them in)."""
    out: list[list[RunConfig]] = []
    for c in configs:
        if out and out[-1][0].method == c.method:
            out[-1].append(c)
        else:
            out.append([c])
    return out


def preset_targets(preset: str) -> "list[tuple[str, str, list[RunConfig]]]":
    """``(name, scale, configs)`` per file of preset ``preset`` (:data:`fedtrain.presets.RESULTS_PRESETS`): each
    dataset's figures (:data:`fedtrain.presets.DATASET_FIGURES`, in that order, shared runs once; within a
    figure, method by method) and the theory figure."""
    if preset not in RESULTS_PRESETS:
        raise ValueError(f"preset must be one of {', '.join(map(repr, RESULTS_PRESETS))} (got {preset!r})")
    spec = RESULTS_PRESETS[preset]
    out = []
    for ds, scale in spec["datasets"].items():
        configs, seen = [], set()
        for fig in DATASET_FIGURES[ds]:
            for c in book_grid(fig, ds, scale=scale):
                if c.key() not in seen:
                    seen.add(c.key())
                    configs.append(c)
        out.append((ds, scale, configs))
    if spec.get("theory"):
        out.append(("theory", spec["theory"], gaussian_lambda_configs(**theory_grid(spec["theory"]))))
    return out


def compute_preset(preset: str, *, work: str | os.PathLike | None = None, pack: str | os.PathLike | None = None,
                   names: "list[str] | None" = None, command: str | None = None, progress: bool | None = None,
                   chunk_size: int = 64, runner: Any = None, dry_run: bool = False,
                   executor: Any = None, executor_options: "dict | None" = None) -> dict:
    """Compute every row of preset ``preset`` into working stores ``work/<name>/`` (resumable: finished rows are
    skipped), then, with ``pack``, write the committed store there (:class:`CommittedStore`: one
    ``<name>.json.gz`` per dataset and ``MANIFEST.json``, each written atomically).

    ``names`` limits the computation to some files (datasets or ``"theory"``); packing needs all of them.
    ``executor``/``executor_options`` go to :func:`fedtrain.sweep.run_sweep` (``"ray"``: the batches run as Ray
    tasks, this process alone writes the stores).
    Returns ``{"rows": n, "computed": n new, "seconds": wall time, "files": {...}}``.  The wall time of every
    call is appended to ``work/computations.jsonl`` and listed in the manifest.
    """
    work = Path(work) if work is not None else WORK_DIR
    targets = preset_targets(preset)
    if names is not None:
        unknown = set(names) - {t[0] for t in targets}
        if unknown:
            raise ValueError(f"names must be among {[t[0] for t in targets]} (got {sorted(unknown)})")
        targets = [t for t in targets if t[0] in names]
    if dry_run:
        return {"rows": sum(len(t[2]) for t in targets), "files": {t[0]: len(t[2]) for t in targets}}
    command = command or provenance()["command"]
    commit = git_commit()
    t0 = time.time()
    computed = 0
    # the stand-ins and the theory figure first (minutes), then each dataset figure by figure, method by
    # method: an interrupted computation leaves whole figures done
    order = sorted(targets, key=lambda t: (t[1] == "paper", len(t[2])))
    # within a target, the learning rates in LR_COMPUTE_ORDER (stable: figure by figure, method by method)
    tier = {lr: i for i, lr in enumerate(LR_COMPUTE_ORDER)}
    order = [(n, s, sorted(cs, key=lambda c: tier.get(c.lr, len(tier)))) for n, s, cs in order]
    stores = {}
    for name, scale, configs in order:
        store = stores[name] = ResultsStore(work / name, command=command, commit=commit)
        store.check_writable()
    for name, scale, configs in order:
        store = stores[name]
        for stage in _stages(configs):
            done = store.config_keys()
            before = sum(c.key() in done for c in stage)
            run_sweep(stage, store=store, progress=progress, chunk_size=chunk_size, runner=runner,
                      executor=executor, executor_options=executor_options)
            computed += len(stage) - before
            if progress is not False and len(stage) > before:
                print(f"{time.strftime('%H:%M:%S')} {name}: {stage[0].method} x{len(stage)} done "
                      f"({computed} computed, {time.time() - t0:.0f} s)", flush=True)
    seconds = time.time() - t0
    work.mkdir(parents=True, exist_ok=True)
    log = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)), "seconds": round(seconds, 1),
           "computed": computed, "names": [t[0] for t in targets], "preset": preset, "command": command,
           "commit": git_commit(), "engine_version": ENGINE_VERSION}
    with open(work / "computations.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(log) + "\n")
    out = {"rows": sum(len(t[2]) for t in targets), "computed": computed, "seconds": seconds, "files": {}}
    if pack is not None:
        if names is not None and set(names) != {t[0] for t in preset_targets(preset)}:
            raise ValueError("packing the committed store needs every file of the preset; drop names=")
        out["files"] = pack_store(preset, work=work, out=pack)
    return out


def _keys_by_config(store: ResultsStore) -> dict[str, list[str]]:
    """The store's row keys grouped by their config part (one config trained on different data has several)."""
    by_config: dict[str, list[str]] = {}
    for key in store.keys():
        by_config.setdefault(key.split("-")[0], []).append(key)
    return by_config


def _the_stored_row(store: ResultsStore, found: list[str], run: str) -> dict | None:
    """The one row of a config (``found``: its keys in ``store``), read and checked against its key; ``None`` if
    there is none; :class:`ResultsStoreError` naming the run (``run``) if it was trained on different data."""
    if len(found) > 1:
        raise ResultsStoreError(f"working store {store.root} holds {len(found)} rows of {run}, trained on different "
                                f"data ({', '.join(found)}); keep the one the committed store should hold")
    if not found:
        return None
    path = store._path(found[0])
    row = store._read(path)
    check_row_key(row, path.stem, str(path))
    return row


def pack_store(preset: str, *, work: str | os.PathLike | None = None, out: str | os.PathLike | None = None) -> dict:
    """Write the committed store of ``preset`` to ``out`` from the working stores in ``work`` (every row must be
    there: :func:`compute_preset` first).  Returns the manifest's ``files``."""
    work = Path(work) if work is not None else WORK_DIR
    out = Path(out) if out is not None else DEFAULT_RESULTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, scale, configs in preset_targets(preset):
        store = ResultsStore(work / name)
        by_config = _keys_by_config(store)
        rows = []
        for c in configs:
            row = _the_stored_row(store, by_config.get(c.key(), []),
                                  f"{c.method} eps={c.eps} lam={c.lam} lr={c.lr} seed={c.seed}")
            if row is None:
                raise ValueError(f"working store {store.root} lacks {c.method} eps={c.eps} lam={c.lam} lr={c.lr} "
                                 f"seed={c.seed} (and maybe more); run fedtrain sweep --preset {preset} first")
            rows.append(row)
        figures = list(DATASET_FIGURES.get(name, ("theory",)))
        doc = pack_rows(rows, name=name, dataset=configs[0].dataset, scale=scale, figures=figures, preset=preset)
        fname = f"{name}.json.gz"
        write_json_gz_atomic(out / fname, doc)
        raw = (out / fname).read_bytes()
        files[fname] = {"name": name, "dataset": configs[0].dataset, "scale": scale, "figures": figures,
                        "rows": len(rows), "bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest(),
                        "engine_version": ENGINE_VERSION, "seconds_in_runs": round(doc["seconds"], 1),
                        "commits": doc["commits"], "commands": doc["commands"]}
    computations = []
    log = work / "computations.jsonl"
    if log.is_file():
        for line in log.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry.get("engine_version") == ENGINE_VERSION:  # every computation that filled these stores
                computations.append(entry)
    manifest = {"format": FORMAT, "preset": preset, "engine_version": ENGINE_VERSION,
                "regenerate": REGENERATE_COMMAND, "files": files, "computations": computations,
                "wall_seconds": round(sum(c["seconds"] for c in computations), 1)}
    previous = _read_manifest(out / MANIFEST)
    for fname, info in (previous or {}).get("files", {}).items():  # the grids' files stay (pack_grid, pack_client_grid)
        if (info.get("grid") or info.get("unit") == CLIENT) and fname not in files and (out / fname).is_file():
            manifest["files"][fname] = info
    write_text_atomic(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True, allow_nan=False) + "\n")
    return files


def _read_manifest(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultsStoreError(f"results manifest {path} is unreadable ({exc}); regenerate it with "
                                f"{REGENERATE_COMMAND}") from None


# --------------------------------------------------------------------------------------------------
# the real-image grids (computed in the background, packed as they grow)
# --------------------------------------------------------------------------------------------------
#: The ``scale`` a real-image grid's manifest entry records (one scale each:
#: :data:`fedtrain.deep_grids.REAL_IMAGE_GRIDS`).
GRID_SCALE = "real-image"


def grid_file(grid: str) -> str:
    """The committed file of real-image grid ``grid``: ``<its file or dataset>.json.gz``."""
    if grid not in REAL_IMAGE_GRIDS:
        raise ValueError(f"grid must be one of {', '.join(map(repr, REAL_IMAGE_GRIDS))} (got {grid!r})")
    spec = REAL_IMAGE_GRIDS[grid]
    return f"{spec.get('file', spec['dataset'])}.json.gz"


def grid_configs(grid: str, root: "str | os.PathLike | None" = None, *,
                 store: "CommittedStore | None" = None) -> list[RunConfig]:
    """The runs of real-image grid ``grid`` (:func:`fedtrain.deep_grids.deep_grid`).  A tuned grid (``tuned_by`` in
    :data:`fedtrain.deep_grids.REAL_IMAGE_GRIDS`) takes each configuration's η from its tuning grid's rows in the
    committed store ``store``, if given (already open), else ``root`` (default ``results/``); it is defined only once
    all of them are there (``ValueError`` otherwise, saying how many are)."""
    if grid not in REAL_IMAGE_GRIDS:
        raise ValueError(f"grid must be one of {', '.join(map(repr, REAL_IMAGE_GRIDS))} (got {grid!r})")
    tune = REAL_IMAGE_GRIDS[grid].get("tuned_by")
    if tune is None:
        return deep_grid(grid)
    try:
        store = store if store is not None else committed_store(root)
        info = _grid_info(store, tune)
    except (ValueError, OSError, ResultsStoreError) as exc:
        raise ValueError(f"grid {grid} takes its η from grid {tune}, which is not committed yet: {exc}") from None
    if info.get("missing"):
        raise ValueError(f"grid {grid} takes its η from grid {tune}, of which the committed store {store.root} "
                         f"holds {info['present']} of {info['grid_runs']} runs: compute and pack the rest first "
                         f"(fedtrain grid {tune})")
    return deep_grid(grid, tuning=grid_rows(store, tune))


def grid_digest(grid: str, root: "str | os.PathLike | None" = None, *,
                configs: "list[RunConfig] | None" = None) -> str:
    """A digest of real-image grid ``grid``'s definition (its runs' configuration keys; ``configs``, if given, are
    its :func:`grid_configs`): the committed file records the digest of the grid it was packed for, and reading it
    under another definition fails (:func:`grid_rows`)."""
    keys = sorted(c.key() for c in (grid_configs(grid, root) if configs is None else configs))
    return hashlib.sha256(json.dumps(keys).encode()).hexdigest()[:16]


def _run_text(c: RunConfig) -> dict:
    """A grid run as the missing list names it (JSON: ε = ∞ as ``"inf"``)."""
    return {"method": c.method, "mask_ratio": c.dataset_options.get("mask_ratio"),
            "eps": c.eps if math.isfinite(c.eps) else "inf", "lam": c.lam, "seed": c.seed}


def _current_manifest(out: Path) -> tuple[Path, dict]:
    """``(path, manifest)`` of the committed store ``out``, which must exist and be of this engine's format and
    version (a grid is packed into a current store only)."""
    mpath = out / MANIFEST
    manifest = _read_manifest(mpath)
    if manifest is None:
        raise ValueError(f"{mpath} does not exist: pack the preset's committed store there first "
                         f"({REGENERATE_COMMAND})")
    if manifest.get("format") != FORMAT or manifest.get("engine_version") != ENGINE_VERSION:
        raise StaleStoreError(f"results manifest {mpath} has format {manifest.get('format')!r} and engine version "
                              f"{manifest.get('engine_version')}, not {FORMAT!r} and {ENGINE_VERSION}; regenerate "
                              f"it with {REGENERATE_COMMAND}")
    return mpath, manifest


def pack_grid(grid: str, *, work: str | os.PathLike, out: str | os.PathLike | None = None,
              command: str | None = None) -> dict:
    """Pack the rows of real-image grid ``grid`` (:func:`fedtrain.deep_grids.deep_grid`) that the working store ``work``
    holds into the committed store ``out`` (default ``results/``): ``<dataset>.json.gz`` (:func:`grid_file`,
    :func:`~fedtrain.store.committed.pack_rows`) and its entry in ``MANIFEST.json``, both written atomically.
    Trains nothing; packing the same rows again gives the same bytes.

    Only the grid's own runs are packed: rows of ``work`` outside the grid (e.g. λ values the grid no longer has)
    are left out and counted (``left_out``).  The header and the manifest entry record the grid, its size
    (``grid_runs``) and definition (``grid_digest``, :func:`grid_digest`), the runs present (``present``) and missing
    (``missing``: the file lists them, the manifest counts them per mask ratio, ε and seed), the commits and
    commands that computed the rows, their seconds, the engine version and the data's identity (one identity for every row, else ``ResultsStoreError``).  The manifest
    must exist (the preset's committed store; :func:`pack_store` keeps the grid's entry when it rewrites it).
    Returns the manifest entry.
    """
    fname = grid_file(grid)
    out = Path(out) if out is not None else DEFAULT_RESULTS_DIR
    mpath, manifest = _current_manifest(out)
    configs = grid_configs(grid, out)
    store = ResultsStore(work)
    if not store.root.is_dir():
        raise ValueError(f"working store {store.root} of grid {grid} does not exist (compute it with "
                         f"fedtrain grid {grid})")
    by_config = _keys_by_config(store)
    rows, missing = [], []
    for c in configs:
        row = _the_stored_row(store, by_config.pop(c.key(), []),
                              f"{c.method} eps={c.eps} lam={c.lam} seed={c.seed} mask={c.dataset_options.get('mask_ratio')}")
        if row is None:
            missing.append(c)
        else:
            rows.append(row)
    if not rows:
        raise ValueError(f"working store {store.root} holds no run of grid {grid} (0 of {len(configs)})")
    identities = {key.split("-")[1] for key in (r["key"] for r in rows)}
    if len(identities) > 1:
        raise ResultsStoreError(f"working store {store.root} holds rows of grid {grid} trained on {len(identities)} "
                                f"different data ({', '.join(sorted(identities))}); keep the rows of one copy")
    left_out = sum(len(v) for v in by_config.values())
    by_cell: dict[str, int] = {}
    for c in missing:
        mask = c.dataset_options.get("mask_ratio")  # a grid without masks (fig3d-fashion) has none
        cell = (f"mask={mask:g} " if mask is not None else "") + f"eps={c.eps:g} seed={c.seed}"
        by_cell[cell] = by_cell.get(cell, 0) + 1
    command = command or f"fedtrain grid {grid} --pack {shown_path(out)}"
    spec = REAL_IMAGE_GRIDS[grid]
    figures = [grid]
    digest = grid_digest(grid, configs=configs)
    doc = pack_rows(rows, name=spec["dataset"], dataset=spec["dataset"], scale=GRID_SCALE, figures=figures,
                    grid=grid, grid_digest=digest, grid_runs=len(configs), present=len(rows),
                    missing=[_run_text(c) for c in missing], left_out=left_out, pack_command=command)
    out.mkdir(parents=True, exist_ok=True)
    write_json_gz_atomic(out / fname, doc)
    raw = (out / fname).read_bytes()
    identity = data_identity(rows[0].get("data") or {})
    entry = {"name": spec["dataset"], "dataset": spec["dataset"], "scale": GRID_SCALE, "figures": figures,
             "grid": grid, "grid_digest": digest, "grid_runs": len(configs), "present": len(rows),
             "missing": len(missing), "missing_by_cell": by_cell, "left_out": left_out, "rows": len(rows),
             "bytes": len(raw),
             "sha256": hashlib.sha256(raw).hexdigest(), "engine_version": ENGINE_VERSION,
             "seconds_in_runs": round(doc["seconds"], 1), "commits": doc["commits"], "commands": doc["commands"],
             "pack_command": command, "data_identity": identity, "regenerate":
             f"fedtrain grid {grid}, then {command}"}
    manifest = _read_manifest(mpath)  # again: the latest, written atomically
    manifest["files"][fname] = entry
    write_text_atomic(mpath, json.dumps(manifest, indent=1, sort_keys=True, allow_nan=False) + "\n")
    return {"file": fname, **entry}


def _grid_info(store: CommittedStore, grid: str, configs: "list[RunConfig] | None" = None) -> dict:
    fname = grid_file(grid)
    info = store.manifest.get("files", {}).get(fname)
    if not info or info.get("grid") != grid:
        raise ValueError(f"the committed store {store.root} holds no rows of grid {grid} ({fname}); pack them with "
                         f"fedtrain grid {grid} --pack results")
    configs = grid_configs(grid, store=store) if configs is None else configs
    if info.get("grid_digest") != grid_digest(grid, configs=configs):
        raise StaleStoreError(f"{store.root / fname} was packed for another definition of grid {grid} "
                              f"({info.get('grid_runs')} runs; this checkout's has {len(configs)}): repack it "
                              f"with fedtrain grid {grid} --pack results")
    return {"file": fname, **info}


def grid_rows(store: CommittedStore, grid: str, configs: "list[RunConfig] | None" = None) -> "list[RunResult]":
    """The rows of real-image grid ``grid`` that the committed ``store`` holds, in the grid's order (some of the grid's
    runs may be missing: :func:`pack_grid`; the manifest entry, :meth:`BookStore.grid_info`, counts them).
    ``configs``, if given, are its :func:`grid_configs` (read from ``store``)."""
    configs = grid_configs(grid, store=store) if configs is None else configs
    _grid_info(store, grid, configs)
    return [store.get(c) for c in configs if store.has(c)]


def grid_store_note(store: CommittedStore, grid: str) -> str:
    """Caption text (two lines) for a real-image grid's figure: file, engine version, commits; the grid's settings
    and how many of its runs the store holds."""
    info = _grid_info(store, grid)
    commits = ", ".join(c[:7] + ("+dirty" if c.endswith("+dirty") else "") for c in info.get("commits", []))
    return (f"store {store.root.name}/{info['file']}, engine v{info['engine_version']}, commits {commits}\n"
            f"{deep_grid_note(grid)}; {info['present']} of {info['grid_runs']} runs of the grid")


# --------------------------------------------------------------------------------------------------
# FedHDP's committed grids (privacy unit: a client)
# --------------------------------------------------------------------------------------------------
def client_grid_digest(name: str) -> str:
    """A digest of committed FedHDP grid ``name``'s definition (its runs' configuration keys, in order): the file
    records the digest of the grid it was packed for, and reading it under another definition fails."""
    keys = [c.key() for c in fedhdp_committed_configs(name)]
    return hashlib.sha256(json.dumps(keys).encode()).hexdigest()[:16]


def pack_client_grid(name: str, *, work: str | os.PathLike, out: str | os.PathLike | None = None,
                     command: str | None = None, header: dict | None = None) -> dict:
    """Pack committed FedHDP grid ``name`` (:data:`fedtrain.client_presets.FEDHDP_COMMITTED`) from the working store
    ``work`` into the committed store ``out`` (default ``results/``): ``<name>.json.gz``
    (:func:`~fedtrain.store.committed.pack_rows`: every row sealed, its privacy claim recomputed before it enters) and
    its entry in ``MANIFEST.json``, both written atomically.  Trains nothing; every run of the grid must be in
    ``work`` (``ValueError`` counting the missing ones otherwise).

    The rows are packed in the grid's order; the header and the manifest entry record the privacy unit
    (``"client"``), the grid's definition (``grid_digest``, :func:`client_grid_digest`), the commits and commands
    that computed the rows, their seconds, the engine version, the commands that regenerate the file, and
    ``header`` (e.g. the grid's provenance, :func:`fedtrain.fedhdp.experiments.grid_provenance`), stored as is.
    Returns the manifest entry."""
    if name not in FEDHDP_COMMITTED:
        raise ValueError(f"name must be one of {', '.join(map(repr, FEDHDP_COMMITTED))} (got {name!r})")
    spec = FEDHDP_COMMITTED[name]
    fname = f"{name}.json.gz"
    out = Path(out) if out is not None else DEFAULT_RESULTS_DIR
    mpath, manifest = _current_manifest(out)
    store = ResultsStore(work)
    if not store.root.is_dir():
        raise ValueError(f"working store {store.root} of {name} does not exist (compute it with {spec['compute']})")
    configs = fedhdp_committed_configs(name)
    by_config = _keys_by_config(store)
    rows, missing = [], 0
    for c in configs:
        row = _the_stored_row(store, by_config.get(c.key(), []), f"{c.method} on {c.dataset} "
                              f"r={c.effective_ratio:g} seed={c.seed}")
        if row is None:
            missing += 1
        else:
            rows.append(row)
    if missing:
        raise ValueError(f"working store {store.root} holds {len(rows)} of the {len(configs)} runs of {name}; "
                         f"compute the rest with {spec['compute']}")
    command = command or spec["pack"]
    digest = client_grid_digest(name)
    regenerate = f"{spec['compute']}, then {spec['pack']}"
    doc = pack_rows(rows, name=name, unit=CLIENT, datasets=list(spec["datasets"]), scale=spec.get("scale", GRID_SCALE),
                    figures=[name], grid=spec.get("grid"), grid_digest=digest, grid_runs=len(configs),
                    present=len(rows), pack_command=command, header=header or {})
    out.mkdir(parents=True, exist_ok=True)
    write_json_gz_atomic(out / fname, doc)
    raw = (out / fname).read_bytes()
    entry = {"name": name, "unit": CLIENT, "datasets": list(spec["datasets"]), "scale": spec.get("scale", GRID_SCALE),
             "figures": [name], "fedhdp_grid": spec.get("grid"), "grid_digest": digest, "grid_runs": len(configs),
             "present": len(rows), "missing": 0, "rows": len(rows), "bytes": len(raw),
             "sha256": hashlib.sha256(raw).hexdigest(), "engine_version": ENGINE_VERSION,
             "seconds_in_runs": round(doc["seconds"], 1), "commits": doc["commits"], "commands": doc["commands"],
             "pack_command": command, "regenerate": regenerate}
    manifest = _read_manifest(mpath)  # again: the latest, written atomically
    manifest["files"][fname] = entry
    write_text_atomic(mpath, json.dumps(manifest, indent=1, sort_keys=True, allow_nan=False) + "\n")
    return {"file": fname, **entry}


def _client_info(store: CommittedStore, name: str) -> dict:
    if name not in FEDHDP_COMMITTED:
        raise ValueError(f"name must be one of {', '.join(map(repr, FEDHDP_COMMITTED))} (got {name!r})")
    fname = f"{name}.json.gz"
    info = store.manifest.get("files", {}).get(fname)
    spec = FEDHDP_COMMITTED[name]
    if not info or info.get("unit") != CLIENT:
        raise ValueError(f"the committed store {store.root} holds no rows of {name} ({fname}); compute and pack them "
                         f"with {spec['compute']}, then {spec['pack']}")
    if info.get("grid_digest") != client_grid_digest(name):
        raise StaleStoreError(f"{store.root / fname} was packed for another definition of {name} "
                              f"({info.get('grid_runs')} runs; this checkout's has "
                              f"{len(fedhdp_committed_configs(name))}): recompute and repack it with "
                              f"{spec['compute']}, then {spec['pack']}")
    return {"file": fname, **info}


def client_grid_rows(store: CommittedStore, name: str) -> list[dict]:
    """The rows of committed FedHDP grid ``name`` in the grid's order, as dicts in the working store's row format
    (:meth:`FedHDPResult.to_dict <fedtrain.clientdp.trainer.FedHDPResult.to_dict>` plus the store's fields), each
    checked on reading (key, digest, privacy claim recomputed: :meth:`CommittedStore.row_dict
    <fedtrain.results.CommittedStore.row_dict>`); reads without torch."""
    info = _client_info(store, name)
    return [store.row_dict(row["key"]) for row in store.docs[info["file"]]["rows"]]


def client_grid_header(store: CommittedStore, name: str) -> dict:
    """What the file of committed FedHDP grid ``name`` records besides its rows: the ``header`` it was packed with
    (the grid's provenance, :func:`fedtrain.fedhdp.experiments.grid_provenance`, or the scale and command) and its
    manifest entry (``file``, engine version, commits, commands, ``regenerate``)."""
    info = _client_info(store, name)
    return {**store.docs[info["file"]].get("header", {}), "manifest": info}
