"""How the book runs the library: a static progress line when the book is built, and smoke runs.

Two environment variables of the book's tooling, read once when ``seqtheory`` is imported
(:func:`configure`), set the engine's two code-set settings
(:mod:`seqtheory.core.settings`):

* ``SEQTHEORY_STATIC_PROGRESS=1`` (set by the build and the notebook tests): a page has no
  kernel to animate a widget, so every progress bar is a :class:`StaticBar`, which shows one
  line of text with its final state when it closes (e.g. ``training: 100%|...| 500/500``;
  a bar closed before its total says where: ``training: stopped at 1,150 of 15,000
  [..., stopped=stop_when]``);
* ``SEQTHEORY_SMOKE=N`` (``FULL=1 SEQTHEORY_SMOKE=3``: a chapter at paper sizes on the CPU,
  every training loop stopped after N steps): ``settings.max_steps = N``. It tests everything
  but the training's outcome; the chapters' claim checks are lenient there.
"""

from __future__ import annotations

import io
import os

from tqdm.std import tqdm as _tqdm_std

from ..core.settings import settings

__all__ = ["SMOKE_ENV", "STATIC_PROGRESS_ENV", "StaticBar", "configure", "smoke_steps"]

STATIC_PROGRESS_ENV = "SEQTHEORY_STATIC_PROGRESS"
SMOKE_ENV = "SEQTHEORY_SMOKE"


def static_progress() -> bool:
    """Whether progress bars are drawn for a static page (``SEQTHEORY_STATIC_PROGRESS=1``)."""
    return os.environ.get(STATIC_PROGRESS_ENV) == "1"


def smoke_steps() -> int | None:
    """The training-step cap of a smoke run, ``SEQTHEORY_SMOKE=N`` (None when unset or 0)."""
    value = os.environ.get(SMOKE_ENV, "").strip()
    if value in ("", "0"):
        return None
    if not value.isdigit():
        raise ValueError(
            f"{SMOKE_ENV} must be a number of training steps (or 0 for none), got {value!r}"
        )
    return int(value)


class StaticBar(_tqdm_std):
    """tqdm that draws nothing while it runs and shows its final state once, when closed."""

    def __init__(self, *args, **kwargs):
        kwargs["file"] = io.StringIO()
        kwargs.setdefault("ascii", False)  # block characters, as in Jupyter
        super().__init__(*args, **kwargs)

    def close(self):
        if not self.disable and self.leave:
            line = str(self)
            if self.total and self.n < self.total:  # a run that stopped early
                post = f" [{self.postfix}]" if self.postfix else ""
                desc = f"{self.desc}: " if self.desc else ""
                line = f"{desc}stopped at {self.n:,} of {self.total:,}{post}"
            try:
                from IPython import get_ipython
                from IPython.display import display
            except ImportError:
                get_ipython = None
            if get_ipython is not None and get_ipython() is not None:
                display({"text/plain": line}, raw=True)
            else:
                print(line)
        super().close()


def configure() -> None:
    """Set ``settings.progress_bar`` and ``settings.max_steps`` from the environment
    (``seqtheory`` calls it when imported; call it again after changing the variables)."""
    if static_progress():
        settings.progress_bar = StaticBar
    else:
        from tqdm.auto import tqdm

        settings.progress_bar = tqdm
    settings.max_steps = smoke_steps()
