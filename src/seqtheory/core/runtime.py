"""Where and how a run computes: devices, threads, the CPU / FULL run mode and its sizes,
progress bars, evaluation mode, shipped data."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import torch
from tqdm.std import tqdm as _tqdm_std

from .validate import check_choice, check_int, env_int

__all__ = [
    "check_device",
    "get_device",
    "THREADS_ENV",
    "default_threads",
    "setup_threads",
    "STATIC_PROGRESS_ENV",
    "progress_bar",
    "run_mode",
    "is_full",
    "smoke_steps",
    "run_device",
    "Sizes",
    "evaluating",
    "to_numpy",
    "cpu_name",
    "load_data",
]


T = TypeVar("T")


def check_device(name: str, value) -> torch.device:
    """``value`` (``None``: the CPU, a string such as ``"cuda"``, or a ``torch.device``) as a
    ``torch.device`` that this machine has; a ``ValueError``/``TypeError`` naming ``name``
    otherwise."""
    if value is None:
        return torch.device("cpu")
    if not isinstance(value, (str, torch.device)):
        raise TypeError(
            f"{name} must be None, a string such as 'cuda' or a torch.device, "
            f"got {type(value).__name__}"
        )
    try:
        device = torch.device(value)
    except RuntimeError as err:
        raise ValueError(
            f"{name} must name a torch device ('cpu', 'cuda', 'cuda:0', 'mps'), got {value!r}"
        ) from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name}={value!r}: this machine has no CUDA GPU (use 'cpu')")
    if device.type == "mps" and not (
        getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    ):
        raise ValueError(f"{name}={value!r}: this machine has no Apple GPU (use 'cpu')")
    return device


def get_device(prefer: str = "auto", verbose: bool = True) -> torch.device:
    """Pick ``cuda`` (or Apple ``mps``) when available, else the CPU, and say which."""
    check_choice("prefer", prefer, ("auto", "cpu", "cuda", "mps"))
    if prefer in ("auto", "cuda") and torch.cuda.is_available():
        device = torch.device("cuda")
        msg = f"Using GPU: {torch.cuda.get_device_name(0)}"
    elif (
        prefer in ("auto", "mps")
        and getattr(torch.backends, "mps", None) is not None
        and torch.backends.mps.is_available()
    ):
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


THREADS_ENV = "SEQTHEORY_NUM_THREADS"


def default_threads() -> int:
    """Torch intra-op threads the book uses: ``SEQTHEORY_NUM_THREADS``, else 1.

    The book's models are tiny and overhead-bound. Measured on a 2-core CPU (300 ICL-MC
    steps, ``benchmarks/bench_threads.py``): idle, two threads are about 1.4x faster; next
    to one busy program they are about 2.4x slower than one thread, and about 4x slower
    next to another torch job. So the default is one thread; set the variable to use more.
    """
    n = env_int(THREADS_ENV, 1, "a positive int")
    if n < 1:
        raise ValueError(f"{THREADS_ENV} must be >= 1, got {n}")
    return n


def setup_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads; return the number used.

    ``n=None`` uses :func:`default_threads` (``SEQTHEORY_NUM_THREADS``, else one thread:
    tiny models gain nothing from more threads on a small machine and lose a lot as
    soon as another program competes for the cores). 1 and 2 threads take different
    floating-point paths, so their results differ in the last bits; the book's claim
    checks are statements over seeds with margins that absorb this.
    """
    n = default_threads() if n is None else check_int("n", n, minimum=1)
    torch.set_num_threads(n)
    return n


STATIC_PROGRESS_ENV = "SEQTHEORY_STATIC_PROGRESS"


def progress_bar(iterable=None, **kwargs):
    """A ``tqdm.auto`` progress bar: a live widget in Jupyter or Colab, text in a terminal.

    When the book is built (``SEQTHEORY_STATIC_PROGRESS=1``, set by the build and the
    notebook tests) a page has no kernel to animate a widget, so the bar instead shows one
    line of text with its final state when it closes (e.g. ``training: 100%|...| 500/500``;
    a bar closed before its total says so: ``training: stopped at 1,150 of 15,000: ...``,
    with the step in the bar's ``stopped_at`` attribute and the reason in its ``stop_note``
    when the caller sets them).
    """
    if os.environ.get(STATIC_PROGRESS_ENV) == "1":
        return _StaticBar(iterable, **kwargs)
    from tqdm.auto import tqdm

    return tqdm(iterable, **kwargs)


class _StaticBar(_tqdm_std):
    """tqdm that draws nothing while it runs and shows its final state once, when closed."""

    def __init__(self, *args, **kwargs):
        kwargs["file"] = io.StringIO()
        kwargs.setdefault("ascii", False)  # block characters, as in Jupyter
        super().__init__(*args, **kwargs)

    def close(self):
        if not self.disable and self.leave:
            line = str(self)
            done = getattr(self, "stopped_at", self.n)
            if self.total and done < self.total:  # a run that met its stop rule early
                note = getattr(self, "stop_note", None) or "stopped early"
                post = f" [{self.postfix}]" if self.postfix else ""
                line = (
                    f"{self.desc + ': ' if self.desc else ''}stopped at {done:,} of "
                    f"{self.total:,}: {note}{post}"
                )
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


def run_mode() -> str:
    """``"full"`` when the environment has ``FULL=1`` (paper scale, for a GPU), else ``"cpu"``."""
    value = os.environ.get("FULL", "0").strip().lower()
    return "full" if value in ("1", "true", "yes", "on") else "cpu"


def is_full() -> bool:
    """True when ``FULL=1`` asks for the paper-scale configuration."""
    return run_mode() == "full"


def smoke_steps() -> int | None:
    """The training-step cap of a smoke run, ``SEQTHEORY_SMOKE=N`` (None when unset or 0).

    ``FULL=1 SEQTHEORY_SMOKE=3`` runs a chapter at paper sizes (models, data, sequence
    lengths) with every training loop (:func:`~seqtheory.core.training.train`) stopped after
    3 steps (the weights there stand in for every later snapshot the loop was asked to
    keep): a quick test on the CPU of everything but the training's outcome (its checks
    are not expected to hold)."""
    value = os.environ.get("SEQTHEORY_SMOKE", "").strip()
    if value in ("", "0"):
        return None
    if not value.isdigit():
        raise ValueError(
            f"SEQTHEORY_SMOKE must be a number of training steps (or 0 for none), got {value!r}"
        )
    return int(value)


def run_device(verbose: bool = True) -> torch.device:
    """Where a chapter trains: the CPU for the default run (its numbers are the book's), the
    best device present (:func:`get_device`) under ``FULL=1``."""
    if is_full():
        return get_device(verbose=verbose)
    if verbose:
        print("Using the CPU (the default run; FULL=1 trains on a GPU when there is one)")
    return torch.device("cpu")


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


class evaluating:
    """Context manager: ``model`` in eval mode without gradients, its mode restored after.

    >>> with evaluating(model):
    ...     logits = model(x)
    """

    def __init__(self, model: torch.nn.Module):
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        self.model = model

    def __enter__(self) -> torch.nn.Module:
        self._was_training = self.model.training
        self._grad = torch.no_grad()
        self._grad.__enter__()
        self.model.eval()
        return self.model

    def __exit__(self, *exc) -> bool:
        self.model.train(self._was_training)
        self._grad.__exit__(*exc)
        return False


def to_numpy(x: Any) -> np.ndarray:
    """A tensor (any device, with or without gradient) or array-like as a NumPy array."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def cpu_name() -> str:
    """This machine's CPU model (from /proc/cpuinfo where there is one), for the metadata
    that the archiving scripts write next to their results."""
    import platform
    from pathlib import Path

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_data(name: str) -> Any:
    """Load a JSON data file shipped with the library (``seqtheory/data/NAME``).

    These files are written by the repository's ``scripts/``; each records the script and
    settings that produced it, so a reader can regenerate it.
    """
    import json
    from importlib import resources

    path = resources.files("seqtheory") / "data" / name
    if not path.is_file():
        available = sorted(
            p.name
            for p in (resources.files("seqtheory") / "data").iterdir()
            if p.name.endswith(".json")
        )
        raise ValueError(f"no data file {name!r}; available: {available}")
    return json.loads(path.read_text(encoding="utf-8"))
