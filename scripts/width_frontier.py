"""Pareto frontiers of offline sparse parity: the data behind "The frontier" in
book/width_and_luck.md.

Trains the chapter's two-layer ReLU networks (n = 30, k = 3, batch 32, SGD lr 0.1, weight
decay 0.01, hinge loss; seqtheory.parity.WIDTH_LUCK_SETUP) on every combination of training-set
size m, width, initialisation (dense / sparse with s = 6) and seed, for STEPS steps, and
records every EVAL_EVERY steps how many of the seeds of each cell reach the chapter's
success threshold (test accuracy >= 0.9 on 2,000 fresh examples). With a constant
learning rate the first t steps of a run are exactly the t-step run, so the record is
the success rate over (samples x width x steps). All networks of one width train as one
batched program (seqtheory.parity.ParityMLPs, trained by seqtheory.parity.train_offline);
the random numbers come from CPU generators (seqtheory.make_generator(SEED_OFFSET + width),
so independent of the chapter's own seeds), so a GPU run draws the same data and
initialisations as a CPU run (unlike seqtheory.parity.run_width_luck, which draws them on
its device).

    python scripts/width_frontier.py --device cuda     # 6 minutes on one H100 (2026-11-23)
    SEQTHEORY_NUM_THREADS=1 python scripts/width_frontier.py --widths 8,32   # a CPU slice

Writes src/seqtheory/data/width_frontier.json (shipped with the library:
seqtheory.book.archive.load_data("width_frontier.json")) after every width. Its meta records the
checkout's commit (``git rev-parse HEAD``; None outside a git checkout; the shipped file
has no such field).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch
from _archive import git_commit

import seqtheory
from booktools.machine import cpu_name
from seqtheory import derive_seed, make_generator, setup_threads
from seqtheory.core.runtime import check_device
from seqtheory.parity import WIDTH_LUCK_SETUP, ParityMLPs, train_offline

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "width_frontier.json"
SAMPLES = (100, 150, 200, 300, 400, 600, 800, 1200)
WIDTHS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)
INITS = ("dense", "sparse")
SEEDS = 16
STEPS = 20000
EVAL_EVERY = 250
SEED_OFFSET = 10_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--widths", default=",".join(map(str, WIDTHS)))
    ap.add_argument("--seeds", type=int, default=SEEDS)
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    threads = setup_threads()
    dev = check_device("--device", args.device)
    cfg = WIDTH_LUCK_SETUP.pick("cpu")
    device = (
        f"GPU ({torch.cuda.get_device_name(dev)})"
        if dev.type == "cuda"
        else f"CPU ({cpu_name()}), {threads} thread(s)"
    )
    combos = [(m, init, r) for m in SAMPLES for init in INITS for r in range(args.seeds)]
    meta = {
        "script": "scripts/width_frontier.py",
        "seqtheory": seqtheory.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "git_commit": git_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "device": device,
        "setup": dataclasses.asdict(cfg),
        "samples": list(SAMPLES),
        "widths": [],
        "inits": list(INITS),
        "seeds": args.seeds,
        "steps": args.steps,
        "eval_every": EVAL_EVERY,
        "seed_offset": SEED_OFFSET,
        "derived_seeds": {},
        "seconds": {},
    }
    # successes[init][width][m] = per evaluation, how many of the seeds reach cfg.success
    out = {
        "meta": meta,
        "eval_steps": None,
        "successes": {i: {} for i in INITS},
        "final_accuracy": {i: {} for i in INITS},
    }
    for w in widths:
        start = time.perf_counter()
        g = make_generator(SEED_OFFSET + w)
        nets = ParityMLPs(
            cfg.n,
            [w] * len(combos),
            sparsity=[cfg.sparsity if i == "sparse" else None for _, i, _ in combos],
            generator=g,
            device=dev,
        )  # drawn on the CPU, moved to dev
        run = train_offline(
            nets,
            list(range(cfg.k)),
            [m for m, _, _ in combos],
            steps=args.steps,
            batch_size=cfg.batch_size,
            lr=cfg.lr,
            weight_decay=cfg.weight_decay,
            eval_every=EVAL_EVERY,
            generator=g,
            progress=False,
        )
        hit = run.accuracy >= cfg.success  # (E, M)
        out["eval_steps"] = run.steps.tolist()
        for init in INITS:
            out["successes"][init][str(w)] = {}
            out["final_accuracy"][init][str(w)] = {}
            for m in SAMPLES:
                cols = [j for j, c in enumerate(combos) if c[0] == m and c[1] == init]
                out["successes"][init][str(w)][str(m)] = hit[:, cols].sum(1).tolist()
                out["final_accuracy"][init][str(w)][str(m)] = np.round(
                    run.accuracy[-1, cols], 4
                ).tolist()
        secs = round(time.perf_counter() - start, 1)
        meta["widths"].append(w)
        meta["derived_seeds"][str(w)] = derive_seed(SEED_OFFSET + w)
        meta["seconds"][str(w)] = secs
        rates = {i: [int(out["successes"][i][str(w)][str(m)][-1]) for m in SAMPLES] for i in INITS}
        print(
            f"width {w:5d} | {secs:7.1f} s | successes at step {args.steps} "
            f"(of {args.seeds}) over m={SAMPLES}: {rates}",
            flush=True,
        )
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, separators=(",", ":")))
    print(f"wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
