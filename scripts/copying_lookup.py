"""The n-gram lookup task with the query before or after the string: archived data behind
book/copying.md.

The gated recurrence and hard-ALiBi of the copying chapter (seqtheory.copying.copy_model,
the chapter's size and tuned learning rates) are trained on seqtheory.copying.lookup_batch
(bigram queries, strings of 5-10 letters, batch 32, STEPS steps, warm-up and cosine decay),
once with the query after the string (``suffix``) and once before it (``prefix``), three
seeds each as one batched program. The fraction of queries answered right is measured
every EVAL_EVERY steps at length 10 and at the end at lengths 10, 20 and 40, on fixed test
sets of 500 strings.

    python scripts/copying_lookup.py            # about 15 minutes on 2 CPU cores

writes src/seqtheory/data/copying_lookup.json (seqtheory.book.archive.load_data(
"copying_lookup.json")). Seeds go through seqtheory's base-seed helper (run it with
SEQTHEORY_SEED unset).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path

import torch
from _archive import device_label, git_commit

import seqtheory
from seqtheory import setup_threads
from seqtheory.copying import (
    LOOKUP_KEYS,
    SETUP,
    _train_kw,
    copy_model,
    lookup_batch,
    string_accuracy,
)
from seqtheory.core.ensemble import Ensemble, member_eval
from seqtheory.core.seeds import experiment_seed, make_generator
from seqtheory.core.training import train

OUT = Path(__file__).resolve().parents[1] / "src" / "seqtheory" / "data" / "copying_lookup.json"
MODELS = ("gated recurrence", "hard-ALiBi")
SEEDS = (0, 1, 2)
LENGTHS = (10, 20, 40)
STEPS = 3000
EVAL_EVERY = 500
N = 2  # the query is a bigram
TEST_SIZE = 500


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    threads = setup_threads()
    setup = SETUP.pick("cpu")
    seed = experiment_seed(None)
    start = time.perf_counter()
    runs = []
    for key in LOOKUP_KEYS:
        tests = {
            L: lookup_batch(
                TEST_SIZE, L, n=N, key=key, generator=make_generator(2000 + L, base=seed)
            )
            for L in LENGTHS
        }

        def evaluate(model, step, tests=tests):
            lengths = LENGTHS if step == args.steps else LENGTHS[:1]
            return {f"acc_{L}": string_accuracy(model, *tests[L]) for L in lengths}

        for name in MODELS:
            t0 = time.perf_counter()
            ens = Ensemble(lambda name=name: copy_model(name, setup), list(SEEDS), base=seed)
            gens = [make_generator(30_000 + s, base=seed) for s in SEEDS]

            def batch(step, gens=gens, key=key):
                xs, ys = zip(
                    *(
                        lookup_batch(
                            setup.batch_size,
                            setup.min_len,
                            setup.max_len,
                            n=N,
                            key=key,
                            generator=g,
                        )
                        for g in gens
                    ),
                    strict=True,
                )
                return torch.stack(xs), torch.stack(ys)

            kw = _train_kw(setup, args.steps, setup.lr_for(name), True)
            kw["eval_every"] = EVAL_EVERY
            h = train(ens, batch, eval_fn=member_eval(evaluate), desc=f"{name}, {key} key", **kw)
            steps, acc10 = h.metric("acc_10")
            runs.append(
                {
                    "model": name,
                    "key": key,
                    "seeds": list(SEEDS),
                    "steps": [int(s) for s in steps],
                    "acc_10_curve": acc10.T.tolist(),  # (seeds, evals)
                    "acc": {str(L): list(h.final(f"acc_{L}")) for L in LENGTHS},
                    "seconds": round(time.perf_counter() - t0, 1),
                }
            )
            print(name, key, {L: runs[-1]["acc"][str(L)] for L in map(str, LENGTHS)}, flush=True)
    meta = {
        "script": "scripts/copying_lookup.py",
        "seqtheory": seqtheory.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "date": datetime.date.today().isoformat(),
        "device": device_label(torch.device("cpu"), threads),
        "commit": git_commit(),
        "models": list(MODELS),
        "keys": list(LOOKUP_KEYS),
        "n": N,
        "train_lengths": [setup.min_len, setup.max_len],
        "lengths": list(LENGTHS),
        "steps": args.steps,
        "batch_size": setup.batch_size,
        "test_size": TEST_SIZE,
        "seconds": round(time.perf_counter() - start, 1),
    }
    args.out.write_text(json.dumps({"meta": meta, "runs": runs}) + "\n")


if __name__ == "__main__":
    main()
