"""Models and losses of the convex tasks (MR-MTL paper, App. C), in closed form for the vectorized engine.

A :class:`LinearModel` is ``f(x) = [x, 1] · W`` with ``W`` of shape ``(..., p, o)`` (``p = d + 1``
with the bias row, ``o = 1`` for regression / binary SVM, ``o = C`` for multiclass).  Its parameters
for S stacked configurations and K silos are one tensor ``(S, K, p, o)``.  The per-example gradient
of a loss ``ℓ(f(x), y)`` is the outer product ``x̃ ⊗ ∂ℓ/∂f``, so its norm is
``‖x̃‖·‖∂ℓ/∂f‖`` and the clipped sum is one ``einsum``: no per-example gradient tensor is built.
With a proximal term ``P`` clipped together with each gradient, the norm of ``x̃ gᵀ + P`` comes from
the expanded ``‖x̃‖²‖g‖² + 2x̃ᵀPg + ‖P‖²``, which cancels catastrophically when a gradient nearly
cancels ``P``; wherever its rigorous float error bound exceeds 1e-4 of its value, ``x̃ gᵀ + P`` is
formed, its own norm sets the clip factor and it is summed as formed (issue 14 item 1).

Losses (notes §6): squared ``½(f − y)²`` (School, metric MSE), hinge ``max(0, 1 − y f)`` with
``y ∈ {±1}`` (Vehicle, GLEAM linear SVM, metric accuracy, prediction ``sign(f)`` with ``f = 0 → +1``),
multiclass logistic (softmax cross-entropy, metric accuracy).

Deep models (later issues) implement the same :class:`Model` protocol with ``torch.func`` per-example
gradients; the engine only calls the methods below.
"""
from __future__ import annotations

from typing import Protocol

import torch

__all__ = ["Loss", "SquaredLoss", "HingeLoss", "LogisticLoss", "loss_for_task", "Model", "LinearModel"]

#: Relative error of ``‖v‖²`` below which the expanded-form norm is trusted (see LinearModel.clipped_grad_sum).
EXPANDED_NORM_REL_TOL = 1e-4


class Loss:
    """Per-example loss ``ℓ(f, y)``, its derivative in ``f`` and the test metric."""

    name: str = ""
    metric_name: str = ""
    higher_is_better: bool = False

    def value(self, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # (..., b)
        raise NotImplementedError

    def grad(self, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # (..., b, o)
        raise NotImplementedError

    def metric(self, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # per example (..., b)
        raise NotImplementedError

    def selection_score(self, f: torch.Tensor, y: torch.Tensor, loss_clip: float) -> torch.Tensor:
        """Per-example score in ``[0, L]`` for IFCA's private selection (lower is better)."""
        raise NotImplementedError

    def score_bound(self, loss_clip: float) -> float:
        """``L``: the largest per-example selection score (its mean has sensitivity ``L/(n−1)``)."""
        raise NotImplementedError


class SquaredLoss(Loss):
    """``½ (f − y)²``; metric: squared error ``(f − y)²`` (its mean is the MSE)."""

    name, metric_name, higher_is_better = "squared", "mse", False

    def value(self, f, y):
        return 0.5 * (f[..., 0] - y) ** 2

    def grad(self, f, y):
        return (f[..., 0] - y)[..., None]

    def metric(self, f, y):
        return (f[..., 0] - y) ** 2

    def selection_score(self, f, y, loss_clip):
        return self.value(f, y).clamp(max=loss_clip)

    def score_bound(self, loss_clip):
        return float(loss_clip)


class HingeLoss(Loss):
    """Linear SVM ``max(0, 1 − y f)``, ``y ∈ {−1, +1}``; metric: accuracy of ``sign(f)`` (0 → +1)."""

    name, metric_name, higher_is_better = "hinge", "accuracy", True

    def value(self, f, y):
        return (1.0 - y * f[..., 0]).clamp(min=0.0)

    def grad(self, f, y):
        return (-y * (y * f[..., 0] < 1.0).to(f.dtype))[..., None]

    def metric(self, f, y):
        pred = torch.where(f[..., 0] >= 0, 1.0, -1.0).to(f.dtype)
        return (pred == y).to(f.dtype)

    def selection_score(self, f, y, loss_clip):  # error rate (paper: sensitivity 1/(n-1))
        return 1.0 - self.metric(f, y)

    def score_bound(self, loss_clip):
        return 1.0


class LogisticLoss(Loss):
    """Softmax cross-entropy with integer labels ``0..C−1`` (stored as floats); metric: accuracy."""

    name, metric_name, higher_is_better = "logistic", "accuracy", True

    def value(self, f, y):
        return torch.logsumexp(f, -1) - f.gather(-1, y.long()[..., None])[..., 0]

    def grad(self, f, y):
        p = torch.softmax(f, -1)
        return p - torch.nn.functional.one_hot(y.long(), f.shape[-1]).to(f.dtype)

    def metric(self, f, y):
        return (f.argmax(-1) == y.long()).to(f.dtype)

    def selection_score(self, f, y, loss_clip):
        return 1.0 - self.metric(f, y)

    def score_bound(self, loss_clip):
        return 1.0


def loss_for_task(task: str) -> Loss:
    """The paper's loss for a :class:`~fedtrain.data.FederatedData` task."""
    if task == "regression":
        return SquaredLoss()
    if task == "binary":
        return HingeLoss()
    if task == "multiclass":
        return LogisticLoss()
    raise ValueError(f"task must be one of 'regression', 'binary', 'multiclass' (got {task!r})")


class Model(Protocol):
    """What the engine needs from a model whose parameters for (S configs, K silos) are one tensor."""

    def init(self, lead: tuple[int, ...], generator: torch.Generator | None = None, *,
             random: bool = False) -> torch.Tensor: ...

    def forward(self, w: torch.Tensor, x: torch.Tensor) -> torch.Tensor: ...

    def clipped_grad_sum(self, w, x, y, valid, loss, clip, prox=None) -> torch.Tensor: ...


class LinearModel:
    """``f(x) = x̃ W`` with ``x̃ = [x, 1]`` (inputs arrive with the bias column already appended).

    ``init`` is zero (the released code's linear models; all silos share it) unless ``random`` (IFCA's
    cluster centres: N(0, 1/p) entries).
    """

    def __init__(self, in_dim: int, out_dim: int, dtype: torch.dtype = torch.float32, device: str = "cpu"):
        self.p = int(in_dim) + 1
        self.o = int(out_dim)
        self.dtype = dtype
        self.device = device
        # rigorous relative error bound γ_n = n u / (1 − n u) of the expanded norm (longest dot product
        # n = max(p·o, p + o), plus the final multiply and two additions), with a 1.25 safety factor
        n = max(self.p * self.o, self.p + self.o) + 3
        u = torch.finfo(dtype).eps / 2
        self.gamma = 1.25 * n * u / (1 - n * u)
        self.recomputed = 0  # examples whose norm was recomputed from the formed vector (diagnostics)

    def init(self, lead, generator=None, *, random=False):
        shape = tuple(lead) + (self.p, self.o)
        if not random:
            return torch.zeros(shape, dtype=self.dtype, device=self.device)
        return torch.randn(shape, generator=generator, dtype=self.dtype, device=self.device) / self.p ** 0.5

    def forward(self, w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``x (..., b, p)``, ``w (..., p, o)`` → ``f (..., b, o)``."""
        return torch.matmul(x, w)

    def clipped_grad_sum(self, w, x, y, valid, loss: Loss, clip, prox=None):
        """Σ_i clip_c(∇ℓ_i [+ prox]) over the valid examples of every (config, silo) batch.

        ``w (S,K,p,o)``; ``x (U,K,b,p)``, ``y (U,K,b)``, ``valid (U,K,b)`` bool with ``S = U·c``: the
        batches of U random streams, each shared by ``c`` consecutive configurations (c = 1: one batch
        per configuration).  ``clip (S,K)`` (``inf`` = no clipping).  ``prox (S,K,p,o)``: a
        parameter-only gradient (e.g. λ(w_k − w̄)) added to *every* example's gradient before
        clipping (the released code's behaviour); ``None`` when the caller adds it after noise.
        Clip factor ``min(1, c / (‖g_i‖ + 1e-6))`` as in Opacus.
        Returns ``(sum (S,K,p,o), per_example_norms (S,K,b))``.
        """
        S, K, p, o = w.shape
        U = x.shape[0]
        c = S // U
        wb = w.reshape(U, c, K, p, o)
        f = torch.einsum("ukbp,uckpo->uckbo", x, wb)
        vf = valid[:, None].to(f.dtype)  # (U,1,K,b)
        g = loss.grad(f, y[:, None]) * vf[..., None]  # ∂ℓ/∂f (U,c,K,b,o)
        norm2 = (x * x).sum(-1)[:, None] * (g * g).sum(-1)
        formed = None
        if prox is not None:
            pb = prox.reshape(U, c, K, p, o)
            xp = torch.einsum("ukbp,uckpo->uckbo", x, pb)  # x_iᵀ P
            a2 = norm2
            p2 = (pb * pb).sum((-1, -2))[..., None]
            norm2 = norm2 + 2.0 * (xp * g).sum(-1) + p2
            # |fl(norm2) − norm2| ≤ γ(‖x‖²‖g‖² + 2‖x‖‖P‖‖g‖ + ‖P‖²) ≤ 2γ(a2 + p2): where that is not
            # small against the computed value (cancellation), form v = x gᵀ + P, take its norm and
            # sum v itself (summing x gᵀ and P separately would cancel in float32 too)
            suspect = (2.0 * self.gamma * (a2 + p2) > EXPANDED_NORM_REL_TOL * norm2) & valid[:, None]
            if bool(suspect.any()):
                idx = suspect.nonzero(as_tuple=True)
                iu, ic, ik, ib = idx
                v = x[iu, ik, ib][:, :, None] * g[idx][:, None, :] + pb[iu, ic, ik]
                norm2 = norm2.index_put(idx, (v * v).sum((-1, -2)))
                formed = (idx, v)
                self.recomputed += int(iu.numel())
        norms = norm2.clamp(min=0).sqrt()
        factor = (clip.reshape(U, c, K)[..., None] / (norms + 1e-6)).clamp(max=1.0) * vf
        fast = factor if formed is None else factor.index_put(formed[0], factor.new_zeros(()))
        total = torch.einsum("ukbp,uckbo->uckpo", x, g * fast[..., None])
        if prox is not None:
            total = total + fast.sum(-1)[..., None, None] * pb
        if formed is not None:
            (iu, ic, ik, ib), v = formed
            total = total.index_put((iu, ic, ik), factor[iu, ic, ik, ib][:, None, None] * v, accumulate=True)
        return total.reshape(S, K, p, o), (norms * vf).reshape(S, K, -1)
