"""Every chapter's claims against the values recorded under many base seeds.

The margins of the claims come from ``src/seqtheory/chapters/measured/CHAPTER.json``,
written by ``python -m booktools.robustness --record``: here each recorded run must satisfy
every claim of the default run size, each claim must have been measured under at least
``MIN_SEEDS`` base seeds, and each section of a table must be verified by its chapter.
"""

import re
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("name", chapters.names())
def test_recorded_values_satisfy_every_claim(name):
    table = chapters.table(name)
    runs = table.recorded()["runs"]
    assert len(runs) >= MIN_SEEDS, (
        f"{name}: {len(runs)} recorded base seeds, need {MIN_SEEDS} "
        "(python -m booktools.robustness --record --chapters {name} --seeds 0-9)"
    )
    problems = []
    for claim in table.claims:
        if not claim.applies("cpu"):
            continue
        for seed, sections in runs.items():
            values = sections.get(claim.section)
            if values is None:
                problems.append(f"{claim.id}: section not recorded under seed {seed}")
            elif not claim.holds(values):
                problems.append(
                    f"{claim.id} under seed {seed}: {claim.describe(values)} "
                    f"(needs {claim.condition})"
                )
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
