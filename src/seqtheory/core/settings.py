"""The engine's settings: the one place where ``seqtheory.core`` reads the environment.

Three settings come from environment variables, read each time they are used (so a test or
a notebook may change them with ``os.environ``):

========================  ===========================  ======================================
setting                   environment variable         meaning
========================  ===========================  ======================================
``settings.full``         ``FULL=1``                   paper-scale sizes (for a GPU)
``settings.seed``         ``SEQTHEORY_SEED=s``         the base seed (default 0)
``settings.threads``      ``SEQTHEORY_NUM_THREADS=n``  torch threads (default 1)
========================  ===========================  ======================================

Two are set by code, not by the environment; the book sets both from its own variables
(:mod:`seqtheory.book.session`):

* ``settings.max_steps``: a cap on the steps of every :func:`~seqtheory.core.training.train`
  loop (None: no cap);
* ``settings.progress_bar``: the class that draws progress (default ``tqdm.auto.tqdm``);
  any class with tqdm's ``update``, ``set_postfix`` and ``close`` will do.
"""

from __future__ import annotations

import os

from tqdm.auto import tqdm

__all__ = ["Settings", "settings"]

SEED_MAX = 2**63 - 1


def _env_int(name: str, default: int, allowed: str) -> int:
    """The int in environment variable ``name`` (``default`` if unset or empty)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name} must be {allowed}, got {text!r}") from None


class Settings:
    """What the engine reads from its surroundings (see the module's table)."""

    FULL_ENV = "FULL"
    SEED_ENV = "SEQTHEORY_SEED"
    THREADS_ENV = "SEQTHEORY_NUM_THREADS"

    def __init__(self) -> None:
        self.max_steps: int | None = None  # cap on every training loop's steps
        self.progress_bar = tqdm  # the progress display (tqdm's interface)

    @property
    def full(self) -> bool:
        """True when ``FULL=1`` (or true/yes/on) asks for the paper-scale sizes."""
        value = os.environ.get(self.FULL_ENV, "0").strip().lower()
        return value in ("1", "true", "yes", "on")

    @property
    def seed(self) -> int:
        """The base seed: ``SEQTHEORY_SEED``, default 0."""
        value = _env_int(self.SEED_ENV, 0, "a non-negative int")
        if not 0 <= value <= SEED_MAX:
            raise ValueError(f"{self.SEED_ENV} must be in 0..2**63-1, got {value}")
        return value

    @property
    def threads(self) -> int:
        """Torch intra-op threads: ``SEQTHEORY_NUM_THREADS``, default 1."""
        n = _env_int(self.THREADS_ENV, 1, "a positive int")
        if n < 1:
            raise ValueError(f"{self.THREADS_ENV} must be >= 1, got {n}")
        return n


settings = Settings()
