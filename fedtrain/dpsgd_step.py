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

import math

import torch

__all__ = ["PoissonBatcher", "SAMPLERS", "draw_noise", "dp_direction"]


#: Largest number of gathered entries for which :meth:`PoissonBatcher.sample_epoch` gathers a whole epoch at once.
_EPOCH_GATHER_MAX = 1 << 22
#: Widest rows (features + bias) for which the batcher keeps one gather table ``[x̃ | y | ‖x̃‖²]``.
_TABLE_MAX_WIDTH = 256
#: The Poisson samplers of :class:`PoissonBatcher` (both exactly Poisson sampling; different random streams).
SAMPLERS = ("geometric", "sorted-keys")


class PoissonBatcher:
    """Poisson-sampled batches of every silo, gathered into a padded ``(S, K, b, p)`` tensor.

    Poisson sampling: every record ``i < n_k`` of silo ``k`` enters the batch independently with
    probability ``q_k``.  Two exact samplers (``sampler``), which consume the random stream differently
    and so give different seeded batches with the same distribution:

    * ``"geometric"`` (the default, engine version 5): the included records of a Bernoulli(q) sequence
      are separated by gaps ``G ~ Geometric(q)`` (failures before a success, ``P(G ≥ g) = (1−q)^g``),
      drawn by inversion, ``G = ⌊log(1−U)/log(1−q)⌋`` with ``U`` uniform (float64).  The included
      positions are the cumulative sums ``Σ (G_j + 1) − 1`` that are ``< n_k``: already sorted, no
      sort or top-k, and about ``B + 6√B`` uniforms per silo and step instead of ``n_k``.  A generator
      whose draws do not reach past ``n_k`` for some silo draws more columns (its own stream only, so
      a configuration's batches do not depend on the other configurations stacked with it).
    * ``"sorted-keys"`` (engine versions ≤ 4, kept to compare with recorded numbers): each record gets a
      uniform key ``U`` and is in the batch iff ``U < q_k``; the ``b`` smallest keys of each silo
      (``b`` = the largest batch this step) contain every selected record, one ``topk`` gathers them.

    ``sample`` returns ``(x_b, y_b, valid)``: ``(S,K,b,p)``, ``(S,K,b)``, and the mask of real
    selected records (``valid`` is a prefix of each row for ``geometric``).
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor, n: torch.Tensor, q: torch.Tensor,
                 sampler: str = "geometric"):
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {SAMPLERS} (got {sampler!r})")
        self.sampler = sampler
        self.x, self.y = x, y  # (K, N, p), (K, N)
        self.k, self.n_max = x.shape[0], x.shape[1]
        self.q = q.to(x.dtype)  # (K,)
        self.pad = torch.arange(self.n_max, device=x.device)[None, :] >= n[:, None]  # (K, N)
        self.k_index = torch.arange(self.k, device=x.device)[None, :, None]
        # geometric sampler: log(1 - q_k) in float64 (q_k = 1 → -inf → every gap 0: all records)
        q64 = q.to(torch.float64)
        self.log1m_q = torch.log1p(-q64)[:, None]  # (K, 1)
        self.n_last = n.to(torch.float64)  # a position >= n_k is past the silo's last record
        mean = float((q64 * n.to(torch.float64)).max())
        # columns drawn per step: the mean count plus 4 standard deviations (more only when needed)
        self.width = max(1, int(math.ceil(mean + 4.0 * math.sqrt(mean) + 2)))
        self.x_sq = (x * x).sum(-1)  # (K, N)
        self.x_flat = x.reshape(self.k * self.n_max, -1)
        self.y_flat = y.reshape(self.k * self.n_max)
        self.sq_flat = self.x_sq.reshape(self.k * self.n_max)
        self.offset = (torch.arange(self.k, device=x.device) * self.n_max)[:, None]  # (K, 1)
        # one row per record: [x̃ | y | ‖x̃‖²], so that one index_select gathers a batch
        # (only for narrow data: for wide rows, e.g. images, a second copy of the training set is not worth it)
        self.table = (torch.cat([self.x_flat, self.y_flat[:, None].to(x.dtype), self.sq_flat[:, None]], 1)
                      if x.shape[-1] <= _TABLE_MAX_WIDTH else None)

    def sample(self, generators: list[torch.Generator]):
        """One Poisson batch per generator and silo: ``(x_b, y_b, valid)``."""
        return self.sample_batch(generators)[:3]

    def sample_batch(self, generators: list[torch.Generator]):
        """:meth:`sample` plus ``‖x̃_i‖²`` of every gathered record, ``(U,K,b)`` (computed once per record)."""
        if self.sampler == "sorted-keys":
            return self._sample_sorted_keys(generators)
        return self._sample_geometric(generators)

    def _positions(self, g: torch.Generator, lead: tuple[int, ...] = ()) -> torch.Tensor:
        """Included positions of every silo for one generator, ``(*lead, K, L)`` float64 (``>= n_k``: none)."""
        dev = self.x.device
        shape = tuple(lead) + (self.k, self.width)
        u = torch.rand(shape, generator=g, device=dev, dtype=torch.float64)
        pos = torch.cumsum(torch.floor(torch.log1p(-u) / self.log1m_q) + 1.0, dim=-1) - 1.0
        while bool((pos[..., -1] < self.n_last).any()):  # rare: some silo not decided to its end
            u = torch.rand(shape, generator=g, device=dev, dtype=torch.float64)
            more = torch.cumsum(torch.floor(torch.log1p(-u) / self.log1m_q) + 1.0, dim=-1) + pos[..., -1:]
            pos = torch.cat([pos, more], dim=-1)
        return pos

    def _stack_positions(self, generators, lead: tuple[int, ...] = ()) -> torch.Tensor:
        pos = [self._positions(g, lead) for g in generators]
        width = max(p.shape[-1] for p in pos)
        if any(p.shape[-1] < width for p in pos):
            pos = [torch.nn.functional.pad(p, (0, width - p.shape[-1]), value=math.inf) for p in pos]
        return torch.stack(pos)  # (U, *lead, K, L), increasing along the last axis

    def _gather(self, pos: torch.Tensor, valid: torch.Tensor, b: int):
        idx = torch.where(valid[..., :b], pos[..., :b], 0.0).to(torch.long) + self.offset
        flat = idx.reshape(-1)
        if self.table is None:
            return (self.x_flat.index_select(0, flat).reshape(*idx.shape, self.x_flat.shape[-1]),
                    self.y_flat.index_select(0, flat).reshape(idx.shape), valid[..., :b],
                    self.sq_flat.index_select(0, flat).reshape(idx.shape))
        rows = self.table.index_select(0, flat).reshape(*idx.shape, self.table.shape[-1])
        p = self.table.shape[-1] - 2
        return rows[..., :p], rows[..., p], valid[..., :b], rows[..., p + 1]

    def _sample_geometric(self, generators):
        pos = self._stack_positions(generators)
        valid = pos < self.n_last[:, None]
        return self._gather(pos, valid, max(1, int(valid.sum(-1).max())))

    def sample_epoch(self, generators: list[torch.Generator], steps: int):
        """Batches of ``steps`` consecutive steps: a list of :meth:`sample_batch` results.

        ``geometric``: every generator draws the uniforms of all ``steps`` steps at once (one call per
        generator and epoch; the stream the engine uses).  ``sorted-keys``: ``steps`` calls of
        :meth:`sample_batch` (its stream interleaves with the noise only when called step by step, as the
        engine does for it).
        """
        if self.sampler == "sorted-keys":
            return [self.sample_batch(generators) for _ in range(steps)]
        pos = self._stack_positions(generators, (steps,))  # (U, steps, K, L)
        valid = pos < self.n_last[:, None]
        sizes = [int(b) for b in valid.sum(-1).amax(dim=(0, 2)).clamp(min=1).tolist()]
        bmax = max(sizes)
        if pos.shape[0] * steps * self.k * bmax * (self.x_flat.shape[1] + 2) > _EPOCH_GATHER_MAX:  # wide data: per step
            return [self._gather(pos[:, j], valid[:, j], b) for j, b in enumerate(sizes)]
        xb, yb, vb, sq = self._gather(pos, valid, bmax)  # one gather for the epoch, then views per step
        return [(xb[:, j, :, :b], yb[:, j, :, :b], vb[:, j, :, :b], sq[:, j, :, :b]) for j, b in enumerate(sizes)]

    def _sample_sorted_keys(self, generators):
        u = torch.stack([torch.rand((self.k, self.n_max), generator=g, device=self.x.device, dtype=self.x.dtype)
                         for g in generators])
        u = u.masked_fill(self.pad[None], 2.0)
        selected = u < self.q[None, :, None]
        b = max(1, int(selected.sum(-1).max()))
        keys, idx = torch.topk(u, b, dim=-1, largest=False, sorted=False)
        valid = keys < self.q[None, :, None]
        return self.x[self.k_index, idx], self.y[self.k_index, idx], valid, self.x_sq[self.k_index, idx]


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
    x, y, valid = batch[:3]
    inner = prox if (prox is not None and prox_mode == "clip-together") else None
    extra = {"x_sq": batch[3]} if len(batch) > 3 and getattr(model, "uses_input_norms", False) else {}
    total, norms = model.clipped_grad_sum(w, x, y, valid, loss, clip, inner, **extra)
    direction = (total + noise * noise_std[..., None]) / denom[None, :, None]
    if prox is not None and prox_mode == "post-noise":
        direction = direction + prox
    return direction, norms
