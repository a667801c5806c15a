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
* :data:`DEEP_FIGURES` (:func:`deep_grid`): the deep chapter's grids, among them the real-image grids on
  Fashion-MNIST (:data:`REAL_IMAGE_GRIDS`);
* FedHDP's grids (privacy unit: a client), defined in :mod:`fedtrain.client_presets` and re-exported here:
  :data:`~fedtrain.client_presets.FEDHDP_GRIDS` (:func:`~fedtrain.client_presets.fedhdp_grid`): its claims on real
  images; :data:`~fedtrain.client_presets.FEDHDP_SCALES` (:func:`~fedtrain.client_presets.fedhdp_scale_configs`): its
  claims on the digit stand-in; :data:`~fedtrain.client_presets.FEDHDP_COMMITTED`
  (:func:`~fedtrain.client_presets.fedhdp_committed_configs`): FedHDP's grids in the committed store.
"""
from __future__ import annotations

import math
import os
from typing import Any
from fedtrain.client_presets import (FEDHDP_COMMITTED, FEDHDP_GRIDS, FEDHDP_SCALES, fedhdp_committed_configs,
                                     fedhdp_grid, fedhdp_noise_for_epsilon, fedhdp_scale_configs)
from fedtrain.data.cifar_hetero import CIFAR10_TRAIN_PER_CLASS, PAPER_NUM_SILOS
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

from fedtrain.config import paper_defaults
from fedtrain.paper import LAMBDA_GRID, LR_GRID, PAPER_DEFAULTS, STANDIN_PRESETS

inf = math.inf


# --------------------------------------------------------------------------------------------------
# the book's grids (scales) and the results-store presets
# --------------------------------------------------------------------------------------------------
FULL_ENV = "FEDBOOK_FULL"


def full_scale() -> bool:
    """Whether ``FEDBOOK_FULL=1`` is set (``make book FULL=1``).  The empirical chapters read the committed
    results store (:func:`fedtrain.book_results.committed_store`) at whatever scale it was computed; this flag only
    selects the default ``scale`` of :func:`book_grid` (``"paper"`` instead of ``"reduced"``)."""
    return os.environ.get(FULL_ENV, "0").strip() == "1"


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
    :func:`full_scale`)."""
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
    repeats); the default is ``"paper"`` if ``full`` (default :func:`full_scale`) else ``"reduced"``.  Every
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
    if :func:`full_scale` else ``"reduced"``).  λ = 0 (local training) comes first."""
    import numpy as np

    grid = grid or ("full" if full_scale() else "reduced")
    if grid not in THEORY_GRIDS:
        raise ValueError(f"grid must be one of {', '.join(map(repr, THEORY_GRIDS))} (got {grid!r})")
    g = THEORY_GRIDS[grid]
    lams = np.geomspace(*g["lams"][1:3], int(g["lams"][3])) if g["lams"][0] == "geomspace" else np.array(g["lams"])
    return dict(THEORY_SETUP, lams=np.concatenate([[0.0], lams]), data_seeds=tuple(range(g["datasets"])))


# --------------------------------------------------------------------------------------------------
# the deep chapter (book/deep_models.ipynb; MR-MTL paper Fig. 6 and Fig. 3(d))
# --------------------------------------------------------------------------------------------------
#: The runs behind the deep chapter's figures, at two scales.
#:
#: ``full`` is the paper's experiment (App. C.1, C.4): the ConvNet on rotated & masked MNIST (40 silos of
#: 1,500 images, 4 rotation groups) and on heterogeneous CIFAR-10 (needs the MNIST / CIFAR-10 files; the
#: stand-ins otherwise), T = 200, B = 100, the paper's λ grid, 5 seeds; IFCA selects in the first 5 % of the
#: rounds (Fig. 6's "IFCA 5 %") or 10 % (Fig. 3).  Fig. 6's mask ratios and ε are not stated in the paper:
#: ``mask_ratios`` and ``eps`` here are our choice.
#:
#: ``reduced`` runs in seconds on a CPU for the book: the **multiclass linear (softmax) model** instead of the
#: ConvNet (its closed-form per-example gradients make a run far cheaper than a ConvNet run, of which Fig. 6 would
#: need 120: timings in ``benchmarks/README.md``; and at 76 images per silo the ConvNet learns far less than the
#: linear model under DP, which the ``fig6-convnet`` runs show in the chapter), on the bundled 8×8 scikit-learn
#: digits (20 silos of 76 + 13 images, 4 rotation groups) and a small heterogeneous CIFAR-10 stand-in (30 silos × 5
#: classes, 60 training images per class); 60 / 20 rounds, 2 seeds, two λ values; IFCA selects in the first 10 % of
#: the rounds (6 selections: with 5 % of 60 rounds it would select 3 times).  MR-MTL's proximal term enters after
#: the noise on the CIFAR stand-in (``prox_mode="post-noise"``, Sec. 5's update; the clip-together route of the
#: linear model is slow on 3,073 × 10 parameters).
DEEP_FIGURES: dict[str, dict[str, Any]] = {
    "fig6": {
        "full": dict(dataset="rotated-masked-mnist", model="convnet", rounds=200, lr=0.03, seeds=(0, 1, 2, 3, 4),
                     eps=(4.0, inf), mask_ratios=(0.0, 0.25, 0.5), lams="paper", select_frac=0.05,
                     dataset_options={}),
        "reduced": dict(dataset="rotated-masked-digits", model="linear", rounds=60, lr=0.3, seeds=(0, 1),
                        eps=(8.0, inf), mask_ratios=(0.0, 0.25, 0.5), lams=(0.003, 0.03, 0.3), select_frac=0.1,
                        dataset_options={"image_size": 8}),
    },
    # the paper's ConvNet on the reduced Fig. 6 data (no masks, one seed): the check behind the reduced scale's
    # choice of the linear model; the same at both scales (at paper scale Fig. 6 itself runs the ConvNet)
    "fig6-convnet": {scale: dict(dataset="rotated-masked-digits", model="convnet", rounds=40, lr=0.3, seeds=(0,),
                                 eps=(8.0, inf), mask_ratios=(0.0,), lams=(0.03,), select_frac=0.1,
                                 dataset_options={"image_size": 8}) for scale in ("full", "reduced")},
    "fig3d": {
        "full": dict(dataset="cifar10-hetero-standin", model="convnet", rounds=200, lr=0.03, seeds=(0, 1, 2, 3, 4),
                     eps=(1.0, 2.0, 4.0, 8.0, inf), lams="paper", select_frac=0.1, dataset_options={}),
        "reduced": dict(dataset="cifar10-hetero-standin", model="linear", rounds=20, lr=0.01, seeds=(0, 1),
                        eps=(2.0, 8.0, inf), lams=(1.0, 10.0), select_frac=0.1, prox_mode="post-noise",
                        dataset_options={"samples_per_class": 60, "test_samples_per_class": 40}),
    },
}


# The real-image grids (Fashion-MNIST, offline: Debian's dataset-fashion-mnist).  One scale each (the same entry
# under "full" and "reduced"): they are computed in the background into a work store, never by the book build.
#
# ``fig6-fashion``: Fig. 6 under DP on rotated-masked-fashion with the paper's ConvNet and settings (B = 100,
# c = 1, δ = 1e-7, 1 local epoch a round, 4 clusters), IFCA selecting in the first 10 rounds (the paper's count:
# 5 % of its 200 rounds; 5 % of 40 rounds is 2 selections, and one selection from the random initial centres
# left the clusters random in a probe: select_frac = 0.25), 40 silos
# in 4 rotation groups with 500 training images each (a third of the paper's 1,500) and 250 test images,
# T = 40 rounds, η = 0.1, ε ∈ {4, ∞}, mask ratios 0, 0.25, 0.5, 2 training seeds (one split), λ ∈ {0.01, 0.1, 1}
# (Local is its λ = 0 end).  The λ grid: first 0.1 ... 10, then, as on the first seed without masks MR-MTL's
# accuracy fell monotonically in λ (ε = 4: 0.527, 0.522, 0.498, 0.419, 0.177 against Local's 0.532; without DP:
# 0.716, 0.689, 0.649, 0.587 against 0.735), two steps down to 0.01 ... 1 (λ = 3 and 10, near FedAvg's end
# ηλ = 1, dropped); then, as the runs took 250-400 s of a core each (not the ~160 s the ConvNet's throughput
# predicts: evaluation, IFCA's selection rounds and a shared machine), one point a decade, to keep the grid near
# 8 h of one core.  The runs at λ = 0.03 and 0.3 (and 3, 10) stay in the work store, outside the grid.  With 10
# selection rounds IFCA recovered the rotation groups in a probe (ε = 4, no mask: 0° and 180° merged into one
# cluster, 90° and 270° each their own).  ``extra_lams`` (method → (mask ratio, ε, λ values) cells): where a best λ
# sat at the grid's edge and beat the limit beyond it, the grid reaches further in that cell only.  On both seeds the
# IFCA-warm-started MR-MTL at mask 0, ε = 4 was best at the top, λ = 1 (0.539, against 0.530 at λ = 0.1), and above its
# λ → ∞ end, IFCA (0.519), so it also runs at λ = 3 and 10 there (4 runs; λ = 10 is ηλ = 1, the end of the paper's
# λ grid at this η).  Cost: 10 runs a cell (Local, FedAvg, IFCA, MR-MTL at 3 λ,
# IFCA-warm-started MR-MTL at λ = 0 and the 3 λ) x 12 cells = 120 runs of 40 x 40 x 500 = 800,000 DP-SGD
# examples: 96 M examples, about 8 h of one core at the ~250 s a run measured.  How the scale was chosen:
# benchmarks/README.md.
# ``fig3d-fashion``: Fig. 3(d)'s privacy-utility structure on hetero-fashion (30 silos x 5 classes, ~2,000
# training images each, the paper's CIFAR-10 silos hold 1,515-1,839), the ConvNet, η = 0.1, ε ∈ {1, 2, 4, 8, ∞},
# 2 seeds, T = 10 rounds: 200 DP-SGD steps per silo (2,000 / B = 100 x 10), as many as fig6-fashion's silos take
# (500 / 100 x 40).  Cost: 7 runs (Local, FedAvg, Finetune, IFCA, MR-MTL at 3 λ) x 5 ε x 2 seeds = 70 runs of
# 30 x 2,000 x 10 = 600,000 examples: 42 M examples, about 2.3 h of one idle core at ~5,000 examples/s.
REAL_IMAGE_GRIDS: dict[str, dict[str, Any]] = {
    "fig6-fashion": dict(dataset="rotated-masked-fashion", model="convnet", rounds=40, lr=0.1, seeds=(0, 1),
                         eps=(4.0, inf), mask_ratios=(0.0, 0.25, 0.5), lams=(0.01, 0.1, 1.0),
                         extra_lams={"ifca-mrmtl": ((0.0, 4.0, (3.0, 10.0)),)},
                         select_frac=0.25, eval_every=10, dataset_options={"train_per_silo": 500}),
    "fig3d-fashion": dict(dataset="hetero-fashion", model="convnet", rounds=10, lr=0.1, seeds=(0, 1),
                          eps=(1.0, 2.0, 4.0, 8.0, inf), lams=(0.01, 0.1, 1.0), select_frac=0.1, dataset_options={}),
}
# The noise-bound regime (``fedtrain.regime``, ``benchmarks/regime_probes.json``): c = 8, where DP noise, not
# clipping, costs Local most of what DP costs it at 500 images a silo, and η tuned per method.  Each figure comes as
# two grids:
#
# ``*-tune``: every configuration at two η (private runs η ∈ {0.01, 0.03}, the probes' bracket of the chosen 0.03
# at c = 8; runs without DP η ∈ {0.1, 0.3}, where nothing is clipped), one seed, mask 0 and the middle private ε,
# scored on a validation split (``validation``: 20 % of each silo's training images held out, the test images not
# read, :func:`fedtrain.data.split.hold_out_validation`).
# ``*-tuned``: the figure's grid, each configuration at the η its ``tuned_by`` grid scored best for its method and
# λ (:func:`tuned_settings`; ties to the smaller η), on the full training images and the test images, with a
# clip-only control (ε = ``clip_only_eps``: the same clipping, negligible noise) of each method's best private
# configuration on the validation split, at every mask ratio and seed.  IFCA's 10 private selections of Fig. 6 are
# spread every 2 rounds (rounds 0, 2, ..., 18: the cluster models train between them; their count, and so their
# ε, is unchanged).  Fig. 3(d) uses the paper's c = 8 and δ = 1e-4 (App. C.4).
_NOISE_BOUND = dict(model="convnet", clip=8.0, lrs={"private": (0.01, 0.03), "nonprivate": (0.1, 0.3)})
REAL_IMAGE_GRIDS.update({
    "fig6-fashion-tune": dict(_NOISE_BOUND, dataset="rotated-masked-fashion", rounds=40, seeds=(0,), eps=(4.0, inf),
                              mask_ratios=(0.0,), lams=(0.01, 0.1, 1.0), select_frac=0.25, select_every=2,
                              eval_every=10, dataset_options={"train_per_silo": 500, "validation": 0.2},
                              file="rotated-masked-fashion-tune"),
    "fig6-fashion-tuned": dict(_NOISE_BOUND, dataset="rotated-masked-fashion", rounds=40, seeds=(0, 1),
                               eps=(4.0, inf), mask_ratios=(0.0, 0.25, 0.5), lams=(0.01, 0.1, 1.0), select_frac=0.25,
                               select_every=2, eval_every=10, dataset_options={"train_per_silo": 500},
                               tuned_by="fig6-fashion-tune", clip_only_eps=1e6, file="rotated-masked-fashion-tuned"),
    "fig3d-fashion-tune": dict(_NOISE_BOUND, dataset="hetero-fashion", rounds=10, seeds=(0,), eps=(4.0, inf),
                               delta=1e-4, lams=(0.01, 0.1, 1.0), select_frac=0.1,
                               dataset_options={"validation": 0.2}, file="hetero-fashion-tune"),
    "fig3d-fashion-tuned": dict(_NOISE_BOUND, dataset="hetero-fashion", rounds=10, seeds=(0, 1),
                                eps=(1.0, 2.0, 4.0, 8.0, inf), delta=1e-4, lams=(0.01, 0.1, 1.0), select_frac=0.1,
                                dataset_options={}, tuned_by="fig3d-fashion-tune", clip_only_eps=1e6,
                                file="hetero-fashion-tuned"),
})
DEEP_FIGURES.update({name: {"full": g, "reduced": g} for name, g in REAL_IMAGE_GRIDS.items()})


def method_family(config) -> str:
    """The curve a deep-chapter run belongs to: its method, except that IFCA-warm-started MR-MTL at λ = 0 is
    IFCA → Local (``"ifca-local"``)."""
    return "ifca-local" if config.method == "ifca-mrmtl" and config.lam == 0 else config.method


def tuned_settings(rows) -> tuple[dict, dict]:
    """What a tuning grid (``*-tune`` of :data:`REAL_IMAGE_GRIDS`) chose, from its rows (objects with ``config`` and
    ``test_metric``, here the validation accuracy): ``(lrs, best)`` with ``lrs[(family, λ, private)]`` the η of
    the best mean validation accuracy over the grid's seeds (ties to the smaller η) and ``best[family]`` the
    ``(λ, η)`` of the family's best private configuration (ties to the smaller λ), the one its clip-only control
    repeats.  Raises ``ValueError`` if a row lacks a finite metric."""
    scores: dict = {}
    for r in rows:
        c = r.config
        m = r.test_metric
        if m is None or not math.isfinite(m):
            raise ValueError(f"tuning row {c.method} lam={c.lam} lr={c.lr} eps={c.eps} has no finite metric ({m!r})")
        scores.setdefault((method_family(c), float(c.lam), math.isfinite(c.eps), float(c.lr)), []).append(float(m))
    mean = {k: sum(v) / len(v) for k, v in scores.items()}
    lrs: dict = {}
    for (fam, lam, private, lr), m in sorted(mean.items()):
        cur = lrs.get((fam, lam, private))
        if cur is None or m > mean[(fam, lam, private, cur)]:
            lrs[(fam, lam, private)] = lr
    best: dict = {}
    for (fam, lam, private), lr in sorted(lrs.items()):
        if private and (fam not in best or mean[(fam, lam, True, lr)] > best[fam][2]):
            best[fam] = (lam, lr, mean[(fam, lam, True, lr)])
    return lrs, {fam: (lam, lr) for fam, (lam, lr, _) in best.items()}
    return lrs, best


def deep_grid_note(figure: str, *, full: bool | None = None) -> str:
    """Caption text naming the scale of a deep-chapter figure (model, rounds, η, seeds)."""
    if figure not in DEEP_FIGURES:
        raise ValueError(f"figure must be one of {', '.join(DEEP_FIGURES)} (got {figure!r})")
    full = full_scale() if full is None else bool(full)
    g = DEEP_FIGURES[figure]["full" if full else "reduced"]
    if figure in REAL_IMAGE_GRIDS:
        per = g["dataset_options"].get("train_per_silo")
        if "lrs" not in g:
            eta = f"η={g['lr']}"
        elif "tuned_by" in g:
            eta = f"clip C={g['clip']:g}, η tuned per method on a validation split"
        else:
            eta = (f"clip C={g['clip']:g}, η ∈ {{{', '.join(f'{v:g}' for v in g['lrs']['private'])}}} with DP and "
                   f"{{{', '.join(f'{v:g}' for v in g['lrs']['nonprivate'])}}} without, scored on "
                   f"{g['dataset_options']['validation']:.0%} of the training images held out")
        return (f"{g['dataset']} (real Fashion-MNIST){f', {per} training images per silo' if per else ''}: "
                f"{g['model']} model, R={g['rounds']} rounds, {eta}, {len(g['seeds'])} seed"
                f"{'s' if len(g['seeds']) > 1 else ''}")
    scale = "paper scale" if full else "reduced scale"
    note = f"{scale}: {g['model']} model, T={g['rounds']} rounds, η={g['lr']}, {len(g['seeds'])} seeds"
    if g["dataset"] == "cifar10-hetero-standin":
        per_class = g["dataset_options"].get("samples_per_class", CIFAR10_TRAIN_PER_CLASS)
        size = f"~{per_class * 10 // PAPER_NUM_SILOS:,} images/silo"
        note += (f"; CIFAR-10 stand-in, paper size ({size})" if per_class >= CIFAR10_TRAIN_PER_CLASS else
                 f"; CIFAR-10 stand-in, toy size ({size}; paper ~1,670)")
    return note


def deep_grid(figure: str, *, full: bool | None = None, tuning=None) -> list:
    """The configurations behind one figure of the deep chapter (:data:`DEEP_FIGURES`).

    ``"fig6"``: Local, FedAvg, IFCA (clusters frozen after the selection rounds, then FedAvg within each
    cluster), MR-MTL, and the IFCA-warm-started variants (``ifca-mrmtl``: λ = 0 is IFCA-warm-started *local*
    training, λ > 0 IFCA-warm-started MR-MTL, Algorithm A2), for every mask ratio (``dataset_options``
    ``mask_ratio``) and ε; ``"fig6-convnet"`` the same methods (without IFCA → Local) with the paper's ConvNet
    on the reduced Fig. 6 data without masks, one seed.  ``"fig3d"``: Local, FedAvg, Finetune, MR-MTL and IFCA
    against ε.  Batch, clip, δ and IFCA's cluster count come from :func:`paper_defaults` of the dataset
    (App. C.4); the rest from the scale's entry.  ``full`` defaults to :func:`full_scale`.
    """
    if figure not in DEEP_FIGURES:
        raise ValueError(f"figure must be one of {', '.join(DEEP_FIGURES)} (got {figure!r})")
    full = full_scale() if full is None else bool(full)
    g = DEEP_FIGURES[figure]["full" if full else "reduced"]
    lams = LAMBDA_GRID if g["lams"] == "paper" else tuple(g["lams"])
    reach = g.get("extra_lams", {})  # method -> ((mask ratio, ε, λ values), ...): cells whose λ grid reaches further
    if figure.startswith("fig6"):
        warm = (0.0,) + lams if figure != "fig6-convnet" else lams  # λ = 0: IFCA-warm-started local training
        runs = [("local", (0.0,), {}), ("fedavg", (0.0,), {}), ("ifca", (0.0,), {"select_frac": g["select_frac"]}),
                ("mrmtl", lams, {}), ("ifca-mrmtl", warm, {"select_frac": g["select_frac"]})]
        options = [dict(g["dataset_options"], mask_ratio=r) for r in g["mask_ratios"]]
    else:
        prox = {"prox_mode": g["prox_mode"]} if "prox_mode" in g else {}
        runs = [("local", (0.0,), {}), ("fedavg", (0.0,), {}), ("finetune", (0.0,), {}), ("mrmtl", lams, prox),
                ("ifca", (0.0,), {"select_frac": g["select_frac"]})]
        options = [dict(g["dataset_options"])]
    if "tuned_by" in g and tuning is None:
        raise ValueError(f"grid {figure!r} takes its η from grid {g['tuned_by']!r}: pass tuning= its rows "
                         f"(fedtrain.book_results.grid_configs reads them from the committed store)")
    lrs, best = tuned_settings(tuning) if "tuned_by" in g else (None, None)
    configs = []
    for opts in options:
        for method, lam_values, extra in runs:
            extra = dict(extra, **({"select_every": g["select_every"]}
                                   if "select_every" in g and method in ("ifca", "ifca-mrmtl") else {}))
            kw = {**paper_defaults(g["dataset"], method), **extra, "dataset": g["dataset"], "dataset_options": opts,
                  "method": method, "model": g["model"], "rounds": g["rounds"],
                  **{k: g[k] for k in ("eval_every", "clip", "delta") if k in g}}
            if "lrs" in g and lrs is None:  # a tuning grid: every configuration at each η of its privacy's grid
                for eps in g["eps"]:
                    etas = g["lrs"]["private" if math.isfinite(eps) else "nonprivate"]
                    configs.extend(expand_grid(kw, eps=[eps], lam=list(lam_values), lr=list(etas),
                                               seed=list(g["seeds"])))
            elif lrs is not None:  # a tuned grid: each configuration at its tuned η
                for eps in g["eps"]:
                    for lam in lam_values:
                        probe = expand_grid(kw, eps=[eps], lam=[lam], lr=[1.0], seed=[0])[0]
                        lr = lrs[(method_family(probe), float(lam), math.isfinite(eps))]
                        configs.extend(expand_grid(kw, eps=[eps], lam=[lam], lr=[lr], seed=list(g["seeds"])))
            else:
                configs.extend(expand_grid(kw, eps=list(g["eps"]), lam=list(lam_values), lr=[g["lr"]],
                                           seed=list(g["seeds"])))
            for ratio, eps, more in reach.get(method, ()):
                if float(opts.get("mask_ratio", 0.0)) == ratio:
                    configs.extend(expand_grid(kw, eps=[eps], lam=list(more), lr=[g["lr"]], seed=list(g["seeds"])))
        if best is not None and "clip_only_eps" in g:  # the clip-only controls of each family's best, per seed
            private = [c for c in configs if c.dataset_options == opts and math.isfinite(c.eps)
                       and c.eps != g["clip_only_eps"]]
            for fam, (lam, lr) in best.items():
                for seed in g["seeds"]:
                    c = next(c for c in private if method_family(c) == fam and c.lam == lam and c.seed == seed)
                    configs.append(c.replace(eps=float(g["clip_only_eps"]), lr=lr))
    return configs
