"""Seeds: the book's base seed, logical seeds under it, and generators from them."""

from __future__ import annotations

import random

import numpy as np
import torch

from .settings import SEED_MAX, settings
from .validate import check_int

__all__ = [
    "SEED_ENV",
    "base_seed",
    "derive_seed",
    "experiment_seed",
    "check_generator_device",
    "make_generator",
    "make_rng",
    "seeded",
    "seed_everything",
]


SEED_ENV = settings.SEED_ENV
_SEED_MAX = SEED_MAX


def base_seed() -> int:
    """The book's base seed: ``SEQTHEORY_SEED`` from the environment, default 0.

    Every seed that the library or a chapter turns into random state goes through
    :func:`derive_seed`, so one number re-draws a whole chapter: with another base seed a
    chapter must tell the same story (the book's claim checks run under several).
    """
    return settings.seed


def derive_seed(seed: int = 0, base: int | None = None) -> int:
    """The seed actually used for the logical seed ``seed`` under the base seed.

    Base seed 0 keeps every seed as written (``derive_seed(k) == k``); any other base maps
    the pair (base, k) through NumPy's ``SeedSequence`` to an unrelated 63-bit seed, so
    seeds 0, 1, 2, ... of one base never meet those of another.  ``base`` defaults to
    :func:`base_seed` (``SEQTHEORY_SEED``); an experiment's ``seed`` argument passes it
    explicitly, so that the argument fixes the bits whatever the environment says.
    """
    seed = _checked_seed(seed)
    base = base_seed() if base is None else check_int("base", base, minimum=0)
    if base == 0:
        return seed
    words = np.random.SeedSequence([seed, base]).generate_state(2, dtype=np.uint32)
    return int((int(words[0]) << 31) ^ int(words[1])) & _SEED_MAX


def experiment_seed(seed: int | None) -> int:
    """The base seed of one experiment run: ``seed``, or the book's base seed
    (:func:`base_seed`, ``SEQTHEORY_SEED``) when it is None.

    The library's one seed convention: an experiment function (``run(setup, seed=...)``)
    takes a *base* seed; each random stream inside it (weights of model ``s``, a data
    stream, a held-out set) has a fixed small *logical* seed ``k`` and draws from
    ``make_generator(k, device, base=seed)`` / ``make_rng(k, base=seed)`` /
    ``seeded(k, base=seed)``, i.e. from :func:`derive_seed` ``(k, seed)``.  Base 0 keeps
    every logical seed as written; every other base re-draws every stream, so a chapter run
    under another base seed is a genuinely new run of the same experiment.
    """
    return base_seed() if seed is None else _checked_seed(seed)


def _checked_seed(seed) -> int:
    """``seed`` as a seed torch and NumPy accept: an int in 0..2**63-1 (else an error)."""
    seed = check_int("seed", seed, minimum=0)
    if seed > _SEED_MAX:
        raise ValueError(f"seed must be in 0..2**63-1, got {seed}")
    return seed


def check_generator_device(generator, device) -> None:
    """A clear error where torch would raise a deep one: a ``generator`` must live on the
    device of the tensors it draws (a CUDA batch needs ``make_generator(seed, "cuda")``)."""
    if generator is not None and generator.device.type != torch.device(device).type:
        raise ValueError(
            f"generator is on {generator.device} but the draws are on {device}: "
            "draw on the generator's device, or use a generator on the same "
            "device (seqtheory.make_generator(seed, device))"
        )


def make_generator(
    seed: int = 0, device: str | torch.device = "cpu", *, base: int | None = None
) -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded with :func:`derive_seed` ``(seed, base)``."""
    return torch.Generator(device=device).manual_seed(derive_seed(seed, base))


def make_rng(seed: int = 0, *, base: int | None = None) -> np.random.Generator:
    """A NumPy ``Generator`` seeded with :func:`derive_seed` ``(seed, base)``."""
    return np.random.default_rng(derive_seed(seed, base))


class seeded:
    """Context manager: run a block under torch's global RNG seeded with
    ``derive_seed(seed, base)``, then restore the previous global state (so building a model
    is reproducible without disturbing anything else).

    >>> with seeded(3):
    ...     model = Transformer(cfg)        # the same weights every time the cell runs
    """

    def __init__(self, seed: int = 0, *, base: int | None = None):
        self.seed = derive_seed(seed, base)

    def __enter__(self):
        self._state = torch.random.get_rng_state()
        if torch.cuda.is_available() and not torch.cuda.is_initialized():
            # otherwise manual_seed() queues a reseed of every CUDA generator that would
            # happen, unrestored, when CUDA starts later (e.g. at model.to("cuda"))
            torch.cuda.init()
        self._cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
        if self._cuda:
            self._cuda_state = torch.cuda.get_rng_state_all()
        torch.manual_seed(self.seed)
        return self

    def __exit__(self, *exc):
        torch.random.set_rng_state(self._state)
        if self._cuda:
            torch.cuda.set_rng_state_all(self._cuda_state)
        return False


def seed_everything(seed: int = 0) -> int:
    """Seed Python's, NumPy's and torch's global generators with ``derive_seed(seed)``.

    Returns the seed used (``seed`` itself under the default base seed 0).
    """
    seed = derive_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return seed
