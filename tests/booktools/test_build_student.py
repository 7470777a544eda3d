"""The student edition: no cell of it reads a name that only a solution cell defines."""

from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import pytest

from booktools.build_student import _top_level_names, chapter_solution_leaks, solution_only_uses
from booktools.toc import chapter_sources

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = chapter_sources(ROOT)


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_student_cells_need_no_solution_cell(md):
    assert chapter_solution_leaks(md) == []


def test_a_name_only_a_solution_defines_is_found():
    cells = [
        ("import numpy as np\nx = np.arange(3)", False),
        ("answer = x.sum()\ndef helper(v):\n    return v + 1", True),  # the solution
        ("print(answer, helper(x), np.pi)", False),
    ]
    assert solution_only_uses(cells) == [
        "code cell 3 reads 'answer', which only a solution cell defines",
        "code cell 3 reads 'helper', which only a solution cell defines",
    ]


def test_a_function_of_a_student_cell_reading_a_solution_name_is_found():
    cells = [
        ("result = 1", True),  # only the solution computes result
        ("def f(result):\n    return result + 1\nprint(f(result))", False),
        ("def g():\n    return answer\ng()", False),
        ("answer = 2", True),
    ]
    assert solution_only_uses(cells) == [
        "code cell 2 reads 'result', which only a solution cell defines"
    ]
    cells.insert(2, ("answer = 0", True))
    assert solution_only_uses(cells)[-1] == (
        "code cell 4 reads 'answer', which only a solution cell defines"
    )


def test_names_the_student_edition_binds_itself_are_not_leaks():
    cells = [
        ("answer = ...  # the starter: the student fills it in", False),
        ("answer = 41 + 1", True),
        ("def show(answer):\n    return [k for k in answer]\nprint(answer, show([1]))", False),
        ("total = 0\nfor k in range(3):\n    total += k", True),
        ("k = 1\nprint(k)", False),  # binds k itself
        ("%matplotlib inline\nprint(answer)", False),  # a magic is not Python: skipped
    ]
    assert solution_only_uses(cells) == []


def test_a_planted_read_in_a_real_chapter_is_found(tmp_path):
    """A cell added after a chapter's last solution cell that reads a name only solution
    cells define."""
    md = ROOT / "book" / "hidden_progress.md"
    nb = jupytext.read(md)
    code = [c for c in nb.cells if c.cell_type == "code"]
    is_solution = ["solution" in c.metadata.get("tags", []) for c in code]
    defined = {False: set(), True: set()}
    for cell, sol in zip(code, is_solution, strict=True):
        try:
            defined[sol] |= _top_level_names(ast.parse(cell.source))
        except SyntaxError:
            pass
    name = sorted(defined[True] - defined[False] - {"_"})[0]
    last = max(i for i, c in enumerate(nb.cells) if c in code and is_solution[code.index(c)])
    new = jupytext.reads(f"```{{code-cell}} ipython3\nprint({name})\n```", "md:myst").cells[0]
    nb.cells.insert(last + 1, new)
    planted = tmp_path / "hidden_progress.md"
    jupytext.write(nb, planted, fmt="md:myst")
    n = sum(c.cell_type == "code" for c in nb.cells[: last + 2])
    assert chapter_solution_leaks(planted) == [
        f"hidden_progress: code cell {n} reads {name!r}, which only a solution cell defines"
    ]
