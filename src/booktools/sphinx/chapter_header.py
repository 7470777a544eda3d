"""Sphinx extension: each chapter's header box, and the table of chapter times.

``chapter-header`` (at the top of a chapter) opens with one line the build computes::

    Prerequisites: <links> · Reading: about N min · Run: M min on a 2-core CPU

followed by the directive's own content ("You will learn", "Why it matters for
transformers").  The reading time is the chapter's core path (prose outside folded blocks,
exercises and code, as ``core_words`` counts it) at ``WORDS_PER_MINUTE``.  The run time is
the chapter's execution time measured by the notebook tests: ``_build/chapter_times.tsv``
when this build's ``pytest`` wrote it for every chapter (CI runs the tests, then builds),
else ``benchmarks/chapter_times_ci.tsv``, the table of the last CI run committed with the
book.

``chapter-times`` renders the same times (with the reading times) as a table: the Teaching
page's.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from booktools import ROOT
from booktools.toc import chapter_names

BUILD_TIMES = ROOT / "_build" / "chapter_times.tsv"
CI_TIMES = ROOT / "benchmarks" / "chapter_times_ci.tsv"
WORDS_PER_MINUTE = 150  # technical prose with math, read carefully
FOLDED = re.compile(r"dropdown|toggle|solution|details|margin|exercise", re.I)


def core_text(src: str) -> str:
    """The prose a reader meets with every folded block closed: the chapter source without
    front matter, code cells, folded directives (dropdowns, toggles, exercises, solutions),
    directive options, math blocks and the header box; roles reduced to their text."""
    src = re.sub(r"^---\n.*?\n---\n", "", src, count=1, flags=re.S)
    src = re.sub(r"```\{code-cell\}.*?```", "", src, flags=re.S)
    out: list[str] = []
    stack: list[tuple[str, bool, list[str]]] = []
    for line in src.splitlines():
        m = re.match(r"^(:{3,}|`{3,})\{([a-zA-Z:-]+)\}(.*)$", line)
        if m:
            folded = bool(FOLDED.search(m.group(2))) or m.group(2) in (
                "chapter-header",
                "bibliography",
            )
            stack.append((m.group(1), folded, [m.group(3)] if m.group(2) == "admonition" else []))
            continue
        if stack and line.strip() == stack[-1][0]:
            _, folded, buf = stack.pop()
            body = "\n".join(buf)
            if not folded and not re.search(r"^:class:.*(dropdown|toggle)", body, re.M):
                (stack[-1][2] if stack else out).append(body)
            continue
        (stack[-1][2] if stack else out).append(line)
    for _, _, buf in stack:
        out.extend(buf)
    body = "\n".join(out)
    body = re.sub(r"<details>.*?</details>", "", body, flags=re.S)
    body = re.sub(r"^:[a-z-]+:.*$", "", body, flags=re.M)
    body = re.sub(r"\{glue:text\}`[^`]*`", "N", body)
    body = re.sub(r"\{[a-z:]+\}`([^`<]*?)\s*(<[^`]*>)?`", r"\1", body)
    return re.sub(r"\$\$.*?\$\$", " ", body, flags=re.S)


def core_words(src: str) -> int:
    """Words on a chapter's core path (numbers count as words)."""
    return len(re.findall(r"[A-Za-z][A-Za-z'-]*|\d[\d.,]*", core_text(src)))


def reading_minutes(src: str) -> int:
    return max(1, math.ceil(core_words(src) / WORDS_PER_MINUTE))


def read_times(path: Path) -> dict[str, float]:
    """{chapter stem: seconds} from a chapter_times.tsv (header ``chapter\\tseconds``)."""
    times = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        name, _, seconds = line.partition("\t")
        if name.strip() and seconds.strip():
            times[Path(name.strip()).stem] = float(seconds)
    return times


def chapter_times(chapters: list[str]) -> tuple[dict[str, float], str]:
    """Measured seconds per chapter and where they come from: this build's notebook tests
    when they timed every chapter, else the last CI run's committed table."""
    if BUILD_TIMES.is_file():
        times = read_times(BUILD_TIMES)
        if all(c in times for c in chapters):
            return times, "this build's notebook tests"
    return read_times(CI_TIMES), "the notebook tests of the last CI run"


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def header_line(
    srcdir: Path, name: str, prerequisites: list[str], times: dict[str, float], colab: str = ""
) -> str:
    """The header box's first line (MyST): prerequisites, reading and run times, and the
    chapter's Colab notebooks (``colab``: Markdown links, empty for none)."""
    src = (srcdir / "book" / f"{name}.md").read_text(encoding="utf-8")
    links = (
        "none" if prerequisites == ["none"] else ", ".join(f"{{doc}}`{p}`" for p in prerequisites)
    )
    line = (
        f"**Prerequisites:** {links} · **Reading:** about {reading_minutes(src)} min · "
        f"**Run:** {minutes(times[name])} on a 2-core CPU "
        f"({{ref}}`measured <chapter-times>`)"
    )
    return line + (f" · **Colab:** {colab}" if colab else "")


def prerequisites_of(src: str) -> list[str]:
    """The ``:prerequisites:`` of a chapter's header box, from its source."""
    m = re.search(r"^:::\{chapter-header\}\n:prerequisites:[ \t]*(.*)$", src, re.M)
    return m.group(1).split() if m else []


def colab_links(config, name: str) -> str:
    """The Markdown link that opens the chapter's student notebook in Colab (the published
    branch holds only the student notebooks); the lecturer's edition adds a link to its own
    notebook with solutions (:class:`ChapterHeader`)."""
    from booktools.sphinx import colab_notebooks

    url = config.html_theme_options.get("repository_url", "")
    colab = colab_notebooks.colab_url(url, config.colab_branch, "student", name)
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
            f"({minutes(total)} for the whole book). Reading: the core path at "
            f"{WORDS_PER_MINUTE} words a minute.",
        ]
        box = nodes.container(classes=["chapter-times"])
        self.state.nested_parse(StringList(rows, source=env.docname), self.content_offset, box)
        return [box]


def _title(path: Path) -> str:
    m = re.search(r"^# (.+)$", path.read_text(encoding="utf-8"), re.M)
    return m.group(1).split(":")[0].strip() if m else path.stem


def setup(app):
    app.setup_extension("booktools.sphinx.colab_notebooks")  # the colab_branch config value
    app.add_directive("chapter-header", ChapterHeader)
    app.add_directive("chapter-times", ChapterTimes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
