"""Every chapter's claims against the values recorded under many base seeds.

The margins of the claims come from ``src/seqtheory/chapters/measured/CHAPTER.json``,
written by ``python -m booktools.robustness --record``: here each recorded run must satisfy
every claim of the default run size, each claim must have been measured under at least
``MIN_SEEDS`` base seeds, each section of a table must be verified by its chapter, and
each recorded section must have been computed by the code the chapter has now (its cells,
its function, its claims' conditions: ``booktools.sections``).
"""

import re
from pathlib import Path

import pytest

from booktools.sections import section_fingerprint, stale_sections
from seqtheory import chapters

ROOT = Path(__file__).resolve().parents[1]
MIN_SEEDS = 8


@pytest.mark.parametrize("name", chapters.names())
def test_chapter_page_verifies_every_section(name):
    table = chapters.table(name)
    # whitespace removed: the formatter may break a call over lines
    source = re.sub(r"\s+", "", (ROOT / "book" / f"{name}.md").read_text(encoding="utf-8"))
    verified = set(re.findall(r"verify\(chapter\.claims\(\"(\w+)\"", source))
    assert set(table.sections()) <= verified, (
        f"sections of {name}'s table that its page never verifies: "
        f"{sorted(set(table.sections()) - verified)}"
    )


def _unmet(table, runs: dict, label: str = "") -> list[str]:
    problems = []
    for claim in table.claims:
        if not claim.applies("cpu"):
            continue
        for seed, sections in runs.items():
            values = sections.get(claim.section)
            if values is None:
                problems.append(f"{claim.id}: section not recorded under seed {seed}{label}")
            elif not claim.holds(values):
                problems.append(
                    f"{claim.id} under seed {seed}{label}: {claim.describe(values)} "
                    f"(needs {claim.condition})"
                )
    return problems


@pytest.mark.parametrize("name", chapters.names())
def test_recorded_values_satisfy_every_claim(name):
    table = chapters.table(name)
    runs = table.recorded()["runs"]
    assert len(runs) >= MIN_SEEDS, (
        f"{name}: {len(runs)} recorded base seeds, need {MIN_SEEDS} "
        "(python -m booktools.robustness --record --chapters {name} --seeds 0-9)"
    )
    problems = _unmet(table, runs)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", chapters.names())
def test_claims_also_hold_with_two_threads(name):
    """Two torch threads sum in another order: other bits than CI's one-thread run, which
    the claims' margins must absorb too (CI runs one thread; this record is its other bits)."""
    table = chapters.table(name)
    runs = table.recorded(threads=2)["runs"]
    assert runs, (
        f"{name}: no run recorded with two threads "
        f"(python -m booktools.robustness --record --threads 2 --chapters {name} --seeds 0)"
    )
    problems = _unmet(table, runs, " with two threads")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", chapters.names())
def test_glued_names_are_unique_in_a_chapter(name):
    # verify() glues every scalar value under its name: two sections with one name would
    # glue one key twice, which the book build (-W) refuses
    where: dict[str, set] = {}
    for sections in chapters.table(name).recorded()["runs"].values():
        for section, values in sections.items():
            for key, value in values.items():
                if value is None or isinstance(value, (bool, int, float, str)):
                    where.setdefault(key, set()).add(section)
    repeated = {k: sorted(s) for k, s in where.items() if len(s) > 1}
    assert not repeated, f"{name}: values glued by several sections: {repeated}"


@pytest.mark.parametrize("name", chapters.names())
def test_no_recorded_section_is_older_than_its_code(name):
    problems = []
    for threads in (1, 2):
        stale = stale_sections(name, ROOT, threads)
        if not stale:
            continue
        sections = sorted({s.split("section ")[1] for s in stale})
        seeds = ",".join(sorted({s.split(",")[0].removeprefix("seed ") for s in stale}, key=int))
        problems.append(
            f"{len(stale)} section values recorded with {threads} thread(s) were computed by "
            f"other code than the chapter's now (a cell, a run size, the section's function "
            f"or a claim's condition changed): {stale[:6]}. Re-record them: "
            f"python -m booktools.robustness --threads {threads} --sections "
            + ",".join(f"{name}:{s}" for s in sections)
            + f" --seeds {seeds}"
        )
    assert not problems, f"{name}: " + "\n".join(problems)


def _planted(tmp_path, name, old, new):
    root = tmp_path / "book_copy"
    (root / "book").mkdir(parents=True)
    text = (ROOT / "book" / f"{name}.md").read_text(encoding="utf-8")
    assert old in text
    (root / "book" / f"{name}.md").write_text(text.replace(old, new), encoding="utf-8")
    return root


def test_a_changed_cell_makes_its_sections_stale_and_no_other(tmp_path):
    # the copying chapter's repeat tests: another seed in the cell that computes them
    root = _planted(tmp_path, "copying", "setup, seed=result.seed)", "setup, seed=result.seed + 1)")
    assert section_fingerprint("copying", "repeats", root) != section_fingerprint(
        "copying", "repeats", ROOT
    )
    stale = stale_sections("copying", root)
    assert stale and {s.split("section ")[1] for s in stale} == {"repeats"}


def test_a_changed_condition_makes_its_section_stale(monkeypatch):
    import dataclasses

    table = chapters.table("copying")
    claim = next(c for c in table.claims if c.section == "lookup")
    looser = dataclasses.replace(claim, condition=f"({claim.condition}) or True")
    claims = [looser if c is claim else c for c in table.claims]
    monkeypatch.setattr(table, "claims", claims)
    assert {s.split("section ")[1] for s in stale_sections("copying", ROOT)} == {"lookup"}
