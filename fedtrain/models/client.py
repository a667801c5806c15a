"""The client-level trainer's models (FedHDP, Aldaghri et al.): flat parameters of one model, a pure ``apply``.

Protocol (what :func:`fedtrain.clientdp.trainer.train` needs, vectorized over a round's clients with
``torch.func.vmap``): ``num_params`` (``D``), ``init(gen) → (D,)`` drawn from the generator it is given (never
the global one) and ``apply(theta (D,), x (n, d)) → (n, o)``.  :class:`FCNet` is Table 6's network,
:class:`LinearNet` the theory's linear regression; :func:`client_model` maps the config's ``model`` field to
them, :func:`client_loss` gives the masked mean loss of a padded batch and :func:`pad_clients` stacks the
clients' data (of different sizes) into padded tensors with a mask.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

__all__ = ["FCNet", "LinearNet", "client_model", "client_loss", "pad_clients"]


class FCNet:
    """Table 6's network: ``x (d) → FC h, ReLU → FC C`` (softmax in the loss); flat parameters of size D."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int):
        self.shapes = {"w1": (in_dim, hidden), "b1": (hidden,), "w2": (hidden, out_dim), "b2": (out_dim,)}
        self.num_params = sum(math.prod(s) for s in self.shapes.values())

    def unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        out, i = {}, 0
        for k, s in self.shapes.items():
            n = math.prod(s)
            out[k] = theta[i:i + n].reshape(s)
            i += n
        return out

    def init(self, gen: torch.Generator) -> torch.Tensor:
        """PyTorch's default ``nn.Linear`` initialization (uniform ±1/√fan_in), from ``gen``."""
        parts = []
        for k, s in self.shapes.items():
            fan_in = s[0] if k.startswith("w") else self.shapes["w" + k[1]][0]
            b = 1.0 / math.sqrt(fan_in)
            parts.append((torch.rand(s, generator=gen) * 2 - 1).mul(b).reshape(-1))
        return torch.cat(parts)

    def apply(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        p = self.unflatten(theta)
        return torch.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


class LinearNet:
    """``f(x) = x W`` (no bias): the theory's linear regression (Appendix A.1), zero initialization."""

    def __init__(self, in_dim: int, out_dim: int):
        self.shapes = {"w": (in_dim, out_dim)}
        self.num_params = in_dim * out_dim

    def init(self, gen: torch.Generator) -> torch.Tensor:
        return torch.zeros(self.num_params)

    def apply(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return x @ theta.reshape(self.shapes["w"])


def client_model(name: str, in_dim: int, out_dim: int, *, hidden: int) -> FCNet | LinearNet:
    """The model a client-level config's ``model`` field names: ``"fc"`` (:class:`FCNet`) or ``"linear"``."""
    if name == "fc":
        return FCNet(in_dim, hidden, out_dim)
    if name == "linear":
        return LinearNet(in_dim, out_dim)
    raise ValueError(f"model must be one of 'fc', 'linear' (got {name!r})")


def client_loss(model, task: str):
    """``loss(theta, x (n, d), y (n,), mask (n,))``: the mean over the unmasked examples of the squared error / 2
    (``task="regression"``) or the cross-entropy (otherwise)."""
    def loss(theta, xb, yb, mb):
        f = model.apply(theta, xb)
        if task == "regression":
            per = 0.5 * (f[:, 0] - yb) ** 2
        else:
            per = torch.nn.functional.cross_entropy(f, yb.long(), reduction="none")
        return (per * mb).sum() / mb.sum().clamp(min=1.0)
    return loss


def pad_clients(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Clients' data of different sizes as ``x (K, n_max, d)``, ``y (K, n_max)`` and ``mask (K, n_max)`` (1 on
    the real examples, 0 on the padding), float32."""
    k, nmax, d = len(xs), max(x.shape[0] for x in xs), xs[0].shape[1]
    x = np.zeros((k, nmax, d), dtype=np.float32)
    y = np.zeros((k, nmax), dtype=np.float32)
    m = np.zeros((k, nmax), dtype=np.float32)
    for i, (a, b) in enumerate(zip(xs, ys)):
        x[i, :len(a)] = a
        y[i, :len(a)] = b
        m[i, :len(a)] = 1
    return torch.as_tensor(x), torch.as_tensor(y), torch.as_tensor(m)
