"""The claims machinery: a chapter's table of claims, verify(), the recorded values."""

import json

import numpy as np
import pytest

from seqtheory.book import claims as cl
from seqtheory.book.claims import Claim, ClaimTable, Measured, plain, summarise, verify


def _table():
    table = ClaimTable(
        "demo",
        [
            Claim("run.gap", "The gap is small.", "0 < gap < 0.05", "a gap of 0.1"),
            Claim(
                "run.every_seed",
                "Every seed learns.",
                "all(a > 0.9 for a in acc)",
                "one seed below 0.9",
            ),
            Claim(
                "run.full_only",
                "At paper scale it is faster.",
                "speedup > 2",
                "no speedup",
                scale="full",
            ),
        ],
    )

    @table.computes("run")
    def _run(gap, acc):
        return {
            "gap": gap,
            "acc": np.asarray(acc, dtype=np.float32),
            "label": "two seeds",
            "speedup": 1.0,
        }

    return table


def test_claim_refuses_bad_fields():
    with pytest.raises(ValueError, match="id must be 'section.name'"):
        Claim("gap", "s", "gap < 1", "f")
    with pytest.raises(ValueError, match="scale"):
        Claim("a.b", "s", "x < 1", "f", scale="gpu")
    with pytest.raises(ValueError, match="not a Python expression"):
        Claim("a.b", "s", "x <", "f")
    with pytest.raises(ValueError, match="fails_if"):
        Claim("a.b", "s", "x < 1", " ")
    with pytest.raises(ValueError, match="unique"):
        ClaimTable("demo", [Claim("a.b", "s", "x < 1", "f"), Claim("a.b", "t", "x < 2", "g")])


def test_names_skip_comprehension_variables_and_builtins():
    claim = Claim("a.b", "s", "all(v > lo for v in xs) and max(xs) < np.inf", "f")
    assert claim.names == ["xs", "lo"]


def test_holds_evaluates_on_plain_values_and_fails():
    table = _table()
    good = table.claims_for("run", 0.01, [0.95, 0.99])
    bad = table.claims_for("run", 0.01, [0.95, 0.5])
    assert isinstance(good["acc"], list) and all(isinstance(v, float) for v in good["acc"])
    claim = table.section("run")[1]
    assert claim.holds(good) and not claim.holds(bad)
    assert not table.section("run")[0].holds({"gap": 0.2})
    with pytest.raises(KeyError, match="lack"):
        claim.holds({"gap": 0.0})


def test_claims_for_names_the_sections():
    with pytest.raises(ValueError, match="section must be one of"):
        _table().claims_for("nope")


def test_plain_converts_and_refuses():
    import torch

    assert plain(
        {
            "a": np.float32(0.5),
            "b": (1, np.int64(2)),
            "c": torch.tensor([1.0]),
            "d": np.bool_(True),
            "e": None,
        }
    ) == {"a": 0.5, "b": [1, 2], "c": [1.0], "d": True, "e": None}
    with pytest.raises(TypeError, match="x must be"):
        plain(object(), "x")


def test_verify_checks_strictly_and_skips_other_sizes(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_STRICT_CHECKS", "1")
    monkeypatch.delenv("FULL", raising=False)
    table = _table()
    verify(table.claims_for("run", 0.01, [0.95, 0.99]))  # full_only (speedup 1) skipped
    with pytest.raises(AssertionError, match=r"demo: run.every_seed.*acc = \[0.95, 0.5\]"):
        verify(table.claims_for("run", 0.01, [0.95, 0.5]))
    monkeypatch.setenv("FULL", "1")
    with pytest.raises(AssertionError, match="run.full_only"):
        verify(table.claims_for("run", 0.01, [0.95, 0.99]))
    with pytest.raises(TypeError, match="measured"):
        verify({"gap": 0.01})


def test_verify_records_before_checking(monkeypatch, tmp_path):
    path = tmp_path / "values.jsonl"
    monkeypatch.setenv(cl.RECORD_ENV, str(path))
    monkeypatch.setenv("SEQTHEORY_STRICT_CHECKS", "1")
    monkeypatch.setenv("SEQTHEORY_SEED", "7")
    with pytest.raises(AssertionError):
        verify(_table().claims_for("run", 0.5, [0.95]))
    row = json.loads(path.read_text())
    assert row["chapter"] == "demo" and row["section"] == "run" and row["seed"] == 7
    assert row["values"]["gap"] == 0.5 and row["values"]["acc"] == [pytest.approx(0.95)]


def test_recorded_values_are_counted_per_claim(monkeypatch):
    table = _table()
    record = {
        "runs": {
            "0": {"run": dict(table.claims_for("run", 0.01, [0.99]))},
            "1": {"run": dict(table.claims_for("run", 0.07, [0.99]))},
        }
    }
    gap, every = table.section("run")[:2]
    assert table.held(gap, record) == (1, 2)
    assert table.held(every, record) == (2, 2)
    assert table.spread(gap, record) == {"gap": "0.04 [0.01, 0.07]"}


def test_summarise():
    assert summarise([0.1, 0.3, 0.2]) == "0.2 [0.1, 0.3]"
    assert summarise([[1.0, 2.0], [3.0]]) == "2 [1, 3]"
    assert summarise([[[1.0, 2.0], [3.0]], [4.0]]) == "2.5 [1, 4]"
    assert summarise([True, False, True]) == "true in 2/3"
    assert summarise(["a", "b", "a"]) == "'a' / 'b'"
    assert summarise([]) == "not recorded"
    assert summarise([[], []]) == "empty in 2/2"


def test_measured_keeps_its_table_and_summarises_the_outcome(monkeypatch):
    monkeypatch.setenv("SEQTHEORY_STRICT_CHECKS", "0")
    monkeypatch.delenv("FULL", raising=False)
    table = _table()
    m = table.claims_for("run", 0.01, [0.99])
    assert isinstance(m, Measured) and m.table is table and m.section == "run"
    assert m.summary() == "demo, section 'run': 4 values, claims not checked"
    with pytest.warns(UserWarning, match="run.gap"):
        verify(table.claims_for("run", 0.5, [0.99]))
    assert verify(m).summary() == "demo, section 'run': 2 of 2 claims hold on this run"


def test_over_seeds_reads_the_record(monkeypatch):
    table = _table()
    record = {
        "runs": {
            "0": {"run": {"gap": 0.01}},
            "1": {"run": {"gap": 0.03}},
            "2": {"run": {"gap": 0.02}},
        }
    }
    monkeypatch.setattr(table, "recorded", lambda: record)
    assert table.over_seeds("run", "gap") == [0.01, 0.03, 0.02]
    assert table.seeds_text() == "0\u20132"
    with pytest.raises(KeyError, match="no recorded values"):
        table.over_seeds("run", "nope")
    record["runs"] = {"0": {}, "4": {}}
    assert table.seeds_text() == "0, 4"
    record["runs"] = {str(s): {} for s in (*range(10), 11, 42, 43)}
    assert table.seeds_text() == "0\u20139, 11, 42, 43"


def test_a_smoke_run_skips_a_section_it_cannot_compute(monkeypatch, capsys):
    monkeypatch.setenv("SEQTHEORY_STRICT_CHECKS", "1")
    table = _table()

    @table.computes("empty")
    def _empty(curve):
        return {"first": curve[0]}  # IndexError on the empty curve of a two-step run

    with pytest.raises(IndexError):  # a real run: the error is the chapter's
        table.claims_for("empty", [])
    monkeypatch.setenv("SEQTHEORY_SMOKE", "2")
    measured = verify(table.claims_for("empty", []))
    assert dict(measured) == {} and "IndexError" in measured.skipped
    assert "not computed in this smoke run" in capsys.readouterr().out
    # a missing file or key is not a short run's statistic: raised as in a full run

    @table.computes("archive")
    def _archive(data):
        return {"x": data["missing"]}

    with pytest.raises(KeyError):
        table.claims_for("archive", {})
    # a section it can compute is still checked (strictly here)
    with pytest.raises(AssertionError, match="run.every_seed"):
        verify(table.claims_for("run", 0.01, [0.95, 0.5]))
