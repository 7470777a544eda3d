"""Decoder width as a starvation axis: the data behind "The decoder's share" in
book/representations.md.

Trains the chapter's kinship models (seqtheory.representations.SETUP.cpu: the family forest,
its 80 % split, AdamW lr 1e-2 for 1,000 full-batch steps, no weight decay) with embedding
sizes DIMS and every decoder width in WIDTHS, four initialisation seeds per cell, under each
base seed of BASE_SEEDS (a base seed re-draws the forest's split and the models, exactly as
``seqtheory.representations.run`` does: the cell of width 32 is the chapter's own zoo).
Records held-out and training accuracy per model.  All models of one width train as one
batched program.

    SEQTHEORY_NUM_THREADS=1 python scripts/representations_decoder.py   # ~8 min, one CPU thread

Writes src/seqtheory/data/representations_decoder.json (shipped with the library:
seqtheory.book.archive.load_data("representations_decoder.json")).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import time
from pathlib import Path

import torch
from _archive import git_commit

import seqtheory
from booktools.machine import cpu_name
from seqtheory import setup_threads
from seqtheory.core.runtime import check_device
from seqtheory.kinship import accuracy, train_kinship
from seqtheory.representations import SETUP, kinship_task

OUT = (
    Path(__file__).resolve().parents[1]
    / "src"
    / "seqtheory"
    / "data"
    / "representations_decoder.json"
)
DIMS = (8, 32)
WIDTHS = (4, 8, 16, 32, 128, 512)
BASE_SEEDS = (0, 1, 2, 3)
WEIGHT_DECAY = 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    threads = setup_threads()
    dev = check_device("--device", args.device)
    setup = SETUP.cpu
    device = (
        f"GPU ({torch.cuda.get_device_name(dev)})"
        if dev.type == "cuda"
        else f"CPU ({cpu_name()}), {threads} thread(s)"
    )
    meta = {
        "script": "scripts/representations_decoder.py",
        "seqtheory": seqtheory.__version__,
        "commit": git_commit(),
        "date": datetime.date.today().isoformat(),
        "device": device,
        "torch": torch.__version__,
        "dims": DIMS,
        "widths": WIDTHS,
        "base_seeds": BASE_SEEDS,
        "seeds": setup.seeds,
        "weight_decay": WEIGHT_DECAY,
        "setup": dataclasses.asdict(setup),
    }
    runs = []
    start = time.perf_counter()
    for base in BASE_SEEDS:
        data = kinship_task(setup, seed=base).data
        for width in WIDTHS:
            models, _ = train_kinship(
                data,
                DIMS,
                setup.seeds,
                hidden=width,
                steps=setup.steps,
                lr=setup.lr,
                weight_decay=WEIGHT_DECAY,
                base=base,
                device=dev,
                progress=False,
            )
            held, train = accuracy(models, data), accuracy(models, data, "train")
            for k, (d, s) in enumerate((d, s) for d in DIMS for s in setup.seeds):
                runs.append(
                    {
                        "base": base,
                        "d": d,
                        "width": width,
                        "seed": s,
                        "held_out": float(held[k]),
                        "train": float(train[k]),
                    }
                )
            print(f"base {base} width {width}: {time.perf_counter() - start:.0f} s", flush=True)
    meta["seconds"] = round(time.perf_counter() - start, 1)
    Path(args.out).write_text(json.dumps({"meta": meta, "runs": runs}, indent=0))


if __name__ == "__main__":
    main()
