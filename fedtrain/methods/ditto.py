"""Ditto (Li et al. 2021), as run in the MR-MTL paper (App. D).

Round t: every silo (i) runs ``local_epochs`` of DP-SGD on the plain loss from the global model w̄
and sends the update, which the server averages into w̄ (a FedAvg solver); (ii) runs
``ditto_personal_epochs`` (paper: 1) of DP-SGD on its personal model ``v_k`` with the proximal term
``(λ/2)‖v_k − w̄^{(t−1)}‖²`` toward the round-start global model.  Both passes touch the silo's data,
so each silo's noise is calibrated for ``(local_epochs + ditto_personal_epochs)·m_k`` steps per round
(the privacy overhead of Fig. 4).  Silos are evaluated with ``v_k``.
"""
from __future__ import annotations

from fedtrain.methods.base import Method

__all__ = ["Ditto"]


class Ditto(Method):
    @property
    def extra_epochs_per_round(self):
        return self.cfg.ditto_personal_epochs

    def setup(self):
        self.v = self.tr.init_params()
        self.wbar = self.tr.init_params(per_silo=False)

    def round(self, t):
        start = self.broadcast(self.wbar)
        new = self.tr.local_train(start, self.cfg.local_epochs)
        lam = self.tr.lam[:, None, None]
        center = self.wbar[:, None]
        self.v = self.tr.local_train(self.v, self.cfg.ditto_personal_epochs, prox_fn=lambda v: lam * (v - center))
        self.wbar = self.wbar + self.tr.average(new - start)

    def eval_weights(self):
        return self.v
