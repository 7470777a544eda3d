"""A chapter's claims as data, and the one helper a chapter calls to check them.

Each chapter module (``seqtheory.chapters.NAME``) holds a :class:`ClaimTable`: one
:class:`Claim` per statement its text makes about a run -- the sentence it backs, the
condition the run's numbers must meet, the plausible result that would make it fail, and
the run size it is about -- plus the functions that compute those numbers from the
chapter's results.  The chapter calls, after an experiment::

    verify(chapter.claims("phases", main))

which glues every number the prose quotes (``{glue:text}`name```) and checks every claim of
that section with :func:`seqtheory.book.notebook.check` (strict under the tests and the book build,
a note in a reader's notebook).

The margins come from data.  ``python -m booktools.robustness --record`` runs the chapters
under many base seeds and writes the values every section measured into
``seqtheory/chapters/measured/NAME.json``; a unit test holds every recorded value against
its claim, and the page "What the book checks" shows each claim with its recorded spread.
"""

from __future__ import annotations

import ast
import json
import math
import os
from dataclasses import dataclass
from importlib import resources
from typing import Any, Callable, Iterable

import numpy as np

from ..core.runtime import run_mode
from ..core.seeds import base_seed
from .notebook import check, glue
from .session import smoke_steps

__all__ = ["Claim", "ClaimTable", "Measured", "verify", "plain", "RECORD_ENV", "SCALES"]

RECORD_ENV = "SEQTHEORY_CLAIMS_RECORD"
SCALES = ("any", "cpu", "full")

# names a condition may use besides the section's values
_SAFE = {
    "abs": abs,
    "all": all,
    "any": any,
    "len": len,
    "max": max,
    "min": min,
    "sum": sum,
    "sorted": sorted,
    "round": round,
    "set": set,
    "np": np,
    "math": math,
    "True": True,
    "False": False,
    "None": None,
    "inf": math.inf,
}


def plain(value: Any, name: str = "value") -> Any:
    """``value`` as plain JSON data: NumPy and torch scalars and arrays become Python numbers
    and lists, tuples become lists.  Claims are evaluated on these plain values, at run time
    and in the tests, so both see the same types."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.bool_):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, dict):
        return {str(k): plain(v, f"{name}[{k!r}]") for k, v in value.items()}
    try:
        import torch

        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().numpy()
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    if isinstance(value, np.ndarray):
        return [plain(v, name) for v in value.tolist()] if value.ndim else plain(value.item())
    if isinstance(value, (list, tuple)):
        return [plain(v, f"{name}[{i}]") for i, v in enumerate(value)]
    raise TypeError(
        f"{name} must be a number, string, bool, None, array or list/dict of "
        f"them, got {type(value).__name__}"
    )


def _names(condition: str) -> list[str]:
    """The free names of a condition expression, in order of appearance."""
    tree = ast.parse(condition, mode="eval")
    bound = {
        n.id
        for c in ast.walk(tree)
        if isinstance(c, ast.comprehension)
        for n in ast.walk(c.target)
        if isinstance(n, ast.Name)
    }
    seen: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Name)
            and node.id not in bound
            and node.id not in _SAFE
            and node.id not in seen
        ):
            seen.append(node.id)
    return seen


@dataclass(frozen=True)
class Claim:
    """One statement a chapter makes about a run, as data.

    ``id`` is ``"section.name"``; ``condition`` a Python expression over the section's
    values (``"0 < gap < 0.045"``); ``fails_if`` the plausible result that would make it
    false; ``scale`` the run size it is about (``"any"``, ``"cpu"``: the default run only,
    ``"full"``: ``FULL=1`` only).
    """

    id: str
    sentence: str
    condition: str
    fails_if: str
    scale: str = "any"

    def __post_init__(self):
        if (
            not isinstance(self.id, str)
            or self.id.count(".") != 1
            or not all(part.isidentifier() for part in self.id.split("."))
        ):
            raise ValueError(f"id must be 'section.name' (two identifiers), got {self.id!r}")
        for field in ("sentence", "condition", "fails_if"):
            if not isinstance(getattr(self, field), str) or not getattr(self, field).strip():
                raise ValueError(f"{field} of claim {self.id!r} must be a non-empty string")
        if self.scale not in SCALES:
            raise ValueError(
                f"scale of claim {self.id!r} must be one of {SCALES}, got {self.scale!r}"
            )
        try:
            _names(self.condition)
        except SyntaxError as err:
            raise ValueError(
                f"condition of claim {self.id!r} is not a Python expression: "
                f"{self.condition!r} ({err.msg})"
            ) from None

    @property
    def section(self) -> str:
        return self.id.split(".")[0]

    @property
    def names(self) -> list[str]:
        """The section values the condition reads."""
        return _names(self.condition)

    def applies(self, mode: str | None = None) -> bool:
        """Whether the claim is checked at run size ``mode`` (default: this run's)."""
        return self.scale == "any" or self.scale == (mode or run_mode())

    def holds(self, values: dict) -> bool:
        """Evaluate the condition on ``values`` (plain data, see :func:`plain`)."""
        missing = [n for n in self.names if n not in values]
        if missing:
            raise KeyError(
                f"claim {self.id!r} reads {missing}, which its section's values "
                f"lack (have: {sorted(values)})"
            )
        scope = {"__builtins__": {}, **_SAFE, **{n: values[n] for n in self.names}}
        return bool(eval(compile(self.condition, self.id, "eval"), scope))  # our own table

    def describe(self, values: dict) -> str:
        """``name = value`` for each value the condition reads, compactly."""
        return ", ".join(f"{n} = {short_number(values.get(n))}" for n in self.names)


def short_number(value: Any, digits: int = 4) -> str:
    """``value`` as the claims page and lab feedback print it: ``digits`` significant digits
    for a float, the first eight entries of a list."""
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    if isinstance(value, list):
        inner = ", ".join(short_number(v, 3) for v in value[:8])
        return f"[{inner}{', ...' if len(value) > 8 else ''}]"
    return repr(value) if isinstance(value, str) else str(value)


class Measured(dict):
    """The values one section of a chapter measured on a run (plain data), with its table."""

    def __init__(self, table: "ClaimTable", section: str, values: dict):
        super().__init__({k: plain(v, k) for k, v in values.items()})
        self.table, self.section = table, section
        self.outcome: dict[str, bool] = {}  # claim id -> held, filled by verify()
        self.skipped: str | None = None  # why a smoke run could not compute the section

    def summary(self) -> str:
        """One line: how many of the section's claims this run checked and how many held."""
        name = f"{self.table.chapter}, section {self.section!r}"
        if not self.table.section(self.section):
            return f"{name}: {len(self)} values measured (the section states no claim)"
        if not self.outcome:
            return f"{name}: {len(self)} values, claims not checked"
        held = sum(self.outcome.values())
        return f"{name}: {held} of {len(self.outcome)} claims hold on this run"

    def _ipython_display_(self):  # a notebook shows the summary, not the values
        print(self.summary())


class ClaimTable:
    """A chapter's claims, the functions computing each section's values, and the values
    recorded under many base seeds (``seqtheory/chapters/measured/CHAPTER.json``)."""

    def __init__(self, chapter: str, claims: Iterable[Claim]):
        if not isinstance(chapter, str) or not chapter.isidentifier():
            raise ValueError(f"chapter must be a chapter's file name, got {chapter!r}")
        self.chapter = chapter
        self.claims: list[Claim] = list(claims)
        ids = [c.id for c in self.claims]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"claim ids must be unique in {chapter}; repeated: {dup}")
        self._compute: dict[str, Callable[..., dict]] = {}

    # ----------------------------------------------------------------- sections
    def sections(self) -> list[str]:
        """Section names in the order the table lists them (and those with values only)."""
        out: list[str] = []
        for name in [c.section for c in self.claims] + list(self._compute):
            if name not in out:
                out.append(name)
        return out

    def section(self, name: str) -> list[Claim]:
        return [c for c in self.claims if c.section == name]

    def computes(self, section: str) -> Callable:
        """Decorator: register the function computing ``section``'s values (a dict)."""
        if not isinstance(section, str) or not section.isidentifier():
            raise ValueError(f"section must be an identifier, got {section!r}")

        def register(fn: Callable[..., dict]) -> Callable[..., dict]:
            self._compute[section] = fn
            return fn

        return register

    def claims_for(self, section: str, *args, **kwargs) -> Measured:
        """The values of ``section``: every number its prose quotes and every statistic
        its claims test, computed from the chapter's results.  In a smoke run
        (``SEQTHEORY_SMOKE``) a section whose statistics cannot be computed from the few
        training steps (an empty window, a fit without points, a step never reached: an
        arithmetic, index, type or value error) is returned empty, with the reason in
        ``skipped``; :func:`verify` then says so instead of checking. Any other error (a
        missing file, module or key) is raised as in a full run."""
        if section not in self._compute:
            raise ValueError(
                f"section must be one of {sorted(self._compute)} for "
                f"{self.chapter}, got {section!r}"
            )
        if smoke_steps() is not None:  # a smoke run's statistics may not exist at all
            try:
                values = self._compute[section](*args, **kwargs)
            except (ArithmeticError, IndexError, TypeError, ValueError) as err:
                measured = Measured(self, section, {})
                measured.skipped = f"{type(err).__name__}: {err}"
                return measured
        else:
            values = self._compute[section](*args, **kwargs)
        if not isinstance(values, dict):
            raise TypeError(f"{self.chapter}: section {section!r} must compute a dict")
        return Measured(self, section, values)

    # ----------------------------------------------------------------- recorded values
    def record_path(self, threads: int = 1):
        """``measured/CHAPTER.json``; for runs with more torch threads
        ``measured/CHAPTER.threadsN.json`` (other bits, held against the same claims)."""
        name = f"{self.chapter}.json" if threads == 1 else f"{self.chapter}.threads{threads}.json"
        return resources.files("seqtheory") / "chapters" / "measured" / name

    def recorded(self, threads: int = 1) -> dict:
        """The record written by ``python -m booktools.robustness --record``: ``{"runs": {seed:
        {section: values}}, ...}``; empty runs when there is none. The text's spreads come
        from the one-thread record; ``threads=N`` reads the runs recorded with N threads."""
        path = self.record_path(threads)
        if not path.is_file():
            return {"chapter": self.chapter, "runs": {}}
        return json.loads(path.read_text(encoding="utf-8"))

    def over_seeds(self, section: str, name: str) -> list:
        """The recorded values of ``name`` in ``section``, one per recorded base seed: what
        a sentence such as "over base seeds 0-9 the slope ranged from a to b" pastes."""
        runs = self.recorded()["runs"]
        vals = [r[section][name] for r in runs.values() if name in r.get(section, {})]
        if not vals:
            raise KeyError(
                f"no recorded values of {name!r} in section {section!r} of "
                f"{self.chapter} (python -m booktools.robustness --record)"
            )
        return vals

    def seeds_text(self) -> str:
        """The recorded base seeds in a few characters, runs of three or more as ranges:
        ``"0\u20139"``, ``"0\u20139, 11, 42"``."""
        seeds = sorted(int(s) for s in self.recorded()["runs"])
        parts, i = [], 0
        while i < len(seeds):
            j = i
            while j + 1 < len(seeds) and seeds[j + 1] == seeds[j] + 1:
                j += 1
            if j - i >= 2:
                parts.append(f"{seeds[i]}\u2013{seeds[j]}")
            else:
                parts.extend(str(s) for s in seeds[i : j + 1])
            i = j + 1
        return ", ".join(parts)

    def spread(self, claim: Claim, record: dict | None = None) -> dict[str, str]:
        """Each value the claim reads, summarised over the recorded seeds."""
        runs = (record or self.recorded())["runs"]
        out = {}
        for name in claim.names:
            vals = [
                r[claim.section][name]
                for r in runs.values()
                if claim.section in r and name in r[claim.section]
            ]
            out[name] = summarise(vals)
        return out

    def held(self, claim: Claim, record: dict | None = None) -> tuple[int, int]:
        """(seeds where the recorded values satisfy the claim, seeds recorded)."""
        runs = (record or self.recorded())["runs"]
        got = [r[claim.section] for r in runs.values() if claim.section in r]
        return sum(claim.holds(v) for v in got), len(got)


def summarise(values: list) -> str:
    """A value over seeds in a few characters: ``median [min, max]`` for numbers (lists of
    numbers pooled, nested ones too), the count of ``True`` for booleans, else the distinct
    values."""
    flat: list = []

    def add(v):
        if isinstance(v, list):
            for x in v:
                add(x)
        else:
            flat.append(v)

    if not values:
        return "not recorded"
    for v in values:
        add(v)
    if not flat:
        return f"empty in {len(values)}/{len(values)}"
    if all(isinstance(v, bool) for v in flat):
        return f"true in {sum(flat)}/{len(flat)}"
    nums = [v for v in flat if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(nums) == len(flat):
        arr = np.asarray(nums, dtype=float)
        finite = arr[np.isfinite(arr)]
        if finite.size == 0:
            return f"{short_number(float(arr[0]))} (all {arr.size})"
        text = (
            f"{short_number(float(np.median(arr)), 3)} [{short_number(float(finite.min()), 3)}, "
            f"{short_number(float(arr.max()), 3)}]"
        )
        return text
    distinct: list = []
    for v in flat:
        if v not in distinct:
            distinct.append(v)
    return " / ".join(short_number(v) for v in distinct[:4]) + (
        " / ..." if len(distinct) > 4 else ""
    )


def _quotable(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def verify(measured: Measured) -> Measured:
    """Glue a section's values for the prose and check each of its claims.

    Every scalar value is glued under its name (the text reads ``{glue:text}`name```), and
    each claim's outcome under ``claim.ID`` (the page "What the book checks" shows it).
    Claims about another run size (``Claim.scale``) are skipped.  Under
    ``SEQTHEORY_CLAIMS_RECORD=path`` the values are also appended to that file (JSON lines)
    before any check, so that a recording run keeps every section's numbers.
    """
    if not isinstance(measured, Measured):
        raise TypeError(
            "measured must come from a chapter's claims(section, ...), got "
            f"{type(measured).__name__}"
        )
    table, section = measured.table, measured.section
    if measured.skipped is not None:
        print(
            f"{table.chapter}, section {section!r}: not computed in this smoke run "
            f"(SEQTHEORY_SMOKE; {measured.skipped})"
        )
        return measured
    _record(table, section, measured)
    for name, value in measured.items():
        if _quotable(value):
            glue(name, value)
    mode = run_mode()
    for claim in table.section(section):
        if not claim.applies(mode):
            glue(f"claim.{claim.id}", f"not checked at this run size ({mode})")
            continue
        held = claim.holds(measured)
        measured.outcome[claim.id] = held
        glue(f"claim.{claim.id}", f"{claim.describe(measured)} ({'holds' if held else 'FAILS'})")
        check(
            held,
            f"[{table.chapter}: {claim.id}] {claim.sentence} Needs "
            f"{claim.condition}; this run: {claim.describe(measured)}.",
        )
    return measured


def _record(table: ClaimTable, section: str, values: dict) -> None:
    path = os.environ.get(RECORD_ENV, "").strip()
    if not path:
        return
    row = {
        "chapter": table.chapter,
        "section": section,
        "seed": base_seed(),
        "mode": run_mode(),
        "values": dict(values),
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
