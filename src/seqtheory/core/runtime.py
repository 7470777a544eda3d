"""Where and how a run computes: devices, threads, the CPU / FULL run mode and its sizes,
progress bars, evaluation mode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import torch

from .settings import settings
from .validate import check_choice, check_int

__all__ = [
    "check_device",
    "get_device",
    "default_threads",
    "setup_threads",
    "progress_bar",
    "run_mode",
    "is_full",
    "run_device",
    "Sizes",
    "evaluating",
    "to_numpy",
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


def default_threads() -> int:
    """Torch intra-op threads the book uses: ``SEQTHEORY_NUM_THREADS``, else 1
    (``settings.threads``).

    The book's models are tiny and overhead-bound. Measured on a 2-core CPU (300 ICL-MC
    steps, ``benchmarks/bench_threads.py``): idle, two threads are about 1.4x faster; next
    to one busy program they are about 2.4x slower than one thread, and about 4x slower
    next to another torch job. So the default is one thread; set the variable to use more.
    """
    return settings.threads


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


def progress_bar(iterable=None, **kwargs):
    """A progress bar over ``iterable`` (tqdm's arguments): ``settings.progress_bar``, by
    default ``tqdm.auto.tqdm`` (a live widget in Jupyter or Colab, text in a terminal).
    The book's build puts a bar there that writes one line when it closes."""
    return settings.progress_bar(iterable, **kwargs)


def run_mode() -> str:
    """``"full"`` when the environment has ``FULL=1`` (paper scale, for a GPU), else ``"cpu"``."""
    return "full" if settings.full else "cpu"


def is_full() -> bool:
    """True when ``FULL=1`` asks for the paper-scale configuration."""
    return settings.full


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
