"""Reference implementation: one Opacus ``PrivacyEngine`` per silo, written the way Opacus' tutorials do it.

It exists to check :mod:`fedtrain.engine` (tests/engine/test_fedtrain_engine_reference.py) and to time it
(benchmarks/bench_engine.py); it is slow (a Python loop over silos and steps, Opacus hooks).  It
shares nothing with the engine except :class:`~fedtrain.config.RunConfig`, the data and the
sampling convention of :mod:`fedtrain.ledger` (``q_k = min(B, n_k)/n_k``, ``m_k = max(1, ⌊n_k/B⌋)``
steps per epoch): the noise multiplier is calibrated by Opacus' own
``opacus.accountants.utils.get_noise_multiplier`` and the spent ε read from an Opacus accountant.

Per silo ``k``: ``nn.Linear(d, o)`` (zero init), ``torch.optim.SGD(lr)``, and
``PrivacyEngine.make_private(noise_multiplier=z_k, max_grad_norm=c, loss_reduction="mean")`` over a
``DataLoader`` whose batch sampler is Opacus' ``UniformWithReplacementSampler(sample_rate=q_k,
steps=m_k)`` (Poisson sampling).  Opacus derives ``expected_batch_size`` from ``len(loader)``, so it is
set to ``q_k n_k`` explicitly, the engine's normalization.

Models: the config's ``model``.  ``linear`` as above; ``convnet``: :func:`fedtrain.models.convnet_module`
(the ``nn.Module`` equal to :class:`~fedtrain.models.ConvNetModel`), initialized from
:meth:`ConvNetModel.init <fedtrain.models.ConvNetModel.init>` with the reference's own generator (the same
distribution as the engine's initialization, a different draw), softmax cross-entropy loss and accuracy
(multiclass data with an ``input_shape``).  ``mlp`` is not supported here.

Methods: ``local``, ``fedavg``, ``mrmtl``.  MR-MTL's proximal term:

* ``prox_mode="post-noise"``: ``λ(w − w̄)`` is added to ``p.grad`` after Opacus privatized it (a
  parameter-only term added to the loss would be silently dropped by Opacus, whose grad samplers see only
  the layers' activations);
* ``prox_mode="clip-together"``: a custom Opacus grad sampler (``register_grad_sampler``) adds
  ``λ(w − w̄)`` to every example's gradient, so Opacus clips it with the example (``linear`` only:
  for the ConvNet the reference supports ``post-noise`` and raises ``ValueError`` otherwise).
"""
from __future__ import annotations

import math
import time
import warnings

import numpy as np
import torch
from torch import nn

from fedtrain import ledger as privacy
from fedtrain.config import RunConfig
from fedtrain.data.base import FederatedData
from fedtrain.engine import resolve_budgets
from fedtrain.models import ConvNetModel, convnet_module

__all__ = ["ReferenceResult", "reference_run", "opacus_noise_multipliers", "SUPPORTED_METHODS"]

SUPPORTED_METHODS = ("local", "fedavg", "mrmtl")


class ProxLinear(nn.Linear):
    """``nn.Linear`` whose per-example gradients (under Opacus) include ``λ(w − w̄)`` (clip-together)."""

    def __init__(self, d: int, o: int):
        super().__init__(d, o)
        self.lam = 0.0
        self.center_w: torch.Tensor | None = None
        self.center_b: torch.Tensor | None = None


def _register_prox_sampler() -> None:
    from opacus.grad_sample import register_grad_sampler

    @register_grad_sampler(ProxLinear)
    def _prox_linear_grad_sampler(layer: ProxLinear, activations, backprops):
        x = activations[0]
        gs_w = torch.einsum("bo,bi->boi", backprops, x)
        gs_b = backprops.clone()
        if layer.lam > 0 and layer.center_w is not None:
            # Opacus scales `backprops` by the batch size for loss_reduction="mean", so these are
            # per-example gradients of the per-example loss; add the prox gradient to each of them.
            gs_w = gs_w + layer.lam * (layer.weight.detach() - layer.center_w)[None]
            gs_b = gs_b + layer.lam * (layer.bias.detach() - layer.center_b)[None]
        return {layer.weight: gs_w, layer.bias: gs_b}


_register_prox_sampler()


class ReferenceResult:
    """Outcome of :func:`reference_run`: ``test_metric`` (test-count weighted), ``silo_metrics``,
    ``noise_multipliers``, ``eps_spent`` (Opacus accountant), ``steps``, ``spread`` (Σ_k ‖w_k − mean‖²
    of the silos' final models), ``wall_time`` (s)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self) -> str:
        return f"ReferenceResult(test_metric={self.test_metric:.5g}, wall_time={self.wall_time:.3g})"


def opacus_noise_multipliers(eps: np.ndarray, delta: np.ndarray, n: np.ndarray, batch_size: int, rounds: int,
                             local_epochs: int, accountant: str, epsilon_tolerance: float = 0.01) -> np.ndarray:
    """z_k from Opacus' ``get_noise_multiplier`` for ``q_k`` and ``rounds·local_epochs·m_k`` steps (0 if ε_k = ∞).

    Opacus' search returns a z whose ε lies in ``[eps − epsilon_tolerance, eps]``.
    """
    from opacus.accountants.utils import get_noise_multiplier

    q = privacy.sample_rates(n, batch_size)
    steps = privacy.steps_per_epoch(n, batch_size) * rounds * local_epochs
    cache: dict = {}
    out = np.zeros(len(n))
    for i in range(len(n)):
        if not math.isfinite(eps[i]):
            continue
        key = (float(eps[i]), float(delta[i]), float(q[i]), int(steps[i]))
        if key not in cache:
            cache[key] = get_noise_multiplier(target_epsilon=key[0], target_delta=key[1], sample_rate=key[2],
                                              steps=key[3], accountant=accountant,
                                              epsilon_tolerance=epsilon_tolerance)
        out[i] = cache[key]
    return out


def _collate_with_empty(d: int, shape: tuple[int, ...] | None = None, device: torch.device | None = None):
    shape = (d,) if shape is None else tuple(shape)

    def collate(batch):
        if len(batch) == 0:  # Poisson sampling may draw an empty batch
            return torch.zeros((0, *shape), device=device), torch.zeros((0,), device=device)
        return torch.stack([b[0] for b in batch]).reshape(-1, *shape), torch.stack([b[1] for b in batch])

    return collate


def _mean(v: torch.Tensor) -> torch.Tensor:
    return v.sum() / max(len(v), 1)


def _losses(task: str):
    if task == "multiclass":
        return (lambda f, y: torch.nn.functional.cross_entropy(f, y.long(), reduction="sum") / max(len(y), 1),
                lambda f, y: (f.argmax(-1) == y.long()).float())
    if task == "regression":
        return lambda f, y: _mean(0.5 * (f[:, 0] - y) ** 2), lambda f, y: (f[:, 0] - y) ** 2
    if task == "binary":
        return (lambda f, y: _mean(torch.clamp(1 - y * f[:, 0], min=0)),
                lambda f, y: (torch.where(f[:, 0] >= 0, 1.0, -1.0) == y).float())
    raise ValueError(f"the reference supports task 'regression' or 'binary' (got {task!r})")


def _check_reference_config(config: RunConfig, data: FederatedData) -> None:
    """``ValueError`` for what the reference does not run (method, model, ConvNet's MR-MTL mode, a missing GPU)."""
    if config.method not in SUPPORTED_METHODS:
        raise ValueError(f"method must be one of {SUPPORTED_METHODS} for the reference (got {config.method!r})")
    if config.model not in ("linear", "convnet"):
        raise ValueError(f"model must be 'linear' or 'convnet' for the reference (got {config.model!r})")
    if config.model == "convnet":
        if data.input_shape is None or data.task != "multiclass":
            raise ValueError("model='convnet' needs multiclass image data with an input_shape (C, H, W)")
        if config.method == "mrmtl" and config.lam > 0 and config.prox_mode != "post-noise" and config.private:
            raise ValueError("the reference runs the ConvNet's MR-MTL with prox_mode='post-noise' only "
                             f"(got {config.prox_mode!r})")
    if torch.device(config.device).type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but CUDA is not available (torch.cuda.is_available() is False)")


class _FlatParams:
    """A silo model's parameters as one flat vector (``[w, b]`` for the linear model, the ConvNet's
    :meth:`~fedtrain.models.ConvNetModel.flatten` order otherwise), and MR-MTL's proximal gradient term."""

    def __init__(self, d: int, spec: ConvNetModel | None):
        self.d, self.spec = d, spec

    @staticmethod
    def core(model):
        """The underlying module (Opacus' ``GradSampleModule`` wraps it)."""
        return model._module if hasattr(model, "_module") else model

    def get(self, model) -> torch.Tensor:
        c = self.core(model)
        if self.spec is not None:
            return self.spec.flatten({k: v.detach() for k, v in c.state_dict().items()}).clone()
        return torch.cat([c.weight.detach().ravel(), c.bias.detach().ravel()]).clone()

    def set(self, model, v: torch.Tensor) -> None:
        c, d = self.core(model), self.d
        with torch.no_grad():
            if self.spec is not None:
                for name, val in self.spec.unflatten(v).items():
                    c.get_parameter(name).copy_(val)
                return
            c.weight.copy_(v[:d].view(1, d))
            c.bias.copy_(v[d:])

    def set_center(self, c, wbar: torch.Tensor) -> None:
        """Store the proximal centre w̄ on the core module (read by :class:`ProxLinear`'s grad sampler and by
        :meth:`add_prox`)."""
        if self.spec is not None:
            c.center = wbar.clone()
        else:
            c.center_w, c.center_b = wbar[:self.d].view(1, self.d).clone(), wbar[self.d:].clone()

    def add_prox(self, c, lam: float) -> None:
        """``p.grad += λ(p − p̄)`` for every parameter (after privatization, or non-private)."""
        if self.spec is not None:
            centre = self.spec.unflatten(c.center)
            for name, prm in c.named_parameters():
                prm.grad += lam * (prm - centre[name])
        else:
            c.weight.grad += lam * (c.weight - c.center_w)
            c.bias.grad += lam * (c.bias - c.center_b)


def _make_silo(k: int, config: RunConfig, data: FederatedData, flat: _FlatParams, init, z_k: float, q_k: float,
               m_k: int, private: bool, gen: torch.Generator, dev: torch.device) -> dict:
    """Silo ``k``'s model (zero-initialized linear, or the shared ConvNet draw ``init``), SGD, Poisson-sampled loader
    and, when ``private``, its Opacus ``PrivacyEngine`` (noise multiplier ``z_k``, clip ``config.clip``)."""
    from opacus import PrivacyEngine
    from opacus.utils.uniform_sampler import UniformWithReplacementSampler
    from torch.utils.data import DataLoader, TensorDataset

    spec, d, n_k = flat.spec, data.dim, int(data.train_sizes[k])
    if spec is not None:
        model = convnet_module(data.input_shape, int(data.num_classes), padding=spec.padding)
        model.load_state_dict(spec.unflatten(init))
        model.lam, model.center = 0.0, None
    else:
        model = ProxLinear(d, 1)
        nn.init.zeros_(model.weight)
        nn.init.zeros_(model.bias)
    model = model.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr)
    ds = TensorDataset(torch.as_tensor(data.train_x[k], dtype=torch.float32, device=dev),
                       torch.as_tensor(data.train_y[k], dtype=torch.float32, device=dev))
    loader = DataLoader(ds, batch_sampler=UniformWithReplacementSampler(
        num_samples=n_k, sample_rate=float(q_k), steps=int(m_k), generator=gen),
        collate_fn=_collate_with_empty(d, data.input_shape if spec is not None else None, dev))
    if private:
        engine = PrivacyEngine(accountant=config.accountant)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                                     noise_multiplier=float(z_k), max_grad_norm=config.clip,
                                                     poisson_sampling=False, loss_reduction="mean")
        opt.expected_batch_size = int(min(config.batch_size, n_k))
    return dict(model=model, opt=opt, loader=loader, private=private)


def _local_training(silo: dict, n_k: int, config: RunConfig, flat: _FlatParams, wbar: torch.Tensor, lam: float,
                    train_loss) -> tuple[torch.Tensor, int]:
    """One round of ``config.local_epochs`` epochs on one silo: ``(model change, steps taken)``.

    MR-MTL's ``λ(w − w̄)`` is added after privatization (``post-noise``, or a non-private silo) or, in
    ``clip-together`` mode, inside every example's gradient by :class:`ProxLinear`'s grad sampler (clipped with
    it)."""
    model, opt, private = silo["model"], silo["opt"], silo["private"]
    if config.method == "fedavg":
        flat.set(model, wbar)
    start = flat.get(model)
    c = flat.core(model)
    post_noise = lam > 0 and (config.prox_mode == "post-noise" or not private)
    c.lam = lam if (lam > 0 and not post_noise) else 0.0
    flat.set_center(c, wbar)
    steps = 0
    for _e in range(config.local_epochs):
        for xb, yb in silo["loader"]:
            opt.zero_grad()
            if len(xb) == 0 and not private:
                steps += 1  # an empty Poisson batch: no update
                continue
            # an empty batch still makes Opacus add noise (zero-size per-example gradients)
            train_loss(model(xb), yb).backward()
            if private:
                if post_noise:
                    # privatize the data gradient, then add λ(w − w̄) (free post-processing)
                    opt.pre_step()
                    with torch.no_grad():
                        flat.add_prox(c, lam)
                    opt.original_optimizer.step()
                else:
                    opt.step()
            else:
                # non-private: same normalization as the engine (sum / expected batch size)
                with torch.no_grad():
                    for p in c.parameters():
                        p.grad *= len(xb) / min(config.batch_size, n_k)
                    if lam > 0:
                        flat.add_prox(c, lam)
                opt.step()
            steps += 1
    return flat.get(model) - start, steps


def _test_metrics(silos: list[dict], wbar: torch.Tensor, config: RunConfig, data: FederatedData, flat: _FlatParams,
                  metric, dev: torch.device) -> np.ndarray:
    """Each silo's test metric: of the global model ``wbar`` for FedAvg, of the silo's own model otherwise."""
    d, spec = data.dim, flat.spec
    out = np.zeros(len(silos))
    for k, s in enumerate(silos):
        w = wbar if config.method == "fedavg" else flat.get(s["model"])
        x = torch.as_tensor(data.test_x[k], dtype=torch.float32, device=dev)
        if spec is not None:
            probe = convnet_module(data.input_shape, int(data.num_classes), padding=spec.padding).to(dev)
            probe.load_state_dict(spec.unflatten(w))
            with torch.no_grad():
                f = probe(x.reshape(-1, *data.input_shape))
        else:
            f = (x @ w[:d] + w[d:])[:, None]
        out[k] = float(metric(f, torch.as_tensor(data.test_y[k], dtype=torch.float32, device=dev)).mean())
    return out


def _opacus_epsilons(z: np.ndarray, q: np.ndarray, steps: np.ndarray, delta: np.ndarray,
                     accountant: str) -> np.ndarray:
    """ε_k certified by a fresh Opacus accountant for ``steps[k]`` steps at ``(z_k, q_k)`` (∞ where z_k = 0)."""
    from opacus.accountants import create_accountant

    out = np.full(len(z), math.inf)
    for k in range(len(z)):
        if z[k] > 0:
            acc = create_accountant(accountant)
            acc.history = [(float(z[k]), float(q[k]), int(steps[k]))]
            out[k] = acc.get_epsilon(delta=float(delta[k]))
    return out


def reference_run(config: RunConfig, data: FederatedData, *, noise_multipliers: np.ndarray | None = None,
                  accountant_check: bool = True) -> ReferenceResult:
    """Train ``config`` (method local / fedavg / mrmtl) with one Opacus PrivacyEngine per silo.

    ``noise_multipliers``: use these z_k instead of calibrating with Opacus (e.g. to time training
    alone).  Random numbers come from torch's global generator seeded with ``config.seed`` (a
    different stream from the engine's: results agree in distribution, not sample by sample).
    ``config.device``: where the models, data and Opacus' per-example gradients live (``"cuda"`` for the GPU
    benchmark; the Poisson sampler draws its indices on the CPU).
    """
    _check_reference_config(config, data)
    t0 = time.perf_counter()
    dev = torch.device(config.device)
    torch.manual_seed(config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    eps, delta = resolve_budgets(config, data)
    n = data.train_sizes
    K, d, B = data.num_silos, data.dim, config.batch_size
    q = privacy.sample_rates(n, B)
    m = privacy.steps_per_epoch(n, B)
    if noise_multipliers is None:
        z = opacus_noise_multipliers(eps, delta, n, B, config.rounds, config.local_epochs, config.accountant)
    else:
        z = np.asarray(noise_multipliers, dtype=float)
    train_loss, metric = _losses(data.task)

    spec = init = None
    if config.model == "convnet":
        spec = ConvNetModel(data.input_shape, int(data.num_classes))
        init = spec.init((), gen).to(dev)  # one draw shared by all silos, as in the engine
    flat = _FlatParams(d, spec)
    silos = [_make_silo(k, config, data, flat, init, z[k], q[k], m[k], math.isfinite(eps[k]), gen, dev)
             for k in range(K)]

    wts = n / n.sum() if config.aggregation == "weighted" else np.full(K, 1.0 / K)
    wbar = flat.get(silos[0]["model"]) if spec is not None else torch.zeros(d + 1, device=dev)
    steps = np.zeros(K, dtype=np.int64)
    lam = config.lam if config.method == "mrmtl" else 0.0
    for _t in range(config.rounds):
        deltas = []
        for k, s in enumerate(silos):
            change, taken = _local_training(s, int(n[k]), config, flat, wbar, lam, train_loss)
            deltas.append(change)
            steps[k] += taken
        if config.method in ("fedavg", "mrmtl"):
            wbar = wbar + sum(float(wts[k]) * deltas[k] for k in range(K))

    final = torch.stack([flat.get(s["model"]) for s in silos])
    spread = float(((final - final.mean(0)) ** 2).sum())  # (a sync point on CUDA: the timing includes the work)
    silo_metrics = _test_metrics(silos, wbar, config, data, flat, metric, dev)
    nt = data.test_sizes
    eps_spent = (_opacus_epsilons(z, q, steps, delta, config.accountant) if accountant_check
                 else np.full(K, math.inf))
    return ReferenceResult(test_metric=float(silo_metrics @ (nt / nt.sum())), silo_metrics=silo_metrics,
                           noise_multipliers=z, eps_spent=eps_spent, steps=steps, spread=spread,
                           wall_time=time.perf_counter() - t0)
