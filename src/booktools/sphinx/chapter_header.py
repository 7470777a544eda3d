"""Sphinx extension: each chapter's header box, and the table of chapter times.

``chapter-header`` (at the top of a chapter) opens with one line the build computes::

    Prerequisites: <links> · Reading: about N min · Run: M min on a 2-core CPU

followed by the directive's own content ("You will learn", "Why it matters for
transformers").  The line, its reading time (the chapter's core path) and run time (the
notebook tests' measurement) come from :mod:`booktools.chapters`, which has no Sphinx in
it and which :mod:`booktools.sphinx.colab_notebooks` also uses.

``chapter-times`` renders the same times (with the reading times) as a table: the Teaching
page's.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from booktools.chapters import (
    BUILD_TIMES,
    CI_TIMES,
    COLAB_BRANCH,
    WORDS_PER_MINUTE,
    chapter_times,
    colab_url,
    header_line,
    minutes,
    reading_minutes,
)
from booktools.toc import chapter_names


def colab_links(config, name: str) -> str:
    """The Markdown link that opens the chapter's student notebook in Colab (the published
    branch holds only the student notebooks); the lecturer's edition adds a link to its own
    notebook with solutions (:class:`ChapterHeader`)."""
    url = config.html_theme_options.get("repository_url", "")
    colab = colab_url(url, config.colab_branch, "student", name)
    return f"[student notebook]({colab})"


class ChapterHeader(SphinxDirective):
    has_content = True
    option_spec = {"prerequisites": directives.unchanged_required}

    def run(self):
        env = self.env
        name = env.docname.removeprefix("book/")
        times, _ = chapter_times(chapter_names(Path(env.srcdir)))
        if name not in times:
            raise self.error(
                f"chapter-header: no measured run time for {name!r} in {BUILD_TIMES} or {CI_TIMES}"
            )
        pre = self.options.get("prerequisites", "").split()
        if not pre:
            raise self.error("chapter-header needs :prerequisites: (chapter names, or none)")
        line = header_line(Path(env.srcdir), name, pre, times, colab_links(env.config, name))
        box = nodes.container(classes=["chapter-header"])
        self.state.nested_parse(
            StringList([line, ""], source=env.docname), self.content_offset, box
        )
        first = next(iter(box.findall(nodes.paragraph)), None)
        if first is not None and not env.config.hide_solutions:
            # the lecturer's edition is built locally: its notebook with solutions is a file
            # of this build (booktools.sphinx.colab_notebooks), not a published one
            first += [
                nodes.Text(" · "),
                nodes.reference(
                    text="notebook with solutions", refuri=f"../colab/lecturer/{name}.ipynb"
                ),
                nodes.Text(" (this build's file)"),
            ]
        if first is not None:  # the deck that booktools.sphinx.slides writes after the build
            first += [
                nodes.Text(" · "),
                nodes.strong(text="Slides:"),
                nodes.Text(" "),
                nodes.reference(text="this chapter's deck", refuri=f"../slides/{name}.html"),
            ]
        self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


class ChapterTimes(SphinxDirective):
    """The table of chapters with their reading and run times."""

    def run(self):
        env = self.env
        chapters = chapter_names(Path(env.srcdir))
        times, origin = chapter_times(chapters)
        titles = {c: _title(Path(env.srcdir) / "book" / f"{c}.md") for c in chapters}
        rows = ["| chapter | reading (core path) | run, whole chapter |", "|---|---|---|"]
        for c in chapters:
            src = (Path(env.srcdir) / "book" / f"{c}.md").read_text(encoding="utf-8")
            run = minutes(times[c]) if c in times else "not measured"
            rows.append(
                f"| {{doc}}`{titles[c]} <{c}>` | about {reading_minutes(src)} min | {run} |"
            )
        total = sum(times.get(c, 0.0) for c in chapters)
        rows += [
            "",
            f"Run times: {origin}, one PyTorch thread on a 2-core CPU "
            f"({minutes(total)} for the whole book). Reading: a careful first read of the "
            f"core path, {WORDS_PER_MINUTE} words a minute plus a minute per figure and half "
            "a minute per table and display equation, calibrated against cold reads.",
        ]
        box = nodes.container(classes=["chapter-times"])
        self.state.nested_parse(StringList(rows, source=env.docname), self.content_offset, box)
        return [box]


def _title(path: Path) -> str:
    m = re.search(r"^# (.+)$", path.read_text(encoding="utf-8"), re.M)
    return m.group(1).split(":")[0].strip() if m else path.stem


def setup(app):
    # the branch the Colab links open (colab_links); booktools.sphinx.colab_notebooks writes
    # the notebooks that the site's workflow publishes there (both are in _config.yml)
    app.add_config_value("colab_branch", COLAB_BRANCH, "html")
    app.add_directive("chapter-header", ChapterHeader)
    app.add_directive("chapter-times", ChapterTimes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
