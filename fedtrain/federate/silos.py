"""The silo side of a federation: one node's silos trained by the engine's own DP-SGD code, its budget and ledger.

A :class:`SiloNode` holds the silos ``owned`` by one SuperNode (their records stay here) and trains them with
:meth:`fedtrain.engine.Trainer.local_train`, the one DP-SGD hot path of ``fedtrain run`` (Poisson sampling at the
ledger's rate ``q_k``, per-example clipping, Gaussian noise ``N(0, (z_k c)^2)``, division by the expected batch
size).  Everything privacy-relevant lives here, never on the server: each silo's target ``(eps_k, delta_k)``,
its noise multiplier calibrated for *its own* plan (the rounds this node agreed to train), its
:class:`~fedtrain.ledger.SiloLedger` and the ε that the accountant computes from that ledger.  The node refuses a
round that would take a silo past its plan (:meth:`SiloNode.can_train`): a silo whose budget is spent leaves.

Random streams.  ``fedtrain run`` draws the batches and noise of all K silos from one generator seeded by the
run's seed.  So that a federation gives the model of the in-process engine (the check that the distributed
path is the same algorithm), a node in ``replica`` mode rebuilds the engine's trainer over the federation's
shape (every silo's training size ``n_k``, which FedAvg's weights ``n_k/Σn`` already make public) with
zero-filled records for the silos it does not hold, draws the whole stream and keeps its own silos' rows.  The
other rows are computed on zeros and discarded: wasted work, and a shared seed lets every node regenerate the
others' noise.  In a real federation each silo must draw its noise from a secret seed
(``private_noise=True``: the generator is seeded from the operating system's entropy); the model is then a
different draw of the same algorithm.

State between rounds (a Flower ClientApp process handles one message and exits) is :meth:`SiloNode.state`: the
owned silos' parameters, the generator's state and the ledger, restored by :meth:`SiloNode.restore`.
"""
from __future__ import annotations

import math
import secrets
from typing import Sequence

import numpy as np
import torch

from fedtrain import ledger
from fedtrain.config import RunConfig
from fedtrain.data.base import FederatedData
from fedtrain.engine import Trainer
from fedtrain.federate import FEDERATED_METHODS
from fedtrain.methods import get_method

__all__ = ["FEDERATED_METHODS", "SiloNode", "silos_of_node", "placeholder_data"]

def silos_of_node(node: int, num_nodes: int, num_silos: int) -> list[int]:
    """The silos SuperNode ``node`` of ``num_nodes`` serves: a contiguous block, sizes differing by at most one."""
    if not 1 <= num_nodes <= num_silos:
        raise ValueError(f"nodes must be between 1 and the number of silos ({num_silos}) (got {num_nodes})")
    if not 0 <= node < num_nodes:
        raise ValueError(f"node must be in [0, {num_nodes - 1}] (got {node})")
    bounds = np.linspace(0, num_silos, num_nodes + 1).round().astype(int)
    return list(range(int(bounds[node]), int(bounds[node + 1])))


def placeholder_data(data: FederatedData, owned: Sequence[int]) -> FederatedData:
    """``data`` with the records of every silo not in ``owned`` replaced by zeros of the same training size (and
    one zero test record): the federation's shape without the other silos' data."""
    own = set(int(k) for k in owned)
    d = data.dim

    def keep(arrs, k, n):
        return arrs[k] if k in own else np.zeros((n,) + arrs[k].shape[1:], dtype=arrs[k].dtype)

    k_all = range(data.num_silos)
    return FederatedData(
        name=data.name, task=data.task, real=data.real, num_classes=data.num_classes, info=dict(data.info),
        input_shape=data.input_shape,
        train_x=[keep(data.train_x, k, data.train_x[k].shape[0]) for k in k_all],
        train_y=[keep(data.train_y, k, data.train_y[k].shape[0]) for k in k_all],
        test_x=[data.test_x[k] if k in own else np.zeros((1, d), dtype=data.test_x[k].dtype) for k in k_all],
        test_y=[data.test_y[k] if k in own else np.zeros((1,), dtype=data.test_y[k].dtype) for k in k_all])


class SiloNode:
    """The silos ``owned`` by one node, trained with the engine's DP-SGD step under their own budgets.

    ``config``: the run (method, λ, η, clip, batch size, seed, ``rounds`` the server will ask for).
    ``budget_rounds``: the rounds this node calibrates its noise for (default ``config.rounds``): it trains at
    most that many and refuses the next.  ``eps``/``delta``: this node's own targets (default: the config's).
    """

    def __init__(self, config: RunConfig, data: FederatedData, owned: Sequence[int], *,
                 budget_rounds: int | None = None, private_noise: bool = False):
        if config.method not in FEDERATED_METHODS:
            raise ValueError(f"method must be one of {', '.join(FEDERATED_METHODS)} for a federation "
                             f"(got {config.method!r})")
        self.owned = [int(k) for k in owned]
        if not self.owned or min(self.owned) < 0 or max(self.owned) >= data.num_silos:
            raise ValueError(f"owned silos must be in [0, {data.num_silos - 1}] (got {self.owned})")
        self.config = config
        self.budget_rounds = int(config.rounds if budget_rounds is None else budget_rounds)
        if self.budget_rounds < 1:
            raise ValueError(f"budget_rounds must be >= 1 (got {self.budget_rounds})")
        plan_cfg = config.replace(rounds=self.budget_rounds)
        if private_noise:
            plan_cfg = plan_cfg.replace(seed=secrets.randbits(53))
        self.summary = data.summary()
        self.tr = Trainer([plan_cfg], placeholder_data(data, self.owned))
        self.method = get_method(config.method)(self.tr)
        self.tr.ledger.plan = self.method.privacy_plan()
        z = self.method.noise_multipliers(0)
        ledger.check_noise_multipliers(z[self.owned], self.tr.eps[0][self.owned],
                                       _restrict(self.tr.ledger.plan, self.owned), config.accountant)
        self.tr.set_noise(z[None])
        self.idx = torch.as_tensor(self.owned, device=self.tr.device)
        w0 = self.tr.init_params()  # (1, K, D), the engine's initialization
        self.w = w0[:, self.idx].clone()
        self.rounds_done = 0

    # -- budget ------------------------------------------------------------------------------------------------------
    def can_train(self) -> bool:
        """Whether one more round keeps every owned silo within the plan its noise was calibrated for."""
        more = self.tr.ledger.dpsgd_steps + self.tr.m * (self.config.local_epochs + self.method.extra_epochs_per_round)
        return bool((more[self.owned] <= self.tr.ledger.plan.dpsgd_steps[self.owned]).all())

    def eps_spent(self) -> np.ndarray:
        """ε each owned silo has spent so far, from its ledger (the config's accountant, at its δ_k)."""
        spent = ledger.spent_epsilons(self.tr.ledger, self.tr.noise_multipliers[0], self.tr.delta[0], self.tr.q,
                                      self.config.accountant)
        return np.where(self.tr.ledger.dpsgd_steps > 0, spent, 0.0)[self.owned]

    # -- training ---------------------------------------------------------------------------------------------------
    def train_round(self, wbar: np.ndarray | None) -> np.ndarray | None:
        """One round from the server model ``wbar (D,)`` (FedAvg, MR-MTL; ``None`` for Local).

        Returns the owned silos' updates ``Δ_k = w_k^{new} − w_k^{start}``, ``(A, D)`` float32 (``None`` for
        Local, which sends nothing).  Raises :class:`fedtrain.ledger.LedgerMismatchError` if the round would
        exceed a silo's plan (call :meth:`can_train` first).
        """
        if not self.can_train():
            raise ledger.LedgerMismatchError(f"silos {self.owned}: a further round would exceed the privacy plan "
                                             f"of {self.budget_rounds} rounds their noise was calibrated for")
        tr, method = self.tr, self.config.method
        full = torch.zeros((1, tr.K, tr.D), device=tr.device, dtype=tr.dtype)
        if method == "fedavg":
            wb = torch.as_tensor(np.asarray(wbar), device=tr.device, dtype=tr.dtype)
            start = wb[None, None].expand(1, len(self.owned), tr.D).clone()
        else:
            start = self.w
        full[:, self.idx] = start
        prox = None
        if method == "mrmtl":
            wb = torch.as_tensor(np.asarray(wbar), device=tr.device, dtype=tr.dtype)
            lam = tr.lam[:, None, None]
            wbar_full = wb[None, None]
            prox = lambda w: lam * (w - wbar_full)  # noqa: E731  (MRMTL.round's proximal gradient)
        new = tr.local_train(full, self.config.local_epochs, prox_fn=prox)[:, self.idx]
        self.rounds_done += 1
        if method == "local":
            self.w = new
            return None
        delta = (new - start)[0]
        self.w = new if method == "mrmtl" else start
        return delta.detach().cpu().numpy().astype(np.float32)

    def evaluate(self, wbar: np.ndarray | None) -> dict:
        """Owned silos' test metrics (FedAvg: with ``wbar``; Local, MR-MTL: their own models), test sizes and
        privacy record."""
        tr = self.tr
        full = torch.zeros((1, tr.K, tr.D), device=tr.device, dtype=tr.dtype)
        if self.config.method == "fedavg":
            full[:] = torch.as_tensor(np.asarray(wbar), device=tr.device, dtype=tr.dtype)
        else:
            full[:, self.idx] = self.w
        metrics = tr.silo_metrics(full)[0].cpu().numpy().astype(float)[self.owned]
        return {"silos": list(self.owned), "silo_metrics": metrics.tolist(),
                "test_sizes": [int(tr.nt[k]) for k in self.owned],
                "eps_spent": self.eps_spent().tolist(), "eps": [float(tr.eps[0][k]) for k in self.owned],
                "delta": [float(tr.delta[0][k]) for k in self.owned],
                "noise_multipliers": [float(tr.noise_multipliers[0][k]) for k in self.owned],
                "steps": [int(tr.ledger.dpsgd_steps[k]) for k in self.owned],
                "sample_rates": [float(tr.q[k]) for k in self.owned], "metric": tr.loss.metric_name,
                "rounds_done": self.rounds_done}

    # -- state between messages --------------------------------------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """What the next message's process needs: parameters, generator state, ledger, rounds done."""
        return {"w": self.w[0].detach().cpu().numpy(), "rng": self.tr.gens[0].get_state().numpy(),
                "steps": self.tr.ledger.dpsgd_steps.copy(), "rounds_done": np.array([self.rounds_done])}

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`state`."""
        self.w = torch.as_tensor(np.asarray(state["w"]), device=self.tr.device, dtype=self.tr.dtype)[None].clone()
        self.tr.gens[0].set_state(torch.as_tensor(np.asarray(state["rng"], dtype=np.uint8)))
        self.tr.ledger.dpsgd_steps = np.asarray(state["steps"], dtype=np.int64).copy()
        self.rounds_done = int(np.asarray(state["rounds_done"]).ravel()[0])


def _restrict(plan: ledger.PrivacyPlan, owned: list[int]) -> ledger.PrivacyPlan:
    return ledger.PrivacyPlan(plan.dpsgd_steps[owned], plan.selections[owned])

