"""The key of the book's execution cache: a hash of the library's source code.

myst-nb's ``cache`` mode reuses a chapter's executed outputs while the chapter's code cells
are unchanged.  A chapter's outputs also depend on the library under ``src/``, so the cache
lives in a folder named after a hash of the library's sources: editing the library starts a
fresh cache.  The notebook tests (``conftest.py``) store their executed chapters in the same
folder (:func:`cache_path`), and the build reads it (:mod:`booktools.sphinx.bookcache`), so a
CI run executes each chapter once (under pytest) and the book build reuses the results.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from booktools import ROOT

TOOLING = "booktools"  # src/booktools: the book's tooling, which no chapter executes


def source_hash(root: Path = ROOT) -> str:
    """Short hash of every file under ``src/`` but the tooling (names and contents) plus the
    requirements."""
    h = hashlib.sha256()
    files = sorted(
        p
        for p in (root / "src").rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and p.relative_to(root / "src").parts[0] != TOOLING
    )
    for p in files + [root / "requirements.txt"]:
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def cache_path(root: Path = ROOT) -> Path:
    """Where executed chapters are cached for the current library sources."""
    return root / "_build" / ".jupyter_cache" / source_hash(root)
