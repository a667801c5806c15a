"""Test the browser test: ``tools/browser_check.py`` must pass a clean planted page and fail on each
planted problem (untypeset formula, raw TeX, frozen widget, broken image, console error, wide table,
a live widget whose formula differs from fedtheory's, a squashed image, a page wider than a phone, alt text
that is a path, a live plot unreadable in dark mode, a typed value with no message, authoring syntax).

The pages are tiny HTML files written to a temporary folder, with the vendored MathJax (``_vendor/``,
written by ``make venv``) where a page typesets math; one Chromium session checks all of them.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import browser_check  # noqa: E402

from fedtheory.widgets import figure_widget  # noqa: E402

MATHJAX = REPO / "_vendor" / "mathjax"
UPLOT = REPO / "_vendor" / "uplot"
LIVE_JS = REPO / "book" / "_static" / "fedbook_live.js"


#: the theme's page background in dark mode (pydata-sphinx-theme), for the planted live pages
DARK_CSS = "<style>html[data-theme=dark] body {background: #121212}</style>"


def _page(body: str, mathjax: bool = True, live: bool = False, head: str = "") -> str:
    head += ('<script>window.MathJax = {tex: {inlineMath: [["\\\\(", "\\\\)"]]}};</script>'
            '<script defer src="_vendor/mathjax/tex-mml-chtml.js"></script>') if mathjax else ""
    if live:
        head += DARK_CSS + ('<link rel="stylesheet" href="_vendor/uplot/uPlot.min.css">'
                 '<script src="_vendor/uplot/uPlot.iife.min.js"></script><script src="fedbook_live.js"></script>')
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>planted</title>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>{head}</head>"
            f"<body><main><article class='bd-article' style='max-width:700px'>{body}</article></main></body></html>")


def _png(path: Path, w: int, h: int) -> None:
    fig = plt.figure(figsize=(w / 100, h / 100), dpi=100)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _moving(a: float):
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [0, a])
    return fig


def _frozen(a: float):  # ignores its slider: every frame is the same figure
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [0, 1])
    return fig


def _widget_html(plot) -> str:
    w = figure_widget(plot, a=widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.5))
    html = w.static_html()
    w.close()
    return html


def _live_html(tamper: tuple[str, str] | None = None) -> str:
    """The mean-estimation chapter's live E(λ) widget; ``tamper`` replaces a piece of its generated
    JavaScript (a formula that no longer equals fedtheory's)."""
    from fedtheory.widgets_live import live_html

    controls = dict(K=widgets.IntSlider(value=20, min=2, max=100), n=widgets.IntSlider(value=200, min=10, max=2000),
                    sigma=widgets.FloatSlider(value=0.4, min=0.05, max=2.0),
                    tau=widgets.FloatLogSlider(value=0.08, base=10, min=-2.5, max=0),
                    eps=widgets.FloatLogSlider(value=0.25, base=10, min=-2, max=1),
                    delta=widgets.FloatLogSlider(value=1e-5, base=10, min=-10, max=-2), c=widgets.fixed(1.0))
    html = live_html("mean_estimation.error_curve", controls)
    if tamper:
        assert tamper[0] in html
        html = html.replace(*tamper)
    return html


GOOD = ("<h1>A clean page</h1><p>Inline math <span class='math notranslate nohighlight'>\\(x^2+\\lambda\\)</span> "
        "and a display:</p><div class='math notranslate nohighlight'>\\[\\frac{a}{b}\\]</div>"
        "<table><tr><th>a</th><td>1</td></tr></table>")

PAGES = {
    "good.html": lambda: _page(GOOD + _widget_html(_moving)),
    "untypeset.html": lambda: _page("<p>MathJax never runs here: "
                                    "<span class='math notranslate nohighlight'>\\(\\sigma^2\\)</span></p>",
                                    mathjax=False),
    "raw_dollar.html": lambda: _page("<p>The error is $\\tau^2$ per coordinate.</p>"),
    "frozen.html": lambda: _page(_widget_html(_frozen)),
    "broken_image.html": lambda: _page("<p>figure:</p><img src='missing.png' alt='missing'>"),
    "console.html": lambda: _page("<p>text</p><script>undefined_function_of_the_page();</script>"),
    "wide_table.html": lambda: _page("<table style='width:1600px'><tr><th>derived</th><td>printed</td></tr></table>"),
    # the same wide table inside its own scroll box (the book's CSS does this) stays within the column
    "scrolling_table.html": lambda: _page("<div style='max-width:100%;overflow-x:auto'><table style='width:1600px'>"
                                          "<tr><th>derived</th><td>printed</td></tr></table></div>"),
    "ipywidget.html": lambda: _page("<div class='jupyter-widgets widget-slider'>frozen slider</div>"),
    "live_good.html": lambda: _page(_live_html(), mathjax=False, live=True),
    # E(λ) with K + 1 for K in its denominator: off by a few per cent
    "live_wrong_formula.html": lambda: _page(_live_html(("/(K*Math.pow(lam + 1, 2))", "/((K + 1)*Math.pow(lam + 1, 2))")),
                                             mathjax=False, live=True),
    # a square image with an inline height that overrides its shape (what retina outputs carried)
    "squashed.html": lambda: _page("<img src='square.png' alt='a square' style='width:300px;height:120px'>"),
    # the same image with its height following its width
    "in_aspect.html": lambda: _page("<img src='square.png' alt='a square' style='max-width:100%;height:auto'>"),
    # a long command that cannot break: the page is wider than a phone
    "wide_page.html": lambda: _page("<p><code style='white-space:nowrap'>fedtrain sweep --preset paper --pack results "
                                    "--datasets school,vehicle,gleam,adni --eps 0.5,1,2,4,8 --lam 0,0.1,1,10</code></p>"),
    "alt_path.html": lambda: _page("<img src='square.png' alt='_images/abc123.png'>"
                                   "<img src='square.png' alt='fedtheory.figures.secagg.plot_widget'>"
                                   "<img src='square.png' alt='The error \\mathcal E(\\lambda) against λ.'>"),
    "markup.html": lambda: _page("<p>Chapters link here with <code>{term}</code> references.</p>"),
    # axes drawn in the theme's text colour, here near-black: unreadable on the dark background
    "live_dark.html": lambda: _page(_live_html(), mathjax=False, live=True,
                                    head="<style>html[data-theme=dark] {--pst-color-text-base: #202020}</style>"),
    # no place to say why a typed value is not used
    "live_no_message.html": lambda: _page(_live_html(("class=\"fedbook-live-msg\"", "class=\"gone\"")),
                                          mathjax=False, live=True),
    # τ ignored (the notebook's default used instead): moving τ changes nothing
    "live_stuck.html": lambda: _page(_live_html(("var t2 = p.tau * p.tau;", "var t2 = 0.0064;")),
                                     mathjax=False, live=True),
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    if not (MATHJAX / "tex-mml-chtml.js").exists():
        pytest.fail(f"{MATHJAX} missing: run `make venv` (tools/vendor_js.sh) first")
    root = tmp_path_factory.mktemp("planted")
    shutil.copytree(MATHJAX, root / "_vendor" / "mathjax")
    shutil.copytree(UPLOT, root / "_vendor" / "uplot")
    shutil.copy(LIVE_JS, root / "fedbook_live.js")
    _png(root / "square.png", 200, 200)
    for name, make in PAGES.items():
        (root / name).write_text(make(), encoding="utf-8")
    found = browser_check.check_book(root, pages=list(PAGES))
    print(browser_check.format_reports(found))
    return {r.page: r for r in found}


def kinds(report) -> set[str]:
    return {kind for kind, _ in report.problems}


def test_clean_page_passes(reports):
    assert reports["good.html"].problems == []
    assert reports["good.html"].widgets == 1


def test_untypeset_formula_fails(reports):
    assert kinds(reports["untypeset.html"]) == {"math"}
    assert "sigma" in reports["untypeset.html"].problems[0][1]


def test_raw_dollar_fails(reports):
    assert kinds(reports["raw_dollar.html"]) == {"raw-tex"}


def test_frozen_widget_fails(reports):
    assert kinds(reports["frozen.html"]) == {"widget"}
    assert "does not change" in reports["frozen.html"].problems[0][1]


def test_broken_image_fails(reports):
    assert "image" in kinds(reports["broken_image.html"])  # and the 404 in the console


def test_console_error_fails(reports):
    assert kinds(reports["console.html"]) == {"console"}
    assert "undefined_function_of_the_page" in reports["console.html"].problems[0][1]


def test_wide_table_fails(reports):
    assert kinds(reports["wide_table.html"]) == {"table", "page-width"}  # and it pushes a phone's page sideways


def test_wide_table_in_its_own_scroll_box_passes(reports):
    assert kinds(reports["scrolling_table.html"]) == set()


def test_ipywidget_from_saved_state_fails(reports):
    assert kinds(reports["ipywidget.html"]) == {"widget"}


def test_live_widget_passes_when_it_computes_fedtheorys_numbers(reports):
    r = reports["live_good.html"]
    assert r.problems == []
    assert r.live == 1 and r.live_compared == browser_check.LIVE_TRIALS + 1  # random settings + a typed value


def test_live_widget_with_a_wrong_formula_fails(reports):
    r = reports["live_wrong_formula.html"]
    assert kinds(r) == {"live"}
    assert any("'E'" in d or " E[" in d for _, d in r.problems)


def test_live_widget_that_ignores_a_slider_fails(reports):
    r = reports["live_stuck.html"]
    assert kinds(r) == {"live"}
    assert any('moving "tau" does not change the plotted data' in d for _, d in r.problems)


def test_squashed_image_fails_at_both_widths(reports):
    r = reports["squashed.html"]
    assert kinds(r) == {"aspect"}
    assert r.layout[1280]["in_aspect"] == 0 and r.layout[390]["in_aspect"] == 0
    assert abs(r.layout[1280]["worst"] - 2.5) < 0.05  # 300/120 drawn for a 1:1 image


def test_image_that_keeps_its_shape_passes(reports):
    r = reports["in_aspect.html"]
    assert r.problems == []
    assert r.layout[1280] == {"images": 1, "in_aspect": 1, "worst": 1, "page_width": 1280}
    assert r.layout[390]["in_aspect"] == 1 and r.layout[390]["page_width"] == 390


def test_page_wider_than_a_phone_fails(reports):
    r = reports["wide_page.html"]
    assert kinds(r) == {"page-width"}
    assert r.layout[390]["page_width"] > 390 and "<code" in r.problems[0][1]


def test_alt_text_that_is_a_path_or_a_function_name_fails(reports):
    r = reports["alt_path.html"]
    assert kinds(r) == {"alt"} and len(r.problems) == 3


def test_authoring_syntax_shown_to_readers_fails(reports):
    assert kinds(reports["markup.html"]) == {"markup"}


def test_live_plot_unreadable_in_dark_mode_fails(reports):
    r = reports["live_dark.html"]
    assert kinds(r) == {"dark"}
    assert all(light >= browser_check.MIN_CONTRAST for light, _ in r.contrast)


def test_live_plot_follows_the_theme(reports):
    r = reports["live_good.html"]
    assert r.contrast and all(min(pair) >= browser_check.MIN_CONTRAST for pair in r.contrast), r.contrast


def test_typed_value_without_a_message_fails(reports):
    r = reports["live_no_message.html"]
    assert kinds(r) == {"live"}
    assert any("no message beside the box" in d for _, d in r.problems)
