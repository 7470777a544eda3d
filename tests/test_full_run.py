"""scripts/full_run.py on a tiny notebook on the CPU: FULL=1 reaches the kernel, every check
is reported (a failing one does not stop the rest, not even in its own cell), an error in a
cell is reported and the chapter goes on, and the table is written."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_full_run_reports_every_check(tmp_path):
    pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import os\nfrom seqtheory.utils import check\n"
                                  "full = os.environ.get('FULL')"),
        nbformat.v4.new_code_cell("check(full == '1', full)"),
        # two checks in one cell: the planted failure must not hide the check after it
        nbformat.v4.new_code_cell("check(1 + 1 == 3, 'planted failure')\n"
                                  "check(2 + 2 == 4, 'after the failure')"),
        nbformat.v4.new_code_cell("raise RuntimeError('planted error')"),
        nbformat.v4.new_code_cell("x = 2\ncheck(x == 2, 'last')"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "full_run.tsv"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "full_run.py"),
                           "--notebooks", str(path), "--out", str(out), "--timeout", "120"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr        # the planted failures
    header, row = out.read_text().splitlines()
    fields = dict(zip(header.split("\t"), row.split("\t"), strict=True))
    assert fields["chapter"] == "tiny"
    assert fields["torch"].split("+")[0].count(".") == 2, fields
    assert (fields["checks_passed"], fields["checks_failed"], fields["cell_errors"],
            fields["check_cells_not_reached"]) == ("3", "1", "1", "0"), fields
    assert "planted failure" in fields["failures"], fields
    assert "planted error" in fields["failures"], fields
    log = [json.loads(line) for line in
           (tmp_path / "full_run" / "tiny.checks.jsonl").read_text().splitlines()]
    assert [c["message"] for c in log] == ["1", "planted failure", "after the failure", "last"]
    assert log[1]["line"].startswith("check(1 + 1 == 3"), log
    assert (tmp_path / "full_run" / "tiny.ipynb").is_file()
