"""Losses of the convex tasks (MR-MTL paper, App. C) as functions of the model output ``f``.

Squared ``½(f − y)²`` (School, metric MSE), hinge ``max(0, 1 − y f)`` with ``y ∈ {±1}`` (Vehicle,
GLEAM linear SVM, metric accuracy, prediction ``sign(f)`` with ``f = 0 → +1``), multiclass logistic
(softmax cross-entropy, metric accuracy).  ``value`` is what the generic per-example gradient path
differentiates (``torch.func.grad``); ``grad`` is its closed-form derivative in ``f``, used by the
linear model's fast path (:class:`fedtrain.models.LinearModel`); a test holds the two equal.
"""
from __future__ import annotations

import torch

__all__ = ["Loss", "SquaredLoss", "HingeLoss", "LogisticLoss", "loss_for_task"]


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
        # ``where`` (not ``clamp``) so that autograd's derivative at the kink y·f = 1 is 0, as in grad()
        margin = y * f[..., 0]
        return torch.where(margin < 1.0, 1.0 - margin, torch.zeros_like(margin))

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


