"""Argument checks that name the argument and what it allows."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import numpy as np

__all__ = [
    "check_int",
    "check_float",
    "check_choice",
    "dataclass_replace",
]


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


def dataclass_replace(obj: Any, **changes: Any) -> Any:
    """``dataclasses.replace`` that names the allowed fields when a key is wrong."""
    names = {f.name for f in fields(obj)}
    bad = sorted(set(changes) - names)
    if bad:
        raise ValueError(
            f"unknown field(s) {bad} for {type(obj).__name__}; allowed: {sorted(names)}"
        )
    return replace(obj, **changes)
