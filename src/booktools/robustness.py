"""Run every chapter under other base seeds and one torch thread; print what passed.

The book's claim checks (hidden ``check(...)`` cells) are statements over seeds with margins
taken from the spread across base seeds, so every chapter must pass under any base seed,
not only the default 0 that CI uses. This script executes each chapter's paired notebook
with ``SEQTHEORY_SEED=s`` and ``SEQTHEORY_NUM_THREADS=1`` for each requested seed, in
parallel over the CPU cores, and prints a table chapter x seed -> pass (seconds) or the
assert that failed, with its values. It is not part of CI (it takes a while):

    python -m booktools.robustness                     # base seeds 1 and 2, every chapter
    python -m booktools.robustness --seeds 0,1,2,3 --chapters copying,partitions --jobs 2

Results also go to ``_build/robustness.tsv``, and every executed notebook (with its
outputs, up to the failing cell) to ``_build/robustness/CHAPTER-seedS.ipynb``.
Exit status 1 if any run failed.

``--record`` writes the data behind the claims' margins: each chapter runs with its checks
lenient (a failed claim does not stop the notebook), every section's values
(``seqtheory.book.claims.verify``) are collected, and the runs are merged, seed by seed, into
``src/seqtheory/chapters/measured/CHAPTER.json``.  A run passes when every claim holds on
its values; the table lists the claims that did not.  ``tests/test_claims_recorded.py``
holds every recorded value against its claim::

    python -m booktools.robustness --record --seeds 0-9

Every recorded section also stores the fingerprint of the code that computed it
(:func:`booktools.sections.section_fingerprint`: its cells, its function, its claims'
conditions); the test fails on a section whose code changed after it was recorded.
``--sections CHAPTER:SECTION,...`` re-records only those sections (it implies ``--record``):
each run stops after the last cell that verifies one of them, and their values and
fingerprints are merged into the record, the other sections' left as they were::

    python -m booktools.robustness --sections copying:lengths --seeds 0-9,11,42,2027,90210

Runs at a time times torch threads each never exceeds the cores (``--jobs``, ``--threads``).
A record with more than one thread goes to ``CHAPTER.threadsN.json``: other bits, held
against the same claims by the same test (the text's spreads come from the one-thread
record)::

    python -m booktools.robustness --record --threads 2 --seeds 0
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from booktools import ROOT
from booktools.execute import available_cores, thread_env
from booktools.toc import chapter_notebooks

ANSI = re.compile(r"\x1b\[[0-9;]*m")

RUN_ONE = r"""
import json, sys, time, nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError
path, timeout, out = sys.argv[1], int(sys.argv[2]), sys.argv[4]
stop = int(sys.argv[5])   # run the code cells up to this index (-1: all)
nb = nbformat.read(path, as_version=4)
if stop >= 0:
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    nb.cells = nb.cells[: code[stop] + 1]
start = time.perf_counter()
result = {"ok": True}
try:
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": sys.argv[3]}}).execute()
except CellTimeoutError as err:
    result = {"ok": False, "error": f"cell timeout ({timeout} s)", "detail": str(err)[:300]}
except CellExecutionError as err:
    result = {"ok": False, "error": f"{err.ename}: {err.evalue}", "detail": err.traceback}
result["seconds"] = time.perf_counter() - start
nbformat.write(nb, out)   # the executed notebook, outputs included, to read the numbers
print("@@RESULT@@" + json.dumps(result))
"""


def failing_line(traceback: str) -> str:
    """The source line an IPython traceback points at (``---->``), e.g. the assert."""
    lines = [ANSI.sub("", line) for line in traceback.splitlines()]
    marked = [re.sub(r"^\s*---->\s*\d+\s*", "", line).strip() for line in lines if "---->" in line]
    return marked[-1] if marked else ""


def run_one(
    nb: Path,
    seed: int,
    threads: int,
    timeout: int,
    record: bool = False,
    sections: list[str] | None = None,
) -> dict:
    """Execute one chapter under base seed ``seed``; with ``sections``, only up to the last
    cell that verifies one of them, and only their claims count."""
    from booktools.sections import last_cell

    stop = last_cell(nb.stem, sections) if sections else -1
    env = {
        **os.environ,
        **thread_env(threads),
        "SEQTHEORY_SEED": str(seed),
        "SEQTHEORY_STATIC_PROGRESS": "1",
        "SEQTHEORY_STRICT_CHECKS": "0" if record else "1",
        "MPLBACKEND": "Agg",
    }
    env.pop("FULL", None)
    out = ROOT / "_build" / "robustness" / f"{nb.stem}-seed{seed}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    values = out.with_suffix(".claims.jsonl")
    values.unlink(missing_ok=True)
    if record:
        env["SEQTHEORY_CLAIMS_RECORD"] = str(values)
    proc = subprocess.run(
        [sys.executable, "-c", RUN_ONE, str(nb), str(timeout), str(nb.parent), str(out), str(stop)],
        env=env,
        capture_output=True,
        text=True,
    )
    marker = [line for line in proc.stdout.splitlines() if line.startswith("@@RESULT@@")]
    if not marker:
        result = {
            "ok": False,
            "error": f"runner crashed (exit {proc.returncode})",
            "detail": (proc.stderr or proc.stdout)[-500:],
            "seconds": float("nan"),
        }
    else:
        result = json.loads(marker[-1].removeprefix("@@RESULT@@"))
    if not result["ok"] and "detail" in result:
        result["line"] = failing_line(result["detail"])
    if record:
        result["sections"] = read_sections(values)
        if sections:
            result["sections"] = {k: v for k, v in result["sections"].items() if k in sections}
        failed = failed_claims(nb.stem, result["sections"], sections)
        if failed and result["ok"]:
            result.update(ok=False, error="claims not held: " + "; ".join(failed), line="")
    return result


def read_sections(path: Path) -> dict:
    """``{section: values}`` from a run's ``SEQTHEORY_CLAIMS_RECORD`` file."""
    sections = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            sections[row["section"]] = row["values"]
    return sections


def failed_claims(chapter: str, sections: dict, only: list[str] | None = None) -> list[str]:
    """``"id (name = value, ...)"`` for each claim of the default run size (of the sections
    ``only``, default all) that the recorded values do not satisfy, or whose section was not
    recorded."""
    from seqtheory.chapters import table

    out = []
    for claim in table(chapter).claims:
        if not claim.applies("cpu") or (only and claim.section not in only):
            continue
        values = sections.get(claim.section)
        if values is None:
            out.append(f"{claim.id} (section not reached)")
        elif not claim.holds(values):
            out.append(f"{claim.id} ({claim.describe(values)})")
    return out


def write_record(chapter: str, runs: dict[int, dict], threads: int, partial: bool = False) -> Path:
    """Merge ``{seed: sections}`` into ``seqtheory/chapters/measured/CHAPTER.json`` (runs with
    more torch threads: ``CHAPTER.threadsN.json``), with each section's fingerprint;
    ``partial``: the runs hold some sections only, which replace those of the recorded runs
    (the others stay)."""
    name = f"{chapter}.json" if threads == 1 else f"{chapter}.threads{threads}.json"
    path = ROOT / "src" / "seqtheory" / "chapters" / "measured" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    # several recording processes may merge into one file: read, merge and write under a lock
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _merge_record(path, chapter, runs, threads, partial)


def _merge_record(
    path: Path, chapter: str, runs: dict[int, dict], threads: int, partial: bool = False
) -> Path:
    import datetime

    import torch

    from booktools.machine import cpu_name
    from booktools.sections import section_fingerprint

    old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    record = {
        "chapter": chapter,
        "script": "python -m booktools.robustness --record",
        "runs": dict(old.get("runs", {})),
        "run_info": dict(old.get("run_info", {})),
        "fingerprints": dict(old.get("fingerprints", {})),
    }
    info = {
        "date": datetime.date.today().isoformat(),
        "device": cpu_name(),
        "torch": torch.__version__,
        "threads": threads,
    }
    prints = {name: section_fingerprint(chapter, name) for run in runs.values() for name in run}
    for seed, sections in runs.items():
        key = str(seed)
        if partial and key in record["runs"]:
            record["runs"][key] = {**record["runs"][key], **sections}
            record["fingerprints"][key] = {
                **record["fingerprints"].get(key, {}),
                **{name: prints[name] for name in sections},
            }
            record["run_info"][key] = {**record["run_info"].get(key, {}), "partial": info}
        else:
            record["runs"][key] = sections
            record["fingerprints"][key] = {name: prints[name] for name in sections}
            record["run_info"][key] = info
    order = sorted(record["runs"], key=int)
    for part in ("runs", "run_info", "fingerprints"):
        record[part] = {s: record[part][s] for s in order if s in record[part]}
    path.write_text(record_text(record), encoding="utf-8")
    return path


def record_text(record: dict) -> str:
    """The record as JSON with one line per run and section (diffs stay readable)."""
    head = {k: v for k, v in record.items() if k not in ("runs", "run_info", "fingerprints")}
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    for part in ("run_info", "fingerprints"):
        lines.append(f" {json.dumps(part)}: {{")
        info = list(record.get(part, {}).items())
        lines += [
            f"  {json.dumps(s)}: {json.dumps(v)}{',' if i < len(info) - 1 else ''}"
            for i, (s, v) in enumerate(info)
        ]
        lines.append(" },")
    lines += [' "runs": {']
    runs = list(record["runs"].items())
    for i, (seed, sections) in enumerate(runs):
        lines.append(f"  {json.dumps(seed)}: {{")
        items = list(sections.items())
        lines += [
            f"   {json.dumps(name)}: {json.dumps(values)}{',' if j < len(items) - 1 else ''}"
            for j, (name, values) in enumerate(items)
        ]
        lines.append("  }" + ("," if i < len(runs) - 1 else ""))
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def parse_seeds(text: str) -> list[int]:
    """``"1,2"`` or ``"0-9"`` or ``"0-3,42"`` as a list of base seeds."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            seeds.extend(range(int(lo), int(hi) + 1))
        else:
            seeds.append(int(part))
    return seeds


def parse_sections(text: str, chapters: list[str], error) -> dict[str, list[str]]:
    """``"copying:lengths,copying:repeats"`` as ``{"copying": ["lengths", "repeats"]}``;
    ``error(message)`` on an unknown chapter or section."""
    from seqtheory.chapters import table

    out: dict[str, list[str]] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        chapter, _, section = part.partition(":")
        if chapter not in chapters or not section:
            error(f"--sections takes CHAPTER:SECTION with a chapter of {chapters}, got {part!r}")
        known = table(chapter).sections()
        if section not in known:
            error(f"{chapter} has the sections {known}, not {section!r}")
        out.setdefault(chapter, []).append(section)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--seeds",
        default="1,2",
        help="base seeds: comma-separated, ranges allowed (default 1,2; e.g. 0-9)",
    )
    ap.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    ap.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="runs at the same time (default and at most: the cores / --threads)",
    )
    ap.add_argument("--chapters", default="", help="comma-separated chapter names (default all)")
    ap.add_argument("--timeout", type=int, default=1800, help="per-cell timeout in seconds")
    ap.add_argument(
        "--sections",
        default="",
        help="re-record only these sections, CHAPTER:SECTION comma-separated (implies --record)",
    )
    ap.add_argument(
        "--record",
        action="store_true",
        help="collect every section's claim values and merge them into "
        "src/seqtheory/chapters/measured/CHAPTER.json",
    )
    args = ap.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    nbs = chapter_notebooks(ROOT)
    only = parse_sections(args.sections, [nb.stem for nb in nbs], ap.error)
    if only:
        args.record, args.chapters = True, ",".join(only)
    cores = available_cores()
    if args.threads < 1 or args.threads > cores:
        ap.error(f"--threads must be between 1 and {cores} (the cores), got {args.threads}")
    args.jobs = min(args.jobs or cores, cores // args.threads)
    if args.chapters:
        wanted = {c.strip() for c in args.chapters.split(",")}
        unknown = wanted - {nb.stem for nb in nbs}
        if unknown:
            ap.error(f"unknown chapter(s) {sorted(unknown)}; known: {[nb.stem for nb in nbs]}")
        nbs = [nb for nb in nbs if nb.stem in wanted]
    jobs = [(nb, s) for nb in nbs for s in seeds]
    print(
        f"{len(jobs)} runs: {len(nbs)} chapter(s) x base seeds {seeds}, {args.threads} "
        f"thread(s) each, {args.jobs} at a time",
        flush=True,
    )
    results: dict = {}
    t0 = time.perf_counter()

    def work(job):
        nb, s = job
        r = run_one(nb, s, args.threads, args.timeout, args.record, only.get(nb.stem))
        results[job] = r
        status = "pass" if r["ok"] else f"FAIL {r.get('line', '')} -> {r['error']}"
        print(
            f"[{time.perf_counter() - t0:6.0f} s] {nb.stem} seed {s}: {status} "
            f"({r['seconds']:.0f} s)",
            flush=True,
        )

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(work, jobs))

    print("\n| chapter | " + " | ".join(f"seed {s}" for s in seeds) + " |")
    print("|---|" + "---|" * len(seeds))
    rows = []
    for nb in nbs:
        cells = []
        for s in seeds:
            r = results[(nb, s)]
            cell = (
                f"pass ({r['seconds']:.0f} s)"
                if r["ok"]
                else (
                    f"**FAIL** `{r.get('line', '')[:80]}` -> {r['error'][:160]} "
                    f"({r['seconds']:.0f} s)"
                )
            )
            cells.append(cell)
            rows.append(
                (
                    nb.stem,
                    s,
                    "pass" if r["ok"] else "fail",
                    f"{r['seconds']:.1f}",
                    r.get("line", ""),
                    r.get("error", ""),
                )
            )
        print(f"| {nb.stem} | " + " | ".join(cells) + " |")
    out = ROOT / "_build" / "robustness.tsv"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        "chapter\tseed\tresult\tseconds\tline\terror\n"
        + "".join(
            "\t".join(str(v).replace("\t", " ").replace("\n", " ") for v in row) + "\n"
            for row in rows
        )
    )
    if args.record:
        for nb in nbs:
            runs = {s: results[(nb, s)]["sections"] for s in seeds if results[(nb, s)]["sections"]}
            if runs:
                path = write_record(nb.stem, runs, args.threads, partial=nb.stem in only)
                print(f"recorded {len(runs)} run(s) into {path.relative_to(ROOT)}")
    failed = sum(not r["ok"] for r in results.values())
    print(f"\n{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
