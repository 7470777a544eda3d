"""Sphinx extension: one slide deck per chapter, written from the built page.

After the HTML build, each chapter page ``book/NAME.html`` becomes ``slides/NAME.html``: a
plain HTML deck a lecturer can present in any browser and edit in any text editor, without
internet.  Its slides, all taken from the executed page:

1. the title and "You will learn";
2. the question and the result, then the key figure;
3. the setup: the first figure of the Setup section, or its first paragraphs and the
   equation or table they introduce; the Theory's first equation with its lead-in;
4. the first figure of each experiment section (at most ``MAX_FIGURES``);
5. the takeaways;
6. the exercises' prompts, one a slide, with their difficulty, time and kind (never their
   solutions).

The figures are copied next to the deck (``slides/NAME_files/``) and MathJax into
``slides/mathjax/``, so the folder ``slides/`` works on its own, offline.  Arrow keys,
space or a click move through the slides; printing gives one slide per page (landscape).
``slides/index.html`` lists the decks.
"""

from __future__ import annotations

import copy
import html
import posixpath
import re
import shutil
from pathlib import Path

from booktools import LICENCE
from booktools.toc import chapter_names

MAX_FIGURES = 6

CSS = """
:root { --ink: #1d2433; --accent: #2f5d8a; --muted: #5b6678; }
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; background: #20252e; font-family: "Helvetica Neue",
  Arial, sans-serif; color: var(--ink); }
main { height: 100%; }
section.slide { display: none; position: absolute; inset: 0; margin: auto; width: 100vw;
  height: 56.25vw; max-height: 100vh; max-width: 177.78vh; background: #fff;
  padding: 3.2vmin 5vmin 5vmin; overflow: hidden; font-size: 3.4vmin; line-height: 1.35; }
section.slide.current { display: flex; flex-direction: column; }
section.slide h1 { font-size: 1.76em; margin: 14vmin 0 2vmin; color: var(--accent); }
section.slide h2 { font-size: 1.41em; margin: 0 0 2vmin; color: var(--accent);
  border-bottom: 0.3vmin solid #dde3ea; padding-bottom: 1vmin; }
section.slide .body { flex: 1; min-height: 0; display: flex; flex-direction: column; }
section.slide figure { margin: 0; flex: 1; min-height: 0; display: flex; flex-direction: column;
  align-items: center; }
section.slide figure img { flex: 1; min-height: 0; max-width: 100%; object-fit: contain; }
section.slide figcaption { font-size: 0.76em; color: #333b48; margin-top: 1vmin;
  max-width: 90%; }
section.slide .tag { color: var(--muted); font-size: 0.88em; }
section.slide .exercise { margin-bottom: 2vmin; }
section.slide .exercise p { margin: 0.4vmin 0; }
section.slide .small { font-size: 0.88em; }
section.slide table { border-collapse: collapse; font-size: 0.85em; }
section.slide th, section.slide td { border-bottom: 0.2vmin solid #dde3ea;
  padding: 0.6vmin 1.4vmin; }
section.slide a { color: var(--accent); }
section.slide .math.display, section.slide div.math { font-size: 1em; }
footer.deck { position: fixed; bottom: 1vmin; right: 2vmin; color: #5b6678;
  font-size: 2.4vmin; }
@media print {
  @page { size: 297mm 167mm; margin: 0; }
  html, body { background: #fff; height: auto; }
  section.slide { display: flex !important; flex-direction: column; position: relative;
    width: 297mm; height: 167mm; max-width: none; max-height: none; font-size: 5.6mm;
    page-break-after: always; break-after: page; }
  footer.deck { display: none; }
}
"""

JS = """
(function () {
  var slides = Array.prototype.slice.call(document.querySelectorAll('section.slide'));
  var counter = document.getElementById('counter');
  function fit(slide) {   // shrink a slide's text until it fits (down to 60 %)
    var body = slide.querySelector('.body');
    if (!body || slide.dataset.fitted) { return; }
    var size = parseFloat(getComputedStyle(slide).fontSize);
    for (var k = 0; k < 8 && body.scrollHeight > body.clientHeight + 2; k++) {
      size *= 0.94;
      slide.style.fontSize = size + 'px';
    }
    slide.dataset.fitted = '1';
  }
  function show(i) {
    i = Math.max(0, Math.min(slides.length - 1, i));
    slides.forEach(function (s, j) { s.classList.toggle('current', j === i); });
    fit(slides[i]);
    counter.textContent = (i + 1) + ' / ' + slides.length;
    if (location.hash !== '#' + (i + 1)) { history.replaceState(null, '', '#' + (i + 1)); }
    current = i;
  }
  var current = parseInt(location.hash.slice(1), 10) - 1 || 0;
  document.addEventListener('keydown', function (e) {
    if (['ArrowRight', 'PageDown', ' ', 'Enter'].indexOf(e.key) >= 0) { show(current + 1); }
    else if (['ArrowLeft', 'PageUp', 'Backspace'].indexOf(e.key) >= 0) { show(current - 1); }
    else if (e.key === 'Home') { show(0); } else if (e.key === 'End') { show(slides.length - 1); }
    else { return; }
    e.preventDefault();
  });
  document.addEventListener('click', function (e) {
    if (e.target.closest('a')) { return; }
    show(current + (e.clientX < window.innerWidth / 3 ? -1 : 1));
  });
  show(current);
})();
"""


def _soup(text: str):
    from bs4 import BeautifulSoup

    return BeautifulSoup(text, "html.parser")


def _clean(node):
    """A copy of ``node`` without header links, buttons and folded code."""
    node = copy.copy(node)
    for bad in node.select(
        "a.headerlink, button, .toggle-details, script, style, div.cell, details"
    ):
        bad.decompose()
    return node


class Deck:
    """The slides of one chapter, as HTML strings, with the images they use."""

    def __init__(self, page: Path, html_root: Path, name: str, book: str = ""):
        self.page, self.root, self.name, self.book = page, html_root, name, book
        self.soup = _soup(page.read_text(encoding="utf-8"))
        self.article = self.soup.select_one("article.bd-article") or self.soup.body
        self.images: dict[str, str] = {}  # source path (under html root) -> file name
        self.slides: list[str] = []
        self._used: list[list[int]] = []  # thumbnails of the figures on slides

    # -------------------------------------------------------------- links and images
    def _fix(self, node):
        """Point the node's links at the site and its images at the deck's folder."""
        here = posixpath.dirname(self.page.relative_to(self.root).as_posix())
        for a in node.find_all("a", href=True):
            href = a["href"]
            if re.match(r"^[a-z]+:", href):
                continue
            if href.startswith("#"):
                href = f"{posixpath.basename(self.page.as_posix())}{href}"
            target = posixpath.normpath(posixpath.join(here, href.split("#")[0]))
            frag = "#" + href.split("#", 1)[1] if "#" in href else ""
            a["href"] = posixpath.relpath(target, "slides") + frag
        for img in node.find_all("img", src=True):
            src = posixpath.normpath(posixpath.join(here, img["src"].split("?")[0]))
            if src not in self.images:
                ext = posixpath.splitext(src)[1] or ".png"
                self.images[src] = f"{self.name}_files/fig{len(self.images) + 1}{ext}"
            img["src"] = self.images[src]
            img.attrs.pop("srcset", None)
            img.attrs.pop("style", None)
            img.attrs.pop("width", None)
            img.attrs.pop("height", None)
        return node

    def add(self, title: str | None, body: str, cls: str = "") -> None:
        head = f"<h2>{title}</h2>" if title else ""
        self.slides.append(
            f'<section class="slide {cls}">{head}<div class="body">{body}</div></section>'
        )

    def figure(self, fig) -> str:
        fig = self._fix(_clean(fig))
        img = fig.find("img")
        if img is None:
            return ""
        cap = fig.find("figcaption")
        caption = f"<figcaption>{cap.decode_contents()}</figcaption>" if cap else ""
        return f"<figure>{img}{caption}</figure>"

    # -------------------------------------------------------------- the slides
    def build(self) -> None:
        h1 = self.article.find("h1")
        title = _clean(h1).get_text(" ", strip=True).rstrip("#").strip()
        self.title = title
        header = self.article.select_one("div.chapter-header")
        learn = ""
        if header is not None:
            ul = header.find("ul")
            if ul is not None:
                learn = "<p><strong>You will learn</strong></p>" + str(self._fix(_clean(ul)))
        self.slides.append(
            f'<section class="slide title"><h1>{title}</h1><div class="body">{learn}'
            f'<p class="small">From the book <em>{html.escape(self.book)}</em>: '
            f'<a href="../book/{self.name}.html">the chapter\'s page</a>.</p>'
            f'<p class="small">{html.escape(LICENCE)}</p></div></section>'
        )

        tip = self.article.select_one("div.admonition.tip")
        if tip is not None:
            body = self._fix(_clean(tip))
            t = body.select_one(".admonition-title")
            if t is not None:
                t.decompose()
            paras = body.find_all("p", recursive=False)
            question = [p for p in paras if p.get_text().strip().startswith("Question")]
            result = [p for p in paras if p.get_text().strip().startswith("Result")]
            if question and result:
                self.add("Question and result: the question", str(question[0]))
                self.add("Question and result: the result", str(result[0]))
            else:
                self.add("Question and result", body.decode_contents())
            nxt = tip.find_next_sibling()
            if nxt is not None and nxt.name == "figure":
                img = nxt.find("img")
                if img is not None:
                    self._seen(img)
                self.add("The result in one figure", self.figure(nxt))

        sections = [s for s in self.article.find_all("section") if s.find("h2", recursive=False)]
        setup = next((s for s in sections if s.get("id", "").startswith("setup")), None)
        if setup is not None:
            fig = self._first_figure(setup)
            if fig:
                self.add(self._heading(setup), fig)
            else:
                parts, wants_more = [], False
                for child in setup.find_all(["p", "div", "table"], recursive=False):
                    if child.name == "p" and (len(parts) < 2 or wants_more):
                        parts.append(str(self._fix(_clean(child))))
                        wants_more = child.get_text().rstrip().endswith(":")
                    elif child.name == "table" or (
                        child.name == "div"
                        and ("math" in child.get("class", []) or child.find("table"))
                    ):
                        parts.append(str(self._fix(_clean(child))))
                        break
                    elif len(parts) >= 2:
                        break
                self.add(self._heading(setup), "".join(parts), "small")
        theory = next((s for s in sections if s.get("id", "").startswith("theory")), None)
        if theory is not None:
            eq = theory.find("div", class_="math")
            if eq is not None and eq.find_parent("details") is None:
                before = eq.find_previous_sibling("p")
                sub = eq.find_parent("section")
                title = self._heading(sub) if sub is not None and sub is not theory else ""
                body = (str(self._fix(_clean(before))) if before is not None else "") + str(
                    self._fix(_clean(eq))
                )
                self.add("Theory" + (f": {title}" if title else ""), body, "small")

        skip = (
            "setup",
            "theory",
            "explore",
            "going",
            "exercises",
            "takeaways",
            "where",
            "references",
        )
        shown = 0
        for s in self.article.find_all("section"):
            head = s.find(["h2", "h3"], recursive=False)
            if head is None or shown >= MAX_FIGURES:
                continue
            top = s if head.name == "h2" else s.find_parent("section")
            while top is not None and top.find("h2", recursive=False) is None:
                top = top.find_parent("section")
            if top is None or top.get("id", "").startswith(skip):
                continue
            fig = self._first_figure(s, own=True)
            if fig:
                self.add(self._heading(s), fig)
                shown += 1

        takeaways = self.article.find("section", id="takeaways")
        if takeaways is not None:
            ul = takeaways.find("ul")
            if ul is not None:
                self.add("Takeaways", str(self._fix(_clean(ul))))

        for ex in self.article.select("div.exercise"):
            ex = self._fix(_clean(ex))
            head = ex.select_one(".admonition-title").get_text(" ", strip=True)
            paras = ex.select("section p") or ex.find_all("p")[1:]
            tag = paras[0].get_text(" ", strip=True) if paras else ""
            tagged = tag.count("·") == 2
            rest = paras[1:] if tagged else paras
            self.add(
                head,
                (f'<p class="tag">{html.escape(tag)}</p>' if tagged else "")
                + "".join(str(p) for p in rest),
                "exercise",
            )

    def _thumb(self, img):
        """A 32 x 32 grey thumbnail of the image (None if it cannot be read)."""
        here = posixpath.dirname(self.page.relative_to(self.root).as_posix())
        src = posixpath.normpath(posixpath.join(here, img.get("src", "").split("?")[0]))
        try:
            from PIL import Image

            with Image.open(self.root / src) as im:
                small = im.convert("L").resize((32, 32))
                return list(getattr(small, "get_flattened_data", small.getdata)())
        except (OSError, ValueError):
            return None

    def _seen(self, img) -> bool:
        """Whether the figure is already on a slide: the same figure glued twice (the key
        figure, then its experiment) differs in bytes but not in its thumbnail."""
        thumb = self._thumb(img)
        if thumb is None:
            return False
        for other in self._used:
            if sum(abs(a - b) for a, b in zip(thumb, other, strict=True)) / len(thumb) < 0.5:
                return True
        self._used.append(thumb)
        return False

    def _heading(self, section) -> str:
        return _clean(section.find(["h2", "h3"])).get_text(" ", strip=True)

    def _first_figure(self, section, own: bool = False) -> str:
        """The first figure of ``section`` not in a fold and not yet on a slide
        (``own``: not in one of its subsections)."""
        for fig in section.find_all("figure"):
            if own and fig.find_parent("section") is not section:
                continue
            img = fig.find("img", src=True)
            if fig.find_parent("details") is None and img is not None and not self._seen(img):
                return self.figure(fig)
        for img in section.select("div.cell_output img[src]"):
            if (
                img.get("id", "").startswith("_anim")
                or img["src"].startswith("data:")
                or img.find_parent("figure") is not None
                or (own and img.find_parent("section") is not section)
            ):
                continue
            cell = img.find_parent("div", class_="cell")
            if (
                cell is not None
                and "tag_solution" not in cell.get("class", [])
                and img.find_parent("details") is None
            ):
                alt = img.get("alt", "")
                if not alt or alt == "_images" or self._seen(img):
                    continue
                node = self._fix(copy.copy(img))
                return f"<figure>{node}</figure>"
        return ""

    def write(self, out: Path, mathjax_config: str) -> Path:
        out.mkdir(parents=True, exist_ok=True)
        files = out / f"{self.name}_files"
        shutil.rmtree(files, ignore_errors=True)
        files.mkdir()
        for src, dest in self.images.items():
            shutil.copyfile(self.root / src, out / dest)
        doc = (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(self.title)} (slides)</title>\n<style>{CSS}</style>\n"
            f"<script>{mathjax_config}</script>\n"
            f'<script defer src="mathjax/tex-chtml-full.js"></script>\n</head>\n'
            f"<body><main>\n"
            + "\n".join(self.slides)
            + f'\n</main><footer class="deck"><span id="counter"></span></footer>\n'
            f"<script>{JS}</script></body></html>\n"
        )
        path = out / f"{self.name}.html"
        path.write_text(doc, encoding="utf-8")
        return path


def _mathjax_config(page_html: str) -> str:
    m = re.search(r"<script>(window\.MathJax = .*?)</script>", page_html, re.S)
    return m.group(1) if m else ""


def write_decks(html_root: Path, chapters: list[str], book: str = "") -> list[Path]:
    """Write ``slides/NAME.html`` for each chapter (and ``slides/index.html``)."""
    out = html_root / "slides"
    out.mkdir(exist_ok=True)
    written, rows = [], []
    config = ""
    for name in chapters:
        page = html_root / "book" / f"{name}.html"
        if not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        config = config or _mathjax_config(text)
        deck = Deck(page, html_root, name, book)
        deck.build()
        written.append(deck.write(out, config))
        rows.append(
            f'<li><a href="{name}.html">{html.escape(deck.title)}</a> '
            f"({len(deck.slides)} slides)</li>"
        )
    mj = html_root / "_static" / "mathjax"
    if mj.is_dir():
        shutil.rmtree(out / "mathjax", ignore_errors=True)
        shutil.copytree(mj, out / "mathjax")
    (out / "index.html").write_text(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Slides</title>'
        "<style>body{font-family:Arial,sans-serif;max-width:40em;margin:3em auto;}</style>"
        "</head><body><h1>Slides, one deck per chapter</h1><p>Open a deck and move with the "
        "arrow keys, space or a click; print it for one slide per page. Each deck is one HTML "
        "file with its figures in a folder beside it, and works offline: copy the whole "
        "folder <code>slides/</code>. Edit the text of a slide in any text editor (each slide "
        "is a <code>&lt;section&gt;</code>).</p><ul>"
        + "".join(rows)
        + '</ul><p><a href="../index.html">Back to the book</a></p></body></html>\n',
        encoding="utf-8",
    )
    return written


def _build_finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    book = re.sub(r"\s*\(student edition\)$", "", app.config.html_title or "")
    write_decks(Path(app.outdir), chapter_names(Path(app.srcdir)), book or app.config.project)


def setup(app):
    app.connect("build-finished", _build_finished, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
