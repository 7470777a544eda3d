"""Check that the student edition ships no solution: every file of its site, its Colab
notebooks and the library a student installs.

    python -m booktools.leak_check [FOLDER ...] [--package]

``FOLDER`` defaults to the student site (``_build/student/_build/html``); ``--package`` also
builds the library's wheel as ``pip install`` would and scans what it installs.

What counts as a solution, taken from the chapters' sources (``book/*.md``) and the
lecturer's lab material (``scripts/lab_solutions/``):

- the text of every ``{solution}`` block;
- the code of every cell tagged ``solution`` (a cell that computes an exercise's answer);
- the claims of every section whose values such a cell computes
  (:func:`booktools.sections.solution_sections`): they state the answer;
- every answer recorded for a coding lab (``CHAPTER.labs.json``), at full precision.

Each of the first three becomes a few *signatures*: runs of at least ``MIN_WORDS`` words
(lower case, letters and digits only) that occur nowhere in the chapters' text outside
solutions and in no lab's feedback (what a student sees on answering), so an exercise that
a solution quotes is not a leak. A recorded answer's signature is the digits of one of its
numbers. Every file is read as words the same way (HTML without its tags and entities,
notebooks cell by cell with their outputs, the search index as it is) and a file that holds
any signature is a leak. In the package the claims of solution sections are reported but
not counted: the chapters' claim tables, which the book's checks read, still hold them.
Exit status 1 on a leak, 0 otherwise.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from booktools import ROOT
from booktools.cache import CODE_CELL

MIN_WORDS = 7  # a run of words this long outside solutions is unlikely by chance
MIN_DIGITS = 9  # a recorded answer's digits this long are unlikely by chance
IN_PACKAGE_KNOWN = ("claim of a solution section",)
PER_ITEM = 6  # signatures kept per solution block, cell or claim
SOLUTION_TAG = re.compile(r"^:tags:.*\bsolution\b", re.M)  # a code cell's options
SOLUTION = re.compile(
    r"^(?P<fence>:{3,}|`{3,})\{solution\}[^\n]*\n(?P<body>.*?)^(?P=fence)\s*$", re.S | re.M
)
WORD = re.compile(r"[a-z0-9]+")
TEXT_SUFFIXES = {
    ".html",
    ".js",
    ".txt",
    ".md",
    ".json",
    ".ipynb",
    ".xml",
    ".csv",
    ".tsv",
    ".py",
    ".pdf",
}


@dataclass(frozen=True)
class Signature:
    kind: str  # "solution text", "solution cell", "claim of a solution section",
    # "recorded lab answer"
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
    shown = [_strip_solutions(t) for t in texts.values()] + _feedback_texts(texts)
    outside = " " + " ".join(" ".join(words(t)) for t in shown) + " "
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
    return found + recorded_answers(mds)


def _feedback_texts(texts: dict) -> list[str]:
    """What the labs' feedback says (``expects``, ``quantity``, ``because``, ``hint``)."""
    from seqtheory import chapters

    out = []
    for md in texts:
        if md.stem in chapters.names():
            for lab in chapters.labs(md.stem).labs.values():
                out += [lab.expects, lab.quantity, lab.because, lab.hint]
    return out


def _numbers(value) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return []


def distinctive_digits(x: float) -> str | None:
    """The digits that mark the number ``x`` in a file, or None when they would not: a
    float32 value counts by its float32 digits, and a fraction k/n with n <= 4096 (a share
    of test strings, say) or a number of fewer than ``MIN_DIGITS`` digits is too common."""
    import numpy as np

    if not math.isfinite(x) or x == 0:
        return None
    n = np.arange(1, 4097)
    if np.any(np.abs(x * n - np.round(x * n)) < 1e-12 * n):
        return None
    text = str(np.float32(x)) if float(np.float32(x)) == x else repr(x)
    digits = max(words(text), key=len)
    return digits if len(digits) >= MIN_DIGITS else None


def _record_digits(chapter: str) -> dict[str, str]:
    """The distinctive digits of every number in ``chapter``'s claims records (one and two
    threads), each with the section that recorded it."""
    found: dict[str, str] = {}

    def walk(value, section):
        if isinstance(value, dict):
            for v in value.values():
                walk(v, section)
        elif isinstance(value, list):
            for v in value:
                walk(v, section)
        elif isinstance(value, float) and (d := distinctive_digits(value)):
            found.setdefault(d, section)

    measured = ROOT / "src" / "seqtheory" / "chapters" / "measured"
    for path in sorted(measured.glob(f"{chapter}.*json")):
        if path.name.endswith(".labs.json"):
            continue
        for run in json.loads(path.read_text(encoding="utf-8")).get("runs", {}).values():
            for section, values in (run or {}).items():
                walk(values, section)
    return found


def recorded_answers(mds: list[Path]) -> list[Signature]:
    """One signature per recorded lab answer: the distinctive digits of its first number
    that has them (:func:`distinctive_digits`); an answer without any gives none. An answer
    that the chapter's claims record also holds is the value of that section: not a leak
    when the section is computed in the chapter's text, a claim of a solution section when
    a solution cell computes it."""
    from booktools.labs import recorded
    from booktools.sections import solution_sections

    found = []
    for md in mds:
        in_record = _record_digits(md.stem)
        solved = solution_sections(md)
        for label, answers in recorded(md.stem).items():
            for seed, answer in answers.items():
                digits = [d for x in _numbers(answer) if (d := distinctive_digits(x))]
                if not digits:
                    continue
                section = in_record.get(digits[0])
                where = f"{label}, seed {seed}"
                if section is None:
                    found.append(Signature("recorded lab answer", where, digits[0]))
                elif section in solved:
                    found.append(
                        Signature("claim of a solution section", f"{where}: {section}", digits[0])
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
    """Whether the space-padded ``text`` (with its ``_grams``) holds the run of words (a
    run shorter than ``MIN_WORDS`` words, a recorded answer's digits, as a word of it)."""
    parts = run.split()
    if len(parts) < MIN_WORDS:
        return f" {run} " in text
    head = " ".join(parts[:MIN_WORDS])
    return head in grams and f" {run} " in text


def file_words(path: Path) -> str:
    """A shipped file as one space-separated run of words (a PDF: its text, page by page)."""
    if path.suffix == ".pdf":
        import unicodedata

        from pypdf import PdfReader

        pages = [page.extract_text() or "" for page in PdfReader(path).pages]
        raw = unicodedata.normalize("NFKC", "\n".join(pages))
        raw = re.sub(r"(\w)-\n(\w)", r"\1\2", raw)  # words hyphenated at a line's end
        return " " + " ".join(words(raw)) + " "
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
    single = {}  # one-word signatures (recorded answers' digits), looked up as words
    for s in sigs:
        if " " not in s.words:
            single.setdefault(s.words, []).append(s)
    runs = [s for s in sigs if " " in s.words]
    leaks: dict[Path, list[Signature]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix not in TEXT_SUFFIXES:
            continue
        text = file_words(path)
        grams = _grams(text)
        hits = [s for s in runs if _holds(text, grams, s.words)]
        hits += [s for w in single.keys() & set(text.split()) for s in single[w]]
        if hits:
            leaks[path] = hits
    return leaks


def package_folder(out: Path) -> Path:
    """The library as a student's ``pip install`` installs it: its wheel, built without
    dependencies from a clean copy of the sources (no stale ``build/``), unpacked in ``out``."""
    import shutil
    import subprocess
    import zipfile

    source = out / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    wheels = out / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(wheels)],
        check=True,
    )
    installed = out / "installed"
    for wheel in wheels.glob("*.whl"):
        zipfile.ZipFile(wheel).extractall(installed)
    return installed


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
    parser.add_argument(
        "--package",
        action="store_true",
        help="also scan the library as pip installs it (its wheel, built here)",
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
    for folder in args.folders:
        if not folder.is_dir():
            print(f"leak_check: {folder} is not a folder; build the student edition first")
            return 2
    bad = 0
    with tempfile.TemporaryDirectory(prefix="leak-check-") as tmp:
        targets = [(folder, ()) for folder in args.folders]
        if args.package:
            targets.append((package_folder(Path(tmp)), IN_PACKAGE_KNOWN))
        for folder, known in targets:
            leaks = scan(folder, sigs)
            n_files = sum(1 for p in folder.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)
            name = "the installed package" if known else str(folder)
            counted = 0
            for path, hits in leaks.items():
                real = [s for s in hits if s.kind not in known]
                if not real:
                    kinds = sorted({s.kind for s in hits})
                    print(f"  known {path.relative_to(folder)}: {len(hits)} {', '.join(kinds)}")
                    continue
                counted += 1
                print(f"  LEAK {path.relative_to(folder)}:")
                for s in real[:5]:
                    print(f"    {s.kind} ({s.where}): ...{s.words}...")
                if len(real) > 5:
                    print(f"    and {len(real) - 5} more")
            print(f"leak_check: {name}: {n_files} files, {counted} with a solution")
            bad += counted
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
