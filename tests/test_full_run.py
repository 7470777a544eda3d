"""scripts/full_run.py on a tiny notebook on the CPU: FULL=1 reaches the kernel, every check
is reported (a failing one does not stop the rest), and the table is written."""
from __future__ import annotations

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
        nbformat.v4.new_code_cell("import os\nfull = os.environ.get('FULL')"),
        nbformat.v4.new_code_cell("assert full == '1', full"),
        nbformat.v4.new_code_cell("assert 1 + 1 == 3, 'planted failure'"),
        nbformat.v4.new_code_cell("x = 2\nassert x == 2"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "full_run.tsv"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "full_run.py"),
                           "--notebooks", str(path), "--out", str(out), "--timeout", "120"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr        # one planted failure
    header, row = out.read_text().splitlines()
    fields = dict(zip(header.split("\t"), row.split("\t"), strict=True))
    assert fields["chapter"] == "tiny"
    assert (fields["checks_passed"], fields["checks_failed"]) == ("2", "1"), fields
    assert "planted failure" in fields["failures"], fields
    assert (tmp_path / "full_run" / "tiny.ipynb").is_file()
