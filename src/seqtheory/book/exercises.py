"""Coding labs with automatic feedback: what a student's run should show, and why.

Every coding lab of a chapter (an exercise tagged ``lab``) has a starter cell that ends with
``feedback("ex-CHAPTER-N", answer)``.  The chapter module holds the lab as data in its
:class:`LabTable` (``LABS``): what the answer is, the number compared, the range a correct
run lands in and why, and the reference solution as a function of the base seed::

    LABS = LabTable("scaling_laws", [
        Lab("ex-scaling-laws-1",
            expects="a list of four estimates, one per K in (5, 10, 20, 50)",
            quantity="how far the estimate falls from K = 5 to K = 50",
            measure=lambda est: est[0] - est[-1],
            low=0.2, high=2.0,
            because="larger neighbourhoods reach where the sphere curves ...",
            hint="Use the same points for every K ...",
    ])

The reference solutions are the lecturer's: they live in the repository's
``scripts/lab_solutions/CHAPTER.py``, outside the installed library, each a function of the
base seed registered with the typical mistakes its feedback must read as wrong::

    @LABS.solves("ex-scaling-laws-1",
                 mistakes=(("K in increasing order reversed", [6.1, 6.5, 6.9, 7.3]),))
    def _(seed):
        ...
        return estimates

The ranges come from data: ``python -m booktools.record_labs`` runs every reference solution
under several base seeds into ``scripts/lab_solutions/CHAPTER.labs.json``, and a unit test
holds every recorded answer inside the range and every listed mistake outside it.  The
feedback quotes the range, never the recorded answers.  A chapter's solution cell calls
``feedback(label, answer, solution=True)``, which is also a claim check (strict under the
tests and the book build).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from ..core.seeds import base_seed
from .claims import plain, short_number
from .notebook import check

__all__ = ["Lab", "LabTable", "Feedback", "KINDS", "LABEL", "chapter_of", "graded"]

KINDS = ("concept", "derivation", "lab")
GRADING_ENV = "SEQTHEORY_GRADING"


def graded() -> bool:
    """Whether the labs' feedback is in grading mode: ``SEQTHEORY_GRADING=1`` in the
    environment (a lecturer sets it for an assessed lab, for example in the notebook's
    first cell: ``%env SEQTHEORY_GRADING=1``)."""
    return os.environ.get(GRADING_ENV, "0").strip().lower() in ("1", "true", "yes", "on")


LABEL = re.compile(r"^ex-([a-z][a-z-]*[a-z])-(\d+)$")


def chapter_of(label: str) -> str:
    m = LABEL.match(label) if isinstance(label, str) else None
    if not m:
        raise ValueError(
            f"label must be an exercise label such as 'ex-scaling-laws-1', got {label!r}"
        )
    return m.group(1).replace("-", "_")


@dataclass(frozen=True)
class Lab:
    """One coding lab: its answer, the number compared, the expected range and its reason.

    ``expects`` says what the starter cell's answer is; ``measure`` maps that answer to the
    one number compared (default: the answer itself as a float); ``low``/``high`` bound a
    correct run's number (set from the recorded spread, with room for other machines);
    ``because`` says why a correct run lands there; ``hint`` what to check when it does
    not.
    """

    label: str
    expects: str
    quantity: str
    low: float
    high: float
    because: str
    hint: str
    measure: Callable[[Any], float] | None = None

    def __post_init__(self):
        chapter_of(self.label)
        for name in ("expects", "quantity", "because", "hint"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                raise ValueError(f"{name} of lab {self.label!r} must be a non-empty string")
        for name in ("low", "high"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
                raise TypeError(f"{name} of lab {self.label!r} must be a number, got {value!r}")
        if not self.low < self.high:
            raise ValueError(
                f"lab {self.label!r}: low must be below high, got {self.low!r} and {self.high!r}"
            )
        if self.measure is not None and not callable(self.measure):
            raise TypeError(f"measure of lab {self.label!r} must be callable or None")

    @property
    def chapter(self) -> str:
        return chapter_of(self.label)

    def value(self, answer: Any) -> float:
        """The number this lab compares, computed from ``answer``."""
        out = self.measure(answer) if self.measure is not None else answer
        if isinstance(out, np.ndarray) and out.size == 1:
            out = out.item()
        try:
            import torch

            if isinstance(out, torch.Tensor) and out.numel() == 1:
                out = out.item()
        except ImportError:  # pragma: no cover - torch is a dependency
            pass
        if isinstance(out, bool) or not isinstance(out, (int, float, np.integer, np.floating)):
            raise TypeError(f"the answer must be {self.expects}")
        out = float(out)
        if not math.isfinite(out):
            raise ValueError(f"{self.quantity} came out as {out}")
        return out


def _range(low: float, high: float) -> str:
    return f"{short_number(float(low), 3)} and {short_number(float(high), 3)}"


@dataclass
class Feedback:
    """What :func:`feedback` says about one answer.  ``ok`` is True (inside the expected
    range), False (outside it, or unreadable) or None (not answered yet)."""

    lab: Lab
    value: float | None
    ok: bool | None
    text: str

    def _repr_markdown_(self) -> str:
        return self.text

    def __str__(self) -> str:
        return re.sub(r"\*\*|`", "", self.text)

    __repr__ = __str__


def _unanswered(answer: Any) -> bool:
    if answer is Ellipsis or answer is None:
        return True
    if isinstance(answer, (list, tuple)):
        return any(_unanswered(a) for a in answer)
    if isinstance(answer, dict):
        return any(_unanswered(a) for a in answer.values())
    return False


class LabTable:
    """A chapter's coding labs; the lecturer's reference solutions register on it."""

    def __init__(self, chapter: str, labs: Iterable[Lab]):
        if not isinstance(chapter, str) or not chapter.isidentifier():
            raise ValueError(f"chapter must be a chapter's file name, got {chapter!r}")
        self.chapter = chapter
        self.labs: dict[str, Lab] = {}
        for lab in labs:
            if not isinstance(lab, Lab):
                raise TypeError(f"labs must be Lab entries, got {type(lab).__name__}")
            if lab.chapter != chapter:
                raise ValueError(f"lab {lab.label!r} does not belong to chapter {chapter!r}")
            if lab.label in self.labs:
                raise ValueError(f"lab labels must be unique; repeated: {lab.label!r}")
            self.labs[lab.label] = lab
        self._solve: dict[str, Callable[[int], Any]] = {}
        self._mistakes: dict[str, tuple] = {}

    def lab(self, label: str) -> Lab:
        if label not in self.labs:
            raise ValueError(
                f"label must be one of {sorted(self.labs)} for {self.chapter}, got {label!r}"
            )
        return self.labs[label]

    def solves(self, label: str, mistakes: tuple = ()) -> Callable:
        """Decorator: register the reference solution of ``label`` (a function of the seed)
        and ``mistakes``, pairs of a typical mistake and the answer it gives (the tests
        check that each lands outside the range)."""
        self.lab(label)
        for item in mistakes:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise TypeError(
                    f"mistakes of lab {label!r} must be (description, answer) pairs, got {item!r}"
                )

        def register(fn: Callable[[int], Any]) -> Callable[[int], Any]:
            self._solve[label] = fn
            self._mistakes[label] = tuple(mistakes)
            return fn

        return register

    def mistakes(self, label: str) -> tuple:
        """The typical mistakes registered with ``label``'s reference solution."""
        self.lab(label)
        return self._mistakes.get(label, ())

    def solve(self, label: str, seed: int) -> Any:
        """The reference solution's answer under base seed ``seed``."""
        self.lab(label)
        if label not in self._solve:
            raise ValueError(f"lab {label!r} has no reference solution (@LABS.solves)")
        return self._solve[label](seed)

    def record(self, seeds: Iterable[int]) -> dict:
        """Run every reference solution under each seed: ``{label: {seed: answer}}``."""
        return {
            label: {str(s): plain(self.solve(label, int(s)), label) for s in seeds}
            for label in self.labs
        }

    # ------------------------------------------------------------------ feedback
    def feedback(self, label: str, answer: Any, *, solution: bool = False) -> Feedback:
        """What an answer to lab ``label`` shows. In a course's graded labs (``GRADING``
        set in the environment, or :func:`grading`), a student's answer is only said to be
        inside or outside the expected range: no range, reason or hint."""
        lab = self.lab(label)
        if _unanswered(answer):
            return Feedback(
                lab,
                None,
                None,
                "**Not answered yet.** Replace each `...` in the cell above with "
                f"your code, then run it again. The answer is {lab.expects}.",
            )
        try:
            value = lab.value(answer)
        except (TypeError, ValueError, IndexError, KeyError) as err:
            fb = Feedback(
                lab,
                None,
                False,
                f"**Cannot read this answer** ({err}). The answer is {lab.expects}.",
            )
            if solution:
                check(False, f"[{label}] the reference solution: {err}")
            return fb
        ok = lab.low <= value <= lab.high
        if graded() and not solution:
            # the base seed names the student's variant: the lecturer's notebook run with it
            # gives the same data, so the exact answer can be reproduced
            return Feedback(
                lab,
                value,
                ok,
                f"**{'Within' if ok else 'Outside'} the expected range.** Your answer gives "
                f"{lab.quantity} = **{short_number(value, 4)}** with base seed **{base_seed()}**. "
                "(Graded lab: the range and the reasons are not shown.)",
            )
        head = (
            f"Your answer gives {lab.quantity} = **{short_number(value, 4)}**; a correct run "
            f"lands between {_range(lab.low, lab.high)}"
        )
        if ok:
            text = f"**Within the expected range.** {head}, because {lab.because}."
        else:
            text = (
                f"**Outside the expected range.** {head}, because {lab.because}. "
                f"**Check:** {lab.hint}"
            )
        if solution:
            check(
                ok,
                f"[{label}] the reference solution gives {lab.quantity} = "
                f"{short_number(value, 4)}, not between {_range(lab.low, lab.high)}.",
            )
        return Feedback(lab, value, ok, text)
