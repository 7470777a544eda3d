"""Characters versus tokens for longer: the archived run behind experiment 2 of
book/tokenization.md.

Trains the chapter's 2-layer transformer (seqtheory.tokenization.race: two heads,
d_model = 32, MLPs, AdamW 1e-3, constant rate) on the 4th-order switching source
(p = q = 0.8), on characters and on BPE-64 tokens, for `--steps` steps and several seeds,
and records the held-out loss per character every 25 steps and the characters seen.
With the constant learning rate the first 125 steps of each run are the chapter's live
run (same seed, same data stream), so the chapter checks its live run against this file.

    SEQTHEORY_NUM_THREADS=1 python scripts/tokenization_race.py     # about 10 minutes on one core

writes src/seqtheory/data/tokenization_race.json (seqtheory.book.archive.load_data).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path

import torch

import seqtheory
from booktools.machine import cpu_name
from seqtheory import base_seed, setup_threads
from seqtheory.tokenization import SETUP, race

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "tokenization_race.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    setup_threads()
    seeds = tuple(int(s) for s in args.seeds.split(","))
    start = time.perf_counter()
    result = race(SETUP.cpu, seed=0, steps=args.steps, seeds=seeds)
    runs = {}
    for kind, hists in result.histories.items():
        runs[kind] = []
        for s, h, seen in zip(seeds, hists, result.chars_seen[kind], strict=True):
            steps, bits = h.metric("bits/char")
            runs[kind].append(
                {
                    "seed": s,
                    "steps": steps.tolist(),
                    "bits_per_char": bits.tolist(),
                    "chars_seen": [int(seen[i]) for i in steps],
                    "ms_per_step": h.seconds / len(h.steps) * 1e3,
                }
            )
    data = {
        "meta": {
            "script": "scripts/tokenization_race.py",
            "steps": args.steps,
            "seeds": list(seeds),
            "base_seed": base_seed(),
            "date": datetime.date.today().isoformat(),
            "device": cpu_name(),
            "threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "seqtheory": seqtheory.__version__,
            "seconds": round(time.perf_counter() - start, 1),
        },
        "unigram_bits": result.unigram_bits,
        "runs": runs,
    }
    Path(args.out).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({data['meta']['seconds']} s)")


if __name__ == "__main__":
    main()
