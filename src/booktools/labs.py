"""The lecturer's side of the coding labs: reference solutions and their recorded answers.

A lab's reference solution and the typical mistakes its feedback must read as wrong live in
``scripts/lab_solutions/CHAPTER.py``, the answers recorded under several base seeds in
``scripts/lab_solutions/CHAPTER.labs.json`` (``python -m booktools.record_labs``). That folder
is not part of the installed library, so the package a student installs holds neither;
the tests, the recorder and the leak check read them from a clone of the repository.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from booktools import ROOT

SOLUTIONS = ROOT / "scripts" / "lab_solutions"


def solutions_path(chapter: str, root: Path = ROOT) -> Path:
    return root / "scripts" / "lab_solutions" / f"{chapter}.py"


def record_path(chapter: str, root: Path = ROOT) -> Path:
    return root / "scripts" / "lab_solutions" / f"{chapter}.labs.json"


def table_with_solutions(chapter: str):
    """``chapter``'s lab table (:func:`seqtheory.chapters.labs`) with its reference solutions
    and mistakes registered (their file run once per process)."""
    from seqtheory import chapters

    table = chapters.labs(chapter)
    path = solutions_path(chapter)
    if table.labs and not getattr(table, "_solutions_loaded", False):
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing: the reference solutions of {chapter}'s labs live in a clone "
                "of the book's repository, not in the installed library"
            )
        spec = importlib.util.spec_from_file_location(f"lab_solutions_{chapter}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        table._solutions_loaded = True
    return table


def recorded(chapter: str, root: Path = ROOT) -> dict:
    """``{label: {seed: answer}}`` as written by ``python -m booktools.record_labs``."""
    path = record_path(chapter, root)
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))["labs"]
