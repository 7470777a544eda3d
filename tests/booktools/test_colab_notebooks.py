"""The reader notebooks for Colab (booktools.sphinx.colab_notebooks) and the set-up cell's
failure path.

The converter is tested on small MyST snippets with made-up references; the notebooks of
the real build are checked in tests/booktools/test_site.py (after a build) and run by the Colab
emulation in CI.
"""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
import pytest

from booktools import release_check
from booktools.chapters import colab_url
from booktools.setup_cell import cell_source
from booktools.sphinx import colab_notebooks as cn


def refs(**glue):
    return cn.Refs(
        site="https://example.org/book-site/",
        glue={k: {"data": {"text/plain": v}} for k, v in glue.items()},
        docname="book/chap",
        titles={
            "book/chap": "A chapter",
            "book/other": "Another chapter",
            "book/glossary": "Glossary",
        },
        labels={
            "fig-a": ("book/chap", "fig-a", ""),
            "ex-1": ("book/chap", "ex-1", "Exercise"),
            "sec-x": ("book/other", "sec-x", "A section"),
        },
        numbers={"fig-a": "Fig. 7", "ex-1": "Exercise 3"},
        terms={"sparse parity": ("book/glossary", "term-sparse-parity")},
        bib={
            "barak2022hidden": ("Barak et al.", "2022", "https://arxiv.org/abs/2207.08799"),
            "a2020": ("Abbe and Sandon", "2020", "https://example.org/a"),
        },
    )


def convert(src, edition="lecturer", **glue):
    return cn.MarkdownConverter(refs(**glue), edition).convert(src)


def test_glue_values_are_formatted_as_myst_nb_does():
    out = convert(
        "from step {glue:text}`start:.0f` on, {glue:text}`frac:.1%` of {glue:text}`w`",
        start="1234.4",
        frac="0.256",
        w="'all'",
    )
    assert out.source == "from step 1234 on, 25.6% of all"
    with pytest.raises(KeyError, match="no glued value 'gone'"):
        convert("{glue:text}`gone`")


def test_citations_references_and_terms_become_links():
    out = convert(
        "{cite:t}`barak2022hidden` show it {cite:p}`barak2022hidden,a2020`; see "
        "{numref}`fig-a`, {numref}`Figure %s <fig-a>`, {doc}`other`, "
        "{doc}`the other one <other>`, {ref}`sec-x` and a {term}`sparse parity`."
    )
    assert out.source == (
        "[Barak et al. (2022)](https://arxiv.org/abs/2207.08799) show it "
        "([Barak et al., 2022](https://arxiv.org/abs/2207.08799); "
        "[Abbe and Sandon, 2020](https://example.org/a)); see "
        "Fig. 7, Figure 7, "
        "[Another chapter](https://example.org/book-site/book/other.html), "
        "[the other one](https://example.org/book-site/book/other.html), "
        "[A section](https://example.org/book-site/book/other.html#sec-x) and a "
        "[sparse parity](https://example.org/book-site/book/glossary.html#term-sparse-parity)."
    )


def test_links_to_the_books_pages_point_to_the_site():
    out = convert(
        "the [checks](checks.md), [a part](../book/other.md#sec-x), [out]"
        "(https://x.org/a.md), [here](#top) and `[code](y.md)`"
    )
    assert out.source == (
        "the [checks](https://example.org/book-site/book/checks.html), [a part]"
        "(https://example.org/book-site/book/other.html#sec-x), [out](https://x.org/a.md), "
        "[here](#top) and `[code](y.md)`"
    )
    r = refs()
    r.bib["k"] = ("Gu et al.", "2022", "https://x.org/p", 'Efficiently "modeling"')
    assert (
        cn.MarkdownConverter(r, "lecturer").convert("{cite:p}`k`").source
        == "([Gu et al., 2022](https://x.org/p \"Efficiently 'modeling'\"))"
    )
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "Run all free Colab CPU GPU runtime FULL=1 book's own run CC BY"
            ),
            nbformat.v4.new_markdown_cell("see [x](checks.md)"),
        ]
    )
    assert cn.problems(nb, "student") == ["cell 1: a link relative to the site: 'checks.md'"]


def test_roles_in_code_are_left_alone_and_unknown_ones_refused():
    out = convert("write `{term}` roles like ``{ref}`x` `` and\n```\n{cite:p}`k`\n```")
    assert "`{term}`" in out.source and "{cite:p}`k`" in out.source
    r = refs()
    r.bib["nourl"] = ("Someone", "2020", "")
    with pytest.raises(KeyError, match="no url for"):
        cn.MarkdownConverter(r, "lecturer").convert("{cite:p}`nourl`")
    with pytest.raises(ValueError, match=r"the role \{eq\} has no Colab form"):
        convert("see {eq}`my-eq`")
    with pytest.raises(ValueError, match=r"the directive \{mermaid\} has no Colab form"):
        convert(":::{mermaid}\ngraph\n:::")


EXERCISE = """:::{exercise} Counting
:label: ex-1

How many supports for {glue:text}`n`?
:::

:::{solution} ex-1
:class: dropdown

```python
print(1)
```
There are many.
:::
"""


def test_exercises_and_solutions_per_edition():
    lecturer = convert(EXERCISE, n="30")
    assert '<a id="ex-1"></a>**Exercise 3 (Counting).**' in lecturer.source
    assert "How many supports for 30?" in lecturer.source
    assert "<details>\n<summary>Solution to Exercise 3</summary>" in lecturer.source
    assert "```python\nprint(1)\n```\nThere are many." in lecturer.source
    student = convert(EXERCISE, "student", n="30")
    assert "Exercise 3 (Counting)" in student.source
    assert "Solution" not in student.source and "There are many" not in student.source
    assert lecturer.exercises == ["ex-1"]


def test_boxes_folds_targets_and_the_key_figure():
    src = """(my-target)=
% a comment
::::{admonition} Question and result
:class: tip
**Question.** Why?

:::{dropdown} More detail
Folded {glue:text}`x`.
:::
::::

```{glue:figure} key_figure
:alt: A [plot] of things.

The main run.
```"""
    r = refs(x="2")
    r.glue["key_figure"] = {"data": {"image/png": "iVBORw0K", "text/plain": "<Figure>"}}
    out = cn.MarkdownConverter(r, "lecturer").convert(src)
    assert out.source.startswith("> **Question and result**\n>\n> **Question.** Why?")
    assert (
        "> <details>\n> <summary>More detail</summary>\n>\n> Folded 2.\n>\n> </details>"
        in out.source
    )
    # the figure inline (Colab does not render a cell's attachments)
    assert "![A (plot) of things.](data:image/png;base64,iVBORw0K)\n\n*The main run.*" in out.source
    assert "my-target" not in out.source and "comment" not in out.source


def _chapter_notebook():
    setup = "# Colab setup: install\nimport os"
    cells = [
        nbformat.v4.new_markdown_cell(
            "# A chapter\n\n:::{chapter-header}\n:prerequisites: none"
            "\n\n**You will learn** things\n:::"
        ),
        nbformat.v4.new_code_cell(setup, metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell(
            "verify(chapter.claims('a'))", metadata={"tags": ["remove-cell"]}
        ),
        nbformat.v4.new_code_cell(
            "plot()",
            metadata={
                "tags": ["hide-input"],
                "mystnb": {
                    "figure": {"name": "fig-a", "caption": "The {term}`sparse parity` run."}
                },
            },
        ),
        nbformat.v4.new_markdown_cell(EXERCISE),
        nbformat.v4.new_code_cell(
            "print('solution')", metadata={"tags": ["hide-cell", "solution"]}
        ),
    ]
    return nbformat.v4.new_notebook(cells=cells)


@pytest.mark.parametrize("edition", ["lecturer", "student"])
def test_reader_notebook_forms_guidance_and_checks(edition):
    exercises = [("Exercise 3", "A question", "★★ · 15 min · lab")]
    text = cn.guidance(
        "A chapter", "https://example.org/c.html", edition, 75.0, None, "built", exercises
    )
    # the first screen: what to do, how long, where the exercises are; paper scale folded
    assert "**Your exercises** are in the section *Exercises*" in text
    assert "- Exercise 3: A question (★★ · 15 min · lab)" in text
    assert "In the lab, replace every" in text
    assert "CC BY 4.0" in text and "about 15 min in all" in text
    # the archived paper-scale run's bookkeeping is for the lecturer, folded
    assert ("<details><summary>Paper scale" in text) == (edition == "lecturer")
    assert "[Running the book](https://example.org/running.html)" in text or edition == "lecturer"
    nb = cn.reader_notebook(
        _chapter_notebook(),
        {},
        refs(n="30"),
        edition,
        header_line="**Prerequisites:** none",
        guidance_md=text,
    )
    assert cn.problems(nb, edition) == []
    first = nb.cells[0].source
    assert first.startswith("# A chapter\n") and "about 1.2 min on a free Colab CPU" in first
    assert nb.cells[1].source.startswith("> **Prerequisites:** none\n>\n> **You will learn**")
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].source.startswith("#@title Set-up") and code[0].metadata["cellView"] == "form"
    assert code[1].source == "x = 1" and "cellView" not in code[1].metadata
    assert code[2].source.startswith("#@title Check the chapter's claims")
    assert code[3].source == "#@title Code of Fig. 7\nplot()"
    caption = nb.cells[nb.cells.index(code[3]) + 1].source
    assert caption == (
        "**Fig. 7.** The [sparse parity]"
        "(https://example.org/book-site/book/glossary.html#term-sparse-parity) run."
    )
    solutions = [c for c in code if "solution" in c.source]
    assert len(solutions) == (edition == "lecturer")
    if solutions:
        assert solutions[0].source.startswith("#@title Solution to Exercise 3")


def test_problems_finds_what_a_colab_reader_must_not_meet():
    nb = cn.reader_notebook(
        _chapter_notebook(),
        {},
        refs(n="30"),
        "lecturer",
        header_line="",
        guidance_md="# Title only",
    )
    nb.cells.append(nbformat.v4.new_markdown_cell("a {glue:text}`x` and\n:::{note}\nhi\n:::"))
    nb.cells.append(nbformat.v4.new_code_cell("# Colab setup: again"))
    nb.cells.append(nbformat.v4.new_code_cell("#@title open\nverify(x)"))
    nb.cells.append(nbformat.v4.new_markdown_cell("<details><summary>Solution</summary>"))
    found = "\n".join(cn.problems(nb, "student"))
    for expected in (
        "first cell lacks the run guidance",
        "a MyST role left as text",
        "a MyST directive left as text",
        "a solution cell in the student",
        "a set-up or check cell that is not a collapsed form",
        "a form that is not collapsed",
        "a solution in the student notebook",
    ):
        assert expected in found, expected


def test_dropdown_titles_are_plain_html():
    out = convert(
        ":::{dropdown} Details: slopes, the theorem's $\\varepsilon$, $c_{50}$, "
        "small-$n$ and `FULL=1`\nBody.\n:::"
    )
    assert out.source.startswith(
        "<details>\n<summary>Details: slopes, the theorem's <i>ε</i>, <i>c<sub>50</sub></i>, "
        "small-<i>n</i> and <code>FULL=1</code></summary>"
    )
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                "Run all free Colab CPU GPU runtime FULL=1 book's own run CC BY"
            ),
            nbformat.v4.new_markdown_cell("<details><summary>the $k$ puzzle</summary>x</details>"),
        ]
    )
    assert "Markdown or math in a <summary> title" in cn.problems(nb, "lecturer")[0]


def test_colab_url_and_full_scale_text():
    url = colab_url("https://github.com/owner/repo", "colab-notebooks", "student", "copying")
    assert url == (
        "https://colab.research.google.com/github/owner/repo/blob/colab-notebooks/"
        "student/copying.ipynb"
    )
    with pytest.raises(ValueError, match="edition must be one of"):
        colab_url("https://github.com/owner/repo", "b", "teacher", "copying")
    with pytest.raises(ValueError, match="repository_url must be"):
        colab_url("https://gitlab.com/owner/repo", "b", "student", "copying")
    row = {
        "status": "finished",
        "seconds": "78",
        "peak_gpu_mib": "",
        "note": "",
        "about": {"device": "one NVIDIA H200", "run": "2026-11-26"},
    }
    assert "it finished in 78 s" in cn.full_scale_text(row)
    row.update(status="unfinished", seconds="410", peak_gpu_mib="117248")
    text = cn.full_scale_text(row)
    assert "had not finished after 410 s" in text and "114.5 GiB" in text and "T4" in text
    assert "not been measured" in cn.full_scale_text(None)


def test_setup_cell_stops_with_one_message_when_the_install_fails(tmp_path):
    """An unreachable repository: the set-up cell raises one clear error and "Run all"
    stops there (the next cell never runs)."""
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(cell_source()),
            nbformat.v4.new_code_cell("print('next cell ran')"),
        ]
    )
    env = {
        **os.environ,
        "SEQTHEORY_INSTALL_FROM": "git+https://github.invalid/nobody/none@main",
        "GIT_TERMINAL_PROMPT": "0",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    with pytest.raises(nbclient.exceptions.CellExecutionError) as err:
        client.execute(env=env)
    message = str(err.value)
    assert "SetupFailed" in message
    assert "could not install the book's library from git+https://github.invalid" in message
    assert "Is the repository public, and are you online?" in message
    assert "SEQTHEORY_INSTALL_FROM" in message
    assert nb.cells[1].get("outputs") == [] and nb.cells[1].execution_count is None


def test_setup_cell_outside_colab_stops_when_the_library_is_missing(tmp_path):
    script = tmp_path / "cell.py"
    script.write_text(cell_source(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "SEQTHEORY_INSTALL_FROM"}
    done = subprocess.run(
        [sys.executable, "-S", str(script)], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode != 0
    assert "SetupFailed: this notebook needs the book's library" in done.stderr


def test_release_check_reads_the_branches_of_a_repository(tmp_path):
    rc = release_check
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    status, message = rc.check(str(repo), ["main", "colab-notebooks"])
    assert status == 1 and "lacks the branch(es) colab-notebooks" in message
    subprocess.run(["git", "-C", str(repo), "branch", "colab-notebooks"], check=True)
    assert rc.check(str(repo), ["main", "colab-notebooks"])[0] == 0
    status, message = rc.check(str(tmp_path / "nothing"), ["main"])
    assert status == 1 and "cannot be read without credentials" in message


def test_release_check_is_skipped_offline():
    status, message = release_check.check("https://github.invalid/o/r", ["main"])
    assert status == 0 and message.startswith("skipped")
    url, branches = release_check.configured()
    assert url.startswith("https://github.com/") and len(branches) == 2


def test_a_check_joins_the_collapsed_cell_before_it():
    """A check cell right after a collapsed code cell runs as part of it (same code, same
    order, its title says so); after visible code or text it stays a form of its own."""
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("fig = plot()", metadata={"tags": ["hide-input"]}),
            nbformat.v4.new_code_cell(
                "verify(chapter.claims('a'))", metadata={"tags": ["remove-cell"]}
            ),
            nbformat.v4.new_code_cell(
                "verify(chapter.claims('b'))", metadata={"tags": ["remove-cell"]}
            ),
            nbformat.v4.new_markdown_cell("Some text."),
            nbformat.v4.new_code_cell(
                "verify(chapter.claims('c'))", metadata={"tags": ["remove-cell"]}
            ),
        ]
    )
    out = cn.reader_notebook(nb, {}, refs(), "student", header_line="", guidance_md="x")
    code = [c for c in out.cells if c.cell_type == "code"]
    assert len(code) == 2
    assert code[0].source == (
        "#@title Code of the output below" + cn.CHECKED + "\nfig = plot()\n\n"
        "verify(chapter.claims('a'))\n\nverify(chapter.claims('b'))"
    )
    assert code[1].source.startswith("#@title Check the chapter's claims")


def test_a_written_exercise_gets_an_answer_cell_in_the_student_notebook():
    out = {}
    for edition in ("student", "lecturer"):
        nb = cn.reader_notebook(
            _chapter_notebook(),
            {},
            refs(n="30"),
            edition,
            header_line="",
            guidance_md="x",
            kinds={"ex-1": "derivation"},
        )
        out[edition] = [c.source for c in nb.cells if c.cell_type == "markdown"]
    student = out["student"]
    at = next(i for i, c in enumerate(student) if "**Exercise 3" in c)
    assert student[at + 1].startswith("**Your answer to Exercise 3** (double-click")
    assert not any(c.startswith("**Your answer") for c in out["lecturer"])
    lab = cn.reader_notebook(
        _chapter_notebook(),
        {},
        refs(n="30"),
        "student",
        header_line="",
        guidance_md="x",
        kinds={"ex-1": "lab"},
    )
    assert not any(c.source.startswith("**Your answer") for c in lab.cells)


def test_a_starter_cell_names_its_exercise_by_number():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(":::{exercise} T\n:label: ex-1\n\nQ?\n:::"),
            nbformat.v4.new_code_cell(
                'answer = ...\nchapter.feedback("ex-1", answer)', metadata={"tags": ["starter"]}
            ),
        ]
    )
    out = cn.reader_notebook(
        nb, {}, refs(), "student", header_line="", guidance_md="x", titles={"ex-1": "T"}
    )
    code = [c.source for c in out.cells if c.cell_type == "code"]
    assert code == ['# Exercise 3: T\nanswer = ...\nchapter.feedback("ex-1", answer)']
    assert cn.NUMBER_COMMENT.sub("", code[0]) == nb.cells[1].source
    # the lab's explanation goes in a cell right under its starter cell
    assert out.cells[-1].source.startswith("**Your notes on Exercise 3**")


def test_an_answer_cell_comes_right_under_its_exercise():
    """Two written exercises in one Markdown cell, then a heading: each answer cell sits
    under its own exercise, and the text after the last one stays after it."""
    src = (
        '<a id="ex-1"></a>**Exercise 3 (A).**\n\nWhy?\n\n'
        '<a id="ex-2"></a>**Exercise 4 (B).**\n\nHow?\n\n## Takeaways\n\nDone.'
    )
    pieces = cn.split_after_exercises(src, ["ex-1", "ex-2"])
    assert [label for _, label in pieces] == ["ex-1", "ex-2", None]
    assert pieces[0][0].endswith("Why?") and pieces[1][0].endswith("How?")
    assert pieces[2][0].startswith("## Takeaways")
    assert cn.split_after_exercises(src, []) == [(src, None)]
