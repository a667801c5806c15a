"""Mocha (Smith et al. 2017) in primal form, trained with (DP-)SGD, as in the MR-MTL paper's code.

Objective: ``Σ_k ℓ_k(w_k) + (λ/2) tr(Wᵀ Σ W)`` with ``W (K × D)`` the stacked personal models and
``Σ₀ = I/K``.  Round t: silo k runs ``local_epochs`` of DP-SGD on ``ℓ_k(w_k)`` plus the regularizer's
gradient ``λ(Σ_kk w_k + Σ_{j≠k} Σ_kj w_j^{(t−1)})`` (other silos' models frozen at the round start,
the only information a silo has); then the server updates
``Σ ← (W Wᵀ)^{1/2} / tr((W Wᵀ)^{1/2})`` (eigendecomposition, eigenvalues floored at 1e-8).

Documented deviation: this uses Σ itself in the penalty, as the released code does;
the task-relationship formulation of Zhang & Yeung (2010) that Mocha builds on penalizes with the
inverse, ``tr(W Σ^{-1} Wᵀ)``.  No privacy overhead (Σ is post-processing of released models).
"""
from __future__ import annotations

import torch

from fedtrain.methods.base import Method

__all__ = ["Mocha"]


class Mocha(Method):
    def setup(self):
        S, K = self.tr.S, self.tr.K
        self.w = self.tr.init_params()
        eye = torch.eye(K, device=self.tr.device, dtype=self.tr.dtype)
        self.sigma = (eye / K).expand(S, K, K).clone()

    def round(self, t):
        lam = self.tr.lam[:, None, None]
        start = self.w
        sig = self.sigma
        others = torch.einsum("skj,sjd->skd", sig, start)
        diag = torch.diagonal(sig, dim1=-2, dim2=-1)[..., None]

        def prox(w):
            return lam * (others + diag * (w - start))

        self.w = self.tr.local_train(start, self.cfg.local_epochs, prox_fn=prox)
        self.sigma = self.update_sigma(self.w)

    @staticmethod
    def update_sigma(w: torch.Tensor) -> torch.Tensor:
        """``Σ = (W Wᵀ)^{1/2} / tr((W Wᵀ)^{1/2})`` for ``w (S,K,D)``, in float64.

        A configuration whose models have diverged (non-finite ``W Wᵀ``, e.g. too large a learning rate) gets
        ``Σ = NaN``, so that its run ends with non-finite models like any diverged run, instead of stopping
        the other configurations trained with it."""
        flat = w.reshape(w.shape[0], w.shape[1], -1).double()
        a = flat @ flat.transpose(-1, -2)
        ok = torch.isfinite(a).all(-1).all(-1)
        out = torch.full_like(a, float("nan"))
        if bool(ok.any()):
            evals, evecs = torch.linalg.eigh(a[ok])
            root = (evecs * evals.clamp(min=1e-8).sqrt()[..., None, :]) @ evecs.transpose(-1, -2)
            tr = torch.diagonal(root, dim1=-2, dim2=-1).sum(-1)[:, None, None]
            out[ok] = root / tr
        return out.to(w.dtype)

    def eval_weights(self):
        return self.w
