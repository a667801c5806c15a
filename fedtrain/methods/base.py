"""Base class of the methods: the privacy plan per silo and the round interface."""
from __future__ import annotations

import numpy as np
import torch

from fedtrain import ledger

__all__ = ["Method"]


class Method:
    """One federated method on a :class:`fedtrain.engine.Trainer` (S stacked configs, K silos).

    Subclasses implement ``setup()``, ``round(t)`` (t = 0..rounds-1) and ``eval_weights()`` (the
    model each silo is evaluated with, ``(S,K,D)``).  Parameters are flat (``(S,K,D)`` per silo,
    ``(S,D)`` on the server; :mod:`fedtrain.models`), so a method never looks at the model's shapes;
    ``self.tr.init_params()`` gives the model's initialization and ``self.tr.local_train`` the one
    DP-SGD hot path every method uses.

    Privacy: :meth:`privacy_plan` declares what every silo will run — by default
    ``rounds·(local_epochs + extra_epochs_per_round)·m_k`` DP-SGD steps (``extra_epochs_per_round``:
    Ditto's personal pass) and no selections; methods with private selections (IFCA) override
    :meth:`privacy_plan` and :meth:`selection_eps`.  The engine calibrates the noise for the plan
    (:func:`fedtrain.ledger.noise_multipliers`), records what actually runs in the trainer's
    :class:`~fedtrain.ledger.SiloLedger`, stops if the two differ, and reports ε from the ledger.
    """

    extra_epochs_per_round = 0

    def __init__(self, trainer):
        self.tr = trainer
        self.cfg = trainer.cfg

    # -- accounting --------------------------------------------------------------------------------
    def privacy_plan(self) -> ledger.PrivacyPlan:
        """DP-SGD steps (and private selections) every silo will run; the same for all S configurations."""
        c = self.cfg
        return ledger.silo_privacy_plan(self.tr.n, c.batch_size, c.rounds, c.local_epochs + self.extra_epochs_per_round)

    def selection_eps(self, i: int) -> np.ndarray:
        """Per-silo ε of one private selection of configuration ``i`` (0: the method makes none)."""
        return np.zeros(self.tr.K)

    def noise_multipliers(self, i: int) -> np.ndarray:
        c, tr = self.tr.configs[i], self.tr
        return ledger.noise_multipliers(tr.ledger.plan, tr.eps[i], tr.delta[i], tr.q, c.accountant,
                                        selection_eps=self.selection_eps(i))

    def spent_epsilons(self, i: int) -> np.ndarray:
        c, tr = self.tr.configs[i], self.tr
        return ledger.spent_epsilons(tr.ledger, tr.noise_multipliers[i], tr.delta[i], tr.q, c.accountant,
                                     selection_eps=self.selection_eps(i))

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
