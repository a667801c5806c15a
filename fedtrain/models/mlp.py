"""A small MLP (one tanh hidden layer), exercising the generic ``torch.func`` gradient path end to end."""
from __future__ import annotations

import torch

from fedtrain.models.base import FunctionalModel

__all__ = ["MLPModel", "MLP_HIDDEN"]

#: Hidden width of the ``mlp`` model (part of the model's definition: a config naming ``mlp`` gets this).
MLP_HIDDEN = 32


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
