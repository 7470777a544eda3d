"""booktools.chapters (used by booktools.sphinx.chapter_header): the core path's word
count, the reading and run times a chapter's header box shows, and the table of chapter
times."""

from pathlib import Path

from booktools import chapters as ch
from booktools.toc import chapter_names

ROOT = Path(__file__).resolve().parents[2]

PAGE = """---
jupytext: {}
---
# Title

:::{chapter-header}
:prerequisites: none
**You will learn** header words are not counted
:::

One two three.

```{code-cell} ipython3
x = 1  # code is not counted
```

:::{dropdown} Folded
four five six seven
:::

::::{admonition} Visible box
:class: tip
eight {glue:text}`n` {term}`ten <CKA>`
::::

:::{exercise} An exercise
not counted
:::

$$
a + b
$$
"""


def test_core_words_count_only_what_a_reader_sees_with_folds_closed():
    # Title(1) + One two three(3) + Visible box(2) + eight N ten(3): 9 words
    assert ch.core_words(PAGE) == 9
    # unfolding the dropdown adds its four words: the count can fail
    assert ch.core_words(PAGE.replace(":::{dropdown} Folded", ":::{note} Folded")) == 13
    assert ch.reading_minutes(PAGE) == 2  # 9 words at 70 a minute and one display equation
    assert ch.reading_minutes("word " * 301) == 5  # 4.3 minutes, rounded up


def test_run_times_come_from_this_builds_tests_or_the_last_ci_table(tmp_path, monkeypatch):
    build = tmp_path / "chapter_times.tsv"
    build.write_text("chapter\tseconds\nbook/a.md\t61.0\n")
    ci = tmp_path / "ci.tsv"
    ci.write_text("chapter\tseconds\nbook/a.md\t30.0\nbook/b.md\t90.0\n")
    monkeypatch.setattr(ch, "BUILD_TIMES", build)
    monkeypatch.setattr(ch, "CI_TIMES", ci)
    times, origin = ch.chapter_times(["a", "b"])  # this build timed only a: use CI's
    assert times == {"a": 30.0, "b": 90.0} and "CI" in origin
    build.write_text("chapter\tseconds\nbook/a.md\t61.0\nbook/b.md\t20.0\n")
    times, origin = ch.chapter_times(["a", "b"])
    assert times == {"a": 61.0, "b": 20.0} and "this build" in origin
    assert ch.minutes(61.0) == "1.0 min" and ch.minutes(20.0) == "20 s"


def test_the_committed_ci_table_times_every_chapter():
    chapters = [
        p.stem
        for p in (ROOT / "book").glob("*.md")
        if "```{code-cell}" in p.read_text(encoding="utf-8")
    ]
    times = ch.read_times(ch.CI_TIMES)
    assert sorted(times) == sorted(chapters)
    assert all(0 < t < 600 for t in times.values())


def test_chapters_come_in_the_order_of_the_toc():
    chapters = chapter_names(ROOT)
    assert chapters[:2] == ["meet_the_model", "induction_heads"]
    assert "glossary" not in chapters and len(chapters) == len(set(chapters)) == 10


def test_reading_time_adds_the_figures_tables_and_equations_a_reader_studies():
    figure = "```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    name: fig-a\n---\nplot()\n```\n"
    table = "```{code-cell} ipython3\nmarkdown_table(rows)\n```\n"
    page = PAGE + figure + table + "| a | b |\n|---|---|\n| 1 | 2 |\n"
    folded = ":::{dropdown} More\n" + figure + "$$\nc\n$$\n:::\n"
    counts = ch.core_counts(page + folded)
    assert counts == {"words": 9 + 4, "figures": 1, "tables": 2, "equations": 1}
    # 13 words, a figure, two tables and an equation: 0.19 + 1.5 + 2 + 1 minutes
    assert ch.reading_minutes(page + folded) == 5
    assert ch.core_counts(page + folded, folds=True)["figures"] == 2  # the fold opened
    assert ch.core_words(page) == 13  # the markers are not words


def test_the_course_plans_state_the_reading_rate_the_header_uses():
    text = " ".join((ROOT / "book" / "syllabus.md").read_text(encoding="utf-8").split())
    assert f"{ch.WORDS_PER_MINUTE} words a minute" in text
    assert ch.MINUTES_PER_FIGURE == 1.5 and "a minute and a half per figure" in text
    assert ch.MINUTES_PER_TABLE == ch.MINUTES_PER_EQUATION == 1.0
    assert "a minute per table and display equation" in text
