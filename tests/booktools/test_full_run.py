"""booktools.full_run on a tiny notebook on the CPU: FULL=1 reaches the kernel, every check
is reported (a failing one does not stop the rest, not even in its own cell), an error in a
cell is reported and the chapter goes on, and the table is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from booktools import full_run as fr


def test_full_run_reports_every_check(tmp_path):
    pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import os\nfrom seqtheory.book.notebook import check\nfull = os.environ.get('FULL')"
        ),
        nbformat.v4.new_code_cell("check(full == '1', full)"),
        # two checks in one cell: the planted failure must not hide the check after it
        nbformat.v4.new_code_cell(
            "check(1 + 1 == 3, 'planted failure')\ncheck(2 + 2 == 4, 'after the failure')"
        ),
        nbformat.v4.new_code_cell("raise RuntimeError('planted error')"),
        nbformat.v4.new_code_cell("x = 2\ncheck(x == 2, 'last')"),
    ]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "full_run.tsv"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "booktools.full_run",
            "--notebooks",
            str(path),
            "--out",
            str(out),
            "--timeout",
            "120",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the planted failures
    header, row = out.read_text().splitlines()
    fields = dict(zip(header.split("\t"), row.split("\t"), strict=True))
    assert fields["chapter"] == "tiny"
    assert fields["torch"].split("+")[0].count(".") == 2, fields
    assert (
        fields["checks_passed"],
        fields["checks_failed"],
        fields["cell_errors"],
        fields["check_cells_not_reached"],
    ) == ("3", "1", "1", "0"), fields
    assert "planted failure" in fields["failures"], fields
    assert "planted error" in fields["failures"], fields
    log = [
        json.loads(line)
        for line in (tmp_path / "full_run" / "tiny.checks.jsonl").read_text().splitlines()
    ]
    assert [c["message"] for c in log] == ["1", "planted failure", "after the failure", "last"]
    assert log[1]["line"].startswith("check(1 + 1 == 3"), log
    assert (tmp_path / "full_run" / "tiny.ipynb").is_file()


def _notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)
    return path


def test_chapters_run_at_once_in_a_smoke_run_with_their_peaks_and_a_timeout(tmp_path):
    pytest.importorskip("nbclient")
    quick = _notebook(
        tmp_path / "quick.ipynb",
        "import os\nfrom seqtheory.book.notebook import check\n"
        "from seqtheory.book.session import smoke_steps",
        "check(smoke_steps() == 2, os.environ.get('SEQTHEORY_SMOKE'))",
        "big = bytearray(300 * 2**20)",
    )  # 300 MiB resident
    slow = _notebook(tmp_path / "slow.ipynb", "import time\ntime.sleep(60)", "x = 1")
    out = tmp_path / "full_run.tsv"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "booktools.full_run",
            "--notebooks",
            str(quick),
            str(slow),
            "--out",
            str(out),
            "--timeout",
            "8",
            "--jobs",
            "2",
            "--smoke",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the timed-out cell
    header, *rows = out.read_text().splitlines()
    table = {
        r.split("\t")[0]: dict(zip(header.split("\t"), r.split("\t"), strict=True)) for r in rows
    }
    assert table["quick"]["checks_passed"] == "1", table  # SEQTHEORY_SMOKE reached it
    assert int(table["quick"]["peak_rss_mib"]) >= 300, table
    assert table["quick"]["peak_gpu_mib"] == "0", table  # no GPU here
    assert "Timeout" in table["slow"]["failures"], table
    assert table["slow"]["peak_rss_mib"], table  # measured after the timed-out cell stopped
    assert table["slow"]["started_s"] == table["quick"]["started_s"] == "0", table  # at once
    # a smoke run's checks are not expected to hold: only errors fail it
    failing = _notebook(
        tmp_path / "failing.ipynb",
        "from seqtheory.book.notebook import check\ncheck(1 > 2, 'not after 2 steps')",
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "booktools.full_run",
            "--notebooks",
            str(failing),
            "--out",
            str(out),
            "--smoke",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "\t1\t0\t0\t" in out.read_text()  # 1 failed check, no error, all reached


def test_the_schedule_starts_the_longest_first_and_keeps_the_peaks_within_the_card(tmp_path):
    est = {"a": (100.0, 50_000.0), "b": (400.0, 30_000.0), "c": (200.0, 40_000.0)}
    order, admit = fr.schedule(["a", "b", "c", "d"], est, jobs=3, budget_mib=81_920)
    assert order == ["b", "d", "c", "a"]  # d: the default 300 s
    assert admit([], "a")  # alone, whatever its estimate
    assert admit(["b"], "c")  # 30 + 40 GB <= 80 GiB
    assert not admit(["b", "c"], "a")  # 120 GB > 80 GiB
    assert not admit(["b", "d", "c"], "x")  # three jobs already
    order, admit = fr.schedule(["a", "b"], est, jobs=2, budget_mib=None)
    assert admit(["a"], "b")  # no GPU: jobs alone decide
    table = tmp_path / "est.tsv"
    table.write_text("chapter\tseconds\tpeak_gpu_mib\na\t12.5\t\nb\tnan\t300\n")
    assert fr.read_estimates(table) == {
        "a": (12.5, fr.DEFAULT_MIB),
        "b": (fr.DEFAULT_SECONDS, 300.0),
    }


def test_a_deadline_ends_the_run_in_time_and_keeps_the_table(tmp_path):
    pytest.importorskip("nbclient")
    slow = _notebook(tmp_path / "slow.ipynb", "import time\ntime.sleep(120)", "x = 1")
    later = _notebook(tmp_path / "later.ipynb", "x = 1")
    out = tmp_path / "full_run.tsv"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "booktools.full_run",
            "--notebooks",
            str(slow),
            str(later),
            "--out",
            str(out),
            "--deadline",
            "12",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    header, *rows = out.read_text().splitlines()
    table = {
        r.split("\t")[0]: dict(zip(header.split("\t"), r.split("\t"), strict=True)) for r in rows
    }
    assert float(table["slow"]["seconds"]) < 30, table  # not the 120 s sleep
    assert "Timeout" in table["slow"]["failures"], table
    assert "deadline came first" in table["later"]["failures"], table  # one job: never began
