"""Local training, FedAvg and local finetuning (MR-MTL paper Sec. 3–4, App. D).

All three cost the same privacy: ``rounds·local_epochs`` DP-SGD epochs per silo.
"""
from __future__ import annotations

from fedtrain.methods.base import Method

__all__ = ["Local", "FedAvg", "Finetune"]


class Local(Method):
    """Local training: each silo runs DP-SGD on its own data, no communication; zero init."""

    def setup(self):
        self.w = self.tr.init_params()

    def round(self, t):
        self.w = self.tr.local_train(self.w, self.cfg.local_epochs)

    def eval_weights(self):
        return self.w


class FedAvg(Method):
    """FedAvg: silos start from w̄, run ``local_epochs`` of DP-SGD, the server adds Σ_k a_k Δ_k to w̄
    (a_k = n_k/Σn, the released code, or 1/K).  Every silo is evaluated with the shared w̄."""

    def setup(self):
        self.wbar = self.tr.init_params(per_silo=False)

    def fedavg_round(self):
        start = self.broadcast(self.wbar)
        new = self.tr.local_train(start, self.cfg.local_epochs)
        self.wbar = self.wbar + self.tr.average(new - start)

    def round(self, t):
        self.fedavg_round()

    def eval_weights(self):
        return self.broadcast(self.wbar)


class Finetune(FedAvg):
    """Local finetuning: FedAvg for the first ``int(finetune_frac·rounds)`` rounds (paper: half),
    then every silo trains locally from w̄ (Fig. 2, A2).  Same privacy as FedAvg and local."""

    def setup(self):
        super().setup()
        self.switch = max(1, int(self.cfg.finetune_frac * self.cfg.rounds))
        self.w = None

    def round(self, t):
        if t < self.switch:
            self.fedavg_round()
            return
        if self.w is None:
            self.w = self.broadcast(self.wbar)
        self.w = self.tr.local_train(self.w, self.cfg.local_epochs)

    def eval_weights(self):
        return self.broadcast(self.wbar) if self.w is None else self.w
