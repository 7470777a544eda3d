"""The whole book as a handout-grade PDF, printed from the built site by headless Chromium.

Jupyter Book's own HTML-to-PDF route downloads a browser; this one uses the Chromium that
the browser check (booktools.check_site) already drives. Every page of the table of
contents, in order, is opened from ``_build/html`` and printed to A4 with its figures, math
and the solutions' dropdowns opened, code wrapped at the page's width and kept on one page
where it fits, and each explorer printed as a grid of its precomputed views. The PDF opens
with a cover and a table of contents with page numbers; the pages for lecturers, set-up and
reference follow the chapters as appendices; every page after the cover carries the book's
title, its chapter and "page / pages"; one bookmark per chapter. Each chapter is also
written alone to ``chapters/<name>.pdf`` next to the book, with the book's page numbers.

The script fails (exit 1) unless every chapter's title is in the PDF's text, every page
after the cover shows its number, the contents list every chapter at the page where its
title is, and no code line is wider than the printed page (measured in the print layout).

Run after building the book:  python -m booktools.make_pdf [_build/html] [--out book.pdf]
"""

from __future__ import annotations

import argparse
import base64
import datetime
import html as html_lib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from booktools import LICENCE, LICENSE_URL, ROOT
from booktools.check_site import WAIT_JS, Chromium, Tab, find_chromium, serve

A4 = {
    "paperWidth": 8.27,
    "paperHeight": 11.69,
    "marginTop": 0.5,
    "marginBottom": 0.5,
    "marginLeft": 0.5,
    "marginRight": 0.5,
}

PRINTABLE_WIDTH_PX = round((A4["paperWidth"] - A4["marginLeft"] - A4["marginRight"]) * 96)

# Print styles: code wraps at the page's width (no clipped lines) and is kept on one page
# where it fits; figures and boxes are not split; animation controls are hidden; the code
# the site folds (hide-input) is left out, as on the page, while its output is printed;
# no fade-in animation (an opened fold would print empty while it runs).
PRINT_CSS = r"""
@media print {
  pre, div.highlight pre, .output pre { white-space: pre-wrap !important;
    overflow-wrap: anywhere !important; overflow: visible !important; }
  div.cell_input, div.highlight, div.output, figure, .admonition, .sqx-print,
  img, .sd-card, details { break-inside: avoid; }
  h1, h2, h3, h4, .caption { break-after: avoid; }
  .animation .anim-buttons, .animation .anim-state, .animation input[type=range],
  .sqx-controls, .sqx-note { display: none !important; }
  *, *::before, *::after { animation: none !important; transition: none !important; }
  div.tag_hide-input > details.hide { display: none !important; }
  details.hide > summary, button.toggle-button, .headerlink, .copybtn { display: none !important; }
  table { font-size: 8pt; max-width: 100%; }
  th, td { overflow-wrap: anywhere; }
  .table-wrapper, .pst-scrollable-table-container { overflow: visible !important; }
}
"""

# Opens every dropdown (exercise solutions), adds the print styles, replaces each explorer
# by a grid of up to six of its precomputed views with their settings, then measures the
# print layout: the code blocks still wider than their box (clipped when printed).
PREPARE_JS = r"""
(() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  // exercise solutions are collapsed admonitions (sphinx-togglebutton): show them
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  // web furniture out of print: a lab's "Not answered yet" (its cell is printed with the
  // blanks a reader fills in), and the header's Colab and slides links (no target on paper)
  document.querySelectorAll('div.cell_output').forEach(out => {
    if (out.textContent.replace(/\s+/g, ' ').trim().startsWith('Not answered yet')) out.remove();
  });
  document.querySelectorAll('.chapter-header p').forEach(p => {
    const s = [...p.querySelectorAll('strong')].find(e => e.textContent.trim() === 'Colab:');
    if (!s) return;
    const before = s.previousSibling;
    if (before && before.nodeType === 3) {
      before.textContent = before.textContent.replace(/\s*·\s*$/, '');
    }
    while (s.nextSibling) s.nextSibling.remove();
    s.remove();
  });
  const style = document.createElement('style');
  style.textContent = %(css)s;
  document.head.appendChild(style);
  document.querySelectorAll('.sqx-explorer').forEach(root => {
    const data = JSON.parse(root.querySelector('script.sqx-data').textContent);
    const first = root.querySelector('img.sqx-image').getAttribute('src');
    const keys = Object.keys(data.frames);
    const n = Math.min(4, keys.length);
    const pick = [...new Set(Array.from({length: n}, (_, i) =>
      keys[Math.round(i * (keys.length - 1) / Math.max(1, n - 1))]))];
    const grid = document.createElement('div');
    grid.className = 'sqx-print';
    grid.style.cssText = 'display:grid;grid-template-columns:repeat(' +
      Math.min(2, pick.length) + ',1fr);gap:4px 10px;margin:.4em 0';
    pick.forEach(key => {
      const state = key === '' ? [] : key.split(',').map(Number);
      const fig = document.createElement('figure');
      fig.style.margin = '0';
      const img = document.createElement('img');
      img.src = data.images[data.frames[key]] || first;
      img.style.cssText = 'width:100%;height:auto';
      const cap = document.createElement('figcaption');
      cap.style.cssText = 'font-size:8pt;text-align:center';
      cap.textContent = state.map((v, j) => data.names[j] + ' = ' + data.labels[j][v]).join(', ');
      fig.append(img, cap);
      grid.appendChild(fig);
    });
    const note = document.createElement('p');
    note.style.cssText = 'font-size:7pt;opacity:.75;margin:0';
    note.textContent = pick.length + ' of ' + keys.length + ' precomputed views; run the ' +
      'chapter in Colab or Jupyter for every value.';
    root.querySelector('img.sqx-image').replaceWith(grid);
    grid.after(note);
  });
  // what would be cut at the page's right edge: code wider than its box, and any code,
  // table, image or equation reaching past the printed width
  const width = document.documentElement.clientWidth;
  const clipped = [...document.querySelectorAll('pre, table, img, mjx-container[display]')]
    .filter(e => e.offsetParent !== null && e.getBoundingClientRect().width > 0 &&
      ((e.tagName === 'PRE' && e.scrollWidth > e.clientWidth + 1) ||
       e.getBoundingClientRect().right > width + 1))
    .map(e => e.tagName.toLowerCase() + ': ' +
      (e.textContent || e.getAttribute('alt') || '').trim().split('\n')[0].slice(0, 60));
  // the first line of every code block that prints: each must be in the PDF's text
  const code = [...document.querySelectorAll('pre')].filter(e => e.offsetParent !== null)
    .map(e => e.textContent.split('\n').map(l => l.trim()).find(l => l.length > 3) || '')
    .filter(l => l).map(l => l.slice(0, 40));
  const h = document.querySelector('main h1, article h1, h1');
  return JSON.stringify({title: h ? h.textContent.replace(/[#¶]/g, '').trim() : '',
                         clipped, code});
})()
""".replace("%(css)s", json.dumps(PRINT_CSS))


# What must not print: the web's fold buttons, a lab's unanswered feedback, link lines
# whose targets paper cannot carry (the PDF's text, with typographic apostrophes as ASCII).
FURNITURE = (
    "Hide code cell",
    "Show code cell",
    "Not answered yet. Replace",
    "Colab: student notebook",
    "Slides: this chapter's deck",
    "Click to show",
)
# Left out of the student edition's PDF (its handout): the lecturer's appendix of claim checks.
NOT_IN_HANDOUT = ("book/checks",)


def furniture_problems(pdf: "bytes | Scan", first: int = 1) -> list[str]:
    """``"page N: 'string'"`` for each page (numbered from ``first``) that prints web
    furniture (:data:`FURNITURE`)."""
    read = pdf if isinstance(pdf, Scan) else scan(pdf)
    out = []
    for n, text in enumerate(read.texts, start=first):
        flat = " ".join(_norm(text).replace("\u2019", "'").split())
        out += [f"page {n}: {s!r}" for s in FURNITURE if s.lower() in flat]
    return out


def toc_pages(toc: Path = ROOT / "_toc.yml") -> list[str]:
    """Every page of the table of contents, in reading order, as paths without suffix."""
    import yaml

    data = yaml.safe_load(toc.read_text())
    pages = [data["root"]]
    for part in data.get("parts", []):
        pages += [c["file"] for c in part.get("chapters", [])]
    pages += [c["file"] for c in data.get("chapters", [])]
    return pages


def toc_parts(toc: Path = ROOT / "_toc.yml") -> list[tuple[str, list[str]]]:
    """(part caption, its pages) in reading order; the root page under an empty caption."""
    import yaml

    data = yaml.safe_load(toc.read_text())
    parts = [("", [data["root"]])]
    parts += [
        (part.get("caption", ""), [c["file"] for c in part.get("chapters", [])])
        for part in data.get("parts", [])
    ]
    if data.get("chapters"):
        parts.append(("", [c["file"] for c in data["chapters"]]))
    return parts


def appendix_captions(parts: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """The parts after the last "Part ..." (the pages for lecturers, set-up and reference)
    renamed "Appendix A: ...", "Appendix B: ..."."""
    last = max((k for k, (c, _) in enumerate(parts) if c.startswith("Part")), default=-1)
    letters = iter("ABCDEFGH")
    return [
        (f"Appendix {next(letters)}: {c}" if k > last and c else c, ps)
        for k, (c, ps) in enumerate(parts)
    ]


def book_title() -> str:
    """The book's one name, from ``_config.yml`` (the sidebar's title and the intro's H1)."""
    import yaml

    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["title"]


@dataclass
class Scan:
    """What one pass over a PDF's pages reads: each page's text, and the light-grey filled
    boxes (code backgrounds) that hold no text (:func:`empty_code_boxes`)."""

    texts: list[str]
    empty_boxes: list[tuple[int, int, int]]


def scan(pdf: "bytes | Scan", min_width: float = 200.0, min_height: float = 6.0) -> Scan:
    """Read every page once (text extraction is the slow part of the checks)."""
    if isinstance(pdf, Scan):
        return pdf
    from pypdf import PdfReader

    texts, found = [], []
    for k, page in enumerate(PdfReader(io.BytesIO(pdf)).pages):
        seen = _PageBoxes()
        texts.append(
            page.extract_text(visitor_operand_before=seen.operand, visitor_text=seen.text) or ""
        )
        for x0, y0, x1, y1 in seen.boxes:
            if (
                x1 - x0 >= min_width
                and y1 - y0 >= min_height
                and not any(x0 - 2 <= x <= x1 and y0 - 2 <= y <= y1 + 2 for x, y in seen.texts)
            ):
                found.append((k + 1, round(y0), round(y1)))
    return Scan(texts, found)


def missing_titles(pdf: "bytes | Scan", titles: list[str]) -> list[str]:
    """The titles whose text does not appear in the PDF (whitespace-insensitive)."""
    flat = _norm(" ".join(scan(pdf).texts))
    return [t for t in titles if _norm(t) not in flat]


def _norm(text: str) -> str:  # NFKC: ligatures such as "ﬁ" in the PDF's text become "fi"
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


def _print(tab: Tab, **options) -> bytes:
    return base64.b64decode(
        tab.call("Page.printToPDF", {"printBackground": True, **A4, **options}, timeout=180)["data"]
    )


def print_pages(html_root: Path, pages: list[str], binary: str) -> tuple[bytes, list[str]]:
    """Print each page to PDF and join them; return the PDF and the pages' titles."""
    book = print_book(html_root, pages, binary, front=False)
    return book["pdf"], book["titles"]


def _html_page(tab: Tab, server_root: Path, base: str, name: str, html: str) -> None:
    (server_root / name).write_text(html, encoding="utf-8")
    tab.load(f"{base}{name}")


def cover_html(title: str, subtitle: str) -> str:
    return f"""<!doctype html><meta charset="utf-8"><style>
body {{ font-family: sans-serif; margin: 0; }}
.c {{ height: 9.5in; display: flex; flex-direction: column; justify-content: center;
      align-items: center; text-align: center; }}
h1 {{ font-size: 30pt; margin: 0 0 .4em; }} p {{ font-size: 12pt; color: #444; margin: .2em; }}
</style><div class="c"><h1>{html_lib.escape(title)}</h1>
<p>An executable book: every number and figure is computed when the book is built.</p>
<p>{html_lib.escape(subtitle)}</p>
<p style="font-size: 10pt; margin-top: 2em">{html_lib.escape(LICENCE)}<br>
{html_lib.escape(LICENSE_URL)}</p></div>"""


def contents_html(entries: list[tuple[str, str, int]]) -> str:
    """The table of contents: (part caption, title, first page) rows in order."""
    rows, part = [], None
    for caption, title, page in entries:
        if caption != part:
            part = caption
            if caption:
                rows.append(f"<h2>{html_lib.escape(caption)}</h2>")
        rows.append(
            f'<p class="e"><span>{html_lib.escape(title)}</span><span class="d"></span>'
            f"<span>{page}</span></p>"
        )
    return f"""<!doctype html><meta charset="utf-8"><style>
body {{ font-family: sans-serif; font-size: 10.5pt; }} h1 {{ font-size: 20pt; }}
h2 {{ font-size: 11.5pt; margin: 1.1em 0 .3em; }}
.e {{ display: flex; gap: .4em; margin: .25em 0; break-inside: avoid; }}
.d {{ flex: 1; border-bottom: 1px dotted #999; margin-bottom: .3em; }}
</style><h1>Contents</h1>{"".join(rows)}"""


def footer_html(labels: list[str], total: int, first: int) -> str:
    """One A4 page per label, blank but for a footer: the label and "page / pages"."""
    pages = "".join(
        f'<div class="p"><div class="f"><span>{html_lib.escape(label)}</span>'
        f"<span>{first + k} / {total}</span></div></div>"
        for k, label in enumerate(labels)
    )
    return f"""<!doctype html><meta charset="utf-8"><style>
@page {{ size: {A4["paperWidth"]}in {A4["paperHeight"]}in; margin: 0; }}
body {{ margin: 0; }} .p {{ height: {A4["paperHeight"]}in; position: relative;
  break-after: page; overflow: hidden; }}
.f {{ position: absolute; bottom: 0.22in; left: {A4["marginLeft"]}in;
  right: {A4["marginRight"]}in; font: 7.5pt sans-serif; color: #555; display: flex;
  justify-content: space-between; }}
</style>{pages}"""


def print_book(
    html_root: Path, pages: list[str], binary: str, front: bool = True, subtitle: str = ""
) -> dict:
    """Print the pages (and, with ``front``, a cover, the contents and page numbers).

    Returns ``{"pdf", "titles", "starts"`` (first page of each, 0-based) ``, "clipped"``
    (page -> what is wider than the page) ``, "unprinted"`` (page -> code blocks of its print
    layout whose first line is not in the PDF's text) ``, "chapters"`` (page -> its own
    PDF) ``, "scan"`` (the PDF read once: :class:`Scan`)``}``."""
    from pypdf import PdfReader, PdfWriter

    server, base = serve(html_root)
    profile = tempfile.mkdtemp(prefix="make-pdf-")
    scratch = Path(tempfile.mkdtemp(prefix="make-pdf-pages-", dir=html_root))
    browser = Chromium(binary, profile)
    pieces, titles, clipped, codes = [], [], {}, {}
    try:
        tab = Tab(browser)
        # the print layout: measured at the printed width, with print styles
        tab.call("Emulation.setEmulatedMedia", {"media": "print"})
        tab.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": PRINTABLE_WIDTH_PX, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
        )
        for page in pages:
            if not (html_root / f"{page}.html").is_file():
                raise FileNotFoundError(f"{page}.html is not in {html_root}: build the book first")
            tab.load(f"{base}{page}.html")
            tab.evaluate(WAIT_JS)
            info = json.loads(tab.evaluate(PREPARE_JS))
            titles.append(info["title"] or page)
            if info["clipped"]:
                clipped[page] = info["clipped"]
            pieces.append(PdfReader(io.BytesIO(_print(tab))))
            codes[page] = info["code"]
        lengths = [len(r.pages) for r in pieces]
        front_pages: list = []
        if front:
            rel = scratch.relative_to(html_root).as_posix()
            _html_page(
                tab, scratch, f"{base}{rel}/", "cover.html", cover_html(book_title(), subtitle)
            )
            cover = PdfReader(io.BytesIO(_print(tab)))
            captions = {p: c for c, ps in appendix_captions(toc_parts()) for p in ps}

            def entries(offset: int) -> list[tuple[str, str, int]]:
                out, at = [], offset
                for page, title, n in zip(pages, titles, lengths, strict=True):
                    out.append((captions.get(page, ""), title, at + 1))
                    at += n
                return out

            _html_page(
                tab,
                scratch,
                f"{base}{rel}/",
                "contents.html",
                contents_html(entries(len(cover.pages) + 1)),
            )
            contents = PdfReader(io.BytesIO(_print(tab)))
            offset = len(cover.pages) + len(contents.pages)
            if len(contents.pages) != 1:  # the numbers moved: print it again
                _html_page(
                    tab, scratch, f"{base}{rel}/", "contents.html", contents_html(entries(offset))
                )
                contents = PdfReader(io.BytesIO(_print(tab)))
            front_pages = [cover, contents]
        writer = PdfWriter()
        for reader in front_pages:
            writer.append(reader)
        starts = []
        for title, reader in zip(titles, pieces, strict=True):
            starts.append(len(writer.pages))
            writer.append(reader)
            writer.add_outline_item(title=title, page_number=starts[-1])
        total = len(writer.pages)
        if front:
            skip = len(front_pages[0].pages)  # the cover has no number
            labels, k = [], 0
            for index in range(skip, total):
                while k + 1 < len(starts) and starts[k + 1] <= index:
                    k += 1
                label = "Contents" if index < starts[0] else titles[k]
                labels.append(f"{book_title()} · {label}")
            _html_page(
                tab,
                scratch,
                f"{base}{scratch.relative_to(html_root).as_posix()}/",
                "footer.html",
                footer_html(labels, total, skip + 1),
            )
            overlay = PdfReader(
                io.BytesIO(
                    _print(
                        tab,
                        preferCSSPageSize=True,
                        marginTop=0,
                        marginBottom=0,
                        marginLeft=0,
                        marginRight=0,
                    )
                )
            )
            for k in range(total - skip):
                writer.pages[skip + k].merge_page(overlay.pages[k])
    finally:
        browser.close()
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    writer.add_metadata({"/Title": book_title()})
    buf = io.BytesIO()
    writer.write(buf)
    pdf = buf.getvalue()
    read = scan(pdf)
    unprinted = {}
    for k, page in enumerate(pages):
        end = starts[k + 1] if k + 1 < len(starts) else total
        text = _norm(" ".join(read.texts[starts[k] : end])).replace(" ", "")
        missing = [line for line in codes[page] if _norm(line).replace(" ", "") not in text]
        if missing:
            unprinted[page] = missing
    chapters = {}
    for k, page in enumerate(pages):
        end = starts[k + 1] if k + 1 < len(starts) else total
        part = PdfWriter()
        part.append(PdfReader(io.BytesIO(pdf)), pages=(starts[k], end))
        part.add_metadata({"/Title": f"{titles[k]} ({book_title()})"})
        out = io.BytesIO()
        part.write(out)
        chapters[page] = out.getvalue()
    return {
        "pdf": pdf,
        "titles": titles,
        "starts": starts,
        "clipped": clipped,
        "unprinted": unprinted,
        "chapters": chapters,
        "scan": read,
    }


class _PageBoxes:
    """Collects, while pypdf walks one page, the filled light-grey shapes and the text
    positions, in page coordinates."""

    def __init__(self):
        self.fill, self.path = None, []
        self.boxes, self.texts = [], []

    def operand(self, op, args, cm, tm) -> None:
        if op in (b"rg", b"sc", b"scn") and len(args) == 3:
            self.fill = tuple(float(a) for a in args)
        elif op == b"g" and len(args) == 1:
            self.fill = (float(args[0]),) * 3
        elif op in (b"re", b"m", b"l", b"c", b"v", b"y"):
            vals = [float(a) for a in args]
            if op == b"re":
                x, y, w, h = vals
                points = [(x, y), (x + w, y + h)]
            else:
                points = list(zip(vals[0::2], vals[1::2], strict=True))
            a, b, c, d, e, f = cm
            self.path += [(a * x + c * y + e, b * x + d * y + f) for x, y in points]
        elif op in (b"f", b"F", b"f*", b"B", b"B*"):
            grey = (
                self.fill is not None
                and all(0.93 <= v <= 0.99 for v in self.fill)
                and max(self.fill) - min(self.fill) < 0.03
            )
            if self.path and grey:
                xs, ys = [q[0] for q in self.path], [q[1] for q in self.path]
                self.boxes.append((min(xs), min(ys), max(xs), max(ys)))
            self.path = []
        elif op == b"n":
            self.path = []

    def text(self, text, cm, tm, font, size) -> None:
        if text.strip():
            x, y = tm[4], tm[5]
            a, b, c, d, e, f = cm
            self.texts.append((a * x + c * y + e, b * x + d * y + f))


def empty_code_boxes(
    pdf: "bytes | Scan", min_width: float = 200.0, min_height: float = 6.0
) -> list[tuple[int, int, int]]:
    """(page, bottom, top) of the light-grey filled boxes (code backgrounds) wider than
    ``min_width`` points that hold no text: what a code cell split at a page break leaves.
    Measured in the PDF's drawing operations (paths and fills, with their transformations)
    and text positions."""
    return scan(pdf, min_width, min_height).empty_boxes


def page_number_problems(pdf: "bytes | Scan", first: int) -> list[int]:
    """The pages (1-based) from ``first`` on whose text lacks "page / pages"."""
    texts = scan(pdf).texts
    total = len(texts)
    return [i + 1 for i in range(first - 1, total) if f"{i + 1} / {total}" not in texts[i]]


def contents_problems(
    pdf: "bytes | Scan", titles: list[str], starts: list[int], contents_pages: range
) -> list[str]:
    """Each chapter must be in the contents with its first page, and its title on that page."""
    texts = scan(pdf).texts
    listed = _norm(" ".join(texts[i] for i in contents_pages))
    found = []
    for title, start in zip(titles, starts, strict=True):
        if _norm(title) not in listed:
            found.append(f"{title!r} is not in the contents")
        elif not re.search(re.escape(_norm(title)) + r"\s*" + str(start + 1) + r"\b", listed):
            found.append(f"{title!r} is not listed at page {start + 1}")
        if _norm(title)[:40] not in _norm(texts[start]):
            found.append(f"{title!r} is not on page {start + 1}")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("html", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--out", default=str(ROOT / "_build" / "pdf" / "book.pdf"))
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM"))
    args = parser.parse_args(argv)
    binary = find_chromium(args.chromium)
    if not binary:
        print("make_pdf: no chromium found (Debian: apt-get install chromium)")
        return 2
    html_root = Path(args.html).resolve()
    student = "Student edition" in (html_root / "index.html").read_text(encoding="utf-8")
    edition = (
        "Student edition: the exercises without their solutions."
        if student
        else "Lecturer's edition: every exercise with its solution."
    )
    subtitle = f"{edition} Printed {datetime.date.today().isoformat()} from the built site."
    pages = [p for p in toc_pages() if not (student and p in NOT_IN_HANDOUT)]
    book = print_book(html_root, pages, binary, subtitle=subtitle)
    pdf, titles = book["pdf"], book["titles"]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pdf)
    (out.parent / "chapters").mkdir(exist_ok=True)
    for page, data in book["chapters"].items():
        (out.parent / "chapters" / f"{Path(page).name}.pdf").write_bytes(data)
    n_pages = len(book["scan"].texts)
    print(
        f"make_pdf: {len(titles)} chapters, {n_pages} pages, {len(pdf) / 1e6:.1f} MB -> {out} "
        f"(and one PDF per chapter in {out.parent / 'chapters'})"
    )
    read = book["scan"]
    problems = [f"chapter missing from the PDF's text: {t}" for t in missing_titles(read, titles)]
    unnumbered = page_number_problems(read, 2)
    if unnumbered:
        problems.append(f"{len(unnumbered)} pages without their number, e.g. {unnumbered[:5]}")
    problems += contents_problems(read, titles, book["starts"], range(1, book["starts"][0]))
    empty = empty_code_boxes(read)
    if empty:
        problems.append(
            f"{len(empty)} empty code boxes (a cell split at a page break), at "
            f"pages {sorted({e[0] for e in empty})[:10]}"
        )
    furniture = furniture_problems(read)
    if furniture:
        problems.append(f"web furniture printed on {len(furniture)} page(s), e.g. {furniture[:3]}")
    for page, lines in book["unprinted"].items():
        problems.append(
            f"{page}: {len(lines)} code block(s) missing from the PDF's text "
            f"(printed empty?), e.g. {lines[0]!r}"
        )
    for page, lines in book["clipped"].items():
        problems.append(
            f"{page}: {len(lines)} code block(s) wider than the printed page, e.g. {lines[0]!r}"
        )
    for problem in problems:
        print("make_pdf: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
