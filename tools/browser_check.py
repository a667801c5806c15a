"""Open every page of a built HTML book in headless Chromium, as a reader would, and report problems.

Usage: ``python tools/browser_check.py [_build/html] [--page PATH ...]``; exit status 1 when a page
has a problem.  ``tests/book/test_browser_book.py`` runs it on the built book (``make test``) and
``tests/book/test_browser_checker.py`` on planted pages (the checks must fail on planted problems).

The pages are served by a local HTTP server (as a web host would) and opened with Debian's
``chromium`` through Selenium and Debian's ``chromedriver`` (``tools/setup_env.sh`` installs both;
nothing is downloaded at run time).  Checks per page:

``console``   errors in the browser console (JS exceptions, ``console.error``, failed loads);
``math``      math that MathJax did not typeset (a ``.math`` element with no MathJax output, or a
              MathJax error);
``raw-tex``   ``$``, ``\\(`` or ``\\[`` in the visible text outside code;
``image``     images that did not load (``naturalWidth == 0``);
``widget``    a widget whose figure does not change when a slider moves (each control of each
              ``.fedbook-widget`` is moved to another value; an ``ipywidgets`` view drawn from saved
              state, which cannot redraw without a kernel, fails too);
``live``      a live widget (``.fedbook-live``, computed in the browser from JavaScript generated from the
              sympy derivations) whose numbers differ from fedtheory's: its sliders are set to random
              positions (:data:`LIVE_TRIALS` times), the page's numbers are compared with
              :func:`fedtheory.widgets_live.compare_live` (1e-9 relative), and moving each slider must
              change the plotted data;
``table``     a table that spills past the text column (at a 1280 px wide window); a wide table
              that scrolls inside its own box (overflow-x: auto) stays within the column and passes;
``aspect``    an image drawn out of its shape: its rendered width/height differs from its natural
              width/height by more than :data:`ASPECT_TOLERANCE` (relative), at each width of
              :data:`LAYOUT_WIDTHS` (1,280 px and a 390 px phone);
``page-width`` at 390 px the page is wider than the screen (something other than a scroll box inside it,
              such as a table's own, lays out wider): the reader would scroll the whole page sideways;
``alt``       an image without alt text, or whose alt text is a file path or a function name rather than
              what it shows, or holds TeX source; a live plot without an accessible name (``aria-label``);
``dark``      in dark mode (``<html data-theme="dark">``, the theme's switch) a live plot's axes and tick
              labels have less than :data:`MIN_CONTRAST`:1 contrast against the page's background;
``markup``    authoring syntax shown to readers (``{term}``, ``{ref}``, ``{doc}`` ... outside code cells).

The live check also types an impossible value (``1e308``) into a box: the plot must keep its last valid
value and a message must appear beside the box.  Each report also records the numbers the book's test
prints: images in aspect per width, the page's width at 390 px, and the footer's text.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import os
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1280,900"]
#: random slider settings per live widget (each also moves every slider once)
LIVE_TRIALS = 4
LIVE_SEED = 20261124
#: window widths (CSS px) at which the layout is checked: a laptop and a phone (390 px, mobile emulation)
LAYOUT_WIDTHS = (1280, 390)
#: an image's rendered aspect ratio may differ from its natural one by this much (relative): pixel rounding
ASPECT_TOLERANCE = 0.02
#: the least contrast (WCAG 2) of a live plot's axis text against the page background, light or dark
MIN_CONTRAST = 4.5
SKIP_DIRS = {"_static", "_sources", "_images", "_vendor", "_sphinx_design_static", ".doctrees", "jupyter_execute"}


@dataclass
class PageReport:
    page: str
    problems: list[tuple[str, str]] = field(default_factory=list)
    widgets: int = 0
    live: int = 0           # live widgets on the page
    live_compared: int = 0  # random settings at which their numbers were compared with fedtheory's
    #: per window width: images measured, images in their natural aspect, the worst ratio
    #: (rendered aspect / natural aspect), and the page's width (CSS px)
    layout: dict = field(default_factory=dict)
    footer: str = ""        # the page footer's text (version and build date)
    contrast: list = field(default_factory=list)  # per live plot: (light, dark) contrast of its axis text

    def add(self, kind: str, detail: str) -> None:
        self.problems.append((kind, detail))


def find_binary(*names: str) -> str:
    for name in names:
        path = shutil.which(name) or (name if os.path.exists(name) else None)
        if path:
            return path
    raise FileNotFoundError(f"none of {names} found on PATH; install Debian's chromium and chromium-driver "
                            "(tools/setup_env.sh does: apt-get install chromium chromium-driver)")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D401 - keep test output clean
        pass


def serve(root: Path):
    """Serve ``root`` on 127.0.0.1 (a free port) in a daemon thread; returns (server, base_url)."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def start_browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager fetch a browser or driver
    options = webdriver.ChromeOptions()
    options.binary_location = find_binary("chromium", "/usr/bin/chromium", "chromium-browser")
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='fedbook-chromium-')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=find_binary("chromedriver", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    return driver


_WAIT_MATHJAX = """
const done = arguments[arguments.length - 1];
let finished = false;
const finish = (v) => { if (!finished) { finished = true; done(v); } };
// settled: the frame after the typeset output was laid out (two animation frames), not a fixed delay
const settle = () => requestAnimationFrame(() => requestAnimationFrame(() => finish(true)));
// bounded: a typeset that never settles is reported as 'pending' (the caller reloads once, then the
// math check reports whatever is still untypeset) instead of hanging the WebDriver script timeout
setTimeout(() => finish('pending'), 20000);
if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
  MathJax.startup.promise.then(() => (MathJax.typesetPromise ? MathJax.typesetPromise() : null))
    .then(settle, settle);
} else { settle(); }
"""

_INSPECT = r"""
const out = {math: [], raw: [], images: [], tables: [], ipywidgets: 0};
const visible = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
document.querySelectorAll('.math, span.math, div.math').forEach((el) => {
  if (!visible(el)) return;
  if (!el.querySelector('mjx-container') || el.querySelector('mjx-merror, merror'))
    out.math.push(el.textContent.trim().slice(0, 80));
});
document.querySelectorAll('mjx-merror').forEach((el) => out.math.push('MathJax error: ' + el.textContent.slice(0, 80)));
// visible text outside code, math and scripts
const skip = 'pre, code, script, style, mjx-container, .math, textarea, kbd, samp, .highlight';
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const re = /\$|\\\(|\\\)|\\\[|\\\]|\\(frac|sigma|lambda|tau|epsilon|varepsilon|mathcal|mathrm|sum|sqrt)\b/;
let node;
// (the cheap regular expression first: the ancestor and visibility tests only for the few nodes it matches)
while ((node = walker.nextNode())) {
  const m = node.textContent.match(re);
  if (!m) continue;
  const p = node.parentElement;
  if (!p || p.closest(skip) || !visible(p)) continue;
  const t = node.textContent, i = m.index;
  out.raw.push(t.slice(Math.max(0, i - 40), i + 40).replace(/\s+/g, ' '));
}
for (const el of [document.querySelector('title')]) {
  if (el && re.test(el.textContent)) out.raw.push('<title> ' + el.textContent.slice(0, 80));
}
document.querySelectorAll('img').forEach((img) => {
  if (!img.complete || img.naturalWidth === 0)
    out.images.push((img.getAttribute('src') || '').slice(0, 80));
});
const column = ['article.bd-article', '.bd-article-container', 'main article', '[role=main]', 'main', 'body']
  .map((sel) => document.querySelector(sel)).find((el) => el);
const colRight = column.getBoundingClientRect().right;
const colWidth = column.clientWidth;
document.querySelectorAll('table').forEach((t) => {
  if (!visible(t) || !column.contains(t)) return;
  // What the reader sees: a table that scrolls inside its own box (it, or an ancestor inside the
  // column, clips horizontal overflow) shows only that box; otherwise its full scroll width spills.
  let box = null;
  for (let el = t; el && el !== column; el = el.parentElement) {
    if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(el).overflowX)) { box = el; break; }
  }
  const r = (box || t).getBoundingClientRect();
  const w = box ? r.width : Math.max(t.scrollWidth, r.width);
  const right = r.left + w;
  if (w > colWidth + 1 || right > colRight + 1) {
    const cap = t.querySelector('caption, th');
    out.tables.push(`${Math.round(w)} px > column ${Math.round(colWidth)} px: ` +
                    (cap ? cap.textContent.trim().slice(0, 60) : t.textContent.trim().slice(0, 60)));
  }
});
// authoring syntax shown to readers (outside code cells)
const roles = /\{(term|ref|doc|numref|eq|cite|glue|download|math|prf:ref)(:[a-z]+)?\}`?/;
const walker2 = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
out.markup = [];
while ((node = walker2.nextNode())) {
  const m = node.textContent.match(roles);
  if (!m) continue;
  const p = node.parentElement;
  if (!p || p.closest('.cell_input, .highlight, script, style, textarea') || !visible(p)) continue;
  out.markup.push(node.textContent.slice(Math.max(0, m.index - 30), m.index + 40).replace(/\s+/g, ' '));
}
// alt text: what the image shows, not a path or a function name
// a file name or path (one word holding a slash or an image extension), or a dotted/underscored identifier
const pathlike = /^\S*\/\S*$|\.(png|jpe?g|svg|gif|webp)$|^data:|^\w+([._]\w+)+(\(\))?$|figure drawn by/;
out.alt = [];
document.querySelectorAll('img').forEach((img) => {
  const alt = img.getAttribute('alt');
  if (alt === null || !alt.trim()) out.alt.push('no alt text: ' + (img.getAttribute('src') || '').slice(0, 60));
  else if (pathlike.test(alt.trim())) out.alt.push('alt text is a path or a name: ' + alt.slice(0, 80));
  else if (/\\[A-Za-z]+|\$/.test(alt)) out.alt.push('alt text holds TeX source: ' + alt.slice(0, 80));
});
document.querySelectorAll('.fedbook-live-panel').forEach((el, i) => {
  if (!(el.getAttribute('aria-label') || '').trim()) out.alt.push('live plot ' + i + ' has no aria-label');
});
const foot = document.querySelector('.extra_footer') || document.querySelector('footer.bd-footer, footer');
out.footer = foot ? foot.textContent.replace(/\s+/g, ' ').trim() : '';
out.ipywidgets = document.querySelectorAll('.jupyter-widgets, .widget-slider, .widget-hslider, ' +
                                           'script[type="application/vnd.jupyter.widget-view+json"]').length;
return out;
"""

_WIDGETS = r"""
const done = arguments[arguments.length - 1];
// a frame may be a file fetched when selected: wait for it (at most 15 s)
const loaded = (img) => Promise.race([
  (img.decode ? img.decode() : Promise.resolve()).then(() => img.naturalWidth > 0, () => false),
  new Promise((resolve) => setTimeout(() => resolve(false), 15000))]);
(async () => {
  const res = [];
  const all = Array.from(document.querySelectorAll('.fedbook-widget:not(.fedbook-live)'));
  for (const [wi, w] of all.entries()) {
    const label = (w.id || ('widget ' + wi));
    const imgs = w.querySelectorAll('img');
    if (imgs.length !== 1) { res.push(label + ': ' + imgs.length + ' figures, not one'); continue; }
    const img = imgs[0];
    let moved = 0;
    for (const el of w.querySelectorAll('[data-control]')) {
      const name = (el.closest('label') || el).textContent.trim().split(/\s/)[0];
      const n = el.tagName === 'SELECT' ? el.options.length : parseInt(el.max, 10) - parseInt(el.min, 10) + 1;
      if (el.disabled || n < 2) continue;
      moved += 1;
      const before = img.src, old = el.value;
      el.value = String((parseInt(old, 10) + 1) % n);
      el.dispatchEvent(new Event('input', {bubbles: true}));
      el.dispatchEvent(new Event('change', {bubbles: true}));
      if (img.src === before) res.push(label + ': figure does not change when "' + name + '" moves');
      else if (!(await loaded(img))) res.push(label + ': figure broken after "' + name + '" moves');
      el.value = old;
      el.dispatchEvent(new Event('input', {bubbles: true}));
    }
    if (!moved) res.push(label + ': no control moves the figure');
  }
  done({problems: res, count: all.length});
})().catch((e) => done({problems: ['widget check failed: ' + e], count: -1}));
"""


_LIVE = r"""
const fractions = arguments[0], done = arguments[arguments.length - 1];
const input = (el) => el.dispatchEvent(new Event('input', {bubbles: true}));
const setTo = (el, f) => {
  const lo = parseFloat(el.min), hi = parseFloat(el.max);
  let v = lo + f * (hi - lo);
  if (el.step === '1') v = Math.round(v);
  el.value = String(v);
  input(el);
};
try {
  const out = [];
  for (const w of document.querySelectorAll('.fedbook-live')) {
    const r = {id: w.id, name: w.dataset.live, states: [], problems: []};
    out.push(r);
    if (!w.fedbookLive) { r.problems.push(w.id + ': the live widget did not start'); continue; }
    const ranges = Array.from(w.querySelectorAll('input[type=range][data-param]'));
    if (!ranges.length) r.problems.push(w.id + ': no slider');
    for (const trial of fractions) {
      ranges.forEach((el, i) => setTo(el, trial[i % trial.length]));
      r.states.push(w.fedbookLive.state());
      ranges.forEach((el, i) => {
        const before = w.fedbookLive.plotted(), old = el.value;
        setTo(el, (trial[i % trial.length] + 0.37) % 1);
        if (w.fedbookLive.plotted() === before)
          r.problems.push(w.id + ': moving "' + el.dataset.param + '" does not change the plotted data');
        el.value = old;
        input(el);
      });
    }
    // at either end of each slider the readout holds a value within the slider's range
    ranges.forEach((el) => {
      const old = el.value, box = w.querySelector('input[type=number][data-param="' + el.dataset.param + '"]');
      for (const f of [0, 1]) {
        setTo(el, f);
        if (box && !box.checkValidity())
          r.problems.push(w.id + ': "' + el.dataset.param + '" at its ' + (f ? 'maximum' : 'minimum') + ' reads ' +
                          box.value + ', outside [' + box.min + ', ' + box.max + ']');
      }
      el.value = old;
      input(el);
    });
    // a value typed into a readout is used as typed
    const box = w.querySelector('input[type=number][data-param]');
    if (box) {
      const slider = w.querySelector('input[type=range][data-param="' + box.dataset.param + '"]');
      let typed = Number(box.min) + 0.123456789 * (Number(box.max) - Number(box.min));
      if (slider && slider.step === '1') typed = Math.round(typed);
      const value = String(typed);
      box.value = value;
      input(box);
      box.dispatchEvent(new Event('change', {bubbles: true}));  // Enter or leaving the box commits it
      const p = JSON.parse(w.fedbookLive.state()).params[box.dataset.param];
      if (String(p) !== String(Number(value)))
        r.problems.push(w.id + ': typed ' + value + ' into "' + box.dataset.param + '", the page used ' + p);
      r.states.push(w.fedbookLive.state());
      // an impossible value: the plot keeps the last valid one and a message beside the box says why
      const msg = w.querySelector('.fedbook-live-msg[data-param="' + box.dataset.param + '"]');
      const before = w.fedbookLive.plotted();
      for (const bad of ['1e308', 'abc']) {
        box.value = bad;
        input(box);
        box.dispatchEvent(new Event('change', {bubbles: true}));
        const kept = JSON.parse(w.fedbookLive.state()).params[box.dataset.param];
        if (w.fedbookLive.plotted() !== before || String(kept) !== String(p))
          r.problems.push(w.id + ': typed "' + bad + '" into "' + box.dataset.param + '", the plot changed (now ' + kept + ')');
        if (!msg || !msg.textContent.trim() || !(msg.offsetWidth || msg.offsetHeight))
          r.problems.push(w.id + ': typed "' + bad + '" into "' + box.dataset.param + '", no message beside the box');
      }
      box.value = String(p);
      input(box);
      box.dispatchEvent(new Event('change', {bubbles: true}));
      if (msg && msg.textContent.trim())
        r.problems.push(w.id + ': the message stays after a valid value: ' + msg.textContent);
    }
  }
  done(out);
} catch (e) {
  done([{id: 'page', name: '', states: [], problems: ['live check failed: ' + e]}]);
}
"""


_LAYOUT = r"""
const done = arguments[arguments.length - 1], tol = arguments[0], screen = arguments[1];
const visible = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
(async () => {
  const imgs = Array.from(document.querySelectorAll('img'));
  imgs.forEach((img) => { if (img.loading === 'lazy') img.loading = 'eager'; });
  await Promise.all(imgs.map((img) => Promise.race([
    (img.decode ? img.decode() : Promise.resolve()).catch(() => null),
    new Promise((r) => setTimeout(r, 10000))])));
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const out = {measured: 0, inAspect: 0, worst: 1, bad: [], pageWidth: 0, screen: window.innerWidth, wide: []};
  for (const img of imgs) {
    if (!visible(img) || !img.naturalWidth || !img.naturalHeight) continue;
    const b = img.getBoundingClientRect();
    if (b.width < 2 || b.height < 2) continue;
    out.measured += 1;
    const ratio = (b.width / b.height) / (img.naturalWidth / img.naturalHeight);
    if (Math.abs(ratio - 1) <= tol) out.inAspect += 1;
    else out.bad.push(`${(img.getAttribute('src') || '').split('/').pop().slice(0, 40)} drawn ${Math.round(b.width)}x` +
                      `${Math.round(b.height)} px, natural ${img.naturalWidth}x${img.naturalHeight}: aspect x${ratio.toFixed(2)}`);
    if (Math.abs(ratio - 1) > Math.abs(out.worst - 1)) out.worst = ratio;
  }
  out.pageWidth = Math.max(document.documentElement.scrollWidth, document.body.scrollWidth);
  if (out.pageWidth > screen + 1) {
    // the deepest elements that reach past the screen outside any scroll box: what pushes the page sideways
    const W = screen + 1;  // (a phone's layout viewport grows with a page wider than the screen)
    const clipped = (el) => {
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement)
        if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return true;
      return false;
    };
    const past = Array.from(document.body.querySelectorAll('*')).filter((el) =>
      visible(el) && el.getBoundingClientRect().right > W && !clipped(el));
    const deepest = past.filter((el) => !past.some((o) => o !== el && el.contains(o)));
    out.wide = deepest.slice(0, 5).map((el) => `<${el.tagName.toLowerCase()} class="${el.className}"> to ` +
      `${Math.round(el.getBoundingClientRect().right)} px: ${el.textContent.trim().slice(0, 50)}`);
  }
  done(out);
})().catch((e) => done({error: String(e)}));
"""

_DARK = r"""
const done = arguments[arguments.length - 1];
const rgb = (c) => { const e = document.createElement('span'); e.style.color = c; document.body.appendChild(e);
  const v = getComputedStyle(e).color.match(/[\d.]+/g).slice(0, 4).map(Number); e.remove(); return v; };
const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
  .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
const contrast = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const background = (el) => {
  for (; el; el = el.parentElement) {
    const c = getComputedStyle(el).backgroundColor.match(/[\d.]+/g);
    if (c && (c.length < 4 || Number(c[3]) > 0.5)) return c.slice(0, 3).map(Number);
  }
  return [255, 255, 255];
};
(async () => {
  const html = document.documentElement, old = html.dataset.theme, out = [];
  const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const widgets = Array.from(document.querySelectorAll('.fedbook-live')).filter((w) => w.fedbookLive);
  const measure = () => widgets.map((w) => {
    const c = w.fedbookLive.colors();
    return c.axis ? contrast(rgb(c.axis), background(w)) : 0;
  });
  html.dataset.theme = 'light';
  await frame();
  const light = measure();
  html.dataset.theme = 'dark';
  await frame();
  const dark = measure();
  if (old === undefined) delete html.dataset.theme; else html.dataset.theme = old;
  await frame();
  done(widgets.map((w, i) => [w.id, light[i], dark[i]]));
})().catch((e) => done([['page', 0, 'dark check failed: ' + e]]));
"""


def check_layout(driver, report: PageReport, url: str) -> None:
    """The ``aspect`` and ``page-width`` checks at each of :data:`LAYOUT_WIDTHS` (the page open at 1,280 px is
    measured as it is, then reloaded at each other width with a phone's emulated screen)."""
    for width in LAYOUT_WIDTHS:
        mobile = width < 600
        if width != 1280:  # the page is open at 1,280 px (CHROMIUM_FLAGS): measured as it is
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": width, "height": 844 if mobile else 900, "deviceScaleFactor": 1,
                                    "mobile": mobile})
            driver.get(url)
            _mathjax_settled(driver)
        found = driver.execute_async_script(_LAYOUT, ASPECT_TOLERANCE, width)
        if "error" in found:
            report.add("aspect", f"at {width} px the layout check failed: {found['error']}")
            continue
        report.layout[width] = {"images": found["measured"], "in_aspect": found["inAspect"],
                                "worst": found["worst"], "page_width": found["pageWidth"]}
        for text in found["bad"]:
            report.add("aspect", f"at {width} px: {text}")
        # against the emulated screen: a page without <meta name="viewport"> lays out 980 px wide on a phone
        if found["pageWidth"] > width + 1:
            report.add("page-width", f"at {width} px the page lays out {found['pageWidth']} px wide: "
                                     + "; ".join(found["wide"]))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def check_dark(driver, report: PageReport) -> None:
    """The ``dark`` check of the page open in ``driver``: each live plot's axis text against the background."""
    for wid, light, dark in driver.execute_async_script(_DARK):
        if isinstance(dark, str):
            report.add("dark", dark)
            continue
        report.contrast.append((round(light, 2), round(dark, 2)))
        for mode, c in (("light", light), ("dark", dark)):
            if c < MIN_CONTRAST:
                report.add("dark", f"{wid}: axis text contrast {c:.2f}:1 in {mode} mode (< {MIN_CONTRAST}:1)")


def check_live(driver, report: PageReport, trials: int = LIVE_TRIALS, seed: int = LIVE_SEED) -> None:
    """The ``live`` check of the page open in ``driver`` (see the module docstring)."""
    import json
    import random

    rng = random.Random(seed)
    fractions = [[rng.random() for _ in range(16)] for _ in range(trials)]
    found = driver.execute_async_script(_LIVE, fractions)
    if not found:
        return
    from fedtheory.widgets_live import compare_live  # needs the repository on sys.path (PYTHONPATH)

    for widget in found:
        report.live += widget["id"] != "page"
        for text in widget["problems"]:
            report.add("live", text)
        for state in widget["states"]:
            state = json.loads(state)
            for text in compare_live(widget["name"], state["params"], state["values"]):
                report.add("live", f"{widget['id']}: {text}")
            report.live_compared += 1


def _mathjax_settled(driver) -> bool:
    """Wait for MathJax (:data:`_WAIT_MATHJAX`, up to 20 s); ``False`` if it is still pending or the browser did
    not answer within the script timeout (a stalled headless renderer on a loaded machine: seen once in CI)."""
    from selenium.common.exceptions import TimeoutException

    try:
        return driver.execute_async_script(_WAIT_MATHJAX) != "pending"
    except TimeoutException:
        return False


def check_page(driver, url: str, name: str, at_1280=None) -> PageReport:
    """Every check of the page at ``url``: loaded once at 1,280 px (all checks but the phone's layout) and once
    at 390 px (:func:`check_layout`).  ``at_1280(driver, report)``, if given, runs on the 1,280 px load right
    after MathJax has settled, before any widget is moved (the book lint measures its overflow there)."""
    report = PageReport(name)
    driver.get_log("browser")  # drop the previous page's messages
    driver.get(url)
    if not _mathjax_settled(driver):  # MathJax did not settle (or the renderer stalled): one reload
        driver.get_log("browser")
        driver.get(url)
        if not _mathjax_settled(driver):
            report.add("math", "MathJax did not finish typesetting within 20 s (or the page did not answer), twice")
    found = driver.execute_script(_INSPECT)
    if at_1280 is not None:
        at_1280(driver, report)
    widgets = driver.execute_async_script(_WIDGETS)
    check_dark(driver, report)
    check_live(driver, report)
    report.widgets = widgets["count"] + report.live
    for text in found["math"]:
        report.add("math", f"not typeset: {text!r}")
    for text in found["raw"]:
        report.add("raw-tex", f"visible raw TeX: {text!r}")
    for src in found["images"]:
        report.add("image", f"broken image: {src!r}")
    for text in found["tables"]:
        report.add("table", f"table wider than the column: {text}")
    for text in widgets["problems"]:
        report.add("widget", text)
    if found["ipywidgets"]:
        report.add("widget", f"{found['ipywidgets']} ipywidgets element(s) drawn from saved state: frozen without "
                             "a kernel")
    for text in found["alt"]:
        report.add("alt", text)
    for text in found["markup"]:
        report.add("markup", f"authoring syntax shown: {text!r}")
    report.footer = found["footer"]
    for entry in driver.get_log("browser"):
        # the browser asks every site for /favicon.ico on its own; a page without one is not an error
        if entry.get("level") == "SEVERE" and "/favicon.ico " not in entry.get("message", ""):
            report.add("console", entry.get("message", "")[:300])
    check_layout(driver, report, url)
    return report


def pages_of(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.html") if not (set(p.relative_to(root).parts[:-1]) & SKIP_DIRS))


def check_book(root: Path | str, pages: list[str] | None = None, *, driver=None, base: str | None = None,
               at_1280=None) -> list[PageReport]:
    """Check every page under ``root`` (or the given relative ``pages``); one report per page.

    With ``driver`` and ``base`` (a browser from :func:`start_browser` and the URL :func:`serve` gives for
    ``root``) the pages are checked in that browser, which stays open; otherwise one is started and closed
    here.  ``at_1280`` is passed to :func:`check_page`.
    """
    root = Path(root)
    if not (root / "index.html").exists() and not pages:
        raise FileNotFoundError(f"no built book at {root} (index.html missing); build it with `make book`")
    paths = [root / p for p in pages] if pages else pages_of(root)
    own = driver is None
    if own:
        server, base = serve(root)
        driver = start_browser()
    elif base is None:
        raise ValueError("base: the URL that serves root is required with driver")
    try:
        return [check_page(driver, base + p.relative_to(root).as_posix(), p.relative_to(root).as_posix(), at_1280)
                for p in paths]
    finally:
        if own:
            driver.quit()
            server.shutdown()


def format_reports(reports: list[PageReport]) -> str:
    lines = []
    for r in reports:
        status = "ok" if not r.problems else f"{len(r.problems)} problem(s)"
        live = f", {r.live} live, compared with fedtheory at {r.live_compared} settings" if r.live else ""
        lay = "; ".join(f"{w} px: {v['in_aspect']}/{v['images']} images in aspect, page {v['page_width']} px"
                        for w, v in sorted(r.layout.items(), reverse=True) if v["images"] or w < 600)
        lines.append(f"{r.page}: {status}" + (f" ({r.widgets} widgets{live})" if r.widgets else "")
                     + (f" [{lay}]" if lay else ""))
        lines.extend(f"    [{kind}] {detail}" for kind, detail in r.problems)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default="_build/html")
    parser.add_argument("--page", action="append", help="a page relative to root (repeatable)")
    args = parser.parse_args(argv)
    reports = check_book(args.root, args.page)
    print(format_reports(reports))
    return 1 if any(r.problems for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
