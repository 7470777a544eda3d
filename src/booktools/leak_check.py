"""Check that the student edition ships no solution: every file of its site, its Colab
notebooks included.

    python -m booktools.leak_check [_build/student/_build/html]

What counts as a solution, taken from the chapters' sources (``book/*.md``):

- the text of every ``{solution}`` block;
- the code of every cell tagged ``solution`` (a cell that computes an exercise's answer);
- the claims of every section whose values such a cell computes
  (:func:`booktools.sections.solution_sections`): they state the answer.

Each becomes a few *signatures*: runs of at least ``MIN_WORDS`` words (lower case, letters
and digits only) that occur nowhere in the chapters' text outside solutions, so an exercise
that a solution quotes is not a leak. Every file under the folder is read as words the same
way (HTML without its tags and entities, notebooks cell by cell with their outputs, the
search index as it is) and a file that holds any signature is a leak. Exit status 1 on a
leak, 0 otherwise.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from booktools import ROOT
from booktools.cache import CODE_CELL

MIN_WORDS = 7  # a run of words this long outside solutions is unlikely by chance
PER_ITEM = 6  # signatures kept per solution block, cell or claim
SOLUTION_TAG = re.compile(r"^:tags:.*\bsolution\b", re.M)  # a code cell's options
SOLUTION = re.compile(
    r"^(?P<fence>:{3,}|`{3,})\{solution\}[^\n]*\n(?P<body>.*?)^(?P=fence)\s*$", re.S | re.M
)
WORD = re.compile(r"[a-z0-9]+")
TEXT_SUFFIXES = {".html", ".js", ".txt", ".md", ".json", ".ipynb", ".xml", ".csv", ".tsv", ".py"}


@dataclass(frozen=True)
class Signature:
    kind: str  # "solution text", "solution cell", "claim of a solution section"
    where: str  # chapter and label
    words: str  # the run of words, space-separated


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def _options_and_directives_out(body: str) -> str:
    """A solution block's prose: its ``:label:``-style options and nested fences dropped."""
    lines = [ln for ln in body.splitlines() if not re.match(r"^\s*:[\w-]+:", ln)]
    return "\n".join(ln for ln in lines if not re.match(r"^\s*(:{3,}|`{3,})", ln))


def _runs(text: str, n: int = MIN_WORDS) -> list[str]:
    """Non-overlapping runs of ``n`` words of each line of ``text`` (lines with fewer words
    give none)."""
    out = []
    for line in text.splitlines():
        w = words(line)
        out += [" ".join(w[i : i + n]) for i in range(0, len(w) - n + 1, n)]
    return out


def _code_runs(code: str) -> list[str]:
    """Each code line with at least ``MIN_WORDS`` words, as one run (comments left out)."""
    out = []
    for line in code.splitlines():
        line = line.split("#", 1)[0]
        w = words(line)
        if len(w) >= MIN_WORDS:
            out.append(" ".join(w))
    return out


def signatures(mds: list[Path]) -> list[Signature]:
    """The signatures of every solution in the chapters ``mds``."""
    from booktools.sections import solution_sections
    from seqtheory import chapters

    texts = {md: md.read_text(encoding="utf-8") for md in mds}
    outside = " " + " ".join(" ".join(words(_strip_solutions(t))) for t in texts.values()) + " "
    outside_grams = _grams(outside)  # all text and code outside solutions
    found: list[Signature] = []

    def add(kind: str, where: str, runs: list[str]) -> None:
        kept = [r for r in dict.fromkeys(runs) if not _holds(outside, outside_grams, r)]
        found.extend(Signature(kind, where, r) for r in kept[:PER_ITEM])

    for md, text in texts.items():
        for k, m in enumerate(SOLUTION.finditer(text)):
            label = re.search(r"\{solution\}\s*(\S*)", m.group(0))
            add(
                "solution text",
                f"{md.stem}: {label.group(1) or k}",
                _runs(_options_and_directives_out(m.group("body"))),
            )
        for k, body in enumerate(CODE_CELL.findall(text)):
            if SOLUTION_TAG.search(body):
                add("solution cell", f"{md.stem}: code cell {k}", _code_runs(body))
        if md.stem in chapters.names():
            sections = solution_sections(md)
            for claim in chapters.table(md.stem).claims:
                if claim.section in sections:
                    add(
                        "claim of a solution section",
                        f"{md.stem}: {claim.id}",
                        _runs(claim.sentence.replace("\n", " ")),
                    )
    return found


def _strip_solutions(text: str) -> str:
    """A chapter's source without its solution blocks and solution cells."""
    text = SOLUTION.sub("", text)
    return CODE_CELL.sub(
        lambda m: "" if SOLUTION_TAG.search(m.group(1)) else m.group(0),
        text,
    )


def _grams(text: str) -> set[str]:
    """Every run of ``MIN_WORDS`` words of a space-separated text."""
    w = text.split()
    return {" ".join(w[i : i + MIN_WORDS]) for i in range(len(w) - MIN_WORDS + 1)}


def _holds(text: str, grams: set[str], run: str) -> bool:
    """Whether the space-padded ``text`` (with its ``_grams``) holds the run of words."""
    head = " ".join(run.split()[:MIN_WORDS])
    return head in grams and f" {run} " in text


def file_words(path: Path) -> str:
    """A shipped file as one space-separated run of words."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb":
        try:
            nb = json.loads(raw)
        except json.JSONDecodeError:
            pass
        else:
            parts = []
            for cell in nb.get("cells", []):
                parts.append("".join(cell.get("source", "")))
                for out in cell.get("outputs", []):
                    parts.append("".join(out.get("text", "")))
                    for value in out.get("data", {}).values():
                        parts.append("".join(value) if isinstance(value, list) else str(value))
            raw = "\n".join(parts)
    if path.suffix in (".html", ".ipynb", ".xml"):
        raw = re.sub(r"<[^>]+>", " ", raw)  # tags out, their text kept in order
    # entities, twice: text that is itself HTML inside an attribute or a notebook output
    raw = html.unescape(html.unescape(raw))
    return " " + " ".join(words(raw)) + " "


def scan(folder: Path, sigs: list[Signature]) -> dict[Path, list[Signature]]:
    """The files under ``folder`` that hold a signature, with the signatures they hold."""
    leaks: dict[Path, list[Signature]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix not in TEXT_SUFFIXES:
            continue
        text = file_words(path)
        grams = _grams(text)
        hits = [s for s in sigs if _holds(text, grams, s.words)]
        if hits:
            leaks[path] = hits
    return leaks


def main(argv=None) -> int:
    from booktools.toc import chapter_sources

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "folders",
        nargs="*",
        type=Path,
        default=[ROOT / "_build" / "student" / "_build" / "html"],
        help="what the student edition ships (default: its site, Colab notebooks included)",
    )
    args = parser.parse_args(argv)
    mds = chapter_sources()
    sigs = signatures(mds)
    per_kind: dict[str, int] = {}
    for s in sigs:
        per_kind[s.kind] = per_kind.get(s.kind, 0) + 1
    print(
        f"leak_check: {len(sigs)} signatures of the solutions of {len(mds)} chapters ("
        + ", ".join(f"{n} {k}" for k, n in per_kind.items())
        + ")"
    )
    bad = 0
    for folder in args.folders:
        if not folder.is_dir():
            print(f"leak_check: {folder} is not a folder; build the student edition first")
            return 2
        leaks = scan(folder, sigs)
        n_files = sum(1 for p in folder.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)
        for path, hits in leaks.items():
            print(f"  LEAK {path.relative_to(folder)}:")
            for s in hits[:5]:
                print(f"    {s.kind} ({s.where}): ...{s.words}...")
            if len(hits) > 5:
                print(f"    and {len(hits) - 5} more")
        print(f"leak_check: {folder}: {n_files} files, {len(leaks)} with a solution")
        bad += len(leaks)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
