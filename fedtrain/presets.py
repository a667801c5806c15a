"""The paper's experiment presets and the book's grids: data, in one module.

Everything here is a value a reader may want to change to run a different experiment; no training
code path depends on it except through these tables:

* :data:`PAPER_DEFAULTS`, :data:`LAMBDA_GRID`, :data:`LR_GRID`, :data:`STANDIN_PRESETS` and
  :func:`paper_defaults`: the MR-MTL paper's settings, defined in :mod:`fedtrain.paper` (and
  :mod:`fedtrain.config`) and re-exported here;
* :data:`REDUCED`, :data:`REDUCED_EPS`, :data:`REDUCED_STANDIN_LAMBDAS`, :data:`FULL_GRID`,
  :data:`FULL_EPS`, :data:`SCALES` and :data:`BOOK_FIGURES`: the grids behind the empirical chapters'
  figures, expanded by :func:`book_grid` at a scale (``"paper"``, ``"reduced"``, ``"reduced-5"``);
  :data:`THEORY_SETUP` and :data:`THEORY_GRIDS` (:func:`theory_grid`): the theory-meets-training figure;
* :data:`RESULTS_PRESETS` and :data:`DATASET_FIGURES`: what ``fedtrain sweep --preset NAME`` (``make
  results``) computes into a results store, and so what the committed store ``results/`` holds;
* :data:`~fedtrain.deep_grids.DEEP_FIGURES` (:func:`~fedtrain.deep_grids.deep_grid`): the deep chapter's grids, among them
  the real-image grids on Fashion-MNIST (:data:`~fedtrain.deep_grids.REAL_IMAGE_GRIDS`), defined in
  :mod:`fedtrain.deep_grids` and re-exported here;
* FedHDP's grids (privacy unit: a client), defined in :mod:`fedtrain.client_presets` and re-exported here:
  :data:`~fedtrain.client_presets.FEDHDP_GRIDS` (:func:`~fedtrain.client_presets.fedhdp_grid`): its claims on real
  images; :data:`~fedtrain.client_presets.FEDHDP_SCALES` (:func:`~fedtrain.client_presets.fedhdp_scale_configs`): its
  claims on the digit stand-in; :data:`~fedtrain.client_presets.FEDHDP_COMMITTED`
  (:func:`~fedtrain.client_presets.fedhdp_committed_configs`): FedHDP's grids in the committed store.
"""
from __future__ import annotations

import math
from typing import Any
from fedtrain.client_presets import (FEDHDP_COMMITTED, FEDHDP_GRIDS, FEDHDP_SCALES, fedhdp_committed_configs,
                                     fedhdp_grid, fedhdp_noise_for_epsilon, fedhdp_scale_configs)
from fedtrain.methods.registry import method_spec
from fedtrain.sweep import expand_grid, repeat_configs

__all__ = ["PAPER_DEFAULTS", "LAMBDA_GRID", "LR_GRID", "STANDIN_PRESETS", "paper_defaults", "FULL_ENV", "full_scale",
           "REDUCED", "REDUCED_EPS", "REDUCED_STANDIN_LAMBDAS", "FULL_GRID", "FULL_EPS", "SCALES", "LR_COMPUTE_ORDER",
           "BOOK_FIGURES",
           "THEORY_SETUP", "THEORY_GRIDS", "RESULTS_PRESETS", "DATASET_FIGURES", "grid_note", "book_grid",
           "theory_grid",
           "DEEP_FIGURES", "deep_grid", "deep_grid_note", "REAL_IMAGE_GRIDS", "FEDHDP_GRIDS",
           "fedhdp_noise_for_epsilon", "fedhdp_grid", "method_family", "tuned_settings", "FEDHDP_SCALES",
           "fedhdp_scale_configs", "FEDHDP_COMMITTED", "fedhdp_committed_configs"]

from fedtrain.book_scale import FULL_ENV, full_scale
from fedtrain.config import paper_defaults
from fedtrain.deep_grids import (DEEP_FIGURES, REAL_IMAGE_GRIDS, deep_grid, deep_grid_note, method_family,
                                 tuned_settings)
from fedtrain.paper import LAMBDA_GRID, LR_GRID, PAPER_DEFAULTS, STANDIN_PRESETS

inf = math.inf


# --------------------------------------------------------------------------------------------------
# the book's grids (scales) and the results-store presets
# --------------------------------------------------------------------------------------------------
#: The reduced grids' settings (quick runs; datasets not listed use the Vehicle stand-in's).  ``repeats``:
#: repeats of the paper's protocol (each re-splits the silos, :func:`fedtrain.sweep.repeat_config`).
REDUCED = {
    "school": dict(rounds=40, lr=0.03, repeats=2),
    "vehicle-standin": dict(rounds=20, lr=0.01, repeats=2),
    "gleam-standin": dict(rounds=20, lr=0.01, repeats=2),
}
#: Reduced ε grids of the stand-ins (Fig. 3 and Fig. 5 panels): one level where FedAvg beats local, the band
#: where MR-MTL beats both (see :data:`STANDIN_PRESETS`), and no privacy.  Other stand-ins: (0.5, 2, inf).
REDUCED_EPS = {"vehicle-standin": (0.5, 1.0, 2.0, inf), "gleam-standin": (1.0, 2.0, 4.0, inf)}
#: Reduced λ grid of MR-MTL on the stand-ins (part of the paper's grid, extended by 30 for the high-privacy end).
REDUCED_STANDIN_LAMBDAS = (0.3, 1.0, 3.0, 10.0, 30.0)
#: The paper-scale grids (App. C.4): the paper's rounds (:data:`PAPER_DEFAULTS`), its learning-rate grid
#: :data:`LR_GRID` and λ grid :data:`LAMBDA_GRID`, 5 repeats (re-split silos, seeds ``s + 1000 r``), the
#: test metric recorded every ``eval_every`` rounds (Fig. 2's curves).
FULL_GRID = dict(repeats=5, lrs=LR_GRID, eval_every=5, reduced_eval_every=4)
#: The paper-scale ε grids per dataset family (Fig. 3, Fig. A4; the stand-ins' own ε scale, see
#: :data:`STANDIN_PRESETS`).
FULL_EPS = {"school": (1.0, 2.0, 3.0, 4.0, 6.0, 8.0, inf), "vehicle": (0.1, 0.25, 0.5, 1.0, 2.0, inf),
            "gleam": (0.5, 1.0, 1.5, 2.0, 4.0, inf)}

#: The scales a figure's grid can be expanded at (:func:`book_grid`): ``"paper"`` (App. C.4's rounds, λ, η and
#: ε grids, 5 repeats), ``"paper-eta3"`` (the same with the middle three learning rates 0.01, 0.03, 0.1 of the
#: paper's six), ``"reduced"`` (:data:`REDUCED`: fewer rounds, one η, fewer ε and λ, 2 repeats; quick runs)
#: and ``"reduced-5"`` (the reduced grid with the paper's 5 repeats).
SCALES = {"paper": dict(grid="full", repeats=FULL_GRID["repeats"]),
          "paper-eta3": dict(grid="full", repeats=FULL_GRID["repeats"], lrs=(0.01, 0.03, 0.1)),
          "reduced": dict(grid="reduced", repeats=None),
          "reduced-5": dict(grid="reduced", repeats=5)}
#: The order in which a preset computes a paper-scale grid's learning rates (the middle of the grid first), so
#: that an interrupted computation holds whole figures at ``"paper-eta3"`` before it holds any at ``"paper"``.
LR_COMPUTE_ORDER = (0.01, 0.03, 0.1, 0.3, 0.003, 0.001)

#: The runs behind each figure of the empirical chapters.  A value may depend on the scale
#: (``{"full": ..., "reduced": ...}``) and then on the dataset (``{"school": ..., "standin": ...}``;
#: ``school`` = names starting with "school"); a missing entry means the default (the grid's learning
#: rates, λ = 0).  ``"paper"`` stands for :data:`FULL_EPS` of the dataset's family or :data:`LAMBDA_GRID`;
#: ``"reduced"`` for the dataset's :data:`REDUCED_EPS` (else (0.5, 2, inf)).  Each entry of ``runs``:
#: ``methods``, optional ``lam`` (used by the methods with λ only) and ``options`` (method options).
BOOK_FIGURES: dict[str, dict[str, Any]] = {
    # Fig. 2: local vs FedAvg vs finetuning, learning curves (the paper fixes η = 0.01 in Figs. 2 and A2)
    "fig2": {"eps": {"full": (1.0, 2.0, inf), "reduced": (1.0, inf)},
             "lr": {"full": (0.01,)},
             "runs": [{"methods": ("local", "fedavg", "finetune")}]},
    # Fig. 3: privacy-utility of all methods (reduced stand-in panels: the endpoints and MR-MTL, as Fig. 5)
    "fig3": {"eps": {"full": "paper", "reduced": {"school": (1.0, 6.0, inf), "standin": "reduced"}},
             "runs": {"full": "all", "reduced": {"school": "all", "standin": [
                 {"methods": ("local", "fedavg")},
                 {"methods": ("mrmtl",), "lam": REDUCED_STANDIN_LAMBDAS}]}},
             "all": [{"methods": ("local", "fedavg", "finetune")},
                     {"methods": ("mrmtl", "ditto"), "lam": {"full": "paper", "reduced": (1.0, 3.0)}},
                     {"methods": ("mocha",), "lam": {"full": "paper", "reduced": (0.03, 0.3)}},
                     {"methods": ("ifca",), "options": {"select_frac": 0.1}}]},
    # Fig. 4: privacy overhead (IFCA selecting every round, Ditto's second pass)
    "fig4": {"eps": {"full": "paper", "reduced": {"school": (1.0, 6.0, inf), "standin": (0.5, 2.0, inf)}},
             "runs": [{"methods": ("local", "fedavg")},
                      {"methods": ("mrmtl",), "lam": {"full": "paper", "reduced": {"school": (1.0, 3.0),
                                                                                  "standin": REDUCED_STANDIN_LAMBDAS}}},
                      {"methods": ("ditto",), "lam": {"full": "paper", "reduced": {"school": (1.0, 3.0),
                                                                                  "standin": (1.0, 3.0, 10.0)}}},
                      # at paper scale (400/200 rounds) the selections alone, ε_sel = 0.03 ε each and one per round,
                      # cost more than any finite ε of the grid (fedtrain.ledger.selection_epsilon; the engine
                      # refuses such a run): only the non-private point exists
                      {"methods": ("ifca",), "options": {"select_frac": 1.0}, "eps": {"full": (inf,)}}]},
    # Fig. 5: MR-MTL against λ, with the Local and FedAvg endpoints
    "fig5": {"eps": {"full": "paper", "reduced": {"school": (1.0, 6.0, inf), "standin": "reduced"}},
             "lr": {"full": {"school": (0.01,)}},
             "runs": [{"methods": ("local", "fedavg")},
                      {"methods": ("mrmtl",), "lam": {"full": "paper", "reduced": (0.3, 1.0, 3.0, 10.0, 30.0)}}]},
    # IFCA with one cluster (FedAvg from IFCA's random start): the Fig. 3 chapter's control for IFCA's deficit
    "ifca1": {"eps": (1.0, inf),
              "runs": [{"methods": ("ifca",), "options": {"select_frac": 0.1, "num_clusters": 1}}]},
}

#: The theory-meets-training figure (Gaussian mean estimation, :func:`fedtrain.sweep.gaussian_lambda_sweep`):
#: its fixed set-up and, per grid, the number of independent datasets and the λ values (0 = local is added).
THEORY_SETUP = dict(num_silos=50, n=50, tau=0.25, sigma=1.0, eps_values=(1.0, 3.0, inf))
#: The theory figure's grids: ``"full"`` (the committed store) and ``"reduced"`` (quick runs).
THEORY_GRIDS = {"full": dict(datasets=32, lams=("geomspace", 0.01, 10.0, 13)),
                "reduced": dict(datasets=8, lams=(0.03, 0.1, 0.3, 1.0, 3.0, 10.0))}

#: What ``fedtrain sweep --preset NAME`` (``make results``) computes: per dataset, the scale of its figures
#: (:data:`SCALES`), and the theory figure's grid (:data:`THEORY_GRIDS`).  ``"paper"`` is the committed store
#: the book reads: every dataset at paper scale (School, the real data, and the synthetic stand-ins: their
#: rounds, λ, η and ε grids and 5 repeats; about 2 h of CPU for the stand-ins, 1 h for School);
#: ``"paper-all"`` is the same (its earlier name, when ``"paper"`` kept the stand-ins reduced);
#: ``"paper-eta3"`` is ``"paper"`` with the learning rates cut to the middle three (the first part of
#: ``"paper"`` that a computation finishes, :data:`LR_COMPUTE_ORDER`); ``"paper-school"`` is School at paper
#: scale with the stand-ins at the reduced grid with 5 repeats (an hour of CPU); ``"reduced"`` is the quick grid.
RESULTS_PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"datasets": {"school": "paper", "vehicle-standin": "paper", "gleam-standin": "paper"},
              "theory": "full"},
    "paper-all": {"datasets": {"school": "paper", "vehicle-standin": "paper", "gleam-standin": "paper"},
                  "theory": "full"},
    "paper-eta3": {"datasets": {"school": "paper-eta3", "vehicle-standin": "paper-eta3", "gleam-standin": "paper-eta3"},
                   "theory": "full"},
    "paper-school": {"datasets": {"school": "paper", "vehicle-standin": "reduced-5", "gleam-standin": "reduced-5"},
                     "theory": "full"},
    "reduced": {"datasets": {"school": "reduced", "vehicle-standin": "reduced", "gleam-standin": "reduced"},
                "theory": "reduced"},
}
#: The figures of each dataset in the empirical chapters (what a preset computes for it).
DATASET_FIGURES = {"school": ("fig2", "fig5", "fig3", "ifca1"), "vehicle-standin": ("fig3", "fig4"),
                   "gleam-standin": ("fig3",)}


def _pick(value: Any, full: bool, school: bool) -> Any:
    """Resolve a :data:`BOOK_FIGURES` value that depends on the scale and then on the dataset."""
    if isinstance(value, dict) and set(value) <= {"full", "reduced"}:
        value = value.get("full" if full else "reduced")
    if isinstance(value, dict) and set(value) <= {"school", "standin"}:
        value = value.get("school" if school else "standin")
    return value


def _scale(scale: str | None, full: bool | None) -> str:
    if scale is not None:
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {', '.join(map(repr, SCALES))} (got {scale!r})")
        return scale
    if full is None:
        full = full_scale()
    return "paper" if full else "reduced"


def _reduced(dataset: str) -> dict:
    school = dataset.startswith("school")
    return REDUCED["school" if school else dataset] if (school or dataset in REDUCED) else REDUCED["vehicle-standin"]


def grid_note(dataset: str, *, full: bool | None = None, scale: str | None = None) -> str:
    """Caption text naming the grid a figure shows: the paper scale, or the reduced grid's rounds, learning
    rate and number of repeats.  ``scale`` is one of :data:`SCALES` (default from ``full``, itself defaulting to
    :func:`~fedtrain.book_scale.full_scale`)."""
    scale = _scale(scale, full)
    if SCALES[scale]["grid"] == "full":
        lrs = SCALES[scale].get("lrs")
        reps = SCALES[scale]["repeats"]
        if lrs:
            return (f"paper-scale grid with η ∈ {{{', '.join(f'{v:g}' for v in lrs)}}} ({len(lrs)} of the paper's "
                    f"{len(FULL_GRID['lrs'])}), {reps} repeats")
        return f"paper-scale grid (the paper's rounds, λ, η and ε grids), {reps} repeats"
    if dataset not in REDUCED:
        raise ValueError(f"dataset must be one of {sorted(REDUCED)}, got {dataset!r}")
    r = REDUCED[dataset]
    reps = SCALES[scale]["repeats"] or r["repeats"]
    return f"reduced grid: {r['rounds']} rounds, η={r['lr']}, {reps} repeats"


def book_grid(figure: str, dataset: str, *, full: bool | None = None, scale: str | None = None) -> list:
    """The configurations behind one figure of the empirical chapters (:data:`BOOK_FIGURES`).

    ``figure`` is ``"fig2"`` (local vs FedAvg vs finetuning, learning curves), ``"fig3"`` (privacy-utility
    of all methods), ``"fig4"`` (privacy overhead: IFCA selecting every round, Ditto's extra pass), ``"fig5"``
    (MR-MTL against λ) or ``"ifca1"`` (IFCA with one cluster).  ``scale`` is one of :data:`SCALES`:
    ``"paper"`` (App. C.4: the paper's rounds, batch, clip, δ, λ grid, η grid, ε grid, 5 repeats),
    ``"reduced"`` (fewer rounds, one η, fewer ε and λ, 2 repeats) or ``"reduced-5"`` (reduced with 5
    repeats); the default is ``"paper"`` if ``full`` (default :func:`~fedtrain.book_scale.full_scale`) else ``"reduced"``.  Every
    configuration is repeated as the paper does (:func:`fedtrain.sweep.repeat_configs`: repeat r re-splits
    the silos with split seed ``1000 r`` and trains with seed ``1000 r``).  Figures share runs where their
    settings coincide, so a results store computes them once.
    """
    if figure not in BOOK_FIGURES:
        raise ValueError(f"figure must be one of {', '.join(BOOK_FIGURES)} (got {figure!r})")
    spec = BOOK_FIGURES[figure]
    scale = _scale(scale, full)
    full = SCALES[scale]["grid"] == "full"
    school = dataset.startswith("school")
    family = dataset.split("-")[0]
    if full:
        repeats, lrs, rounds = FULL_GRID["repeats"], SCALES[scale].get("lrs", FULL_GRID["lrs"]), None
    else:
        red = _reduced(dataset)
        repeats, lrs, rounds = red["repeats"], (red["lr"],), red["rounds"]
    repeats = SCALES[scale]["repeats"] or repeats
    eps = _pick(spec["eps"], full, school)
    if eps == "paper":
        eps = FULL_EPS[family]
    elif eps == "reduced":
        eps = REDUCED_EPS.get(dataset, (0.5, 2.0, inf))
    lrs = _pick(spec.get("lr", {}), full, school) or lrs
    runs = _pick(spec["runs"], full, school)
    if runs == "all":
        runs = spec["all"]
    base: dict[str, Any] = dict(dataset=dataset, eval_every=FULL_GRID["eval_every" if full else "reduced_eval_every"])
    if rounds is not None:
        base["rounds"] = rounds
    configs = []
    for block in runs:
        lams = _pick(block.get("lam", (0.0,)), full, school)
        lams = LAMBDA_GRID if lams == "paper" else lams
        block_eps = _pick(block.get("eps", {}), full, school) or eps  # a block may keep only some of the ε levels
        for m in block["methods"]:
            kw = {**paper_defaults(dataset, m), **base, **block.get("options", {}), "method": m}
            grid = expand_grid(kw, eps=list(block_eps), lam=list(lams) if method_spec(m).uses_lambda else [0.0],
                               lr=list(lrs), seed=[0])
            configs.extend(rc for c in grid for rc in repeat_configs(c, repeats))
    return configs


def theory_grid(grid: str | None = None) -> dict[str, Any]:
    """Keyword arguments of :func:`fedtrain.sweep.gaussian_lambda_sweep` for the theory-meets-training figure
    (:data:`THEORY_SETUP`, :data:`THEORY_GRIDS`): ``grid`` is ``"full"`` or ``"reduced"`` (default: ``"full"``
    if :func:`~fedtrain.book_scale.full_scale` else ``"reduced"``).  λ = 0 (local training) comes first."""
    import numpy as np

    grid = grid or ("full" if full_scale() else "reduced")
    if grid not in THEORY_GRIDS:
        raise ValueError(f"grid must be one of {', '.join(map(repr, THEORY_GRIDS))} (got {grid!r})")
    g = THEORY_GRIDS[grid]
    lams = np.geomspace(*g["lams"][1:3], int(g["lams"][3])) if g["lams"][0] == "geomspace" else np.array(g["lams"])
    return dict(THEORY_SETUP, lams=np.concatenate([[0.0], lams]), data_seeds=tuple(range(g["datasets"])))
