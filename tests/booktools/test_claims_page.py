"""The page "What the book checks" (booktools.sphinx.claims_page), as the Markdown it generates."""

from pathlib import Path

from booktools.sphinx import claims_page
from seqtheory import chapters

ROOT = Path(__file__).resolve().parents[2]


def test_every_claim_has_a_row_with_its_build_value():
    text = claims_page.overview_markdown(ROOT)
    for name in chapters.names():
        for claim in chapters.table(name).claims:
            assert f"{{glue:text}}`{name}.md::claim.{claim.id}:s`" in text, claim.id
    total = sum(len(chapters.table(n).claims) for n in chapters.names())
    assert text.startswith(f"The book checks {total} claims.")


def test_chapters_follow_the_table_of_contents():
    order = claims_page.toc_chapters(ROOT)
    assert set(chapters.names()) <= set(order)
    assert order.index("meet_the_model") < order.index("checks")


def test_cells_are_single_lines():
    assert claims_page._text("a b\n  c.") == "a b c"
    assert claims_page._code("x |\n y") == "`x | y`"
