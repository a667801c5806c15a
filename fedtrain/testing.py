"""Tiny synthetic federated datasets for tests and examples (not stand-ins for the paper's data).

Hierarchical linear model: silo ``k`` has ``w_k = θ + τ z_k`` (or, with
``clusters``, ``w_k = θ_{c(k)} + τ z_k``), features ``x ~ N(0, I_d)``; regression targets
``y = w_kᵀx + N(0, noise²)``, binary labels ``sign(w_kᵀx + N(0, noise²))`` in {−1, +1}.
"""
from __future__ import annotations

import json
import math
import uuid
from pathlib import Path

import numpy as np

from fedtrain.config import default_delta, paper_defaults
from fedtrain.ledger import PrivacyPlan, SiloLedger, noise_multipliers, spent_epsilons
from fedtrain.methods.registry import get_method

from fedtrain.data.base import FederatedData

__all__ = ["tiny_federated", "tiny_images", "fake_result", "FlakyRunner", "engine_vs_reference"]


def tiny_federated(task: str = "regression", *, num_silos: int = 5, dim: int = 4, n_range=(40, 80),
                   n_test: int | tuple[int, int] = 40, tau: float = 0.5, noise: float = 0.1, clusters: int = 0,
                   cluster_scale: float = 3.0, seed: int = 0, name: str = "tiny") -> FederatedData:
    """A small :class:`FederatedData` (``task`` 'regression' or 'binary'); ``clusters`` > 0 draws that
    many well-separated centres θ_c (scale ``cluster_scale``) and assigns silo k to centre ``k % clusters``.

    ``n_range = (lo, hi)``: each silo's training size is drawn uniformly from ``lo..hi``; ``n_test``: every
    silo's test size, or a range ``(lo, hi)`` to draw unequal test sizes (tests of test-count weighting
    need them: with equal counts a weighted and an unweighted mean coincide)."""
    if isinstance(n_test, (tuple, list)):
        if len(n_test) != 2 or not 1 <= int(n_test[0]) <= int(n_test[1]):
            raise ValueError(f"n_test must be a positive int or a range (lo, hi) with 1 <= lo <= hi (got {n_test!r})")
    elif int(n_test) < 1:
        raise ValueError(f"n_test must be a positive int or a range (lo, hi) with 1 <= lo <= hi (got {n_test!r})")
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(clusters, 1), dim)) * (cluster_scale if clusters else 1.0)
    tx, ty, sx, sy = [], [], [], []
    for k in range(num_silos):
        w = centres[k % max(clusters, 1)] + tau * rng.normal(size=dim)
        n = int(rng.integers(n_range[0], n_range[1] + 1))
        nt = int(rng.integers(n_test[0], n_test[1] + 1)) if isinstance(n_test, (tuple, list)) else int(n_test)
        x = rng.normal(size=(n + nt, dim))
        f = x @ w + noise * rng.normal(size=n + nt)
        y = f if task == "regression" else np.where(f >= 0, 1.0, -1.0)
        tx.append(x[:n]), ty.append(y[:n]), sx.append(x[n:]), sy.append(y[n:])
    info = {"tau": tau, "noise": noise, "clusters": clusters, "seed": seed,
            "cluster_of_silo": [k % max(clusters, 1) for k in range(num_silos)]}
    return FederatedData(name, task, tx, ty, sx, sy, real=False, info=info)


def tiny_images(*, num_silos: int = 4, shape: tuple[int, int, int] = (1, 12, 12), num_classes: int = 3,
                n_range=(20, 40), n_test: int = 20, noise: float = 0.5, seed: int = 0,
                name: str = "tiny-images") -> FederatedData:
    """A small synthetic multiclass image :class:`FederatedData` (``input_shape = shape``), for tests and
    benchmarks of the image models (not a stand-in for any paper dataset).

    Class ``c`` has a fixed random template image (entries N(0, 1)); an example is its class's template plus
    N(0, ``noise``²) pixel noise; silo ``k`` flips its images horizontally when ``k`` is odd (a little
    structured heterogeneity).  Labels are uniform over ``0..num_classes-1``; images are stored flattened
    channel-major (``x.reshape(-1, C, H, W)``)."""
    if len(shape) != 3 or min(shape) < 1:
        raise ValueError(f"shape must be (C, H, W) with positive sides (got {shape!r})")
    if int(num_classes) < 2:
        raise ValueError(f"num_classes must be >= 2 (got {num_classes!r})")
    rng = np.random.default_rng(seed)
    templates = rng.normal(size=(num_classes, *shape))
    tx, ty, sx, sy = [], [], [], []
    for k in range(num_silos):
        n = int(rng.integers(n_range[0], n_range[1] + 1))
        y = rng.integers(0, num_classes, size=n + n_test)
        x = templates[y] + noise * rng.normal(size=(n + n_test, *shape))
        if k % 2:
            x = x[..., ::-1]
        x = np.ascontiguousarray(x).reshape(n + n_test, -1)
        tx.append(x[:n]), ty.append(y[:n].astype(float)), sx.append(x[n:]), sy.append(y[n:].astype(float))
    return FederatedData(name, "multiclass", tx, ty, sx, sy, real=False, num_classes=int(num_classes),
                         info={"noise": noise, "seed": seed}, input_shape=tuple(int(v) for v in shape))


def engine_vs_reference(data: FederatedData, config, seeds: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Test metrics of ``seeds`` engine runs of ``config`` (seeds 0..) and of as many runs of the Opacus-per-silo
    reference (:func:`fedtrain.reference.reference_run`, seeds 100.., the engine's noise multipliers), and the
    standard error of the difference of their means, ``sqrt(s_E²/S + s_R²/S)`` (ddof = 1): the two-sample check
    of the reference tests, ``|m_E − m_R| ≤ 4·se``."""
    from fedtrain.engine import run_many
    from fedtrain.reference import reference_run

    eng = run_many([config.replace(seed=s) for s in range(seeds)], data)
    z = eng[0].noise_multipliers
    ref = [reference_run(config.replace(seed=100 + s), data, noise_multipliers=z, accountant_check=False)
           for s in range(seeds)]
    e = np.array([r.test_metric for r in eng])
    r = np.array([x.test_metric for x in ref])
    se = math.sqrt(e.var(ddof=1) / seeds + r.var(ddof=1) / seeds)
    return e, r, se


def fake_result(config, test_metric: float, *, metric: str = "mse", num_silos: int = 2, curve=None,
                identity: dict | None = None, **fields):
    """A :class:`~fedtrain.engine.RunResult` of ``config`` with the given metric (no training) and a privacy
    block that holds: the DP-SGD steps (and IFCA's selections) its method plans for silos of 10 batches (sampling
    rate 0.1), the noise multiplier calibrated for the config's ε (the rdp accountant's, so that a store's check of the claim, :mod:`fedtrain.store.claims`, passes),
    δ the config's (or the dataset's paper δ, else the engine's default for silos of 10 batches): for tests of stores, sweeps and summaries.  ``fields``
    override any field.  ``identity``: the data identity its ``data`` records (needed to put it in a store directly;
    a sweep fills in the identity of the data it loaded)."""
    from fedtrain.engine import RunResult

    k = num_silos
    eps = np.asarray(config.eps if isinstance(config.eps, tuple) else (config.eps,) * k, dtype=float)
    if config.delta is not None:
        delta = np.broadcast_to(np.asarray(config.delta, dtype=float), (k,)).copy()
    else:
        try:
            delta = np.full(k, float(paper_defaults(config.dataset)["delta"]))
        except ValueError:  # the engine's default for silos of 10 batches (q = 0.1)
            delta = np.full(k, default_delta(10 * int(config.batch_size)))

    cls = get_method(config.method)
    method = cls.__new__(cls)  # the method's plan for silos of 10 batches (q = 0.1), read from the config alone
    method.cfg = config
    q = np.full(k, 0.1)
    steps = np.full(k, config.rounds * (config.local_epochs + int(method.extra_epochs_per_round)) * 10, dtype=np.int64)
    selections = int(getattr(method, "selections", 0))
    sel_eps = float(config.select_eps_frac) * eps if selections else np.zeros(k)
    book = SiloLedger(k)
    book.record_dpsgd(steps)
    book.record_selections(selections)
    z = noise_multipliers(PrivacyPlan(steps, np.full(k, selections, dtype=np.int64), q), eps, delta, q,
                          config.accountant, selection_eps=sel_eps, cache=False)
    spent = np.where(np.isfinite(eps), spent_epsilons(book, z, delta, q, config.accountant, selection_eps=sel_eps),
                     math.inf)
    if selections:
        fields.setdefault("extras", {"clusters": [0] * k, "selections": selections,
                                     "select_eps": [float(e) for e in sel_eps]})
    kw = dict(config=config, metric=metric, test_metric=float(test_metric), silo_metrics=np.full(k, float(test_metric)),
              test_sizes=np.full(k, 10, dtype=np.int64), noise_multipliers=z, eps_spent=spent,
              ledger=book.summary(q),
              delta=delta, accountant=config.accountant, steps=steps, wall_time=0.0,
              curve_rounds=None if curve is None else np.arange(1, len(curve) + 1),
              curve=None if curve is None else np.asarray(curve, dtype=float),
              data={"name": config.dataset, "real": True, **({"identity": dict(identity)} if identity else {})})
    kw.update(fields)
    return RunResult(**kw)


class FlakyRunner:
    """A sweep runner (:func:`fedtrain.sweep.run_sweep`'s ``runner``) with injected faults, for tests of
    executors' retries and resumption; picklable, its state in files, so it works across Ray workers.

    Every call is recorded as a file ``call-*.json`` in ``folder`` (the keys of its configurations).  A batch
    whose first configuration's key is in ``fail_keys`` (all batches when ``fail_keys`` is ``None``) raises
    ``RuntimeError("injected fault")`` on its first ``fail_times`` calls, then runs
    :func:`fedtrain.engine.run_many`.
    """

    def __init__(self, folder, fail_times: int = 1, fail_keys=None):
        self.folder = str(folder)
        self.fail_times = int(fail_times)
        self.fail_keys = None if fail_keys is None else set(fail_keys)

    def calls(self) -> list[list[str]]:
        """The configuration keys of every call so far (in no particular order)."""
        return [json.loads(p.read_text()) for p in sorted(Path(self.folder).glob("call-*.json"))]

    def __call__(self, configs, data):
        from fedtrain.engine import run_many

        folder = Path(self.folder)
        folder.mkdir(parents=True, exist_ok=True)
        keys = [c.key() for c in configs]
        (folder / f"call-{uuid.uuid4().hex}.json").write_text(json.dumps(keys))
        if self.fail_keys is None or keys[0] in self.fail_keys:
            marker = folder / f"failed-{keys[0]}"
            done = len(marker.read_text()) if marker.exists() else 0
            if done < self.fail_times:
                marker.write_text("x" * (done + 1))
                raise RuntimeError("injected fault")
        return run_many(configs, data)
