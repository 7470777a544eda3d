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


def test_the_student_edition_leaves_out_exactly_the_claims_a_solution_computes():
    """Tokenization's bpe4 and exercise sections are computed in solution cells (Exercises 21
    and 22's answers); copying has none. The student's page must drop the former only."""
    from booktools.sections import solution_sections

    full = claims_page.overview_markdown(ROOT)
    student = claims_page.overview_markdown(ROOT, without_solutions=True)
    assert solution_sections(ROOT / "book" / "tokenization.md") == {"bpe4", "exercise"}
    assert solution_sections(ROOT / "book" / "copying.md") == set()
    dropped = 0
    for name in chapters.names():
        left_out = solution_sections(ROOT / "book" / f"{name}.md")
        for claim in chapters.table(name).claims:
            row = f"{{glue:text}}`{name}.md::claim.{claim.id}:s`"
            assert row in full
            assert (row in student) == (claim.section not in left_out), claim.id
            dropped += claim.section in left_out
    assert dropped > 0
    assert "in the lecturer's edition only" in student
    assert "in the lecturer's edition only" not in full
