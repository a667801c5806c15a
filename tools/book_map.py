"""The chapter-dependency diagram of the book's introduction, drawn with matplotlib.

Usage: ``python tools/book_map.py [OUT.svg]`` (default ``book/_static/reading_paths.svg``).  The chapters, the
parts they sit in, which chapters each one builds on, and the two reading paths are data (:data:`CHAPTERS`,
:data:`PRACTITIONER_PATH`); ``tests/book/test_book_map.py`` holds the data equal to ``_toc.yml`` and the committed
SVG equal to a fresh drawing, so a new chapter cannot be left off the map.
"""
from __future__ import annotations

import io
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "book" / "_static" / "reading_paths.svg"

#: chapter file stem -> (short title, part, (x, layer) on the map, chapters it builds on directly); a chapter
#: that only needs what its prerequisites need lists just those (the map leaves out implied arrows)
CHAPTERS: dict[str, tuple[str, str, tuple[float, int], list[str]]] = {
    "privacy_primer": ("Privacy primer", "Foundations", (2.0, 0), []),
    "secagg": ("Secure aggregation", "Theory", (0.5, 1), ["privacy_primer"]),
    "silo_dp": ("Silo-specific DP", "Foundations", (2.0, 1), ["privacy_primer"]),
    "privacy_audit": ("Privacy audit", "Experiments", (3.5, 1), ["privacy_primer"]),
    "mean_estimation": ("Mean estimation", "Theory", (1.25, 2), ["silo_dp"]),
    "empirical_local_vs_fedavg": ("Local vs FedAvg", "Experiments", (2.75, 2), ["silo_dp"]),
    "fedhdp_theory": ("FedHDP theory", "Theory", (0.5, 3), ["mean_estimation"]),
    "tuning_cost": ("Tuning cost", "Theory", (1.5, 3), ["mean_estimation"]),
    "theory_meets_training": ("Theory meets training", "Experiments", (2.5, 3),
                              ["mean_estimation", "empirical_local_vs_fedavg"]),
    "empirical_privacy_utility": ("Privacy-utility", "Experiments", (3.5, 3), ["empirical_local_vs_fedavg"]),
    "fedhdp_verification": ("FedHDP verification", "Theory", (0.5, 4), ["fedhdp_theory"]),
    "fedhdp_practice": ("FedHDP in practice", "Experiments", (1.5, 4), ["fedhdp_theory"]),
    "lambda_advisor": ("λ advisor", "Experiments", (2.5, 4), ["theory_meets_training"]),
    "deep_models": ("Deep models", "Experiments", (3.5, 4), ["empirical_privacy_utility"]),
    "practitioner_pipeline": ("Practitioner's pipeline", "Practice", (2.0, 5),
                              ["lambda_advisor", "tuning_cost", "secagg", "privacy_audit"]),
    "pets_case_study": ("PETs case study", "Practice", (2.0, 6), ["practitioner_pipeline"]),
    "federate": ("Real silos on Flower", "Practice", (3.3, 6), ["practitioner_pipeline"]),
}

#: the practitioner's reading path (the student reads every chapter in the order of the sidebar)
PRACTITIONER_PATH = ["privacy_primer", "silo_dp", "empirical_local_vs_fedavg", "theory_meets_training",
                     "lambda_advisor", "practitioner_pipeline", "pets_case_study"]

_PART_COLOURS = {"Foundations": "#e8eef8", "Theory": "#eaf5e9", "Experiments": "#f6eef8", "Practice": "#fdf3e3"}


def chapters() -> list[str]:
    """Every chapter on the map."""
    return list(CHAPTERS)


def draw(out=None):
    """Draw the map; write it to ``out`` (a path or file object, SVG) when given.  Returns the figure.

    Drawn with matplotlib's default settings, whatever the caller set, so the SVG is the same everywhere."""
    import matplotlib

    matplotlib.use("Agg")
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        return _draw(out)


def _draw(out):
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch

    plt.rcParams.update({"svg.hashsalt": "fedbook", "svg.fonttype": "none", "font.size": 8.5})
    fig, ax = plt.subplots(figsize=(6.8, 5.2))
    ax.set_xlim(-0.05, 4.05)
    ax.set_ylim(6.55, -0.5)
    ax.axis("off")
    w, h = 0.95, 0.46
    pos = {stem: (x, float(layer)) for stem, (_, _, (x, layer), _) in CHAPTERS.items()}
    for stem, (_, _, _, deps) in CHAPTERS.items():
        for d in deps:
            (x0, y0), (x1, y1) = pos[d], pos[stem]
            i0 = PRACTITIONER_PATH.index(d) if d in PRACTITIONER_PATH else -9
            i1 = PRACTITIONER_PATH.index(stem) if stem in PRACTITIONER_PATH else -9
            on_path = i0 >= 0 and i1 == i0 + 1
            long = y1 - y0 > 1.5
            rad = 0.0 if not long else (0.25 if x0 < x1 else -0.25)
            ax.add_patch(FancyArrowPatch((x0, y0 + h / 2), (x1, y1 - h / 2), arrowstyle="-|>", mutation_scale=9,
                                         connectionstyle=f"arc3,rad={rad}", lw=1.8 if on_path else 0.8,
                                         color="tab:orange" if on_path else "0.5", zorder=1))
    for stem, (title, part, _, _) in CHAPTERS.items():
        x, y = pos[stem]
        on_path = stem in PRACTITIONER_PATH
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                    fc=_PART_COLOURS[part], ec="tab:orange" if on_path else "0.45",
                                    lw=1.8 if on_path else 0.7, zorder=2))
        ax.text(x, y, title, ha="center", va="center", fontsize=8, zorder=3)
    handles = [Patch(fc=c, ec="0.45", label=part) for part, c in _PART_COLOURS.items()]
    handles.append(Patch(fc="white", ec="tab:orange", lw=1.8, label="practitioner's path"))
    ax.legend(handles=handles, loc="lower left", fontsize=7.5, frameon=False, bbox_to_anchor=(0.0, 0.0))
    fig.tight_layout(pad=0.2)
    if out is not None:
        fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    return fig


def svg_text() -> str:
    """The map as SVG text (deterministic: fixed hash salt, no date)."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig = draw(buf)
    plt.close(fig)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else DEFAULT_OUT
    out.write_text(svg_text(), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
