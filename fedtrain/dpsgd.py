"""Silo-vectorized DP-SGD: Poisson sampling, per-example clipping and Gaussian noise for all silos at once.

One DP-SGD step of silo ``k`` (Abadi et al. 2016; the paper's Sec. 3 and App. C.4):

1. Poisson sampling: every training record of silo ``k`` enters the batch independently with
   probability ``q_k`` (:func:`fedtrain.ledger.sample_rates`, the rate the ledger charges);
2. per-example clipping of the gradient to L2 norm ``c`` (factor ``min(1, c/(‖g_i‖ + 1e-6))``, Opacus'),
   by the model's :meth:`~fedtrain.models.FunctionalModel.clipped_grad_sum` (closed form for the
   linear model, ``torch.func`` per-example gradients for any model; with a proximal term ``P`` in
   ``clip-together`` mode the norm is that of the summed vector ``g_i + P``, computed stably);
3. Gaussian noise ``N(0, (z_k c)² I)`` added to the clipped sum, ``z_k`` calibrated for silo ``k``'s own
   (ε_k, δ_k), steps and ``q_k``;
4. division by the *expected* batch size ``q_k n_k`` (Opacus' ``expected_batch_size`` normalization),
   so the noise on the update direction has standard deviation ``z_k c / (q_k n_k)`` per coordinate.

Silos differ in their number of steps per epoch ``m_k``: a step index ``j ≥ m_k`` is masked for silo
``k`` (no update, no privacy spent; it only draws random numbers so that streams stay aligned).

Parameters are flat: ``(S, K, D)`` for S configurations, K silos, D model parameters
(:mod:`fedtrain.models`).  Batches of S stacked configurations (a sweep) are drawn from S independent generators, one per
configuration, seeded by the configuration's seed: a configuration gives the same numbers whether it
runs alone or in a sweep (up to float32 summation order).
"""
from __future__ import annotations

import torch

__all__ = ["PoissonBatcher", "draw_noise", "dp_direction"]


class PoissonBatcher:
    """Poisson-sampled batches of every silo, gathered into a padded ``(S, K, b, p)`` tensor.

    Each record ``i < n_k`` gets a uniform key ``U``; it is in the batch iff ``U < q_k`` (exactly
    Poisson sampling).  The ``b`` smallest keys of each silo (``b`` = the largest batch this step)
    contain every selected record, so one ``topk`` gathers them; ``valid`` marks the selected ones.
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor, n: torch.Tensor, q: torch.Tensor):
        self.x, self.y = x, y  # (K, N, p), (K, N)
        self.k, self.n_max = x.shape[0], x.shape[1]
        self.q = q.to(x.dtype)  # (K,)
        self.pad = torch.arange(self.n_max, device=x.device)[None, :] >= n[:, None]  # (K, N)
        self.k_index = torch.arange(self.k, device=x.device)[None, :, None]

    def sample(self, generators: list[torch.Generator]):
        u = torch.stack([torch.rand((self.k, self.n_max), generator=g, device=self.x.device, dtype=self.x.dtype)
                         for g in generators])
        u = u.masked_fill(self.pad[None], 2.0)
        selected = u < self.q[None, :, None]
        b = max(1, int(selected.sum(-1).max()))
        keys, idx = torch.topk(u, b, dim=-1, largest=False, sorted=False)
        valid = keys < self.q[None, :, None]
        return self.x[self.k_index, idx], self.y[self.k_index, idx], valid


def draw_noise(generators: list[torch.Generator], shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
    """Standard normal noise of ``shape`` per configuration, stacked to ``(S, *shape)``."""
    return torch.stack([torch.randn(shape, generator=g, device=like.device, dtype=like.dtype) for g in generators])


def dp_direction(model, loss, w, batch, *, clip, noise, noise_std, denom, prox=None, prox_mode="clip-together"):
    """The privatized update direction of every (configuration, silo) for one step.

    ``w (S,K,D)``; ``clip (S,K)`` (``inf`` for non-private silos), ``noise (S,K,D)`` standard normal,
    ``noise_std (S,K)`` = ``z_k c`` (0 for non-private silos), ``denom (K,)`` = expected batch sizes,
    ``prox (S,K,D)`` the gradient of a parameter-only regularizer (MR-MTL: λ(w_k − w̄)), handled
    by ``prox_mode``: ``clip-together`` adds it to each example's gradient before clipping (the
    released code), ``post-noise`` adds it to the privatized average (Sec. 5's update; free
    post-processing).  Returns ``(direction, per_example_norms)``.
    """
    x, y, valid = batch
    inner = prox if (prox is not None and prox_mode == "clip-together") else None
    total, norms = model.clipped_grad_sum(w, x, y, valid, loss, clip, inner)
    direction = (total + noise * noise_std[..., None]) / denom[None, :, None]
    if prox is not None and prox_mode == "post-noise":
        direction = direction + prox
    return direction, norms
