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
              that scrolls inside its own box (overflow-x: auto) stays within the column and passes.
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
SKIP_DIRS = {"_static", "_sources", "_images", "_vendor", "_sphinx_design_static", ".doctrees", "jupyter_execute"}


@dataclass
class PageReport:
    page: str
    problems: list[tuple[str, str]] = field(default_factory=list)
    widgets: int = 0
    live: int = 0           # live widgets on the page
    live_compared: int = 0  # random settings at which their numbers were compared with fedtheory's

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
const settle = () => setTimeout(() => finish(true), 200);
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
while ((node = walker.nextNode())) {
  const p = node.parentElement;
  if (!p || p.closest(skip) || !visible(p)) continue;
  const m = node.textContent.match(re);
  if (m) {
    const t = node.textContent, i = m.index;
    out.raw.push(t.slice(Math.max(0, i - 40), i + 40).replace(/\s+/g, ' '));
  }
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
      const p = JSON.parse(w.fedbookLive.state()).params[box.dataset.param];
      if (String(p) !== String(Number(value)))
        r.problems.push(w.id + ': typed ' + value + ' into "' + box.dataset.param + '", the page used ' + p);
      r.states.push(w.fedbookLive.state());
    }
  }
  done(out);
} catch (e) {
  done([{id: 'page', name: '', states: [], problems: ['live check failed: ' + e]}]);
}
"""


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


def check_page(driver, url: str, name: str) -> PageReport:
    report = PageReport(name)
    driver.get_log("browser")  # drop the previous page's messages
    driver.get(url)
    if not _mathjax_settled(driver):  # MathJax did not settle (or the renderer stalled): one reload
        driver.get_log("browser")
        driver.get(url)
        if not _mathjax_settled(driver):
            report.add("math", "MathJax did not finish typesetting within 20 s (or the page did not answer), twice")
    found = driver.execute_script(_INSPECT)
    widgets = driver.execute_async_script(_WIDGETS)
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
    for entry in driver.get_log("browser"):
        # the browser asks every site for /favicon.ico on its own; a page without one is not an error
        if entry.get("level") == "SEVERE" and "/favicon.ico " not in entry.get("message", ""):
            report.add("console", entry.get("message", "")[:300])
    return report


def pages_of(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.html") if not (set(p.relative_to(root).parts[:-1]) & SKIP_DIRS))


def check_book(root: Path | str, pages: list[str] | None = None) -> list[PageReport]:
    """Check every page under ``root`` (or the given relative ``pages``); one report per page."""
    root = Path(root)
    if not (root / "index.html").exists() and not pages:
        raise FileNotFoundError(f"no built book at {root} (index.html missing); build it with `make book`")
    paths = [root / p for p in pages] if pages else pages_of(root)
    server, base = serve(root)
    driver = start_browser()
    try:
        return [check_page(driver, base + p.relative_to(root).as_posix(), p.relative_to(root).as_posix())
                for p in paths]
    finally:
        driver.quit()
        server.shutdown()


def format_reports(reports: list[PageReport]) -> str:
    lines = []
    for r in reports:
        status = "ok" if not r.problems else f"{len(r.problems)} problem(s)"
        live = f", {r.live} live, compared with fedtheory at {r.live_compared} settings" if r.live else ""
        lines.append(f"{r.page}: {status}" + (f" ({r.widgets} widgets{live})" if r.widgets else ""))
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
