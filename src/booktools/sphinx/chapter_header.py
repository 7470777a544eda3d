"""Sphinx extension: each chapter's header box, and the table of chapter times.

``chapter-header`` (at the top of a chapter) opens with one line the build computes::

    Prerequisites: <links> · Reading: about N min · Run: M min on a 2-core CPU

followed by the directive's own content ("You will learn", "Why it matters for
transformers").  The reading time is the chapter's core path (prose outside folded blocks,
exercises and code, as ``core_counts`` counts it): its words at ``WORDS_PER_MINUTE``, plus
time per figure, table and display equation (``reading_minutes``).  The run time is
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
# The reading time of a core path: a careful first read of technical prose, plus time to
# study each figure and to take in each table and display equation. Calibrated against two
# cold reads each of two chapters by first-year-PhD readers, timed section by section
# (tokenization: 45 and 49 min for 2,160 words, 6 figures, 2 equations; hidden progress:
# 49 and 56 min for 2,430 words, 3 figures, 4 tables, 2 equations): these constants give 42
# and 46 min, within 1.3x of each read.
WORDS_PER_MINUTE = 70
MINUTES_PER_FIGURE = 1.5
MINUTES_PER_TABLE = 1.0
MINUTES_PER_EQUATION = 1.0
FOLDED = re.compile(r"dropdown|toggle|solution|details|margin|exercise", re.I)
# markers (not words) for what the counts count
FIGURE, EQUATION, TABLE = "\u2603", "\u2604", "\u2605"
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\d[\d.,]*")


def _marked_core(src: str, folds: bool = False) -> str:
    """The chapter source as a reader meets it, with figures and display equations as
    markers: without front matter, code cells (a figure cell leaves a marker), directive
    options and the header box; folded directives (dropdowns, toggles, exercises,
    solutions) left out unless ``folds`` (then only exercises and solutions are)."""
    src = re.sub(r"^---\n.*?\n---\n", "", src, count=1, flags=re.S)
    src = re.sub(
        r"```\{code-cell\}.*?```",
        lambda m: (
            f"\n{FIGURE}\n"
            if re.search(r"^\s+figure:", m.group(0), re.M)
            else f"\n{TABLE}\n"  # a computed table (seqtheory.book.plotting.markdown_table)
            if "markdown_table(" in m.group(0) and "hide-output" not in m.group(0)
            else ""
        ),
        src,
        flags=re.S,
    )
    src = re.sub(r"^(```\{glue:figure\}.*)$", rf"\1\n{FIGURE}", src, flags=re.M)
    src = re.sub(r"\$\$.*?\$\$", f" {EQUATION} ", src, flags=re.S)
    out: list[str] = []
    stack: list[tuple[str, bool, list[str]]] = []
    for line in src.splitlines():
        m = re.match(r"^(:{3,}|`{3,})\{([a-zA-Z:-]+)\}(.*)$", line)
        if m:
            name = m.group(2)
            if folds:
                folded = name in ("exercise", "solution", "chapter-header", "bibliography")
            else:
                folded = bool(FOLDED.search(name)) or name in ("chapter-header", "bibliography")
            stack.append((m.group(1), folded, [m.group(3)] if name == "admonition" else []))
            continue
        if stack and line.strip() == stack[-1][0]:
            _, folded, buf = stack.pop()
            body = "\n".join(buf)
            closed = re.search(r"^:class:.*(dropdown|toggle)", body, re.M)
            if not folded and (folds or not closed):
                (stack[-1][2] if stack else out).append(body)
            continue
        (stack[-1][2] if stack else out).append(line)
    for _, _, buf in stack:
        out.extend(buf)
    body = "\n".join(out)
    if not folds:
        body = re.sub(r"<details>.*?</details>", "", body, flags=re.S)
    body = re.sub(r"^:[a-z-]+:.*$", "", body, flags=re.M)
    body = re.sub(r"\{glue:text\}`[^`]*`", "N", body)
    return re.sub(r"\{[a-z:]+\}`([^`<]*?)\s*(<[^`]*>)?`", r"\1", body)


def core_text(src: str) -> str:
    """The prose a reader meets with every folded block closed: the chapter source without
    front matter, code cells, folded directives (dropdowns, toggles, exercises, solutions),
    directive options, math blocks and the header box; roles reduced to their text."""
    text = _marked_core(src)
    for mark in (FIGURE, EQUATION, TABLE):
        text = text.replace(mark, " ")
    return text


def core_words(src: str) -> int:
    """Words on a chapter's core path (numbers count as words)."""
    return len(WORD.findall(core_text(src)))


def core_counts(src: str, folds: bool = False) -> dict[str, int]:
    """Words, figures, tables and display equations on the core path (``folds``: with every
    fold open)."""
    text = _marked_core(src, folds)
    return {
        "words": len(WORD.findall(text)),
        "figures": text.count(FIGURE),
        "tables": text.count(TABLE) + len(re.findall(r"^\s*\|?\s*:?-{3,}:?\s*\|", text, re.M)),
        "equations": text.count(EQUATION),
    }


def reading_minutes(src: str, folds: bool = False) -> int:
    """A careful first read of the core path (``folds``: with every fold open)."""
    c = core_counts(src, folds)
    minutes = (
        c["words"] / WORDS_PER_MINUTE
        + c["figures"] * MINUTES_PER_FIGURE
        + c["tables"] * MINUTES_PER_TABLE
        + c["equations"] * MINUTES_PER_EQUATION
    )
    return max(1, math.ceil(minutes))


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
    app.setup_extension("booktools.sphinx.colab_notebooks")  # the colab_branch config value
    app.add_directive("chapter-header", ChapterHeader)
    app.add_directive("chapter-times", ChapterTimes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
