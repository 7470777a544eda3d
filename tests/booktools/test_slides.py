"""booktools.slides: a deck is its Markdown source rendered with reveal.js, with the chapter's
figures (SVG), glued numbers and exercises filled in from the build, speaker notes on every
slide; a source that names what the chapter does not have fails."""

import json
import re

import nbformat
import pytest

from booktools import slides
from booktools.toc import chapter_names

PAGE = """<html><body><article class="bd-article"><section id="demo">
<h1>Demo: a chapter<a class="headerlink" href="#demo">#</a></h1>
<div class="exercise admonition" id="ex-demo-1"><p class="admonition-title">
<span class="caption-number">Exercise 7 </span> (Think)</p><section id="exercise-content">
<p>★ · 5 min · concept</p><p>Explain the run.</p></section></div>
<div class="solution admonition"><p>SECRET ANSWER</p></div>
</section></article></body></html>"""

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'

SOURCE = """Note:
Plan of the lecture.

---

# The question

- Why does $x$ grow?

$$y = 2x$$

Note:
Ask the room. See [the setup](demo.md#setup).

---

# The run switches at step {glue}`switch:.0f`

![](fig-run)

Note:
Point at the switch.

---

# In class

- {ex}`ex-demo-1`: explain it

Note:
Five minutes.
"""


@pytest.fixture
def built(tmp_path):
    html_root, executed, sources = tmp_path / "html", tmp_path / "jupyter_execute", tmp_path / "src"
    (html_root / "book").mkdir(parents=True)
    (html_root / "_static" / "mathjax").mkdir(parents=True)
    (html_root / "_static" / "mathjax" / "tex-chtml-full.js").write_text("//", encoding="utf-8")
    (html_root / "book" / "demo.html").write_text(PAGE, encoding="utf-8")
    (executed / "book").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("plot()")
    cell.metadata["mystnb"] = {"figure": {"name": "fig-run"}, "image": {"alt": "The run's loss."}}
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"image/svg+xml": SVG, "image/png": "iVBORw0KGgo="}
        )
    ]
    nb.cells = [cell]
    nbformat.write(nb, executed / "book" / "demo.ipynb")
    glue = {"switch": {"data": {"text/plain": "1234.4"}, "output_type": "display_data"}}
    (executed / "book" / "demo.glue.json").write_text(json.dumps(glue), encoding="utf-8")
    sources.mkdir()
    (sources / "demo.md").write_text(SOURCE, encoding="utf-8")
    return html_root, executed, sources


def write(built, source=None):
    html_root, executed, sources = built
    if source is not None:
        (sources / "demo.md").write_text(source, encoding="utf-8")
    return slides.write_decks(
        html_root, executed, ["demo"], "The Book", "https://example.org/book/", sources
    )


def test_deck_renders_the_source_with_the_chapters_figures_numbers_and_exercises(built):
    [path] = write(built)
    text = path.read_text(encoding="utf-8")
    sections = re.findall(r"<section.*?</section>", text, re.S)
    assert len(sections) == 4
    assert "<h1>Demo: a chapter</h1>" in sections[0] and "<em>The Book</em>" in sections[0]
    assert "CC BY 4.0" in sections[0] and "Plan of the lecture." in sections[0]
    assert "\\(x\\)" in sections[1] and "\\[y = 2x\\]" in sections[1]
    assert 'href="https://example.org/book/book/demo.html#setup"' in sections[1]
    assert "<h2>The run switches at step 1234</h2>" in sections[2]
    assert 'src="demo_files/fig-run.svg"' in sections[2] and 'alt="The run&#x27;s loss."' in text
    assert "r-stretch" in sections[2]
    assert "Exercise 7 (Think) · ★ · 5 min · concept" in sections[3]
    assert 'class="exercise"' in sections[3]
    assert all('<aside class="notes">' in s for s in sections)
    assert "SECRET" not in text
    out = path.parent
    assert (out / "demo_files" / "fig-run.svg").read_text(encoding="utf-8") == SVG
    for rel in (
        "reveal/dist/reveal.js",
        "reveal/plugin/notes/notes.js",
        "reveal/plugin/math/math.js",
        "reveal/book.css",
        "mathjax/tex-chtml-full.js",
    ):
        assert (out / rel).is_file(), rel
    assert "demo.html" in (out / "index.html").read_text(encoding="utf-8")
    assert "https://" not in re.sub(r'href="https://[^"]*"', "", text)  # nothing loads online


@pytest.mark.parametrize(
    "edit, message",
    [
        (("fig-run", "fig-gone"), "no figure named 'fig-gone'"),
        (("switch:.0f", "swtich:.0f"), "glues no value 'swtich'"),
        (("ex-demo-1", "ex-demo-9"), "no exercise 'ex-demo-9'"),
        (("Point at the switch.", ""), "slide 3 (The run switches"),
        (
            (
                "# In class",
                "# In class {ex}`ex-demo-1`\n\nNote:\nGo.\n\n---\n\n# Again {ex}`ex-demo-1`",
            ),
            "are exercise slides",
        ),
        (("# The question", "The question"), "not '# title'"),
    ],
)
def test_a_source_that_does_not_match_the_chapter_fails(built, edit, message):
    source = SOURCE.replace(*edit)
    if edit[0] == "Point at the switch.":
        source = source.replace("Note:\n\n---", "---")
    with pytest.raises(ValueError, match=re.escape(message)):
        write(built, source)


def test_every_chapter_has_a_deck_source_that_names_only_what_the_chapter_has():
    names = chapter_names(slides.ROOT)
    missing = [n for n in names if not (slides.SOURCES / f"{n}.md").is_file()]
    assert missing == []
    problems = [p for n in names for p in slides.lint(n)]
    assert problems == []


def test_lint_catches_a_renamed_figure(tmp_path):
    source = (slides.SOURCES / "induction_heads.md").read_text(encoding="utf-8")
    figure = re.search(r"!\[[^\]]*\]\((fig-[\w-]+)\)", source)[1]
    (tmp_path / "induction_heads.md").write_text(
        source.replace(figure, figure + "-old"), encoding="utf-8"
    )
    assert any(f"{figure}-old" in p for p in slides.lint("induction_heads", tmp_path))
