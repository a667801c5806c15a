"""The power of the engine's privacy audits (:mod:`fedtrain.audit`): the mildest noise reduction each detects.

An audit that passes proves nothing about the claim; what it *can* catch is its power.  Here the defect is the
one :func:`fedtrain.audit.broken_engine` plants: the engine's noise multiplied by a factor f < 1 while it still
reports the ε it calibrated, so the run's true ε exceeds the claim (for full batches exactly
:func:`fedtrain.audit.full_batch_exact_epsilon` at ``f·z``: about twice the claim at f = 0.5).  For each audit and
claimed ε the audit is run once (seeded) at every factor of a grid; its **detection threshold** is the largest
factor f of the grid such that the audit catches every factor ≤ f (the mildest noise reduction it detects, with
all stronger ones).  One seeded run per point: the threshold is a draw, not a probability of detection.

The audits, at the privacy-audit chapter's settings (adjacency: add/remove one record of a silo; accountant: the
engine's RDP accountant, whose ε is the claim; 20 full-batch rounds, η = 0.5, δ = 10⁻⁵, 95 % confidence):

* ``one-run``: :func:`fedtrain.audit.audit_one_run`, 1,000 isolated canaries in silo 0 of a tiny 3-silo regression
  task (100 records each, 4 features), 100 guesses.  Capped at ε ≈ 3.47 whatever the defect (100 guesses).
* ``many-run``: :func:`fedtrain.audit.audit_many_runs`, 100 silos × 32 seeds (1,600 evaluation trials).
* ``many-run 320k``: the same with 10,000 silos × 32 seeds (160,000 evaluation trials, ≈ 20 s on one core).

Run ``python -m fedtrain.audit_power --out book/data/audit_power.json`` (resumable: a point already in the file is
not recomputed; the file is rewritten atomically after each point; ``nice`` it); the chapter reads the file.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from fedtrain.config import RunConfig
from fedtrain.testing import tiny_federated

__all__ = ["AUDITS", "CLAIMS", "FACTORS", "POWER_FILE", "one_run_setting", "many_run_setting", "power_point", "detection_threshold",
           "load_power", "plot_power", "main"]

#: The audits whose power is measured: name -> (kind, keyword arguments of the audit).
AUDITS: dict[str, tuple[str, dict]] = {
    "one-run": ("one-run", dict(num_canaries=1000)),
    "many-run": ("many-run", dict(num_silos=100, seeds=tuple(range(32)))),
    "many-run 320k": ("many-run", dict(num_silos=10_000, seeds=tuple(range(32)))),
}
#: Where the committed power file lives (beside the other computed numbers the book reads).
POWER_FILE = Path(__file__).resolve().parents[1] / "book" / "data" / "audit_power.json"
#: The claimed ε of the chapter's audits.
CLAIMS = (1.0, 2.0, 4.0, 8.0)
#: The noise factors tried (1 = the engine as built).
FACTORS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
_DELTA = 1e-5


def one_run_setting(eps: float):
    """The chapter's one-run setting at claimed ``eps``: ``(RunConfig, FederatedData)`` (local training, full batches)."""
    base = tiny_federated("regression", num_silos=3, dim=4, n_range=(100, 100), seed=0)
    return RunConfig("tiny", "local", eps=float(eps), delta=_DELTA, lam=1.0, lr=0.5, rounds=20, batch_size=4096), base


def many_run_setting(eps: float):
    """The chapter's many-run setting at claimed ``eps``: ``(RunConfig, (x, y))``, one silo's 20 records."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 2))
    y = x @ np.array([1.0, -0.5]) + 0.1 * rng.normal(size=20)
    return RunConfig("audit", "local", eps=float(eps), delta=_DELTA, lr=0.5, rounds=20, batch_size=4096), (x, y)


def power_point(audit_name: str, eps: float, factor: float) -> dict[str, Any]:
    """Run audit ``audit_name`` (:data:`AUDITS`) at claimed ``eps`` on the engine with its noise times ``factor``.

    Returns ``eps_lower``, ``eps_claimed``, ``true_eps`` (the exact ε of the run as trained: full batches, noise
    multiplier ``factor·z``), ``caught`` and ``seconds``."""
    from fedtrain import audit

    if audit_name not in AUDITS:
        raise ValueError(f"audit_name must be one of {', '.join(AUDITS)} (got {audit_name!r})")
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a positive finite number (got {eps!r})")
    if not 0 < factor <= 1:
        raise ValueError(f"factor must be in (0, 1] (got {factor!r})")
    kind, kw = AUDITS[audit_name]
    t0 = time.perf_counter()
    with audit.broken_engine(noise_factor=factor):
        if kind == "one-run":
            cfg, data = one_run_setting(eps)
            a = audit.audit_one_run(cfg, data, **kw)
        else:
            cfg, xy = many_run_setting(eps)
            a = audit.audit_many_runs(cfg, xy, **kw)
    secs = time.perf_counter() - t0
    true = audit.full_batch_exact_epsilon(factor * a.details["noise_multiplier"], a.details["steps"], a.delta)
    return dict(audit=audit_name, eps=float(eps), factor=float(factor), eps_lower=float(a.eps_lower),
                eps_claimed=float(a.eps_claimed), true_eps=float(true), caught=bool(a.caught), seconds=round(secs, 2))


def detection_threshold(points: Sequence[dict], audit_name: str, eps: float) -> float | None:
    """The largest factor f among ``points`` of (``audit_name``, ``eps``) such that every point with factor ≤ f is
    caught (the mildest noise reduction detected together with all stronger ones); ``None`` if the strongest
    reduction tried is not caught."""
    pts = sorted((p for p in points if p["audit"] == audit_name and p["eps"] == eps), key=lambda p: p["factor"])
    if not pts:
        raise ValueError(f"no points for audit {audit_name!r} at eps={eps!r}")
    best = None
    for p in pts:
        if not p["caught"]:
            break
        best = p["factor"]
    return best


def load_power(path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The committed power file (``path``; default :data:`POWER_FILE`): ``{"provenance": {...}, "points": [...]}``; a
    missing or corrupt file is a ``FileNotFoundError``/``ValueError`` naming it and the command that writes it."""
    p = Path(POWER_FILE if path is None else path)
    how = "compute it with `nice -n 19 python -m fedtrain.audit_power --out book/data/audit_power.json`"
    if not p.is_file():
        raise FileNotFoundError(f"audit power file {p} not found; {how}")
    try:
        data = json.loads(p.read_text())
        pts = data["points"]
        for q in pts:
            for k in ("audit", "eps", "factor", "eps_lower", "eps_claimed", "true_eps", "caught"):
                q[k]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"audit power file {p} is corrupt ({e!r}); {how}") from None
    return data


def plot_power(points: Sequence[dict], claims: Sequence[float] = CLAIMS):
    """The audits' power: the detection threshold (:func:`detection_threshold`) against the claimed ε, one line
    per audit (a missing marker: no factor of the grid is caught).  Returns the figure (matplotlib's default
    width: the book's column after :func:`fedtrain.figures.style.use_book_style`)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(plt.rcParams["figure.figsize"][0], 3.0))
    names = [a for a in AUDITS if any(p["audit"] == a for p in points)]
    for name, marker in zip(names, "osD^"):
        xs = [e for e in claims if any(p["audit"] == name and p["eps"] == e for p in points)]
        ys = [detection_threshold(points, name, e) for e in xs]
        ax.plot(xs, [np.nan if y is None else y for y in ys], marker=marker, label=name)
    ax.axhline(0.5, color="0.5", ls=":", lw=1)
    ax.text(min(claims), 0.52, "noise halved", fontsize=7, color="0.4")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(claims), [f"{e:g}" for e in claims])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("claimed ε (RDP accountant, δ = 1e-5)")
    ax.set_ylabel("largest noise factor caught")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _provenance() -> dict[str, Any]:
    import torch

    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                                cwd=Path(__file__).resolve().parent).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "."], capture_output=True, text=True,
                                    cwd=Path(__file__).resolve().parent).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", True
    return dict(command="python -m fedtrain.audit_power " + " ".join(sys.argv[1:]), commit=commit,
                fedtrain_dirty=dirty, python=platform.python_version(), torch=torch.__version__,
                numpy=np.__version__, machine=platform.machine(), processor=platform.processor() or "unknown",
                threads=torch.get_num_threads(),
                settings=dict(audits={k: dict(kind=v[0], **{a: (len(b) if a == "seeds" else b)
                                                            for a, b in v[1].items()}) for k, v in AUDITS.items()},
                              delta=_DELTA, rounds=20, lr=0.5, full_batches=True, confidence=0.95))


def _write(path: Path, data: dict) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fedtrain.audit_power", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the JSON file (resumed if it exists)")
    ap.add_argument("--audits", default=",".join(AUDITS), help="comma-separated names of AUDITS")
    ap.add_argument("--claims", default=",".join(f"{e:g}" for e in CLAIMS))
    ap.add_argument("--factors", default=",".join(f"{f:g}" for f in FACTORS))
    a = ap.parse_args(argv)
    names = [s.strip() for s in a.audits.split(",")]
    bad = [n for n in names if n not in AUDITS]
    if bad:
        print(f"error: --audits: unknown audit {bad[0]!r} (one of {', '.join(AUDITS)})", file=sys.stderr)
        return 2
    try:
        claims = [float(s) for s in a.claims.split(",")]
        factors = [float(s) for s in a.factors.split(",")]
    except ValueError as e:
        print(f"error: --claims/--factors must be comma-separated numbers ({e})", file=sys.stderr)
        return 2
    out = Path(a.out)
    data = load_power(out) if out.exists() else dict(provenance=_provenance(), points=[])
    data.setdefault("runs", []).append(dict(_provenance(), started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
    done = {(p["audit"], p["eps"], p["factor"]) for p in data["points"]}
    for name in names:
        for eps in claims:
            for f in factors:
                if (name, eps, f) in done:
                    continue
                p = power_point(name, eps, f)
                data["points"].append(p)
                _write(out, data)
                print(f"{name:22s} eps {eps:g} factor {f:g}: lower bound {p['eps_lower']:.3f} "
                      f"(true {p['true_eps']:.3f}) {'caught' if p['caught'] else 'passes'} [{p['seconds']:.1f} s]",
                      flush=True)
    _write(out, data)
    return 0


if __name__ == "__main__":  # pragma: no cover
    import warnings

    warnings.filterwarnings("ignore", message="Optimal order is the")
    sys.exit(main())
