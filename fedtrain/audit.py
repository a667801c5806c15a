"""Empirical privacy auditing of the training engine: canaries, membership tests, and lower bounds on ε.

An accountant proves an UPPER bound on ε for the algorithm as written; an audit attacks the system as
built and proves a LOWER bound on the ε the trained models actually have: if the lower bound exceeds
the claimed ε, the implementation (or the accounting) is wrong.  Nothing here can prove that a
claim holds: a lower bound below the claim is only what this attack could show.

Two statistical methods, both valid at a stated confidence 1 − β:

* **One-run audit** (Steinke, Nasr and Jagielski 2023, "Privacy auditing with one (1) training run",
  Theorem 3): m canaries, each included independently with probability 1/2 (S_i = ±1); after ONE
  training run the auditor scores every canary, guesses "in" for the k₊ highest scores and "out" for
  the k₋ lowest (r = k₊ + k₋ guesses, abstaining on the rest) and counts the W correct guesses.  If
  the training is (ε, δ)-DP with respect to each canary, then for every v

      P[W ≥ v] ≤ f_ε(v) := P[W̃ ≥ v] + δ · max_{i=1..m} (2m/i) · P[v > W̃ ≥ v − i],
      W̃ ~ Binomial(r, e^ε / (1 + e^ε)).

  f_ε(v) grows with ε, so ``ε_lower = sup{ε : f_ε(W_observed) ≤ β}`` exceeds the true ε with
  probability at most β (:func:`one_run_epsilon_lower_bound`).  One run, but loose: with r guesses
  the bound can never exceed the ε at which even r correct guesses are unsurprising (≈ 3.5 for
  r = 100 at 95 %), and at large ε it is far below the truth.
* **Many-run audit** (Jagielski, Ullman and Oprea 2020; Nasr et al. 2021): independent trials, each
  with the canary in or out; a threshold on the score gives a false-positive rate FPR and a
  false-negative rate FNR, and (ε, δ)-DP implies FPR + e^ε FNR ≥ 1 − δ and FNR + e^ε FPR ≥ 1 − δ.
  With Clopper–Pearson upper confidence limits on both rates (β/2 each),
  ``ε_lower = max(log((1 − δ − FPR⁺)/FNR⁺), log((1 − δ − FNR⁺)/FPR⁺))``
  (:func:`many_run_epsilon_lower_bound`).  The threshold is chosen on one half of the trials and the
  bound computed on the other half, so no multiple-testing correction is needed
  (:func:`held_out_threshold_bound`).  Its power grows with the trials: a noise halving (true ε ≈ 2× the
  claim) is proven only through error rates near 10⁻³, which 1,600 held-out trials cannot bound and
  160,000 can (:mod:`fedtrain.audit_power` measures each audit's power).

Canaries (:func:`with_isolated_canaries`): records whose single non-zero feature lives in a
dimension no other record uses, with a target far from any prediction, so that every time a canary
is sampled its gradient is clipped to norm c and points the same way; the model's weight on that
dimension is then the attacker's score (the canary's own clipped contributions plus the DP noise).
This is the classic "crafted-gradient" canary reached through the data (the final model only is
observed, as the public API returns it).  The one-run audit puts many of them in one silo; the
many-run audit gives every silo of a ``local`` run one canary, so the K silos of S seeds are K·S
independent trials of one vectorized run (silo-specific sample-level DP: silo k's DP-SGD protects
its own records with (ε_k, δ_k)).

Caveats made explicit: add/remove adjacency changes n_k, and the engine's sampling rate
q_k = min(B, n_k)/n_k and divisor min(B, n_k) depend on n_k (Opacus' convention); the attacks here do
not use that channel.  Audits use the final model only: a white-box attacker who sees every
intermediate update (or inserts gradients directly) can prove larger lower bounds.

Test-only seam: :func:`broken_engine` deliberately breaks the engine (noise scaled down, or
clipping switched off) while it keeps reporting the original noise multiplier and ε, so that tests
can check that the audit CATCHES a broken implementation.  It patches
``fedtrain.engine.Trainer.set_noise`` (the one place the engine installs the per-silo clip norms and
noise scales); never use it outside tests and demonstrations.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np
from scipy import stats

from fedtrain.config import RunConfig
from fedtrain.data.base import FederatedData
from fedtheory.privacy.gaussian import gaussian_epsilon

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "one_run_epsilon_lower_bound",
    "one_run_guesses",
    "many_run_epsilon_lower_bound",
    "held_out_threshold_bound",
    "with_isolated_canaries",
    "audit_one_run",
    "audit_many_runs",
    "broken_engine",
    "near_cancelling_contributions",
    "audit_near_cancelling",
    "full_batch_exact_epsilon",
]

_EPS_MAX = 30.0  # the largest ε the searches consider (a lower bound above this is reported as 30)


def _check_confidence(confidence: float) -> float:
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1) (got {confidence})")
    return confidence


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1) (got {delta})")
    return delta


# --------------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------------
def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided exact (Clopper–Pearson) confidence interval for a binomial proportion.

    Each one-sided limit holds with probability ≥ 1 − (1 − confidence)/2.
    """
    confidence = _check_confidence(confidence)
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1 (got {successes}, {trials})")
    a = (1.0 - confidence) / 2.0
    lo = 0.0 if successes == 0 else float(stats.beta.ppf(a, successes, trials - successes + 1))
    hi = 1.0 if successes == trials else float(stats.beta.ppf(1.0 - a, successes + 1, trials - successes))
    return lo, hi


def _one_run_tail(eps: float, correct: int, guesses: int, num_canaries: int, delta: float) -> float:
    """f_ε(v) of Steinke–Nasr–Jagielski (2023), Theorem 3 (see the module docstring)."""
    p = 1.0 / (1.0 + math.exp(-eps))
    v = int(correct)
    tail = float(stats.binom.sf(v - 1, guesses, p))  # P[W̃ ≥ v]
    if delta == 0.0:
        return tail
    i = np.arange(1, num_canaries + 1)
    window = stats.binom.cdf(v - 1, guesses, p) - stats.binom.cdf(v - 1 - i, guesses, p)  # P[v > W̃ ≥ v − i]
    alpha = float(np.max(2.0 * num_canaries / i * window))
    return tail + delta * alpha


def one_run_epsilon_lower_bound(correct: int, guesses: int, num_canaries: int, delta: float,
                                confidence: float = 0.95) -> float:
    """The one-run audit's lower bound on ε: ``sup{ε : f_ε(correct) ≤ 1 − confidence}`` (0 if none).

    ``correct`` of ``guesses`` guesses were right, among ``num_canaries`` canaries each included with
    probability 1/2; the training claims (ε, ``delta``)-DP per canary.  Steinke, Nasr and Jagielski
    (2023), Theorem 3 (with its δ term).  The result exceeds the true ε with probability ≤ 1 − confidence.
    """
    confidence = _check_confidence(confidence)
    delta = _check_delta(delta)
    if not (0 <= correct <= guesses <= num_canaries) or num_canaries < 1:
        raise ValueError("need 0 <= correct <= guesses <= num_canaries and num_canaries >= 1 "
                         f"(got {correct}, {guesses}, {num_canaries})")
    beta = 1.0 - confidence
    if guesses == 0 or _one_run_tail(0.0, correct, guesses, num_canaries, delta) > beta:
        return 0.0
    lo, hi = 0.0, _EPS_MAX
    if _one_run_tail(hi, correct, guesses, num_canaries, delta) <= beta:
        return hi
    for _ in range(60):  # bisection: f is increasing in ε
        mid = 0.5 * (lo + hi)
        if _one_run_tail(mid, correct, guesses, num_canaries, delta) <= beta:
            lo = mid
        else:
            hi = mid
    return lo


def one_run_guesses(scores: np.ndarray, included: np.ndarray, k_pos: int, k_neg: int) -> tuple[int, int]:
    """Guess "in" for the ``k_pos`` highest scores and "out" for the ``k_neg`` lowest; ``(correct, guesses)``."""
    scores = np.asarray(scores, dtype=float)
    included = np.asarray(included, dtype=bool)
    m = scores.size
    if included.shape != scores.shape:
        raise ValueError(f"scores and included must have the same shape (got {scores.shape}, {included.shape})")
    if k_pos < 0 or k_neg < 0 or k_pos + k_neg > m:
        raise ValueError(f"k_pos and k_neg must be >= 0 with k_pos + k_neg <= {m} canaries (got {k_pos}, {k_neg})")
    order = np.argsort(scores, kind="stable")
    guessed_out, guessed_in = order[:k_neg], order[m - k_pos:] if k_pos else order[:0]
    correct = int(included[guessed_in].sum() + (~included[guessed_out]).sum())
    return correct, k_pos + k_neg


def many_run_epsilon_lower_bound(false_pos: int, negatives: int, false_neg: int, positives: int, delta: float,
                                 confidence: float = 0.95) -> tuple[float, dict]:
    """Classic lower bound from one threshold's error counts, with Clopper–Pearson limits.

    ``false_pos`` of ``negatives`` out-trials were called "in"; ``false_neg`` of ``positives`` in-trials
    were called "out".  Each rate's upper limit holds with probability ≥ 1 − β/2 (β = 1 − confidence),
    so the returned bound exceeds the true ε with probability ≤ β.  Returns ``(eps_lower, details)``.
    """
    confidence = _check_confidence(confidence)
    delta = _check_delta(delta)
    one_sided = 1.0 - 2.0 * (1.0 - confidence)  # two-sided level whose upper limit is at 1 − β/2
    fpr_hi = clopper_pearson(false_pos, negatives, one_sided)[1]
    fnr_hi = clopper_pearson(false_neg, positives, one_sided)[1]
    cands = [0.0]
    for a, b in ((fpr_hi, fnr_hi), (fnr_hi, fpr_hi)):
        if b > 0 and 1.0 - delta - a > b:
            cands.append(math.log((1.0 - delta - a) / b))
    details = dict(fpr=false_pos / negatives, fnr=false_neg / positives, fpr_upper=fpr_hi, fnr_upper=fnr_hi)
    return min(max(cands), _EPS_MAX), details


def full_batch_exact_epsilon(noise_multiplier: float, steps: int, delta: float) -> float:
    """The exact ε(δ) of ``steps`` full-batch DP-SGD steps (sampling rate 1) with noise multiplier z.

    Each step is the Gaussian mechanism on a clipped sum (sensitivity c under add/remove, noise z·c);
    T adaptive compositions of it are exactly one Gaussian mechanism with noise multiplier z/√T
    (Dong, Roth and Su 2022, Gaussian DP: μ = √T/z), whose ε(δ) is the Balle–Wang (2018) exact value
    (:func:`fedtheory.privacy.gaussian.gaussian_epsilon`).  An upper bound the audit of a full-batch run
    can be compared with (the RDP accountant's ε is larger).
    """
    if not noise_multiplier > 0 or int(steps) < 1:
        raise ValueError(f"noise_multiplier must be > 0 and steps >= 1 (got {noise_multiplier}, {steps})")
    return float(gaussian_epsilon(float(noise_multiplier) / math.sqrt(int(steps)), float(delta)))


# --------------------------------------------------------------------------------------------------
# canaries
# --------------------------------------------------------------------------------------------------
def with_isolated_canaries(data: FederatedData, silo: int | Sequence[int], num_canaries: int, *,
                           include_prob: float = 0.5, seed: int = 0, feature: float = 4.0,
                           target: float = 100.0, shared_dim: bool = False,
                           included: np.ndarray | None = None) -> tuple[FederatedData, np.ndarray]:
    """``data`` with canary records added to the training set of ``silo`` (one silo or several).

    Every record gets ``num_canaries`` new zero features (``1`` with ``shared_dim``); canary i has
    feature ``feature`` in new dimension i (dimension 0 with ``shared_dim``) and regression target
    ``target``.  Each canary is included with probability ``include_prob`` (drawn from ``seed``) unless
    ``included`` (a bool array, one entry per canary and silo) is given.  Returns
    ``(new_data, included)`` with ``included`` of shape ``(len(silos), num_canaries)``.

    With ``|target| ≫ |prediction|`` the squared loss's gradient on a canary is
    ``x̃ (f − target)``, norm ``≈ |target| sqrt(feature² + 1) ≫ c``: always clipped to c, a fraction
    ``feature/sqrt(feature² + 1)`` of it on the canary's own dimension, the rest on the bias.
    """
    if data.task != "regression":
        raise ValueError(f"isolated canaries need a regression dataset (got task {data.task!r})")
    silos = [int(silo)] if np.isscalar(silo) else [int(s) for s in silo]
    for s in silos:
        if not 0 <= s < data.num_silos:
            raise ValueError(f"silo must be in 0..{data.num_silos - 1} (got {s})")
    if int(num_canaries) < 1:
        raise ValueError(f"num_canaries must be >= 1 (got {num_canaries})")
    m = int(num_canaries)
    if included is None:
        rng = np.random.default_rng(seed)
        included = rng.random((len(silos), m)) < include_prob
    included = np.asarray(included, dtype=bool).reshape(len(silos), m)
    extra = 1 if shared_dim else m

    def pad(x):
        return np.hstack([x, np.zeros((x.shape[0], extra))])

    tx = [pad(x) for x in data.train_x]
    ty = [np.asarray(y, dtype=float).copy() for y in data.train_y]
    for row, s in enumerate(silos):
        idx = np.flatnonzero(included[row])
        can = np.zeros((idx.size, data.dim + extra))
        can[np.arange(idx.size), data.dim + (0 if shared_dim else idx)] = feature
        tx[s] = np.vstack([tx[s], can])
        ty[s] = np.concatenate([ty[s], np.full(idx.size, float(target))])
    info = dict(data.info, canaries={"silos": silos, "num": m, "feature": feature, "target": target,
                                     "shared_dim": shared_dim, "first_dim": data.dim})
    out = FederatedData(data.name, data.task, tx, ty, [pad(x) for x in data.test_x], list(data.test_y),
                        real=data.real, num_classes=data.num_classes, info=info)
    return out, included


# --------------------------------------------------------------------------------------------------
# audits
# --------------------------------------------------------------------------------------------------
@dataclass
class AuditResult:
    """An audit's outcome: ``eps_lower`` holds with probability ≥ ``confidence``; ``eps_claimed`` and
    ``delta`` are what the engine reported for the audited silo(s).  ``caught`` is ``eps_lower > eps_claimed``.
    ``details``: method-specific counts (one-run: canaries, guesses, correct, and the canaries'
    ``scores`` and true ``membership``; many-run: trials, FPR, FNR and their upper limits, threshold)."""

    method: str
    eps_lower: float
    eps_claimed: float
    delta: float
    confidence: float
    details: dict = field(default_factory=dict)

    @property
    def caught(self) -> bool:
        return self.eps_lower > self.eps_claimed


def audit_one_run(config: RunConfig, data: FederatedData, *, silo: int = 0, num_canaries: int = 1000,
                  guesses: int | None = None, canary_seed: int = 0, confidence: float = 0.95,
                  feature: float = 4.0, target: float = 100.0) -> AuditResult:
    """One training run with ``num_canaries`` isolated canaries in ``silo`` (each in with prob. 1/2),
    scored by the final model's weight on each canary's dimension; the top and bottom
    ``guesses/2`` scores are guessed in and out (``guesses`` default ``num_canaries // 10``, fixed before
    looking at the scores).  Claimed ε and δ: what the engine reports for ``silo``."""
    from fedtrain.engine import run

    r_guess = num_canaries // 10 if guesses is None else int(guesses)
    if not 2 <= r_guess <= num_canaries:
        raise ValueError(f"guesses must be in 2..{num_canaries} (got {r_guess})")
    cdata, included = with_isolated_canaries(data, silo, num_canaries, seed=canary_seed, feature=feature,
                                             target=target)
    res = run(config, cdata, keep_models=True)
    d0 = data.dim
    scores = res.models[silo, d0:d0 + num_canaries, 0] * math.copysign(1.0, target)
    correct, r = one_run_guesses(scores, included[0], r_guess - r_guess // 2, r_guess // 2)
    delta = float(res.delta[silo])
    lb = one_run_epsilon_lower_bound(correct, r, num_canaries, delta, confidence)
    return AuditResult("one-run", lb, float(res.eps_spent[silo]), delta, confidence,
                       dict(canaries=num_canaries, included=int(included.sum()), guesses=r, correct=correct,
                            accuracy=correct / r, noise_multiplier=float(res.noise_multipliers[silo]),
                            steps=int(res.steps[silo]), scores=scores, membership=included[0]))


def _threshold_levels(n: int) -> np.ndarray:
    """The quantile levels of the selection half's scores tried as thresholds: the centre in steps of 1 %, and
    both tails down to ≈ 20 selection trials beyond the threshold (a large bound needs a rare error: the
    threshold that proves ε ≈ 2 at a noise halving sits near FPR 10⁻³, outside the 1 %–99 % range)."""
    centre = np.linspace(0.01, 0.99, 99)
    lo = min(0.01, 20.0 / max(int(n), 1))
    tail = np.geomspace(lo, 0.01, 25) if lo < 0.01 else np.array([0.01])
    return np.unique(np.concatenate([tail, centre, 1.0 - tail]))


def audit_many_runs(config: RunConfig, silo_data: tuple[np.ndarray, np.ndarray], *, num_silos: int = 100,
                    seeds: Sequence[int] = tuple(range(32)), canary_seed: int = 0, confidence: float = 0.95,
                    feature: float = 4.0, target: float = 100.0) -> AuditResult:
    """Many-run audit on a ``local`` run: ``num_silos`` identical copies of one silo's training data
    ``silo_data = (x, y)``, each with ONE canary (shared new dimension) included independently with
    probability 1/2; every (silo, seed) is an independent trial (``local`` training: silo k's model
    depends only on silo k's data and random stream).  The threshold is the one that maximizes the
    bound on the first half of the seeds (tried at the quantile levels of :func:`_threshold_levels`, the
    tails included); the bound is computed on the second half, so it needs no multiple-testing correction.
    Its power grows with the trials ``num_silos × len(seeds)``: the bound that catches a noise halving
    rests on error rates near 10⁻³, which 1,600 evaluation trials cannot bound (see
    :mod:`fedtrain.audit_power`)."""
    from fedtrain.engine import run_many

    if config.method != "local":
        raise ValueError(f"the many-run audit needs independent silos: config.method must be 'local' (got {config.method!r})")
    seeds = [int(s) for s in seeds]
    if len(seeds) < 2:
        raise ValueError(f"seeds must hold at least 2 seeds (got {len(seeds)})")
    x, y = np.asarray(silo_data[0], dtype=float), np.asarray(silo_data[1], dtype=float)
    base = FederatedData("audit", "regression", [x] * num_silos, [y] * num_silos, [x[:2]] * num_silos,
                         [y[:2]] * num_silos, real=False)
    cdata, included = with_isolated_canaries(base, list(range(num_silos)), 1, seed=canary_seed, feature=feature,
                                             target=target, shared_dim=True)
    included = included[:, 0]
    results = run_many([config.replace(seed=s) for s in seeds], cdata, keep_models=True)
    d0 = base.dim
    scores = np.stack([r.models[:, d0, 0] for r in results]) * math.copysign(1.0, target)  # (seeds, silos)
    delta = float(results[0].delta.max())
    claimed = float(max(r.eps_spent.max() for r in results))
    lb, det = held_out_threshold_bound(scores, included, delta, confidence)
    det.update(silos=num_silos, seeds=len(seeds),
               noise_multiplier=float(results[0].noise_multipliers.max()), steps=int(results[0].steps.max()))
    return AuditResult("many-run", lb, claimed, delta, confidence, det)


def held_out_threshold_bound(scores: np.ndarray, included: np.ndarray, delta: float,
                             confidence: float = 0.95) -> tuple[float, dict]:
    """The many-run lower bound with its threshold chosen on held-out runs.

    ``scores`` ``(runs, trials)``: one score per run and trial; ``included`` ``(trials,)`` bool: whether trial j's
    canary is in (the same in every run).  The threshold maximizes :func:`many_run_epsilon_lower_bound` on the first
    half of the runs (tried at the quantile levels of :func:`_threshold_levels`, both tails included); the bound is
    computed on the second half alone, which the choice never saw, so it holds at ``confidence`` with no correction
    for the thresholds tried.  Returns ``(eps_lower, details)`` (``threshold``, ``trials`` evaluated, the rates)."""
    scores = np.asarray(scores, dtype=float)
    included = np.asarray(included, dtype=bool)
    if scores.ndim != 2 or scores.shape[0] < 2 or included.shape != scores.shape[1:]:
        raise ValueError(f"scores must be (runs >= 2, trials) and included (trials,) (got {scores.shape}, "
                         f"{included.shape})")
    if included.all() or not included.any():
        raise ValueError("included must hold both in- and out-trials")
    half = scores.shape[0] // 2
    sel, ev = scores[:half], scores[half:]

    def counts(s, thr):
        s_in, s_out = s[:, included].ravel(), s[:, ~included].ravel()
        return int((s_out >= thr).sum()), s_out.size, int((s_in < thr).sum()), s_in.size

    cands = np.quantile(sel, _threshold_levels(sel.size))
    best = max(cands, key=lambda t: many_run_epsilon_lower_bound(*counts(sel, t), delta, confidence)[0])
    lb, det = many_run_epsilon_lower_bound(*counts(ev, best), delta, confidence)
    det.update(threshold=float(best), trials=int(ev.size))
    return lb, det


# --------------------------------------------------------------------------------------------------
# test-only seam
# --------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def broken_engine(*, noise_factor: float = 1.0, clip: bool = True) -> Iterator[None]:
    """TEST-ONLY: inside this context the engine trains with its noise std multiplied by
    ``noise_factor`` and, with ``clip=False``, without per-example clipping, while it still reports the
    noise multipliers and ε it calibrated: a deliberately broken implementation for checking that an
    audit catches it.  Patches ``fedtrain.engine.Trainer.set_noise`` (restored on exit)."""
    import torch

    from fedtrain import engine

    trainer = getattr(engine, "Trainer", None)
    original = getattr(trainer, "set_noise", None)
    if original is None:
        raise RuntimeError("broken_engine needs fedtrain.engine.Trainer.set_noise (the seam where the engine "
                           "installs clip norms and noise scales); update fedtrain.audit.broken_engine")
    if not noise_factor >= 0:
        raise ValueError(f"noise_factor must be >= 0 (got {noise_factor})")

    def patched(self, z):
        original(self, z)
        self.noise_std = self.noise_std * float(noise_factor)
        if not clip:
            self.clip = torch.full_like(self.clip, math.inf)

    trainer.set_noise = patched
    try:
        yield
    finally:
        trainer.set_noise = original


# --------------------------------------------------------------------------------------------------
# near-cancelling canaries: per-example clipping in clip-together mode
# --------------------------------------------------------------------------------------------------
def _near_cancelling_run(data: FederatedData, silo: int, included: np.ndarray, *, lam: float, lr: float,
                         clip: float, residual: float, eps: float, delta: float, seed: int) -> dict:
    """Craft, train and predict (see :func:`near_cancelling_contributions`); ``included`` (m,) bool."""
    from fedtrain.engine import run

    if data.task != "regression":
        raise ValueError(f"near-cancelling canaries need a regression dataset (got task {data.task!r})")
    if not 0 <= silo < data.num_silos:
        raise ValueError(f"silo must be in 0..{data.num_silos - 1} (got {silo})")
    for name, v in (("lam", lam), ("lr", lr), ("clip", clip), ("residual", residual)):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive finite number (got {v})")
    included = np.asarray(included, dtype=bool)
    m, d0 = included.size, data.dim
    idx = np.flatnonzero(included)
    p = d0 + m + 1  # features, canary dimensions, bias (last)
    big = int(data.train_sizes.max() + m + 2) * 4
    cfg = RunConfig(dataset=data.name, method="mrmtl", eps=eps, delta=delta, lam=lam, lr=lr, rounds=1,
                    batch_size=big, clip=clip, prox_mode="clip-together", seed=seed)

    def build(cx: np.ndarray, cy: np.ndarray) -> FederatedData:
        pad = lambda x: np.hstack([x, np.zeros((x.shape[0], m))])  # noqa: E731
        tx = [pad(x) for x in data.train_x]
        ty = [np.asarray(y, dtype=float) for y in data.train_y]
        tx[silo] = np.vstack([tx[silo], cx])
        ty[silo] = np.concatenate([ty[silo], cy])
        return FederatedData(data.name, "regression", tx, ty, [pad(x) for x in data.test_x], list(data.test_y),
                             real=data.real, info=dict(data.info))

    holder = build(np.zeros((idx.size, d0 + m)), np.zeros(idx.size))
    n = holder.train_sizes.astype(float)
    a = n / n.sum()
    # Round 1 (one step from w = 0) is A + z·B coordinate-wise (B: the seed's noise draw, scaled): two
    # one-round runs at different ε separate A and B, and the two-round run's own z gives its round 1.
    ra, rb = (run(cfg.replace(eps=e), holder, keep_models=True) for e in (1.0, 4.0))
    za, zb = float(ra.noise_multipliers[silo]), float(rb.noise_multipliers[silo])
    two = run(cfg.replace(rounds=2), holder)
    z2 = two.noise_multipliers
    if not np.all(z2 == z2[silo]) or not np.all(ra.noise_multipliers == za):
        raise RuntimeError("near-cancelling canaries: expected one noise multiplier for all silos (full batches)")
    slope = (rb.models[:, :, 0] - ra.models[:, :, 0]) / (zb - za)
    w1 = ra.models[:, :, 0] + (float(z2[silo]) - za) * slope  # (K, p): round 1 without canary contributions
    dims = d0 + idx

    def craft(shift: np.ndarray):
        wk = w1[silo] + shift
        wbar = a @ w1 + a[silo] * shift
        P = lam * (wk - wbar)
        xt = np.tile(P / P[-1], (idx.size, 1))
        xt[np.arange(idx.size), dims] += -residual / P[-1]  # x̃ g + P = residual·e_j with g = −P_bias
        y = xt @ wk + P[-1]
        return wk, P, xt, y

    shift = np.zeros(p)
    for _ in range(500):  # the canaries' own round-1 step (w = 0, P = 0): −η/n Σ clip(−y x̃)
        _, _, xt, y = craft(shift)
        g = -y[:, None] * xt
        fac = np.minimum(1.0, clip / (np.linalg.norm(g, axis=1) + 1e-6))
        new = -lr / n[silo] * (fac[:, None] * g).sum(0)
        if np.allclose(new, shift, rtol=1e-13, atol=1e-15):
            break
        shift = new
    else:  # pragma: no cover - the map is a contraction for the documented settings
        raise RuntimeError("near-cancelling canaries: the crafting fixed point did not converge")
    wk, P, xt, y = craft(shift)
    crafted = build(xt[:, :-1], y)
    res = run(cfg.replace(rounds=2), crafted, keep_models=True)
    w2 = res.models[silo, :, 0]
    # float64 reference of round 2 for the audited silo, exact clipping, noise-free
    X = np.hstack([crafted.train_x[silo], np.ones((int(n[silo]), 1))])
    v = X * (X @ wk - crafted.train_y[silo])[:, None] + P
    fac = np.minimum(1.0, clip / (np.linalg.norm(v, axis=1) + 1e-6))
    ref = wk - lr / n[silo] * (fac[:, None] * v).sum(0)
    return dict(result=res, w2=w2, ref=ref, v=v, fac=fac, P=P, dims=dims, n=n[silo], d0=d0, m=m)


def near_cancelling_contributions(data: FederatedData, *, silo: int = 0, num_canaries: int = 8, lam: float = 1e5,
                                  lr: float = 0.5, clip: float = 1.0, residual: float = 10.0, eps: float = 1e10,
                                  delta: float = 1e-5, seed: int = 0) -> dict:
    """Measure, through the public engine API, how much each planted near-cancelling canary contributes.

    Set-up (MR-MTL, ``prox_mode="clip-together"``, full batches so that q_k = 1 and every round is one
    DP-SGD step, 2 rounds, a huge ``eps`` so that the noise is small but clipping is on; the noise of
    round 1 is known exactly, see below): in round 2 silo ``silo`` has the proximal gradient
    P = λ(w_k − w̄).  Canary i is crafted so that its per-example gradient x̃_i(f_i − y_i) equals
    ``−P + residual·e_{j_i}`` (e_{j_i} a dimension no other record uses): its clip-together vector
    ``∇ℓ_i + P`` is ``residual·e_{j_i}`` (norm ``residual`` > c), a small difference of terms of size
    ‖P‖, where an expanded-form norm cancels catastrophically.  Correct clipping lets it contribute exactly ``clip``.

    The crafting needs round 1's models: they come from one-round runs of the engine on the same
    data with the canaries replaced by placeholder records (zero features and target: zero gradient at
    w = 0); round 1 is one step from w = 0, linear in the noise multiplier z for a fixed seed, so two
    runs at different ε give the round-1 model of the two-round run's own z, noise included.  The
    canaries' own round-1 contributions are then added by a float64 fixed-point iteration.  A float64
    reference of round 2 with exact clipping gives the predicted final model; the canary's measured
    contribution along e_{j_i} is the reference's (``clip``) plus ``n_k/η`` times the engine's
    deviation from the reference in dimension j_i (the round-2 noise, z·c·N(0,1) in these units, is
    the measurement error: ≈ 2e-3 at the default ε).

    P's size is ≈ λ·‖w_k − w̄‖ after one step; the canary's features are P/P_bias, so data whose silo
    means differ (P mostly on the bias) keep the crafted records well conditioned in float32.

    Returns a dict: ``contribution`` (measured / clip, one per canary; 1 when clipping is correct),
    ``prox_norm`` (‖P‖ in round 2), ``reference_max_error`` (largest ``|engine − reference|`` over the
    dimensions no canary uses, in the same units: how well the reference tracks the engine elsewhere).
    """
    out = _near_cancelling_run(data, silo, np.ones(int(num_canaries), dtype=bool), lam=lam, lr=lr, clip=clip,
                               residual=residual, eps=eps, delta=delta, seed=seed)
    dims, n = out["dims"], out["n"]
    own = (out["fac"][-dims.size:, None] * out["v"][-dims.size:])[np.arange(dims.size), dims]
    measured = own + n / lr * (out["ref"][dims] - out["w2"][dims])
    others = np.setdiff1d(np.arange(out["ref"].size), dims)
    err = np.abs(out["ref"][others] - out["w2"][others]).max() * n / lr / clip
    return dict(contribution=measured / clip, prox_norm=float(np.linalg.norm(out["P"])), reference_max_error=float(err))


def audit_near_cancelling(data: FederatedData, *, eps: float = 2.0, delta: float = 1e-5, silo: int = 0,
                          num_canaries: int = 400, guesses: int = 100, lam: float = 1e5, lr: float = 0.5,
                          clip: float = 1.0, residual: float = 10.0, canary_seed: int = 0, seed: int = 0,
                          confidence: float = 0.95) -> AuditResult:
    """One-run membership audit with near-cancelling canaries (each included with probability 1/2) at a
    realistic ``eps``: the set-up of :func:`near_cancelling_contributions` (two full-batch MR-MTL rounds,
    clip-together), the round-1 noise predicted exactly so that every included canary's clip-together
    vector in round 2 is ``residual·e_{j_i}``.  Score: minus the final weight on the canary's dimension.
    With correct clipping each canary moves it by at most ``η c / n_k`` per step; a clipping defect lets
    it move by up to ``η·residual / n_k``, which the audit turns into a lower bound above the claim."""
    rng = np.random.default_rng(canary_seed)
    included = rng.random(int(num_canaries)) < 0.5
    out = _near_cancelling_run(data, silo, included, lam=lam, lr=lr, clip=clip, residual=residual, eps=eps,
                               delta=delta, seed=seed)
    res = out["result"]
    scores = -res.models[silo, out["d0"]:out["d0"] + out["m"], 0]
    correct, r = one_run_guesses(scores, included, guesses - guesses // 2, guesses // 2)
    dlt = float(res.delta[silo])
    lb = one_run_epsilon_lower_bound(correct, r, int(num_canaries), dlt, confidence)
    return AuditResult("one-run (near-cancelling canaries)", lb, float(res.eps_spent[silo]), dlt, confidence,
                       dict(canaries=int(num_canaries), included=int(included.sum()), guesses=r, correct=correct,
                            accuracy=correct / r, prox_norm=float(np.linalg.norm(out["P"])),
                            noise_multiplier=float(res.noise_multipliers[silo]), steps=int(res.steps[silo])))
