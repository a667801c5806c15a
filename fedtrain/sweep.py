"""Sweeps: grids of configurations of either privacy unit, run through the results store.

:func:`expand_grid` builds the Cartesian product of some fields' values over a base config and
validates every configuration before anything runs.  :func:`run_sweep` loads each dataset once,
checks every configuration against its data (δ_k < n_k^{-1.1}, per-silo budget lengths, devices)
*before training anything*, skips the configurations already in the store, and trains the rest with
:func:`fedtrain.engine.run_many` (which stacks configurations that differ only in ε, δ, λ, η, clip,
seed or accountant) in chunks, storing each run as soon as its chunk finishes.  An interrupted sweep
loses at most its current chunk; re-running it resumes.  The chunks run in this process or as Ray tasks
(``executor="ray"``, :mod:`fedtrain.executors`); either way only this process writes the store.  :func:`summarize` turns rows into
mean ± standard deviation over seeds (runs that diverged are counted and left out).

Both privacy units go through :func:`run_sweep`: a grid may hold :class:`~fedtrain.config.RunConfig` (a record of a
silo) and :class:`~fedtrain.clientdp.config.FedHDPConfig` (a client) alike.  Each configuration's registry entry
names its configuration class, its runner and its validator (:data:`fedtrain.methods.registry.UNIT_CODE`); the
sweep groups the grid by dataset and unit, validates each configuration with its unit's validator before anything
trains, and hands each batch to its unit's runner (:func:`fedtrain.engine.run_many`,
:func:`fedtrain.clientdp.trainer.run_many`) unless a ``runner`` is given.

Resuming: the engine stacks a chunk's configurations, and a stacked computation's float32 rounding depends on its
batch-mates (1–2 ulps), so the chunks are cut from the whole grid of a dataset (sorted by what the engine stacks),
never from the configurations still missing: a chunk with any row missing runs whole, and stores only the rows that
were missing.  A sweep interrupted anywhere (between two chunks, inside one while its rows were being written, or
with some chunks failed under Ray) and run again gives every row the bits an uninterrupted sweep of the same grid
gives it.

Repeats as the paper runs them: :func:`repeat_config` gives repeat ``r`` of a configuration, which
re-splits every silo with its own split seed (the dataset's split option,
:data:`fedtrain.data.registry.SPLIT_SEED_OPTIONS`, set to ``s0 + 1000 r``) and trains with seed
``config.seed + 1000 r``; ``s0`` is the split seed the configuration names (default 0).  The stride
:data:`REPEAT_SEED_STRIDE` = 1000 is the paper's code's (its repeat r uses seed ``seed + 1000 r`` for the
split and the training; our splits use :func:`numpy.random.default_rng`, not scikit-learn's, so the
splits themselves differ from the paper's).  Both seeds are
part of the configuration and so of its key: the results store keeps one row per repeat, and a
repeat computed alone equals the same repeat inside :func:`run_repeats`.  Rows are
:class:`~fedtrain.engine.RunResult` objects.  The book's grids live in :mod:`fedtrain.presets`.
"""
from __future__ import annotations

import itertools
import math
import os
import sys
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from fedtheory.validation import check_integer_at_least
from fedtrain.config import OptionsConfig, RunConfig
from fedtrain.data.base import FederatedData, data_identity, identity_digest
from fedtrain.encoding import encode
from fedtrain.executors import Batch, Executor, SweepTaskError, get_executor
from fedtrain.results import ResultsStore
from fedtrain.store.claims import calibrated_noise
from fedtrain.data.registry import SPLIT_SEED_OPTIONS, generator_identity, load_dataset, split_seed_option
from fedtrain.methods.registry import RECORD, option_params
from fedtrain.params import params_of

if TYPE_CHECKING:  # pragma: no cover
    from fedtrain.engine import RunResult

__all__ = ["expand_grid", "run_sweep", "REPEAT_SEED_STRIDE", "repeat_config", "repeat_configs", "run_repeats", "summarize", "select_rows", "load_config_data", "Runner",
           "gaussian_lambda_sweep", "gaussian_lambda_configs"]

#: Seed step between repeats (:func:`repeat_config`), the paper's code's ``seed + 1000 * r``.
REPEAT_SEED_STRIDE = 1000

#: ``runner(configs, data) -> list[RunResult]``; the default is :func:`fedtrain.engine.run_many`.
Runner = Callable[[Sequence[RunConfig], FederatedData], Sequence[Any]]


def expand_grid(base: RunConfig | Mapping[str, Any], **axes: Iterable[Any]) -> list[RunConfig]:
    """All configurations ``base`` with every combination of ``axes`` (field name → values).

    ``expand_grid(dict(dataset="school", method="mrmtl", rounds=50), lam=[0.1, 1], seed=[0, 1])`` gives 4
    configs (the last axis varies fastest).  Every configuration is validated here: a bad value
    raises ``ValueError`` naming the field and the offending combination, before anything runs.
    """
    base_dict = base.to_flat() if isinstance(base, RunConfig) else dict(base)
    valid = set(params_of(RunConfig)) | set(option_params()) | {"options"}
    for name in list(base_dict) + list(axes):
        if name not in valid:
            raise ValueError(f"unknown RunConfig field {name!r}; valid fields: {sorted(valid)}")
    names = list(axes)
    values = []
    for name in names:
        vals = list(axes[name]) if not isinstance(axes[name], (str, bytes)) else [axes[name]]
        if not vals:
            raise ValueError(f"grid axis {name!r} has no values")
        values.append(vals)
    out = []
    for combo in itertools.product(*values):
        kw = dict(base_dict)
        kw.update(zip(names, combo))
        try:
            out.append(RunConfig.from_dict(kw))
        except ValueError as exc:
            where = ", ".join(f"{n}={v!r}" for n, v in zip(names, combo))
            raise ValueError(f"invalid configuration in the grid ({where}): {exc}") from exc
    return out


def load_config_data(config: RunConfig, data_dir: str | os.PathLike | None = None) -> FederatedData:
    """Load the dataset a config names (``config.dataset`` with ``config.dataset_options``)."""
    return load_dataset(config.dataset, data_dir=data_dir, **dict(config.dataset_options))


def _validate_against(config: OptionsConfig, data: FederatedData) -> None:
    """The checks of ``config`` on ``data`` before anything trains: its privacy unit's validator (registry)."""
    config.spec.validator(config, data)


def _unit_runner(configs: Sequence[OptionsConfig], data: FederatedData) -> Sequence[Any]:
    """The default runner: the runner of the batch's privacy unit (registry; a batch holds one unit).  Module-level,
    so that the Ray executor can pickle it."""
    return configs[0].spec.runner(configs, data)


def _batch_order(c: OptionsConfig) -> str:
    """Sort key putting configurations that the engine can stack next to each other (the client-level runner
    stacks nothing: its configurations in key order)."""
    if c.spec.unit != RECORD:
        return c.key()
    return c.replace(eps=math.inf, delta=None, lam=0.0, lr=1.0, clip=1.0, seed=0, accountant="rdp").key()


def _described(c: OptionsConfig) -> str:
    """A configuration in the words of a validation error."""
    if c.spec.unit != RECORD:
        return f"{c.method} r={c.effective_ratio:g} seed={c.seed}"
    return f"{c.method} eps={c.eps} lam={c.lam} lr={c.lr} seed={c.seed}"


def _stale_noise(configs: list[RunConfig], store: ResultsStore, identity: dict) -> list[RunConfig]:
    """The stored rows of ``configs`` whose noise multipliers are not those the calibration gives their plan now
    (:func:`fedtrain.store.claims.calibrated_noise`): trained with another calibration cache's answer, they are
    another computation than this one would run, so they are retrained (and replaced) rather than served."""

    stored = [(c, store.get(c, identity)) for c in configs if c.spec.unit == RECORD]
    stored = [(c, r) for c, r in stored if r is not None and not isinstance(r.config, dict) and r.ledger]
    now = calibrated_noise([r for _, r in stored])
    return [c for (c, r), z in zip(stored, now) if not np.array_equal(np.asarray(r.noise_multipliers, dtype=float), z)]


def _progress_enabled(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def run_sweep(
    configs: Sequence[OptionsConfig],
    *,
    store: ResultsStore | str | os.PathLike | None = None,
    data: FederatedData | Mapping[str, FederatedData] | None = None,
    data_dir: str | os.PathLike | None = None,
    runner: Runner | None = None,
    chunk_size: int = 32,
    progress: bool | None = None,
    executor: "str | Executor | None" = None,
    executor_options: Mapping[str, Any] | None = None,
) -> list["RunResult"]:
    """Run every configuration not yet in ``store``; return all results in the order of ``configs``.

    ``configs``: configurations of either privacy unit (:class:`~fedtrain.config.RunConfig`,
    :class:`~fedtrain.clientdp.config.FedHDPConfig`; module docstring).

    Parameters
    ----------
    store
        a :class:`ResultsStore` or its folder; ``None`` keeps rows in memory only.
    data
        the dataset to use (for sweeps over one dataset) or a mapping ``config.dataset -> data``;
        otherwise each dataset is loaded with :func:`load_config_data` (``data_dir`` for real files).
    runner
        ``runner(configs, data) -> results`` (default: the runner of the batch's privacy unit in the method
        registry, :func:`fedtrain.engine.run_many` or :func:`fedtrain.clientdp.trainer.run_many`); for the ray
        executor it must be picklable (a module-level function or object).
    chunk_size
        configurations handed to the runner at once (one batch; one Ray task); each batch is
        stored when it finishes.
    progress
        tqdm bar over configurations; ``None`` = only when stdout is a terminal.
    executor
        where the batches run (:mod:`fedtrain.executors`): ``"local"`` (default, this process),
        ``"ray"`` (Ray tasks; ``executor_options``: ``address``, ``num_cpus``, ``retries``, ``threads``), or an
        :class:`~fedtrain.executors.Executor` (left open for the caller).  Only this process writes the store;
        batches that still fail after their retries raise :class:`~fedtrain.executors.SweepTaskError` once
        the others are stored.

    Notes
    -----
    The store's folder is checked to be writable before anything trains (a sweep whose rows are all stored
    writes nothing and needs no write access).  A configuration's row is looked up by the configuration and
    the identity of its data (:meth:`fedtrain.data.base.FederatedData.identity`: the content of the files read,
    or the generator and its options), so rows trained on other data are never returned.  Every result
    records the data it was trained on (``result.data``: name, file and SHA-256 for real data, identity).
    """
    chunk_size = int(check_integer_at_least("chunk_size", chunk_size, 1))
    configs = list(configs)
    for c in configs:
        if not isinstance(c, OptionsConfig) or not isinstance(c, c.spec.config_class):
            raise ValueError(f"configs must be RunConfig or FedHDPConfig objects, each of its method's privacy unit "
                             f"(got {type(c).__name__})")
    if store is not None and not isinstance(store, ResultsStore) and not getattr(store, "read_only", False):
        store = ResultsStore(store)
    memory: dict[str, Any] = {}
    identity_of: dict[str, dict] = {}  # config key -> identity of the data it runs on

    todo = _plan(_groups(configs), data=data, data_dir=data_dir, store=store, chunk_size=chunk_size, memory=memory,
                 identity_of=identity_of)
    if todo and store is not None:  # before any training (a complete store needs no writing)
        store.check_writable()
    _train(todo, store=store, memory=memory, progress=progress, executor=executor,
           executor_options=executor_options, runner=runner)

    rows = []
    for c in configs:
        row = memory.get(c.key())
        if row is None and store is not None:
            row = store.get(c, identity_of[c.key()])
        rows.append(row)
    return rows


def _groups(configs: Sequence[OptionsConfig]) -> "OrderedDict[tuple, list[OptionsConfig]]":
    """``configs`` grouped by dataset, dataset options and privacy unit (in first-seen order), duplicate keys
    dropped."""
    groups: "OrderedDict[tuple, list[OptionsConfig]]" = OrderedDict()
    seen: set[str] = set()
    for c in configs:
        if c.key() in seen:
            continue
        seen.add(c.key())
        gkey = (c.dataset, encode(dict(c.dataset_options)).__repr__(), c.spec.unit)
        groups.setdefault(gkey, []).append(c)
    return groups


def _plan(groups, *, data, data_dir, store, chunk_size: int, memory: dict, identity_of: dict) -> list:
    """Phase 1 of :func:`run_sweep`: per group of configurations (one dataset, one privacy unit), the identity of
    its data (generated data: from its name and options; files: loaded and hashed), the rows already stored for it,
    then the data loaded and every configuration that will run validated against it.  Returns ``(data, chunks,
    waiting keys)`` per group with something to train; fills ``identity_of`` (configuration key -> identity)."""

    def finished(c: OptionsConfig, identity: dict) -> bool:
        return c.key() in memory or (store is not None and store.has(c, identity))

    todo: list[tuple[FederatedData, list, set]] = []
    for (name, _, _), group in groups.items():
        if isinstance(data, FederatedData):
            d = data
        elif isinstance(data, Mapping) and name in data:
            d = data[name]
        else:
            d = None
        identity = d.identity() if d is not None else generator_identity(name, dict(group[0].dataset_options))
        if identity is None:  # read from files: the identity is their content
            d = load_config_data(group[0], data_dir)
            identity = d.identity()
        for c in group:
            identity_of[c.key()] = identity
        pending = [c for c in group if not finished(c, identity)]
        if store is not None and not getattr(store, "read_only", False):
            waiting_now = {c.key() for c in pending}
            pending += _stale_noise([c for c in group if c.key() not in waiting_now], store, identity)
        if not pending:
            continue
        # the batches are cut from the whole grid (module docstring, "Resuming"), so that a resumed sweep runs each
        # row in the batch an uninterrupted one runs it in: the same stacked computation, the same bits
        whole = sorted(group, key=_batch_order)
        waiting = {c.key() for c in pending}
        chunks = [whole[start:start + chunk_size] for start in range(0, len(whole), chunk_size)]
        chunks = [ch for ch in chunks if any(c.key() in waiting for c in ch)]
        pending = [c for ch in chunks for c in ch]
        if store is not None and getattr(store, "read_only", False):  # the committed store: never trains
            raise ValueError(store.missing_message(pending))
        if d is None:
            d = load_config_data(group[0], data_dir)
        for c in pending:
            try:
                _validate_against(c, d)
            except ValueError as exc:
                raise ValueError(f"configuration {_described(c)} on {c.dataset}: {exc}") from exc
        todo.append((d, chunks, waiting))
    return todo


def _train(todo: list, *, store, memory: dict, progress, executor, executor_options, runner) -> None:
    """Phase 2 of :func:`run_sweep`: train the planned batches (one runner call each) on the executor; the driver
    checks each batch's results and stores its rows (``memory`` gets them too); batches that failed after their
    retries raise :class:`~fedtrain.executors.SweepTaskError` once the others are stored."""
    batches: list[Batch] = []
    summaries = []
    to_store: list[set[str]] = []  # per batch, the keys it stores (a row already stored is never rewritten)
    for d, chunks, waiting in todo:
        summary = d.summary()
        for chunk in chunks:
            batches.append(Batch(chunk, d))
            summaries.append(summary)
            to_store.append(waiting)
    total = sum(len(b.configs) for b in batches)
    bar = None
    if total and _progress_enabled(progress):
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc="sweep", unit="run")
    owned = not isinstance(executor, Executor)
    ex = get_executor(executor, **dict(executor_options or {})) if batches else None
    failures: list[tuple[Batch, str]] = []
    stored = 0
    outcomes = ex.run(batches, runner or _unit_runner) if ex is not None else iter(())
    try:
        for i, results in outcomes:
            chunk = batches[i].configs
            if isinstance(results, BaseException):
                failures.append((batches[i], f"{type(results).__name__}: {results}"))
                continue
            _check_batch_results(chunk, results, summaries[i])
            for c, r in zip(chunk, results):  # the whole batch checked first: never a partial batch stored
                if c.key() not in to_store[i]:
                    continue  # stored before (its batch-mates were not): the stored row stays
                memory[c.key()] = store.put(r) if store is not None else r
                stored += 1
            if bar is not None:
                bar.update(len(chunk))
    finally:
        if hasattr(outcomes, "close"):
            outcomes.close()  # an executor's clean-up (Ray: cancel the tasks still running) on Ctrl-C or an error
        if bar is not None:
            bar.close()
        if ex is not None and owned:
            ex.close()
    if failures:
        raise SweepTaskError(failures, stored)


def _check_batch_results(chunk: Sequence[RunConfig], results: Sequence["RunResult"], summary: dict) -> None:
    """Check a runner's ``results`` for the batch ``chunk`` before anything of it is stored: one result per
    configuration, each of its own configuration and trained on the data the sweep loaded (``summary``, the data's
    :meth:`~fedtrain.data.base.FederatedData.summary`, which a result without a data record gets); ``RuntimeError``
    otherwise."""
    if len(results) != len(chunk):
        raise RuntimeError(f"runner returned {len(results)} results for {len(chunk)} configurations")
    for c, r in zip(chunk, results):
        if r.config.key() != c.key():
            raise RuntimeError(f"runner returned the result of another configuration ({r.config})")
    for c, r in zip(chunk, results):
        if not r.data:
            r.data = summary
        elif data_identity(r.data) is None:
            r.data = {**r.data, "identity": summary["identity"]}
        elif identity_digest(data_identity(r.data)) != identity_digest(summary["identity"]):
            raise RuntimeError(f"runner returned a result trained on other data ({data_identity(r.data)}) "
                               f"than the sweep loaded ({summary['identity']})")


def repeat_config(config: RunConfig, r: int) -> RunConfig:
    """Repeat ``r`` (0-based) of ``config``: split seed ``s0 + 1000 r`` for every silo and training seed
    ``config.seed + 1000 r`` (stride :data:`REPEAT_SEED_STRIDE`).

    ``s0`` is the value of the dataset's split-seed option in ``config.dataset_options``
    (:func:`fedtrain.data.registry.split_seed_option`; for a stand-in without ``split_seed``, its ``seed``;
    else 0).  The split seed is written into ``dataset_options`` explicitly, so it is part of the key.
    """
    r = int(check_integer_at_least("r", r, 0))
    opts = dict(config.dataset_options)
    name = split_seed_option(config.dataset)
    s0 = opts.get(name, opts.get("seed", 0) if name == "split_seed" else 0)
    s0 = int(check_integer_at_least(f"dataset option {name}", s0, 0))
    opts[name] = s0 + REPEAT_SEED_STRIDE * r
    return config.replace(seed=config.seed + REPEAT_SEED_STRIDE * r, dataset_options=opts)


def repeat_configs(config: RunConfig, repeats: int) -> list[RunConfig]:
    """``[repeat_config(config, r) for r in range(repeats)]`` (``repeats`` >= 1)."""
    repeats = int(check_integer_at_least("repeats", repeats, 1))
    return [repeat_config(config, r) for r in range(repeats)]


def run_repeats(config: RunConfig, repeats: int, **sweep_options: Any) -> dict[str, Any]:
    """Run ``repeats`` repeats of ``config`` (:func:`repeat_config`) through :func:`run_sweep` (``sweep_options``:
    ``store``, ``data_dir``, ``runner``, ``progress``...; a store makes it resumable, one row per repeat).

    Returns the :func:`summarize` entry of the repeats (``mean``, ``std`` with ``ddof`` = 1, ``n``,
    ``values`` per repeat, ``seeds``, ``split_seeds``, ``diverged``) plus ``rows`` (the
    :class:`~fedtrain.engine.RunResult` of each repeat, in repeat order).
    """
    if "data" in sweep_options:
        raise ValueError("run_repeats loads each repeat's split itself; pass data_dir, not data")
    rows = run_sweep(repeat_configs(config, repeats), **sweep_options)
    entry = summarize(rows, by=())[0]
    entry["rows"] = rows
    return entry


def select_rows(rows: Iterable["RunResult"], configs: Sequence[RunConfig]) -> list["RunResult"]:
    """The results of ``configs`` (in their order) out of a larger list (e.g. a union of grids)."""
    by_key = {r.key: r for r in rows}
    missing = [c for c in configs if c.key() not in by_key]
    if missing:
        raise ValueError(f"{len(missing)} configuration(s) have no result, e.g. {missing[0].to_dict()}")
    return [by_key[c.key()] for c in configs]


def _split_seed(config: RunConfig) -> int:
    opts = dict(config.dataset_options)
    name = SPLIT_SEED_OPTIONS.get(config.dataset, "seed")
    value = opts.get(name, opts.get("seed", 0) if name == "split_seed" else 0)  # every loader's default is 0
    return int(value)


def summarize(rows: Iterable["RunResult"], by: Sequence[str] = ("method", "eps", "lam", "lr"),
              value: str = "test_metric") -> list[dict[str, Any]]:
    """Group results by config fields ``by`` and give the mean and standard deviation over the group (seeds or repeats).

    Each output dict holds the ``by`` fields, ``mean``, ``std`` (sample std with ``ddof`` = 1; 0 for one run),
    ``ddof``, ``n`` (runs averaged), ``values`` (their metrics, in row order), ``seeds`` (their training
    seeds), ``split_seeds`` (their data split seeds, :data:`fedtrain.data.registry.SPLIT_SEED_OPTIONS`;
    the loaders' default 0 where the config names none), ``diverged`` (seeds whose metric is not finite: reported, never
    averaged; ``mean`` and ``std`` are NaN when every run diverged), ``metric`` and ``eps_spent_max`` (largest per-silo
    ε certified in the group).  A configuration listed twice (same key) counts once.
    """
    groups: "OrderedDict[tuple, list]" = OrderedDict()
    seen: set[str] = set()
    for r in rows:
        if r.key in seen:
            continue
        seen.add(r.key)
        groups.setdefault(tuple(repr(getattr(r.config, b)) for b in by), []).append(r)
    out = []
    for rs in groups.values():
        ok = [r for r in rs if not r.diverged and math.isfinite(float(getattr(r, value)))]
        vals = np.array([float(getattr(r, value)) for r in ok])
        spent = [float(e) for r in rs for e in (r.eps_spent if r.eps_spent is not None else [])]
        entry = {b: getattr(rs[0].config, b) for b in by}
        entry.update(mean=float(vals.mean()) if len(vals) else math.nan,
                     std=float(vals.std(ddof=1)) if len(vals) > 1 else 0.0 if len(vals) else math.nan,
                     ddof=1, n=len(vals), values=[float(v) for v in vals], seeds=[r.config.seed for r in ok],
                     split_seeds=[_split_seed(r.config) for r in ok],
                     diverged=[r.config.seed for r in rs if r.diverged],
                     metric=rs[0].metric, eps_spent_max=max(spent) if spent else None)
        out.append(entry)
    return out


def gaussian_lambda_configs(*, eps_values: Sequence[float], lams: Sequence[float], num_silos: int = 50, n: int = 50,
                            tau: float = 0.25, sigma: float = 1.0, data_seeds: Sequence[int] = tuple(range(8)),
                            rounds: int = 30, batch_size: int = 10, clip: float = 3.0, lr: float = 0.05,
                            prox_mode: str = "post-noise") -> list[RunConfig]:
    """The configurations :func:`gaussian_lambda_sweep` runs (same arguments, without ``store``): per dataset
    seed, MR-MTL at every (ε, λ) and FedAvg at every ε."""
    configs: list[RunConfig] = []
    for s in data_seeds:
        opts = dict(num_silos=int(num_silos), n=int(n), tau=float(tau), sigma=float(sigma), test="centres",
                    n_test=1, seed=int(s))
        base = dict(dataset="gaussian", dataset_options=opts, rounds=rounds, batch_size=batch_size, clip=clip,
                    lr=lr, prox_mode=prox_mode, seed=int(s))
        configs += expand_grid({**base, "method": "mrmtl"}, eps=list(eps_values), lam=[float(v) for v in lams])
        configs += expand_grid({**base, "method": "fedavg"}, eps=list(eps_values))
    return configs


def gaussian_lambda_sweep(
    *,
    eps_values: Sequence[float],
    lams: Sequence[float],
    num_silos: int = 50,
    n: int = 50,
    tau: float = 0.25,
    sigma: float = 1.0,
    data_seeds: Sequence[int] = tuple(range(8)),
    rounds: int = 30,
    batch_size: int = 10,
    clip: float = 3.0,
    lr: float = 0.05,
    prox_mode: str = "post-noise",
    store: ResultsStore | str | os.PathLike | None = None,
) -> dict[float, dict[str, np.ndarray]]:
    """Train MR-MTL (every λ in ``lams``, ``0`` = local) and FedAvg with DP-SGD on the theory's Gaussian
    mean-estimation data, for each ε, over independent datasets (``data_seeds``; training seed = data seed).

    The data are :func:`fedtrain.data.gaussian_mean_estimation` with ``test="centres"``, so each run's test
    MSE is the estimation error ``E[(ŵ_k(λ) - w_k)²]`` averaged over its silos.  Returns, per ε,
    ``{"lam", "mean", "se", "fedavg_mean", "fedavg_se", "runs", "fedavg_runs", "delta", "accountant"}`` where
    ``delta`` is the per-silo δ the runs used (largest over runs and silos; ``None`` without privacy) and
    ``accountant`` the accountant that certified them; mean and standard
    error are over datasets and ``runs[i, s]`` is λ_i's error on dataset s (for paired comparisons) (independent draws of centres, data and DP noise, the average the closed forms describe).
    ``prox_mode="post-noise"`` adds the proximal gradient after clipping and noising (the paper's §5 update,
    the form the theory analyses).
    """
    lams = [float(v) for v in lams]
    per: dict[tuple, list[float]] = {}
    privacy: dict[float, tuple[set, set]] = {}
    setup = dict(eps_values=eps_values, lams=lams, num_silos=num_silos, n=n, tau=tau, sigma=sigma, rounds=rounds,
                 batch_size=batch_size, clip=clip, lr=lr, prox_mode=prox_mode)
    for s in data_seeds:
        configs = gaussian_lambda_configs(**setup, data_seeds=(s,))
        for r in run_sweep(configs, store=store, progress=False):
            c = r.config
            key = (c.method, float(c.eps), float(c.lam))
            per.setdefault(key, []).append(float(r.test_metric))
            deltas, accs = privacy.setdefault(float(c.eps), (set(), set()))
            deltas.update(float(d) for d in (r.delta if r.delta is not None else ()))
            accs.add(r.accountant)
    out: dict[float, dict[str, np.ndarray]] = {}
    for eps in eps_values:
        e = float(eps)
        vals = np.array([per[("mrmtl", e, lam)] for lam in lams])
        fed = np.array(per[("fedavg", e, 0.0)])
        k = vals.shape[1]
        out[e] = {"lam": np.array(lams), "mean": vals.mean(1),
                  "se": vals.std(1, ddof=1) / np.sqrt(k) if k > 1 else np.zeros(len(lams)),
                  "fedavg_mean": float(fed.mean()), "fedavg_se": float(fed.std(ddof=1) / np.sqrt(k)) if k > 1 else 0.0,
                  "runs": vals, "fedavg_runs": fed,
                  "delta": max(privacy[e][0]) if math.isfinite(e) and privacy[e][0] else None,
                  "accountant": ", ".join(sorted(str(a) for a in privacy[e][1] if a)) if math.isfinite(e) else None}
    return out
