"""One module per chapter of the book, named after its page (``book/NAME.md``).

A chapter module holds what the page runs beyond the library's shared experiments: its
analysis helpers, the functions that compute every number the text quotes, and its
:class:`~seqtheory.book.claims.ClaimTable` (``TABLE``; ``claims = TABLE.claims_for``).  The page
calls ``verify(chapter.claims("section", results...))`` after each key experiment.

Every page begins with :func:`start`: ``setup, device = start(SETUP)``.
"""

from __future__ import annotations

import importlib
import pkgutil

import torch

from ..book.claims import ClaimTable
from ..book.exercises import Feedback, LabTable, chapter_of
from ..book.plotting import set_style
from ..core.runtime import Sizes, run_device, setup_threads
from ..core.seeds import seed_everything

__all__ = ["feedback", "labs", "names", "start", "table"]


def start(sizes: Sizes | None = None, *, verbose: bool = True):
    """The first lines of every chapter: seed Python's, NumPy's and torch's global
    generators with the base seed (``SEQTHEORY_SEED``, default 0), set torch's threads, pick
    the device (the CPU; under ``FULL=1`` a GPU where there is one) and the book's plotting
    style.  Returns ``(sizes.pick(), device)``, or the device alone without ``sizes``."""
    if sizes is not None and not isinstance(sizes, Sizes):
        raise TypeError(
            f"sizes must be a Sizes (a chapter's SETUP) or None, got {type(sizes).__name__}"
        )
    seed_everything(0)
    setup_threads()
    device: torch.device = run_device(verbose=verbose)
    set_style()
    return device if sizes is None else (sizes.pick(), device)


def names() -> list[str]:
    """The chapter modules, alphabetically."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def table(chapter: str) -> ClaimTable:
    """The claims table of ``chapter`` (a page's file name, e.g. ``"induction_heads"``)."""
    known = names()
    if chapter not in known:
        raise ValueError(f"chapter must be one of {known}, got {chapter!r}")
    return importlib.import_module(f"{__name__}.{chapter}").TABLE


def labs(chapter: str) -> LabTable:
    """The lab table (``LABS``) of ``chapter``; an empty one for a chapter without labs."""
    known = names()
    if chapter not in known:
        raise ValueError(f"chapter must be one of {known}, got {chapter!r}")
    module = importlib.import_module(f"{__name__}.{chapter}")
    return getattr(module, "LABS", LabTable(chapter, []))


def feedback(label: str, answer, *, solution: bool = False) -> Feedback:
    """What a student's answer to coding lab ``label`` shows, against the range a correct
    run lands in and why: "Your answer gives X = 0.41; a correct run lands between 0.2
    and 0.6, because ...".  ``answer`` left as ``...`` says that the lab is not answered
    yet.  ``solution=True`` (the chapter's own solution cell) also checks the range."""
    return labs(chapter_of(label)).feedback(label, answer, solution=solution)
