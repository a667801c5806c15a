"""The book's build-level fixes (``tools/fedbook_sphinx_fixes.py``): alt text from a figure's caption (math as
plain symbols, the first sentences), path-like alt texts recognised, the footer's version and date."""
from __future__ import annotations

import sys
from pathlib import Path

from docutils import nodes

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import fedbook_sphinx_fixes as fx  # noqa: E402


def _figure(*caption_parts: nodes.Node) -> tuple[nodes.figure, nodes.image]:
    image = nodes.image(uri="_images/abc.png")
    fig = nodes.figure("", image, nodes.caption("", "", *caption_parts), nodes.legend("", nodes.paragraph(
        "", "Regenerate: fedtheory.figures.plot()")))
    return fig, image


def test_tex_to_plain():
    assert fx.tex_to_plain(r"\lambda^*") == "λ*"
    assert fx.tex_to_plain(r"\sigma^2_{loc} = \frac{\sigma^2}{n}") == "σ²_loc = σ²/n"
    assert fx.tex_to_plain(r"\mathcal E(\lambda)") == "E(λ)"
    assert fx.tex_to_plain(r"\tau\in\{0.03,0.08\}") == "τ∈{0.03,0.08}"


def test_alt_text_is_the_caption_with_plain_math_not_the_legend():
    fig, image = _figure(nodes.Text("Error against "), nodes.math("", r"\lambda"), nodes.Text(" at three "),
                         nodes.math("", r"\tau"), nodes.Text("."))
    fx._set_alt_text(None, nodes.section("", fig), "page")
    assert image["alt"] == "Error against λ at three τ."


def test_long_caption_is_cut_at_a_sentence_end():
    first = "MR-MTL's error against λ at three levels of heterogeneity."
    fig, image = _figure(nodes.Text(first + " " + "The closed-form error of Lemma 6.7 at the defaults. " * 8))
    alt = fx.alt_for(image)
    assert alt.startswith(first) and alt.endswith(".") and len(alt) <= fx.ALT_CHARS


def test_an_existing_alt_text_is_kept_unless_it_is_a_path_or_a_name():
    fig, image = _figure(nodes.Text("What it shows."))
    image["alt"] = "a square"
    fx._set_alt_text(None, nodes.section("", fig), "page")
    assert image["alt"] == "a square"
    for bad in ("../_images/abc.png", "fedtheory.figures.secagg.plot_widget", "plot_widget()"):
        image["alt"] = bad
        fx._set_alt_text(None, nodes.section("", fig), "page")
        assert image["alt"] == "What it shows.", bad
    assert not fx.PATHLIKE_ALT.search("DP-SGD's loss, add/remove-one adjacency")


def test_footer_version_and_date(monkeypatch):
    assert fx.package_version(REPO) == __import__("tomllib").loads(
        (REPO / "pyproject.toml").read_text())["project"]["version"]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    assert fx.build_date() == "2027-01-15"


def test_a_caption_is_not_cut_after_an_abbreviation():
    text = ("MR-MTL's gain over each endpoint against ε. The closed-form gains over local training and FedAvg (Props. "
            "6.5 and 6.6; left) and the three errors. " + "More words here. " * 20)
    fig, image = _figure(nodes.Text(text))
    alt = fx.alt_for(image)
    assert not alt.endswith("(Props.") and "6.5 and 6.6" in alt, alt


def test_saved_ipywidgets_state_is_not_written_into_the_page():
    # a notebook executed by the build keeps its ipywidgets' state; MyST-NB registers it as a page script
    from types import SimpleNamespace

    state = (None, {"type": "application/vnd.jupyter.widget-state+json", "body": "{}"})
    other = ("https://example.org/x.js", {})
    env = SimpleNamespace(docname="book/tuning_cost", nb_metadata={
        "book/tuning_cost": {"js_files": {fx.IPYWIDGETS_STATE_KEY: state, "other": other}},
        "book/secagg": {"js_files": {fx.IPYWIDGETS_STATE_KEY: state}}})
    fx._drop_ipywidgets_state(SimpleNamespace(env=env), None)
    assert env.nb_metadata["book/tuning_cost"]["js_files"] == {"other": other}
    assert fx.IPYWIDGETS_STATE_KEY in env.nb_metadata["book/secagg"]["js_files"]   # only the page just read
    fx._drop_ipywidgets_state(SimpleNamespace(env=SimpleNamespace(docname="book/intro")), None)   # no notebook data


def test_myst_nb_still_names_the_state_entry_as_the_fix_expects():
    # the fix depends on MyST-NB's key: if a MyST-NB upgrade renames it, this fails rather than the pages growing
    import inspect

    from myst_nb.core import render

    assert f'"{fx.IPYWIDGETS_STATE_KEY}"' in inspect.getsource(render.NbElementRenderer.render_nb_finalise)
