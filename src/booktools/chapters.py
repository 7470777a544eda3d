"""What a chapter's header box and the table of chapter times say, without Sphinx: the
core path's counts and reading time, the measured run times, the header's first line and a
chapter's Colab address.

The Sphinx extensions :mod:`booktools.sphinx.chapter_header` (the header box, the table of
chapter times), :mod:`booktools.sphinx.colab_notebooks` (the Colab notebooks, whose first cell
repeats the header line) and :mod:`booktools.sphinx.teaching_kit` (reading times of sections)
import it; none of them imports another.

The reading time is the chapter's core path (prose outside folded blocks, exercises and code,
as ``core_counts`` counts it): its words at ``WORDS_PER_MINUTE``, plus time per figure, table
and display equation (``reading_minutes``).  The run time is the chapter's execution time
measured by the notebook tests: ``_build/chapter_times.tsv`` when this build's ``pytest``
wrote it for every chapter (CI runs the tests, then builds), else
``benchmarks/chapter_times_ci.tsv``, the table of the last CI run committed with the book.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from booktools import ROOT

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


# the Colab notebooks' editions (booktools.sphinx.colab_notebooks), and where Colab opens them
EDITIONS = ("lecturer", "student")
COLAB_BRANCH = "colab-notebooks"  # the default of _config.yml's sphinx.config.colab_branch
COLAB = "https://colab.research.google.com/github"


def colab_url(repository_url: str, branch: str, edition: str, chapter: str) -> str:
    """The Colab address of a chapter's reader notebook in the published branch."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    m = re.match(r"https://github\.com/([^/]+)/([^/]+?)/?$", repository_url or "")
    if m is None:
        raise ValueError(
            f"repository_url must be https://github.com/OWNER/REPO, got {repository_url!r}"
        )
    return f"{COLAB}/{m.group(1)}/{m.group(2)}/blob/{branch}/{edition}/{chapter}.ipynb"
