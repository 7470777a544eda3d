"""Run chapters under one base seed and compare every claim value with the record, bit for bit.

A change to the library that should not change what the book computes (a refactor, a faster
kernel for the same arithmetic) must leave every value behind every claim exactly as
recorded. This script executes each chapter as ``python -m booktools.robustness --record``
does (one torch thread, checks lenient, values collected), without writing the record, and
compares each section's values with the recorded run of the same base seed
(``src/seqtheory/chapters/measured/CHAPTER.json``)::

    python -m booktools.same_values                  # base seed 0, every chapter
    python -m booktools.same_values --chapters meet_the_model,copying --save _build/v.json
    python -m booktools.same_values --against _build/v.json   # two revisions, one machine

It prints, per chapter, how many sections and values it compared and how many differ (with
the first differences); exit status 1 if any value differs or a section is missing.
Values are compared as JSON writes them (``repr`` of each float): equal means the same bits;
wall-clock times (names starting ``ms_``) are left out.
A record made on another CPU differs in the last bits (and in measured times); to compare
two revisions, run the first with ``--save`` and the second with ``--against`` on one machine.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from booktools import ROOT
from booktools.execute import available_cores
from booktools.robustness import run_one
from booktools.toc import chapter_notebooks

MEASURED = ROOT / "src" / "seqtheory" / "chapters" / "measured"
#: values that are wall-clock times (tokenization's race.ms_characters, ...): never the same
TIMES = r"(^|\.)ms_"


def flatten(values, prefix: str = "") -> dict:
    """``{"name[i]...": scalar}`` for a section's values (lists and dicts unrolled)."""
    if isinstance(values, dict):
        out = {}
        for k, v in values.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(values, list):
        out = {}
        for i, v in enumerate(values):
            out.update(flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix: values}


def compare(recorded: dict, measured: dict, ignore: str = TIMES) -> tuple[int, int, list[str]]:
    """``(sections compared, values compared, differences)`` of two ``{section: values}``;
    values whose ``section.name`` matches the regular expression ``ignore`` are left out."""
    diffs, n_values = [], 0
    for section in sorted(set(recorded) | set(measured)):
        if section not in measured:
            diffs.append(f"{section}: recorded, not computed now")
            continue
        if section not in recorded:
            diffs.append(f"{section}: computed now, not recorded")
            continue
        old, new = flatten(recorded[section]), flatten(measured[section])
        old = {k: v for k, v in old.items() if not re.search(ignore, f"{section}.{k}")}
        new = {k: v for k, v in new.items() if not re.search(ignore, f"{section}.{k}")}
        n_values += len(old)
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key, "(missing)"), new.get(key, "(missing)")
            if json.dumps(a) != json.dumps(b):
                diffs.append(f"{section}.{key}: recorded {a!r}, now {b!r}")
    return len(recorded), n_values, diffs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    ap.add_argument("--chapters", default="", help="comma-separated chapter names (default all)")
    ap.add_argument("--jobs", type=int, default=None, help="chapters at a time (default: cores)")
    ap.add_argument("--timeout", type=int, default=1800, help="per-cell timeout in seconds")
    ap.add_argument("--save", default="", help="also write the computed values to this JSON file")
    ap.add_argument(
        "--against",
        default="",
        help="compare with the values another run saved (--save) instead of the record: "
        "two revisions on one machine (the record may come from another CPU)",
    )
    args = ap.parse_args(argv)
    nbs = chapter_notebooks(ROOT)
    if args.chapters:
        wanted = {c.strip() for c in args.chapters.split(",") if c.strip()}
        unknown = wanted - {nb.stem for nb in nbs}
        if unknown:
            ap.error(f"unknown chapter(s) {sorted(unknown)}; known: {[nb.stem for nb in nbs]}")
        nbs = [nb for nb in nbs if nb.stem in wanted]
    jobs = min(args.jobs or available_cores(), available_cores())
    t0 = time.perf_counter()
    results: dict = {}

    def work(nb):
        results[nb.stem] = run_one(nb, args.seed, 1, args.timeout, record=True)
        print(f"[{time.perf_counter() - t0:6.0f} s] {nb.stem} done", flush=True)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(work, nbs))
    if args.save:
        saved = {k: r.get("sections", {}) for k, r in results.items()}
        (ROOT / args.save).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / args.save).write_text(json.dumps(saved, indent=1), encoding="utf-8")

    other = json.loads((ROOT / args.against).read_text(encoding="utf-8")) if args.against else None
    against = args.against or "the recorded run of that seed"
    print(f"\nbase seed {args.seed}, 1 thread, against {against}\n")
    print("| chapter | sections | values | differ | run |")
    print("|---|---|---|---|---|")
    bad = 0
    notes = []
    for nb in nbs:
        r = results[nb.stem]
        if other is not None:
            recorded = other.get(nb.stem, {})
        else:
            path = MEASURED / f"{nb.stem}.json"
            runs = json.loads(path.read_text(encoding="utf-8"))["runs"] if path.exists() else {}
            recorded = runs.get(str(args.seed), {})
        n_sec, n_val, diffs = compare(recorded, r.get("sections", {}))
        status = "ok" if r["ok"] else f"failed: {r.get('error', '')[:80]}"
        print(f"| {nb.stem} | {n_sec} | {n_val} | {len(diffs)} | {status} |")
        bad += len(diffs) + (not r["ok"])
        notes += [f"{nb.stem}: {d}" for d in diffs[:10]]
    if notes:
        print("\nfirst differences:")
        print("\n".join(notes))
    print(f"\n{'identical' if not bad else 'DIFFERENT'} ({time.perf_counter() - t0:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
