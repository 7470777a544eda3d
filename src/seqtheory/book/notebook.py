"""Numbers in the text and claim checks: glue, spread over seeds, check."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

__all__ = [
    "GLUE_PREFIX",
    "glue",
    "spread",
    "STRICT_ENV",
    "strict_checks",
    "CHECK_LOG_ENV",
    "check",
]


GLUE_PREFIX = "application/papermill.record/"


def glue(name: str, value: Any, display: bool = False) -> Any:
    """Make ``value`` available to the chapter's text as ``{glue:text}`name```; return it.

    The same as ``myst_nb.glue`` (which the book build reads), without needing myst-nb
    where a notebook runs (Colab): numbers quoted in the prose come from the run, so
    text and output cannot drift apart.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    try:
        from IPython import get_ipython
        from IPython.core.formatters import format_display_data
        from IPython.display import display as ipy_display
    except ImportError:
        return value
    if get_ipython() is None:
        return value
    bundle, metadata = format_display_data(value)
    prefix = "" if display else GLUE_PREFIX
    metadata["scrapbook"] = dict(name=name, mime_prefix=prefix)
    ipy_display({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)
    return value


def spread(values, digits: int = 2) -> str:
    """``"median [min, max]"`` of values over seeds, e.g. ``"0.97 [0.94, 1.00]"``."""
    v = np.asarray(values, dtype=float).reshape(-1)
    if v.size == 0:
        raise ValueError("values must not be empty")
    return f"{np.median(v):.{digits}f} [{v.min():.{digits}f}, {v.max():.{digits}f}]"


STRICT_ENV = "SEQTHEORY_STRICT_CHECKS"


def strict_checks() -> bool:
    """True when a failed claim check must raise: ``SEQTHEORY_STRICT_CHECKS=1``, which the
    tests, the book build and the repository's scripts set (a reader's notebook does not)."""
    return os.environ.get(STRICT_ENV, "0").strip().lower() in ("1", "true", "yes", "on")


CHECK_LOG_ENV = "SEQTHEORY_CHECK_LOG"


def _log_check(held: bool, message: str) -> None:
    """Append one check's outcome to the file named by ``SEQTHEORY_CHECK_LOG`` (JSON lines:
    held, message, the calling source line) -- how ``python -m booktools.full_run`` reports every
    check of a chapter, not only the first failure of a cell."""
    path = os.environ.get(CHECK_LOG_ENV, "").strip()
    if not path:
        return
    import inspect
    import json

    frame = inspect.stack()[2]  # the caller of check()
    line = (frame.code_context or [""])[0].strip()
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"held": held, "message": message[:300], "line": line[:200]}) + "\n")


def check(condition: Any, message: Any = "") -> bool:
    """A chapter's claim check: ``check(median < 0.9, f"median {median:.3f}")``.

    Under the tests and the book build (``SEQTHEORY_STRICT_CHECKS=1``) a failed check raises
    ``AssertionError(message)`` exactly as ``assert`` does.  In a reader's notebook (Colab,
    Jupyter) it shows a short note instead -- the claim, the numbers this run got, and that
    other hardware, torch builds, thread counts or seeds can move single runs -- and the
    chapter goes on.  With ``SEQTHEORY_CHECK_LOG=path`` every outcome is also appended to
    that file (see ``python -m booktools.full_run``).  Returns whether the check held.
    """
    held = bool(condition)
    if not isinstance(message, str):
        message = repr(message)
    _log_check(held, message)
    if held:
        return True
    if strict_checks():
        raise AssertionError(message)
    note = (
        "A claim check of this chapter did not hold on this run"
        + (f": {message}" if message else ".")
        + " Single runs can move with the hardware, the torch build, the number of threads "
        "and the seed; the book's text was checked on its own build. The chapter goes on."
    )
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:  # plain Python: a warning
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(Markdown(f"> **Note.** {note}"))
    else:
        import warnings

        warnings.warn(note, stacklevel=2)
    return False
