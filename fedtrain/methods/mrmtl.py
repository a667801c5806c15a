"""MR-MTL, mean-regularized multi-task learning (MR-MTL paper Algorithm A1, Sec. 5).

Round t: silo k runs ``local_epochs`` of DP-SGD on ``ℓ(w_k) + (λ/2)‖w_k − w̄^{(t−1)}‖²`` from its own
``w_k^{(t−1)}``; the server sets ``w̄^{(t)} = w̄^{(t−1)} + Σ_k a_k Δ_k`` with ``Δ_k = w_k^{(t)} − w_k^{(t−1)}``.
All models start at zero.  λ = 0 is local training.  The proximal gradient ``λ(w_k − w̄)`` is either
clipped together with each example's gradient (``prox_mode="clip-together"``, the released code) or
added after privatization (``"post-noise"``, Sec. 5's update ``w ← w − η(g̃ + λ(w − w̄))``).
With Poisson batches, ``clip-together`` sums the (clipped) prox over the b sampled examples and
divides by the expected batch size, so the prox is weighted by ``b/E[b]`` (mean 1) rather than 1; the
two modes coincide for full batches without clipping (tests/engine/test_fedtrain_engine.py).  w̄ is
post-processing: no privacy overhead.
"""
from __future__ import annotations

from fedtrain.methods.base import Method

__all__ = ["MRMTL"]


class MRMTL(Method):
    def setup(self):
        self.w = self.tr.init_params()
        self.wbar = self.tr.init_params(per_silo=False)

    def round(self, t):
        lam = self.tr.lam[:, None, None]
        wbar = self.wbar[:, None]
        start = self.w
        self.w = self.tr.local_train(start, self.cfg.local_epochs, prox_fn=lambda w: lam * (w - wbar))
        self.wbar = self.wbar + self.tr.average(self.w - start)

    def eval_weights(self):
        return self.w
