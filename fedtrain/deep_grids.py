"""The deep chapter's grids (book/deep_models.ipynb; the MR-MTL paper's Fig. 6 and Fig. 3(d), App. C.1, C.4).

* :data:`DEEP_FIGURES` (:func:`deep_grid`, :func:`deep_grid_note`): the runs behind each figure, at two scales;
* :data:`REAL_IMAGE_GRIDS`: the grids on real Fashion-MNIST, computed in the background and committed as they grow
  (``fedtrain.book_results.pack_grid``): the clipping-bound grids at the paper's MNIST clip c = 1, and the
  noise-bound grids at c = 8, each a tuning grid on a validation split (``*-tune``) and the grid it defines
  (``*-tuned``: :func:`tuned_settings`), and the tuned grid's step controls (``*-steps``: :func:`step_controls`);
* :func:`method_family`: the curve a run belongs to (IFCA → Local is IFCA-warm-started MR-MTL at λ = 0).
"""
from __future__ import annotations

import math
from typing import Any

from fedtrain.book_scale import full_scale
from fedtrain.config import paper_defaults
from fedtrain.data.cifar_hetero import CIFAR10_TRAIN_PER_CLASS, PAPER_NUM_SILOS
from fedtrain.paper import LAMBDA_GRID, LR_GRID
from fedtrain.regime import clip_only_control
from fedtrain.sweep import expand_grid

__all__ = ["DEEP_FIGURES", "REAL_IMAGE_GRIDS", "deep_grid", "deep_grid_note", "method_family", "step_controls",
           "tuned_settings"]

inf = math.inf


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
# ``*-tune``: every configuration at each η of the paper's η grid from 0.01 to its top, 0.3, under DP, and at 0.1 and
# 0.3 without DP (where nothing is clipped), one seed, mask 0 and the middle private ε, scored on a validation split
# (``validation``: 20 % of each silo's training images held out, the test images not read,
# :func:`fedtrain.data.split.hold_out_validation`).  The private bracket first was {0.01, 0.03}, around the η the
# probes chose for Local (``benchmarks/regime_probes.json``, c = 8, test set: 0.587 at η = 0.03, 0.472 at 0.1), and
# every method's best private configuration chose its top, 0.03.  Run once more at 0.1 on the validation split, Local
# stayed below (Fig. 6: 0.400 against 0.576) but the shared models did not (Fig. 6: FedAvg 0.521 against 0.398, IFCA
# 0.695 against 0.623; Fig. 3(d), whose silos hold four times the images and so take far less noise at the same ε:
# every method), so the bracket spans the paper's grid up to its top for every method of both figures.  On Fig. 3(d)
# FedAvg, Finetune and IFCA chose that top, 0.3, under DP, so their private runs also run at 1 (``extra_lrs``: method →
# η beyond the paper's grid, private runs only), to see whether the optimum lies beyond the paper's grid: it does not.
# ``*-tuned``: the figure's grid, each configuration at the η its ``tuned_by`` grid scored best for its method and
# λ (:func:`tuned_settings`; ties to the smaller η), on the full training images and the test images, with a
# clip-only control (ε = ``clip_only_eps``: the same clipping, negligible noise) of each method's best private
# configuration on the validation split, at every mask ratio and seed.  IFCA's 10 private selections of Fig. 6 are
# spread every 2 rounds (rounds 0, 2, ..., 18: the cluster models train between them; their count, and so their
# ε, is unchanged).  Fig. 3(d) uses the paper's c = 8 and δ = 1e-4 (App. C.4).
_NOISE_BOUND = dict(model="convnet", clip=8.0, lrs={"private": LR_GRID[LR_GRID.index(0.01):], "nonprivate": LR_GRID[-2:]})
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
                               extra_lrs={m: (1.0,) for m in ("fedavg", "finetune", "ifca")},
                               dataset_options={"validation": 0.2}, file="hetero-fashion-tune"),
    "fig3d-fashion-tuned": dict(_NOISE_BOUND, dataset="hetero-fashion", rounds=10, seeds=(0, 1),
                                eps=(1.0, 2.0, 4.0, 8.0, inf), delta=1e-4, lams=(0.01, 0.1, 1.0), select_frac=0.1,
                                dataset_options={}, tuned_by="fig3d-fashion-tune", clip_only_eps=1e6,
                                file="hetero-fashion-tuned"),
})
# ``*-steps``: the step controls of a tuned grid.  A tuned grid's run without DP takes the η tuned without DP, usually
# larger than the private η, so "no DP → clip only" changes two things at once: the clipping and the step size.  A step
# control is the tuned grid's run without DP of a clip-only control's method and λ, at the control's η (same mask ratio
# and seed), wherever the two η differ (:func:`step_controls`): "no DP at the private η → clip only" is then the
# clipping alone, and "no DP at its own η → no DP at the private η" what the smaller step costs
# (``fedtrain.fig6_checks.grid_costs``).  A grid of its own, so that the tuned grid and its committed rows stay as
# they are.
for _tuned, _file in (("fig6-fashion-tuned", "rotated-masked-fashion-steps"),
                      ("fig3d-fashion-tuned", "hetero-fashion-steps")):
    REAL_IMAGE_GRIDS[_tuned.replace("-tuned", "-steps")] = dict(
        {k: v for k, v in REAL_IMAGE_GRIDS[_tuned].items() if k != "clip_only_eps"}, eps=(inf,), steps_of=_tuned,
        file=_file)
DEEP_FIGURES.update({name: {"full": g, "reduced": g} for name, g in REAL_IMAGE_GRIDS.items()})


def method_family(config) -> str:
    """The curve a deep-chapter run belongs to: its method, except that IFCA-warm-started MR-MTL at λ = 0 is
    IFCA → Local (``"ifca-local"``)."""
    return "ifca-local" if config.method == "ifca-mrmtl" and config.lam == 0 else config.method


def control_key(config) -> tuple:
    """What a control run shares with the runs it controls: method family (:func:`method_family`), λ, seed and
    data options (mask ratio), but not η or ε."""
    return (method_family(config), float(config.lam), int(config.seed),
            repr(sorted(config.dataset_options.items())))


def step_controls(configs, clip_only_eps: float) -> list:
    """The step controls of a tuned grid's ``configs`` (with clip-only controls at ε = ``clip_only_eps``): for each
    control, the grid's run without DP of the same method family, λ, data options and seed, at the control's η, where
    that run's own η differs (none where the two η agree: the grid's run is its own step control).  In the order of
    the controls.  ``ValueError`` if a control has no run without DP in ``configs``."""
    nodp = {control_key(c): c for c in configs if not isinstance(c.eps, tuple) and math.isinf(c.eps)}
    out = []
    for c in configs:
        if isinstance(c.eps, tuple) or c.eps != clip_only_eps:
            continue
        base = nodp.get(control_key(c))
        if base is None:
            raise ValueError(f"the clip-only control {c.method} lam={c.lam} seed={c.seed} {c.dataset_options} has no "
                             f"run without DP in configs to take its η")
        if base.lr != c.lr:
            out.append(base.replace(lr=c.lr))
    return out


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
        elif "steps_of" in g:
            eta = (f"clip C={g['clip']:g}, without DP at each clip-only control's η (the step controls of "
                   f"{g['steps_of']})")
        elif "tuned_by" in g:
            eta = f"clip C={g['clip']:g}, η tuned per method on a validation split"
        else:
            beyond: dict = {}
            for m, more in g.get("extra_lrs", {}).items():
                beyond.setdefault(tuple(more), []).append(m)
            extra = "".join(f" (also {', '.join(f'{v:g}' for v in more)} for {', '.join(ms)})"
                            for more, ms in beyond.items())
            eta = (f"clip C={g['clip']:g}, η ∈ {{{', '.join(f'{v:g}' for v in g['lrs']['private'])}}}{extra} with DP "
                   f"and {{{', '.join(f'{v:g}' for v in g['lrs']['nonprivate'])}}} without, scored on "
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
    if "steps_of" in g:  # a tuned grid's step controls
        return step_controls(deep_grid(g["steps_of"], full=full, tuning=tuning),
                             REAL_IMAGE_GRIDS[g["steps_of"]]["clip_only_eps"])
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
                    if math.isfinite(eps):  # beyond the paper's grid, where a private choice sat at its top
                        etas = tuple(etas) + tuple(g.get("extra_lrs", {}).get(method, ()))
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
                    configs.append(clip_only_control(c, g["clip_only_eps"]).replace(lr=lr))
    return configs
