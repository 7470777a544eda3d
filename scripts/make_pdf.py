"""The whole book as one PDF, printed from the built site by headless Chromium.

Jupyter Book's own HTML-to-PDF route downloads a browser; this one uses the Chromium that
the browser check (scripts/check_site.py) already drives: every page of the table of
contents, in order, is opened from ``_build/html``, printed to A4 with its figures, math and
the solutions' dropdowns opened, and the pages are joined into ``_build/pdf/book.pdf`` with
one bookmark per chapter.  The script then reads the text back and fails (exit 1) unless
every chapter's title is in the PDF.

Run after building the book:  python scripts/make_pdf.py [_build/html] [--out book.pdf]
"""
from __future__ import annotations

import argparse
import base64
import io
import json
import os
import shutil
import sys
import tempfile
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from check_site import WAIT_JS, Chromium, Tab, serve  # noqa: E402

A4 = {"paperWidth": 8.27, "paperHeight": 11.69, "marginTop": 0.5, "marginBottom": 0.5,
      "marginLeft": 0.5, "marginRight": 0.5}

# open every dropdown (exercise solutions) so that the printed book carries them
OPEN_JS = r"""
(() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  // exercise solutions are collapsed admonitions (sphinx-togglebutton): show them
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  const h = document.querySelector('main h1, article h1, h1');
  return JSON.stringify({title: h ? h.textContent.replace(/[#¶]/g, '').trim() : ''});
})()
"""


def toc_pages(toc: Path = ROOT / "_toc.yml") -> list[str]:
    """Every page of the table of contents, in reading order, as paths without suffix."""
    import yaml

    data = yaml.safe_load(toc.read_text())
    pages = [data["root"]]
    for part in data.get("parts", []):
        pages += [c["file"] for c in part.get("chapters", [])]
    pages += [c["file"] for c in data.get("chapters", [])]
    return pages


def book_title() -> str:
    """The book's one name, from ``_config.yml`` (the sidebar's title and the intro's H1)."""
    import yaml

    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["title"]


def missing_titles(pdf_bytes: bytes, titles: list[str]) -> list[str]:
    """The titles whose text does not appear in the PDF (whitespace-insensitive)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(pdf_bytes))
    def norm(text: str) -> str:   # NFKC: ligatures such as "ﬁ" in the PDF's text become "fi"
        return " ".join(unicodedata.normalize("NFKC", text).split()).lower()

    flat = norm(" ".join((page.extract_text() or "") for page in reader.pages))
    return [t for t in titles if norm(t) not in flat]


def print_pages(html_root: Path, pages: list[str], binary: str) -> tuple[bytes, list[str]]:
    """Print each page to PDF and join them; return the PDF and the pages' titles."""
    from pypdf import PdfReader, PdfWriter

    server, base = serve(html_root)
    profile = tempfile.mkdtemp(prefix="make-pdf-")
    browser = Chromium(binary, profile)
    writer, titles = PdfWriter(), []
    try:
        tab = Tab(browser)
        for page in pages:
            if not (html_root / f"{page}.html").is_file():
                raise FileNotFoundError(f"{page}.html is not in {html_root}: build the book first")
            tab.load(f"{base}{page}.html")
            tab.evaluate(WAIT_JS)
            title = json.loads(tab.evaluate(OPEN_JS))["title"] or page
            data = tab.call("Page.printToPDF", {"printBackground": True, **A4},
                            timeout=180)["data"]
            start = len(writer.pages)
            writer.append(PdfReader(io.BytesIO(base64.b64decode(data))))
            writer.add_outline_item(title=title, page_number=start)
            titles.append(title)
    finally:
        browser.close()
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    writer.add_metadata({"/Title": book_title()})
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue(), titles


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("html", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--out", default=str(ROOT / "_build" / "pdf" / "book.pdf"))
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM"))
    args = parser.parse_args(argv)
    binary = args.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        print("make_pdf: no chromium found (Debian: apt-get install chromium)")
        return 2
    html_root = Path(args.html).resolve()
    pdf, titles = print_pages(html_root, toc_pages(), binary)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pdf)
    missing = missing_titles(pdf, titles)
    from pypdf import PdfReader

    n_pages = len(PdfReader(io.BytesIO(pdf)).pages)
    print(f"make_pdf: {len(titles)} chapters, {n_pages} pages, {len(pdf) / 1e6:.1f} MB -> {out}")
    if missing:
        print("make_pdf: chapters missing from the PDF's text: " + "; ".join(missing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
