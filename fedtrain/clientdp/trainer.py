"""FedHDP training (Aldaghri et al., Algorithm 2): client-level DP per privacy group, ratio r, Ditto.

One round ``t`` (vectorized over the round's clients with ``torch.func.vmap``):

1. every client is sampled independently with probability ``q`` (Poisson; clients of a group with
   ratio 0 are not contacted — FedHDP with r = 0 ignores the private clients);
2. each sampled client ``j`` runs ``E`` local epochs of minibatch SGD from the received model θ^t and,
   alongside, its persistent personal model ``v_j`` (set to θ^t at its first participation) takes the
   Ditto step ``v_j ← v_j − η_p(∇f_j(v_j, B) + λ_j(v_j − θ^t))`` toward the **received** global model;
3. it sends ``Clip(Δθ_j, S^t)`` with ``Clip(x, S) = x·S/max(‖x‖, S)`` and the bit ``b_j = 1{‖Δθ_j‖ ≤ S^t}``;
4. the server averages each group ``g``: ``Δ̃_g = (Σ_{j∈C_g^t} Clip(Δθ_j) + N(0, (z_Δ S^t)² I)) / n_g``,
   with noise on the private groups only and ``n_g = N_g^t`` (realized count, Algorithm 2) or ``q N_g``;
5. combines the groups with weights ``w_g ∝ r_g n_g`` (non-private ``r = 1``, private ``r``), so
   ``w_np = N_np^t/(N_np^t + r N_p^t)``, and sets ``θ^{t+1} = θ^t + Σ_g w_g Δ̃_g``;
6. adaptive clipping (Andrew et al. 2021): ``S^{t+1} = S^t exp(−η_b(b̄ − κ))`` with
   ``b̄ = (Σ_j (b_j − ½) + N(0, z_b²))/n + ½`` over all contacted clients (``z_b`` only when a private
   group takes part; ``z_b = count_noise_per_client · q · N_contacted``).

Privacy: :mod:`fedtrain.clientdp.accounting` (client-level adjacency, effective multiplier, per-group
ledger).  Evaluation (Sec. 5.1): ``acc_g`` is the global model on the server test set; per client, the
global model and the personal model on the client's local test data, averaged over the private and the
non-private clients; a client never sampled is evaluated with the model it would start from (θ^T).

The privacy groups a method forms come from its registry entry (:mod:`fedtrain.methods.registry`), the models from
:mod:`fedtrain.models.client`.  :func:`train` runs the steps in order: checks against the data
(:func:`_check_data`), the noise settings and the planned ε (:func:`_noise_settings`), the padded tensors, then
:func:`_round` T times on the run's state and :func:`_metrics` / :func:`_privacy` at the end.  Every random draw
comes from one ``torch.Generator`` seeded with the config's seed; the global random state is never touched.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from torch.func import grad, vmap

from fedtrain import ledger as silo_ledger
from fedtrain.data.base import FederatedData
from fedtrain.data.registry import load_dataset
from fedtrain.encoding import decode_floats, encode
from fedtrain.clientdp.accounting import (CLIENT_ADJACENCY, UNACCOUNTED, check_group_delta,
                                          effective_noise_multiplier, group_epsilon, update_noise_multiplier)
from fedtrain.clientdp.config import FedHDPConfig
from fedtrain.methods.registry import METHOD_REGISTRY
from fedtrain.models.client import FCNet, LinearNet, client_loss, client_model, pad_clients  # noqa: F401 (re-exported)

#: Default bound on clients × parameters per vectorized local-training call (see :func:`train`'s ``client_chunk``;
#: measured in ``benchmarks/bench_fedhdp_clients.py``).
CLIENT_CHUNK_ENTRIES = 1 << 20

__all__ = ["CLIENT_CHUNK_ENTRIES", "PrivacyGroup", "FedHDPResult", "privacy_groups", "server_aggregate", "clip_updates",
           "train", "run_many", "validate", "FCNet", "LinearNet", "local_update"]


# --------------------------------------------------------------------------------------------------
# privacy groups
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PrivacyGroup:
    """One privacy group: its clients, whether it is private (noise ``z``), its weight ratio and Ditto λ."""

    name: str
    clients: np.ndarray
    private: bool
    ratio: float
    lam: float

    @property
    def contacted(self) -> bool:
        return self.ratio > 0


def privacy_groups(config: FedHDPConfig, data: FederatedData) -> list[PrivacyGroup]:
    """The groups of ``config.method`` on ``data``: those its registry entry names
    (:attr:`~fedtrain.methods.registry.MethodSpec.groups`; ``info["nonprivate_clients"]`` is the opt-out set).

    Raises ``ValueError`` naming the group when a group has no clients, or when a two-group method
    runs on data without an opt-out set.
    """
    n = data.num_silos
    everyone = np.arange(n)
    spec = config.spec
    lam = {"nonprivate": config.lam_nonprivate, "private": config.lam_private}
    if len(spec.groups) == 1:  # one group holding every client
        g = spec.groups[0]
        return [PrivacyGroup(g, everyone, g == "private", 1.0, lam[g])]
    if "nonprivate_clients" not in data.info:
        raise ValueError(f"method {config.method!r} needs the dataset's opt-out set info['nonprivate_clients'] "
                         f"({data.name!r} has none); use a client-level dataset (fedtrain datasets)")
    np_idx = np.unique(np.asarray(data.info["nonprivate_clients"], dtype=np.int64))
    if np_idx.size and (np_idx.min() < 0 or np_idx.max() >= n):
        raise ValueError(f"info['nonprivate_clients'] must index the {n} clients (got {np_idx.min()}..{np_idx.max()})")
    p_idx = np.setdiff1d(everyone, np_idx)
    groups = [PrivacyGroup("nonprivate", np_idx, False, 1.0, config.lam_nonprivate),
              PrivacyGroup("private", p_idx, True, config.effective_ratio, config.lam_private)]
    for g in groups:
        if g.clients.size == 0:
            raise ValueError(f"privacy group {g.name!r} has no clients (dataset {data.name!r}: "
                             f"{np_idx.size} of {n} clients opted out); both groups need at least one client")
    return groups


# --------------------------------------------------------------------------------------------------
# the round's pieces (public: the tests check them one by one)
# --------------------------------------------------------------------------------------------------
def clip_updates(delta: torch.Tensor, clip: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``Clip(Δ, S) = Δ·S/max(‖Δ‖, S)`` row-wise, and the bits ``b = 1{‖Δ‖ ≤ S}`` (on the unclipped norm)."""
    norms = torch.linalg.vector_norm(delta, dim=-1)
    factor = (clip / norms.clamp(min=clip)).clamp(max=1.0)
    return delta * factor[:, None], (norms <= clip).to(delta.dtype)


def server_aggregate(clipped: torch.Tensor, member: torch.Tensor, ratios, noise_std, expected_counts=None,
                     gen: torch.Generator | None = None) -> tuple[torch.Tensor, dict]:
    """Steps 4-5 of the round: per-group noisy averages combined with weights ``∝ r_g n_g``.

    ``clipped (K, D)``: the round's clipped updates; ``member (G, K)`` bool: client k in group g;
    ``ratios (G,)``; ``noise_std (G,)``: std of the noise on group g's *sum* (``z_Δ S``; 0 = non-private);
    ``expected_counts (G,)`` or ``None``: divide by ``q N_g`` instead of the realized count.  A group is
    released (its noise drawn) when its ratio is > 0; one with no sampled client and the realized
    denominator is left out of the weights.  Returns ``(Δ (D,), details)`` with the counts, weights,
    the noise drawn ``(G, D)`` and the group averages.
    """
    G, D = member.shape[0], clipped.shape[1]
    counts = member.to(clipped.dtype).sum(1)
    sums = member.to(clipped.dtype) @ clipped
    noise = torch.zeros(G, D, dtype=clipped.dtype)
    avgs = torch.zeros(G, D, dtype=clipped.dtype)
    denom = torch.zeros(G, dtype=clipped.dtype)
    for g in range(G):
        if float(ratios[g]) <= 0:
            continue
        if float(noise_std[g]) > 0:
            noise[g] = torch.randn(D, generator=gen, dtype=clipped.dtype) * float(noise_std[g])
        denom[g] = counts[g] if expected_counts is None else float(expected_counts[g])
        if denom[g] > 0:
            avgs[g] = (sums[g] + noise[g]) / denom[g]
    w = torch.as_tensor(np.asarray(ratios, dtype=float), dtype=clipped.dtype) * denom
    total = w.sum()
    weights = w / total if total > 0 else w
    return weights @ avgs, {"counts": counts, "weights": weights, "noise": noise, "averages": avgs}


def local_update(model, loss, theta: torch.Tensor, personal: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                 mask: torch.Tensor, lam: torch.Tensor, lr: float, lr_personal: torch.Tensor, epochs: int,
                 batch_size: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """ClientUpdate of Algorithm 2 for K clients at once: ``(θ_E − θ^t (K, D), personal models (K, D))``.

    ``theta (D,)`` received model; ``personal (K, D)``; ``x (K, n, d)``, ``y (K, n)``, ``mask (K, n)``
    (padding 0); ``lam (K,)``; ``lr_personal (K,)``.  Each epoch visits every client's examples once in
    a random order in batches of ``batch_size``; the global copy and the personal model see the same
    batches (one ``vmap(grad)`` over both).
    """
    K, n = mask.shape
    w = theta.expand(K, -1).clone()
    v = personal.clone()
    vg = vmap(grad(loss))
    nb = math.ceil(n / batch_size)
    for _ in range(epochs):
        keys = torch.rand(K, n, generator=gen) + (1 - mask) * 2.0  # padding sorts last
        order = torch.argsort(keys, dim=1)
        for j in range(nb):
            idx = order[:, j * batch_size:(j + 1) * batch_size]
            xb = torch.gather(x, 1, idx[..., None].expand(-1, -1, x.shape[-1]))
            yb = torch.gather(y, 1, idx)
            mb = torch.gather(mask, 1, idx)
            has = (mb.sum(1) > 0).to(w.dtype)[:, None]
            g = vg(torch.cat([w, v]), torch.cat([xb, xb]), torch.cat([yb, yb]), torch.cat([mb, mb]))
            w = w - lr * g[:K]
            v = v - lr_personal[:, None] * has * (g[K:] + lam[:, None] * (v - theta[None]))
    return w - theta[None], v


# --------------------------------------------------------------------------------------------------
# result
# --------------------------------------------------------------------------------------------------
@dataclass
class FedHDPResult:
    """One client-level run: config, the paper's metrics, per-client accuracies, privacy per group.

    ``metrics``: ``acc_g`` (global model, server test set), ``acc_g_p``/``acc_g_np`` (global model on the
    private / non-private clients' local test data, mean over clients), ``acc_l_p``/``acc_l_np``
    (personal models), ``var_*`` the variance across clients of those per-client accuracies (in the
    paper's units: accuracy as a fraction, variance × 100, see :mod:`fedtrain.fedhdp.tables`),
    ``delta_g = acc_g_np − acc_g_p`` and ``delta_l`` (NaN where a group is absent).  Accuracies in %.
    """

    config: FedHDPConfig
    metrics: dict
    per_client_global: np.ndarray | None
    per_client_local: np.ndarray | None
    nonprivate: np.ndarray | None
    privacy: dict
    wall_time: float
    curve_rounds: np.ndarray | None = None
    curve: np.ndarray | None = None
    clip_history: np.ndarray | None = None
    never_sampled: int = 0
    data: dict = field(default_factory=dict)
    global_model: np.ndarray | None = None
    personal_models: np.ndarray | None = None
    #: The last round's clipping norm where :attr:`clip_history` is not kept (a result read back by
    #: :meth:`from_dict`); ``None`` otherwise.
    stored_clip_final: float | None = None
    #: Where the row came from (:func:`fedtrain.store.provenance.provenance`: engine version, commit, command,
    #: seconds), recorded by the results store that filed it; ``None`` for a run not read back from a store.
    provenance: dict | None = None

    @property
    def label(self) -> str:
        return self.config.spec.label

    @property
    def clip_final(self) -> float | None:
        """The clipping norm after the last round (``None`` if the run kept no clipping history)."""
        return float(self.clip_history[-1]) if self.clip_history is not None else self.stored_clip_final

    def to_dict(self) -> dict:
        """The JSON-safe row: config, label, metrics, privacy, time, curve, data summary and final clipping norm
        (no per-client arrays, no models)."""
        row = {"config": self.config.to_dict(), "label": self.label, "metrics": self.metrics,
               "privacy": self.privacy, "wall_time": self.wall_time, "never_sampled": self.never_sampled,
               "curve_rounds": self.curve_rounds, "curve": self.curve, "data": self.data,
               "clip_final": self.clip_final}
        if self.provenance is not None:
            row["provenance"] = self.provenance
        return encode(row)

    @classmethod
    def from_dict(cls, d: dict) -> "FedHDPResult":
        """Inverse of :meth:`to_dict` for what it keeps: the per-client accuracies, the opt-out set, the clipping
        history and the models are not in a row and come back as ``None`` (``to_dict`` of the result is ``d``
        without the fields it does not write, such as the results store's ``key``)."""
        curve_rounds, curve = d.get("curve_rounds"), d.get("curve")
        return cls(config=FedHDPConfig.from_dict(d["config"]),
                   metrics=_decode_nonfinite(d["metrics"]), per_client_global=None, per_client_local=None,
                   nonprivate=None, privacy=_decode_nonfinite(d["privacy"]), wall_time=d["wall_time"],
                   curve_rounds=None if curve_rounds is None else np.asarray(curve_rounds),
                   curve=None if curve is None else np.asarray(decode_floats(curve)),
                   never_sampled=d.get("never_sampled", 0), data=d.get("data") or {},
                   stored_clip_final=d.get("clip_final"), provenance=d.get("provenance"))


def _decode_nonfinite(value):
    """``value`` (nested mappings and lists) with the non-finite strings of :func:`~fedtrain.encoding.encode` turned
    back into floats, so that ε = ∞ of the non-private group and an absent group's NaN read back as numbers."""
    if isinstance(value, dict):
        return {k: _decode_nonfinite(v) for k, v in value.items()}
    return decode_floats(value) if isinstance(value, (list, str)) else value


# --------------------------------------------------------------------------------------------------
# the trainer
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Noise:
    """The run's noise settings (:mod:`fedtrain.clientdp.accounting`): effective ``z``, update noise ``z_Δ``, count
    noise ``z_b`` (``None``: no count released) and the clients a round may contact."""

    z_eff: float
    z_update: float
    z_b: float | None
    contacted: np.ndarray
    any_private: bool


@dataclass
class _ClientData:
    """The data as padded tensors: train and local test per client, and the server's test set."""

    x: torch.Tensor
    y: torch.Tensor
    m: torch.Tensor
    xt: torch.Tensor
    yt: torch.Tensor
    mt: torch.Tensor
    sx: torch.Tensor
    sy: torch.Tensor


@dataclass(frozen=True)
class _Run:
    """What stays fixed during a run: the config, model and loss, the data's tensors, the groups (and each client's
    group), the noise settings, the generator and the clients per vectorized call."""

    config: FedHDPConfig
    model: object
    loss: object
    task: str
    cd: _ClientData
    groups: list
    group_of: np.ndarray
    noise: _Noise
    gen: torch.Generator
    client_chunk: int | None


@dataclass
class _State:
    """What changes from round to round: the global model θ, the personal models, who has started, the clipping
    norm S, the privacy ledger and the recorded curves."""

    theta: torch.Tensor
    personal: torch.Tensor
    started: np.ndarray
    clip: float
    book: silo_ledger.SiloLedger
    clip_hist: list = field(default_factory=list)
    curve_rounds: list = field(default_factory=list)
    curve: list = field(default_factory=list)


def _accuracy(model, task, params, x, y, m):
    """Per-client metric of models ``params (K, D)`` (or one ``(D,)``) on ``x (K, n, d)``: accuracy or MSE."""
    if params.dim() == 1:
        f = model.apply(params, x)
    else:
        f = vmap(model.apply)(params, x)
    if task == "regression":
        per = (f[..., 0] - y) ** 2
    else:
        per = (f.argmax(-1) == y.long()).to(torch.float32)
    return (per * m).sum(-1) / m.sum(-1).clamp(min=1.0)


def _stats(values: np.ndarray) -> tuple[float, float]:
    if values.size == 0:
        return math.nan, math.nan
    return 100.0 * float(values.mean()), 100.0 * float(values.var())


def _check_data(config: FedHDPConfig, data: FederatedData) -> list[PrivacyGroup]:
    """The checks that need the data (task, model, δ < N_g^{-1.1} per private group); the privacy groups."""
    if data.task == "binary":
        raise ValueError("client-level training supports multiclass and regression data (got a binary task)")
    if config.model == "linear" and data.task != "regression":
        raise ValueError("model='linear' is the theory's linear regression: it needs a regression dataset")
    groups = privacy_groups(config, data)
    for g in groups:  # ValueError naming delta and the bound
        if g.private:
            check_group_delta(config.delta, g.clients.size, g.name)
    return groups


def _noise_settings(config: FedHDPConfig, groups: list[PrivacyGroup], n_clients: int) -> _Noise:
    """Effective, update and count noise (:mod:`fedtrain.clientdp.accounting`); the planned ε is computed here, so
    that an accountant's range error (``ValueError``) costs no rounds."""
    q = float(config.sample_rate)
    any_private = any(g.private and g.contacted for g in groups)
    contacted = np.zeros(n_clients, dtype=bool)
    for g in groups:
        if g.contacted:
            contacted[g.clients] = True
    z_b = config.count_noise_per_client * q * int(contacted.sum()) if (config.clip_lr > 0 and any_private) else None
    z_eff = float(config.noise_multiplier) if config.spec.private else 0.0
    if any_private and z_eff == 0:
        baseline = ", ".join(m for m, s in METHOD_REGISTRY.items() if s.private is False)
        raise ValueError(f"noise_multiplier must be > 0 for a method with a private group (got 0); use method "
                         f"{baseline} for the non-private baseline")
    z_update = update_noise_multiplier(z_eff, z_b) if (z_b is not None and z_eff > 0) else z_eff
    if any_private:
        group_epsilon(z_eff, q, config.rounds, config.delta, config.accountant)
    return _Noise(z_eff, z_update, z_b, contacted, any_private)


def _client_data(data: FederatedData) -> _ClientData:
    x, y, m = pad_clients(data.train_x, data.train_y)
    xt, yt, mt = pad_clients(data.test_x, data.test_y)
    if "server_test_x" in data.info:
        sx = torch.as_tensor(np.asarray(data.info["server_test_x"], dtype=np.float32))
        sy = torch.as_tensor(np.asarray(data.info["server_test_y"], dtype=np.float32))
    else:  # the union of the clients' local test sets
        sx = torch.cat([xt[i][mt[i] > 0] for i in range(data.num_silos)])
        sy = torch.cat([yt[i][mt[i] > 0] for i in range(data.num_silos)])
    return _ClientData(x, y, m, xt, yt, mt, sx, sy)


def _server_accuracy(model, task: str, theta: torch.Tensor, cd: _ClientData) -> float:
    return 100.0 * float(_accuracy(model, task, theta, cd.sx[None], cd.sy[None], torch.ones(1, len(cd.sy)))[0])


def _round(t: int, st: _State, run: _Run) -> None:
    """One round of Algorithm 2 (module docstring, steps 1-6) on ``st``; the random draws in a fixed order:
    sampling, local updates, the groups' noise, the count noise."""
    config, model, loss, cd, groups, group_of, noise, gen = (run.config, run.model, run.loss, run.cd, run.groups,
                                                             run.group_of, run.noise, run.gen)
    n_clients, D = st.personal.shape
    q = float(config.sample_rate)
    decay = config.lr_decay ** (t // config.decay_every)
    lr = config.lr * decay
    sampled = (torch.rand(n_clients, generator=gen) < q).numpy() & noise.contacted
    idx = np.flatnonzero(sampled)
    new = idx[~st.started[idx]]
    st.personal[new] = st.theta
    st.started[new] = True
    noise_std = np.array([noise.z_update * st.clip if g.private else 0.0 for g in groups])
    if idx.size:
        lam_k = torch.as_tensor(np.array([groups[gi].lam for gi in group_of[idx]]), dtype=torch.float32)
        lr_p = (1.0 / (1.0 + lam_k)) if config.personal_step == "lemma4" else torch.full(
            (idx.size,), config.lr_personal * decay)
        step_k = max(1, CLIENT_CHUNK_ENTRIES // D) if run.client_chunk is None else int(run.client_chunk)
        parts = []
        for a in range(0, idx.size, step_k):
            sl, ii = slice(a, a + step_k), idx[a:a + step_k]
            d_k, st.personal[ii] = local_update(model, loss, st.theta, st.personal[ii], cd.x[ii], cd.y[ii], cd.m[ii],
                                                lam_k[sl], lr, lr_p[sl], config.local_epochs, config.batch_size, gen)
            parts.append(d_k)
        clipped, bits = clip_updates(torch.cat(parts), st.clip)
    else:
        clipped, bits = torch.zeros(0, D), torch.zeros(0)
    member = torch.as_tensor(group_of[idx][None, :] == np.arange(len(groups))[:, None])
    ratios = np.array([g.ratio for g in groups])
    expected = np.array([q * g.clients.size for g in groups]) if config.denominator == "expected" else None
    step, _ = server_aggregate(clipped, member, ratios, noise_std, expected, gen)
    st.theta = st.theta + step
    st.book.record_gaussian_releases([1 if (g.private and g.contacted) else 0 for g in groups])
    if config.clip_lr > 0:  # adaptive clipping (Andrew et al. 2021)
        n_here = float(idx.size) if config.denominator == "realized" else q * int(noise.contacted.sum())
        if n_here > 0:
            z_b = noise.z_b
            noisy = float((bits - 0.5).sum()) + (float(torch.randn((), generator=gen)) * z_b if z_b else 0.0)
            st.clip = st.clip * math.exp(-config.clip_lr * (noisy / n_here + 0.5 - config.clip_quantile))
    st.clip_hist.append(st.clip)
    if config.eval_every and ((t + 1) % config.eval_every == 0 or t + 1 == config.rounds):
        st.curve_rounds.append(t + 1)
        st.curve.append(_server_accuracy(model, run.task, st.theta, cd))


def _metrics(model, task: str, st: _State, cd: _ClientData, groups: list[PrivacyGroup]) -> tuple[dict, np.ndarray,
                                                                                                 np.ndarray, np.ndarray]:
    """The paper's metrics (:class:`FedHDPResult`); a client never sampled starts from, and is evaluated with, the
    final global model.  Returns ``(metrics, per-client global, per-client local, private mask)``."""
    st.personal[~st.started] = st.theta
    glob = _accuracy(model, task, st.theta, cd.xt, cd.yt, cd.mt).numpy()
    loc = _accuracy(model, task, st.personal, cd.xt, cd.yt, cd.mt).numpy()
    private_client = np.zeros(len(st.started), dtype=bool)
    for g in groups:
        private_client[g.clients] = g.private
    metrics = {"acc_g": _server_accuracy(model, task, st.theta, cd)}
    for tag, sel in (("p", private_client), ("np", ~private_client)):
        metrics[f"acc_g_{tag}"], metrics[f"var_g_{tag}"] = _stats(glob[sel])
        metrics[f"acc_l_{tag}"], metrics[f"var_l_{tag}"] = _stats(loc[sel])
    metrics["delta_g"] = metrics["acc_g_np"] - metrics["acc_g_p"]
    metrics["delta_l"] = metrics["acc_l_np"] - metrics["acc_l_p"]
    if task == "regression":
        metrics["metric"] = "mse (x100 in acc_* fields)"
    return metrics, glob, loc, private_client


def _privacy(config: FedHDPConfig, groups: list[PrivacyGroup], noise: _Noise, book: silo_ledger.SiloLedger) -> dict:
    """ε per group from the ledger (what ran, never the plan), with the adjacency and what is left unaccounted."""
    q = float(config.sample_rate)
    eps = {}
    for gi, g in enumerate(groups):
        if not g.private:
            eps[g.name] = math.inf
        elif int(book.dpsgd_steps[gi]):
            eps[g.name] = float(silo_ledger.spent_epsilons(
                _one_row(book, gi), np.array([noise.z_eff]), np.array([config.delta]), np.array([q]),
                config.accountant)[0])
        else:
            eps[g.name] = 0.0
    return {
        "adjacency": CLIENT_ADJACENCY, "unaccounted": UNACCOUNTED, "accountant": config.accountant,
        "delta": config.delta, "sample_rate": q,
        "effective_noise_multiplier": noise.z_eff, "update_noise_multiplier": noise.z_update, "count_noise": noise.z_b,
        "check_effective": effective_noise_multiplier(noise.z_update, noise.z_b) if noise.z_eff > 0 else 0.0,
        "groups": {g.name: {"clients": int(g.clients.size), "private": g.private, "ratio": g.ratio, "lambda": g.lam,
                            "rounds_released": int(book.dpsgd_steps[gi]), "epsilon": eps[g.name]}
                   for gi, g in enumerate(groups)},
        "epsilon": max((e for g, e in zip(groups, eps.values()) if g.private), default=math.inf),
    }


def train(config: FedHDPConfig, data: FederatedData | None = None, *, keep_models: bool = False,
          progress: bool = False, client_chunk: int | None = None) -> FedHDPResult:
    """Run ``config`` (module docstring) on ``data`` (default: ``load_dataset(config.dataset, **options)``).

    ``client_chunk``: clients trained per vectorized call (``None``: as many as keep
    :data:`CLIENT_CHUNK_ENTRIES` parameters per call — every client of a round for the 8×8 digits' network,
    ~26 for MNIST's, where one call over all clients is memory-bound; ``1``: a per-client loop, the
    benchmark's reference).  The random draws come in the same order either way, so the numbers do not
    change.

    Every check (groups, δ < N_g^{-1.1} per private group, noise settings, the planned ε within the
    accountant's range, dataset fit) happens before the first round; ValueErrors name the argument.
    Seeded: every random draw comes from one generator seeded with ``config.seed`` (the global random state of
    torch and numpy is neither read nor changed), so the same config and data give the same numbers on the same
    machine.
    """
    if not isinstance(config, FedHDPConfig):
        raise ValueError(f"config must be a FedHDPConfig (got {type(config).__name__})")
    if data is None:
        data = load_dataset(config.dataset, **config.dataset_options)
    groups = _check_data(config, data)
    noise = _noise_settings(config, groups, data.num_silos)
    gen = torch.Generator().manual_seed(int(config.seed))
    t0 = time.perf_counter()
    out_dim = 1 if data.task == "regression" else int(data.num_classes)
    model = client_model(config.model, data.dim, out_dim, hidden=config.hidden)
    loss = client_loss(model, data.task)
    cd = _client_data(data)
    theta = model.init(gen)
    plan = silo_ledger.PrivacyPlan(np.array([config.rounds if (g.private and g.contacted) else 0 for g in groups]))
    st = _State(theta=theta, personal=torch.zeros(data.num_silos, theta.numel()),
                started=np.zeros(data.num_silos, dtype=bool), clip=float(config.clip),
                book=silo_ledger.SiloLedger(len(groups), plan))
    group_of = np.full(data.num_silos, -1)
    for gi, g in enumerate(groups):
        group_of[g.clients] = gi
    run = _Run(config, model, loss, data.task, cd, groups, group_of, noise, gen, client_chunk)
    rounds = range(config.rounds)
    if progress:
        from tqdm.auto import tqdm

        rounds = tqdm(rounds, desc=f"{config.method}", leave=False)
    for t in rounds:
        _round(t, st, run)
    st.book.check_complete()
    metrics, glob, loc, private_client = _metrics(model, data.task, st, cd, groups)
    return FedHDPResult(
        config=config, metrics=metrics, per_client_global=glob, per_client_local=loc, nonprivate=~private_client,
        privacy=_privacy(config, groups, noise, st.book), wall_time=time.perf_counter() - t0,
        curve_rounds=np.array(st.curve_rounds) if st.curve_rounds else None,
        curve=np.array(st.curve) if st.curve_rounds else None, clip_history=np.array(st.clip_hist),
        never_sampled=int((~st.started & noise.contacted).sum()), data=data.summary(),
        global_model=st.theta.numpy().copy() if keep_models else None,
        personal_models=st.personal.numpy().copy() if keep_models else None)


def validate(config: FedHDPConfig, data: FederatedData) -> None:
    """Every check :func:`train` makes before its first round, without training: the privacy groups on ``data``,
    δ < N_g^{-1.1} per private group, the noise settings and the planned ε within the accountant's range.  Raises the
    ``ValueError`` :func:`train` would; the validator of the client-level methods' registry entries."""
    if not isinstance(config, FedHDPConfig):
        raise ValueError(f"config must be a FedHDPConfig (got {type(config).__name__})")
    _noise_settings(config, _check_data(config, data), data.num_silos)


def run_many(configs: Sequence[FedHDPConfig], data: FederatedData) -> list[FedHDPResult]:
    """:func:`train` every configuration on ``data``, one after another (the client-level methods' runner in the
    registry, called by :func:`fedtrain.sweep.run_sweep` on a batch); each result is what ``train(config, data)``
    gives alone (every run draws from its own generator seeded with its config's seed)."""
    return [train(c, data) for c in configs]


def _one_row(book: silo_ledger.SiloLedger, gi: int) -> silo_ledger.SiloLedger:
    row = silo_ledger.SiloLedger(1)
    row.dpsgd_steps = book.dpsgd_steps[gi:gi + 1].copy()
    return row
