"""IFCA with private cluster selection, and IFCA-preconditioned MR-MTL (MR-MTL paper App. D, Alg. A2, Figs. 3, 4, 6).

IFCA (Ghosh et al. 2020), as run in the paper:

* the server keeps ``G = num_clusters`` models, randomly initialized (the model's random init; linear:
  N(0, 1/p) entries), centres ``(S, G, D)``;
* in ``T_sel = max(1, int(select_frac·rounds))`` rounds (paper: 10 %; the first ``T_sel`` rounds, or with
  ``select_every = e`` the rounds 0, e, …, (T_sel − 1)·e, so that the cluster models train between selections:
  :attr:`IFCA.selection_rounds`), every silo
  privately picks the centre with the lowest score on its training set with the exponential
  mechanism ("report noisy min": ``argmin_g s_g − Gumbel·2Δ_k/ε_sel``, :func:`private_argmin`),
  score = error rate (classification) or the mean per-example loss clipped to ``[0, ifca_loss_clip]``
  (regression), sensitivity ``Δ_k = L/(n_k − 1)`` (paper Eq. (15), corrected); afterwards the
  assignments are frozen after the last selection round.  Each row records how well the clusters recover the
  data's groups where the data have them (``info["rotation_group"]``, or a synthetic set's
  ``info["cluster_of_silo"]``): the adjusted Rand index of the final
  assignments (``cluster_ari``, 1 = recovered, ≈ 0 = chance), the pair agreement (``cluster_rand``) and the round
  of the last selection that changed an assignment (``clusters_frozen_round``);
* per-round selection budget ``ε_sel,k = select_eps_frac·ε_k`` (paper: 0.03); each selection is
  ``ε_sel²/8``-zCDP (bounded range) and is composed with DP-SGD in RDP; DP-SGD's noise multiplier is
  re-solved so that the total meets ε_k: the privacy plan declares ``T_sel`` selections per silo, the
  ledger records each one where it happens (:meth:`IFCA.select`), see :mod:`fedtrain.ledger`;
* every round each silo trains its cluster's model for ``local_epochs`` and the server averages the
  updates within each cluster (weights a_k renormalized over the members; an empty cluster keeps its
  model).  Silos are evaluated with their cluster's model.

IFCA-preconditioned MR-MTL (Algorithm A2): stage 1 (the selection rounds) is IFCA, each silo keeping
the model it trained; stage 2 is MR-MTL with each silo's proximal centre its cluster's model, the
centres updated with the members' updates ``w_k^{(t)} − w_k^{(t−1)}`` (the released code; the printed
Alg. A2 line 22 differs).  Silos are evaluated with their personal models.
"""
from __future__ import annotations

import math

import numpy as np
from sklearn.metrics import adjusted_rand_score
import torch

from fedtrain import ledger
from fedtrain.methods.base import Method

__all__ = ["IFCA", "IFCAMRMTL", "private_argmin", "schedule", "max_select_every"]


def private_argmin(scores: torch.Tensor, scale: torch.Tensor, generators: list[torch.Generator]) -> torch.Tensor:
    """Exponential mechanism over ``G`` candidates for every (config, silo), by Gumbel "report noisy min".

    ``scores (S,K,G)`` (lower is better), ``scale (S,K)`` = ``2Δ/ε`` (0 → exact argmin).  Returns
    ``(S,K)`` indices distributed as ``P(g) ∝ exp(−ε s_g / (2Δ))`` (McSherry–Talwar; Gumbel-max trick),
    the same sampler as :func:`fedtheory.privacy.exponential.private_argmin`, vectorized over silos
    with per-silo scales.  ``generators``: S of them, or U < S, each shared by S/U consecutive rows.
    """
    S = scores.shape[0]
    u = torch.stack([torch.rand(scores.shape[1:], generator=g, device=scores.device, dtype=torch.float64)
                     for g in generators])
    if u.shape[0] != S:
        U = u.shape[0]
        u = u[:, None].expand(U, S // U, *u.shape[1:]).reshape(S, *u.shape[1:])
    gumbel = -torch.log(-torch.log(u.clamp(min=1e-300)))
    noisy = scores.double() - scale.double()[..., None] * gumbel
    return noisy.argmin(-1)


def schedule(select_frac: float, rounds: int, select_every: int = 1) -> tuple[int, ...]:
    """IFCA's selection rounds (0-based): ``T_sel = max(1, int(select_frac·rounds))`` of them, ``select_every``
    apart from round 0.  The rounds may run past ``rounds`` (:meth:`IFCA.check_config` rejects that)."""
    count = max(1, int(select_frac * rounds))
    return tuple(range(0, count * int(select_every), int(select_every)))


def max_select_every(config) -> int:
    """The largest ``select_every`` whose schedule ends before the last round of ``config``."""
    count = max(1, int(config.select_frac * config.rounds))
    return max(1, (config.rounds - 1) // (count - 1)) if count > 1 else config.rounds


class IFCA(Method):
    personalized = False

    # -- accounting: DP-SGD + selections ------------------------------------------------------------------
    @property
    def selections(self) -> int:
        return max(1, int(self.cfg.select_frac * self.cfg.rounds))

    @property
    def selection_rounds(self) -> tuple[int, ...]:
        """The rounds (0-based) with a private selection: 0, e, …, (T_sel − 1)·e for ``select_every = e``."""
        return schedule(self.cfg.select_frac, self.cfg.rounds, self.cfg.select_every)

    def selection_eps(self, i: int) -> np.ndarray:
        """ε_sel,k = ``select_eps_frac``·ε_k of configuration ``i`` (∞ for a non-private silo)."""
        return self.tr.configs[i].select_eps_frac * self.tr.eps[i]

    def privacy_plan(self) -> ledger.PrivacyPlan:
        """DP-SGD steps as every method, plus ``selections`` exponential-mechanism selections per silo."""
        base = super().privacy_plan()
        return ledger.PrivacyPlan(base.dpsgd_steps, np.full(self.tr.K, self.selections), base.sample_rates)

    def extras(self, i):
        clusters = self.assign[i].cpu().numpy().tolist()
        out = {"clusters": clusters, "selections": self.selections,
               "select_eps": [float(e) for e in self.selection_eps(i)],
               "selection_rounds": list(self.selection_rounds), "clusters_frozen_round": int(self.frozen[i])}
        info = getattr(self.tr.data, "info", None) or {}
        groups = info.get("rotation_group", info.get("cluster_of_silo"))
        if groups is not None and len(groups) == len(clusters):
            a, g = np.asarray(clusters), np.asarray(groups)
            off = ~np.eye(a.size, dtype=bool)  # the Rand index: pairs both put together or both apart
            out["cluster_ari"] = float(adjusted_rand_score(g, a))
            out["cluster_rand"] = float(((a[:, None] == a[None, :]) == (g[:, None] == g[None, :]))[off].mean())
        return out

    # -- checks before training -------------------------------------------------------------------------
    @classmethod
    def check_config(cls, config, data) -> None:
        """``num_clusters <= K``; private IFCA composes in RDP, so the accountant must be ``rdp``."""
        if config.num_clusters > data.num_silos:
            raise ValueError(f"num_clusters must be <= the number of silos {data.num_silos} (got {config.num_clusters})")
        last = schedule(config.select_frac, config.rounds, config.select_every)[-1]
        if last >= config.rounds:
            raise ValueError(f"select_every={config.select_every} puts IFCA's last private selection (of "
                             f"{len(schedule(config.select_frac, config.rounds, 1))}) at round {last + 1}, past the last "
                             f"round {config.rounds}: select_every must be <= {max_select_every(config)}")
        if config.private and config.accountant != "rdp":
            raise ValueError("IFCA composes DP-SGD with exponential-mechanism selections in RDP: "
                             f"accountant must be 'rdp' for private IFCA (got {config.accountant!r})")

    # -- training -----------------------------------------------------------------------------------------
    def setup(self):
        tr = self.tr
        G = self.cfg.num_clusters
        # Random centres, one draw per configuration from its own stream.
        self.centers = tr.expand(torch.stack([tr.model.init((G,), g, random=True) for g in tr.gens]))
        self.assign = torch.zeros((tr.S, tr.K), dtype=torch.long, device=tr.device)
        bound = tr.loss.score_bound(self.cfg.ifca_loss_clip)
        sens = bound / np.maximum(tr.n - 1, 1)
        eps_sel = np.stack([self.selection_eps(i) for i in range(tr.S)])
        with np.errstate(divide="ignore"):
            scale = np.where(np.isfinite(eps_sel), 2.0 * sens[None, :] / eps_sel, 0.0)
        self.scale = torch.as_tensor(scale, device=tr.device, dtype=torch.float64)
        self.w = None
        self._sel = set(self.selection_rounds)
        self.t = 0  # the round being trained (set by round)
        self.frozen = np.zeros(tr.S, dtype=int)  # per configuration: the last round whose selection changed an assignment

    def gather(self) -> torch.Tensor:
        s_idx = torch.arange(self.tr.S, device=self.tr.device)[:, None]
        return self.centers[s_idx, self.assign]

    def update_centers(self, delta: torch.Tensor) -> None:
        one_hot = torch.nn.functional.one_hot(self.assign, self.cfg.num_clusters).to(delta.dtype)  # (S,K,G)
        num = torch.einsum("skg,k,skd->sgd", one_hot, self.tr.agg, delta)
        den = torch.einsum("skg,k->sg", one_hot, self.tr.agg)
        self.centers = self.centers + num / den.clamp(min=1e-30)[..., None]

    def select(self) -> None:
        """Every silo privately picks a centre (exponential mechanism at ε_sel,k); recorded in the ledger, and the
        round (``self.t``) recorded where an assignment changed."""
        t = self.t
        new = private_argmin(self.tr.train_scores(self.centers), self.scale, self.tr.gens)
        changed = (new != self.assign).any(dim=1).cpu().numpy()
        if t == self.selection_rounds[0]:
            changed[:] = True  # the first selection sets the assignments
        self.frozen[changed] = t
        self.assign = new
        self.tr.ledger.record_selections(1)

    def round(self, t):
        self.t = t
        if t in self._sel:
            self.select()
        start = self.gather()
        new = self.tr.local_train(start, self.cfg.local_epochs)
        self.update_centers(new - start)
        self.w = new

    def eval_weights(self):
        return self.gather()


class IFCAMRMTL(IFCA):
    """Algorithm A2: IFCA for the selection rounds, then MR-MTL toward each silo's cluster model."""

    def round(self, t):
        if t <= self.selection_rounds[-1]:  # stage 1: IFCA up to the last selection
            super().round(t)
            return
        lam = self.tr.lam[:, None, None]
        center = self.gather()
        start = self.w
        self.w = self.tr.local_train(start, self.cfg.local_epochs, prox_fn=lambda w: lam * (w - center))
        self.update_centers(self.w - start)

    def eval_weights(self):
        return self.w if self.w is not None else self.gather()
