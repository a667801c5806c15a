"""The paper's non-IID experiments at CPU scale, and the checks of its claims 1-4.

The experiments are grids of the presets (:data:`fedtrain.client_presets.FEDHDP_SCALES` on the digit stand-in,
:data:`fedtrain.client_presets.FEDHDP_GRIDS` on real images; every setting is stated there, nothing else is tuned), run
through :func:`fedtrain.sweep.run_sweep` like every other grid (:func:`run_experiment`); the committed rows are in
the results store ``results/`` (:data:`fedtrain.client_presets.FEDHDP_COMMITTED`, read with
:meth:`fedtrain.book_results.BookStore.client_rows`).

Claims (the inventory's list; mean ± sd over seeds, :func:`check_claims`):

1. FedHDP at its best r ≪ 1 beats DP-FedAvg+Ditto and HDP-FedAvg+Ditto in global accuracy;
2. Δ_g ≥ 0 and Δ_l ≥ 0 under FedHDP at its best r (not significantly negative: mean ≥ −2 SE);
3. the best r is higher when the opted-out clients are label-skewed;
4. r = 0 collapses in the skewed case (the global model learns the one class of the opted-out clients).

Two more checks (:func:`check_claims`, when the rows allow them): 5, DP-FedAvg+Ditto and HDP-FedAvg+Ditto (r = 1)
release the same aggregate, so their global models agree in distribution (a null test of the implementation); 6,
the private group's ε, recomputed from its released rounds with the row's accountant, is the recorded one and stays
within the target.

Each check has a verdict (:data:`HOLDS`, :data:`TIE`, :data:`FAILS`: a claim that one thing beats another is a
tie, not a hold, when the difference lies within 2 SE), a kind (:data:`PAPER_CLAIM`, :data:`IMPLEMENTATION_CHECK`,
:data:`PRIVACY_CHECK`) and, where it matters, what it can and cannot show (``scope``): claim 5 holds by
construction at r = 1, so it tests the code, not FedHDP; claim 3 rests on the arg-max of a coarse ratio grid.

The real-image grid ``claims-fashion`` (:data:`fedtrain.client_presets.FEDHDP_GRIDS`) is computed into a results store by
``benchmarks/run_real_image_grids.py``; :func:`grid_rows` serves it from there (training nothing) and
``fedtrain fedhdp-claims --grid claims-fashion --results DIR --pack results`` packs it with its provenance
(:func:`grid_provenance`) into the committed store the book reads.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from fedtrain.analysis import spread_text
from fedtrain.claim_check import (FAILS, HOLDS, IMPLEMENTATION_CHECK, PAPER_CLAIM, PRIVACY_CHECK, TIE, ClaimCheck,
                                  verdict as _verdict)
from fedtrain.config import ENGINE_VERSION
from fedtrain.data.files import DatasetNotFoundError
from fedtrain.data.noniid_fashion import nonprivate_distinct_share
from fedtrain.data.registry import load_dataset
from fedtrain.encoding import decode_float
from fedtrain.clientdp.accounting import group_epsilon
from fedtrain.clientdp.config import FEDHDP_METHODS, FedHDPConfig
from fedtrain.methods.registry import CLIENT, method_spec
from fedtrain.results import ResultsStore, git_commit, row_key
from fedtrain.sweep import run_sweep

__all__ = ["PAPER_TABLE2", "run_experiment", "grid_rows", "load_results",
           "grid_provenance", "grid_setting", "opted_out_share", "check_claims", "format_checks",
           "HOLDS", "TIE", "FAILS", "PAPER_CLAIM", "IMPLEMENTATION_CHECK", "PRIVACY_CHECK", "CLAIM3_SCOPE", "CLAIM5_SCOPE",
           "best_ratio", "paper_comparison"]

#: The paper's Table 2 (non-IID MNIST and its skewed variant, ε = 3.6 at δ = 1e-4, 500 rounds, one run per cell):
#: FedHDP's best r and its ``acc_g``, ``delta_g`` and ``delta_l`` there, the baselines' ``acc_g`` and FedHDP's
#: ``acc_g`` at r = 0 (Table 8's and Table 9's λ = 0.005 blocks, the λ of Table 2), in %.
PAPER_TABLE2: dict[str, dict] = {
    "plain": {"best_r": 0.01, "fedhdp_acc_g": 92.48, "delta_g": 0.88, "delta_l": 0.0,
              "dp-fedavg": 88.75, "hdp-fedavg": 87.71, "nonprivate": 93.8, "r0_acc_g": 90.7},
    "skewed": {"best_r": 0.1, "fedhdp_acc_g": 90.36, "delta_g": 7.49, "delta_l": -0.21,
               "dp-fedavg": 88.93, "hdp-fedavg": 88.25, "nonprivate": 93.67, "r0_acc_g": 10.27},
}

def run_experiment(configs: Iterable[FedHDPConfig], store: "str | Path | ResultsStore | None" = None, *,
                   progress: bool = False, log=None, data_dir: str | None = None) -> list[dict]:
    """Run every config through :func:`fedtrain.sweep.run_sweep` and return the results' ``to_dict()`` forms.

    ``store``: a results folder (:class:`~fedtrain.results.ResultsStore`, or its path); each finished run is
    written there atomically under its row key (the config's key, which holds the engine version, and the data's
    identity) and, when present and checked against its key, read instead of trained, so an interrupted
    experiment resumes.  The runs are trained one at a time (one per batch), each by the runner its method's
    registry entry names (:attr:`fedtrain.methods.registry.MethodSpec.runner`); ``log`` (a callable taking a
    line) hears of each run trained.  ``data_dir``: the folder of the file datasets (default: where the loaders
    look).
    """
    def runner(batch, data):
        results = batch[0].spec.runner(batch, data)
        for r in results if log is not None else ():
            m = r.metrics
            log(f"{r.config.dataset} {r.config.method} r={r.config.effective_ratio:g} seed={r.config.seed}: "
                f"acc_g={m['acc_g']:.2f} ({r.wall_time:.1f} s)")
        return results

    rows = run_sweep(list(configs), store=store, data_dir=data_dir, runner=runner, chunk_size=1, progress=progress)
    return [r.to_dict() for r in rows]


def grid_rows(configs: Sequence[FedHDPConfig], store: "str | Path | ResultsStore", *,
              data_dir: str | None = None) -> tuple[list[dict], list[FedHDPConfig]]:
    """The stored rows of ``configs`` (in their order, each with the ``key`` it is filed under) and the configs the
    store lacks; trains nothing.

    A row is found under its row key (the config's key and the identity of the data as loaded now), so a row
    computed on other data or by another engine version counts as missing."""
    folder = store if isinstance(store, ResultsStore) else ResultsStore(store)
    identity: dict[str, dict] = {}
    rows, missing = [], []
    for c in configs:
        dkey = json.dumps([c.dataset, c.dataset_options], sort_keys=True)
        if dkey not in identity:
            opts = dict(c.dataset_options, **({"data_dir": data_dir} if data_dir is not None else {}))
            identity[dkey] = load_dataset(c.dataset, **opts).identity()
        stored = folder.get(c, identity[dkey])
        if stored is None:
            missing.append(c)
        else:
            rows.append({**stored.to_dict(), "key": row_key(c, identity[dkey])})
    return rows, missing


def load_results(store: str | Path) -> list[dict]:
    """Every client-level run stored in the working store ``store`` (a folder of :func:`run_experiment`), as dicts;
    the committed runs are read with :meth:`fedtrain.book_results.BookStore.client_rows`."""
    path = Path(store)
    if not path.is_dir():
        raise FileNotFoundError(f"no FedHDP results at {path} (run: fedtrain fedhdp-claims --results {path})")
    return [r.to_dict() for r in ResultsStore(path).rows(kind=CLIENT)]


def _one(values, what: str):
    values = {json.dumps(v, sort_keys=True) for v in values}
    if len(values) != 1:
        raise ValueError(f"rows must share one {what} (got {len(values)}: {sorted(values)[:3]})")
    return json.loads(values.pop())


def _rows_commits(rows: Sequence[dict]) -> str:
    """The commits the rows' ``provenance`` names, with a count each (``"not recorded"`` for rows without one)."""
    counts: dict[str, int] = {}
    for r in rows:
        commit = (r.get("provenance") or {}).get("commit") or "not recorded"
        counts[commit] = counts.get(commit, 0) + 1
    return ", ".join(f"{c} ({n} run{'s' * (n != 1)})" for c, n in sorted(counts.items()))


def grid_provenance(rows: Sequence[dict], grid: str, *, target_epsilon: float, command: str,
                    rows_commit: str | None = None, missing: int = 0) -> dict:
    """What a packed grid records next to its runs (its header, :func:`fedtrain.book_results.pack_client_grid`), read
    from the rows themselves.

    ``grid``: its name in :data:`fedtrain.client_presets.FEDHDP_GRIDS`; ``target_epsilon``: the ε its noise was calibrated
    to (that entry's ``target_epsilon``; ``ValueError`` unless positive and finite); ``command``: the
    command that writes the file; ``rows_commit``: the commit(s) of the code that computed the rows, for rows that
    do not record it (a row's ``provenance``, written by :meth:`fedtrain.results.ResultsStore.put`, names its commit;
    default: the commits the rows name, rows without one counted as "not recorded"); ``missing``: runs of the grid
    left out (``--partial``).
    Records the engine version, the data's identities per dataset, the noise multiplier z, the target ε and the ε
    the private group actually spent (largest over runs, with the accountant, δ and adjacency the rows name), and
    the runs' wall-clock seconds."""
    if not (isinstance(target_epsilon, (int, float)) and 0.0 < float(target_epsilon) < math.inf):
        raise ValueError(f"target_epsilon must be a positive finite number (got {target_epsilon!r})")
    if not rows:
        raise ValueError("rows must not be empty")
    spent = [decode_float(r["privacy"]["groups"]["private"]["epsilon"]) for r in rows
             if "private" in r["privacy"]["groups"]]
    wall = np.array([float(r["wall_time"]) for r in rows])
    datasets = sorted({r["config"]["dataset"] for r in rows})
    return {
        "grid": grid, "command": command, "engine_version": ENGINE_VERSION,
        "rows_commit": rows_commit or _rows_commits(rows), "written_by_commit": git_commit(),
        "runs": len(rows), "missing_runs": int(missing),
        "data_identity": {ds: _one([r["data"]["identity"] for r in rows if r["config"]["dataset"] == ds],
                                   f"data identity for {ds}") for ds in datasets},
        "real_data": bool(all(r["data"].get("real") for r in rows)),
        "noise_multiplier": _one([r["config"]["noise_multiplier"] for r in rows], "noise multiplier"),
        "sample_rate": _one([r["config"]["sample_rate"] for r in rows], "sample rate"),
        "rounds": _one([r["config"]["rounds"] for r in rows], "number of rounds"),
        "seeds": sorted({int(r["config"]["seed"]) for r in rows}),
        "target_epsilon": float(target_epsilon),
        "epsilon_spent": max(spent) if spent else None,
        "accountant": _one([r["privacy"]["accountant"] for r in rows], "accountant"),
        "delta": _one([r["privacy"]["delta"] for r in rows], "delta"),
        "adjacency": _one([r["privacy"]["adjacency"] for r in rows], "adjacency"),
        "unaccounted": _one([r["privacy"]["unaccounted"] for r in rows], "unaccounted note"),
        "seconds_per_run": {"median": float(np.median(wall)), "min": float(wall.min()), "max": float(wall.max()),
                            "total": float(wall.sum()),
                            "note": "each run's wall-clock time (the row's wall_time), one thread, on a shared CPU"},
    }


def grid_setting(rows: Sequence[dict], provenance: dict) -> str:
    """One line stating a saved grid's setting (what a table or figure of it must say next to it): clients and the
    opted-out share, rounds and local epochs, q, z, the ε spent with its δ, accountant and adjacency, and the seeds."""
    clients = _one([sum(int(g["clients"]) for g in r["privacy"]["groups"].values()) for r in rows], "client count")
    opted = _one([r["data"]["info"]["nonprivate_fraction"] for r in rows], "opted-out fraction")
    epochs = _one([r["config"]["local_epochs"] for r in rows], "local epochs")
    p = provenance
    return (f"{clients:,} clients ({opted:.0%} opted out), T = {p['rounds']} rounds of E = {epochs} local epochs, "
            f"q = {p['sample_rate']:g}, z = {p['noise_multiplier']:g}: ε = {p['epsilon_spent']:.2f} "
            f"(target {p['target_epsilon']:g}) at δ = {p['delta']:g}, {p['accountant'].upper()} accountant, "
            f"client-level add/remove adjacency; {len(p['seeds'])} seeds")


def opted_out_share(dataset: str, rows: Sequence[dict] = (), *, data_dir: str | None = None) -> dict:
    """The share of the distinct training images that the opted-out clients of ``dataset`` hold.

    Counted on the data as loaded now (:func:`fedtrain.data.noniid_fashion.nonprivate_distinct_share`, with the
    dataset's default options) and checked against what ``rows`` of that dataset recorded when they trained
    (``data.info``; ``ValueError`` if they differ).  Where a file dataset is absent
    (:class:`~fedtrain.data.files.DatasetNotFoundError`) the recorded count is returned, with
    ``source="recorded"``.  Returns ``held``, ``total``, ``share`` and ``source``."""
    recorded = {(r["data"]["info"].get("nonprivate_distinct_images"), r["data"]["info"].get("distinct_train_images"))
                for r in rows if r["config"]["dataset"] == dataset and "info" in r.get("data", {})}
    recorded.discard((None, None))
    try:
        data = load_dataset(dataset, **({"data_dir": data_dir} if data_dir is not None else {}))
    except DatasetNotFoundError:
        if len(recorded) != 1:
            raise
        held, total = recorded.pop()
        return {"held": int(held), "total": int(total), "share": held / total, "source": "recorded"}
    held, total, share = nonprivate_distinct_share(data)
    if recorded and recorded != {(held, total)}:
        raise ValueError(f"rows of {dataset!r} recorded (opted-out images, images) = {sorted(recorded)}, but the data "
                         f"loaded now give {(held, total)}")
    return {"held": held, "total": total, "share": share, "source": "data"}



CLAIM3_SCOPE = ("Can show that the skewed data's best grid ratio is higher and, where the skewed data prefer it to "
                "the plain data's best by more than 2 SE, that the optimum moved. Cannot show it from point estimates "
                "alone: a different arg-max whose skewed-data gain lies within 2 SE is a tie (the plain data clearly "
                "preferring their own best ratio does not say the skewed optimum is higher); a best at the grid's "
                "top ratio bounds the optimum from below only.")
CLAIM5_SCOPE = ("Holds by construction at r = 1: DP-FedAvg+Ditto and HDP-FedAvg+Ditto release the same aggregate, so "
                "the check is a null test of the implementation (it fails on a bug that makes them differ), not "
                "evidence for FedHDP or any claim of the paper.")


def _claim(claim: str, verdict: str, detail: str, kind: str = PAPER_CLAIM, scope: str = "") -> ClaimCheck:
    return ClaimCheck(claim, verdict, detail, kind, scope)


def _ratio_method() -> str:
    """The client-level method taking the weight ratio r (FedHDP), from the registry."""
    return next(m for m in FEDHDP_METHODS if method_spec(m).takes_ratio)


def _private_baselines() -> tuple[str, ...]:
    """The client-level methods with a private group and no ratio (DP-FedAvg+Ditto, HDP-FedAvg+Ditto)."""
    return tuple(m for m in FEDHDP_METHODS if method_spec(m).private and not method_spec(m).takes_ratio)


def _by(rows, dataset, method, ratio=None):
    out = []
    for r in rows:
        c = r["config"]
        if c["dataset"] == dataset and c["method"] == method and (ratio is None or math.isclose(c["ratio"], ratio)):
            out.append(r["metrics"])
    return out


def _ms(mets, key):
    v = np.array([decode_float(m[key]) for m in mets], dtype=float)
    return float(v.mean()), (float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else math.nan), len(v)


def best_ratio(rows: Sequence[dict], dataset: str, *, positive: bool = True) -> float:
    """The FedHDP ratio with the highest mean global accuracy on ``dataset`` (``positive``: among r > 0)."""
    ratios = sorted({r["config"]["ratio"] for r in rows
                     if r["config"]["dataset"] == dataset and r["config"]["method"] == _ratio_method()})
    ratios = [r for r in ratios if r > 0] if positive else ratios
    if not ratios:
        raise ValueError(f"no FedHDP results for dataset {dataset!r}")
    return max(ratios, key=lambda r: _ms(_by(rows, dataset, _ratio_method(), r), "acc_g")[0])


def _pm(value: float, se: float, sign: str = "+") -> str:
    """``value ± se`` at two decimals (``sign``: the format's sign flag); an SE that rounds to zero reads ``<0.01``."""
    return f"{value:{sign}.2f} ± {spread_text(se, 2)}"


def _gap(f, b) -> tuple[float, float]:
    """Difference of two (mean, SE, n) and its standard error (independent seeds)."""
    return f[0] - b[0], math.sqrt(f[1] ** 2 + b[1] ** 2)


def _recomputed_epsilon(row: dict, accountant: str | None = None) -> float:
    """The private group's ε of ``row`` recomputed from its released rounds (accountant: the row's, or ``accountant``)."""
    p = row["privacy"]
    return group_epsilon(decode_float(p["effective_noise_multiplier"]), float(p["sample_rate"]),
                         int(p["groups"]["private"]["rounds_released"]), float(p["delta"]),
                         accountant or p["accountant"])


def check_claims(rows: Sequence[dict], plain: str = "noniid-digits",
                 skewed: str | None = "noniid-digits-skewed", *,
                 epsilon_target: float | None = None) -> list[ClaimCheck]:
    """Claims 1-4 (module docstring) on stored results, and 5-6 where the rows allow them; means over seeds, and a
    difference counts only beyond 2 standard errors (SE over seeds).

    * 1 holds when FedHDP's gap over the baseline exceeds 2 SE, is a tie within ±2 SE, fails below;
    * 3 holds when the skewed data's best ratio is higher **and** the skewed data score better at it than at the
      plain data's best beyond 2 SE; with a higher arg-max but that gain within 2 SE it is a tie (point estimates
      only, whatever the plain data show); it fails when the skewed best ratio is not higher (:data:`CLAIM3_SCOPE`);
    * 5 (when both DP-FedAvg and HDP-FedAvg ran) holds per dataset when their mean global accuracies differ by at
      most 2 SE (equal in distribution; the largest per-seed difference is reported);
    * 6 (when ``epsilon_target`` is given) holds when, in every run with a private group, the recorded ε equals
      its recomputation from the released rounds with the row's accountant (relative 1e-9) and does not exceed
      ``epsilon_target``; the PLD accountant's ε of the same mechanism is reported next to it.
    """
    out = []
    fedhdp = _ratio_method()
    for ds in [plain] + ([skewed] if skewed else []):
        r_best = best_ratio(rows, ds)
        f = _ms(_by(rows, ds, fedhdp, r_best), "acc_g")
        for base in _private_baselines():
            b = _ms(_by(rows, ds, base), "acc_g")
            gap, se = _gap(f, b)
            v = _verdict(gap, 2 * se) if r_best < 1 else FAILS
            out.append(_claim(f"1 ({ds}): FedHDP r={r_best:g} beats {base}+Ditto in Acc_g", v,
                              f"{f[0]:.2f} vs {b[0]:.2f}: gap {_pm(gap, se)} (SE, n={f[2]})"))
        for key in ("delta_g", "delta_l"):
            d = _ms(_by(rows, ds, fedhdp, r_best), key)
            out.append(_claim(f"2 ({ds}): {key} >= 0 under FedHDP r={r_best:g}", HOLDS if d[0] >= -2 * d[1] else FAILS,
                              f"{_pm(d[0], d[1])} (SE, n={d[2]})"))
    if skewed:
        rp, rs = best_ratio(rows, plain), best_ratio(rows, skewed)
        on_skewed = _gap(_ms(_by(rows, skewed, fedhdp, rs), "acc_g"), _ms(_by(rows, skewed, fedhdp, rp), "acc_g"))
        on_plain = _gap(_ms(_by(rows, plain, fedhdp, rp), "acc_g"), _ms(_by(rows, plain, fedhdp, rs), "acc_g"))
        v3 = FAILS if rs <= rp else (HOLDS if on_skewed[0] > 2 * on_skewed[1] else TIE)
        out.append(_claim("3: best r higher with skewed opt-outs", v3,
                              f"best r: {rp:g} ({plain}) vs {rs:g} ({skewed})" + (
                                  "" if rs == rp else
                                  f"; Acc_g at r={rs:g} minus at r={rp:g}: {_pm(*on_skewed)} ({skewed}), "
                                  f"{_pm(-on_plain[0], on_plain[1])} ({plain})"), scope=CLAIM3_SCOPE))
        z = _ms(_by(rows, skewed, fedhdp, 0.0), "acc_g")
        best = _ms(_by(rows, skewed, fedhdp, rs), "acc_g")
        out.append(_claim("4: r=0 collapses in the skewed case",
                          HOLDS if z[0] < 20.0 and z[0] < best[0] - 2 * best[1] else FAILS,
                          f"Acc_g at r=0: {_pm(z[0], z[1], '')} vs {best[0]:.2f} at r={rs:g}"))
    baselines = _private_baselines()
    dp, hdp = baselines[:2] if len(baselines) >= 2 else (None, None)
    for ds in [plain] + ([skewed] if skewed else []):
        a, b = _by(rows, ds, dp), _by(rows, ds, hdp)
        if not a or not b:
            continue
        gap, se = _gap(_ms(a, "acc_g"), _ms(b, "acc_g"))
        per_seed = {}
        for r in rows:
            c = r["config"]
            if c["dataset"] == ds and c["method"] in (dp, hdp):
                per_seed.setdefault(c["seed"], {})[c["method"]] = decode_float(r["metrics"]["acc_g"])
        worst = max((abs(v[dp] - v[hdp]) for v in per_seed.values() if len(v) == 2), default=math.nan)
        out.append(_claim(f"5 ({ds}): {dp} = {hdp} (r=1) in Acc_g", HOLDS if abs(gap) <= 2 * se else FAILS,
                          f"difference {_pm(gap, se)} (SE, n={len(a)}); largest per seed {worst:.2f}",
                          IMPLEMENTATION_CHECK, CLAIM5_SCOPE))
    if epsilon_target is not None:
        private = [r for r in rows if "private" in r["privacy"]["groups"]
                   and int(r["privacy"]["groups"]["private"]["rounds_released"]) > 0]
        if private:
            rec = np.array([decode_float(r["privacy"]["groups"]["private"]["epsilon"]) for r in private])
            again = np.array([_recomputed_epsilon(r) for r in private])
            i = int(np.argmax(rec))
            pld = _recomputed_epsilon(private[i], "pld")
            acc, delta = private[i]["privacy"]["accountant"], float(private[i]["privacy"]["delta"])
            ok = bool(np.allclose(rec, again, rtol=1e-9, atol=0) and rec.max() <= epsilon_target)
            out.append(_claim(f"6: ε of the private group <= {epsilon_target:g}", HOLDS if ok else FAILS,
                              f"largest ε {rec.max():.4f} ({acc.upper()}, δ={delta:g}, client-level add/remove; "
                              f"PLD: {pld:.4f}), recomputed from the released rounds in {len(private)} runs",
                              PRIVACY_CHECK))
    return out


def format_checks(checks: Sequence[ClaimCheck]) -> str:
    """The checks as a Markdown table: claim, kind, verdict (holds / tie / fails), the numbers compared; then, one
    line each, what the checks with a ``scope`` can and cannot show."""
    table = "| claim | kind | verdict | measured (mean over seeds; ± SE) |\n|---|---|---|---|\n" + "\n".join(
        f"| {c.claim} | {c.kind} | {c.verdict if c.verdict == HOLDS else f'**{c.verdict}**'} | {c.detail} |"
        for c in checks)
    scopes = dict.fromkeys((c.claim.split(" ")[0].rstrip(":"), c.scope) for c in checks if c.scope)
    return table + "".join(f"\n\n*Claim {n}:* {text}" for n, text in scopes)


def paper_comparison(rows: Sequence[dict], plain: str, skewed: str) -> str:
    """A Markdown table setting the paper's Table 2 (:data:`PAPER_TABLE2`) next to ``rows``: per dataset FedHDP's
    best r and, there, ``Acc_g``, ``Δ_g`` and ``Δ_l``; the baselines' ``Acc_g``; FedHDP's ``Acc_g`` at r = 0.  The
    values from ``rows`` are means ± sd over seeds (``ddof=1``; "(every seed)" where the seeds agree exactly, "± <0.01"
    where the sd rounds to zero); the paper's are single runs."""
    fedhdp = _ratio_method()

    def here(ds, method, key, ratio=None):
        m, se, n = _ms(_by(rows, ds, method, ratio), key)
        if n <= 1:
            return f"{m:.2f}"
        sd = se * math.sqrt(n)
        return f"{m:.2f} (every seed)" if sd == 0 else _pm(m, sd, "")

    lines = ["| quantity | paper: non-IID MNIST | here: " + plain + " | paper: skewed MNIST | here: " + skewed + " |",
             "|---|---|---|---|---|"]
    best = {"plain": best_ratio(rows, plain), "skewed": best_ratio(rows, skewed)}
    ds = {"plain": plain, "skewed": skewed}
    cells = [("FedHDP's best r (grid)", lambda k: f"{PAPER_TABLE2[k]['best_r']:g}", lambda k: f"{best[k]:g}")]
    for key, label in (("acc_g", "FedHDP Acc_g at its best r"), ("delta_g", "Δ_g at its best r"),
                       ("delta_l", "Δ_l at its best r")):
        paper_key = "fedhdp_acc_g" if key == "acc_g" else key
        cells.append((label, lambda k, pk=paper_key: f"{PAPER_TABLE2[k][pk]:g}",
                      lambda k, key=key: here(ds[k], fedhdp, key, best[k])))
    for method in FEDHDP_METHODS:
        if method_spec(method).takes_ratio:
            continue
        cells.append((f"{method_spec(method).label} Acc_g", lambda k, m=method: f"{PAPER_TABLE2[k][m]:g}",
                      lambda k, m=method: here(ds[k], m, "acc_g")))
    cells.append(("FedHDP Acc_g at r = 0", lambda k: f"{PAPER_TABLE2[k]['r0_acc_g']:g}",
                  lambda k: here(ds[k], fedhdp, "acc_g", 0.0)))
    for label, paper, ours in cells:
        lines.append(f"| {label} | {paper('plain')} | {ours('plain')} | {paper('skewed')} | {ours('skewed')} |")
    return "\n".join(lines)
