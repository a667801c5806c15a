"""The textbook structure of the revised chapters: learning goals at the top, key takeaways at the end, 3-5
exercises each followed by its executed solution in a collapsed (``hide-cell``) code cell, and figures as
numbered MyST figures with a caption and a command that redraws them.  Chapters join ``REVISED`` as they are
revised (the goal is every chapter)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REVISED = ["empirical_local_vs_fedavg.ipynb", "empirical_privacy_utility.ipynb", "theory_meets_training.ipynb",
           "privacy_audit.ipynb", "practitioner_pipeline.ipynb", "pets_case_study.ipynb", "silo_dp.md",
           "mean_estimation.ipynb", "privacy_primer.ipynb", "fedhdp_theory.ipynb", "lambda_advisor.ipynb",
           "fedhdp_practice.ipynb", "deep_models.ipynb", "tuning_cost.ipynb", "secagg.ipynb",
           "fedhdp_verification.ipynb"]


def _cells(name: str) -> list[tuple[str, str, list[str]]]:
    """(kind, source, tags) of each cell; a MyST notebook's ``{code-cell}`` blocks are its code cells."""
    path = ROOT / "book" / name
    if name.endswith(".ipynb"):
        nb = json.loads(path.read_text(encoding="utf-8"))
        return [(c["cell_type"], "".join(c["source"]), c.get("metadata", {}).get("tags", [])) for c in nb["cells"]]
    out = []
    for i, part in enumerate(re.split(r"```\{code-cell\}[^\n]*\n", path.read_text(encoding="utf-8"))):
        if i == 0:
            out.append(("markdown", part, []))
            continue
        code, _, rest = part.partition("\n```\n")
        tags = re.findall(r":tags: \[([^\]]*)\]", code)
        out.append(("code", code, [t.strip() for t in tags[0].split(",")] if tags else []))
        out.append(("markdown", rest, []))
    return out


@pytest.mark.parametrize("name", REVISED)
def test_goals_takeaways_and_exercises(name):
    cells = _cells(name)
    text = "\n".join(s for k, s, _ in cells if k == "markdown")
    head = text[:3000]
    assert "Learning goals" in head and "Prerequisites" in head, name
    assert "## Key takeaways" in text and text.index("## Key takeaways") > len(text) // 2, name
    exercises = [i for i, (k, s, _) in enumerate(cells) if k == "markdown" and "**Exercise" in s]
    assert 3 <= len(exercises) <= 5, (name, len(exercises))
    for i in exercises:  # the next code cell is the solution, collapsed, and checks its answer
        k, src, tags = next(c for c in cells[i + 1:] if c[0] == "code")
        assert "hide-cell" in tags and "Solution" in src and "assert" in src, (name, src[:60])


@pytest.mark.parametrize("name", [n for n in REVISED if n.endswith(".ipynb")])
def test_figures_are_numbered_with_captions_and_a_command(name):
    cells = _cells(name)
    assert not any("remove-input" in t for _, _, t in cells), name  # every input can be revealed
    for kind, src, _ in cells:
        if kind == "code" and ("plt.show()" in src or "savefig" in src):
            pytest.fail(f"{name}: a figure shown without a numbered caption: {src[:80]!r}")
        for block in re.findall(r"```\{glue:figure\}.*?```", src, flags=re.S):
            assert ":name: fig-" in block and "*Regenerate:*" in block and len(block) > 300, (name, block[:80])
