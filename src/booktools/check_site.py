"""Open every page of the built book in headless Chromium and check what a reader sees.

    python -m booktools.check_site [_build/html]

For each page it fails on: a JavaScript error or console error, a request that leaves the
site (the book must work offline), an image that did not load, an image without alt
text, math that MathJax did not render (or rendered as an error), an animation frame or a
widget that shows a placeholder instead of content, a page whose own bytes (HTML plus its
images) exceed 3 MB, an internal link or anchor that does not resolve, a solution
dropdown that is open, headings that skip a level, and an explorer (the precomputed
player of ``seqtheory.book.widgets.explorer``) whose figure does not change when each of its
controls is moved through its values, or that throws; and any serious or critical WCAG 2.1
A/AA violation that axe-core finds in the book's own content (the theme's own are listed,
not failed). A lecture deck also fails when reveal.js does not start, the arrow keys do not
move it, a slide has no speaker notes or is cut off at its edge, a figure is neither SVG nor
twice the pixels it is shown at, or the speaker view does not show the notes. It also
searches the site for a few
chapter terms through the search page. A screenshot of each page's first screen goes
to ``_build/screenshots/`` and a table of page sizes to ``_build/site_report.tsv``.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``),
so the check needs nothing beyond the standard library, a ``chromium`` binary and the
axe-core script of the ``axe-playwright-python`` package; the
pages are served from 127.0.0.1.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import functools
import hashlib
import http.server
import itertools
import json
import os
import queue
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

from booktools import ROOT
from booktools.toc import chapter_sources

MAX_PAGE_BYTES = 3 * 1024 * 1024
VIEWPORT = (1280, 860)
# (query, page that must be among the results): the search box finds chapter content
SEARCHES = [
    ("induction head", "book/induction_heads.html"),
    ("hard-ALiBi", "book/copying.html"),
    ("intrinsic dimension", "book/scaling_laws.html"),
]
# text that means an output was not rendered (a widget or figure repr instead of content)
PLACEHOLDERS = [
    "Loading widget",
    "VBox(children",
    "HBox(children",
    "interactive(children",
    "<Figure size",
    "Output()",
    "FloatProgress(",
    "IntProgress(",
    "run the notebook to use the controls",
]

PAGE_JS = r"""
(() => {
  const article = document.querySelector('article') || document.body;
  const imgs = [...document.images];
  const alt = i => (i.getAttribute('alt') || '').trim();
  return JSON.stringify({
    title: document.title,
    broken_images: imgs.filter(i => !i.complete || i.naturalWidth === 0)
                       .map(i => i.getAttribute('src') ? i.getAttribute('src').slice(0, 80)
                                                       : '(no src) #' + i.id),
    images: imgs.length,
    missing_alt: imgs.filter(i => !alt(i) || /\.(png|jpe?g|gif|svg)$/i.test(alt(i)))
                     .map(i => (i.getAttribute('src') || '#' + i.id).slice(0, 80)),
    latex_alt: imgs.filter(i => /\\[a-zA-Z]+|\$/.test(alt(i))).map(i => alt(i).slice(0, 80)),
    math: document.querySelectorAll('.math').length,
    math_unrendered: [...document.querySelectorAll('.math')]
        .filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 60)),
    math_errors: [...document.querySelectorAll('mjx-merror')]
        .map(e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 80)),
    animations: document.querySelectorAll('.animation').length,
    widget_views: document.querySelectorAll(
        'script[type="application/vnd.jupyter.widget-view+json"]').length,
    text: article.innerText,
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id], a[name]')].map(e => e.id || e.name),
    headings: [...article.querySelectorAll('h1, h2, h3, h4, h5, h6')]
        .map(h => [+h.tagName[1], h.textContent.replace(/[#\u00b6]$/, '').trim()]),
    dropdowns_open: [...document.querySelectorAll('details.sd-dropdown')]
        .filter(d => d.open).map(d => d.querySelector('summary').textContent.trim()),
    dropdowns: document.querySelectorAll('details.sd-dropdown').length,
    // exercise solutions (sphinx-exercise, class dropdown): sphinx-togglebutton collapses
    // each one (class toggle-hidden) once the page has loaded
    solutions_open: [...document.querySelectorAll('div.solution.dropdown')]
        .filter(d => !d.classList.contains('toggle-hidden'))
        .map(d => (d.querySelector('.admonition-title') || d).textContent.trim().slice(0, 60)),
    // display math, tables and printed outputs wider than the text column: they scroll
    // or are cut off
    too_wide: [...article.querySelectorAll(
        'div.math, mjx-container[display="true"], table, .table-wrapper, ' +
        '.pst-scrollable-table-container, div.cell_output pre')]
        .filter(e => e.getClientRects().length > 0 && e.scrollWidth > e.clientWidth + 2 &&
                     (e.matches('div.cell_output pre') || !e.closest('div.cell, pre')))
        .map(e => e.tagName.toLowerCase() + ': ' + e.textContent.trim().slice(0, 60)),
    // web addresses printed in the prose (outside code): a link should carry words
    raw_urls: (() => {
      const prose = article.cloneNode(true);
      prose.querySelectorAll('pre, code, div.cell, script, style, div.citation, ' +
                             '.bibliography').forEach(e => e.remove());
      return (prose.textContent.match(/https?:\/\/[^\s)\]>"']+/g) || []).map(u => u.slice(0, 80));
    })(),
    // every figure in the article (folded ones too), how wide it is shown and its source:
    // check_site reads the image file for repeats and for its smallest text
    figures: [...article.querySelectorAll('img')]
        .filter(i => i.naturalWidth >= 100 && i.naturalHeight >= 100)
        .map(i => {
          const w = i.getBoundingClientRect().width;
          const column = (i.closest('details, div.dropdown, .toggle-hidden, section') ||
                          article).clientWidth || article.clientWidth;
          return {src: i.currentSrc || i.src, natural: i.naturalWidth,
                  shown: w > 0 ? w : Math.min(i.naturalWidth, column),
                  alt: alt(i).slice(0, 70)};
        }),
    reader: READER,
  });
})()
"""

# What a reader meets on the page, with every folded block closed (booktools.check_site
# checks these on the chapters; reader_report writes them to _build/reader_report.tsv):
# - core_words: prose words outside code cells, closed dropdowns and toggles, exercises,
#   solutions, math and the reference list (the chapter's core path);
# - first_figure_screens: from the bottom of the chapter's header box (else its title) to
#   the top of the first visible figure, in screens of the check's window height;
# - images: [shown width / natural width, src] of every visible image of 100 px or more;
# - code_lines: non-empty lines of every visible code cell's input;
# - myst: literal MyST left in the text; pipe_tables: paragraphs that are raw pipe tables;
# - bars: progress-bar lines of the outputs.
READER_JS = r"""
(() => {
  const article = document.querySelector('article') || document.body;
  // visible on the page: laid out, and not inside a closed <details> (checkVisibility)
  const shown = e => e.getClientRects().length > 0 &&
      (e.checkVisibility ? e.checkVisibility({visibilityProperty: true}) :
                           getComputedStyle(e).visibility !== 'hidden');
  const clone = article.cloneNode(true);
  clone.querySelectorAll(['div.cell', 'details', '.toggle-hidden', 'div.dropdown', '.exercise',
      '.solution', '.math', 'mjx-container', 'script', 'style', '.headerlink',
      '.bibliography', 'div.citation', '#references', '.sqx-explorer', '.admonition.margin',
      'aside.margin', '.toctree-wrapper', '.sd-dropdown'].join(','))
      .forEach(e => e.remove());
  const count = e => (e.textContent.match(/[A-Za-z][A-Za-z'-]*|\d[\d.,]*/g) || []).length;
  const words = count(clone);
  const open = article.cloneNode(true);
  open.querySelectorAll(['div.cell', '.math', 'mjx-container', 'script', 'style', '.headerlink',
      '.bibliography', 'div.citation', '#references', '.sqx-explorer', '.toctree-wrapper']
      .join(',')).forEach(e => e.remove());
  const top = e => e.getBoundingClientRect().top + window.scrollY;
  const head = article.querySelector('.chapter-header') || article.querySelector('h1');
  const start = head ? top(head) + head.getBoundingClientRect().height : top(article);
  const figs = [...article.querySelectorAll('img, .animation, .sqx-explorer, svg.figure')]
      .filter(e => shown(e) && e.getBoundingClientRect().width >= 100);
  const first = figs.length ? (top(figs[0]) - start) / window.innerHeight : null;
  const images = [...article.querySelectorAll('img')]
      .filter(i => shown(i) && i.naturalWidth >= 100)
      .map(i => [i.getBoundingClientRect().width / i.naturalWidth,
                 (i.getAttribute('alt') || i.getAttribute('src') || '').slice(0, 70)]);
  const code = [...article.querySelectorAll('div.cell div.cell_input')]
      .filter(shown).map(c => c.innerText.split('\n').filter(l => l.trim()).length);
  const prose = article.cloneNode(true);
  prose.querySelectorAll('pre, code, div.cell, script, style, .math, mjx-container')
      .forEach(e => e.remove());
  const myst = (prose.textContent.match(
      /\{(glue|cite|term|numref|doc|ref|eq|math)[:}][^\n]{0,30}|^:::.{0,30}|glue:text.{0,30}/gm)
      || []).map(t => t.trim());
  const pipe_tables = [...article.querySelectorAll('p')]
      .map(p => p.textContent).filter(t => /^\s*\|.*\|\s*$/m.test(t) && /\|\s*:?-{3,}/.test(t))
      .map(t => t.trim().slice(0, 60));
  const bars = [...article.querySelectorAll('div.cell_output pre, div.output pre')]
      .flatMap(p => p.textContent.split('\n'))
      .filter(l => /\d{1,3}%\|/.test(l) || /\bstopped at\b/.test(l)).map(l => l.slice(0, 120));
  return {core_words: words, open_words: count(open), first_figure_screens: first, images,
          code_lines: code, myst, pipe_tables, bars,
          explorers: article.querySelectorAll('.sqx-explorer').length,
          text_static: (article.innerText.match(/[^.]*\bstatic (picture|image|figure)[^.]*\./gi)
                        || []).map(t => t.trim().slice(0, 100))};
})()
"""
PAGE_JS = PAGE_JS.replace("READER", READER_JS.strip())

WAIT_JS = r"""
(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    if (MathJax.typesetPromise) { await MathJax.typesetPromise(); }
  }
  await new Promise(r => setTimeout(r, 200));   // matplotlib's player starts on a timer
  return true;
})()
"""


class Chromium:
    """A headless Chromium driven over the DevTools protocol on fds 3 and 4."""

    def __init__(self, binary: str, profile: str):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def child_fds():  # runs in the child before exec: put the pipe ends on fds 3 and 4
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [
            binary,
            "--headless=new",
            "--remote-debugging-pipe",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--mute-audio",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            args,
            preexec_fn=child_fds,
            pass_fds=(3, 4),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._replies: dict[int, queue.Queue] = {}
        self.events: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg and msg["id"] in self._replies:
                    self._replies[msg["id"]].put(msg)
                elif "method" in msg:
                    self.events.put(msg)

    def send(
        self,
        method: str,
        params: dict | None = None,
        session: str | None = None,
        timeout: float = 60.0,
    ) -> dict:
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        box = self._replies[self._next_id] = queue.Queue()
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        try:
            reply = box.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"Chromium did not answer {method} within {timeout} s") from None
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Tab:
    """One page target with the Page, Runtime, Log and Network domains enabled."""

    def __init__(self, browser: Chromium):
        self.b = browser
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Network.setCacheDisabled", {"cacheDisabled": True})
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": VIEWPORT[0], "height": VIEWPORT[1], "deviceScaleFactor": 1, "mobile": False},
        )

    def call(self, method: str, params: dict | None = None, timeout: float = 60.0) -> dict:
        return self.b.send(method, params, session=self.session, timeout=timeout)

    def evaluate(self, expression: str, timeout: float = 60.0):
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def load(self, url: str, timeout: float = 60.0) -> list[dict]:
        """Navigate to ``url``; wait for the load event and a quiet network; return events."""
        while not self.b.events.empty():
            self.b.events.get_nowait()
        self.call("Page.navigate", {"url": url})
        events, inflight, loaded = [], set(), False
        deadline, quiet_since = time.time() + timeout, None
        while time.time() < deadline:
            try:
                ev = self.b.events.get(timeout=0.1)
            except queue.Empty:
                ev = None
            if ev is not None and ev.get("sessionId") == self.session:
                events.append(ev)
                method, p = ev["method"], ev.get("params", {})
                if method == "Page.loadEventFired":
                    loaded = True
                elif method == "Network.requestWillBeSent":
                    inflight.add(p["requestId"])
                elif method in ("Network.loadingFinished", "Network.loadingFailed"):
                    inflight.discard(p["requestId"])
                quiet_since = None
            if loaded and not inflight:
                quiet_since = quiet_since or time.time()
                if time.time() - quiet_since > 0.5:
                    return events
        raise TimeoutError(f"{url} did not finish loading within {timeout} s")


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


# Moves every control of every explorer player (seqtheory.book.widgets.Explorer.static_player)
# through its values: the figure must change for some value, every image must decode, and
# putting the control back must bring the default figure back; then, when there are at most
# 64, it sets every combination of the controls' positions.  Errors thrown by the
# player's script reach the page's exception events, which network_report collects.
# A lecture deck (booktools.slides, reveal.js): once reveal.js is ready and MathJax has typeset,
# its slides' titles, which carry speaker notes, which slide shows, and its images' sizes
# (an image must be SVG or have twice the pixels it is shown at, to be sharp on a projector).
SLIDES_JS = r"""
(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  for (let i = 0; i < 150 && !(window.Reveal && Reveal.isReady()); i++) await sleep(100);
  if (!(window.Reveal && Reveal.isReady())) return JSON.stringify({ready: false});
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const notesOf = s => ((s.querySelector('aside.notes') || {}).textContent || '').trim();
  const slides = Reveal.getSlides();
  const scale = Reveal.getScale();
  const images = [], clipped = [];
  for (const [n, s] of slides.entries()) {
    Reveal.slide(n);
    await sleep(30);
    const box = document.querySelector('.reveal .slides').getBoundingClientRect();
    for (const el of s.querySelectorAll('h1, h2, p, li, table, img, mjx-container')) {
      if (el.closest('aside')) continue;
      const r = el.getBoundingClientRect();
      // an equation wider than its box (MathJax lets it run past the slide's edge)
      const inner = el.tagName === 'MJX-CONTAINER' && el.scrollWidth > el.clientWidth + 2;
      if (r.width > 0 && (inner || r.right > box.right + 2 || r.left < box.left - 2 ||
                          r.bottom > box.bottom + 2)) {
        clipped.push({slide: n, what: el.tagName.toLowerCase() + ': ' +
          (el.textContent || el.getAttribute('alt') || '').trim().slice(0, 50)});
      }
    }
    for (const img of s.querySelectorAll('img')) {
      images.push({slide: n, src: img.getAttribute('src'), natural: img.naturalWidth,
                   // its width in deck pixels (1280 x 720)
                   shown: Math.round(img.getBoundingClientRect().width / scale)});
    }
  }
  Reveal.slide(0);
  await sleep(30);
  return JSON.stringify({
    ready: true, count: slides.length, index: Reveal.getIndices().h,
    shown: document.querySelectorAll('.reveal .slides > section.present').length,
    titles: slides.map(s => (s.querySelector('h1, h2') || {}).textContent || ''),
    notes: slides.map(s => notesOf(s).length),
    exercises: slides.map(s => s.classList.contains('exercise')),
    images, clipped});
})()
"""
# The speaker view (reveal.js's notes plugin, key S): it opens, connects to the deck and shows
# the current slide's notes.
NOTES_JS = r"""
(async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  Reveal.slide(1);
  const aside = Reveal.getCurrentSlide().querySelector('aside.notes');
  const want = ((aside || {}).textContent || '').trim();
  Reveal.getPlugin('notes').open();
  const w = window.open('', 'reveal.js - Notes');
  let got = '';
  for (let i = 0; i < 100 && !got; i++) {
    await sleep(100);
    const el = w && w.document && w.document.querySelector('.speaker-controls-notes .value');
    got = el ? el.textContent.trim() : '';
  }
  if (w) w.close();
  Reveal.slide(0);
  return JSON.stringify({opened: !!w, want: want.slice(0, 60), got: got.slice(0, 60)});
})()
"""

# axe-core (the copy the axe-playwright-python binding ships) over the page, WCAG 2.1 A and
# AA: each violation with its impact and the elements it names, each element marked as the
# book's own content or the theme's (the header bar, the sidebars, the theme's buttons).
AXE_RUN_JS = r"""
(async () => {
  const r = await axe.run(document, {
    runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
    resultTypes: ['violations']});
  const THEME = '.bd-header, .bd-header-article, .bd-sidebar-primary, .bd-sidebar-secondary, ' +
    '.prev-next-area, #pst-back-to-top, .search-button-field, .bd-search, .skip-link';
  return JSON.stringify(r.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => {
      let el = null;
      try { el = document.querySelector(n.target[0]); } catch (e) {}
      return {target: n.target.join(' '), html: n.html.slice(0, 100),
              theme: !!(el && el.closest(THEME))};
    })})));
})()
"""

EXPLORER_JS = r"""
(async () => {
  const reports = [];
  const players = [...document.querySelectorAll('.sqx-explorer')];
  for (const [n, root] of players.entries()) {
    const img = root.querySelector('img.sqx-image');
    const alt = img ? (img.getAttribute('alt') || '').slice(0, 50) : '';
    const title = `explorer ${n + 1}` + (alt ? ` (${alt})` : '');
    const problems = [];
    const controls = [...root.querySelectorAll('[data-sqx-control]')];
    let moves = 0;
    if (!img) { reports.push({title, problems: ['has no image'], moves}); continue; }
    if (+(root.dataset.views || 1) > 1 && !controls.length) {
      problems.push(`has ${root.dataset.views} views but no control to reach them`);
    }
    const settle = async (what) => {
      try { await img.decode(); } catch (e) { problems.push(`image does not load after ${what}`); }
      if (!img.complete || img.naturalWidth === 0) { problems.push(`no image after ${what}`); }
    };
    const move = (el, v) => {
      el.value = String(v);
      el.dispatchEvent(new Event('input', {bubbles: true}));
      el.dispatchEvent(new Event('change', {bubbles: true}));
    };
    for (const el of controls) {
      const label = el.closest('label');
      const name = (label && label.firstChild ? label.firstChild.textContent : el.tagName).trim();
      const start = img.getAttribute('src'), startValue = el.value;
      const count = el.tagName === 'SELECT' ? el.options.length : (+el.max - +el.min + 1);
      let changed = 0;
      for (let v = 0; v < count; v++) {
        if (String(v) === startValue) { continue; }
        move(el, v);
        moves++;
        await settle(`moving "${name}" to position ${v}`);
        if (img.getAttribute('src') !== start) { changed++; }
      }
      if (count < 2) { problems.push(`control "${name}" has a single position`); }
      else if (!changed) { problems.push(`moving "${name}" never changes the figure`); }
      move(el, startValue);
      await settle(`moving "${name}" back`);
      if (img.getAttribute('src') !== start) {
        problems.push(`moving "${name}" back does not bring the default figure back`);
      }
    }
    // every combination too, when there are few (a product grid offers them all)
    const counts = controls.map(el => el.tagName === 'SELECT' ? el.options.length
                                                             : (+el.max - +el.min + 1));
    const starts = controls.map(el => el.value);
    if (controls.length > 1 && counts.reduce((a, b) => a * b, 1) <= 64) {
      const pos = counts.map(() => 0);
      for (;;) {
        controls.forEach((el, j) => { if (el.value !== String(pos[j])) { move(el, pos[j]); } });
        moves++;
        await settle(`setting the controls to positions ${pos.join(', ')}`);
        let j = 0;
        while (j < pos.length && ++pos[j] === counts[j]) { pos[j++] = 0; }
        if (j === pos.length) { break; }
      }
      controls.forEach((el, j) => move(el, starts[j]));
    }
    reports.push({title, problems, moves});
  }
  return JSON.stringify(reports);
})()
"""


def network_report(events: list[dict], base: str) -> dict:
    """Requests, failures, outside requests and bytes by resource, from one page's events."""
    urls, sizes, failed, outside, errors = {}, {}, [], [], []
    for ev in events:
        method, p = ev["method"], ev.get("params", {})
        if method == "Network.requestWillBeSent":
            url = p["request"]["url"]
            urls[p["requestId"]] = url
            if not url.startswith((base, "data:", "about:", "blob:")):
                outside.append(url)
        elif method == "Network.responseReceived" and p["response"]["status"] >= 400:
            failed.append(f"HTTP {p['response']['status']} {p['response']['url']}")
        elif method == "Network.loadingFinished":
            sizes[p["requestId"]] = p.get("encodedDataLength", 0)
        elif method == "Network.loadingFailed" and not p.get("canceled"):
            failed.append(f"{p.get('errorText')} {urls.get(p['requestId'], '?')}")
        elif method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            errors.append("exception: " + d.get("exception", {}).get("description", d["text"]))
        elif method == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            errors.append(
                "console."
                + p["type"]
                + ": "
                + " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
            )
        elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
            errors.append(f"log: {p['entry']['text']} {p['entry'].get('url', '')}".strip())
    # the browser asks for /favicon.ico on its own; the book has none, which is harmless
    failed = [f for f in failed if not f.endswith("/favicon.ico")]
    errors = [e for e in errors if not e.endswith("/favicon.ico")]
    by_url = {urls[r]: n for r, n in sizes.items() if r in urls}
    return {"failed": failed, "outside": outside, "errors": errors, "bytes": by_url}


def page_checks(rel: str, info: dict, net: dict, html_root: Path) -> list[str]:
    problems = [f"JavaScript: {e}" for e in net["errors"]]
    problems += [f"failed request: {f}" for f in net["failed"]]
    problems += [f"request leaves the site (must work offline): {u}" for u in net["outside"]]
    problems += [f"image did not load: {s}" for s in info["broken_images"]]
    problems += [f"image without alt text: {s}" for s in info["missing_alt"]]
    problems += [
        f"wider than the text column (scrolls or is cut off): {s}" for s in info.get("too_wide", [])
    ]
    problems += [f"raw web address in the text: {u}" for u in info.get("raw_urls", [])]
    problems += [
        f"alt text holds LaTeX (a screen reader reads it raw): {s!r}"
        for s in info.get("latex_alt", [])
    ]
    problems += [f"math not rendered: {t!r}" for t in info["math_unrendered"]]
    problems += [f"math error: {t!r}" for t in info["math_errors"]]
    problems += [f"placeholder instead of output: {p!r}" for p in PLACEHOLDERS if p in info["text"]]
    if info["widget_views"]:
        problems.append(f"{info['widget_views']} widget view(s) that a static page cannot show")
    problems += [f"solution dropdown is open: {t!r}" for t in info["dropdowns_open"]]
    problems += [f"exercise solution is not collapsed: {t!r}" for t in info["solutions_open"]]
    problems += reader_problems(rel, info)
    problems += figure_problems(info.get("figures", []), html_root)
    levels = [h[0] for h in info["headings"]]
    if rel.startswith("book/"):
        if levels.count(1) != 1:
            problems.append(f"{levels.count(1)} top-level headings (want exactly one)")
        for (a, _), (b, title) in itertools.pairwise(info["headings"]):
            if b > a + 1:
                problems.append(f"heading level jumps from h{a} to h{b} at {title!r}")
    if own_bytes(rel, net, html_root) > MAX_PAGE_BYTES:
        problems.append(
            f"page is {own_bytes(rel, net, html_root) / 2**20:.1f} MB "
            f"(limit {MAX_PAGE_BYTES / 2**20:.0f} MB)"
        )
    return problems


MIN_FIGURE_TEXT_PX = 8.0  # the smallest text a figure may show, in CSS pixels as shown
TEXT_SIZE_KEY = b"seqtheory:min-text-px"  # seqtheory.book.plotting.MIN_TEXT_KEY


def image_bytes(src: str, html_root: Path) -> bytes | None:
    """The bytes of an image the page shows (a file of the site or a data: URL)."""
    if src.startswith("data:"):
        head, _, data = src.partition(",")
        return base64.b64decode(data) if head.endswith(";base64") else unquote(data).encode()
    path = html_root / unquote(urlparse(src).path).lstrip("/")
    return path.read_bytes() if path.is_file() else None


def png_texts(data: bytes) -> dict[bytes, bytes]:
    """The ``tEXt`` chunks of a PNG (empty for anything else)."""
    out: dict[bytes, bytes] = {}
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return out
    at = 8
    while at + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[at : at + 8])
        if kind == b"tEXt":
            key, _, value = data[at + 8 : at + 8 + n].partition(b"\0")
            out[key] = value
        if kind in (b"IDAT", b"IEND"):
            break
        at += 12 + n
    return out


def figure_problems(figures: list[dict], html_root: Path) -> list[str]:
    """A figure shown twice on one page (the same image bytes), and a figure whose smallest
    text (recorded in the PNG by the book's kernels) is below MIN_FIGURE_TEXT_PX as shown."""
    problems, seen = [], {}
    for fig in figures:
        data = image_bytes(fig["src"], html_root)
        if data is None:
            continue
        name = fig["alt"] or fig["src"].rsplit("/", 1)[-1][:70]
        digest = hashlib.sha1(data).hexdigest()
        if digest in seen:
            problems.append(f"figure shown twice on the page: {name!r} (also {seen[digest]!r})")
        seen.setdefault(digest, name)
        size = png_texts(data).get(TEXT_SIZE_KEY)
        if size is not None and fig["natural"]:
            shown = float(size) * fig["shown"] / fig["natural"]
            if shown < MIN_FIGURE_TEXT_PX:
                problems.append(
                    f"figure text {shown:.1f} px as shown (below {MIN_FIGURE_TEXT_PX:.0f}): "
                    f"{name!r}"
                )
    return problems


@functools.cache
def axe_source() -> str:
    """axe-core's script, from the axe-playwright-python package (requirements.txt)."""
    try:
        import axe_playwright_python
    except ImportError as err:
        raise ImportError(
            "the accessibility check needs axe-core, which the axe-playwright-python package "
            "ships: pip install -r requirements.txt"
        ) from err
    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text("utf-8")


def axe_report(tab) -> list[dict]:
    """axe-core's WCAG 2.1 A/AA violations on the page open in ``tab`` (AXE_RUN_JS)."""
    tab.evaluate(axe_source() + ";0")
    return json.loads(tab.evaluate(AXE_RUN_JS, timeout=120))


def axe_problems(violations: list[dict]) -> tuple[list[str], list[str]]:
    """``(problems, theme)``: the serious and critical violations in the book's own
    content, which fail the page, and the theme's own violations, which are reported."""
    problems, theme = [], []
    for v in violations:
        own = [n for n in v["nodes"] if not n["theme"]]
        theirs = [n for n in v["nodes"] if n["theme"]]
        if own and v["impact"] in ("serious", "critical"):
            where = "; ".join(f"{n['target']} ({n['html']})" for n in own[:3])
            more = f" and {len(own) - 3} more" if len(own) > 3 else ""
            problems.append(f"accessibility ({v['impact']}, {v['id']}): {v['help']}: {where}{more}")
        if theirs:
            theme.append(f"{v['impact']} {v['id']} x{len(theirs)}: {theirs[0]['target']}")
    return problems, theme


def deck_report(tab) -> tuple[dict, dict | None]:
    """Run SLIDES_JS, press the arrow keys as a presenter does, then open the speaker view."""
    deck = json.loads(tab.evaluate(SLIDES_JS, timeout=120))
    if not deck.get("ready"):
        return deck, None
    for key, code, field in (("ArrowRight", 39, "next"), ("ArrowLeft", 37, "back")):
        for kind in ("keyDown", "keyUp"):
            tab.call(
                "Input.dispatchKeyEvent",
                {"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code},
            )
        time.sleep(0.2)
        deck[field] = tab.evaluate("Reveal.getIndices().h")
    result = tab.call(
        "Runtime.evaluate",
        {"expression": NOTES_JS, "awaitPromise": True, "returnByValue": True, "userGesture": True},
        timeout=60,
    )
    if "exceptionDetails" in result:
        return deck, {"opened": False, "got": "", "want": str(result["exceptionDetails"])[:80]}
    return deck, json.loads(result["result"]["value"])


def deck_problems(deck: dict, notes: dict | None = None) -> list[str]:
    """What is wrong with a chapter's lecture deck as the browser shows it: ``deck`` from
    SLIDES_JS (with ``next`` and ``back``: the slide shown after the right and then the left
    arrow key), ``notes`` from NOTES_JS."""
    if not deck.get("ready"):
        return ["reveal.js did not start (no Reveal, or not ready after 15 s)"]
    problems = []
    if deck["count"] < 8:
        problems.append(f"slide deck has {deck['count']} slides (a lecture has at least 8)")
    if deck["shown"] != 1 or deck["index"] != 0:
        problems.append(
            f"slide deck shows {deck['shown']} slides at once, first shown "
            f"{deck['index']} (want slide 0 alone)"
        )
    if deck["count"] > 1 and (deck.get("next") != 1 or deck.get("back") != 0):
        problems.append(
            "the arrow keys do not move through the slides "
            f"(right: {deck.get('next')}, left: {deck.get('back')})"
        )
    silent = [n + 1 for n, k in enumerate(deck["notes"]) if n > 0 and k == 0]
    if silent:
        problems.append(f"slides without speaker notes: {silent}")
    if not any(t.startswith("Takeaways") for t in deck["titles"]):
        problems.append("slide deck has no 'Takeaways' slide")
    n_ex = sum(deck["exercises"])
    if not n_ex or n_ex > deck["count"] / 3:
        problems.append(f"{n_ex} of {deck['count']} slides are exercise slides (1 to a third)")
    for c in deck.get("clipped", []):
        problems.append(f"slide {c['slide'] + 1}: cut off at the slide's edge: {c['what']!r}")
    figures = [im for im in deck["images"] if im["slide"] > 0]
    if not figures:
        problems.append("slide deck shows no figure")
    for im in figures:
        svg = im["src"].split("?")[0].endswith(".svg")
        if not svg and im["natural"] < 2 * im["shown"]:
            problems.append(
                f"slide {im['slide'] + 1}: {im['src']} is {im['natural']} px wide, shown at "
                f"{im['shown']} px (want SVG or at least twice the pixels)"
            )
        if im["natural"] == 0:
            problems.append(f"slide {im['slide'] + 1}: {im['src']} did not load")
    if notes is not None and (
        not notes["opened"] or not notes["got"] or notes["got"][:40] != notes["want"][:40]
    ):
        problems.append(
            "the speaker view (key S) does not show the slide's notes "
            f"(opened: {notes['opened']}, shows {notes['got'][:40]!r}, want {notes['want'][:40]!r})"
        )
    return problems


CORE_WORDS = {"book/meet_the_model.html": 2000}  # the core path's word budget per chapter
CORE_WORDS_DEFAULT = 3000
MIN_IMAGE_RATIO = 0.8  # no image shown below 80% of its natural width
MAX_FIRST_FIGURE_SCREENS = 2.0
MAX_MEDIAN_CODE_LINES = 8  # visible code cells stay short: imports and plotting are folded


def reader_row(rel: str, info: dict) -> dict:
    """One chapter page's reader metrics (see READER_JS)."""
    r = info["reader"]
    code = sorted(r["code_lines"])
    ratios = [x for x, _ in r["images"]]
    return {
        "page": rel,
        "core_words": r["core_words"],
        "words_folds_open": r["open_words"],
        "first_figure_screens": r["first_figure_screens"],
        "smallest_image_ratio": min(ratios) if ratios else None,
        "images_below_80pct": sum(x < MIN_IMAGE_RATIO for x in ratios),
        "visible_code_cells": len(code),
        "visible_code_lines": sum(code),
        "median_code_lines": code[len(code) // 2] if code else 0,
    }


def reader_problems(rel: str, info: dict) -> list[str]:
    """What a chapter page must not show a reader: literal MyST, raw pipe tables, images shown
    below 80% of their size, a first figure beyond two screens, a core path over its budget,
    long visible code cells (median), an Explore sentence that calls a working player static,
    a progress bar left below 100% without a final note."""
    r = info["reader"]
    problems = [f"literal MyST in the text: {t!r}" for t in r["myst"]]
    problems += [f"a table shown as raw pipes: {t!r}" for t in r["pipe_tables"]]
    if not rel.startswith("book/") or rel not in CHAPTER_PAGES:
        return problems
    budget = CORE_WORDS.get(rel, CORE_WORDS_DEFAULT)
    if r["core_words"] > budget:
        problems.append(f"core path of {r['core_words']} words with folds closed (budget {budget})")
    first = r["first_figure_screens"]
    if first is None or first > MAX_FIRST_FIGURE_SCREENS:
        problems.append(
            "first figure "
            + ("missing" if first is None else f"{first:.1f} screens below the header box")
            + f" (at most {MAX_FIRST_FIGURE_SCREENS:.0f})"
        )
    problems += [
        f"image shown at {x:.0%} of its width (at least {MIN_IMAGE_RATIO:.0%}): {a!r}"
        for x, a in r["images"]
        if x < MIN_IMAGE_RATIO
    ]
    code = sorted(r["code_lines"])
    if code and code[len(code) // 2] > MAX_MEDIAN_CODE_LINES:
        problems.append(
            f"visible code cells have a median of {code[len(code) // 2]} lines "
            f"(at most {MAX_MEDIAN_CODE_LINES})"
        )
    if r["explorers"]:
        problems += [f"calls a working player static: {t!r}" for t in r["text_static"]]
    for line in r["bars"]:
        m = re.search(r"(\d{1,3})%\|", line)
        if m and int(m.group(1)) < 100 and "stopped at" not in line:
            problems.append(f"progress bar left at {m.group(1)}% without a final note: {line!r}")
    return problems


def own_bytes(rel: str, net: dict, html_root: Path) -> int:
    """The page's HTML plus the images it loads: what is not shared with other pages (theme,
    MathJax and search files live in ``_static/`` and similar ``_*`` folders)."""
    total = (html_root / rel).stat().st_size
    for url, n in net["bytes"].items():
        path = urlparse(url).path.lstrip("/")
        if path != rel and (path.startswith("_images/") or not path.startswith("_")):
            total += n
    return total


def check_links(pages: dict, html_root: Path, base: str) -> list[str]:
    ids = {rel: set(info["ids"]) for rel, info in pages.items()}
    broken = []
    for rel, info in pages.items():
        for link in info["links"]:
            if not link.startswith(base):
                continue
            url, frag = urldefrag(link)
            path = unquote(urlparse(url).path).lstrip("/") or "index.html"
            if path.endswith("/"):
                path += "index.html"
            target = html_root / path
            if not target.is_file():
                broken.append(f"{rel}: link to missing {path}")
                continue
            if frag.startswith("/") and path.startswith("slides/"):
                continue  # a reveal.js deck's own route to a slide (#/3), not an anchor
            if frag and path.endswith(".html"):
                known = ids.get(path)
                if known is None:
                    known = set(re.findall(r'\bid="([^"]+)"', target.read_text("utf-8")))
                    ids[path] = known
                if unquote(frag) not in known:
                    broken.append(f"{rel}: link to missing anchor {path}#{frag}")
    return sorted(set(broken))


def check_search(tab: Tab, base: str) -> list[str]:
    problems = []
    for query, page in SEARCHES:
        tab.load(f"{base}search.html?q={query.replace(' ', '+')}")
        found = tab.evaluate(r"""
(async () => {
  // Sphinx lists hits one at a time and writes a summary when it has finished
  for (let i = 0; i < 200; i++) {
    const summary = document.querySelector('#search-results .search-summary');
    if (summary && summary.textContent.trim()) {
      return [...document.querySelectorAll('#search-results li a')]
          .map(a => a.getAttribute('href'));
    }
    await new Promise(r => setTimeout(r, 100));
  }
  return null;
})()""")
        if found is None:
            problems.append(f"search for {query!r} did not finish within 20 s")
            continue
        if not any(page in (h or "") for h in found):
            problems.append(f"search for {query!r} does not list {page} (got {found[:5]})")
    return problems


# what an executed chapter page must never show
EXECUTION_ERRORS = [
    "highlight-ipythontb",
    "Traceback (most recent call last)",
    "CellTimeoutError",
    "CellExecutionError",
    "DeadKernelError",
    "AssertionError",
]


CHAPTER_PAGES = {md.relative_to(ROOT).with_suffix(".html").as_posix() for md in chapter_sources()}


def expected_figures(md: Path) -> int:
    """Code cells of a chapter that must leave an image file in its page: figures and
    explorers (they carry ``mystnb.image.alt``: tests/booktools/test_book.py), hidden cells
    excluded.
    Animations are inline HTML, not image files; the browser check counts them."""
    n = 0
    for cell in md.read_text(encoding="utf-8").split("```{code-cell}")[1:]:
        head = cell.split("```", 1)[0]
        if "remove-cell" in head or "remove-output" in head:
            continue
        meta = head.split("\n---", 2)[1] if head.lstrip(" ipython3").startswith("\n---") else ""
        if re.search(r"^\s+alt:", meta, re.M):
            n += 1
    return n


def expected_explorers(md: Path) -> int:
    """Code cells of a chapter that display an explorer (``explorer(...)``), hidden cells
    excluded: each must become a precomputed player on the page."""
    n = 0
    for cell in md.read_text(encoding="utf-8").split("```{code-cell}")[1:]:
        body = cell.partition("\n")[2].split("\n```", 1)[0]
        if body.startswith("---"):  # options as a YAML block
            meta = body.split("\n---", 1)[0]
        else:  # or as ":tags: [...]" lines
            meta = "\n".join(
                itertools.takewhile(lambda line: line.startswith(":"), body.splitlines())
            )
        if "remove-cell" in meta or "remove-output" in meta:
            continue
        if re.search(r"^\s*explorer\(", body, re.M):
            n += 1
    return n


def execution_problems(html_root: Path) -> dict[str, list[str]]:
    """Chapters that did not execute cleanly: myst-nb's error reports, tracebacks or
    timeouts in a page, pages with fewer output images than they have figure cells (a
    chapter whose execution failed is rendered without outputs), and pages with fewer
    explorer players than explorer cells."""
    failures: dict[str, list[str]] = {}
    for log in sorted((html_root / "reports").rglob("*.log")):
        rel = log.relative_to(html_root / "reports").as_posix().removesuffix(".err.log")
        first = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
        failures.setdefault(rel + ".html", []).append(
            f"execution failed (reports/{log.name}): {' '.join(first)[:200]}"
        )
    for md in chapter_sources():
        rel = md.relative_to(ROOT).with_suffix(".html").as_posix()
        page = html_root / rel
        if not page.is_file():
            failures.setdefault(rel, []).append("page was not built")
            continue
        text = page.read_text(encoding="utf-8")
        found = [m for m in EXECUTION_ERRORS if m in text]
        if found:
            failures.setdefault(rel, []).append(f"execution error shown in the page: {found}")
        # an explorer's figure is its precomputed player (images inline), not an image file
        images = len(re.findall(r'<img[^>]+src="[^"]*_images/', text)) + text.count(
            'class="sqx-explorer"'
        )
        want = expected_figures(md)
        if images < want:
            failures.setdefault(rel, []).append(
                f"{images} output image(s) for {want} figure cell(s): missing outputs "
                "(did the chapter fail to execute?)"
            )
        players, explorers = text.count('class="sqx-explorer"'), expected_explorers(md)
        if players < explorers:
            failures.setdefault(rel, []).append(
                f"{players} explorer player(s) for {explorers} explorer cell(s): the page shows "
                "a static image instead (the html builder must prefer text/html over "
                "image/png: nb_mime_priority_overrides in _config.yml)"
            )
    return failures


def browse(
    html_root: Path,
    rels: list[str],
    binary: str,
    *,
    shots: Path | None = None,
    search: bool = False,
):
    """Open each page ``rels`` (paths under ``html_root``) in headless Chromium, move its
    explorers' controls and run the page checks.  Returns ``(pages, failures, rows,
    link_problems, search_problems)``; screenshots go to ``shots`` when given."""
    server, base = serve(html_root)
    profile = tempfile.mkdtemp(prefix="check-site-")
    browser = Chromium(binary, profile)
    pages, failures, rows, search_problems = {}, {}, [], []
    theme_a11y: set[str] = set()
    try:
        tab = Tab(browser)
        for rel in rels:
            start = time.perf_counter()
            events = tab.load(base + rel)
            tab.evaluate(WAIT_JS)
            info = json.loads(tab.evaluate(PAGE_JS))
            explorers = json.loads(tab.evaluate(EXPLORER_JS, timeout=120))
            time.sleep(0.1)
            while not browser.events.empty():  # messages logged while waiting
                ev = browser.events.get_nowait()
                if ev.get("sessionId") == tab.session:
                    events.append(ev)
            net = network_report(events, base)
            pages[rel] = info
            problems = page_checks(rel, info, net, html_root)
            own, theirs = axe_problems(axe_report(tab))
            problems += own
            theme_a11y.update(f"{rel}: {x}" for x in theirs)
            if rel.startswith("slides/") and rel != "slides/index.html":
                problems += deck_problems(*deck_report(tab))
            problems += [f"{e['title']}: {p}" for e in explorers for p in e["problems"]]
            if problems:
                failures[rel] = problems
            if shots is not None:
                shot = tab.call("Page.captureScreenshot", {"format": "png"})["data"]
                (shots / (rel.replace("/", "__").removesuffix(".html") + ".png")).write_bytes(
                    base64.b64decode(shot)
                )
            rows.append(
                (
                    rel,
                    (html_root / rel).stat().st_size,
                    own_bytes(rel, net, html_root),
                    sum(net["bytes"].values()),
                    info["images"],
                    info["math"],
                    info["animations"],
                    len(explorers),
                    info["dropdowns"],
                    len(problems),
                    time.perf_counter() - start,
                )
            )
        link_problems = check_links(pages, html_root, base)
        if search:
            search_problems = check_search(tab, base)
    finally:
        browser.close()
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    if theme_a11y:
        print(
            "check_site: accessibility violations in the theme's own parts (reported, not "
            "failed):\n  " + "\n  ".join(sorted(theme_a11y)[:40])
        )
    return pages, failures, rows, link_problems, search_problems


def find_chromium(explicit: str | None = None) -> str | None:
    """The Chromium binary: ``explicit``, ``$CHROMIUM``, or ``chromium`` on the PATH."""
    return (
        explicit
        or os.environ.get("CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("html", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--screenshots", default=str(ROOT / "_build" / "screenshots"))
    parser.add_argument("--chromium", default=None)
    args = parser.parse_args(argv)
    html_root = Path(args.html).resolve()
    binary = find_chromium(args.chromium)
    if not binary:
        print("check_site: no chromium found (Debian: apt-get install chromium)")
        return 2
    if not (html_root / "index.html").is_file():
        print(f"check_site: {html_root} has no index.html; build the book first")
        return 2
    broken = execution_problems(html_root)
    if broken:
        print("check_site: chapters that did not execute cleanly:")
        for rel, problems in broken.items():
            print(f"  {rel}: " + "; ".join(problems))
        return 1
    shots = Path(args.screenshots)
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    rels = sorted(
        str(p.relative_to(html_root))
        for p in html_root.rglob("*.html")
        if not p.relative_to(html_root).parts[0].startswith(("_", "."))
    )
    decks = [f"slides/{md.stem}.html" for md in chapter_sources()]
    missing = [d for d in decks if d not in rels]
    if missing:
        print("check_site: chapters without a slide deck: " + ", ".join(missing))
        return 1
    pages, failures, rows, link_problems, search_problems = browse(
        html_root, rels, binary, shots=shots, search=True
    )

    header = (
        "page",
        "html_bytes",
        "page_bytes",
        "first_visit_bytes",
        "images",
        "math",
        "animations",
        "explorers",
        "dropdowns",
        "problems",
        "seconds",
    )
    report = Path(args.html).resolve().parent / "site_report.tsv"
    report.write_text(
        "\n".join(
            "\t".join(str(round(v, 2)) if isinstance(v, float) else str(v) for v in row)
            for row in [header, *rows]
        )
        + "\n"
    )
    print(
        f"{'page':34s} {'html':>8s} {'page':>8s} {'1st visit':>9s} {'img':>4s} {'math':>5s}"
        f" {'anim':>4s} {'expl':>4s} {'sol':>4s}  problems"
    )
    for rel, html, own, first, imgs, math, anims, expl, drops, n, _ in rows:
        print(
            f"{rel:34s} {html / 1e3:7.0f}k {own / 1e3:7.0f}k {first / 1e6:8.2f}M {imgs:4d}"
            f" {math:5d} {anims:4d} {expl:4d} {drops:4d}  {n}"
        )
    for rel, problems in failures.items():
        print(f"\n{rel}:")
        for p in problems[:25]:
            print(f"  - {p}")
        if len(problems) > 25:
            print(f"  ... and {len(problems) - 25} more")
    reader = [reader_row(rel, pages[rel]) for rel in sorted(pages) if rel in CHAPTER_PAGES]
    if reader:
        keys = list(reader[0])
        (Path(args.html).resolve().parent / "reader_report.tsv").write_text(
            "\n".join(
                "\t".join(f"{r[k]:.2f}" if isinstance(r[k], float) else str(r[k]) for k in keys)
                for r in [dict(zip(keys, keys, strict=True)), *reader]
            )
            + "\n"
        )
        print(
            f"\n{'chapter':34s} {'core words':>10s} {'all words':>9s} {'1st fig':>8s} "
            f"{'min img':>8s} {'<80%':>5s} {'code cells':>10s} {'lines':>6s} {'median':>6s}"
        )
        for r in reader:
            fig = r["first_figure_screens"]
            img = r["smallest_image_ratio"]
            print(
                f"{r['page']:34s} {r['core_words']:10d} {r['words_folds_open']:9d} "
                f"{'-' if fig is None else f'{fig:.1f}':>8s} "
                f"{'-' if img is None else f'{img:.0%}':>8s} {r['images_below_80pct']:5d} "
                f"{r['visible_code_cells']:10d} {r['visible_code_lines']:6d} "
                f"{r['median_code_lines']:6d}"
            )
    for title, problems in [("internal links", link_problems), ("search", search_problems)]:
        if problems:
            print(f"\n{title}:")
            for p in problems:
                print(f"  - {p}")
    n_bad = len(failures) + bool(link_problems) + bool(search_problems)
    print(
        f"\ncheck_site: {len(rows)} pages, screenshots in {shots}, sizes in {report}: "
        + ("all checks passed" if not n_bad else f"{n_bad} problem group(s)")
    )
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
