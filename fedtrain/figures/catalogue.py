"""The book's experiment figures (and the tables of stored runs) by name: one call, or
``python -m fedtrain.figures NAME``, redraws one as its chapter shows it.

:data:`CATALOGUE` maps each name to its chapter, what it shows and how it is drawn; most are read from the
committed results (:func:`fedtrain.book_results.committed_store`: the store of the empirical chapters and the real-image
grids of Fig. 6 and Fig. 3(d)), FedHDP's from its committed claim runs, the advisor's and the audit's power from their
committed check files; those marked "computed when drawn" train or simulate (seconds to minutes on one CPU).  Figures
are written as PNG, tables as Markdown.  ``python -m fedtrain.figures`` (or ``--list``) lists the names.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence


from fedtrain.advise import load_check, plot_check
from fedtrain.audit_power import load_power, plot_power
from fedtrain.book_results import committed_store, figure_rows, store_note, theory_rows
from fedtrain.config import RunConfig
from fedtrain.data.registry import load_dataset
from fedtrain.fedhdp.experiments import grid_setting
from fedtrain.fedhdp.figures import plot_claims_vs_ratio, plot_theory_link
from fedtrain.fedhdp.tables import TABLE_PARTS, format_table, table_rows
from fedtrain.fedhdp.theory_link import compare_with_theory
from fedtrain.fig3d_checks import complete_rows
from fedtrain.fig6_checks import complete_blocks
from fedtrain.figures.deep import fig6_setting_text, plot_fig6, plot_fig6_lambda_profile, plot_rotated_masked_examples
from fedtrain.figures.empirical import (plot_lambda_sweep, plot_privacy_utility, plot_privacy_utility_panels,
                                        plot_training_curves)
from fedtrain.figures.privacy_audit import plot_audit_scores
from fedtrain.figures.style import settings_text, use_book_style
from fedtrain.figures.theory import plot_theory_meets_training
from fedtrain.presets import FEDHDP_GRIDS, REAL_IMAGE_GRIDS, THEORY_SETUP, deep_grid
from fedtrain.testing import tiny_federated

__all__ = ["BookFigure", "BookTable", "CatalogueEntry", "CATALOGUE", "BOOK_FIGURES", "book_figure", "main"]

#: The repository's ``book/data`` folder: the committed check files and FedHDP's committed claim runs.
BOOK_DATA = Path(__file__).resolve().parents[2] / "book" / "data"


class BookFigure:
    """A figure of the book: the matplotlib ``figure``, the ``rows`` it plots, its ``provenance`` (which
    store file, engine version, commit and scale it read; for the caption's footnote), the ``settings``
    of the runs (for the caption) and ``extra`` (what the plot function computed, e.g. a summary)."""

    def __init__(self, figure, rows, provenance: str, settings: str, extra: Any = None):
        self.figure, self.rows, self.provenance, self.settings, self.extra = figure, rows, provenance, settings, extra

    def savefig(self, path, **kw) -> None:
        """Write the figure (``Figure.savefig`` at twice the screen density unless ``dpi`` is given)."""
        kw.setdefault("dpi", 200)
        kw.setdefault("bbox_inches", "tight")
        self.figure.savefig(path, **kw)


def _store_figure(store, fig_name: str, dataset: str):
    rows = figure_rows(store, fig_name, dataset)
    return rows, "; ".join(store_note(store, dataset).split("\n"))


def _fig_local_fedavg(store):
    rows, prov = _store_figure(store, "fig2", "school")
    return BookFigure(plot_training_curves(rows), rows, prov, settings_text(rows))


def _fig_lambda(store, dataset):
    rows, prov = _store_figure(store, "fig5" if dataset == "school" else "fig3", dataset)
    eps_values = sorted({r.config.eps for r in rows})
    return BookFigure(plot_lambda_sweep(rows, eps_values), rows, prov, settings_text(rows))


def _fig_privacy_utility_school(store):
    rows, prov = _store_figure(store, "fig3", "school")
    zoom = max(e for e in {r.config.eps for r in rows} if math.isfinite(e))
    return BookFigure(plot_privacy_utility(rows, zoom_eps=zoom), rows, prov, settings_text(rows))


def _fig_privacy_utility_standins(store):
    panels = {name: figure_rows(store, "fig3", name) for name in ("vehicle-standin", "gleam-standin")}
    prov = " / ".join("; ".join(store_note(store, name).split("\n")) for name in panels)
    settings = "; ".join(f"{name}: {settings_text(rows)}" for name, rows in panels.items())
    return BookFigure(plot_privacy_utility_panels(panels), panels, prov, settings)


def _fig_overhead(store):
    rows, prov = _store_figure(store, "fig4", "vehicle-standin")
    return BookFigure(plot_privacy_utility(rows), rows, prov, settings_text(rows))


def _fig_theory(store):
    trained = theory_rows(store)
    fig, summary = plot_theory_meets_training(trained, num_silos=THEORY_SETUP["num_silos"], tau=THEORY_SETUP["tau"],
                                              n=THEORY_SETUP["n"], sigma=THEORY_SETUP["sigma"])
    return BookFigure(fig, trained, "; ".join(store_note(store, "theory").split("\n")),
                      f"K={THEORY_SETUP['num_silos']} silos, n={THEORY_SETUP['n']}", extra=summary)


def _fig_audit_scores(_store=None):
    from fedtrain import audit  # the audits load scipy.stats
    # the privacy-audit chapter's setting: 3 silos of 100 records, 4 features, full batches, claimed ε = 2
    base = tiny_federated("regression", num_silos=3, dim=4, n_range=(100, 100), seed=0)
    cfg = RunConfig("tiny", "local", eps=2.0, delta=1e-5, lam=1.0, lr=0.5, rounds=20, batch_size=4096)
    honest = audit.audit_one_run(cfg, base, num_canaries=1000)
    with audit.broken_engine(noise_factor=0.2):
        broken = audit.audit_one_run(cfg, base, num_canaries=1000)
    fig = plot_audit_scores([("engine as built", honest), ("noise × 0.2 (broken)", broken)])
    return BookFigure(fig, None, "computed when drawn: fedtrain.testing.tiny_federated (synthetic), no stored results",
                      "R=20 rounds, full batches, C=1, δ=1e-05, 1,000 canaries", extra={"honest": honest, "broken": broken})


class BookTable:
    """A table of the book: its Markdown ``text``, the ``rows`` it summarizes, their ``provenance`` and ``settings``."""

    def __init__(self, text: str, rows, provenance: str, settings: str):
        self.text, self.rows, self.provenance, self.settings = text, rows, provenance, settings

    def savefig(self, path, **_kw) -> None:
        """Write the table's Markdown to ``path`` (named as :meth:`BookFigure.savefig`, so that either is saved alike)."""
        Path(path).write_text(self.text + "\n", encoding="utf-8")


# --- Fig. 6 and Fig. 3(d) on real images: the committed grids --------------------------------------------------
def _fig6_rows(store, grid: str):
    rows, configs = store.grid_rows(grid), deep_grid(grid)
    eps_values = sorted(REAL_IMAGE_GRIDS[grid]["eps"])
    shown = [r for e in eps_values for r in complete_blocks(rows, configs, e)[0]]  # whole seeds only
    return shown, eps_values, store.note(REAL_IMAGE_GRIDS[grid]["dataset"]).replace("\n", "; ")


def _fig6(store, grid: str = "fig6-fashion"):
    shown, eps_values, prov = _fig6_rows(store, grid)
    fig = plot_fig6(shown, eps_values=eps_values, empty_text="no whole seed yet")
    return BookFigure(fig, shown, prov, fig6_setting_text(shown) if shown else "no complete seed yet")


def _fig6_lambda(store, grid: str = "fig6-fashion"):
    shown, eps_values, prov = _fig6_rows(store, grid)
    fig = plot_fig6_lambda_profile(shown, eps_values=eps_values, empty_text="no whole seed yet")
    return BookFigure(fig, shown, prov, fig6_setting_text(shown) if shown else "no complete seed yet")


def _fig3d(store, grid: str = "fig3d-fashion"):
    shown = complete_rows(store.grid_rows(grid), deep_grid(grid))  # each privacy level's complete seeds
    fig = plot_privacy_utility(shown, note=": 30 silos, 5 of 10 classes each", empty_text="no whole seed yet")
    prov = store.note(REAL_IMAGE_GRIDS[grid]["dataset"]).replace("\n", "; ")
    return BookFigure(fig, shown, prov, settings_text(shown) if shown else "no complete seed yet")


def _fig_deep_examples(_store=None, grid: str = "fig6-fashion"):
    g = REAL_IMAGE_GRIDS[grid]
    data = load_dataset(g["dataset"], **dict(g["dataset_options"], mask_ratio=0.25))
    return BookFigure(plot_rotated_masked_examples(data), None, f"the {data.name} files (no stored results)",
                      f"{data.num_silos} silos, {int(data.train_sizes.min())} training images per silo, mask ratio 0.25")


# --- FedHDP (the practice chapter): its committed claim runs and its theory link ---------------------------------
def _fedhdp_claims(name: str = "fedhdp-claims-fashion"):
    store = committed_store()
    rows = store.client_rows(name)
    header = store.client_header(name)
    prov = header["provenance"]
    return rows, grid_setting(rows, prov), f"{header['manifest']['file']}: grid {prov['grid']}, {prov['runs']} runs"


def _fig_fedhdp_claims(_store=None):
    rows, setting, prov = _fedhdp_claims()
    fig = plot_claims_vs_ratio(rows, FEDHDP_GRIDS["claims-fashion"]["datasets"], setting=setting)
    return BookFigure(fig, rows, prov, setting)


def _table_fedhdp(dataset_index: int):
    def make(_store=None):
        rows, setting, prov = _fedhdp_claims()
        ds = FEDHDP_GRIDS["claims-fashion"]["datasets"][dataset_index]
        summary = table_rows([r for r in rows if r["config"]["dataset"] == ds])
        text = format_table(summary, parts=TABLE_PARTS, title=f"{ds}: mean over {summary[0]['n']} seeds (across-client "
                            f"variance ×100 in parentheses; ± sd over seeds). {setting}")
        return BookTable(text, summary, prov, setting)
    return make


def _fig_fedhdp_theory_link(_store=None):
    link = compare_with_theory(reps=20)
    return BookFigure(plot_theory_link(link), None, "computed when drawn: synthetic linear regression, no stored results",
                      f"N={link.N} clients, 20 datasets per point", extra=link)


# --- the advisor's check and the audits' power: committed check files --------------------------------------------
def _fig_advisor(name: str, title: str = ""):
    def make(_store=None):
        check = load_check(BOOK_DATA / name)
        return BookFigure(plot_check(check["advice"], title=title), check["advice"],
                          f"{name}: {check['command']} (commit {check['commit'][:10]})", str(check["settings"]))
    return make


def _fig_audit_power(_store=None):
    power = load_power()
    prov = power["provenance"]
    return BookFigure(plot_power(power["points"]), power["points"], f"{prov['command']} (commit {prov['commit'][:10]})",
                      f"{len(power['points'])} (audit, ε, noise factor) points")


@dataclass(frozen=True)
class CatalogueEntry:
    """One figure or table of the book: its ``chapter`` (the notebook's name), ``what`` it shows, and ``make`` (the
    committed results store, or None where ``needs_store`` is False → :class:`BookFigure` or :class:`BookTable`);
    ``suffix`` is the file type ``python -m fedtrain.figures`` writes."""

    chapter: str
    what: str
    make: Callable[[Any], "BookFigure | BookTable"]
    needs_store: bool = True
    suffix: str = ".png"


def _entry(chapter: str, what: str, make, *, store: bool = True, suffix: str = ".png") -> CatalogueEntry:
    return CatalogueEntry(chapter, what, make, store, suffix)


#: Every experiment figure of the book, and the tables of FedHDP's stored runs, by name.
CATALOGUE: dict[str, CatalogueEntry] = {
    "local-vs-fedavg": _entry("empirical_local_vs_fedavg", "Fig. 2: Local, FedAvg and finetuning on School",
                              _fig_local_fedavg),
    "lambda-school": _entry("empirical_local_vs_fedavg", "Fig. 5: MR-MTL against λ on School",
                            lambda st: _fig_lambda(st, "school")),
    "privacy-utility-school": _entry("empirical_privacy_utility", "Fig. 3 (b): every method against ε on School",
                                     _fig_privacy_utility_school),
    "privacy-utility-standins": _entry("empirical_privacy_utility", "Fig. 3 (a, c): the Vehicle and GLEAM stand-ins",
                                       _fig_privacy_utility_standins),
    "lambda-vehicle-standin": _entry("empirical_privacy_utility", "Fig. 5 on the Vehicle stand-in",
                                     lambda st: _fig_lambda(st, "vehicle-standin")),
    "lambda-gleam-standin": _entry("empirical_privacy_utility", "Fig. 5 on the GLEAM stand-in",
                                   lambda st: _fig_lambda(st, "gleam-standin")),
    "overhead": _entry("empirical_privacy_utility", "Fig. 4: the privacy overhead of Ditto and IFCA", _fig_overhead),
    "theory-meets-training": _entry("theory_meets_training", "closed-form E(λ) next to trained MR-MTL", _fig_theory),
    "audit-scores": _entry("privacy_audit", "the one-run audit's canary scores, engine as built and broken "
                           "(computed when drawn)", _fig_audit_scores, store=False),
    "audit-power": _entry("privacy_audit", "the audits' power: the largest noise factor each audit catches",
                          _fig_audit_power, store=False),
    "advisor-school": _entry("lambda_advisor", "predicted against swept λ on School", _fig_advisor(
        "advisor_school_check.json"), store=False),
    "advisor-school-post-noise": _entry("lambda_advisor", "the same with the prox term added after the noise",
                                        _fig_advisor("advisor_school_check_post_noise.json",
                                                     "prox term added after the noise (post-noise)"), store=False),
    "deep-examples": _entry("deep_models", "Fig. A1: rotated & masked Fashion-MNIST silos (reads the image files)",
                            _fig_deep_examples, store=False),
    "fig6-fashion": _entry("deep_models", "Fig. 6: accuracy against the mask ratio on rotated & masked Fashion-MNIST",
                           _fig6),
    "fig6-fashion-lambda": _entry("deep_models", "Fig. 6's check (d): MR-MTL against λ per mask ratio", _fig6_lambda),
    "fig3d-fashion": _entry("deep_models", "Fig. 3 (d): every method against ε on label-skewed Fashion-MNIST", _fig3d),
    "fedhdp-claims-fashion": _entry("fedhdp_practice", "FedHDP's accuracy against its weight ratio r (Fashion-MNIST)",
                                    _fig_fedhdp_claims, store=False),
    "fedhdp-table-fashion": _entry("fedhdp_practice", "Table 2 (plain Fashion-MNIST split): the runs' means",
                                   _table_fedhdp(0), store=False, suffix=".md"),
    "fedhdp-table-fashion-skewed": _entry("fedhdp_practice", "Table 2 (skewed split): the runs' means",
                                          _table_fedhdp(1), store=False, suffix=".md"),
    "fedhdp-theory-link": _entry("fedhdp_practice", "FedHDP trained against the closed form (computed when drawn)",
                                 _fig_fedhdp_theory_link, store=False),
}

#: name → (chapter, what it shows), for every entry of :data:`CATALOGUE`.
BOOK_FIGURES: dict[str, tuple[str, str]] = {name: (e.chapter, e.what) for name, e in CATALOGUE.items()}


def book_figure(name: str, store=None) -> "BookFigure | BookTable":
    """Draw the book's figure (or table) ``name`` (a key of :data:`CATALOGUE`) as the chapter shows it, from the
    committed results store (``store``, default :func:`fedtrain.book_results.committed_store`) where it reads one.

    Example (the command under each figure of the book): ``python -m fedtrain.figures local-vs-fedavg``
    writes ``local-vs-fedavg.png``.
    """
    if name not in CATALOGUE:
        raise ValueError(f"name must be one of {sorted(CATALOGUE)} (got {name!r})")
    entry = CATALOGUE[name]
    if store is None and entry.needs_store:
        store = committed_store()
    return entry.make(store)


def catalogue_text() -> str:
    """The catalogue as lines ``NAME  chapter: what it shows``."""
    width = max(map(len, CATALOGUE))
    return "\n".join(f"{name:<{width}}  {e.chapter}: {e.what}" for name, e in CATALOGUE.items())


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fedtrain.figures NAME [-o FILE]``: write the book's figure NAME (PNG) or table NAME (Markdown),
    default ``NAME.png`` / ``NAME.md``; with no NAME, or ``--list``, list the names."""
    import matplotlib

    matplotlib.use("Agg")
    p = argparse.ArgumentParser(prog="python -m fedtrain.figures", description=main.__doc__)
    p.add_argument("name", nargs="?", choices=sorted(CATALOGUE), metavar="NAME",
                   help="a figure of the catalogue (see --list)")
    p.add_argument("-o", "--output", default=None, help="output file (default: NAME.png, or NAME.md for a table)")
    p.add_argument("--list", action="store_true", help="list the catalogue's names and exit")
    args = p.parse_args(argv)
    if args.list or args.name is None:
        print(catalogue_text())
        return 0
    use_book_style()
    out = args.output or f"{args.name}{CATALOGUE[args.name].suffix}"
    book_figure(args.name).savefig(out)
    print(f"wrote {out}")
    return 0
