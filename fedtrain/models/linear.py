"""The linear model ``f(x) = x̃ W`` of the paper's convex tasks, with its closed-form per-example clipping
(:mod:`fedtrain.models` explains the expanded norm and its error bound)."""
from __future__ import annotations

import torch

from fedtrain.losses import Loss
from fedtrain.models.base import EXPANDED_NORM_REL_TOL, FunctionalModel

__all__ = ["LinearModel"]


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
        """``x (..., b, p)``, ``theta (..., D)`` → ``f (..., b, o)`` (one ``einsum``).

        ``einsum`` folds the leading dimensions along which ``x`` is broadcast (configurations, IFCA's
        centres) into the columns of one batched product; ``matmul`` would first copy ``x`` once per
        configuration (50× slower for 64 configurations' test sets)."""
        return torch.einsum("...bp,...po->...bo", x, self.export(theta))

    #: :meth:`clipped_grad_sum` takes the batch's precomputed ``‖x̃_i‖²`` (``x_sq``; :meth:`fedtrain.dpsgd_step.PoissonBatcher.sample_batch`).
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
