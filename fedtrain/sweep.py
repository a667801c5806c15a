"""Sweeps: grids of :class:`~fedtrain.config.RunConfig`, run through the results store.

:func:`expand_grid` builds the Cartesian product of some fields' values over a base config and
validates every configuration before anything runs.  :func:`run_sweep` loads each dataset once,
checks every configuration against its data (δ_k < n_k^{-1.1}, per-silo budget lengths, devices)
*before training anything*, skips the configurations already in the store, and trains the rest with
:func:`fedtrain.engine.run_many` (which stacks configurations that differ only in ε, δ, λ, η, clip,
seed or accountant) in chunks, storing each run as soon as its chunk finishes.  An interrupted sweep
loses at most its current chunk; re-running it resumes.  :func:`summarize` turns rows into
mean ± standard deviation over seeds.
"""
from __future__ import annotations

import itertools
import math
import os
import sys
import time
from collections import OrderedDict
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from fedtheory._validation import check_integer_at_least
from fedtrain.config import RunConfig
from fedtrain.data.base import FederatedData
from fedtrain.results import ResultsStore, jsonable

__all__ = ["expand_grid", "run_sweep", "summarize", "select_rows", "load_config_data", "dataset_summary", "Runner",
           "book_grid", "full_scale", "FULL_ENV", "REDUCED", "REDUCED_EPS", "REDUCED_STANDIN_LAMBDAS",
           "gaussian_lambda_sweep", "grid_note"]

#: ``runner(configs, data) -> list[result]``; the default is :func:`fedtrain.engine.run_many`.
Runner = Callable[[Sequence[RunConfig], FederatedData], Sequence[Any]]


def expand_grid(base: RunConfig | Mapping[str, Any], **axes: Iterable[Any]) -> list[RunConfig]:
    """All configurations ``base`` with every combination of ``axes`` (field name → values).

    ``expand_grid(dict(dataset="school", method="mrmtl", rounds=50), lam=[0.1, 1], seed=[0, 1])`` gives 4
    configs (the last axis varies fastest).  Every configuration is validated here: a bad value
    raises ``ValueError`` naming the field and the offending combination, before anything runs.
    """
    base_dict = base.to_dict() if isinstance(base, RunConfig) else dict(base)
    valid = set(RunConfig.__dataclass_fields__)
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
    from fedtrain.data.registry import load_dataset

    return load_dataset(config.dataset, data_dir=data_dir, **dict(config.dataset_options))


def dataset_summary(data: FederatedData) -> dict[str, Any]:
    """What the results store records about the data: name, real or stand-in, sizes, scalar ``info``."""
    info = {k: v for k, v in data.info.items() if isinstance(v, (str, int, float, bool, tuple)) and k != "file"}
    return {"name": data.name, "real": bool(data.real), "task": data.task, "num_silos": data.num_silos,
            "dim": data.dim, "train_size": int(data.train_sizes.sum()), "test_size": int(data.test_sizes.sum()),
            "info": jsonable(info)}


def _validate_against(config: RunConfig, data: FederatedData) -> None:
    from fedtrain.engine import validate

    validate(config, data)


def _batch_order(c: RunConfig) -> str:
    """Sort key putting configurations that the engine can stack next to each other."""
    return c.replace(eps=math.inf, delta=None, lam=0.0, lr=1.0, clip=1.0, seed=0, accountant="rdp").key()


def _progress_enabled(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def run_sweep(
    configs: Sequence[RunConfig],
    *,
    store: ResultsStore | str | os.PathLike | None = None,
    data: FederatedData | Mapping[str, FederatedData] | None = None,
    data_dir: str | os.PathLike | None = None,
    runner: Runner | None = None,
    chunk_size: int = 32,
    progress: bool | None = None,
) -> list[dict]:
    """Run every configuration not yet in ``store``; return all rows in the order of ``configs``.

    Parameters
    ----------
    store : a :class:`ResultsStore` or its folder; ``None`` keeps rows in memory only.
    data : the dataset to use (for sweeps over one dataset) or a mapping ``config.dataset -> data``;
        otherwise each dataset is loaded with :func:`load_config_data` (``data_dir`` for real files).
    runner : ``runner(configs, data) -> results`` (default :func:`fedtrain.engine.run_many`).
    chunk_size : configurations handed to the runner at once; each chunk is stored when it finishes.
    progress : tqdm bar over configurations; ``None`` = only when stdout is a terminal.
    """
    chunk_size = int(check_integer_at_least("chunk_size", chunk_size, 1))
    configs = list(configs)
    for c in configs:
        if not isinstance(c, RunConfig):
            raise ValueError(f"configs must be RunConfig objects (got {type(c).__name__})")
    if store is not None and not isinstance(store, ResultsStore):
        store = ResultsStore(store)
    memory: dict[str, dict] = {}

    def finished(c: RunConfig) -> bool:
        return c.key() in memory or (store is not None and store.has(c))

    # group by dataset, dropping duplicate keys
    groups: "OrderedDict[tuple, list[RunConfig]]" = OrderedDict()
    seen: set[str] = set()
    for c in configs:
        if c.key() in seen:
            continue
        seen.add(c.key())
        gkey = (c.dataset, jsonable(dict(c.dataset_options)).__repr__())
        groups.setdefault(gkey, []).append(c)

    # phase 1: load data and validate everything that will run
    todo: list[tuple[FederatedData, list[RunConfig]]] = []
    for (name, _), group in groups.items():
        pending = [c for c in group if not finished(c)]
        if not pending:
            continue
        if isinstance(data, FederatedData):
            d = data
        elif isinstance(data, Mapping) and name in data:
            d = data[name]
        else:
            d = load_config_data(group[0], data_dir)
        for c in pending:
            try:
                _validate_against(c, d)
            except ValueError as exc:
                raise ValueError(f"configuration {c.method} eps={c.eps} lam={c.lam} lr={c.lr} seed={c.seed} "
                                 f"on {c.dataset}: {exc}") from exc
        todo.append((d, sorted(pending, key=_batch_order)))

    # phase 2: train in chunks, store as we go
    if runner is None:
        from fedtrain.engine import run_many

        def runner(cs, d):  # noqa: E306
            return run_many(cs, d)

    total = sum(len(p) for _, p in todo)
    bar = None
    if total and _progress_enabled(progress):
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc="sweep", unit="run")
    try:
        for d, pending in todo:
            summary = dataset_summary(d)
            for start in range(0, len(pending), chunk_size):
                chunk = pending[start:start + chunk_size]
                t0 = time.perf_counter()
                results = list(runner(chunk, d))
                if len(results) != len(chunk):
                    raise RuntimeError(f"runner returned {len(results)} results for {len(chunk)} configurations")
                wall = (time.perf_counter() - t0) / len(chunk)
                for c, r in zip(chunk, results):
                    if store is not None:
                        memory[c.key()] = store.put(c, r, dataset=summary, wall_s=wall)
                    else:
                        memory[c.key()] = {"key": c.key(), "config": c.to_dict(), "result": jsonable(r),
                                           "dataset": summary, "wall_s": wall}
                if bar is not None:
                    bar.update(len(chunk))
    finally:
        if bar is not None:
            bar.close()

    rows = []
    for c in configs:
        row = memory.get(c.key())
        if row is None and store is not None:
            row = store.get(c)
        rows.append(row)
    return rows


def select_rows(rows: Iterable[Mapping[str, Any]], configs: Sequence[RunConfig]) -> list[dict]:
    """The rows of ``configs`` (in their order) out of a larger list of rows (e.g. a union of grids)."""
    by_key = {r["key"]: r for r in rows}
    missing = [c for c in configs if c.key() not in by_key]
    if missing:
        raise ValueError(f"{len(missing)} configuration(s) have no row, e.g. {missing[0].to_dict()}")
    return [dict(by_key[c.key()]) for c in configs]


def _num(v: Any) -> float:
    if isinstance(v, str):
        return float(v)  # "inf", "nan"
    return float(v)


def summarize(rows: Iterable[Mapping[str, Any]], by: Sequence[str] = ("method", "eps", "lam", "lr"),
              value: str = "test_metric") -> list[dict[str, Any]]:
    """Group rows by config fields ``by`` and give the mean and standard deviation over the group (seeds).

    Each output dict holds the ``by`` fields, ``mean``, ``std`` (sample std, ddof=1; 0 for one run),
    ``n`` (runs), ``seeds``, ``metric`` and ``eps_spent_max`` (largest per-silo ε certified in the group).
    """
    groups: "OrderedDict[tuple, list[Mapping]]" = OrderedDict()
    for row in rows:
        cfg = row["config"]
        groups.setdefault(tuple(repr(cfg.get(b)) for b in by), []).append(row)
    out = []
    for rs in groups.values():
        vals = np.array([_num(r["result"][value]) for r in rs])
        spent = [_num(e) for r in rs for e in (r["result"].get("eps_spent") or [])]
        entry = {b: rs[0]["config"].get(b) for b in by}
        entry.update(mean=float(vals.mean()), std=float(vals.std(ddof=1)) if len(vals) > 1 else 0.0,
                     n=len(vals), seeds=[r["config"]["seed"] for r in rs],
                     metric=rs[0]["result"].get("metric"),
                     eps_spent_max=max(spent) if spent else None)
        out.append(entry)
    return out


# --------------------------------------------------------------------------------------------------
# the book's grids (reduced by default, paper scale with FEDBOOK_FULL=1)
# --------------------------------------------------------------------------------------------------
FULL_ENV = "FEDBOOK_FULL"


def full_scale() -> bool:
    """Whether the book runs its paper-scale grids (environment ``FEDBOOK_FULL=1``, set by ``make book FULL=1``)."""
    return os.environ.get(FULL_ENV, "0").strip() == "1"


#: The reduced grids' settings (each notebook states them in its captions).
REDUCED = {
    "school": dict(rounds=40, lr=0.03, seeds=(0, 1)),
    "vehicle-standin": dict(rounds=20, lr=0.01, seeds=(0, 1)),
    "gleam-standin": dict(rounds=20, lr=0.01, seeds=(0, 1)),
}
#: Reduced ε grids of the stand-ins (Fig. 3 and Fig. 5 panels): one level where FedAvg beats local, the band
#: where MR-MTL beats both (see :data:`fedtrain.data.standins.STANDIN_PRESETS`), and no privacy.
REDUCED_EPS = {"vehicle-standin": (0.5, 1.0, 2.0, math.inf), "gleam-standin": (1.0, 2.0, 4.0, math.inf)}
#: Reduced λ grid of MR-MTL on the stand-ins (part of the paper's grid, extended by 30 for the high-privacy end).
REDUCED_STANDIN_LAMBDAS = (0.3, 1.0, 3.0, 10.0, 30.0)


def grid_note(dataset: str, *, full: bool | None = None) -> str:
    """Caption text naming the grid a figure shows: ``"paper-scale grid"``, or the reduced grid's rounds,
    learning rate and number of seeds (from :data:`REDUCED`).  ``full`` defaults to :func:`full_scale`."""
    if full is None:
        full = full_scale()
    if full:
        return "paper-scale grid"
    if dataset not in REDUCED:
        raise ValueError(f"dataset must be one of {sorted(REDUCED)}, got {dataset!r}")
    r = REDUCED[dataset]
    return f"reduced grid: {r['rounds']} rounds, η={r['lr']}, {len(r['seeds'])} seeds"


def book_grid(figure: str, dataset: str, *, full: bool | None = None) -> list[RunConfig]:
    """The configurations behind one figure of the empirical chapters.

    ``figure`` is ``"fig2"`` (local vs FedAvg vs finetuning, learning curves), ``"fig3"`` (privacy-utility
    of all methods), ``"fig4"`` (privacy overhead: IFCA selecting every round, Ditto's extra pass) or
    ``"fig5"`` (MR-MTL against λ).  Settings are the paper's (App. C.4: batch, clip, δ per dataset) except
    where the reduced grid says otherwise (fewer rounds, one learning rate, 2 seeds, fewer ε and λ); with
    ``full=True`` (default: :func:`full_scale`) the paper's rounds, λ and learning-rate grids and 5 seeds.
    Figures 2, 4 and 5 share runs with each other and with Fig. 3 where the settings coincide, so a
    results store computes them once.
    """
    from fedtrain.config import LAMBDA_GRID, paper_defaults

    check_choice_ = ("fig2", "fig3", "fig4", "fig5")
    if figure not in check_choice_:
        raise ValueError(f"figure must be one of {', '.join(check_choice_)} (got {figure!r})")
    full = full_scale() if full is None else bool(full)
    inf = math.inf
    base = dict(paper_defaults(dataset), dataset=dataset)
    school = dataset.startswith("school")
    if full:
        seeds = (0, 1, 2, 3, 4)
        lrs = (0.01, 0.03, 0.1)  # a subset of the paper's LR_GRID: hours rather than days of CPU
        lams = LAMBDA_GRID
        eps_grid = {"school": (1.0, 2.0, 3.0, 4.0, 6.0, 8.0, inf), "vehicle": (0.1, 0.25, 0.5, 1.0, 2.0, inf),
                    "gleam": (0.5, 1.0, 1.5, 2.0, 4.0, inf)}[dataset.split("-")[0]]
    else:
        red = REDUCED["school" if school else dataset] if (school or dataset in REDUCED) else REDUCED["vehicle-standin"]
        base["rounds"] = red["rounds"]
        seeds, lrs = red["seeds"], (red["lr"],)
    configs: list[RunConfig] = []

    def add(methods: Sequence[str], eps: Sequence[float], lam_values: Sequence[float] = (0.0,), lr_values=None,
            **extra: Any) -> None:
        for m in methods:
            configs.extend(expand_grid({**base, **extra, "method": m}, eps=list(eps),
                                       lam=list(lam_values) if m in ("mrmtl", "ditto", "mocha", "ifca-mrmtl") else [0.0],
                                       lr=list(lr_values or lrs), seed=list(seeds)))

    base["eval_every"] = 5 if full else 4  # learning curves for every figure (Fig. 2 plots them)
    if figure == "fig2":
        eps = (1.0, 2.0, inf) if full else (1.0, inf)
        if full:
            lrs = (0.01,)  # the paper fixes eta = 0.01 in Figs. 2 and A2
        add(("local", "fedavg", "finetune"), eps)
    elif figure == "fig5":
        eps = eps_grid if full else (1.0, 6.0, inf) if school else REDUCED_EPS.get(dataset, (0.5, 2.0, inf))
        if full:
            lrs = (0.01,) if school else (0.01, 0.03, 0.1)
        add(("local", "fedavg"), eps)
        add(("mrmtl",), eps, lams if full else ((0.3, 1.0, 3.0, 10.0, 30.0) if school else REDUCED_STANDIN_LAMBDAS))
    elif figure == "fig3":
        eps = eps_grid if full else ((1.0, 6.0, inf) if school else REDUCED_EPS.get(dataset, (0.5, 2.0, inf)))
        if full or school:
            add(("local", "fedavg", "finetune"), eps)
            add(("mrmtl", "ditto"), eps, lams if full else (1.0, 3.0))
            add(("mocha",), eps, lams if full else (0.03, 0.3))
            add(("ifca",), eps, select_frac=0.1)
        else:  # reduced stand-in panels: the endpoints and MR-MTL (the same runs as Fig. 5's)
            add(("local", "fedavg"), eps)
            add(("mrmtl",), eps, REDUCED_STANDIN_LAMBDAS)
    else:  # fig4
        eps = eps_grid if full else ((1.0, 6.0, inf) if school else (0.5, 2.0, inf))
        add(("local", "fedavg"), eps)
        add(("mrmtl",), eps, lams if full else ((1.0, 3.0) if school else REDUCED_STANDIN_LAMBDAS))
        add(("ditto",), eps, lams if full else ((1.0, 3.0) if school else (1.0, 3.0, 10.0)))
        add(("ifca",), eps, select_frac=1.0)
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
    for s in data_seeds:
        opts = dict(num_silos=int(num_silos), n=int(n), tau=float(tau), sigma=float(sigma), test="centres",
                    n_test=1, seed=int(s))
        base = dict(dataset="gaussian", dataset_options=opts, rounds=rounds, batch_size=batch_size, clip=clip,
                    lr=lr, prox_mode=prox_mode, seed=int(s))
        configs = expand_grid({**base, "method": "mrmtl"}, eps=list(eps_values), lam=lams)
        configs += expand_grid({**base, "method": "fedavg"}, eps=list(eps_values))
        for row in run_sweep(configs, store=store, progress=False):
            c = row["config"]
            key = (c["method"], _num(c["eps"]), float(c["lam"]))
            per.setdefault(key, []).append(_num(row["result"]["test_metric"]))
            deltas, accs = privacy.setdefault(_num(c["eps"]), (set(), set()))
            deltas.update(_num(d) for d in row["result"].get("delta") or ())
            accs.add(row["result"].get("accountant"))
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
