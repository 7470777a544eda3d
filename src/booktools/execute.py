"""Execute the chapters the execution cache lacks, in parallel over the cores, into the cache.

``jupyter-book build .`` runs this first (:mod:`booktools.sphinx.bookcache`): every chapter
whose code or whose library modules and data changed since it was cached
(:mod:`booktools.cache`) executes here, longest first (the CI's table of chapter times), as
many at a time as the cores allow with the book's torch threads each
(``SEQTHEORY_NUM_THREADS``, default one: the thread count is part of the cache key), and
the build then finds them all in the cache.  A chapter that fails stops the build with its
traceback.

    python -m booktools.execute                 # the stale chapters, as the build would
    python -m booktools.execute --jobs 1 --chapters copying,partitions
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from booktools import ROOT
from booktools.cache import cached, log_execution, read_chapter, store
from booktools.toc import chapter_sources

TIMES = ROOT / "benchmarks" / "chapter_times_ci.tsv"  # CI's last measured chapter times
_STORING = threading.Lock()  # one writer at a time into the cache's database


def thread_env(threads: int) -> dict[str, str]:
    """Environment that holds a kernel to ``threads`` threads: torch (the library's
    ``SEQTHEORY_NUM_THREADS``) and the BLAS and OpenMP pools NumPy and torch use."""
    n = str(threads)
    return {
        "SEQTHEORY_NUM_THREADS": n,
        "OMP_NUM_THREADS": n,
        "OPENBLAS_NUM_THREADS": n,
        "MKL_NUM_THREADS": n,
    }


def available_cores() -> int:
    """The cores this process may use (its CPU affinity, as ``nproc`` counts them)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def plan(jobs: int | None, tasks: int, cores: int | None = None) -> tuple[int, int]:
    """``(jobs, threads per job)`` with ``jobs * threads <= cores`` (default: all cores, one
    job per task at most)."""
    cores = cores or available_cores()
    jobs = max(1, min(jobs or cores, tasks or 1, cores))
    return jobs, max(1, cores // jobs)


def longest_first(sources: list[Path], times: Path = TIMES) -> list[Path]:
    """``sources`` ordered by their last measured time, longest first (unknown ones first)."""
    known: dict[str, float] = {}
    if times.exists():
        for line in times.read_text(encoding="utf-8").splitlines()[1:]:
            name, _, seconds = line.partition("\t")
            known[Path(name).stem] = float(seconds or 0)
    return sorted(sources, key=lambda p: -known.get(p.stem, float("inf")))


def execute_one(md: Path, threads: int, timeout: int = 900, root: Path = ROOT):
    """Execute one chapter as the build would (its folder as working directory) and store it
    in the cache; ``(chapter, seconds, error or None)``."""
    from nbclient import NotebookClient

    nb = read_chapter(md, root)
    kernelspec = copy.deepcopy(nb.metadata.get("kernelspec", {}))
    env = {**os.environ, **thread_env(threads)}
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=kernelspec.get("name", "python3"),
        record_timing=False,
        resources={"metadata": {"path": str(md.parent)}},
    )
    log_execution(root, md.stem, "build", env)
    start = time.perf_counter()
    try:
        client.execute(env=env)
    except Exception as err:  # a failing cell: the chapter is not cached
        return md.stem, time.perf_counter() - start, f"{type(err).__name__}: {err}"
    seconds = time.perf_counter() - start
    nb.metadata["kernelspec"] = kernelspec  # as read: the cache matches on it
    with _STORING:
        store(nb, md, seconds, root)
    return md.stem, seconds, None


def stale(root: Path = ROOT, chapters: list[str] | None = None) -> list[Path]:
    """The chapters (``.md``) the cache holds no record of for their current code."""
    sources = [p for p in chapter_sources(root) if not chapters or p.stem in chapters]
    return [p for p in sources if not cached(p, root)]


def execute_stale(
    root: Path = ROOT,
    jobs: int | None = None,
    timeout: int = 900,
    chapters: list[str] | None = None,
    log=print,
) -> list[tuple[str, float, str | None]]:
    """Execute every stale chapter, ``jobs`` at a time; the results in the order run."""
    todo = longest_first(stale(root, chapters))
    if not todo:
        return []
    threads = int(os.environ.get("SEQTHEORY_NUM_THREADS", "").strip() or 1)
    cores = available_cores()
    jobs = max(1, min(jobs or cores, len(todo), cores // threads))
    log(
        f"[execute] {len(todo)} chapter(s) to execute, {jobs} at a time with {threads} "
        f"thread(s) each: {', '.join(p.stem for p in todo)}"
    )

    def one(md: Path):
        result = execute_one(md, threads, timeout, root)
        log(f"[execute] {result[0]:20s} {result[1]:7.1f} s  {'ok' if not result[2] else 'FAILED'}")
        return result

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, todo))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--jobs", type=int, default=None, help="chapters at a time (default: cores / threads)"
    )
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    parser.add_argument("--chapters", default="", help="comma-separated names (default: all)")
    args = parser.parse_args(argv)
    chapters = [c for c in args.chapters.split(",") if c] or None
    os.environ.setdefault("SEQTHEORY_STATIC_PROGRESS", "1")  # as the build sets them
    os.environ.setdefault("SEQTHEORY_STRICT_CHECKS", "1")
    os.environ.setdefault("SEQTHEORY_SVG_FIGURES", "1")  # figures also as SVG, for the decks
    results = execute_stale(ROOT, args.jobs, args.timeout, chapters)
    for name, _, error in results:
        if error:
            print(f"\n[execute] {name} FAILED:\n{error[-3000:]}")
    return 1 if any(e for _, _, e in results) else 0


if __name__ == "__main__":
    sys.exit(main())
