"""Problem sets: every chapter's exercises are tagged, every coding lab has a starter cell and
automatic feedback, and the feedback tells a correct answer from an incorrect one."""

import re
import sys
from pathlib import Path

import pytest

from booktools import labs
from booktools.sphinx import teaching_kit as kit
from seqtheory import chapters
from seqtheory.book.exercises import Lab, LabTable
from seqtheory.chapters import feedback, names

ROOT = Path(__file__).resolve().parents[2]

CHAPTERS = names()


def _exercises(chapter):
    src = (ROOT / "book" / f"{chapter}.md").read_text(encoding="utf-8")
    return kit.exercises_of(src, chapter)


# ----------------------------------------------------------------------------- the library
def _demo():
    table = LabTable(
        "scaling_laws",
        [
            Lab(
                "ex-scaling-laws-99",
                expects="a list of two numbers",
                quantity="their difference",
                measure=lambda a: a[0] - a[1],
                low=0.1,
                high=0.5,
                because="reasons",
                hint="look again",
            ),
        ],
    )

    @table.solves("ex-scaling-laws-99", mistakes=(("reversed", [0.0, 0.3]),))
    def _(seed):
        return [0.5 + 0.01 * seed, 0.2]

    return table


def test_feedback_says_within_outside_and_not_answered():
    table = _demo()
    good = table.feedback("ex-scaling-laws-99", table.solve("ex-scaling-laws-99", 3))
    assert good.ok is True and "Within the expected range" in good.text
    assert "0.33" in good.text and "because reasons" in good.text
    bad = table.feedback("ex-scaling-laws-99", [0.0, 0.3])
    assert bad.ok is False and "Outside the expected range" in bad.text
    assert "look again" in bad.text
    assert table.feedback("ex-scaling-laws-99", ...).ok is None
    assert table.feedback("ex-scaling-laws-99", [..., 0.2]).ok is None
    odd = table.feedback("ex-scaling-laws-99", "two numbers")
    assert odd.ok is False and "Cannot read this answer" in odd.text
    assert "**" not in str(odd)


def test_solution_feedback_is_a_check(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_STRICT_CHECKS", "1")
    table = _demo()
    assert table.feedback("ex-scaling-laws-99", [0.4, 0.1], solution=True).ok
    with pytest.raises(AssertionError, match="ex-scaling-laws-99"):
        table.feedback("ex-scaling-laws-99", [0.9, 0.1], solution=True)


def test_labs_refuse_bad_definitions():
    with pytest.raises(ValueError, match="label"):
        Lab("exercise 1", expects="x", quantity="q", low=0, high=1, because="b", hint="h")
    with pytest.raises(ValueError, match="low must be below high"):
        Lab("ex-copying-1", expects="x", quantity="q", low=1, high=1, because="b", hint="h")
    with pytest.raises(ValueError, match="because"):
        Lab("ex-copying-1", expects="x", quantity="q", low=0, high=1, because=" ", hint="h")
    with pytest.raises(ValueError, match="does not belong"):
        LabTable(
            "partitions",
            [Lab("ex-copying-1", expects="x", quantity="q", low=0, high=1, because="b", hint="h")],
        )
    with pytest.raises(ValueError, match="label must be one of"):
        _demo().feedback("ex-scaling-laws-98", 1.0)
    with pytest.raises(ValueError, match="label must be an exercise label"):
        feedback("scaling", 1.0)


# ----------------------------------------------------------------------------- the chapters
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_is_tagged(chapter):
    found = _exercises(chapter)
    n = len(found)
    assert 8 <= n <= 10, f"{chapter} has {n} exercises (8-10 wanted)"
    prefix = "ex-" + chapter.replace("_", "-") + "-"
    labels = [e.label for e in found]
    assert len(set(labels)) == len(labels), f"{chapter}: repeated labels {labels}"
    for e in found:
        assert e.label.startswith(prefix), f"{chapter}: label {e.label!r}"
        assert e.kind in kit.KINDS, (
            f"{e.label} ({e.title}) needs a tag line such as '★★ · 15 min · lab' first in its body"
        )
        assert 2 <= e.minutes <= 90, f"{e.label}: {e.minutes} min"
        assert e.has_solution(), f"{e.label} has no {{solution}} block after it"
    kinds = {e.kind for e in found}
    assert "lab" in kinds and kinds & {"concept", "derivation"}, (
        f"{chapter}: wants at least one lab and one homework exercise, has {kinds}"
    )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_lab_has_a_starter_and_feedback(chapter):
    table = chapters.labs(chapter)
    labs = [e for e in _exercises(chapter) if e.kind == "lab"]
    for e in labs:
        starters = e.starter_cells()
        assert starters, f"{e.label}: no starter cell (tagged starter) after the exercise"
        call = f'chapter.feedback("{e.label}",'
        assert any(call in c and "..." in c for c in starters), (
            f"{e.label}: the starter cell must leave blanks (...) and call {call} ...)"
        )
        assert any(call in c and "solution=True" in c for c in e.solution_cells()), (
            f"{e.label}: no solution cell (tagged solution) calling {call} ..., solution=True)"
        )
        assert e.label in table.labs, f"{e.label}: no Lab entry in {chapter}.LABS"
    assert sorted(table.labs) == sorted(e.label for e in labs), (
        f"{chapter}.LABS has labs that are not lab exercises of the page"
    )


LABS = [(c, label) for c in CHAPTERS for label in chapters.labs(c).labs]


@pytest.mark.parametrize("chapter,label", LABS)
def test_feedback_tells_correct_from_incorrect(chapter, label):
    table = labs.table_with_solutions(chapter)
    recorded = labs.recorded(chapter).get(label, {})
    assert len(recorded) >= 8, (
        f"{label}: {len(recorded)} recorded seeds "
        f"(python -m booktools.record_labs --chapters {chapter})"
    )
    for seed, answer in recorded.items():
        fb = table.feedback(label, answer)
        assert fb.ok, f"{label}, base seed {seed}: the reference answer reads as wrong: {fb}"
    mistakes = table.mistakes(label)
    assert mistakes, f"{label}: list at least one typical mistake and the answer it gives"
    for what, answer in mistakes:
        fb = table.feedback(label, answer)
        assert fb.ok is False, f"{label}: the mistake '{what}' reads as correct: {fb}"
    assert table.feedback(label, ...).ok is None


def test_the_installed_library_holds_no_reference_solution():
    """The reference solutions and recorded answers are the lecturer's: in the repository's
    scripts/lab_solutions, outside the package (pyproject's packages: seqtheory, booktools)."""
    for chapter in CHAPTERS:
        table = chapters.labs(chapter)
        if not table.labs:
            continue
        module = sys.modules[f"seqtheory.chapters.{chapter}"]
        assert "LABS.solves" not in Path(module.__file__).read_text(encoding="utf-8"), chapter
        assert not list(Path(module.__file__).parent.rglob("*.labs.json")), chapter
        assert labs.solutions_path(chapter).is_file(), chapter


# ----------------------------------------------------------------------------- the syllabus
@pytest.mark.parametrize("sessions", [6, 12])
def test_syllabus_fits_the_material(sessions):
    plan = kit.load_syllabus(ROOT)[f"sessions_{sessions}"]
    assert len(plan["sessions"]) == sessions
    found = kit.all_exercises(ROOT)
    for n, s in enumerate(plan["sessions"], start=1):
        where = f"{sessions}-session plan, session {n} ({s['title']})"
        assert len(s["objectives"]) == 3, f"{where}: wants three objectives"
        read = sum(kit.reading(ROOT, item)[1] for item in s["reading"])
        # an hour and a half of careful pre-reading at most, what a graduate session can
        # ask (reading times are first reads, figures and equations studied, calibrated on
        # cold reads: booktools.sphinx.chapter_header.reading_minutes)
        assert 5 <= read <= 90, f"{where}: {read} min of pre-reading"
        labs = [found[label] for label in s["labs"]]
        homework = [found[label] for label in s["homework"]]
        assert all(e.kind == "lab" for e in labs), f"{where}: a lab that is not tagged lab"
        assert all(e.kind != "lab" for e in homework), f"{where}: a lab set as homework"
        if n < sessions or sessions == 6:
            assert labs and homework, f"{where}: wants a lab and homework"
        assert sum(e.minutes for e in labs) <= 45, f"{where}: more labs than class time"
        assert read + sum(e.minutes for e in homework) <= 150, (
            f"{where}: more than 2.5 h of work outside class"
        )
    assert kit.plan_problems(ROOT, plan, TIMES) == []
    rows = kit.syllabus_rows(ROOT, sessions)
    text = "\n".join(rows)
    assert text.count("*You will be able to:*") == sessions
    assert re.search(r"\*\*Workload\.\*\* .* in all", text)
    assert "mini-project <projects>" in text
    for label in (lab for s in plan["sessions"] for lab in s["labs"] + s["homework"]):
        assert f"{{numref}}`{label}`: {found[label].title}" in text


TIMES = kit.plan_times()  # the committed CI table of run times


def _plan(sessions=6):
    import copy

    return copy.deepcopy(kit.load_syllabus(ROOT)[f"sessions_{sessions}"])


def _problems(plan):
    return "\n".join(kit.plan_problems(ROOT, plan, TIMES))


def test_the_plan_check_finds_a_lab_that_needs_an_unread_section():
    """Session 2 of the six-session plan reads variations 1 and 4 for Exercises 14 and 16;
    without them the check names what is missing."""
    plan = _plan()
    s2 = plan["sessions"][1]
    s2["reading"] = [r for r in s2["reading"] if "from" not in r or "Experiment" in r["from"]]
    found = _problems(plan)
    assert "ex-induction-heads-7 needs variation 4 of induction_heads" in found
    assert "ex-induction-heads-5 needs variation 1 of induction_heads" in found
    plan = _plan()  # the variations read with their folds closed: the details are missing
    for item in plan["sessions"][1]["reading"]:
        item.pop("folds", None)
    assert "ex-induction-heads-7 needs variation 4 of induction_heads, which is folded" in (
        _problems(plan)
    )
    plan = _plan()
    plan["sessions"][0]["homework"].append("ex-meet-the-model-6")  # builds on exercise 2
    plan["sessions"][0]["labs"].remove("ex-meet-the-model-2")
    assert "builds on ex-meet-the-model-2, which is not set by then" in _problems(plan)


def test_the_plan_check_finds_an_objective_without_practice():
    plan = _plan()
    plan["sessions"][1]["objectives"][2]["practice"] = []
    assert "session 2 (In-context learning in three phases): objective 3 names no exercise" in (
        _problems(plan)
    )
    plan = _plan()
    plan["sessions"][1]["objectives"][2]["practice"] = ["ex-induction-heads-4"]  # not set
    assert "objective 3 is practised by ex-induction-heads-4, which the session does not set" in (
        _problems(plan)
    )


def test_the_plan_check_finds_labs_without_class_time_or_a_run():
    plan = _plan()
    s5 = plan["sessions"][4]
    s5["in_class"] = [i for i in s5["in_class"] if i.get("run") != "chain_of_thought"]
    assert "labs of chain_of_thought but its notebook is not run in class" in _problems(plan)
    plan = _plan()
    for item in plan["sessions"][4]["in_class"]:
        if item.get("chapter") == "chain_of_thought":
            item["minutes"] = 10
    found = _problems(plan)
    assert "10 min of class on chain_of_thought for 35 min of its labs" in found


def test_the_plan_check_refuses_typed_run_times_and_wants_a_presentation_slot():
    plan = _plan()
    plan["sessions"][1]["in_class"][1]["text"] = "run the chapter (about 2.5 min)"
    assert "a time typed into the text" in _problems(plan)
    plan = _plan()
    plan["sessions"][1]["in_class"][0] = {"run": "induction_heads", "minutes": 2}
    assert "a run's minutes come from the chapter's measured run time" in _problems(plan)
    plan = _plan()
    plan["sessions"][5]["in_class"] = [
        i for i in plan["sessions"][5]["in_class"] if not i.get("presentations")
    ]
    found = _problems(plan)
    assert "the mini-projects have no presentation slot" in found
    assert "the in-class plan and its labs take 60 of 90 min" in found


def test_grading_mode_says_only_inside_or_outside(monkeypatch):
    """With SEQTHEORY_GRADING=1 a student's feedback gives no range, reason or hint; the
    chapter's own solution cell still checks the range."""
    table = _demo()
    monkeypatch.setenv("SEQTHEORY_GRADING", "1")
    good = table.feedback("ex-scaling-laws-99", [0.6, 0.2])
    bad = table.feedback("ex-scaling-laws-99", [0.0, 0.3])
    assert good.ok is True and bad.ok is False
    for fb in (good, bad):
        assert "because" not in fb.text and "look again" not in fb.text
        assert "between" not in fb.text and "0.5" not in fb.text  # the range is 0.1 to 0.5
    assert "Within the expected range" in good.text and "Outside" in bad.text
    assert "with base seed **0**" in good.text
    monkeypatch.setenv("SEQTHEORY_SEED", "5831")  # a student's own variant
    assert "with base seed **5831**" in table.feedback("ex-scaling-laws-99", [0.6, 0.2]).text
    monkeypatch.delenv("SEQTHEORY_SEED")
    assert "between" in table.feedback("ex-scaling-laws-99", [0.6, 0.2], solution=True).text
    monkeypatch.setenv("SEQTHEORY_GRADING", "0")
    assert "because reasons" in table.feedback("ex-scaling-laws-99", [0.6, 0.2]).text
