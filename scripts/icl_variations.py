"""Switch steps over seeds: the data behind "Variations" in book/induction_heads.md.

Trains the chapter's ICL-MC transformer (2-layer attention-only, d_model = 16, T = 100,
batch 64, AdamW 1e-3, constant rate) on each task variation for several seeds and records,
every `eval_every` steps, the held-out loss, the KL divergence from each strategy to the
model and the two attention statistics of the induction-head mechanism. Each run is
trained for `steps` (a little longer than the chapter's live run of the same task), so the
switch step can be read off both at the chapter's budget and at the longer one: with a
constant learning rate the first N steps of a longer run are exactly the N-step run.

    SEQTHEORY_NUM_THREADS=1 python scripts/icl_variations.py     # about 12 minutes on one free core

writes src/seqtheory/data/icl_variations.json (shipped with the library:
seqtheory.book.archive.load_data("icl_variations.json")) after every seed, so an interrupted run
still leaves the seeds it finished. Seeds go through seqtheory's base-seed helper.
"""

from __future__ import annotations

import datetime
import json
import platform
import time
from pathlib import Path

import torch

import seqtheory
from booktools.machine import cpu_name
from seqtheory import derive_seed, setup_threads
from seqtheory.incontext import SETUP, switch_step
from seqtheory.incontext import run as run_icl

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "icl_variations.json"
SEEDS = (0, 1, 2)

# label: (changes to the main set-up, steps of the archived run, steps of the chapter's
# live run, the pair of strategies whose crossing defines the switch)
VARIANTS = {
    "k=2, α=1": (dict(k=2), 2000, 1600, ("bigram", "unigram")),
    "k=3, α=1": (dict(), 2000, 2000, ("bigram", "unigram")),
    "k=5, α=1": (dict(k=5), 1200, 1000, ("bigram", "unigram")),
    "k=3, α=4": (dict(alpha=4.0), 2000, 1500, ("bigram", "unigram")),
    "doubly stochastic": (dict(prior="doubly_stochastic"), 2000, 1600, ("bigram", "uniform")),
}


def truncated_switch(history, steps: int, lower: str, upper: str):
    """switch_step of the first ``steps`` optimisation steps of ``history``."""
    s, low = history.metric(f"KL({lower}||model)")
    _, up = history.metric(f"KL({upper}||model)")
    keep = s <= steps
    closer = (low < up)[keep]
    for i in range(1, int(keep.sum())):
        if closer[i:].all():
            return int(s[keep][i])
    return None


def record(run, names):
    h = run.history
    steps = h.metric("loss")[0]
    out = {
        "steps": steps.tolist(),
        "loss": h.metric("loss")[1].tolist(),
        "reference_loss": run.evaluator.reference_loss,
    }
    for n in names:
        out[f"KL({n}||model)"] = h.metric(f"KL({n}||model)")[1].tolist()
    for n in ("layer-1 previous-token attention", "layer-2 induction attention"):
        out[n] = h.metric(n)[1].tolist()
    return out


def main() -> None:
    threads = setup_threads()
    base = SETUP.pick("cpu")
    meta = {
        "script": "scripts/icl_variations.py",
        "seqtheory": seqtheory.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "device": f"CPU ({cpu_name()}), {threads} thread(s)",
        "setup": {k: v for k, v in base.__dict__.items()},
        "variants": {
            label: {"changes": ch, "steps": n, "chapter_steps": nc, "switch": list(pair)}
            for label, (ch, n, nc, pair) in VARIANTS.items()
        },
        "seeds": [],
        "derived_seeds": [],
    }
    runs = []
    for seed in SEEDS:
        for label, (changes, steps, chapter_steps, (lower, upper)) in VARIANTS.items():
            setup = base.replace(steps=steps, **changes)
            start = time.perf_counter()
            run = run_icl(
                setup, seed=seed, eval_n=256, desc=f"{label}, seed {seed}", progress=False
            )
            rec = {
                "variant": label,
                "seed": seed,
                "derived_seed": derive_seed(seed),
                "seconds": round(time.perf_counter() - start, 1),
                "switch": switch_step(run.history, lower, upper),
                "switch_at_chapter_steps": truncated_switch(
                    run.history, chapter_steps, lower, upper
                ),
                **record(run, ("uniform", "unigram", "bigram")),
            }
            runs.append(rec)
            print(
                f"seed {seed} | {label:18s} | switch {rec['switch']} "
                f"(chapter budget: {rec['switch_at_chapter_steps']}) | "
                f"{rec['seconds']} s",
                flush=True,
            )
        meta["seeds"].append(seed)
        meta["derived_seeds"].append(derive_seed(seed))
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps({"meta": meta, "runs": runs}, default=str))
        print(f"wrote {OUT} (seeds {meta['seeds']})", flush=True)


if __name__ == "__main__":
    main()
