"""The training engine: ``run(config, data)`` and ``run_many(configs, data)``.

Every method of the MR-MTL paper (Sections 3–5, App. C–D) runs here at equal per-silo privacy
budgets under *silo-specific sample-level DP*: each silo runs DP-SGD on its own records with a noise
multiplier calibrated for its own (ε_k, δ_k), number of steps and Poisson sampling rate; everything
the server does is post-processing.  Accounting (:mod:`fedtrain.ledger`): each method declares its
privacy plan, the trainer appends every local pass (and IFCA's selections) to a per-silo ledger as
it runs, a run whose ledger differs from its plan stops with ``LedgerMismatchError``, and
``eps_spent`` is computed from the ledger by the accountant (never read from the calibration cache).  A
private silo whose noise multiplier is 0 or not finite stops the run before training, and one whose
ledger ε exceeds its target stops it before a result is returned (``PrivacyGuaranteeError``): such a
run returns, and a sweep stores, nothing.

Vectorization: the parameters of all K silos — and of S configurations of a sweep (e.g. every
λ × learning rate of one method) — are one tensor ``(S, K, D)`` (``D`` = the model's flat parameter
count, :mod:`fedtrain.models`); one DP-SGD step updates all of them at once (:mod:`fedtrain.dpsgd_step`),
with per-example gradients from the model's closed form (linear) or ``torch.func`` (any model).
Each configuration has its own random stream (seeded by its ``seed``), so ``run_many`` returns what ``run`` returns for each configuration (up to float32
summation order).  The Opacus-per-silo path in :mod:`fedtrain.reference` checks the engine.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from fedtrain import ledger
from fedtrain.config import RunConfig, default_delta, paper_defaults
from fedtrain.data.base import FederatedData
from fedtrain.dpsgd_step import SAMPLERS, PoissonBatcher, dp_direction, draw_noise
from fedtrain.models import build_model, loss_for_task
from fedtrain.encoding import decode_float, decode_floats, encode
from fedtrain.methods import get_method

__all__ = ["RunResult", "run", "run_many", "validate", "resolve_budgets", "Trainer"]

#: The Poisson sampler of ENGINE_VERSION 5 (:class:`fedtrain.dpsgd_step.PoissonBatcher`).
DEFAULT_SAMPLER = "geometric"


@dataclass
class RunResult:
    """The outcome of one run (what the results store holds, one JSON file per run).

    ``test_metric`` is the paper's metric (MSE for regression, accuracy otherwise) averaged over
    silos weighted by their test counts (App. C.4); ``silo_metrics[k]`` is silo k's own.  A run whose
    metric is not finite (NaN or inf: training diverged) has :attr:`diverged` set; summaries report it
    and leave it out of means.  Privacy:
    ``noise_multipliers[k]`` (z_k; 0 for a non-private silo), ``eps_spent[k]`` (ε certified by
    ``accountant`` for the steps actually taken, ≤ the target), ``delta[k]``, ``steps[k]`` (DP-SGD
    steps run by silo k, all passes included), ``adjacency`` (the neighbouring-dataset notion the
    guarantee is for, :data:`fedtrain.ledger.ADJACENCY`), ``ledger`` (per silo: the sampling rates
    charged, DP-SGD steps and private selections run).  ``curve`` holds the test metric after the rounds in
    ``curve_rounds`` when ``config.eval_every > 0``.  ``wall_time`` is seconds (for a config run in a
    batch of S by :func:`run_many`: the batch's time divided by S).  ``extras``: method-specific
    (IFCA: ``clusters``, ``selections``, ``select_eps``).  ``models``: the final
    weights each silo is evaluated with, only with ``keep_models=True``: ``(K, d+1, o)`` for the
    linear model (bias last), the flat ``(K, D)`` parameters otherwise (:meth:`~fedtrain.models.FunctionalModel.unflatten`).
    ``data``: what the data were (:meth:`fedtrain.data.base.FederatedData.summary`: name, real or
    stand-in, sizes, and for real data the file read and its SHA-256).
    """

    config: RunConfig
    metric: str
    test_metric: float
    silo_metrics: np.ndarray
    test_sizes: np.ndarray
    noise_multipliers: np.ndarray
    eps_spent: np.ndarray
    delta: np.ndarray
    accountant: str
    steps: np.ndarray
    wall_time: float
    curve_rounds: np.ndarray | None = None
    curve: np.ndarray | None = None
    extras: dict = field(default_factory=dict)
    models: np.ndarray | None = None
    adjacency: str = ledger.ADJACENCY
    ledger: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The config's key (:meth:`RunConfig.key`), the results store's file name."""
        return self.config.key()

    @property
    def diverged(self) -> bool:
        """Whether training diverged (the test metric is NaN or infinite)."""
        return not math.isfinite(self.test_metric)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-safe encoding (:func:`fedtrain.encoding.encode`: arrays as lists, ``inf``/``nan`` as strings)."""
        out = {f.name: encode(getattr(self, f.name)) for f in dataclasses.fields(self)}
        out["key"] = self.key
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunResult":
        """Inverse of :meth:`to_dict` (array fields back to numpy arrays; unknown keys are ignored)."""
        kw: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name not in d:
                continue
            v = d[f.name]
            if f.name == "config":
                v = RunConfig.from_dict(v)
            elif "ndarray" in str(f.type):
                v = None if v is None else np.asarray(decode_floats(v))
            elif str(f.type) == "float":
                v = decode_float(v)
            kw[f.name] = v
        return cls(**kw)


# --------------------------------------------------------------------------------------------------
# validation against the data
# --------------------------------------------------------------------------------------------------
def _per_silo(name: str, value, k: int) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.size == 1:
        return np.full(k, float(arr[0]))
    if arr.size != k:
        raise ValueError(f"{name} must be one number or one per silo: the data have {k} silos, got {arr.size} values")
    return arr


def resolve_budgets(config: RunConfig, data: FederatedData) -> tuple[np.ndarray, np.ndarray]:
    """Per-silo ``(eps, delta)`` of ``config`` on ``data``; checks the paper's rule δ_k < n_k^{-1.1}.

    ``delta=None`` → the dataset's paper δ (:data:`fedtrain.presets.PAPER_DEFAULTS`) if the dataset
    name is known, else :func:`fedtrain.config.default_delta` of each silo's training size.
    """
    k, n = data.num_silos, data.train_sizes
    eps = _per_silo("eps", config.eps, k)
    if config.delta is None:
        try:
            delta = np.full(k, float(paper_defaults(config.dataset)["delta"]))
        except ValueError:
            delta = np.array([default_delta(int(v)) for v in n])
    else:
        delta = _per_silo("delta", config.delta, k)
    bound = n.astype(float) ** -1.1
    bad = np.flatnonzero((delta >= bound) & np.isfinite(eps))
    if bad.size:
        i = bad[0]
        raise ValueError(f"delta must be < n_k^-1.1 for every private silo (paper App. C.4): silo {i} has "
                         f"n_k={n[i]}, so delta must be < {bound[i]:.3g} (got {delta[i]:.3g})")
    return eps, delta


def validate(config: RunConfig, data: FederatedData) -> None:
    """Check, without training, that ``config`` can run on ``data``; raise ``ValueError`` naming the problem.

    Checks the device (``cuda`` needs CUDA), the task, the model (``convnet`` needs image data with
    an ``input_shape`` and a multiclass task), at least 2 training records per silo, IFCA's
    ``num_clusters <= K`` and RDP accountant, and the privacy budgets (:func:`resolve_budgets`: per-silo
    ``eps``/``delta`` lengths, δ_k < n_k^{-1.1}).  :func:`run_many` and :func:`fedtrain.sweep.run_sweep`
    call it on every configuration before anything trains.
    """
    _check_compatible(config, data)
    resolve_budgets(config, data)


def _check_compatible(config: RunConfig, data: FederatedData) -> None:
    if config.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was requested but torch.cuda.is_available() is False "
                         f"(torch {torch.__version__}); use device='cpu'")
    if data.task not in ("regression", "binary", "multiclass"):
        raise ValueError(f"data.task must be 'regression', 'binary' or 'multiclass' (got {data.task!r})")
    if data.task == "multiclass" and not data.num_classes:
        raise ValueError("multiclass data need num_classes")
    if config.model == "convnet" and data.input_shape is None:
        raise ValueError(f"model='convnet' needs image data with an input_shape (C, H, W); dataset "
                         f"{data.name!r} is tabular (d={data.dim}): use model='linear' or 'mlp'")
    if config.model == "convnet" and data.task != "multiclass":
        raise ValueError(f"model='convnet' is the paper's image classifier: it needs a multiclass task "
                         f"(dataset {data.name!r} has task {data.task!r})")
    if (data.train_sizes < 2).any():
        raise ValueError(f"every silo needs at least 2 training records (got min {data.train_sizes.min()})")
    check = getattr(config.spec.cls, "check_config", None)  # the method's own checks (registry)
    if check is not None:
        check(config, data)


# --------------------------------------------------------------------------------------------------
# the trainer: shared state and primitives used by the methods
# --------------------------------------------------------------------------------------------------
class Trainer:
    """State of S stacked configurations of one method on one dataset, and the primitives methods use.

    Attributes the methods read: ``S, K, model, loss, lr (S,), lam (S,), agg (K,)`` aggregation
    weights, ``m (K,)`` steps per epoch, ``D`` (flat parameter count: parameters are ``(S, K, D)``), ``gens`` (one generator per distinct seed, see below), ``cfg`` (the
    first configuration: the non-batchable fields are common to all), ``eps, delta (S,K)``.

    Random streams: every random draw (batches, noise, IFCA's centres and selections) depends only on
    the configuration's seed, not on its λ, η or ε.  When the configurations come sorted by seed with
    equally many per seed (a λ × η grid over seeds), the Trainer keeps one generator per seed
    (``U`` of them, ``S = U·c``), draws once per seed and shares the draws (and the gathered
    batches) across the ``c`` configurations of that seed: a configuration sees exactly the stream
    it would see alone.  Otherwise it keeps one generator per configuration (``U = S``).

    ``model_options``: execution options of :func:`fedtrain.models.build_model` (``silo_chunk``;
    ``closed_form=False`` forces the linear model onto the generic ``torch.func`` path).
    """

    def __init__(self, configs: Sequence[RunConfig], data: FederatedData, model_options: dict | None = None,
                 sampler: str = DEFAULT_SAMPLER):
        self.configs = list(configs)
        self.cfg = cfg = self.configs[0]
        self.data = data
        self.device = torch.device(cfg.device)
        self.dtype = torch.float32
        self.S, self.K = len(self.configs), data.num_silos
        self.loss = loss_for_task(data.task)
        out = data.num_classes if data.task == "multiclass" else 1
        self.model = build_model(cfg.model, data.dim, out, dtype=self.dtype, device=self.device,
                                 input_shape=data.input_shape, **(model_options or {}))
        self.D = self.model.num_params
        self.n = data.train_sizes
        self.m = ledger.steps_per_epoch(self.n, cfg.batch_size)
        self.q = q = ledger.sample_rates(self.n, cfg.batch_size)  # the rate the ledger charges
        self.x, self.y = self._pad(data.train_x, data.train_y)
        self.xt, self.yt = self._pad(data.test_x, data.test_y)
        self.nt = data.test_sizes
        tmask = torch.arange(self.xt.shape[1])[None, :] < torch.as_tensor(self.nt)[:, None]
        self.test_mask = tmask.to(self.device, self.dtype)
        trmask = torch.arange(self.x.shape[1])[None, :] < torch.as_tensor(self.n)[:, None]
        self.train_mask = trmask.to(self.device, self.dtype)
        self.batcher = PoissonBatcher(self.x, self.y, torch.as_tensor(self.n, device=self.device),
                                      torch.as_tensor(q, device=self.device), sampler=sampler)
        self.denom = torch.as_tensor(ledger.expected_batch_sizes(self.n, cfg.batch_size), device=self.device,
                                     dtype=self.dtype)
        w = self.n / self.n.sum() if cfg.aggregation == "weighted" else np.full(self.K, 1.0 / self.K)
        self.agg = torch.as_tensor(w, device=self.device, dtype=self.dtype)
        self.lr = self._vec([c.lr for c in self.configs])
        self.lam = self._vec([c.lam for c in self.configs])
        budgets = [resolve_budgets(c, data) for c in self.configs]
        self.eps = np.stack([b[0] for b in budgets])
        self.delta = np.stack([b[1] for b in budgets])
        seeds = [int(c.seed) for c in self.configs]
        uniq = list(dict.fromkeys(seeds))
        block = len(self.configs) // len(uniq)
        if seeds == [u for u in uniq for _ in range(block)] and block * len(uniq) == len(seeds):
            gen_seeds = uniq
        else:
            gen_seeds, block = seeds, 1
        self.U, self.block = len(gen_seeds), block
        self._gen_seeds = list(gen_seeds)
        self.gens = []
        for sd in gen_seeds:
            g = torch.Generator(device=self.device)
            g.manual_seed(sd)
            self.gens.append(g)
        self.ledger = ledger.SiloLedger(self.K)
        self.noise_multipliers = np.zeros((self.S, self.K))
        self.clip = torch.full((self.S, self.K), math.inf, device=self.device, dtype=self.dtype)
        self.noise_std = torch.zeros((self.S, self.K), device=self.device, dtype=self.dtype)

    # -- set-up helpers ------------------------------------------------------------------------------
    def expand(self, t: torch.Tensor) -> torch.Tensor:
        """Per-seed draws ``(U, ...)`` → per-configuration ``(S, ...)``."""
        if self.block == 1:
            return t
        return t[:, None].expand(self.U, self.block, *t.shape[1:]).reshape(self.S, *t.shape[1:])

    def _vec(self, values) -> torch.Tensor:
        return torch.as_tensor(np.asarray(values, dtype=float), device=self.device, dtype=self.dtype)

    def _pad(self, xs, ys):
        k, nmax, d = len(xs), max(x.shape[0] for x in xs), xs[0].shape[1]
        npdt = torch.empty((), dtype=self.dtype).numpy().dtype  # built in the engine's dtype: one copy, not two
        x = np.zeros((k, nmax, d + 1), dtype=npdt)
        y = np.zeros((k, nmax), dtype=npdt)
        for i, (a, b) in enumerate(zip(xs, ys)):
            x[i, : a.shape[0], :d] = a
            x[i, : a.shape[0], d] = 1.0
            y[i, : a.shape[0]] = b
        return (torch.as_tensor(x, device=self.device, dtype=self.dtype),
                torch.as_tensor(y, device=self.device, dtype=self.dtype))

    def init_params(self, per_silo: bool = True) -> torch.Tensor:
        """The model's initial parameters, ``(S, K, D)`` (``per_silo``) or ``(S, D)``, shared by all silos.

        A model with a random initialization (:attr:`~fedtrain.models.FunctionalModel.random_init`)
        draws it once per seed from a generator of its own (seeded by ``(seed, 1)``), so that the
        training streams are those of a deterministic initialization.
        """
        if self.model.random_init:
            draws = []
            for sd in self._gen_seeds:
                g = torch.Generator(device=self.device)
                g.manual_seed(int(np.random.SeedSequence([sd, 1]).generate_state(1)[0]))
                draws.append(self.model.init((), g))
            w = self.expand(torch.stack(draws))
        else:
            w = self.model.init((self.S,))
        return w[:, None].expand(self.S, self.K, self.D).clone() if per_silo else w

    def set_noise(self, z: np.ndarray) -> None:
        """Install per-(config, silo) noise multipliers ``z (S,K)`` (0 → non-private: no clip, no noise)."""
        self.noise_multipliers = np.asarray(z, dtype=float)
        clip = np.array([[c.clip] for c in self.configs]) * np.ones((1, self.K))
        private = np.isfinite(self.eps)
        self.clip = torch.as_tensor(np.where(private, clip, math.inf), device=self.device, dtype=self.dtype)
        self.noise_std = torch.as_tensor(np.where(private, self.noise_multipliers * clip, 0.0),
                                         device=self.device, dtype=self.dtype)

    # -- primitives ------------------------------------------------------------------------------------
    def local_train(self, w: torch.Tensor, epochs: int, prox_fn=None) -> torch.Tensor:
        """``epochs`` epochs of DP-SGD for every (config, silo) from ``w (S,K,D)``.

        ``prox_fn(w) -> (S,K,D)``: gradient of a parameter-only regularizer (already times λ), or
        ``None``.  Silo k takes ``m_k`` steps per epoch (masked afterwards).
        """
        m_max = int(self.m.max())
        active_all = torch.as_tensor(np.arange(m_max)[:, None] < self.m[None, :], device=self.device)
        # η·[j < m_k] per step, (S,K,1): the same products as η·direction·mask (the mask is 0 or 1)
        lr_steps = [self.lr[:, None, None] * active_all[j].to(self.dtype)[None, :, None] for j in range(m_max)]
        for _ in range(epochs):
            for j, (batch, noise) in enumerate(self._draws(m_max, w)):
                prox = prox_fn(w) if prox_fn is not None else None
                direction, _ = dp_direction(self.model, self.loss, w, batch, clip=self.clip, noise=noise,
                                            noise_std=self.noise_std, denom=self.denom, prox=prox,
                                            prox_mode=self.cfg.prox_mode)
                w = w - lr_steps[j] * direction
            self.ledger.record_dpsgd(self.m)  # the privacy ledger: what each silo actually ran
        return w

    def _draws(self, steps: int, w: torch.Tensor):
        """The batches and standard normal noise ``(S,K,D)`` of ``steps`` DP-SGD steps, step by step.

        Random streams (one generator per seed): ``geometric`` sampler (engine version 5) — the
        uniforms of all the epoch's batches, then the normals of all its noise, each in one call per
        generator; ``sorted-keys`` (versions ≤ 4) — per step, the batch's uniforms then the noise.
        """
        shape = tuple(w.shape[1:])
        if self.batcher.sampler == "sorted-keys":
            for _ in range(steps):
                batch = self.batcher.sample_batch(self.gens)
                yield batch, self.expand(draw_noise(self.gens, shape, w))
            return
        batches = self.batcher.sample_epoch(self.gens, steps)
        noise = draw_noise(self.gens, (steps,) + shape, w)  # (U, steps, K, D)
        for j, batch in enumerate(batches):
            yield batch, self.expand(noise[:, j])

    def average(self, delta: torch.Tensor) -> torch.Tensor:
        """Server aggregation ``Σ_k a_k Δ_k`` of ``delta (S,K,D)`` → ``(S,D)``."""
        return torch.einsum("k,skd->sd", self.agg, delta)

    def silo_metrics(self, w: torch.Tensor) -> torch.Tensor:
        """Test metric of every (config, silo), each silo with its model ``w (S,K,D)`` → ``(S,K)``."""
        f = self.model.forward(w, self.xt[None])
        per = self.loss.metric(f, self.yt[None]) * self.test_mask[None]
        return per.sum(-1) / torch.as_tensor(self.nt, device=self.device, dtype=self.dtype)

    def weighted(self, silo: torch.Tensor) -> torch.Tensor:
        """Silo metrics weighted by test counts (App. C.4) → ``(S,)``."""
        wt = torch.as_tensor(self.nt / self.nt.sum(), device=self.device, dtype=self.dtype)
        return silo @ wt

    def train_scores(self, centers: torch.Tensor) -> torch.Tensor:
        """Mean selection score of every centre ``(S,G,D)`` on every silo's training set → ``(S,K,G)``."""
        f = self.model.forward(centers[:, :, None], self.x[None, None])  # (S,G,K,N,o)
        sc = self.loss.selection_score(f, self.y[None, None], self.cfg.ifca_loss_clip) * self.train_mask[None, None]
        mean = sc.sum(-1) / torch.as_tensor(self.n, device=self.device, dtype=self.dtype)
        return mean.permute(0, 2, 1)


# --------------------------------------------------------------------------------------------------
# public entry points
# --------------------------------------------------------------------------------------------------
def _run_group(configs: list[RunConfig], data: FederatedData, progress: bool, keep_models: bool,
               model_options: dict | None = None, sampler: str = DEFAULT_SAMPLER) -> list[RunResult]:
    t0 = time.perf_counter()
    order = sorted(range(len(configs)), key=lambda i: configs[i].seed)  # seed blocks share random draws
    configs = [configs[i] for i in order]
    trainer = Trainer(configs, data, model_options, sampler)
    method = get_method(trainer.cfg.method)(trainer)
    trainer.ledger.plan = method.privacy_plan()
    z = np.stack([method.noise_multipliers(i) for i in range(trainer.S)])
    for i, c in enumerate(configs):  # PrivacyGuaranteeError: a private silo without noise never trains
        ledger.check_noise_multipliers(z[i], trainer.eps[i], trainer.ledger.plan, c.accountant)
    trainer.set_noise(z)
    method.setup()
    rounds = trainer.cfg.rounds
    curve_rounds, curve = [], []
    it = range(rounds)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc=f"{trainer.cfg.method} ×{trainer.S}", leave=False)
    for t in it:
        method.round(t)
        ev = trainer.cfg.eval_every
        if ev and ((t + 1) % ev == 0 or t + 1 == rounds):
            curve_rounds.append(t + 1)
            curve.append(trainer.weighted(trainer.silo_metrics(method.eval_weights())).cpu().numpy())
    final = method.eval_weights()
    silo = trainer.silo_metrics(final)
    models = trainer.model.export(final).detach().cpu().numpy().astype(float) if keep_models else None
    weighted = trainer.weighted(silo).cpu().numpy()
    silo = silo.cpu().numpy()
    trainer.ledger.check_complete()  # LedgerMismatchError unless every silo ran exactly its plan
    summary = trainer.ledger.summary(trainer.q)
    wall = (time.perf_counter() - t0) / trainer.S
    results = []
    for i, c in enumerate(configs):
        spent = method.spent_epsilons(i)
        ledger.check_spent(spent, trainer.eps[i], c.accountant)  # PrivacyGuaranteeError: no result is returned
        results.append(RunResult(
            config=c, metric=trainer.loss.metric_name, test_metric=float(weighted[i]),
            silo_metrics=silo[i].astype(float), test_sizes=trainer.nt.copy(),
            noise_multipliers=trainer.noise_multipliers[i].copy(), eps_spent=spent,
            delta=trainer.delta[i].copy(), accountant=c.accountant, steps=trainer.ledger.dpsgd_steps.copy(),
            wall_time=wall,
            curve_rounds=np.array(curve_rounds, dtype=np.int64) if curve_rounds else None,
            curve=np.array([cv[i] for cv in curve], dtype=float) if curve_rounds else None,
            extras=method.extras(i), models=None if models is None else models[i],
            adjacency=ledger.ADJACENCY, ledger=dict(summary)))
    back = [None] * len(results)
    for pos, i in enumerate(order):
        back[i] = results[pos]
    return back


def _group_key(c: RunConfig) -> str:
    return c.replace(eps=math.inf, delta=None, lam=0.0, lr=1.0, clip=1.0, seed=0, accountant="rdp").key()


def run(config: RunConfig, data: FederatedData, *, progress: bool = False, keep_models: bool = False,
        model_options: dict | None = None, sampler: str = DEFAULT_SAMPLER) -> RunResult:
    """Train ``config.method`` on ``data`` with per-silo DP-SGD and return its :class:`RunResult`.

    ``keep_models=True`` stores the final per-silo weights in :attr:`RunResult.models`.
    ``model_options``: execution options of :func:`fedtrain.models.build_model` that change nothing but
    float32 rounding (``silo_chunk``: silos per vectorized chunk of the generic gradient path;
    ``closed_form=False``: the linear model's generic ``torch.func`` path).
    ``sampler``: the Poisson sampler (:data:`fedtrain.dpsgd_step.SAMPLERS`; both are exactly Poisson sampling at
    the rate the ledger charges).  The default ``"geometric"`` is what :data:`~fedtrain.config.ENGINE_VERSION`
    5 and the results store mean; ``"sorted-keys"`` reproduces the random streams of engine versions ≤ 4
    (tests compare it with numbers recorded from them).  Results of a non-default sampler must not go into
    the results store (its key does not name the sampler).
    Raises ``ValueError`` (before any training) when the config does not fit the data: per-silo
    ``eps``/``delta`` of the wrong length, δ_k ≥ n_k^{-1.1}, ``device='cuda'`` without CUDA, IFCA with
    more clusters than silos or a non-RDP accountant.
    """
    return run_many([config], data, progress=progress, keep_models=keep_models, model_options=model_options,
                    sampler=sampler)[0]


def run_many(configs: Sequence[RunConfig], data: FederatedData, *, progress: bool = False,
             max_batch: int = 64, keep_models: bool = False, model_options: dict | None = None,
             sampler: str = DEFAULT_SAMPLER) -> list[RunResult]:
    """Run many configurations on one dataset; results in input order.

    Configurations that differ only in ``eps, delta, lam, lr, clip, seed, accountant`` are stacked
    along a leading dimension (at most ``max_batch`` at a time) and trained together, each with its
    own random stream; so ``run_many(cs, d)[i]`` equals ``run(cs[i], d)`` up to float32 rounding.
    Random draws depend only on the seed, so configurations sharing a seed (a λ × η grid) share the
    draws and the gathered batches when every seed has equally many configurations (see Trainer).
    All configurations must name the same dataset (``dataset`` and ``dataset_options``).
    ``progress`` shows a tqdm bar per batch; ``keep_models`` stores the final weights in each result;
    ``model_options`` and ``sampler`` as in :func:`run`.
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS} (got {sampler!r})")
    configs = list(configs)
    if not configs:
        return []
    for c in configs:
        if not isinstance(c, RunConfig):
            raise ValueError(f"configs must be RunConfig objects (got {type(c).__name__})")
        if (c.dataset, dict(c.dataset_options)) != (configs[0].dataset, dict(configs[0].dataset_options)):
            raise ValueError("run_many needs configs of one dataset: got "
                             f"{configs[0].dataset!r} {dict(configs[0].dataset_options)} and "
                             f"{c.dataset!r} {dict(c.dataset_options)}")
        validate(c, data)
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(configs):
        groups.setdefault(_group_key(c), []).append(i)
    out: list[RunResult | None] = [None] * len(configs)
    summary = data.summary()
    for idx in groups.values():
        for start in range(0, len(idx), max_batch):
            chunk = idx[start:start + max_batch]
            for i, r in zip(chunk, _run_group([configs[i] for i in chunk], data, progress, keep_models,
                                                 model_options, sampler)):
                r.data = dict(summary)
                out[i] = r
    return out  # type: ignore[return-value]
