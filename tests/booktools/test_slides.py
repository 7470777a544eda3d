"""booktools.sphinx.slides: a chapter's deck has the question and result, the key figure, the setup,
the experiments' figures, the takeaways and the exercises' prompts -- and no solution."""

import re

import pytest

from booktools.sphinx import slides

PAGE = """<html><head><script>window.MathJax = {"options": {}}</script></head><body>
<article class="bd-article"><section id="demo">
<h1>Demo: a chapter<a class="headerlink" href="#demo">#</a></h1>
<div class="chapter-header"><p>Prerequisites</p><ul><li><p>one idea</p></li></ul></div>
<div class="tip admonition"><p class="admonition-title">Question and result</p>
<p><strong>Question.</strong> Why? See <a href="bibliography.html#x">Someone (2024)</a>.</p>
<p><strong>Result.</strong> Because.</p></div>
<figure class="align-default"><img alt="key" src="../_images/key.png">
<figcaption><p>Fig. 1 The key figure.</p></figcaption></figure>
<section id="setup"><h2>Setup<a class="headerlink" href="#setup">#</a></h2>
<p>Inputs are bits \\(x\\).</p><div class="math notranslate nohighlight">\\[y = x\\]</div></section>
<section id="theory"><h2>Theory</h2><section id="the-rule"><h3>The rule</h3>
<p>The rule is</p><div class="math notranslate nohighlight">\\[z = 2x\\]</div></section></section>
<section id="experiment-1"><h2>Experiment 1: a run</h2>
<div class="cell tag_hide-input"><details><summary>code</summary><pre>code</pre></details>
<div class="cell_output"><figure class="align-default"><img alt="run" src="../_images/run.png">
<figcaption><p>Fig. 2 The run.</p></figcaption></figure></div></div>
<details><figure><img alt="folded" src="../_images/folded.png"></figure></details></section>
<section id="exercises"><h2>Exercises</h2>
<div class="exercise admonition" id="ex-demo-1"><p class="admonition-title">
<span class="caption-number">Exercise 1 </span> (Think)</p><section id="exercise-content">
<p>★ · 5 min · concept</p><p>Explain the run.</p></section></div>
<div class="solution admonition"><p>SECRET ANSWER</p></div></section>
<section id="takeaways"><h2>Takeaways</h2><ul><li><p>It works.</p></li></ul></section>
</section></article></body></html>"""


@pytest.fixture
def site(tmp_path):
    from PIL import Image

    (tmp_path / "book").mkdir()
    (tmp_path / "_images").mkdir()
    for i, name in enumerate(("key", "run", "folded")):
        im = Image.new("RGB", (40, 30), "white")
        im.putpixel((i * 10, 5), (0, 0, 0))
        for x in range(40):
            im.putpixel((x, 10 + 5 * i), (200 * (i == 1), 0, 200 * (i == 2)))
        im.save(tmp_path / "_images" / f"{name}.png")
    (tmp_path / "book" / "demo.html").write_text(PAGE, encoding="utf-8")
    (tmp_path / "_static" / "mathjax").mkdir(parents=True)
    (tmp_path / "_static" / "mathjax" / "tex-chtml-full.js").write_text("//", encoding="utf-8")
    return tmp_path


def test_deck_has_the_chapters_story_and_no_solution(site):
    [path] = slides.write_decks(site, ["demo"], "The Book")
    text = path.read_text(encoding="utf-8")
    assert "<em>The Book</em>" in text
    titles = re.findall(r"<h2>(.*?)</h2>", text)
    assert titles == [
        "Question and result: the question",
        "Question and result: the result",
        "The result in one figure",
        "Setup",
        "Theory: The rule",
        "Experiment 1: a run",
        "Takeaways",
        "Exercise 1 (Think)",
    ]
    assert "<h1>Demo: a chapter</h1>" in text and "one idea" in text
    assert "SECRET" not in text and "folded" not in text.replace("folded blocks", "")
    assert "★ · 5 min · concept" in text and "Explain the run." in text
    # figures copied next to the deck, links pointed at the site, MathJax local
    assert sorted(p.name for p in (site / "slides" / "demo_files").iterdir()) == [
        "fig1.png",
        "fig2.png",
    ]
    assert 'href="../book/bibliography.html#x"' in text
    assert 'src="mathjax/tex-chtml-full.js"' in text
    assert (site / "slides" / "mathjax" / "tex-chtml-full.js").is_file()
    assert not re.search(r'(src|href)="https?://', text)
    index = (site / "slides" / "index.html").read_text(encoding="utf-8")
    assert 'href="demo.html"' in index and "9 slides" in index


def test_a_figure_shown_twice_is_one_slide(site):
    from shutil import copyfile

    copyfile(site / "_images" / "key.png", site / "_images" / "run.png")
    [path] = slides.write_decks(site, ["demo"])
    titles = re.findall(r"<h2>(.*?)</h2>", path.read_text(encoding="utf-8"))
    assert "Experiment 1: a run" not in titles
