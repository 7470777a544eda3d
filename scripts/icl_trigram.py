"""Binary second-order chains over seeds: the data behind "Trigrams" in book/induction_heads.md.

Trains the chapter's trigram set-up (seqtheory.incontext.TRIGRAM_SETUP: k = 2, order 2, a
2-layer attention-only transformer with two heads in layer 1 and one in layer 2,
d_model = 32, T = 100, batch 64, AdamW 3e-3, constant rate) for several seeds and records,
every `eval_every` steps, the held-out loss (256 sequences) and the KL divergence from the
uniform, unigram, bigram and trigram rules to the model. With a constant learning rate the
first N steps of a run are exactly the N-step run, so the phases can be read off at any
budget up to `steps` (the file records the switch to the trigram rule within a 2,500-step
budget, SHORT_BUDGET, and at the full length).

    SEQTHEORY_NUM_THREADS=1 python scripts/icl_trigram.py --jobs 3   # ~4 min on 3 free cores

writes src/seqtheory/data/icl_trigram.json (shipped with the library:
seqtheory.book.archive.load_data("icl_trigram.json")). Seeds go through seqtheory's base-seed
helper; each run uses one torch thread, whatever --jobs is, so results do not depend on it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

import seqtheory
from booktools.machine import cpu_name
from seqtheory import derive_seed, setup_threads
from seqtheory.incontext import TRIGRAM_SETUP, phases, switch_step
from seqtheory.incontext import run as run_icl

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "icl_trigram.json"
SEEDS = (0, 1, 2)
NAMES = ("uniform", "unigram", "bigram", "trigram")
SHORT_BUDGET = 2500  # steps: a 2,500-step budget, shorter than the archived runs


def truncated_switch(steps, lower, upper, budget: int):
    """switch_step of the first ``budget`` steps: first evaluation after which ``lower`` is
    closer than ``upper`` at every evaluation up to ``budget`` (None if never)."""
    keep = [i for i, s in enumerate(steps) if s <= budget]
    closer = [lower[i] < upper[i] for i in keep]
    for i in range(1, len(keep)):
        if all(closer[i:]):
            return int(steps[keep[i]])
    return None


def one_seed(seed: int, mode: str) -> dict:
    torch.set_num_threads(1)
    setup = TRIGRAM_SETUP.pick(mode)
    start = time.perf_counter()
    cpu = time.process_time()
    run = run_icl(setup, seed=seed, eval_n=256, desc=f"trigram, seed {seed}", progress=False)
    h = run.history
    steps = h.metric("loss")[0]
    kl = {n: h.metric(f"KL({n}||model)")[1] for n in NAMES}
    return {
        "seed": seed,
        "derived_seed": derive_seed(seed),
        "seconds": round(time.perf_counter() - start, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
        "steps": steps.tolist(),
        "loss": h.metric("loss")[1].tolist(),
        "reference_loss": run.evaluator.reference_loss,
        **{f"KL({n}||model)": v.tolist() for n, v in kl.items()},
        "phases": phases(steps, kl),
        "switch": switch_step(h, "trigram", "bigram"),
        "switch_at_short_budget": truncated_switch(
            steps.tolist(), kl["trigram"], kl["bigram"], SHORT_BUDGET
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1, help="seeds trained in parallel")
    parser.add_argument("--mode", choices=("cpu", "full"), default="cpu")
    args = parser.parse_args()
    if args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    setup_threads()
    setup = TRIGRAM_SETUP.pick(args.mode)
    meta = {
        "script": "scripts/icl_trigram.py",
        "seqtheory": seqtheory.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "device": f"CPU ({cpu_name()}, {os.cpu_count()} cores), 1 thread per run",
        "mode": args.mode,
        "setup": dict(setup.__dict__),
        "short_budget": SHORT_BUDGET,
        "seeds": list(SEEDS),
        "derived_seeds": [derive_seed(s) for s in SEEDS],
    }
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        runs = list(pool.map(one_seed, SEEDS, [args.mode] * len(SEEDS)))
    for r in runs:
        print(
            f"seed {r['seed']} | phases {r['phases']} | switch {r['switch']} "
            f"(at {SHORT_BUDGET}: {r['switch_at_short_budget']}) | {r['cpu_seconds']} s CPU",
            flush=True,
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"meta": meta, "runs": runs}, default=str))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
