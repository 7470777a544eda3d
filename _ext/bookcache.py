"""Sphinx extension: key the book's jupyter-cache on the library's source code.

myst-nb's ``cache`` mode reuses a chapter's executed outputs while the chapter's code cells
are unchanged.  A chapter's outputs also depend on ``src/``, so the cache lives in a folder
named after a hash of the library's sources: editing the library starts a fresh cache.
The notebook tests (``conftest.py``) store their executed chapters in the same folder, so a
CI run executes each chapter once (under pytest) and the book build reuses the results.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def source_hash(root: Path = ROOT) -> str:
    """Short hash of every file under ``src/`` (names and contents) plus the requirements."""
    h = hashlib.sha256()
    files = sorted(p for p in (root / "src").rglob("*") if p.is_file() and "__pycache__" not in
                   p.parts)
    for p in files + [root / "requirements.txt"]:
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def cache_path(root: Path = ROOT) -> Path:
    """Where executed chapters are cached for the current library sources."""
    return root / "_build" / ".jupyter_cache" / source_hash(root)


def _set_cache_path(app, config) -> None:
    config.nb_execution_cache_path = str(cache_path())


def setup(app):
    app.connect("config-inited", _set_cache_path, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
