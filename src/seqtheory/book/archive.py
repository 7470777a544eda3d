"""The archived runs shipped with the library: JSON files written by the repository's scripts."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["load_data"]


def load_data(name: str) -> Any:
    """Load a JSON data file shipped with the library (``seqtheory/data/NAME``).

    These files are written by the repository's ``scripts/``; each records the script and
    settings that produced it, so a reader can regenerate it.
    """
    folder = resources.files("seqtheory") / "data"
    path = folder / name
    if not path.is_file():
        available = sorted(p.name for p in folder.iterdir() if p.name.endswith(".json"))
        raise ValueError(f"no data file {name!r}; available: {available}")
    return json.loads(path.read_text(encoding="utf-8"))
