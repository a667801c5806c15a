"""Base class of the methods: privacy accounting per silo and the round interface."""
from __future__ import annotations

import numpy as np
import torch

from fedtrain import privacy

__all__ = ["Method"]


class Method:
    """One federated method on a :class:`fedtrain.engine.Trainer` (S stacked configs, K silos).

    Subclasses implement ``setup()``, ``round(t)`` (t = 0..rounds-1) and ``eval_weights()`` (the
    model each silo is evaluated with, ``(S,K,D)``).  Parameters are flat (``(S,K,D)`` per silo,
    ``(S,D)`` on the server; :mod:`fedtrain.models`), so a method never looks at the model's shapes;
    ``self.tr.init_params()`` gives the model's initialization and ``self.tr.local_train`` the one
    DP-SGD hot path every method uses.  Privacy: every silo runs
    ``rounds·local_epochs·m_k`` DP-SGD steps plus ``extra_epochs_per_round·rounds·m_k`` (Ditto's
    personal pass); the noise multiplier of silo k is calibrated for exactly these steps.
    """

    extra_epochs_per_round = 0

    def __init__(self, trainer):
        self.tr = trainer
        self.cfg = trainer.cfg

    # -- accounting --------------------------------------------------------------------------------
    def extra_steps(self) -> np.ndarray:
        return self.tr.m * self.cfg.rounds * self.extra_epochs_per_round

    def accounted_steps(self) -> np.ndarray:
        c = self.cfg
        return privacy.silo_steps(self.tr.n, c.batch_size, c.rounds, c.local_epochs) + self.extra_steps()

    def noise_multipliers(self, i: int) -> np.ndarray:
        c, tr = self.tr.configs[i], self.tr
        return privacy.noise_multipliers(tr.eps[i], tr.delta[i], tr.n, c.batch_size, c.rounds, c.local_epochs,
                                         c.accountant, extra_steps=self.extra_steps())

    def spent_epsilons(self, i: int) -> np.ndarray:
        c, tr = self.tr.configs[i], self.tr
        return privacy.spent_epsilons(tr.noise_multipliers[i], tr.delta[i], tr.n, c.batch_size, c.rounds,
                                      c.local_epochs, c.accountant, extra_steps=self.extra_steps())

    def extras(self, i: int) -> dict:
        return {}

    # -- training --------------------------------------------------------------------------------------
    def setup(self) -> None:
        raise NotImplementedError

    def round(self, t: int) -> None:
        raise NotImplementedError

    def eval_weights(self) -> torch.Tensor:
        raise NotImplementedError

    def broadcast(self, wbar: torch.Tensor) -> torch.Tensor:
        """``(S,D)`` → ``(S,K,D)`` copies (every silo starts from the server model)."""
        return wbar[:, None].expand(-1, self.tr.K, -1).clone()
