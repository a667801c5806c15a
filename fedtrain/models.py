"""Functional models for the vectorized engine: flat parameters, a pure ``apply``, per-example clipping.

Parameter layout (the one the engine and every method use).  A model's parameters are **one flat
float tensor of** ``D = model.num_params`` **entries**; for S stacked configurations and K silos they
are a tensor ``(S, K, D)`` (the server's models ``(S, D)``, IFCA's centres ``(S, G, D)``).  So a
method's arithmetic is shape-agnostic: averaging is ``einsum("k,skd->sd")``, a proximal gradient is
``λ[:, None, None] * (w − w̄[:, None])``, broadcasting is ``w̄[:, None].expand(...)``.  The model knows
its named shapes (:attr:`FunctionalModel.shapes`) and turns a flat vector into a dict of views
(:meth:`FunctionalModel.unflatten`) for its pure function :meth:`FunctionalModel.apply`.

Per-example gradients (DP-SGD's step 2, Abadi et al. 2016; the MR-MTL paper's Sec. 3, App. C.4) have
two paths behind one method, :meth:`FunctionalModel.clipped_grad_sum`:

* **generic** (every model): ``torch.func.vmap(torch.func.grad(ℓ ∘ apply))`` gives every example's
  gradient ``G_i`` (vectorized over configurations, silos and examples; silos processed in chunks of
  ``silo_chunk`` to bound memory); the summed vector ``v_i = G_i [+ P]`` is formed and its own norm
  sets the clip factor;
* **closed form** (:class:`LinearModel`, ``f = x̃ W``): ``G_i = x̃_i ⊗ ∂ℓ/∂f`` is never formed; the
  norm comes from ``‖x̃‖²‖g‖² [+ 2 x̃ᵀP g + ‖P‖²]`` and the sum is one ``einsum``.  That expanded form
  cancels catastrophically when a gradient nearly cancels the proximal term ``P`` (issue 14 item 1),
  so its rigorous float error bound ``2γ(‖x̃‖²‖g‖² + ‖P‖²)`` (``γ = 1.25·n·u``, ``n`` the longest
  dot product plus 3, ``u = 2⁻²⁴`` in float32; Higham, *Accuracy and Stability*, §3.1) is evaluated
  for every example, and the
  examples where it exceeds ``1e-4`` of the computed value (cancellation) take the explicit route:
  ``v_i = x̃_i g_iᵀ + P`` is formed, its norm sets the clip factor and ``v_i`` itself is summed.  Every
  clipped contribution therefore has norm ``≤ c·(1 + 5e-5)`` (the expanded form's rigorous error)
  up to float32 rounding, while ordinary examples keep the fast path bit for bit (in School training
  no example needed the explicit route, see ``benchmarks/bench_engine.py``).

Clip factor ``min(1, c / (‖v_i‖ + 1e-6))`` as in Opacus.  Models: :class:`LinearModel` (the paper's
convex tasks, App. C) and :class:`MLPModel` (one tanh hidden layer, exercising the generic path end
to end).  :func:`build_model` maps :data:`fedtrain.config.MODELS` names to models.  Losses live in
:mod:`fedtrain.losses` (re-exported here).
"""
from __future__ import annotations

import math
from typing import Mapping

import torch
from torch.func import grad, vmap

from fedtrain.losses import HingeLoss, LogisticLoss, Loss, SquaredLoss, loss_for_task

__all__ = ["Loss", "SquaredLoss", "HingeLoss", "LogisticLoss", "loss_for_task", "FunctionalModel",
           "LinearModel", "MLPModel", "build_model", "MLP_HIDDEN"]

#: Relative error of ``‖v‖²`` below which the linear model's expanded-form norm is trusted (see module doc).
EXPANDED_NORM_REL_TOL = 1e-4
#: Hidden width of the ``mlp`` model (part of the model's definition: a config naming ``mlp`` gets this).
MLP_HIDDEN = 32
#: Default bound on the number of per-example gradient entries the generic path holds at once (64 MiB float32).
GENERIC_MAX_ENTRIES = 1 << 24


class FunctionalModel:
    """A model given by named parameter shapes and a pure function ``apply(params, x) → f``.

    Subclasses set :attr:`shapes` (name → shape, in flat order), :attr:`in_dim` (``p``, the input width
    with the bias column ``x̃ = [x, 1]`` the engine appends), :attr:`out_dim` (``o``) and implement
    :meth:`apply`, which must broadcast over leading dimensions like ``torch.matmul`` (params
    ``(..., *shape)``, ``x (..., b, p)`` → ``(..., b, o)``) and is called on single parameter sets
    inside ``torch.func.grad``.  ``random_init`` says whether :meth:`init` draws random numbers (then
    the engine passes a generator seeded by the configuration's seed).

    ``silo_chunk``: silos processed at once by the generic gradient path and by :meth:`forward`
    (``None``: as many as keep ``GENERIC_MAX_ENTRIES`` per-example gradient entries).  Chunking only
    bounds memory; it changes nothing but float summation order.
    """

    shapes: dict[str, tuple[int, ...]] = {}
    in_dim: int = 0
    out_dim: int = 0
    random_init: bool = False

    def __init__(self, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu",
                 silo_chunk: int | None = None):
        if silo_chunk is not None and (not isinstance(silo_chunk, int) or silo_chunk < 1):
            raise ValueError(f"silo_chunk must be a positive integer or None (got {silo_chunk!r})")
        self.dtype = dtype
        self.device = torch.device(device)
        self.silo_chunk = silo_chunk

    # -- layout ------------------------------------------------------------------------------------------
    @property
    def num_params(self) -> int:
        """``D``: entries of the flat parameter vector."""
        return sum(math.prod(s) for s in self.shapes.values())

    def unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """Flat ``(..., D)`` → ``{name: (..., *shape)}`` (views where the memory layout allows)."""
        lead = theta.shape[:-1]
        out, start = {}, 0
        for name, shape in self.shapes.items():
            size = math.prod(shape)
            out[name] = theta[..., start:start + size].reshape(*lead, *shape)
            start += size
        return out

    def flatten(self, params: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Inverse of :meth:`unflatten`: ``{name: (..., *shape)}`` → ``(..., D)``."""
        parts = []
        for name, shape in self.shapes.items():
            t = params[name]
            parts.append(t.reshape(*t.shape[:t.dim() - len(shape)], -1))
        return torch.cat(parts, -1)

    def export(self, theta: torch.Tensor) -> torch.Tensor:
        """The form :attr:`fedtrain.engine.RunResult.models` stores (flat ``(..., D)`` unless overridden)."""
        return theta

    # -- the model -----------------------------------------------------------------------------------------
    def init(self, lead: tuple[int, ...], generator: torch.Generator | None = None, *,
             random: bool = False) -> torch.Tensor:
        """Initial parameters ``(*lead, D)``; ``random`` asks for a random draw (IFCA's centres)."""
        raise NotImplementedError

    def apply(self, params: Mapping[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """The model's output ``f (..., b, o)`` for inputs ``x (..., b, p)`` (pure; broadcasts)."""
        raise NotImplementedError

    def forward(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``apply`` on flat parameters: ``theta (..., D)``, ``x (..., b, p)`` → ``(..., b, o)``.

        With ``silo_chunk`` set, the silo dimension (``x``'s third-last, ``theta``'s second-last when
        it is not 1) is processed in chunks.
        """
        ks = x.shape[-3] if x.dim() >= 3 else 1
        if self.silo_chunk is None or ks <= self.silo_chunk:
            return self.apply(self.unflatten(theta), x)
        per_silo = theta.dim() >= 2 and theta.shape[-2] == ks
        parts = []
        for k0 in range(0, ks, self.silo_chunk):
            sl = slice(k0, k0 + self.silo_chunk)
            th = theta[..., sl, :] if per_silo else theta
            parts.append(self.apply(self.unflatten(th), x[..., sl, :, :]))
        return torch.cat(parts, -3)

    # -- per-example gradients and clipping ------------------------------------------------------------------
    def per_example_grads(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, loss: Loss) -> torch.Tensor:
        """``∇_θ ℓ(apply(θ, x_i), y_i)`` for every example, by ``vmap(grad(...))``.

        ``theta (U, c, K, D)``, ``x (U, K, b, p)``, ``y (U, K, b)`` (the batch of stream u is shared by
        its c configurations) → ``(U, c, K, b, D)``.
        """
        def one(th, xi, yi):
            return loss.value(self.apply(self.unflatten(th), xi[None]), yi[None])[0]

        g = grad(one)
        g = vmap(g, in_dims=(None, 0, 0))  # examples
        g = vmap(g, in_dims=(0, 0, 0))  # silos
        g = vmap(g, in_dims=(0, None, None))  # configurations sharing a stream
        g = vmap(g, in_dims=(0, 0, 0))  # streams
        return g(theta, x, y)

    def _chunk(self, U: int, c: int, b: int, K: int) -> int:
        if self.silo_chunk is not None:
            return self.silo_chunk
        per_silo = max(1, U * c * b * self.num_params)
        return max(1, min(K, GENERIC_MAX_ENTRIES // per_silo))

    def clipped_grad_sum(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, valid: torch.Tensor,
                         loss: Loss, clip: torch.Tensor, prox: torch.Tensor | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor]:
        """Σ_i clip_c(∇ℓ_i [+ prox]) over the valid examples of every (config, silo) batch: the generic path.

        ``theta (S,K,D)``; ``x (U,K,b,p)``, ``y (U,K,b)``, ``valid (U,K,b)`` bool with ``S = U·c``: the
        batches of U random streams, each shared by ``c`` consecutive configurations.  ``clip (S,K)``
        (``inf`` = no clipping).  ``prox (S,K,D)``: a parameter-only gradient (e.g. λ(w_k − w̄)) added to
        *every* example's gradient before clipping (the released code's behaviour); ``None`` when the
        caller adds it after noise.  The clip factor comes from the norm of the vector that is summed,
        ``v_i = G_i + prox``, formed explicitly.  Returns ``(sum (S,K,D), per_example_norms (S,K,b))``
        (norms 0 for invalid examples).
        """
        S, K, D = theta.shape
        U, b = x.shape[0], x.shape[2]
        c = S // U
        th = theta.reshape(U, c, K, D)
        pb = None if prox is None else prox.reshape(U, c, K, D)
        clip_u = clip.reshape(U, c, K)
        chunk = self._chunk(U, c, b, K)
        totals, norms = [], []
        for k0 in range(0, K, chunk):
            sl = slice(k0, k0 + chunk)
            G = self.per_example_grads(th[:, :, sl], x[:, sl], y[:, sl], loss)  # (U,c,k,b,D)
            ok = valid[:, None, sl]  # (U,1,k,b)
            v = G if pb is None else G + pb[:, :, sl, None, :]
            v = torch.where(ok[..., None], v, torch.zeros((), dtype=v.dtype, device=v.device))
            nrm = torch.linalg.vector_norm(v, dim=-1)  # (U,c,k,b): the norm of what is summed
            factor = (clip_u[:, :, sl, None] / (nrm + 1e-6)).clamp(max=1.0) * ok.to(v.dtype)
            totals.append(torch.einsum("uckb,uckbd->uckd", factor, v))
            norms.append(nrm)
        return torch.cat(totals, 2).reshape(S, K, D), torch.cat(norms, 2).reshape(S, K, -1)


class LinearModel(FunctionalModel):
    """``f(x) = x̃ W`` with ``x̃ = [x, 1]`` (inputs arrive with the bias column appended), ``W (p, o)``.

    ``p = d + 1``, ``o = 1`` for regression / binary SVM, ``o = C`` for multiclass.  Flat parameters
    are ``W`` row-major (``D = p·o``; :meth:`export` gives ``(..., p, o)``).  ``init`` is zero (the
    released code's linear models; all silos share it) unless ``random`` (IFCA's cluster centres:
    N(0, 1/p) entries).  ``closed_form=False`` makes :meth:`clipped_grad_sum` take the generic
    ``torch.func`` path (for checks; the same numbers up to float32 rounding).
    """

    #: Examples sent through the explicit route by every LinearModel of this process (diagnostics).
    total_recomputed = 0

    def __init__(self, in_dim: int, out_dim: int, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu", *, closed_form: bool = True, silo_chunk: int | None = None):
        super().__init__(dtype, device, silo_chunk)
        self.p = self.in_dim = int(in_dim) + 1
        self.o = self.out_dim = int(out_dim)
        self.shapes = {"w": (self.p, self.o)}
        self.closed_form = bool(closed_form)
        # rigorous relative error bound γ_n = n u / (1 − n u) of the expanded norm (longest dot product
        # n = max(p·o, p + o), plus the final multiply and two additions), with a 1.25 safety factor
        n = max(self.p * self.o, self.p + self.o) + 3
        u = torch.finfo(dtype).eps / 2
        self.gamma = 1.25 * n * u / (1 - n * u)
        self.kappa = EXPANDED_NORM_REL_TOL / (2.0 * self.gamma)
        self.recomputed = 0  # examples this model sent through the explicit route (diagnostics)

    def init(self, lead, generator=None, *, random=False):
        shape = tuple(lead) + (self.p * self.o,)
        if not random:
            return torch.zeros(shape, dtype=self.dtype, device=self.device)
        return torch.randn(shape, generator=generator, dtype=self.dtype, device=self.device) / self.p ** 0.5

    def apply(self, params, x):
        return torch.matmul(x, params["w"])

    def export(self, theta):
        return theta.reshape(*theta.shape[:-1], self.p, self.o)

    def forward(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``x (..., b, p)``, ``theta (..., D)`` → ``f (..., b, o)`` (one ``matmul``)."""
        return torch.matmul(x, self.export(theta))

    #: :meth:`clipped_grad_sum` takes the batch's precomputed ``‖x̃_i‖²`` (``x_sq``; :meth:`fedtrain.dpsgd.PoissonBatcher.sample_batch`).
    uses_input_norms = True

    @staticmethod
    def _xw(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """``x (U,K,b,p)``, ``w (U,c,K,p,r)`` → ``x̃ w`` as ``(U,c,K,b,r)``: one ``bmm`` over (stream, silo)."""
        U, K, b, p = x.shape
        c, r = w.shape[1], w.shape[-1]
        wm = w.permute(0, 2, 3, 1, 4).reshape(U * K, p, c * r)
        return torch.bmm(x.reshape(U * K, b, p), wm).reshape(U, K, b, c, r).permute(0, 3, 1, 2, 4)

    @staticmethod
    def _xtg(x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """``x (U,K,b,p)``, ``h (U,c,K,b,o)`` → ``Σ_i x̃_i h_iᵀ`` as ``(U,c,K,p,o)``: one ``bmm``."""
        U, K, b, p = x.shape
        c, o = h.shape[1], h.shape[-1]
        hm = h.permute(0, 2, 3, 1, 4).reshape(U * K, b, c * o)
        return torch.bmm(x.reshape(U * K, b, p).transpose(1, 2), hm).reshape(U, K, p, c, o).permute(0, 3, 1, 2, 4)

    def clipped_grad_sum(self, theta, x, y, valid, loss: Loss, clip, prox=None, x_sq=None):
        """The closed form of :meth:`FunctionalModel.clipped_grad_sum` (same arguments and returns).

        ``G_i = x̃_i g_iᵀ`` with ``g_i = ∂ℓ/∂f``.  Norm: ``‖x̃‖‖g‖`` without ``prox``; with it the
        expanded ``‖x̃‖²‖g‖² + 2 x̃ᵀP g + ‖P‖²``, recomputed from the formed ``x̃ gᵀ + P`` wherever its
        error bound exceeds :data:`EXPANDED_NORM_REL_TOL` of its value (see the module docstring).
        ``x_sq (U,K,b)``: ``‖x̃_i‖²`` if the caller has it (computed once per record), else computed here.
        ``x̃ W`` and ``x̃ P`` come from one batched matrix product, the sum from another.
        """
        if not self.closed_form:
            return super().clipped_grad_sum(theta, x, y, valid, loss, clip, prox)
        S, K, _ = theta.shape
        p, o = self.p, self.o
        U = x.shape[0]
        c = S // U
        wb = theta.reshape(U, c, K, p, o)
        pb = None if prox is None else prox.reshape(U, c, K, p, o)
        fx = self._xw(x, wb if pb is None else torch.cat([wb, pb], -1))  # [x̃ W | x̃ P]
        f = fx[..., :o]
        vf = valid[:, None].to(f.dtype)  # (U,1,K,b)
        g = loss.grad(f, y[:, None]) * vf[..., None]  # ∂ℓ/∂f (U,c,K,b,o)
        if x_sq is None:
            x_sq = (x * x).sum(-1)
        norm2 = x_sq[:, None] * (g * g).sum(-1)
        formed = None
        if pb is not None:
            xp = fx[..., o:]  # x_iᵀ P
            a2 = norm2
            p2 = (pb * pb).sum((-1, -2))[..., None]
            norm2 = norm2 + 2.0 * (xp * g).sum(-1) + p2
            # |fl(norm2) − norm2| ≤ γ(‖x‖²‖g‖² + 2‖x‖‖P‖‖g‖ + ‖P‖²) ≤ 2γ(a2 + p2): where that is not
            # small against the computed value (cancellation), form v = x gᵀ + P, take its norm and
            # sum v itself (summing x gᵀ and P separately would cancel in float32 too)
            # (three passes in the common case: slack > 0 ⟺ 2γ(a2 + p2) > tol·norm2; an invalid example
            # has g = 0, so norm2 = p2 and it is never flagged)
            slack = a2 + p2
            slack.sub_(norm2, alpha=self.kappa)
            if bool(slack.max() > 0):
                suspect = (slack > 0) & valid[:, None]
                idx = suspect.nonzero(as_tuple=True)
                iu, ic, ik, ib = idx
                v = x[iu, ik, ib][:, :, None] * g[idx][:, None, :] + pb[iu, ic, ik]
                norm2 = norm2.index_put(idx, (v * v).sum((-1, -2)))
                formed = (idx, v)
                self.recomputed += int(iu.numel())
                LinearModel.total_recomputed += int(iu.numel())
        # in place on fresh temporaries (same arithmetic as out-of-place; saves allocating (U,c,K,b) tensors)
        norms = norm2.clamp_(min=0).sqrt_()
        factor = norms + 1e-6
        torch.div(clip.reshape(U, c, K)[..., None], factor, out=factor)
        factor.clamp_(max=1.0).mul_(vf)
        fast = factor if formed is None else factor.index_put(formed[0], factor.new_zeros(()))
        total = self._xtg(x, g * fast[..., None])
        if pb is not None:
            total = total + fast.sum(-1)[..., None, None] * pb
        if formed is not None:
            (iu, ic, ik, ib), v = formed
            total = total.index_put((iu, ic, ik), factor[iu, ic, ik, ib][:, None, None] * v, accumulate=True)
        return total.reshape(S, K, p * o), (norms * vf).reshape(S, K, -1)


class MLPModel(FunctionalModel):
    """One hidden layer: ``f(x) = tanh(x̃ W₁) W₂ + b₂`` (``W₁ (p, h)`` includes the input bias row).

    Parameters ``{"w1": (p, h), "w2": (h, o), "b2": (o,)}``; initialization LeCun-normal
    (``W₁ ~ N(0, 1/p)``, ``W₂ ~ N(0, 1/h)``, ``b₂ = 0``), always random (a zero MLP has zero hidden
    gradients), drawn from the generator the engine passes (seeded by the configuration's seed; all
    silos share the draw).  Its per-example gradients take the generic ``torch.func`` path.
    """

    random_init = True

    def __init__(self, in_dim: int, out_dim: int, dtype: torch.dtype = torch.float32,
                 device: str | torch.device = "cpu", *, hidden: int = MLP_HIDDEN, silo_chunk: int | None = None):
        super().__init__(dtype, device, silo_chunk)
        if not isinstance(hidden, int) or hidden < 1:
            raise ValueError(f"hidden must be a positive integer (got {hidden!r})")
        self.in_dim = int(in_dim) + 1
        self.out_dim = int(out_dim)
        self.hidden = hidden
        self.shapes = {"w1": (self.in_dim, hidden), "w2": (hidden, self.out_dim), "b2": (self.out_dim,)}

    def init(self, lead, generator=None, *, random=True):
        kw = dict(generator=generator, dtype=self.dtype, device=self.device)
        lead = tuple(lead)
        w1 = torch.randn(lead + self.shapes["w1"], **kw) / self.in_dim ** 0.5
        w2 = torch.randn(lead + self.shapes["w2"], **kw) / self.hidden ** 0.5
        b2 = torch.zeros(lead + self.shapes["b2"], dtype=self.dtype, device=self.device)
        return self.flatten({"w1": w1, "w2": w2, "b2": b2})

    def apply(self, params, x):
        h = torch.tanh(torch.matmul(x, params["w1"]))
        return torch.matmul(h, params["w2"]) + params["b2"].unsqueeze(-2)


def build_model(name: str, in_dim: int, out_dim: int, *, dtype: torch.dtype = torch.float32,
                device: str | torch.device = "cpu", **options) -> FunctionalModel:
    """The model a config's ``model`` field names (:data:`fedtrain.config.MODELS`).

    ``in_dim`` is the feature count ``d`` (the bias column is added here), ``out_dim`` the output
    width.  ``options`` are execution options that do not change the numbers beyond float32
    rounding: ``silo_chunk`` (both models) and ``closed_form`` (``linear`` only).
    """
    if name == "linear":
        return LinearModel(in_dim, out_dim, dtype, device, **options)
    if name == "mlp":
        if "closed_form" in options:
            raise ValueError("closed_form applies to the 'linear' model only (the 'mlp' model has no closed form)")
        return MLPModel(in_dim, out_dim, dtype, device, **options)
    raise ValueError(f"model must be one of 'linear', 'mlp' (got {name!r})")
