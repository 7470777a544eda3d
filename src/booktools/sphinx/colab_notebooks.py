"""Sphinx extension: each chapter as a Colab notebook, written from the executed build.

A chapter's source is a MyST notebook: its Markdown holds roles (``{glue:text}``,
``{cite:t}``, ``{numref}``, ``{term}`` ...) and directives (``:::{exercise}``,
``:::{dropdown}`` ...) that only Sphinx renders. After an HTML build this extension writes,
for every chapter of the table of contents, a *reader notebook* that Colab renders as the
site does:

- every glued number is its value from this build's run (the executed notebook's glue
  data), with one note that the numbers are the book's run;
- citations are "Author (Year)" links to the paper (``url`` in ``references.bib``);
  cross-references, documents and glossary terms are links to the published pages
  (``html.baseurl`` in ``_config.yml``);
- admonitions are block quotes, dropdowns ``<details>`` blocks, exercises bold headings
  with their solution in a collapsed ``<details>`` block (lecturer's notebook) or absent
  (student's notebook, which also drops the code cells tagged ``solution``);
- the summary box's key figure is an image attached to its cell, figure captions follow
  their code cells;
- a lab's starter cell starts with a comment naming its exercise as the page numbers it
  (``# Exercise 21: its title``); a written exercise has a cell for the answer under it
  (student's notebook);
- the set-up cell installs the library at the commit the notebook was built from (its tag
  when the commit has one: :func:`booktools.setup_cell.build_ref`), so a saved notebook
  keeps the library it was written for;
- the set-up cell and every check cell (``verify``), and the cells the site folds
  (``hide-input``), are collapsed Colab forms (``#@title``); a check cell that follows such
  a form joins it (its title says so), so the checks do not interrupt the text; the code
  itself is unchanged and runs in the same order, so running the notebook runs every check;
- the first cell says how to run the notebook: time on a free Colab CPU (the CI's table),
  that a GPU runtime does not speed up the default size, and what ``FULL=1`` needs.

The notebooks go to ``<html>/colab/lecturer/`` and ``<html>/colab/student/`` (the student
edition's build writes only the student notebooks). The site's workflow publishes the
student edition's folder as the branch ``colab_branch`` (``_config.yml``:
``sphinx.config.colab_branch``), which the chapter pages' Colab links open
(:func:`booktools.chapters.colab_url`; :mod:`booktools.sphinx.chapter_header` registers
the config value);
the lecturer's notebooks stay in the lecturer's local build.
"""

from __future__ import annotations

import ast
import datetime
import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from booktools import LICENCE, ROOT, setup_cell
from booktools.chapters import EDITIONS, chapter_times, header_line, prerequisites_of
from booktools.sphinx import teaching_kit
from booktools.toc import chapter_names

FULL_TABLE = ROOT / "benchmarks" / "full_run_h200.tsv"
ROLE = re.compile(r"\{([A-Za-z][\w:-]*)\}`([^`]*)`")
FENCE = re.compile(r"^(\s*)(:{3,}|`{3,})\{([\w:-]+)\}[ \t]*(.*)$")
PLAIN_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(?!\{)")
OPTION = re.compile(r"^\s*:([\w-]+):[ \t]*(.*)$")
ADMONITIONS = {
    "note",
    "tip",
    "hint",
    "important",
    "warning",
    "caution",
    "attention",
    "danger",
    "error",
    "seealso",
}

# what counts as raw MyST in a reader notebook's Markdown (checked by ``problems``)
RAW_DIRECTIVE = re.compile(r"^\s*(:{3,}|`{3,})\{[\w:-]+\}", re.M)
RAW_OPTION = re.compile(r"^\s*:(label|class|name|alt|prerequisites|tags):", re.M)
RAW_TARGET = re.compile(r"^\([\w-]+\)=\s*$", re.M)
GUIDANCE_WORDS = ("Run all", "free Colab CPU", "GPU runtime", "FULL=1", "book's own run", "CC BY")


def format_glue(text: str, spec: str) -> str:
    """A glued ``text/plain`` value formatted as ``{glue:text}`` does (myst-nb's rule)."""
    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if spec == "":
        return str(value)
    kind = spec[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, spec)


def split_target(content: str) -> tuple[str | None, str]:
    """``text <target>`` -> (text, target); ``target`` -> (None, target)."""
    m = re.match(r"^(.*?)\s*<([^<>]+)>\s*$", content, re.S)
    return (m.group(1), m.group(2)) if m else (None, content.strip())


@dataclass
class Refs:
    """What the roles resolve to: the build's glue values, numbers, titles and links."""

    site: str  # the published site, ending in "/"
    glue: dict[str, dict]  # name -> output bundle of this chapter
    docname: str  # e.g. "book/hidden_progress"
    titles: dict[str, str]  # docname -> page title
    labels: dict[str, tuple[str, str, str]]  # label -> (docname, id, section title)
    numbers: dict[str, str]  # label -> "Fig. 48", "Exercise 32"
    terms: dict[str, tuple[str, str]]  # term (lower case) -> (docname, id)
    bib: dict[str, tuple[str, ...]]  # key -> (authors, year, url[, title])
    counts: dict[str, int] = field(default_factory=dict)

    def _count(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def _target(self, key: str) -> str:
        """A citation's link: the paper's URL, with its title shown on hover."""
        entry = self.bib[key]
        title = entry[3].replace('"', "'") if len(entry) > 3 and entry[3] else ""
        return f'{entry[2]} "{title}"' if title else entry[2]

    def link(self, url: str) -> str:
        """A Markdown link's address as a reader notebook needs it: a page of the book
        (``checks.md``, ``../book/x.md#y``) becomes the published page's address."""
        if re.match(r"^([a-z][a-z0-9+.-]*:|#)", url):
            return url
        path, _, anchor = url.partition("#")
        if not path:
            return url
        doc = _docname(self.docname, re.sub(r"\.(md|ipynb|html)$", "", path))
        return self.page(doc, anchor)

    def page(self, docname: str, anchor: str = "") -> str:
        return f"{self.site}{docname}.html" + (f"#{anchor}" if anchor else "")

    def resolve(self, role: str, content: str) -> str:
        """Markdown for one role."""
        self._count(role)
        if role in ("glue:text", "glue"):
            name, _, spec = content.strip().partition(":")
            if name not in self.glue:
                raise KeyError(f"{self.docname}: no glued value {name!r}")
            data = self.glue[name].get("data", {})
            plain = data.get("text/plain")
            if plain is None:
                raise KeyError(f"{self.docname}: glued value {name!r} has no text")
            return format_glue(plain, spec)
        if role in ("cite:t", "cite:p", "cite"):
            keys = [k.strip() for k in content.split(",") if k.strip()]
            missing = [k for k in keys if k not in self.bib]
            if missing:
                raise KeyError(f"{self.docname}: no bibliography entry {missing}")
            no_url = [k for k in keys if not self.bib[k][2]]
            if no_url:
                raise KeyError(
                    f"{self.docname}: references.bib has no url for {no_url} "
                    "(a citation links to the paper)"
                )
            if role == "cite:t":
                return "; ".join(
                    f"[{self.bib[k][0]} ({self.bib[k][1]})]({self._target(k)})" for k in keys
                )
            return (
                "("
                + "; ".join(
                    f"[{self.bib[k][0]}, {self.bib[k][1]}]({self._target(k)})" for k in keys
                )
                + ")"
            )
        text, target = split_target(content)
        if role == "numref":
            if target not in self.labels or target not in self.numbers:
                raise KeyError(f"{self.docname}: no numbered label {target!r}")
            doc, anchor, _ = self.labels[target]
            number = self.numbers[target]
            shown = (
                text.replace("%s", number.split()[-1]).replace("{number}", number.split()[-1])
                if text
                else number
            )
            # a figure or exercise of this chapter is in the notebook: its number, no link
            return shown if doc == self.docname else f"[{shown}]({self.page(doc, anchor)})"
        if role == "doc":
            doc = _docname(self.docname, target)
            if doc not in self.titles:
                raise KeyError(f"{self.docname}: no page {target!r}")
            return f"[{text or self.titles[doc]}]({self.page(doc)})"
        if role == "ref":
            if target not in self.labels:
                raise KeyError(f"{self.docname}: no label {target!r}")
            doc, anchor, title = self.labels[target]
            return f"[{text or title}]({self.page(doc, anchor)})"
        if role == "term":
            key = target.lower()
            if key not in self.terms:
                raise KeyError(f"{self.docname}: no glossary term {target!r}")
            doc, anchor = self.terms[key]
            return f"[{text or target}]({self.page(doc, anchor)})"
        raise ValueError(f"{self.docname}: the role {{{role}}} has no Colab form")


def _docname(current: str, target: str) -> str:
    target = target.removesuffix(".md").removesuffix(".ipynb")
    if target.startswith("/"):
        return target.lstrip("/")
    base = current.rsplit("/", 1)[0] if "/" in current else ""
    return posixpath.normpath(f"{base}/{target}" if base else target)


ROLE_OR_CODE = re.compile(
    r"\{(?P<role>[A-Za-z][\w:-]*)\}`(?P<content>[^`]*)`"
    r"|(?P<ticks>`+).+?(?P=ticks)",
    re.S,
)


def roles_outside_code(text: str):
    """The role matches of ``text`` that are not inside a code span (as MyST parses it)."""
    return [m for m in ROLE_OR_CODE.finditer(text) if m.group("role")]


LINK = re.compile(r"(\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")


def _links(text: str, refs: Refs) -> str:
    return LINK.sub(lambda k: k.group(1) + refs.link(k.group(2)) + k.group(3), text)


def roles_to_markdown(text: str, refs: Refs) -> str:
    """Every role outside code spans replaced by its Markdown; links to the book's own
    pages made absolute (to the published site)."""
    out, pos = [], 0
    for m in ROLE_OR_CODE.finditer(text):
        out.append(_links(text[pos : m.start()], refs))
        out.append(
            refs.resolve(m.group("role"), m.group("content")) if m.group("role") else m.group(0)
        )
        pos = m.end()
    out.append(_links(text[pos:], refs))
    return "".join(out)


def quote(md: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in md.strip().splitlines())


GREEK = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "varepsilon": "ε",
    "epsilon": "ε",
    "lambda": "λ",
    "mu": "μ",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "chi": "χ",
    "pi": "π",
    "theta": "θ",
    "le": "≤",
    "ge": "≥",
    "times": "×",
}


def _plain_math(tex: str) -> str:
    tex = re.sub(r"\\([A-Za-z]+)", lambda m: GREEK.get(m.group(1), m.group(1)), tex)
    tex = re.sub(r"_\{([^}]*)\}|_(\w)", lambda m: f"<sub>{m.group(1) or m.group(2)}</sub>", tex)
    tex = re.sub(r"\^\{([^}]*)\}|\^(\w)", lambda m: f"<sup>{m.group(1) or m.group(2)}</sup>", tex)
    return "<i>" + tex.replace("{", "").replace("}", "") + "</i>"


def summary_html(title: str) -> str:
    """A dropdown title as HTML: Markdown and math are not rendered inside ``<summary>``,
    so inline code becomes ``<code>`` and simple math plain italic text."""
    title = re.sub(r"`([^`]+)`", r"<code>\1</code>", title)
    title = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", title)
    return re.sub(r"\$([^$]+)\$", lambda m: _plain_math(m.group(1)), title)


def details(summary: str, body: str) -> str:
    return f"<details>\n<summary>{summary_html(summary)}</summary>\n\n{body.strip()}\n\n</details>"


@dataclass
class Converted:
    """A Markdown cell's reader form and what it held."""

    source: str
    exercises: list[str] = field(default_factory=list)  # labels, in order


class MarkdownConverter:
    """MyST Markdown of one chapter -> Markdown that Colab renders."""

    def __init__(self, refs: Refs, edition: str, header_line: str = ""):
        if edition not in EDITIONS:
            raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
        self.refs, self.edition, self.header_line = refs, edition, header_line
        self.last_exercise: str | None = None

    def convert(self, src: str) -> Converted:
        out = Converted("")
        out.source = self._block(src.splitlines(), out).strip()
        return out

    def _block(self, lines: list[str], out: Converted) -> str:
        done: list[str] = []
        i, in_code = 0, None
        while i < len(lines):
            line = lines[i]
            if in_code is not None:  # inside a plain code block
                done.append(line)
                if line.strip() == in_code:
                    in_code = None
                i += 1
                continue
            plain = PLAIN_FENCE.match(line)
            if plain:
                in_code = plain.group(1)
                done.append(line)
                i += 1
                continue
            m = FENCE.match(line)
            if m:
                fence, name, arg = m.group(2), m.group(3), m.group(4).strip()
                j, options = i + 1, {}
                while j < len(lines) and OPTION.match(lines[j]):
                    key, value = OPTION.match(lines[j]).groups()
                    options[key] = value.strip()
                    j += 1
                body, depth, inner_code = [], 0, None
                while j < len(lines):
                    inner = lines[j]
                    if inner_code is not None:
                        inner_code = None if inner.strip() == inner_code else inner_code
                    elif inner.strip() == fence:
                        if depth == 0:
                            break
                        depth -= 1
                    elif FENCE.match(inner) and FENCE.match(inner).group(2) == fence:
                        depth += 1
                    elif PLAIN_FENCE.match(inner):
                        inner_code = PLAIN_FENCE.match(inner).group(1)
                    body.append(inner)
                    j += 1
                if j >= len(lines):
                    raise ValueError(f"{self.refs.docname}: unclosed {{{name}}} directive")
                done.append(self._directive(name, arg, options, body, out))
                i = j + 1
                continue
            if re.match(r"^\([\w-]+\)=\s*$", line) or re.match(r"^%", line):
                i += 1  # targets and MyST comments
                continue
            done.append(roles_to_markdown(line, self.refs))
            i += 1
        return "\n".join(done)

    def _directive(
        self, name: str, arg: str, options: dict, body: list[str], out: Converted
    ) -> str:
        refs = self.refs
        title = roles_to_markdown(arg, refs)
        if name == "glue:figure":
            bundle = refs.glue.get(arg)
            if bundle is None or "image/png" not in bundle.get("data", {}):
                raise KeyError(f"{refs.docname}: no glued figure {arg!r}")
            # inline, as a data: URI: Colab does not render a cell's attachments
            png = "".join(str(bundle["data"]["image/png"]).split())
            alt = options.get("alt", arg).replace("[", "(").replace("]", ")")
            caption = self._block(body, out).strip()
            image = f"![{alt}](data:image/png;base64,{png})"
            return f"{image}\n\n*{caption}*" if caption else image
        inner = self._block(body, out).strip()
        if name == "chapter-header":
            line = roles_to_markdown(self.header_line, refs)
            return quote("\n\n".join(x for x in (line, inner) if x))
        if name == "admonition":
            return quote(f"**{title}**\n\n{inner}")
        if name in ADMONITIONS:
            return quote(f"**{title or name.capitalize()}**\n\n{inner}")
        if name in ("dropdown", "toggle"):
            return details(title or "Details", inner)
        if name == "exercise":
            label = options.get("label")
            if not label or label not in refs.numbers:
                raise KeyError(f"{refs.docname}: exercise {arg!r} has no numbered :label:")
            self.last_exercise = label
            out.exercises.append(label)
            heading = f"**{refs.numbers[label]}" + (f" ({title})" if title else "") + ".**"
            return f'<a id="{label}"></a>{heading}\n\n{inner}'
        if name == "solution":
            if self.edition == "student":
                return ""
            number = refs.numbers.get(arg.strip(), arg)
            return details(f"Solution to {number}", inner)
        raise ValueError(f"{refs.docname}: the directive {{{name}}} has no Colab form")


CHECKED = ", and the check of its claims"
FEEDBACK_CALL = re.compile(r'^(.*\bfeedback\("(ex-[\w-]+)".*?)$', re.M)
NUMBER_COMMENT = re.compile(r"\A# Exercise \d+(: .*)?\n")  # a starter cell's first line
ANSWER = "**Your answer to {number}** (double-click this cell to write; Markdown and $maths$ work):"


def split_after_exercises(source: str, labels: list[str]) -> list[tuple[str, str | None]]:
    """A converted Markdown cell cut right after each exercise of ``labels``: (piece, the
    exercise it ends with, or None). An exercise ends where the next exercise or heading
    starts."""
    if not source.strip():
        return []
    starts = sorted(m.start() for m in re.finditer(r'<a id="ex-[\w-]+"></a>', source))
    cuts = []
    for label in labels:
        at = source.find(f'<a id="{label}"></a>')
        if at < 0:
            continue
        ends = [x for x in starts if x > at]
        heading = re.search(r"^#{1,6} ", source[at:], re.M)
        if heading:
            ends.append(at + heading.start())
        cuts.append((min(ends) if ends else len(source), label))
    pieces, last = [], 0
    for end, label in sorted(cuts):
        pieces.append((source[last:end].strip("\n"), label))
        last = end
    rest = source[last:].strip("\n")
    if rest:
        pieces.append((rest, None))
    return [(piece, label) for piece, label in pieces if piece or label]


NOTES = (
    "**Your notes on {number}** (double-click this cell to write): what the feedback said, "
    "and the explanation or report the exercise asks for."
)


def notes_cell(number: str) -> str:
    return NOTES.format(number=number) + "\n\n…"


def answer_cell(number: str) -> str:
    return ANSWER.format(number=number) + "\n\n…"


def form(title: str, source: str) -> str:
    return f"#@title {title}\n{source}"


def cell_tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def is_setup(cell) -> bool:
    return cell.cell_type == "code" and cell.source.lstrip().startswith("# Colab setup")


def is_check(cell) -> bool:
    return cell.cell_type == "code" and re.search(r"^\s*verify\(", cell.source, re.M) is not None


def only_checks(cell) -> bool:
    """A check cell that shows nothing of its own (no print, display, figure or table)."""
    shows = r"\b(print|display|markdown_table|explorer|animate\w*)\(|\bplt\.|\.plot\("
    return is_check(cell) and re.search(shows, cell.source) is None


def guidance(
    title: str,
    chapter_url: str,
    edition: str,
    run_seconds: float | None,
    full: dict | None,
    built: str,
    exercises: list[tuple[str, str, str]] = (),
) -> str:
    """The first cell: what the notebook is, what to do, how long it runs and where the
    exercises are (``exercises``: (number, title, tag line) rows, e.g. ("Exercise 21",
    "Why BPE-4 hurts", "★★ · 15 min · lab")); what ``FULL=1`` needs is folded."""
    which = (
        "**Lecturer's notebook**: every exercise with its solution (collapsed)."
        if edition == "lecturer"
        else "**Student notebook**: the chapter and its exercises, without solutions."
    )
    if run_seconds is None:
        cpu = "Its run time has not been measured yet"
    else:
        cpu = (
            f"It takes about {_duration(run_seconds)} on a free Colab CPU runtime (measured "
            "on a 2-core CPU, as Colab's)"
        )
    lines = [
        f"# {title}",
        "",
        f"{which} The same chapter on the book's site: [{title}]({chapter_url}).",
        "",
        "**What to do.** *Runtime → Run all* (Colab asks you to confirm a notebook from "
        f"GitHub: *Run anyway*). {cpu}, after the first code cell installs the book's library. "
        "Keep the CPU runtime: a GPU runtime does not make the default size faster. Then "
        "read from the top; the collapsed cells hold the code of each figure.",
    ]
    if exercises:
        labs = [e for e in exercises if e[2].endswith("lab")]
        total = sum(int(m) for _, _, tag in exercises for m in re.findall(r"(\d+) min", tag))
        lines += [
            "",
            "**Your exercises** are in the section *Exercises*, near the end (the table of "
            "contents on the left goes there; the book numbers its exercises from its first "
            f"chapter on), about {total} min in all:",
            "",
            *(f"- {n}: {t} ({tag})" for n, t, tag in exercises),
            "",
        ]
        if labs:
            lines.append(
                ("In the lab" if len(labs) == 1 else f"In each of the {len(labs)} labs")
                + ", replace every `...` in the cell under "
                "the question with your code and run it: the cell then says whether your "
                "answer lands in the range a correct run gives, and why."
            )
        if edition == "student":
            lines.append("Write your answers in the cells marked *Your answer* or *Your notes*.")
    numbers = (
        f"The numbers in the text are the book's own run ({built}); yours may differ in the "
        "last digits (another CPU or PyTorch build). The claim checks, inside the collapsed "
        "cells whose titles name them, test each claim against its measured range and "
        "print a note only if one fails."
    )
    if edition == "lecturer":
        lines += [
            "",
            numbers,
            "",
            "<details><summary>Paper scale (FULL=1, a GPU runtime)</summary>",
            "",
            full_scale_text(full),
            "",
            "</details>",
        ]
    else:
        lines += [
            "",
            "<details><summary>About the numbers, the checks and paper scale</summary>",
            "",
            numbers,
            "",
            "`FULL=1` (a cell `%env FULL=1` above the set-up cell) runs the paper's "
            "configuration, which needs a GPU runtime; the book's page [Running the book]"
            f"({chapter_url.rsplit('/', 1)[0]}/running.html) says what it takes.",
            "",
            "</details>",
        ]
    lines += [
        "",
        f"<small>{LICENCE}</small>",
    ]
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    """As the chapter's header box writes a run time."""
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def read_full_table(path: Path = FULL_TABLE) -> tuple[dict[str, dict], dict[str, str]]:
    """The archived FULL=1 measurements: ({chapter: row}, {key: value} of its header)."""
    rows, about = {}, {}
    if not path.is_file():
        return rows, about
    lines = path.read_text(encoding="utf-8").splitlines()
    header = None
    for line in lines:
        if line.startswith("#"):
            key, _, value = line.lstrip("# ").partition(":")
            if value:
                about[key.strip()] = value.strip()
            continue
        if header is None:
            header = line.split("\t")
            continue
        row = dict(zip(header, line.split("\t"), strict=True))
        rows[row["chapter"]] = {**row, **{"about": about}}
    return rows, about


def full_scale_text(row: dict | None) -> str:
    """What ``FULL=1`` needs, from the archived measurements (``benchmarks/full_run_h200.tsv``)."""
    start = (
        "`FULL=1` runs the paper's configuration; it needs a GPU runtime. Add a cell "
        "`%env FULL=1` above the set-up cell."
    )
    if row is None:
        return start + " Its time and GPU memory have not been measured yet."
    about = row.get("about", {})
    seconds = float(row["seconds"])
    status = row.get("status")
    if status == "finished":
        parts = [f"it finished in {seconds:.0f} s"]
    elif status == "errors":
        parts = [f"it ran for {seconds:.0f} s with errors"]
    else:
        parts = [f"it had not finished after {seconds:.0f} s"]
    if row.get("note"):
        parts[0] += f" ({row['note']})"
    if row.get("peak_gpu_mib"):
        gib = float(row["peak_gpu_mib"]) / 1024
        parts.append(
            f"its process held {gib:.1f} GiB of GPU memory within its first 140 s"
            + (" (more than a free Colab T4's 15 GiB)" if gib > 15 else "")
        )
    return (
        start + f" Measured on {about.get('device', 'one GPU')}, "
        f"{about.get('run', 'an archived run')}: " + "; ".join(parts) + "."
    )


def reader_notebook(
    nb,
    glue: dict,
    refs: Refs,
    edition: str,
    *,
    header_line: str,
    guidance_md: str,
    ref: str | None = None,
    kinds: dict[str, str] | None = None,
    titles: dict[str, str] | None = None,
):
    """The reader notebook of one executed chapter notebook; ``ref``: the git ref its set-up
    cell installs the library from (default: the one the chapter's cell names); ``kinds``:
    each exercise's kind, so that the student's notebook gives every written exercise
    (concept, derivation) a cell for the answer, right under it; ``titles``: each
    exercise's title, for the first line of its lab's starter cell."""
    conv = MarkdownConverter(refs, edition, header_line)
    cells = [nbformat.v4.new_markdown_cell(guidance_md)]
    first_markdown, imports_seen = True, False
    host_at = None  # the collapsed code cell a check cell right after it joins
    for cell in nb.cells:
        tags = cell_tags(cell)
        if cell.cell_type == "markdown":
            src = cell.source
            if first_markdown:  # the title moves to the first cell
                src = re.sub(r"^\s*# .*\n?", "", src, count=1)
                first_markdown = False
            done = conv.convert(src)
            written = [
                label
                for label in (done.exercises if edition == "student" else [])
                if (kinds or {}).get(label) in ("concept", "derivation")
            ]
            for piece, label in split_after_exercises(done.source, written):
                cells.append(nbformat.v4.new_markdown_cell(piece))
                if label:  # the answer cell right under its written exercise
                    cells.append(nbformat.v4.new_markdown_cell(answer_cell(refs.numbers[label])))
                host_at = None
            continue
        if cell.cell_type != "code":
            continue
        solution = "solution" in tags
        if solution and edition == "student":
            continue
        source, title = cell.source, None
        call = FEEDBACK_CALL.search(source) if "starter" in tags else None
        if call and call.group(2) in refs.numbers:  # the lab as the page numbers it
            name = (titles or {}).get(call.group(2), "").replace("$", "")
            source = (
                f"# {refs.numbers[call.group(2)]}" + (f": {name}" if name else "") + (f"\n{source}")
            )
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        number = refs.numbers.get(figure.get("name", ""), "")
        if is_setup(cell):
            title = "Set-up: installs the book's library in Colab (run this cell first)"
            if ref:
                source = setup_cell.pin(source, ref)
        elif solution:
            title = (
                f"Solution to {refs.numbers.get(conv.last_exercise, 'the exercise')}: "
                "the computation" + (" and its check" if is_check(cell) else "")
            )
        elif only_checks(cell):
            title = "Check the chapter's claims (prints a note if one fails)"
        elif (
            "hide-input" in tags or "hide-cell" in tags or "remove-input" in tags or is_check(cell)
        ):
            if number:
                title = f"Code of {number}"
            elif "markdown_table(" in source:
                title = "Code of the table below"
            elif "explorer(" in source:
                title = "Code of the explorer below"
            elif (
                re.search(r"^(import|from) \S+", source, re.M)
                and "seqtheory" in source
                and not imports_seen
            ):
                title = "Imports and settings"
                imports_seen = True
            elif source.lstrip().startswith("#"):
                title = "Code: " + source.lstrip().splitlines()[0].lstrip("# ").rstrip(".")
            else:
                title = "Code of the output below"
            if is_check(cell):  # it also checks claims
                title += CHECKED
        host = cells[host_at] if host_at is not None else None
        if only_checks(cell) and not solution and host is not None:
            # the check joins the collapsed code cell it checks: no form of its own in the text
            head, _, rest = host.source.partition("\n")
            if not head.endswith(CHECKED):
                head += CHECKED
            host.source = f"{head}\n{rest}\n\n{source}"
            continue
        new = nbformat.v4.new_code_cell(form(title, source) if title else source)
        if title:
            new.metadata["cellView"] = "form"
        if tags:
            new.metadata["tags"] = tags
        cells.append(new)
        mergeable = title is not None and not is_setup(cell) and not solution
        host_at = len(cells) - 1 if mergeable else None
        if call and call.group(2) in refs.numbers and edition == "student":
            # a lab also asks to explain or report: a cell for that under its starter cell
            cells.append(nbformat.v4.new_markdown_cell(notes_cell(refs.numbers[call.group(2)])))
        if figure.get("caption"):
            caption = roles_to_markdown(" ".join(str(figure["caption"]).split()), refs)
            label = f"**{number}.** " if number else ""
            cells.append(nbformat.v4.new_markdown_cell(f"{label}{caption}"))
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "colab": {"provenance": [], "toc_visible": True},
        "seqtheory": {
            "edition": edition,
            "chapter": refs.docname.removeprefix("book/"),
            "roles": dict(refs.counts),
        },
    }
    return out


def problems(nb, edition: str) -> list[str]:
    """What a Colab reader would meet that a reader notebook must not have (empty: none)."""
    found = []
    first = nb.cells[0] if nb.cells else None
    if (
        first is None
        or first.cell_type != "markdown"
        or not all(w in first.source for w in GUIDANCE_WORDS)
    ):
        found.append(
            f"the first cell lacks the run guidance (it must mention {', '.join(GUIDANCE_WORDS)})"
        )
    for k, cell in enumerate(nb.cells):
        where = f"cell {k}"
        if cell.cell_type == "markdown":
            text = re.sub(r"^```(?!\{).*?^```", "", cell.source, flags=re.S | re.M)
            roles = roles_outside_code(text)
            if roles:
                found.append(f"{where}: a MyST role left as text: {roles[0].group(0)!r}")
            for pattern, what in (
                (RAW_DIRECTIVE, "a MyST directive"),
                (RAW_OPTION, "a directive option"),
                (RAW_TARGET, "a MyST target"),
            ):
                m = pattern.search(text)
                if m:
                    found.append(f"{where}: {what} left as text: {m.group(0)!r}")
            for url in re.findall(r"\]\(([^)\s]+)", text):
                if not re.match(r"^([a-z][a-z0-9+.-]*:|#)", url):
                    found.append(f"{where}: a link relative to the site: {url!r}")
            for title in re.findall(r"<summary>(.*?)</summary>", cell.source, re.S):
                if re.search(r"\$|`|\*\*|\]\(", title):
                    found.append(
                        f"{where}: Markdown or math in a <summary> title, which "
                        f"Colab does not render: {title!r}"
                    )
            if edition == "student" and re.search(r"<summary>\s*Solution", cell.source):
                found.append(f"{where}: a solution in the student notebook")
            if cell.get("attachments") or "](attachment:" in cell.source:
                found.append(f"{where}: an attached image, which Colab does not render")
        elif cell.cell_type == "code":
            tags = cell.get("metadata", {}).get("tags", [])
            if edition == "student" and "solution" in tags:
                found.append(f"{where}: a solution cell in the student notebook")
            code = re.sub(r"^#@title.*\n?", "", cell.source)
            is_form = cell.source.startswith("#@title") and cell.metadata.get("cellView") == "form"
            if (
                code.lstrip().startswith("# Colab setup") or re.search(r"^\s*verify\(", code, re.M)
            ) and not is_form:
                found.append(f"{where}: a set-up or check cell that is not a collapsed form")
            if cell.source.startswith("#@title") and not is_form:
                found.append(f"{where}: a form that is not collapsed (cellView: form)")
            if cell.get("outputs"):
                found.append(f"{where}: stored outputs")
    return found


# ---- the Sphinx side --------------------------------------------------------------------


def _bib(path: Path) -> dict[str, tuple[str, str, str]]:
    """{key: ("Barak et al.", "2022", url)} from a BibTeX file (entries need a url)."""
    from pybtex.database import parse_file

    def last(person) -> str:
        name = " ".join(person.prelast_names + person.last_names)
        return re.sub(r"[{}]|\\[\"'`^~]", "", name)

    out = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author", [])
        if not people:
            authors = re.sub(
                r"[{}]", "", entry.fields.get("organization", entry.fields.get("title", key))
            )
        elif len(people) == 1 or (len(people) == 2 and "others" in str(people[1]).lower()):
            authors = last(people[0]) + (" et al." if len(people) == 2 else "")
        elif len(people) == 2:
            authors = f"{last(people[0])} and {last(people[1])}"
        else:
            authors = f"{last(people[0])} et al."
        title = re.sub(r"[{}]", "", entry.fields.get("title", ""))
        out[key] = (authors, entry.fields.get("year", "n.d."), entry.fields.get("url", ""), title)
    return out


def sphinx_refs(app, docname: str, glue: dict) -> Refs:
    env = app.env
    std = env.domaindata["std"]
    labels = {k: (v[0], v[1], v[2]) for k, v in std["labels"].items()}
    for k, (doc, anchor) in std["anonlabels"].items():
        labels.setdefault(k, (doc, anchor, ""))
    numbers = {}
    for doc, kinds in env.toc_fignumbers.items():
        for kind, ids in kinds.items():
            fmt = app.config.numfig_format.get(kind, kind.capitalize() + " %s")
            for anchor, num in ids.items():
                numbers[doc, anchor] = fmt % ".".join(map(str, num))
    numbers = {k: numbers[v[0], v[1]] for k, v in labels.items() if (v[0], v[1]) in numbers}
    terms = {k.lower(): (v[0], v[1]) for k, v in std.get("terms", {}).items()}
    site = app.config.html_baseurl
    if not site:
        raise ValueError(
            "_config.yml html.baseurl (the published site) is empty: the Colab notebooks link to it"
        )
    bibfiles = [Path(app.srcdir) / f for f in app.config.bibtex_bibfiles]
    bib = {}
    for f in bibfiles:
        bib.update(_bib(f))
    return Refs(
        site=site.rstrip("/") + "/",
        glue=glue,
        docname=docname,
        titles={d: t.astext() for d, t in env.titles.items()},
        labels=labels,
        numbers=numbers,
        terms=terms,
        bib=bib,
    )


def write_notebooks(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    srcdir, outdir = Path(app.srcdir), Path(app.outdir)
    executed = outdir.parent / "jupyter_execute"
    chapters = chapter_names(srcdir)
    times, _ = chapter_times(chapters)
    full, _ = read_full_table()
    editions = ("student",) if app.config.hide_solutions else EDITIONS
    built = f"built {datetime.date.today().isoformat()}"
    ref = setup_cell.build_ref(srcdir)
    report = ["chapter\tedition\tcells\tforms\tglued values filled\troles resolved"]
    for name in chapters:
        docname = f"book/{name}"
        nb_path = executed / "book" / f"{name}.ipynb"
        glue_path = executed / "book" / f"{name}.glue.json"
        if not nb_path.is_file():
            raise FileNotFoundError(
                f"{nb_path}: the chapter was not executed by this build, "
                "so its Colab notebook cannot be written"
            )
        nb = nbformat.read(nb_path, as_version=4)
        glue = json.loads(glue_path.read_text(encoding="utf-8")) if glue_path.is_file() else {}
        title = app.env.titles[docname].astext()
        for edition in editions:
            refs = sphinx_refs(app, docname, glue)
            src = (srcdir / "book" / f"{name}.md").read_text(encoding="utf-8")
            line = header_line(srcdir, name, prerequisites_of(src), times)
            exercises = [
                (refs.numbers[e.label], e.title, f"{'★' * e.stars} · {e.minutes} min · {e.kind}")
                for e in teaching_kit.exercises_of(src, name)
                if e.label in refs.numbers
            ]
            text = guidance(
                title,
                refs.page(docname),
                edition,
                times.get(name),
                full.get(name),
                built,
                exercises,
            )
            found = teaching_kit.exercises_of(src, name)
            reader = reader_notebook(
                nb,
                glue,
                refs,
                edition,
                header_line=line,
                guidance_md=text,
                ref=ref,
                kinds={e.label: e.kind for e in found},
                titles={e.label: e.title for e in found},
            )
            found = problems(reader, edition)
            if found:
                raise ValueError(f"{docname} ({edition}'s Colab notebook): " + "; ".join(found))
            path = outdir / "colab" / edition / f"{name}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(reader, path)
            forms = sum(c.metadata.get("cellView") == "form" for c in reader.cells)
            glued = refs.counts.get("glue:text", 0) + refs.counts.get("glue", 0)
            report.append(
                f"{name}\t{edition}\t{len(reader.cells)}\t{forms}\t{glued}\t"
                f"{sum(refs.counts.values())}"
            )
    (outdir / "colab" / "notebooks.tsv").write_text("\n".join(report) + "\n", encoding="utf-8")


def setup(app):
    app.connect("build-finished", write_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
