"""The functional-model base class: flat parameters, a pure ``apply``, per-example clipped gradient sums (the
generic ``torch.func`` path).  The layout and the paths: :mod:`fedtrain.models`."""
from __future__ import annotations

import math
from typing import Mapping

import torch
from torch.func import grad, vmap

from fedtrain.losses import Loss

__all__ = ["FunctionalModel", "EXPANDED_NORM_REL_TOL", "GENERIC_MAX_ENTRIES", "CUDA_MAX_ENTRIES"]

#: Relative error of ``‖v‖²`` below which the linear model's expanded-form norm is trusted (see module doc).
EXPANDED_NORM_REL_TOL = 1e-4
#: Default bound on the number of per-example gradient entries the generic path holds at once (64 MiB float32).
GENERIC_MAX_ENTRIES = 1 << 24
#: The same bound on a CUDA device (1 GiB float32): a GPU wants all silos of a step in one batch.
CUDA_MAX_ENTRIES = 1 << 28

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

    @property
    def max_entries(self) -> int:
        """Per-example gradient entries held at once when ``silo_chunk`` is None (CPU: 64 MiB, CUDA: 1 GiB)."""
        return CUDA_MAX_ENTRIES if self.device.type == "cuda" else GENERIC_MAX_ENTRIES

    def _chunk(self, U: int, c: int, b: int, K: int) -> int:
        if self.silo_chunk is not None:
            return self.silo_chunk
        per_silo = max(1, U * c * b * self.num_params)
        return max(1, min(K, self.max_entries // per_silo))

    @staticmethod
    def _streams(theta: torch.Tensor, x: torch.Tensor, clip: torch.Tensor, prox: torch.Tensor | None):
        """The layout every clipped-sum path shares: ``S = U·c`` configurations over ``U`` random streams.
        Returns ``S, K, D, U, b, c`` and the views ``theta (U,c,K,D)``, ``prox (U,c,K,D)`` or ``None`` and
        ``clip (U,c,K)``."""
        S, K, D = theta.shape
        U, b = x.shape[0], x.shape[2]
        c = S // U
        return (S, K, D, U, b, c, theta.reshape(U, c, K, D),
                None if prox is None else prox.reshape(U, c, K, D), clip.reshape(U, c, K))

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
        S, K, D, U, b, c, th, pb, clip_u = self._streams(theta, x, clip, prox)
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
