"""Run configuration: one frozen, hashable, JSON-round-trippable description of a training run.

A :class:`RunConfig` names everything a run of :func:`fedtrain.engine.run` needs besides the data:
the dataset (name and loader options, so that the results store can key on them), the method, the
per-silo privacy budget, the optimization hyper-parameters and the method-specific options.  All
fields are validated in ``__post_init__``, before anything runs; errors are ``ValueError`` naming the
field and its valid range.

Paper defaults (MR-MTL paper, Appendix C.4, see ``notes/mrmtl-paper.md`` §4.2) live in
:data:`PAPER_DEFAULTS`; :meth:`RunConfig.paper` builds a config from them.

Privacy notion: *silo-specific sample-level DP* (paper Sec. 3 / Def. 2.1).  Silo ``k`` guarantees
``(eps_k, delta_k)``-DP for its own records with respect to everything it releases; the
accountant (``rdp`` | ``pld`` | ``prv``) certifies the Poisson-subsampled Gaussian mechanism under
add/remove-one adjacency (Opacus' and dp_accounting's convention).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from fedtheory._validation import (
    check_choice,
    check_integer_at_least,
    check_nonnegative,
    check_open_interval,
    check_positive,
)

__all__ = [
    "METHODS",
    "ACCOUNTANTS",
    "PROX_MODES",
    "AGGREGATIONS",
    "MODELS",
    "LAMBDA_GRID",
    "LR_GRID",
    "PAPER_DEFAULTS",
    "ENGINE_VERSION",
    "RunConfig",
    "paper_defaults",
    "default_delta",
]

#: Bumped whenever a change of the engine changes the numbers a config produces (part of ``key()``).
ENGINE_VERSION = 2

METHODS = ("local", "fedavg", "finetune", "mrmtl", "ditto", "mocha", "ifca", "ifca-mrmtl")
ACCOUNTANTS = ("rdp", "pld", "prv")
#: ``clip-together``: the MR-MTL proximal gradient λ(w_k − w̄) is added to every example's gradient
#: before per-example clipping (the paper's released code).  ``post-noise``: it is added after
#: clipping and noising (Sec. 5's written update; free post-processing).
PROX_MODES = ("clip-together", "post-noise")
#: Server aggregation: weights n_k / Σn (the released code) or 1/K.
AGGREGATIONS = ("weighted", "uniform")
MODELS = ("linear", "mlp")
#: λ grid of the paper (App. C.4) for MR-MTL, Ditto and Mocha.
LAMBDA_GRID = (1e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
#: Client learning-rate grid (App. C.4; one copy of the appendix prints the last entry as 0.03, the
#: other as 0.3, which is the one used here, see notes §7 item 14).
LR_GRID = (1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3)

#: Per-dataset settings of App. C.4 (1 local epoch per round for every method; Ditto adds its own
#: personalization epoch).  ``num_clusters`` is the released code's IFCA default.
PAPER_DEFAULTS: dict[str, dict[str, Any]] = {
    "school": dict(rounds=200, batch_size=32, clip=1.0, delta=1e-3, local_epochs=1, num_clusters=3),
    "vehicle": dict(rounds=400, batch_size=64, clip=6.0, delta=1e-7, local_epochs=1, num_clusters=4),
    "gleam": dict(rounds=200, batch_size=64, clip=6.0, delta=1e-4, local_epochs=1, num_clusters=3),
}


def paper_defaults(dataset: str) -> dict[str, Any]:
    """The App. C.4 settings for ``dataset``.

    An exact name is looked up first, then the part before the first ``-`` or ``_`` (so that a
    synthetic stand-in named e.g. ``"vehicle-synthetic"`` gets Vehicle's settings).
    """
    name = dataset.lower()
    if name not in PAPER_DEFAULTS:
        name = name.replace("_", "-").split("-")[0]
    if name not in PAPER_DEFAULTS:
        raise ValueError(f"dataset must be one of {', '.join(map(repr, PAPER_DEFAULTS))} "
                         f"(or start with one of them) to use paper defaults (got {dataset!r})")
    return dict(PAPER_DEFAULTS[name])


def default_delta(n: int) -> float:
    """The largest power of ten strictly below ``n ** -1.1`` (the paper's rule δ_k < n_k^{-1.1}, App. C.4)."""
    n = int(check_integer_at_least("n", n, 1))
    bound = float(n) ** -1.1
    exp = math.floor(math.log10(bound))
    delta = 10.0 ** exp
    if delta >= bound:
        delta = 10.0 ** (exp - 1)
    return min(delta, 0.1)


def _as_budget(name: str, value: Any, *, allow_none: bool, inf_ok: bool) -> Any:
    """Normalize a scalar or per-silo budget to ``float`` or ``tuple[float, ...]``."""
    if value is None:
        if allow_none:
            return None
        raise ValueError(f"{name} must be a number or a per-silo sequence of numbers (got None)")
    if isinstance(value, str):
        if value.strip().lower() in ("inf", "infinity") and inf_ok:
            return math.inf
        raise ValueError(f"{name} must be a number or a per-silo sequence of numbers (got {value!r})")
    if hasattr(value, "__len__"):
        items = tuple(_as_budget(name, v, allow_none=False, inf_ok=inf_ok) for v in list(value))
        if len(items) == 0:
            raise ValueError(f"{name} must not be an empty sequence")
        return items
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number or a per-silo sequence of numbers (got {value!r})") from exc


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class RunConfig:
    """Everything one training run needs besides the data (validated on construction).

    Privacy
        eps: per-silo target ε (one float for all silos or one per silo); ``math.inf`` trains
            without clipping or noise (non-private baseline).
        delta: per-silo δ (float or one per silo); ``None`` uses the paper's δ of the dataset
            (:data:`PAPER_DEFAULTS`) when known, else :func:`default_delta` of each silo's n_k.  Every
            δ_k must satisfy the paper's rule δ_k < n_k^{-1.1} (checked when the data are known).
        accountant: ``rdp`` (Opacus RDP, the paper's), ``pld`` (dp_accounting PLD), ``prv`` (Opacus PRV).
        clip: per-example L2 clipping norm c.
    Optimization
        lr: client learning rate η; rounds: communication rounds T; local_epochs: DP-SGD epochs per
        round (Poisson-sampled batches at rate q_k = min(B, n_k)/n_k); batch_size: expected batch B.
    Method
        method: one of :data:`METHODS`; lam: λ of MR-MTL / Ditto / Mocha / IFCA-MR-MTL (stage 2).
        prox_mode: :data:`PROX_MODES`; aggregation: :data:`AGGREGATIONS`.
        finetune_frac: fraction of rounds run as FedAvg before local finetuning (paper: 0.5).
        num_clusters, select_frac (fraction of rounds with private cluster selection, paper 0.1),
        select_eps_frac (per-round selection ε as a fraction of the silo's total ε, paper 0.03),
        ifca_loss_clip (regression IFCA: per-example loss clipped to [0, L] before scoring).
        ditto_personal_epochs: epochs of Ditto's personal-model pass per round (paper: 1).
    Reproducibility and reporting
        seed (all sampling, noise and initialization), device (``cpu`` | ``cuda``), eval_every
        (record the test metric every that many rounds; 0 = final round only), model (``linear``).
    Data
        dataset: the dataset's name (for the results store; the data object itself is passed to
        :func:`fedtrain.engine.run`); dataset_options: the loader's options (JSON values).
    """

    dataset: str
    method: str
    eps: float | tuple[float, ...] = math.inf
    delta: float | tuple[float, ...] | None = None
    lam: float = 0.0
    lr: float = 0.01
    rounds: int = 200
    local_epochs: int = 1
    batch_size: int = 32
    clip: float = 1.0
    seed: int = 0
    device: str = "cpu"
    accountant: str = "rdp"
    prox_mode: str = "clip-together"
    aggregation: str = "weighted"
    model: str = "linear"
    eval_every: int = 0
    finetune_frac: float = 0.5
    num_clusters: int = 3
    select_frac: float = 0.1
    select_eps_frac: float = 0.03
    ifca_loss_clip: float = 1.0
    ditto_personal_epochs: int = 1
    dataset_options: Mapping[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ validation
    def __post_init__(self) -> None:
        s = object.__setattr__
        if not isinstance(self.dataset, str) or not self.dataset:
            raise ValueError(f"dataset must be a non-empty string (got {self.dataset!r})")
        check_choice("method", self.method, METHODS)
        eps = _as_budget("eps", self.eps, allow_none=False, inf_ok=True)
        for e in (eps if isinstance(eps, tuple) else (eps,)):
            check_positive("eps", e)
        s(self, "eps", eps)
        delta = _as_budget("delta", self.delta, allow_none=True, inf_ok=False)
        if delta is not None:
            for d in (delta if isinstance(delta, tuple) else (delta,)):
                check_open_interval("delta", d, 0.0, 1.0)
        s(self, "delta", delta)
        s(self, "lam", float(check_nonnegative("lam", self.lam)))
        if math.isinf(self.lam):
            raise ValueError("lam must be finite (got inf)")
        s(self, "lr", float(check_positive("lr", self.lr)))
        s(self, "rounds", int(check_integer_at_least("rounds", self.rounds, 1)))
        s(self, "local_epochs", int(check_integer_at_least("local_epochs", self.local_epochs, 1)))
        s(self, "batch_size", int(check_integer_at_least("batch_size", self.batch_size, 1)))
        s(self, "clip", float(check_positive("clip", self.clip)))
        if math.isinf(self.clip):
            raise ValueError("clip must be finite (got inf)")
        s(self, "seed", int(check_integer_at_least("seed", self.seed, 0)))
        check_choice("device", self.device, ("cpu", "cuda"))
        check_choice("accountant", self.accountant, ACCOUNTANTS)
        check_choice("prox_mode", self.prox_mode, PROX_MODES)
        check_choice("aggregation", self.aggregation, AGGREGATIONS)
        check_choice("model", self.model, MODELS)
        s(self, "eval_every", int(check_integer_at_least("eval_every", self.eval_every, 0)))
        s(self, "finetune_frac", float(check_open_interval("finetune_frac", self.finetune_frac, 0.0, 1.0)))
        s(self, "num_clusters", int(check_integer_at_least("num_clusters", self.num_clusters, 1)))
        s(self, "select_frac", float(check_open_interval("select_frac", self.select_frac, 0.0, 1.0 + 1e-12)))
        s(self, "select_eps_frac", float(check_open_interval("select_eps_frac", self.select_eps_frac, 0.0, 1.0)))
        s(self, "ifca_loss_clip", float(check_positive("ifca_loss_clip", self.ifca_loss_clip)))
        s(self, "ditto_personal_epochs",
          int(check_integer_at_least("ditto_personal_epochs", self.ditto_personal_epochs, 1)))
        if not isinstance(self.dataset_options, Mapping):
            raise ValueError(f"dataset_options must be a mapping of JSON values (got {type(self.dataset_options).__name__})")
        opts = dict(self.dataset_options)
        try:
            json.dumps(_jsonable(opts), sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"dataset_options must hold only JSON values (got {opts!r})") from exc
        s(self, "dataset_options", opts)

    # ------------------------------------------------------------------ helpers
    @property
    def private(self) -> bool:
        """Whether any silo trains with a finite ε."""
        eps = self.eps if isinstance(self.eps, tuple) else (self.eps,)
        return any(math.isfinite(e) for e in eps)

    @classmethod
    def paper(cls, dataset: str, method: str, **overrides: Any) -> "RunConfig":
        """A config with the App. C.4 settings of ``dataset`` (:func:`paper_defaults`), then ``overrides``."""
        kw = paper_defaults(dataset)
        kw.update(overrides)
        return cls(dataset=dataset, method=method, **kw)

    def replace(self, **changes: Any) -> "RunConfig":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (``inf`` written as the string ``"inf"``, tuples as lists)."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RunConfig":
        """Inverse of :meth:`to_dict` (unknown keys raise ``ValueError``)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown RunConfig field(s) {unknown}; valid fields: {sorted(names)}")
        return cls(**dict(d))

    def key(self) -> str:
        """Stable 16-hex-digit hash of the canonical JSON of the config and :data:`ENGINE_VERSION`."""
        payload = json.dumps({"engine_version": ENGINE_VERSION, **self.to_dict()}, sort_keys=True,
                             separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def __hash__(self) -> int:  # dataset_options is a dict: hash the canonical form instead
        return hash(self.key())
