"""What machine a run used, for the metadata the archiving scripts and records write."""

from __future__ import annotations

import platform
from pathlib import Path


def cpu_name() -> str:
    """This machine's CPU model (from /proc/cpuinfo where there is one)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
