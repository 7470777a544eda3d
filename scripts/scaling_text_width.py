"""Character-level Shakespeare, model-size sweep: the data behind the model-scaling part of
"Experiment 4" of book/scaling_laws.md.

For each seed and each width d_model in ``WIDTHS``, trains the chapter's character model
(``ScalingSetup.text_kwargs()``: the shared transformer, 2 layers, context 32, AdamW, cosine
schedule, the checkpoint with the best validation loss kept) on the *whole* training split
for ``STEPS`` steps (4 passes over the training split's million characters, far more
than the small models can use, so what limits them is their size and the fixed budget of
steps) and records the test loss, the non-embedding parameter count, the step
of the best checkpoint and the intrinsic dimension of the final layer's activations.

    SEQTHEORY_NUM_THREADS=1 python scripts/scaling_text_width.py --jobs 16

(the archived file was written so: 16 runs at a time) runs the (seed, width) jobs in
parallel processes, one torch thread each, and writes
src/seqtheory/data/scaling_text_width.json (shipped with the library:
seqtheory.scaling.load_text_width_sweep()). It also records a short run per seed
(``CHECK``: d_model 8, 300 steps) that the chapter repeats live to check the archive against
the library. ``--quick`` runs a tiny version to test the script (written to /tmp).

Times in the meta: ``sweep_seconds`` is the sum over all runs (checks included) of each
run's own wall-clock time (``time.perf_counter`` around training and the ID estimate, each
rounded to 0.1 s); with one thread per run and no more runs than cores it is close to the
sweep's CPU time. ``wall_seconds`` is the wall-clock time of the whole sweep. Each run's
record also has ``cpu_seconds`` (its process's CPU time, ``time.process_time``).
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

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "scaling_text_width.json"
WIDTHS = (8, 16, 32, 64, 128)
SEEDS = (0, 1, 2)
STEPS = 4000
CHECK = (8, 300)  # (d_model, steps) of the short run the chapter repeats live


def one(job: tuple[int, int, int]) -> dict:
    """Train one (seed, width) model; its record."""
    seed, width, steps = job
    os.environ.setdefault("SEQTHEORY_NUM_THREADS", "1")
    from seqtheory import setup_threads
    from seqtheory.scaling import SETUP
    from seqtheory.text import CharCorpus, activation_dimension, load_shakespeare, train_char_model

    setup_threads()
    setup = SETUP.pick("cpu")
    corpus = CharCorpus(load_shakespeare())
    n = len(corpus.split("train"))
    kw = setup.text_kwargs(steps=steps, d_model=width, n_heads=2)
    start, cpu_start = time.perf_counter(), time.process_time()
    res = train_char_model(corpus, n, **kw, seed=seed)
    rec = {
        "seed": seed,
        "d_model": width,
        "n": n,
        "steps": steps,
        "test_loss": res.test_loss,
        "val_loss": res.val_loss,
        "best_step": res.best_step,
        "params": res.params,
        "id": activation_dimension(res.model, corpus, n_docs=setup.text_docs),
    }
    rec["seconds"] = round(time.perf_counter() - start, 1)  # this run's wall-clock time
    rec["cpu_seconds"] = round(time.process_time() - cpu_start, 1)
    print(
        f"seed {seed} | d_model={width:3d} | params {rec['params']:6d} | test "
        f"{rec['test_loss']:.3f} | best step {rec['best_step']} | ID {rec['id']:.2f} | "
        f"{rec['seconds']} s",
        flush=True,
    )
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="tiny run written to /tmp")
    args = ap.parse_args()
    import torch

    import seqtheory
    from booktools.machine import cpu_name
    from seqtheory import derive_seed
    from seqtheory.scaling import SETUP

    steps = 30 if args.quick else STEPS
    widths = (8, 16) if args.quick else WIDTHS
    seeds = (0,) if args.quick else SEEDS
    check = (8, 20) if args.quick else CHECK
    out = Path("/tmp/scaling_text_width.json") if args.quick else OUT
    kw = SETUP.pick("cpu").text_kwargs(steps=steps, n_heads=2)
    jobs = [(s, w, steps) for s in seeds for w in sorted(widths, reverse=True)]
    jobs += [(s, check[0], check[1]) for s in seeds]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        done = list(pool.map(one, jobs))
    runs, checks = done[: -len(seeds)], done[-len(seeds) :]
    meta = {
        "script": "scripts/scaling_text_width.py",
        "seqtheory": seqtheory.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "device": f"CPU ({cpu_name()}), 1 thread per run, {args.jobs} runs at a time",
        "train_char_model": {k: v for k, v in kw.items() if k not in ("progress", "d_model")},
        "widths": list(widths),
        "seeds": list(seeds),
        "check": {"d_model": check[0], "steps": check[1]},
        "derived_seeds": [derive_seed(s) for s in seeds],
        # sum of the runs' own wall-clock times (see the docstring), and the sweep's
        "sweep_seconds": round(sum(r["seconds"] for r in done), 1),
        "cpu_seconds": round(sum(r["cpu_seconds"] for r in done), 1),
        "wall_seconds": round(time.perf_counter() - start, 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "runs": runs, "checks": checks}, indent=1))
    print(f"wrote {out}", flush=True)


if __name__ == "__main__":
    main()
