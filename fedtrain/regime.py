"""Regime probes: does DP noise or clipping limit Local on the real-image Fig. 6 data?

MR-MTL's advantage (the MR-MTL paper, Sec. 4 and Fig. 6) is that averaging the silos' models cancels part of
each silo's DP-SGD *noise*.  A grid run where clipping, not noise, costs most of the accuracy lost to DP cannot
test that claim.  This module measures, for Local (each silo alone, the λ = 0 end of MR-MTL), the decomposition

    no DP  →  clip only  →  private:
    clipping cost = acc(no DP) − acc(clip only),   noise cost = acc(clip only) − acc(private),

at one setting (η, c, training images per silo, mask ratio) from three runs that differ only in ε: ``inf`` (no
clipping, no noise), :data:`CLIP_ONLY_EPS` (the same per-example clipping at ``c``, noise calibrated to ε = 10⁶, i.e.
a negligible noise multiplier) and the private ε (:data:`PRIVATE_EPS`, the one the committed Fig. 6 grid uses).
A setting is *noise-bound* when noise cost ≥ clipping cost (:func:`noise_bound`).

The probes (:func:`probe_phases`) run Local on ``rotated-masked-fashion`` with 8 silos (2 per rotation group:
Local's accuracy is a mean of per-silo accuracies, each silo trained alone, so fewer silos estimate the same mean
with more spread and cost a fifth of the grid's 40), 250 test images each, R = 40 rounds of one local epoch,
B = 100, δ = 1e-7 (the grid's), seed 0.  Phases, most informative first:

- **A.** mask 0, 500 images a silo: η ∈ :data:`LR_PROBES` within the paper's grid (≤ 0.3) × c ∈
  :data:`CLIP_PROBES` at the three controls (the no-DP run depends on η only);
- **B1.** mask 0, the paper's 1,500 images a silo (App. C.1): the first of A's best cells (:func:`best_cells`: the
  best noise-bound one, else the best);
- **C.** mask 0.5, 500 images: the first of A's best cells;
- **B2.** at 1,500 images, the other noise-bound cells of A (the best private accuracy first), then the other best
  cells;
- **C2.** mask 0.5: the other best cells of A and the committed grid's (η = 0.1, c = 1);
- **D.** η beyond the paper's grid (η = 1), to see where it is stable.

Run (background, lowest priority; resumable: one atomic row per run in the store; ``--pack`` writes the committed
summary ``benchmarks/regime_probes.json``)::

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 setsid nohup nice -n 19 .venv/bin/python -m fedtrain.regime \\
        >> fedtrain-results/regime-probes.log 2>&1 &
    .venv/bin/python -m fedtrain.regime --pack benchmarks/regime_probes.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from fedtrain.config import paper_defaults
from fedtrain.results import ResultsStore
from fedtrain.sweep import expand_grid, run_sweep

__all__ = ["CLIP_ONLY_EPS", "PRIVATE_EPS", "LR_PROBES", "CLIP_PROBES", "check_positive_grid",
           "check_clip_only_eps", "CLIP_ONLY_SELECT_EPS", "clip_only_control", "probe_config", "controls",
           "probe_phases", "decompose", "noise_bound",
           "best_cells", "summary_rows", "choose", "PAPER_MAX_LR"]

#: ε of the clip-only control: finite, so the same clipping at ``c`` runs, with a negligible noise multiplier.
CLIP_ONLY_EPS = 1e6
#: The private ε of the committed Fig. 6 grid (``fedtrain.presets.REAL_IMAGE_GRIDS["fig6-fashion"]``).
PRIVATE_EPS = 4.0
#: Learning rates probed: the upper part of the paper's grid (App. C.4: 0.001 ... 0.3) and one step beyond.
LR_PROBES = (0.03, 0.1, 0.3, 1.0)
#: Clipping norms probed: the grid's c = 1, and App. C.4's c = 8 for Het. CIFAR-10, and one between.
CLIP_PROBES = (1.0, 3.0, 8.0)
#: The order phase A visits the (η, c) cells in: the committed grid's (0.1, 1) first, then outwards.
_CELL_ORDER = ((0.1, 1.0), (0.3, 1.0), (0.1, 3.0), (0.3, 3.0), (0.03, 8.0), (0.1, 8.0), (0.3, 8.0), (0.03, 3.0),
               (0.03, 1.0), (1.0, 1.0), (1.0, 3.0), (1.0, 8.0))
DATASET = "rotated-masked-fashion"
PROBE_SILOS = 8
ROUNDS = 40
DEFAULT_STORE = Path("fedtrain-results") / "regime-probes"
DEFAULT_PACK = Path("benchmarks") / "regime_probes.json"


def check_positive_grid(name: str, values: Iterable[Any]) -> tuple[float, ...]:
    """``values`` as a tuple of floats; ``ValueError`` naming ``name`` if it is empty or holds a value that is not a
    finite positive number (an η or clip grid)."""
    try:
        out = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a non-empty list of finite positive numbers (got {values!r})") from None
    if not out:
        raise ValueError(f"{name} must be a non-empty list of finite positive numbers (got an empty grid)")
    bad = [v for v in out if not (math.isfinite(v) and v > 0)]
    if bad:
        raise ValueError(f"{name} must hold finite positive numbers only (got {bad[0]!r})")
    return out


#: ε of each private cluster selection (IFCA's exponential mechanism) in a clip-only control.  At the private run's
#: fraction of ε (``select_eps_frac``, 0.03) a control at ε = 10⁶ would select at ε_sel = 3·10⁴, and its S selections
#: alone would cost zCDP ρ = S·ε_sel²/8 ≈ S·10⁸, far beyond 10⁶: no noise multiplier meets the target.  At ε_sel = 100
#: the selections cost ρ = 1,250 each, and the mechanism already picks the best-scoring cluster: its probabilities
#: weigh a score gap g by e^(ε_sel·g/(2Δ)) with Δ = 1/(n − 1), so g = 0.01 on 400 records is a factor e^200.
CLIP_ONLY_SELECT_EPS = 100.0


def clip_only_control(config: Any, eps: Any = CLIP_ONLY_EPS) -> Any:
    """The clip-only control of private run ``config``: the same run (clipping norm, η, λ, seed, data) at the finite
    ε ``eps`` (:func:`check_clip_only_eps`), whose DP-SGD noise multiplier is negligible.  A run with private
    cluster selections (IFCA and its warm starts, option ``select_eps_frac``) selects at ε_sel =
    :data:`CLIP_ONLY_SELECT_EPS` each (``select_eps_frac = ε_sel / eps``), negligible noise too, so that the target
    ε is attainable.  ``ValueError`` for a run without DP or a bad ``eps``."""
    ce = check_clip_only_eps(eps)
    if not math.isfinite(config.eps):
        raise ValueError(f"config must be a private run (finite eps) to have a clip-only control (got eps={config.eps})")
    control = config.replace(eps=ce)
    if "select_eps_frac" in getattr(config.options, "__dataclass_fields__", {}):
        control = control.replace(select_eps_frac=CLIP_ONLY_SELECT_EPS / ce)
    return control


def check_clip_only_eps(eps: Any) -> float:
    """The clip-only control's ε: finite (an infinite ε turns clipping off too) and ≥ 1e5 (so its noise is
    negligible); ``ValueError`` naming ``clip_only_eps`` otherwise."""
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise ValueError(f"clip_only_eps must be a finite number >= 1e5 (got {eps!r})") from None
    if not math.isfinite(value):
        raise ValueError(f"clip_only_eps must be finite (got {eps!r}): ε = inf turns clipping off as well; "
                         f"use a finite ε >= 1e5")
    if value < 1e5:
        raise ValueError(f"clip_only_eps must be >= 1e5, so that its noise is negligible (got {eps!r})")
    return value


def probe_config(*, lr: float, clip: float, eps: float, train_per_silo: int = 500, mask_ratio: float = 0.0,
                 seed: int = 0, num_silos: int = PROBE_SILOS, rounds: int = ROUNDS):
    """One Local run of the probes (:class:`~fedtrain.config.RunConfig`), the rest from the dataset's paper defaults."""
    kw = {**paper_defaults(DATASET, "local"), "dataset": DATASET, "method": "local", "rounds": int(rounds),
          "dataset_options": {"num_silos": int(num_silos), "train_per_silo": int(train_per_silo),
                              "mask_ratio": float(mask_ratio)}}
    # no DP has no clipping (the engine clips only at a finite ε): one run per η, filed at the default clip
    return expand_grid(kw, eps=[eps], lam=[0.0], lr=[lr], clip=[clip if math.isfinite(eps) else kw["clip"]],
                       seed=[seed])[0]


def controls(lr: float, clip: float, *, private_eps: float = PRIVATE_EPS, clip_only_eps: float = CLIP_ONLY_EPS,
             **data) -> dict[str, Any]:
    """The three runs of one setting: ``{"nodp": ..., "clip": ..., "private": ...}``."""
    clip_only_eps = check_clip_only_eps(clip_only_eps)
    return {"nodp": probe_config(lr=lr, clip=clip, eps=math.inf, **data),
            "clip": probe_config(lr=lr, clip=clip, eps=clip_only_eps, **data),
            "private": probe_config(lr=lr, clip=clip, eps=private_eps, **data)}


def decompose(acc: dict[str, float]) -> dict[str, float]:
    """Clipping and noise costs from the three controls' accuracies (keys ``nodp``, ``clip``, ``private``)."""
    return {"clip_cost": acc["nodp"] - acc["clip"], "noise_cost": acc["clip"] - acc["private"]}


def noise_bound(acc: dict[str, float]) -> bool:
    """Whether noise costs Local at least as much accuracy as clipping does (clip only − private ≥ no DP − clip
    only); False when any of the three diverged (a NaN)."""
    d = decompose(acc)
    return bool(math.isfinite(d["noise_cost"]) and math.isfinite(d["clip_cost"])
                and d["noise_cost"] >= d["clip_cost"])


def _acc(store, config) -> float | None:
    row = store.get(config)
    if row is None:
        return None
    return float(row.test_metric) if math.isfinite(row.test_metric) else math.nan


def cell_accuracies(store, lr, clip, *, clip_only_eps: float = CLIP_ONLY_EPS, **data) -> dict[str, float] | None:
    """The three controls' accuracies of a cell in ``store``; None until all three are there."""
    out = {k: _acc(store, c) for k, c in controls(lr, clip, clip_only_eps=clip_only_eps, **data).items()}
    return None if any(v is None for v in out.values()) else out


def best_cells(store, lrs: Sequence[float], clips: Sequence[float], k: int = 2, *,
               clip_only_eps: float = CLIP_ONLY_EPS) -> list[tuple[float, float]]:
    """Of phase A's finished cells (mask 0, 500 images): the noise-bound cell with the best private accuracy (the
    candidate setting, first), then the ``k`` with the best private accuracy."""
    scored = _ranked(store, lrs, clips, clip_only_eps)
    bound = [cell for _, nb, cell in scored if nb]
    return list(dict.fromkeys(bound[:1] + [cell for _, _, cell in scored[:k]]))


def _ranked(store, lrs, clips, clip_only_eps) -> list[tuple[float, bool, tuple[float, float]]]:
    """Phase A's finished cells as (private accuracy, noise-bound, (η, c)), the best private accuracy first."""
    scored = []
    for lr in lrs:
        for c in clips:
            acc = cell_accuracies(store, lr, c, clip_only_eps=clip_only_eps)
            if acc is not None and math.isfinite(acc["private"]):
                scored.append((acc["private"], noise_bound(acc), (lr, c)))
    scored.sort(key=lambda t: -t[0])
    return scored


def probe_phases(store, lrs: Sequence[float] = LR_PROBES, clips: Sequence[float] = CLIP_PROBES, *,
                 clip_only_eps: float = CLIP_ONLY_EPS) -> list[tuple[str, list]]:
    """The probes' phases as ``(name, configs)``, in the order they run; B1, C and B2 depend on A's results in
    ``store`` (empty until A is done).  ``lrs``, ``clips``: the η and clip grids (non-empty, finite, positive).

    A: mask 0, 500 images, the (η, c) cells with η within the paper's grid (η ≤ :data:`PAPER_MAX_LR`);
    B1: the best cell of A (:func:`best_cells`) at the paper's 1,500 images; C: mask 0.5 at that cell; B2: at 1,500
    images the other noise-bound cells of A, then the other best; C2: mask 0.5 at the other best cells of A and at
    the committed grid's (0.1, 1); D: the cells with η beyond the
    paper's grid (where they are stable), last."""
    lrs = check_positive_grid("lrs", lrs)
    clips = check_positive_grid("clips", clips)
    ce = check_clip_only_eps(clip_only_eps)
    order = [cell for cell in _CELL_ORDER if cell[0] in lrs and cell[1] in clips]
    order += [(lr, c) for lr in lrs for c in clips if (lr, c) not in order]
    inside = [cell for cell in order if cell[0] <= PAPER_MAX_LR]
    beyond = [cell for cell in order if cell[0] > PAPER_MAX_LR]
    phase_a = [cfg for lr, c in inside for cfg in controls(lr, c, clip_only_eps=ce).values()]
    a_done = all(store.has(c) for c in phase_a)
    best = best_cells(store, [lr for lr in lrs if lr <= PAPER_MAX_LR], clips, clip_only_eps=ce) if a_done else []
    inside_lrs = [lr for lr in lrs if lr <= PAPER_MAX_LR]
    bound = [cell for _, nb, cell in _ranked(store, inside_lrs, clips, ce) if nb] if a_done else []
    at_1500 = list(dict.fromkeys(best[:1] + bound + best[1:]))  # B1: the first; B2: the other noise-bound, the best
    big = [[cfg for cfg in controls(lr, c, train_per_silo=1500, clip_only_eps=ce).values()] for lr, c in at_1500]
    masked = list(dict.fromkeys([*best, (0.1, 1.0)])) if best else [(0.1, 1.0)]
    phase_c = [cfg for lr, c in masked for cfg in controls(lr, c, mask_ratio=0.5, clip_only_eps=ce).values()]
    phase_d = [cfg for lr, c in beyond for cfg in controls(lr, c, clip_only_eps=ce).values()]
    return [("A", phase_a), ("B1", big[0] if big else []), ("C", phase_c[:3]),
            ("B2", [cfg for part in big[1:] for cfg in part]), ("C2", phase_c[3:]), ("D", phase_d)]


def _split(text: str) -> list[str]:
    return [v for v in str(text).split(",") if v.strip()]


def _dedupe(configs):
    seen, out = set(), []
    for c in configs:
        if c.key() not in seen:
            seen.add(c.key())
            out.append(c)
    return out


def summary_rows(store, lrs: Sequence[float] = LR_PROBES, clips: Sequence[float] = CLIP_PROBES, *,
                 clip_only_eps: float = CLIP_ONLY_EPS) -> list[dict]:
    """One row per probed setting with all three controls in ``store``: accuracies, the decomposition, whether it
    is noise-bound, the noise multiplier and ε spent of the private run, and the runs' wall times."""
    rows = []
    settings = []
    for _, configs in probe_phases(store, lrs, clips, clip_only_eps=clip_only_eps):
        for c in configs:
            o = c.dataset_options
            s = (o["train_per_silo"], o["mask_ratio"], c.lr, c.clip if math.isfinite(c.eps) else None)
            if s[3] is not None and s not in settings:
                settings.append(s)
    for per, mask, lr, clip in settings:
        runs = controls(lr, clip, train_per_silo=per, mask_ratio=mask, clip_only_eps=clip_only_eps)
        got = {k: store.get(c) for k, c in runs.items()}
        if any(r is None for r in got.values()):
            continue
        acc = {k: float(r.test_metric) for k, r in got.items()}
        priv = got["private"]
        rows.append({"train_per_silo": per, "mask_ratio": mask, "lr": lr, "clip": clip,
                     "acc_nodp": acc["nodp"], "acc_clip_only": acc["clip"], "acc_private": acc["private"],
                     **decompose(acc), "noise_bound": noise_bound(acc),
                     "z_private": float(max(priv.noise_multipliers)), "eps_spent_private": float(max(priv.eps_spent)),
                     "z_clip_only": float(max(got["clip"].noise_multipliers)),
                     "wall_s": {k: round(float(r.wall_time), 1) for k, r in got.items()},
                     "computed": {k: _stored_provenance(store, c) for k, c in runs.items()}})
    return rows


def _stored_provenance(store, config) -> dict | None:
    """Commit, machine and creation time recorded with a stored row (None for a store without files)."""
    find = getattr(store, "_find", None)
    path = find(config) if find is not None else None
    if path is None:
        return None
    row = json.loads(Path(path).read_text())
    prov = row.get("provenance") or {}
    return {"commit": prov.get("commit"), "machine": prov.get("machine"), "created": row.get("created")}


#: The largest η of the paper's grid (App. C.4: 0.001 ... 0.3); a chosen setting must lie within it.
PAPER_MAX_LR = 0.3


def choose(rows: Sequence[dict]) -> dict:
    """The setting the probes choose, from :func:`summary_rows`: among the mask-0 rows with η within the paper's grid
    (η ≤ :data:`PAPER_MAX_LR`), the noise-bound one with the best private accuracy; if none is noise-bound, the one
    with the best private accuracy, marked ``noise_bound: False`` (the probes then show that no setting of the
    grid is noise-bound).  Returns ``{"lr", "clip", "train_per_silo", "noise_bound", "why"}``."""
    pool = [r for r in rows if r["mask_ratio"] == 0.0 and r["lr"] <= PAPER_MAX_LR and math.isfinite(r["acc_private"])]
    if not pool:
        raise ValueError("rows must hold at least one finished mask-0 setting with η <= 0.3")
    bound = [r for r in pool if r["noise_bound"]]
    best = max(bound or pool, key=lambda r: r["acc_private"])
    why = ("the best private accuracy among the noise-bound settings" if bound else
           "no probed setting within the paper's η grid is noise-bound; the best private accuracy")
    return {"lr": best["lr"], "clip": best["clip"], "train_per_silo": best["train_per_silo"],
            "noise_bound": bool(bound), "acc_private": best["acc_private"], "why": why}


def markdown_table(rows: Sequence[dict]) -> str:
    """The probes as a Markdown table (benchmarks/README.md): one line per setting, the decomposition and whether
    noise costs at least as much as clipping."""
    out = ["| images/silo | mask | η | c | no DP | clip only | private (ε = 4) | clipping cost | noise cost | "
           "noise-bound | z |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["mask_ratio"], r["train_per_silo"], r["lr"], r["clip"])):
        out.append(f"| {r['train_per_silo']:,} | {r['mask_ratio']:g} | {r['lr']:g} | {r['clip']:g} | "
                   f"{r['acc_nodp']:.4f} | {r['acc_clip_only']:.4f} | {r['acc_private']:.4f} | "
                   f"{r['clip_cost']:+.4f} | {r['noise_cost']:+.4f} | {'**yes**' if r['noise_bound'] else 'no'} | "
                   f"{r['z_private']:.3f} |")
    return "\n".join(out)


def _provenance(command: str) -> dict:
    def git(*args):
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--", "fedtrain")),
            "machine": f"{platform.node()} ({platform.processor() or platform.machine()}, {os.cpu_count()} cores "
                       f"shared; runs at nice 19, one thread)",
            "python": platform.python_version(), "command": command,
            "packed_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def pack(store, out: Path, command: str, *, lrs: Sequence[float] = LR_PROBES, clips: Sequence[float] = CLIP_PROBES,
         clip_only_eps: float = CLIP_ONLY_EPS) -> dict:
    """Write the finished probes' summary (:func:`summary_rows`) with provenance and the fixed settings to ``out``."""
    rows = summary_rows(store, lrs, clips, clip_only_eps=clip_only_eps)
    doc = {"what": "Local on rotated-masked-fashion: no DP / clip only / private decomposition (fedtrain.regime)",
           "fixed": {"dataset": DATASET, "method": "local", "num_silos": PROBE_SILOS, "test_per_silo": 250,
                     "rounds": ROUNDS, "batch_size": 100, "delta": 1e-7, "seed": 0, "accountant": "rdp",
                     "private_eps": PRIVATE_EPS, "clip_only_eps": clip_only_eps,
                     "adjacency": "add/remove-one record of a silo's training set"},
           "provenance": _provenance(command), "rows": rows,
           "chosen": choose(rows) if any(r["mask_ratio"] == 0.0 and r["lr"] <= PAPER_MAX_LR for r in rows) else None}
    tmp = Path(out).with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, out)
    return doc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", default=str(DEFAULT_STORE))
    p.add_argument("--status", action="store_true", help="print the finished settings; train nothing")
    p.add_argument("--pack", default=None, metavar="FILE", help=f"write the summary (e.g. {DEFAULT_PACK}); train nothing")
    p.add_argument("--stop-by", type=float, default=None, metavar="S",
                   help="start no run after S seconds from the start")
    p.add_argument("--markdown", action="store_true", help="print the finished settings as a Markdown table")
    p.add_argument("--lrs", default=",".join(map(str, LR_PROBES)), help="η grid, comma-separated")
    p.add_argument("--clips", default=",".join(map(str, CLIP_PROBES)), help="clip grid, comma-separated")
    p.add_argument("--clip-only-eps", default=str(CLIP_ONLY_EPS), help="ε of the clip-only control (finite, >= 1e5)")
    args = p.parse_args(argv)
    try:
        lrs = check_positive_grid("--lrs", _split(args.lrs))
        clips = check_positive_grid("--clips", _split(args.clips))
        check_clip_only_eps(args.clip_only_eps)
    except ValueError as exc:
        print(f"error: {str(exc).replace('clip_only_eps', '--clip-only-eps')}", file=sys.stderr)
        return 2
    ce = float(args.clip_only_eps)
    store = ResultsStore(args.store)
    if args.markdown:
        print(markdown_table(summary_rows(store, lrs, clips, clip_only_eps=ce)))
        return 0
    if args.pack or args.status:
        rows = summary_rows(store, lrs, clips, clip_only_eps=ce)
        for r in rows:
            print(f"n={r['train_per_silo']:5d} mask={r['mask_ratio']:.2f} lr={r['lr']:<5} c={r['clip']:<4} "
                  f"nodp={r['acc_nodp']:.4f} clip={r['acc_clip_only']:.4f} priv={r['acc_private']:.4f} "
                  f"clip_cost={r['clip_cost']:+.4f} noise_cost={r['noise_cost']:+.4f} "
                  f"{'NOISE-BOUND' if r['noise_bound'] else ''}")
        if args.pack:
            pack(store, Path(args.pack), "python -m fedtrain.regime; python -m fedtrain.regime --pack " + args.pack,
                 lrs=lrs, clips=clips, clip_only_eps=ce)
            print(f"packed {len(rows)} settings into {args.pack}")
        return 0
    started = time.perf_counter()
    print(f"started {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}", flush=True)
    for name in ("A", "B1", "C", "B2", "C2", "D"):
        phases = dict(probe_phases(store, lrs, clips, clip_only_eps=ce))  # B1, C, B2 are chosen once A is in the store
        todo = [c for c in _dedupe(phases[name]) if not store.has(c)]
        print(f"phase {name}: {len(todo)} runs to do", flush=True)
        for c in todo:
            if args.stop_by is not None and time.perf_counter() - started > args.stop_by:
                print("stopping (--stop-by)", flush=True)
                return 0
            t0 = time.perf_counter()
            row = run_sweep([c], store=store, chunk_size=1, progress=False)[0]
            o = c.dataset_options
            print(f"[{name}] n={o['train_per_silo']} mask={o['mask_ratio']} lr={c.lr} c={c.clip} eps={c.eps}: "
                  f"{row.test_metric:.4f} z={max(row.noise_multipliers):.4g} ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
