"""Learning rates and state sizes: the archived data behind book/copying.md.

Part "lr": each of the chapter's five models (seqtheory.copying.MODEL_NAMES) is trained
at the chapter's size (strings of 5-10 letters, batch 32, 600 steps, warm-up and cosine
decay) at each peak learning rate of LRS, for three tuning seeds (100-102, not the
chapter's 0-2), and the final string accuracy at length 10 and the final training loss
are recorded per seed. A model's tuned rate is the one with the best median accuracy,
ties (within 0.02) broken by the lower median final loss.

Part "state": the two fixed-state models of the chapter are trained with states of
several sizes on strings of 1-MAX_LEN letters (STATE_STEPS steps, batch 32, each model at
its tuned rate, three seeds) and their string accuracy is measured at every length
1..MAX_LEN: the longest copyable length against the size of the state.

    python scripts/copying_sweeps.py --jobs 16     # about 3 minutes on 16 cores (193 s)

runs every (model, setting) as its own process with one torch thread and writes
src/seqtheory/data/copying_sweeps.json (seqtheory.book.archive.load_data("copying_sweeps.json")).
Seeds go through seqtheory's base-seed helper (run it with SEQTHEORY_SEED unset).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "copying_sweeps.json"
LRS = (1e-3, 3e-3, 1e-2, 3e-2)
TUNE_SEEDS = (100, 101, 102)
MAX_LEN = 20  # part "state": strings of 1..MAX_LEN letters
STATE_STEPS = 1500
# part "state": model -> sizes (LSTM hidden units; gated recurrence d_state per layer, two
# layers): states of 8, 16, 32, 64 and 128 numbers for both
STATE_SIZES = {"LSTM": (4, 8, 16, 32, 64), "gated recurrence": (4, 8, 16, 32, 64)}


def _lr_job(name: str, lr: float) -> dict:
    from seqtheory import setup_threads
    from seqtheory.copying import SETUP, run

    setup_threads(1)
    setup = dataclasses.replace(SETUP.cpu, seeds=TUNE_SEEDS, lrs=((name, lr),), names=(name,))
    t0 = time.perf_counter()
    try:  # base seed 0: the tuning seeds are TUNE_SEEDS themselves
        result = run(setup, seed=0, device="cpu", progress=False).runs[name]
    except FloatingPointError:  # diverged at this rate
        return {
            "model": name,
            "lr": lr,
            "diverged": True,
            "acc": None,
            "loss": None,
            "seconds": time.perf_counter() - t0,
        }
    # final training loss per seed: retrain-free, from the models on a fixed batch
    from seqtheory.copying import copy_batch
    from seqtheory.core.runtime import evaluating
    from seqtheory.core.seeds import make_generator
    from seqtheory.core.training import next_token_loss

    x, y = copy_batch(1000, setup.min_len, setup.max_len, generator=make_generator(7))
    loss = []
    for m in result.models:
        with evaluating(m):
            loss.append(float(next_token_loss(m(x), y)))
    return {
        "model": name,
        "lr": lr,
        "diverged": False,
        "acc": result.final().tolist(),
        "acc_test_len": result.acc_test_len.tolist(),
        "loss": loss,
        "seconds": time.perf_counter() - t0,
    }


def _state_job(name: str, size: int, lr: float) -> dict:
    import torch

    from seqtheory import Ensemble, setup_threads, train
    from seqtheory.copying import CopyLSTM, GatedRecurrence, accuracy_by_length, copy_batch
    from seqtheory.core.seeds import make_generator, seeded

    # the chapter's models at other state sizes, outside run(): built under seeded(s) and
    # trained with the loop of run() (same seeds, same data streams)
    setup_threads(1)

    def build():
        if name == "LSTM":
            return CopyLSTM(d_embed=64, hidden=size)
        return GatedRecurrence(d_model=64, d_state=size)

    kw = dict(
        steps=STATE_STEPS,
        lr=lr,
        warmup=100,
        schedule="cosine",
        eval_every=STATE_STEPS,
        progress=False,
    )
    t0 = time.perf_counter()
    lengths = list(range(1, MAX_LEN + 1))
    if name == "LSTM":
        models = []
        for s in TUNE_SEEDS:
            with seeded(s):
                m = build()
            g = make_generator(10_000 + s)
            train(m, lambda step, g=g: copy_batch(32, 1, MAX_LEN, generator=g), **kw)
            models.append(m.eval())
    else:
        ens = Ensemble(build, TUNE_SEEDS)
        gens = [make_generator(10_000 + s) for s in TUNE_SEEDS]

        def batch(step):
            xs, ys = zip(*(copy_batch(32, 1, MAX_LEN, generator=g) for g in gens), strict=True)
            return torch.stack(xs), torch.stack(ys)

        train(ens, batch, **kw)
        models = [m.eval() for m in ens.members()]
    acc = [accuracy_by_length(m, lengths, size=300, seed=5000) for m in models]
    return {
        "model": name,
        "size": size,
        "state_floats": models[0].state_floats,
        "lr": lr,
        "lengths": lengths,
        "acc": acc,
        "seconds": time.perf_counter() - t0,
    }


def tuned(records: list, name: str) -> float:
    """The tuned rate of ``name``: best median accuracy, ties (0.02) by lower median loss."""
    ok = [r for r in records if r["model"] == name and not r["diverged"]]
    best = max(float(np.median(r["acc"])) for r in ok)
    near = [r for r in ok if float(np.median(r["acc"])) >= best - 0.02]
    return min(near, key=lambda r: float(np.median(r["loss"])))["lr"]


def main() -> None:
    import torch

    import seqtheory
    from booktools.machine import cpu_name
    from seqtheory.copying import MODEL_NAMES

    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--parts", default="lr,state")
    args = ap.parse_args()
    parts = args.parts.split(",")
    data = json.loads(OUT.read_text()) if OUT.exists() else {}
    t_start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        if "lr" in parts:
            futs = [pool.submit(_lr_job, n, lr) for n in MODEL_NAMES for lr in LRS]
            data["lr"] = [f.result() for f in futs]
            data["tuned_lr"] = {n: tuned(data["lr"], n) for n in MODEL_NAMES}
            print(json.dumps(data["tuned_lr"]), flush=True)
            OUT.write_text(json.dumps(data, indent=1))  # part "lr" survives a failure
        if "state" in parts:
            futs = [
                pool.submit(_state_job, n, s, data["tuned_lr"][n])
                for n, sizes in STATE_SIZES.items()
                for s in sizes
            ]
            data["state"] = [f.result() for f in futs]
    data["meta"] = {
        "script": "scripts/copying_sweeps.py",
        "seqtheory": seqtheory.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "device": f"CPU ({cpu_name()}), one thread per run, {args.jobs} runs in parallel",
        "seconds": round(time.perf_counter() - t_start, 1),
        "parts": parts,
        "lrs": list(LRS),
        "tune_seeds": list(TUNE_SEEDS),
        "max_len": MAX_LEN,
        "state_steps": STATE_STEPS,
        "state_sizes": STATE_SIZES,
    }
    OUT.write_text(json.dumps(data, indent=1))
    print(f"wrote {OUT} in {data['meta']['seconds']:.0f} s")


if __name__ == "__main__":
    main()
