"""The leak check finds each kind of solution planted in what the student edition ships, and
nothing in a clean copy."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from booktools.leak_check import main, scan, signatures
from booktools.toc import chapter_sources

CHAPTER = """\
# A chapter

Some text that the exercise quotes: the loss falls like a power of the data size here.

:::{exercise}
:label: ex-demo-1
Why does the loss fall like a power of the data size here? (15 min)
:::

:::{solution} ex-demo-1
:class: dropdown
Because the nearest neighbour of a test point comes closer as the square root of the
sample count shrinks the typical gap between points on the manifold.
:::

```{code-cell} ipython3
:tags: [hide-cell, solution]
reference_answer = nearest_neighbour_gap(points, manifold_dimension, sample_count=4096)
```
"""
SENTENCE = "the nearest neighbour of a test point comes closer as the square root of the"
CELL = "reference_answer = nearest_neighbour_gap(points, manifold_dimension, sample_count=4096)"


def text_pdf(lines: list[str]) -> bytes:
    """A one-page PDF that prints ``lines`` in Helvetica (what a PDF's text extraction reads)."""
    stream = (
        "BT /F1 11 Tf 72 720 Td 14 TL "
        + " ".join("(" + line.replace("(", "[").replace(")", "]") + ") '" for line in lines)
        + " ET"
    )
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = "%PDF-1.4\n", []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n{body}\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n"
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return out.encode("latin-1")


@pytest.fixture
def book(tmp_path):
    md = tmp_path / "book" / "demo.md"
    md.parent.mkdir()
    md.write_text(CHAPTER, encoding="utf-8")
    site = tmp_path / "site"
    (site / "book").mkdir(parents=True)
    (site / "book" / "demo.html").write_text(
        "<html><body><p>Why does the loss fall like a power of the data size here?</p>"
        "<p>Some text that the exercise quotes: the loss falls like a power of the data size"
        " here.</p></body></html>",
        encoding="utf-8",
    )
    return md, site


def test_a_clean_site_has_no_leak_and_quoted_exercise_text_is_not_one(book):
    md, site = book
    sigs = signatures([md])
    assert {s.kind for s in sigs} == {"solution text", "solution cell"}
    assert scan(site, sigs) == {}


@pytest.mark.parametrize(
    ("where", "content"),
    [
        ("_sources/book/demo.md", CHAPTER),  # a page's source, as Sphinx copies it
        (  # the solution's text on a page, split by tags and entities
            "book/demo.html",
            "<p>Because <em>the nearest</em> neighbour of a test point comes closer as the "
            "square&#32;root of the sample count</p>",
        ),
        (  # a solution cell in a notebook
            "colab/student/demo.ipynb",
            json.dumps(
                {"cells": [{"cell_type": "code", "source": [CELL], "outputs": []}]}, indent=1
            ),
        ),
        (  # a solution cell's code in a highlighted HTML block
            "book/other.html",
            '<span class="n">reference_answer</span> <span class="o">=</span> '
            '<span class="n">nearest_neighbour_gap</span>(<span class="n">points</span>, '
            "manifold_dimension, sample_count=4096)",
        ),
        ("searchindex.js", f'Search.setIndex({{"text": "{SENTENCE}"}})'),
        (  # a deck's speaker notes
            "slides/demo.html",
            f'<section><h2>Why?</h2><aside class="notes"><p>{SENTENCE}</p></aside></section>',
        ),
        (  # the student handout, the sentence broken over two lines with a hyphen
            "pdf/chapters/demo.pdf",
            [
                "Because the nearest neighbour of a test point comes clo-",
                "ser as the square root of the sample count shrinks",
            ],
        ),
    ],
)
def test_each_planted_leak_is_found(book, where, content):
    md, site = book
    path = site / where
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, list):
        path.write_bytes(text_pdf(content))
    else:
        path.write_text(content, encoding="utf-8")
    leaks = scan(site, signatures([md]))
    assert list(leaks) == [path]


def test_every_solution_of_the_book_can_be_seen_and_a_claim_of_a_solution_section_is_found(
    tmp_path,
):
    mds = chapter_sources()
    sigs = signatures(mds)
    blocks = sum(len(re.findall(r"\{solution\}", md.read_text(encoding="utf-8"))) for md in mds)
    seen = {s.where for s in sigs if s.kind == "solution text"}
    assert len(seen) == blocks  # every solution block has a signature the scan looks for
    claims = [s for s in sigs if s.kind == "claim of a solution section"]
    assert any(s.where.startswith("tokenization:") for s in claims)
    page = tmp_path / "book" / "checks.html"
    page.parent.mkdir()
    from seqtheory import chapters

    table = chapters.table("tokenization")
    claim = next(c for c in table.claims if c.section == "bpe4")
    page.write_text(f"<td>{claim.sentence}</td>", encoding="utf-8")
    assert list(scan(tmp_path, sigs)) == [page]
    assert main([str(tmp_path)]) == 1
    page.unlink()
    assert main([str(tmp_path)]) == 0


def test_a_missing_folder_is_refused(tmp_path):
    assert main([str(Path(tmp_path) / "nothing")]) == 2


def test_a_recorded_lab_answer_is_found_at_full_precision(tmp_path):
    """A lab's recorded answers (the lecturer's scripts/lab_solutions/CHAPTER.labs.json) are
    found in a copy of the record and in a page that prints one; a share such as 0.5 or a
    float32 value such as 0.92 is too common to mark anything."""
    from booktools.labs import record_path
    from booktools.leak_check import distinctive_digits

    assert distinctive_digits(0.5) is None and distinctive_digits(0.9200000166893005) is None
    assert distinctive_digits(1.28763734188113) == "28763734188113"
    sigs = signatures(chapter_sources())
    answers = [s for s in sigs if s.kind == "recorded lab answer"]
    labs = {s.where.split(",")[0] for s in answers}
    assert len(labs) >= 8, labs  # most labs' answers can be recognised
    copy = tmp_path / "data" / "tokenization.labs.json"
    copy.parent.mkdir()
    copy.write_text(record_path("tokenization").read_text(encoding="utf-8"), encoding="utf-8")
    page = tmp_path / "page.html"
    one = next(s for s in answers if s.where.startswith("ex-tokenization-8"))
    value = next(
        x
        for x in json.loads(copy.read_text())["labs"]["ex-tokenization-8"].values()
        if one.words in repr(x)
    )
    page.write_text(f"<p>The reference gives {value!r} bits.</p>", encoding="utf-8")
    leaks = scan(tmp_path, answers)
    assert set(leaks) == {copy, page}


def test_the_installed_package_holds_no_solution_and_a_planted_one_is_found(tmp_path):
    """The wheel a student's pip install unpacks: the claims of solution sections are its only
    (known) hits; a reference solution, a solution cell or a lab record planted in it is a
    leak."""
    from booktools.labs import record_path, solutions_path
    from booktools.leak_check import IN_PACKAGE_KNOWN, package_folder

    sigs = signatures(chapter_sources())
    installed = package_folder(tmp_path)
    assert (installed / "seqtheory" / "chapters" / "tokenization.py").is_file()
    found = scan(installed, sigs)
    assert {s.kind for hits in found.values() for s in hits} <= set(IN_PACKAGE_KNOWN)
    cell = next(s for s in sigs if s.kind == "solution cell" and s.where.startswith("hidden"))
    planted = {
        "seqtheory/chapters/measured/scaling_laws.labs.json": record_path(
            "scaling_laws"
        ).read_text(),
        "seqtheory/chapters/solutions.py": solutions_path("tokenization").read_text()
        + "\n# "
        + cell.words,
    }
    for where, text in planted.items():
        (installed / where).write_text(text, encoding="utf-8")
    found = scan(installed, sigs)
    leaks = {
        str(p.relative_to(installed))
        for p, hits in found.items()
        if any(s.kind not in IN_PACKAGE_KNOWN for s in hits)
    }
    assert leaks == set(planted)
