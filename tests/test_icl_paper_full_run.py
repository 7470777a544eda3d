"""scripts/icl_paper_full_run.py: the values it reads from a FULL=1 check log, and the log
lines it needs."""

import importlib.util
import json
from pathlib import Path

import pytest

from seqtheory.book.archive import load_data

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "icl_paper_full_run", ROOT / "scripts" / "icl_paper_full_run.py"
)
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)

KNOCK = (
    "{'none': 0.91, 'layer 1: no previous-token weight': 1.24, 'layer 1: no weight on "
    "itself (control)': 0.91, 'layer 2: mean pattern': 1.03, 'layer 2: uni"
)
RECORDS = [
    {
        "held": False,
        "message": "(0.8, 24, np.float64(13.2))",
        "line": "check(early > 0.6 and 15 <= reach <= 80 and late < 1.5, (early, reach, late))",
    },
    {
        "held": True,
        "message": "(2700, 1350)",
        "line": "check(rise_prev is not None and rise_ind is not None, (rise_prev, rise_ind))",
    },
    {
        "held": False,
        "message": "(1350, 1100)",
        "line": "check(abs(rise_ind - switch) <= 200, (rise_ind, switch))",
    },
    {
        "held": True,
        "message": KNOCK,
        "line": 'check(knock["layer 1: no previous-token weight"] > ref["unigram"], knock)',
    },
    {
        "held": True,
        "message": "('bigram', 0.899, 0.009, 0.899)",
        "line": "check(abs(now - archived) < 4 * se + 0.005, (name, now, se, archived))",
    },
    {
        "held": True,
        "message": "('unigram', 1.0165, 0.008, 1.0165)",
        "line": "check(abs(now - archived) < 4 * se + 0.005, (name, now, se, archived))",
    },
]


def test_reads_the_values_from_a_jsonl_or_a_tabbed_log(tmp_path):
    jsonl = tmp_path / "induction_heads.checks.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in RECORDS))
    tabbed = tmp_path / "checks.tsv"
    tabbed.write_text(
        "\n".join(
            [f"copying\t{json.dumps(RECORDS[0])}"]
            + [f"induction_heads\t{json.dumps(r)}" for r in RECORDS]
        )
    )
    for log in (jsonl, tabbed):
        v = script.extract(script.read_log(log))
        assert (v["prev_late_ratio"], v["rise_ind"], v["rise_prev"], v["switch"]) == (
            13.2,
            1350,
            2700,
            1100,
        )
        assert v["knock"] == {
            "none": 0.91,
            "layer 1: no previous-token weight": 1.24,
            "layer 2: mean pattern": 1.03,
        }
        assert v["unigram"] == 1.0165


def test_a_log_without_a_needed_check_stops_with_its_name(tmp_path):
    log = tmp_path / "x.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in RECORDS[1:]))
    with pytest.raises(SystemExit, match="early > 0.6"):
        script.extract(script.read_log(log))


def test_the_shipped_archive_names_its_run():
    archived = load_data("icl_paper_full_run.json")
    meta = archived["meta"]
    assert meta["configuration"] == "PAPER" and meta["seeds"] == [0]
    assert "H200" in meta["device"] and meta["commit"] and meta["date"]
    assert set(archived["values"]["knock"]) == set(script.KNOCKS)
