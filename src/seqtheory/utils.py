"""Shared helpers: seeding, device choice, thread setup and the CPU / FULL run mode."""
from __future__ import annotations

import io
import os
import random
from dataclasses import dataclass, fields, replace
from typing import Any, Generic, TypeVar

import numpy as np
import torch
from tqdm.std import tqdm as _tqdm_std

__all__ = [
    "seed_everything",
    "get_device",
    "setup_threads",
    "run_mode",
    "is_full",
    "Sizes",
    "check_int",
    "check_float",
    "check_choice",
    "load_data",
    "progress_bar",
]

T = TypeVar("T")


# --------------------------------------------------------------------------- validation helpers
def check_int(name: str, value: Any, *, minimum: int | None = None) -> int:
    """Return ``value`` if it is an int (not bool) ``>= minimum``; else raise a clear error."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_float(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as float if it is a finite real number in the given interval."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {value}")
    return value


def check_choice(name: str, value: Any, choices: tuple) -> Any:
    """Return ``value`` if it is one of ``choices``; else raise ``ValueError`` listing them."""
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
    return value


# --------------------------------------------------------------------------- reproducibility
def seed_everything(seed: int = 0) -> int:
    """Seed Python's, NumPy's and torch's global generators; return the seed."""
    seed = check_int("seed", seed, minimum=0)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return seed


def get_device(prefer: str = "auto", verbose: bool = True) -> torch.device:
    """Pick ``cuda`` (or Apple ``mps``) when available, else the CPU, and say which."""
    check_choice("prefer", prefer, ("auto", "cpu", "cuda", "mps"))
    if prefer in ("auto", "cuda") and torch.cuda.is_available():
        device = torch.device("cuda")
        msg = f"Using GPU: {torch.cuda.get_device_name(0)}"
    elif prefer in ("auto", "mps") and getattr(torch.backends, "mps", None) is not None \
            and torch.backends.mps.is_available():
        device = torch.device("mps")
        msg = "Using Apple GPU (mps)"
    else:
        device = torch.device("cpu")
        msg = "Using the CPU"
        if prefer in ("cuda", "mps"):
            msg += f" ({prefer} was asked for but is not available)"
        else:
            msg += " (no GPU found; the default experiments are sized for a laptop CPU)"
    if verbose:
        print(msg)
    return device


def setup_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads for tiny models; return the number used.

    Tiny models are overhead-bound, so more threads rarely help and oversubscription
    (several processes x several threads) hurts.  ``n=None`` reads the environment
    variable ``SEQTHEORY_NUM_THREADS`` and otherwise uses ``min(2, cpu_count)``.
    """
    if n is None:
        env = os.environ.get("SEQTHEORY_NUM_THREADS")
        if env:
            try:
                n = int(env)
            except ValueError:
                raise ValueError(f"SEQTHEORY_NUM_THREADS must be an int, got {env!r}") from None
        else:
            n = min(2, os.cpu_count() or 1)
    n = check_int("n", n, minimum=1)
    torch.set_num_threads(n)
    return n


# --------------------------------------------------------------------------- progress bars
STATIC_PROGRESS_ENV = "SEQTHEORY_STATIC_PROGRESS"


def progress_bar(iterable=None, **kwargs):
    """A ``tqdm.auto`` progress bar: a live widget in Jupyter or Colab, text in a terminal.

    When the book is built (``SEQTHEORY_STATIC_PROGRESS=1``, set by the build and the
    notebook tests) a page has no kernel to animate a widget, so the bar instead shows one
    line of text with its final state when it closes (e.g. ``training: 100%|...| 500/500``).
    """
    if os.environ.get(STATIC_PROGRESS_ENV) == "1":
        return _StaticBar(iterable, **kwargs)
    from tqdm.auto import tqdm

    return tqdm(iterable, **kwargs)


class _StaticBar(_tqdm_std):
    """tqdm that draws nothing while it runs and shows its final state once, when closed."""

    def __init__(self, *args, **kwargs):
        kwargs["file"] = io.StringIO()
        kwargs.setdefault("ascii", False)                   # block characters, as in Jupyter
        super().__init__(*args, **kwargs)

    def close(self):
        if not self.disable and self.leave:
            line = str(self)
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


# --------------------------------------------------------------------------- run size
def run_mode() -> str:
    """``"full"`` when the environment has ``FULL=1`` (paper scale, for a GPU), else ``"cpu"``."""
    value = os.environ.get("FULL", "0").strip().lower()
    return "full" if value in ("1", "true", "yes", "on") else "cpu"


def is_full() -> bool:
    """True when ``FULL=1`` asks for the paper-scale configuration."""
    return run_mode() == "full"


@dataclass(frozen=True)
class Sizes(Generic[T]):
    """One experiment's two run sizes; ``.pick()`` returns the one for the current run mode.

    >>> cfg = Sizes(cpu=dict(steps=500), full=dict(steps=20_000)).pick()
    """

    cpu: T
    full: T

    def pick(self, mode: str | None = None) -> T:
        """Return the configuration for ``mode`` (default: :func:`run_mode`)."""
        mode = run_mode() if mode is None else check_choice("mode", mode, ("cpu", "full"))
        return self.full if mode == "full" else self.cpu


def dataclass_replace(obj: Any, **changes: Any) -> Any:
    """``dataclasses.replace`` that names the allowed fields when a key is wrong."""
    names = {f.name for f in fields(obj)}
    bad = sorted(set(changes) - names)
    if bad:
        raise ValueError(
            f"unknown field(s) {bad} for {type(obj).__name__}; allowed: {sorted(names)}")
    return replace(obj, **changes)


def load_data(name: str) -> Any:
    """Load a JSON data file shipped with the library (``seqtheory/data/NAME``).

    These files are written by the repository's ``scripts/``; each records the script and
    settings that produced it, so a reader can regenerate it.
    """
    import json
    from importlib import resources

    path = resources.files("seqtheory") / "data" / name
    if not path.is_file():
        available = sorted(p.name for p in (resources.files("seqtheory") / "data").iterdir()
                           if p.name.endswith(".json"))
        raise ValueError(f"no data file {name!r}; available: {available}")
    return json.loads(path.read_text(encoding="utf-8"))
