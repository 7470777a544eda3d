"""The lecture decks: one short Markdown source per chapter, rendered with reveal.js.

    python -m booktools.slides induction_heads        # rebuild one deck after editing it
    python -m booktools.slides                        # every deck
    python -m booktools.slides --html _build/student/_build/html copying

A deck's source is ``book/slides/NAME.md``, written for a lecture. Slides are separated by
a line ``---``; each slide starts with a ``# title``; a line ``Note:`` starts the speaker
notes (reveal.js's own convention), which the presenter sees in the speaker view (key
``S``) and the audience does not. Markdown as usual (lists, tables, ``**bold**``,
``$math$`` and ``$$display math$$``), and three things that come from the built chapter:

- ``![alt text](fig-icl-phases)``: the chapter's figure of that name (a code cell's
  ``mystnb.figure.name``, or a glued figure such as ``key_figure``), taken from the executed
  chapter as SVG, so it is sharp on any projector. On a line of its own it fills the
  slide's free height. Empty alt text takes the chapter's.
- ``{glue}`switch:.0f```: a number the chapter glues, formatted like the page's
  ``{glue:text}`` (never type a measured number into a slide).
- ``{ex}`ex-induction-heads-1```: an exercise as the page numbers it, with its tag
  (difficulty, minutes, kind). A slide that names an exercise counts as an exercise
  slide: at most a third of a deck.

A link to a chapter page (``[text](induction_heads.md#section)``) goes to the published
book, so it works from a copied folder. The deck's first slide is written from the chapter:
its title, the book's title (``_config.yml``), a link to the chapter and the licence; the
source may give it notes by starting with a ``Note:`` block before its first ``---``.

The rendered deck is ``slides/NAME.html`` in the built site, with its figures in
``slides/NAME_files/`` and reveal.js (from the ``sphinx-revealjs`` package, which bundles it)
and MathJax in ``slides/``: the folder works offline, copied anywhere. The book's build
writes every deck; this command rewrites one from the last build's executed chapter in
seconds, without executing anything.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from booktools import LICENCE, ROOT

SOURCES = ROOT / "book" / "slides"
MAX_EXERCISE_SHARE = 1 / 3
SEPARATOR = re.compile(r"^---\s*$", re.M)
NOTE = re.compile(r"^Note:[ \t]*", re.M)
GLUE = re.compile(r"\{glue\}`([\w.\-]+)(?::([^`]*))?`")
EX = re.compile(r"\{ex\}`([\w\-]+)`")
FIGURE_NAME = re.compile(r"^[\w\-]+$")  # a figure's name, not a path or URL

# reveal.js's files a deck loads, from the package that bundles them
REVEAL_FILES = (
    "LICENSE",
    "dist/reset.css",
    "dist/reveal.css",
    "dist/reveal.js",
    "dist/theme/white.css",
    "dist/theme/fonts/source-sans-pro",
    "plugin/notes/notes.js",
    "plugin/math/math.js",
)

CSS = """
.reveal { font-size: 34px; color: #1d2433; }
.reveal h1, .reveal h2 { color: #24476b; text-transform: none; font-weight: 600; }
.reveal h2 { font-size: 1.35em; margin-bottom: 0.5em; }
.reveal h1 { font-size: 1.9em; }
.reveal a { color: #1f5685; text-decoration: underline; }
.reveal section { text-align: left; }
.reveal section.title { text-align: center; }
.reveal section.title p { text-align: center; }
.reveal ul, .reveal ol { display: block; margin-left: 1.2em; }
.reveal li { margin: 0.25em 0; }
.reveal img.figure { display: block; margin: 0.2em auto; max-width: 100%;
  background: #fff; border: 0; box-shadow: none; }
.reveal p.caption { font-size: 0.62em; color: #3d4656; margin: 0.2em 0 0; text-align: center; }
.reveal .small { font-size: 0.7em; }
.reveal table { font-size: 0.8em; margin: 0.4em 0; }
.reveal table th, .reveal table td { border-bottom: 1px solid #c8d0da; padding: 0.2em 0.6em; }
.reveal .exercise { color: #3d4656; }
.reveal .slide-number { color: #1d2433; background: #ffffffcc; font-size: 18px;
  right: auto; left: 12px; bottom: 10px; }
.reveal .controls { color: #24476b; }
@media print { .reveal .slide-number { display: none; } }
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} (slides)</title>
<link rel="stylesheet" href="reveal/dist/reset.css">
<link rel="stylesheet" href="reveal/dist/reveal.css">
<link rel="stylesheet" href="reveal/dist/theme/white.css">
<link rel="stylesheet" href="reveal/book.css">
</head>
<body>
<div class="reveal"><div class="slides">
{slides}
</div></div>
<script src="reveal/dist/reveal.js"></script>
<script src="reveal/plugin/notes/notes.js"></script>
<script src="reveal/plugin/math/math.js"></script>
<script>
Reveal.initialize({{
  hash: true, slideNumber: "c/t", width: 1280, height: 720, margin: 0.04,
  transition: "none", center: false,
  plugins: [RevealNotes, RevealMath.MathJax3],
  mathjax3: {{mathjax: "mathjax/tex-chtml-full.js", tex: {{inlineMath: [["\\\\(", "\\\\)"]]}}}}
}});
</script>
</body>
</html>
"""


def reveal_root() -> Path:
    """reveal.js's folder in the installed ``sphinx-revealjs`` package."""
    try:
        import sphinx_revealjs
    except ImportError as err:  # a clear message instead of a missing-file error later
        raise ImportError(
            "the decks need reveal.js, which the sphinx-revealjs package bundles: "
            "pip install -r requirements.txt"
        ) from err
    return Path(sphinx_revealjs.__file__).parent / "_static" / "revealjs"


@dataclass
class Chapter:
    """What a deck takes from the built chapter: its title, figures, glued values and
    exercises."""

    name: str
    title: str
    figures: dict[str, tuple[str, bytes, str]]  # name -> (extension, bytes, alt text)
    glue: dict[str, str]  # name -> text/plain
    exercises: dict[str, str]  # label -> "Exercise N (title) · ★ · 10 min · lab"


@dataclass
class Slide:
    title: str
    body: str  # Markdown
    notes: str = ""  # Markdown
    figures: list[str] = field(default_factory=list)
    exercises: list[str] = field(default_factory=list)


def _outputs_figure(outputs) -> tuple[str, bytes] | None:
    for out in outputs:
        data = out.get("data", {})
        if "image/svg+xml" in data:
            svg = data["image/svg+xml"]
            return "svg", ("".join(svg) if isinstance(svg, list) else svg).encode("utf-8")
        if "image/png" in data:
            return "png", base64.b64decode("".join(str(data["image/png"]).split()))
    return None


def executed_notebook(name: str, fallback: Path, root: Path = ROOT):
    """The chapter as the build executed it, with its outputs: from the execution cache
    (:mod:`booktools.cache`; the build's ``jupyter_execute`` copy keeps no outputs), else
    ``fallback`` as it is."""
    import nbformat

    md = root / "book" / f"{name}.md"
    if md.is_file():
        from jupyter_cache import get_cache

        from booktools.cache import cache_path
        from booktools.cache import read_chapter as read_source

        if cache_path(root).exists():
            cache = get_cache(str(cache_path(root)))
            try:
                record = cache.match_cache_notebook(read_source(md, root))
            except KeyError:
                pass
            else:
                return cache.get_cache_bundle(record.pk).nb
    return nbformat.read(fallback, as_version=4)


def read_chapter(name: str, html_root: Path, executed: Path) -> Chapter:
    """The built chapter ``name``: its page under ``html_root`` and its executed notebook
    (with the glued values) under ``executed`` (the build's ``jupyter_execute``)."""
    from bs4 import BeautifulSoup

    page = html_root / "book" / f"{name}.html"
    nb_path = executed / "book" / f"{name}.ipynb"
    for path in (page, nb_path):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: build the book first (jupyter-book build .)")
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    h1 = soup.select_one("article h1") or soup.find("h1")
    for a in h1.select("a.headerlink"):
        a.decompose()
    title = h1.get_text(" ", strip=True)
    exercises = {}
    for div in soup.select("div.exercise[id]"):
        head = div.select_one(".admonition-title")
        head_text = head.get_text(" ", strip=True) if head else div["id"]
        head_text = re.sub(
            r"\\\((.*?)\\\)", r"$\1$", head_text
        )  # the page's math, as the source writes it
        paras = [p.get_text(" ", strip=True) for p in div.select("section p")]
        tag = next((p for p in paras if p.count("·") == 2), "")
        exercises[div["id"]] = head_text + (f" · {tag}" if tag else "")

    figures, glue = {}, {}
    nb = executed_notebook(name, nb_path)
    for cell in nb.cells:
        meta = cell.metadata.get("mystnb", {})
        figname = meta.get("figure", {}).get("name")
        found = _outputs_figure(cell.get("outputs", []))
        if figname and found:
            figures[figname] = (*found, meta.get("image", {}).get("alt", ""))
    glue_path = executed / "book" / f"{name}.glue.json"
    if glue_path.is_file():
        for key, bundle in json.loads(glue_path.read_text(encoding="utf-8")).items():
            found = _outputs_figure([bundle])
            if found:
                figures.setdefault(key, (*found, ""))
            elif "text/plain" in bundle.get("data", {}):
                glue[key] = bundle["data"]["text/plain"]
    return Chapter(name, title, figures, glue, exercises)


def parse(text: str, where: str = "source") -> tuple[str, list[Slide]]:
    """``(title slide's notes, slides)`` of a deck's source."""
    chunks = SEPARATOR.split(text)
    title_notes = ""
    first = chunks[0].strip()
    if first and not first.startswith("#"):
        parts = NOTE.split(first, maxsplit=1)
        if parts[0].strip() or len(parts) == 1:
            raise ValueError(
                f"{where}: before the first '---' only a 'Note:' block (the title slide's "
                "notes) may stand; start each slide with '# title'"
            )
        title_notes = parts[1].strip()
        chunks = chunks[1:]
    slides = []
    for k, chunk in enumerate(chunks, start=1):
        chunk = chunk.strip()
        if not chunk:
            continue
        head, _, rest = chunk.partition("\n")
        if not head.startswith("# "):
            raise ValueError(f"{where}, slide {k}: starts with {head[:40]!r}, not '# title'")
        body, *notes = NOTE.split(rest, maxsplit=1)
        slide = Slide(head[2:].strip(), body.strip(), notes[0].strip() if notes else "")
        slide.figures = [m[1] for m in re.finditer(r"!\[[^\]]*\]\(([^)\s]+)\)", body)]
        slide.exercises = EX.findall(head + "\n" + body)
        slides.append(slide)
    return title_notes, slides


def _glue_text(raw: str, fmt: str | None, where: str) -> str:
    if not fmt:
        return raw.strip("'\"")
    try:
        return format(float(raw), fmt)
    except ValueError:
        try:
            return format(int(raw), fmt)
        except ValueError as err:
            raise ValueError(f"{where}: glued value {raw!r} does not take format {fmt!r}") from err


def _markdown():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def inline(content, _opts):
        return "\\(" + html.escape(content) + "\\)"

    def block(content, _opts):
        return '<div class="math">\\[' + html.escape(content) + "\\]</div>\n"

    dollarmath_plugin(
        md, renderer=lambda c, o: block(c, o) if o.get("display_mode") else inline(c, o)
    )
    return md


class Deck:
    """One chapter's deck: its source rendered with what the built chapter provides."""

    def __init__(self, chapter: Chapter, source: Path, book: str, baseurl: str):
        self.chapter, self.source, self.book = chapter, source, book
        self.baseurl = baseurl.rstrip("/") + "/" if baseurl else "../"
        self.title_notes, self.slides = parse(source.read_text(encoding="utf-8"), str(source))
        self.used: dict[str, str] = {}  # figure name -> file name under NAME_files/
        self.md = _markdown()

    def problems(self) -> list[str]:
        """What in the source the built chapter does not provide, and the deck's shape."""
        ch, out = self.chapter, []
        for k, s in enumerate(self.slides, start=2):
            where = f"{self.source.name}, slide {k} ({s.title})"
            for f in s.figures:
                if FIGURE_NAME.match(f) and f not in ch.figures:
                    out.append(f"{where}: the chapter has no figure named {f!r}")
            for label in s.exercises:
                if label not in ch.exercises:
                    out.append(f"{where}: the chapter has no exercise {label!r}")
            for m in GLUE.finditer("\n".join((s.title, s.body, s.notes))):
                if m[1] not in ch.glue:
                    out.append(f"{where}: the chapter glues no value {m[1]!r}")
            if not s.notes:
                out.append(f"{where}: no speaker notes")
        n_ex = sum(bool(s.exercises) for s in self.slides)
        if n_ex > MAX_EXERCISE_SHARE * (len(self.slides) + 1):
            out.append(
                f"{self.source.name}: {n_ex} of {len(self.slides) + 1} slides are exercise "
                f"slides (at most a third)"
            )
        return out

    # ------------------------------------------------------------------ rendering
    def _expand(self, text: str, where: str) -> str:
        ch = self.chapter
        text = GLUE.sub(lambda m: _glue_text(ch.glue[m[1]], m[2], where), text)
        return EX.sub(lambda m: f"**{ch.exercises[m[1]]}**", text)

    def _figure(self, name: str, alt: str) -> str:
        ext, _, chapter_alt = self.chapter.figures[name]
        self.used[name] = f"{self.chapter.name}_files/{name}.{ext}"
        alt = alt or chapter_alt or name
        return f'<img class="figure" src="{self.used[name]}" alt="{html.escape(alt)}">'

    def _render(self, text: str, where: str) -> str:
        out = self.md.render(self._expand(text, where))

        def image(m):
            alt, src = html.unescape(m[2]), html.unescape(m[1])
            if FIGURE_NAME.match(src):
                return self._figure(src, alt)
            return m[0]

        out = re.sub(r'<img src="([^"]*)" alt="([^"]*)"\s*/?>', image, out)
        # a figure alone on its line fills the slide's free height (reveal.js's r-stretch)
        out = re.sub(
            r'<p>(<img class="figure"[^>]*>)</p>',
            lambda m: m[1].replace('class="figure"', 'class="figure r-stretch"'),
            out,
        )

        def link(m):
            href = m[1]
            page = re.match(r"^(?:\.\./)?(?:book/)?([\w\-]+)\.md(#.*)?$", href)
            if page:
                href = f"{self.baseurl}book/{page[1]}.html{page[2] or ''}"
            return f'<a href="{href}"'

        return re.sub(r'<a href="([^"]*)"', link, out)

    def html(self) -> str:
        ch, book = self.chapter, html.escape(self.book)
        page = f"{self.baseurl}book/{ch.name}.html"
        notes = self._render(self.title_notes, "title slide") if self.title_notes else ""
        parts = [
            f'<section class="title"><h1>{html.escape(ch.title)}</h1>'
            f"<p>From the book <em>{book}</em></p>"
            f'<p class="small"><a href="{page}">The chapter in the book</a></p>'
            f'<p class="small">{html.escape(LICENCE)}</p>'
            + (f'<aside class="notes">{notes}</aside>' if notes else "")
            + "</section>"
        ]
        for k, s in enumerate(self.slides, start=2):
            where = f"{self.source.name}, slide {k}"
            cls = ' class="exercise"' if s.exercises else ""
            body = self._render(s.body, where)
            notes = self._render(s.notes, where) if s.notes else ""
            parts.append(
                f"<section{cls}><h2>{self._render_inline(s.title, where)}</h2>\n{body}"
                + (f'<aside class="notes">{notes}</aside>' if notes else "")
                + "</section>"
            )
        return TEMPLATE.format(title=html.escape(ch.title), slides="\n".join(parts))

    def _render_inline(self, text: str, where: str) -> str:
        return self.md.renderInline(self._expand(text, where))

    def write(self, out: Path) -> Path:
        problems = self.problems()
        if problems:
            raise ValueError(
                "the deck's source does not match the chapter:\n  " + "\n  ".join(problems)
            )
        doc = self.html()
        files = out / f"{self.chapter.name}_files"
        shutil.rmtree(files, ignore_errors=True)
        files.mkdir(parents=True)
        for name, rel in self.used.items():
            (out / rel).write_bytes(self.chapter.figures[name][1])
        path = out / f"{self.chapter.name}.html"
        path.write_text(doc, encoding="utf-8")
        return path


def copy_assets(html_root: Path, out: Path) -> None:
    """reveal.js and the book's deck style into ``out/reveal``, MathJax into ``out/mathjax``."""
    src, dest = reveal_root(), out / "reveal"
    shutil.rmtree(dest, ignore_errors=True)
    for rel in REVEAL_FILES:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if (src / rel).is_dir():
            shutil.copytree(src / rel, target)
        else:
            shutil.copyfile(src / rel, target)
    (dest / "book.css").write_text(CSS.lstrip(), encoding="utf-8")
    mj = html_root / "_static" / "mathjax"
    if mj.is_dir():
        shutil.rmtree(out / "mathjax", ignore_errors=True)
        shutil.copytree(mj, out / "mathjax")


def write_index(out: Path, decks: list[tuple[str, str, int]], book: str) -> None:
    rows = "".join(
        f'<li><a href="{name}.html">{html.escape(title)}</a> ({n} slides)</li>'
        for name, title, n in decks
    )
    (out / "index.html").write_text(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Slides: {html.escape(book)}</title>"
        "<style>body{font-family:Arial,sans-serif;max-width:42em;margin:3em auto;"
        "line-height:1.5;color:#1d2433}a{color:#1f5685}</style>"
        f"</head><body><main><h1>Slides, one deck per chapter</h1><ul>{rows}</ul>"
        "<p>Move with the arrow keys or space; <kbd>S</kbd> opens the speaker view with the "
        "notes and a timer; <kbd>F</kbd> goes full screen; <kbd>Esc</kbd> shows every "
        "slide. To print (one slide a page), add <code>?print-pdf</code> to the deck's "
        "address and print from the browser. The folder works offline, copied anywhere.</p>"
        "<p>Each deck is written from a short Markdown source in the repository, "
        "<code>book/slides/NAME.md</code>. Edit it and rebuild that deck in a few seconds "
        "with <code>python -m booktools.slides NAME</code>.</p>"
        '<p><a href="../index.html">Back to the book</a></p></main></body></html>\n',
        encoding="utf-8",
    )


def write_decks(
    html_root: Path,
    executed: Path,
    chapters: list[str],
    book: str,
    baseurl: str = "",
    sources: Path = SOURCES,
) -> list[Path]:
    """Write ``slides/NAME.html`` under ``html_root`` for each chapter with a source (and
    ``slides/index.html``); raises ``ValueError`` listing what no chapter provides."""
    if not isinstance(chapters, list | tuple):
        raise TypeError(f"chapters must be a list of chapter names, got {type(chapters).__name__}")
    out = html_root / "slides"
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(html_root, out)
    written, rows, problems = [], [], []
    for name in chapters:
        source = sources / f"{name}.md"
        if not source.is_file():
            problems.append(f"{source}: no slide source for chapter {name!r}")
            continue
        deck = Deck(read_chapter(name, html_root, executed), source, book, baseurl)
        found = deck.problems()
        if found:
            problems += found
            continue
        written.append(deck.write(out))
        rows.append((name, deck.chapter.title, len(deck.slides) + 1))
    if problems:
        raise ValueError("slides:\n  " + "\n  ".join(problems))
    if (out / "index.html").is_file() and len(chapters) == 1:
        return written  # one deck rebuilt: the index lists them all already
    write_index(out, rows, book)
    return written


def book_settings(root: Path = ROOT) -> tuple[str, str]:
    """``(title, baseurl)`` from ``_config.yml``."""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    return config.get("title", ""), (config.get("html") or {}).get("baseurl", "")


def lint(name: str, sources: Path = SOURCES, root: Path = ROOT) -> list[str]:
    """The problems :meth:`Deck.problems` would find, read from the chapter's source
    (``book/NAME.md``) instead of its build: figure names, glued names the page pastes or the
    code glues, and exercise labels. Needs no build; the build checks the same against the
    executed chapter."""
    text = (root / "book" / f"{name}.md").read_text(encoding="utf-8")
    figures = set(re.findall(r"^\s+name:\s*([\w\-]+)\s*$", text, re.M)) | {"key_figure"}
    glued = set(re.findall(r"\{glue(?::\w+)?\}`([\w.\-]+)", text))
    glued |= set(re.findall(r"glue\(\s*[\"']([\w.\-]+)[\"']", text))
    labels = set(re.findall(r"^:label:\s*([\w\-]+)", text, re.M))
    chapter = Chapter(
        name,
        name,
        {f: ("svg", b"", "") for f in figures},
        {g: "0" for g in glued},
        {x: x for x in labels},
    )
    deck = Deck(chapter, sources / f"{name}.md", "", "")
    return deck.problems()


def main(argv: list[str] | None = None) -> int:
    from booktools.toc import chapter_names

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter names (default: every chapter)")
    parser.add_argument(
        "--html",
        type=Path,
        default=ROOT / "_build" / "html",
        help="the built site (default: _build/html)",
    )
    parser.add_argument(
        "--lint",
        action="store_true",
        help="check the sources against the chapters' sources, without a build",
    )
    args = parser.parse_args(argv)
    known = chapter_names(ROOT)
    unknown = [c for c in args.chapters if c not in known]
    if unknown:
        parser.error(f"unknown chapter(s) {', '.join(unknown)}; chapters: {', '.join(known)}")
    if args.lint:
        found = [p for c in args.chapters or known for p in lint(c)]
        print("\n".join(found) or "slides: the sources name only what their chapters have")
        return 1 if found else 0
    book, baseurl = book_settings()
    html_root = args.html.resolve()
    try:
        paths = write_decks(
            html_root, html_root.parent / "jupyter_execute", args.chapters or known, book, baseurl
        )
    except (ValueError, FileNotFoundError) as err:
        print(f"slides: {err}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
