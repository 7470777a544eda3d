"""booktools.make_pdf: pages printed by headless Chromium, joined in order, with every
chapter's title in the text; a missing chapter is reported."""

import io

import pytest

from booktools import make_pdf
from booktools.check_site import find_chromium


@pytest.fixture
def binary():
    """The Chromium the PDF is printed with (skips where there is none, or no pypdf)."""
    pytest.importorskip("pypdf")
    found = find_chromium()
    if found is None:
        pytest.skip("no chromium on this machine (CI installs it for the browser check)")
    return found


def test_toc_pages_follow_the_table_of_contents():
    pages = make_pdf.toc_pages()
    assert pages[0] == "book/intro" and "book/induction_heads" in pages
    assert pages.index("book/partitions") < pages.index("book/copying")
    assert len(pages) == len(set(pages)) >= 12


def test_pages_are_printed_joined_and_checked(tmp_path, binary):
    html = tmp_path / "html" / "book"
    html.mkdir(parents=True)
    for name, title in [("one", "Copying with transformers"), ("two", "Hidden progress")]:
        (html / f"{name}.html").write_text(
            f"<html><body><h1>{title}</h1><details><summary>Solution</summary>"
            f"<p>inside the dropdown of {name}</p></details></body></html>"
        )
    pdf, titles = make_pdf.print_pages(tmp_path / "html", ["book/one", "book/two"], binary)
    assert titles == ["Copying with transformers", "Hidden progress"]
    assert make_pdf.missing_titles(pdf, titles) == []
    assert make_pdf.missing_titles(pdf, ["inside the dropdown of two"]) == []  # opened
    assert make_pdf.missing_titles(pdf, [*titles, "Chain of thought"]) == ["Chain of thought"]
    with pytest.raises(FileNotFoundError, match="three.html"):
        make_pdf.print_pages(tmp_path / "html", ["book/three"], binary)


EXPLORER = """<div class="sqx-explorer"><form class="sqx-controls"><input type="range"></form>
<img class="sqx-image" src="data:image/png;base64,{png}" alt="x">
<p class="sqx-note">One view.</p><script type="application/json" class="sqx-data">
{{"names": ["step"], "labels": [["100", "200", "300"]], "defaults": [0],
  "frames": {{"0": 0, "1": 1, "2": 2}}, "images": ["", "data:image/png;base64,{png}",
  "data:image/png;base64,{png}"], "alt": "x", "star": false}}</script></div>"""
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJ"
    "RU5ErkJggg=="
)


def test_the_book_gets_a_cover_contents_page_numbers_and_chapter_pdfs(tmp_path, binary):
    """Cover, contents with the chapters' first pages, "page / pages" on every page but the
    cover, an explorer printed as a grid of its views, wrapped code, one PDF per chapter; the
    checks fail on a missing number, a wrong contents entry and a too-wide element."""
    html = tmp_path / "html" / "book"
    html.mkdir(parents=True)
    long_line = "x = " + " + ".join(f"value_{i}" for i in range(60))
    (html / "one.html").write_text(
        f"<html><body><h1>Copying with transformers</h1><pre>{long_line}</pre>"
        + EXPLORER.format(png=PNG)
        + "</body></html>"
    )
    (html / "two.html").write_text(
        "<html><body><h1>Hidden progress</h1>" + "<p>text</p>" * 120 + "</body></html>"
    )
    (html / "wide.html").write_text(
        "<html><body><h1>Wide</h1><img alt='a wide figure' style='width:1500px;max-width:none'"
        f" src='data:image/png;base64,{PNG}'></body></html>"
    )
    book = make_pdf.print_book(tmp_path / "html", ["book/one", "book/two", "book/wide"], binary)
    pdf, starts = book["pdf"], book["starts"]
    assert book["titles"] == ["Copying with transformers", "Hidden progress", "Wide"]
    assert starts[0] == 2 and starts[1] == 3 and starts[2] > 3  # cover, contents, pages
    assert make_pdf.page_number_problems(pdf, 2) == []
    assert make_pdf.page_number_problems(pdf, 1) == [1]  # the cover is unnumbered
    assert make_pdf.contents_problems(pdf, book["titles"], starts, range(1, 2)) == []
    wrong = make_pdf.contents_problems(
        pdf, book["titles"], [starts[0], starts[1] + 1, starts[2]], range(1, 2)
    )
    assert any("is not listed at page" in w for w in wrong)
    assert book["clipped"] == {"book/wide": ["img: a wide figure"]}  # the code line wrapped
    assert (
        make_pdf.missing_titles(pdf, ["value_59", "3 of 3 precomputed views", "step = 300"]) == []
    )
    assert book["unprinted"] == {}
    assert set(book["chapters"]) == {"book/one", "book/two", "book/wide"}
    from pypdf import PdfReader

    two = PdfReader(io.BytesIO(book["chapters"]["book/two"]))
    assert len(two.pages) == starts[2] - starts[1]
    assert f"{starts[1] + 1} / " in two.pages[0].extract_text()  # the book's numbers


def test_appendices_follow_the_last_part():
    parts = make_pdf.appendix_captions(
        [
            ("", ["a"]),
            ("Start here", ["b"]),
            ("Part I: x", ["c"]),
            ("Part II: y", ["d"]),
            ("For lecturers", ["e"]),
            ("Reference", ["f"]),
        ]
    )
    assert [c for c, _ in parts] == [
        "",
        "Start here",
        "Part I: x",
        "Part II: y",
        "Appendix A: For lecturers",
        "Appendix B: Reference",
    ]


def test_empty_code_boxes_are_found_in_the_pdf(tmp_path, binary):
    """A grey code background with no text in it (what a cell split at a page break leaves)
    is found; one with its code is not; a code block that prints without its text (an
    opened fold caught by its fade-in) is found from the PDF's text."""
    html = tmp_path / "html" / "book"
    html.mkdir(parents=True)
    box = "<div style='background:#f5f5f5;width:600px;height:60px;margin:20px 0'>{}</div>"
    (html / "full.html").write_text(f"<html><body><h1>Full</h1>{box.format('x = 1')}</body></html>")
    (html / "empty.html").write_text(f"<html><body><h1>Empty</h1>{box.format('')}</body></html>")
    (html / "faded.html").write_text(
        "<html><body><h1>Faded</h1><pre style='opacity:0'>"
        "faded_code = compute(1)</pre><pre>shown = 2</pre>"
        "</body></html>"
    )
    book = make_pdf.print_book(
        tmp_path / "html", ["book/full", "book/empty", "book/faded"], binary, front=False
    )
    found = make_pdf.empty_code_boxes(book["pdf"])
    assert [page for page, _, _ in found] == [2]
    # a code block in the print layout whose text is not in the PDF (printed empty)
    assert book["unprinted"] == {"book/faded": ["faded_code = compute(1)"]}


FURNISHED = """<html><head><meta charset="utf-8"></head><body><h1>Tokenization</h1>
<div class="chapter-header"><p><strong>Reading:</strong> about 14 min · <strong>Colab:</strong>
<a class="reference external" href="https://colab.example/x.ipynb">student notebook</a> ·
<strong>Slides:</strong> <a href="../slides/x.html">this chapter's deck</a></p></div>
<div class="cell tag_hide-cell"><details class="hide above-input"><summary>
<span class="collapsed">Show code cell content</span><span class="expanded">Hide code cell
content</span></summary><pre>x = 1</pre></details></div>
<div class="cell"><pre>answer = ...</pre><div class="cell_output"><p><strong>Not answered
yet.</strong> Replace each ... in the cell above.</p></div></div>
<p>The text goes on.</p>{planted}</body></html>"""


def test_web_furniture_does_not_print_and_the_check_finds_it_when_it_does(tmp_path, binary):
    """The fold buttons, a lab's "Not answered yet" and the header's Colab and slides links
    are left out of print; the same strings in print are found, with their page."""
    html = tmp_path / "html" / "book"
    html.mkdir(parents=True)
    (html / "one.html").write_text(FURNISHED.format(planted=""), encoding="utf-8")
    (html / "two.html").write_text(
        FURNISHED.format(planted="<p>Not answered yet. Replace the blanks.</p>"), encoding="utf-8"
    )
    pdf, _ = make_pdf.print_pages(tmp_path / "html", ["book/one", "book/two"], binary)
    read = make_pdf.scan(pdf)
    text = " ".join(read.texts)
    assert "about 14 min" in text and "x = 1" in text and "The text goes on." in text
    assert make_pdf.furniture_problems(read) == ["page 2: 'Not answered yet. Replace'"]
