"""Client-level privacy accounting of FedHDP's privacy groups (Algorithm 2; Andrew et al. 2021).

**What a private group releases per round.**  Clients are Poisson-sampled at rate ``q``.  The group's
clipped updates (norm ≤ S) are summed and ``N(0, (z_Δ S)² I)`` is added; with adaptive clipping the
centred "unclipped" bits ``b_i − ½`` of the round's clients are summed and ``N(0, z_b²)`` is added.
The pair is one Gaussian mechanism of sensitivity ``(S, ½)``; rescaling the count so that both parts
carry noise ``z_Δ S`` gives one Gaussian with the **effective noise multiplier**

    z = (z_Δ⁻² + (2 z_b)⁻²)^(-1/2)          (Andrew et al., Thm. 1; the paper's Table 7 reports z)

so a run of R rounds is ``PoissonSampledDpEvent(q, GaussianDpEvent(z))`` self-composed R times, per
private group, accounted in the book's registry (:mod:`fedtheory.privacy.accountants`).  Given the
effective z (what the paper reports), the update noise is :func:`update_noise_multiplier`.  Without
adaptive clipping (``η_b = 0``) no count is released and ``z_Δ = z``.

**Adjacency:** :data:`CLIENT_ADJACENCY` — add/remove one client (all of its data) of the group.  The
server's weighting by ``r``, the other groups' releases and Ditto's personalization are
post-processing for a private client; the non-private group releases without noise and is charged
nothing (it has no guarantee: ε = ∞).  Two leaks the paper leaves unaccounted and this module does
too (named in every result): the realized group count ``N_g^t`` when the noisy sum is divided by it
(``denominator="realized"``, Algorithm 2; ``"expected"`` divides by ``q N_g`` instead), and the tuning of
``r`` and λ on the server's validation data.

The run's ledger is a :class:`fedtrain.ledger.SiloLedger` with one row per privacy group: the
rounds in which the group released a noisy sum (a group with ``r = 0`` is never contacted and runs
none).  ε is computed from that ledger, never from the plan.
"""
from __future__ import annotations

import math

from fedtheory.privacy.accountants import get_accountant
from fedtheory.privacy.events import DpEvent, dpsgd_event

__all__ = ["CLIENT_ADJACENCY", "UNACCOUNTED", "update_noise_multiplier", "effective_noise_multiplier",
           "group_event", "group_epsilon", "rounds_within", "PAPER_PRIVACY", "delta_bound", "check_group_delta"]

#: The adjacency notion of every ε of a client-level run.
CLIENT_ADJACENCY = ("client-level DP: add/remove one client (its whole dataset) of a private group; "
                    "the non-private group has no guarantee")
#: What the accounting leaves out (as the paper does), reported with every result.
UNACCOUNTED = ("hyperparameter tuning (r, lambda) on validation data; the realized group count N_g^t when "
               "denominator='realized'")

#: The paper's ε (Sec. 5.1, Tables 5 and 7): dataset → (q of Table 5, effective z, rounds, δ, printed ε).
#: With RDP these give 3.608, 0.576, 4.122, i.e. the printed 3.6, 0.6, 4.1.  Table 5's q is "3 %"; the
#: alternative reading q = 100/3400 (100 clients per round) gives 4.035 for FEMNIST, which prints as 4.0,
#: so the paper's ε used q = 0.03.  The tight accountants (PLD, PRV) give 3.24, 0.51, 3.56.
PAPER_PRIVACY = {
    "non-IID MNIST": (0.05, 1.5, 500, 1e-4, 3.6),
    "FMNIST": (0.03, 4.0, 500, 1e-4, 0.6),
    "FEMNIST": (0.03, 1.0, 500, 1e-4, 4.1),
}


def delta_bound(num_clients: int) -> float:
    """The largest δ a private group of ``num_clients`` clients may use, exclusive: ``N_g^{-1.1}``.

    The rule of the sample-level path (δ_k < n_k^{-1.1}, MR-MTL paper App. C.4,
    :func:`fedtrain.engine.resolve_budgets`) with the privacy unit's count: here the unit is a client,
    so ``N_g`` is the number of clients of the group.  δ is the probability that the guarantee fails
    outright; a δ of order 1/N_g allows a mechanism that publishes one client's data in full.
    """
    n = int(num_clients)
    if n < 1:
        raise ValueError(f"num_clients must be >= 1 (got {num_clients!r})")
    return float(n) ** -1.1


def check_group_delta(delta: float, num_clients: int, group: str = "private") -> None:
    """Raise ``ValueError`` naming ``delta`` and the bound unless ``delta < N_g^{-1.1}`` (:func:`delta_bound`)."""
    bound = delta_bound(num_clients)
    if not 0 < float(delta) < bound:
        raise ValueError(f"delta must be in (0, N_g^-1.1) for client-level DP (add/remove one client; the rule "
                         f"delta_k < n_k^-1.1 of the sample-level runs, counted in clients): privacy group {group!r} "
                         f"has N_g={int(num_clients)} clients, so delta must be < {bound:.3g} (got {float(delta):.3g})")


def update_noise_multiplier(effective: float, count_noise: float) -> float:
    """``z_Δ = (z⁻² − (2 z_b)⁻²)^(-1/2)``: the update noise that leaves effective multiplier ``z`` after the count.

    ``count_noise`` (``z_b``, the std of the noise on the sum of the bits) must exceed ``z/2``; ``z = 0``
    gives 0 (no privacy, no noise).
    """
    z, zb = float(effective), float(count_noise)
    if z < 0 or math.isnan(z):
        raise ValueError(f"noise_multiplier must be >= 0 (got {effective!r})")
    if z == 0:
        return 0.0
    if not zb > z / 2:
        raise ValueError(f"adaptive clipping needs count noise z_b > z/2 = {z / 2:.4g} (got z_b = {zb:.4g}); raise "
                         "count_noise_per_client or sample_rate, or fix the clipping norm with clip_lr=0")
    return (z ** -2 - (2 * zb) ** -2) ** -0.5


def effective_noise_multiplier(update_noise: float, count_noise: float | None) -> float:
    """``(z_Δ⁻² + (2 z_b)⁻²)^(-1/2)``; ``count_noise=None`` (no count released) gives ``z_Δ``."""
    zd = float(update_noise)
    if zd <= 0:
        return 0.0
    if count_noise is None:
        return zd
    return (zd ** -2 + (2 * float(count_noise)) ** -2) ** -0.5


def group_event(noise_multiplier: float, sample_rate: float, rounds: int) -> DpEvent:
    """The DpEvent of a private group's ``rounds`` releases at effective multiplier ``z`` (module docstring)."""
    return dpsgd_event(noise_multiplier, sample_rate, int(rounds))


def group_epsilon(noise_multiplier: float, sample_rate: float, rounds: int, delta: float,
                  accountant: str = "rdp") -> float:
    """ε of :func:`group_event` at ``delta`` (client-level add/remove); ∞ when ``z = 0`` and ``rounds > 0``."""
    if rounds == 0:
        return 0.0
    if noise_multiplier <= 0:
        return math.inf
    return float(get_accountant(accountant).epsilon(group_event(noise_multiplier, sample_rate, rounds), delta))


def rounds_within(epsilon: float, noise_multiplier: float, sample_rate: float, delta: float,
                  accountant: str = "rdp", *, max_rounds: int = 100_000) -> int:
    """The largest number of rounds R with :func:`group_epsilon` (R) ≤ ``epsilon`` (client-level add/remove, the
    named accountant): a bisection on R, since ε grows with the rounds.  0 if one round already costs more;
    ``ValueError`` for a non-positive ``epsilon`` or ``noise_multiplier``, or if ``max_rounds`` rounds still fit."""
    if not 0.0 < float(epsilon) < math.inf:
        raise ValueError(f"epsilon must be a positive finite number (got {epsilon!r})")
    if not float(noise_multiplier) > 0.0:
        raise ValueError(f"noise_multiplier must be > 0 (got {noise_multiplier!r}); without noise no round is private")
    fits = lambda t: group_epsilon(noise_multiplier, sample_rate, t, delta, accountant) <= epsilon  # noqa: E731
    if fits(max_rounds):
        raise ValueError(f"max_rounds={max_rounds} rounds still cost at most epsilon={epsilon}; raise max_rounds")
    lo, hi = 0, max_rounds  # fits(lo), not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo
