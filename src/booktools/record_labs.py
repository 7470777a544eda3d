"""Record every coding lab's reference answer under several base seeds.

    python -m booktools.record_labs --chapters scaling_laws [--labs ex-scaling-laws-1]
                                    [--seeds 0-7] [--threads 1]

Each lab of a chapter's ``LABS`` (a :class:`seqtheory.book.exercises.LabTable`) has a
reference solution (a function of the base seed) in ``scripts/lab_solutions/CHAPTER.py``,
the lecturer's material outside the installed library.  This script runs them and merges
the answers into ``scripts/lab_solutions/CHAPTER.labs.json`` (a seed recorded before is
replaced, others are kept): the data a unit test holds against the lab's expected range.
It prints each lab's values, their spread, its range and the time taken.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time

from booktools import ROOT
from booktools.robustness import parse_seeds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", required=True, help="comma-separated chapter names")
    parser.add_argument("--labs", default="", help="comma-separated lab labels (default: all)")
    parser.add_argument("--seeds", default="0-7", help="base seeds, e.g. 0-7 or 0-3,42")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import numpy as np
    import torch

    from booktools.labs import record_path, table_with_solutions
    from booktools.machine import cpu_name
    from seqtheory.book.claims import plain

    torch.set_num_threads(args.threads)
    seeds = parse_seeds(args.seeds)
    if len(seeds) < 1:
        parser.error("--seeds must name at least one seed")
    wanted = [s for s in args.labs.split(",") if s]
    for chapter in [c for c in args.chapters.split(",") if c]:
        labs = table_with_solutions(chapter)
        path = record_path(chapter)
        old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"labs": {}}
        record = {
            "chapter": chapter,
            "script": "python -m booktools.record_labs",
            "info": {
                "date": datetime.date.today().isoformat(),
                "device": cpu_name(),
                "torch": torch.__version__,
                "threads": args.threads,
            },
            "labs": {k: v for k, v in old["labs"].items() if k in labs.labs},
        }
        for label, lab in labs.labs.items():
            if wanted and label not in wanted:
                continue
            start = time.perf_counter()
            answers = {str(s): plain(labs.solve(label, s), label) for s in seeds}
            took = (time.perf_counter() - start) / len(seeds)
            values = [lab.value(a) for a in answers.values()]
            inside = sum(lab.low <= v <= lab.high for v in values)
            print(
                f"{label}: {lab.quantity} = "
                + ", ".join(f"{v:.4g}" for v in values)
                + f" (median {np.median(values):.4g}, from {min(values):.4g} to {max(values):.4g})"
                + f"; range [{lab.low}, {lab.high}] holds {inside}/{len(values)}; "
                f"{took:.1f} s per seed"
            )
            merged = {**record["labs"].get(label, {}), **answers}
            record["labs"][label] = dict(sorted(merged.items(), key=lambda kv: int(kv[0])))
        record["labs"] = dict(
            sorted(record["labs"].items(), key=lambda kv: int(kv[0].rsplit("-", 1)[1]))
        )
        lines = ["{"] + [
            f" {json.dumps(k)}: {json.dumps(v)}," for k, v in record.items() if k != "labs"
        ]
        items = list(record["labs"].items())
        lines.append(' "labs": {')
        lines += [
            f"  {json.dumps(k)}: {json.dumps(v)}{',' if i < len(items) - 1 else ''}"
            for i, (k, v) in enumerate(items)
        ]
        lines += [" }", "}"]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
