"""The experiment contract: what every ``run`` receives and what its result starts with.

Every experiment of the library is a function ``run(setup, ctx) -> result``:

* ``setup`` is a frozen dataclass of sizes (a chapter picks it with ``SETUP.pick()``);
* ``ctx`` is an :class:`Experiment`: the base seed, the device, whether to show progress,
  a timer, and the module's named random streams;
* the result is a dataclass that extends :class:`RunInfo` (``setup, seed, device, seconds``).

The decorator :func:`experiment` declares the setup's type and the module's
:class:`Streams` once, checks the setup, and keeps the friendly call::

    STREAMS = Streams(weights=0, heldout=1234, data=10_000)

    @experiment(MySetup, STREAMS)
    def run(setup: MySetup, ctx: Experiment) -> MyRun:
        with ctx.timer() as t:
            g = ctx.generator("data", 3)        # logical seed 10_003 under the base seed
            ...
        return MyRun(**ctx.header(setup, t.seconds), ...)

    run(setup, seed=1, device="cpu", progress=False)   # or run(setup, Experiment.make(seed=1))

A stream's logical seed is its offset plus an index; :func:`~seqtheory.core.seeds.derive_seed`
maps it under the base seed (base 0 keeps it as written), so a name and an index stand for
one fixed logical seed.
"""

from __future__ import annotations

import functools
import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from .runtime import check_device
from .seeds import experiment_seed, make_generator, make_rng, seeded
from .validate import check_int

__all__ = ["Experiment", "RunInfo", "Streams", "Timer", "experiment"]


class Streams:
    """The named random streams of one module: ``Streams(weights=0, data=10_000)``.

    Each name maps to a logical-seed offset; ``seed(name, index)`` is ``offset + index``.
    """

    def __init__(self, **offsets: int):
        for name, offset in offsets.items():
            check_int(f"Streams({name}=...)", offset, minimum=0)
        self._offsets = dict(offsets)

    def seed(self, name: str, index: int = 0) -> int:
        """The logical seed of draw ``index`` of stream ``name``."""
        if not isinstance(name, str) or name not in self._offsets:
            raise ValueError(f"stream must be one of {sorted(self._offsets)}, got {name!r}")
        return self._offsets[name] + check_int("index", index, minimum=0)

    @property
    def names(self) -> tuple:
        return tuple(self._offsets)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self._offsets.items())
        return f"Streams({inner})"


class Timer:
    """Wall-clock seconds of a ``with`` block (``time.perf_counter``); ``seconds`` is live
    inside the block and fixed after it."""

    def __enter__(self) -> Timer:
        self._start, self._end = time.perf_counter(), None
        return self

    def __exit__(self, *exc) -> bool:
        self._end = time.perf_counter()
        return False

    @property
    def seconds(self) -> float:
        end = time.perf_counter() if self._end is None else self._end
        return end - self._start


@dataclass(frozen=True)
class Experiment:
    """What one experiment run gets: build it with :meth:`make`."""

    seed: int  # the base seed (every stream derives from it)
    device: torch.device  # where the run computes
    progress: bool = True  # show progress bars
    streams: Streams = field(default_factory=Streams)  # the running module's streams

    @classmethod
    def make(
        cls,
        *,
        seed: int | None = None,
        device: str | torch.device | None = None,
        progress: bool = True,
        streams: Streams | None = None,
    ) -> Experiment:
        """``seed`` None: the book's base seed (``SEQTHEORY_SEED``); ``device`` None: the CPU."""
        if not isinstance(progress, bool):
            raise TypeError(f"progress must be True or False, got {type(progress).__name__}")
        if streams is not None and not isinstance(streams, Streams):
            raise TypeError(f"streams must be a Streams, got {type(streams).__name__}")
        return cls(
            experiment_seed(seed),
            check_device("device", device),
            progress,
            streams if streams is not None else Streams(),
        )

    def with_streams(self, streams: Streams) -> Experiment:
        """The same run with another module's streams."""
        return Experiment(self.seed, self.device, self.progress, streams)

    def logical(self, stream: str, index: int = 0) -> int:
        """The logical seed of draw ``index`` of ``stream`` (before the base seed)."""
        return self.streams.seed(stream, index)

    def generator(
        self, stream: str, index: int = 0, device: str | torch.device | None = None
    ) -> torch.Generator:
        """A torch generator for ``stream`` on ``device`` (default the run's device)."""
        return make_generator(
            self.logical(stream, index), self.device if device is None else device, base=self.seed
        )

    def rng(self, stream: str, index: int = 0) -> np.random.Generator:
        """A NumPy generator for ``stream``."""
        return make_rng(self.logical(stream, index), base=self.seed)

    def seeded(self, stream: str, index: int = 0) -> seeded:
        """Torch's global generators seeded for ``stream`` inside a ``with`` block."""
        return seeded(self.logical(stream, index), base=self.seed)

    @staticmethod
    def timer() -> Timer:
        return Timer()

    def header(self, setup: Any, seconds: float) -> dict:
        """The common result header as keyword arguments of a :class:`RunInfo`."""
        return {
            "setup": setup,
            "seed": self.seed,
            "device": str(self.device),
            "seconds": float(seconds),
        }


@dataclass
class RunInfo:
    """The header every experiment result starts with."""

    setup: Any  # what ran
    seed: int  # the base seed
    device: str  # where it ran
    seconds: float  # wall-clock time of the run's main computation


def experiment(setup_type: type | tuple, streams: Streams) -> Callable:
    """Decorate ``run(setup, ctx, **options)``: check ``setup`` against ``setup_type`` and
    accept either a context or the friendly keywords ``seed``, ``device``, ``progress``."""
    if not isinstance(streams, Streams):
        raise TypeError(f"streams must be a Streams, got {type(streams).__name__}")
    types = setup_type if isinstance(setup_type, tuple) else (setup_type,)
    names = " or ".join(("an " if t.__name__[0] in "AEIOU" else "a ") + t.__name__ for t in types)

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(
            setup,
            ctx: Experiment | None = None,
            *,
            seed: int | None = None,
            device: str | torch.device | None = None,
            progress: bool = True,
            **options,
        ):
            if not isinstance(setup, types):
                raise TypeError(f"setup must be {names}, got {type(setup).__name__}")
            if ctx is None:
                ctx = Experiment.make(seed=seed, device=device, progress=progress)
            elif not isinstance(ctx, Experiment):
                hint = " (give a seed as seed=...)" if isinstance(ctx, int) else ""
                raise TypeError(f"ctx must be an Experiment, got {type(ctx).__name__}{hint}")
            elif seed is not None or device is not None or progress is not True:
                raise TypeError(
                    "give seed, device and progress either in ctx or as keywords, not both"
                )
            return fn(setup, ctx.with_streams(streams), **options)

        run.streams = streams
        run.__signature__ = _friendly_signature(fn)
        return run

    return wrap


def _friendly_signature(fn: Callable) -> inspect.Signature:
    """``fn``'s signature as a decorated run is called: ``(setup, ctx=None, *, seed=None,
    device=None, progress=True, **options)`` (what ``help(run)`` shows)."""
    sig = inspect.signature(fn)
    setup, _, *options = sig.parameters.values()
    kw = inspect.Parameter.KEYWORD_ONLY
    return sig.replace(
        parameters=[
            setup,
            inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
            inspect.Parameter("seed", kw, default=None),
            inspect.Parameter("device", kw, default=None),
            inspect.Parameter("progress", kw, default=True),
            *options,
        ]
    )
