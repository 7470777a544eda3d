"""Sphinx extension: the teaching kit's tables, generated from the chapters.

Every exercise of a chapter starts with a tag line, ``★★ · 15 min · lab``: its difficulty
(one to three stars), the minutes a student needs, and its kind -- ``concept`` (explain),
``derivation`` (derive, prove, estimate on paper) or ``lab`` (change the code and run; the
exercise is followed by a starter cell that ends with ``chapter.feedback(label, answer)``).

- ``exercises_of(src)`` reads a chapter's exercises from its source (the tests use it too);
- ``{exercise-table}`` renders every chapter's exercises (title, stars, time, kind), split
  into homework (concept, derivation) and labs;
- ``{syllabus} N`` renders the N-session plan of ``book/syllabus.yml``: per session three
  objectives, the pre-reading with its reading time (computed from the pages), the in-class
  core, the labs and the homework with their titles and times, and the total workload.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from booktools import chapters
from booktools.toc import chapter_names

TAG = re.compile(r"^(★{1,3}) · (\d+) min · (concept|derivation|lab)$")
KINDS = ("concept", "derivation", "lab")
FENCE = re.compile(r"^(:{3,})\{exercise\}\s*(.*)$")
HOMEWORK_BRIEF = 5  # minutes at the end of a session to set the homework
PROJECT_HOURS = "10–15"  # a mini-project's workload (book/projects.md)


@dataclass
class Exercise:
    chapter: str
    label: str
    title: str
    stars: int
    minutes: int
    kind: str
    body: str  # the exercise's text after the tag line
    after: str  # the source between the exercise's end and the next exercise

    @property
    def homework(self) -> bool:
        return self.kind != "lab"

    def starter_cells(self) -> list[str]:
        return [c for tags, c in code_cells(self.after) if "starter" in tags]

    def solution_cells(self) -> list[str]:
        return [c for tags, c in code_cells(self.after) if "solution" in tags]

    def has_solution(self) -> bool:
        return bool(
            re.search(r"^:{3,}\{solution\}\s*" + re.escape(self.label) + r"\s*$", self.after, re.M)
        )


def code_cells(src: str) -> list[tuple[list[str], str]]:
    """(tags, code) of every code cell in a piece of MyST source."""
    out = []
    for m in re.finditer(r"^```\{code-cell\}[^\n]*\n(.*?)^```", src, re.S | re.M):
        body = m.group(1)
        tm = re.match(r":tags:\s*\[([^\]]*)\]\s*\n", body)
        tags = [t.strip() for t in tm.group(1).split(",")] if tm else []
        out.append((tags, body[tm.end() :] if tm else body))
    return out


def exercises_of(src: str, chapter: str) -> list[Exercise]:
    """The exercises of a chapter's MyST source, in order.  An exercise without a valid tag
    line gets ``stars = 0`` and ``kind = ""`` (the tests name it)."""
    lines = src.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if FENCE.match(line)]
    found = []
    for n, i in enumerate(starts):
        fence, title = FENCE.match(lines[i]).groups()
        j = i + 1
        while j < len(lines) and lines[j].rstrip("\n") != fence:
            j += 1
        inner = lines[i + 1 : j]
        label = ""
        body: list[str] = []
        for line in inner:
            m = re.match(r"^:label:\s*(\S+)", line)
            if m:
                label = m.group(1)
            elif not re.match(r"^:[a-z-]+:", line):
                body.append(line)
        text = "".join(body).strip("\n")
        first, _, rest = text.partition("\n")
        tag = TAG.match(first.strip())
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        after = "".join(lines[j + 1 : end])
        cut = re.search(r"^## ", after, re.M)  # the next section ends the exercises
        if cut and n + 1 == len(starts):
            after = after[: cut.start()]
        found.append(
            Exercise(
                chapter,
                label,
                title.strip(),
                len(tag.group(1)) if tag else 0,
                int(tag.group(2)) if tag else 0,
                tag.group(3) if tag else "",
                rest.strip() if tag else text,
                after,
            )
        )
    return found


def stars(n: int) -> str:
    return "★" * n


def _title(src: str, fallback: str) -> str:
    m = re.search(r"^# (.+)$", src, re.M)
    return m.group(1).split(":")[0].strip() if m else fallback


def _ref(ex: Exercise) -> str:
    return f"{{numref}}`{ex.label}`: {ex.title}"


class ExerciseTable(SphinxDirective):
    """Every chapter's exercises with their titles, difficulty, time and kind."""

    def run(self):
        src_dir = Path(self.env.srcdir)
        for c in chapter_names(src_dir):
            self.env.note_dependency(str(src_dir / "book" / f"{c}.md"))
        rows = [
            "| chapter | homework (explain, derive) | lab (change the code and run) |",
            "|---|---|---|",
        ]
        totals = {"homework": 0, "lab": 0}
        for c in chapter_names(src_dir):
            src = (src_dir / "book" / f"{c}.md").read_text(encoding="utf-8")
            exs = exercises_of(src, c)
            cells = {"homework": [], "lab": []}
            for ex in exs:
                key = "homework" if ex.homework else "lab"
                cells[key].append(f"{_ref(ex)} ({stars(ex.stars)}, {ex.minutes} min)")
                totals[key] += ex.minutes
            rows.append(
                f"| {{doc}}`{_title(src, c)} <{c}>` | "
                + " | ".join("<br>".join(cells[k]) or "—" for k in ("homework", "lab"))
                + " |"
            )
        rows += [
            "",
            f"In all: {_hours(totals['homework'])} of homework and "
            f"{_hours(totals['lab'])} of labs, at the times the exercises state.",
        ]
        box = nodes.container(classes=["exercise-table"])
        self.state.nested_parse(StringList(rows, source=self.env.docname), self.content_offset, box)
        return [box]


def _hours(minutes: int) -> str:
    return f"{minutes / 60:.1f} h" if minutes >= 90 else f"{minutes} min"


# --------------------------------------------------------------------------- the syllabus
def load_syllabus(src_dir: Path) -> dict:
    import yaml

    return yaml.safe_load((src_dir / "book" / "syllabus.yml").read_text(encoding="utf-8"))


def all_words(src: str) -> int:
    """Words of a piece of chapter source with every fold open (code, directive options,
    math blocks and roles' syntax left out; exercises and solutions left out too)."""
    src = re.sub(r"^---\n.*?\n---\n", "", src, count=1, flags=re.S)
    src = re.sub(r"```\{code-cell\}.*?```", "", src, flags=re.S)
    src = re.sub(r"^(:{3,})\{(exercise|solution)\}.*?^\1\s*$", "", src, flags=re.S | re.M)
    src = re.sub(r"^(:{3,}|`{3,})\{[a-zA-Z:-]+\}.*$", "", src, flags=re.M)
    src = re.sub(r"^:[a-z-]+:.*$", "", src, flags=re.M)
    src = re.sub(r"\{glue:text\}`[^`]*`", "N", src)
    src = re.sub(r"\{[a-z:]+\}`([^`<]*?)\s*(<[^`]*>)?`", r"\1", src)
    src = re.sub(r"\$\$.*?\$\$", " ", src, flags=re.S)
    return len(re.findall(r"[A-Za-z][A-Za-z'-]*|\d[\d.,]*", src))


def section_source(src: str, start: str | None, stop: str | None) -> str:
    """A chapter's source between the headings beginning ``start`` (inclusive) and ``stop``
    (exclusive); ``None`` for the chapter's start or end."""
    lines = src.splitlines(keepends=True)

    def find(prefix: str) -> int:
        for i, line in enumerate(lines):
            if re.match(r"^#{2,3} ", line) and line.lstrip("#").strip().startswith(prefix):
                return i
        raise ValueError(f"no heading starting {prefix!r}")

    a = find(start) if start else 0
    b = find(stop) if stop else len(lines)
    head = ""
    if a:  # keep the front matter so that core_text strips it the same way
        m = re.match(r"^---\n.*?\n---\n", src, re.S)
        head = m.group(0) if m else ""
    return head + "".join(lines[a:b])


def section_words(src: str, start: str | None, stop: str | None, folds: bool = False) -> int:
    """Core-path words of a chapter between the headings beginning ``start`` and ``stop``
    (:func:`section_source`).  ``folds=True`` counts the folded blocks too (a session that
    studies a chapter's variations)."""
    part = section_source(src, start, stop)
    return all_words(part) if folds else chapters.core_words(part)


def reading(src_dir: Path, item: dict) -> tuple[str, int]:
    """(Markdown for one pre-reading item, its reading minutes)."""
    chapter = item["chapter"]
    src = (src_dir / "book" / f"{chapter}.md").read_text(encoding="utf-8")
    start, stop = item.get("from"), item.get("to")
    folds = bool(item.get("folds"))
    mins = chapters.reading_minutes(section_source(src, start, stop), folds)
    if start or stop:
        heads = _heading_lines(src)
        full = {
            prefix: next(t for _, t in heads if t.startswith(prefix))
            for prefix in (start, stop)
            if prefix
        }
        nxt = [t for i, t in heads if start and i > _line_of(src, start)]
        if start and stop and nxt and nxt[0] == full[stop]:
            part = f"the section “{full[start]}”"
        else:
            part = (f"from “{full[start]}”" if start else "from the start") + (
                f" to “{full[stop]}”" if stop else " to the end"
            )
        text = f"{{doc}}`{_title(src, chapter)} <{chapter}>`, {part}"
    else:
        text = f"{{doc}}`{_title(src, chapter)} <{chapter}>`"
    if folds:
        text += ", folded blocks open"
    return text, mins


def all_exercises(src_dir: Path) -> dict[str, Exercise]:
    out = {}
    for c in chapter_names(src_dir):
        src = (src_dir / "book" / f"{c}.md").read_text(encoding="utf-8")
        out.update({e.label: e for e in exercises_of(src, c)})
    return out


def syllabus_rows(src_dir: Path, sessions: int) -> list[str]:
    """The MyST of the ``sessions``-session plan."""
    plan = load_syllabus(src_dir)[f"sessions_{sessions}"]
    exs = all_exercises(src_dir)
    times = plan_times()
    minutes_class = plan.get("session_minutes", 90)
    out: list[str] = []
    total = {"reading": 0, "lab": 0, "homework": 0}
    for n, session in enumerate(plan["sessions"], start=1):
        out += [f"**Session {n}. {session['title']}**", ""]
        out += ["*You will be able to:*", ""]
        for i, o in enumerate(session["objectives"], start=1):
            practice = ", ".join(
                "the mini-project" if label == "project" else f"{{numref}}`{label}`"
                for label in o.get("practice", [])
            )
            out.append(f"{i}. {o['text']}" + (f" (practised in {practice})" if practice else ""))
        out.append("")
        items = [reading(src_dir, r) for r in session["reading"]]
        read = sum(m for _, m in items)
        out.append(
            f"- **Before class** (about {read} min): "
            + "; ".join(f"{t} ({m} min)" for t, m in items)
            + "."
        )
        lab_minutes = sum(exs[label].minutes for label in session.get("labs", []))
        parts = []
        for m, chapter, text in class_items(session, times):
            if text == "run":
                title = _title(
                    (src_dir / "book" / f"{chapter}.md").read_text(encoding="utf-8"), chapter
                )
                parts.append(
                    f"run {{doc}}`{title} <{chapter}>` ({m} min planned: it ran in "
                    f"{times[chapter] / 60:.1f} min in a CI run, plus half again for other "
                    "machines)"
                )
            else:
                parts.append(f"{text} ({m} min)")
        plan_text = "; ".join(parts)
        if lab_minutes:
            plan_text += f"; the labs below ({lab_minutes} min)"
        if session.get("homework"):
            plan_text += f"; set the homework ({HOMEWORK_BRIEF} min)"
        out.append(f"- **In class** ({minutes_class} min): {plan_text}.")
        for key, name in (("labs", "Lab"), ("homework", "Homework")):
            chosen = [exs[label] for label in session.get(key, [])]
            mins = sum(e.minutes for e in chosen)
            total["lab" if key == "labs" else "homework"] += mins
            if chosen:
                out.append(
                    f"- **{name}** ({mins} min): "
                    + "; ".join(f"{_ref(e)} ({stars(e.stars)}, {e.minutes} min)" for e in chosen)
                    + "."
                )
        skip = session.get("skip")
        if skip:
            out.append(f"- **Skip or assign as optional:** {skip}")
        out.append("")
        total["reading"] += read
    contact = len(plan["sessions"]) * minutes_class
    own = total["reading"] + total["homework"]
    project = plan.get("project")
    project_text = (
        f" On top of that, a {{doc}}`mini-project <projects>` in pairs, about "
        f"{PROJECT_HOURS} h each, {project}."
        if project
        else ""
    )
    out += [
        f"**Workload.** {len(plan['sessions'])} sessions of {minutes_class} min "
        f"({_hours(contact)} in class, labs included: {_hours(total['lab'])} of them). "
        f"Outside class: {_hours(total['reading'])} of pre-reading and "
        f"{_hours(total['homework'])} of homework, {_hours(own)} in all, about "
        f"{own / len(plan['sessions']):.0f} min a session.{project_text} Reading times "
        f"are the pages' core paths at {_wpm()} words a minute plus a minute per figure and "
        f"half a minute per table and display equation; exercise times are those "
        f"the exercises state."
    ]
    return out


def plan_times() -> dict[str, float]:
    """The chapters' run times a plan is made with: the committed table of a CI run
    (``benchmarks/chapter_times_ci.tsv``), so a plan does not change with the machine that
    builds it."""
    return chapters.read_times(chapters.CI_TIMES)


RUN_HEADROOM = 1.5  # a class's machines (Colab, laptops) against the CI's measured run


def run_minutes(chapter: str, times: dict[str, float]) -> int:
    """Class minutes to run a chapter's notebook: its measured run time with half again on
    top (another machine, Colab), rounded up."""
    if chapter not in times:
        raise ValueError(f"no measured run time for chapter {chapter!r}")
    return math.ceil(RUN_HEADROOM * times[chapter] / 60)


def class_items(session: dict, times: dict[str, float]) -> list[tuple[int, str | None, str]]:
    """A session's in-class plan as (minutes, chapter or None, what) rows: ``{run: CHAPTER}``
    runs the chapter's notebook (minutes from its measured run time), ``{minutes: N, text:
    ..., chapter: CHAPTER}`` is taught, ``presentations: true`` marks the mini-projects'
    slot."""
    items = session.get("in_class")
    if not isinstance(items, list) or not items:
        raise ValueError(f"session {session.get('title')!r}: in_class must be a list of items")
    rows = []
    for item in items:
        if "run" in item:
            if set(item) != {"run"}:
                raise ValueError(
                    f"in_class item {item!r}: a run's minutes come from the chapter's measured "
                    "run time; give only {run: CHAPTER}"
                )
            rows.append((run_minutes(item["run"], times), item["run"], "run"))
            continue
        if not isinstance(item.get("minutes"), int) or not str(item.get("text", "")).strip():
            raise ValueError(f"in_class item {item!r} needs minutes (an int) and text")
        rows.append((item["minutes"], item.get("chapter"), item["text"]))
    return rows


def in_class_minutes(session: dict, exercises: dict, times: dict[str, float]) -> int:
    """The minutes of a session's in-class plan, its labs and setting the homework included."""
    items = sum(m for m, _, _ in class_items(session, times))
    brief = HOMEWORK_BRIEF if session.get("homework") else 0
    return items + brief + sum(exercises[label].minutes for label in session.get("labs", []))


def _heading_lines(src: str) -> list[tuple[int, str]]:
    return [
        (i, line.lstrip("#").strip())
        for i, line in enumerate(src.splitlines())
        if re.match(r"^#{2,3} ", line)
    ]


def _line_of(src: str, prefix: str) -> int:
    for i, text in _heading_lines(src):
        if text.startswith(prefix):
            return i
    raise ValueError(f"no heading starting {prefix!r}")


def needs(ex: Exercise, src: str) -> list[tuple[str, int, str]]:
    """What an exercise's text refers to in its chapter, as (chapter, source line, what)
    rows: its variations (the numbered sections of *Going further*), its experiments, the
    dropdowns it names, *Going further* itself; and (``"exercise"``, 0, label) for every
    exercise it builds on."""
    text = " ".join(f"{ex.title} {ex.body}".split())
    lines = src.splitlines()
    found = []
    going = next((i for i, t in _heading_lines(src) if t.startswith("Going further")), None)
    for group in re.findall(r"\b[Vv]ariations? (\d+(?:(?:, | and | or )\d+)*)", text):
        for n in re.findall(r"\d+", group):
            line = next(
                (
                    i
                    for i, t in _heading_lines(src)
                    if going and i > going and t.startswith(f"{n}.")
                ),
                None,
            )
            if line is None:
                raise ValueError(f"{ex.label}: names variation {n}, which the chapter lacks")
            found.append((ex.chapter, line, f"variation {n}"))
    for n in re.findall(r"\bExperiment (\d+)\b", text):
        found.append((ex.chapter, _line_of(src, f"Experiment {n}:"), f"Experiment {n}"))
    for title in re.findall(r'dropdown ["“]([^"”]+)["”]', text):
        line = next(
            (
                i
                for i, ln in enumerate(lines)
                if re.match(r"^:{3,}\{dropdown\} " + re.escape(title), ln)
            ),
            None,
        )
        if line is None:
            raise ValueError(f"{ex.label}: names the dropdown {title!r}, which the chapter lacks")
        found.append((ex.chapter, line, f"the dropdown “{title}”"))
    if "Going further" in text and going is not None:
        found.append((ex.chapter, going, "Going further"))
    for label in re.findall(r"\{numref\}`(ex-[a-z-]+-\d+)`", text):
        found.append(("exercise", 0, label))
    return found


def _covered(src: str, item: dict) -> tuple[int, int]:
    """The source lines a reading item covers: from its ``from`` heading (or the start) to
    its ``to`` heading (or the end)."""
    a = _line_of(src, item["from"]) if item.get("from") else 0
    b = _line_of(src, item["to"]) if item.get("to") else len(src.splitlines())
    return a, b


def plan_problems(src_dir: Path, plan: dict, times: dict[str, float]) -> list[str]:
    """Where a course plan does not hold: an exercise that needs a part of a chapter (a
    variation, an experiment, a dropdown) that no reading up to its session assigns, or an
    exercise it builds on that is not set by then; an objective that no exercise of its
    session practises; a chapter with labs in a session that is not run in class, or has
    less teaching than half its labs' minutes; an in-class plan that does not fill the
    session; a mini-project without a presentation slot."""
    exs = all_exercises(src_dir)
    sources = {
        c: (src_dir / "book" / f"{c}.md").read_text(encoding="utf-8")
        for c in chapter_names(src_dir)
    }
    found: list[str] = []
    read: list[tuple[str, int, int]] = []
    set_so_far: set[str] = set()
    minutes = plan.get("session_minutes", 90)
    slots = 0
    for n, session in enumerate(plan["sessions"], start=1):
        where = f"session {n} ({session['title']})"
        for item in session["reading"]:
            if item["chapter"] in sources:
                span = _covered(sources[item["chapter"]], item)
                read.append((item["chapter"], *span, bool(item.get("folds"))))
        chosen = session.get("labs", []) + session.get("homework", [])
        set_so_far |= set(chosen)
        for label in chosen:
            ex = exs[label]
            for chapter, line, what in needs(ex, sources[ex.chapter]):
                if chapter == "exercise":
                    if what not in set_so_far:
                        found.append(f"{where}: {label} builds on {what}, which is not set by then")
                elif not any(c == chapter and a <= line < b for c, a, b, _ in read):
                    found.append(
                        f"{where}: {label} needs {what} of {chapter}, which no reading up to "
                        "this session assigns"
                    )
                elif what.startswith(("variation", "the dropdown")) and not any(
                    c == chapter and a <= line < b and folds for c, a, b, folds in read
                ):  # a variation's detail and a dropdown are folded: read with folds open
                    found.append(
                        f"{where}: {label} needs {what} of {chapter}, which is folded, but no "
                        "reading up to this session opens its folds (folds: true)"
                    )
        presents = any(item.get("presentations") for item in session["in_class"])
        for k, objective in enumerate(session["objectives"], start=1):
            practice = objective.get("practice", []) if isinstance(objective, dict) else []
            if not practice:
                found.append(f"{where}: objective {k} names no exercise that practises it")
            for label in practice:
                if label == "project" and presents:  # practised by the mini-project shown
                    continue
                if label not in chosen:
                    found.append(
                        f"{where}: objective {k} is practised by {label}, which the session "
                        "does not set"
                    )
        try:
            items = class_items(session, times)
        except ValueError as err:
            found.append(f"{where}: {err}")
            continue
        for _, _, text in items:
            if re.search(r"\d+(\.\d+)?\s*min", text):
                found.append(
                    f"{where}: a time typed into the text ({text!r}): minutes go in `minutes`, "
                    "a chapter's run time comes from {run: CHAPTER}"
                )
        slots += sum(1 for item in session["in_class"] if item.get("presentations"))
        for chapter in {exs[label].chapter for label in session.get("labs", [])}:
            lab_min = sum(exs[x].minutes for x in session["labs"] if exs[x].chapter == chapter)
            if not any(c == chapter and t == "run" for _, c, t in items):
                found.append(f"{where}: labs of {chapter} but its notebook is not run in class")
            taught = sum(m for m, c, t in items if c == chapter and t != "run")
            if 2 * taught < lab_min:
                found.append(
                    f"{where}: {taught} min of class on {chapter} for {lab_min} min of its labs "
                    "(at least half as much teaching as lab time)"
                )
        total = in_class_minutes(session, exs, times)
        if not minutes - 10 <= total <= minutes:
            found.append(f"{where}: the in-class plan and its labs take {total} of {minutes} min")
    if plan.get("project") and not slots:
        found.append(
            "the mini-projects have no presentation slot (an item with presentations: true)"
        )
    return found


def _wpm() -> int:
    return chapters.WORDS_PER_MINUTE


class Syllabus(SphinxDirective):
    required_arguments = 1

    def run(self):
        src_dir = Path(self.env.srcdir)
        # an incremental build re-renders the plans when their data or a chapter changes
        for path in [src_dir / "book" / "syllabus.yml", chapters.CI_TIMES] + [
            src_dir / "book" / f"{c}.md" for c in chapter_names(src_dir)
        ]:
            self.env.note_dependency(str(path))
        try:
            sessions = int(self.arguments[0])
            rows = syllabus_rows(src_dir, sessions)
        except (KeyError, ValueError) as err:
            raise self.error(f"syllabus {self.arguments[0]}: {err}") from None
        box = nodes.container(classes=["syllabus"])
        self.state.nested_parse(StringList(rows, source=self.env.docname), self.content_offset, box)
        return [box]


def setup(app):
    app.add_directive("exercise-table", ExerciseTable)
    app.add_directive("syllabus", Syllabus)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
