"""What DP costs a method, split into clipping and noise: no DP → clip only → private.

MR-MTL's advantage (the MR-MTL paper, Sec. 4 and Fig. 6) is that averaging the silos' models cancels part of each
silo's DP-SGD *noise*; it does nothing for the bias that per-example clipping adds.  So every figure of the deep
chapter states, for the runs it shows, how much of what DP costs is clipping and how much is noise:

    clipping cost = acc(no DP) − acc(clip only),    noise cost = acc(clip only) − acc(private),

where *clip only* is the same run with the same clipping at ``C`` and a noise calibrated to a huge ε (10⁶: a
negligible noise multiplier).  A setting where the clipping cost exceeds the noise cost is **clipping-bound**: it
cannot show a mechanism that averages noise away.

Two sources (:class:`DPCosts` records which):

* :func:`probe_costs`: the regime probes of Local (:mod:`fedtrain.regime`, committed as
  ``benchmarks/regime_probes.json``): one seed, 8 silos, three runs that differ only in ε (the no-DP run at the same
  η); what the clipping-bound grids have;
* :func:`fedtrain.fig6_checks.grid_costs`: a tuned grid's clip-only controls (one per method's best private
  configuration, at every mask ratio and seed), with the grid's own private and no-DP runs over the same seeds; the
  no-DP run is the method at the same λ without DP at the control's η (the grid's step control, ``*-steps`` of
  :data:`fedtrain.deep_grids.REAL_IMAGE_GRIDS`), and the run without DP at the η tuned for no DP gives a fourth
  number, ``nodp_tuned``:

      step cost = acc(no DP, its own tuned η) − acc(no DP, the private η),

  what the smaller step that the noise asks for costs.  Where the step control is not computed yet, the no-DP run is
  the one at its own tuned η, and the "clipping cost" holds the step cost too.

The accuracy is the test accuracy, a mean over silos; differences below about two binomial standard errors of the
test set are not resolved (the probes: 2,000 test images, SE ≈ 0.011 each).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

__all__ = ["DPCosts", "PROBES_FILE", "load_probes", "probe_costs", "every_probe", "costs_table"]

#: The committed regime probes (``python -m fedtrain.regime --pack benchmarks/regime_probes.json``).
PROBES_FILE = Path(__file__).resolve().parents[1] / "benchmarks" / "regime_probes.json"


@dataclass(frozen=True)
class DPCosts:
    """One method's accuracy at one setting without DP (``nodp``, at the same η as the other two), with clipping only
    (``clip_only``) and privately (``private``, at ``eps``), as means over ``seeds`` seeds; ``label`` the method,
    ``setting`` the cell (e.g. ``"mask 0.5"``), ``source`` where the numbers come from; ``nodp_tuned``: without DP
    at the η tuned for no DP, where that differs from the η of the other three and was run (else ``None``);
    ``method``: the method's name alone, as in the figure legends (``"Local"``; ``label`` adds its λ and η)."""

    label: str
    setting: str
    eps: float
    nodp: float
    clip_only: float
    private: float
    seeds: int
    source: str
    nodp_tuned: "float | None" = None
    method: str = "Local"

    @property
    def step_cost(self) -> "float | None":
        """Accuracy lost to the smaller private η: no DP at its own tuned η − no DP at the private η (``None``
        without ``nodp_tuned``)."""
        return None if self.nodp_tuned is None else self.nodp_tuned - self.nodp

    @property
    def clip_cost(self) -> float:
        """Accuracy lost to clipping: no DP − clip only."""
        return self.nodp - self.clip_only

    @property
    def noise_cost(self) -> float:
        """Accuracy lost to the noise: clip only − private."""
        return self.clip_only - self.private

    @property
    def limit(self) -> str:
        """``"noise"`` where the noise costs at least as much as the clipping (noise-bound), else ``"clipping"``."""
        return "noise" if self.noise_cost >= self.clip_cost else "clipping"

    def text(self) -> str:
        """One line: ``"Local, mask 0.5, ε = 4: 0.688 → 0.493 → 0.406 (clipping 0.195, noise 0.087: clipping-bound)"``."""
        moved = self.nodp_tuned is not None and self.nodp_tuned != self.nodp  # a step control at a smaller η
        step = f"{self.nodp_tuned:.3f} (no DP at its own η) → " if moved else ""
        step_cost = f"smaller step {self.step_cost:.3f}, " if moved else ""
        return (f"{self.label}, {self.setting}, ε = {self.eps:g}: {step}{self.nodp:.3f} → {self.clip_only:.3f} → "
                f"{self.private:.3f} ({step_cost}clipping {self.clip_cost:.3f}, noise {self.noise_cost:.3f}: "
                f"{self.limit}-bound)")


def load_probes(path: "str | Path | None" = None) -> dict:
    """The committed regime probes (default :data:`PROBES_FILE`); a missing or unreadable file raises
    ``FileNotFoundError`` / ``ValueError`` saying which file, where it was looked for and how to make it."""
    path = Path(path) if path is not None else PROBES_FILE
    how = ("it is committed with the repository; recompute it with python -m fedtrain.regime, then "
           "python -m fedtrain.regime --pack benchmarks/regime_probes.json")
    if not path.is_file():
        raise FileNotFoundError(f"regime probes file {path.name} not found (looked for {path}); {how}")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"regime probes file {path} is unreadable ({exc}); {how}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list) or "fixed" not in doc:
        raise ValueError(f"regime probes file {path} lacks its rows or its fixed settings; {how}")
    return doc


def probe_costs(*, lr: float, clip: float, train_per_silo: int = 500, doc: "dict | None" = None) -> list[DPCosts]:
    """Local's :class:`DPCosts` at the probed setting (η = ``lr``, clip ``clip``, ``train_per_silo`` images a silo),
    one per probed mask ratio, ascending, from the regime probes (``doc``: :func:`load_probes`, read when not
    given).  ``ValueError`` if the probes hold no such setting."""
    doc = load_probes() if doc is None else doc
    fixed = doc["fixed"]
    rows = sorted((r for r in doc["rows"] if r["lr"] == lr and r["clip"] == clip
                   and r["train_per_silo"] == train_per_silo), key=lambda r: r["mask_ratio"])
    if not rows:
        have = sorted({(r["lr"], r["clip"], r["train_per_silo"]) for r in doc["rows"]})
        raise ValueError(f"the regime probes hold no setting lr={lr!r}, clip={clip!r}, train_per_silo="
                         f"{train_per_silo!r}; they hold (lr, clip, train_per_silo) in {have}")
    source = (f"regime probes: Local, {fixed['num_silos']} silos, seed {fixed['seed']}, η = {lr:g}, C = {clip:g}, "
              f"{train_per_silo} images a silo, clip only at ε = {fixed['clip_only_eps']:g}")
    return [DPCosts(f"Local (η = {lr:g}, C = {clip:g})", f"mask {r['mask_ratio']:g}", float(fixed["private_eps"]), r["acc_nodp"],
                    r["acc_clip_only"], r["acc_private"], 1, source) for r in rows]


def every_probe(doc: "dict | None" = None) -> list[DPCosts]:
    """Local's :class:`DPCosts` at every probed setting of the regime probes (``doc``: :func:`load_probes`, read when
    not given), in the file's order, each labelled with its η, clip and images a silo."""
    doc = load_probes() if doc is None else doc
    eps = float(doc["fixed"]["private_eps"])
    return [DPCosts(f"Local (η = {r['lr']:g}, C = {r['clip']:g}, {r['train_per_silo']} images)",
                    f"mask {r['mask_ratio']:g}", eps, r["acc_nodp"], r["acc_clip_only"], r["acc_private"], 1,
                    "regime probes") for r in doc["rows"]]


def costs_table(costs: Sequence[DPCosts]) -> str:
    """The costs as a Markdown table: method, cell (with its ε and seeds), no DP, clip only, private, the clipping and the
    noise costs, what limits; where any has ``nodp_tuned``, the "no DP" column is at the private η and a column
    "step cost" comes before the clipping cost ("—" where its step control is not run yet, the "no DP" run then at
    its own η; "0 (same η)" where the η without DP is the private one)."""
    if not costs:
        raise ValueError("costs must hold at least one DPCosts")
    steps = any(c.nodp_tuned is not None for c in costs)
    head = ["method", "cell", "no DP at the private η" if steps else "no DP", "clip only", "private"] + (
        ["step cost"] if steps else []) + ["clipping cost", "noise cost", "limited by"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in costs:
        step = ([("0 (same η)" if c.step_cost == 0 else f"{c.step_cost:+.3f}") if c.step_cost is not None else "—"]
                if steps else [])
        cells = [c.label, f"{c.setting}, ε = {c.eps:g}, {c.seeds} seed{'s' if c.seeds != 1 else ''}", f"{c.nodp:.3f}",
                 f"{c.clip_only:.3f}", f"{c.private:.3f}"] + step + [f"{c.clip_cost:+.3f}", f"{c.noise_cost:+.3f}",
                                                                   c.limit]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)
