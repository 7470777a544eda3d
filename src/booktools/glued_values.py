"""Every number a chapter pastes into its text (``glue``), read from executed notebooks.

    python -m booktools.glued_values DIR               # DIR: _build/.nbval or _build/robustness
    python -m booktools.glued_values OLD_DIR NEW_DIR   # what changed between two runs

Reads the executed chapters that ``pytest`` stores (``_build/.nbval/CHAPTER.json``) or that
``booktools.robustness`` writes (``_build/robustness/CHAPTER-seedS.ipynb``), and prints one
line per glued name: ``chapter  name  value``.  With two folders it prints the names whose
values differ, are missing or are new, and the names the chapters' text pastes that the
new run does not glue; exit status 1 when a pasted value changed or is missing.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat

from booktools import ROOT

PREFIX = "application/papermill.record/"


def _notebooks(folder: Path) -> dict[str, nbformat.NotebookNode]:
    out = {}
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        out[Path(record["md"]).stem] = nbformat.reads(record["notebook"], as_version=4)
    for path in sorted(folder.glob("*.ipynb")):  # CHAPTER-seedS; seed 0 compares as CHAPTER
        out[path.stem.removesuffix("-seed0")] = nbformat.read(path, as_version=4)
    return out


def glued(nb) -> dict[str, str]:
    """``{name: text/plain}`` of every glue output of an executed notebook."""
    values = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is not None:
                data = out.get("data", {})
                values[name] = data.get(PREFIX + "text/plain", data.get("text/plain", ""))
    return values


def pasted(chapter: str) -> set[str]:
    """Names the chapter's text pastes with ``{glue:text}`` or ``{glue}``."""
    md = ROOT / "book" / f"{chapter}.md"
    if not md.exists():
        return set()
    roles = re.findall(r"\{glue(?::\w+)?\}`([^`]+)`", md.read_text(encoding="utf-8"))
    return {r.split("::")[-1].rsplit(":", 1)[0] if r.count(":") else r for r in roles}


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__)
        return 2
    runs = [_notebooks(Path(a)) for a in argv]
    if len(runs) == 1:
        for chapter, nb in runs[0].items():
            for name, value in glued(nb).items():
                print(f"{chapter}\t{name}\t{value}")
        return 0
    old, new = runs
    bad = 0
    for chapter in sorted(set(old) | set(new)):
        a = glued(old[chapter]) if chapter in old else {}
        b = glued(new[chapter]) if chapter in new else {}
        text = pasted(chapter)
        changed = [n for n in a if n in b and a[n] != b[n]]
        missing = [n for n in a if n not in b]
        unpasted = sorted(text - set(b)) if chapter in new else []
        same = sum(1 for n in a if n in b and a[n] == b[n])
        print(
            f"{chapter}: {same} glued values identical, {len(changed)} changed, "
            f"{len(missing)} no longer glued, {len(set(b) - set(a))} new"
        )
        for n in changed:
            flag = " (pasted in the text)" if n in text else ""
            print(f"  changed {n}: {a[n]} -> {b[n]}{flag}")
            bad += n in text
        for n in missing:
            flag = " (pasted in the text)" if n in text else ""
            print(f"  no longer glued {n}: {a[n]}{flag}")
            bad += n in text
        for n in unpasted:
            print(f"  pasted in the text but not glued: {n}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
