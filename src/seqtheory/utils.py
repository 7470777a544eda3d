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
    "SEED_ENV",
    "THREADS_ENV",
    "base_seed",
    "derive_seed",
    "experiment_seed",
    "check_generator_device",
    "make_generator",
    "make_rng",
    "seeded",
    "seed_everything",
    "check_device",
    "get_device",
    "setup_threads",
    "default_threads",
    "run_mode",
    "is_full",
    "smoke_steps",
    "run_device",
    "Sizes",
    "evaluating",
    "to_numpy",
    "check_int",
    "check_float",
    "check_choice",
    "load_data",
    "progress_bar",
    "glue",
    "spread",
    "check",
    "STRICT_ENV",
    "CHECK_LOG_ENV",
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
SEED_ENV = "SEQTHEORY_SEED"
_SEED_MAX = 2**63 - 1


def _env_int(name: str, default: int, allowed: str) -> int:
    """The int in environment variable ``name`` (``default`` if unset or empty)."""
    env = os.environ.get(name, "").strip()
    if not env:
        return default
    try:
        return int(env)
    except ValueError:
        raise ValueError(f"{name} must be {allowed}, got {env!r}") from None


def base_seed() -> int:
    """The book's base seed: ``SEQTHEORY_SEED`` from the environment, default 0.

    Every seed that the library or a chapter turns into random state goes through
    :func:`derive_seed`, so one number re-draws a whole chapter: with another base seed a
    chapter must tell the same story (the book's claim checks run under several).
    """
    value = _env_int(SEED_ENV, 0, "a non-negative int")
    if not 0 <= value <= _SEED_MAX:
        raise ValueError(f"{SEED_ENV} must be in 0..2**63-1, got {value}")
    return value


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
        raise ValueError(f"generator is on {generator.device} but the draws are on {device}: "
                         "draw on the generator's device, or use a generator on the same "
                         "device (seqtheory.make_generator(seed, device))")


def make_generator(seed: int = 0, device: str | torch.device = "cpu", *,
                   base: int | None = None) -> torch.Generator:
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


def check_device(name: str, value) -> torch.device:
    """``value`` (``None``: the CPU, a string such as ``"cuda"``, or a ``torch.device``) as a
    ``torch.device`` that this machine has; a ``ValueError``/``TypeError`` naming ``name``
    otherwise."""
    if value is None:
        return torch.device("cpu")
    if not isinstance(value, (str, torch.device)):
        raise TypeError(f"{name} must be None, a string such as 'cuda' or a torch.device, "
                        f"got {type(value).__name__}")
    try:
        device = torch.device(value)
    except RuntimeError as err:
        raise ValueError(f"{name} must name a torch device ('cpu', 'cuda', 'cuda:0', 'mps'), "
                         f"got {value!r}") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name}={value!r}: this machine has no CUDA GPU (use 'cpu')")
    if device.type == "mps" and not (getattr(torch.backends, "mps", None) is not None
                                     and torch.backends.mps.is_available()):
        raise ValueError(f"{name}={value!r}: this machine has no Apple GPU (use 'cpu')")
    return device


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


THREADS_ENV = "SEQTHEORY_NUM_THREADS"


def default_threads() -> int:
    """Torch intra-op threads the book uses: ``SEQTHEORY_NUM_THREADS``, else 1.

    The book's models are tiny and overhead-bound. Measured on a 2-core CPU (300 ICL-MC
    steps, ``benchmarks/bench_threads.py``): idle, two threads are about 1.4x faster; next
    to one busy program they are about 2.4x slower than one thread, and about 4x slower
    next to another torch job. So the default is one thread; set the variable to use more.
    """
    n = _env_int(THREADS_ENV, 1, "a positive int")
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


# --------------------------------------------------------------------------- progress bars
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
        kwargs.setdefault("ascii", False)                   # block characters, as in Jupyter
        super().__init__(*args, **kwargs)

    def close(self):
        if not self.disable and self.leave:
            line = str(self)
            done = getattr(self, "stopped_at", self.n)
            if self.total and done < self.total:        # a run that met its stop rule early
                note = getattr(self, "stop_note", None) or "stopped early"
                post = f" [{self.postfix}]" if self.postfix else ""
                line = (f"{self.desc + ': ' if self.desc else ''}stopped at {done:,} of "
                        f"{self.total:,}: {note}{post}")
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


# --------------------------------------------------------------------------- numbers in the text
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


# --------------------------------------------------------------------------- claim checks
STRICT_ENV = "SEQTHEORY_STRICT_CHECKS"


def strict_checks() -> bool:
    """True when a failed claim check must raise: ``SEQTHEORY_STRICT_CHECKS=1``, which the
    tests, the book build and the repository's scripts set (a reader's notebook does not)."""
    return os.environ.get(STRICT_ENV, "0").strip().lower() in ("1", "true", "yes", "on")


CHECK_LOG_ENV = "SEQTHEORY_CHECK_LOG"


def _log_check(held: bool, message: str) -> None:
    """Append one check's outcome to the file named by ``SEQTHEORY_CHECK_LOG`` (JSON lines:
    held, message, the calling source line) -- how ``scripts/full_run.py`` reports every
    check of a chapter, not only the first failure of a cell."""
    path = os.environ.get(CHECK_LOG_ENV, "").strip()
    if not path:
        return
    import inspect
    import json

    frame = inspect.stack()[2]          # the caller of check()
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
    that file (see ``scripts/full_run.py``).  Returns whether the check held.
    """
    held = bool(condition)
    if not isinstance(message, str):
        message = repr(message)
    _log_check(held, message)
    if held:
        return True
    if strict_checks():
        raise AssertionError(message)
    note = ("A claim check of this chapter did not hold on this run"
            + (f": {message}" if message else ".")
            + " Single runs can move with the hardware, the torch build, the number of threads "
            "and the seed; the book's text was checked on its own build. The chapter goes on.")
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


# --------------------------------------------------------------------------- run size
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
    lengths) with every training loop (:func:`~seqtheory.training.train`) stopped after
    3 steps (the weights there stand in for every later snapshot the loop was asked to
    keep): a quick test on the CPU of everything but the training's outcome (its checks
    are not expected to hold)."""
    value = os.environ.get("SEQTHEORY_SMOKE", "").strip()
    if value in ("", "0"):
        return None
    if not value.isdigit():
        raise ValueError(f"SEQTHEORY_SMOKE must be a number of training steps (or 0 for "
                         f"none), got {value!r}")
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


def dataclass_replace(obj: Any, **changes: Any) -> Any:
    """``dataclasses.replace`` that names the allowed fields when a key is wrong."""
    names = {f.name for f in fields(obj)}
    bad = sorted(set(changes) - names)
    if bad:
        raise ValueError(
            f"unknown field(s) {bad} for {type(obj).__name__}; allowed: {sorted(names)}")
    return replace(obj, **changes)


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
        available = sorted(p.name for p in (resources.files("seqtheory") / "data").iterdir()
                           if p.name.endswith(".json"))
        raise ValueError(f"no data file {name!r}; available: {available}")
    return json.loads(path.read_text(encoding="utf-8"))
