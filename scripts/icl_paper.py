"""The authors' configuration (seqtheory.incontext.PAPER) trained over seeds: data behind the
"published configuration" paragraph of book/induction_heads.md.

PAPER is what ``FULL=1`` selects for the chapter's main run: relative positions, dropout 0.1,
AdamW lr 5e-4 with betas (0.9, 0.95) and weight decay 0.1 on linear weights, no gradient
clipping (see its docstring for what still differs from the authors' code).  Each seed is
trained for PAPER.steps steps on k = 3 chains and evaluated every PAPER.eval_every steps
on 256 held-out sequences; the switch step is seqtheory.incontext.switch_step.

    SEQTHEORY_NUM_THREADS=1 python scripts/icl_paper.py [--seeds 0,1,2] [--device cuda]

writes src/seqtheory/data/icl_paper.json after every seed (load it with
seqtheory.book.archive.load_data("icl_paper.json")).  On a GPU the archive was made with one process
per seed, all on the same GPU (tiny models leave it mostly idle), then merged:

    for s in 0 1 2 3 4 5 6 7; do python scripts/icl_paper.py --device cuda --patience 0 \
        --seeds $s --out part$s.json & done; wait
    python scripts/icl_paper.py --merge part*.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path

import torch
from _archive import add_run_arguments, device_label, merge_parts

import seqtheory
from seqtheory import derive_seed, setup_threads
from seqtheory.core.runtime import check_device
from seqtheory.incontext import PAPER, switch_step
from seqtheory.incontext import run as run_icl

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "icl_paper.json"
NAMES = ("uniform", "unigram", "bigram")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--out", type=Path, default=OUT, help="JSON to write")
    parser.add_argument("--device", default="cpu", help="where to train: cpu, cuda, ...")
    parser.add_argument(
        "--concurrent",
        type=int,
        default=1,
        help="how many such processes share the device (recorded in meta)",
    )
    add_run_arguments(parser)
    args = parser.parse_args()
    if args.merge:
        merge_parts(args.merge, args.out, key=lambda r: r["seed"])
        return
    threads = setup_threads()
    device = check_device("--device", args.device)
    meta = {
        "script": "scripts/icl_paper.py",
        "seqtheory": seqtheory.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "device": device_label(device, threads),
        "patience": args.patience,
        "concurrent": args.concurrent,
        "setup": {k: v for k, v in PAPER.__dict__.items()},
        "seeds": [],
    }
    runs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        start, cpu = time.perf_counter(), time.process_time()
        run = run_icl(
            PAPER,
            seed=seed,
            eval_n=256,
            progress=False,
            desc=f"seed {seed}",
            stop_after_switch=args.patience or None,
            device=device,
        )
        h = run.history
        rec = {
            "seed": seed,
            "derived_seed": derive_seed(seed),
            "seconds": round(time.perf_counter() - start, 1),
            "cpu_seconds": round(time.process_time() - cpu, 1),
            "switch": switch_step(h),
            "steps": h.metric("loss")[0].tolist(),
            "loss": h.metric("loss")[1].tolist(),
            "reference_loss": run.evaluator.reference_loss,
            **{f"KL({n}||model)": h.metric(f"KL({n}||model)")[1].tolist() for n in NAMES},
        }
        runs.append(rec)
        meta["seeds"].append(seed)
        print(
            f"seed {seed}: switch {rec['switch']}, final loss {rec['loss'][-1]:.3f}, "
            f"{rec['seconds']} s ({rec['cpu_seconds']} CPU s)",
            flush=True,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"meta": meta, "runs": runs}, default=str))


if __name__ == "__main__":
    main()
