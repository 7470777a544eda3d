"""The same benchmarks from two revisions of the library, interleaved in one run.

Checks that a change (a refactor) costs no speed: each benchmark script runs from a
checkout of ``--before`` (a git revision, checked out in a temporary worktree) and from the
working tree, alternating, ``--repeats`` times each, with one torch thread; the table gives
the median wall time of the whole script per revision and their ratio, and ``--show``
prints each script's own table from the last repeat.

Run:  python benchmarks/compare_revisions.py --before HEAD~5 [--bench bench_part2 ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = (
    "bench_models",
    "bench_ensemble",
    "bench_part2",
    "bench_partitions",
    "bench_representations",
)


def run_script(tree: Path, name: str, args: list[str]) -> tuple[float, str]:
    """Wall seconds and output of ``benchmarks/NAME.py`` run from ``tree`` (its own library)."""
    env = dict(
        os.environ,
        PYTHONPATH=str(tree / "src"),
        SEQTHEORY_NUM_THREADS="1",
        SEQTHEORY_STATIC_PROGRESS="1",
    )
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(tree / "benchmarks" / f"{name}.py"), *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError(f"{name} failed in {tree}:\n{out.stderr[-2000:]}")
    return seconds, out.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="git revision to compare against")
    parser.add_argument(
        "--bench",
        nargs="+",
        default=list(DEFAULT),
        help=f"benchmark scripts (default: {' '.join(DEFAULT)})",
    )
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--show", action="store_true", help="print each script's own output")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "before"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(before), args.before],
            cwd=ROOT,
            check=True,
        )
        try:
            rows = []
            for name in args.bench:
                times = {"before": [], "after": []}
                outputs = {}
                for _ in range(args.repeats):
                    for label, tree in (("before", before), ("after", ROOT)):
                        if not (tree / "benchmarks" / f"{name}.py").is_file():
                            raise SystemExit(f"{name}.py is missing in the {label} revision")
                        seconds, outputs[label] = run_script(tree, name, [])
                        times[label].append(seconds)
                b, a = statistics.median(times["before"]), statistics.median(times["after"])
                rows.append((name, b, a))
                print(f"{name}: before {b:.1f} s, after {a:.1f} s", flush=True)
                if args.show:
                    for label in ("before", "after"):
                        print(f"--- {name} ({label})\n{outputs[label]}")
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, check=False
            )
    print(f"\n| benchmark | before {args.before} (s) | after (s) | after / before |")
    print("|---|---|---|---|")
    for name, b, a in rows:
        print(f"| {name} | {b:.1f} | {a:.1f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
