"""seqtheory.book.notebook.check: a failed claim check raises under the tests and the build, and
shows a note in a reader's notebook, where the chapter goes on."""

from __future__ import annotations

import os

import nbformat
import pytest

from seqtheory.book.notebook import STRICT_ENV, check


def test_strict_checks_raise_like_assert(monkeypatch):
    monkeypatch.setenv(STRICT_ENV, "1")
    assert check(2 > 1, "holds") is True
    with pytest.raises(AssertionError, match="median 0.93 above 0.9"):
        check(0.93 < 0.9, "median 0.93 above 0.9")
    with pytest.raises(AssertionError, match=r"\(0.93, 0.9\)"):
        check(0.93 < 0.9, (0.93, 0.9))


def test_the_tests_run_checks_strictly():
    assert os.environ.get(STRICT_ENV) == "1"  # set by conftest.py for nbval's kernels too


def test_a_reader_gets_a_warning_outside_a_notebook(monkeypatch):
    monkeypatch.delenv(STRICT_ENV, raising=False)
    with pytest.warns(UserWarning, match="did not hold on this run: median 0.93"):
        assert check(False, "median 0.93") is False
    with pytest.warns(UserWarning, match=r"on this run: \(0.93, 0.9\)"):
        check(0.93 < 0.9, (0.93, 0.9))


def test_a_reader_notebook_shows_a_note_and_goes_on(tmp_path):
    pytest.importorskip("nbclient")
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from seqtheory.book.notebook import check\n"
            "check(1 + 1 == 3, 'planted: 1 + 1 = 2, not 3')"
        ),
        nbformat.v4.new_code_cell("after = 'the chapter went on'\nprint(after)"),
    ]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    env = {k: v for k, v in os.environ.items() if k != STRICT_ENV}
    NotebookClient(nb, timeout=120, kernel_name="python3").execute(env=env)
    note = "".join(str(o.get("data", {}).get("text/markdown", "")) for o in nb.cells[0].outputs)
    assert "did not hold on this run: planted: 1 + 1 = 2, not 3" in note
    assert not any(o.output_type == "error" for c in nb.cells for o in c.outputs)
    assert "the chapter went on" in nb.cells[1].outputs[0]["text"]
    # the same notebook under the strict setting fails at the check
    from nbclient.exceptions import CellExecutionError

    with pytest.raises(CellExecutionError, match="planted"):
        NotebookClient(nb, timeout=120, kernel_name="python3").execute(env={**env, STRICT_ENV: "1"})
