"""Recording the claims' values (booktools.robustness) and what computes a section
(booktools.sections): re-recording one section, and the fingerprints that find a stale one."""

from __future__ import annotations

import json

import pytest

from booktools import robustness
from booktools.sections import last_cell, section_cells, section_fingerprint


def _cells():
    return [
        "import numpy as np\nfrom seqtheory.chapters import demo as chapter",
        "runs = {}\nfor s in range(3):\n    runs[s] = np.ones(s + 1)",  # 1: fills runs
        "fig = plot(runs)",  # 2: reads runs, binds only the figure
        "extra = np.zeros(2)",  # 3: unrelated
        "runs[3] = extra",  # 4: changes runs in place, reads extra
        'verify(chapter.claims("first", runs))',  # 5
        "runs = {0: np.ones(1)}",  # 6: rebinds runs whole
        'verify(chapter.claims("second", runs))',  # 7
        "history = []\nhistory.append(1)",  # 8: append changes history
        'verify(chapter.claims("third", history, runs))',  # 9
    ]


def test_a_section_depends_on_the_cells_that_make_what_it_reads():
    cells = _cells()
    assert section_cells(cells, "first") == [0, 1, 3, 4, 5]  # not the figure
    assert section_cells(cells, "second") == [0, 6, 7]  # runs rebound whole in cell 6
    assert section_cells(cells, "third") == [0, 6, 8, 9]
    with pytest.raises(ValueError, match="section must be verified"):
        section_cells(cells, "fourth")


def test_a_run_that_records_some_sections_stops_after_their_last_cell():
    assert last_cell("copying", ["setup"]) < last_cell("copying", ["setup", "lookup"])
    with pytest.raises(ValueError, match="not: \\['nothing'\\]"):
        last_cell("copying", ["nothing"])


def test_sections_are_named_chapter_colon_section():
    def error(message):
        raise SystemExit(message)

    chapters = ["copying", "partitions"]
    got = robustness.parse_sections(
        "copying:lengths, copying:repeats,partitions:gd", chapters, error
    )
    assert got == {"copying": ["lengths", "repeats"], "partitions": ["gd"]}
    assert robustness.parse_sections("", chapters, error) == {}
    with pytest.raises(SystemExit, match="CHAPTER:SECTION"):
        robustness.parse_sections("copying", chapters, error)
    with pytest.raises(SystemExit, match="not 'nope'"):
        robustness.parse_sections("copying:nope", chapters, error)


def test_a_partial_record_replaces_its_sections_and_keeps_the_others(tmp_path):
    path = tmp_path / "copying.json"
    full = {0: {"setup": {"a": 1}, "lookup": {"b": 2}}, 1: {"setup": {"a": 3}, "lookup": {"b": 4}}}
    robustness._merge_record(path, "copying", full, threads=1)
    robustness._merge_record(path, "copying", {1: {"lookup": {"b": 5}}}, threads=1, partial=True)
    record = json.loads(path.read_text())
    assert record["runs"] == {
        "0": {"setup": {"a": 1}, "lookup": {"b": 2}},
        "1": {"setup": {"a": 3}, "lookup": {"b": 5}},
    }
    assert record["fingerprints"]["1"] == {
        "setup": section_fingerprint("copying", "setup"),
        "lookup": section_fingerprint("copying", "lookup"),
    }
    assert "partial" in record["run_info"]["1"] and "partial" not in record["run_info"]["0"]
    # a full record of a seed replaces all its sections
    robustness._merge_record(path, "copying", {1: {"setup": {"a": 6}}}, threads=1)
    assert json.loads(path.read_text())["runs"]["1"] == {"setup": {"a": 6}}
