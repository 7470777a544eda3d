"""One module per chapter of the book, named after its page (``book/NAME.md``).

A chapter module holds what the page runs beyond the library's shared experiments: its
analysis helpers, the functions that compute every number the text quotes, and its
:class:`~seqtheory.claims.ClaimTable` (``TABLE``; ``claims = TABLE.claims_for``).  The page
calls ``verify(chapter.claims("section", results...))`` after each key experiment.
"""
from __future__ import annotations

import importlib
import pkgutil

from ..claims import ClaimTable

__all__ = ["names", "table"]


def names() -> list[str]:
    """The chapter modules, alphabetically."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def table(chapter: str) -> ClaimTable:
    """The claims table of ``chapter`` (a page's file name, e.g. ``"induction_heads"``)."""
    known = names()
    if chapter not in known:
        raise ValueError(f"chapter must be one of {known}, got {chapter!r}")
    return importlib.import_module(f"{__name__}.{chapter}").TABLE
