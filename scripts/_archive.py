"""Pieces shared by the scripts that write archived runs (src/seqtheory/data/*.json)."""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import torch

from booktools.machine import cpu_name


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """``--patience`` (early stop after the switch) and ``--merge`` (combine part files)."""
    parser.add_argument(
        "--patience",
        type=int,
        default=500,
        help="stop a run once it has been closer to the bigram than to "
        "the unigram rule for this many steps (0: never stop early)",
    )
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="*",
        default=(),
        help="instead of training, merge these per-seed files into --out",
    )


def merge_parts(paths: list[Path], out: Path, key: Callable[[dict], object]) -> dict:
    """Combine part files ``{"meta", "runs"}`` into ``out``: the first part's meta, all
    runs sorted by ``key``, ``meta["seeds"]`` the seeds present.  Returns the merged dict."""
    parts = [json.loads(Path(f).read_text()) for f in paths]
    meta = parts[0]["meta"]
    runs = sorted((r for part in parts for r in part["runs"]), key=key)
    meta["seeds"] = sorted({r["seed"] for r in runs})
    merged = {"meta": meta, "runs": runs}
    out.write_text(json.dumps(merged, default=str))
    return merged


def device_label(device: torch.device, threads: int) -> str:
    """How an archive names the machine it ran on."""
    if device.type == "cpu":
        return f"CPU ({cpu_name()}), {threads} thread(s)"
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} GPU, CUDA {torch.version.cuda}"
    return str(device)


def git_commit() -> str | None:
    """The checkout's commit (``git rev-parse HEAD``), or None outside a git checkout."""
    try:
        here = str(Path(__file__).resolve().parent)
        res = subprocess.run(
            ["git", "-C", here, "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (res.stdout.strip() or None) if res.returncode == 0 else None
