"""Checks of the built site (run by .ci/run after `jupyter-book build`).

Skipped unless SEQTHEORY_CHECK_SITE=1, so that `pytest` before a build does not read a
stale _build/html.
"""

import html
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml

from booktools import setup_cell
from booktools.chapters import colab_url
from booktools.sphinx import colab_notebooks
from booktools.sphinx.teaching_kit import exercises_of
from booktools.toc import toc_files

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"

pytestmark = pytest.mark.skipif(
    os.environ.get("SEQTHEORY_CHECK_SITE") != "1",
    reason="set SEQTHEORY_CHECK_SITE=1 after building the book",
)

PAGES = toc_files(ROOT)
CHAPTERS = [p for p in PAGES if "```{code-cell}" in p.read_text(encoding="utf-8")]


def built(md: Path) -> Path:
    return HTML / md.relative_to(ROOT).with_suffix(".html")


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.srcs = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("href"):
            self.hrefs.append(attrs["href"])
        if tag in ("img", "script") and attrs.get("src"):
            self.srcs.append(attrs["src"])


def parse(page: Path) -> Links:
    links = Links()
    links.feed(page.read_text(encoding="utf-8"))
    return links


def test_every_page_was_built():
    missing = [str(built(p)) for p in PAGES if not built(p).exists()]
    assert not missing, missing


STUDENT_HTML = ROOT / "_build" / "student" / "_build" / "html"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def _colab_links(page: Path) -> list[str]:
    return [h for h in parse(page).hrefs if "colab.research.google.com" in h]


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_colab_links_open_the_generated_notebooks(md):
    """Both editions open the student notebook in Colab, the address of a notebook the
    student build wrote (published as the branch colab_branch, whose root is that build's
    <html>/colab); the lecturer's page also links its own notebook with solutions, a file
    of its build that is not published."""
    url, branch = CONFIG["repository"]["url"], CONFIG["sphinx"]["config"]["colab_branch"]
    want = [colab_url(url, branch, "student", md.stem)]
    for html_root in (HTML, STUDENT_HTML):
        page = html_root / md.relative_to(ROOT).with_suffix(".html")
        assert sorted(set(_colab_links(page))) == want, page
    assert (STUDENT_HTML / "colab" / "student" / f"{md.stem}.ipynb").is_file(), md
    assert not (STUDENT_HTML / "colab" / "lecturer").exists()
    page = HTML / md.relative_to(ROOT).with_suffix(".html")
    local = f"../colab/lecturer/{md.stem}.ipynb"
    assert local in parse(page).hrefs, page
    assert (page.parent / local).resolve().is_file(), local
    assert local not in parse(STUDENT_HTML / md.relative_to(ROOT).with_suffix(".html")).hrefs


def _reader(html_root: Path, edition: str, md: Path):
    import nbformat

    return nbformat.read(html_root / "colab" / edition / f"{md.stem}.ipynb", as_version=4)


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_colab_notebooks_read_like_the_site_and_run_the_same_code(md):
    """No raw MyST, every glued value filled, forms, guidance (colab_notebooks.problems), and
    the code of the chapter's execution that the site shows: the execution cache holds a
    run of exactly the chapter's current code and of what it uses (booktools.cache), and
    the notebooks carry that code changed only by the documented transforms: a form title
    (``#@title``) on some cells, the exercise's number after a lab's feedback call, the
    set-up cell pinned to the build's commit, a check cell
    joined to the collapsed cell before it, and the solution cells left out of the
    student's (so running either runs every check)."""
    from jupyter_cache import get_cache

    from booktools import cache

    store = get_cache(str(cache.cache_path(ROOT)))
    record = store.match_cache_notebook(cache.read_chapter(md, ROOT))  # KeyError: not cached
    executed = store.get_cache_bundle(record.pk).nb
    source = [c for c in executed.cells if c.cell_type == "code"]
    glued = len(re.findall(r"\{glue(?::text)?\}`", md.read_text(encoding="utf-8")))
    for html_root, edition in ((HTML, "lecturer"), (HTML, "student"), (STUDENT_HTML, "student")):
        nb = _reader(html_root, edition, md)
        assert colab_notebooks.problems(nb, edition) == [], (html_root, edition)
        code = [
            colab_notebooks.NUMBER_COMMENT.sub("", re.sub(r"^#@title.*\n", "", c.source))
            for c in nb.cells
            if c.cell_type == "code"
        ]
        want = [
            c.source
            for c in source
            if edition == "lecturer" or "solution" not in c.metadata.get("tags", [])
        ]
        # the set-up cell installs the library at the commit the notebook was built from
        assert want[0].startswith("# Colab setup"), md.stem
        assert setup_cell.pinned_ref(code[0]) == setup_cell.build_ref(ROOT), md.stem
        want[0] = setup_cell.pin(want[0], setup_cell.build_ref(ROOT))
        # a check cell may join the collapsed cell before it: the same code in the same order
        assert "\n\n".join(code) == "\n\n".join(want), (edition, md.stem)
        roles = nb.metadata["seqtheory"]["roles"]
        assert roles.get("glue:text", 0) + roles.get("glue", 0) == glued, (edition, md.stem)
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert "[](" not in text and "]()" not in text, "a link without text or address"
        found = exercises_of(md.read_text(encoding="utf-8"), md.stem)
        written = sum(e.homework for e in found)
        answers = text.count("**Your answer to Exercise")
        notes = text.count("**Your notes on Exercise")
        student = edition == "student"
        assert (answers, notes) == ((written, len(found) - written) if student else (0, 0)), (
            edition,
            md.stem,
        )
        assert "](attachment:" not in text and not any(c.get("attachments") for c in nb.cells)


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_pages_have_executed_figures(md):
    text = built(md).read_text(encoding="utf-8")
    assert re.search(r'<img[^>]+src="[^"]*\.png"', text), f"{md.stem}: no figure in the page"
    assert "highlight-ipythontb" not in text, f"{md.stem}: the page shows an error output"


def test_local_links_and_images_resolve():
    broken = []
    for page in [built(p) for p in PAGES] + [HTML / "index.html", HTML / "genindex.html"]:
        links = parse(page)
        for ref in links.hrefs + links.srcs:
            url = urlparse(ref)
            if url.scheme or url.netloc or ref.startswith(("#", "mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(url.path)).resolve()
            if url.path and not target.exists():
                broken.append(f"{page.relative_to(HTML)} -> {ref}")
    assert not broken, broken[:20]


def test_bibliography_renders_cited_works():
    text = (HTML / "book" / "bibliography.html").read_text(encoding="utf-8")
    assert "Olsson" in text and re.search(r"induction\s+heads", text, re.I)


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_computed_tables_render_as_tables(md):
    """markdown_table outputs must become HTML tables, not raw '| a | b |' text."""
    text = built(md).read_text(encoding="utf-8")
    assert "|---|" not in text, f"{md.name}: a computed table was rendered as plain text"


def reader_text(page: Path) -> str:
    """The page's text as a reader sees it, without code blocks, scripts and styles."""
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"<(script|style|pre)\b[^>]*>.*?</\1>", "", text, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


ROLE = re.compile(r"\{[a-z][a-z:-]*\}`")


@pytest.mark.parametrize("md", PAGES, ids=[p.stem for p in PAGES])
def test_no_markup_shows_as_text(md):
    """A role the build did not resolve (e.g. a glue role inside math) or a markdown table that
    did not parse (a header cell holding '|') shows as raw source on the page."""
    text = reader_text(built(md))
    roles = sorted(set(ROLE.findall(text)))
    assert not roles, f"{md.name}: unrendered roles {roles}"
    rows = [line.strip() for line in text.splitlines() if re.fullmatch(r"\|.*\|.*\|", line.strip())]
    assert not rows, f"{md.name}: a markdown table shows as text: {rows[:2]}"


# --------------------------------------------------------------------------- the two editions
STUDENT = ROOT / "_build" / "student" / "_build" / "html"
EXERCISE = re.compile(r'<div class="exercise[ "][^>]*>')
SOLUTION = re.compile(r'<div class="solution[ "][^>]*>')
SOLUTION_CELL = re.compile(r'class="cell[^"]*\btag_solution\b')
WITH_EXERCISES = [p for p in CHAPTERS if "{exercise}" in p.read_text(encoding="utf-8")]


def test_every_chapter_has_numbered_exercises():
    # fails if a chapter's exercises went back to plain lists (no numbers, no references)
    assert [p.stem for p in CHAPTERS if p not in WITH_EXERCISES] == []


@pytest.mark.parametrize("md", WITH_EXERCISES, ids=[p.stem for p in WITH_EXERCISES])
def test_lecturer_edition_has_a_solution_per_exercise(md):
    html = built(md).read_text(encoding="utf-8")
    n_ex, n_sol = len(EXERCISE.findall(html)), len(SOLUTION.findall(html))
    assert n_ex == md.read_text(encoding="utf-8").count(":::{exercise}") > 0, (n_ex, md)
    assert n_sol == n_ex, (n_sol, n_ex)


@pytest.mark.parametrize("md", WITH_EXERCISES, ids=[p.stem for p in WITH_EXERCISES])
def test_student_edition_has_every_exercise_and_no_solution(md):
    # built by python -m booktools.build_student: fails if a solution, or a cell that computes one,
    # reached the student's page, or if an exercise went missing with them
    page = STUDENT / md.relative_to(ROOT).with_suffix(".html")
    assert page.is_file(), f"{page} missing: run python -m booktools.build_student"
    html = page.read_text(encoding="utf-8")
    assert len(EXERCISE.findall(html)) == len(EXERCISE.findall(built(md).read_text("utf-8")))
    assert SOLUTION.findall(html) == []
    assert SOLUTION_CELL.findall(html) == []
    assert "Student edition" in html


def test_checks_page_lists_every_claim_with_this_builds_value():
    from seqtheory import chapters

    text = (HTML / "book" / "checks.html").read_text(encoding="utf-8")
    claims = [c for name in chapters.names() for c in chapters.table(name).claims]
    checked = [c for c in claims if c.applies("cpu")]
    # each claim's row pastes this build's values from its chapter (claim.ID glued by verify)
    assert text.count("(holds)") == len(checked), (text.count("(holds)"), len(checked))
    assert "FAILS" not in text and "not recorded" not in text
    assert f"The book checks {len(claims)} claims." in text


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_colab_numbers_are_the_sites(md):
    """Each number the Colab notebooks fill in (the build's glue data, formatted as the
    converter does) is on the chapter's page: the notebooks and the site tell one run."""
    import json

    glue = json.loads(
        (ROOT / "_build" / "jupyter_execute" / "book" / f"{md.stem}.glue.json").read_text(
            encoding="utf-8"
        )
    )
    page = html.unescape(re.sub(r"<[^>]+>", "", built(md).read_text(encoding="utf-8")))
    missing = []
    for m in re.finditer(r"\{glue(?::text)?\}`([^`]+)`", md.read_text(encoding="utf-8")):
        name, _, spec = m.group(1).partition(":")
        value = colab_notebooks.format_glue(glue[name]["data"]["text/plain"], spec)
        if value not in page:
            missing.append((name, value))
    assert not missing, missing
